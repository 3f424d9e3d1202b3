//! Reading each family's `config.json` into a [`TextModel`], with the defaults
//! of the matching transformers config class where the published configs leave
//! keys out (e.g. `GemmaConfig` ties embeddings, `MistralConfig` slides over
//! 4096 tokens unless `sliding_window` is present).

use serde_json::{Map, Value};

use super::fields::{ConfigError, Fields};
use super::{
    Architecture, AttentionKind, CheckpointDtype, CheckpointQuant, Family, Ffn, LayerAttention, LayerSpec, Mla, Moe,
    NormKind, TextModel, vision,
};

pub(super) fn read(map: &Map<String, Value>) -> Result<Architecture, ConfigError> {
    let root = Fields::new(map, "");
    let model_type = root.opt_str("model_type").unwrap_or_default().to_owned();
    let architectures = root.str_list("architectures")?;
    let mut warnings = Vec::new();
    let family = detect(&model_type, &architectures).unwrap_or_else(|| {
        warnings.push(format!(
            "unknown architecture `{}`: read through the generic fields (hidden_size, \
             num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size, \
             vocab_size) as a Llama-style decoder; the count may be off",
            if model_type.is_empty() { "(no model_type)" } else { &model_type }
        ));
        Family::Generic
    });
    let text_map = root.object("text_config");
    let text_fields = text_map.map_or(root, |m| Fields::new(m, "text_config"));
    let text = read_text(family, text_fields, &mut warnings)?;
    let vision = vision::read(family, root, &text)?;
    if root.has("vision_config") && vision.is_none() {
        warnings.push("`vision_config` of an unsupported kind: the vision tower is not counted".into());
    }
    let checkpoint_dtype = dtype(root).or_else(|| dtype(text_fields));
    let quantization = quantization(root, &mut warnings)?;
    if family == Family::DeepseekV3 && root.count_or("num_nextn_predict_layers", 0)? > 0 {
        warnings.push(
            "the checkpoint also ships a multi-token-prediction layer (`num_nextn_predict_layers`), \
             which transformers and vLLM do not load by default; it is not counted"
                .into(),
        );
    }
    Ok(Architecture { family, model_type, text, vision, checkpoint_dtype, quantization, warnings })
}

fn detect(model_type: &str, architectures: &[&str]) -> Option<Family> {
    let by_type = match model_type {
        "llama" => Some(Family::Llama),
        "mllama" => Some(Family::Mllama),
        "mistral" => Some(Family::Mistral),
        "mixtral" => Some(Family::Mixtral),
        "qwen2" => Some(Family::Qwen2),
        "qwen2_moe" => Some(Family::Qwen2Moe),
        "qwen2_vl" | "qwen2_5_vl" => Some(Family::Qwen2Vl),
        "qwen3" => Some(Family::Qwen3),
        "qwen3_moe" => Some(Family::Qwen3Moe),
        "gemma" => Some(Family::Gemma),
        "gemma2" => Some(Family::Gemma2),
        "gemma3" | "gemma3_text" => Some(Family::Gemma3),
        "phi3" => Some(Family::Phi3),
        "deepseek_v2" => Some(Family::DeepseekV2),
        "deepseek_v3" | "kimi_k2" => Some(Family::DeepseekV3),
        "gpt2" => Some(Family::Gpt2),
        "gpt_neox" => Some(Family::GptNeox),
        "falcon" | "RefinedWeb" | "RefinedWebModel" => Some(Family::Falcon),
        "opt" => Some(Family::Opt),
        _ => None,
    };
    // Some repos leave `model_type` out or use a custom one; the class name
    // in `architectures` still tells the family.
    by_type.or_else(|| {
        architectures.iter().find_map(|a| match *a {
            "LlamaForCausalLM" => Some(Family::Llama),
            "MistralForCausalLM" => Some(Family::Mistral),
            "MixtralForCausalLM" => Some(Family::Mixtral),
            "Qwen2ForCausalLM" => Some(Family::Qwen2),
            "Qwen3ForCausalLM" => Some(Family::Qwen3),
            "DeepseekV3ForCausalLM" => Some(Family::DeepseekV3),
            "FalconForCausalLM" => Some(Family::Falcon),
            _ => None,
        })
    })
}

/// The transformers defaults that matter when a config leaves a key out.
struct Defaults {
    tie: bool,
    head_dim: Option<u64>,
    /// `Some(w)`: a `sliding_window` key that is absent means `w` (Mistral).
    sliding_when_absent: Option<u64>,
}

fn read_text(family: Family, f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    use Family::*;
    match family {
        Gpt2 => gpt2(f),
        GptNeox => gpt_neox(f),
        Falcon => falcon(f),
        Opt => opt(f),
        DeepseekV2 | DeepseekV3 => deepseek(family, f),
        _ => decoder(family, f, warnings),
    }
}

fn defaults(family: Family) -> Defaults {
    use Family::*;
    match family {
        // `GemmaConfig`, `Gemma2Config`, `Gemma3TextConfig`: tie_word_embeddings=True, head_dim=256.
        Gemma | Gemma2 | Gemma3 => Defaults { tie: true, head_dim: Some(256), sliding_when_absent: None },
        // `MistralConfig`: sliding_window=4096.
        Mistral => Defaults { tie: false, head_dim: None, sliding_when_absent: Some(4096) },
        // `Qwen3Config` / `Qwen3MoeConfig`: head_dim=128.
        Qwen3 | Qwen3Moe => Defaults { tie: false, head_dim: Some(128), sliding_when_absent: None },
        // `PretrainedConfig` ties by default, but the generic fallback follows
        // `LlamaConfig` (False), the most common case of unknown decoders.
        _ => Defaults { tie: false, head_dim: None, sliding_when_absent: None },
    }
}

/// Rotary, pre-norm decoders: the Llama/Mistral/Qwen/Gemma/Phi-3 lineage.
fn decoder(family: Family, f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    use Family::*;
    let d = defaults(family);
    let gemma3 = family == Gemma3;
    // `Gemma3TextConfig` defaults, used by the multimodal configs that omit them.
    let hidden = if gemma3 { f.dim_or("hidden_size", 2304)? } else { f.dim("hidden_size")? };
    let num_layers = if gemma3 {
        f.opt_dim("num_hidden_layers", super::fields::MAX_LAYERS)?.unwrap_or(26)
    } else {
        f.layers("num_hidden_layers")?
    };
    let heads = if gemma3 { f.dim_or("num_attention_heads", 8)? } else { f.dim("num_attention_heads")? };
    let kv_default = if gemma3 { 4 } else { heads };
    let kv_heads = f.dim_or("num_key_value_heads", kv_default)?;
    let intermediate = if gemma3 { f.dim_or("intermediate_size", 9216)? } else { f.dim("intermediate_size")? };
    let vocab = if gemma3 { f.dim_or("vocab_size", 262_208)? } else { f.dim("vocab_size")? };
    let head_dim = match (f.opt_dim("head_dim", super::fields::MAX_DIM)?, d.head_dim) {
        (Some(h), _) => h,
        (None, Some(h)) => h,
        (None, None) => per_head(f, hidden, heads)?,
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
        layers,
    })
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
        }),
        Qwen2Moe => Some(Moe {
            num_experts: f.dim_or("num_experts", 60)?,
            experts_per_token: f.dim_or("num_experts_per_tok", 4)?,
            expert_intermediate_size: f.dim_or("moe_intermediate_size", 1408)?,
            shared_intermediate_size: f.count_or("shared_expert_intermediate_size", 5632)?,
            shared_expert_gate: true,
            router_bias: false,
        }),
        Qwen3Moe => Some(Moe {
            num_experts: f.dim_or("num_experts", 128)?,
            experts_per_token: f.dim_or("num_experts_per_tok", 8)?,
            expert_intermediate_size: f.dim_or("moe_intermediate_size", 768)?,
            shared_intermediate_size: 0,
            shared_expert_gate: false,
            router_bias: false,
        }),
        _ => None,
    })
}

/// The window of sliding layers, if this config has any.
fn sliding_window(family: Family, f: Fields, d: &Defaults) -> Result<Option<u64>, ConfigError> {
    use Family::*;
    let window = if f.has("sliding_window") {
        f.opt_dim("sliding_window", super::fields::MAX_DIM)?
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
    let dense = |attention| LayerSpec { attention, ffn: Ffn::Dense };
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
            // Qwen2: layers from `max_window_layers` on use the window.
            Family::Qwen2 | Family::Qwen2Moe | Family::Qwen3 | Family::Qwen3Moe => {
                i >= f.count_or("max_window_layers", 0).unwrap_or(0)
            }
            _ => true,
        }
    };
    Ok((0..num_layers)
        .map(|i| dense(if sliding(i) { LayerAttention::Sliding(w) } else { LayerAttention::Full }))
        .collect())
}

fn deepseek(family: Family, f: Fields) -> Result<TextModel, ConfigError> {
    let hidden = f.dim("hidden_size")?;
    let num_layers = f.layers("num_hidden_layers")?;
    let heads = f.dim("num_attention_heads")?;
    let mla = Mla {
        q_lora_rank: f.opt_dim("q_lora_rank", super::fields::MAX_DIM)?,
        kv_lora_rank: f.dim("kv_lora_rank")?,
        qk_nope_head_dim: f.dim("qk_nope_head_dim")?,
        qk_rope_head_dim: f.dim("qk_rope_head_dim")?,
        v_head_dim: f.dim("v_head_dim")?,
    };
    let n_routed = f.count_or("n_routed_experts", 0)?;
    let first_dense = f.count_or("first_k_dense_replace", 0)?;
    let freq = f.count_or("moe_layer_freq", 1)?.max(1);
    let moe = (n_routed > 0)
        .then(|| -> Result<Moe, ConfigError> {
            let expert = f.dim("moe_intermediate_size")?;
            Ok(Moe {
                num_experts: n_routed,
                experts_per_token: f.dim_or("num_experts_per_tok", 1)?,
                expert_intermediate_size: expert,
                shared_intermediate_size: expert.saturating_mul(f.count_or("n_shared_experts", 0)?),
                shared_expert_gate: false,
                // DeepSeek-V3's `noaux_tc` routing keeps an `e_score_correction_bias`.
                router_bias: family == Family::DeepseekV3 || f.opt_str("topk_method") == Some("noaux_tc"),
            })
        })
        .transpose()?;
    let layers = (0..num_layers)
        .map(|i| LayerSpec {
            attention: LayerAttention::Full,
            ffn: if moe.is_some() && i >= first_dense && i % freq == 0 { Ffn::Moe } else { Ffn::Dense },
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
        tie_word_embeddings: f.bool_or("tie_word_embeddings", false)?,
        learned_positions: 0,
        embed_proj_dim: None,
        max_position_embeddings: f.opt_u64("max_position_embeddings")?,
        layers,
    })
}

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
        layers: (0..c.layers).map(|_| LayerSpec { attention: LayerAttention::Full, ffn: Ffn::Dense }).collect(),
    })
}

fn gpt2(f: Fields) -> Result<TextModel, ConfigError> {
    let hidden = f.dim_any(&["n_embd", "hidden_size"])?;
    let positions = f.dim_any(&["n_positions", "max_position_embeddings"])?;
    let mut m = classic(
        Classic {
            hidden,
            layers: f
                .opt_dim("n_layer", super::fields::MAX_LAYERS)?
                .map_or_else(|| f.layers("num_hidden_layers"), Ok)?,
            heads: f.dim_any(&["n_head", "num_attention_heads"])?,
            kv_heads: f.dim_any(&["n_head", "num_attention_heads"])?,
            // GPT2Config: n_inner=None means 4 × n_embd.
            intermediate: f.opt_dim("n_inner", super::fields::MAX_DIM)?.unwrap_or(hidden.saturating_mul(4)),
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

fn gpt_neox(f: Fields) -> Result<TextModel, ConfigError> {
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

fn falcon(f: Fields) -> Result<TextModel, ConfigError> {
    let hidden = f.dim_any(&["hidden_size", "n_embed"])?;
    let heads = f.dim_any(&["num_attention_heads", "n_head"])?;
    let new_arch = f.bool_or("new_decoder_architecture", false)?;
    let kv_heads = if new_arch {
        f.opt_dim("num_kv_heads", super::fields::MAX_DIM)?
            .or(f.opt_dim("n_head_kv", super::fields::MAX_DIM)?)
            .unwrap_or(heads)
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
            layers: f
                .opt_dim("num_hidden_layers", super::fields::MAX_LAYERS)?
                .map_or_else(|| f.layers("n_layer"), Ok)?,
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

fn opt(f: Fields) -> Result<TextModel, ConfigError> {
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

fn per_head(f: Fields, hidden: u64, heads: u64) -> Result<u64, ConfigError> {
    if !hidden.is_multiple_of(heads) {
        return Err(invalid(f, "num_attention_heads", format!("{heads} heads do not divide hidden size {hidden}")));
    }
    Ok(hidden / heads)
}

fn check_heads(f: Fields, heads: u64, kv_heads: u64) -> Result<(), ConfigError> {
    if kv_heads > heads || !heads.is_multiple_of(kv_heads) {
        return Err(invalid(
            f,
            "num_key_value_heads",
            format!("{kv_heads} key/value heads cannot be shared by {heads} query heads"),
        ));
    }
    Ok(())
}

fn invalid(f: Fields, key: &str, reason: String) -> ConfigError {
    ConfigError::Invalid { field: f.path(key), reason }
}

fn dtype(f: Fields) -> Option<CheckpointDtype> {
    match f.opt_str("torch_dtype").or_else(|| f.opt_str("dtype"))? {
        "float32" => Some(CheckpointDtype::F32),
        "float16" => Some(CheckpointDtype::F16),
        "bfloat16" => Some(CheckpointDtype::Bf16),
        s if s.starts_with("float8") => Some(CheckpointDtype::Fp8),
        _ => None,
    }
}

fn quantization(root: Fields, warnings: &mut Vec<String>) -> Result<Option<CheckpointQuant>, ConfigError> {
    let Some(q) = root.object("quantization_config") else { return Ok(None) };
    let q = Fields::new(q, "quantization_config");
    let bits = |keys: &[&str]| -> Result<u8, ConfigError> {
        for k in keys {
            if let Some(b) = q.opt_u64(k)? {
                return u8::try_from(b)
                    .ok()
                    .filter(|b| (2..=8).contains(b))
                    .ok_or_else(|| invalid(q, k, format!("{b} bits is not supported")));
            }
        }
        Ok(4)
    };
    let group = |keys: &[&str]| -> Result<u32, ConfigError> {
        for k in keys {
            // GPTQ writes -1 for one group per column; count it as a very large group.
            if let Some(serde_json::Value::Number(n)) = q.value(k) {
                return Ok(match n.as_i64() {
                    Some(g) if g > 0 => u32::try_from(g).unwrap_or(u32::MAX),
                    _ => u32::MAX,
                });
            }
        }
        Ok(128)
    };
    let method = q.opt_str("quant_method").unwrap_or_default();
    Ok(match method {
        "gptq" => Some(CheckpointQuant::Gptq { bits: bits(&["bits"])?, group_size: group(&["group_size"])? }),
        "awq" => Some(CheckpointQuant::Awq {
            bits: bits(&["bits", "w_bit"])?,
            group_size: group(&["group_size", "q_group_size"])?,
        }),
        "fp8" | "fbgemm_fp8" => {
            let block = q
                .index_list("weight_block_size")
                .ok()
                .and_then(|b| b.first().copied())
                .and_then(|b| u32::try_from(b).ok());
            Some(CheckpointQuant::Fp8 { block })
        }
        "bitsandbytes" if q.bool_or("load_in_4bit", false)? => Some(CheckpointQuant::BitsAndBytes4 {
            double_quant: q.bool_or("bnb_4bit_use_double_quant", false)?,
            nf4: q.opt_str("bnb_4bit_quant_type") != Some("fp4"),
        }),
        "bitsandbytes" if q.bool_or("load_in_8bit", false)? => Some(CheckpointQuant::BitsAndBytes8),
        "compressed-tensors" => compressed_tensors(q, warnings),
        other => {
            warnings.push(format!("quantization method `{other}` is not modelled: the weight format defaults to the checkpoint dtype; choose a format explicitly"));
            None
        }
    })
}

/// llm-compressor's `compressed-tensors`: read the first weight scheme.
fn compressed_tensors(q: Fields, warnings: &mut Vec<String>) -> Option<CheckpointQuant> {
    let weights = q
        .object("config_groups")
        .and_then(|groups| groups.values().next())
        .and_then(|g| g.get("weights"))
        .and_then(|w| w.as_object());
    let Some(w) = weights else {
        warnings.push("compressed-tensors config without weight scheme: not modelled".into());
        return None;
    };
    let bits = w.get("num_bits").and_then(|b| b.as_u64()).unwrap_or(8);
    let kind = w.get("type").and_then(|t| t.as_str()).unwrap_or("int");
    let group = w.get("group_size").and_then(|g| g.as_u64()).and_then(|g| u32::try_from(g).ok());
    match (kind, bits) {
        ("float", 8) => Some(CheckpointQuant::Fp8 { block: None }),
        ("int", 4 | 8) => Some(CheckpointQuant::Gptq { bits: bits as u8, group_size: group.unwrap_or(u32::MAX) }),
        _ => {
            warnings.push(format!("compressed-tensors {kind}{bits} is not modelled"));
            None
        }
    }
}
