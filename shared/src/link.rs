//! Share links: every input of the calculator page as a short, readable URL
//! query (`?model=llama-3.1-8b&w=nf4&p=2048&n=512&c=1&gpu=rtx-4090&g=1`), and
//! back. The keys are a stable contract documented in `docs/links.md`.
//!
//! Decoding never fails: unknown keys and bad values are skipped, each with a
//! notice the page shows, and the rest of the link still applies. A pasted
//! `config.json` travels as base64url of its minified JSON, trimmed to the
//! fields the memory model reads ([`compact_config`]). A pasted
//! out-of-memory error travels only when the person asks (`oom=`), trimmed by
//! [`compact_oom`].

use serde_json::{Map, Value};

use crate::arch::{Architecture, ConfigError};
use crate::catalog::{gpu, model_preset};
use crate::engines::{Engine, EngineKind, llamacpp, transformers, vllm};
use crate::estimate::{MAX_CONCURRENCY, MAX_GPUS, MAX_TOKENS};
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::units::{GB, GIB, MIB, UnitSystem, parse_size};

/// The preset the page opens with.
pub const DEFAULT_MODEL: &str = "llama-3.1-8b";
/// The GPU the page opens with (the CLI's default too).
pub const DEFAULT_GPU: &str = "rtx-4090";
/// The Hugging Face hub; `hub=` replaces it (mirrors, tests).
pub const DEFAULT_HUB: &str = "https://huggingface.co";
/// Bounds of a custom parameter count (`params=`).
pub const MIN_PARAMS: u64 = 1_000_000;
pub const MAX_PARAMS: u64 = 10_000_000_000_000;
/// Longest accepted Hugging Face repository id.
const MAX_REPO_ID: usize = 96;
/// Longest accepted `cfg=` value (base64 characters).
const MAX_CFG: usize = 64 * 1024;
/// Longest pasted error `oom=` carries (characters of text, before encoding).
pub const MAX_OOM: usize = 8 * 1024;

/// Where the model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// `model=`: a preset id from the catalog.
    Preset(String),
    /// `cfg=`: a pasted `config.json` (its compact JSON text).
    Config(String),
    /// `hf=`: a Hugging Face repository id, fetched by the page.
    Hub(String),
    /// `params=`: only a parameter count is known.
    Params(u64),
}

/// Which GPU.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GpuChoice {
    /// `gpu=`: a catalog id.
    Catalog(String),
    /// `mem=`: a custom memory size in bytes.
    Custom(u64),
}

/// Every input of the page.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkState {
    pub model: ModelSource,
    /// `st=`: exact checkpoint bytes (from a safetensors index), for `cfg=` models.
    pub checkpoint_bytes: Option<u64>,
    /// `w=`: `None` is the checkpoint's own format.
    pub weights: Option<WeightFormat>,
    /// `kv=`: `None` is the activation dtype.
    pub kv_dtype: Option<KvDtype>,
    pub prompt_tokens: u64,
    pub max_new_tokens: u64,
    pub concurrency: u64,
    pub gpu: GpuChoice,
    pub gpu_count: u64,
    /// `mix=`: more GPUs after the `gpu_count` of `gpu` (mixed GPUs, in order).
    pub more_gpus: Vec<GpuChoice>,
    /// `tp=`: tensor-parallel degree; the pipeline stages are the GPUs ÷ `tp`.
    pub tp: u64,
    /// `e=` and the engine's knob keys (`gmu=`, `mml=`, `ngl=`, …).
    pub engine: Engine,
    /// `oom=`: a pasted out-of-memory error, only when the person shares it.
    pub oom: Option<String>,
    /// `u=gb` for decimal units.
    pub units: UnitSystem,
    /// `hub=`: a hub mirror, without a trailing slash.
    pub hub: Option<String>,
}

impl Default for LinkState {
    fn default() -> Self {
        Self {
            model: ModelSource::Preset(DEFAULT_MODEL.into()),
            checkpoint_bytes: None,
            weights: None,
            kv_dtype: None,
            prompt_tokens: 2048,
            max_new_tokens: 512,
            concurrency: 1,
            gpu: GpuChoice::Catalog(DEFAULT_GPU.into()),
            gpu_count: 1,
            more_gpus: Vec::new(),
            tp: 1,
            engine: Engine::default(),
            oom: None,
            units: UnitSystem::Binary,
            hub: None,
        }
    }
}

impl LinkState {
    /// The hub base URL in effect.
    pub fn hub_base(&self) -> &str {
        self.hub.as_deref().unwrap_or(DEFAULT_HUB)
    }

    /// Every GPU of the plan, in order: `gpu_count` × `gpu`, then `more_gpus`.
    pub fn gpu_choices(&self) -> Vec<GpuChoice> {
        let mut all = vec![self.gpu.clone(); usize::try_from(self.gpu_count).unwrap_or(1)];
        all.extend(self.more_gpus.iter().cloned());
        all
    }

    /// How many GPUs the plan has.
    pub fn total_gpus(&self) -> u64 {
        self.gpu_count.saturating_add(self.more_gpus.len() as u64)
    }
}

/// A decoded link: the state and what was ignored on the way.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decoded {
    pub state: LinkState,
    pub notices: Vec<String>,
}

/// The query string (without `?`) for a state. Keys with their default value
/// that have no natural place in a plain link (`st`, `w`, `kv`, `u`, `hub`)
/// are left out; the workload and GPU keys are always written.
pub fn encode(s: &LinkState) -> String {
    let mut pairs: Vec<(&str, String)> = Vec::with_capacity(12);
    match &s.model {
        ModelSource::Preset(id) => pairs.push(("model", id.clone())),
        ModelSource::Config(json) => pairs.push(("cfg", base64url_encode(json.as_bytes()))),
        ModelSource::Hub(id) => pairs.push(("hf", id.clone())),
        ModelSource::Params(n) => pairs.push(("params", n.to_string())),
    }
    if let Some(b) = s.checkpoint_bytes {
        pairs.push(("st", b.to_string()));
    }
    if let Some(w) = s.weights {
        pairs.push(("w", w.id()));
    }
    if let Some(kv) = s.kv_dtype {
        pairs.push(("kv", kv.id().into()));
    }
    pairs.push(("p", s.prompt_tokens.to_string()));
    pairs.push(("n", s.max_new_tokens.to_string()));
    pairs.push(("c", s.concurrency.to_string()));
    match &s.gpu {
        GpuChoice::Catalog(id) => pairs.push(("gpu", id.clone())),
        GpuChoice::Custom(bytes) => pairs.push(("mem", size_text(*bytes))),
    }
    pairs.push(("g", s.gpu_count.to_string()));
    if !s.more_gpus.is_empty() {
        let list: Vec<String> = s.more_gpus.iter().map(choice_text).collect();
        pairs.push(("mix", list.join(",")));
    }
    if s.tp != 1 {
        pairs.push(("tp", s.tp.to_string()));
    }
    encode_engine(&s.engine, &mut pairs);
    if s.units == UnitSystem::Decimal {
        pairs.push(("u", "gb".into()));
    }
    if let Some(hub) = &s.hub {
        pairs.push(("hub", hub.clone()));
    }
    let mut out = String::new();
    for (k, v) in pairs {
        if !out.is_empty() {
            out.push('&');
        }
        out.push_str(k);
        out.push('=');
        out.push_str(&percent_encode(&v));
    }
    if let Some(text) = &s.oom {
        // Spaces as `+`: the common case in error text, one character instead of three.
        out.push_str("&oom=");
        out.push_str(&percent_encode(text).replace("%20", "+"));
    }
    out
}

fn choice_text(c: &GpuChoice) -> String {
    match c {
        GpuChoice::Catalog(id) => id.clone(),
        GpuChoice::Custom(bytes) => size_text(*bytes),
    }
}

/// The engine key and the knobs that differ from their default.
fn encode_engine(e: &Engine, pairs: &mut Vec<(&'static str, String)>) {
    let mut opt = |k: &'static str, v: Option<String>| {
        if let Some(v) = v {
            pairs.push((k, v));
        }
    };
    let num = |v: Option<u64>| v.map(|n| n.to_string());
    let frac = |v: Option<f64>| v.map(|f| f.to_string());
    if e.kind() != EngineKind::Transformers {
        opt("e", Some(e.kind().id().into()));
    }
    match *e {
        Engine::Transformers(o) => {
            opt("attn", (o.attention == transformers::AttentionImpl::Eager).then(|| "eager".into()));
            opt("logits", (o.logits == transformers::LogitsMode::AllPositions).then(|| "all".into()));
        }
        Engine::Vllm(o) => {
            opt("vllm", (o.version != vllm::Version::default()).then(|| o.version.id().into()));
            opt("gmu", frac(o.gpu_memory_utilization));
            opt("mml", num(o.max_model_len));
            opt("mbt", num(o.max_num_batched_tokens));
            opt("mns", num(o.max_num_seqs));
            opt("bs", (o.block_size != vllm::DEFAULT_BLOCK_SIZE).then(|| o.block_size.to_string()));
        }
        Engine::Sglang(o) => {
            opt("mfs", frac(o.mem_fraction_static));
            opt("cl", num(o.context_length));
            opt("mbt", num(o.chunked_prefill_size));
        }
        Engine::LlamaCpp(o) => {
            opt("nctx", num(o.n_ctx));
            opt("ngl", num(o.n_gpu_layers));
            opt("np", num(o.parallel));
            opt("fa", (o.flash_attention == llamacpp::FlashAttention::Off).then(|| "off".into()));
        }
    }
}

/// Keys that tune one engine, read once the engine is known.
const KNOB_KEYS: &[&str] =
    &["attn", "logits", "vllm", "gmu", "mml", "mbt", "mns", "bs", "mfs", "cl", "nctx", "ngl", "np", "fa"];

/// Applies one knob to the engine; `Err` says why it does not apply.
fn apply_knob(e: &mut Engine, key: &str, value: &str) -> Result<(), String> {
    let tokens = |v: &str| parse_u64(v, 1, MAX_TOKENS).map(Some);
    let lower = value.to_ascii_lowercase();
    match (e, key) {
        (Engine::Transformers(o), "attn") => {
            o.attention = match lower.as_str() {
                "sdpa" => transformers::AttentionImpl::Sdpa,
                "eager" => transformers::AttentionImpl::Eager,
                _ => return Err("use sdpa or eager".into()),
            }
        }
        (Engine::Transformers(o), "logits") => {
            o.logits = match lower.as_str() {
                "last" => transformers::LogitsMode::LastToken,
                "all" => transformers::LogitsMode::AllPositions,
                _ => return Err("use last or all".into()),
            }
        }
        (Engine::Vllm(o), "vllm") => o.version = vllm::Version::parse(value).ok_or("use v0, v1 or latest")?,
        (Engine::Vllm(o), "gmu") => o.gpu_memory_utilization = Some(parse_fraction(value)?),
        (Engine::Vllm(o), "mml") => o.max_model_len = tokens(value)?,
        (Engine::Vllm(o), "mbt") => o.max_num_batched_tokens = tokens(value)?,
        (Engine::Vllm(o), "mns") => o.max_num_seqs = Some(parse_u64(value, 1, MAX_CONCURRENCY)?),
        (Engine::Vllm(o), "bs") => o.block_size = parse_u64(value, 1, 1024)?,
        (Engine::Sglang(o), "mfs") => o.mem_fraction_static = Some(parse_fraction(value)?),
        (Engine::Sglang(o), "cl") => o.context_length = tokens(value)?,
        (Engine::Sglang(o), "mbt") => o.chunked_prefill_size = tokens(value)?,
        (Engine::LlamaCpp(o), "nctx") => o.n_ctx = tokens(value)?,
        (Engine::LlamaCpp(o), "ngl") => o.n_gpu_layers = Some(parse_u64(value, 0, 100_000)?),
        (Engine::LlamaCpp(o), "np") => o.parallel = Some(parse_u64(value, 1, 4096)?),
        (Engine::LlamaCpp(o), "fa") => {
            o.flash_attention = match lower.as_str() {
                "on" => llamacpp::FlashAttention::On,
                "off" => llamacpp::FlashAttention::Off,
                _ => return Err("use on or off".into()),
            }
        }
        (e, _) => return Err(format!("not a setting of {}", e.kind().id())),
    }
    Ok(())
}

/// The text of one engine knob key (`gmu`, `ngl`, …) as a link writes it;
/// empty when the knob has its default.
pub fn knob(e: &Engine, key: &str) -> String {
    let mut pairs = Vec::new();
    encode_engine(e, &mut pairs);
    pairs.into_iter().find(|(k, _)| *k == key).map(|(_, v)| v).unwrap_or_default()
}

/// The engine with one knob set from text (empty text: back to the default).
pub fn with_knob(e: &Engine, key: &str, value: &str) -> Result<Engine, String> {
    let mut pairs = Vec::new();
    encode_engine(e, &mut pairs);
    let mut next = e.kind().with_defaults();
    for (k, v) in pairs.iter().filter(|(k, _)| *k != key && *k != "e") {
        apply_knob(&mut next, k, v)?;
    }
    let value = value.trim();
    if !value.is_empty() {
        apply_knob(&mut next, key, value)?;
    }
    Ok(next)
}

/// A fraction in (0, 1], as `gpu_memory_utilization` and `mem_fraction_static` take.
pub fn parse_fraction(value: &str) -> Result<f64, String> {
    match value.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err("must be a fraction above 0 and at most 1".into()),
    }
}

/// A GPU of `mix=`: a catalog id or a memory size.
fn parse_choice(value: &str) -> Result<GpuChoice, String> {
    if let Some(g) = gpu(value) {
        return Ok(GpuChoice::Catalog(g.id.clone()));
    }
    exact_size(value)
        .map_or_else(|| parse_size(value), Ok)
        .map_err(|_| format!("`{}` is neither a catalog GPU nor a size", shorten(value)))
        .and_then(|b| in_range(b, 1, u64::MAX / 4))
        .map(GpuChoice::Custom)
}

/// The text `oom=` carries for a pasted error: trailing spaces and blank
/// lines dropped, when that reads the same ([`crate::oom::parse`]); `None`
/// when even that is longer than [`MAX_OOM`].
pub fn compact_oom(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
    let trimmed = lines.join("\n");
    let candidate = if crate::oom::parse(&trimmed) == crate::oom::parse(text) { trimmed } else { text.to_owned() };
    (candidate.chars().count() <= MAX_OOM).then_some(candidate)
}

/// Reads a query string (with or without the leading `?`). Never fails.
pub fn decode(query: &str) -> Decoded {
    let mut d = Decoded::default();
    let mut model_keys: Vec<&str> = Vec::new();
    let mut knobs: Vec<(String, String)> = Vec::new();
    let query = query.strip_prefix('?').unwrap_or(query);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(raw_key);
        let value = percent_decode(raw_value);
        let value = value.trim();
        let s = &mut d.state;
        let result: Result<(), String> = match key.as_str() {
            "model" => parse_preset(value).map(|id| {
                model_keys.push("model");
                s.model = ModelSource::Preset(id);
            }),
            "cfg" => parse_cfg(value).map(|json| {
                model_keys.push("cfg");
                s.model = ModelSource::Config(json);
            }),
            "hf" => parse_repo_id(value).map(|id| {
                model_keys.push("hf");
                s.model = ModelSource::Hub(id);
            }),
            "params" => parse_params(value).map(|n| {
                model_keys.push("params");
                s.model = ModelSource::Params(n);
            }),
            "st" => parse_u64(value, 1, u64::MAX / 4).map(|b| s.checkpoint_bytes = Some(b)),
            "w" => WeightFormat::parse(value).map(|w| s.weights = Some(w)).map_err(|e| e.to_string()),
            "kv" => KvDtype::parse(value).map(|k| s.kv_dtype = Some(k)).map_err(|e| e.to_string()),
            "p" => parse_u64(value, 0, MAX_TOKENS).map(|v| s.prompt_tokens = v),
            "n" => parse_u64(value, 0, MAX_TOKENS).map(|v| s.max_new_tokens = v),
            "c" => parse_u64(value, 1, MAX_CONCURRENCY).map(|v| s.concurrency = v),
            "gpu" => gpu(value)
                .map(|g| s.gpu = GpuChoice::Catalog(g.id.clone()))
                .ok_or_else(|| "not a GPU of the catalog".to_owned()),
            "mem" => exact_size(value)
                .map_or_else(|| parse_size(value), Ok)
                .map_err(|e| e.to_string())
                .and_then(|b| in_range(b, 1, u64::MAX / 4))
                .map(|b| s.gpu = GpuChoice::Custom(b)),
            "g" => parse_u64(value, 1, MAX_GPUS as u64).map(|v| s.gpu_count = v),
            "mix" => value
                .split(',')
                .map(|v| parse_choice(v.trim()))
                .collect::<Result<Vec<_>, _>>()
                .and_then(|l| if l.len() < MAX_GPUS { Ok(l) } else { Err(format!("at most {MAX_GPUS} GPUs")) })
                .map(|l| s.more_gpus = l),
            "tp" => parse_u64(value, 1, MAX_GPUS as u64).map(|v| s.tp = v),
            "e" => EngineKind::parse(value).map(|k| s.engine = k.with_defaults()).map_err(|e| e.to_string()),
            k if KNOB_KEYS.contains(&k) => {
                knobs.push((key.clone(), value.to_owned()));
                Ok(())
            }
            "oom" => {
                if value.chars().count() <= MAX_OOM {
                    s.oom = Some(value.to_owned());
                    Ok(())
                } else {
                    Err("the pasted error is too long".into())
                }
            }
            "u" => match value.to_ascii_lowercase().as_str() {
                "gb" => Ok(UnitSystem::Decimal),
                "gib" => Ok(UnitSystem::Binary),
                _ => Err("use gib or gb".into()),
            }
            .map(|u| s.units = u),
            "hub" => parse_hub(value).map(|h| s.hub = h),
            _ => {
                d.notices.push(format!("Ignored unknown link key `{}`.", shorten(&key)));
                continue;
            }
        };
        if let Err(why) = result {
            d.notices.push(format!("Ignored `{}={}`: {why}.", shorten(&key), shorten(value)));
        }
    }
    let s = &mut d.state;
    for (key, value) in &knobs {
        if let Err(why) = apply_knob(&mut s.engine, key, value) {
            d.notices.push(format!("Ignored `{key}={}`: {why}.", shorten(value)));
        }
    }
    if s.total_gpus() > MAX_GPUS as u64 {
        d.notices.push(format!("Ignored `mix`: at most {MAX_GPUS} GPUs in all."));
        s.more_gpus.clear();
    }
    if !s.total_gpus().is_multiple_of(s.tp) || (s.tp > 1 && s.engine.kind() == EngineKind::LlamaCpp) {
        d.notices.push(format!(
            "Ignored `tp={}`: it must divide the {} GPUs, and llama.cpp has no tensor parallelism.",
            s.tp,
            s.total_gpus()
        ));
        s.tp = 1;
    }
    if model_keys.len() > 1 {
        d.notices.push(format!(
            "The link names the model {} ways ({}); the last one applies.",
            model_keys.len(),
            model_keys.join(", ")
        ));
    }
    d
}

/// Keys of a `config.json` that the memory model reads (at any depth).
const CONFIG_KEYS: &[&str] = &[
    "_remove_final_layer_norm",
    "architectures",
    "attention_bias",
    "bias",
    "cross_attention_layers",
    "decoder_sparse_step",
    "depth",
    "do_layer_norm_before",
    "dtype",
    "embed_dim",
    "enable_bias",
    "ffn_dim",
    "ffn_hidden_size",
    "first_k_dense_replace",
    "head_dim",
    "hidden_size",
    "image_size",
    "in_channels",
    "in_chans",
    "intermediate_size",
    "kv_lora_rank",
    "layer_types",
    "max_num_tiles",
    "max_position_embeddings",
    "max_window_layers",
    "mlp_bias",
    "mlp_only_layers",
    "mlp_ratio",
    "model_type",
    "moe_intermediate_size",
    "moe_layer_freq",
    "multi_query",
    "n_embd",
    "n_embed",
    "n_head",
    "n_head_kv",
    "n_inner",
    "n_layer",
    "n_positions",
    "n_routed_experts",
    "n_shared_experts",
    "new_decoder_architecture",
    "num_attention_heads",
    "num_channels",
    "num_experts",
    "num_experts_per_tok",
    "num_global_layers",
    "num_hidden_layers",
    "num_key_value_heads",
    "num_kv_heads",
    "num_ln_in_parallel_attn",
    "num_local_experts",
    "num_nextn_predict_layers",
    "out_hidden_size",
    "parallel_attn",
    "patch_size",
    "q_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "shared_expert_intermediate_size",
    "sliding_window",
    "sliding_window_pattern",
    "spatial_merge_size",
    "supported_aspect_ratios",
    "temporal_patch_size",
    "tie_word_embeddings",
    "topk_method",
    "torch_dtype",
    "use_sliding_window",
    "v_head_dim",
    "vision_output_dim",
    "vision_use_head",
    "vocab_size",
    "word_embed_proj_dim",
];

/// Nested objects kept (trimmed with the same list), and the quantisation
/// config, kept whole but for its module lists.
const CONFIG_OBJECTS: &[&str] = &["text_config", "vision_config"];
const QUANT_DROP: &[&str] = &["modules_to_not_convert", "ignore", "ignored_layers", "modules_in_block_to_quantize"];

/// The compact JSON of a `config.json` for `cfg=`: minified and trimmed to
/// the fields the memory model reads. If trimming changed what the model
/// reads (a field this list does not know yet), the whole minified config is
/// returned instead, so a link never changes a figure.
pub fn compact_config(text: &str) -> Result<String, ConfigError> {
    let arch = Architecture::from_config_json(text)?;
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
    let Value::Object(map) = &value else { return Err(ConfigError::NotAnObject) };
    let trimmed = Value::Object(trim(map)).to_string();
    match Architecture::from_config_json(&trimmed) {
        Ok(a) if a == arch => Ok(trimmed),
        _ => Ok(value.to_string()),
    }
}

fn trim(map: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in map {
        if CONFIG_KEYS.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        } else if let (true, Value::Object(inner)) = (CONFIG_OBJECTS.contains(&k.as_str()), v) {
            out.insert(k.clone(), Value::Object(trim(inner)));
        } else if let ("quantization_config", Value::Object(inner)) = (k.as_str(), v) {
            let kept = inner.iter().filter(|(k, _)| !QUANT_DROP.contains(&k.as_str()));
            out.insert(k.clone(), Value::Object(kept.map(|(k, v)| (k.clone(), v.clone())).collect()));
        }
    }
    out
}

fn parse_preset(value: &str) -> Result<String, String> {
    model_preset(value).map(|p| p.id.to_owned()).ok_or_else(|| "not a model preset".into())
}

fn parse_cfg(value: &str) -> Result<String, String> {
    if value.len() > MAX_CFG {
        return Err("the config is too long".into());
    }
    let bytes = base64url_decode(value).ok_or("not base64url")?;
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text")?;
    Architecture::from_config_json(&text).map_err(|e| e.to_string())?;
    Ok(text)
}

/// A Hugging Face repository id: `name` or `owner/name` of letters, digits, `-`, `_`, `.`.
pub fn parse_repo_id(value: &str) -> Result<String, String> {
    let ok_part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let parts: Vec<&str> = value.split('/').collect();
    if value.len() <= MAX_REPO_ID && (1..=2).contains(&parts.len()) && parts.iter().all(|p| ok_part(p)) {
        Ok(value.to_owned())
    } else {
        Err("not a Hugging Face model id like `org/name`".into())
    }
}

/// A parameter count: `8030261248`, `8b`, `1.5B`, `350m`, `7e9`.
pub fn parse_params(value: &str) -> Result<u64, String> {
    let v = value.trim().replace('_', "");
    let (num, scale) = match v.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('b') => (&v[..v.len() - 1], 1e9),
        Some('m') => (&v[..v.len() - 1], 1e6),
        Some('t') => (&v[..v.len() - 1], 1e12),
        Some('k') => (&v[..v.len() - 1], 1e3),
        _ => (v.as_str(), 1.0),
    };
    let n: f64 = num.trim().parse().map_err(|_| "not a parameter count (e.g. 8b, 1.5b, 350m)")?;
    let n = (n * scale).round();
    if !(n.is_finite() && n >= MIN_PARAMS as f64 && n <= MAX_PARAMS as f64) {
        return Err("a parameter count must be between 1M and 10T".into());
    }
    Ok(n as u64)
}

fn parse_hub(value: &str) -> Result<Option<String>, String> {
    let v = value.trim_end_matches('/');
    let rest = v.strip_prefix("https://").or_else(|| v.strip_prefix("http://")).ok_or("must start with https://")?;
    if rest.is_empty() || rest.len() > 200 || rest.chars().any(|c| c.is_whitespace() || matches!(c, '?' | '#')) {
        return Err("not a base URL".into());
    }
    Ok(if v == DEFAULT_HUB { None } else { Some(v.to_owned()) })
}

fn parse_u64(value: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let n: u64 = value.parse().map_err(|_| format!("not a whole number from {lo} to {hi}"))?;
    in_range(n, lo, hi)
}

fn in_range(n: u64, lo: u64, hi: u64) -> Result<u64, String> {
    if (lo..=hi).contains(&n) { Ok(n) } else { Err(format!("must be from {lo} to {hi}")) }
}

/// `24GiB`, `24564MiB`, `80GB` or plain bytes: the shortest exact form.
fn size_text(bytes: u64) -> String {
    if bytes.is_multiple_of(GIB) {
        format!("{}GiB", bytes / GIB)
    } else if bytes.is_multiple_of(GB) {
        format!("{}GB", bytes / GB)
    } else if bytes.is_multiple_of(MIB) {
        format!("{}MiB", bytes / MIB)
    } else {
        bytes.to_string()
    }
}

/// `24564MiB`, `80GB`, plain bytes: whole numbers read without float rounding.
fn exact_size(value: &str) -> Option<u64> {
    let split = value.find(|c: char| !c.is_ascii_digit()).unwrap_or(value.len());
    let (num, unit) = value.split_at(split);
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => MIB,
        "gib" => GIB,
        "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => GB,
        "tb" => 1_000_000_000_000,
        _ => return None,
    };
    num.parse::<u64>().ok()?.checked_mul(scale)
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 40 { s.to_owned() } else { format!("{}…", s.chars().take(40).collect::<String>()) }
}

/// Percent-encodes all but unreserved characters and `/`, `:`, `,` (readable
/// repo ids, URLs and lists).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/' | b':' | b',') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` and `+` (space); malformed escapes are kept as they are.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding (RFC 4648 §5).
pub fn base64url_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Decodes base64url (also accepts `+`/`/` and trailing `=`).
pub fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A lone trailing character carries fewer than 8 bits: not valid base64.
    if text.len() % 4 == 1 { None } else { Some(out) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{MODEL_PRESETS, gpus};
    use proptest::prelude::*;

    fn check(query: &str, want: LinkState, notices: usize) {
        let d = decode(query);
        assert_eq!(d.state, want, "{query}");
        assert_eq!(d.notices.len(), notices, "{query}: {:?}", d.notices);
    }

    #[test]
    fn reads_the_documented_example() {
        let want = LinkState {
            weights: Some(WeightFormat::Bnb4 { nf4: true, double_quant: false }),
            kv_dtype: Some(KvDtype::Fp8),
            ..LinkState::default()
        };
        check("?model=llama-3.1-8b&w=nf4&kv=fp8&p=2048&n=512&c=1&gpu=rtx-4090&g=1", want.clone(), 0);
        assert_eq!(encode(&want), "model=llama-3.1-8b&w=nf4&kv=fp8&p=2048&n=512&c=1&gpu=rtx-4090&g=1");
    }

    #[test]
    fn ignores_garbage_with_notices() {
        check("", LinkState::default(), 0);
        check("?zzz=1&p=abc&c=0&gpu=nope&model=nope&&=&%ZZ", LinkState::default(), 7);
        check("?w=int3000&kv=fp9&g=99999&mem=12%20parsecs&u=km&hub=ftp://x", LinkState::default(), 6);
        check("?cfg=!!!&cfg=e30&hf=..%2Fetc&params=3", LinkState::default(), 4);
        let custom = LinkState { gpu: GpuChoice::Custom(24 * GIB), ..LinkState::default() };
        check("?mem=24GiB", custom, 0);
        let two = LinkState { model: ModelSource::Hub("Qwen/Qwen2.5-7B".into()), ..LinkState::default() };
        check("?model=gpt2&hf=Qwen/Qwen2.5-7B", two, 1);
    }

    #[test]
    fn reads_engine_and_parallelism_keys() {
        let want = LinkState {
            gpu_count: 1,
            more_gpus: vec![GpuChoice::Catalog("rtx-4080".into())],
            tp: 2,
            engine: Engine::Vllm(vllm::Options {
                gpu_memory_utilization: Some(0.9),
                max_model_len: Some(8192),
                ..Default::default()
            }),
            ..LinkState::default()
        };
        check("?mml=8192&e=vllm&gmu=0.9&mix=rtx-4080&tp=2", want.clone(), 0);
        assert_eq!(
            encode(&want),
            "model=llama-3.1-8b&p=2048&n=512&c=1&gpu=rtx-4090&g=1&mix=rtx-4080&tp=2&e=vllm&gmu=0.9&mml=8192"
        );
        // A knob of another engine, a tp that does not divide the GPUs, a bad fraction.
        check(
            "?ngl=20&tp=3&e=vllm&gmu=1.5",
            LinkState { engine: EngineKind::Vllm.with_defaults(), ..LinkState::default() },
            3,
        );
        let llama = LinkState {
            engine: Engine::LlamaCpp(llamacpp::Options { n_gpu_layers: Some(20), ..Default::default() }),
            ..LinkState::default()
        };
        check("?e=llama.cpp&ngl=20", llama, 0);
        let oom = LinkState { oom: Some("CUDA out of memory. Tried 2+2".into()), ..LinkState::default() };
        assert!(encode(&oom).ends_with("&oom=CUDA+out+of+memory.+Tried+2%2B2"));
        check(&encode(&oom), oom, 0);
    }

    #[test]
    fn knobs_read_and_write_one_key() {
        let e = EngineKind::Vllm.with_defaults();
        let e = with_knob(&e, "gmu", "0.8").expect("valid");
        let e = with_knob(&e, "mml", "4096").expect("valid");
        assert_eq!(knob(&e, "gmu"), "0.8");
        let e = with_knob(&e, "gmu", "").expect("reset");
        assert_eq!(knob(&e, "gmu"), "");
        assert_eq!(knob(&e, "mml"), "4096");
        assert!(with_knob(&e, "gmu", "2").is_err());
        assert!(with_knob(&e, "ngl", "2").is_err());
    }

    #[test]
    fn compacts_pasted_errors_without_changing_their_reading() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oom");
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let text = std::fs::read_to_string(entry.expect("entry").path()).expect("text");
            if let Some(c) = compact_oom(&text) {
                assert_eq!(crate::oom::parse(&c), crate::oom::parse(&text));
                assert!(c.len() <= text.len());
            }
        }
        assert_eq!(compact_oom(&"x".repeat(MAX_OOM + 1)), None);
    }

    #[test]
    fn parses_parameter_counts() {
        assert_eq!(parse_params("8b"), Ok(8_000_000_000));
        assert_eq!(parse_params("1.5B"), Ok(1_500_000_000));
        assert_eq!(parse_params("350m"), Ok(350_000_000));
        assert_eq!(parse_params("7e9"), Ok(7_000_000_000));
        assert_eq!(parse_params("8030261248"), Ok(8_030_261_248));
        assert!(parse_params("12").is_err());
        assert!(parse_params("lots").is_err());
    }

    #[test]
    fn compact_configs_read_the_same_for_every_preset() {
        for p in MODEL_PRESETS {
            let compact = compact_config(p.config_json).expect(p.id);
            assert_eq!(
                Architecture::from_config_json(&compact),
                Architecture::from_config_json(p.config_json),
                "{}",
                p.id
            );
            assert!(compact.len() <= p.config_json.len(), "{}", p.id);
        }
        // Unknown bulky fields are dropped.
        let big = r#"{"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_attention_heads":4,
            "num_hidden_layers":2,"vocab_size":100,"id2label":{"0":"a","1":"b"},"rope_scaling":null}"#;
        assert!(!compact_config(big).expect("reads").contains("id2label"));
        assert!(compact_config("{").is_err());
    }

    #[test]
    fn base64url_matches_rfc_4648_vectors() {
        for (plain, enc) in
            [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE")]
        {
            assert_eq!(base64url_encode(plain.as_bytes()), enc);
            assert_eq!(base64url_decode(enc).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(base64url_encode(&[0xfb, 0xff]), "-_8");
        assert_eq!(base64url_decode("Zg=="), Some(b"f".to_vec()));
        assert_eq!(base64url_decode("Z"), None);
        assert_eq!(base64url_decode("Z!"), None);
    }

    fn model_source() -> impl Strategy<Value = ModelSource> {
        let presets = prop::sample::select(MODEL_PRESETS.iter().map(|p| p.id).collect::<Vec<_>>());
        prop_oneof![
            presets.clone().prop_map(|id| ModelSource::Preset(id.into())),
            presets.prop_map(|id| {
                let p = model_preset(id).expect("preset");
                ModelSource::Config(compact_config(p.config_json).expect("preset config"))
            }),
            "[A-Za-z0-9][A-Za-z0-9._-]{0,20}(/[A-Za-z0-9][A-Za-z0-9._-]{0,30})?".prop_map(ModelSource::Hub),
            (MIN_PARAMS..=MAX_PARAMS).prop_map(ModelSource::Params),
        ]
    }

    fn engine() -> impl Strategy<Value = Engine> {
        let frac = prop::option::of(prop_oneof![(1u32..=100).prop_map(|n| f64::from(n) / 100.0), 1e-6f64..=1.0]);
        let tokens = || prop::option::of(1..=MAX_TOKENS);
        prop_oneof![
            (prop::bool::ANY, prop::bool::ANY).prop_map(|(eager, all)| Engine::Transformers(transformers::Options {
                attention: if eager { transformers::AttentionImpl::Eager } else { transformers::AttentionImpl::Sdpa },
                logits: if all { transformers::LogitsMode::AllPositions } else { transformers::LogitsMode::LastToken },
            })),
            (
                prop::sample::select(vec![vllm::Version::V0, vllm::Version::V1, vllm::Version::Latest]),
                frac.clone(),
                tokens(),
                tokens(),
                prop::option::of(1..=MAX_CONCURRENCY),
                1..=1024u64
            )
                .prop_map(|(version, gmu, mml, mbt, mns, bs)| Engine::Vllm(vllm::Options {
                    version,
                    gpu_memory_utilization: gmu,
                    max_model_len: mml,
                    max_num_batched_tokens: mbt,
                    max_num_seqs: mns,
                    block_size: bs,
                })),
            (frac, tokens(), tokens()).prop_map(|(mfs, cl, cps)| Engine::Sglang(crate::engines::sglang::Options {
                mem_fraction_static: mfs,
                context_length: cl,
                chunked_prefill_size: cps,
            })),
            (tokens(), prop::option::of(0..=100_000u64), prop::option::of(1..=4096u64), prop::bool::ANY).prop_map(
                |(n_ctx, ngl, np, fa_off)| Engine::LlamaCpp(llamacpp::Options {
                    n_ctx,
                    n_gpu_layers: ngl,
                    parallel: np,
                    flash_attention: if fa_off { llamacpp::FlashAttention::Off } else { llamacpp::FlashAttention::On },
                    ..Default::default()
                })
            ),
        ]
    }

    fn link_state() -> impl Strategy<Value = LinkState> {
        let formats = prop::option::of(prop::sample::select(WeightFormat::CHOICES.to_vec()));
        let kvs = prop::option::of(prop::sample::select(KvDtype::CHOICES.to_vec()));
        let gpu_ids = prop::sample::select(gpus().iter().map(|g| g.id.clone()).collect::<Vec<_>>());
        let gpu = prop_oneof![gpu_ids.prop_map(GpuChoice::Catalog), (1..=u64::MAX / 4).prop_map(GpuChoice::Custom)];
        let more = prop::collection::vec(gpu.clone(), 0..4);
        // Text as `compact_oom` leaves it: no blank lines, no spaces at the ends.
        let oom = prop::option::of("[!-~]([ -~\n]{0,80}[!-~])?".prop_filter("no blank lines", |t| !t.contains("\n\n")));
        let hub = prop::option::of("https?://[a-z0-9.-]{1,20}(:[0-9]{2,5})?(/[a-z0-9_-]{1,10}){0,2}");
        (
            model_source(),
            prop::option::of(1..=u64::MAX / 4),
            formats,
            kvs,
            (0..=MAX_TOKENS, 0..=MAX_TOKENS, 1..=MAX_CONCURRENCY),
            gpu,
            1..=MAX_GPUS as u64,
            prop::bool::ANY,
            hub,
            (more, engine(), 1..=4u64, oom),
        )
            .prop_map(
                |(model, st, weights, kv_dtype, (p, n, c), gpu, g, decimal, hub, (more, engine, tp, oom))| {
                    let g = g.min(MAX_GPUS as u64 - more.len() as u64);
                    let total = g + more.len() as u64;
                    // tp must divide the GPUs; llama.cpp has none.
                    let tp = if engine.kind() == EngineKind::LlamaCpp || !total.is_multiple_of(tp) { 1 } else { tp };
                    LinkState {
                        model,
                        checkpoint_bytes: st,
                        weights,
                        kv_dtype,
                        prompt_tokens: p,
                        max_new_tokens: n,
                        concurrency: c,
                        gpu,
                        gpu_count: g,
                        more_gpus: more,
                        tp,
                        engine,
                        oom: oom.map(|t: String| t.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")),
                        units: if decimal { UnitSystem::Decimal } else { UnitSystem::Binary },
                        hub: hub.filter(|h| h != DEFAULT_HUB),
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn links_round_trip(state in link_state()) {
            let query = encode(&state);
            let d = decode(&query);
            prop_assert!(d.notices.is_empty(), "{query}: {:?}", d.notices);
            prop_assert_eq!(d.state, state);
        }

        #[test]
        fn decoding_never_panics(query in "\\PC{0,200}") {
            let _ = decode(&query);
        }

        #[test]
        fn percent_coding_round_trips(s in "\\PC{0,60}") {
            prop_assert_eq!(percent_decode(&percent_encode(&s)), s);
        }

        #[test]
        fn base64url_round_trips(data in prop::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(base64url_decode(&base64url_encode(&data)), Some(data));
        }
    }
}
