//! DeepSeek-V2/V3 and Kimi-K2 (K2.5's text model too): multi-head latent
//! attention, routed and shared experts, dense first layers; Mistral 4 and
//! GLM-4.7-Flash (`glm4_moe_lite`) are built from the same modules
//! (transformers 5.25 `modular_mistral4.py`, `modular_glm4_moe_lite.py`), and
//! MiniCPM3's dense layers use the same attention (`modeling_minicpm3.py`).

use crate::arch::fields::{ConfigError, Fields, MAX_DIM};
use crate::arch::{AttentionKind, Family, Ffn, Indexer, LayerAttention, LayerSpec, Mla, Moe, NormKind, TextModel};

pub(super) fn deepseek(family: Family, f: Fields) -> Result<TextModel, ConfigError> {
    // The config classes' defaults where a key is absent: `(q_lora_rank,
    // routed experts, shared experts, experts per token)` of `Mistral4Config`
    // and `Glm4MoeLiteConfig` (transformers 5.25); the older readers require
    // the keys their Hub configs always carry.
    let (q_lora, routed, shared, top_k) = match family {
        Family::Mistral4 => (Some(1024), 128, 1, 4),
        Family::Glm4MoeLite => (Some(768), 64, 1, 4),
        _ => (None, 0, 0, 1),
    };
    let hidden = f.dim("hidden_size")?;
    let num_layers = f.layers("num_hidden_layers")?;
    let heads = f.dim("num_attention_heads")?;
    let mla = Mla {
        // An explicit `null` is no query LoRA.
        q_lora_rank: if f.has("q_lora_rank") { f.opt_dim("q_lora_rank", MAX_DIM)? } else { q_lora },
        kv_lora_rank: f.dim("kv_lora_rank")?,
        qk_nope_head_dim: f.dim("qk_nope_head_dim")?,
        qk_rope_head_dim: f.dim("qk_rope_head_dim")?,
        // `MiniCPM3Config`: `hidden_size // num_attention_heads` when absent.
        v_head_dim: if family == Family::MiniCpm3 {
            f.opt_dim("v_head_dim", MAX_DIM)?.unwrap_or((hidden / heads.max(1)).max(1))
        } else {
            f.dim("v_head_dim")?
        },
        // DeepseekV32Config / GlmMoeDsaConfig: `index_n_heads` (64 and 32 by
        // default, tests/fixtures/arch/defaults-*.json), `index_head_dim`.
        indexer: if matches!(family, Family::DeepseekV32 | Family::GlmMoeDsa) {
            let heads = if family == Family::GlmMoeDsa { 32 } else { 64 };
            Some(Indexer { heads: f.dim_or("index_n_heads", heads)?, head_dim: f.dim_or("index_head_dim", 128)? })
        } else {
            None
        },
    };
    // `num_local_experts` is the attribute-map alias of `n_routed_experts`.
    let n_routed = f.count_or("n_routed_experts", f.count_or("num_local_experts", routed)?)?;
    // `Glm4MoeLiteConfig` has no `first_k_dense_replace`: its default
    // `mlp_layer_types` is one dense layer, then sparse ones.
    let first_dense = if family == Family::Glm4MoeLite { 1 } else { f.count_or("first_k_dense_replace", 0)? };
    let freq = f.count_or("moe_layer_freq", 1)?.max(1);
    let moe = (n_routed > 0)
        .then(|| -> Result<Moe, ConfigError> {
            let expert = f.dim("moe_intermediate_size")?;
            Ok(Moe {
                num_experts: n_routed,
                experts_per_token: f.dim_or("num_experts_per_tok", top_k)?,
                expert_intermediate_size: expert,
                shared_intermediate_size: expert.saturating_mul(f.count_or("n_shared_experts", shared)?),
                shared_expert_gate: false,
                // DeepSeek-V3's `noaux_tc` routing keeps an `e_score_correction_bias`
                // (GLM's too; Mistral 4's softmax router has none).
                router_bias: matches!(
                    family,
                    Family::DeepseekV3 | Family::DeepseekV32 | Family::GlmMoeDsa | Family::Glm4MoeLite
                ) || f.opt_str("topk_method") == Some("noaux_tc"),
                expert_bias: false,
            })
        })
        .transpose()?;
    // transformers 5 writes `mlp_layer_types` (dense / sparse) for V3.2 and GLM-5.
    let types = f.str_list("mlp_layer_types")?;
    if !types.is_empty() && types.len() as u64 != num_layers {
        return Err(super::invalid(
            f,
            "mlp_layer_types",
            format!("has {} entries for {num_layers} layers", types.len()),
        ));
    }
    // GLM-5.2's IndexShare: `indexer_types` gives each layer a "full"
    // indexer of its own or a "shared" one reusing an earlier full layer's
    // top-k (`GlmMoeDsaConfig`, all "full" by default: GLM-5, GLM-5.1).
    let indexers = if family == Family::GlmMoeDsa { f.str_list("indexer_types")? } else { Vec::new() };
    if !indexers.is_empty() && indexers.len() as u64 != num_layers {
        return Err(super::invalid(
            f,
            "indexer_types",
            format!("has {} entries for {num_layers} layers", indexers.len()),
        ));
    }
    if let Some(other) = indexers.iter().find(|t| !matches!(**t, "full" | "shared")) {
        return Err(super::invalid(f, "indexer_types", format!("`{other}` is neither \"full\" nor \"shared\"")));
    }
    let layers = (0..num_layers)
        .map(|i| {
            let sparse = match types.get(i as usize) {
                Some(t) => *t == "sparse",
                None => i >= first_dense && i % freq == 0,
            };
            let mut l =
                LayerSpec::new(LayerAttention::Full, if moe.is_some() && sparse { Ffn::Moe } else { Ffn::Dense });
            l.shape.indexer_shared = indexers.get(i as usize) == Some(&"shared");
            l
        })
        .collect();
    Ok(TextModel {
        hidden_size: hidden,
        vocab_size: f.dim("vocab_size")?,
        embedding_rows: f.dim("vocab_size")?,
        num_heads: heads,
        num_kv_heads: heads,
        head_dim: mla.qk_nope_head_dim.saturating_add(mla.qk_rope_head_dim),
        v_head_dim: mla.v_head_dim,
        intermediate_size: f.dim("intermediate_size")?,
        attention: AttentionKind::Mla(mla),
        mlp_gated: true,
        mlp_bias: false,
        norm: NormKind::Rms,
        norms_per_layer: 2,
        qk_norm: false,
        final_norm: true,
        moe,
        // `MiniCPM3Config` ties the head by default.
        tie_word_embeddings: f.bool_or("tie_word_embeddings", family == Family::MiniCpm3)?,
        learned_positions: 0,
        embed_proj_dim: None,
        max_position_embeddings: f.opt_u64("max_position_embeddings")?,
        layers,
        cache_from_tensors: None,
        recurrent: None,
        extra: Default::default(),
    })
}
