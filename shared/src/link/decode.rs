//! Reading a query string back into a state, with a notice for everything skipped.

use super::MAX_OOM;
use super::percent::percent_decode;
use super::state::{Decoded, GpuChoice, LinkState, ModelSource};
use super::values::{
    ConfigCheck, exact_size, in_range, parse_cfg, parse_choice, parse_file_name, parse_hub, parse_params, parse_preset,
    parse_repo_id, parse_u64, read_config, shorten,
};
use super::version::LinkVersion;
use crate::catalog::gpu;
use crate::engines::EngineKind;
use crate::estimate::{MAX_CONCURRENCY, MAX_GPUS, MAX_TOKENS};
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::units::{UnitSystem, parse_size};

/// Reads a query string (with or without the leading `?`). Never fails.
///
/// A key the link leaves out takes the default of the link's version
/// (`v=`, 1 when absent), frozen in [`LinkVersion`]; an empty query is a
/// fresh page, with today's defaults.
pub fn decode(query: &str) -> Decoded {
    decode_with(query, &read_config)
}

/// [`decode`] with another check of a `cfg=` config than the family readers
/// (the page's first load runs them in an on-demand bundle).
pub fn decode_with(query: &str, read: ConfigCheck) -> Decoded {
    let query = query.strip_prefix('?').unwrap_or(query);
    let pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(raw_key), percent_decode(raw_value).trim().to_owned())
        })
        .collect();
    let mut notices = Vec::new();
    let version = link_version(&pairs, &mut notices);
    let state = if pairs.is_empty() { LinkState::default() } else { version.defaults() };
    let mut d = Decoded { state, notices, version };
    let mut model_keys: Vec<&str> = Vec::new();
    let mut knobs: Vec<(String, String)> = Vec::new();
    for (key, value) in &pairs {
        let value = value.as_str();
        let s = &mut d.state;
        let result: Result<(), String> = match key.as_str() {
            // Read first, by `link_version`.
            "v" => continue,
            "model" => parse_preset(value).map(|id| {
                model_keys.push("model");
                s.model = ModelSource::Preset(id);
            }),
            "cfg" => parse_cfg(value, read).map(|json| {
                model_keys.push("cfg");
                s.model = ModelSource::Config(json);
            }),
            "hf" => parse_repo_id(value).map(|id| {
                model_keys.push("hf");
                s.model = ModelSource::Hub(id);
            }),
            "file" => parse_file_name(value).map(|name| {
                model_keys.push("file");
                s.model = ModelSource::Local(name);
            }),
            "params" => parse_params(value).map(|n| {
                model_keys.push("params");
                s.model = ModelSource::Params(n);
            }),
            "st" => parse_u64(value, 1, u64::MAX / 4).map(|b| s.checkpoint_bytes = Some(b)),
            "w" => WeightFormat::parse(value).map(|w| s.weights = Some(w)).map_err(|e| e.to_string()),
            "kv" if value == "act" => {
                (s.kv_dtype, s.kv_activation) = (None, true);
                Ok(())
            }
            "kv" => KvDtype::parse(value)
                .map(|k| (s.kv_dtype, s.kv_activation) = (Some(k), false))
                .map_err(|e| e.to_string()),
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
            "e" => EngineKind::parse(value).map(|k| s.engine = version.engine(k)).map_err(|e| e.to_string()),
            // `latest` (or `new`, read the same before v2) moves; in a link it
            // means the newest of the link's version.
            "vllm" if value.eq_ignore_ascii_case("latest") || value.eq_ignore_ascii_case("new") => {
                knobs.push((key.clone(), version.vllm_latest().id().to_owned()));
                Ok(())
            }
            // Some engine's setting: read once the engine is known.
            k if crate::engines::EngineKind::any_has_setting(k) => {
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
                d.notices.push(format!("Ignored unknown link key `{}`.", shorten(key)));
                continue;
            }
        };
        if let Err(why) = result {
            d.notices.push(format!("Ignored `{}={}`: {why}.", shorten(key), shorten(value)));
        }
    }
    let s = &mut d.state;
    for (key, value) in &knobs {
        if let Err(why) = s.engine.set_setting(key, value) {
            d.notices.push(format!("Ignored `{key}={}`: {why}.", shorten(value)));
        }
    }
    // An old link's default is kept only where it plans otherwise.
    s.kv_activation &= super::version::activation_kv_differs(s.engine.kind());
    if s.total_gpus() > MAX_GPUS as u64 {
        d.notices.push(format!("Ignored `mix`: at most {MAX_GPUS} GPUs in all."));
        s.more_gpus.clear();
    }
    if s.tp > 1 && !s.engine.kind().splits_tensors() {
        d.notices.push(format!(
            "Ignored `tp={}`: {} splits layers over GPUs, not tensors.",
            s.tp,
            s.engine.kind().name()
        ));
        s.tp = 1;
    } else if !s.total_gpus().is_multiple_of(s.tp) {
        d.notices.push(format!("Ignored `tp={}`: it must divide the {} GPUs.", s.tp, s.total_gpus()));
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

/// The link's version (the last `v=`; 1 without one). A version newer than
/// this build reads as the newest it knows, with a notice.
fn link_version(pairs: &[(String, String)], notices: &mut Vec<String>) -> LinkVersion {
    let Some((_, value)) = pairs.iter().rev().find(|(k, _)| k == "v") else { return LinkVersion::V1 };
    let newest = LinkVersion::CURRENT;
    match value.parse::<u64>().map_err(|_| "not a whole number".to_owned()).and_then(LinkVersion::from_number) {
        Ok(v) => v,
        Err(why) => {
            let later = value.parse::<u64>().is_ok_and(|n| n > newest.number());
            let read_as = if later { newest } else { LinkVersion::V1 };
            let more = if later { "; made by a newer Headroom, some figures may differ" } else { "" };
            notices.push(format!("Read `v={}` as link version {}: {why}{more}.", shorten(value), read_as.number()));
            read_as
        }
    }
}
