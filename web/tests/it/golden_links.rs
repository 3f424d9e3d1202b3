//! Golden links (`golden-links.json`): share links as the page made them,
//! each with the plan its inputs resolve to and the figures it showed. Both
//! the link itself and the link the page writes for it today must resolve to
//! the recorded plan: that is the promise of `docs/links.md`. Figures may
//! change with the estimator, but only as a recorded decision (re-blessed
//! with a reason), never by accident.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use shared::engines::{Engine, EngineReport};
use shared::estimate::{Estimate, Scenario, estimate};
use shared::link::{LinkState, LinkVersion, ModelSource, decode, encode};
use shared::model::Model;
use shared::oom::{DiagnoseContext, diagnose, parse};
use shared::units::UnitSystem;
use web::view_model::hub::HubState;
use web::view_model::resolve;

const BLESS: &str = "HEADROOM_BLESS";
const BLESS_PLAN: &str = "HEADROOM_BLESS_PLAN";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it")
}

/// What one link resolves to: the inputs in effect (every default resolved)
/// and the figures shown.
#[derive(Debug, PartialEq)]
struct Resolved {
    plan: Value,
    figures: Value,
}

fn resolve_link(query: &str, hub: &HubState) -> Result<Resolved, String> {
    let d = decode(query);
    if !d.notices.is_empty() {
        return Err(format!("the link reads with notices: {:?}", d.notices));
    }
    let s = &d.state;
    let model = resolve::model(s, hub).map_err(|e| format!("no model: {e:?}"))?;
    let scenario = resolve::scenario(s, &model)?;
    let e = estimate(&model, scenario.clone());
    Ok(Resolved { plan: plan(s, &model, &scenario, &e), figures: figures(s, &model, &scenario, &e) })
}

/// The inputs in effect, with the engine's defaults as it resolved them.
fn plan(s: &LinkState, model: &Model, scenario: &Scenario, e: &Estimate) -> Value {
    json!({
        "model": match &s.model {
            ModelSource::Preset(id) => format!("preset {id}"),
            ModelSource::Config(_) => "pasted config.json".to_owned(),
            ModelSource::Hub(id) => format!("{id} from {}", s.hub_base()),
            ModelSource::Params(n) => format!("{n} parameters"),
            ModelSource::Local(name) => format!("dropped files {name}"),
        },
        "checkpoint_bytes": model.checkpoint_bytes,
        "weights": scenario.weights.id(),
        "kv_dtype": scenario.kv_dtype.id(),
        "gpus": scenario.gpus.iter().map(|g| format!("{} ({} B)", g.name, g.capacity_bytes)).collect::<Vec<_>>(),
        "tp": scenario.tp,
        "prompt_tokens": scenario.prompt_tokens,
        "max_new_tokens": scenario.max_new_tokens,
        "concurrency": scenario.concurrency,
        "engine": engine_plan(&scenario.engine, e.engine_report.as_ref()),
        "units": match s.units { UnitSystem::Binary => "gib", UnitSystem::Decimal => "gb" },
        "oom": s.oom,
    })
}

fn engine_plan(engine: &Engine, report: Option<&EngineReport>) -> Value {
    match (engine, report) {
        (Engine::Vllm(_), Some(EngineReport::Vllm(r))) => json!({
            "name": "vllm",
            "version": r.version.id(),
            "gpu_memory_utilization": r.gpu_memory_utilization,
            "max_model_len": r.max_model_len,
            "max_num_batched_tokens": r.max_num_batched_tokens,
            "max_num_seqs": r.max_num_seqs,
            "block_size": r.block_size,
        }),
        (Engine::Sglang(_), Some(EngineReport::Sglang(r))) => json!({
            "name": "sglang",
            "mem_fraction_static": r.mem_fraction_static,
            "context_length": r.context_length,
            "chunked_prefill_size": r.chunked_prefill_size,
        }),
        (Engine::LlamaCpp(o), Some(EngineReport::LlamaCpp(r))) => {
            let mut v = json!({
                "name": "llama.cpp",
                "n_ctx": r.n_ctx,
                "parallel": r.parallel,
                "n_gpu_layers": r.n_gpu_layers,
                "n_ubatch": o.n_ubatch,
                "flash_attention": o.flash_attention,
            });
            // The placement knobs, where set (links made before them keep their plan).
            let d = shared::engines::llamacpp::Options::default();
            let set = [
                ("tensor_overrides", o.tensor_overrides != d.tensor_overrides, json!(o.tensor_overrides)),
                ("tensor_split", o.tensor_split != d.tensor_split, json!(o.tensor_split)),
                ("split_mode", o.split_mode != d.split_mode, json!(o.split_mode)),
                ("main_gpu", o.main_gpu != d.main_gpu, json!(o.main_gpu)),
                ("mmproj", o.mmproj, json!(if o.no_mmproj_offload { "cpu" } else { "gpu" })),
            ];
            for (key, on, value) in set {
                if on {
                    v[key] = value;
                }
            }
            v
        }
        // transformers resolves nothing: its options are the plan.
        (e, _) => serde_json::to_value(e).unwrap_or(Value::Null),
    }
}

fn figures(s: &LinkState, model: &Model, scenario: &Scenario, e: &Estimate) -> Value {
    let engine = match &e.engine_report {
        Some(EngineReport::Vllm(r)) => json!({
            "num_gpu_blocks": r.num_gpu_blocks,
            "kv_cache_tokens": r.kv_cache_tokens,
            "max_concurrency": r.max_concurrency,
            "starts": r.startup_error.is_none(),
        }),
        Some(EngineReport::Sglang(r)) => json!({
            "max_total_num_tokens": r.max_total_num_tokens,
            "starts": r.startup_error.is_none(),
        }),
        Some(EngineReport::LlamaCpp(r)) => json!({
            "layers_on_gpu": r.layers_on_gpu,
            "output_on_gpu": r.output_on_gpu,
            "cpu_weight_bytes": r.cpu_weight_bytes,
            "compute_buffer_bytes": r.compute_buffer_bytes,
        }),
        None => Value::Null,
    };
    let diagnosis = s.oom.as_deref().map(|text| {
        let report = parse(text);
        let d = diagnose(&report, &DiagnoseContext::error_only().with_plan(model, scenario));
        json!({
            "recognised": d.recognised,
            "requested_bytes": report.requested_bytes,
            "causes": d.causes.iter().map(|c| c.id).collect::<Vec<_>>(),
            "plan_need_bytes": d.plan.as_ref().map(|p| p.need_bytes),
        })
    });
    json!({
        "fits": e.fits,
        "verdict": e.verdict,
        "parameters": e.parameters,
        "weight_bytes": e.weight_bytes,
        "kv_cache_bytes": e.kv_cache_bytes,
        "activation_bytes": e.activation_bytes,
        "overhead_bytes": e.overhead_bytes,
        "total_bytes": e.total_bytes,
        "per_gpu": e.per_gpu.iter().map(|g| json!({
            "total_bytes": g.total_bytes,
            "weight_bytes": g.budget.weight_bytes,
            "kv_cache_bytes": g.budget.kv_cache_bytes,
            "activation_bytes": g.budget.activation_bytes,
            "overhead_bytes": g.budget.overhead_bytes,
            "layers": g.layers,
        })).collect::<Vec<_>>(),
        "engine": engine,
        "diagnosis": diagnosis,
    })
}

/// `path: old → new` for every leaf that differs.
fn diff(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (x, y) = (a.get(k).unwrap_or(&Value::Null), b.get(k).unwrap_or(&Value::Null));
                diff(&format!("{path}.{k}"), x, y, out);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (a, b) if a != b => out.push(format!("{path}: {a} → {b}")),
        _ => {}
    }
}

/// The hub's recorded answers for a `hf=` link.
fn hub_for(entry: &Value, link: &str) -> Result<HubState, String> {
    let Some(hub) = entry.get("hub") else { return Ok(HubState::Idle) };
    let ModelSource::Hub(id) = decode(link).state.model else { return Err("`hub` without `hf=`".into()) };
    let file = hub["config_file"].as_str().ok_or("hub.config_file")?;
    let config = std::fs::read_to_string(dir().join(file)).map_err(|e| format!("{file}: {e}"))?;
    Ok(HubState::Loaded { id, config, checkpoint_bytes: hub["checkpoint_bytes"].as_u64(), checkpoint: Vec::new() })
}

/// Checks one entry; blesses it when asked. `Err` is the failure to report.
fn check(entry: &mut Value, bless: Option<&str>, bless_plan: Option<&str>) -> Result<bool, String> {
    let link = entry["link"].as_str().ok_or("no link")?.to_owned();
    let hub = hub_for(entry, &link)?;
    let got = resolve_link(&link, &hub)?;
    // The link the page writes for it today: pinned, and the same plan.
    let today = encode(&decode(&link).state);
    if !today.starts_with(&format!("v={}&", LinkVersion::CURRENT.number())) {
        return Err(format!("the page's link does not carry its version: {today}"));
    }
    // A link of the current version is written back as it is: the format is stable too.
    let current =
        link.strip_prefix('?').is_some_and(|l| l.starts_with(&format!("v={}&", LinkVersion::CURRENT.number())));
    if current && link.strip_prefix('?') != Some(today.as_str()) {
        return Err(format!("the page now writes this link as `{today}`"));
    }
    let again = resolve_link(&today, &hub).map_err(|e| format!("the page's link `{today}`: {e}"))?;
    if again != got {
        let mut lines = Vec::new();
        diff("", &json!([got.plan, got.figures]), &json!([again.plan, again.figures]), &mut lines);
        return Err(format!("the page's link `{today}` means another plan:\n  {}", lines.join("\n  ")));
    }
    let mut changed = false;
    let mut plan_diff = Vec::new();
    diff("plan", &entry["plan"], &got.plan, &mut plan_diff);
    if !plan_diff.is_empty() {
        let Some(why) = bless_plan.or(entry["plan"].is_null().then_some(bless).flatten()) else {
            return Err(format!(
                "the link now resolves to another plan: this breaks the promise of docs/links.md.\n  {}\n\
                 Fix the decoder or the frozen defaults (shared/src/link/version.rs). Only a deliberate break, \
                 with a new link version, re-blesses: {BLESS_PLAN}='why' cargo test -p web --test it golden",
                plan_diff.join("\n  ")
            ));
        };
        record(entry, "plan", why, &plan_diff);
        entry["plan"] = got.plan;
        changed = true;
    }
    let mut figure_diff = Vec::new();
    diff("figures", &entry["figures"], &got.figures, &mut figure_diff);
    if !figure_diff.is_empty() {
        let Some(why) = bless.or(bless_plan) else {
            return Err(format!(
                "same plan, other figures: the estimator changed, not the link.\n  {}\n\
                 If the change is intended, re-bless with the reason: {BLESS}='why' cargo test -p web --test it golden",
                figure_diff.join("\n  ")
            ));
        };
        record(entry, "figures", why, &figure_diff);
        entry["figures"] = got.figures;
        changed = true;
    }
    Ok(changed)
}

/// Appends a blessing to the entry's history (not the first recording of `field`).
fn record(entry: &mut Value, field: &str, why: &str, changes: &[String]) {
    if entry[field].is_null() {
        return;
    }
    // An entry recorded before histories were kept starts one.
    if !entry["history"].is_array() {
        entry["history"] = json!([]);
    }
    if let Some(history) = entry["history"].as_array_mut() {
        history.push(json!({ "why": why, "changes": changes }));
    }
}

/// The fixture as JSON with each entry's keys in reading order (the
/// serializer would sort them).
fn pretty(fixture: &Value) -> String {
    const ORDER: &[&str] = &["name", "what", "link", "hub", "plan", "figures", "history"];
    let indent =
        |v: &Value, pad: &str| serde_json::to_string_pretty(v).unwrap_or_default().replace('\n', &format!("\n{pad}"));
    let entries: Vec<String> = fixture["links"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    let fields: Vec<String> = ORDER
                        .iter()
                        .filter_map(|k| e.get(*k).map(|v| format!("      \"{k}\": {}", indent(v, "      "))))
                        .collect();
                    format!("    {{\n{}\n    }}", fields.join(",\n"))
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{{\n  \"about\": {},\n  \"links\": [\n{}\n  ]\n}}\n", indent(&fixture["about"], "  "), entries.join(",\n"))
}

#[test]
fn golden_links_keep_their_plan() {
    let path = dir().join("golden-links.json");
    let text = std::fs::read_to_string(&path).expect("golden-links.json");
    let mut fixture: Value = serde_json::from_str(&text).expect("golden-links.json is JSON");
    assert_eq!(pretty(&fixture), text, "golden-links.json is written as the test writes it (keys in order)");
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (bless, bless_plan) = (var(BLESS), var(BLESS_PLAN));
    let entries = fixture["links"].as_array_mut().expect("links");
    assert!(entries.len() >= 10, "golden links cover every engine, configs, the hub, mixed GPUs, a diagnosis");
    let mut failures = Vec::new();
    let mut changed = false;
    for entry in entries.iter_mut() {
        let name = entry["name"].as_str().unwrap_or("?").to_owned();
        match check(entry, bless.as_deref(), bless_plan.as_deref()) {
            Ok(c) => changed |= c,
            Err(why) => failures.push(format!("`{name}` ({}): {why}", entry["link"].as_str().unwrap_or(""))),
        }
    }
    if changed {
        std::fs::write(&path, pretty(&fixture)).expect("writes golden-links.json");
    }
    assert!(failures.is_empty(), "{} golden link(s) changed:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn golden_links_cover_what_people_share() {
    let text = std::fs::read_to_string(dir().join("golden-links.json")).expect("golden-links.json");
    let fixture: Value = serde_json::from_str(&text).expect("JSON");
    let links: Vec<LinkState> = fixture["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|e| decode(e["link"].as_str().expect("link")).state)
        .collect();
    for kind in shared::engines::EngineKind::ALL {
        assert!(links.iter().any(|s| s.engine.kind() == *kind), "a golden link for {kind:?}");
    }
    assert!(links.iter().any(|s| matches!(s.model, ModelSource::Config(_))), "a pasted config");
    assert!(links.iter().any(|s| matches!(s.model, ModelSource::Hub(_))), "a hub model");
    assert!(links.iter().any(|s| !s.more_gpus.is_empty()), "mixed GPUs");
    assert!(links.iter().any(|s| s.oom.is_some()), "a diagnosis");
    assert!(links.iter().any(|s| shared::link::newer_engine(&s.engine).is_some()), "an older engine version");
}
