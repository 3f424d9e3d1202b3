//! Gemma 3n's text model (`gemma3n`, `gemma3n_text`) with the defaults of
//! transformers 5.24 `Gemma3nTextConfig` (`configuration_gemma3n.py`) and
//! the shapes of `modeling_gemma3n.py`.

use serde_json::Value;

use crate::arch::fields::{ConfigError, Fields, MAX_DIM, MAX_LAYERS};
use crate::arch::{AttentionKind, Ffn, LayerAttention, LayerShape, LayerSpec, TextModel};

use super::{check_heads, invalid, rms_text};

/// `Gemma3nTextConfig` (the E4B shape): four sliding layers to one global;
/// the last `num_kv_shared_layers` layers read an earlier layer's cache (no
/// k/v projections or k_norm); an `intermediate_size` per layer (or one for
/// all); AltUp streams, a LAuReL block and a per-layer input in every
/// layer; four RMSNorms per layer plus the per-layer input's. The vision and
/// audio towers of the multimodal wrapper are not read.
pub(super) fn gemma3n(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let hidden = f.dim_or("hidden_size", 2048)?;
    let n = f.opt_dim("num_hidden_layers", MAX_LAYERS)?.unwrap_or(35);
    let heads = f.dim_or("num_attention_heads", 8)?;
    let kv_heads = f.dim_or("num_key_value_heads", 2)?;
    check_heads(f, heads, kv_heads)?;
    let head_dim = f.dim_or("head_dim", 256)?;
    let window = f.dim_or("sliding_window", 512)?;
    let widths: Vec<u64> = match f.value("intermediate_size") {
        Some(Value::Array(list)) => {
            if list.len() as u64 != n {
                return Err(invalid(f, "intermediate_size", format!("has {} entries for {n} layers", list.len())));
            }
            let mut out = Vec::with_capacity(list.len());
            for v in list {
                match v.as_u64().filter(|&w| w > 0 && w <= MAX_DIM) {
                    Some(w) => out.push(w),
                    None => return Err(invalid(f, "intermediate_size", format!("`{v}` is not a size"))),
                }
            }
            out
        }
        _ => vec![f.dim_or("intermediate_size", 16_384)?; n as usize],
    };
    let listed = f.str_list("layer_types")?;
    if !listed.is_empty() && listed.len() as u64 != n {
        return Err(invalid(f, "layer_types", format!("has {} entries for {n} layers", listed.len())));
    }
    let shared = f.count_or("num_kv_shared_layers", 15)?.min(n);
    let first_shared = n - shared;
    let mut layers = Vec::with_capacity(n as usize);
    for (i, &width) in widths.iter().enumerate() {
        let sliding = match listed.get(i).copied() {
            Some("sliding_attention") => true,
            Some("full_attention") => false,
            Some(other) => return Err(invalid(f, "layer_types", format!("unknown layer type `{other}`"))),
            None => !(i + 1).is_multiple_of(5),
        };
        let attention = if sliding { LayerAttention::Sliding(window) } else { LayerAttention::Full };
        let shape = LayerShape { kv_shared: i as u64 >= first_shared, ffn_width: width, ..LayerShape::default() };
        layers.push(LayerSpec { shape, ..LayerSpec::new(attention, Ffn::Dense) });
    }
    if f.value("activation_sparsity_pattern").is_some_and(|v| !v.is_null()) {
        warnings.push("`activation_sparsity_pattern` changes compute, not memory: not modelled".into());
    }
    let vocab = f.dim_or("vocab_size", 262_400)?;
    let bias = f.bool_or("attention_bias", false)?;
    let per_layer_input = f.count_or("hidden_size_per_layer_input", 256)?;
    let mut m = TextModel {
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        v_head_dim: head_dim,
        intermediate_size: widths.iter().copied().max().unwrap_or(0),
        attention: AttentionKind::Standard { qkv_bias: bias, o_bias: bias },
        norms_per_layer: if per_layer_input > 0 { 5 } else { 4 },
        qk_norm: true,
        moe: None,
        ..rms_text(f, hidden, vocab, layers, true)?
    };
    m.extra.per_layer_input = per_layer_input;
    m.extra.per_layer_vocab = if per_layer_input > 0 { f.dim_or("vocab_size_per_layer_input", 262_144)? } else { 0 };
    m.extra.altup_inputs = f.count_or("altup_num_inputs", 4)?;
    m.extra.laurel_rank = f.count_or("laurel_rank", 64)?;
    Ok(m)
}
