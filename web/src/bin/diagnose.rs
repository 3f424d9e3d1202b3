//! The "Diagnose an OOM" bundle: a second, small wasm module (no Leptos) that
//! the page fetches only when the person opens that view. It holds the error
//! parser and the diagnosis, which the first load then does without.
//!
//! The page calls [`findings`] with the current share-link query (the plan),
//! the hub's answer for a `hf=` model, and the pasted text, and sets the
//! returned HTML (see `web::view_model::diagnose::findings_html`); [`compact`] gives
//! the text a share link carries.

use wasm_bindgen::prelude::*;
use web::view_model::diagnose::findings_for;
use web::view_model::hub::HubState;
use web::view_model::read::Handed;

/// The diagnose view's HTML. `hub_id` is empty unless the plan's model came
/// from the hub, then `hub_config` is its config.json and `hub_checkpoint`
/// its safetensors total in bytes (empty when unknown), `hub_model` the
/// model its checkpoint headers give (empty when none); `read` is the page's
/// reading of a model that is not a preset (`web::view_model::read::Handed`).
#[wasm_bindgen]
pub fn findings(
    query: &str,
    hub_id: &str,
    hub_config: &str,
    hub_checkpoint: &str,
    hub_model: &[u8],
    read: Option<Vec<u8>>,
    text: &str,
) -> String {
    let hub = HubState::from_bundle_args(hub_id, hub_config, hub_checkpoint, hub_model);
    findings_for(query, &hub, &Handed(read.as_deref().unwrap_or_default()), text)
}

/// The pasted error as a share link carries it (`None` when too long).
#[wasm_bindgen]
pub fn compact(text: &str) -> Option<String> {
    shared::link::compact_oom(text.trim())
}

fn main() {}
