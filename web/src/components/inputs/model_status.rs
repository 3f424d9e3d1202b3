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
    // A failed hub fetch, while its model (or the one kept) is still chosen:
    // (the id, and the message when a kept plan is on screen).
    let failed = Memo::new(move |_| {
        app.hub.with(|h| match h {
            HubState::Failed { id, message, kept } => app.inputs.with(|s| match kept {
                Some(kept) if &s.model == kept => Some((id.clone(), format!("{message} Kept the plan above."))),
                None if s.model == ModelSource::Hub(id.clone()) => Some((id.clone(), String::new())),
                _ => None,
            }),
            _ => None,
        })
    });
    let retry = move |_| {
        if let Some((id, _)) = failed.get_untracked() {
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
        <Show when=move || failed.with(Option::is_some)>
            <p class="model-status status-error" role="alert" data-testid="hub-failed">
                {move || failed.get().map(|f| f.1).unwrap_or_default()}
                " "<button type="button" data-testid="hub-retry" on:click=retry>"Retry"</button>
                " "<button type="button" data-testid="hub-paste-config" on:click=paste>"Paste its config.json"</button>
            </p>
        </Show>
    }
}
