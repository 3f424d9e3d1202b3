//! The key figures of an estimate as the page shows them: a short text, the
//! exact value for tooltips and tests, and the terms that explain each one.

use shared::estimate::{Estimate, Verdict};
use shared::explain::{Basis, Term, TermUnit, thousands};
use shared::units::{UnitSystem, format_bytes};

/// One explained line of a derivation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermRow {
    pub name: String,
    pub value: String,
    /// The exact value (`8,030,261,248 bytes`).
    pub exact: String,
    pub formula: String,
    pub basis: &'static str,
    /// A CSS class for the basis badge.
    pub basis_class: &'static str,
}

/// One key figure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figure {
    /// The `data-testid` of the value element.
    pub testid: &'static str,
    pub label: &'static str,
    /// The exact number (bytes or a count), for `data-bytes`/`data-value`.
    pub raw: u64,
    pub text: String,
    pub exact: String,
    pub terms: Vec<TermRow>,
}

/// `8,030,261,248 bytes`.
pub fn exact_bytes(b: u64) -> String {
    format!("{} bytes", thousands(b))
}

/// `8.03 B` for counts.
pub fn count_text(n: u64) -> String {
    super::synth::shorten_count(n)
}

pub fn basis_label(b: Basis) -> (&'static str, &'static str) {
    match b {
        Basis::Exact => ("exact", "basis-exact"),
        Basis::EngineRule => ("engine rule", "basis-engine"),
        Basis::Empirical => ("empirical", "basis-empirical"),
    }
}

pub fn term_row(t: &Term, units: UnitSystem) -> TermRow {
    let (value, exact) = match t.unit {
        TermUnit::Bytes => (format_bytes(t.value, units), exact_bytes(t.value)),
        TermUnit::Count => (count_text(t.value), thousands(t.value)),
        TermUnit::Tokens => (format!("{} tokens", thousands(t.value)), format!("{} tokens", thousands(t.value))),
    };
    let (basis, basis_class) = basis_label(t.basis);
    TermRow { name: t.name.clone(), value, exact, formula: t.formula.clone(), basis, basis_class }
}

/// Terms whose name is `name`, or starts with it (engines may add
/// qualified lines such as `activations (prefill)`).
fn terms_for(e: &Estimate, names: &[&str], units: UnitSystem) -> Vec<TermRow> {
    e.terms
        .iter()
        .filter(|t| {
            let n = t.name.to_ascii_lowercase();
            names.iter().any(|want| n == *want || (n.starts_with(want) && !n.starts_with("kv cache per")))
        })
        .map(|t| term_row(t, units))
        .collect()
}

/// The most sequences that fit, when the plan fits at all.
pub fn max_concurrency(e: &Estimate) -> u64 {
    match e.verdict {
        Verdict::Fits { max_concurrency } => max_concurrency,
        _ => 0,
    }
}

pub fn figures(e: &Estimate, units: UnitSystem) -> Vec<Figure> {
    let bytes = |testid, label, raw: u64, names: &[&str]| Figure {
        testid,
        label,
        raw,
        text: format_bytes(raw, units),
        exact: exact_bytes(raw),
        terms: terms_for(e, names, units),
    };
    let mut kv_per_token = bytes("kv-bytes-per-token", "KV cache per token", e.kv_bytes_per_token, &[]);
    kv_per_token.terms = e
        .terms
        .iter()
        .filter(|t| t.name.eq_ignore_ascii_case("kv cache per token"))
        .map(|t| term_row(t, units))
        .collect();
    // vLLM's and SGLang's own accounting (requested memory, the KV budget,
    // blocks, replicas, experts per GPU, all-to-all buffers …) is how they
    // size the pool: its terms open under the pool's figure.
    let mut kv_cache = bytes("kv-cache-bytes", kv_label(e), e.kv_cache_bytes, &["kv cache"]);
    if e.engine.own_terms_size_the_pool() {
        let own = format!("{} ", e.engine.name());
        kv_cache.terms.extend(e.terms.iter().filter(|t| t.name.starts_with(&own)).map(|t| term_row(t, units)));
    }
    let conc = max_concurrency(e);
    let mut all = vec![
        Figure {
            testid: "parameters",
            label: "Parameters",
            raw: e.parameters,
            text: count_text(e.parameters),
            exact: thousands(e.parameters),
            terms: terms_for(e, &["parameters"], units),
        },
        bytes("weight-bytes", "Weights", e.weight_bytes, &["weights"]),
        kv_per_token,
        kv_cache,
        bytes("state-bytes", "Recurrent state", e.state_bytes, &["recurrent state"]),
        bytes("activation-bytes", "Activations", e.activation_bytes, &["activations"]),
        bytes("overhead-bytes", "Overhead", e.overhead_bytes, &["overhead"]),
        bytes("total-bytes", "Total at peak", e.total_bytes, &["total"]),
        bytes("capacity-bytes", "GPU memory", e.capacity_bytes, &["capacity"]),
        Figure {
            testid: "max-concurrency",
            label: "Max concurrent sequences",
            raw: conc,
            text: thousands(conc),
            exact: format!(
                "{} sequences of {} tokens",
                thousands(conc),
                thousands(e.prompt_tokens.saturating_add(e.max_new_tokens))
            ),
            terms: terms_for(e, &["max concurrency", "concurrency"], units),
        },
    ];
    // Only models with recurrent layers (Mamba, DeltaNet, short conv) have a state.
    if e.state_bytes_per_sequence == 0 {
        all.retain(|f| f.testid != "state-bytes");
    }
    all
}

/// The KV row names its moment (issue 34): transformers' bar is the larger
/// of prefill (the prompts' cache) and the last token (the whole sequence);
/// the other engines allocate their cache when they start.
pub fn kv_label(e: &Estimate) -> &'static str {
    if e.engine.allocates_kv_at_start() {
        "KV cache, allocated at start"
    } else if e.kv_cache_bytes >= e.kv_demand_bytes {
        "KV cache at the last token"
    } else if e.per_gpu.len() == 1 {
        "KV cache at prefill"
    } else {
        "KV cache at each GPU's peak"
    }
}

/// The verdict's tone, for colour: red only for a plan that fails as
/// launched, amber where the engine's defaults (llama.cpp's `--fit`) load it
/// otherwise or it runs out late.
pub fn verdict_class(e: &Estimate) -> &'static str {
    let fit_moves = e.engine_report.as_ref().is_some_and(shared::engines::EngineReport::fit_moves);
    match e.verdict {
        // Fits in memory, not in the model's trained context: not green.
        Verdict::Fits { .. } if e.beyond_training().is_some() => "verdict runs-out",
        Verdict::Fits { .. } => "verdict fits",
        Verdict::RunsOutAtToken { .. } => "verdict runs-out",
        Verdict::DoesNotFitAtLoad { .. } | Verdict::RunsOutInPrefill { .. } if fit_moves => "verdict adjusts",
        _ => "verdict no-fit",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::engines::EngineKind;
    use shared::estimate::{Scenario, estimate};
    use shared::model::Model;

    #[test]
    fn every_figure_has_its_terms_and_exact_value() {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let e = estimate(&m, Scenario::default().validate().expect("a valid plan"));
        let f = figures(&e, UnitSystem::Binary);
        let get = |id: &str| f.iter().find(|x| x.testid == id).expect(id);
        assert_eq!(get("weight-bytes").raw, e.weight_bytes);
        assert_eq!(get("parameters").raw, e.parameters);
        assert_eq!(get("kv-bytes-per-token").raw, e.kv_bytes_per_token);
        for id in ["parameters", "weight-bytes", "kv-bytes-per-token", "kv-cache-bytes", "activation-bytes"] {
            assert!(!get(id).terms.is_empty(), "{id} has no terms");
        }
        assert_eq!(get("kv-bytes-per-token").terms.len(), 1);
        assert_eq!(get("kv-cache-bytes").terms.len(), 1);
        assert!(get("weight-bytes").exact.ends_with(" bytes"));
        assert_eq!(verdict_class(&e), "verdict fits");
    }

    /// vLLM's own accounting opens under the pool's figure: with data and
    /// expert parallelism, the replicas and the experts each GPU holds,
    /// each with its source (issue 36).
    #[test]
    fn the_engines_own_terms_open_under_the_pool() {
        let m = Model::preset("qwen3-30b-a3b").expect("preset");
        let mut engine = EngineKind::Vllm.with_defaults();
        engine.set_setting("dp", "2").expect("dp");
        engine.set_setting("ep", "on").expect("ep");
        let h100 = shared::estimate::GpuSlot::from_catalog(shared::catalog::gpu("h100-sxm").expect("an H100"));
        let s = Scenario { engine, gpus: vec![h100; 2], ..Scenario::default() };
        let e = estimate(&m, s.validate().expect("a valid plan"));
        let f = figures(&e, UnitSystem::Binary);
        let pool = f.iter().find(|x| x.testid == "kv-cache-bytes").expect("the pool");
        let names: Vec<&str> = pool.terms.iter().map(|t| t.name.as_str()).collect();
        for want in ["vLLM KV budget", "vLLM data-parallel replicas", "vLLM experts per GPU"] {
            assert!(names.contains(&want), "{want} in {names:?}");
        }
        let experts = pool.terms.iter().find(|t| t.name == "vLLM experts per GPU").expect("the experts");
        assert!(experts.formula.contains("determine_expert_map, 0.19.0"), "{}", experts.formula);
    }

    /// Qwen3-30B-A3B on an 8 GiB card in llama.cpp (issue 34): its default
    /// `--fit` keeps experts in host memory and loads it, so the verdict
    /// says that first, in amber, not a red "does not fit".
    #[test]
    fn a_plan_llamacpp_fit_loads_is_not_red() {
        use shared::estimate::{GpuSlot, verdict_text};
        let m = Model::preset("qwen3-30b-a3b").expect("preset");
        let s = Scenario {
            engine: EngineKind::LlamaCpp.with_defaults(),
            gpus: vec![GpuSlot::custom("8 GiB", 8 << 30)],
            ..Scenario::default()
        };
        let e = estimate(&m, s.validate().expect("a valid plan"));
        assert!(!e.fits);
        assert_eq!(verdict_class(&e), "verdict adjusts");
        let text = verdict_text(&e, UnitSystem::Binary);
        assert!(text.starts_with("Loads with llama.cpp's default --fit"), "{text}");
        // With --fit off it fails as launched: red.
        use shared::engines::{Engine, llamacpp};
        let off = Scenario {
            engine: Engine::LlamaCpp(llamacpp::Options { fit: llamacpp::FitMode::Off, ..Default::default() }),
            gpus: vec![GpuSlot::custom("8 GiB", 8 << 30)],
            ..Scenario::default()
        };
        let e = estimate(&m, off.validate().expect("a valid plan"));
        assert_eq!(verdict_class(&e), "verdict no-fit");
        assert!(verdict_text(&e, UnitSystem::Binary).starts_with("Does not fit at load"));
    }

    /// Issue 34: SGLang with a 200k prompt said a green "Fits" for a model
    /// trained to 128k; every engine now says the model's limit, not green.
    #[test]
    fn a_context_past_the_trained_length_is_not_a_green_fit() {
        use shared::estimate::{GpuSlot, verdict_text};
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let trained = m.arch.text.max_position_embeddings.expect("trained context");
        for kind in EngineKind::ALL {
            let s = Scenario {
                engine: kind.with_defaults(),
                prompt_tokens: 200_000,
                max_new_tokens: 100,
                gpus: vec![GpuSlot::custom("1 TiB", 1 << 40)],
                ..Scenario::default()
            };
            let e = estimate(&m, s.validate().expect("a valid plan"));
            let text = verdict_text(&e, UnitSystem::Binary);
            assert_ne!(verdict_class(&e), "verdict fits", "{kind:?}: {text}");
            assert!(!text.starts_with("Fits"), "{kind:?}: {text}");
            if e.fits && *kind != EngineKind::Ollama {
                let want = format!("it was trained to {} tokens", thousands(trained));
                assert!(text.contains(&want), "{kind:?}: {text}");
            }
        }
    }

    /// Issue 34: the KV row did not say whether it was the prompt's cache
    /// (prefill) or the whole sequence's (the last token).
    #[test]
    fn the_kv_row_names_its_moment() {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let kv = |prompt, new| {
            let s = Scenario { prompt_tokens: prompt, max_new_tokens: new, ..Scenario::default() };
            let e = estimate(&m, s.validate().expect("a valid plan"));
            figures(&e, UnitSystem::Binary).into_iter().find(|f| f.testid == "kv-cache-bytes").expect("kv").label
        };
        assert_eq!(kv(512, 4096), "KV cache at the last token");
        assert_eq!(kv(8192, 1), "KV cache at prefill");
        let vllm = Scenario { engine: EngineKind::Vllm.with_defaults(), ..Scenario::default() };
        assert_eq!(kv_label(&estimate(&m, vllm.validate().expect("a valid plan"))), "KV cache, allocated at start");
    }

    #[test]
    fn formats_terms() {
        let t = Term::bytes("weights", 1 << 30, "x", Basis::Empirical);
        let r = term_row(&t, UnitSystem::Binary);
        assert_eq!((r.value.as_str(), r.exact.as_str(), r.basis), ("1.00 GiB", "1,073,741,824 bytes", "empirical"));
    }
}
