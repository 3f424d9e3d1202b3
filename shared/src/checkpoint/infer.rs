//! An architecture from a checkpoint, for configs no family reader knows
//! and for GGUF files (whose metadata is the config).
//!
//! The tensors give what they can tell for certain: the layers, the width
//! and vocabulary (from the embedding), which layers have experts, and each
//! layer's cache (the output widths of its K and V projections, or of the
//! MLA latent projection). The head width comes from the config
//! (`head_dim`, or `hidden_size / num_attention_heads`) or GGUF metadata
//! (`{arch}.attention.key_length`, `head_count`). Every assumption made is a
//! warning on the architecture.

use serde_json::{Map, Value};

use super::gguf;
use super::layout::ExactLayout;
use super::roles::classify;
use super::{Checkpoint, CheckpointError};
use crate::arch::fields::{MAX_CONTEXT, MAX_DIM, MAX_LAYERS};
use crate::arch::{
    Architecture, AttentionKind, CheckpointDtype, Family, Ffn, Indexer, LayerAttention, LayerCache, LayerSpec, Mla,
    Moe, NormKind, Role, TextModel,
};

/// Facts a config or GGUF metadata may state.
#[derive(Debug, Default)]
struct Facts {
    model_type: String,
    hidden: Option<u64>,
    heads: Option<u64>,
    head_dim: Option<u64>,
    value_dim: Option<u64>,
    vocab: Option<u64>,
    context: Option<u64>,
    experts: Option<u64>,
    experts_per_token: Option<u64>,
    sliding_window: Option<u64>,
    /// Per layer: whether it slides (`layer_types`).
    sliding_layers: Option<Vec<bool>>,
    /// The window is Llama 4's attention chunk (llama.cpp `LLAMA_SWA_TYPE_CHUNKED`).
    chunked: bool,
    dtype: Option<CheckpointDtype>,
    /// GGUF metadata of multi-head latent attention (`deepseek2`: the
    /// latent and rope widths, each head's K and V widths).
    mla: Option<Mla>,
    /// Per layer: whether its DSA indexer is "full" (`glm-dsa`'s
    /// `attention.indexer.types`, or llama.cpp's default for the file,
    /// [`glm_dsa_indexer_full`]).
    indexer_full: Option<Vec<bool>>,
}

/// A read count or width kept within the bound the family readers apply
/// (`arch::fields`): a claimed size is never trusted to size an allocation
/// or a product, and the error names where it was read.
pub(crate) fn bounded(field: impl FnOnce() -> String, value: u64, max: u64) -> Result<u64, CheckpointError> {
    if value > max {
        // Worded as `arch::fields` words a config field over its bound.
        return Err(CheckpointError::Invalid(format!("{}: {value} is implausibly large (limit {max})", field())));
    }
    Ok(value)
}

/// The first of `keys` set (non-zero) in any of `maps`, each named by its
/// path in the config.
fn first_u64(maps: &[(&str, &Map<String, Value>)], keys: &[&str], max: u64) -> Result<Option<u64>, CheckpointError> {
    for (prefix, m) in maps {
        for key in keys {
            if let Some(v) = m.get(*key).and_then(Value::as_u64).filter(|&v| v > 0) {
                let field = || format!("config.json field `{prefix}{key}`");
                return bounded(field, v, max).map(Some);
            }
        }
    }
    Ok(None)
}

fn config_facts(config: &Map<String, Value>) -> Result<Facts, CheckpointError> {
    let mut maps: Vec<(&str, &Map<String, Value>)> = Vec::new();
    for (sub, prefix) in
        [("text_config", "text_config."), ("language_config", "language_config."), ("llm_config", "llm_config.")]
    {
        if let Some(m) = config.get(sub).and_then(Value::as_object) {
            maps.push((prefix, m));
        }
    }
    maps.push(("", config));
    let sliding_layers = maps.iter().find_map(|(_, m)| {
        m.get("layer_types")?.as_array()?.iter().map(|v| v.as_str().map(|s| s.contains("sliding"))).collect()
    });
    let dtype = maps.iter().find_map(|(_, m)| match m.get("torch_dtype").or_else(|| m.get("dtype"))?.as_str()? {
        "float32" => Some(CheckpointDtype::F32),
        "float16" => Some(CheckpointDtype::F16),
        "bfloat16" => Some(CheckpointDtype::Bf16),
        s if s.starts_with("float8") => Some(CheckpointDtype::Fp8),
        _ => None,
    });
    let dim = |keys: &[&str]| first_u64(&maps, keys, MAX_DIM);
    Ok(Facts {
        model_type: config.get("model_type").and_then(Value::as_str).unwrap_or("(no model_type)").to_owned(),
        hidden: dim(&["hidden_size", "d_model", "n_embd"])?,
        heads: dim(&["num_attention_heads", "n_heads", "num_heads", "n_head"])?,
        head_dim: dim(&["head_dim", "attention_head_dim", "kv_channels"])?,
        value_dim: dim(&["v_head_dim"])?,
        vocab: dim(&["vocab_size"])?,
        context: first_u64(&maps, &["max_position_embeddings", "max_seq_len", "n_positions"], MAX_CONTEXT)?,
        experts: dim(&["num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"])?,
        experts_per_token: dim(&["num_experts_per_tok", "moe_top_k", "top_k", "num_experts_per_token"])?,
        sliding_window: first_u64(&maps, &["sliding_window", "attention_window_size"], MAX_CONTEXT)?,
        sliding_layers,
        chunked: false,
        dtype,
        mla: None,
        indexer_full: None,
    })
}

fn gguf_facts(g: &gguf::File) -> Result<Facts, CheckpointError> {
    let arch = g.architecture().unwrap_or("unknown");
    let read = |key: &str, max: u64| gguf_value(g, key, max);
    let tokens = g.get("tokenizer.ggml.tokens").and_then(|v| match v {
        gguf::Value::Array { len, .. } => Some(*len),
        _ => None,
    });
    let tokens = tokens.map(|n| bounded(|| "GGUF metadata `tokenizer.ggml.tokens`".into(), n, MAX_DIM)).transpose()?;
    let layers = read("block_count", MAX_LAYERS)?;
    let sliding_window = read("attention.sliding_window", MAX_CONTEXT)?;
    let (key, value) = (read("attention.key_length", MAX_DIM)?, read("attention.value_length", MAX_DIM)?);
    Ok(Facts {
        mla: gguf_mla(g, key, value)?,
        model_type: format!("gguf:{arch}"),
        hidden: read("embedding_length", MAX_DIM)?,
        heads: read("attention.head_count", MAX_DIM)?,
        head_dim: key,
        value_dim: value,
        vocab: read("vocab_size", MAX_DIM)?.or(tokens),
        context: read("context_length", MAX_CONTEXT)?,
        experts: read("expert_count", MAX_DIM)?,
        experts_per_token: read("expert_used_count", MAX_DIM)?,
        sliding_window,
        sliding_layers: sliding_window.filter(|&w| w > 0).and(layers).and_then(|n| gguf_sliding_layers(g, arch, n)),
        chunked: arch == "llama4",
        dtype: None,
        indexer_full: (arch == "glm-dsa")
            .then(|| match g.get("glm-dsa.attention.indexer.types") {
                Some(gguf::Value::Array { values, .. }) => values.iter().map(gguf::Value::as_bool).collect(),
                _ => None,
            })
            .flatten(),
    })
}

/// Which layers of a `glm-dsa` GGUF have a "full" DSA indexer where its
/// header has no `{arch}.attention.indexer.types`, as llama.cpp's loader
/// takes it (src/models/glm-dsa.cpp `llama_model_glm_dsa::load_arch_hparams`,
/// llama.cpp 0c1e57098 as vendored by llama-cpp-python 0.3.36): GLM-5 and
/// GLM-5.1, whose `n_ctx_train` is below 1,048,576, have one on every layer
/// (`None`: the config's default, all full), GLM-5.2 on the layers of
/// `GLM_5_2_DEFAULT_INDEXER_TYPES`, its config.json's `indexer_types`: the
/// first two, then every fourth from layer 2 up to its 78th; the array's
/// other entries are 0 ("shared").
pub(crate) fn glm_dsa_indexer_full(n_ctx_train: Option<u64>, layers: u64) -> Option<Vec<bool>> {
    /// `is_pre_5_2 = hparams.n_ctx_train < 1048576`.
    const GLM_5_2_CONTEXT: u64 = 1 << 20;
    /// The entries `GLM_5_2_DEFAULT_INDEXER_TYPES` spells out (GLM-5.2's layers).
    const GLM_5_2_LAYERS: u64 = 78;
    let full = |i: u64| i < 2 || (i < GLM_5_2_LAYERS && (i - 2).is_multiple_of(4));
    n_ctx_train.filter(|&n| n >= GLM_5_2_CONTEXT).map(|_| (0..layers).map(full).collect())
}

/// `{arch}.key` of a GGUF, bounded; an array (one value per layer) by its
/// largest.
fn gguf_value(g: &gguf::File, key: &str, max: u64) -> Result<Option<u64>, CheckpointError> {
    let name = format!("{}.{key}", g.architecture().unwrap_or("unknown"));
    let value = match g.get(&name) {
        Some(gguf::Value::Array { values, .. }) => values.iter().filter_map(gguf::Value::as_u64).max(),
        Some(v) => v.as_u64(),
        None => None,
    };
    value.map(|v| bounded(|| format!("GGUF metadata `{name}`"), v, max)).transpose()
}

/// MLA as a GGUF states it (`deepseek2` and `glm-dsa`, llama.cpp's
/// `LLM_ARCH_DEEPSEEK2` / `LLM_ARCH_GLM_DSA` hparams): the latent (`kv_lora_rank`), the rope width
/// (`rope.dimension_count`) and each head's K and V widths, from
/// `key_length_mla`/`value_length_mla` where the GGUF was converted for MLA
/// (its `key_length` is then the latent's), else from `key_length`/
/// `value_length`. `None` without a latent or a head width.
fn gguf_mla(g: &gguf::File, key: Option<u64>, value: Option<u64>) -> Result<Option<Mla>, CheckpointError> {
    let read = |key: &str, max: u64| gguf_value(g, key, max);
    // Only where llama.cpp runs the latent as MLA: `deepseek2` (MLA, or a
    // file converted before it), and any file that states `key_length_mla`.
    // MiniCPM3's and PLM's loaders read the ranks alone (src/llama-model.cpp).
    let mla_reader = g.architecture() == Some("deepseek2") || read("attention.key_length_mla", MAX_DIM)?.is_some();
    let Some(kv_lora_rank) = read("attention.kv_lora_rank", MAX_DIM)?.filter(|&r| r > 0 && mla_reader) else {
        return Ok(None);
    };
    let rope = read("rope.dimension_count", MAX_DIM)?.unwrap_or(0);
    let positive = |v: Option<u64>| v.filter(|&v| v > 0);
    let (Some(k), Some(v)) = (
        positive(read("attention.key_length_mla", MAX_DIM)?).or(positive(key)),
        positive(read("attention.value_length_mla", MAX_DIM)?).or(positive(value)),
    ) else {
        return Ok(None);
    };
    // GLM-5's DSA lightning indexer (`glm-dsa`: convert_hf_to_gguf.py
    // `GlmMoeDsaModel` writes `index_n_heads` and `index_head_dim` as
    // `attention.indexer.head_count` / `.key_length`, which llama.cpp's
    // loader requires; b8211).
    let indexer = match (
        positive(read("attention.indexer.head_count", MAX_DIM)?),
        positive(read("attention.indexer.key_length", MAX_DIM)?),
    ) {
        (Some(heads), Some(head_dim)) => Some(Indexer { heads, head_dim }),
        _ => None,
    };
    Ok(Some(Mla {
        q_lora_rank: positive(read("attention.q_lora_rank", MAX_DIM)?),
        kv_lora_rank,
        qk_nope_head_dim: k.saturating_sub(rope),
        qk_rope_head_dim: rope,
        v_head_dim: v,
        indexer,
    }))
}

/// Whether a GGUF holds MLA weights llama.cpp cannot run as MLA: a latent
/// (`{arch}.attention.kv_lora_rank`) without the per-head widths the split
/// `attn_k_b`/`attn_v_b` are read with (`key_length_mla`,
/// `value_length_mla`; `is_mla` needs both).
pub(crate) fn gguf_without_mla(g: &gguf::File) -> bool {
    let set = |key: &str| g.arch_u64(key).is_some_and(|v| v > 0);
    // `deepseek2` is the architecture llama.cpp loads either way; MiniCPM3's
    // and PLM's loaders never read `key_length_mla` (src/llama-model.cpp).
    g.architecture() == Some("deepseek2")
        && set("attention.kv_lora_rank")
        && !(set("attention.key_length_mla") && set("attention.value_length_mla"))
}

/// llama.cpp's default sliding-window pattern per GGUF architecture: in each
/// period of `n` layers one is full attention, the last (or, with
/// `dense_first`, the first). From `load_swa_pattern(ml, n[, dense_first])`
/// in llama.cpp's `src/models/<arch>.cpp`, as vendored by llama-cpp-python
/// 0.3.36; Phi-3's window is switched off there (`set_swa_pattern(1)`).
const SWA_PATTERNS: &[(&str, u64, bool)] = &[
    ("gemma2", 2, false),
    ("gemma3", 6, false),
    ("gemma3n", 5, false),
    ("gemma-embedding", 6, false),
    ("gpt-oss", 2, false),
    ("cohere2", 4, false),
    ("cohere2moe", 4, true),
    ("exaone4", 4, false),
    ("exaone-moe", 4, false),
    ("olmo2", 4, false),
    ("llama4", 4, false),
    ("plamo3", 8, false),
    ("afmoe", 4, false),
    ("smallthinker", 4, true),
    ("laguna", 4, true),
    ("mellum", 4, false),
    ("muse-glimmer", 4, false),
];

/// Which layers slide in a GGUF: its own `<arch>.attention.sliding_window_pattern`
/// (a bool per layer, or a period), else the architecture's default, as
/// `llama_model_base::load_swa_pattern` and `llama_hparams::set_swa_pattern`
/// (`llama-hparams.cpp`) decide, for `layers` blocks (bounded by the
/// caller); `None` without a known pattern.
fn gguf_sliding_layers(g: &gguf::File, arch: &str, layers: u64) -> Option<Vec<bool>> {
    let key = format!("{arch}.attention.sliding_window_pattern");
    let default = SWA_PATTERNS.iter().find(|(a, _, _)| *a == arch).map(|&(_, n, dense_first)| (n, dense_first));
    let (period, dense_first) = match g.get(&key) {
        Some(gguf::Value::Array { values, .. }) => {
            let flags: Option<Vec<bool>> = values.iter().map(gguf::Value::as_bool).collect();
            return flags.filter(|f| f.len() as u64 == layers);
        }
        Some(v) => (v.as_u64()?, default.is_some_and(|(_, d)| d)),
        None => default?,
    };
    Some(
        (0..layers)
            .map(|il| match (period, dense_first) {
                (0, _) => true,
                (n, true) => il % n != 0,
                (n, false) => il % n < n - 1,
            })
            .collect(),
    )
}

/// Output width of a `[out, in]` weight (GPTQ's `[in/pack, out]` qweight: the last dim).
fn out_width(name: &str, shape: &[u64]) -> u64 {
    match shape {
        [out, _] if !name.ends_with(".qweight") => *out,
        [_, out] => *out,
        _ => 0,
    }
}

/// Per-layer attention widths found in the tensors.
#[derive(Debug, Clone, Copy, Default)]
struct Widths {
    k: u64,
    v: u64,
    qkv: u64,
    latent: u64,
}

/// The checkpoint's architecture: a family reader's, when the config is of a
/// known family; otherwise one built from the tensors (and the config or
/// GGUF metadata for head widths), flagged [`Family::Generic`].
pub fn architecture(
    config: Option<&str>,
    checkpoint: &Checkpoint,
    layout: &ExactLayout,
) -> Result<Architecture, CheckpointError> {
    let map = match config {
        Some(text) => {
            if let Ok(a) = Architecture::from_config_json(text)
                && a.family != Family::Generic
            {
                return Ok(a);
            }
            let value: Value = serde_json::from_str(text).map_err(|e| CheckpointError::Json(e.to_string()))?;
            Some(
                value
                    .as_object()
                    .cloned()
                    .ok_or_else(|| CheckpointError::Invalid("config.json is not an object".into()))?,
            )
        }
        None => None,
    };
    let facts = match (&map, &checkpoint.gguf) {
        (Some(m), _) => config_facts(m)?,
        (None, Some(g)) => gguf_facts(g)?,
        (None, None) => Facts { model_type: "(no config)".into(), ..Facts::default() },
    };
    from_tensors(facts, checkpoint, layout)
}

fn from_tensors(f: Facts, checkpoint: &Checkpoint, layout: &ExactLayout) -> Result<Architecture, CheckpointError> {
    let n = layout.num_layers as usize;
    if n == 0 {
        return Err(CheckpointError::Invalid("no decoder layers found among the tensor names".into()));
    }
    bounded(|| "the layers the tensor names count".into(), u64::from(layout.num_layers), MAX_LAYERS)?;
    let mut warnings = vec![format!(
        "architecture `{}` has no family reader: weights are the checkpoint's exact bytes; the KV cache is read \
         from each layer's attention tensors",
        f.model_type
    )];
    let mut widths = vec![Widths::default(); n];
    let mut embedding: Option<(u64, u64)> = None;
    let mut expert_ids: u64 = 0;
    for t in &checkpoint.tensors {
        let c = classify(&t.name, Some(layout.num_layers));
        if c.quant.is_some() {
            continue;
        }
        let width = |v: u64| bounded(|| format!("tensor `{}`'s shape", t.name), v, MAX_DIM);
        if c.role == Role::Embedding && t.shape.len() == 2 && embedding.is_none() {
            embedding = Some((width(t.shape[0])?, width(t.shape[1])?));
        }
        if matches!(c.role, Role::ExpertUp | Role::ExpertDown) {
            let from_name = t
                .name
                .split('.')
                .collect::<Vec<_>>()
                .windows(2)
                .find_map(|w| if w[0] == "experts" { w[1].parse::<u64>().ok().map(|i| i + 1) } else { None });
            let from_shape = (t.shape.len() == 3).then(|| t.shape[0]);
            let experts = from_name.or(from_shape).unwrap_or(0);
            expert_ids =
                expert_ids.max(bounded(|| format!("the experts tensor `{}` counts", t.name), experts, MAX_DIM)?);
        }
        let Some(w) = c.layer.and_then(|l| widths.get_mut(l as usize)) else { continue };
        let module = t.name.rsplit('.').nth(1).unwrap_or("");
        let out = out_width(&t.name, &t.shape);
        match c.role {
            Role::AttnK if t.name.ends_with("weight") => w.k = w.k.max(width(out)?),
            Role::AttnV if t.name.ends_with("weight") => w.v = w.v.max(width(out)?),
            Role::AttnQkv if t.name.ends_with("weight") => w.qkv = w.qkv.max(width(out)?),
            Role::MlaDown if module.contains("kv_a") => w.latent = w.latent.max(width(out)?),
            _ => {}
        }
    }
    let (rows, width) = embedding.unwrap_or((0, 0));
    let hidden = f.hidden.or((width > 0).then_some(width)).ok_or_else(|| {
        CheckpointError::Invalid(
            "the hidden size is neither in the config nor readable from an embedding tensor".into(),
        )
    })?;
    let vocab = f.vocab.or((rows > 0).then_some(rows)).unwrap_or(0);
    let heads = f.heads.unwrap_or(0);
    let head_dim = match (f.head_dim, heads) {
        (Some(d), _) => d,
        (None, h) if h > 0 && hidden.is_multiple_of(h) => hidden / h,
        _ => 0,
    };
    let value_dim = f.value_dim.unwrap_or(head_dim);
    // A latent cache read from the tensors is MLA's: the engines' own rules
    // for it (llama.cpp's by build and GGUF) need the widths behind it.
    let mla = f.mla.filter(|_| widths.iter().any(|w| w.latent > 0));
    let (head_dim, value_dim) =
        mla.map_or((head_dim, value_dim), |m| (m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim), m.v_head_dim));
    let mut cache = Vec::with_capacity(n);
    let mut no_cache = Vec::new();
    for (i, w) in widths.iter().enumerate() {
        let c = if w.latent > 0 {
            LayerCache { kv_heads: 1, key_dim: w.latent, value_dim: 0 }
        } else if head_dim == 0 && (w.k > 0 || w.qkv > 0) {
            return Err(CheckpointError::Invalid(format!(
                "layer {i} has attention tensors, but the head width is unknown: give a config.json with \
                 `head_dim` or `num_attention_heads`"
            )));
        } else if w.k > 0 {
            let v = if w.v > 0 { w.v } else { w.k };
            LayerCache { kv_heads: w.k / head_dim, key_dim: head_dim, value_dim: v / (w.k / head_dim).max(1) }
        } else if w.qkv > 0 {
            let q = heads.saturating_mul(head_dim);
            let kv = w.qkv.saturating_sub(q) / 2;
            LayerCache { kv_heads: kv / head_dim, key_dim: head_dim, value_dim: head_dim }
        } else {
            no_cache.push(i);
            LayerCache { kv_heads: 0, key_dim: 0, value_dim: 0 }
        };
        cache.push(c);
    }
    if !no_cache.is_empty() {
        warnings.push(format!(
            "{} of {n} layers have no K/V projection (recurrent or linear-attention layers): they get no \
             per-token cache, and their fixed per-sequence state is not counted",
            no_cache.len()
        ));
    }
    // A layer whose DSA indexer is "shared" keeps no indexer keys
    // (llama.cpp's `filter_lid`, `cache::layers`). A header's list of
    // another length than the layers is not taken: llama.cpp's
    // `get_key_or_arr` refuses to load it ("wrong array length").
    let indexer_full = match &f.indexer_full {
        Some(full) => Some(full.clone()).filter(|full| full.len() == n),
        None if f.model_type == "gguf:glm-dsa" => glm_dsa_indexer_full(f.context, n as u64),
        None => None,
    };
    let layers: Vec<LayerSpec> = (0..n)
        .map(|i| {
            let sliding = f.sliding_layers.as_ref().and_then(|s| s.get(i).copied()).unwrap_or(false);
            let attention = match (sliding, f.sliding_window) {
                (true, Some(w)) if f.chunked => LayerAttention::Chunked(w),
                (true, Some(w)) => LayerAttention::Sliding(w),
                _ => LayerAttention::Full,
            };
            let moe = layout
                .groups
                .iter()
                .any(|g| g.layer == Some(i as u32) && matches!(g.role, Role::ExpertUp | Role::ExpertDown));
            let mut l = LayerSpec::new(attention, if moe { Ffn::Moe } else { Ffn::Dense });
            l.shape.indexer_shared = indexer_full.as_ref().is_some_and(|full| !full[i]);
            l
        })
        .collect();
    if f.sliding_window.is_some() && f.sliding_layers.is_none() {
        warnings.push(
            "a sliding window is set but not which layers use it: every layer is counted as full attention \
             (an upper bound on the cache)"
                .into(),
        );
    }
    let has_experts = layers.iter().any(|l| l.ffn == Ffn::Moe);
    let moe = has_experts.then(|| {
        let num_experts = f.experts.unwrap_or(expert_ids).max(1);
        let per_token = f.experts_per_token.unwrap_or_else(|| {
            warnings.push(
                "the number of experts per token is unknown: every expert is counted as active for speed bounds".into(),
            );
            num_experts
        });
        Moe {
            num_experts,
            experts_per_token: per_token.min(num_experts),
            expert_intermediate_size: 0,
            shared_intermediate_size: 0,
            shared_expert_gate: false,
            router_bias: false,
            expert_bias: false,
        }
    });
    let common_kv = most_common(cache.iter().map(|c| c.kv_heads).filter(|&h| h > 0)).unwrap_or(1);
    let dtype = f.dtype.or_else(|| dominant_dtype(layout));
    let text = TextModel {
        hidden_size: hidden,
        vocab_size: vocab,
        embedding_rows: rows.max(vocab),
        num_heads: heads.max(common_kv),
        num_kv_heads: common_kv,
        head_dim: head_dim.max(1),
        v_head_dim: value_dim.max(1),
        intermediate_size: 0,
        attention: mla.map_or(AttentionKind::Standard { qkv_bias: false, o_bias: false }, AttentionKind::Mla),
        mlp_gated: true,
        mlp_bias: false,
        norm: NormKind::Rms,
        norms_per_layer: 2,
        qk_norm: false,
        final_norm: true,
        moe,
        tie_word_embeddings: layout.bytes_of(Role::LmHead) == 0,
        learned_positions: 0,
        embed_proj_dim: None,
        max_position_embeddings: f.context,
        layers,
        recurrent: None,
        extra: Default::default(),
        cache_from_tensors: Some(cache),
    };
    Ok(Architecture {
        family: Family::Generic,
        model_type: f.model_type,
        text,
        vision: None,
        multimodal: false,
        towers_unread: false,
        checkpoint_dtype: dtype,
        quantization: None,
        quant_kept: Default::default(),
        kv_cache_fp8: false,
        warnings,
    })
}

fn most_common(values: impl Iterator<Item = u64>) -> Option<u64> {
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for v in values {
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, c)) => *c += 1,
            None => counts.push((v, 1)),
        }
    }
    counts.into_iter().max_by_key(|&(v, c)| (c, v)).map(|(v, _)| v)
}

/// The dtype holding most bytes, as a checkpoint dtype.
fn dominant_dtype(layout: &ExactLayout) -> Option<CheckpointDtype> {
    layout.dtypes.first().and_then(|d| match d.dtype.as_str() {
        "BF16" => Some(CheckpointDtype::Bf16),
        "F16" => Some(CheckpointDtype::F16),
        "F32" => Some(CheckpointDtype::F32),
        "F8_E4M3" => Some(CheckpointDtype::Fp8),
        _ => None,
    })
}
