//! Loading a model from the Hugging Face hub (or a mirror given by `hub=`):
//! `config.json`, then `model.safetensors.index.json` for the exact size.

use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::arch::Architecture;
use shared::link::ModelSource;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::Response;

use super::AppState;
use crate::vm::hub::{HubFailure, HubState, failure_message, file_url};

/// Fetches whenever the inputs name a hub model that is not loaded yet.
pub fn watch(state: AppState) {
    Effect::new(move |_| {
        let wanted = state.inputs.with(|s| match &s.model {
            ModelSource::Hub(id) => Some((id.clone(), s.hub_base().to_owned())),
            _ => None,
        });
        let Some((id, base)) = wanted else { return };
        let known = state.hub.with_untracked(|h| match h {
            HubState::Loading { id: x } | HubState::Loaded { id: x, .. } | HubState::Failed { id: x, .. } => x == &id,
            HubState::Idle => false,
        });
        if known {
            return;
        }
        state.hub.set(HubState::Loading { id: id.clone() });
        spawn_local(async move {
            let result = load(&base, &id).await;
            // A slower answer for a model no longer chosen is dropped.
            if state.inputs.with_untracked(|s| s.model == ModelSource::Hub(id.clone())) {
                state.hub.set(result);
            }
        });
    });
}

async fn load(base: &str, id: &str) -> HubState {
    let config = match fetch_text(&file_url(base, id, "config.json")).await {
        Ok(text) if Architecture::from_config_json(&text).is_ok() => text,
        Ok(_) => return failed(base, id, HubFailure::Unreadable),
        Err(f) => return failed(base, id, f),
    };
    // Single-file checkpoints have no index; the weights are then estimated.
    let checkpoint_bytes = fetch_text(&file_url(base, id, "model.safetensors.index.json"))
        .await
        .ok()
        .and_then(|t| shared::safetensors::total_bytes(&t).ok());
    HubState::Loaded { id: id.to_owned(), config, checkpoint_bytes }
}

fn failed(base: &str, id: &str, f: HubFailure) -> HubState {
    HubState::Failed { id: id.to_owned(), message: failure_message(base, id, f) }
}

async fn fetch_text(url: &str) -> Result<String, HubFailure> {
    let response = JsFuture::from(window().fetch_with_str(url)).await.map_err(|_| HubFailure::Unreachable)?;
    let response: Response = response.dyn_into().map_err(|_| HubFailure::Unreachable)?;
    if !response.ok() {
        return Err(HubFailure::Status(response.status()));
    }
    let text = response.text().map_err(|_| HubFailure::Unreadable)?;
    JsFuture::from(text).await.ok().and_then(|v| v.as_string()).ok_or(HubFailure::Unreadable)
}
