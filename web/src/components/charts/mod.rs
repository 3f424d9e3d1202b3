//! The charts: memory against generated tokens, max concurrency against
//! prompt length, and the what-if grid. Series come from [`crate::vm::charts`],
//! markup from [`crate::vm::html`].

use leptos::prelude::*;

use crate::components::answer::panel;
use crate::state::use_app;
use crate::vm::charts::{concurrency_chart, memory_chart, what_if};
use crate::vm::html::{concurrency_chart_html, memory_chart_html, what_if_html};

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
    let grid = move || {
        let kv = app.inputs.with(|s| s.kv_dtype);
        app.model.with(|m| {
            app.scenario.with(|s| {
                what_if_html(&m.as_ref().ok().zip(s.as_ref()).map(|(m, s)| what_if(m, s, kv)).unwrap_or_default())
            })
        })
    };
    view! {
        {panel(memory)}
        {panel(concurrency)}
        {panel(grid)}
    }
}
