//! vLLM's start-up errors about the KV cache (`vllm/engine/llm_engine.py`,
//! `vllm/v1/core/kv_cache_utils.py`), its sampler warm-up failure
//! (`vllm/v1/worker/gpu_model_runner.py::_dummy_sampler_run`, 0.8 – 0.21 at least),
//! its warnings that the KV cache was full while serving ([`preemptions`]),
//! and the `INFO` lines before them that carry the figures the errors leave
//! out.
//!
//! vLLM prints GiB as `bytes / 2^30` with two decimals, the same binary unit
//! PyTorch uses, so the shared size reader applies.

use super::scan::{self, Cur};
use super::{Occurrence, OomKind, OomReport};

/// How far apart the phrases of one vLLM error may be.
const WINDOW: usize = 300;

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    let anchors = scan::find_all(t, "max seq len");
    for (i, &(start, end)) in anchors.iter().enumerate() {
        let limit = anchors.get(i + 1).map_or(t.len(), |a| a.0);
        if let Some(report) = seq_len_error(t, end, limit) {
            out.push(Occurrence { start, report });
        }
    }
    for (start, _) in scan::find_all(t, "No available memory for the cache blocks") {
        // A traceback also shows the source line `raise ValueError("No
        // available memory for the cache blocks. "`: that is not a message.
        if scan::find(t, scan::line_start(t, start).max(start.saturating_sub(400)), start, "raise").is_some() {
            continue;
        }
        let report = OomReport { kind: Some(OomKind::VllmNoCacheBlocks), ..OomReport::default() };
        out.push(Occurrence { start, report });
    }
    // `Free memory on device cuda:1 (60.87/79.19 GiB) on startup is less
    // than desired GPU memory utilization (0.95, 75.23 GiB). …`
    // (v1/worker/utils.py::request_memory, 0.19 – 0.21; 0.11's
    // v1/worker/gpu_worker.py names no device): free and total as
    // `format_gib`, two decimals of GiB.
    for (start, end) in scan::find_all(t, "on startup is less than desired") {
        // The message's head is short: a bounded look back keeps a hostile
        // line of many matches linear.
        let line = scan::line_start(t, start).max(start.saturating_sub(400));
        if scan::find(t, line, start, "raise").is_some() {
            continue;
        }
        let Some((from, after)) = scan::find(t, line, start, "Free memory on device") else { continue };
        let mut report = OomReport { kind: Some(OomKind::VllmFreeBelowRequest), ..OomReport::default() };
        let mut c = Cur::new(t, after);
        if c.lit("cuda:") {
            report.gpu_index = c.uint().and_then(|n| u32::try_from(n).ok());
        }
        c.lit("(");
        let free = c.fraction_permille();
        if c.lit("/") {
            report.total_bytes = c.binary_size();
            report.free_bytes = free.and_then(|p| p.checked_mul(crate::units::GIB)).map(|b| b / 1000);
        }
        let mut c = Cur::new(t, end);
        if c.find("utilization", 40) && c.lit("(") {
            report.gpu_memory_utilization_permille = c.fraction_permille().filter(|p| (1..=1000).contains(p));
        }
        out.push(Occurrence { start: from, report });
    }
    // `CUDA out of memory occurred when warming up sampler with 256 dummy
    // requests. Please try lowering `max_num_seqs` or
    // `gpu_memory_utilization` when initializing the engine.` (`warming up
    // pooler (task='classify') with …` for pooling models, same function's
    // sibling `_dummy_pooler_run`).
    for (start, end) in scan::find_all(t, "out of memory occurred when warming up") {
        if scan::find(t, scan::line_start(t, start).max(start.saturating_sub(400)), start, "raise").is_some() {
            continue;
        }
        let mut report = OomReport { kind: Some(OomKind::VllmSamplerWarmup), ..OomReport::default() };
        let mut c = Cur::new(t, end);
        if c.find("with", WINDOW.min(80)) {
            report.warmup_requests = c.uint_before("dummy").flatten();
        }
        out.push(Occurrence { start, report });
    }
    preemptions(t, out);
}

/// vLLM's warnings that its KV cache was full while serving, so it evicted
/// running requests to recompute (or swap back) later:
///
/// - V0's scheduler (core/scheduler.py `_preempt`, 0.6.6; every 50th
///   preemption): `Sequence group 221 is preempted by
///   PreemptionMode.RECOMPUTE mode because there is not enough KV cache
///   space. This can affect the end-to-end performance. Increase
///   gpu_memory_utilization or tensor_parallel_size to provide more KV
///   cache memory. total_num_cumulative_preemption=101` (`PreemptionMode.SWAP`
///   for a request of several sequences; `total_cumulative_preemption_cnt=`
///   in the docs' example, docs/configuration/optimization.md);
/// - V1's stats line (v1/metrics/loggers.py `LoggingStatLogger.log`,
///   0.34, since vllm#28522): `Running: %d reqs, Waiting: %d reqs, …, Preemptions: %d, %s KV
///   cache usage: %.1f%%`, its preemptions since the last line, printed
///   only when there were some.
fn preemptions(t: &[u8], out: &mut Vec<Occurrence>) {
    for (start, end) in scan::find_all(t, "is preempted by") {
        let mut c = Cur::new(t, end);
        let swap = c.lit("PreemptionMode.SWAP");
        if (!swap && !c.lit("PreemptionMode.RECOMPUTE")) || !c.find("not enough KV cache space", 40) {
            continue;
        }
        let mut report = OomReport { kind: Some(OomKind::VllmPreempted), ..OomReport::default() };
        for key in ["total_num_cumulative_preemption=", "total_cumulative_preemption_cnt="] {
            let mut k = c;
            if k.find(key, WINDOW) && k.on_line() {
                report.preempted_requests = k.uint();
                break;
            }
        }
        if swap {
            report.notes.push(
                "vLLM swapped the request out to CPU memory (PreemptionMode.SWAP: a request of several sequences, \
                 n > 1 or beam search) rather than recomputing it: the same full cache, and CPU swap space used."
                    .into(),
            );
        }
        let line = scan::line_start(t, start).max(start.saturating_sub(200));
        let from = scan::find(t, line, start, "Sequence group").map_or(start, |(s, _)| s);
        out.push(Occurrence { start: from, report });
    }
    for (start, end) in scan::find_all(t, "Preemptions:") {
        let mut c = Cur::new(t, end);
        let Some(n) = c.on_line().then(|| c.uint()).flatten().filter(|&n| n > 0) else { continue };
        // The stats line's own counts come first: prose about preemptions is not it.
        let line = scan::line_start(t, start).max(start.saturating_sub(400));
        if scan::find(t, line, start, "reqs,").is_none() {
            continue;
        }
        let mut report =
            OomReport { kind: Some(OomKind::VllmPreemptions), preempted_requests: Some(n), ..OomReport::default() };
        if c.lit(",") && c.find("KV cache usage:", 16) && c.on_line() {
            report.kv_cache_usage_permille = c.fraction_permille().map(|p| p / 100).filter(|&p| p <= 1000);
        }
        out.push(Occurrence { start: line, report });
    }
}

/// After "max seq len": either V0's `(X) is larger than the maximum number of
/// tokens that can be stored in KV cache (Y)`, or V1's `(X), (Y GiB KV cache
/// is needed, which is larger than the available KV cache memory (Z GiB).
/// [Based on the available memory, the estimated maximum model length is
/// N.]`. Anything else mentioning "max seq len" is not an error.
fn seq_len_error(t: &[u8], after_anchor: usize, limit: usize) -> Option<OomReport> {
    let mut c = Cur::new(t, after_anchor);
    let mut r = OomReport::default();
    c.lit("(");
    r.max_seq_len = c.uint_before(")").flatten();
    c.lit(")");
    if c.lit("is larger than the maximum number of tokens that can be stored in KV cache") {
        r.kind = Some(OomKind::VllmMaxSeqLen);
        c.lit("(");
        r.kv_cache_tokens = c.uint_before(")").flatten().or_else(|| c.grouped_uint());
        return Some(r);
    }
    // 0.8 – 0.10 print `(X), (Y GiB KV cache is needed`; reworded copies
    // (operators' logs, later releases) drop the second parenthesis.
    if !c.lit(",") {
        return None;
    }
    c.lit("(");
    let mut needed = c;
    let needed_bytes = needed.size_token();
    if !needed.lit("KV cache is needed") {
        return None;
    }
    r.kind = Some(OomKind::VllmKvCacheTooSmall);
    r.kv_needed_bytes = needed_bytes.flatten();
    let mut c = needed;
    let window = |c: &Cur<'_>| WINDOW.min(limit.saturating_sub(c.pos));
    if c.find("available KV cache memory", window(&c)) {
        c.lit("(");
        if let Some((negative, bytes)) = c.signed_size() {
            set_available(&mut r, negative, bytes);
        }
    }
    if c.find("estimated maximum model length is", window(&c)) {
        r.estimated_max_model_len = c.uint_before(".").or_else(|| c.uint_token()).flatten();
    }
    Some(r)
}

/// Records the KV cache memory vLLM found available; a negative figure means
/// the weights and the profiled peak already exceed the memory budget.
fn set_available(r: &mut OomReport, negative: bool, bytes: Option<u64>) {
    if negative && bytes != Some(0) {
        r.kv_available_bytes = Some(0);
        r.kv_deficit_bytes = bytes;
        r.notes.push(
            "vLLM found negative memory left for the KV cache: the weights and the profiled \
             activation peak alone exceed gpu_memory_utilization × the GPU's memory."
                .into(),
        );
    } else {
        r.kv_available_bytes = bytes;
    }
}

/// Fills the figures a vLLM error leaves out from the last `INFO` lines
/// before it: `Available KV cache memory: X GiB` (V1 worker) and `GPU KV cache
/// size: N tokens`. Another error in a vLLM process (`in_vllm`: a PyTorch
/// OOM while capturing CUDA graphs) takes only the settings the paste names
/// (the utilization, the cache's dtype, the pipeline); reports of other
/// kinds are left alone.
pub(super) fn fill_context(t: &[u8], error_start: usize, in_vllm: bool, r: &mut OomReport) {
    let is_vllm = matches!(
        r.kind,
        Some(
            OomKind::VllmMaxSeqLen
                | OomKind::VllmKvCacheTooSmall
                | OomKind::VllmNoCacheBlocks
                | OomKind::VllmSamplerWarmup
                | OomKind::VllmPreempted
                | OomKind::VllmPreemptions
        )
    );
    if !is_vllm && !in_vllm {
        return;
    }
    // The error's own figure, where it gives one, is what the run asked for.
    r.gpu_memory_utilization_permille = r.gpu_memory_utilization_permille.or_else(|| utilization(t));
    r.kv_cache_dtype = kv_cache_dtype(t);
    // The scheduler's token budget, which also sizes the profile's
    // activation peak (`profile_run` runs a batch of that many tokens); a
    // figure past any GPU's is no setting.
    r.max_num_batched_tokens = last_uint(
        t,
        &[
            "--max-num-batched-tokens=",
            "--max-num-batched-tokens ",
            "max_num_batched_tokens=",
            "'max_num_batched_tokens':",
            "MAX_NUM_BATCHED_TOKENS=",
        ],
    )
    .filter(|n| (1..=crate::plan::MAX_TOKENS).contains(n));
    // A paste names at most as many stages as a plan has GPUs
    // (`plan::MAX_GPUS`); a larger figure is not a setting.
    let stages = crate::plan::MAX_GPUS as u64;
    r.pipeline_parallel_size = last_uint(
        t,
        &[
            "--pipeline-parallel-size=",
            "--pipeline-parallel-size ",
            "-pp ",
            "pipeline_parallel_size=",
            "'pipeline_parallel_size':",
        ],
    )
    .filter(|n| (1..=stages).contains(n));
    if let Some((_, end)) = scan::find_last(t, t.len(), "VLLM_PP_LAYER_PARTITION=") {
        let mut c = Cur::new(t, end);
        while let Some(n) = c.uint() {
            if r.pp_layer_partition.len() as u64 == stages {
                r.pp_layer_partition.clear();
                break;
            }
            r.pp_layer_partition.push(n);
            if !c.lit(",") {
                break;
            }
        }
    }
    if !is_vllm {
        return;
    }
    // V0's stats line before its preemption warning (engine/metrics.py,
    // 0.6.6: `…, GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%.`).
    if r.kind == Some(OomKind::VllmPreempted)
        && let Some((_, end)) = scan::find_last(t, error_start, "GPU KV cache usage:")
    {
        r.kv_cache_usage_permille = Cur::new(t, end).fraction_permille().map(|p| p / 100).filter(|&p| p <= 1000);
    }
    r.weights_bytes = ["Model loading took", "Loading model weights took", "model weights take"]
        .into_iter()
        .filter_map(|key| {
            let (start, end) = scan::find_last(t, error_start, key)?;
            Some((start, Cur::new(t, end).binary_size()?))
        })
        .max_by_key(|&(start, _)| start)
        .map(|(_, bytes)| bytes);
    // V0's profile (`worker/worker.py::determine_num_available_blocks`,
    // 0.6.4 - 0.7): `the current vLLM instance can use total_gpu_memory
    // (8.00GiB) x gpu_memory_utilization (0.70) = 5.60GiB` and `… the rest
    // of the memory reserved for KV Cache is -1.05GiB.`
    if r.total_bytes.is_none()
        && let Some((_, end)) = scan::find_last(t, error_start, "total_gpu_memory (")
    {
        r.total_bytes = Cur::new(t, end).size();
    }
    if r.kv_available_bytes.is_none()
        && let Some((_, end)) = scan::find_last(t, error_start, "reserved for KV Cache is")
        && let Some((negative, bytes)) = Cur::new(t, end).signed_size()
    {
        set_available(r, negative, bytes);
    }
    if r.kv_available_bytes.is_none()
        && let Some((_, end)) = scan::find_last(t, error_start, "Available KV cache memory:")
        && let Some((negative, bytes)) = Cur::new(t, end).signed_size()
    {
        set_available(r, negative, bytes);
    }
    // `CUDA graph pool memory: 1.84 GiB (actual), 1.3 GiB (estimated), …`
    // (v1/worker/gpu_worker.py::compile_or_warm_up_model, 0.19+): the
    // graphs are captured after the KV cache, so what they take beyond the
    // estimate comes out of what the budget leaves for the warm-up.
    if let Some((_, end)) = scan::find_last(t, error_start, "CUDA graph pool memory:") {
        let mut c = Cur::new(t, end);
        let actual = c.binary_size().filter(|_| c.lit("(actual)") && c.lit(","));
        let estimated = c.binary_size().filter(|_| c.lit("(estimated)"));
        if let (Some(a), Some(e)) = (actual, estimated)
            && a > e
        {
            r.notes.push(format!(
                "vLLM's CUDA graphs took {}, {} more than its estimate of {}: captured after the KV cache, they \
                 took that from the memory the budget left for what runs after it.",
                super::gib(a),
                super::gib(a - e),
                super::gib(e)
            ));
        }
    }
    if r.kv_cache_tokens.is_none()
        && let Some((_, end)) = scan::find_last(t, error_start, "GPU KV cache size:")
    {
        let mut c = Cur::new(t, end);
        if let Some(tokens) = c.grouped_uint()
            && c.lit("tokens")
        {
            r.kv_cache_tokens = Some(tokens);
        }
    }
}

/// The last whole number one of `forms` gives (a command line's flag, the
/// engine config's `name=N`, the non-default args' `'name': N`).
fn last_uint(t: &[u8], forms: &[&str]) -> Option<u64> {
    scan::last_of(t, forms, |c| c.uint())
}

/// `gpu_memory_utilization` where vLLM or its launcher names it: the last of
/// `--gpu-memory-utilization[=| ]X` (a command line), `gpu_memory_utilization=X`
/// (the engine config line), `'gpu_memory_utilization': X` (the non-default
/// args dict) and `gpu_memory_utilization (X)` (V0's profile line). Words
/// without one of those delimiters ("tried gpu_memory_utilization 0.03-0.4")
/// are prose, and a value followed by `-` is a range, not a setting.
fn utilization(t: &[u8]) -> Option<u64> {
    const FORMS: [&str; 5] = [
        "--gpu-memory-utilization=",
        "--gpu-memory-utilization ",
        "gpu_memory_utilization=",
        "'gpu_memory_utilization':",
        "gpu_memory_utilization (",
    ];
    scan::last_of(t, &FORMS, |c| {
        let p = c.fraction_permille().filter(|p| (1..=1000).contains(p))?;
        // 0.21+'s hint `The current --gpu-memory-utilization=0.8900 is
        // equivalent to --gpu-memory-utilization=0.8690 without CUDA graph
        // memory profiling` (v1/worker/gpu_worker.py) names the setting first.
        let equivalent = scan::match_at(t, scan::skip_ws(t, c.pos), "without").is_some();
        (t.get(c.pos) != Some(&b'-') && !equivalent).then_some(p)
    })
}

/// The KV cache's dtype where the paste names it: the last of
/// `--kv-cache-dtype[=| ]X` (a command line, or a person naming the flag as
/// they ran it: "with kv-cache-dtype fp8"), `kv_cache_dtype=X` (the engine
/// config line) and `'kv_cache_dtype': 'X'` (the non-default args dict).
/// Only vLLM's own choices (`auto`, the 16-bit names, `fp8…`) are read, so
/// prose after the words is not a setting.
fn kv_cache_dtype(t: &[u8]) -> Option<String> {
    const FORMS: [&str; 4] = ["kv-cache-dtype=", "kv-cache-dtype ", "kv_cache_dtype=", "'kv_cache_dtype':"];
    scan::last_of(t, &FORMS, |c| {
        c.lit("'");
        let name = String::from_utf8_lossy(c.name()?).to_ascii_lowercase();
        let known =
            name.starts_with("fp8") || ["auto", "bfloat16", "float16", "half", "float32"].contains(&name.as_str());
        known.then_some(name)
    })
}

/// Whether the paste shows a vLLM process by what only vLLM prints: its
/// processes' line prefixes (`(VllmWorkerProcess pid=…)` of V0's
/// multiprocessing executor, executor/multiproc_worker_utils.py 0.5 – 0.10;
/// `(RayWorkerWrapper pid=…)`, Ray's prefix for V0's and V1's Ray workers,
/// executor/ray_utils.py; `(EngineCore pid=…)` and `(EngineCore_DP0 pid=…)`,
/// v1/engine/core.py's process title, with `EngineCore hit an exception`;
/// `(APIServer pid=…)`, 0.10 and later), its launchers
/// (`vllm.entrypoints…`, `vllm serve`) and the start-up lines its engine and
/// workers log (the V0 profile's `the current vLLM instance can use`,
/// worker/worker.py; `Initializing a V1 LLM engine` and `Initializing an
/// LLM engine (v…)`, v1/engine/core.py and engine/llm_engine.py). The
/// workers' rank prefixes are counted by [`worker_ranks`]. Read before
/// normalising, which strips the prefixes.
pub(super) fn process(t: &[u8]) -> bool {
    const MARKS: [&str; 11] = [
        "(EngineCore_DP",
        "(EngineCore pid=",
        "EngineCore hit an exception",
        "VllmWorkerProcess pid=",
        "RayWorkerWrapper pid=",
        "(APIServer pid=",
        "vllm.entrypoints",
        "vllm serve ",
        "the current vLLM instance can use",
        "Initializing a V1 LLM engine",
        "Initializing an LLM engine (v",
    ];
    MARKS.into_iter().any(|m| scan::find(t, 0, t.len(), m).is_some())
}

/// Whether a Python traceback in the paste runs through vLLM's package (`File
/// "…/vllm/worker/model_runner.py"`): the process ran vLLM, unless it is
/// SGLang's, whose early releases called vLLM's layers.
pub(super) fn traceback(t: &[u8]) -> bool {
    scan::find_all(t, "/vllm/").into_iter().any(|(start, _)| {
        // A path's line is short: looking back a bounded way keeps a hostile
        // line of many paths linear.
        let from = scan::line_start(t, start).max(start.saturating_sub(400));
        scan::find(t, from, start, "File \"").is_some()
    })
}

/// Whether a vLLM traceback failed in the engine's step while it served
/// (`execute_model`, the worker's `worker_busy_loop`, the engine core's
/// `step_with_batch_queue`: v1/worker/gpu_model_runner.py,
/// v1/executor/multiproc_executor.py, v1/engine/core.py, 0.8 – 0.34) and
/// in none of its start-up (the profile run that sizes the KV cache, the
/// load, the graphs' capture, the sampler's warm-up: the same files), which
/// ran before its KV cache existed.
pub(super) fn serving(t: &[u8]) -> bool {
    const STEP: [&str; 3] = ["in execute_model", "in worker_busy_loop", "in step_with_batch_queue"];
    const START_UP: [&str; 10] = [
        "in profile_run",
        "in _dummy_run",
        "in _dummy_sampler_run",
        "in determine_available_memory",
        "in determine_num_available_blocks",
        "in load_model",
        "in capture_model",
        "in initialize_kv_cache",
        "in _initialize_kv_caches",
        "in compile_or_warm_up_model",
    ];
    scan::in_steps_only(t, &STEP, &START_UP)
}

/// The distinct vLLM worker prefixes of the log: `VllmWorker rank=N` and
/// `Worker_TPn` / `Worker_PPm_TPn` (the worker's process name,
/// v1/executor/multiproc_executor.py), each a GPU of the split.
pub(super) fn worker_ranks(t: &[u8]) -> u32 {
    let mut seen: Vec<&[u8]> = Vec::new();
    for pat in ["VllmWorker rank=", "(Worker_"] {
        for (_, end) in scan::find_all(t, pat) {
            let len = t
                .get(end..)
                .unwrap_or_default()
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if let Some(label) = t.get(end..end + len).filter(|l| !l.is_empty()) {
                seen.push(label);
            }
        }
    }
    // Sorted once, not searched per label: a hostile paste of many labels
    // stays linear-logarithmic.
    crate::order::sort(&mut seen);
    seen.dedup();
    u32::try_from(seen.len()).unwrap_or(u32::MAX)
}
