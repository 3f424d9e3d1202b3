//! What the engine itself would report, the layer split and the speed bounds,
//! as rows the page shows; and the knobs each engine takes.

use shared::engines::knobs::About;
use shared::engines::{Engine, EngineKind, ReportRow};
use shared::estimate::Estimate;
use shared::units::{UnitSystem, decimal};

/// The engine's report: its figures, the lines it would log, its error.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportView {
    pub rows: Vec<ReportRow>,
    pub log: String,
    pub error: Option<String>,
}

pub fn report_view(e: &Estimate, units: UnitSystem) -> Option<ReportView> {
    let r = e.engine_report.as_ref()?;
    Some(ReportView { rows: r.rows(units), log: r.log_lines().join("\n"), error: r.problem(units) })
}

/// The speed bounds in one sentence, labelled as bounds.
pub fn speed_text(e: &Estimate) -> Option<String> {
    let s = e.speed?;
    Some(format!(
        "Decode at most {} tokens/s per sequence ({} tokens/s for all {}); prefill takes at least {} ms. Upper bounds from {} GB/s and {} TFLOP/s peak: real kernels reach 60–90 % of them.",
        decimal(s.decode_tokens_per_s_per_sequence, 0),
        decimal(s.decode_tokens_per_s_total, 0),
        e.concurrency,
        decimal(s.prefill_ms, 0),
        decimal(s.bandwidth_gb_s, 0),
        decimal(s.bf16_tflops, 0)
    ))
}

/// The engine's settings the page shows, as the engine declares them
/// (`shared::engines::knobs`): its link key, label and choices.
pub fn knobs(kind: EngineKind) -> Vec<&'static About> {
    kind.settings().into_iter().filter(|a| !a.label.is_empty()).collect()
}

/// A knob's text in its field: the link's, in the page's words (`all` for
/// `--cpu-moe`'s every layer).
pub fn knob_text(e: &Engine, about: &About) -> String {
    about.word(shared::link::knob(e, about.key))
}

/// What a knob left empty means for this estimate (the engine's effective value).
pub fn knob_default(e: &Estimate, kind: EngineKind, key: &str) -> String {
    e.engine_report.as_ref().and_then(|r| kind.effective(r, key)).map_or_else(String::new, |v| format!("default: {v}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::catalog::model_preset;
    use shared::estimate::{Scenario, estimate};
    use shared::model::Model;

    fn est(engine: Engine) -> Estimate {
        let m = Model::from_preset(model_preset("llama-3.1-8b").expect("preset")).expect("model");
        estimate(&m, Scenario { engine, ..Scenario::default() }.validate().expect("a valid plan"))
    }

    #[test]
    fn vllm_reports_its_log_lines_and_blocks() {
        let e = est(EngineKind::Vllm.with_defaults());
        let v = report_view(&e, UnitSystem::Binary).expect("report");
        assert!(v.log.contains("GPU KV cache size"));
        assert_eq!(v.rows[0].raw, e.num_gpu_blocks.expect("blocks").to_string());
        // vLLM 0.34 asks for the whole GPU with its extensible KV cache.
        assert!(knob_default(&e, EngineKind::Vllm, "gmu").starts_with("default: 1"));
    }

    #[test]
    fn transformers_has_no_report_but_bounds() {
        let e = est(Engine::default());
        assert!(report_view(&e, UnitSystem::Binary).is_none());
        // The default GPU is a custom size: no bandwidth, no bounds.
        assert!(speed_text(&e).is_none() || speed_text(&e).is_some_and(|t| t.contains("Upper bounds")));
        for kind in EngineKind::ALL {
            assert!(!knobs(*kind).is_empty());
        }
    }

    /// Issue 34: the llama.cpp form had no `--n-cpu-moe`/`--cpu-moe`.
    #[test]
    fn llamacpp_and_ollama_take_cpu_moe_and_show_all_for_cpu_moe() {
        for kind in [EngineKind::LlamaCpp, EngineKind::Ollama] {
            let about = knobs(kind).into_iter().find(|k| k.key == "ncmoe").expect("a field");
            let e = shared::link::with_knob(&kind.with_defaults(), "ncmoe", "all").expect("all");
            assert_eq!(knob_text(&e, about), "all");
        }
        let e = est(EngineKind::LlamaCpp.with_defaults());
        assert_eq!(knob_default(&e, EngineKind::LlamaCpp, "ncmoe"), "default: 0; all = --cpu-moe");
    }

    /// The parallel knobs say what an empty box means; SGLang's EP size is
    /// the TP size under DeepEP, whatever `--ep-size` says.
    #[test]
    fn the_parallel_knobs_show_what_runs() {
        let m = Model::from_preset(model_preset("qwen3-30b-a3b").expect("preset")).expect("model");
        let ep_shown = |deepep: &str| {
            let engine = shared::link::with_knob(&EngineKind::Sglang.with_defaults(), "a2a", deepep).expect("a2a");
            let gpus = vec![shared::estimate::GpuSlot::custom("80 GiB", 80 << 30); 4];
            let s = Scenario { engine, gpus, tp: 4, ..Scenario::default() };
            knob_default(&estimate(&m, s.validate().expect("a valid plan")), EngineKind::Sglang, "ep")
        };
        assert_eq!((ep_shown("none"), ep_shown("deepep")), ("default: 1".to_owned(), "default: 4".to_owned()));
        let e = est(EngineKind::Vllm.with_defaults());
        assert_eq!(
            (knob_default(&e, EngineKind::Vllm, "dp"), knob_default(&e, EngineKind::Vllm, "ner")),
            ("default: 1".to_owned(), "default: 0".to_owned())
        );
    }
}
