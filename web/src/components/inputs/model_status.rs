//! Which model is in use, or why none is (loading, not found, gated…).

use leptos::prelude::*;

use crate::state::use_app;
use crate::vm::resolve::NoModel;

#[component]
pub fn ModelStatus() -> impl IntoView {
    let app = use_app();
    let line = Memo::new(move |_| {
        app.model.with(|m| match m {
            Ok(m) => ("status-ok", format!("Using {}", m.name)),
            Err(NoModel::Loading(msg)) => ("status-loading", msg.clone()),
            Err(NoModel::Problem(msg)) => ("status-error", msg.clone()),
        })
    });
    view! {
        <p class=move || format!("model-status {}", line.get().0) role="status" aria-live="polite" data-testid="model-status">
            {move || line.get().1}
        </p>
    }
}
