//! "Diagnose an OOM": paste an error or a whole log; the page reads its
//! figures, ranks the causes against the current plan, walks the checklist
//! and gives the fixes. The text stays out of the share link unless the
//! person ticks "include it in the link".
//!
//! The parser and the diagnosis live in a second wasm bundle
//! (`diagnose.js`, from `src/bin/diagnose.rs`), fetched the first time the
//! view opens: the first load of the page does without them. The page hands
//! it the plan as a share-link query and sets the HTML it returns.

use std::cell::RefCell;

use js_sys::{Array, Function, Promise, Reflect};
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::link::encode;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::components::answer::panel;
use crate::html::Html;
use crate::state::{AppState, use_app};
use crate::view_model::hub::HubState;

/// The on-demand bundle, next to the page (relative: any host, any sub-path).
const BUNDLE: &str = "./diagnose.js";

/// The bundle's exports.
#[derive(Debug)]
struct Bundle {
    /// `findings(query, hub_id, hub_config, hub_checkpoint, text)`: the view's HTML.
    findings: Function,
    /// `compact(text)`: the text for the share link.
    compact: Function,
}

thread_local! {
    static BUNDLE_FNS: RefCell<Option<Bundle>> = const { RefCell::new(None) };
}

/// Where an on-demand bundle stands (this view's, and live mode's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Load {
    Idle,
    Loading,
    Ready,
    Failed(String),
}

/// Imports the wasm-bindgen module at `url` (relative to the page) and
/// initialises its wasm; returns the module's exports.
pub(crate) async fn import_bundle(url: &str) -> Result<JsValue, JsValue> {
    let import = Function::new_with_args("u", "return import(new URL(u, document.baseURI).href)");
    let module = JsFuture::from(import.call1(&JsValue::NULL, &url.into())?.unchecked_into::<Promise>()).await?;
    let init: Function = Reflect::get(&module, &"default".into())?.dyn_into()?;
    JsFuture::from(init.call0(&JsValue::NULL)?.unchecked_into::<Promise>()).await?;
    Ok(module)
}

async fn load_bundle() -> Result<Bundle, JsValue> {
    let module = import_bundle(BUNDLE).await?;
    let get = |name: &str| Reflect::get(&module, &name.into())?.dyn_into::<Function>();
    Ok(Bundle { findings: get("findings")?, compact: get("compact")? })
}

/// The plan as the on-demand bundles take it: the share-link query, then the
/// hub's answer for a `hf=` or `file=` model (id, config.json, safetensors
/// total, the encoded checkpoint model; empty when none). Tracks the inputs and the hub.
pub(crate) fn plan_args(app: AppState) -> Array {
    let args = Array::new();
    args.push(&app.inputs.with(encode).into());
    app.hub.with(|h| {
        let (id, config, bytes, model) = match h {
            HubState::Loaded { id, config, checkpoint_bytes, checkpoint } => (
                id.as_str(),
                config.as_str(),
                checkpoint_bytes.map(|b| b.to_string()).unwrap_or_default(),
                checkpoint.as_slice(),
            ),
            _ => ("", "", String::new(), &[][..]),
        };
        args.push(&id.into());
        args.push(&config.into());
        args.push(&bytes.into());
        args.push(&js_sys::Uint8Array::from(model));
    });
    args
}

pub(crate) fn why(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).or_else(|| e.as_string()).unwrap_or_default()
}

#[component]
pub fn Diagnose() -> impl IntoView {
    let app = use_app();
    let open = app.oom_text.with_untracked(|t| !t.is_empty());
    let load = RwSignal::new(Load::Idle);
    let start = move || {
        if load.get_untracked() != Load::Idle {
            return;
        }
        load.set(Load::Loading);
        spawn_local(async move {
            match load_bundle().await {
                Ok(b) => {
                    BUNDLE_FNS.with(|slot| *slot.borrow_mut() = Some(b));
                    load.set(Load::Ready);
                    // An `oom=` link: the diagnosis is what it was sent for.
                    if open {
                        crate::components::layout::focus_id("diagnose-heading");
                    }
                }
                Err(e) => load.set(Load::Failed(why(&e))),
            }
        });
    };
    if open {
        start();
    }
    // Keeps the link's copy of the text current (compacted by the bundle).
    Effect::new(move |_| {
        if load.get() != Load::Ready {
            return;
        }
        let text: JsValue = app.oom_text.with(|t| t.as_str().into());
        let compact = BUNDLE_FNS
            .with(|b| b.borrow().as_ref().and_then(|b| b.compact.call1(&JsValue::NULL, &text).ok()))
            .and_then(|v| v.as_string());
        app.oom_link.set(compact);
    });
    let findings = move || {
        if app.oom_text.with(|t| t.trim().is_empty()) {
            return String::new();
        }
        match load.get() {
            Load::Idle | Load::Loading => "<p class=\"hint\" role=\"status\">Loading the diagnosis…</p>".to_owned(),
            Load::Failed(e) => {
                let mut h = Html::new();
                h.raw("<p class=\"error\" role=\"alert\">The diagnosis could not load: ").t(&e).raw("</p>");
                h.finish()
            }
            Load::Ready => {
                let args = plan_args(app);
                app.oom_text.with(|t| args.push(&t.as_str().into()));
                BUNDLE_FNS
                    .with(|b| b.borrow().as_ref().and_then(|b| b.findings.apply(&JsValue::NULL, &args).ok()))
                    .and_then(|v| v.as_string())
                    .unwrap_or_default()
            }
        }
    };
    view! {
        <details class="card diagnose" id="diagnose" data-testid="diagnose" open=open on:toggle=move |_| start()>
            <summary><h2 id="diagnose-heading" tabindex="-1">"Diagnose an OOM"</h2></summary>
            <p class="hint">"Paste a CUDA out-of-memory error (PyTorch, vLLM, llama.cpp) or a whole log. It is checked against the plan above."</p>
            <label for="oom-text" class="sr-only">"The error or log"</label>
            <textarea id="oom-text" data-testid="oom-text" rows="6" spellcheck="false"
                placeholder="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate …"
                prop:value=move || app.oom_text.get() on:input=move |ev| app.oom_text.set(event_target_value(&ev))/>
            <label class="check">
                <input type="checkbox" data-testid="oom-share" prop:checked=move || app.share_oom.get()
                    on:change=move |ev| app.share_oom.set(event_target_checked(&ev))/>
                " Include the error in the share link"
            </label>
            {panel(findings)}
        </details>
    }
}
