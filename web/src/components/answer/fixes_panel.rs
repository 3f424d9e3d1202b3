//! The cheapest changes that make the plan fit, ranked by what they give up,
//! each with the memory it saves, copyable code and an "apply" button. They
//! are ranked by the on-demand diagnose bundle (`view_model::fixes`), fetched
//! the first time a plan does not fit (or llama.cpp's `--fit` would change it).

use leptos::prelude::*;

use super::panel;
use crate::html::Html;
use crate::state::bundles::{DiagnoseCall, Load, call_diagnose, load_diagnose, plan_args};
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
    Effect::new(move |_| {
        if !fits.get() {
            load_diagnose(app);
        }
    });
    panel(move || {
        if fits.get() {
            return String::new();
        }
        match app.diagnose.get() {
            Load::Idle | Load::Loading => {
                "<p class=\"hint\" role=\"status\" data-testid=\"fixes-loading\">Finding fixes…</p>".to_owned()
            }
            Load::Failed(e) => {
                let mut h = Html::new();
                h.raw("<p class=\"error\" role=\"alert\">The fixes could not load: ").t(&e).raw("</p>");
                h.finish()
            }
            Load::Ready => call_diagnose(DiagnoseCall::Fixes, &plan_args(app)).unwrap_or_default(),
        }
    })
}
