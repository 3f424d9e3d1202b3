//! Classic LayerNorm decoders with biases: GPT-2, GPT-NeoX/Pythia, Falcon, OPT, Phi-2.

use crate::arch::fields::{ConfigError, Fields, MAX_DIM, MAX_LAYERS};
use crate::arch::{AttentionKind, Ffn, LayerAttention, LayerSpec, NormKind, TextModel};

use super::{check_heads, per_head};

/// A plain (non-gated), LayerNorm, biased decoder: GPT-2, GPT-NeoX, Falcon, OPT.
struct Classic {
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    intermediate: u64,
    vocab: u64,
    bias: bool,
    norms_per_layer: u64,
    tie: bool,
    learned_positions: u64,
}

fn classic(c: Classic, f: Fields) -> Result<TextModel, ConfigError> {
    check_heads(f, c.heads, c.kv_heads)?;
    let head_dim = per_head(f, c.hidden, c.heads)?;
    Ok(TextModel {
        hidden_size: c.hidden,
        vocab_size: c.vocab,
        embedding_rows: c.vocab,
        num_heads: c.heads,
        num_kv_heads: c.kv_heads,
        head_dim,
        v_head_dim: head_dim,
        intermediate_size: c.intermediate,
        attention: AttentionKind::Standard { qkv_bias: c.bias, o_bias: c.bias },
        mlp_gated: false,
        mlp_bias: c.bias,
        norm: NormKind::Layer,
        norms_per_layer: c.norms_per_layer,
        qk_norm: false,
        final_norm: true,
        moe: None,
        tie_word_embeddings: c.tie,
        learned_positions: c.learned_positions,
        embed_proj_dim: None,
        max_position_embeddings: None,
        layers: (0..c.layers).map(|_| LayerSpec::new(LayerAttention::Full, Ffn::Dense)).collect(),
        cache_from_tensors: None,
        recurrent: None,
        extra: Default::default(),
    })
}

pub(super) fn gpt2(f: Fields) -> Result<TextModel, ConfigError> {
    let hidden = f.dim_any(&["n_embd", "hidden_size"])?;
    let positions = f.dim_any(&["n_positions", "max_position_embeddings"])?;
    let mut m = classic(
        Classic {
            hidden,
            layers: f.opt_dim("n_layer", MAX_LAYERS)?.map_or_else(|| f.layers("num_hidden_layers"), Ok)?,
            heads: f.dim_any(&["n_head", "num_attention_heads"])?,
            kv_heads: f.dim_any(&["n_head", "num_attention_heads"])?,
            // GPT2Config: n_inner=None means 4 × n_embd.
            intermediate: f.opt_dim("n_inner", MAX_DIM)?.unwrap_or(hidden.saturating_mul(4)),
            vocab: f.dim_or("vocab_size", 50_257)?,
            bias: true,
            norms_per_layer: 2,
            tie: f.bool_or("tie_word_embeddings", true)?,
            learned_positions: positions,
        },
        f,
    )?;
    m.max_position_embeddings = Some(positions);
    Ok(m)
}

pub(super) fn gpt_neox(f: Fields) -> Result<TextModel, ConfigError> {
    let heads = f.dim("num_attention_heads")?;
    let mut m = classic(
        Classic {
            hidden: f.dim("hidden_size")?,
            layers: f.layers("num_hidden_layers")?,
            heads,
            kv_heads: heads,
            intermediate: f.dim("intermediate_size")?,
            vocab: f.dim("vocab_size")?,
            bias: f.bool_or("attention_bias", true)?,
            norms_per_layer: 2,
            tie: f.bool_or("tie_word_embeddings", false)?,
            learned_positions: 0,
        },
        f,
    )?;
    m.mlp_bias = true; // GPTNeoXMLP always has biases
    m.max_position_embeddings = f.opt_u64("max_position_embeddings")?;
    Ok(m)
}

/// Phi-1, 1.5 and 2 (`PhiConfig`, transformers 4.37 `modeling_phi.py`; vLLM
/// 0.19.1 `models/phi.py`): one biased LayerNorm per layer feeding attention
/// and an ungated GELU MLP side by side, q/k/v/dense and fc1/fc2 with biases,
/// a final LayerNorm, an untied head (its bias, `vocab_size` values, is not
/// counted). Partial rotary (`partial_rotary_factor`) changes no shapes.
pub(super) fn phi(f: Fields) -> Result<TextModel, ConfigError> {
    let heads = f.dim("num_attention_heads")?;
    let mut m = classic(
        Classic {
            hidden: f.dim("hidden_size")?,
            layers: f.layers("num_hidden_layers")?,
            heads,
            kv_heads: f.dim_or("num_key_value_heads", heads)?,
            intermediate: f.dim("intermediate_size")?,
            vocab: f.dim("vocab_size")?,
            bias: true,
            norms_per_layer: 1,
            tie: f.bool_or("tie_word_embeddings", false)?,
            learned_positions: 0,
        },
        f,
    )?;
    m.max_position_embeddings = f.opt_u64("max_position_embeddings")?;
    Ok(m)
}

pub(super) fn falcon(f: Fields) -> Result<TextModel, ConfigError> {
    let hidden = f.dim_any(&["hidden_size", "n_embed"])?;
    let heads = f.dim_any(&["num_attention_heads", "n_head"])?;
    let new_arch = f.bool_or("new_decoder_architecture", false)?;
    let kv_heads = if new_arch {
        f.opt_dim("num_kv_heads", MAX_DIM)?.or(f.opt_dim("n_head_kv", MAX_DIM)?).unwrap_or(heads)
    } else if f.bool_or("multi_query", true)? {
        1
    } else {
        heads
    };
    // FalconDecoderLayer: the new architecture has `ln_attn` and `ln_mlp`
    // (or one when `num_ln_in_parallel_attn` is 1); the old one with parallel
    // attention has a single `input_layernorm`, otherwise two.
    let norms = if new_arch {
        f.dim_or("num_ln_in_parallel_attn", 2)?
    } else if f.bool_or("parallel_attn", true)? {
        1
    } else {
        2
    };
    let mut m = classic(
        Classic {
            hidden,
            layers: f.opt_dim("num_hidden_layers", MAX_LAYERS)?.map_or_else(|| f.layers("n_layer"), Ok)?,
            heads,
            kv_heads,
            intermediate: f.dim_or("ffn_hidden_size", hidden.saturating_mul(4))?,
            vocab: f.dim_or("vocab_size", 65_024)?,
            bias: f.bool_or("bias", false)?,
            norms_per_layer: norms,
            tie: f.bool_or("tie_word_embeddings", true)?,
            learned_positions: 0,
        },
        f,
    )?;
    m.max_position_embeddings = f.opt_u64("max_position_embeddings")?;
    Ok(m)
}

pub(super) fn opt(f: Fields) -> Result<TextModel, ConfigError> {
    let hidden = f.dim("hidden_size")?;
    let heads = f.dim("num_attention_heads")?;
    let positions = f.dim_or("max_position_embeddings", 2048)?;
    let mut m = classic(
        Classic {
            hidden,
            layers: f.layers("num_hidden_layers")?,
            heads,
            kv_heads: heads,
            intermediate: f.dim("ffn_dim")?,
            vocab: f.dim("vocab_size")?,
            bias: f.bool_or("enable_bias", true)?,
            norms_per_layer: 2,
            tie: f.bool_or("tie_word_embeddings", true)?,
            // OPTLearnedPositionalEmbedding keeps 2 extra rows (offset 2).
            learned_positions: positions.saturating_add(2),
        },
        f,
    )?;
    let proj = f.dim_or("word_embed_proj_dim", hidden)?;
    m.embed_proj_dim = (proj != hidden).then_some(proj);
    m.final_norm = f.bool_or("do_layer_norm_before", true)? && !f.bool_or("_remove_final_layer_norm", false)?;
    m.max_position_embeddings = Some(positions);
    Ok(m)
}

/// `BloomConfig`: ALiBi (no position table), a LayerNorm after the word
/// embeddings, fused biased QKV, a 4 × hidden MLP, tied head. The class's
/// defaults are a toy (64 wide, 2 layers); `n_embed` is the old name of
/// `hidden_size`.
pub(super) fn bloom(f: Fields) -> Result<TextModel, ConfigError> {
    let hidden = f.opt_dim("hidden_size", MAX_DIM)?.or(f.opt_dim("n_embed", MAX_DIM)?).unwrap_or(64);
    let heads = f.opt_dim("n_head", MAX_DIM)?.or(f.opt_dim("num_attention_heads", MAX_DIM)?).unwrap_or(8);
    let layers = f.opt_dim("n_layer", MAX_LAYERS)?.or(f.opt_dim("num_hidden_layers", MAX_LAYERS)?).unwrap_or(2);
    let mut m = classic(
        Classic {
            hidden,
            layers,
            heads,
            kv_heads: heads,
            intermediate: hidden.saturating_mul(4),
            vocab: f.dim_or("vocab_size", 250_880)?,
            bias: true,
            norms_per_layer: 2,
            tie: f.bool_or("tie_word_embeddings", true)?,
            learned_positions: 0,
        },
        f,
    )?;
    m.extra.embedding_norm = true;
    Ok(m)
}
