//! Hybrids of attention and recurrent mixers: Qwen3-Next and Qwen3.5 (gated
//! DeltaNet with full attention every 4th layer) and LFM2 (gated short
//! convolutions with attention), with the defaults of their transformers
//! config classes (transformers 5.24, `configuration_*.py`).

use crate::arch::fields::{ConfigError, Fields};
use crate::arch::{Family, Ffn, LayerAttention, Moe, Recurrent, TextModel};

use super::decoder::{Defaults, Dims, decoder_with};
use super::invalid;
use super::moe::mtp_warning;

/// `layer_types`, or the class's own rule when it is absent.
fn layer_types(f: Fields, n: u64, rule: impl Fn(u64) -> &'static str) -> Result<Vec<String>, ConfigError> {
    let types = f.str_list("layer_types")?;
    if types.is_empty() {
        return Ok((0..n).map(|i| rule(i).to_owned()).collect());
    }
    if types.len() as u64 != n {
        return Err(invalid(f, "layer_types", format!("has {} entries for {n} layers", types.len())));
    }
    Ok(types.iter().map(|t| (*t).to_owned()).collect())
}

/// Marks the layers whose type is `recurrent_type` as recurrent-only
/// (`LayerAttention::None` with state); any other type but full attention is
/// an error naming it.
fn apply_types(f: Fields, m: &mut TextModel, types: &[String], recurrent_type: &str) -> Result<(), ConfigError> {
    for (l, t) in m.layers.iter_mut().zip(types) {
        if t == recurrent_type {
            l.attention = LayerAttention::None;
            l.state = true;
        } else if t != "full_attention" {
            return Err(invalid(f, "layer_types", format!("layer type `{t}` is not known for this family")));
        }
    }
    Ok(())
}

/// Gated DeltaNet layers: `linear_*` keys of `Qwen3NextConfig` / `Qwen3_5TextConfig`.
fn deltanet(f: Fields) -> Result<Recurrent, ConfigError> {
    Ok(Recurrent::GatedDeltaNet {
        key_heads: f.dim_or("linear_num_key_heads", 16)?,
        value_heads: f.dim_or("linear_num_value_heads", 32)?,
        key_head_dim: f.dim_or("linear_key_head_dim", 128)?,
        value_head_dim: f.dim_or("linear_value_head_dim", 128)?,
        conv_kernel: f.dim_or("linear_conv_kernel_dim", 4)?,
    })
}

/// Qwen3-Next and Qwen3.5 (dense and MoE): three gated-DeltaNet layers then
/// one full-attention layer (`full_attention_interval` = 4); full attention
/// has per-head q/k norms and a sigmoid output gate folded into `q_proj`.
pub(super) fn qwen3_next(family: Family, f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    // Qwen3NextConfig (Qwen3-Next-80B-A3B), Qwen3_5TextConfig (9B shape),
    // Qwen3_5MoeTextConfig (35B-A3B shape).
    let dims = match family {
        Family::Qwen35 => {
            Dims { hidden: 4096, layers: 32, heads: 16, kv_heads: 4, intermediate: 12_288, vocab: 248_320 }
        }
        Family::Qwen35Moe => Dims { hidden: 2048, layers: 40, heads: 16, kv_heads: 2, intermediate: 0, vocab: 248_320 },
        _ => Dims { hidden: 2048, layers: 48, heads: 16, kv_heads: 2, intermediate: 5632, vocab: 151_936 },
    };
    let mut m = decoder_with(
        family,
        f,
        warnings,
        Defaults { tie: false, head_dim: Some(256), sliding_when_absent: None, dims: Some(dims) },
    )?;
    let interval = f.count_or("full_attention_interval", 4)?.max(1);
    let types = layer_types(f, m.num_layers(), |i| {
        if (i + 1).is_multiple_of(interval) { "full_attention" } else { "linear_attention" }
    })?;
    apply_types(f, &mut m, &types, "linear_attention")?;
    m.recurrent = Some(deltanet(f)?);
    // Qwen3.5's `mamba_ssm_dtype`, which vLLM (0.19.0 – 0.25.1
    // models/config.py `Qwen3_5ForConditionalGenerationConfig`) and SGLang
    // (0.5.23 configs/mamba_utils.py) take for the SSM state's dtype.
    if matches!(family, Family::Qwen35 | Family::Qwen35Moe) {
        m.extra.ssm_state_f32 = f.opt_str("mamba_ssm_dtype") == Some("float32");
    }
    m.qk_norm = true;
    m.extra.attn_output_gate = true;
    if family != Family::Qwen35 {
        let expert = f.dim_or("moe_intermediate_size", 512)?;
        let moe = Moe {
            num_experts: f.dim_or("num_experts", if family == Family::Qwen35Moe { 256 } else { 512 })?,
            experts_per_token: f.dim_or("num_experts_per_tok", if family == Family::Qwen35Moe { 8 } else { 10 })?,
            expert_intermediate_size: expert,
            shared_intermediate_size: f.count_or("shared_expert_intermediate_size", 512)?,
            shared_expert_gate: true,
            router_bias: false,
            expert_bias: false,
        };
        // Qwen3NextSparseMoeBlock unless the layer is in `mlp_only_layers` or
        // off the `decoder_sparse_step`; Qwen3.5-MoE has every layer sparse.
        let step = f.count_or("decoder_sparse_step", 1)?.max(1);
        let mlp_only = f.index_list("mlp_only_layers")?;
        for (i, l) in m.layers.iter_mut().enumerate() {
            let i = i as u64;
            if !mlp_only.contains(&i) && (i + 1).is_multiple_of(step) {
                l.ffn = Ffn::Moe;
            }
        }
        m.moe = Some(moe);
    }
    mtp_warning(f, warnings)?;
    Ok(m)
}

/// `Lfm2Config` (the LFM2-2.6B shape): gated short-conv layers and
/// full-attention layers (`layer_types`, else `full_attn_idxs`), per-head
/// q/k norms, a SwiGLU whose width is adjusted as `Lfm2MLP` does it.
pub(super) fn lfm2(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 2560, layers: 32, heads: 32, kv_heads: 8, intermediate: 12_288, vocab: 65_536 };
    short_conv(Family::Lfm2, f, warnings, dims)
}

/// `Lfm2MoeConfig` (transformers 5.25, LFM2-8B-A1B): LFM2's layers with MLPs
/// of `intermediate_size` as written (no auto-adjust) on the first
/// `num_dense_layers`, then `num_experts` of `moe_intermediate_size`; with
/// `use_expert_bias` the router keeps a correction bias (a buffer in
/// transformers, a tensor in the checkpoint: counted).
pub(super) fn lfm2_moe(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 2048, layers: 32, heads: 32, kv_heads: 8, intermediate: 7168, vocab: 65_536 };
    let mut m = short_conv(Family::Lfm2Moe, f, warnings, dims)?;
    let dense = f.count_or("num_dense_layers", 2)?;
    for (i, l) in m.layers.iter_mut().enumerate() {
        if i as u64 >= dense {
            l.ffn = Ffn::Moe;
        }
    }
    m.moe = Some(Moe {
        num_experts: f.dim_or("num_experts", 32)?,
        experts_per_token: f.dim_or("num_experts_per_tok", 4)?,
        expert_intermediate_size: f.dim_or("moe_intermediate_size", 1792)?,
        shared_intermediate_size: 0,
        shared_expert_gate: false,
        router_bias: f.bool_or("use_expert_bias", true)?,
        expert_bias: false,
    });
    Ok(m)
}

/// LFM2's layers: short convolutions and attention by `layer_types` (else
/// `full_attn_idxs`), per-head q/k norms, an embedding norm; the MLP width
/// adjusted as LFM2's own config does (`block_auto_adjust_ff_dim`), which
/// LFM2-MoE's does not.
fn short_conv(family: Family, f: Fields, warnings: &mut Vec<String>, dims: Dims) -> Result<TextModel, ConfigError> {
    // `tie_embedding` and `block_ff_dim` are the names LFM2's own configs use.
    let tie = f.bool_or("tie_embedding", true)?;
    let mut m = decoder_with(
        family,
        f,
        warnings,
        Defaults { tie, head_dim: None, sliding_when_absent: None, dims: Some(dims) },
    )?;
    m.tie_word_embeddings = f.bool_or("tie_word_embeddings", tie)?;
    let mut ff = f.opt_dim("block_ff_dim", crate::arch::fields::MAX_DIM)?.unwrap_or(m.intermediate_size);
    if family == Family::Lfm2 && f.bool_or("block_auto_adjust_ff_dim", true)? {
        ff = ff.saturating_mul(2) / 3;
        let multiplier = match f.value("block_ffn_dim_multiplier") {
            None => Some(1.0),
            Some(v) => v.as_f64(),
        };
        if let Some(k) = multiplier.filter(|k| k.is_finite() && *k > 0.0) {
            let multiple = f.dim_or("block_multiple_of", 256)?;
            ff = ((k * ff as f64) as u64).div_ceil(multiple).saturating_mul(multiple);
        }
    }
    m.intermediate_size = ff;
    let full = f.index_list("full_attn_idxs")?;
    let types = layer_types(f, m.num_layers(), |i| {
        if !f.has("full_attn_idxs") || full.contains(&i) { "full_attention" } else { "conv" }
    })?;
    apply_types(f, &mut m, &types, "conv")?;
    m.recurrent =
        Some(Recurrent::ShortConv { kernel: f.dim_or("conv_L_cache", 3)?, bias: f.bool_or("conv_bias", false)? });
    m.qk_norm = true;
    Ok(m)
}
