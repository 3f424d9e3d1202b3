//! The 2025 mixture-of-experts decoders: gpt-oss, Llama 4, GLM-4.5/4.6,
//! MiniMax-M2, Phi-3.5-MoE and Granite 3 MoE (transformers 5.24), and OLMoE,
//! ERNIE 4.5 MoE, dots1, EXAONE MoE and Hunyuan MoE (transformers 5.25), each
//! with the defaults of its config class (`configuration_*.py`).

use crate::arch::fields::{ConfigError, Fields, MAX_DIM};
use crate::arch::{AttentionKind, Family, Ffn, LayerAttention, LayerShape, Moe, NormKind, TextModel};

use super::decoder::{Defaults, Dims, decoder_with};
use super::{check_heads, invalid};

fn defaults(tie: bool, head_dim: Option<u64>, sliding: Option<u64>, dims: Dims) -> Defaults {
    Defaults { tie, head_dim, sliding_when_absent: sliding, dims: Some(dims) }
}

fn moe(f: Fields, experts: (&str, u64), top_k: u64, expert_size: u64) -> Result<Moe, ConfigError> {
    Ok(Moe {
        // `num_local_experts` is the usual attribute-map alias of the count.
        num_experts: f.dim_or(experts.0, f.dim_or("num_local_experts", experts.1)?)?,
        experts_per_token: f.dim_or("num_experts_per_tok", top_k)?,
        expert_intermediate_size: expert_size,
        shared_intermediate_size: 0,
        shared_expert_gate: false,
        router_bias: false,
        expert_bias: false,
    })
}

fn all_moe(m: &mut TextModel, moe: Moe) {
    for l in &mut m.layers {
        l.ffn = Ffn::Moe;
    }
    m.moe = Some(moe);
}

/// `GptOssConfig`: 36 layers of 128 experts (the gpt-oss-120b shape),
/// attention with biases and one sink logit per head, every other layer a
/// 128-token sliding window (`layer_types`: sliding on even layers).
pub(super) fn gpt_oss(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 2880, layers: 36, heads: 64, kv_heads: 8, intermediate: 2880, vocab: 201_088 };
    let mut m = decoder_with(Family::GptOss, f, warnings, defaults(false, Some(64), Some(128), dims))?;
    let bias = f.bool_or("attention_bias", true)?;
    m.attention = AttentionKind::Standard { qkv_bias: bias, o_bias: bias };
    m.extra.attn_sinks = true;
    let mut e = moe(f, ("num_local_experts", 128), 4, m.intermediate_size)?;
    e.router_bias = true; // GptOssTopKRouter has a bias
    e.expert_bias = true;
    all_moe(&mut m, e);
    Ok(m)
}

/// `Llama4TextConfig` (the Scout shape): routed experts of
/// `intermediate_size` plus one shared expert of the same width on the MoE
/// layers (`moe_layers`, else every `interleave_moe_layer_step`-th), dense
/// layers of `intermediate_size_mlp`; RoPE layers attend in chunks of
/// `attention_chunk_size`, every `no_rope_layer_interval`-th (NoPE) layer
/// attends globally. Its q/k norm is a weightless L2 norm.
pub(super) fn llama4(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 5120, layers: 48, heads: 40, kv_heads: 8, intermediate: 16_384, vocab: 202_048 };
    let mut m = decoder_with(Family::Llama4, f, warnings, defaults(false, Some(128), None, dims))?;
    m.intermediate_size = f.dim_or("intermediate_size_mlp", 16_384)?;
    let expert = f.dim_or("intermediate_size", 8192)?;
    let mut e = moe(f, ("num_local_experts", 16), 1, expert)?;
    e.shared_intermediate_size = expert;
    let n = m.layers.len() as u64;
    let moe_layers = if f.has("moe_layers") {
        f.index_list("moe_layers")?
    } else {
        let step = f.count_or("interleave_moe_layer_step", 1)?.max(1);
        (step - 1..n).step_by(step as usize).collect()
    };
    let chunk =
        f.opt_dim("attention_chunk_size", MAX_DIM)?.or(if f.has("attention_chunk_size") { None } else { Some(8192) });
    let types = f.str_list("layer_types")?;
    let nope = f.index_list("no_rope_layers")?;
    let interval = f.count_or("no_rope_layer_interval", 4)?.max(1);
    for (i, l) in m.layers.iter_mut().enumerate() {
        let i64_ = i as u64;
        // `no_rope_layers[i] == 1` means the layer uses RoPE (configuration_llama4.py).
        let rope = match (types.get(i), nope.get(i)) {
            (Some(t), _) => *t == "chunked_attention",
            (None, Some(r)) => *r != 0,
            (None, None) => !(i64_ + 1).is_multiple_of(interval),
        };
        l.attention = match (rope, chunk) {
            (true, Some(c)) => LayerAttention::Chunked(c),
            _ => LayerAttention::Full,
        };
        if moe_layers.contains(&i64_) {
            l.ffn = Ffn::Moe;
        }
    }
    if let Some(&bad) = moe_layers.iter().find(|&&i| i >= n) {
        return Err(invalid(f, "moe_layers", format!("layer {bad} does not exist")));
    }
    m.qk_norm = false;
    m.moe = Some(e);
    // One rotary table for the RoPE layers (vLLM 0.19.1 `llama4.py::Llama4Attention`:
    // `get_rope(max_position=config.max_position_embeddings)`, `llama3`
    // scaling keeps the length; `Llama4TextConfig`'s default 131,072).
    if m.layers.iter().any(|l| matches!(l.attention, LayerAttention::Chunked(_))) {
        let positions = f.dim_or("max_position_embeddings", 131_072)?;
        m.extra.rope_table_positions = super::rope_table_positions(f, positions, "full_attention");
    }
    Ok(m)
}

/// `Glm4MoeConfig` (the GLM-4.5-Air shape): DeepSeek-style routing with one
/// shared expert, `first_k_dense_replace` dense layers, optional q/k norms.
/// The `e_score_correction_bias` is a buffer in transformers but a tensor in
/// the checkpoint: it is counted here (as for DeepSeek-V3).
pub(super) fn glm4_moe(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    // GLM-4.5V's text config (`Glm4vMoeTextConfig`): q/k/v biases and a
    // 151,424-row vocabulary by default.
    let vision_text = f.opt_str("model_type") == Some("glm4v_moe_text");
    let vocab = if vision_text { 151_424 } else { 151_552 };
    let dims = Dims { hidden: 4096, layers: 46, heads: 96, kv_heads: 8, intermediate: 10_944, vocab };
    let mut m = decoder_with(Family::Glm4Moe, f, warnings, defaults(false, None, None, dims))?;
    let expert = f.dim_or("moe_intermediate_size", 1408)?;
    let mut e = moe(f, ("n_routed_experts", 128), 8, expert)?;
    e.shared_intermediate_size = expert.saturating_mul(f.count_or("n_shared_experts", 1)?);
    e.router_bias = true;
    let first_dense = f.count_or("first_k_dense_replace", 1)?;
    for (i, l) in m.layers.iter_mut().enumerate() {
        if i as u64 >= first_dense {
            l.ffn = Ffn::Moe;
        }
    }
    m.qk_norm = f.bool_or("use_qk_norm", false)?;
    // `attention_bias` biases q, k and v only: `o_proj` is built with
    // `bias=False` (transformers 5.24 modeling_glm4_moe.py, `Glm4MoeAttention`).
    m.attention = AttentionKind::Standard { qkv_bias: f.bool_or("attention_bias", vision_text)?, o_bias: false };
    m.moe = Some(e);
    mtp_warning(f, warnings)?;
    Ok(m)
}

pub(super) fn mtp_warning(f: Fields, warnings: &mut Vec<String>) -> Result<(), ConfigError> {
    let n = f.count_or("num_nextn_predict_layers", 0)?.max(f.count_or("mtp_num_hidden_layers", 0)?);
    if n > 0 {
        warnings.push(format!(
            "the checkpoint also ships {n} multi-token-prediction layer(s), which transformers does not build \
             and vLLM loads only for speculative decoding (`--speculative-config mtp` counts them); not counted \
             otherwise"
        ));
    }
    Ok(())
}

/// `OlmoeConfig` (transformers 5.25): OLMo's q/k RMSNorms over the whole
/// projection, `num_experts` (64) of `intermediate_size` on every layer.
pub(super) fn olmoe(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 2048, layers: 16, heads: 16, kv_heads: 0, intermediate: 2048, vocab: 50_304 };
    let mut m = decoder_with(Family::Olmoe, f, warnings, defaults(false, None, None, dims))?;
    m.extra.qk_norm_full = true;
    let e = moe(f, ("num_experts", 64), 8, m.intermediate_size)?;
    all_moe(&mut m, e);
    Ok(m)
}

/// `Ernie4_5_MoeConfig` (transformers 5.25): `moe_num_experts` of
/// `moe_intermediate_size` plus `moe_num_shared_experts` shared ones on every
/// `moe_layer_interval`-th layer from `moe_layer_start_index` to
/// `moe_layer_end_index` (−1: the last), `use_bias` as ERNIE 4.5's, tied
/// head. Its `e_score_correction_bias` is a parameter in transformers.
pub(super) fn ernie4_5_moe(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 2560, layers: 28, heads: 20, kv_heads: 4, intermediate: 12_288, vocab: 103_424 };
    let mut m = decoder_with(Family::Ernie45Moe, f, warnings, defaults(true, None, None, dims))?;
    super::dense::ernie_biases(f, &mut m)?;
    let expert = f.dim_or("moe_intermediate_size", 1536)?;
    let mut e = moe(f, ("moe_num_experts", 64), 6, expert)?;
    e.experts_per_token = f.dim_or("moe_k", e.experts_per_token)?;
    e.shared_intermediate_size = expert.saturating_mul(f.count_or("moe_num_shared_experts", 2)?);
    e.router_bias = true;
    let n = m.layers.len() as u64;
    let start = f.count_or("moe_layer_start_index", 1)?;
    let end = match f.value("moe_layer_end_index").filter(|v| !v.is_null()) {
        None => n.saturating_sub(1),
        Some(v) => match v.as_i64() {
            Some(-1) => n.saturating_sub(1),
            Some(i) if i >= 0 => i as u64,
            _ => return Err(invalid(f, "moe_layer_end_index", "must be a layer index or -1".into())),
        },
    };
    let interval = f.count_or("moe_layer_interval", 1)?.max(1);
    for (i, l) in m.layers.iter_mut().enumerate() {
        let i = i as u64;
        if (i + 1).is_multiple_of(interval) && i >= start && i <= end {
            l.ffn = Ffn::Moe;
        }
    }
    m.moe = Some(e);
    mtp_warning(f, warnings)?;
    Ok(m)
}

/// `Dots1Config` (transformers 5.25, dots.llm1): DeepSeek-V3's routing (one
/// shared width of `n_shared_experts` experts, a correction bias that is a
/// buffer in transformers and a tensor in the checkpoint, dense layers before
/// `first_k_dense_replace`) over standard attention with per-head q/k norms;
/// a window only from `max_window_layers` on, as Qwen2's.
pub(super) fn dots1(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4608, layers: 62, heads: 32, kv_heads: 32, intermediate: 10_944, vocab: 152_064 };
    let mut m = decoder_with(Family::Dots1, f, warnings, defaults(false, None, Some(4096), dims))?;
    m.qk_norm = true;
    let expert = f.dim_or("moe_intermediate_size", 1408)?;
    let mut e = moe(f, ("n_routed_experts", 0), 1, expert)?;
    if e.num_experts == 0 {
        return Err(invalid(f, "n_routed_experts", "is required (the config class has no default)".into()));
    }
    e.shared_intermediate_size = expert.saturating_mul(f.count_or("n_shared_experts", 0)?);
    e.router_bias = true;
    let first_dense = f.count_or("first_k_dense_replace", 0)?;
    for (i, l) in m.layers.iter_mut().enumerate() {
        if i as u64 >= first_dense {
            l.ffn = Ffn::Moe;
        }
    }
    m.moe = Some(e);
    Ok(m)
}

/// `ExaoneMoeConfig` (transformers 5.25): EXAONE's per-head q/k norms and
/// three sliding layers per global one (`sliding_window_pattern`), experts of
/// `moe_intermediate_size` plus `num_shared_experts` shared ones on the
/// `mlp_layer_types` "sparse" layers (else from `first_k_dense_replace` on),
/// DeepSeek-style routing with a correction bias (a buffer in transformers, a
/// tensor in the checkpoint: counted).
pub(super) fn exaone_moe(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 32, intermediate: 16_384, vocab: 102_400 };
    let mut m = decoder_with(Family::ExaoneMoe, f, warnings, defaults(false, None, Some(4096), dims))?;
    m.qk_norm = true;
    let expert = f.dim_or("moe_intermediate_size", 1024)?;
    let mut e = moe(f, ("num_experts", 64), 8, expert)?;
    e.shared_intermediate_size = expert.saturating_mul(f.count_or("num_shared_experts", 1)?);
    e.router_bias = true;
    let types = f.str_list("mlp_layer_types")?;
    if !types.is_empty() && types.len() != m.layers.len() {
        return Err(invalid(
            f,
            "mlp_layer_types",
            format!("has {} entries for {} layers", types.len(), m.layers.len()),
        ));
    }
    let first_dense = f.count_or("first_k_dense_replace", 1)?;
    for (i, l) in m.layers.iter_mut().enumerate() {
        let sparse = match types.get(i) {
            Some(t) => *t == "sparse",
            None => i as u64 >= first_dense,
        };
        if sparse {
            l.ffn = Ffn::Moe;
        }
    }
    m.moe = Some(e);
    mtp_warning(f, warnings)?;
    Ok(m)
}

/// `HunYuanMoEV1Config` (transformers 5.25, Hunyuan-A13B): per-head q/k
/// norms; every layer routes over `num_experts` experts and runs a shared MLP
/// beside them, all `intermediate_size` wide; `moe_topk` may be a list per
/// layer (the widest is kept, as the activation peak needs).
pub(super) fn hunyuan_moe(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 0, intermediate: 11_008, vocab: 290_943 };
    let mut m = decoder_with(Family::HunyuanMoe, f, warnings, defaults(false, None, None, dims))?;
    m.qk_norm = true;
    // `num_experts_per_tok` is `moe_topk`'s alias.
    let mut e = moe(f, ("num_experts", 1), 1, m.intermediate_size)?;
    let top_k = match f.value("moe_topk") {
        Some(serde_json::Value::Array(_)) => f.index_list("moe_topk")?.into_iter().max().unwrap_or(1),
        _ => f.dim_or("moe_topk", e.experts_per_token)?,
    };
    if top_k == 0 || top_k > e.num_experts {
        return Err(invalid(f, "moe_topk", format!("must be 1 to {} (the experts)", e.num_experts)));
    }
    e.experts_per_token = top_k;
    e.shared_intermediate_size = m.intermediate_size;
    all_moe(&mut m, e);
    Ok(m)
}

/// `MiniMaxM2Config`: 256 experts of `intermediate_size` on every layer, q/k
/// RMSNorms over the whole projection, sigmoid routing with a correction
/// bias (a buffer in transformers, a tensor in the checkpoint: counted).
pub(super) fn minimax_m2(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 3072, layers: 62, heads: 48, kv_heads: 8, intermediate: 1536, vocab: 200_064 };
    let mut m = decoder_with(Family::MinimaxM2, f, warnings, defaults(false, Some(128), None, dims))?;
    let mut e = moe(f, ("num_local_experts", 256), 8, m.intermediate_size)?;
    e.router_bias = f.bool_or("use_routing_bias", true)?;
    m.extra.qk_norm_full = f.bool_or("use_qk_norm", true)?;
    all_moe(&mut m, e);
    mtp_warning(f, warnings)?;
    Ok(m)
}

/// `PhimoeConfig` (Phi-3.5-MoE): LayerNorms with biases, 16 experts, top-2.
pub(super) fn phimoe(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 8, intermediate: 6400, vocab: 32_064 };
    let mut m = decoder_with(Family::Phimoe, f, warnings, defaults(false, None, None, dims))?;
    m.norm = NormKind::Layer;
    let e = moe(f, ("num_local_experts", 16), 2, m.intermediate_size)?;
    all_moe(&mut m, e);
    if f.bool_or("lm_head_bias", false)? {
        warnings.push("`lm_head_bias`: the output head's bias is not counted".into());
    }
    Ok(m)
}

/// `GraniteMoeConfig`: Llama-style attention, 8 experts top-2, no shared expert.
pub(super) fn granitemoe(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 32, heads: 32, kv_heads: 0, intermediate: 11_008, vocab: 32_000 };
    let mut m = decoder_with(Family::GraniteMoe, f, warnings, defaults(false, None, None, dims))?;
    let e = moe(f, ("num_local_experts", 8), 2, m.intermediate_size)?;
    all_moe(&mut m, e);
    Ok(m)
}

/// `MiMoV2FlashConfig` (XiaomiMiMo/MiMo-V2-Flash, transformers 5.24
/// `configuration_mimo_v2_flash.py`): 48 layers, the first full attention and
/// every 6th after it, the rest a 129-token sliding window; query/key heads of
/// 192 and value heads of 128; the sliding layers have twice the KV heads and
/// a sink logit per query head (`MiMoV2FlashAttention`); the first layer a
/// dense MLP, the rest 256 routed experts without a shared one, DeepSeek-style
/// routing (its `e_score_correction_bias` is counted, as for GLM-4.5).
pub(super) fn mimo_v2_flash(f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    let dims = Dims { hidden: 4096, layers: 48, heads: 64, kv_heads: 4, intermediate: 16_384, vocab: 152_576 };
    // The reference SGLang code attends to `sliding_window_size` tokens plus
    // the query: the config class turns that key into `sliding_window + 1`.
    let window = match f.opt_dim("sliding_window_size", MAX_DIM)? {
        Some(w) => w.saturating_add(1),
        None => f.opt_dim("sliding_window", MAX_DIM)?.unwrap_or(129),
    };
    let mut m = decoder_with(Family::MimoV2Flash, f, warnings, defaults(false, Some(192), Some(window), dims))?;
    m.v_head_dim = f.dim_or("v_head_dim", 128)?;
    let n = m.layers.len();
    let types = f.str_list("layer_types")?;
    let mlp_types = f.str_list("mlp_layer_types")?;
    // The Hub's own configs (MiMo-V2-Flash, and `mimo_v2`: MiMo-V2.5 and
    // V2.5-Pro) state the layers as vLLM reads them (0.34
    // `models/mimo_v2.py`, `MiMoV2FlashDecoderLayer`):
    // `hybrid_layer_pattern[i] == 1` is a sliding layer
    // (`is_compressed_softmax_layer`), a truthy `moe_layer_freq[i]` an MoE
    // one (`is_moe_layer`; an integer there is not a per-layer list).
    let pattern = f.index_list("hybrid_layer_pattern")?;
    let moe_freq = match f.value("moe_layer_freq") {
        Some(serde_json::Value::Array(_)) => f.index_list("moe_layer_freq")?,
        _ => Vec::new(),
    };
    for (key, len) in [
        ("layer_types", types.len()),
        ("mlp_layer_types", mlp_types.len()),
        ("hybrid_layer_pattern", pattern.len()),
        ("moe_layer_freq", moe_freq.len()),
    ] {
        if len != 0 && len != n {
            return Err(invalid(f, key, format!("has {len} entries for {n} layers")));
        }
    }
    // Sliding layers: `swa_num_key_value_heads` (transformers 5.25's
    // `MiMoV2FlashAttention` doubles `num_key_value_heads` instead, which
    // MiMo-V2-Flash's 8 = 2 × 4 agrees with and V2.5-Pro's 8 = 8 does not),
    // sinks by `add_swa_attention_sink_bias` (transformers: always).
    let swa_kv_heads = f.dim_or("swa_num_key_value_heads", m.num_kv_heads.saturating_mul(2))?;
    check_heads(f, m.num_heads, swa_kv_heads)?;
    let swa_sinks = f.bool_or("add_swa_attention_sink_bias", true)?;
    let full_sinks = f.bool_or("add_full_attention_sink_bias", false)?;
    // The layer shape keeps the model's query heads and head widths: a
    // sliding layer with its own is refused rather than miscounted.
    for (key, model) in
        [("swa_num_attention_heads", m.num_heads), ("swa_head_dim", m.head_dim), ("swa_v_head_dim", m.v_head_dim)]
    {
        if let Some(own) = f.opt_u64(key)?
            && own != model
        {
            return Err(invalid(
                f,
                key,
                format!("{own} differs from the full-attention layers' {model}, which is not modelled"),
            ));
        }
    }
    for (i, l) in m.layers.iter_mut().enumerate() {
        let sliding = match (types.get(i).copied(), pattern.get(i)) {
            (Some("sliding_attention"), _) => true,
            (Some("full_attention"), _) => false,
            (Some(other), _) => return Err(invalid(f, "layer_types", format!("unknown layer type `{other}`"))),
            (None, Some(&p)) => p == 1,
            (None, None) => i != 0 && !(i + 1).is_multiple_of(6),
        };
        l.attention = if sliding { LayerAttention::Sliding(window) } else { LayerAttention::Full };
        l.shape = if sliding {
            LayerShape { kv_heads: swa_kv_heads, sinks: swa_sinks, ..LayerShape::default() }
        } else {
            LayerShape { sinks: full_sinks, ..LayerShape::default() }
        };
        let sparse = match (mlp_types.get(i).copied(), moe_freq.get(i)) {
            (Some("sparse"), _) => true,
            (Some("dense"), _) => false,
            (Some(other), _) => return Err(invalid(f, "mlp_layer_types", format!("unknown MLP type `{other}`"))),
            (None, Some(&freq)) => freq != 0,
            (None, None) => i != 0,
        };
        if sparse {
            l.ffn = Ffn::Moe;
        }
    }
    let mut e = moe(f, ("n_routed_experts", 256), 8, f.dim_or("moe_intermediate_size", 2048)?)?;
    e.router_bias = true;
    m.moe = Some(e);
    Ok(m)
}
