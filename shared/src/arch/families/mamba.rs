//! Mamba-2 hybrids: Nemotron-H (one mixer per layer: Mamba-2, attention, MLP
//! or MoE) and Granite 4.0-H (`granitemoehybrid`: Mamba-2 or attention, then
//! MoE plus a shared MLP), with the defaults of their transformers config
//! classes (transformers 5.24, `configuration_*.py`).

use crate::arch::fields::{ConfigError, Fields, MAX_DIM};
use crate::arch::{AttentionKind, Ffn, LayerAttention, LayerSpec, Moe, Recurrent, TextModel};

use super::{check_heads, invalid, rms_text};

fn attention_dims(f: Fields, m: &mut TextModel, heads: u64, kv: u64, head_dim: u64) -> Result<(), ConfigError> {
    let heads = f.dim_or("num_attention_heads", heads)?;
    let kv = f.dim_or("num_key_value_heads", if kv == 0 { heads } else { kv })?;
    check_heads(f, heads, kv)?;
    m.num_heads = heads;
    m.num_kv_heads = kv;
    m.head_dim =
        f.opt_dim("head_dim", MAX_DIM)?.unwrap_or(if head_dim == 0 { m.hidden_size / heads } else { head_dim });
    m.v_head_dim = m.head_dim;
    let bias = f.bool_or("attention_bias", false)?;
    m.attention = AttentionKind::Standard { qkv_bias: bias, o_bias: bias };
    Ok(())
}

/// `NemotronHConfig` (the Nemotron-H-8B mixer shapes): the layer pattern is
/// `hybrid_override_pattern` (`M` Mamba-2, `*` attention, `-` MLP, `E` MoE)
/// in the Hub configs, or `layers_block_type` in transformers 5's own; each
/// layer is one RMSNorm and one mixer. MLPs and experts are plain (ReLU²).
pub(super) fn nemotron_h(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let kinds: Vec<char> = if let Some(p) = f.opt_str("hybrid_override_pattern") {
        p.chars().collect()
    } else {
        let types = f.str_list("layers_block_type")?;
        let mut out = Vec::with_capacity(types.len());
        for t in types {
            out.push(match t {
                "mamba" | "linear_attention" => 'M',
                "attention" | "full_attention" => '*',
                "mlp" => '-',
                "moe" => 'E',
                other => return Err(invalid(f, "layers_block_type", format!("unknown block type `{other}`"))),
            });
        }
        out
    };
    if kinds.is_empty() {
        return Err(ConfigError::Missing { field: f.path("hybrid_override_pattern") });
    }
    if let Some(n) = f.opt_u64("num_hidden_layers")?
        && n != kinds.len() as u64
    {
        return Err(invalid(f, "num_hidden_layers", format!("{n} layers but the pattern has {}", kinds.len())));
    }
    let mut layers = Vec::with_capacity(kinds.len());
    for k in kinds {
        layers.push(match k {
            'M' => LayerSpec::recurrent(Ffn::None),
            '*' => LayerSpec::new(LayerAttention::Full, Ffn::None),
            '-' => LayerSpec::new(LayerAttention::None, Ffn::Dense),
            'E' => LayerSpec::new(LayerAttention::None, Ffn::Moe),
            other => {
                return Err(invalid(f, "hybrid_override_pattern", format!("unknown block `{other}` (M, *, -, E)")));
            }
        });
    }
    let hidden = f.dim_or("hidden_size", 4096)?;
    let mut m = rms_text(f, hidden, f.dim_or("vocab_size", 131_072)?, layers, false)?;
    attention_dims(f, &mut m, 32, 8, 128)?;
    m.norms_per_layer = 1;
    m.mlp_gated = false;
    m.mlp_bias = f.bool_or("mlp_bias", false)?;
    m.intermediate_size = f.dim_or("intermediate_size", 21_504)?;
    let heads = f.dim_or("mamba_num_heads", 128)?;
    m.recurrent = Some(Recurrent::Mamba2 {
        heads,
        head_dim: f.dim_or("mamba_head_dim", 64)?,
        d_state: f.dim_or("ssm_state_size", 128)?,
        groups: f.dim_or("n_groups", 8)?,
        conv_kernel: f.dim_or("conv_kernel", 4)?,
        conv_bias: f.bool_or("use_conv_bias", true)?,
        proj_bias: f.bool_or("mamba_proj_bias", false)?,
        gated_norm: true,
    });
    m.extra.ssm_state_f32 = f.opt_str("mamba_ssm_cache_dtype") == Some("float32");
    if m.layers.iter().any(|l| l.ffn == Ffn::Moe) {
        if f.opt_u64("moe_latent_size")?.is_some() {
            warnings.push("`moe_latent_size`: the latent expert projections are not modelled".into());
        }
        let expert = f.dim_or("moe_intermediate_size", 7688)?;
        m.moe = Some(Moe {
            num_experts: f.dim_or("n_routed_experts", 8)?,
            experts_per_token: f.dim_or("num_experts_per_tok", 2)?,
            expert_intermediate_size: expert,
            shared_intermediate_size: f
                .dim_or("moe_shared_expert_intermediate_size", 7688)?
                .saturating_mul(f.count_or("n_shared_experts", 1)?),
            shared_expert_gate: false,
            // NemotronHTopkRouter: `e_score_correction_bias`, a buffer that the checkpoint stores.
            router_bias: true,
            expert_bias: false,
        });
    }
    super::moe::mtp_warning(f, warnings)?;
    Ok(m)
}

/// `GraniteMoeHybridConfig`: `layer_types` of `mamba` / `attention` (or
/// transformers 5's `linear_attention` / `full_attention`), two RMSNorms per
/// layer, MoE experts plus a shared gated MLP of `shared_intermediate_size`
/// (Granite 4.0-H-Tiny/Small), or only the shared MLP when there are no
/// experts (Granite 4.0-H-Micro).
pub(super) fn granitemoehybrid(f: Fields, _warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let n = f.opt_dim("num_hidden_layers", crate::arch::fields::MAX_LAYERS)?.unwrap_or(32);
    let types = f.str_list("layer_types")?;
    if !types.is_empty() && types.len() as u64 != n {
        return Err(invalid(f, "layer_types", format!("has {} entries for {n} layers", types.len())));
    }
    let experts = f.count_or("num_local_experts", 8)?;
    let ffn = if experts > 0 { Ffn::Moe } else { Ffn::Dense };
    let mut layers = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        // GraniteMoeHybridConfig: all layers are Mamba when `layer_types` is absent.
        layers.push(match types.get(i).copied().unwrap_or("mamba") {
            "mamba" | "linear_attention" => LayerSpec::recurrent(ffn),
            "attention" | "full_attention" => LayerSpec::new(LayerAttention::Full, ffn),
            other => return Err(invalid(f, "layer_types", format!("unknown layer type `{other}`"))),
        });
    }
    let hidden = f.dim_or("hidden_size", 4096)?;
    let mut m = rms_text(f, hidden, f.dim_or("vocab_size", 32_000)?, layers, false)?;
    attention_dims(f, &mut m, 32, 0, 0)?;
    let shared = f.count_or("shared_intermediate_size", 1024)?;
    m.intermediate_size = shared;
    let heads = f.dim_or("mamba_n_heads", 128)?;
    m.recurrent = Some(Recurrent::Mamba2 {
        heads,
        head_dim: f.dim_or("mamba_d_head", 64)?,
        d_state: f.dim_or("mamba_d_state", 256)?,
        groups: f.dim_or("mamba_n_groups", 1)?,
        conv_kernel: f.dim_or("mamba_d_conv", 4)?,
        conv_bias: f.bool_or("mamba_conv_bias", true)?,
        proj_bias: f.bool_or("mamba_proj_bias", false)?,
        gated_norm: true,
    });
    if experts > 0 {
        m.moe = Some(Moe {
            num_experts: experts,
            experts_per_token: f.dim_or("num_experts_per_tok", 2)?,
            expert_intermediate_size: f.dim_or("intermediate_size", 11_008)?,
            shared_intermediate_size: shared,
            shared_expert_gate: false,
            router_bias: false,
            expert_bias: false,
        });
    }
    Ok(m)
}

/// `FalconH1Config` (transformers 5.24 `configuration_falcon_h1.py`): every
/// layer runs attention and a Mamba-2 mixer side by side on the same input,
/// then a gated MLP (`FalconH1DecoderLayer`: two RMSNorms). The mixer's inner
/// width is `mamba_d_ssm` (else `mamba_expand × hidden`), its gated RMSNorm
/// exists only with `mamba_rms_norm`; the µP multipliers are buffers that the
/// checkpoint does not store.
pub(super) fn falcon_h1(f: Fields, _warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let n = f.opt_dim("num_hidden_layers", crate::arch::fields::MAX_LAYERS)?.unwrap_or(32);
    let layers =
        (0..n).map(|_| LayerSpec { state: true, ..LayerSpec::new(LayerAttention::Full, Ffn::Dense) }).collect();
    let hidden = f.dim_or("hidden_size", 4096)?;
    let mut m = rms_text(f, hidden, f.dim_or("vocab_size", 128_000)?, layers, false)?;
    attention_dims(f, &mut m, 32, 8, 0)?;
    m.intermediate_size = f.dim_or("intermediate_size", 14_336)?;
    m.mlp_bias = f.bool_or("mlp_bias", false)?;
    let heads = f.dim_or("mamba_n_heads", 128)?;
    let inner = match f.opt_dim("mamba_d_ssm", MAX_DIM)? {
        Some(d) => d,
        None if f.has("mamba_d_ssm") => f.dim_or("mamba_expand", 2)?.saturating_mul(hidden),
        None => 1024,
    };
    let head_dim = match f.value("mamba_d_head").and_then(|v| v.as_u64()) {
        Some(d) => d,
        None => inner / heads,
    };
    if heads.saturating_mul(head_dim) != inner {
        return Err(invalid(
            f,
            "mamba_d_head",
            format!("{heads} heads of {head_dim} do not make the inner width {inner}"),
        ));
    }
    if f.bool_or("projectors_bias", false)? != f.bool_or("mamba_proj_bias", false)? {
        return Err(invalid(
            f,
            "projectors_bias",
            "differs from `mamba_proj_bias`: a bias on only one of the mixer's projections is not modelled".into(),
        ));
    }
    m.recurrent = Some(Recurrent::Mamba2 {
        heads,
        head_dim,
        d_state: f.dim_or("mamba_d_state", 256)?,
        groups: f.dim_or("mamba_n_groups", 1)?,
        conv_kernel: f.dim_or("mamba_d_conv", 4)?,
        conv_bias: f.bool_or("mamba_conv_bias", true)?,
        proj_bias: f.bool_or("mamba_proj_bias", false)?,
        gated_norm: f.bool_or("mamba_rms_norm", false)?,
    });
    Ok(m)
}

/// `JambaConfig` (the Jamba-v0.1 shape, transformers 5.24
/// `configuration_jamba.py`): attention where `i % attn_layer_period ==
/// attn_layer_offset` (every 8th from 4), Mamba elsewhere; 16 experts where
/// `i % expert_layer_period == expert_layer_offset` (every 2nd from 1), a
/// dense MLP elsewhere. Two RMSNorms per layer; attention without biases.
pub(super) fn jamba(f: Fields, _warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let n = f.opt_dim("num_hidden_layers", crate::arch::fields::MAX_LAYERS)?.unwrap_or(32);
    let period = |key: &str, default: u64| -> Result<u64, ConfigError> {
        let p = f.count_or(key, default)?;
        if p == 0 { Err(invalid(f, key, "must be at least 1".into())) } else { Ok(p) }
    };
    let (attn_period, expert_period) = (period("attn_layer_period", 8)?, period("expert_layer_period", 2)?);
    let attn_offset = f.count_or("attn_layer_offset", 4)?;
    let expert_offset = f.count_or("expert_layer_offset", 1)?;
    if attn_offset >= attn_period {
        return Err(invalid(f, "attn_layer_offset", format!("{attn_offset} is not below the period {attn_period}")));
    }
    if expert_offset >= expert_period {
        return Err(invalid(
            f,
            "expert_layer_offset",
            format!("{expert_offset} is not below the period {expert_period}"),
        ));
    }
    let experts = f.count_or("num_experts", 16)?;
    let layers = (0..n)
        .map(|i| {
            let ffn = if experts > 1 && i % expert_period == expert_offset { Ffn::Moe } else { Ffn::Dense };
            if i % attn_period == attn_offset {
                LayerSpec::new(LayerAttention::Full, ffn)
            } else {
                LayerSpec::recurrent(ffn)
            }
        })
        .collect();
    let hidden = f.dim_or("hidden_size", 4096)?;
    let mut m = rms_text(f, hidden, f.dim_or("vocab_size", 65_536)?, layers, false)?;
    attention_dims(f, &mut m, 32, 8, 0)?;
    m.attention = AttentionKind::Standard { qkv_bias: false, o_bias: false };
    m.intermediate_size = f.dim_or("intermediate_size", 14_336)?;
    // `mamba_dt_rank: "auto"` is ceil(hidden / 16).
    let dt_rank = match f.value("mamba_dt_rank").and_then(|v| v.as_u64()) {
        Some(r) => r,
        None => hidden.div_ceil(16),
    };
    m.recurrent = Some(Recurrent::Mamba1 {
        inner: f.dim_or("mamba_expand", 2)?.saturating_mul(hidden),
        d_state: f.dim_or("mamba_d_state", 16)?,
        dt_rank,
        conv_kernel: f.dim_or("mamba_d_conv", 4)?,
        conv_bias: f.bool_or("mamba_conv_bias", true)?,
        proj_bias: f.bool_or("mamba_proj_bias", false)?,
    });
    if experts > 1 {
        m.moe = Some(Moe {
            num_experts: experts,
            experts_per_token: f.dim_or("num_experts_per_tok", 2)?,
            expert_intermediate_size: m.intermediate_size,
            shared_intermediate_size: 0,
            shared_expert_gate: false,
            router_bias: false,
            expert_bias: false,
        });
    }
    Ok(m)
}
