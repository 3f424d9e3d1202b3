//! The model reader bundle: a wasm module (no Leptos) the page fetches the
//! first time it reads a model that is not a preset (see
//! `web::state::reader`). It holds the `config.json` family readers, the
//! safetensors and GGUF header readers with the checkpoint layout
//! (`web::state::headers`: the hub's shards and dropped files), which the
//! first load then does without. Errors are thrown as strings.

use js_sys::{Array, Function, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web::view_model::presets::encode;
use web::view_model::read::{Linked, Reader};
use web_sys::File;

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

/// A hub model, read as `headroom estimate --hf` reads it:
/// `[config.json, exact bytes or "", encoded model or empty]`, or the
/// failure's message; `progress(read, of)` (decimal strings) is called after
/// each shard header.
#[wasm_bindgen]
pub async fn hub(base: String, id: String, progress: Option<Function>) -> Result<Array, String> {
    let read = web::state::headers::hub(&base, &id, progress.as_ref()).await?;
    Ok(answer(None, read))
}

/// Dropped checkpoint files (`File`s): `[name, config.json or "", exact
/// bytes, encoded model]`, or the message naming the file that is wrong.
#[wasm_bindgen]
pub async fn local(files: Array) -> Result<Array, String> {
    let files = files.iter().filter_map(|f| f.dyn_into::<File>().ok()).collect();
    let (name, read) = web::state::headers::local(files).await?;
    Ok(answer(Some(name), read))
}

fn answer(name: Option<String>, (config, bytes, model): web::state::headers::Read) -> Array {
    let answer = Array::new();
    if let Some(name) = name {
        answer.push(&name.into());
    }
    answer.push(&config.into());
    answer.push(&bytes.map(|b| b.to_string()).unwrap_or_default().into());
    answer.push(&Uint8Array::from(model.as_slice()));
    answer
}

fn main() {}
