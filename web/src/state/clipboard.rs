//! Copying the share link.

use leptos::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// Writes `text` to the clipboard; `false` when the browser refused.
pub async fn copy(text: String) -> bool {
    let promise = window().navigator().clipboard().write_text(&text);
    JsFuture::from(promise).await.is_ok()
}
