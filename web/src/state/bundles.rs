//! The on-demand wasm bundles the page fetches after its first load
//! (`src/bin/*.rs`: the model reader, the diagnosis, live mode): how one is
//! imported, where its loading stands, and the plan as they all take it.
//!
//! The diagnose bundle (`diagnose.js`) is loaded here for "Diagnose an OOM"
//! (the error and start-up log readers stay out of the first load).

use std::cell::RefCell;

use js_sys::{Array, Function, Promise, Reflect};
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::link::encode;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::AppState;
use crate::view_model::hub::HubState;

/// Where an on-demand bundle stands.
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

/// A thrown value's message.
pub(crate) fn why(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).or_else(|| e.as_string()).unwrap_or_default()
}

/// The plan as the diagnose bundle takes it: the share-link query, then the
/// hub's answer for a `hf=` or `file=` model (id, config.json, safetensors
/// total, the encoded checkpoint model; empty when none), then the page's
/// reading of a model that is not a preset ([`super::reader::last_reading`]).
/// Tracks the inputs, the hub and the model.
pub(crate) fn plan_args(app: AppState) -> Array {
    let args = Array::new();
    args.push(&app.inputs.with(encode).into());
    // The reading is the model memo's: read it after the memo has run.
    app.model.with(|_| ());
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
        args.push(&super::reader::last_reading());
    });
    args
}

/// The diagnose bundle, next to the page (relative: any host, any sub-path).
const DIAGNOSE: &str = "./diagnose.js";

/// The diagnose bundle's exports (see `src/bin/diagnose.rs`).
#[derive(Debug)]
struct Diagnose {
    findings: Function,
    compact: Function,
}

/// What the diagnose bundle computes.
#[derive(Debug, Clone, Copy)]
pub enum DiagnoseCall {
    /// `findings(plan…, text)`: the diagnose view's HTML.
    Findings,
    /// `compact(text)`: the pasted error as a share link carries it.
    Compact,
}

thread_local! {
    static DIAGNOSE_FNS: RefCell<Option<Diagnose>> = const { RefCell::new(None) };
}

/// Fetches the diagnose bundle once; `app.diagnose` says where it stands.
pub fn load_diagnose(app: AppState) {
    load_once(app.diagnose, DIAGNOSE, |module| {
        let b = Diagnose { findings: export(&module, "findings")?, compact: export(&module, "compact")? };
        DIAGNOSE_FNS.with(|slot| *slot.borrow_mut() = Some(b));
        Ok(())
    });
}

/// Imports the bundle at `url` the first time `load` is idle and hands its
/// module to `ready`; `load` then says `Ready`, or why it failed (the
/// import's error or `ready`'s).
pub(crate) fn load_once(
    load: RwSignal<Load>,
    url: &'static str,
    ready: impl FnOnce(JsValue) -> Result<(), JsValue> + 'static,
) {
    if load.get_untracked() != Load::Idle {
        return;
    }
    load.set(Load::Loading);
    spawn_local(async move {
        match import_bundle(url).await.and_then(ready) {
            Ok(()) => load.set(Load::Ready),
            Err(e) => load.set(Load::Failed(why(&e))),
        }
    });
}

/// The function a bundle's module exports as `name`.
pub(crate) fn export(module: &JsValue, name: &str) -> Result<Function, JsValue> {
    Reflect::get(module, &name.into())?.dyn_into::<Function>()
}

/// Calls the loaded diagnose bundle; `None` before it is loaded or when the
/// call throws.
pub fn call_diagnose(call: DiagnoseCall, args: &Array) -> Option<String> {
    DIAGNOSE_FNS.with(|b| {
        let b = b.borrow();
        let b = b.as_ref()?;
        let f = match call {
            DiagnoseCall::Findings => &b.findings,
            DiagnoseCall::Compact => &b.compact,
        };
        f.apply(&JsValue::NULL, args).ok()?.as_string()
    })
}
