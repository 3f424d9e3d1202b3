//! The cheapest changes that make the plan fit, ranked by what they give up,
//! each with the memory it saves, copyable code and an "apply" button
//! (`view_model::fixes`). They are part of the first load: a plan that does
//! not fit is this tool's common case, and fetching the diagnose bundle for
//! them cost every such visit about ten times what they weigh (issue 38).

use leptos::prelude::*;

use super::panel;
use crate::state::use_app;

#[component]
pub fn FixesPanel() -> impl IntoView {
    let app = use_app();
    // No fixes for a plan that fits, unless its engine changes it before
    // loading: llama.cpp's `--fit` when less than its target stays free.
    let fits = Memo::new(move |_| {
        app.estimate.with(|e| {
            e.as_ref().is_none_or(|e| {
                e.fits
                    && shared::engines::llamacpp::Report::of(e.engine_report.as_ref())
                        .is_none_or(|r| r.keeps_fit_margin)
            })
        })
    });
    panel(move || {
        if fits.get() {
            return String::new();
        }
        let Some(scenario) = app.scenario.get() else { return String::new() };
        app.model.with(|m| match m {
            Ok(model) => app.inputs.with(|state| {
                crate::view_model::fixes::fixes_html(&shared::fixes::fixes(model, &scenario), state, model)
            }),
            Err(_) => String::new(),
        })
    })
}
