//! Live mode as the on-demand bundle runs it (`src/bin/live.rs`): the hosts,
//! their models, the target GPU and the plan, kept outside any framework, and
//! drawn into the containers the page leaves for it (the status chip, the
//! connect panel's body, the host list, "fits now" under the verdict, the
//! fleet view).
//!
//! By job: [`state`] (the hosts, the target GPU, the plan), [`commands`]
//! (what the person or the page asks: connect, remove, check the plan on a
//! GPU, probe), [`events`] (the delegated handlers, decoding
//! [`crate::html::Action`]) and [`draw`] (the panels into the DOM).
//!
//! Every panel is escaped HTML ([`super::view_model::panels`]) set with
//! `innerHTML` only when it changed; buttons carry `data-action` and one
//! delegated handler per container acts on them. The page hands the bundle
//! its computed plan ([`set_plan`], `live::plan`) and a callback that sets the
//! calculator's GPU input; nothing else of the calculator is touched.

mod commands;
mod draw;
mod events;
mod state;

use js_sys::{Function, Promise};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::window;

pub use commands::{connect, live_hosts, redraw, set_plan, update};
pub use state::log;

use super::{fleet, store};
use commands::known;
use draw::render;
use events::{draw_connect_form, listen, on_host_change, on_host_click, on_now_click};
use state::{HOSTS, NOW, with};

/// Starts live mode: draws the connect form, then connects to the agent that
/// served the page (`fragment_token`, read by the page before anything
/// rewrote the URL) and to the agents this tab (or a remembered list) knew.
pub fn start(use_gpu: Function, fragment_token: Option<String>) {
    // Live mode's styles are its own (`web/live.css`), not the first load's:
    // nothing is drawn before they have loaded (or failed to).
    let styled = stylesheet("./live.css");
    wasm_bindgen_futures::spawn_local(async move {
        let _ = styled.await;
        begin(use_gpu, fragment_token);
    });
}

/// Starts loading the stylesheet at `url` (relative to the page); the future
/// ends when it has loaded or failed (the panels then work unstyled).
fn stylesheet(url: &str) -> JsFuture {
    let add = Function::new_with_args(
        "u",
        "return new Promise(r => { const l = document.createElement('link'); l.rel = 'stylesheet'; \
         l.href = new URL(u, document.baseURI).href; l.onload = l.onerror = () => r(); document.head.append(l); })",
    );
    let started = add.call1(&JsValue::NULL, &url.into()).map(JsCast::unchecked_into::<Promise>);
    JsFuture::from(started.unwrap_or_else(|_| Promise::resolve(&JsValue::UNDEFINED)))
}

fn begin(use_gpu: Function, fragment_token: Option<String>) {
    let (saved, remembered) = store::load();
    with(|s| {
        s.use_gpu = Some(use_gpu);
        s.remember = remembered;
        s.next_id = s.next_id.max(1);
    });
    draw_connect_form(remembered);
    listen(HOSTS, "click", on_host_click);
    listen(HOSTS, "change", on_host_change);
    listen(NOW, "click", on_now_click);
    fleet::start();
    if let Some(token) = fragment_token {
        let loc = window().map(|w| w.location());
        let host = loc.as_ref().and_then(|l| l.host().ok()).unwrap_or_default();
        let https = loc.as_ref().and_then(|l| l.protocol().ok()).is_some_and(|p| p == "https:");
        let url = format!("{}://{host}/ws", if https { "wss" } else { "ws" });
        if let Err(e) = connect(&url, &token) {
            log(&format!("live: {e}"));
        }
    }
    for (url, token) in saved {
        if known(&url).is_none() {
            let _ = connect(&url, &token);
        }
    }
    render();
}
