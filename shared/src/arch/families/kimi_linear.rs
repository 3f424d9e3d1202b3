//! Kimi-Linear (`kimi_linear`, `KimiLinearForCausalLM`; remote code, no
//! transformers 5.25 class): Kimi delta attention (KDA) layers and DeepSeek's
//! latent attention (MLA) layers, picked by `linear_attn_config`, with
//! DeepSeek-style experts after dense first layers. Read as vLLM 0.34 builds
//! it (`vllm/models/kimi_k3/nvidia/model.py`: `KimiDecoderLayer`, `KimiMoE`,
//! `KimiMLP`; the KDA layer `KimiGatedDeltaNetAttention` in
//! `model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py`; the MLA layer
//! `nvidia/mla.py`) with the defaults of its config class
//! (`transformers_utils/configs/kimi_linear.py::KimiLinearConfig`).
//! Kimi-K3's additions to the same class (a full-rank KDA gate, attention
//! residuals, latent experts, DSA, MLA's output gate) are refused by name.

use serde_json::Value;

use crate::arch::fields::{ConfigError, Fields, MAX_DIM};
use crate::arch::{AttentionKind, Ffn, LayerAttention, LayerSpec, Mla, Moe, NormKind, Recurrent, TextModel};

use super::invalid;

/// Keys of `KimiLinearConfig` that only Kimi-K3 sets, each a module this
/// reader does not count, with what it is.
const K3_ONLY: &[(&str, &str)] = &[
    ("attn_res_block_size", "attention residuals"),
    ("routed_expert_hidden_size", "latent experts"),
    ("dsa_config", "DeepSeek sparse attention on the MLA layers"),
];

pub(super) fn kimi_linear(f: Fields) -> Result<TextModel, ConfigError> {
    for (key, what) in K3_ONLY {
        if f.has(key) {
            return Err(invalid(f, key, format!("Kimi-K3's {what} are not read yet")));
        }
    }
    if f.bool_or("mla_use_output_gate", false)? {
        return Err(invalid(f, "mla_use_output_gate", "Kimi-K3's MLA output gate is not read yet".into()));
    }
    let hidden = f.dim("hidden_size")?;
    let num_layers = f.layers("num_hidden_layers")?;
    let heads = f.dim("num_attention_heads")?;
    let (kda, layers_kda) = linear_attn(f, num_layers)?;
    // `KimiDecoderLayer`: every layer that is not KDA is MLA, whose shape
    // keys it asserts (`assert qk_nope_head_dim is not None`, …).
    let mla = Mla {
        q_lora_rank: f.opt_dim("q_lora_rank", MAX_DIM)?,
        kv_lora_rank: f.dim("kv_lora_rank")?,
        qk_nope_head_dim: f.dim("qk_nope_head_dim")?,
        qk_rope_head_dim: f.dim("qk_rope_head_dim")?,
        v_head_dim: f.dim("v_head_dim")?,
        indexer: None,
    };
    // `KimiMoE`: `num_experts` of `moe_intermediate_size`, a shared MLP of
    // `num_shared_experts` of them, a router with `e_score_correction_bias`
    // (always built); MoE on layers `i >= first_k_dense_replace` with
    // `i % moe_layer_freq == 0`, else `KimiMLP` of `intermediate_size`.
    let moe = match f.opt_dim("num_experts", MAX_DIM)? {
        None => None,
        Some(n) => {
            let expert = f.dim("moe_intermediate_size")?;
            Some(Moe {
                num_experts: n,
                experts_per_token: f.dim("num_experts_per_token")?,
                expert_intermediate_size: expert,
                shared_intermediate_size: expert.saturating_mul(f.count_or("num_shared_experts", 0)?),
                shared_expert_gate: false,
                router_bias: true,
                expert_bias: false,
            })
        }
    };
    let first_dense = f.count_or("first_k_dense_replace", 0)?;
    let freq = f.count_or("moe_layer_freq", 1)?;
    if freq == 0 {
        return Err(invalid(f, "moe_layer_freq", "must be at least 1".into()));
    }
    let layers = layers_kda
        .iter()
        .enumerate()
        .map(|(i, &is_kda)| {
            let i = i as u64;
            let ffn = if moe.is_some() && i >= first_dense && i.is_multiple_of(freq) { Ffn::Moe } else { Ffn::Dense };
            if is_kda { LayerSpec::recurrent(ffn) } else { LayerSpec::new(LayerAttention::Full, ffn) }
        })
        .collect();
    // vLLM's max length: `model_max_length` where the config has it (the Hub
    // config's 1,048,576), else the class's `max_position_embeddings` of 4096
    // (`ModelArchConfigConvertorBase.derive_max_model_len_and_key`).
    let max_len = match f.opt_u64("model_max_length")? {
        Some(n) => n,
        None => f.opt_u64("max_position_embeddings")?.unwrap_or(4096),
    };
    Ok(TextModel {
        hidden_size: hidden,
        vocab_size: f.dim_or("vocab_size", 163_840)?,
        embedding_rows: f.dim_or("vocab_size", 163_840)?,
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
        tie_word_embeddings: f.bool_or("tie_word_embeddings", false)?,
        learned_positions: 0,
        embed_proj_dim: None,
        max_position_embeddings: Some(max_len),
        layers,
        cache_from_tensors: None,
        recurrent: Some(kda),
        extra: Default::default(),
    })
}

/// `linear_attn_config`: the KDA shape (`num_heads`, `head_dim`,
/// `short_conv_kernel_size`, which vLLM indexes without defaults) and, per
/// layer, whether it is KDA (`is_kda_layer`: `i + 1` in `kda_layers`, the
/// lists 1-based); `full_attn_layers` must name exactly the others.
fn linear_attn(f: Fields, num_layers: u64) -> Result<(Recurrent, Vec<bool>), ConfigError> {
    let Some(map) = f.object("linear_attn_config") else {
        return Err(match f.value("linear_attn_config") {
            None | Some(Value::Null) => ConfigError::Missing { field: f.path("linear_attn_config") },
            Some(_) => invalid(f, "linear_attn_config", "expected an object".into()),
        });
    };
    let path = f.path("linear_attn_config");
    let c = Fields::new(map, &path);
    if c.bool_or("use_full_rank_gate", false)? {
        return Err(invalid(c, "use_full_rank_gate", "Kimi-K3's full-rank KDA gate is not read yet".into()));
    }
    let kda = Recurrent::KimiDelta {
        heads: c.dim("num_heads")?,
        head_dim: c.dim("head_dim")?,
        conv_kernel: c.dim("short_conv_kernel_size")?,
    };
    let list = |key: &str| -> Result<Vec<u64>, ConfigError> {
        if !c.has(key) {
            return Err(ConfigError::Missing { field: c.path(key) });
        }
        let items = c.index_list(key)?;
        if let Some(bad) = items.iter().find(|&&n| n == 0 || n > num_layers) {
            return Err(invalid(c, key, format!("layer {bad} is not one of 1 – {num_layers} (the lists are 1-based)")));
        }
        Ok(items)
    };
    let kda_layers = list("kda_layers")?;
    let full = list("full_attn_layers")?;
    let is_kda: Vec<bool> = (1..=num_layers).map(|n| kda_layers.contains(&n)).collect();
    for (n, &k) in (1..=num_layers).zip(&is_kda) {
        if k == full.contains(&n) {
            let why = if k { "is in kda_layers too" } else { "is in neither list" };
            return Err(invalid(c, "full_attn_layers", format!("layer {n} {why}")));
        }
    }
    Ok((kda, is_kda))
}
