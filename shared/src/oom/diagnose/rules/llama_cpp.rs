//! llama.cpp / ggml buffer allocation failures, by what was being allocated.

use crate::fixes::GivesUp;
use crate::formats::GgufType;
use crate::kv::KvDtype;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::gib;
use crate::oom::diagnose::{CauseId, DiagnosisFix, FixId};
use crate::oom::{GpuBackend, LlamaCppStage};

/// The code of a lever where the paste ran it: llama-server's flags, or
/// Ollama's settings when llama.cpp ran as Ollama's runner.
fn lever(f: &Facts, llama_server: &str, ollama: &str) -> String {
    if f.r.via_ollama { ollama } else { llama_server }.into()
}

/// Halving llama-server's context (`-c`), or Ollama's `num_ctx`.
fn half_context(f: &Facts) -> String {
    lever(f, "llama-server ... -c <half of now>", crate::engines::ollama::LEVERS.half_context)
}

/// Halving llama-server's physical batch (`-ub`, flash attention on), or
/// Ollama's `num_batch`.
fn half_batch(f: &Facts) -> String {
    lever(f, &format!("llama-server ... -ub 256{}", fa_on(f)), crate::engines::ollama::LEVERS.half_batch)
}

/// ` -fa` turning flash attention on as the plan's llama.cpp build spells it
/// (the newest's without a plan): bare before b6325, `-fa on` from it,
/// nothing on ik_llama.cpp where it is the default
/// (`llamacpp::flash_attention_flag`), nor where the plan already runs
/// with it.
fn fa_on(f: &Facts) -> &'static str {
    use crate::engines::llamacpp::{FlashAttention, Options, flash_attention_flag};
    if f.llama_cpp_fa_planned {
        return "";
    }
    flash_attention_flag(Options { flash_attention: FlashAttention::On, ..f.llama_cpp })
}

/// Fewer layers on the GPU: `--fit on` where the build has it (mainline
/// from b7407, `Options::has_fit`) and the paste does not show it giving
/// up (`OomReport::fit_gave_up`: it was on already), else a lower `-ngl`.
fn fewer_layers(f: &Facts, until: &str) -> String {
    if f.llama_cpp.has_fit() && f.r.fit_gave_up.is_none() {
        format!("llama-server ... --fit on   # or lower -ngl until {until}")
    } else {
        format!("llama-server ... -ngl <fewer>   # lower -ngl until {until}")
    }
}

/// Fewer layers on the GPU ([`fewer_layers`]) for `cause`, the rest on the CPU.
fn offload_fewer_layers(f: &Facts, cause: CauseId, until: &str) -> DiagnosisFix {
    fix(
        FixId::OffloadLayers,
        cause,
        "Offload fewer layers to the GPU (the rest run on the CPU)".into(),
        GivesUp::Speed,
        None,
        lever(f, &fewer_layers(f, until), crate::engines::ollama::LEVERS.fewer_layers),
    )
}

/// A smaller context: llama.cpp allocates the KV cache for all of it.
fn shrink_context(f: &Facts) -> DiagnosisFix {
    fix(
        FixId::SmallerContext,
        CauseId::KvCacheGrowth,
        format!("Shrink the context ({}): the KV cache is allocated for all of it", flag(f, "-c")),
        GivesUp::Length,
        None,
        lever(f, "llama-server ... -c <smaller>", crate::engines::ollama::LEVERS.smaller_context),
    )
}

/// A llama-server flag as the paste's front end names it.
fn flag(f: &Facts, llama_server: &'static str) -> &'static str {
    crate::engines::ollama::parameter(llama_server).filter(|_| f.r.via_ollama).unwrap_or(llama_server)
}

pub(super) fn llama_cpp(f: &Facts, b: &mut Board) {
    let q = f.requested;
    let on = f.r.gpu_index.map_or(String::new(), |i| format!(" on GPU {i}"));
    let size = q.map_or(String::new(), |q| format!(" of {}", gib(q)));
    if f.r.allocation_limit {
        if f.r.backend == Some(GpuBackend::Sycl) {
            sycl_allocation_limit(b, &size, &on);
        } else {
            single_buffer_limit(f, b, q, &size, &on);
        }
        return;
    }
    if f.r.backend == Some(GpuBackend::Sycl)
        && f.r.llama_cpp_stage.is_none()
        && let Some(op) = f.r.failed_in.as_deref().filter(|op| !op.ends_with("alloc_buffer"))
    {
        sycl_during_an_operation(f, b, op);
        return;
    }
    if f.r.clip_warmup {
        vision_encoder(f, b, q, &size, &on);
        return;
    }
    if let Some(reason) = f.r.fit_gave_up.as_deref() {
        fit_gave_up(f, b, reason);
    }
    match f.r.llama_cpp_stage {
        Some(LlamaCppStage::ModelWeights) => {
            if f.r.backend == Some(GpuBackend::Metal)
                && let (Some(q), Some(t)) = (q, f.total)
                && q < t
            {
                metal_single_buffer(b, q, t);
            }
            b.add(
                CauseId::WeightsTooLarge,
                85,
                format!("llama.cpp failed while loading the weights: the weight buffer{size}{on} did not fit"),
            );
            b.fix(offload_fewer_layers(f, CauseId::WeightsTooLarge, "the model loads"));
            smaller_quant(f, b);
        }
        Some(LlamaCppStage::KvCache) => {
            b.add(
                CauseId::KvCacheGrowth,
                85,
                format!("llama.cpp failed to allocate the KV cache{size}{on} for the context ({})", flag(f, "-c")),
            );
            b.fix(fix(
                FixId::SmallerContext,
                CauseId::KvCacheGrowth,
                format!("Halve the context ({}): the cache is pre-allocated for all of it", flag(f, "-c")),
                GivesUp::Length,
                q.map(|q| q / 2),
                half_context(f),
            ));
            let q8 = KvDtype::Q8_0.bpw(128).as_f64() / 16.0;
            // Not for a plan whose cache is already 8 bits or fewer.
            let sixteen_bit = f.plan_kv.is_none_or(|k| matches!(k, KvDtype::F32 | KvDtype::F16 | KvDtype::Bf16))
                && f.llama_cpp.cache_type_k.is_none_or(|t| !t.is_quantized());
            if sixteen_bit {
                b.fix(fix(
                    FixId::KvCacheDtype,
                    CauseId::KvCacheGrowth,
                    "Store the KV cache in q8_0".into(),
                    GivesUp::CachePrecision,
                    q.map(|q| (q as f64 * (1.0 - q8)) as u64),
                    lever(
                        f,
                        &format!("llama-server ...{} -ctk q8_0 -ctv q8_0", fa_on(f)),
                        crate::engines::ollama::LEVERS.kv_cache,
                    ),
                ));
            }
        }
        Some(LlamaCppStage::GraphCompute) => metal_graph_compute(f, b),
        Some(LlamaCppStage::ComputeBuffers)
            if let Some(q) = q
                && let Some(largest) = largest_gpu(f).filter(|g| q > g.memory_bytes) =>
        {
            mis_sized_graph(f, b, q, largest, &on);
        }
        Some(LlamaCppStage::ComputeBuffers) => {
            b.add(
                CauseId::TooLargeOverall,
                60,
                format!(
                    "llama.cpp loaded the weights and the KV cache, then the compute buffers{size}{on} did not fit: \
                     the GPU is full to the last buffer"
                ),
            );
            b.add(
                CauseId::KvCacheGrowth,
                50,
                format!(
                    "the compute buffers grow with the batch ({}) and, without flash attention, with the context ({})",
                    flag(f, "-ub"),
                    flag(f, "-c")
                ),
            );
            b.fix(fix(
                FixId::SmallerBatch,
                CauseId::TooLargeOverall,
                "Halve the physical batch the compute buffers are sized for".into(),
                GivesUp::Speed,
                q.map(|q| q / 2),
                half_batch(f),
            ));
            b.fix(fix(
                FixId::SmallerContext,
                CauseId::KvCacheGrowth,
                format!("Shrink the context ({}) to free room for the buffers", flag(f, "-c")),
                GivesUp::Length,
                None,
                lever(f, "llama-server ... -c <smaller>", crate::engines::ollama::LEVERS.smaller_context),
            ));
        }
        None => {
            // Nothing in the paste names the step: say so rather than guess.
            let api = match f.r.backend {
                Some(GpuBackend::Vulkan) => "a Vulkan device buffer",
                Some(GpuBackend::Metal) => "a Metal buffer",
                Some(GpuBackend::Sycl) => "a SYCL device buffer",
                _ => "a GPU buffer",
            };
            b.add(
                CauseId::TooLargeOverall,
                50,
                format!(
                    "ggml could not allocate {api}{size}{on}; the paste does not say whether it was for the weights, \
                     the KV cache or the compute buffers"
                ),
            );
            b.add(
                CauseId::KvCacheGrowth,
                40,
                format!(
                    "whatever the step, fewer layers on the GPU ({}) free room for all three; the cache grows with the \
                     context ({}) and the compute buffers with the batch ({})",
                    flag(f, "-ngl"),
                    flag(f, "-c"),
                    flag(f, "-ub")
                ),
            );
            b.fix(offload_fewer_layers(f, CauseId::TooLargeOverall, "it loads"));
            b.fix(shrink_context(f));
            b.fix(fix(
                FixId::SmallerBatch,
                CauseId::KvCacheGrowth,
                "Halve the physical batch the compute buffers are sized for".into(),
                GivesUp::Speed,
                None,
                half_batch(f),
            ));
        }
    }
}

/// The catalog's largest GPU of the paste's backend (CUDA: NVIDIA, ROCm:
/// AMD, Metal: Apple; Vulkan or none said: any): no such GPU holds one
/// buffer larger.
fn largest_gpu(f: &Facts) -> Option<&'static crate::catalog::Gpu> {
    use crate::catalog::GpuVendor;
    use crate::oom::GpuBackend;
    let vendor = match f.r.backend {
        Some(GpuBackend::Cuda) => Some(GpuVendor::Nvidia),
        Some(GpuBackend::Hip) => Some(GpuVendor::Amd),
        Some(GpuBackend::Metal | GpuBackend::Mps) => Some(GpuVendor::Apple),
        Some(GpuBackend::Vulkan | GpuBackend::Xpu | GpuBackend::Sycl) | None => None,
    };
    crate::catalog::gpus().iter().filter(|g| vendor.is_none_or(|v| g.vendor == v)).max_by_key(|g| g.memory_bytes)
}

/// A compute buffer larger than any GPU: ggml sized the graph for a batch
/// whose attention scores alone outgrow every device, so halving the batch
/// (or any setting that assumes a nearly full GPU) cannot be the answer.
/// On ik_llama.cpp with its MLA cache the lever is `-amb`, "max batch size
/// for attention computations" (common/common.cpp@18b0375
/// `gpt_print_usage`; docs/parameters.md: "the maximum K*Q size in MB we
/// want to tolerate"), which splits the attention into head groups whose
/// K*Q fits under it (src/llama.cpp@18b0375:15623-15715).
fn mis_sized_graph(f: &Facts, b: &mut Board, q: u64, largest: &crate::catalog::Gpu, on: &str) {
    let than = format!(" (the largest in the catalog, {}, has {})", largest.name, gib(largest.memory_bytes));
    b.add(
        CauseId::MisSizedBuffer,
        90,
        format!(
            "the compute buffer{on} is {}, more than any GPU has{than}: ggml sized the graph for a batch no device \
             holds",
            gib(q)
        ),
    );
    if f.r.ik_mla {
        let amb = crate::engines::llamacpp::ik::AMB_DEFAULT_MIB;
        b.add(
            CauseId::MisSizedBuffer,
            90,
            "the log is ik_llama.cpp's with its MLA cache (c^KV): without -amb the attention's K*Q for the whole \
             batch is built at once"
                .into(),
        );
        b.fix(fix(
            FixId::SmallerBatch,
            CauseId::MisSizedBuffer,
            format!(
                "Cap ik_llama.cpp's attention batch with -amb (\"max batch size for attention computations\", the \
                 largest K*Q in MiB it builds at once; {amb} is its own default from build {})",
                crate::engines::llamacpp::ik::AMB256_BUILD
            ),
            GivesUp::Speed,
            None,
            format!("llama-server ... -amb {amb}"),
        ));
    }
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::MisSizedBuffer,
        format!(
            "Lower the physical batch ({}) the graph is sized for, with flash attention on; halving it will not bring \
         this buffer under any GPU",
            flag(f, "-ub")
        ),
        GivesUp::Speed,
        None,
        lever(f, &format!("llama-server ... -ub <smaller>{}", fa_on(f)), crate::engines::ollama::LEVERS.smaller_batch),
    ));
}

/// ggml's Vulkan backend refused a buffer as larger than the device takes
/// in one (`OomReport::allocation_limit`; ggml-vulkan.cpp
/// `ggml_vk_create_buffer` checks the size against the driver's
/// `maxBufferSize`, or `maxMemoryAllocationSize`, before allocating): the
/// GPU may have room to spare, so the lever is a smaller buffer, not fewer
/// layers: the compute buffer shrinks with the physical batch, the KV
/// cache's with the context.
fn single_buffer_limit(f: &Facts, b: &mut Board, q: Option<u64>, size: &str, on: &str) {
    b.add(
        CauseId::AllocationLimit,
        90,
        format!(
            "ggml's Vulkan backend refused the buffer{size}{on} as larger than the device allows in one buffer \
             (\"Requested buffer size exceeds device … limit\", the driver's maxBufferSize): a limit on one \
             allocation, not on the GPU's memory"
        ),
    );
    if f.r.llama_cpp_stage == Some(LlamaCppStage::KvCache) {
        b.fix(fix(
            FixId::SmallerContext,
            CauseId::AllocationLimit,
            format!("Halve the context ({}): the cache's buffer shrinks with it", flag(f, "-c")),
            GivesUp::Length,
            q.map(|q| q / 2),
            half_context(f),
        ));
        return;
    }
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::AllocationLimit,
        format!("Halve the physical batch ({}): the compute buffer is sized for it", flag(f, "-ub")),
        GivesUp::Speed,
        q.map(|q| q / 2),
        half_batch(f),
    ));
}

/// ggml-sycl asked Level Zero for more than 4 GB in one allocation
/// (`OomReport::allocation_limit`), which it refuses unless its relaxed
/// limits are on: docs/backend/SYCL.md (b8211) answers `can't allocate
/// 5000000000 Bytes of memory on device` with
/// `UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1`.
fn sycl_allocation_limit(b: &mut Board, size: &str, on: &str) {
    b.add(
        CauseId::AllocationLimit,
        90,
        format!(
            "ggml-sycl asked Level Zero for one buffer{size}{on}, over the 4 GB it gives in one allocation unless \
             its relaxed allocation limits are on: a limit on one allocation, not on the GPU's memory"
        ),
    );
    b.fix(fix(
        FixId::RelaxAllocationLimit,
        CauseId::AllocationLimit,
        "Let Level Zero allocate more than 4 GB at once (docs/backend/SYCL.md)".into(),
        GivesUp::Nothing,
        None,
        "export UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1   # Windows: set UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1"
            .into(),
    ));
}

/// The SYCL runtime ran out of device memory inside an operation
/// (`UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY` caught in a ggml-sycl function
/// other than the buffer allocator, `OomReport::failed_in`): after ggml's
/// buffers were placed, memory ggml-sycl or its libraries take on their own
/// ran short: flash attention's K/V staging (allocated outside ggml's
/// allocator in ggml-sycl's fattn buffers, llama.cpp PR #22732, so not
/// counted when the layers were placed; PR #27629 adds it to `--fit`'s
/// reservation), oneDNN's and oneMKL's scratch, the legacy pool's temporary
/// buffers. The levers shrink what is left to run (`-ub`, `-c`) or leave
/// room for it (`-ngl`).
fn sycl_during_an_operation(f: &Facts, b: &mut Board, op: &str) {
    b.add(
        CauseId::TooLargeOverall,
        60,
        format!(
            "the SYCL runtime ran out of device memory inside {op}, after the model's buffers were in place: \
             memory ggml-sycl takes on its own while computing (flash attention's K/V staging, oneDNN/oneMKL \
             scratch, its temporary pool), which was not counted when the layers were placed"
        ),
    );
    b.add(
        CauseId::KvCacheGrowth,
        45,
        format!(
            "that scratch grows with the physical batch ({}) and flash attention's staging with the context ({})",
            flag(f, "-ub"),
            flag(f, "-c")
        ),
    );
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::TooLargeOverall,
        format!("Halve the physical batch ({}): the scratch is sized for it", flag(f, "-ub")),
        GivesUp::Speed,
        None,
        lever(f, "llama-server ... -ub 256", crate::engines::ollama::LEVERS.half_batch),
    ));
    b.fix(fix(
        FixId::SmallerContext,
        CauseId::KvCacheGrowth,
        format!("Shrink the context ({}) (docs/backend/SYCL.md: \"Set -c 8192 or a smaller value\")", flag(f, "-c")),
        GivesUp::Length,
        None,
        lever(f, "llama-server ... -c 8192", crate::engines::ollama::LEVERS.smaller_context),
    ));
    b.fix(fix(
        FixId::OffloadLayers,
        CauseId::TooLargeOverall,
        "Offload fewer layers to leave room for what the operations take".into(),
        GivesUp::Speed,
        None,
        lever(f, &fewer_layers(f, "it runs"), crate::engines::ollama::LEVERS.fewer_layers),
    ));
}

/// A Metal buffer smaller than the working set that still failed: the
/// device's limit on one buffer (`maxBufferLength`), which mid-2023's
/// `ggml_metal_add_buffer` (`ggml-metal.m`) met by putting all the weights in
/// one buffer; later builds split a buffer longer than `maxBufferLength`
/// into overlapping views.
fn metal_single_buffer(b: &mut Board, q: u64, t: u64) {
    b.add(
        CauseId::AllocationLimit,
        90,
        format!(
            "the {} weight buffer is less than the {} Metal lets llama.cpp use (recommendedMaxWorkingSetSize): one \
             buffer that size is over the device's limit on a single buffer (maxBufferLength), not over its memory",
            gib(q),
            gib(t)
        ),
    );
    b.fix(fix(
        FixId::UpdateEngine,
        CauseId::AllocationLimit,
        "Update llama.cpp (or llama-cpp-python): later Metal builds split the weights over several buffers".into(),
        GivesUp::Nothing,
        None,
        "git pull && make LLAMA_METAL=1   # or: pip install -U llama-cpp-python".into(),
    ));
}

/// `--fit` gave up before placing anything (`OomReport::fit_gave_up`):
/// `llama_params_fit_impl` throws when the user set what it would set
/// (src/llama.cpp:327-349 @a0ed91a: `-ngl`, `--tensor-split` over several
/// GPUs, `--split-mode row`, any tensor override, which `-ot`, `--cpu-moe`
/// and `--n-cpu-moe` all are), `llama_params_fit` logs it as a warning
/// (:751) and the load goes on with the flags as given. `--fit on` is no
/// fix then: it was on. Dropping the flag it names lets it place the
/// tensors (for a MoE model it keeps the experts in host memory first,
/// step 3 of `llama_params_fit_impl`); `engines::llamacpp::fit::gives_up`
/// is the same rule for a plan.
fn fit_gave_up(f: &Facts, b: &mut Board, reason: &str) {
    let over =
        f.r.fit_shortfall_bytes
            .map_or(String::new(), |s| format!(", {} over its free-memory target by its own projection", gib(s)));
    b.add(
        CauseId::TooLargeOverall,
        70,
        format!(
            "--fit was on but gave up before placing anything (\"{reason}\"{over}): llama.cpp logs that as a \
             warning and loads the flags as given, unfitted"
        ),
    );
    let flag = if reason.contains("tensor_buft_overrides") {
        "-ot / --cpu-moe / --n-cpu-moe"
    } else if reason.contains("n_gpu_layers") {
        "-ngl"
    } else if reason.contains("tensor_split") {
        "--tensor-split"
    } else if reason.contains("SPLIT_MODE_ROW") {
        "--split-mode row"
    } else {
        return;
    };
    if f.r.via_ollama {
        return;
    }
    b.fix(fix(
        FixId::OffloadLayers,
        CauseId::TooLargeOverall,
        format!(
            "Drop {flag}: --fit (on by default) gives up whenever it is set; without it --fit places the tensors \
             itself, a MoE model's experts in host memory first"
        ),
        GivesUp::Speed,
        None,
        format!("llama-server ...   # the same flags without {flag}: --fit is on by default"),
    ));
}

/// The multimodal projector's warm-up failed (`OomReport::clip_warmup`):
/// clip.cpp reserves the vision encoder's compute buffer for a warm-up
/// image (`warmup`, tools/mtmd/clip.cpp:1945-1955 @a0ed91a), on the GPU it
/// took (`clip_ctx`, the first GPU unless `MTMD_BACKEND_DEVICE` names
/// another), after the text model was loaded. The text model's `-c` and
/// `-ub` do not size it; nor, for the projectors whose warm-up image is
/// fixed (`set_warmup_n_tokens`: Qwen-VL's 46 × 46 tokens, Pixtral's,
/// Kimi-VL's, GLM-4V's), does `--image-max-tokens`. `--fit` counts the
/// text model only (`common_init_from_params` passes it the model's path,
/// common/common.cpp:1053 @a0ed91a; b7474's too). The levers: the encoder
/// on the CPU (`--no-mmproj-offload`, common/arg.cpp since 7c727fbe,
/// b5178), or room left for it on that GPU: `--fit-target` (its default
/// margin is 1024 MiB, common/common.h `fit_params_target`) raised by the
/// projector's weights and this buffer, or fewer layers where the build
/// has no `--fit`.
fn vision_encoder(f: &Facts, b: &mut Board, q: Option<u64>, size: &str, on: &str) {
    let projector = f.r.clip_projector.as_deref().map_or(String::new(), |p| format!(" ({p})"));
    let weights = f.r.clip_model_bytes.map_or(String::new(), |w| format!(", beside its {} of weights", gib(w)));
    b.add(
        CauseId::TooLargeOverall,
        85,
        format!(
            "the multimodal projector's{projector} warm-up could not allocate its compute buffer{size}{on}{weights}: \
             the vision encoder (--mmproj) loads after the text model, which had filled the GPU; the text model's -c \
             and -ub do not size this buffer"
        ),
    );
    if f.llama_cpp.has_fit() {
        b.add(
            CauseId::TooLargeOverall,
            85,
            "--fit (on by default) fits the text model alone: it does not count the projector, so it leaves the \
             GPU the encoder runs on full"
                .into(),
        );
    }
    if f.r.via_ollama {
        return;
    }
    b.fix(fix(
        FixId::OffloadLayers,
        CauseId::TooLargeOverall,
        "Run the vision encoder on the CPU (slower image encoding; the text model is untouched)".into(),
        GivesUp::Speed,
        q.map(|q| q.saturating_add(f.r.clip_model_bytes.unwrap_or(0))),
        "llama-server ... --no-mmproj-offload".into(),
    ));
    let mib = 1u64 << 20;
    let default_margin = 1024 * mib;
    let need = q.unwrap_or(0).saturating_add(f.r.clip_model_bytes.unwrap_or(0));
    if f.llama_cpp.has_fit() && need > 0 {
        let target = default_margin.saturating_add(need).div_ceil(256 * mib) * 256;
        // Per device, so only the projector's GPU gives up text layers:
        // `--fit-target` takes a list, one value broadcast to every device
        // and a longer one set device by device, the rest at the default
        // (common/arg.cpp @a0ed91a). The projector's GPU is the failing one.
        let gpu = usize::try_from(f.r.gpu_index.unwrap_or(0)).unwrap_or(0).min(15);
        let mut margins = vec![(default_margin / mib).to_string(); gpu.max(1) + 1];
        margins[gpu] = target.to_string();
        let targets = margins.join(",");
        b.fix(fix(
            FixId::OffloadLayers,
            CauseId::TooLargeOverall,
            format!(
                "Leave room for the projector: raise --fit's free-memory target on its GPU from 1024 MiB by the \
                 encoder's weights and warm-up buffer ({})",
                gib(need)
            ),
            GivesUp::Speed,
            Some(need),
            format!("llama-server ... --fit-target {targets}"),
        ));
    } else {
        b.fix(fix(
            FixId::OffloadLayers,
            CauseId::TooLargeOverall,
            format!("Leave room for the projector on the GPU it runs on{on}: offload fewer text layers"),
            GivesUp::Speed,
            (need > 0).then_some(need),
            "llama-server ... -ngl <fewer>   # lower -ngl until the projector loads".into(),
        ));
    }
}

/// A GGUF quantisation smaller than the plan's: Q4_K_M, Q3_K_M or IQ2_M,
/// the first below the plan's bits per weight (Q4_K_M without a plan); none
/// where the plan is already at IQ2_M or below.
fn smaller_quant(f: &Facts, b: &mut Board) {
    let plan_bpw = match f.plan_weights {
        Some(crate::formats::WeightFormat::Gguf(t)) => t.nominal_bpw(),
        Some(_) | None => f64::INFINITY,
    };
    let Some(t) = [GgufType::Q4KM, GgufType::Q3KM, GgufType::Iq2M].into_iter().find(|t| t.nominal_bpw() < plan_bpw)
    else {
        return;
    };
    b.fix(fix(
        FixId::WeightFormat,
        CauseId::WeightsTooLarge,
        "Use a smaller GGUF quantisation".into(),
        GivesUp::Quality,
        None,
        lever(
            f,
            &format!("llama-server -m model-{}.gguf ...", t.id().to_ascii_uppercase()),
            crate::engines::ollama::LEVERS.smaller_quant,
        ),
    ));
}

/// A Metal command buffer of the graph failed for want of memory
/// (`LlamaCppStage::GraphCompute`; ggml-metal-context.m @a0ed91a,
/// `ggml_metal_graph_compute` / `ggml_metal_synchronize`, status 5 with
/// `kIOGPUCommandBufferCallbackErrorOutOfMemory`). ggml-metal allocated the
/// weights, the KV cache for the whole context and the compute buffers at
/// load without complaint; the GPU ran out when the graph used them, so the
/// levers are those that shrink the three: the context (`-c` /
/// `num_ctx`; the cache is sized for all of it, llama_kv_cache_init), the
/// physical batch (`-ub`), fewer layers on the GPU (`-ngl` / `num_gpu`),
/// an 8-bit cache (which on llama.cpp needs flash attention for V), a
/// smaller quantisation; raising macOS's cap on wired GPU memory
/// (`iogpu.wired_limit_mb`) last, as it takes from what the system keeps.
fn metal_graph_compute(f: &Facts, b: &mut Board) {
    let cap = f.total.map_or(String::new(), |t| format!(" ({} here)", gib(t)));
    b.add(
        CauseId::KvCacheGrowth,
        70,
        format!(
            "Metal could not run a command buffer of llama.cpp's graph for lack of memory \
             (kIOGPUCommandBufferCallbackErrorOutOfMemory): the weights, the KV cache sized for the whole context \
             ({}) and the compute buffers were allocated at load without complaint, and together passed what macOS \
             lets the GPU hold{cap} once the graph used them",
            flag(f, "-c")
        ),
    );
    b.add(
        CauseId::WeightsTooLarge,
        40,
        format!(
            "the weights on the GPU ({}) stay resident: a model near the Mac's GPU share leaves little for the cache",
            flag(f, "-ngl")
        ),
    );
    b.add(
        CauseId::MemoryCap,
        20,
        "macOS caps what the GPU may wire below the Mac's memory (Metal's recommendedMaxWorkingSetSize); sysctl \
         iogpu.wired_limit_mb raises the cap, at the cost of what the system keeps for itself"
            .into(),
    );
    b.fix(shrink_context(f));
    let sixteen_bit = f.plan_kv.is_none_or(|k| matches!(k, KvDtype::F32 | KvDtype::F16 | KvDtype::Bf16))
        && f.llama_cpp.cache_type_k.is_none_or(|t| !t.is_quantized());
    if sixteen_bit {
        b.fix(fix(
            FixId::KvCacheDtype,
            CauseId::KvCacheGrowth,
            "Store the KV cache in q8_0, with flash attention on (a quantized V cache needs it)".into(),
            GivesUp::CachePrecision,
            None,
            lever(
                f,
                &format!("llama-server ...{} -ctk q8_0 -ctv q8_0", fa_on(f)),
                crate::engines::ollama::LEVERS.kv_cache,
            ),
        ));
    }
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::KvCacheGrowth,
        format!("Halve the physical batch ({}) the compute buffers are sized for", flag(f, "-ub")),
        GivesUp::Speed,
        None,
        half_batch(f),
    ));
    b.fix(offload_fewer_layers(f, CauseId::WeightsTooLarge, "it runs"));
    smaller_quant(f, b);
    b.fix(fix(
        FixId::MemoryFraction,
        CauseId::MemoryCap,
        "Last resort: let the GPU wire more of the Mac's memory; past what the system needs it swaps or \
         freezes"
            .into(),
        GivesUp::Speed,
        None,
        "sudo sysctl iogpu.wired_limit_mb=<MB, below the Mac's memory>".into(),
    ));
}
