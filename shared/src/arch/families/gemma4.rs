//! Gemma 4 (`gemma4`, `gemma4_text`) with the defaults of transformers 5.24
//! `Gemma4TextConfig` (`configuration_gemma4.py`) and the shapes of
//! `modeling_gemma4.py`.

use serde_json::Value;

use crate::arch::fields::{ConfigError, Fields, MAX_DIM, MAX_LAYERS};
use crate::arch::{AttentionKind, Ffn, LayerAttention, LayerShape, LayerSpec, Moe, TextModel};

use super::{check_heads, invalid, rms_text};

/// `Gemma4TextConfig`: five sliding layers to one global (the last is always
/// global), global layers with `global_head_dim` (512) heads and, with
/// `attention_k_eq_v`, `num_global_key_value_heads` KV heads whose keys are
/// also the values; the last `num_kv_shared_layers` layers reuse the cache of
/// the last earlier layer of their type (no k/v projections, double-wide MLPs
/// with `use_double_wide_mlp`); a per-layer input embedding of
/// `hidden_size_per_layer_input`; with `enable_moe_block`, routed experts
/// beside the dense MLP in every layer. Four RMSNorms per layer, one more for
/// the per-layer input and three more for the MoE block; q and k norms per
/// head (v's norm has no weight).
pub(super) fn gemma4(f: Fields, _warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let hidden = f.dim_or("hidden_size", 2304)?;
    let n = f.opt_dim("num_hidden_layers", MAX_LAYERS)?.unwrap_or(30);
    let heads = f.dim_or("num_attention_heads", 8)?;
    let kv_heads = f.dim_or("num_key_value_heads", 4)?;
    check_heads(f, heads, kv_heads)?;
    let head_dim = f.dim_or("head_dim", 256)?;
    let intermediate = f.dim_or("intermediate_size", 9216)?;
    let window = f.dim_or("sliding_window", 512)?;
    let mut types: Vec<bool> = {
        let listed = f.str_list("layer_types")?;
        if listed.is_empty() {
            (0..n).map(|i| !(i + 1).is_multiple_of(6)).collect()
        } else if listed.len() as u64 != n {
            return Err(invalid(f, "layer_types", format!("has {} entries for {n} layers", listed.len())));
        } else {
            let mut out = Vec::with_capacity(listed.len());
            for t in listed {
                out.push(match t {
                    "sliding_attention" => true,
                    "full_attention" => false,
                    other => return Err(invalid(f, "layer_types", format!("unknown layer type `{other}`"))),
                });
            }
            out
        }
    };
    // `__post_init__` forces the last layer to full attention.
    if let Some(last) = types.last_mut() {
        *last = false;
    }
    let k_eq_v = f.bool_or("attention_k_eq_v", false)?;
    let overrides = per_layer_config(f, &types, k_eq_v)?;
    let shared = f.count_or("num_kv_shared_layers", 0)?.min(n);
    let first_shared = n - shared;
    let double_wide = f.bool_or("use_double_wide_mlp", false)?;
    let moe_block = f.bool_or("enable_moe_block", false)?;
    let ffn = if moe_block { Ffn::Moe } else { Ffn::Dense };
    let mut layers = Vec::with_capacity(n as usize);
    for (i, sliding) in types.iter().copied().enumerate() {
        let attention = if sliding { LayerAttention::Sliding(window) } else { LayerAttention::Full };
        let (layer_head_dim, layer_kv_heads) = overrides[i];
        let kv_shared = i as u64 >= first_shared;
        let shape = LayerShape {
            kv_heads: layer_kv_heads.unwrap_or(0),
            head_dim: layer_head_dim.unwrap_or(0),
            // `use_alternative_attention = attention_k_eq_v and not is_sliding`.
            k_eq_v: k_eq_v && !sliding,
            kv_shared,
            ffn_width: if double_wide && kv_shared { intermediate.saturating_mul(2) } else { 0 },
            sinks: false,
            indexer_shared: false,
            compress_ratio: 0,
            hash_routed: false,
        };
        layers.push(LayerSpec { shape, ..LayerSpec::new(attention, ffn) });
    }
    let per_layer_input = f.count_or("hidden_size_per_layer_input", 256)?;
    let vocab = f.dim_or("vocab_size", 262_144)?;
    let mut norms_per_layer = 4;
    if per_layer_input > 0 {
        norms_per_layer += 1;
    }
    let moe = if moe_block {
        norms_per_layer += 3;
        Some(Moe {
            num_experts: f.dim("num_experts")?,
            experts_per_token: f.dim("top_k_experts")?,
            expert_intermediate_size: f.dim("moe_intermediate_size")?,
            // The dense MLP runs beside the experts in every layer.
            shared_intermediate_size: intermediate,
            shared_expert_gate: false,
            router_bias: false,
            expert_bias: false,
        })
    } else {
        None
    };
    let bias = f.bool_or("attention_bias", false)?;
    let mut m = TextModel {
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        v_head_dim: head_dim,
        intermediate_size: intermediate,
        attention: AttentionKind::Standard { qkv_bias: bias, o_bias: bias },
        norms_per_layer,
        qk_norm: true,
        moe,
        ..rms_text(f, hidden, vocab, layers, true)?
    };
    m.extra.per_layer_input = per_layer_input;
    m.extra.per_layer_vocab = if per_layer_input > 0 { f.dim_or("vocab_size_per_layer_input", 262_144)? } else { 0 };
    m.extra.router_scales = moe_block;
    Ok(m)
}

/// A layer's `head_dim` and `num_key_value_heads`, where they are its own.
type Override = (Option<u64>, Option<u64>);

/// Each layer's (head_dim, num_key_value_heads) override: the config's own
/// `per_layer_config` (what `to_dict` writes), else `__post_init__`'s rule:
/// global layers take `global_head_dim` (default 512) and, with
/// `attention_k_eq_v`, `num_global_key_value_heads`.
fn per_layer_config(f: Fields, sliding: &[bool], k_eq_v: bool) -> Result<Vec<Override>, ConfigError> {
    let mut out = vec![(None, None); sliding.len()];
    if let Some(Value::Object(map)) = f.value("per_layer_config") {
        for (key, value) in map {
            let i: usize =
                key.parse().map_err(|_| invalid(f, "per_layer_config", format!("`{key}` is not a layer index")))?;
            let slot =
                out.get_mut(i).ok_or_else(|| invalid(f, "per_layer_config", format!("layer {i} does not exist")))?;
            let field = |name: &str| -> Result<Option<u64>, ConfigError> {
                match value.get(name) {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => match v.as_u64().filter(|&d| d > 0 && d <= MAX_DIM) {
                        Some(d) => Ok(Some(d)),
                        None => Err(invalid(f, "per_layer_config", format!("layer {i}: `{name}` is not a size"))),
                    },
                }
            };
            *slot = (field("head_dim")?, field("num_key_value_heads")?);
        }
        return Ok(out);
    }
    let global_head_dim = f.dim_or("global_head_dim", 512)?;
    let global_kv = if k_eq_v { f.opt_dim("num_global_key_value_heads", MAX_DIM)? } else { None };
    for (slot, &s) in out.iter_mut().zip(sliding) {
        if !s {
            *slot = (Some(global_head_dim), global_kv);
        }
    }
    Ok(out)
}
