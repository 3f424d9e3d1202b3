//! Which model is in use, or why none is (loading, not found, gated…).

use leptos::prelude::*;

use crate::state::use_app;
use crate::view_model::resolve::{NoModel, architecture_note, weights_note};

#[component]
pub fn ModelStatus() -> impl IntoView {
    let app = use_app();
    let line = Memo::new(move |_| {
        app.model.with(|m| match m {
            // Where the weight figure comes from (the CLI JSON's `weights_source`),
            // in the same line: a line of its own cost ~3 kB of first load.
            Ok(m) => ("status-ok", {
                let weights = app.estimate.with(|e| e.as_ref().map(weights_note)).unwrap_or_default();
                let mut line = format!("Using {}", m.name);
                if !weights.is_empty() {
                    line.push_str(". ");
                    line.push_str(&weights);
                }
                line
            }),
            Err(NoModel::Loading(msg)) => ("status-loading", msg.clone()),
            Err(NoModel::Problem(msg)) => ("status-error", msg.clone()),
        })
    });
    // Whether the figures rest on a family reader, or on a guess / the tensors.
    let note = Memo::new(move |_| app.model.with(|m| m.as_ref().ok().and_then(architecture_note)));
    view! {
        <p class=move || format!("model-status {}", line.get().0) role="status" aria-live="polite" data-testid="model-status">
            {move || line.get().1}
        </p>
        <Show when=move || note.with(Option::is_some)>
            <p class="model-status status-warning" role="note" data-testid="architecture-note">
                {move || note.get().unwrap_or_default()}
            </p>
        </Show>
    }
}
