//! Text Generation Inference's (TGI) warm-up failure: at start-up each shard
//! runs its largest prefill batch once, and an out-of-memory error there is
//! re-raised as (`FlashCausalLM.warmup`,
//! server/text_generation_server/models/flash_causal_lm.py, 0.9.4 – 3.3.7):
//!
//! ```text
//! RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`
//! ```
//!
//! 0.9.0 – 0.9.3 said `… handle T total tokens with P prefill tokens. You
//! need to decrease `--max-batch-total-tokens` or `--max-batch-prefill-tokens``.
//! The router repeats it (`Server error: …`, `Error: Warmup(Generation("…"))`):
//! one failure, read once.

use super::scan::{self, Cur};
use super::{Occurrence, OomKind, OomReport};

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    // The source line a traceback quotes has `{num_tokens}`, not a number.
    let last = scan::find_all(t, "Not enough memory to handle").into_iter().rev().find_map(|(start, end)| {
        let mut c = Cur::new(t, end);
        let n = c.uint()?;
        let prefill = if c.lit("total tokens with") { c.uint()? } else { n };
        c.lit("prefill tokens").then_some((start, prefill))
    });
    let Some((start, prefill)) = last else { return };
    let report =
        OomReport { kind: Some(OomKind::TgiPrefillWarmup), prefill_tokens: Some(prefill), ..OomReport::default() };
    out.push(Occurrence { start, report });
}

/// A PyTorch message just before TGI's warm-up message is its cause (the
/// `RuntimeError` is raised `from e`): one failure, read as TGI's warm-up
/// with PyTorch's figures. `found` is in text order.
pub(super) fn fold_cause(found: &mut Vec<Occurrence>) {
    let Some(i) = found.iter().position(|o| o.report.kind == Some(OomKind::TgiPrefillWarmup)) else { return };
    let cause = i.checked_sub(1).and_then(|c| found.get(c)).and_then(|o| o.report.kind);
    if matches!(cause, Some(OomKind::Pytorch | OomKind::PytorchLegacy | OomKind::PytorchAsync | OomKind::CudaError)) {
        let tgi = found.remove(i);
        if let Some(o) = found.get_mut(i - 1) {
            o.report.kind = tgi.report.kind;
            o.report.prefill_tokens = tgi.report.prefill_tokens;
        }
    }
}

/// Whether the paste is TGI's: its launcher's, router's and shards' log
/// targets (`text_generation_launcher:`, `text_generation_router`,
/// `text_generation_client`, `text_generation_server` in a traceback),
/// the launcher's own name and its image. Read before normalising.
pub(super) fn process(t: &[u8]) -> bool {
    const MARKS: [&str; 6] = [
        "text_generation_launcher",
        "text_generation_router",
        "text_generation_client",
        "text_generation_server",
        "text-generation-launcher",
        "huggingface/text-generation-inference",
    ];
    MARKS.into_iter().any(|m| scan::find(t, 0, t.len(), m).is_some())
}

#[cfg(test)]
mod tests {
    use super::super::{OomKind, parse};

    #[test]
    fn the_warm_up_message_is_read_once_with_the_pytorch_figures_before_it() {
        let r = parse(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity \
             of 22.00 GiB of which 100.00 MiB is free. Of the allocated memory 20.00 GiB is allocated by PyTorch, and \
             1.00 GiB is reserved by PyTorch but unallocated.\n\
             The above exception was the direct cause of the following exception:\n\
             \x20               f\"Not enough memory to handle {num_tokens} prefill tokens. \"\n\
             RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`\n\
             Error: Warmup(Generation(\"Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`\"))",
        );
        assert_eq!(r.kind, Some(OomKind::TgiPrefillWarmup));
        assert_eq!((r.prefill_tokens, r.requested_bytes, r.occurrences), (Some(4096), Some(1 << 30), 1));
        let old = parse(
            "Not enough memory to handle 16000 total tokens with 2 prefill tokens. You need to decrease \
             `--max-batch-total-tokens` or `--max-batch-prefill-tokens`",
        );
        assert_eq!((old.kind, old.prefill_tokens), (Some(OomKind::TgiPrefillWarmup), Some(2)));
        assert_eq!(parse("Not enough memory to handle `max_total_tokens=32000`").kind, None);
    }
}
