//! The answer in one line.

use leptos::prelude::*;
use shared::estimate::verdict_text;

use crate::state::use_app;
use crate::view_model::figures::verdict_class;
use crate::view_model::resolve::NoModel;

#[component]
pub fn Verdict() -> impl IntoView {
    let app = use_app();
    let line = Memo::new(move |_| {
        let units = app.units.get();
        app.estimate.with(|e| match e {
            Some(e) => (verdict_class(e), verdict_text(e, units), if e.fits { "fits" } else { "no" }),
            None => app.model.with(|m| match m {
                Err(NoModel::Loading(msg)) => ("verdict pending", msg.clone(), "pending"),
                Err(NoModel::Problem(msg)) => ("verdict pending", format!("No model to estimate: {msg}"), "error"),
                Ok(_) => match app.plan_problem.get() {
                    Some(p) => ("verdict no-fit", format!("This plan cannot run: {p}."), "error"),
                    None => ("verdict pending", "Choose a model.".into(), "pending"),
                },
            }),
        })
    });
    view! {
        <p class=move || line.get().0 id="verdict" tabindex="-1" data-testid="verdict" data-fits=move || line.get().2 role="status" aria-live="polite">
            {move || line.get().1}
        </p>
    }
}
