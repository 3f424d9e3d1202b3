//! vLLM's KV-cache start-up errors, and its warnings that the cache was full while serving.

use super::inspect_fix;
use crate::explain::thousands;
use crate::fixes::GivesUp;
use crate::kv::KvDtype;
use crate::oom::OomKind;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::{fraction, gib, pct};
use crate::oom::diagnose::{CauseId, DiagnosisFix, FixId};
use crate::units::GIB;

pub(super) fn vllm_max_seq_len(f: &Facts, b: &mut Board) {
    let r = f.r;
    let (Some(len), Some(tokens)) = (r.max_seq_len, r.kv_cache_tokens) else {
        b.add(CauseId::KvCacheGrowth, 80, "vLLM's KV cache cannot hold one request of the model's max length".into());
        return;
    };
    b.add(
        CauseId::KvCacheGrowth,
        90,
        format!(
            "vLLM's KV cache holds {} tokens, {} of the {} one request of max_model_len needs: vLLM refuses to start",
            thousands(tokens),
            pct(tokens, len),
            thousands(len)
        ),
    );
    b.limits.push(format!("vLLM's cache holds {} tokens: --max-model-len {} fits", thousands(tokens), tokens));
    b.fix(fix(
        FixId::MaxModelLen,
        CauseId::KvCacheGrowth,
        format!("Limit the context to the {} tokens the cache holds", thousands(tokens)),
        GivesUp::Length,
        None,
        format!("vllm serve ... --max-model-len {tokens}"),
    ));
    vllm_more_memory(f, b, CauseId::KvCacheGrowth, None, Some(len as f64 / tokens.max(1) as f64));
    vllm_fp8_cache(f, b, CauseId::KvCacheGrowth, None, len.saturating_sub(tokens) <= tokens);
    vllm_fewer_batched_tokens(f, b, CauseId::KvCacheGrowth);
}

pub(super) fn vllm_kv_too_small(f: &Facts, b: &mut Board) {
    let r = f.r;
    let (Some(len), Some(needed), Some(available)) = (r.max_seq_len, r.kv_needed_bytes, r.kv_available_bytes) else {
        b.add(CauseId::KvCacheGrowth, 80, "vLLM's KV cache cannot hold one request of the model's max length".into());
        return;
    };
    let missing = needed.saturating_sub(available);
    // vLLM prints both figures to 0.01 GiB (`check_enough_kv_cache_memory`,
    // v1/core/kv_cache_utils.py: `{needed_memory / GiB_bytes:.2f} GiB`), so
    // a difference of one step is all their rounding says.
    let step = GIB / 100;
    let within_rounding = missing <= step;
    let evidence = if within_rounding {
        format!(
            "one request of {} tokens needs {} of KV cache, just over the {} left for it: the two differ by {:.2} \
             GiB, the log's rounding",
            thousands(len),
            gib(needed),
            gib(available),
            step as f64 / GIB as f64
        )
    } else {
        format!(
            "one request of {} tokens needs {} of KV cache, {} ({}) more than the {} left for it",
            thousands(len),
            gib(needed),
            gib(missing),
            pct(missing, needed),
            gib(available)
        )
    };
    b.add(CauseId::KvCacheGrowth, 90, evidence);
    let per_token = needed / len.max(1);
    // In proportion, allowing for the rounding of both figures (each to
    // ±half a step): the most the cache can need, the least it may have.
    let fitting = match r.estimated_max_model_len {
        Some(n) => n,
        None => {
            let most_per_token = needed.saturating_add(step / 2) / len.max(1);
            (available.saturating_sub(step / 2) / most_per_token.max(1)) / 256 * 256
        }
    };
    if fitting > 0 {
        let source = if r.estimated_max_model_len.is_some() { "vLLM's own estimate" } else { "in proportion" };
        b.limits.push(format!("--max-model-len {fitting} fits ({source})"));
        b.fix(fix(
            FixId::MaxModelLen,
            CauseId::KvCacheGrowth,
            format!("Limit the context to {} tokens ({source})", thousands(fitting)),
            GivesUp::Length,
            Some(needed.saturating_sub(per_token.saturating_mul(fitting))).filter(|_| !within_rounding),
            format!("vllm serve ... --max-model-len {fitting}"),
        ));
    }
    if within_rounding {
        // Short by less than the figures' rounding: the smallest step of the
        // utilization users write (0.01) gives any GPU of 2 GiB or more at
        // least the 0.02 GiB the rounding can hide.
        b.fix(fix(
            FixId::GpuMemoryUtilization,
            CauseId::KvCacheGrowth,
            "Give vLLM a hundredth more of the GPU: it is short by less than the log's rounding".into(),
            GivesUp::Nothing,
            None,
            format!(
                "vllm serve ... --gpu-memory-utilization <current + 0.01>{}",
                f.utilization.map_or(String::new(), |(u, from)| format!("   # now {} ({from})", fraction(u)))
            ),
        ));
    } else {
        vllm_more_memory(f, b, CauseId::KvCacheGrowth, Some(missing), None);
    }
    vllm_fp8_cache(f, b, CauseId::KvCacheGrowth, Some(needed / 2), needed / 2 <= available);
    vllm_fewer_batched_tokens(f, b, CauseId::KvCacheGrowth);
}

/// Raise `--gpu-memory-utilization` by what is missing: vLLM budgets
/// `total × gpu_memory_utilization` per GPU (`worker/worker.py`
/// `determine_num_available_blocks`, `v1/worker/gpu_worker.py`
/// `determine_available_memory`), so `missing` more bytes need
/// `(u·total + missing) ÷ total`, rounded up to the hundredth. Never a value
/// at or below the current one; above 1.0 it says so instead of a flag. With
/// only a factor of the cache (the V0 message counts tokens), the flag is
/// given without a figure.
fn vllm_more_memory(f: &Facts, b: &mut Board, cause: CauseId, missing: Option<u64>, factor: Option<f64>) {
    let total = f.vllm_total;
    let current = f.utilization;
    match (missing, total, current) {
        (Some(m), Some(t), Some((u, from))) => {
            // Thousandths, rounded up to the hundredth vLLM users write.
            let exact = u as f64 / 1000.0 + m as f64 / t as f64;
            let need = ((exact * 100.0 - 1e-9).ceil() as u64) * 10;
            if need > 1000 {
                b.notes.push(format!(
                    "Raising --gpu-memory-utilization cannot cover the {} missing: from {} ({from}) it would take {} \
                     of the {} GPU, more than 1.0.",
                    gib(m),
                    fraction(u),
                    fraction_f(exact),
                    gib(t)
                ));
                return;
            }
            let adds = t.saturating_mul(need.saturating_sub(u)) / 1000;
            b.fix(fix(
                FixId::GpuMemoryUtilization,
                cause,
                format!("Give vLLM {} more of the {} GPU ({} → {})", gib(adds), gib(t), fraction(u), fraction(need)),
                GivesUp::Nothing,
                None,
                format!(
                    "vllm serve ... --gpu-memory-utilization {}   # now {} ({from}); only if nothing else uses the GPU",
                    fraction(need),
                    fraction(u)
                ),
            ));
        }
        (Some(m), Some(t), None) => {
            let add = ((m as f64 / t as f64 * 100.0 - 1e-9).ceil() as u64) * 10;
            b.fix(fix(
                FixId::GpuMemoryUtilization,
                cause,
                format!("Give vLLM {} more of the {} GPU: {} more utilization", gib(m), gib(t), fraction(add)),
                GivesUp::Nothing,
                None,
                format!(
                    "vllm serve ... --gpu-memory-utilization <current + {}>   # possible only while that stays ≤ 1.0",
                    fraction(add)
                ),
            ));
        }
        (Some(m), None, _) => b.fix(fix(
            FixId::GpuMemoryUtilization,
            cause,
            format!("Give vLLM {} more of the GPU", gib(m)),
            GivesUp::Nothing,
            None,
            format!(
                "vllm serve ... --gpu-memory-utilization <current + {} ÷ the GPU's memory>{}",
                gib(m),
                current.map_or(String::new(), |(u, from)| format!("   # now {} ({from})", fraction(u)))
            ),
        )),
        (None, _, Some((u, from))) if u >= HIGHEST_UTILIZATION_PERMILLE => b.notes.push(format!(
            "--gpu-memory-utilization is already {} ({from}): there is little left to give vLLM.",
            fraction(u)
        )),
        (None, _, current) => {
            let title = match factor {
                Some(x) => format!("Give vLLM's KV cache {x:.1}× the memory it has"),
                None => "Give vLLM more of the GPU".into(),
            };
            let now = current.map_or(String::new(), |(u, from)| format!("; now {} ({from})", fraction(u)));
            b.fix(fix(
                FixId::GpuMemoryUtilization,
                cause,
                title,
                GivesUp::Nothing,
                None,
                format!(
                    "vllm serve ... --gpu-memory-utilization {}   # only if nothing else uses the GPU{now}",
                    fraction(HIGHEST_UTILIZATION_PERMILLE)
                ),
            ));
        }
    }
}

/// The utilization suggested when no figure says how much more is needed:
/// vLLM's docs' usual ceiling, leaving 5 % for other users of the GPU.
const HIGHEST_UTILIZATION_PERMILLE: u64 = 950;

/// Under half the GPU given to vLLM is itself suspect when nothing is left
/// for the cache (vllm#10439: 0.03 – 0.4 for a 0.5B model).
const LOW_UTILIZATION_PERMILLE: u64 = 500;

fn fraction_f(x: f64) -> String {
    format!("{x:.2}")
}

/// fp8's cache, unless the plan's is already 8 bits or fewer, or the paste
/// shows the cache in fp8 already (its figures are then fp8's).
fn vllm_fp8_cache(f: &Facts, b: &mut Board, cause: CauseId, saves: Option<u64>, fits: bool) {
    if f.plan_kv.is_some_and(|k| !matches!(k, KvDtype::F32 | KvDtype::F16 | KvDtype::Bf16)) {
        return;
    }
    if let Some(dtype) = f.r.kv_cache_dtype.as_deref().filter(|d| d.starts_with("fp8")) {
        b.notes.push(format!(
            "The paste runs the KV cache in {dtype} already: its figures are an 8-bit cache's, so fp8 is not offered."
        ));
        return;
    }
    b.fix(DiagnosisFix {
        fits: saves.map(|_| fits),
        ..fix(
            FixId::KvCacheDtype,
            cause,
            "Store the KV cache in fp8 (half of a 16-bit cache, twice the tokens)".into(),
            GivesUp::CachePrecision,
            saves,
            "vllm serve ... --kv-cache-dtype fp8".into(),
        )
    });
}

pub(super) fn vllm_no_cache_blocks(f: &Facts, b: &mut Board) {
    let negative = f.r.notes.iter().any(|n| n.contains("negative"));
    // What the figures say first: a share of the GPU too small for vLLM, when
    // the utilization that covers the deficit is one a user can set, or when
    // under half the GPU was given at all.
    let low = match (f.utilization, f.r.kv_deficit_bytes, f.vllm_total) {
        (Some((u, from)), Some(d), Some(t)) => {
            let need = ((u as f64 / 10.0 + d as f64 * 100.0 / t as f64 - 1e-9).ceil() as u64) * 10;
            (need <= HIGHEST_UTILIZATION_PERMILLE).then(|| {
                format!(
                    "vLLM may use gpu_memory_utilization {} ({from}) × {} = {}, {} short of the weights and the \
                     profiled activations: {} of the GPU would cover them, before any cache",
                    fraction(u),
                    gib(t),
                    gib(t.saturating_mul(u) / 1000),
                    gib(d),
                    fraction(need)
                )
            })
        }
        (Some((u, from)), None, _) if u < LOW_UTILIZATION_PERMILLE => Some(format!(
            "vLLM may use only gpu_memory_utilization {} ({from}) of the GPU: the weights and the profiled \
             activations do not fit in that share",
            fraction(u)
        )),
        _ => None,
    };
    if let Some(text) = &low {
        b.add(CauseId::MemoryCap, 85, text.clone());
    }
    let small = small_weights(f);
    if let Some(text) = &small {
        // vLLM counts all the memory that went while it profiled as its own
        // (0.11.0 v1/worker/gpu_worker.py, `determine_available_memory`:
        // "we assume that the other processes using the same GPU did not
        // change their memory usage during the profiling").
        b.add(
            CauseId::OtherProcesses,
            70,
            format!(
                "{text}, so they cannot have left the cache nothing: memory held by other processes on the same GPU \
                 (a shared CI or notebook GPU), or taken by them while vLLM profiled, which vLLM counts as its own, \
                 is the likelier reason"
            ),
        );
        inspect_fix(f, b, None);
    }
    b.add(
        CauseId::WeightsTooLarge,
        match (&low, &small) {
            (_, Some(_)) => 25,
            (Some(_), None) => 55,
            (None, None) => 80,
        },
        format!(
            "vLLM had no memory left for KV cache blocks{}: the weights and the profiled activation peak already take \
             gpu_memory_utilization × the GPU",
            if negative { " (it computed a negative amount)" } else { "" }
        ),
    );
    if small.is_none() {
        b.add(
            CauseId::TooLargeOverall,
            if low.is_some() { 30 } else { 50 },
            "unless a lighter format or more GPUs are an option, the model does not fit this GPU for serving".into(),
        );
    }
    // A negative figure is what must be added just for the cache to reach zero.
    let cause = match (&low, &small) {
        (Some(_), _) => CauseId::MemoryCap,
        (None, Some(_)) => CauseId::OtherProcesses,
        (None, None) => CauseId::WeightsTooLarge,
    };
    vllm_more_memory(f, b, cause, f.r.kv_deficit_bytes, None);
    if small.is_some() {
        // Neither a lighter format nor more GPUs helps weights this small.
        return;
    }
    // fp8 halves 16- or 32-bit weights only: weights already at 8 bits or
    // fewer (GPTQ, AWQ, int8, fp8, GGUF) would grow or stay.
    let sixteen_bit = f.plan_weights.is_none_or(|w| {
        matches!(
            w,
            crate::formats::WeightFormat::F32 | crate::formats::WeightFormat::Bf16 | crate::formats::WeightFormat::F16
        )
    });
    // vLLM refuses fp8 below its minimum compute capability, by release
    // (`vllm::Version::fp8_min_capability`): a plan on such a GPU gets no fp8.
    let fp8 = crate::formats::WeightFormat::Fp8 { block: None };
    let min = f.vllm.min_capability(fp8).unwrap_or(0);
    let runs_fp8 = crate::solve::runs_on_gpus(fp8, &f.vllm, f.plan_gpus);
    if sixteen_bit && !runs_fp8 {
        let gpu = f.plan_gpus.iter().find(|g| g.compute_capability.is_some_and(|c| c < min));
        b.notes.push(format!(
            "fp8 is left out: vLLM loads fp8 weights from compute capability {} (Fp8Config.get_min_capability), \
             and the plan's {} is {}.",
            capability(min),
            gpu.map_or("GPU", |g| g.name.as_str()),
            gpu.and_then(|g| g.compute_capability).map_or("below it".into(), capability)
        ));
    } else if sixteen_bit {
        b.fix(fix(
            FixId::WeightFormat,
            CauseId::WeightsTooLarge,
            format!(
                "Load the weights in fp8 (about half of 16-bit), on a GPU that runs fp8 (vLLM: compute capability \
                 {} and later)",
                capability(min)
            ),
            GivesUp::Quality,
            None,
            "vllm serve ... --quantization fp8".into(),
        ));
    } else {
        b.notes.push("The plan's weights are already 8 bits or fewer: fp8 would not make them smaller.".into());
    }
    b.fix(fix(
        FixId::MoreGpus,
        CauseId::TooLargeOverall,
        format!("Shard the weights over {} GPUs", f.plan_tp * 2),
        GivesUp::Money,
        None,
        format!("vllm serve ... --tensor-parallel-size {}", f.plan_tp * 2),
    ));
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::WeightsTooLarge,
        "Profile a smaller batch, so the activation peak vLLM reserves shrinks".into(),
        GivesUp::Speed,
        None,
        "vllm serve ... --max-num-batched-tokens 2048".into(),
    ));
}

/// Weights at most this fraction of the GPU leave room for a cache under
/// any utilization users set (vLLM's default is 0.9): a quarter of the GPU
/// for the weights still leaves well over half for the profiled peak and
/// the cache.
const SMALL_WEIGHTS_DIVISOR: u64 = 4;

/// The paste's own start-up line says the weights are small beside the GPU
/// (its capacity, else the smallest CUDA or ROCm GPU in the catalog, so
/// that it holds on whichever GPU ran): the sentence that says so.
fn small_weights(f: &Facts) -> Option<String> {
    let w = f.r.weights_bytes?;
    let (gpu, of) = match f.vllm_total {
        Some(t) => (t, format!("{} of the {} GPU", pct(w, t), gib(t))),
        None => {
            let smallest = crate::catalog::gpus().iter().find(|g| g.vendor.runs_cuda_or_rocm())?;
            let of = format!(
                "a small share even of the smallest GPU in the catalog ({}, {})",
                smallest.name,
                gib(smallest.memory_bytes)
            );
            (smallest.memory_bytes, of)
        }
    };
    (w.saturating_mul(SMALL_WEIGHTS_DIVISOR) <= gpu)
        .then(|| format!("vLLM's start-up line says the weights took only {}, {of}", gib(w)))
}

/// `CUDA out of memory occurred when warming up sampler with N dummy
/// requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization`
/// when initializing the engine.` (`v1/worker/gpu_model_runner.py`
/// `_dummy_sampler_run`, 0.8 – 0.21 at least): the logits and sampling tensors of N
/// requests at once, N = min(max_num_seqs, max_num_batched_tokens), did not
/// fit beside the weights and the memory vLLM budgets.
pub(super) fn vllm_sampler_warmup(f: &Facts, b: &mut Board) {
    let n = f.r.warmup_requests;
    let with = n.map_or(String::new(), |n| format!(" with {} dummy requests", thousands(n)));
    b.add(
        CauseId::KvCacheGrowth,
        85,
        format!(
            "vLLM ran out at start-up while warming up its sampler{with}: the logits of that many requests at once \
             (vocabulary × requests) did not fit beside the weights and the memory gpu_memory_utilization gives vLLM"
        ),
    );
    let fewer = n.map_or(128, |n| (n / 2).max(1));
    b.fix(fix(
        FixId::MaxNumSeqs,
        CauseId::KvCacheGrowth,
        "Warm up and serve fewer sequences at once, as vLLM asks".into(),
        GivesUp::Speed,
        None,
        match n {
            Some(n) => format!("vllm serve ... --max-num-seqs {fewer}   # warmed up with {n}"),
            None => format!("vllm serve ... --max-num-seqs {fewer}"),
        },
    ));
    b.fix(fix(
        FixId::GpuMemoryUtilization,
        CauseId::KvCacheGrowth,
        "Leave more of the GPU outside vLLM's budget, as vLLM asks: a lower --gpu-memory-utilization".into(),
        GivesUp::Length,
        None,
        match f.utilization {
            Some((u, from)) => format!(
                "vllm serve ... --gpu-memory-utilization <lower than {}>   # now {}, {from}",
                fraction(u),
                fraction(u)
            ),
            None => "vllm serve ... --gpu-memory-utilization <lower than now>".into(),
        },
    ));
}

/// A compute capability as NVIDIA prints it: 80 → "8.0".
fn capability(c: u32) -> String {
    format!("{}.{}", c / 10, c % 10)
}

/// `Free memory on device cuda:N (F/T GiB) on startup is less than desired
/// GPU memory utilization (U, R GiB)`: vLLM asks for `ceil(T × U)` of the
/// GPU before it loads anything and stops when less is free
/// (`v1/worker/utils.py::request_memory`, 0.19 – 0.21). What is missing is
/// held by another process (a second engine, its leftover workers, a
/// notebook): vLLM's own use at that point is its CUDA context.
pub(super) fn vllm_free_below_request(f: &Facts, b: &mut Board) {
    let gpu = f.r.gpu_index.map_or_else(|| "the GPU".to_owned(), |i| format!("GPU {i}"));
    let (Some(free), Some(total), Some((u, from))) = (f.free, f.total, f.utilization) else {
        b.add(
            CauseId::OtherProcesses,
            80,
            format!("vLLM found less of {gpu} free at start-up than gpu_memory_utilization asks for: another process holds the rest"),
        );
        inspect_fix(f, b, None);
        return;
    };
    let requested = (u128::from(total) * u128::from(u)).div_ceil(1000) as u64;
    let held = total.saturating_sub(free);
    b.add(
        CauseId::OtherProcesses,
        90,
        format!(
            "when vLLM started, {} of {gpu}'s {} was free: {} ({}) was held elsewhere (another vLLM or its leftover \
             workers, a notebook, another container), and gpu_memory_utilization {} asks for {} before anything loads",
            gib(free),
            gib(total),
            gib(held),
            pct(held, total),
            fraction(u),
            gib(requested)
        ),
    );
    inspect_fix(f, b, Some(requested.saturating_sub(free)));
    // The largest hundredth at or below what is free: vLLM compares free
    // memory with `ceil(total × utilization)`.
    let fits = (u128::from(free) * 100 / u128::from(total.max(1))) as u64 * 10;
    if (10..u).contains(&fits) {
        b.fix(fix(
            FixId::GpuMemoryUtilization,
            CauseId::OtherProcesses,
            format!(
                "Ask for no more than is free (two engines sharing {gpu} need utilizations that add up to under 1)"
            ),
            GivesUp::Length,
            None,
            format!("vllm serve ... --gpu-memory-utilization {}   # now {} ({from})", fraction(fits), fraction(u)),
        ));
    }
}

/// The largest token budget vLLM picks by itself: the API server's on a GPU
/// of 70 GiB or more (`default_max_num_batched_tokens`, 0.21.0
/// engine/arg_utils.py; 2048 below it, 16384 for the `LLM` class).
const DEFAULT_BATCHED_TOKENS: u64 = 8192;

/// A token budget above vLLM's own: the profile runs a batch of that many
/// tokens, so its activation peak, which the KV cache's budget leaves out,
/// grows with it; the default gives that memory back to the cache.
fn vllm_fewer_batched_tokens(f: &Facts, b: &mut Board, cause: CauseId) {
    let Some(n) = f.r.max_num_batched_tokens.filter(|&n| n > DEFAULT_BATCHED_TOKENS) else { return };
    b.fix(fix(
        FixId::SmallerBatch,
        cause,
        format!(
            "Lower --max-num-batched-tokens to vLLM's own {DEFAULT_BATCHED_TOKENS}: the profile's activation peak \
             grows with it, and what it frees goes to the KV cache"
        ),
        GivesUp::Speed,
        None,
        format!("vllm serve ... --max-num-batched-tokens {DEFAULT_BATCHED_TOKENS}   # now {n}"),
    ));
}

/// vLLM preempted running requests for want of KV cache space
/// ([`crate::oom::OomKind::VllmPreempted`], [`crate::oom::OomKind::VllmPreemptions`]):
/// its cache, allocated whole at start-up (`gpu_memory_utilization` × the
/// GPU less the weights and the profiled peak), holds fewer tokens than
/// the requests it runs at once need. It recomputes them later: slower
/// serving, no error. The levers in the order of vLLM's own list for
/// frequent preemption (docs/configuration/optimization.md, "Preemption"):
/// a higher `gpu_memory_utilization`, fewer `max_num_seqs` or
/// `max_num_batched_tokens`, a higher `tensor_parallel_size`; then an fp8
/// cache and a shorter `max_model_len`, which the list leaves out.
pub(super) fn vllm_preemption(f: &Facts, b: &mut Board) {
    let r = f.r;
    let mut seen = Vec::new();
    match (r.kind, r.preempted_requests) {
        (Some(OomKind::VllmPreemptions), Some(n)) => seen.push(format!("{} in its last stats interval", thousands(n))),
        (_, Some(n)) => seen.push(format!("{} since it started", thousands(n))),
        (_, None) => {}
    }
    if let Some(u) = r.kv_cache_usage_permille {
        seen.push(format!("GPU KV cache {}.{} % full", u / 10, u % 10));
    }
    let seen = if seen.is_empty() { String::new() } else { format!(" ({})", seen.join(", ")) };
    let holds = r.kv_cache_tokens.map_or(String::new(), |n| format!(" ({} tokens)", thousands(n)));
    // Above a plan's own verdict (90): the warning itself says what filled up.
    b.add(
        CauseId::KvPoolFull,
        95,
        format!(
            "running requests were preempted by vLLM for want of KV cache space{seen}: the cache it allocated once \
             at start-up{holds} holds fewer tokens than the requests running at once need, so it evicts some and \
             recomputes them later; slower, not a crash"
        ),
    );
    match f.utilization {
        Some((u, from)) if u >= HIGHEST_UTILIZATION_PERMILLE => b.notes.push(format!(
            "--gpu-memory-utilization is already {} ({from}): raising it further leaves almost nothing for \
             activations and CUDA graphs.",
            fraction(u)
        )),
        current => b.fix(fix(
            FixId::GpuMemoryUtilization,
            CauseId::KvPoolFull,
            "Give the KV cache more of the GPU: a higher --gpu-memory-utilization, vLLM's first lever. The risk: \
             less left for activations and CUDA graphs, and too little is a real OOM"
                .into(),
            GivesUp::Nothing,
            None,
            match current {
                Some((u, from)) => format!(
                    "vllm serve ... --gpu-memory-utilization {}   # now {} ({from}); only if nothing else uses the GPU",
                    fraction((u + super::graphs::STEP_PERMILLE).min(HIGHEST_UTILIZATION_PERMILLE)),
                    fraction(u)
                ),
                None => format!(
                    "vllm serve ... --gpu-memory-utilization <now + {}>   # at most {}; only if nothing else uses the GPU",
                    fraction(super::graphs::STEP_PERMILLE),
                    fraction(HIGHEST_UTILIZATION_PERMILLE)
                ),
            },
        )),
    }
    b.fix(fix(
        FixId::MaxNumSeqs,
        CauseId::KvPoolFull,
        "Run fewer sequences at once, so their KV fits the cache".into(),
        GivesUp::Length,
        None,
        "vllm serve ... --max-num-seqs <fewer than now>   # or a smaller --max-num-batched-tokens".into(),
    ));
    b.fix(fix(
        FixId::MoreGpus,
        CauseId::KvPoolFull,
        "Shard the weights over more GPUs, so each keeps more memory for the cache".into(),
        GivesUp::Money,
        None,
        format!("vllm serve ... --tensor-parallel-size {}", f.plan_tp * 2),
    ));
    vllm_fp8_cache(f, b, CauseId::KvPoolFull, None, true);
    b.fix(fix(
        FixId::MaxModelLen,
        CauseId::KvPoolFull,
        "Cap how long one request may grow: the longest hold the most blocks".into(),
        GivesUp::Length,
        None,
        "vllm serve ... --max-model-len <shorter than now>".into(),
    ));
}
