//! SGLang's KV pool: empty at start-up, or full while serving.

use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text;
use crate::oom::diagnose::{CauseId, FixId};

/// The highest `--mem-fraction-static` worth suggesting: above it SGLang
/// leaves under 5 % of the GPU for activations and CUDA graphs.
const HIGHEST_FRACTION_PERMILLE: u64 = 950;

/// Without a plan, a `mem_fraction_static` below this is a setting to
/// undo, not to raise by steps: it is below every default SGLang picks on a
/// GPU of 8 GB or more (0.79 – 0.88 by TP in 0.4.0 – 0.4.7,
/// `engines::sglang::default_mem_fraction_0_4`; from the GPU's memory since
/// 0.4.7.post1, `engines::sglang::gpu_memory_settings`: about 0.55 at 8 GB,
/// 0.70 – 0.90 from 16 GB, and a vision model's 8 GiB less, about 0.5 on a
/// 24 GB GPU, 0.5.23 `memory_hook.py`).
const LOW_FRACTION_PERMILLE: u64 = 450;
/// With a plan, how far below the default it computes a fraction must be
/// to be a setting to undo: more than one of the +0.05 steps the fix would
/// otherwise suggest, so that the default itself is never blamed.
const BELOW_DEFAULT_PERMILLE: u64 = 50;

/// `profile_max_num_token` (sglang 0.4.3 – 0.4.8 `model_runner.py`):
/// `rest = free_after_weights − total_before_weights × (1 − mem_fraction_static)`,
/// tokens `= rest / cell_size`, and `init_memory_pool` raises at ≤ 0 tokens.
pub(super) fn sglang_no_kv_pool(f: &Facts, b: &mut Board) {
    let fraction = f.r.mem_fraction_static_permille;
    let named = fraction.map_or(String::new(), |p| format!(" ({})", text::fraction(p)));
    let low = fraction.filter(|&p| match f.sglang_default_fraction {
        Some(d) => p.saturating_add(BELOW_DEFAULT_PERMILLE) < d,
        None => p < LOW_FRACTION_PERMILLE,
    });
    let default = match f.sglang_default_fraction {
        Some(d) => format!("{} for this plan", text::fraction(d)),
        None => {
            "0.79 – 0.88 by TP in 0.4.0 – 0.4.7; since then from the GPU's memory, about 0.70 – 0.90 from 16 GB".into()
        }
    };
    if let Some(p) = low {
        b.add(
            CauseId::MemoryCap,
            85,
            format!(
                "mem_fraction_static is {}: SGLang may fill only that share of the GPU with the weights and the KV \
                 pool, far below the default it picks itself ({default}), so the weights leave nothing of it for \
                 the cache",
                text::fraction(p)
            ),
        );
    }
    b.add(
        CauseId::WeightsTooLarge,
        if low.is_some() { 55 } else { 85 },
        format!(
            "SGLang's KV pool came out at zero tokens or fewer at start-up: what was loaded before it (the weights, \
             and a speculative draft model's) takes more than mem_fraction_static{named} of the GPU, so after keeping \
             back the rest for activations and CUDA graphs nothing is left for the cache"
        ),
    );
    b.add(
        CauseId::TooLargeOverall,
        40,
        "if raising --mem-fraction-static then fails while capturing CUDA graphs, the model does not fit this GPU \
         with room for both"
            .into(),
    );
    // Weights that alone take more than the highest share worth giving: no
    // fraction makes room for them.
    let beyond = f
        .sglang_weights
        .filter(|&(w, cap)| u128::from(w) * 1000 >= u128::from(cap) * u128::from(HIGHEST_FRACTION_PERMILLE));
    if let Some((w, cap)) = beyond {
        b.notes.push(format!(
            "The plan's weights alone take {} of the {} GPU, more than the highest mem_fraction_static worth \
             giving ({}): raising it cannot make room for the KV pool.",
            text::gib(w),
            text::gib(cap),
            text::fraction(HIGHEST_FRACTION_PERMILLE)
        ));
    }
    let code = match fraction {
        _ if beyond.is_some() && low.is_none() => None,
        Some(p) if low.is_some() => {
            b.fix(fix(
                FixId::MemFractionStatic,
                CauseId::MemoryCap,
                format!(
                    "Give SGLang its default share of the GPU: leave out --mem-fraction-static ({} now keeps most of \
                     the GPU from the weights and the cache)",
                    text::fraction(p)
                ),
                GivesUp::Nothing,
                None,
                match f.sglang_default_fraction {
                    Some(d) => format!(
                        "python -m sglang.launch_server ... --mem-fraction-static {}   # SGLang's default for this plan; now {}",
                        text::fraction(d),
                        text::fraction(p)
                    ),
                    None => format!(
                        "python -m sglang.launch_server ...   # without --mem-fraction-static: SGLang's default ({default}); now {}",
                        text::fraction(p)
                    ),
                },
            ));
            None
        }
        Some(p) if p >= HIGHEST_FRACTION_PERMILLE => None,
        Some(p) => Some(format!(
            "python -m sglang.launch_server ... --mem-fraction-static {}   # now {}",
            text::fraction((p + 50).min(HIGHEST_FRACTION_PERMILLE)),
            text::fraction(p)
        )),
        None => {
            Some("python -m sglang.launch_server ... --mem-fraction-static <higher than now, e.g. +0.05>".to_owned())
        }
    };
    match code {
        Some(code) => b.fix(fix(
            FixId::MemFractionStatic,
            CauseId::WeightsTooLarge,
            "Raise --mem-fraction-static, as SGLang asks: the pool gets what the weights leave of that share".into(),
            GivesUp::Nothing,
            None,
            code,
        )),
        None if low.is_some() || beyond.is_some() => {}
        None => b.notes.push(format!(
            "mem_fraction_static is already {}: raising it further leaves almost nothing for activations.",
            text::fraction(fraction.unwrap_or(0))
        )),
    }
    b.fix(fix(
        FixId::EnforceEager,
        CauseId::TooLargeOverall,
        "Capture fewer CUDA graphs (or none), so a higher --mem-fraction-static still leaves them room".into(),
        GivesUp::Speed,
        None,
        format!("{}; or --disable-cuda-graph", super::graphs::sglang_graph_batch("8")),
    ));
    b.fix(fix(
        FixId::WeightFormat,
        CauseId::WeightsTooLarge,
        "Serve a lighter checkpoint (FP8 or 4-bit) of the same model".into(),
        GivesUp::Quality,
        None,
        "python -m sglang.launch_server --model-path <an FP8 or AWQ checkpoint> ...".into(),
    ));
    b.fix(fix(
        FixId::MoreGpus,
        CauseId::TooLargeOverall,
        "Shard the weights over more GPUs".into(),
        GivesUp::Money,
        None,
        format!("python -m sglang.launch_server ... --tp-size {}", f.plan_tp * 2),
    ));
}

/// SGLang's tuning guide (docs/advanced_features/hyperparameter_tuning.md,
/// "Tune `--mem-fraction-static`"): `available_gpu_mem` of the start-up
/// line is what activations and CUDA graphs get; 5 – 8 GB is good, more is
/// room to raise `--mem-fraction-static` "in increments of 0.01", less
/// risks OOM errors. SGLang prints GiB as GB (`get_available_gpu_memory`).
const GUIDE_LEAST_OUTSIDE_POOL: u64 = 5 * crate::units::GIB;
const GUIDE_MOST_OUTSIDE_POOL: u64 = 8 * crate::units::GIB;
const GUIDE_STEP_PERMILLE: u64 = 10;

/// SGLang found its KV pool full while serving and retracted running
/// requests ([`crate::oom::OomKind::SglangKvPoolFull`]): the pool
/// `init_memory_pool` allocated once at start-up holds fewer tokens than
/// the requests running at once need. It recomputes them later: slower
/// serving, no error. The levers in the order of SGLang's tuning guide
/// (hyperparameter_tuning.md, sglang 0.5.x): frequent retractions first
/// ask for a higher `--schedule-conservativeness` ("1.3"; about one a
/// minute is fine), then a bigger pool (`--mem-fraction-static`, while
/// 5 – 8 GB stay outside it), fewer `--max-running-requests`, a higher
/// `--tp-size`; then an fp8 cache (quantized_kv_cache.md: `fp8_e4m3`
/// recommended), which the guide leaves out.
pub(super) fn sglang_pool_full(f: &Facts, b: &mut Board) {
    let r = f.r;
    // Every TP rank logs each retraction: lines, not retractions.
    let times = if r.occurrences > 1 { format!(" ({} warning lines)", r.occurrences) } else { String::new() };
    let mut last = Vec::new();
    if let Some(n) = r.preempted_requests {
        last.push(format!("{n} retracted"));
    }
    if let Some(u) = r.kv_cache_usage_permille {
        last.push(format!("token usage {}", text::fraction(u)));
    }
    if let Some(q) = r.new_token_ratio_permille {
        last.push(format!("new-token ratio now {}, so it admits fewer", text::fraction(q)));
    }
    let last = if last.is_empty() { String::new() } else { format!(" (last: {})", last.join(", ")) };
    let share = r
        .mem_fraction_static_permille
        .map_or(String::new(), |p| format!(" (within mem_fraction_static {})", text::fraction(p)));
    // Above a plan's own verdict (90): the warning itself says what filled up.
    let cause = if r.kind == Some(crate::oom::OomKind::SglangKvAllocFailed) {
        format!(
            "SGLang found no free KV slots for a batch and stopped{last}: the pool it allocated once at \
             start-up{share} holds fewer tokens than the requests running at once need, and retracting could free \
             no more"
        )
    } else {
        format!(
            "SGLang found its KV pool full{times}{last}: the pool it allocated once at start-up{share} holds fewer \
             tokens than the requests running at once need, so it retracts some and recomputes them later; slower, \
             not a crash"
        )
    };
    b.add(CauseId::KvPoolFull, 95, cause);
    b.fix(fix(
        FixId::Concurrency,
        CauseId::KvPoolFull,
        "Admit new requests more cautiously, as SGLang's tuning guide says for frequent retractions (about one a \
         minute is fine)"
            .into(),
        GivesUp::Length,
        None,
        "python -m sglang.launch_server ... --schedule-conservativeness 1.3   # 1.0 by default".into(),
    ));
    let outside = r.available_gpu_mem_bytes;
    match (r.mem_fraction_static_permille, outside) {
        (_, Some(a)) if a < GUIDE_LEAST_OUTSIDE_POOL => b.notes.push(format!(
            "SGLang left only {} outside its pool at start-up (available_gpu_mem), under the 5 – 8 GB its guide keeps \
             for activations: a higher --mem-fraction-static would risk a real OOM.",
            text::gib(a)
        )),
        (Some(p), _) if p >= HIGHEST_FRACTION_PERMILLE => b.notes.push(format!(
            "mem_fraction_static is already {}: raising it further leaves almost nothing for activations.",
            text::fraction(p)
        )),
        (fraction, _) => b.fix(fix(
            FixId::MemFractionStatic,
            CauseId::KvPoolFull,
            format!(
                "Give the pool more of the GPU: a higher --mem-fraction-static, 0.01 at a time{}. The risk: less \
                 room for activations and CUDA graphs, and too little is a real OOM",
                match outside {
                    Some(a) if a > GUIDE_MOST_OUTSIDE_POOL => format!(
                        " ({} was left outside the pool at start-up, more than the 8 GB SGLang's guide keeps)",
                        text::gib(a)
                    ),
                    Some(_) | None => " while 5 – 8 GB stay outside it (available_gpu_mem at start-up)".into(),
                }
            ),
            GivesUp::Nothing,
            None,
            match fraction {
                Some(p) => format!(
                    "python -m sglang.launch_server ... --mem-fraction-static {}   # now {}",
                    text::fraction((p + GUIDE_STEP_PERMILLE).min(HIGHEST_FRACTION_PERMILLE)),
                    text::fraction(p)
                ),
                None => "python -m sglang.launch_server ... --mem-fraction-static <now + 0.01>".into(),
            },
        )),
    }
    b.fix(fix(
        FixId::MaxNumSeqs,
        CauseId::KvPoolFull,
        "Run fewer requests at once, so their KV fits the pool".into(),
        GivesUp::Length,
        None,
        "python -m sglang.launch_server ... --max-running-requests <fewer than now>".into(),
    ));
    b.fix(fix(
        FixId::MoreGpus,
        CauseId::KvPoolFull,
        "Shard the weights over more GPUs, so each keeps more memory for the pool".into(),
        GivesUp::Money,
        None,
        format!("python -m sglang.launch_server ... --tp-size {}", f.plan_tp * 2),
    ));
    if f.plan_kv
        .is_none_or(|k| matches!(k, crate::kv::KvDtype::F32 | crate::kv::KvDtype::F16 | crate::kv::KvDtype::Bf16))
    {
        b.fix(fix(
            FixId::KvCacheDtype,
            CauseId::KvPoolFull,
            "Store the KV cache in fp8 (half of a 16-bit cache, twice the tokens)".into(),
            GivesUp::CachePrecision,
            None,
            "python -m sglang.launch_server ... --kv-cache-dtype fp8_e4m3".into(),
        ));
    }
}
