//! Step 4 from the error and the live readings: several GPUs, one fuller than the others.

use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::{gib, pct};
use crate::oom::diagnose::{CauseId, FixId, LiveGpu};
use crate::oom::{GpuBackend, OomKind};

/// Step 4 from the error: messages naming several GPUs, a llama.cpp log
/// with buffers on several devices, or a vLLM pipeline.
pub(crate) fn several_gpus(f: &Facts, b: &mut Board) {
    live_imbalance(f, b);
    match f.r.kind {
        Some(OomKind::LlamaCpp) => llama_cpp_split(f, b),
        Some(OomKind::VllmMaxSeqLen | OomKind::VllmKvCacheTooSmall | OomKind::VllmNoCacheBlocks) => {
            vllm_pipeline(f, b);
        }
        Some(
            OomKind::Pytorch
            | OomKind::PytorchLegacy
            | OomKind::PytorchAsync
            | OomKind::PytorchMps
            | OomKind::PytorchMpsBufferSize
            | OomKind::QuantizedOffload
            | OomKind::CudaError
            | OomKind::VllmSamplerWarmup
            | OomKind::VllmFreeBelowRequest
            | OomKind::SglangNoKvPool
            | OomKind::SglangKvPoolFull
            | OomKind::SglangKvAllocFailed
            | OomKind::VllmPreempted
            | OomKind::VllmPreemptions
            | OomKind::TgiPrefillWarmup
            | OomKind::TrtllmExecutorMemory
            | OomKind::OllamaHostMemory
            | OomKind::MlxBufferSize
            | OomKind::MlxOutOfMemory,
        )
        | None => {}
    }
    let seen = &f.r.gpus_seen;
    // vLLM and SGLang give every tensor-parallel rank the same share (their
    // pipelines are placed above): no split of theirs to balance; nor is a
    // diffusion or training run's (`device_map` is no lever of theirs).
    if seen.len() < 2
        || b.has(CauseId::GpuImbalance)
        || f.r.same_on_every_gpu
        || f.serving.is_some()
        || f.r.workload.is_some()
    {
        return;
    }
    let list: Vec<String> = seen.iter().map(u32::to_string).collect();
    b.add(
        CauseId::GpuImbalance,
        25,
        format!(
            "the log has out-of-memory errors on GPUs {}: the work is split over several GPUs; check whether one \
             carries more than its share",
            list.join(", ")
        ),
    );
    let code = match f.r.kind {
        Some(OomKind::LlamaCpp) => {
            "llama-server ... --tensor-split 1,1   # proportional to each GPU's free memory".into()
        }
        Some(
            OomKind::Pytorch
            | OomKind::PytorchLegacy
            | OomKind::PytorchAsync
            | OomKind::PytorchMps
            | OomKind::PytorchMpsBufferSize
            | OomKind::QuantizedOffload
            | OomKind::CudaError
            | OomKind::VllmMaxSeqLen
            | OomKind::VllmKvCacheTooSmall
            | OomKind::VllmNoCacheBlocks
            | OomKind::VllmSamplerWarmup
            | OomKind::VllmFreeBelowRequest
            | OomKind::SglangNoKvPool
            | OomKind::SglangKvPoolFull
            | OomKind::SglangKvAllocFailed
            | OomKind::VllmPreempted
            | OomKind::VllmPreemptions
            | OomKind::TgiPrefillWarmup
            | OomKind::TrtllmExecutorMemory
            | OomKind::OllamaHostMemory
            | OomKind::MlxBufferSize
            | OomKind::MlxOutOfMemory,
        )
        | None => format!("{}.from_pretrained(\"{}\", device_map=\"balanced\")", f.auto_class, f.repo),
    };
    b.fix(fix(
        FixId::DeviceMap,
        CauseId::GpuImbalance,
        "Balance the split over the GPUs".into(),
        GivesUp::Nothing,
        None,
        code,
    ));
}

/// llama.cpp split over several devices and one of them failed: without
/// `-ts` it splits the layers by each device's free memory at load
/// (src/llama-model.cpp `load_tensors`, "default split, by free memory"),
/// and every device then also holds its KV cache and compute buffers, the
/// latter `n_copies` times under pipeline parallelism
/// (src/llama-context.cpp, `pipeline parallelism enabled`). A small device
/// that takes its share of layers can be the one short.
fn llama_cpp_split(f: &Facts, b: &mut Board) {
    let devices = &f.r.devices_in_log;
    let Some(failed) = f.r.gpu_index else { return };
    // Every GPU failing on the same request is no GPU carrying more than its
    // share: each ran short alike, and a smaller share for one moves the
    // shortage to the other.
    if !f.split() || b.has(CauseId::MisSizedBuffer) || f.r.same_on_every_gpu {
        return;
    }
    let over = if devices.len() > 1 {
        let list: Vec<String> = devices.iter().map(u32::to_string).collect();
        format!("GPUs {}", list.join(", "))
    } else {
        "several GPUs".into()
    };
    let copies = f.r.pipeline_copies.map_or(String::new(), |n| {
        format!("; with pipeline parallelism (n_copies={n}) each GPU keeps {n} copies of its compute buffers")
    });
    b.add(
        CauseId::GpuImbalance,
        65,
        format!(
            "llama.cpp split the model over {over} and GPU {failed} ran short: without -ts it gives each GPU layers \
             by its free memory at load, before the KV cache and compute buffers each GPU must also hold{copies}"
        ),
    );
    // `-ts` takes one proportion per device from 0, so a device the log
    // names no buffer on (below the highest it does) gets its own 0.
    let (ts, others) = if devices.len() > 1 {
        let highest = devices.iter().copied().max().unwrap_or(0);
        let ts: Vec<String> = (0..=highest)
            .map(|d| match d {
                d if d == failed => "<less>".into(),
                d if devices.contains(&d) => "1".into(),
                _ => "0".into(),
            })
            .collect();
        let others: Vec<String> = devices.iter().filter(|&&d| d != failed).map(u32::to_string).collect();
        (ts.join(","), others.join(","))
    } else {
        (format!("<one proportion per GPU, less for GPU {failed}>"), format!("<every GPU but {failed}>"))
    };
    // Ollama passes no --tensor-split (engines/ollama/fixes.rs): only the
    // devices it sees are its to choose.
    if !f.r.via_ollama {
        b.fix(fix(
            FixId::DeviceMap,
            CauseId::GpuImbalance,
            format!("Give GPU {failed} a smaller share of the layers (-ts, one proportion per GPU)"),
            GivesUp::Nothing,
            None,
            format!("llama-server ... -ts {ts}"),
        ));
    }
    let server = if f.r.via_ollama { "ollama serve" } else { "llama-server ..." };
    let visible = match f.r.backend {
        Some(GpuBackend::Hip) => "HIP_VISIBLE_DEVICES=".to_owned(),
        Some(GpuBackend::Vulkan) => "GGML_VK_VISIBLE_DEVICES=".into(),
        // Level Zero's device mask, which Intel's runtimes honour.
        Some(GpuBackend::Xpu) => "ZE_AFFINITY_MASK=".into(),
        // ggml-sycl's devices as the oneAPI runtime selects them
        // (docs/backend/SYCL.md, b8211: `ONEAPI_DEVICE_SELECTOR="level_zero:0"`).
        Some(GpuBackend::Sycl) => "ONEAPI_DEVICE_SELECTOR=level_zero:".into(),
        Some(GpuBackend::Cuda | GpuBackend::Metal | GpuBackend::Mps) | None => "CUDA_VISIBLE_DEVICES=".into(),
    };
    b.fix(fix(
        FixId::DeviceMap,
        CauseId::GpuImbalance,
        format!("Leave GPU {failed} out of the split"),
        GivesUp::Speed,
        None,
        format!("{visible}{others} {server}"),
    ));
}

/// vLLM with pipeline parallelism: V1 gives every stage the fewest KV
/// blocks any stage has room for (v1/core/kv_cache_utils.py
/// `get_kv_cache_configs`, v0.11: "Change the num_blocks of each rank to
/// the smallest among all ranks"), so the stage on the smallest GPU, or
/// with the most layers, sets the cache of all. The layers per stage are
/// `VLLM_PP_LAYER_PARTITION` (read by vllm/distributed/utils.py
/// `get_pp_indices`, v0.11; vllm/envs.py), else as even as the layers divide.
fn vllm_pipeline(f: &Facts, b: &mut Board) {
    let Some(stages) = f.r.pipeline_parallel_size.filter(|&n| n > 1) else { return };
    let now = if f.r.pp_layer_partition.is_empty() {
        String::new()
    } else {
        let p: Vec<String> = f.r.pp_layer_partition.iter().map(u64::to_string).collect();
        format!(" (now {})", p.join(","))
    };
    b.add(
        CauseId::GpuImbalance,
        50,
        format!(
            "with {stages} pipeline stages, vLLM gives each the KV cache of the stage with the least room: the \
             stage on the smallest GPU, or with the most layers{now}, limits them all; the error does not say which \
             stage that is"
        ),
    );
    let placeholder: Vec<&str> = (0..stages).map(|_| "<layers>").collect();
    b.fix(fix(
        FixId::DeviceMap,
        CauseId::GpuImbalance,
        "Give the stage on the smaller GPU fewer layers (VLLM_PP_LAYER_PARTITION, one count per stage, summing to \
         the model's layers)"
            .into(),
        GivesUp::Nothing,
        None,
        format!("VLLM_PP_LAYER_PARTITION={} vllm serve ... --pipeline-parallel-size {stages}", placeholder.join(",")),
    ));
}

/// Step 4 from the live readings: the failing GPU is much fuller than the others.
fn live_imbalance(f: &Facts, b: &mut Board) {
    let Some(failing) = f.live else { return };
    let others: Vec<&LiveGpu> = f.all_live.iter().filter(|g| g.index != failing.index && g.total_bytes > 0).collect();
    let Some(emptiest) = others.iter().max_by_key(|g| g.free_bytes) else { return };
    let used = |g: &LiveGpu| g.used_bytes as f64 / g.total_bytes.max(1) as f64;
    if used(failing) >= 0.8 && used(emptiest) <= used(failing) * 0.6 {
        b.add(
            CauseId::GpuImbalance,
            55,
            format!(
                "GPU {} uses {} now while GPU {} uses {} and has {} free (agent reading)",
                failing.index,
                pct(failing.used_bytes, failing.total_bytes),
                emptiest.index,
                pct(emptiest.used_bytes, emptiest.total_bytes),
                gib(emptiest.free_bytes)
            ),
        );
    }
}
