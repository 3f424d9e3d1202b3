//! Paste a config.json (and, optionally, a safetensors index for exact weight bytes).

use leptos::prelude::*;
use shared::link::{ModelSource, compact_config};

use crate::state::use_app;

#[component]
pub fn ConfigPaste() -> impl IntoView {
    let app = use_app();
    let config = RwSignal::new(String::new());
    let index = RwSignal::new(String::new());
    let error = RwSignal::new(String::new());
    let apply = move |_| {
        let exact = index.with_untracked(|t| {
            if t.trim().is_empty() { Ok(None) } else { shared::safetensors::total_bytes(t).map(Some) }
        });
        match (compact_config(&config.get_untracked()), exact) {
            (Ok(json), Ok(bytes)) => {
                error.set(String::new());
                app.edit(|s| {
                    s.model = ModelSource::Config(json);
                    s.checkpoint_bytes = bytes;
                });
            }
            (Err(e), _) => error.set(e.to_string()),
            (_, Err(e)) => error.set(format!("safetensors index: {e}")),
        }
    };
    view! {
        <div class="field">
            <label for="config-text">"config.json"</label>
            <textarea id="config-text" rows="5" spellcheck="false" data-testid="config-text"
                placeholder="{\"model_type\": \"llama\", \"hidden_size\": 4096, …}"
                on:input=move |ev| config.set(event_target_value(&ev)) prop:value=move || config.get()></textarea>
            <label for="index-text">"model.safetensors.index.json (optional: exact weight bytes)"</label>
            <textarea id="index-text" rows="2" spellcheck="false" data-testid="index-text"
                on:input=move |ev| index.set(event_target_value(&ev)) prop:value=move || index.get()></textarea>
            <button type="button" data-testid="config-apply" on:click=apply>"Use this config"</button>
            <p class="error" role="alert" data-testid="config-error">{move || error.get()}</p>
        </div>
    }
}
