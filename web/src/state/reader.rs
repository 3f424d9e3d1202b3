//! The model reader: the on-demand bundle (`reader.js`, from
//! `src/bin/reader.rs`) that holds the `config.json` family readers, the
//! safetensors header readers and the hub fetch, so that the first load does
//! without them (presets come from their build-time reading,
//! `view_model::presets`). It is fetched the first time the inputs name a model that
//! is not a preset (a pasted config, a parameter count, a hub model), when
//! the person applies a pasted config, and before the page mounts when its
//! link carries `cfg=` (the link's config is checked as it is decoded).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function, Promise, Reflect, Uint8Array};
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::arch::Architecture;
use shared::link::ModelSource;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use super::AppState;
use super::bundles::{Load, import_bundle, why};
use crate::view_model::hub::HubState;
use crate::view_model::presets::decode;
use crate::view_model::read::Reader;

/// The on-demand bundle, next to the page (relative: any host, any sub-path).
const BUNDLE: &str = "./reader.js";

/// The bundle's exports (see `src/bin/reader.rs`).
#[derive(Debug)]
pub struct Bundle {
    config: Function,
    stand_in: Function,
    compact: Function,
    index_total: Function,
    hub: Function,
    local: Function,
}

thread_local! {
    static BUNDLE_FNS: RefCell<Option<Rc<Bundle>>> = const { RefCell::new(None) };
    /// The import under way, shared by every caller that waits for it.
    static IMPORT: RefCell<Option<Promise>> = const { RefCell::new(None) };
    /// The last architecture the bundle answered, encoded, as the bundle's
    /// `Uint8Array` (`undefined` when the last reading failed): handed on
    /// with the plan as it is ([`last_reading`]).
    static LAST_READ: RefCell<JsValue> = const { RefCell::new(JsValue::UNDEFINED) };
}

fn loaded() -> Option<Rc<Bundle>> {
    BUNDLE_FNS.with(|b| b.borrow().clone())
}

/// The bundle, imported once (a failed import is tried again next time).
pub async fn load() -> Result<Rc<Bundle>, String> {
    if let Some(b) = loaded() {
        return Ok(b);
    }
    let import =
        IMPORT.with(|i| i.borrow_mut().get_or_insert_with(|| future_to_promise(import_bundle(BUNDLE))).clone());
    let module = match JsFuture::from(import).await {
        Ok(m) => m,
        Err(e) => {
            IMPORT.with(|i| i.borrow_mut().take());
            return Err(why(&e));
        }
    };
    if let Some(b) = loaded() {
        return Ok(b);
    }
    let get =
        |name: &str| Reflect::get(&module, &name.into()).and_then(|f| f.dyn_into::<Function>()).map_err(|e| why(&e));
    let bundle = Rc::new(Bundle {
        config: get("config")?,
        stand_in: get("stand_in")?,
        compact: get("compact")?,
        index_total: get("index_total")?,
        hub: get("hub")?,
        local: get("local")?,
    });
    BUNDLE_FNS.with(|b| *b.borrow_mut() = Some(bundle.clone()));
    Ok(bundle)
}

/// [`load`], recording the outcome in the page's state (the model memo
/// waits on it).
pub async fn ready(app: AppState) -> Result<Rc<Bundle>, String> {
    if app.reader.get_untracked() == Load::Idle {
        app.reader.set(Load::Loading);
    }
    let result = load().await;
    let now = match &result {
        Ok(_) => Load::Ready,
        Err(e) => Load::Failed(e.clone()),
    };
    if app.reader.get_untracked() != now {
        app.reader.set(now);
    }
    result
}

/// Where the reader stands when the page starts (loaded already when the
/// link carried `cfg=`).
pub fn initial() -> Load {
    if loaded().is_some() { Load::Ready } else { Load::Idle }
}

/// Fetches the reader as soon as the inputs name a model that needs it.
pub fn watch(app: AppState) {
    Effect::new(move |_| {
        let needed = app.inputs.with(|s| !matches!(s.model, ModelSource::Preset(_)));
        if needed && app.reader.get() == Load::Idle {
            spawn_local(async move {
                let _ = ready(app).await;
            });
        }
    });
}

/// The check of a link's `cfg=` config as it is decoded: the reader's, when
/// loaded (see [`needed_by`]).
pub fn check_config(json: &str) -> Result<(), String> {
    match loaded() {
        Some(b) => b.call(&b.config, json).map(drop),
        None => Ok(()),
    }
}

/// The page's reading of the plan's model when it is not a preset: the
/// encoded architecture the bundle last answered (the model memo asks only
/// for the current model's), or `undefined`, as the diagnose bundle takes it (`view_model::read::Handed`, which only a model that
/// needs a reader consults).
pub fn last_reading() -> JsValue {
    LAST_READ.with(|r| r.borrow().clone())
}

/// Whether a page query carries a pasted config (`cfg=`).
pub fn needed_by(query: &str) -> bool {
    let query = query.strip_prefix('?').unwrap_or(query);
    query.split('&').any(|pair| shared::link::percent_decode(pair.split('=').next().unwrap_or_default()) == "cfg")
}

fn text(v: &JsValue) -> String {
    v.as_string().unwrap_or_default()
}

impl Bundle {
    /// Calls a `(string) -> value` export that throws its error as a string.
    fn call(&self, f: &Function, arg: &str) -> Result<JsValue, String> {
        f.call1(&JsValue::NULL, &arg.into()).map_err(|e| why(&e))
    }

    fn call1(&self, f: &Function, arg: &str) -> Result<String, String> {
        self.call(f, arg).map(|v| text(&v))
    }

    /// Calls an export that answers an encoded architecture.
    fn architecture(&self, f: &Function, arg: &str) -> Result<Architecture, String> {
        let bytes = self.call(f, arg).and_then(|v| v.dyn_into::<Uint8Array>().map_err(|_| "not bytes".to_owned()));
        LAST_READ.with(|r| *r.borrow_mut() = bytes.as_ref().map_or(JsValue::UNDEFINED, JsValue::from));
        decode(&bytes?.to_vec())
    }

    /// `compact(json)`: the config as a link carries it, or the reader's error.
    pub fn compact(&self, json: &str) -> Result<String, String> {
        self.call1(&self.compact, json)
    }

    /// `index_total(json)`: the weight bytes a `model.safetensors.index.json` names.
    pub fn index_total(&self, json: &str) -> Result<u64, String> {
        self.call1(&self.index_total, json)?.parse().map_err(|_| "not a byte count".to_owned())
    }

    /// `hub(base, id, progress)`: config.json and the model its checkpoint
    /// headers give, from the hub; `progress(read, of)` after each header.
    pub async fn hub(&self, base: &str, id: &str, progress: &Closure<dyn Fn(String, String)>) -> HubState {
        let answer = self.hub.call3(&JsValue::NULL, &base.into(), &id.into(), progress.as_ref());
        answered(id, answer, 0).await
    }

    /// `local(files)`: the model the headers of dropped files give, named
    /// after its first file.
    pub async fn local(&self, files: &Array) -> HubState {
        answered("", self.local.call1(&JsValue::NULL, files), 1).await
    }
}

/// A bundle's `Promise<[id?, config, bytes, model]>` as the page's state:
/// `at` is where `config` stands (the id comes first when the bundle names it).
async fn answered(id: &str, answer: Result<JsValue, JsValue>, at: u32) -> HubState {
    let answer = match answer {
        Ok(p) => JsFuture::from(p.unchecked_into::<Promise>()).await,
        Err(e) => Err(e),
    };
    match answer {
        Ok(v) => {
            let a: Array = v.unchecked_into();
            HubState::Loaded {
                id: if at == 0 { id.to_owned() } else { text(&a.get(0)) },
                config: text(&a.get(at)),
                checkpoint_bytes: text(&a.get(at + 1)).parse().ok(),
                checkpoint: a.get(at + 2).dyn_into::<Uint8Array>().map(|b| b.to_vec()).unwrap_or_default(),
            }
        }
        Err(e) => HubState::Failed { id: id.to_owned(), message: why(&e), kept: None },
    }
}

/// The reader as the model memo sees it: what the bundle answers once it is
/// loaded, nothing before, and an error when it could not load.
#[derive(Debug)]
pub struct BundleReader(pub Load);

impl BundleReader {
    fn read(&self, f: impl FnOnce(&Bundle) -> Result<Architecture, String>) -> Option<Result<Architecture, String>> {
        match &self.0 {
            Load::Failed(e) => Some(Err(format!("The model reader could not load: {e}"))),
            Load::Ready => loaded().map(|b| f(&b)),
            Load::Idle | Load::Loading => None,
        }
    }
}

impl Reader for BundleReader {
    fn config(&self, json: &str) -> Option<Result<Architecture, String>> {
        self.read(|b| b.architecture(&b.config, json))
    }

    fn stand_in(&self, params: u64) -> Option<Result<Architecture, String>> {
        self.read(|b| b.architecture(&b.stand_in, &params.to_string()))
    }
}
