//! The URL side of the state: read the query once at start, then keep it
//! current with `history.replaceState` (no history entry per keystroke).

use leptos::prelude::*;
use shared::link::{Decoded, LinkState, decode_with, encode};
use wasm_bindgen::JsValue;

/// The page's query string.
pub fn query() -> String {
    window().location().search().unwrap_or_default()
}

/// The state the page opens with (a `cfg=` config checked by the reader,
/// loaded before the page mounts: see `main.rs`).
pub fn initial() -> Decoded {
    decode_with(&query(), &super::reader::check_config)
}

/// Mirrors the inputs into the address bar.
pub fn sync(app: super::AppState) {
    Effect::new(move |_| {
        let query = encode(&app.link_state());
        if let Ok(history) = window().history() {
            // A failure leaves the old URL; the page itself keeps working.
            let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&format!("?{query}")));
        }
    });
}

/// The full share link for the current inputs.
pub fn share_link(inputs: &LinkState) -> String {
    let location = window().location();
    let origin = location.origin().unwrap_or_default();
    let path = location.pathname().unwrap_or_default();
    format!("{origin}{path}?{}", encode(inputs))
}
