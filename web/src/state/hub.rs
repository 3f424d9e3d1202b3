//! Loading a model from the Hugging Face hub (or a mirror given by `hub=`):
//! `config.json`, then every safetensors shard's header that
//! `model.safetensors.index.json` names (or `model.safetensors`'s), read
//! with HTTP Range requests as `headroom estimate --hf` reads them — never
//! the tensor data.
//!
//! The page only [`watch`]es; the fetch and its parsing
//! (`super::headers::hub`) run in the on-demand reader bundle
//! (`src/bin/reader.rs`, `super::reader`), which reports each header read.

use std::cell::RefCell;

use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::link::ModelSource;
use wasm_bindgen::closure::Closure;

use super::AppState;
use super::reader;
use crate::view_model::hub::HubState;

thread_local! {
    /// The last model that was not a hub id: where a failed fetch goes back
    /// to. (Not the effect's own value: an `Effect<Option<ModelSource>>`
    /// cost the first load more than this.)
    static BEFORE: RefCell<Option<ModelSource>> = const { RefCell::new(None) };
}

/// Fetches whenever the inputs name a hub model that is not loaded yet. A
/// fetch that fails (offline, a typo, a gated model) goes back to the model
/// chosen before, so its plan stays on screen; the failure, with Retry and
/// the config paste, is [`crate::components::inputs::ModelStatus`]'s.
pub fn watch(state: AppState) {
    Effect::new(move |_| {
        let wanted = state.inputs.with(|s| match &s.model {
            ModelSource::Hub(id) => Some((id.clone(), s.hub_base().to_owned())),
            other => {
                BEFORE.with(|b| *b.borrow_mut() = Some(other.clone()));
                None
            }
        });
        let Some((id, base)) = wanted else { return };
        let known = state.hub.with_untracked(|h| match h {
            HubState::Loading { id: x, .. } | HubState::Loaded { id: x, .. } | HubState::Failed { id: x, .. } => {
                x == &id
            }
            HubState::Idle => false,
        });
        if known {
            return;
        }
        state.hub.set(HubState::Loading { id: id.clone(), read: None });
        let kept = BEFORE.with(|b| b.borrow().clone());
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
    });
}
