//! The live-mode bundle: a second on-demand wasm module (no Leptos) that the
//! page fetches on first use of "Connect to a GPU host", or at once when the
//! page was opened with `#token=` or this tab knows agents. It holds the
//! WebSocket client, the hosts' models and panels, probes and "fits now"
//! (`web::live`), which the first load then does without.
//!
//! The page calls [`start`] once with its `useGpu(catalogId, bytes)` callback
//! (sets the calculator's GPU input) and the `#token=` it read, and [`plan`]
//! whenever the calculator's plan changes.

use wasm_bindgen::prelude::*;

/// Starts live mode in the page's containers and connects by itself.
#[wasm_bindgen]
pub fn start(use_gpu: js_sys::Function, fragment_token: Option<String>) {
    web::live::runtime::start(use_gpu, fragment_token);
}

/// The calculator's plan as a share-link query (and, for a `hf=` model, the
/// hub's answer: its id, config.json and safetensors total, empty if none;
/// then the page's reading of a model that is not a preset, empty if none).
#[wasm_bindgen]
pub fn plan(
    query: &str,
    hub_id: &str,
    hub_config: &str,
    hub_checkpoint: &str,
    hub_model: &[u8],
    read: Option<Vec<u8>>,
) {
    let hub = web::view_model::hub::HubState::from_bundle_args(hub_id, hub_config, hub_checkpoint, hub_model);
    web::live::runtime::set_plan(query, &hub, read.as_deref().unwrap_or_default());
}

fn main() {}
