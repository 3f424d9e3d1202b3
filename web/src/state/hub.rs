//! Loading a model from the Hugging Face hub (or a mirror given by `hub=`):
//! `config.json`, then every safetensors shard's header that
//! `model.safetensors.index.json` names (or `model.safetensors`'s), read
//! with HTTP Range requests as `headroom estimate --hf` reads them — never
//! the tensor data.
//!
//! The page only [`watch`]es; the fetch and its parsing
//! (`super::headers::hub`) run in the on-demand reader bundle
//! (`src/bin/reader.rs`, `super::reader`), which reports each header read.

use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::link::ModelSource;
use wasm_bindgen::closure::Closure;

use super::AppState;
use super::reader;
use crate::view_model::hub::HubState;

/// Fetches whenever the inputs name a hub model that is not loaded yet. A
/// fetch that fails (offline, a typo, a gated model) goes back to the model
/// chosen before, so its plan stays on screen; the failure, with Retry and
/// the config paste, is [`crate::components::inputs::ModelStatus`]'s.
pub fn watch(state: AppState) {
    // The effect's value: the last model that was not a hub id.
    Effect::new(move |before: Option<Option<ModelSource>>| {
        let before = before.flatten();
        let wanted = state.inputs.with(|s| match &s.model {
            ModelSource::Hub(id) => Ok((id.clone(), s.hub_base().to_owned())),
            other => Err(other.clone()),
        });
        let (id, base) = match wanted {
            Ok(wanted) => wanted,
            Err(other) => return Some(other),
        };
        let known = state.hub.with_untracked(|h| match h {
            HubState::Loading { id: x, .. } | HubState::Loaded { id: x, .. } | HubState::Failed { id: x, .. } => {
                x == &id
            }
            HubState::Idle => false,
        });
        if known {
            return before;
        }
        state.hub.set(HubState::Loading { id: id.clone(), read: None });
        let kept = before.clone();
        spawn_local(async move {
            let wanted = move |id: &str| state.inputs.with_untracked(|s| s.model == ModelSource::Hub(id.to_owned()));
            let for_id = id.clone();
            // (read, of) in decimal: the closure type live mode's `useGpu` has
            // already (a new closure signature costs first-load bytes, and
            // one of `(u32, u32)` lost its table entry to `wasm-opt -Oz`).
            let progress = Closure::<dyn Fn(String, String)>::new(move |done: String, all: String| {
                if let (Ok(done), Ok(all), true) = (done.parse(), all.parse(), wanted(&for_id)) {
                    state.hub.set(HubState::Loading { id: for_id.clone(), read: Some((done, all)) });
                }
            });
            let result = match reader::ready(state).await {
                Ok(r) => r.hub(&base, &id, &progress).await,
                Err(e) => HubState::Failed {
                    id: id.clone(),
                    message: format!("The model reader could not load: {e}"),
                    kept: None,
                },
            };
            drop(progress);
            // A slower answer for a model no longer chosen is dropped.
            if !wanted(&id) {
                return;
            }
            match (result, kept) {
                (HubState::Failed { id, message, .. }, Some(kept)) => {
                    state.hub.set(HubState::Failed { id, message, kept: Some(kept.clone()) });
                    state.edit(|s| s.model = kept);
                }
                (result, _) => state.hub.set(result),
            }
        });
        before
    });
}
