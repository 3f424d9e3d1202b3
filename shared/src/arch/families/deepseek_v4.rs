//! DeepSeek-V4 (`deepseek_v4`): every layer attends over a sliding window
//! with one shared key/value head; most also attend to compressed entries of
//! 4 tokens (compressed sparse attention, picked by a lightning indexer) or
//! 128 tokens (heavily compressed attention). Four residual streams mixed by
//! hyper-connections, experts in every layer, the first ones routed by a
//! fixed table of token ids. The keys and their defaults are transformers
//! 5.25's `DeepseekV4Config` (`configuration_deepseek_v4.py`), the class
//! vLLM 0.34 reads the config through (`models/deepseek_v4/attention.py`,
//! `nvidia/model.py`), legacy keys (`compress_ratios`, `num_hash_layers`,
//! `compress_rate_csa` / `_hca`) folded in as its `__post_init__` does.

use crate::arch::fields::{ConfigError, Fields, MAX_DIM};
use crate::arch::{
    AttentionKind, CompressedAttention, Ffn, Indexer, LayerAttention, LayerSpec, Moe, NormKind, TextModel,
};

const SLIDING: &str = "sliding_attention";
const CSA: &str = "compressed_sparse_attention";
const HCA: &str = "heavily_compressed_attention";

pub(super) fn deepseek_v4(f: Fields) -> Result<TextModel, ConfigError> {
    let hidden = f.dim_or("hidden_size", 4096)?;
    let num_layers = f.opt_dim("num_hidden_layers", crate::arch::fields::MAX_LAYERS)?.unwrap_or(43);
    let heads = f.dim_or("num_attention_heads", 64)?;
    // One key/value head, read as both key and value (`num_key_value_heads`
    // 1; vLLM builds `wkv` to one `head_dim` whatever the key says).
    let kv_heads = f.dim_or("num_key_value_heads", 1)?;
    if kv_heads != 1 {
        return Err(super::invalid(f, "num_key_value_heads", format!("{kv_heads}: DeepSeek-V4 shares one head")));
    }
    let head_dim = f.dim_or("head_dim", 512)?;
    let rope_head_dim = match (f.opt_dim("qk_rope_head_dim", MAX_DIM)?, f.value("partial_rotary_factor")) {
        (Some(d), _) => d,
        // `qk_rope_head_dim = int(head_dim * partial_rotary_factor)`.
        (None, Some(v)) => v
            .as_f64()
            .filter(|x| (0.0..=1.0).contains(x))
            .map(|x| (head_dim as f64 * x) as u64)
            .ok_or_else(|| super::invalid(f, "partial_rotary_factor", "expected a fraction of head_dim".into()))?,
        // `default_partial_rotary_factor = 64 / 512`.
        (None, None) => head_dim / 8,
    };
    let o_groups = f.dim_or("o_groups", 8)?;
    let (csa_ratio, hca_ratio) = compress_rates(f)?;
    if !heads.is_multiple_of(o_groups) {
        return Err(super::invalid(f, "o_groups", format!("{o_groups} groups do not divide {heads} heads")));
    }
    let attention = CompressedAttention {
        q_lora_rank: f.dim_or("q_lora_rank", 1024)?,
        head_dim,
        rope_head_dim,
        o_groups,
        o_lora_rank: f.dim_or("o_lora_rank", 1024)?,
        window: f.dim_or("sliding_window", 128)?,
        indexer: Indexer { heads: f.dim_or("index_n_heads", 64)?, head_dim: f.dim_or("index_head_dim", 128)? },
        sparse_ratio: csa_ratio,
    };
    let types = layer_types(f, num_layers, csa_ratio, hca_ratio)?;
    // `mlp_layer_types`: explicit, else `num_hash_layers` (3 by default)
    // `hash_moe` layers then `moe`; vLLM routes layer `i` by its table when
    // `i < mlp_layer_types.count("hash_moe")` (nvidia/model.py `DeepseekV4MoE`).
    let mlp_types = f.str_list("mlp_layer_types")?;
    let hash_layers = if mlp_types.is_empty() {
        f.count_or("num_hash_layers", 3)?
    } else {
        if mlp_types.len() as u64 != num_layers {
            return Err(super::invalid(
                f,
                "mlp_layer_types",
                format!("has {} entries for {num_layers} layers", mlp_types.len()),
            ));
        }
        if let Some(other) = mlp_types.iter().find(|t| !matches!(**t, "hash_moe" | "moe")) {
            return Err(super::invalid(f, "mlp_layer_types", format!("`{other}` is neither \"hash_moe\" nor \"moe\"")));
        }
        mlp_types.iter().filter(|t| **t == "hash_moe").count() as u64
    };
    let expert = f.dim_or("moe_intermediate_size", 2048)?;
    let moe = Moe {
        num_experts: f.dim_or("n_routed_experts", 256)?,
        experts_per_token: f.dim_or("num_experts_per_tok", 6)?,
        expert_intermediate_size: expert,
        shared_intermediate_size: expert.saturating_mul(f.count_or("n_shared_experts", 1)?),
        shared_expert_gate: false,
        // `DeepseekV4TopKRouter.e_score_correction_bias` (a buffer in
        // transformers, a tensor in the checkpoint); hash layers have none.
        router_bias: true,
        expert_bias: false,
    };
    let layers = types
        .iter()
        .enumerate()
        .map(|(i, &ratio)| {
            let attention = if ratio == 0 { LayerAttention::Sliding(attention.window) } else { LayerAttention::Full };
            let mut l = LayerSpec::new(attention, Ffn::Moe);
            l.shape.compress_ratio = ratio;
            l.shape.hash_routed = (i as u64) < hash_layers;
            l
        })
        .collect();
    let vocab = f.dim_or("vocab_size", 129_280)?;
    let extra = crate::arch::Extras { hyper_connections: f.dim_or("hc_mult", 4)?, ..Default::default() };
    Ok(TextModel {
        hidden_size: hidden,
        vocab_size: vocab,
        embedding_rows: vocab,
        num_heads: heads,
        num_kv_heads: 1,
        head_dim,
        v_head_dim: head_dim,
        // `attribute_map`: `intermediate_size` is `moe_intermediate_size`.
        intermediate_size: expert,
        attention: AttentionKind::Compressed(attention),
        mlp_gated: true,
        mlp_bias: false,
        norm: NormKind::Rms,
        norms_per_layer: 2,
        qk_norm: false,
        final_norm: true,
        moe: Some(moe),
        tie_word_embeddings: f.bool_or("tie_word_embeddings", false)?,
        learned_positions: 0,
        embed_proj_dim: None,
        max_position_embeddings: Some(f.dim_or("max_position_embeddings", 1_048_576)?),
        layers,
        cache_from_tensors: None,
        recurrent: None,
        extra,
    })
}

/// `compress_rates` (`{compressed_sparse_attention: 4,
/// heavily_compressed_attention: 128}` by default), the legacy
/// `compress_rate_csa` / `compress_rate_hca` over it.
fn compress_rates(f: Fields) -> Result<(u64, u64), ConfigError> {
    let rates = f.object("compress_rates");
    let rate = |name: &str, legacy: &str, default: u64| -> Result<u64, ConfigError> {
        if let Some(v) = f.opt_dim(legacy, MAX_DIM)? {
            return Ok(v);
        }
        match rates.and_then(|r| r.get(name)) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|&r| (2..=MAX_DIM).contains(&r))
                .ok_or_else(|| super::invalid(f, "compress_rates", format!("`{name}` must be a whole ratio ≥ 2"))),
        }
    };
    let (csa, hca) = (rate(CSA, "compress_rate_csa", 4)?, rate(HCA, "compress_rate_hca", 128)?);
    if csa == hca {
        return Err(super::invalid(f, "compress_rates", format!("both attention kinds compress by {csa}")));
    }
    Ok((csa, hca))
}

/// Each layer's compression ratio (0: the sliding window alone), from
/// `layer_types`, else the legacy per-layer `compress_ratios` (0, 4 or 128;
/// the list may run on past the layers into the MTP ones), else the
/// config's default: two heavily compressed layers, then compressed sparse
/// and heavily compressed in turn.
fn layer_types(f: Fields, num_layers: u64, csa: u64, hca: u64) -> Result<Vec<u64>, ConfigError> {
    let named = f.str_list("layer_types")?;
    let types: Vec<&str> = if !named.is_empty() {
        named
    } else if let Some(list) = f.value("compress_ratios").filter(|v| !v.is_null()) {
        let items =
            list.as_array().ok_or_else(|| super::invalid(f, "compress_ratios", "expected a list of ratios".into()))?;
        items
            .iter()
            .map(|v| match v.as_u64() {
                // `_COMPRESS_RATIO_TO_LAYER_TYPE`; vLLM reads 1 as 0.
                Some(0 | 1) => Ok(SLIDING),
                Some(4) => Ok(CSA),
                Some(128) => Ok(HCA),
                _ => Err(super::invalid(f, "compress_ratios", format!("{v} is not 0, 4 or 128"))),
            })
            .collect::<Result<_, _>>()?
    } else {
        (0..num_layers).map(|i| if i < 2 || i % 2 == 0 { HCA } else { CSA }).collect()
    };
    if (types.len() as u64) < num_layers {
        return Err(super::invalid(
            f,
            if f.has("layer_types") { "layer_types" } else { "compress_ratios" },
            format!("has {} entries for {num_layers} layers", types.len()),
        ));
    }
    types
        .iter()
        .take(num_layers as usize)
        .map(|t| match *t {
            SLIDING => Ok(0),
            CSA => Ok(csa),
            HCA => Ok(hca),
            other => Err(super::invalid(f, "layer_types", format!("`{other}` is not a DeepSeek-V4 attention kind"))),
        })
        .collect()
}
