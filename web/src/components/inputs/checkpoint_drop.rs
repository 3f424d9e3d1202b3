//! Read a local checkpoint: dropped or picked `.safetensors` / `.gguf`
//! files, whose headers the reader bundle reads with `File.slice` (nothing
//! is uploaded). The model becomes `file=NAME` in the link, with its bytes.

use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::link::ModelSource;
use wasm_bindgen::JsCast;
use web_sys::{FileList, HtmlInputElement};

use crate::state::{reader, use_app};
use crate::view_model::hub::HubState;

#[component]
pub fn CheckpointDrop() -> impl IntoView {
    let app = use_app();
    let error = RwSignal::new(String::new());
    let read = move |files: FileList| {
        let files = js_sys::Array::from(&files);
        error.set(String::new());
        spawn_local(async move {
            let got = match reader::ready(app).await {
                Ok(r) => r.local(&files).await,
                Err(e) => HubState::Failed {
                    id: String::new(),
                    message: format!("The model reader could not load: {e}"),
                    kept: None,
                },
            };
            match &got {
                HubState::Loaded { id, checkpoint_bytes, .. } => {
                    let (name, bytes) = (id.clone(), *checkpoint_bytes);
                    app.hub.set(got);
                    app.edit(|s| {
                        s.model = ModelSource::Local(name);
                        s.checkpoint_bytes = bytes;
                    });
                }
                HubState::Failed { message, .. } => error.set(message.clone()),
                HubState::Idle | HubState::Loading { .. } => {}
            }
        });
    };
    view! {
        // Files dropped on a file input become its files (and fire `change`):
        // the input is the drop zone, with no drag handlers of its own.
        <div class="field" data-testid="checkpoint-drop">
            <label for="checkpoint-files">".safetensors shards (with config.json and the index) or a .gguf (all its parts)"</label>
            <input id="checkpoint-files" type="file" multiple accept=".safetensors,.gguf,.json" data-testid="checkpoint-files"
                on:change=move |ev| {
                    let input = ev.target().and_then(|t| t.dyn_into::<HtmlInputElement>().ok());
                    if let Some(f) = input.and_then(|i| i.files()) { read(f) }
                }/>
            <p class="hint">"Drop the files here or pick them. Only their headers are read, in this browser: nothing is uploaded."</p>
            <p class="error" role="alert" data-testid="checkpoint-error">{move || error.get()}</p>
        </div>
    }
}
