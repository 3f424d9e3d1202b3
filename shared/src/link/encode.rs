//! Writing a state as a query string.

use super::base64url::base64url_encode;
use super::knobs::encode_engine;
use super::percent::percent_encode;
use super::state::{GpuChoice, LinkState, ModelSource};
use super::values::size_text;
use super::version::LinkVersion;
use crate::units::UnitSystem;

/// The query string (without `?`) for a state, as link version
/// [`LinkVersion::CURRENT`]: `v=` first, then the model, the workload and
/// GPU keys (always written), and the other keys only where they differ from
/// what that version reads when they are left out.
pub fn encode(s: &LinkState) -> String {
    let base = LinkVersion::CURRENT.defaults();
    let mut pairs: Vec<(&str, String)> = Vec::with_capacity(14);
    pairs.push(("v", LinkVersion::CURRENT.number().to_string()));
    match &s.model {
        ModelSource::Preset(id) => pairs.push(("model", id.clone())),
        ModelSource::Config(json) => pairs.push(("cfg", base64url_encode(json.as_bytes()))),
        ModelSource::Hub(id) => pairs.push(("hf", id.clone())),
        ModelSource::Params(n) => pairs.push(("params", n.to_string())),
        ModelSource::Local(name) => pairs.push(("file", name.clone())),
    }
    if let Some(b) = s.checkpoint_bytes {
        pairs.push(("st", b.to_string()));
    }
    if let Some(w) = s.weights {
        pairs.push(("w", w.id()));
    }
    if let Some(kv) = s.kv_dtype {
        pairs.push(("kv", kv.id().into()));
    } else if s.kv_activation && super::version::activation_kv_differs(s.engine.kind()) {
        pairs.push(("kv", "act".into()));
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
    if s.tp != base.tp {
        pairs.push(("tp", s.tp.to_string()));
    }
    encode_engine(&s.engine, &mut pairs);
    if s.units != base.units {
        pairs.push((
            "u",
            match s.units {
                UnitSystem::Decimal => "gb",
                UnitSystem::Binary => "gib",
            }
            .into(),
        ));
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
