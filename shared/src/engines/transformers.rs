//! Hugging Face transformers `generate`: weights, then a cache that grows
//! token by token (prompt + generated, × batch). The prefill peak depends on
//! the attention implementation; logits on the transformers version.

use serde::{Deserialize, Serialize};

use crate::estimate::{Depth, Parts, Prepared, Verdict, activations};
use crate::kv;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Options {
    pub attention: AttentionImpl,
    pub logits: LogitsMode,
}

/// `attn_implementation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionImpl {
    /// `sdpa` or `flash_attention_2`: the seq² scores are never materialised.
    #[default]
    Sdpa,
    /// `eager`: batch × heads × seq² scores and probabilities in memory.
    Eager,
}

/// Which positions `generate` computes logits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogitsMode {
    /// transformers ≥ 4.45 (`logits_to_keep=1`): the last position only.
    #[default]
    LastToken,
    /// Older versions: every prompt position, in 16-bit then upcast to fp32.
    AllPositions,
}

fn options(p: &Prepared) -> Options {
    match p.scenario.engine {
        crate::engines::Engine::Transformers(o) => o,
        _ => Options::default(),
    }
}

/// Parts of GPU `g` with `batch` sequences of `seq` tokens, in prefill (the
/// whole prompt in flight) or decode (one new token per sequence).
pub(crate) fn parts(p: &Prepared, g: usize, seq: u64, batch: u64, prefill: bool) -> Parts {
    let opts = options(p);
    let text = &p.model.arch.text;
    let stage = p.stage(g);
    let kv = kv::sequence_bytes(p.stage_kv(stage), seq, None).saturating_mul(batch);
    let in_flight = if prefill { seq.saturating_mul(batch) } else { batch };
    let mut act = 0u64;
    if !p.stage_range(stage).is_empty() {
        act = activations::layer_peak(text, in_flight, p.act_bytes(), p.tp());
        if prefill && opts.attention == AttentionImpl::Eager {
            act = act.saturating_add(activations::eager_scores(text, seq, batch, p.act_bytes(), p.tp()));
        }
    }
    if p.is_last_stage(stage) {
        let positions = match (opts.logits, prefill) {
            (LogitsMode::AllPositions, true) => seq,
            _ => 1,
        };
        act = act.saturating_add(activations::logits(text.vocab_size, batch, positions, p.tp()));
    }
    // transformers' hybrid caches (`LinearAttentionLayer` in cache_utils.py)
    // hold one conv + recurrent state per sequence of the batch.
    let state = p.stage_state(stage).saturating_mul(batch);
    Parts { weights: p.stage_weights(stage), kv, state, activations: act, overhead: p.base_overhead() }
}

/// The larger of the prefill and end-of-generation states.
pub(crate) fn peak(p: &Prepared, g: usize, batch: u64) -> Parts {
    let s = &p.scenario;
    let prefill = parts(p, g, s.prompt_tokens, batch, true);
    let decode = parts(p, g, s.sequence_tokens(), batch, false);
    if prefill.total() > decode.total() { prefill } else { decode }
}

/// The first GPU that overflows, with its shortfall.
fn overflow(p: &Prepared, seq: u64, batch: u64, prefill: bool) -> Option<(usize, u64)> {
    (0..p.scenario.gpus.len()).find_map(|g| {
        let total = parts(p, g, seq, batch, prefill).total();
        let cap = p.scenario.gpus[g].capacity_bytes;
        (total > cap).then(|| (g, total - cap))
    })
}

/// Whether `batch` sequences of `prompt` + `new` tokens fit through prefill and to the last token.
pub(crate) fn fits(p: &Prepared, prompt: u64, new: u64, batch: u64) -> bool {
    overflow(p, prompt, batch, true).is_none() && overflow(p, prompt.saturating_add(new), batch, false).is_none()
}

pub(crate) fn verdict(p: &Prepared, depth: Depth) -> Verdict {
    let s = &p.scenario;
    let b = s.concurrency;
    if let Some(v) = p.load_verdict() {
        return v;
    }
    if let Some((gpu, shortfall_bytes)) = overflow(p, s.prompt_tokens, b, true) {
        return Verdict::RunsOutInPrefill { gpu, shortfall_bytes };
    }
    if overflow(p, s.sequence_tokens(), b, false).is_some() {
        // Memory grows with the sequence: find the first token that does not fit.
        let (mut lo, mut hi) = (s.prompt_tokens, s.sequence_tokens());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if overflow(p, mid, b, false).is_some() { hi = mid } else { lo = mid }
        }
        let gpu = overflow(p, hi, b, false).map_or(0, |(g, _)| g);
        return Verdict::RunsOutAtToken { gpu, token: hi, generated: hi - s.prompt_tokens };
    }
    Verdict::Fits { max_concurrency: depth.search(b, || p.max_concurrency()) }
}
