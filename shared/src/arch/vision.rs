//! Vision towers of multimodal configs, counted from their `vision_config`:
//! SigLIP (Gemma 3), the Llama 3.2 Vision encoder (mllama), the Qwen2-VL /
//! Qwen2.5-VL ViT, the Qwen3-VL / Qwen3.5 ViT, Pixtral (Mistral 3), the
//! Llama 4 encoder and the Gemma 4 encoder, each with its projector into the
//! language model.
//!
//! Arithmetic is done in `u128` (every input is bounded by `MAX_DIM`, so a
//! product of five of them still fits) and clamped once at the end.

use serde_json::Value;

use super::fields::{ConfigError, Fields, MAX_DIM};
use super::{Family, TextModel, VisionItem, VisionTower};

pub(super) fn read(family: Family, root: Fields, text: &TextModel) -> Result<Option<VisionTower>, ConfigError> {
    let Some(v) = root.object("vision_config") else { return Ok(None) };
    let v = Fields::new(v, "vision_config");
    // A wrapper's tower is the wrapper's, whatever text model it holds.
    match root.opt_str("model_type") {
        Some("mistral3") => return pixtral(root, v, text).map(Some),
        Some("kimi_k25") => return moonvit(root, v, text).map(Some),
        Some("glm4v" | "glm4v_moe") => return glm_vit(v).map(Some),
        Some("internvl") => return internvit(root, v, text, InternVit::Native).map(Some),
        Some("internvl_chat") => return internvit(root, v, text, InternVit::Remote { family }).map(Some),
        Some(kind @ ("llava" | "llava_next" | "llava_onevision" | "paligemma")) => return llava(kind, root, v, text),
        Some(kind @ ("idefics3" | "smolvlm")) => return idefics3(kind, root, v, text).map(Some),
        _ => {}
    }
    match family {
        Family::Gemma3 => siglip(root, v, text).map(Some),
        Family::Mllama => mllama(v, text).map(Some),
        Family::Qwen2Vl => qwen_vit(root, v).map(Some),
        Family::Qwen3 | Family::Qwen3Moe | Family::Qwen35 | Family::Qwen35Moe => qwen3_vit(root, v),
        Family::Llama4 => llama4(v, text).map(Some),
        Family::Gemma4 => gemma4(v, text).map(Some),
        _ => Ok(None),
    }
}

fn dim(v: Fields, key: &str, default: u64) -> Result<u128, ConfigError> {
    Ok(u128::from(v.dim_or(key, default)?))
}

fn tower(kind: &str, layers: u128, hidden: u128, linear: u128, other: u128) -> VisionTower {
    VisionTower {
        kind: kind.into(),
        num_layers: clamp(layers),
        hidden_size: clamp(hidden),
        linear_params: clamp(linear),
        other_params: clamp(other),
        item: VisionItem::default(),
        intermediate_size: 0,
        deepstack: 0,
        video: VisionItem::default(),
    }
}

fn clamp(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// The tower with the largest image vLLM profiles: `patches` through the
/// tower, `tokens` to the language model, `values` pixel values handed
/// over, the MLP `inter` wide.
fn profiled(mut t: VisionTower, (patches, tokens, values): (u128, u128, u128), inter: u128) -> VisionTower {
    t.item = VisionItem { patches: clamp(patches), tokens: clamp(tokens), values: clamp(values) };
    t.intermediate_size = clamp(inter);
    t
}

/// The largest image of the Qwen-VL processors, in pixels: the official
/// checkpoints' `preprocessor_config.json` (`max_pixels` 12,845,056 for
/// Qwen2-VL and Qwen2.5-VL; `size.longest_edge` 16,777,216 for Qwen3-VL),
/// which vLLM's `get_image_size_with_most_features` reads
/// (0.24.0 `qwen2_vl.py`); config.json does not carry it.
const QWEN2_VL_MAX_PIXELS: u128 = 12_845_056;
const QWEN3_VL_MAX_PIXELS: u128 = 16_777_216;

/// The largest video of the Qwen3-VL processors, in pixels over all its
/// frames: the official checkpoints' `video_preprocessor_config.json`
/// (`size.longest_edge` 25,165,824 = 24,576 frames of 32 × 32, vLLM 0.11.0
/// `qwen3_vl.py`: "Official recommended max pixels is 24576 * 32 * 32").
const QWEN3_VL_MAX_VIDEO_PIXELS: u128 = 25_165_824;

/// Patches, merged tokens and pixel values of the largest Qwen-VL image:
/// each patch carries `channels × temporal × patch²` values (an image is
/// repeated over the temporal patch).
fn qwen_item(max_pixels: u128, patch: u128, merge: u128, channels: u128, temporal: u128) -> (u128, u128, u128) {
    let patches = max_pixels / (patch * patch).max(1);
    (patches, patches / (merge * merge).max(1), patches * channels * temporal * patch * patch)
}

/// The largest Qwen3-VL video as vLLM 0.11.0 – 0.12.0 profile it
/// (`qwen3_vl.py::get_num_frames_with_most_features`): frames are added
/// while the tokens fit `max_model_len`, up to `_MAX_FRAMES_PER_VIDEO`
/// (24,576), the processor shrinking them to hold every frame's pixels
/// under its longest edge; at the cap each frame is 32 × 32 and the video
/// is its pixel budget over `patch² × temporal × merge²` tokens. (Below
/// that many tokens of context vLLM stops at two larger frames, 1.5 % fewer
/// tokens for Qwen3-VL: 12,100 against 12,288; the item is taken as the
/// cap's.)
fn qwen3_video(patch: u128, merge: u128, channels: u128, temporal: u128) -> VisionItem {
    let tokens = QWEN3_VL_MAX_VIDEO_PIXELS / (patch * patch * temporal * merge * merge).max(1);
    let patches = tokens * merge * merge;
    VisionItem {
        patches: clamp(patches),
        tokens: clamp(tokens),
        values: clamp(patches * channels * temporal * patch * patch),
    }
}

/// SigLIP encoder (`SiglipVisionModel`; Gemma 3 uses no pooling head) plus
/// Gemma 3's projector: `mm_input_projection_weight` (vision × text hidden)
/// and `mm_soft_emb_norm` (an RMSNorm of the vision width).
fn siglip(root: Fields, v: Fields, text: &TextModel) -> Result<VisionTower, ConfigError> {
    // SiglipVisionConfig defaults: hidden 768, intermediate 3072, 12 layers,
    // 224-pixel images, 16-pixel patches.
    let use_head = v.bool_or("vision_use_head", root.opt_str("model_type") != Some("gemma3"))?;
    let e = vit(v, Vit::Siglip { head: use_head }, (768, 3072, 12, 224, 16))?;
    let text_hidden = u128::from(text.hidden_size);
    // `Gemma3Config.mm_tokens_per_image` (256): one crop, pan-and-scan off
    // (vLLM 0.24.0 `gemma3_mm.py::get_num_image_tokens`).
    let tokens = u128::from(root.dim_or("mm_tokens_per_image", 256)?);
    let values = e.channels * e.image * e.image;
    Ok(profiled(
        tower("siglip", e.layers, e.hidden, e.linear + e.hidden * text_hidden, e.other + e.hidden),
        (e.patches, tokens, values),
        e.inter,
    ))
}

/// Which ViT encoder [`vit`] counts.
#[derive(Clone, Copy)]
enum Vit {
    /// `CLIPVisionTransformer`: a class embedding, an unbiased patch
    /// convolution, a position per patch and the class, pre- and
    /// post-LayerNorms.
    Clip,
    /// `SiglipVisionTransformer` (Idefics3's and SmolVLM's alike): a biased
    /// patch convolution, a position per patch, a post-LayerNorm and, with
    /// `head`, the attention-pooling head (probe, in/out projections, norm,
    /// MLP).
    Siglip { head: bool },
}

/// A CLIP- or SigLIP-style encoder's sizes and parameters: its layers hold
/// q/k/v/o and a two-layer MLP, all biased, and two LayerNorms.
struct Encoder {
    hidden: u128,
    inter: u128,
    layers: u128,
    channels: u128,
    image: u128,
    /// Patches per side of one image.
    grid: u128,
    patches: u128,
    linear: u128,
    other: u128,
}

/// [`Encoder`] of `v`, with the config class's defaults `(hidden_size,
/// intermediate_size, num_hidden_layers, image_size, patch_size)`.
fn vit(v: Fields, kind: Vit, d: (u64, u64, u64, u64, u64)) -> Result<Encoder, ConfigError> {
    let hidden = dim(v, "hidden_size", d.0)?;
    let inter = dim(v, "intermediate_size", d.1)?;
    let layers = dim(v, "num_hidden_layers", d.2)?;
    let channels = dim(v, "num_channels", 3)?;
    let image = dim(v, "image_size", d.3)?;
    let patch = dim(v, "patch_size", d.4)?;
    let grid = image / patch.max(1);
    let patches = grid.pow(2);
    let layer_linear = 4 * hidden * hidden + 2 * hidden * inter;
    // q/k/v/o biases, fc1/fc2 biases, two LayerNorms (weight + bias).
    let layer_other = 4 * hidden + inter + hidden + 4 * hidden;
    let conv = channels * patch * patch * hidden;
    let embeddings = match kind {
        Vit::Clip => hidden + conv + (patches + 1) * hidden + 4 * hidden,
        Vit::Siglip { head } => {
            let pooling = if head {
                hidden + 4 * hidden * hidden + 4 * hidden + 2 * hidden + 2 * hidden * inter + inter + hidden
            } else {
                0
            };
            conv + hidden + patches * hidden + 2 * hidden + pooling
        }
    };
    Ok(Encoder {
        hidden,
        inter,
        layers,
        channels,
        image,
        grid,
        patches,
        linear: layer_linear * layers,
        other: layer_other * layers + embeddings,
    })
}

/// `MllamaVisionModel` (tiled ViT with a local and a gated global encoder)
/// plus `multi_modal_projector` (vision_output_dim → text hidden, with bias).
fn mllama(v: Fields, text: &TextModel) -> Result<VisionTower, ConfigError> {
    let hidden = dim(v, "hidden_size", 1280)?;
    let inter = dim(v, "intermediate_size", 5120)?;
    let local = dim(v, "num_hidden_layers", 32)?;
    let global = dim(v, "num_global_layers", 8)?;
    let channels = dim(v, "num_channels", 3)?;
    let image = dim(v, "image_size", 448)?;
    let patch = dim(v, "patch_size", 14)?;
    let tiles = dim(v, "max_num_tiles", 4)?;
    let aspect_ids = match v.value("supported_aspect_ratios") {
        Some(Value::Array(a)) => a.len() as u128,
        _ => 8,
    } + 1;
    let output_dim = dim(v, "vision_output_dim", 7680)?;
    let patches = (image / patch) * (image / patch) + 1; // + class token
    let layer_linear = 4 * hidden * hidden + 2 * hidden * inter;
    // fc1/fc2 biases and two LayerNorms; attention projections have no bias.
    let layer_other = inter + hidden + 4 * hidden;
    let embeddings = channels * patch * patch * hidden // patch conv, no bias
        + hidden // class embedding
        + patches * hidden + 1 // gated positional embedding + gate
        + aspect_ids * tiles * patches * hidden // tile positional embedding
        + 2 * (aspect_ids * tiles * hidden + 1) // pre/post tile embeddings + gates
        + 4 * hidden; // layernorm_pre, layernorm_post
    let layers = local + global;
    let text_hidden = u128::from(text.hidden_size);
    Ok(tower(
        "mllama",
        layers,
        hidden,
        layer_linear * layers + output_dim * text_hidden,
        // Global layers add two scalar gates each; the projector has a bias.
        layer_other * layers + 2 * global + embeddings + text_hidden,
    ))
}

/// Qwen2-VL / Qwen2.5-VL vision transformer and patch merger.
fn qwen_vit(root: Fields, v: Fields) -> Result<VisionTower, ConfigError> {
    let qwen25 = root.opt_str("model_type") == Some("qwen2_5_vl");
    let depth = dim(v, "depth", 32)?;
    let channels = u128::from(v.opt_dim("in_chans", 16)?.or(v.opt_dim("in_channels", 16)?).unwrap_or(3));
    let patch = dim(v, "patch_size", 14)?;
    let temporal = dim(v, "temporal_patch_size", 2)?;
    let merge = dim(v, "spatial_merge_size", 2)?;
    // Qwen2-VL names the width `embed_dim` and the merger output `hidden_size`;
    // Qwen2.5-VL names them `hidden_size` and `out_hidden_size`.
    let (hidden, out) = if qwen25 {
        (dim(v, "hidden_size", 1280)?, dim(v, "out_hidden_size", 3584)?)
    } else {
        (dim(v, "embed_dim", 1280)?, dim(v, "hidden_size", 3584)?)
    };
    let patch_embed = channels * temporal * patch * patch * hidden; // Conv3d, no bias
    let inter = if qwen25 { dim(v, "intermediate_size", 3420)? } else { hidden * dim(v, "mlp_ratio", 4)? };
    let (layer_linear, layer_other) = if qwen25 {
        // qkv + proj with biases, gated MLP with biases, two RMSNorms.
        (4 * hidden * hidden + 3 * hidden * inter, 4 * hidden + 2 * inter + hidden + 2 * hidden)
    } else {
        // qkv + proj with biases, fc1/fc2 with biases, two LayerNorms.
        (4 * hidden * hidden + 2 * hidden * inter, 4 * hidden + inter + hidden + 4 * hidden)
    };
    let merged = hidden * merge * merge;
    // Merger: a norm of the vision width, then merged → merged → out, with biases.
    let merger_linear = merged * merged + merged * out;
    let merger_other = if qwen25 { hidden } else { 2 * hidden } + merged + out;
    let item = qwen_item(QWEN2_VL_MAX_PIXELS, patch, merge, channels, temporal);
    Ok(profiled(
        tower(
            if qwen25 { "qwen2_5_vl" } else { "qwen2_vl" },
            depth,
            hidden,
            layer_linear * depth + merger_linear,
            layer_other * depth + patch_embed + merger_other,
        ),
        item,
        inter,
    ))
}

/// The Qwen3-VL / Qwen3.5 vision transformer (transformers 5.24
/// `Qwen3VLVisionModel`, `Qwen3_5VisionModel`): a Conv3d patch embedding
/// with bias, a learned position table, blocks of LayerNorm, qkv + proj and
/// a GELU MLP (all with biases), and the patch merger (a LayerNorm, then
/// merged → merged → `out_hidden_size`). Qwen3-VL adds one "deepstack"
/// merger per `deepstack_visual_indexes` entry, normalised after the
/// shuffle; Qwen3.5 has none.
fn qwen3_vit(root: Fields, v: Fields) -> Result<Option<VisionTower>, ConfigError> {
    let deepstack = match root.opt_str("model_type") {
        Some("qwen3_vl" | "qwen3_vl_moe") => match v.value("deepstack_visual_indexes") {
            Some(Value::Array(a)) => a.len() as u128,
            Some(_) => return Err(super::families::invalid(v, "deepstack_visual_indexes", "is not a list".into())),
            None => 3, // Qwen3VLVisionConfig: (8, 16, 24)
        },
        Some("qwen3_5" | "qwen3_5_moe") => 0,
        _ => return Ok(None),
    };
    // Qwen3VLVisionConfig / Qwen3_5VisionConfig defaults.
    let depth = dim(v, "depth", 27)?;
    let hidden = dim(v, "hidden_size", 1152)?;
    let inter = dim(v, "intermediate_size", 4304)?;
    let channels = dim(v, "in_channels", 3)?;
    let patch = dim(v, "patch_size", 16)?;
    let temporal = dim(v, "temporal_patch_size", 2)?;
    let merge = dim(v, "spatial_merge_size", 2)?;
    let out = dim(v, "out_hidden_size", 3584)?;
    let positions = dim(v, "num_position_embeddings", 2304)?;
    let embeddings = channels * temporal * patch * patch * hidden + hidden + positions * hidden;
    let layer_linear = 4 * hidden * hidden + 2 * hidden * inter;
    // qkv, proj, fc1, fc2 biases and two LayerNorms (weight + bias).
    let layer_other = 3 * hidden + hidden + inter + hidden + 4 * hidden;
    let merged = hidden * merge * merge;
    let merger_linear = merged * merged + merged * out;
    let merger_biases = merged + out;
    let linear = layer_linear * depth + merger_linear * (1 + deepstack);
    let other =
        layer_other * depth + embeddings + 2 * hidden + merger_biases + deepstack * (2 * merged + merger_biases);
    let kind = if deepstack > 0 { "qwen3_vl" } else { "qwen3_5" };
    let item = qwen_item(QWEN3_VL_MAX_PIXELS, patch, merge, channels, temporal);
    let mut t = profiled(tower(kind, depth, hidden, linear, other), item, inter);
    t.deepstack = clamp(deepstack);
    t.video = qwen3_video(patch, merge, channels, temporal);
    Ok(Some(t))
}

/// Pixtral (`PixtralVisionModel`: a bias-free patch conv, an RMSNorm, layers
/// of RMSNorm, bias-free attention and a gated MLP) and Mistral 3's
/// projector (`Mistral3MultiModalProjector`: an RMSNorm of the vision width,
/// the patch merger over `spatial_merge_size²` patches, then vision → text →
/// text with `multimodal_projector_bias`), transformers 5.24.
fn pixtral(root: Fields, v: Fields, text: &TextModel) -> Result<VisionTower, ConfigError> {
    // PixtralVisionConfig defaults.
    let hidden = dim(v, "hidden_size", 1024)?;
    let inter = dim(v, "intermediate_size", 4096)?;
    let layers = dim(v, "num_hidden_layers", 24)?;
    let channels = dim(v, "num_channels", 3)?;
    let patch = dim(v, "patch_size", 14)?;
    let merge = u128::from(root.dim_or("spatial_merge_size", 2)?);
    let feature_layers = match root.value("vision_feature_layer") {
        Some(Value::Array(a)) => a.len() as u128,
        _ => 1,
    };
    let bias = root.bool_or("multimodal_projector_bias", false)?;
    let text_hidden = u128::from(text.hidden_size);
    let layer_linear = 4 * hidden * hidden + 3 * hidden * inter;
    let projector_linear =
        hidden * merge * merge * hidden + hidden * feature_layers * text_hidden + text_hidden * text_hidden;
    let projector_other = hidden + if bias { 2 * text_hidden } else { 0 };
    // The largest image is `image_size` square (PixtralVisionConfig: 1024);
    // its tokens are the merged patch grid (vLLM 0.24.0
    // `pixtral.py::PixtralHFEncoderInfo.get_num_image_tokens`).
    let image = dim(v, "image_size", 1024)?;
    let side = image / patch.max(1);
    let merged = side / merge.max(1);
    Ok(profiled(
        tower(
            "pixtral",
            layers,
            hidden,
            layer_linear * layers + projector_linear,
            2 * hidden * layers + channels * patch * patch * hidden + hidden + projector_other,
        ),
        (side * side, merged * merged, channels * image * image),
        inter,
    ))
}

/// Kimi K2.5's MoonViT (transformers 5.25 `modeling_kimi_k25.py`): a biased
/// convolution patch embedding, a learned `pos_emb_height × pos_emb_width`
/// position grid, pre-LayerNorm layers with biased q/k/v/proj and a biased
/// two-layer MLP, a final LayerNorm; then `Kimi_K25MultimodalProjection`: a
/// LayerNorm of `projection_hidden_size`, the merged patches (`merge_kernel_size`)
/// through a biased square linear and a biased one to the text width. The
/// largest image vLLM profiles is not read for this tower.
fn moonvit(root: Fields, v: Fields, text: &TextModel) -> Result<VisionTower, ConfigError> {
    // Kimi_K25VisionConfig defaults.
    let hidden = dim(v, "hidden_size", 1152)?;
    let inter = dim(v, "intermediate_size", 4304)?;
    let layers = dim(v, "num_hidden_layers", 27)?;
    let patch = dim(v, "patch_size", 14)?;
    let grid = dim(v, "pos_emb_height", 64)? * dim(v, "pos_emb_width", 64)?;
    let merge: u128 = match v.index_list("merge_kernel_size")?.as_slice() {
        [] => 4,
        [a, b] if (1..=MAX_DIM).contains(a) && (1..=MAX_DIM).contains(b) => u128::from(*a) * u128::from(*b),
        _ => return Err(super::families::invalid(v, "merge_kernel_size", "must hold two sizes".into())),
    };
    let norm = u128::from(root.dim_or("projection_hidden_size", 1152)?);
    let text_hidden = u128::from(text.hidden_size);
    let merged = hidden * merge;
    let layer_linear = 4 * hidden * hidden + 2 * hidden * inter;
    let layer_other = 9 * hidden + inter; // q/k/v/proj and fc2 biases, fc1's, two LayerNorms
    let linear = layer_linear * layers + merged * merged + merged * text_hidden;
    let other = 3 * patch * patch * hidden
        + hidden
        + grid * hidden
        + layer_other * layers
        + 2 * hidden
        + 2 * norm
        + merged
        + text_hidden;
    let mut t = tower("moonvit", layers, hidden, linear, other);
    t.intermediate_size = clamp(inter);
    Ok(t)
}

/// GLM-4.1V's and GLM-4.5V's ViT (transformers 5.25 `modeling_glm4v.py`,
/// `modeling_glm4v_moe.py`): a learned position per patch of the
/// `image_size` square, a biased Conv3d patch embedding over
/// `temporal_patch_size` frames, RMSNorm blocks with a fused q/k/v
/// (`attention_bias`), an unbiased output and a SwiGLU of `out_hidden_size`
/// without biases; RMSNorms after the convolution and the blocks, a biased
/// Conv2d merging `spatial_merge_size`² patches to `out_hidden_size`, and the
/// merger (an unbiased square projection, a LayerNorm, a SwiGLU of
/// `intermediate_size`). The largest image vLLM profiles is not read.
fn glm_vit(v: Fields) -> Result<VisionTower, ConfigError> {
    // Glm4vVisionConfig / Glm4vMoeVisionConfig defaults.
    let hidden = dim(v, "hidden_size", 1536)?;
    let out = dim(v, "out_hidden_size", 4096)?;
    let inter = dim(v, "intermediate_size", 13_696)?;
    // `num_hidden_layers` is `depth`'s attribute-map alias.
    let layers = dim(v, "depth", v.dim_or("num_hidden_layers", 24)?)?;
    let channels = dim(v, "in_channels", 3)?;
    let patch = dim(v, "patch_size", 14)?;
    let temporal = dim(v, "temporal_patch_size", 2)?;
    let merge = dim(v, "spatial_merge_size", 2)?;
    let image = dim(v, "image_size", 336)?;
    let qkv_bias = if v.bool_or("attention_bias", false)? { 3 * hidden } else { 0 };
    let positions = (image / patch.max(1)).pow(2);
    let layer_linear = 4 * hidden * hidden + 3 * hidden * out;
    let linear = layer_linear * layers + out * out + 3 * out * inter;
    let other = positions * hidden
        + channels * temporal * patch * patch * hidden
        + hidden
        + (2 * hidden + qkv_bias) * layers
        + 2 * hidden
        + hidden * out * merge * merge
        + out
        + 2 * out;
    let mut t = tower("glm4v", layers, hidden, linear, other);
    t.intermediate_size = clamp(out);
    Ok(t)
}

/// A CLIP or SigLIP tower (`vision_config.model_type`) and its projector, as
/// LLaVA, LLaVA-NeXT, LLaVA-OneVision and PaliGemma build them (transformers
/// 5.25 `modeling_llava*.py`, `modeling_paligemma.py`): LLaVA's two biased
/// linears (`multimodal_projector_bias`) from the selected layers' features
/// (`vision_feature_layer`, one or a list) to the text width, NeXT's and
/// OneVision's `image_newline`; PaliGemma's one biased linear to
/// `projection_dim`. `None` for a tower of another kind (not counted, with a
/// warning). The largest image vLLM profiles is read for LLaVA, LLaVA-NeXT
/// and PaliGemma ([`Crop`], [`llava_next_item`]), not for OneVision.
fn llava(kind: &str, root: Fields, v: Fields, text: &TextModel) -> Result<Option<VisionTower>, ConfigError> {
    // A `vision_config` without `model_type` is the wrapper's default kind
    // (`SubConfigSpec`: CLIP for LLaVA and LLaVA-NeXT, SigLIP for the others).
    let default = if matches!(kind, "llava" | "llava_next") { "clip_vision_model" } else { "siglip_vision_model" };
    let siglip = match v.opt_str("model_type").unwrap_or(default) {
        "clip_vision_model" => false,
        "siglip_vision_model" => true,
        _ => return Ok(None),
    };
    // CLIPVisionConfig / SiglipVisionConfig defaults.
    let e = if siglip {
        vit(v, Vit::Siglip { head: v.bool_or("vision_use_head", true)? }, (768, 3072, 12, 224, 16))?
    } else {
        vit(v, Vit::Clip, (768, 3072, 12, 224, 32))?
    };
    let hidden = e.hidden;
    let text_hidden = u128::from(text.hidden_size);
    let (projector_linear, projector_other) = if kind == "paligemma" {
        let out = u128::from(root.dim_or("projection_dim", 2048)?);
        (hidden * out, out)
    } else {
        let features = match root.value("vision_feature_layer") {
            Some(Value::Array(a)) => a.len() as u128,
            _ => 1,
        };
        let bias = if root.bool_or("multimodal_projector_bias", true)? { 2 * text_hidden } else { 0 };
        let newline = if kind == "llava" { 0 } else { text_hidden };
        (hidden * features * text_hidden + text_hidden * text_hidden, bias + newline)
    };
    let t = tower(kind, e.layers, hidden, e.linear + projector_linear, e.other + projector_other);
    let item = match kind {
        "llava" | "paligemma" => Some(Crop::of(kind, root, &e, siglip)?.item(1, 0)),
        "llava_next" => Some(llava_next_item(root, &e, Crop::of(kind, root, &e, siglip)?)?),
        // OneVision pools its crops and caps them (`anyres_max_9`): not read.
        _ => None,
    };
    Ok(Some(match item {
        Some(item) => profiled(t, item, e.inter),
        None => VisionTower { intermediate_size: clamp(e.inter), ..t },
    }))
}

/// LLaVA-NeXT's `image_grid_pinpoints` when the config leaves them out
/// (transformers 5.25 `LlavaNextConfig`).
const LLAVA_NEXT_PINPOINTS: [(u128, u128); 5] = [(336, 672), (672, 336), (672, 672), (1008, 336), (336, 1008)];

/// One crop of the largest image vLLM profiles for LLaVA, PaliGemma and
/// LLaVA-NeXT: the tower runs `grid²` patches over it, CLIP's with its class
/// token (`clip.py::get_num_image_tokens`); LLaVA hands on those less the
/// first under `vision_feature_select_strategy` "default"
/// (`vision.py::get_num_selected_vision_tokens`), PaliGemma all of SigLIP's
/// (`paligemma.py::get_num_image_tokens`).
struct Crop {
    patches: u128,
    tokens: u128,
    values: u128,
}

impl Crop {
    fn of(kind: &str, root: Fields, e: &Encoder, siglip: bool) -> Result<Crop, ConfigError> {
        let patches = e.patches + u128::from(!siglip);
        let tokens = if kind == "paligemma" {
            patches
        } else {
            match root.opt_str("vision_feature_select_strategy").unwrap_or("default") {
                "default" => patches.saturating_sub(1),
                "full" => patches,
                other => {
                    return Err(super::families::invalid(
                        root,
                        "vision_feature_select_strategy",
                        format!("is {other:?}; vLLM takes \"default\" or \"full\""),
                    ));
                }
            }
        };
        Ok(Crop { patches, tokens, values: e.channels * e.image * e.image })
    }

    /// `(patches, tokens, values)` of an image of `crops` crops (LLaVA and
    /// PaliGemma: one, the tower's own size, vLLM 0.34.0
    /// `llava.py::get_image_size_with_most_features`) whose features add
    /// `extra` tokens to the first crop's (LLaVA-NeXT's tiles).
    fn item(&self, crops: u128, extra: u128) -> (u128, u128, u128) {
        (crops * self.patches, self.tokens + extra, crops * self.values)
    }
}

/// LLaVA-NeXT's largest image: of `image_grid_pinpoints`, the first with the
/// most tokens (vLLM 0.34.0 `llava_next.py::get_image_size_with_most_features`).
/// An image of a pinpoint's size is cut into that pinpoint's tiles (`height ÷
/// image_size` by `width ÷ image_size`, transformers'
/// `get_anyres_image_grid_shape`) and adds their features with the padding
/// taken off and a newline per row (`_get_num_unpadded_features`).
fn llava_next_item(root: Fields, e: &Encoder, crop: Crop) -> Result<(u128, u128, u128), ConfigError> {
    let pinpoints: Vec<(u128, u128)> = match root.value("image_grid_pinpoints") {
        Some(Value::Array(list)) => list
            .iter()
            .map(|p| match p.as_array().map(|a| a.as_slice()) {
                Some([h, w]) => h
                    .as_u64()
                    .zip(w.as_u64())
                    .filter(|&(h, w)| h > 0 && w > 0 && h <= MAX_DIM && w <= MAX_DIM)
                    .map(|(h, w)| (u128::from(h), u128::from(w))),
                _ => None,
            })
            .collect::<Option<_>>()
            .ok_or_else(|| {
                super::families::invalid(root, "image_grid_pinpoints", "must be [height, width] pairs".into())
            })?,
        _ => LLAVA_NEXT_PINPOINTS.to_vec(),
    };
    let mut best: Option<(u128, u128, u128)> = None;
    for (height, width) in pinpoints {
        let (rows, cols) = (height / e.image.max(1), width / e.image.max(1));
        let (unpadded, newlines) = unpadded_features(height, width, e.grid * rows, e.grid * cols);
        let item = crop.item(1 + rows * cols, unpadded + newlines);
        if best.is_none_or(|b| item.1 > b.1) {
            best = Some(item);
        }
    }
    best.ok_or_else(|| super::families::invalid(root, "image_grid_pinpoints", "is empty".into()))
}

/// vLLM's `_get_num_unpadded_features` for an image of `height` × `width`
/// over a `current_height` × `current_width` grid of features: the rows or
/// columns the resize padded are taken off (`int(round(x, 7))`, here in
/// integers), and each remaining row ends with a newline.
fn unpadded_features(height: u128, width: u128, current_height: u128, current_width: u128) -> (u128, u128) {
    const ROUND: u128 = 10_000_000;
    let scaled = |x: u128, num: u128, den: u128| (x * num * ROUND + den / 2) / den.max(1) / ROUND;
    let (mut h, mut w) = (current_height, current_width);
    if width * current_height > current_width * height {
        let new_height = scaled(height, current_width, width);
        h -= 2 * (h.saturating_sub(new_height) / 2);
    } else {
        let new_width = scaled(width, current_height, height);
        w -= 2 * (w.saturating_sub(new_width) / 2);
    }
    (h * w, h)
}

/// Idefics3's and SmolVLM's SigLIP-style tower (transformers 5.25
/// `modeling_idefics3.py`, `modeling_smolvlm.py`: a biased patch convolution,
/// a position per patch, biased attention and MLP, two LayerNorms per layer
/// and one after them, no pooling head) and the connector: the patches
/// shuffled by `scale_factor` on each side, one unbiased linear to the text
/// width. The largest image vLLM profiles is not read.
fn idefics3(kind: &str, root: Fields, v: Fields, text: &TextModel) -> Result<VisionTower, ConfigError> {
    // Idefics3VisionConfig / SmolVLMVisionConfig defaults.
    let e = vit(v, Vit::Siglip { head: false }, (1152, 3072, 12, 224, 32))?;
    let scale = u128::from(root.dim_or("scale_factor", 2)?);
    let connector = e.hidden * scale * scale * u128::from(text.hidden_size);
    let mut t = tower(kind, e.layers, e.hidden, e.linear + connector, e.other);
    t.intermediate_size = clamp(e.inter);
    Ok(t)
}

/// One size of an image or a patch: a number, or a `[height, width]` pair.
fn sides(v: Fields, key: &str, default: u64) -> Result<(u128, u128), ConfigError> {
    match v.index_list(key) {
        Ok(l) if l.len() == 2 && l.iter().all(|&x| x > 0 && x <= MAX_DIM) => Ok((u128::from(l[0]), u128::from(l[1]))),
        Ok(l) if !l.is_empty() => Err(super::families::invalid(v, key, "must be a size or two".into())),
        _ => {
            let side = dim(v, key, default)?;
            Ok((side, side))
        }
    }
}

/// Which InternViT config a checkpoint ships.
#[derive(Clone, Copy)]
enum InternVit {
    /// transformers' own `internvl` (`InternVLVisionConfig`).
    Native,
    /// The InternVL repositories' remote code (`internvl_chat`,
    /// `configuration_intern_vit.py::InternVisionConfig`, `intern_vit_6b`)
    /// around a language model of this family.
    Remote { family: Family },
}

/// InternVL's InternViT (transformers 5.25 `modeling_internvl.py`; the remote
/// code's `modeling_intern_vit.py` as vLLM 0.34.0 `intern_vit.py` builds it,
/// the same tensors under other keys): a class token (and a mask token with
/// `use_mask_token`), a biased convolution patch embedding, a learned
/// position per patch (+1) with `use_absolute_position_embeddings` (always in
/// the remote code); layers of two norms (`norm_type`: LayerNorm or
/// RMSNorm), q/k/v (`attention_bias`; remote `qkv_bias`), optional
/// whole-width q/k RMSNorms (`use_qk_norm`; remote `qk_normalization`), a
/// biased output, a biased two-layer MLP and two layer-scale vectors; a final
/// LayerNorm unless `use_mean_pooling` (none in the remote code). Then the
/// projector (`InternVLMultiModalProjector`; remote `mlp1`): the patches
/// merged by `1 / downsample_ratio` on each side, a LayerNorm and two biased
/// linears to the text width. The largest image vLLM profiles is read from
/// the remote code's config ([`internvl_chat_item`]); transformers' own keeps
/// its tiling in `preprocessor_config.json`, not read.
fn internvit(root: Fields, v: Fields, text: &TextModel, config: InternVit) -> Result<VisionTower, ConfigError> {
    let remote = matches!(config, InternVit::Remote { .. });
    // InternVLVisionConfig's defaults, or InternVisionConfig's (InternViT-6B).
    let (d_hidden, d_inter, d_layers, d_image) = if remote { (3200, 12800, 48, 224) } else { (1024, 4096, 24, 448) };
    let hidden = dim(v, "hidden_size", d_hidden)?;
    let inter = dim(v, "intermediate_size", d_inter)?;
    let layers = dim(v, "num_hidden_layers", d_layers)?;
    // The remote code's patch embedding takes three channels whatever the config says.
    let channels = if remote { 3 } else { dim(v, "num_channels", 3)? };
    let (patch_h, patch_w) = sides(v, "patch_size", 14)?;
    let (image_h, image_w) = sides(v, "image_size", d_image)?;
    // `InternVLVisionPatchEmbeddings`: each side floored.
    let patches = (image_h / patch_h.max(1)) * (image_w / patch_w.max(1));
    let patch_area = patch_h * patch_w;
    let norm = match v.opt_str("norm_type").unwrap_or(if remote { "rms_norm" } else { "layer_norm" }) {
        "layer_norm" => 2 * hidden,
        "rms_norm" => hidden,
        other => {
            return Err(super::families::invalid(v, "norm_type", format!("`{other}` is not a norm InternViT has")));
        }
    };
    let (bias_key, qk_key) = if remote { ("qkv_bias", "qk_normalization") } else { ("attention_bias", "use_qk_norm") };
    let qkv_bias = if v.bool_or(bias_key, false)? { 3 * hidden } else { 0 };
    let qk_norm = if v.bool_or(qk_key, remote)? { 2 * hidden } else { 0 };
    let mask = if !remote && v.bool_or("use_mask_token", false)? { hidden } else { 0 };
    let positions =
        if remote || v.bool_or("use_absolute_position_embeddings", true)? { (patches + 1) * hidden } else { 0 };
    let final_norm = if remote || v.bool_or("use_mean_pooling", true)? { 0 } else { 2 * hidden };
    let ratio = match root.value("downsample_ratio") {
        None => 0.5,
        Some(x) => {
            x.as_f64().ok_or_else(|| super::families::invalid(root, "downsample_ratio", "must be a number".into()))?
        }
    };
    // `int(1 / downsample_ratio) ** 2` patches per merged one.
    let side = if ratio > 0.0 && ratio <= 1.0 { (1.0 / ratio) as u128 } else { 0 };
    if !(1..=16).contains(&side) {
        return Err(super::families::invalid(root, "downsample_ratio", "must be 1/16 to 1".into()));
    }
    let merged = hidden * side * side;
    let text_hidden = u128::from(text.hidden_size);
    let layer_linear = 4 * hidden * hidden + 2 * hidden * inter;
    let layer_other = qkv_bias + hidden + qk_norm + 2 * norm + inter + hidden + 2 * hidden;
    let linear = layer_linear * layers + merged * text_hidden + text_hidden * text_hidden;
    let other = hidden
        + mask
        + channels * patch_area * hidden
        + hidden
        + positions
        + layer_other * layers
        + final_norm
        + 2 * merged
        + 2 * text_hidden;
    let t = tower("internvit", layers, hidden, linear, other);
    let InternVit::Remote { family } = config else {
        return Ok(VisionTower { intermediate_size: clamp(inter), ..t });
    };
    let tile = Tile { patches: patches + 1, values: channels * image_h * image_w };
    let mut t = profiled(t, internvl_chat_item(root, tile, ratio)?, inter);
    // One frame of a video is a tile of its own (vLLM 0.34.0
    // `processors/internvl.py::video_to_pixel_values_internvl`), for the
    // language models whose tokenizer has the video token vLLM looks for
    // (`InternVLProcessingInfo.ctx_video_token`: Qwen2, Qwen3, Qwen3-MoE,
    // gpt-oss); the others take images only.
    if matches!(family, Family::Qwen2 | Family::Qwen3 | Family::Qwen3Moe | Family::GptOss) {
        t.video =
            VisionItem { patches: clamp(tile.patches), tokens: clamp(tile.tokens(ratio)), values: clamp(tile.values) };
    }
    Ok(t)
}

/// One 448-pixel tile of an InternVL image through InternViT: its patches
/// with the class token, and its pixel values.
#[derive(Clone, Copy)]
struct Tile {
    patches: u128,
    values: u128,
}

impl Tile {
    /// The tokens a tile hands the language model, vLLM's `num_image_token`:
    /// `int((image_size // patch_size) ** 2 * (downsample_ratio ** 2))`
    /// (0.34.0 `internvl.py`), its patches less the class token.
    fn tokens(self, ratio: f64) -> u128 {
        ((self.patches - 1) as f64 * ratio * ratio) as u128
    }
}

/// InternVL's largest image as vLLM 0.34.0 profiles it
/// (`internvl.py::get_image_size_with_most_features`,
/// `processors/internvl.py::calculate_internvl_targets`): `max_dynamic_patch`
/// tiles (one with `dynamic_image_size` off) and, when that is more than one,
/// the thumbnail with `use_thumbnail`.
fn internvl_chat_item(root: Fields, tile: Tile, ratio: f64) -> Result<(u128, u128, u128), ConfigError> {
    // InternVLChatConfig's defaults.
    let dynamic = root.bool_or("dynamic_image_size", false)?;
    let most = if dynamic { dim(root, "max_dynamic_patch", 6)?.max(1) } else { 1 };
    let thumbnail = root.bool_or("use_thumbnail", false)? && most != 1;
    let tiles = most + u128::from(thumbnail);
    Ok((tiles * tile.patches, tiles * tile.tokens(ratio), tiles * tile.values))
}

/// `Llama4VisionModel` (transformers 5.24): an unfold + bias-free linear patch
/// embedding, a class embedding and a learned position per patch (+1), pre and
/// post LayerNorms, layers of LayerNorm, attention and a GELU MLP with biases,
/// the pixel-shuffle adapter (`Llama4VisionMLP2`: intermediate →
/// `projector_input_dim` → `projector_output_dim`, no biases); then
/// `Llama4MultiModalProjector` (`vision_output_dim` → text hidden, no bias).
fn llama4(v: Fields, text: &TextModel) -> Result<VisionTower, ConfigError> {
    // Llama4VisionConfig defaults.
    let hidden = dim(v, "hidden_size", 768)?;
    let inter = dim(v, "intermediate_size", 5632)?;
    let layers = dim(v, "num_hidden_layers", 34)?;
    let channels = dim(v, "num_channels", 3)?;
    let image = dim(v, "image_size", 448)?;
    let patch = dim(v, "patch_size", 14)?;
    let adapter_in = dim(v, "projector_input_dim", 4096)?;
    let adapter_out = dim(v, "projector_output_dim", 4096)?;
    let output_dim = dim(v, "vision_output_dim", 7680)?;
    let patches = (image / patch) * (image / patch) + 1;
    let layer_linear = 4 * hidden * hidden + 2 * hidden * inter;
    let layer_other = 4 * hidden + inter + hidden + 4 * hidden;
    let embeddings = channels * patch * patch * hidden + hidden + patches * hidden + 4 * hidden;
    let adapter = inter * adapter_in + adapter_out * adapter_out;
    Ok(tower(
        "llama4",
        layers,
        hidden,
        layer_linear * layers + adapter + output_dim * u128::from(text.hidden_size),
        layer_other * layers + embeddings,
    ))
}

/// `Gemma4VisionModel` plus `embed_vision` (transformers 5.24.0
/// `modeling_gemma4.py`, defaults of `Gemma4VisionConfig`): a patch
/// projection (3 × patch² → hidden, no bias) and a 2-D position table
/// (`2 × position_embedding_size × hidden`); per layer q/k/v/o without bias
/// (`Gemma4ClippableLinear`: its clip bounds are buffers, not parameters),
/// a gated MLP, four RMSNorms and q/k norms per head (v's has no weight);
/// the pooler and the `standardize` bias/scale hold no parameters (buffers);
/// `embedding_projection` maps the vision width to the text's (its
/// pre-projection norm has no weight).
fn gemma4(v: Fields, text: &TextModel) -> Result<VisionTower, ConfigError> {
    let hidden = dim(v, "hidden_size", 768)?;
    let inter = dim(v, "intermediate_size", 3072)?;
    let layers = dim(v, "num_hidden_layers", 16)?;
    let heads = dim(v, "num_attention_heads", 12)?;
    let kv_heads = dim(v, "num_key_value_heads", 12)?;
    let head_dim = dim(v, "head_dim", 64)?;
    let patch = dim(v, "patch_size", 16)?;
    let positions = dim(v, "position_embedding_size", 10 * 1024)?;
    let attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim;
    let layer_linear = attention + 3 * hidden * inter;
    let layer_other = 4 * hidden + 2 * head_dim;
    let patch_projection = 3 * patch * patch * hidden;
    let position_table = 2 * positions * hidden;
    Ok(tower(
        "gemma4",
        layers,
        hidden,
        layer_linear * layers + patch_projection + hidden * u128::from(text.hidden_size),
        layer_other * layers + position_table,
    ))
}
