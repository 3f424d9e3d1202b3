//! Dense decoders of 2024–2025 built from the Llama recipe with small
//! changes: SmolLM3 (NoPE layers), OLMo 2 (post-norms, whole-width q/k
//! norms), GLM-4 (sandwich norms), Command R7B / Cohere2 (one parallel norm,
//! sliding layers), StarCoder2 (LayerNorm, biased plain MLP), Granite, EXAONE
//! 4 (transformers 5.24), and from transformers 5.25 OLMo 3, Ministral 3,
//! ERNIE 4.5, Seed-OSS, Arcee AFM (a plain ReLU² MLP), Apertus (a learned
//! xIELU), Hunyuan, Command R (Cohere2's layer without windows) and
//! Nemotron-4 — each with the defaults of its config class
//! (`configuration_*.py`).

use crate::arch::fields::{ConfigError, Fields};
use crate::arch::{AttentionKind, Family, NormKind, TextModel};

use super::decoder::{Defaults, Dims, decoder_with};

fn read(family: Family, f: Fields, w: &mut Vec<String>, tie: bool, dims: Dims) -> Result<TextModel, ConfigError> {
    decoder_with(family, f, w, Defaults { tie, head_dim: None, sliding_when_absent: None, dims: Some(dims) })
}

/// `SmolLM3Config`: Llama layers, tied head; its NoPE layers
/// (`no_rope_layers`) change nothing in memory.
pub(super) fn smollm3(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 2048, layers: 36, heads: 16, kv_heads: 4, intermediate: 11_008, vocab: 128_256 };
    read(Family::Smollm3, f, w, true, dims)
}

/// `Olmo2Config`: no input norm, a norm after attention and after the MLP,
/// and q/k RMSNorms over the whole projection.
pub(super) fn olmo2(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 0, intermediate: 11_008, vocab: 50_304 };
    let mut m = read(Family::Olmo2, f, w, false, dims)?;
    m.extra.qk_norm_full = true;
    Ok(m)
}

/// `Olmo3Config` (transformers 5.25): OLMo 2's layers; `layer_types`, or
/// else three layers sliding over `sliding_window` (4096) then a global one.
pub(super) fn olmo3(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 0, intermediate: 11_008, vocab: 50_304 };
    let mut m = decoder_with(
        Family::Olmo3,
        f,
        w,
        Defaults { tie: false, head_dim: None, sliding_when_absent: Some(4096), dims: Some(dims) },
    )?;
    m.extra.qk_norm_full = true;
    Ok(m)
}

/// `Ministral3Config` (transformers 5.25): Mistral's layers with a 128-wide
/// head and no window unless `sliding_window` sets one.
pub(super) fn ministral3(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 34, heads: 32, kv_heads: 8, intermediate: 14_336, vocab: 131_072 };
    decoder_with(
        Family::Ministral3,
        f,
        w,
        Defaults { tie: false, head_dim: Some(128), sliding_when_absent: None, dims: Some(dims) },
    )
}

/// `Ernie4_5Config` (transformers 5.25): Llama layers, `use_bias` on every
/// projection (the head's bias is not counted: every published config has it
/// off), tied head.
pub(super) fn ernie4_5(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 1024, layers: 18, heads: 16, kv_heads: 2, intermediate: 3072, vocab: 103_424 };
    let mut m = decoder_with(
        Family::Ernie45,
        f,
        w,
        Defaults { tie: true, head_dim: Some(128), sliding_when_absent: None, dims: Some(dims) },
    )?;
    ernie_biases(f, &mut m)?;
    Ok(m)
}

/// ERNIE 4.5's `use_bias`: q/k/v/o and the MLPs (`modeling_ernie4_5*.py`).
pub(super) fn ernie_biases(f: Fields, m: &mut TextModel) -> Result<(), ConfigError> {
    let bias = f.bool_or("use_bias", false)?;
    m.attention = AttentionKind::Standard { qkv_bias: bias, o_bias: bias };
    m.mlp_bias = bias;
    Ok(())
}

/// `SeedOssConfig` (transformers 5.25): Llama layers, q/k/v biases
/// (`attention_bias`, on by default), an output bias only with
/// `attention_out_bias`.
pub(super) fn seed_oss(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 64, heads: 80, kv_heads: 8, intermediate: 27_648, vocab: 155_136 };
    let mut m = decoder_with(
        Family::SeedOss,
        f,
        w,
        Defaults { tie: false, head_dim: Some(128), sliding_when_absent: None, dims: Some(dims) },
    )?;
    m.attention = AttentionKind::Standard {
        qkv_bias: f.bool_or("attention_bias", true)?,
        o_bias: f.bool_or("attention_out_bias", false)?,
    };
    Ok(m)
}

/// `ArceeConfig` (transformers 5.25, AFM-4.5B): Llama layers whose MLP is a
/// plain up/down pair (ReLU²), `mlp_bias` on both.
pub(super) fn arcee(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 2560, layers: 32, heads: 32, kv_heads: 0, intermediate: 18_432, vocab: 32_000 };
    let mut m = read(Family::Arcee, f, w, false, dims)?;
    m.mlp_gated = false;
    Ok(m)
}

/// `InternLM2Config` (InternLM's remote code, as SGLang 0.5.23 vendors it in
/// `srt/configs/internvl.py` for InternVL): Llama layers whose q/k/v are one
/// `wqkv` projection (the same parameters) and whose `wqkv` and `wo` carry a
/// bias with `bias` (on by default; the published chat and InternVL models
/// turn it off), an untied head (`output`).
pub(super) fn internlm2(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 0, intermediate: 11_008, vocab: 103_168 };
    let mut m = read(Family::InternLm2, f, w, false, dims)?;
    let bias = f.bool_or("bias", true)?;
    m.attention = AttentionKind::Standard { qkv_bias: bias, o_bias: bias };
    Ok(m)
}

/// `ApertusConfig` (transformers 5.25): per-head q/k norms and a plain
/// up/down MLP whose xIELU activation (`hidden_act`, the default) learns two
/// scalars per layer (`XIELUActivation.alpha_p`, `alpha_n`).
pub(super) fn apertus(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 0, intermediate: 14_336, vocab: 131_072 };
    let mut m = read(Family::Apertus, f, w, false, dims)?;
    m.mlp_gated = false;
    m.qk_norm = true;
    if f.opt_str("hidden_act").unwrap_or("xielu") == "xielu" {
        m.extra.activation_params = 2;
    }
    Ok(m)
}

/// `HunYuanDenseV1Config` (transformers 5.25): Llama layers with RMSNorms on
/// each query and key head (`query_layernorm`, `key_layernorm`).
pub(super) fn hunyuan_dense(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 0, intermediate: 11_008, vocab: 290_943 };
    let mut m = read(Family::HunyuanDense, f, w, false, dims)?;
    m.qk_norm = true;
    Ok(m)
}

/// `Glm4Config` (GLM-4-0414): biases on q/k/v only, four norms per layer
/// (input, post-attention, post-self-attention, post-MLP).
pub(super) fn glm4(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 40, heads: 32, kv_heads: 2, intermediate: 13_696, vocab: 151_552 };
    let mut m = decoder_with(
        Family::Glm4,
        f,
        w,
        Defaults { tie: false, head_dim: Some(128), sliding_when_absent: None, dims: Some(dims) },
    )?;
    m.attention = AttentionKind::Standard { qkv_bias: f.bool_or("attention_bias", true)?, o_bias: false };
    m.norms_per_layer = 4;
    // GLM-4.1V's text model (`Glm4vTextAttention`, transformers 5.25): heads
    // of `hidden_size // num_attention_heads`, q/k/v biases whatever the config.
    if f.opt_str("model_type") == Some("glm4v_text") {
        m.head_dim = (m.hidden_size / m.num_heads.max(1)).max(1);
        m.v_head_dim = m.head_dim;
        m.attention = AttentionKind::Standard { qkv_bias: true, o_bias: false };
    }
    Ok(m)
}

/// `Cohere2Config` (Command R7B / Command A): one LayerNorm without bias per
/// layer feeding attention and MLP in parallel, tied head, three sliding
/// layers of 4096 then a global one.
pub(super) fn cohere2(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 8192, layers: 40, heads: 64, kv_heads: 0, intermediate: 22_528, vocab: 256_000 };
    let mut m = decoder_with(
        Family::Cohere2,
        f,
        w,
        Defaults { tie: true, head_dim: None, sliding_when_absent: Some(4096), dims: Some(dims) },
    )?;
    m.norm = NormKind::Layer;
    m.extra.norm_without_bias = true;
    m.norms_per_layer = 1;
    Ok(m)
}

/// `CohereConfig` (Command R, R+; transformers 5.25): Cohere2's layer without
/// its windows (one LayerNorm without bias feeding attention and MLP in
/// parallel, tied head) and, with `use_qk_norm`, LayerNorms without bias over
/// every query and key head.
pub(super) fn cohere(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 8192, layers: 40, heads: 64, kv_heads: 0, intermediate: 22_528, vocab: 256_000 };
    let mut m = decoder_with(
        Family::Cohere,
        f,
        w,
        Defaults { tie: true, head_dim: None, sliding_when_absent: None, dims: Some(dims) },
    )?;
    m.norm = NormKind::Layer;
    m.extra.norm_without_bias = true;
    m.norms_per_layer = 1;
    m.extra.qk_norm_full = f.bool_or("use_qk_norm", false)?;
    Ok(m)
}

/// `NemotronConfig` (Nemotron-4, Minitron; transformers 5.25): LayerNorms
/// with biases (`NemotronLayerNorm1P`), a plain up/down MLP (ReLU²) with
/// `mlp_bias`, `attention_bias` on every projection.
pub(super) fn nemotron(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 6144, layers: 32, heads: 48, kv_heads: 0, intermediate: 24_576, vocab: 256_000 };
    let mut m = read(Family::Nemotron, f, w, false, dims)?;
    m.norm = NormKind::Layer;
    m.mlp_gated = false;
    Ok(m)
}

/// `ExaoneConfig` (EXAONE 3.0 – 3.5; transformers 5.25): Llama layers; its
/// checkpoints name the layer count `num_layers` (the config class's
/// attribute-map alias of `num_hidden_layers`).
pub(super) fn exaone(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let layers = f.dim_or("num_layers", 32)?;
    let dims = Dims { hidden: 4096, layers, heads: 32, kv_heads: 8, intermediate: 14_336, vocab: 102_400 };
    read(Family::Exaone, f, w, false, dims)
}

/// `Starcoder2Config`: LayerNorm with biases, a plain (non-gated) biased MLP,
/// biases on every projection (`use_bias`), tied head.
pub(super) fn starcoder2(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 3072, layers: 30, heads: 24, kv_heads: 2, intermediate: 12_288, vocab: 49_152 };
    let mut m = read(Family::Starcoder2, f, w, true, dims)?;
    let bias = f.bool_or("use_bias", true)?;
    m.attention = AttentionKind::Standard { qkv_bias: bias, o_bias: bias };
    m.mlp_gated = false;
    m.mlp_bias = bias;
    m.norm = NormKind::Layer;
    Ok(m)
}

/// `GraniteConfig` (Granite 3.x dense): Llama layers; its multipliers change
/// no shapes.
pub(super) fn granite(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 0, intermediate: 11_008, vocab: 32_000 };
    read(Family::Granite, f, w, false, dims)
}

/// `Exaone4Config`: per-head q/k norms, post-attention and post-MLP norms
/// only, three sliding layers then a global one when `sliding_window` is set.
pub(super) fn exaone4(f: Fields, w: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 32, intermediate: 16_384, vocab: 102_400 };
    let mut m = read(Family::Exaone4, f, w, false, dims)?;
    m.qk_norm = true;
    Ok(m)
}
