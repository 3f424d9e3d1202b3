//! Rotary, pre-norm decoders (Llama, Mistral, Mixtral, Qwen, Gemma, Phi-3 and
//! the generic fallback), with the defaults of their transformers config classes.

use crate::arch::fields::{ConfigError, Fields, MAX_DIM, MAX_LAYERS};
use crate::arch::{AttentionKind, Family, Ffn, LayerAttention, LayerSpec, Moe, NormKind, TextModel};

use super::{check_heads, invalid, per_head};

/// The transformers defaults that matter when a config leaves a key out.
pub(super) struct Defaults {
    pub tie: bool,
    pub head_dim: Option<u64>,
    /// `Some(w)`: a `sliding_window` key that is absent means `w` (Mistral).
    pub sliding_when_absent: Option<u64>,
    /// The config class's defaults for the main dimensions; `None`: the keys
    /// are required (the class has no meaningful default).
    pub dims: Option<Dims>,
}

/// A config class's default dimensions.
#[derive(Clone, Copy)]
pub(super) struct Dims {
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub intermediate: u64,
    pub vocab: u64,
}

fn defaults(family: Family) -> Defaults {
    use Family::*;
    match family {
        // `GemmaConfig`, `Gemma2Config`, `Gemma3TextConfig`: tie_word_embeddings=True, head_dim=256.
        // `Gemma3TextConfig` also supplies the dimensions the multimodal configs omit.
        Gemma3 => Defaults {
            tie: true,
            head_dim: Some(256),
            sliding_when_absent: None,
            dims: Some(Dims { hidden: 2304, layers: 26, heads: 8, kv_heads: 4, intermediate: 9216, vocab: 262_208 }),
        },
        Gemma | Gemma2 => Defaults { tie: true, head_dim: Some(256), sliding_when_absent: None, dims: None },
        // `MistralConfig`: sliding_window=4096.
        Mistral => Defaults { tie: false, head_dim: None, sliding_when_absent: Some(4096), dims: None },
        // `Qwen3Config` / `Qwen3MoeConfig`: head_dim=128.
        Qwen3 | Qwen3Moe => Defaults { tie: false, head_dim: Some(128), sliding_when_absent: None, dims: None },
        // `PretrainedConfig` ties by default, but the generic fallback follows
        // `LlamaConfig` (False), the most common case of unknown decoders.
        _ => Defaults { tie: false, head_dim: None, sliding_when_absent: None, dims: None },
    }
}

/// Rotary, pre-norm decoders: the Llama/Mistral/Qwen/Gemma/Phi-3 lineage.
pub(super) fn decoder(family: Family, f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    decoder_with(family, f, warnings, defaults(family))
}

/// [`decoder`] with the defaults of a config class given by the caller.
pub(super) fn decoder_with(
    family: Family,
    f: Fields,
    warnings: &mut Vec<String>,
    d: Defaults,
) -> Result<TextModel, ConfigError> {
    use Family::*;
    let dim = |key: &str, default: Option<u64>| default.map_or_else(|| f.dim(key), |v| f.dim_or(key, v));
    let dims = d.dims;
    let hidden = dim("hidden_size", dims.map(|d| d.hidden))?;
    let num_layers = match dims {
        Some(d) => f.opt_dim("num_hidden_layers", MAX_LAYERS)?.unwrap_or(d.layers),
        None => f.layers("num_hidden_layers")?,
    };
    let heads = dim("num_attention_heads", dims.map(|d| d.heads))?;
    // `kv_heads: 0` in the defaults: the class falls back to `num_attention_heads`.
    let kv_default = dims.map_or(heads, |d| if d.kv_heads == 0 { heads } else { d.kv_heads });
    // An explicit `null` is what the config classes and modeling files fall
    // back from: every head for keys and values, `hidden // heads` for the
    // head width (e.g. transformers 5.25 `configuration_ministral3.py`,
    // `modeling_qwen3.py`'s `getattr(config, "head_dim", None) or …`), not
    // the class's numeric default.
    let null = |key: &str| f.value(key).is_some_and(serde_json::Value::is_null);
    let kv_heads = if null("num_key_value_heads") { heads } else { f.dim_or("num_key_value_heads", kv_default)? };
    let intermediate = dim("intermediate_size", dims.map(|d| d.intermediate))?;
    let vocab = dim("vocab_size", dims.map(|d| d.vocab))?;
    let head_dim = match (f.opt_dim("head_dim", MAX_DIM)?, d.head_dim) {
        (Some(h), _) => h,
        (None, Some(h)) if !null("head_dim") => h,
        // GLM-4.5 and others without `head_dim` use `hidden // heads`, flooring.
        (None, _) if matches!(family, Glm4Moe) => (hidden / heads).max(1),
        (None, _) => per_head(f, hidden, heads)?,
    };
    check_heads(f, heads, kv_heads)?;
    let attention_bias = f.bool_or("attention_bias", false)?;
    let (qkv_bias, o_bias) = match family {
        // Qwen2 attention has biases on q/k/v and none on o, hard-wired.
        Qwen2 | Qwen2Moe | Qwen2Vl => (true, false),
        _ => (attention_bias, attention_bias),
    };
    let mlp_bias = f.bool_or("mlp_bias", false)?;
    let norms_per_layer = if matches!(family, Gemma2 | Gemma3) { 4 } else { 2 };
    let qk_norm = matches!(family, Qwen3 | Qwen3Moe | Gemma3);
    let moe = moe(family, f)?;
    let window = sliding_window(family, f, &d)?;
    let mut layers = layer_attention(f, num_layers, window, family, warnings)?;
    if family == Mllama {
        for i in f.index_list("cross_attention_layers")? {
            match layers.get_mut(i as usize) {
                Some(l) => l.attention = LayerAttention::Cross,
                None => return Err(invalid(f, "cross_attention_layers", format!("layer {i} does not exist"))),
            }
        }
    }
    if let Some(m) = moe {
        let sparse_step = f.count_or("decoder_sparse_step", 1)?.max(1);
        let mlp_only = f.index_list("mlp_only_layers")?;
        for (i, l) in layers.iter_mut().enumerate() {
            let i = i as u64;
            let sparse = m.num_experts > 0 && !mlp_only.contains(&i) && (i + 1).is_multiple_of(sparse_step);
            if sparse {
                l.ffn = Ffn::Moe;
            }
        }
    }
    let embedding_rows = if family == Mllama { vocab.saturating_add(8) } else { vocab };
    Ok(TextModel {
        hidden_size: hidden,
        vocab_size: vocab,
        embedding_rows,
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        v_head_dim: head_dim,
        intermediate_size: intermediate,
        attention: AttentionKind::Standard { qkv_bias, o_bias },
        mlp_gated: true,
        mlp_bias,
        norm: NormKind::Rms,
        norms_per_layer,
        qk_norm,
        final_norm: true,
        moe,
        tie_word_embeddings: f.bool_or("tie_word_embeddings", d.tie)?,
        learned_positions: 0,
        embed_proj_dim: None,
        max_position_embeddings: f.opt_u64("max_position_embeddings")?,
        extra: crate::arch::Extras {
            rope_table_positions: gemma3_rope_tables(family, f, &layers)?,
            ..Default::default()
        },
        layers,
        cache_from_tensors: None,
        recurrent: None,
    })
}

/// Gemma 3's two rotary tables: the sliding layers' at `rope_local_base_freq`
/// (unscaled) and the global layers' with the config's scaling (vLLM 0.19.1
/// `gemma3.py::Gemma3Attention` builds both with `get_rope` at
/// `max_position_embeddings`, `Gemma3TextConfig`'s default 131,072).
fn gemma3_rope_tables(family: Family, f: Fields, layers: &[LayerSpec]) -> Result<u64, ConfigError> {
    if family != Family::Gemma3 {
        return Ok(0);
    }
    let positions = f.dim_or("max_position_embeddings", 131_072)?;
    let sliding = layers.iter().any(|l| matches!(l.attention, LayerAttention::Sliding(_)));
    let global = layers.iter().any(|l| !matches!(l.attention, LayerAttention::Sliding(_)));
    let local_table = if sliding { positions } else { 0 };
    let global_table = if global { super::rope_table_positions(f, positions, "full_attention") } else { 0 };
    Ok(local_table.saturating_add(global_table))
}

fn moe(family: Family, f: Fields) -> Result<Option<Moe>, ConfigError> {
    use Family::*;
    Ok(match family {
        Mixtral => Some(Moe {
            num_experts: f.dim_or("num_local_experts", 8)?,
            experts_per_token: f.dim_or("num_experts_per_tok", 2)?,
            expert_intermediate_size: f.dim("intermediate_size")?,
            shared_intermediate_size: 0,
            shared_expert_gate: false,
            router_bias: false,
            expert_bias: false,
        }),
        Qwen2Moe => Some(Moe {
            num_experts: f.dim_or("num_experts", 60)?,
            experts_per_token: f.dim_or("num_experts_per_tok", 4)?,
            expert_intermediate_size: f.dim_or("moe_intermediate_size", 1408)?,
            shared_intermediate_size: f.count_or("shared_expert_intermediate_size", 5632)?,
            shared_expert_gate: true,
            router_bias: false,
            expert_bias: false,
        }),
        Qwen3Moe => Some(Moe {
            // Qwen3-VL-MoE's text config names it `num_local_experts` in transformers 5.
            num_experts: f.opt_dim("num_experts", MAX_DIM)?.map_or_else(|| f.dim_or("num_local_experts", 128), Ok)?,
            experts_per_token: f.dim_or("num_experts_per_tok", 8)?,
            expert_intermediate_size: f.dim_or("moe_intermediate_size", 768)?,
            shared_intermediate_size: 0,
            shared_expert_gate: false,
            router_bias: false,
            expert_bias: false,
        }),
        _ => None,
    })
}

/// The window of sliding layers, if this config has any.
fn sliding_window(family: Family, f: Fields, d: &Defaults) -> Result<Option<u64>, ConfigError> {
    use Family::*;
    // An explicit `"sliding_window": null` means no window (Mistral Small 3,
    // Mistral 7B v0.2+), unlike an absent key, which takes the class default.
    let window = if f.value("sliding_window").is_some() {
        f.opt_dim("sliding_window", MAX_DIM)?
    } else if matches!(family, Gemma2 | Gemma3) {
        Some(4096) // Gemma2Config / Gemma3TextConfig default
    } else {
        f.opt_u64("sliding_window")?.or(d.sliding_when_absent)
    };
    // Qwen2/Qwen3 configs carry a `sliding_window` they do not use unless
    // `use_sliding_window` is true.
    let enabled = match family {
        Qwen2 | Qwen2Moe | Qwen2Vl | Qwen3 | Qwen3Moe => f.bool_or("use_sliding_window", false)?,
        _ => true,
    };
    Ok(window.filter(|_| enabled))
}

fn layer_attention(
    f: Fields,
    num_layers: u64,
    window: Option<u64>,
    family: Family,
    warnings: &mut Vec<String>,
) -> Result<Vec<LayerSpec>, ConfigError> {
    let dense = |attention| LayerSpec::new(attention, Ffn::Dense);
    let types = f.str_list("layer_types")?;
    if !types.is_empty() {
        if types.len() as u64 != num_layers {
            return Err(invalid(f, "layer_types", format!("has {} entries for {num_layers} layers", types.len())));
        }
        return Ok(types
            .iter()
            .map(|t| match (*t, window) {
                ("sliding_attention", Some(w)) => dense(LayerAttention::Sliding(w)),
                ("full_attention", _) | ("sliding_attention", None) => dense(LayerAttention::Full),
                // Set by the family's own reader (hybrid.rs, moe.rs) afterwards.
                ("linear_attention" | "conv" | "chunked_attention", _) if family.reads_own_layer_types() => {
                    dense(LayerAttention::Full)
                }
                (other, _) => {
                    warnings.push(format!("layer type `{other}` is treated as full attention"));
                    dense(LayerAttention::Full)
                }
            })
            .collect());
    }
    let Some(w) = window else {
        return Ok((0..num_layers).map(|_| dense(LayerAttention::Full)).collect());
    };
    let sliding = |i: u64| -> bool {
        match family {
            // Gemma2DecoderLayer: `is_sliding = not bool(layer_idx % 2)`.
            Family::Gemma2 => i.is_multiple_of(2),
            // Gemma 3: every `sliding_window_pattern`-th layer is global (default 6).
            Family::Gemma3 => !(i + 1).is_multiple_of(f.count_or("sliding_window_pattern", 6).unwrap_or(6).max(1)),
            // Cohere2Config / Exaone4Config: every `sliding_window_pattern`-th layer is global (default 4);
            // Olmo3Config: `sliding_attention if (i + 1) % 4 != 0` (no pattern key).
            Family::Cohere2 | Family::Exaone4 | Family::ExaoneMoe | Family::Olmo3 => {
                !(i + 1).is_multiple_of(f.count_or("sliding_window_pattern", 4).unwrap_or(4).max(1))
            }
            // GptOssConfig: `sliding_attention if bool((i + 1) % 2)`.
            Family::GptOss => i.is_multiple_of(2),
            // Qwen2: layers from `max_window_layers` on use the window.
            Family::Qwen2 | Family::Qwen2Moe | Family::Qwen3 | Family::Qwen3Moe => {
                i >= f.count_or("max_window_layers", 0).unwrap_or(0)
            }
            // Dots1Config: the same rule, `max_window_layers` 62 by default.
            Family::Dots1 => i >= f.count_or("max_window_layers", 62).unwrap_or(62),
            _ => true,
        }
    };
    Ok((0..num_layers)
        .map(|i| dense(if sliding(i) { LayerAttention::Sliding(w) } else { LayerAttention::Full }))
        .collect())
}
