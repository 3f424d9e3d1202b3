//! Paste a config.json (and, optionally, a safetensors index for exact weight bytes).

use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::link::ModelSource;

use crate::state::{reader, use_app};

#[component]
pub fn ConfigPaste() -> impl IntoView {
    let app = use_app();
    let config = RwSignal::new(String::new());
    let index = RwSignal::new(String::new());
    let error = RwSignal::new(String::new());
    // The reader (an on-demand bundle) checks and compacts the config.
    let apply = move |_| {
        let (config, index) = (config.get_untracked(), index.get_untracked());
        spawn_local(async move {
            let r = match reader::ready(app).await {
                Ok(r) => r,
                Err(e) => return error.set(format!("The model reader could not load: {e}")),
            };
            let exact = if index.trim().is_empty() { Ok(None) } else { r.index_total(&index).map(Some) };
            match (r.compact(&config), exact) {
                (Ok(json), Ok(bytes)) => {
                    error.set(String::new());
                    app.edit(|s| {
                        s.model = ModelSource::Config(json);
                        s.checkpoint_bytes = bytes;
                    });
                }
                (Err(e), _) => error.set(e),
                (_, Err(e)) => error.set(format!("safetensors index: {e}")),
            }
        });
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
