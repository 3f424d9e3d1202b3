//! "Diagnose an OOM" as the page shows it: a pasted engine start-up log set
//! against the plan term by term, then the figures read from the error,
//! the ranked causes with their evidence, the checklist and the fixes, as
//! one escaped HTML string (see [`super::html`]).

use shared::estimate::{ValidScenario, estimate};
use shared::explain::{thousands, upper_first};
use shared::link::{LinkState, ModelSource};
use shared::model::Model;
use shared::oom::{DiagnoseContext, Diagnosis, OomKind, OomReport, diagnose, parse};
use shared::startup::{self, Amount, BufferCheck, StartupLog, WhatIfs};
use shared::units::{UnitSystem, format_bytes};

use super::html::{Html, copy_button, gives_up_text};
use super::hub::HubState;
use super::read::{Reader, handed_state};
use super::{presets, resolve};

/// The whole diagnose view for a pasted `text` against the plan of a share
/// link's `query` (and, for a `hf=` model, the hub's answer), its model not
/// a preset read by `reader` (the bundle's is the page's own reading,
/// [`super::read::Handed`]): what the on-demand bundle (`src/bin/diagnose.rs`)
/// returns to the page. Empty for blank text.
pub fn findings_for(query: &str, hub: &HubState, reader: &dyn Reader, text: &str) -> String {
    if text.trim().is_empty() {
        return String::new();
    }
    let linked = handed_state(query);
    let report = parse(text);
    // The paste shows which server ran out: its error is checked against the
    // link's plan on that engine, as a pasted start-up log runs as it ran.
    let (state, taken) = match report.serving_engine() {
        Some(ran) if linked.engine.kind() != ran => {
            let note = format!(
                "Checked on {}, the engine the paste comes from; the link's plan runs {}.",
                ran.name(),
                linked.engine.kind().name()
            );
            (LinkState { engine: ran.with_defaults(), ..linked }, Some(note))
        }
        _ => (linked, None),
    };
    let model = resolve::model_with(&state, hub, reader).ok();
    let scenario = model.as_ref().and_then(|m| resolve::scenario(&state, m).ok());
    // The presets' build-time reading: this bundle carries no config texts.
    let ctx = DiagnoseContext::with_presets(|p| presets::model(p).ok());
    let ctx = match (&model, &scenario) {
        (Some(m), Some(s)) => ctx.with_plan(m, s),
        _ => ctx,
    };
    let log = match startup::read(text) {
        Some(log) => match logged_run(&log, &state, model.as_ref()).or_else(|| named_run(&log, &state, model.as_ref()))
        {
            Some((run, m, note)) => {
                let mut h = Html::new();
                h.raw("<p class=\"hint\" data-testid=\"startup-logged-model\">").t(&note).raw("</p>");
                h.finish() + &startup_html(&log, &run, &m)
            }
            None => model.as_ref().map_or_else(String::new, |m| startup_html(&log, &state, m)),
        },
        None => String::new(),
    };
    let mut diagnosis = diagnose(&report, &ctx);
    diagnosis.notes.splice(0..0, taken);
    // A start-up log without an out-of-memory message is the log's view
    // alone, as `headroom diagnose` prints it: the error's sections would
    // only say there is no error and ask for a plan the log already gave.
    if !diagnosis.recognised && !log.is_empty() {
        return log;
    }
    log + &findings_html(&report, &diagnosis, state.units)
}

/// The model a pasted llama.cpp log describes (its `print_info:` metadata,
/// `startup::logged_model`), when it is not the link's model: the run the log
/// is of, in the format its file type names, as `headroom diagnose` plans a
/// log given alone. With the note that says so. `None` when the log names no
/// model, or the link's model has its shapes.
fn logged_run(log: &StartupLog, state: &LinkState, linked: Option<&Model>) -> Option<(LinkState, Model, String)> {
    let (m, format, notes) = startup::logged_model(log.model.as_ref()?).ok()?;
    if linked.is_some_and(|l| shape(l) == shape(&m)) {
        return None;
    }
    let run = LinkState { weights: format.or(state.weights), ..state.clone() };
    let mut note = format!("Planned with the model the log describes ({}), not the link's", m.name);
    for n in &notes {
        note.push_str("; ");
        note.push_str(n);
    }
    Some((run, m, note + "."))
}

/// The preset a pasted vLLM or SGLang log names (`startup::logged_preset`),
/// when the link's model is not of its shapes: planned in the checkpoint's
/// own format, as `headroom diagnose` plans the log alone. With the note.
fn named_run(log: &StartupLog, state: &LinkState, linked: Option<&Model>) -> Option<(LinkState, Model, String)> {
    let exact = startup::logged_preset(log);
    let p = exact.or_else(|| startup::logged_base_preset(log))?;
    let m = presets::model(p).ok()?;
    if linked.is_some_and(|l| shape(l) == shape(&m)) {
        return None;
    }
    let run = LinkState { model: ModelSource::Preset(p.id.into()), weights: None, ..state.clone() };
    let note = match (exact, log.config.model.as_deref()) {
        (None, Some(named)) => format!(
            "Planned with {} for the model the log names ({named}): its shapes, by its base name, not the link's.",
            p.name
        ),
        _ => format!("Planned with the model the log names ({}: {}), not the link's.", p.hf_repo, p.name),
    };
    Some((run, m, note))
}

/// What tells two models apart for a log: layers, width, heads, vocabulary.
fn shape(m: &Model) -> (u32, u64, u64, u64) {
    let t = &m.arch.text;
    (m.layout.num_layers, t.hidden_size, t.num_heads, t.vocab_size)
}

/// A pasted start-up log against the link's plan run as the log says it
/// ran (`startup::logged_scenario`, as `headroom diagnose` runs it): each
/// logged figure beside the estimate's, term by term.
pub fn startup_html(log: &StartupLog, state: &LinkState, model: &Model) -> String {
    let units = state.units;
    let mut h = Html::new();
    h.raw("<h3>Start-up log against the plan</h3>");
    let (scenario, taken) = match logged_plan(log, state, model) {
        Ok(run) => run,
        Err(e) => {
            h.el("p", "hint", &format!("The plan run as the log says cannot be estimated: {e}"));
            return h.finish();
        }
    };
    let (rows, notes) = startup::reconcile(log, &estimate(model, scenario.clone()));
    h.raw("<p class=\"hint\" data-testid=\"startup-engine\">").t(&format!(
        "{} start-up log, {} figures read",
        log.engine.name(),
        log.facts.len()
    ));
    if !taken.is_empty() {
        h.t(&format!("; taken from the log: {}", taken.join(", ")));
    }
    h.raw(
        "</p><div class=\"table-wrap\" tabindex=\"0\" role=\"region\" aria-label=\"The log against the plan (scrolls sideways)\">\
           <table class=\"startup\" data-testid=\"startup-rows\"><thead><tr><th>Term</th><th>Line</th><th>GPU</th>\
           <th>Logged</th><th>Predicted</th><th>Error</th></tr></thead><tbody>",
    );
    for r in &rows {
        let error = r.error_permille();
        h.raw("<tr data-testid=\"startup-row\"")
            .attr("data-term", r.term)
            .attr("data-error-permille", &error.map_or_else(String::new, |e| e.to_string()))
            .raw(">")
            .el("td", "", r.term)
            .el("td", "", &r.line.to_string())
            .el("td", "", &r.gpu.to_string())
            .el("td", "", &amount(r.logged, units))
            .el("td", "", &r.predicted.map_or_else(|| "—".to_owned(), |p| amount(p, units)))
            .el("td", "", &error.map_or_else(|| "—".to_owned(), percent))
            .raw("</tr>");
    }
    h.raw("</tbody></table></div>");
    for n in &notes {
        h.el("p", "hint", n);
    }
    if let Some(w) = startup::what_ifs(log, model, &scenario) {
        what_ifs_html(&mut h, &w, units);
    }
    let checks = startup::llamacpp_buffers(log, &estimate(model, scenario));
    if !checks.is_empty() {
        buffers_html(&mut h, &checks, units);
    }
    // Ollama's own estimate before it loaded, beside what llama.cpp allocated.
    for f in log.facts.iter().filter(|f| matches!(f.figure, startup::Figure::OllamaEstimate { .. })) {
        h.raw("<p class=\"hint\" data-testid=\"ollama-estimate\">")
            .t(&format!("Line {}: {}.", f.line, f.figure.describe()))
            .raw("</p>");
    }
    h.finish()
}

/// The link's plan as the log ran it: the engine, TP degree, stages, KV
/// dtype and split the plan leaves at their defaults taken from the log.
fn logged_plan(log: &StartupLog, state: &LinkState, model: &Model) -> Result<(ValidScenario, Vec<String>), String> {
    let planned = resolve::scenario(state, model)?;
    let (run, taken) = startup::logged_scenario(log, model, planned.into_inner());
    Ok((run.validate_for(model).map_err(|e| e.to_string())?, taken))
}

/// llama.cpp's (and Ollama's runner's) logged buffers beside the plan's,
/// device by device, as `headroom diagnose` prints them.
fn buffers_html(h: &mut Html, checks: &[BufferCheck], units: UnitSystem) {
    h.raw(
        "<h3>llama.cpp buffers, predicted vs logged</h3><div class=\"table-wrap\" tabindex=\"0\" role=\"region\" \
           aria-label=\"llama.cpp buffers (scrolls sideways)\"><table class=\"startup\" data-testid=\"buffer-rows\">\
           <thead><tr><th>Line</th><th>Device</th><th>Buffer</th><th>Logged</th><th>Predicted</th><th>Error</th></tr></thead><tbody>",
    );
    for c in checks {
        let error = c.error_permille().map(percent);
        h.raw("<tr data-testid=\"buffer-row\"")
            .attr("data-device", &c.device)
            .attr("data-buffer", c.buffer)
            .attr("data-logged", &c.logged_bytes.to_string())
            .attr("data-predicted", &c.predicted_bytes.map_or_else(String::new, |p| p.to_string()))
            .raw(">")
            .el("td", "", &c.line.to_string())
            .el("td", "", &c.device)
            .el("td", "", c.buffer)
            .el("td", "", &format_bytes(c.logged_bytes, units))
            .el("td", "", &c.predicted_bytes.map_or_else(|| "—".to_owned(), |p| format_bytes(p, units)))
            .el("td", "", &error.unwrap_or_else(|| c.note.unwrap_or("—").to_owned()))
            .raw("</tr>");
    }
    h.raw("</tbody></table></div>");
}

/// Changed launches answered with the log's residual kept (see
/// `shared::startup::what_ifs`), as `headroom diagnose` prints them.
fn what_ifs_html(h: &mut Html, w: &WhatIfs, units: UnitSystem) {
    h.raw("<h3>What-ifs with the logged figures as facts</h3><p class=\"hint\">").t(&format!(
        "Each row is the plan's prediction for the changed launch {} {}, what this log left beyond the plan's prediction for it.",
        if w.residual_bytes < 0 { "less" } else { "plus" },
        format_bytes(w.residual_bytes.unsigned_abs(), units)
    ));
    h.raw(
        "</p><div class=\"table-wrap\" tabindex=\"0\" role=\"region\" aria-label=\"What-ifs (scrolls sideways)\">\
           <table class=\"startup\" data-testid=\"whatif-rows\"><thead><tr><th>Change</th><th>max_model_len</th>\
           <th>Utilization</th><th>Starts</th><th>KV cache</th><th>Tokens</th><th>Concurrency</th></tr></thead><tbody>",
    );
    for r in &w.rows {
        h.raw("<tr data-testid=\"whatif-row\"")
            .attr("data-mml", &r.max_model_len.to_string())
            .attr("data-starts", if r.starts { "yes" } else { "no" })
            .attr("data-tokens", &r.kv_cache_tokens.to_string())
            .attr("data-concurrency", &r.max_concurrency_hundredths.to_string())
            .raw(">")
            .el("td", "", &r.change)
            .el("td", "", &thousands(r.max_model_len))
            .el("td", "", &r.gpu_memory_utilization.to_string())
            .el("td", "", if r.starts { "yes" } else { "no" })
            .el("td", "", &format_bytes(r.available_kv_bytes, units))
            .el("td", "", &thousands(r.kv_cache_tokens))
            .el("td", "", &amount(Amount::Hundredths(r.max_concurrency_hundredths), units))
            .raw("</tr>");
    }
    h.raw("</tbody></table></div>");
}

/// Tenths of a percent as `+1.3 %` / `−0.4 %`, from integers.
fn percent(permille: i64) -> String {
    format!("{}{}.{} %", if permille < 0 { "−" } else { "+" }, permille.abs() / 10, permille.abs() % 10)
}

/// A logged or predicted figure in the page's units.
fn amount(a: Amount, units: UnitSystem) -> String {
    match a {
        Amount::Bytes(b) => format_bytes(b, units),
        Amount::Tokens(t) => format!("{} tokens", thousands(t)),
        Amount::Blocks(b) => format!("{} blocks", thousands(b)),
        Amount::Hundredths(x) => format!("{}.{:02}x", x / 100, x % 100),
        Amount::Permille(p) => format!("{}.{:03}", p / 1000, p % 1000),
    }
}

/// The figures read from the error, as (`data-testid`, label, bytes).
pub fn parsed_rows(r: &OomReport) -> Vec<(&'static str, &'static str, u64)> {
    let all = [
        ("oom-requested", "Tried to allocate", r.requested_bytes),
        ("oom-total", "GPU total capacity", r.total_bytes),
        ("oom-free", "Free", r.free_bytes),
        ("oom-allocated", "Allocated by PyTorch", r.allocated_bytes),
        ("oom-reserved", "Reserved by PyTorch", r.reserved_bytes),
        ("oom-reserved-unallocated", "Reserved but unallocated", r.reserved_unallocated_bytes),
        ("oom-private-pools", "In private pools (CUDA graphs)", r.private_pool_bytes),
        ("oom-process", "This process in all", r.process_in_use_bytes),
        ("oom-kv-needed", "KV cache one request needs", r.kv_needed_bytes),
        ("oom-kv-available", "Available for the KV cache", r.kv_available_bytes),
    ];
    all.into_iter().filter_map(|(id, label, v)| v.map(|b| (id, label, b))).collect()
}

pub fn kind_text(k: Option<OomKind>) -> &'static str {
    k.map_or("no out-of-memory message recognised", OomKind::label)
}

/// Everything the diagnose view shows below the text box.
pub fn findings_html(report: &OomReport, diagnosis: &Diagnosis, units: UnitSystem) -> String {
    let mut h = Html::new();
    h.raw("<p class=\"oom-summary\" data-testid=\"oom-summary\"")
        .attr("data-recognised", if diagnosis.recognised { "true" } else { "false" })
        .raw(">")
        .t(&diagnosis.summary)
        .raw("</p><h3>Read from the error</h3><p class=\"hint\" data-testid=\"oom-kind\">")
        .t(kind_text(report.kind));
    if let Some(g) = report.gpu_index {
        h.t(&format!(" on GPU {g}"));
    }
    h.raw("</p><dl class=\"kv\" data-testid=\"oom-parsed\">");
    for (id, label, b) in parsed_rows(report) {
        h.raw("<div>")
            .el("dt", "", label)
            .raw("<dd")
            .attr("data-testid", id)
            .num("data-bytes", b)
            .raw(">")
            .t(&format_bytes(b, units))
            .raw("</dd></div>");
    }
    h.raw("</dl>");
    if !report.processes.is_empty() {
        let processes: Vec<String> = report
            .processes
            .iter()
            .map(|p| {
                let pid = p.pid.map_or_else(|| "?".into(), |p| p.to_string());
                format!("process {pid}: {}", p.used_bytes.map(|b| format_bytes(b, units)).unwrap_or_default())
            })
            .collect();
        h.raw("<p class=\"hint\" data-testid=\"oom-processes\">").t(&processes.join("; ")).raw("</p>");
    }
    for n in &report.notes {
        h.el("p", "hint", n);
    }
    if let Some(plan) = &diagnosis.plan {
        h.raw("<p class=\"hint\" data-testid=\"oom-checked-against\">").t(&plan.checked_against).raw("</p>");
    }
    h.raw("<h3>Likely causes</h3>");
    if diagnosis.causes.is_empty() {
        h.raw("<p class=\"hint\" data-testid=\"oom-no-cause\">")
            .t("The error's figures alone do not point at a cause; what would is listed below.")
            .raw("</p>");
    }
    h.raw("<ol class=\"causes\">");
    for c in &diagnosis.causes {
        h.raw("<li data-testid=\"oom-cause\"")
            .attr("data-id", c.id.id())
            .num("data-score", u64::from(c.score))
            .raw(">")
            .el("strong", "", &c.title)
            .raw(" ")
            .el("span", "badge basis-engine", &format!("step {} · score {}", c.step.number(), c.score))
            .raw("<ul>");
        for e in &c.evidence {
            h.el("li", "", e);
        }
        h.raw("</ul></li>");
    }
    h.raw("</ol>");
    if !diagnosis.needs.is_empty() {
        h.raw("<h3>To tell more</h3><ul class=\"needs\" data-testid=\"oom-needs\">");
        for n in &diagnosis.needs {
            h.el("li", "", &upper_first(n));
        }
        h.raw("</ul>");
    }
    h.raw("<h3>The checklist</h3><ol class=\"checklist\" data-testid=\"oom-checklist\">");
    for i in &diagnosis.checklist {
        h.raw(if i.flagged { "<li class=\"flagged\">" } else { "<li>" })
            .el("strong", "", &i.question)
            .raw(" ")
            .t(&i.finding)
            .raw("</li>");
    }
    h.raw("</ol><h3>Fixes</h3><ol class=\"fix-list\">");
    for (i, f) in diagnosis.fixes.iter().enumerate() {
        let code_id = format!("oom-fix-code-{i}");
        h.raw("<li class=\"fix\" data-testid=\"oom-fix\">")
            .el("strong", "", &f.title)
            .raw("<p class=\"hint\">")
            .t(gives_up_text(f.gives_up));
        if let Some(b) = f.saves_bytes {
            h.t(&format!(" · saves {}", format_bytes(b, units)));
        }
        h.raw("</p>");
        // Folded as the plan's fixes are (a long `device_map` behind a toggle).
        super::fold::code(&mut h, &code_id, "oom-fix-code", &f.code);
        copy_button(&mut h, "oom-fix-copy", &code_id);
        h.raw("</li>");
    }
    h.raw("</ol>");
    for n in &diagnosis.notes {
        h.el("p", "hint", n);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view_model::read::Linked;
    use shared::engines::EngineKind;
    use shared::estimate::Scenario;
    use shared::link::decode;
    use shared::model::Model;

    const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total \
                       capacity of 23.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process \
                       has 22.58 GiB memory in use. Of the allocated memory 21.89 GiB is allocated by PyTorch, and \
                       244.03 MiB is reserved by PyTorch but unallocated.";

    #[test]
    fn findings_carry_the_test_ids_and_exact_bytes() {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let s = Scenario::default();
        let report = parse(OOM);
        let d = diagnose(&report, &DiagnoseContext::error_only().with_plan(&m, &s));
        let html = findings_html(&report, &d, UnitSystem::Binary);
        let requested = report.requested_bytes.expect("requested");
        assert!(html.contains(&format!("data-testid=\"oom-requested\" data-bytes=\"{requested}\"")));
        assert!(html.contains("data-recognised=\"true\""));
        assert_eq!(html.matches("data-testid=\"oom-cause\"").count(), d.causes.len());
        assert!(html.contains(&format!("data-id=\"{}\"", d.causes[0].id.id())));
        assert_eq!(html.matches("data-testid=\"oom-fix-copy\"").count(), d.fixes.len());
        assert!(html.contains(" on GPU 0"));
    }

    /// The diagnose bundle's path: a model that is not a preset, planned
    /// from the page's handed reading, diagnoses as the linked readers do;
    /// with nothing handed, the error is diagnosed without a plan.
    #[test]
    fn a_handed_reading_diagnoses_as_the_linked_readers_do() {
        use crate::view_model::presets::encode;
        use crate::view_model::read::{Handed, Reader};
        let json = r#"{"model_type":"qwen2","hidden_size":3584,"intermediate_size":18944,"num_hidden_layers":28,
            "num_attention_heads":28,"num_key_value_heads":4,"vocab_size":152064,"tie_word_embeddings":false}"#;
        for (source, read) in [
            (ModelSource::Config(json.into()), Linked.config(json)),
            (ModelSource::Params(3_000_000_000), Linked.stand_in(3_000_000_000)),
        ] {
            let query = shared::link::encode(&LinkState { model: source, ..LinkState::default() });
            let arch = read.unwrap_or_else(|| panic!("linked")).unwrap_or_else(|e| panic!("{e}"));
            let bytes = encode(&arch).unwrap_or_else(|e| panic!("{e}"));
            let linked = findings_for(&query, &HubState::Idle, &Linked, OOM);
            assert!(linked.contains("data-testid=\"oom-checked-against\""), "a plan for {query}");
            assert_eq!(findings_for(&query, &HubState::Idle, &Handed(&bytes), OOM), linked, "{query}");
            let bare = findings_for(&query, &HubState::Idle, &Handed(&[]), OOM);
            assert!(!bare.contains("oom-checked-against") && bare.contains("data-recognised=\"true\""), "{query}");
        }
    }

    /// The bundle's presets (their build-time reading) give the diagnosis
    /// the CLI's presets (read from their configs) give, a smaller model of
    /// the family among its fixes.
    #[test]
    fn the_build_time_presets_diagnose_as_the_configs_do() {
        let m = Model::preset("llama-3.1-70b").expect("preset");
        let s = Scenario::default();
        let report = parse(OOM);
        let cli = diagnose(&report, &DiagnoseContext::error_only().with_plan(&m, &s));
        let page = diagnose(&report, &DiagnoseContext::with_presets(|p| presets::model(p).ok()).with_plan(&m, &s));
        assert!(cli.fixes.iter().any(|f| f.id == shared::oom::FixId::SmallerModel), "{:?}", cli.fixes);
        assert_eq!(page, cli);
    }

    /// A real vLLM 0.10.1.1 start-up log (Qwen2-7B on one A100 80GB at
    /// utilization 0.5, dennislee22/vLLM-benchmarking) pasted against a
    /// link's plan: the plan runs as the log says, term by term.
    #[test]
    fn a_pasted_start_up_log_reconciles_term_by_term() {
        let log = include_str!("../../../shared/tests/fixtures/startup/vllm-v1-0101-qwen2-7b-a100-u05.txt");
        let query = "model=qwen2-7b&gpu=a100-80gb-sxm&g=1&e=vllm&vllm=0.33";
        let html = findings_for(query, &HubState::Idle, &Linked, log);
        assert!(html.contains("Start-up log against the plan"), "{html}");
        assert!(html.contains("taken from the log: vLLM rules 0.10"), "{html}");
        assert!(html.contains("gpu_memory_utilization 0.5"), "{html}");
        // No out-of-memory message: the log's view alone, as the CLI prints
        // it (no checklist asking for the plan the log gave).
        assert!(!html.contains("oom-summary") && !html.contains("oom-checklist"), "{html}");
        // The same rows `headroom diagnose` prints.
        let state = decode(query).state;
        let m = Model::preset("qwen2-7b").expect("preset");
        let l = startup::read(log).expect("a start-up log");
        let (s, _) = logged_plan(&l, &state, &m).expect("a plan");
        let (rows, _) = startup::reconcile(&l, &estimate(&m, s.clone()));
        let kv = rows.iter().find(|r| r.term == "available KV cache memory").expect("the KV row");
        let error = kv.error_permille().expect("an error");
        assert!(
            html.contains(&format!("data-term=\"available KV cache memory\" data-error-permille=\"{error}\"")),
            "{html}"
        );
        assert_eq!(html.matches("data-testid=\"startup-row\"").count(), rows.len());
        // Within 2 % on this log (docs/measurements.md: +1.3 % with the catalog A100).
        assert!(error.abs() <= 20, "{error}");
        // The what-ifs, row by row as the shared code computes them.
        let w = startup::what_ifs(&l, &m, &s).expect("what-ifs");
        assert_eq!(html.matches("data-testid=\"whatif-row\"").count(), w.rows.len());
        for r in &w.rows {
            assert!(html.contains(&format!("data-mml=\"{}\"", r.max_model_len)), "{html}");
            assert!(html.contains(&format!("data-tokens=\"{}\"", r.kv_cache_tokens)), "{html}");
        }
    }

    /// A llama.cpp log that prints its model's metadata, pasted against the
    /// default link, is set against the model it ran (issue 35), as
    /// `headroom diagnose` plans a log given alone.
    #[test]
    fn a_pasted_llamacpp_log_is_planned_with_its_own_model() {
        let log = include_str!("../../../shared/tests/fixtures/startup/ollama-054-llama31-8b-q4km-rtx4090.txt");
        let html = findings_for("model=gpt2", &HubState::Idle, &Linked, log);
        assert!(html.contains("Planned with the model the log describes"), "{html}");
        assert!(html.contains("Start-up log against the plan"), "{html}");
        let l = startup::read(log).expect("a start-up log");
        let (m, _, _) = startup::logged_model(l.model.as_ref().expect("metadata")).expect("a model");
        assert_eq!(m.layout.num_layers, 32);
        // The link's own model when it has the log's shapes: no note.
        let same = findings_for("model=llama-3.1-8b", &HubState::Idle, &Linked, log);
        assert!(!same.contains("Planned with the model the log describes"), "{same}");
        assert!(same.contains("Start-up log against the plan"), "{same}");
    }

    /// A vLLM log names its model's repo (`model='Qwen/Qwen2.5-7B-Instruct'`):
    /// pasted against another model's link, it is planned with that preset.
    #[test]
    fn a_pasted_vllm_log_is_planned_with_the_preset_it_names() {
        let log = include_str!("../../../shared/tests/fixtures/startup/vllm-v1-0190-qwen25-7b-h100-debug.txt");
        let html = findings_for("model=gpt2", &HubState::Idle, &Linked, log);
        assert!(
            html.contains("Planned with the model the log names (Qwen/Qwen2.5-7B-Instruct: Qwen2.5 7B Instruct)"),
            "{html}"
        );
        assert!(html.contains("Start-up log against the plan"), "{html}");
        let want = findings_for("model=qwen2.5-7b", &HubState::Idle, &Linked, log);
        assert!(!want.contains("Planned with the model the log names"), "{want}");
        // The same rows as the link of the preset itself.
        let rows = |h: &str| h.matches("data-testid=\"startup-row\"").count();
        assert_eq!(rows(&html), rows(&want));
        assert!(rows(&html) > 0);
    }

    /// An error only a vLLM or SGLang server prints is checked against the
    /// link's plan on that engine, as `headroom diagnose` plans it, and says
    /// so; a link on that engine is checked as it is.
    #[test]
    fn a_servers_error_is_checked_on_the_engine_that_ran() {
        for (paste, ran) in [
            (include_str!("../../../shared/tests/fixtures/oom/110-vllm-free-below-utilization-tp2.txt"), "vllm"),
            (include_str!("../../../shared/tests/fixtures/oom/46-sglang-not-enough-memory.txt"), "sglang"),
        ] {
            let html = findings_for("model=llama-3.1-8b&e=llama.cpp", &HubState::Idle, &Linked, paste);
            let name = EngineKind::parse(ran).expect("an engine").name();
            let note =
                format!("Checked on {name}, the engine the paste comes from; the link&#39;s plan runs llama.cpp.");
            assert!(html.contains(&note), "{html}");
            assert!(html.contains(&format!(" with {ran}, ")), "checked against {ran}: {html}");
            assert!(!html.contains("The paste comes from"), "{html}");
            let same = findings_for(&format!("model=llama-3.1-8b&e={ran}"), &HubState::Idle, &Linked, paste);
            assert!(!same.contains("the engine the paste comes from"), "{same}");
            assert!(same.contains(&format!(" with {ran}, ")), "{same}");
        }
    }

    #[test]
    fn the_bundle_entry_point_reads_the_plan_from_the_link() {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let s = resolve::scenario(&decode("model=llama-3.1-8b").state, &m).expect("a plan");
        let report = parse(OOM);
        let want = findings_html(
            &report,
            &diagnose(&report, &DiagnoseContext::error_only().with_plan(&m, &s)),
            UnitSystem::Binary,
        );
        assert_eq!(findings_for("model=llama-3.1-8b", &HubState::Idle, &Linked, OOM), want);
        assert_eq!(findings_for("model=llama-3.1-8b", &HubState::Idle, &Linked, "  "), "");
        let gb = findings_for("model=llama-3.1-8b&u=gb", &HubState::Idle, &Linked, OOM);
        assert!(gb.contains(" GB<") && !gb.contains("GiB<"));
    }
}
