//! Which model is in use, or why none is (loading, not found, gated…); a
//! hub fetch that failed, with Retry and the config paste.

use leptos::prelude::*;
use shared::link::ModelSource;

use crate::components::layout::focus_id;
use crate::state::use_app;
use crate::view_model::hub::HubState;
use crate::view_model::resolve::{NoModel, architecture_note, weights_note};

#[component]
pub fn ModelStatus() -> impl IntoView {
    let app = use_app();
    let line = Memo::new(move |_| {
        app.model.with(|m| match m {
            // Where the weight figure comes from (the CLI JSON's `weights_source`),
            // in the same line: a line of its own cost ~3 kB of first load.
            Ok(m) => match app.hub.with(|h| match h {
                HubState::Failed { message, kept: Some(kept), .. } => {
                    app.inputs.with(|s| &s.model == kept).then(|| message.clone())
                }
                _ => None,
            }) {
                Some(message) => ("status-error", format!("{message} Kept the plan of {}.", m.name)),
                None => ("status-ok", {
                    let weights = app.estimate.with(|e| e.as_ref().map(weights_note)).unwrap_or_default();
                    let mut line = format!("Using {}", m.name);
                    if !weights.is_empty() {
                        line.push_str(". ");
                        line.push_str(&weights);
                    }
                    line
                }),
            },
            Err(NoModel::Loading(msg)) => ("status-loading", msg.clone()),
            Err(NoModel::Problem(msg)) => ("status-error", msg.clone()),
        })
    });
    // Whether the figures rest on a family reader, or on a guess / the tensors.
    let note = Memo::new(move |_| app.model.with(|m| m.as_ref().ok().and_then(architecture_note)));
    // A failed hub fetch, while its model (or the one kept) is still chosen:
    // its id. (Its message is the status line's, and Retry is hidden rather
    // than shown: a memo and a `<Show>` of their own cost first-load bytes.)
    let failed = move || {
        app.hub.with(|h| match h {
            HubState::Failed { id, kept, .. } => app
                .inputs
                .with(|s| match kept {
                    Some(kept) => &s.model == kept,
                    None => s.model == ModelSource::Hub(id.clone()),
                })
                .then(|| id.clone()),
            _ => None,
        })
    };
    let retry = move |_| {
        if let Some(id) = untrack(failed) {
            app.hub.set(HubState::Idle);
            app.edit(|s| s.model = ModelSource::Hub(id));
        }
    };
    let paste = move |_| {
        if let Some(d) = document().get_element_by_id("config-details") {
            let _ = d.set_attribute("open", "");
        }
        focus_id("config-text");
    };
    view! {
        <p class=move || format!("model-status {}", line.get().0) role="status" aria-live="polite" data-testid="model-status">
            {move || line.get().1}
        </p>
        <Show when=move || note.with(Option::is_some)>
            <p class="model-status status-warning" role="note" data-testid="architecture-note">
                {move || note.get().unwrap_or_default()}
            </p>
        </Show>
        <p class="model-status" data-testid="hub-failed" hidden=move || failed().is_none()>
            <button type="button" data-testid="hub-retry" on:click=retry>"Retry"</button>
            " "<button type="button" data-testid="hub-paste-config" on:click=paste>"Paste its config.json"</button>
        </p>
    }
}
