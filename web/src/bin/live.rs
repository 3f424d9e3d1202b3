//! The live-mode bundle: a second on-demand wasm module (no Leptos) that the
//! page fetches on first use of "Connect to a GPU host", or at once when the
//! page was opened with `#token=` or this tab knows agents. It holds the
//! WebSocket client, the hosts' models and panels, probes and "fits now"
//! (`web::live`), which the first load then does without.
//!
//! The page calls [`start`] once with its `useGpu(catalogId, bytes)` callback
//! (sets the calculator's GPU input) and the `#token=` it read, and [`plan`]
//! whenever the calculator's plan changes. The page computes the plan with
//! its engines and hands over what live mode draws, so this bundle carries
//! no engine's rules, link decoding or model readers.

use wasm_bindgen::prelude::*;

/// Starts live mode in the page's containers and connects by itself.
#[wasm_bindgen]
pub fn start(use_gpu: js_sys::Function, fragment_token: Option<String>) {
    web::live::runtime::start(use_gpu, fragment_token);
}

/// The calculator's plan as the page computed it for live mode, encoded
/// (`web::live::plan::encode`: its units, each GPU's budget, the findings'
/// figures and each GPU's probe), whenever it changes.
#[wasm_bindgen]
pub fn plan(handed: &[u8]) {
    web::live::runtime::set_plan(handed);
}

fn main() {}
