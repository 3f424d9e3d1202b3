//! TGI's warm-up of its largest prefill batch at start-up, and its levers
//! (`text-generation-launcher`'s flags, launcher/src/main.rs at 3.3.7; its
//! image passes what follows the image's name to the launcher).

use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::gib;
use crate::oom::diagnose::{CauseId, FixId};

/// `FlashCausalLM.warmup` (flash_causal_lm.py, 3.3.7) allocates a KV cache
/// for the warm-up batch, runs one prefill of `--max-batch-prefill-tokens`
/// tokens, and only then sizes the real KV cache on what is left: an OOM
/// here is the weights plus one largest prefill.
pub(super) fn tgi_prefill_warmup(f: &Facts, b: &mut Board) {
    let n = f.r.prefill_tokens.unwrap_or(0);
    let figures = match (f.requested, f.total) {
        (Some(q), Some(t)) => format!("; it asked for {} more on a {} GPU", gib(q), gib(t)),
        _ => String::new(),
    };
    b.add(
        CauseId::KvCacheGrowth,
        85,
        format!(
            "TGI's start-up warm-up runs its largest prefill batch once ({n} tokens, --max-batch-prefill-tokens) \
             to check it fits: the weights plus that batch's activations did not{figures}"
        ),
    );
    b.add(
        CauseId::WeightsTooLarge,
        if n <= 512 { 70 } else { 40 },
        "the weights on each shard may leave too little: a small prefill batch failing too says so".into(),
    );
    // The router refuses a prefill budget under --max-input-tokens
    // (backends/v3/src/main.rs, 3.3.7): both go down together.
    let half = (n / 2).max(1);
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::KvCacheGrowth,
        format!("Warm up and serve a smaller prefill batch ({n} now); it must stay at least --max-input-tokens"),
        GivesUp::Length,
        None,
        format!(
            "text-generation-launcher ... --max-batch-prefill-tokens {half} --max-input-tokens {half} \
             --max-total-tokens <more than {half}>   # in place of --max-input-length"
        ),
    ));
    b.fix(fix(
        FixId::WeightFormat,
        CauseId::WeightsTooLarge,
        "Lighter weights: a quantized checkpoint, or quantize at load (eetq: 8 bits)".into(),
        GivesUp::Quality,
        None,
        "text-generation-launcher --model-id <an AWQ or GPTQ checkpoint of the model>   # or: --quantize eetq".into(),
    ));
    b.fix(fix(
        FixId::MoreGpus,
        CauseId::WeightsTooLarge,
        "Shard the model over more GPUs (tensor parallel)".into(),
        GivesUp::Money,
        None,
        "text-generation-launcher ... --num-shard <more GPUs>".into(),
    ));
}

/// TGI captures a CUDA graph per `--cuda-graphs` batch size (1,2,4,8,16,32
/// by default) after it sized the KV cache (flash_causal_lm.py, 3.3.7).
pub(super) fn graph_fixes(b: &mut Board) {
    b.fix(fix(
        FixId::EnforceEager,
        CauseId::GraphCapture,
        "Capture graphs for fewer, smaller batches, or none".into(),
        GivesUp::Speed,
        None,
        "text-generation-launcher ... --cuda-graphs 1,2,4   # 0: none".into(),
    ));
    b.fix(fix(
        FixId::MemoryFraction,
        CauseId::GraphCapture,
        "Leave more of the GPU outside TGI's KV cache".into(),
        GivesUp::Length,
        None,
        "text-generation-launcher ... --cuda-memory-fraction 0.9".into(),
    ));
}
