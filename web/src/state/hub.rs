//! Loading a model from the Hugging Face hub (or a mirror given by `hub=`):
//! `config.json`, then the exact size: `model.safetensors.index.json`, or for
//! a single-file checkpoint the header of `model.safetensors`, read with HTTP
//! Range requests (its first 100 kB, and the rest of a longer header) — never
//! the tensor data.
//!
//! The page only [`watch`]es; the fetch and its parsing ([`load`]) run in
//! the on-demand reader bundle (`src/bin/reader.rs`, `super::reader`).

use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::arch::Architecture;
use shared::link::ModelSource;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{RequestInit, Response};

use super::AppState;
use super::reader;
use crate::view_model::hub::{HubFailure, HubState, failure_message, file_url};

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
            let result = match reader::ready(state).await {
                Ok(r) => r.hub(&base, &id).await,
                Err(e) => HubState::Failed { id: id.clone(), message: format!("The model reader could not load: {e}") },
            };
            // A slower answer for a model no longer chosen is dropped.
            if state.inputs.with_untracked(|s| s.model == ModelSource::Hub(id.clone())) {
                state.hub.set(result);
            }
        });
    });
}

/// The hub's answer for `id`: its config.json and, when the checkpoint's
/// headers say it, its exact size in bytes; else a message a person can act on.
pub async fn load(base: &str, id: &str) -> Result<(String, Option<u64>), String> {
    let config = match fetch_text(&file_url(base, id, "config.json")).await {
        Ok(text) if Architecture::from_config_json(&text).is_ok() => text,
        Ok(_) => return Err(failure_message(base, id, HubFailure::Unreadable)),
        Err(f) => return Err(failure_message(base, id, f)),
    };
    let checkpoint_bytes = match fetch_text(&file_url(base, id, "model.safetensors.index.json")).await {
        Ok(t) => shared::safetensors::total_bytes(&t).ok(),
        // Single-file checkpoints have no index: read the file's header.
        Err(_) => single_file_bytes(&file_url(base, id, "model.safetensors")).await,
    };
    Ok((config, checkpoint_bytes))
}

/// The first read of a header (as the CLI's `--hf` makes it).
const FIRST_READ: u64 = 100_000;

/// The weight bytes a safetensors file's header describes; `None` when it
/// cannot be read (the weights are then estimated).
async fn single_file_bytes(url: &str) -> Option<u64> {
    let mut bytes = fetch_range(url, 0, FIRST_READ).await?;
    let n = shared::safetensors::header_len(&bytes, None).ok()?;
    let end = 8 + n;
    if (bytes.len() as u64) < end {
        let have = bytes.len() as u64;
        bytes.extend(fetch_range(url, have, end - have).await?);
    }
    let json = std::str::from_utf8(bytes.get(8..end as usize)?).ok()?;
    shared::safetensors::total_bytes(json).ok()
}

/// Bytes `start .. start + len` of a file (a server that ignores Range sends
/// the whole file: only the range asked for is kept).
async fn fetch_range(url: &str, start: u64, len: u64) -> Option<Vec<u8>> {
    let init = RequestInit::new();
    let headers = js_sys::Object::new();
    js_sys::Reflect::set(&headers, &"Range".into(), &format!("bytes={start}-{}", start + len - 1).into()).ok()?;
    init.set_headers(&headers);
    let response = JsFuture::from(window().fetch_with_str_and_init(url, &init)).await.ok()?;
    let response: Response = response.dyn_into().ok()?;
    if !response.ok() {
        return None;
    }
    let buffer = JsFuture::from(response.array_buffer().ok()?).await.ok()?;
    let all = js_sys::Uint8Array::new(&buffer).to_vec();
    let skip = if response.status() == 206 { 0 } else { start as usize };
    Some(all.into_iter().skip(skip).take(len as usize).collect())
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
