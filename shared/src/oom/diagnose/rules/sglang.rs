//! SGLang's empty KV pool at start-up.

use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text;
use crate::oom::diagnose::{CauseId, FixId};

/// The highest `--mem-fraction-static` worth suggesting: above it SGLang
/// leaves under 5 % of the GPU for activations and CUDA graphs.
const HIGHEST_FRACTION_PERMILLE: u64 = 950;

/// `profile_max_num_token` (sglang 0.4.3 – 0.4.8 `model_runner.py`):
/// `rest = free_after_weights − total_before_weights × (1 − mem_fraction_static)`,
/// tokens `= rest / cell_size`, and `init_memory_pool` raises at ≤ 0 tokens.
pub(super) fn sglang_no_kv_pool(f: &Facts, b: &mut Board) {
    let fraction = f.r.mem_fraction_static_permille;
    let named = fraction.map_or(String::new(), |p| format!(" ({})", text::fraction(p)));
    b.add(
        CauseId::WeightsTooLarge,
        85,
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
    let code = match fraction {
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
        "python -m sglang.launch_server ... --cuda-graph-max-bs 8   # or --disable-cuda-graph".into(),
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
