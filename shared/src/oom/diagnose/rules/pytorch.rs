//! Steps 1–3 for PyTorch's messages: the workload, CUDA graphs' private pools, a bigger GPU.

use super::inspect_fix;
use super::workload::{growth, large_allocation, preallocated_cache, step_by_step, tensors, workload_fixes};
use crate::catalog;
use crate::estimate::CUDA_CONTEXT_BYTES;
use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::{Facts, Server};
use crate::oom::diagnose::text::{fraction, gib, pct, times};
use crate::oom::diagnose::{CauseId, FixId};
use crate::oom::{GpuBackend, ServingPhase};
use crate::units::{GIB, MIB};

/// PyTorch holds more than the GPU's capacity (allocated or reserved over
/// the total by more than the figures' rounding): the CUDA driver lent it
/// system memory (the Windows driver's sysmem fallback) or the GPU shares
/// the host's memory, so the figures cannot be a plain VRAM shortage.
pub(super) fn beyond_capacity(f: &Facts, t: u64) -> bool {
    f.r.reserved_bytes.or(f.r.allocated_bytes).is_some_and(|held| held > t.saturating_add(t / 50))
}

/// A fix's code where the OOM happened ([`Facts::serving`]): transformers'
/// `generate`, or the serving engine's flags. vLLM batches the requests
/// itself (`--max-num-seqs`, `--max-num-batched-tokens` bound a step's
/// activations), bounds their length with `--max-model-len` and stores its
/// cache as `--kv-cache-dtype` says; SGLang's are `--max-running-requests`,
/// `--chunked-prefill-size`, `--context-length` and `--kv-cache-dtype
/// fp8_e4m3` (server_args.py, 0.5.23); TGI's are `text-generation-launcher`'s
/// (launcher/src/main.rs, 3.3.7): `--max-batch-prefill-tokens` bounds a
/// step's prefill, `--max-input-tokens` and `--max-total-tokens` a request,
/// `--kv-cache-dtype fp8_e4m3fn` stores the cache, `--quantize` the weights.
fn code(f: &Facts, transformers: &str, vllm: &str, sglang: &str, tgi: &str) -> String {
    match f.serving {
        None => transformers,
        Some(Server::Sglang) => sglang,
        Some(Server::Vllm) => vllm,
        Some(Server::Tgi) => tgi,
    }
    .into()
}

pub(super) fn pytorch_workload(f: &Facts, b: &mut Board) {
    let (Some(q), Some(t)) = (f.requested, f.total.filter(|&t| t > 0)) else { return };
    if f.r.allocation_limit {
        single_allocation_limit(f, b, q, t);
        return;
    }
    let shortage = f.shortage.unwrap_or(0);
    if beyond_capacity(f, t) {
        let held = f.r.reserved_bytes.or(f.r.allocated_bytes).unwrap_or(0);
        b.add(
            CauseId::TooLargeOverall,
            95,
            format!(
                "PyTorch already held {} on a {} GPU ({}) and asked for {} more: more than the GPU has, which only \
                 system memory lent by the driver (Windows' sysmem fallback) or unified memory allows; the workload \
                 needs about {}, far more than this GPU",
                gib(held),
                gib(t),
                times(held, t),
                gib(q),
                gib(held.saturating_add(q))
            ),
        );
        workload_fixes(f, b, CauseId::TooLargeOverall);
        bigger_gpu_from_figures(f, b, held.saturating_add(q));
        return;
    }
    if q > t {
        b.add(
            CauseId::TooLargeOverall,
            95,
            format!(
                "a single allocation of {} is {} the GPU's {}: no setting can make it fit",
                gib(q),
                times(q, t),
                gib(t)
            ),
        );
        b.fix(fix(
            FixId::SmallerBatch,
            CauseId::TooLargeOverall,
            // What chunking saves depends on the chunks: no figure is a saving.
            match f.free {
                Some(free) => format!("Compute it in chunks, each well under the {} that was free", gib(free)),
                None => "Compute it in chunks that each fit".into(),
            },
            GivesUp::Speed,
            None,
            "for chunk in torch.split(inputs, chunk_size):  # each chunk's result well under the free memory\n    ..."
                .into(),
        ));
        workload_fixes(f, b, CauseId::TooLargeOverall);
        bigger_gpu_from_figures(f, b, q.saturating_add(f.this_process.unwrap_or(0)));
        return;
    }
    if f.free.is_none() {
        // Messages before PyTorch 2.1 may give only the capacity and what was
        // allocated: what was left beside this process still tells a lot.
        without_free(f, b, q, t);
        return;
    }
    if shortage == 0 {
        return;
    }
    let leftovers = f.r.reserved_unallocated_bytes.unwrap_or(0).saturating_add(f.others_total());
    let covered = leftovers >= shortage;
    let mine = f.this_process.or(f.r.reserved_bytes).or(f.r.allocated_bytes).unwrap_or(0);
    let request_share = q as f64 / t as f64;
    let g = growth(f);
    if request_share < 0.02 {
        if mine >= t / 2 {
            b.add(
                g,
                60,
                format!(
                    "the failing request is only {} ({} of the GPU) while this process holds {} ({}): memory filled \
                     up step by step, {}",
                    gib(q),
                    pct(q, t),
                    gib(mine),
                    pct(mine, t),
                    step_by_step(f)
                ),
            );
        } else {
            b.add(g, 30, format!("the failing request is only {} ({} of the GPU)", gib(q), pct(q, t)));
        }
    } else {
        let score = 45 + (50.0 * request_share).min(30.0) as u32;
        b.add(
            g,
            if covered { score.saturating_sub(5) } else { score },
            format!("a single allocation of {} = {} of the GPU: {}", gib(q), pct(q, t), large_allocation(f)),
        );
        // A vLLM process that served has its own smaller steps (`vllm_runtime_fixes`).
        if f.r.workload.is_none() && !preallocated_cache(f) {
            b.fix(fix(
            FixId::SmallerBatch,
            CauseId::KvCacheGrowth,
            "Send fewer or shorter sequences at once".into(),
            GivesUp::Length,
            // What it saves depends on the batch: the shortfall is not a saving.
            None,
            code(
                f,
                "# split the batch: for chunk in batches_of(n): model.generate(**chunk, ...)",
                "vllm serve ... --max-num-seqs <fewer> --max-num-batched-tokens <smaller>",
                "python -m sglang.launch_server ... --max-running-requests <fewer> --chunked-prefill-size <smaller>",
                "text-generation-launcher ... --max-batch-prefill-tokens <smaller>",
            ),
            ));
        }
    }
    if !covered {
        b.add(
            g,
            45,
            format!(
                "the {} that was missing is more than the {} of leftovers (reserved but unallocated, other \
                 processes): this process's own tensors need more than the GPU has",
                gib(shortage),
                gib(leftovers)
            ),
        );
    }
    private_pools(f, b, t);
    if f.has_plan {
        // The plan's own fixes carry exact figures.
        return;
    }
    if f.r.workload.is_some() {
        workload_fixes(f, b, g);
        return;
    }
    if preallocated_cache(f) {
        runtime_fixes(f, b, g);
        return;
    }
    b.fix(fix(
        FixId::MaxNewTokens,
        CauseId::KvCacheGrowth,
        "Generate fewer new tokens (the cache grows with every token); --model and the plan flags give the exact limit"
            .into(),
        GivesUp::Length,
        None,
        code(
            f,
            "model.generate(**inputs, max_new_tokens=...)  # fewer than now",
            "vllm serve ... --max-model-len <shorter>",
            "python -m sglang.launch_server ... --context-length <shorter>",
            "text-generation-launcher ... --max-input-tokens <shorter> --max-total-tokens <shorter>",
        ),
    ));
    b.fix(fix(
        FixId::KvCacheDtype,
        CauseId::KvCacheGrowth,
        if f.serving.is_some() {
            "Store the KV cache in fp8 (half of a 16-bit cache)".into()
        } else {
            "Quantise the KV cache to 4 bits (about a quarter of a 16-bit cache)".into()
        },
        GivesUp::CachePrecision,
        None,
        code(
            f,
            "model.generate(**inputs, cache_implementation=\"quantized\", cache_config={\"backend\": \"quanto\", \"nbits\": 4})",
            "vllm serve ... --kv-cache-dtype fp8   # half of a 16-bit cache",
            "python -m sglang.launch_server ... --kv-cache-dtype fp8_e4m3   # half of a 16-bit cache",
            "text-generation-launcher ... --kv-cache-dtype fp8_e4m3fn   # half of a 16-bit cache",
        ),
    ));
}

/// The levers of a serving engine that ran out after its KV cache was
/// allocated ([`preallocated_cache`]), in its own flags (TGI's cache is no
/// such pool here).
pub(super) fn runtime_fixes(f: &Facts, b: &mut Board, cause: CauseId) {
    match f.serving {
        Some(Server::Sglang) => sglang_runtime_fixes(f, b, cause),
        Some(Server::Vllm) => vllm_runtime_fixes(f, b, cause),
        Some(Server::Tgi) | None => {}
    }
}

/// The levers of an SGLang server that ran out while it served, as its
/// FAQ gives them (docs.sglang.io references/faq.html, "CUDA Out of
/// Memory"), in its order for the step the frames show
/// ([`crate::oom::OomReport::serving_phase`]): during prefill a smaller
/// `--chunked-prefill-size` (4096 or 2048), during decoding a lower
/// `--max-running-requests`, for a long prompt's input logprobs a later
/// `logprob_start_len` (`GenerateReqInput.logprob_start_len`,
/// managers/io_struct.py, sglang 0.5.5: -1 asks for none of the prompt's);
/// either way then a lower `--mem-fraction-static` (0.8 or 0.7), which
/// shrinks the KV pool and leaves the forward pass the rest.
fn sglang_runtime_fixes(f: &Facts, b: &mut Board, cause: CauseId) {
    let chunk = || {
        fix(
            FixId::SmallerBatch,
            cause,
            "A smaller prefill chunk: fewer prompt tokens in each prefill step (slower prefill of long prompts)".into(),
            GivesUp::Speed,
            None,
            "python -m sglang.launch_server ... --chunked-prefill-size 4096   # or 2048".into(),
        )
    };
    let requests = || {
        fix(
            FixId::MaxNumSeqs,
            cause,
            "Fewer requests decoded at once: each decode step's activations, logits and sampling scale with them"
                .into(),
            GivesUp::Speed,
            None,
            "python -m sglang.launch_server ... --max-running-requests <fewer than now>".into(),
        )
    };
    match f.r.serving_phase {
        Some(ServingPhase::Prefill) => b.fix(chunk()),
        Some(ServingPhase::Decode) => b.fix(requests()),
        Some(ServingPhase::InputLogprobs) => b.fix(fix(
            FixId::SmallerContext,
            cause,
            "Ask for input logprobs only from the prompt token you need: logits over a whole long prompt are what \
             did not fit"
                .into(),
            GivesUp::Nothing,
            None,
            "{\"text\": ..., \"return_logprob\": true, \"logprob_start_len\": <the first prompt token you need>}   \
             # POST /generate; -1 asks for none of the prompt's"
                .into(),
        )),
        None => {
            b.fix(chunk());
            b.fix(requests());
        }
    }
    let (value, frees) = lower_fraction(f.r.mem_fraction_static_permille, f.total);
    b.fix(fix(
        FixId::MemFractionStatic,
        cause,
        "Leave more of the GPU outside SGLang's KV pool for the forward pass: a lower --mem-fraction-static (fewer \
         cached tokens, less concurrency)"
            .into(),
        GivesUp::Length,
        frees,
        format!("python -m sglang.launch_server ... --mem-fraction-static {value}"),
    ));
}

/// The FAQ's first lower `--mem-fraction-static` (0.8; 0.7 after it) where
/// the run's own is above it, else a twentieth of the GPU less than the
/// run's (`graphs::STEP_PERMILLE`, down to half the GPU), with what it
/// frees on a GPU of the paste's total; the FAQ's two values where the
/// paste names no fraction.
fn lower_fraction(current: Option<u64>, total: Option<u64>) -> (String, Option<u64>) {
    const FAQ: u64 = 800;
    let Some(now) = current else { return ("0.8   # or 0.7; lower than now".into(), None) };
    let to = if now > FAQ { Some(FAQ) } else { now.checked_sub(super::graphs::STEP_PERMILLE) };
    match to.filter(|&to| to >= super::graphs::LOWEST_PERMILLE) {
        Some(to) => {
            let frees = total.map(|t| t.saturating_mul(now - to) / 1000);
            let what = frees.map_or(String::new(), |b| format!("; frees {} for the forward pass", gib(b)));
            (format!("{}   # now {} (as the paste names it){what}", fraction(to), fraction(now)), frees)
        }
        None => (format!("<lower than {}>   # now {} (as the paste names it)", fraction(now), fraction(now)), None),
    }
}

/// The levers of a vLLM process that ran out after its KV cache was
/// allocated ([`preallocated_cache`]): a shorter generation or an fp8
/// cache only changes what the fixed pool holds. What leaves the peak
/// room is a smaller pool (`--gpu-memory-utilization`: the memory outside
/// it is what activations use) or smaller steps (`--max-num-batched-tokens`
/// bounds a step's prefill tokens, `--max-num-seqs` its sequences; vLLM
/// 0.11 – 0.34 `config/scheduler.py`).
fn vllm_runtime_fixes(f: &Facts, b: &mut Board, cause: CauseId) {
    /// A step down that leaves a 24 GiB GPU about 1.2 GiB more room.
    const STEP_PERMILLE: u64 = 50;
    let (value, frees) = match (f.utilization, f.vllm_total) {
        (Some((u, from)), total) if u > STEP_PERMILLE * 2 => {
            let frees = total.map(|t| t.saturating_mul(STEP_PERMILLE) / 1000);
            let room = frees.map_or(String::new(), |b| format!("; leaves {} more outside the cache", gib(b)));
            (format!("{}   # now {} ({from}){room}", fraction(u - STEP_PERMILLE), fraction(u)), frees)
        }
        _ => ("<lower than now, e.g. 0.05 less>".to_owned(), None),
    };
    b.fix(fix(
        FixId::GpuMemoryUtilization,
        cause,
        "Leave more of the GPU outside vLLM's KV cache for the activations: a lower --gpu-memory-utilization \
         (fewer cached tokens)"
            .into(),
        GivesUp::Length,
        frees,
        format!("vllm serve ... --gpu-memory-utilization {value}"),
    ));
    b.fix(fix(
        FixId::SmallerBatch,
        cause,
        "Smaller steps: fewer prefill tokens and sequences per step bound the activations".into(),
        GivesUp::Speed,
        None,
        "vllm serve ... --max-num-batched-tokens <smaller> --max-num-seqs <fewer>".into(),
    ));
}

/// IPEX's limit on one allocation: `kStatefulLimit`, 4 GiB, on GPUs
/// without 2D block arrays (intel-extension-for-pytorch
/// csrc/gpu/runtime/CachingDeviceAllocator.cpp, 2.x xpu: "Single
/// allocation must be less than 4GB with stateful memory management").
const IPEX_ALLOCATION_LIMIT_BYTES: u64 = 4 * GIB;

/// The paste shows IPEX refusing one allocation over its limit
/// (`OomReport::allocation_limit`): a request over it fails whatever is
/// free; one under it that failed while PyTorch held little of the GPU
/// met the same kind of limit lower down (the runtime's), not a full GPU.
fn single_allocation_limit(f: &Facts, b: &mut Board, q: u64, t: u64) {
    let held = f.r.reserved_bytes.or(f.r.allocated_bytes).unwrap_or(0);
    let limit = gib(IPEX_ALLOCATION_LIMIT_BYTES);
    if q > IPEX_ALLOCATION_LIMIT_BYTES {
        b.add(
            CauseId::AllocationLimit,
            90,
            format!(
                "IPEX refuses any one allocation over {limit} on this GPU (\"Current platform can NOT allocate memory \
                 block with size larger than 4GB\"): the {} request is over it, whatever the GPU has free",
                gib(q)
            ),
        );
    } else {
        b.add(
            CauseId::AllocationLimit,
            if held <= t / 4 { 75 } else { 45 },
            format!(
                "the paste shows IPEX refusing one allocation over {limit} on this platform, and this {} request \
                 failed while PyTorch held only {} of the {} GPU: the runtime's limit on one allocation is lower \
                 still here, not the GPU's memory",
                gib(q),
                gib(held),
                gib(t)
            ),
        );
    }
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::AllocationLimit,
        format!("Allocate in pieces under the limit: each tensor well under {limit} (smaller batches or chunks)"),
        GivesUp::Speed,
        None,
        "for chunk in torch.split(inputs, chunk_size):  # each chunk's tensors well under the limit\n    ...".into(),
    ));
}

/// What PyTorch's caching allocator usually holds reserved but unallocated
/// beside what it allocated: the median of the 16 PyTorch 2.1+ messages in
/// `tests/fixtures/oom/` (1.5 MiB – 2.35 GiB, median 490 MiB), for messages
/// that give only the allocated figure.
const ALLOCATOR_RESERVE_BYTES: u64 = 512 * MIB;

/// The error gives the capacity and what PyTorch allocated (or reserved),
/// not what was free: at most `total − reserved` was left beside this
/// process, and the process's own CUDA context and libraries take about
/// [`CUDA_CONTEXT_BYTES`] of that.
fn without_free(f: &Facts, b: &mut Board, q: u64, t: u64) {
    // What PyTorch reserved covers the allocator's own slack; what it
    // allocated leaves that slack to estimate.
    let held = match (f.r.reserved_bytes, f.r.allocated_bytes) {
        (Some(reserved), _) => Some((reserved, "reserved", 0)),
        (None, Some(allocated)) => Some((allocated, "allocated", ALLOCATOR_RESERVE_BYTES)),
        (None, None) => None,
    };
    let g = growth(f);
    let Some((mine, what, reserve)) = held else {
        b.add(
            g,
            30,
            format!(
                "a single allocation of {} = {} of the GPU failed; the error says neither what was free nor what this process held",
                gib(q),
                pct(q, t)
            ),
        );
        return;
    };
    let left = t.saturating_sub(mine);
    let usable = left.saturating_sub(CUDA_CONTEXT_BYTES).saturating_sub(reserve);
    if q >= usable {
        b.add(
            g,
            55,
            format!(
                "this process had {what} {} = {} of the GPU, which left at most {} beside it, about {} of that for \
                 the CUDA context{}: the {} request could not fit, so the process's own tensors ({}) filled the GPU",
                gib(mine),
                pct(mine, t),
                gib(left),
                gib(CUDA_CONTEXT_BYTES.saturating_add(reserve)),
                if reserve > 0 { " and the allocator's usual reserve" } else { "" },
                gib(q),
                tensors(f)
            ),
        );
        if usable > 0 {
            b.add(
                CauseId::OtherProcesses,
                30,
                format!(
                    "without the free figure, other processes holding part of the {} left cannot be ruled out",
                    gib(left)
                ),
            );
        }
    } else {
        b.add(
            CauseId::OtherProcesses,
            45,
            format!(
                "this process had {what} {} = {}, which left {} beside it, more than the {} request and the CUDA \
                 context: the rest was held outside PyTorch's cache (other processes, or this process's own \
                 libraries)",
                gib(mine),
                pct(mine, t),
                gib(left),
                gib(q)
            ),
        );
        b.add(
            g,
            35,
            format!(
                "the failing allocation of {} = {} of the GPU came on top of {} {what}",
                gib(q),
                pct(q, t),
                gib(mine)
            ),
        );
        inspect_fix(f, b, None);
    }
    if preallocated_cache(f) {
        // A pool allocated whole at start-up: its levers, never a cache's growth.
        if !f.has_plan {
            runtime_fixes(f, b, g);
        }
        return;
    }
    if !f.has_plan {
        checklist_fixes(f, b);
    }
    if f.r.workload.is_some() {
        return;
    }
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::KvCacheGrowth,
        "Send fewer or shorter sequences at once".into(),
        GivesUp::Length,
        None,
        code(
            f,
            "# split the batch: for chunk in batches_of(n): model.generate(**chunk, ...)",
            "vllm serve ... --max-num-seqs <fewer> --max-num-batched-tokens <smaller>",
            "python -m sglang.launch_server ... --max-running-requests <fewer> --chunked-prefill-size <smaller>",
            "text-generation-launcher ... --max-batch-prefill-tokens <smaller>",
        ),
    ));
}

/// Without a plan, the OOM checklist's fixes in its order, with no figure
/// (none can be told): load the weights in 8 or 4 bits, bound the new
/// tokens and the input, free what the session still holds, and let the
/// allocator grow segments instead of fragmenting.
fn checklist_fixes(f: &Facts, b: &mut Board) {
    if f.r.workload.is_some() {
        workload_fixes(f, b, growth(f));
        checklist_leftovers(f, b);
        return;
    }
    // bitsandbytes' 4-bit kernels are CUDA's (and ROCm's) in the releases
    // the snippet is written for: an Intel GPU gets no bitsandbytes line.
    let xpu = f.r.backend == Some(GpuBackend::Xpu);
    if !xpu || f.serving.is_some() {
        checklist_weights(f, b);
    }
    checklist_length_and_leftovers(f, b);
}

fn checklist_weights(f: &Facts, b: &mut Board) {
    b.fix(fix(
        FixId::WeightFormat,
        CauseId::KvCacheGrowth,
        "Load the weights in 8 or 4 bits (half or a quarter of 16-bit)".into(),
        GivesUp::Quality,
        None,
        code(
            f,
            "quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_compute_dtype=torch.bfloat16)\n\
             model = AutoModelForCausalLM.from_pretrained(MODEL_ID, quantization_config=quant, device_map=\"auto\")",
            "vllm serve <an AWQ or GPTQ checkpoint of the model>   # or, from 16-bit weights: --quantization fp8",
            "python -m sglang.launch_server --model-path <an AWQ or GPTQ checkpoint of the model>   # or, from 16-bit weights: --quantization fp8",
            "text-generation-launcher --model-id <an AWQ or GPTQ checkpoint of the model>   # or, from 16-bit weights: --quantize eetq",
        ),
    ));
}

fn checklist_length_and_leftovers(f: &Facts, b: &mut Board) {
    b.fix(fix(
        FixId::MaxNewTokens,
        CauseId::KvCacheGrowth,
        "Bound the new tokens and truncate long inputs (the cache grows with every token); the plan gives the exact limit"
            .into(),
        GivesUp::Length,
        None,
        code(
            f,
            "inputs = tokenizer(text, truncation=True, max_length=4096, return_tensors=\"pt\")\n\
             model.generate(**inputs, max_new_tokens=512)",
            "vllm serve ... --max-model-len <shorter>",
            "python -m sglang.launch_server ... --context-length <shorter>",
            "text-generation-launcher ... --max-input-tokens <shorter> --max-total-tokens <shorter>",
        ),
    ));
    checklist_leftovers(f, b);
}

/// What the session still holds and the allocator's fragmentation, for
/// every workload.
fn checklist_leftovers(f: &Facts, b: &mut Board) {
    // A vLLM server holds no notebook's leftovers.
    if f.serving.is_none() {
        b.fix(fix(
            FixId::EmptyCache,
            growth(f),
            "Free what the session still holds: in a notebook, an earlier model still referenced (or restart the kernel)"
                .into(),
            GivesUp::Nothing,
            None,
            format!("del model; import gc; gc.collect(); {}.empty_cache()", f.torch_module()),
        ));
    }
    let Some(conf) = f.alloc_conf() else { return };
    b.fix(fix(
        FixId::ExpandableSegments,
        growth(f),
        "Let PyTorch's allocator grow segments instead of fragmenting".into(),
        GivesUp::Nothing,
        None,
        code(
            f,
            &format!("{conf}=expandable_segments:True python your_script.py"),
            &format!("{conf}=expandable_segments:True vllm serve ..."),
            &format!("{conf}=expandable_segments:True python -m sglang.launch_server ..."),
            &format!("{conf}=expandable_segments:True text-generation-launcher ..."),
        ),
    ));
}

/// CUDA graphs' private pools, as vLLM and `torch.compile` capture them.
fn private_pools(f: &Facts, b: &mut Board, t: u64) {
    if let Some(pools) = f.r.private_pool_bytes.filter(|&p| p > 0) {
        b.add(
            CauseId::TooLargeOverall,
            35,
            format!(
                "CUDA graphs hold {} ({}) in private pools, on top of the model and cache",
                gib(pools),
                pct(pools, t)
            ),
        );
        b.fix(fix(
            FixId::EnforceEager,
            CauseId::TooLargeOverall,
            "Run without CUDA graphs, or leave the engine more room to capture them".into(),
            GivesUp::Speed,
            Some(pools),
            code(
                f,
                "vllm serve ... --enforce-eager",
                "vllm serve ... --enforce-eager",
                "python -m sglang.launch_server ... --disable-cuda-graph",
                "text-generation-launcher ... --cuda-graphs 0",
            ),
        ));
    }
}

/// The smallest catalog GPU with at least `need` bytes, as a fix: one that
/// runs CUDA or ROCm, since the error is PyTorch's CUDA allocator's.
fn bigger_gpu_from_figures(f: &Facts, b: &mut Board, need: u64) {
    let current = f.total.unwrap_or(0);
    let bigger = |g: &&catalog::Gpu| g.vendor.runs_cuda_or_rocm() && g.memory_bytes >= need && g.memory_bytes > current;
    match catalog::gpus().iter().find(bigger) {
        Some(g) => b.fix(fix(
            FixId::BiggerGpu,
            CauseId::TooLargeOverall,
            format!(
                "A GPU with at least {}: the {} ({}) is the smallest in the catalog",
                gib(need),
                g.name,
                g.memory_label
            ),
            GivesUp::Money,
            None,
            format!("# rent or use a {} ({} as the driver reports it)", g.name, gib(g.memory_bytes)),
        )),
        None => b.notes.push(format!("No GPU in the catalog has {}: split the work or use several GPUs.", gib(need))),
    }
}
