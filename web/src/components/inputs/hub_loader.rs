//! Load a model by its Hugging Face id (`shared::hub`'s
//! `ORG/NAME[@REVISION][:PICK]`).

use leptos::prelude::*;
use shared::link::{ModelSource, parse_repo_id};

use crate::state::use_app;
use crate::view_model::hub::HubState;

#[component]
pub fn HubLoader() -> impl IntoView {
    let app = use_app();
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(String::new());
    let load = move || match parse_repo_id(text.get_untracked().trim()) {
        Ok(id) => {
            error.set(String::new());
            // A second click retries a failed fetch.
            app.hub.set(HubState::Idle);
            app.edit(|s| s.model = ModelSource::Hub(id));
        }
        Err(e) => error.set(e),
    };
    view! {
        <form class="field inline" on:submit=move |ev| { ev.prevent_default(); load(); }>
            <label for="hub-id">"Model id"</label>
            <input id="hub-id" type="text" placeholder="Qwen/Qwen2.5-7B-Instruct" data-testid="hub-id"
                autocomplete="off" spellcheck="false"
                on:input=move |ev| text.set(event_target_value(&ev)) prop:value=move || text.get()/>
            <button type="submit" data-testid="hub-load">"Load"</button>
            <p class="hint">"Fetches config.json and every safetensors header (or a GGUF's: id:Q4_K_M) with Range requests, never the weights."</p>
            <p class="error" role="alert" data-testid="hub-input-error">{move || error.get()}</p>
        </form>
    }
}
