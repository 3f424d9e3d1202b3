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
//!
//! vLLM 0.11 – 0.17 (the `0.11-mm`, `0.12-mm` and `0.17-mm` rules, read from
//! the 0.11.0, 0.12.0 and 0.13.0 source; `MultiModalBudget` in
//! `v1/worker/utils.py` counts the items as above) keep the outputs at the
//! tower's full width and the dummy batch's pixels, on the GPU in fp32
//! (transformers' fast processors rescale to fp32) until `profile_run`
//! returns; 0.11 – 0.12 also copy each output into zeros of
//! [`EncoderPadding`] rows when it has fewer, the loop's last output keeping
//! the unpadded outputs alive beside the copies. Qwen3-VL's largest video counts 12.5 tokens
//! per token for the budget ("one video token is converted to
//! \"<{timestamp} seconds>\" (on average 9.5 tokens)", 0.11.0 – 0.12.0
//! `qwen3_vl.py::get_max_video_tokens`), while the tower returns its real
//! tokens, each `1 + deepstack` embeddings wide; Qwen2-VL's and
//! Qwen2.5-VL's largest video is as many largest-image frames as
//! `max_model_len` holds, up to 14. InternVL's remote code around a Qwen or
//! gpt-oss model takes video of one-tile frames ([`internvl_video`], the
//! same in 0.13.0, 0.24.0 and 0.34.0), which outweighs its largest image at
//! any `max_model_len` beyond a few thousand tokens.

use super::{DEFAULT_MM_LIMIT, EncoderPadding, EncoderProfile, Options};
use crate::arch::{VisionItem, VisionTower};
use crate::engines::Plan;

/// Bytes of one pixel value as vLLM hands the dummy batch to the tower (fp32).
const PIXEL_VALUE_BYTES: u64 = 4;

/// 0.11.0 – 0.12.0 `qwen3_vl.py::get_max_video_tokens`: `video_soft_tokens * 12.5`, as tenths.
const QWEN3_VL_VIDEO_TOKEN_TENTHS: u64 = 125;

/// 0.11.0 `qwen2_vl.py::_MAX_FRAMES_PER_VIDEO`: the most frames of a
/// Qwen2-VL / Qwen2.5-VL video the profile builds.
const QWEN2_VL_MAX_FRAMES_PER_VIDEO: u64 = 14;

/// The most images PaliGemma takes in one prompt (vLLM 0.34.0
/// `paligemma.py::PaliGemmaProcessingInfo.get_supported_mm_limits`).
const PALIGEMMA_IMAGES_PER_PROMPT: u64 = 1;

/// The profile's items: how many, of which item, and the tokens each counts
/// against the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Profile {
    pub items: u64,
    pub item: VisionItem,
    /// The tokens one item counts for the budget (its own, or Qwen3-VL's
    /// 12.5 × on 0.11 – 0.12).
    pub counted: u64,
    pub budget: u64,
    pub video: bool,
}

/// The profile vLLM runs; none when the tower's largest image is not read or
/// every modality is off.
pub(crate) fn profile(
    v: &VisionTower,
    o: Options,
    mnbt: u64,
    max_num_seqs: u64,
    max_model_len: u64,
) -> Option<Profile> {
    if v.item.tokens == 0 {
        return None;
    }
    let rules = o.version.encoder_profile()?;
    // The Qwen-VL towers also take video, whose largest item (two frames at
    // the largest size, one temporal patch) ties the image's: vLLM's
    // `get_modality_with_max_tokens` then picks "video" (the 0.19 – 0.24
    // rules).
    let qwen = v.kind.starts_with("qwen");
    // InternVL's remote code around a Qwen or gpt-oss model takes video too
    // (`v.video` is then one frame).
    let internvl = v.kind == "internvit" && v.video.tokens > 0;
    let limits = o.mm_limits;
    let video_on = (qwen || internvl) && limits.video != Some(0);
    // From 0.11 to 0.17 the largest video is an item of its own; the
    // profile takes the modality with the most tokens per item (a tie: video).
    // InternVL's video is the same item under every rule set (0.13.0 – 0.34.0).
    let own_video = if internvl {
        video_on.then(|| internvl_video(v, limits.image != Some(0), max_model_len))
    } else {
        qwen_video(v, rules, video_on, max_model_len)
    };
    let (item, counted, video_on) = match own_video {
        // Video only when images are off (`--limit-mm-per-prompt image:0`).
        Some((item, counted)) if counted >= v.item.tokens || limits.image == Some(0) => (item, counted, true),
        Some(_) => (v.item, v.item.tokens, false),
        None => (v.item, v.item.tokens, video_on),
    };
    let limit =
        if video_on { limits.video.unwrap_or(DEFAULT_MM_LIMIT) } else { limits.image.unwrap_or(DEFAULT_MM_LIMIT) };
    // PaliGemma takes one image per prompt (0.34.0 `paligemma.py::get_supported_mm_limits`),
    // which caps the user's limit (`processing/context.py::allowed_mm_limits`).
    let limit = if v.kind == "paligemma" { limit.min(PALIGEMMA_IMAGES_PER_PROMPT) } else { limit };
    if limit == 0 {
        return None;
    }
    let budget = mnbt.max(counted);
    let per_prompt = limit.min(max_model_len / counted).max(1);
    let items = (budget / counted).min(max_num_seqs.saturating_mul(per_prompt)).max(1);
    Some(Profile { items, item, counted, budget, video: video_on })
}

/// The Qwen-VL towers' largest video and the tokens it counts, by the rule
/// set (`None`: no video item of its own).
fn qwen_video(v: &VisionTower, rules: EncoderProfile, video_on: bool, max_model_len: u64) -> Option<(VisionItem, u64)> {
    match rules {
        EncoderProfile::Kept { .. } if !video_on => None,
        EncoderProfile::Outputs => None,
        // Qwen3-VL: 12.5 × its tokens on 0.11 – 0.12, its tokens from 0.13.
        EncoderProfile::Kept { padding: Some(_), .. } if v.video.tokens > 0 => {
            Some((v.video, v.video.tokens.saturating_mul(QWEN3_VL_VIDEO_TOKEN_TENTHS) / 10))
        }
        EncoderProfile::Kept { padding: None, .. } if v.video.tokens > 0 => Some((v.video, v.video.tokens)),
        // Qwen2-VL / Qwen2.5-VL (0.11.0 and 0.13.0 `qwen2_vl.py::get_num_frames_with_most_features`):
        // frames at the largest image's size, added while their tokens fit
        // `max_model_len`, two frames to a temporal patch, at most 14 frames.
        _ if matches!(v.kind.as_str(), "qwen2_vl" | "qwen2_5_vl") => {
            let patches_in_time = (max_model_len / v.item.tokens).clamp(1, QWEN2_VL_MAX_FRAMES_PER_VIDEO / 2);
            let video = VisionItem {
                patches: v.item.patches.saturating_mul(patches_in_time),
                tokens: v.item.tokens.saturating_mul(patches_in_time),
                values: v.item.values.saturating_mul(patches_in_time),
            };
            Some((video, video.tokens))
        }
        _ => None,
    }
}

/// InternVL's largest video (vLLM 0.34.0 `internvl.py::get_num_frames_with_most_features`):
/// as many one-tile frames as `max_model_len` holds beside one largest image,
/// when images are on. The budget counts that video (`encoder_budget.py`:
/// each active modality's largest item, one of each); the profile's dummy
/// video is built alone (`get_dummy_encoder_profile_inputs`: `mm_counts =
/// {"video": 1}`), so it holds as many frames as `max_model_len` alone does.
/// `(the profile's item, the tokens it counts)`.
fn internvl_video(v: &VisionTower, images_on: bool, max_model_len: u64) -> (VisionItem, u64) {
    let frame = v.video;
    let beside = if images_on { v.item.tokens } else { 0 };
    let counted_frames = (max_model_len.saturating_sub(beside) / frame.tokens.max(1)).max(1);
    let frames = (max_model_len / frame.tokens.max(1)).max(1);
    let video = VisionItem {
        patches: frame.patches.saturating_mul(frames),
        tokens: frame.tokens.saturating_mul(frames),
        values: frame.values.saturating_mul(frames),
    };
    (video, frame.tokens.saturating_mul(counted_frames))
}

/// What the profile holds on the first stage, beside the tower's pass and the text's peak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Held {
    /// The tower's pass over the items (freed before the text's run).
    pub tower: u64,
    /// The items' outputs, kept through the text's run.
    pub outputs: u64,
    /// 0.11 – 0.12: the outputs' padded copies.
    pub padded: u64,
    /// 0.11 – 0.17: the dummy batch's pixels.
    pub pixels: u64,
}

impl Held {
    /// The profile's peak with the encoder's pass, from the text's `text_peak`.
    pub fn peak(self, text_peak: u64) -> u64 {
        let kept = self.outputs.saturating_add(self.padded).saturating_add(self.pixels);
        self.tower.saturating_add(self.pixels).max(text_peak.saturating_add(kept))
    }
}

/// The encoder's profile for a plan and what it holds, if it runs one.
pub(crate) fn held(p: &Plan, o: Options, mnbt: u64, max_num_seqs: u64, max_model_len: u64) -> Option<(Profile, Held)> {
    let v = p.model.arch.vision.as_ref()?;
    let pr = profile(v, o, mnbt, max_num_seqs, max_model_len)?;
    let bpe = p.bytes_per_element();
    let n = pr.items;
    let per_patch =
        v.hidden_size.saturating_mul(2).saturating_add(v.intermediate_size.saturating_mul(2) / p.tp().max(1));
    let tower = n.saturating_mul(pr.item.patches).saturating_mul(per_patch).saturating_mul(bpe);
    let hidden = p.model.arch.text.hidden_size;
    let EncoderProfile::Kept { padding, .. } = o.version.encoder_profile()? else {
        // 0.19 – 0.24 (`0.19-mm`, `0.24-mm`): the outputs at the text's width.
        let outputs = n.saturating_mul(pr.item.tokens).saturating_mul(hidden).saturating_mul(bpe);
        return Some((pr, Held { tower, outputs, ..Held::default() }));
    };
    let width = hidden.saturating_mul(v.deepstack.saturating_add(1));
    let row = width.saturating_mul(bpe);
    let outputs = n.saturating_mul(pr.item.tokens).saturating_mul(row);
    let rows = match padding {
        Some(EncoderPadding::Budget) => pr.budget,
        Some(EncoderPadding::LargestItem) => pr.counted,
        None => 0,
    };
    let padded = if pr.item.tokens < rows { n.saturating_mul(rows).saturating_mul(row) } else { 0 };
    let pixels = n.saturating_mul(pr.item.values).saturating_mul(PIXEL_VALUE_BYTES);
    Some((pr, Held { tower, outputs, padded, pixels }))
}

/// The profile's peak with the encoder's pass, from the text's `text_peak`.
pub(super) fn peak(p: &Plan, o: Options, mnbt: u64, max_num_seqs: u64, max_model_len: u64, text_peak: u64) -> u64 {
    held(p, o, mnbt, max_num_seqs, max_model_len).map_or(text_peak, |(_, h)| h.peak(text_peak))
}

/// Qwen3-VL's deepstack inputs, allocated with the model: one buffer of
/// `max_num_batched_tokens` rows at the text's width per level (0.11.0
/// `qwen3_vl.py::Qwen3VLForConditionalGeneration.__init__`), counted by the
/// `0.11-mm`, `0.12-mm` and `0.17-mm` rules with the weights ("Model loading took").
pub(super) fn deepstack_buffer_bytes(p: &Plan, o: Options, mnbt: u64) -> u64 {
    match &p.model.arch.vision {
        Some(v) if matches!(o.version.encoder_profile(), Some(EncoderProfile::Kept { .. })) => v
            .deepstack
            .saturating_mul(mnbt)
            .saturating_mul(p.model.arch.text.hidden_size)
            .saturating_mul(p.bytes_per_element()),
        _ => 0,
    }
}

/// vLLM's line about the encoder's profile (0.24.0 `profile_run`), when it runs one.
pub(super) fn log_line(p: &Plan, o: Options, mnbt: u64, max_num_seqs: u64, max_model_len: u64) -> Option<String> {
    let v = p.model.arch.vision.as_ref()?;
    let pr = profile(v, o, mnbt, max_num_seqs, max_model_len)?;
    Some(format!(
        "Encoder cache will be initialized with a budget of {} tokens, and profiled with {} {} items of the maximum \
         feature size.",
        pr.budget,
        pr.items,
        if pr.video { "video" } else { "image" }
    ))
}
