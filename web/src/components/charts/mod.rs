//! The charts: memory against generated tokens, max concurrency against
//! prompt length, and the what-if grid. Series come from [`crate::view_model::charts`],
//! markup from [`crate::view_model::html`].

use leptos::prelude::*;

use crate::components::answer::{Patched, marked, panel};
use crate::state::use_app;
use crate::view_model::charts::{concurrency_chart, memory_chart, what_if};
use crate::view_model::html::{concurrency_chart_html, memory_chart_html, what_if_html};

#[component]
pub fn Charts() -> impl IntoView {
    let app = use_app();
    let memory = move || {
        let units = app.units.get();
        app.model.with(|m| {
            app.scenario.with(|s| {
                app.estimate.with(|e| match (m, s, e) {
                    (Ok(m), Some(s), Some(e)) => memory_chart_html(&memory_chart(m, s, e, units)),
                    _ => String::new(),
                })
            })
        })
    };
    let concurrency = move || {
        app.model.with(|m| {
            app.scenario.with(|s| match (m, s) {
                (Ok(m), Some(s)) => concurrency_chart_html(&concurrency_chart(m, s)),
                _ => String::new(),
            })
        })
    };
    // The grid covers every weight format, so a change of format only moves
    // its highlight: the rows are computed from the plan with the format left
    // out (the memo stops there when only the format changed), so their
    // markup is not set again; the plan's row is marked apart from it
    // (`Patched::current`).
    let grid_plan = Memo::new(move |_| {
        let kv = app.inputs.with(|s| s.kv_dtype);
        app.scenario.with(|s| s.as_ref().map(|s| (s.with_dtypes(shared::formats::WeightFormat::Bf16, s.kv_dtype), kv)))
    });
    let grid = Memo::new(move |_| {
        app.model.with(|m| {
            grid_plan.with(|plan| match (m, plan) {
                (Ok(m), Some((s, kv))) => what_if_html(&what_if(m, s, *kv)),
                _ => what_if_html(&[]),
            })
        })
    });
    let chosen = Memo::new(move |_| app.scenario.with(|s| s.as_ref().map(|s| s.weights.id()).unwrap_or_default()));
    view! {
        {panel(memory)}
        {panel(concurrency)}
        {marked(move || Patched { html: grid.get(), current: Some(chosen.get()) })}
    }
}
