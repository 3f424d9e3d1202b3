//! Whether an agent refused this page's origin. A WebSocket whose upgrade the
//! agent answers with HTTP 403 (`forbidden_origin`, docs/protocol.md) fails
//! in the browser exactly like an agent that is not there (close code 1006,
//! no status, no body), so the page asks the agent's HTTP side the same
//! question, with two requests the browser lets it read the outcome of:
//!
//! 1. `GET /api/fleet` in `no-cors` mode resolves (an opaque answer) when
//!    anything answers HTTP there, and fails only when nothing does;
//! 2. `OPTIONS /api/fleet` in `cors` mode resolves only when the agent's
//!    CORS preflight allows this origin: the same `origin_allowed` check as
//!    the WebSocket upgrade (agent/src/server/fleet.rs, ws.rs).
//!
//! Reachable but not allowed: refused for good; retrying gets the same answer.

use js_sys::Promise;
use wasm_bindgen_futures::JsFuture;
use web_sys::{RequestInit, RequestMode, window};

use super::fleet::fleet_url;

async fn answers(url: &str, method: &str, mode: RequestMode) -> bool {
    let Some(w) = window() else { return false };
    let init = RequestInit::new();
    init.set_method(method);
    init.set_mode(mode);
    let promise: Promise = w.fetch_with_str_and_init(url, &init);
    JsFuture::from(promise).await.is_ok()
}

/// Whether the agent at `ws_url` answers HTTP but does not allow this page's origin.
pub async fn refused(ws_url: &str) -> bool {
    let Some(url) = fleet_url(ws_url) else { return false };
    answers(&url, "GET", RequestMode::NoCors).await && !answers(&url, "OPTIONS", RequestMode::Cors).await
}
