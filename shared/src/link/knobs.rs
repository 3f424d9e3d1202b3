//! Engine knobs (`e=`, `gmu=`, `ngl=`, …): written, read and edited one key at a time.

use super::values::{parse_tokens, parse_u64};
use super::version::LinkVersion;
use crate::engines::{Engine, llamacpp, sglang, transformers, vllm};
use crate::estimate::{MAX_CONCURRENCY, MAX_TOKENS};

/// The engine key, its pinned version, and the knobs that differ from what
/// a link of the current version reads when they are left out.
pub(super) fn encode_engine(e: &Engine, pairs: &mut Vec<(&'static str, String)>) {
    let mut opt = |k: &'static str, v: Option<String>| {
        if let Some(v) = v {
            pairs.push((k, v));
        }
    };
    let num = |v: Option<u64>| v.map(|n| n.to_string());
    // `{}` of f64 without its formatting code (the page carries this).
    let frac = |v: Option<f64>| v.map(crate::units::shortest);
    let differs = |v: Option<u64>, d: Option<u64>| if v == d { None } else { num(v) };
    if e.kind() != LinkVersion::CURRENT.engine_kind() {
        opt("e", Some(e.kind().id().into()));
    }
    match (*e, LinkVersion::CURRENT.engine(e.kind())) {
        (Engine::Transformers(o), Engine::Transformers(d)) => {
            opt("attn", (o.attention != d.attention).then(|| o.attention.id().into()));
            opt("logits", (o.logits != d.logits).then(|| o.logits.id().into()));
        }
        (Engine::Vllm(o), Engine::Vllm(d)) => {
            // Always written: the version decides the defaults of the rest.
            opt("vllm", Some(o.version.id().into()));
            opt(
                "gmu",
                if o.gpu_memory_utilization == d.gpu_memory_utilization {
                    None
                } else {
                    frac(o.gpu_memory_utilization)
                },
            );
            opt("mml", differs(o.max_model_len, d.max_model_len));
            opt("mbt", differs(o.max_num_batched_tokens, d.max_num_batched_tokens));
            opt("mns", differs(o.max_num_seqs, d.max_num_seqs));
            opt("bs", (o.block_size != d.block_size).then(|| o.block_size.to_string()));
            opt("loras", (o.max_loras != d.max_loras).then(|| o.max_loras.to_string()));
            opt("lorar", (o.max_lora_rank != d.max_lora_rank).then(|| o.max_lora_rank.to_string()));
            opt("samp", (o.sampler != d.sampler).then(|| o.sampler.map_or("", |s| s.id()).into()));
        }
        (Engine::Sglang(o), Engine::Sglang(d)) => {
            // Always written: the version decides the defaults of the rest.
            opt("sglang", Some(o.version.id().into()));
            opt("mfs", if o.mem_fraction_static == d.mem_fraction_static { None } else { frac(o.mem_fraction_static) });
            opt("cl", differs(o.context_length, d.context_length));
            opt("mbt", differs(o.chunked_prefill_size, d.chunked_prefill_size));
        }
        (Engine::LlamaCpp(o), Engine::LlamaCpp(d)) => {
            opt("nctx", differs(o.n_ctx, d.n_ctx));
            opt("ngl", differs(o.n_gpu_layers, d.n_gpu_layers));
            opt("np", differs(o.parallel, d.parallel));
            opt("fa", (o.flash_attention != d.flash_attention).then(|| o.flash_attention.id().into()));
            let cache = |t: Option<llamacpp::CacheType>| t.map(|t| t.id().to_owned());
            opt("ctk", (o.cache_type_k != d.cache_type_k).then(|| cache(o.cache_type_k)).flatten());
            opt("ctv", (o.cache_type_v != d.cache_type_v).then(|| cache(o.cache_type_v)).flatten());
            opt("ncmoe", (o.n_cpu_moe != d.n_cpu_moe).then(|| o.n_cpu_moe.to_string()));
            let flag = |on: bool, default: bool| (on != default).then(|| if on { "1" } else { "0" }.to_owned());
            opt("nkvo", flag(o.no_kv_offload, d.no_kv_offload));
            opt("kvu", flag(o.kv_unified, d.kv_unified));
            opt("swafull", flag(o.swa_full, d.swa_full));
            opt("ot", (o.tensor_overrides != d.tensor_overrides).then(|| o.tensor_overrides.as_str().to_owned()));
            opt("ts", (o.tensor_split != d.tensor_split).then(|| o.tensor_split.text()));
            opt("sm", (o.split_mode != d.split_mode).then(|| o.split_mode.id().to_owned()));
            opt("mg", (o.main_gpu != d.main_gpu).then(|| o.main_gpu.to_string()));
            let mmproj = |o: &llamacpp::Options| match (o.mmproj, o.no_mmproj_offload) {
                (false, _) => "",
                (true, false) => "gpu",
                (true, true) => "cpu",
            };
            opt("mmproj", (mmproj(&o) != mmproj(&d)).then(|| mmproj(&o).to_owned()).filter(|v| !v.is_empty()));
            opt("fit", (o.fit != d.fit).then(|| o.fit.id().to_owned()));
            opt("ram", o.host_ram_bytes.filter(|_| o.host_ram_bytes != d.host_ram_bytes).map(super::values::size_text));
        }
        (Engine::Ollama(o), Engine::Ollama(d)) => {
            opt("numctx", differs(o.num_ctx, d.num_ctx));
            opt("np", (o.num_parallel != d.num_parallel).then(|| o.num_parallel.to_string()));
            opt(
                "kvt",
                (o.kv_cache_type != d.kv_cache_type).then(|| o.kv_cache_type.map(|t| t.id().to_owned())).flatten(),
            );
            opt(
                "fa",
                (o.flash_attention != d.flash_attention).then(|| o.flash_attention.map(|f| f.id().into())).flatten(),
            );
            opt("numgpu", differs(o.num_gpu, d.num_gpu));
            opt("numbatch", differs(o.num_batch, d.num_batch));
            opt("ncmoe", (o.n_cpu_moe != d.n_cpu_moe).then(|| o.n_cpu_moe.to_string()));
            opt("mmproj", (o.mmproj != d.mmproj).then(|| if o.mmproj { "on" } else { "off" }.to_owned()));
            opt("ram", o.host_ram_bytes.filter(|_| o.host_ram_bytes != d.host_ram_bytes).map(super::values::size_text));
        }
        // `_` is not an engine here: the first element lists every engine, and
        // `LinkVersion::engine` gives the kind it is asked for.
        (
            Engine::Transformers(_) | Engine::Vllm(_) | Engine::Sglang(_) | Engine::LlamaCpp(_) | Engine::Ollama(_),
            _,
        ) => {}
    }
}

/// Keys that tune one engine, read once the engine is known.
pub(super) const KNOB_KEYS: &[&str] = &[
    "attn", "logits", "vllm", "gmu", "mml", "mbt", "mns", "bs", "loras", "lorar", "samp", "sglang", "mfs", "cl",
    "nctx", "ngl", "np", "fa", "ctk", "ctv", "ncmoe", "nkvo", "kvu", "swafull", "ot", "ts", "sm", "mg", "mmproj",
    "fit", "ram", "numctx", "kvt", "numgpu", "numbatch",
];

/// Applies one knob to the engine; `Err` says why it does not apply.
pub(super) fn apply_knob(e: &mut Engine, key: &str, value: &str) -> Result<(), String> {
    // Every token knob reads `32k` and `128K` as the prompt and the CLI do.
    let tokens = |v: &str| match parse_tokens(v, MAX_TOKENS)? {
        0 => Err("must be at least 1 token".to_owned()),
        n => Ok(Some(n)),
    };
    // `all` is `--cpu-moe`: llama.cpp's every layer (any N ≥ the layer count).
    let cpu_moe = |v: &str| if v == "all" { Ok(u64::from(u32::MAX)) } else { parse_u64(v, 0, u64::from(u32::MAX)) };
    let lower = value.to_ascii_lowercase();
    match (e, key) {
        (Engine::Transformers(o), "attn") => o.attention = transformers::AttentionImpl::parse(value)?,
        (Engine::Transformers(o), "logits") => o.logits = transformers::LogitsMode::parse(value)?,
        (Engine::Vllm(o), "vllm") => {
            o.version = vllm::Version::parse_pinned(value).ok_or_else(|| {
                format!("not a vLLM version this page knows ({})", vllm::Version::IDS_NEWEST_FIRST.join(", "))
            })?
        }
        (Engine::Vllm(o), "gmu") => o.gpu_memory_utilization = Some(parse_fraction(value)?),
        (Engine::Vllm(o), "mml") => o.max_model_len = tokens(value)?,
        (Engine::Vllm(o), "mbt") => o.max_num_batched_tokens = tokens(value)?,
        (Engine::Vllm(o), "mns") => o.max_num_seqs = Some(parse_u64(value, 1, MAX_CONCURRENCY)?),
        (Engine::Vllm(o), "bs") => o.block_size = parse_u64(value, 1, 1024)?,
        (Engine::Vllm(o), "loras") => o.max_loras = parse_u64(value, 0, 1024)?,
        (Engine::Vllm(o), "lorar") => o.max_lora_rank = parse_u64(value, 1, 512)?,
        (Engine::Vllm(o), "samp") => {
            o.sampler = Some(vllm::Sampler::parse(value).ok_or("use flashinfer, triton or native")?);
        }
        (Engine::Sglang(o), "sglang") => {
            o.version = sglang::Version::parse_pinned(value).ok_or_else(|| {
                format!("not SGLang rules this page knows ({})", sglang::Version::IDS_NEWEST_FIRST.join(", "))
            })?
        }
        (Engine::Sglang(o), "mfs") => o.mem_fraction_static = Some(parse_fraction(value)?),
        (Engine::Sglang(o), "cl") => o.context_length = tokens(value)?,
        (Engine::Sglang(o), "mbt") => o.chunked_prefill_size = tokens(value)?,
        (Engine::LlamaCpp(o), "nctx") => o.n_ctx = tokens(value)?,
        (Engine::LlamaCpp(o), "ngl") => o.n_gpu_layers = Some(parse_u64(value, 0, 100_000)?),
        (Engine::LlamaCpp(o), "np") => o.parallel = Some(parse_u64(value, 1, 4096)?),
        (Engine::LlamaCpp(o), "fa") => o.flash_attention = llamacpp::FlashAttention::parse(value)?,
        (Engine::LlamaCpp(o), "ctk") => o.cache_type_k = Some(cache_type(value)?),
        (Engine::LlamaCpp(o), "ctv") => o.cache_type_v = Some(cache_type(value)?),
        (Engine::LlamaCpp(o), "ncmoe") => o.n_cpu_moe = cpu_moe(&lower)?,
        (Engine::LlamaCpp(o), "nkvo") => o.no_kv_offload = flag(value)?,
        (Engine::LlamaCpp(o), "kvu") => o.kv_unified = flag(value)?,
        (Engine::LlamaCpp(o), "swafull") => o.swa_full = flag(value)?,
        (Engine::LlamaCpp(o), "ot") => o.tensor_overrides = llamacpp::TensorOverrides::parse(value)?,
        (Engine::LlamaCpp(o), "ts") => o.tensor_split = llamacpp::TensorSplit::parse(value)?,
        (Engine::LlamaCpp(o), "sm") => o.split_mode = llamacpp::SplitMode::parse(&lower)?,
        (Engine::LlamaCpp(o), "mg") => o.main_gpu = parse_u64(value, 0, 1023)? as u16,
        (Engine::LlamaCpp(o), "mmproj") => {
            (o.mmproj, o.no_mmproj_offload) = match lower.as_str() {
                "off" => (false, false),
                "gpu" => (true, false),
                "cpu" => (true, true),
                _ => return Err("use off, gpu or cpu".into()),
            }
        }
        (Engine::LlamaCpp(o), "fit") => o.fit = llamacpp::FitMode::parse(value)?,
        (Engine::LlamaCpp(o), "ram") => o.host_ram_bytes = Some(host_ram(value)?),
        (Engine::Ollama(o), "numctx") => o.num_ctx = tokens(value)?,
        (Engine::Ollama(o), "np") => o.num_parallel = parse_u64(value, 1, 4096)?,
        (Engine::Ollama(o), "kvt") => o.kv_cache_type = Some(cache_type(value)?),
        (Engine::Ollama(o), "fa") => o.flash_attention = crate::engines::ollama::parse_flash_attention(value)?,
        (Engine::Ollama(o), "numgpu") => o.num_gpu = Some(parse_u64(value, 0, 100_000)?),
        (Engine::Ollama(o), "numbatch") => o.num_batch = Some(parse_u64(value, 1, 65_536)?),
        (Engine::Ollama(o), "ncmoe") => o.n_cpu_moe = cpu_moe(&lower)?,
        (Engine::Ollama(o), "mmproj") => {
            o.mmproj = match lower.as_str() {
                "on" => true,
                "off" => false,
                _ => return Err("use on or off".into()),
            }
        }
        (Engine::Ollama(o), "ram") => o.host_ram_bytes = Some(host_ram(value)?),
        (e, _) => return Err(format!("not a setting of {}", e.kind().id())),
    }
    Ok(())
}

/// The text of one engine knob key (`gmu`, `ngl`, …) as a link writes it;
/// empty when the knob has its default (`vllm` and `sglang`, the pinned
/// versions, are always written).
pub fn knob(e: &Engine, key: &str) -> String {
    let mut pairs = Vec::new();
    encode_engine(e, &mut pairs);
    pairs.into_iter().find(|(k, _)| *k == key).map(|(_, v)| v).unwrap_or_default()
}

/// The engine with one knob set from text (empty text: back to the default,
/// for `vllm` the newest version).
pub fn with_knob(e: &Engine, key: &str, value: &str) -> Result<Engine, String> {
    let mut pairs = Vec::new();
    encode_engine(e, &mut pairs);
    let mut next = super::version::new_engine(e.kind());
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
    match crate::decimal::Decimal::parse(value.trim()).map(crate::decimal::Decimal::to_f64) {
        Some(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err("must be a fraction above 0 and at most 1".into()),
    }
}

fn cache_type(value: &str) -> Result<llamacpp::CacheType, String> {
    llamacpp::CacheType::parse(value).map_err(|e| e.to_string())
}

/// The host's RAM; a bare number is GiB, as people say how much RAM they have.
fn host_ram(value: &str) -> Result<u64, String> {
    let bytes = match value.bytes().all(|b| b.is_ascii_digit()) {
        true => value.parse::<u64>().ok().and_then(|g| g.checked_mul(crate::units::GIB)),
        false => super::values::exact_size(value).or_else(|| crate::units::parse_size(value).ok()),
    };
    let bytes = bytes.ok_or("a size such as 64GiB (a bare number is GiB)")?;
    super::values::in_range(bytes, crate::units::MIB, 1 << 60)
}

fn flag(value: &str) -> Result<bool, String> {
    match value {
        "1" => Ok(true),
        "0" => Ok(false),
        _ => Err("use 1 or 0".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::EngineKind;

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

    /// Issue 34: `max_model_len` refused `32k` while the prompt took it.
    #[test]
    fn every_token_knob_reads_32k_as_the_prompt_does() {
        for (kind, keys) in [
            (EngineKind::Vllm, &["mml", "mbt"][..]),
            (EngineKind::Sglang, &["cl", "mbt"]),
            (EngineKind::LlamaCpp, &["nctx"]),
            (EngineKind::Ollama, &["numctx"]),
        ] {
            for key in keys {
                let e = kind.with_defaults();
                for (text, want) in [("32k", "32000"), ("128K", "131072"), ("4,096", "4096")] {
                    let set = with_knob(&e, key, text).unwrap_or_else(|why| panic!("{key}={text}: {why}"));
                    assert_eq!(knob(&set, key), want, "{key}={text}");
                }
                assert!(with_knob(&e, key, "0").is_err(), "{key}=0");
                assert!(with_knob(&e, key, "32q").is_err(), "{key}=32q");
            }
        }
    }

    /// `--cpu-moe` is `--n-cpu-moe` over every layer: `all` in the form.
    #[test]
    fn cpu_moe_all_is_every_layer() {
        for kind in [EngineKind::LlamaCpp, EngineKind::Ollama] {
            let e = with_knob(&kind.with_defaults(), "ncmoe", "All").expect("all");
            assert_eq!(knob(&e, "ncmoe"), u32::MAX.to_string());
            assert_eq!(knob(&with_knob(&e, "ncmoe", "12").expect("12"), "ncmoe"), "12");
        }
    }
}
