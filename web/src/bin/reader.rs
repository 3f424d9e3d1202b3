//! The model reader bundle: a wasm module (no Leptos) the page fetches the
//! first time it reads a model that is not a preset (see
//! `web::state::reader`). It holds the `config.json` family readers, the
//! safetensors header readers and the hub fetch, which the first load then
//! does without. Errors are thrown as strings.

use js_sys::Array;
use wasm_bindgen::prelude::*;
use web::view_model::presets::encode;
use web::view_model::read::{Linked, Reader};

/// The architecture of a `config.json`, encoded as the page's presets are
/// (`web::view_model::presets::encode`).
#[wasm_bindgen]
pub fn config(json: &str) -> Result<Vec<u8>, String> {
    let arch = Linked.config(json).unwrap_or_else(|| Err("no reader".into()))?;
    encode(&arch)
}

/// The stand-in architecture for a bare parameter count (decimal digits), encoded.
#[wasm_bindgen]
pub fn stand_in(params: &str) -> Result<Vec<u8>, String> {
    let n = params.parse().map_err(|_| format!("`{params}` is not a parameter count"))?;
    let arch = Linked.stand_in(n).unwrap_or_else(|| Err("no reader".into()))?;
    encode(&arch)
}

/// A pasted config as a share link carries it (`shared::link::compact_config`).
#[wasm_bindgen]
pub fn compact(json: &str) -> Result<String, String> {
    shared::link::compact_config(json).map_err(|e| e.to_string())
}

/// The weight bytes of a `model.safetensors.index.json`, in decimal.
#[wasm_bindgen]
pub fn index_total(json: &str) -> Result<String, String> {
    shared::safetensors::total_bytes(json).map(|b| b.to_string()).map_err(|e| e.to_string())
}

/// A hub model: `[config.json, exact bytes or ""]`, or the failure's message.
#[wasm_bindgen]
pub async fn hub(base: String, id: String) -> Result<Array, String> {
    let (config, bytes) = web::state::hub::load(&base, &id).await?;
    let answer = Array::new();
    answer.push(&config.into());
    answer.push(&bytes.map(|b| b.to_string()).unwrap_or_default().into());
    Ok(answer)
}

fn main() {}
