//! The vision tower in vLLM's profile run (0.24.0 `gpu_model_runner.py::profile_run`,
//! `multimodal/encoder_budget.py`, `v1/core/encoder_cache_manager.py`):
//!
//! - the encoder budget is `max(max_num_batched_tokens, tokens of the largest
//!   item)` (`compute_mm_encoder_budget`);
//! - the profile takes the modality whose largest item has the most tokens
//!   and as many of its largest items as `MultiModalBudget._get_max_items`
//!   allows: `max(1, min(budget ÷ tokens, max_num_seqs × max(1, min(limit,
//!   max_model_len ÷ tokens))))`, `limit` from `--limit-mm-per-prompt` (999
//!   by default; 0 for every modality: no encoder profile);
//! - the tower runs over all of them in one batch (`embed_multimodal`), and
//!   their outputs stay in the encoder cache while the text's dummy run and
//!   the sampler run.
//!
//! So the peak is the larger of the tower's pass and the text's peak plus the
//! outputs. The tower's pass is counted as its MLP holds it
//! (`siglip.py::SiglipMLP`, `qwen2_5_vl.py`, `pixtral.py`: the residual
//! stream, the norm's output, and fc1's and the activation's outputs, the
//! intermediate width split over TP), the outputs at the language model's
//! width in the model dtype.

use super::{DEFAULT_MM_LIMIT, Options};
use crate::arch::VisionTower;
use crate::engines::Plan;

/// Items of the profile and the tokens each gives the language model; none
/// when the tower's largest image is not read or every modality is off.
pub(crate) fn items(v: &VisionTower, o: Options, mnbt: u64, max_num_seqs: u64, max_model_len: u64) -> Option<u64> {
    let tokens = v.item.tokens;
    if tokens == 0 || !o.version.profiles_encoder() {
        return None;
    }
    // The Qwen-VL towers also take video, whose largest item (two frames at
    // the largest size, one temporal patch) ties the image's: vLLM's
    // `get_modality_with_max_tokens` then picks "video".
    let video = v.kind.starts_with("qwen");
    let limits = o.mm_limits;
    let limit = match (video, limits.video) {
        (true, Some(n)) if n > 0 => n,
        (true, None) => DEFAULT_MM_LIMIT,
        _ => limits.image.unwrap_or(DEFAULT_MM_LIMIT),
    };
    if limit == 0 {
        return None;
    }
    let budget = mnbt.max(tokens);
    let per_prompt = limit.min(max_model_len / tokens).max(1);
    Some((budget / tokens).min(max_num_seqs.saturating_mul(per_prompt)).max(1))
}

/// The profile's peak with the encoder's pass, from the text's `text_peak`.
pub(super) fn peak(p: &Plan, o: Options, mnbt: u64, max_num_seqs: u64, max_model_len: u64, text_peak: u64) -> u64 {
    let Some(v) = &p.model.arch.vision else { return text_peak };
    let Some(n) = items(v, o, mnbt, max_num_seqs, max_model_len) else { return text_peak };
    let bpe = p.bytes_per_element();
    let per_patch =
        v.hidden_size.saturating_mul(2).saturating_add(v.intermediate_size.saturating_mul(2) / p.tp().max(1));
    let tower = n.saturating_mul(v.item.patches).saturating_mul(per_patch).saturating_mul(bpe);
    let outputs = n.saturating_mul(v.item.tokens).saturating_mul(p.model.arch.text.hidden_size).saturating_mul(bpe);
    tower.max(text_peak.saturating_add(outputs))
}

/// vLLM's line about the encoder's profile (0.24.0 `profile_run`), when it runs one.
pub(super) fn log_line(p: &Plan, o: Options, mnbt: u64, max_num_seqs: u64, max_model_len: u64) -> Option<String> {
    let v = p.model.arch.vision.as_ref()?;
    let n = items(v, o, mnbt, max_num_seqs, max_model_len)?;
    let video = v.kind.starts_with("qwen") && o.mm_limits.video != Some(0);
    Some(format!(
        "Encoder cache will be initialized with a budget of {} tokens, and profiled with {n} {} items of the maximum \
         feature size.",
        mnbt.max(v.item.tokens),
        if video { "video" } else { "image" }
    ))
}
