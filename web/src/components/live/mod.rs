//! Live mode's loader: all the first load carries of live mode. The header's
//! status chip, the "Connect to a GPU host" panel and the containers for the
//! host panels, the fleet view and "fits now" are empty shells here; the live bundle
//! (`live.js`, from `src/bin/live.rs`, see [`crate::live`]) fills them. It is
//! fetched the first time the person opens the panel (or the chip), and at
//! once when the page was opened with `#token=` (served by the agent) or this
//! tab (or a remembered list) knows agents, so a reload reconnects.
//!
//! The page hands the bundle its plan whenever it changes, computed here with
//! the page's engines (`live::plan`: each GPU's budget, the findings' figures,
//! each GPU's probe), and a callback that sets the GPU input ("check my plan
//! on this GPU"): the only calculator state live mode changes.

use std::cell::RefCell;

use js_sys::{Function, Uint8Array};
use leptos::prelude::*;
use shared::link::GpuChoice;
use shared::live::LivePlan;
use wasm_bindgen::JsValue;
use wasm_bindgen::closure::Closure;

use crate::live::plan::{HandedPlan, encode};
use crate::live::store;
use crate::state::bundles::{Load, export, load_once};
use crate::state::{AppState, use_app};

/// The on-demand bundle, next to the page (relative: any host, any sub-path).
const BUNDLE: &str = "./live.js";

/// Whether the live bundle runs.
#[derive(Debug, Clone, Copy)]
pub struct LiveLoader {
    load: RwSignal<Load>,
}

thread_local! {
    /// The bundle's `plan(handed)`.
    static PLAN: RefCell<Option<Function>> = const { RefCell::new(None) };
    /// The `#token=` the page was opened with, for the bundle to connect with.
    static TOKEN: RefCell<Option<String>> = const { RefCell::new(None) };
}

impl LiveLoader {
    /// Fetches and starts the live bundle (once).
    pub fn start(self, app: AppState) {
        load_once(self.load, BUNDLE, move |module| {
            let (start, plan) = (export(&module, "start")?, export(&module, "plan")?);
            // The plan first, so the first drawing has the figures.
            let _ = plan.call1(&JsValue::NULL, &untrack(|| handed(app)));
            PLAN.with(|p| *p.borrow_mut() = Some(plan));
            let use_gpu = Closure::<dyn Fn(String, String)>::new(move |catalog: String, bytes: String| {
                let choice = if catalog.is_empty() {
                    bytes.parse().ok().map(GpuChoice::Custom)
                } else {
                    Some(GpuChoice::Catalog(catalog))
                };
                if let Some(choice) = choice {
                    app.edit(|s| s.gpu = choice);
                }
            })
            .into_js_value();
            let token = TOKEN.with(|t| t.borrow_mut().take()).map_or(JsValue::UNDEFINED, JsValue::from);
            start.call2(&JsValue::NULL, &use_gpu, &token).map(drop)
        });
    }
}

/// Reads `#token=` once and removes it from the address bar (call before the
/// URL sync), provides [`LiveLoader`], keeps the bundle's copy of the plan
/// current, and loads the bundle at once when there is an agent to connect to.
pub fn provide(app: AppState) {
    let token = store::take_fragment_token();
    let eager = token.is_some() || store::has_saved();
    TOKEN.with(|t| *t.borrow_mut() = token);
    let loader = LiveLoader { load: RwSignal::new(Load::Idle) };
    provide_context(loader);
    Effect::new(move |_| {
        if loader.load.get() != Load::Ready {
            return;
        }
        let handed = handed(app);
        PLAN.with(|p| {
            if let Some(f) = p.borrow().as_ref() {
                let _ = f.call1(&JsValue::NULL, &handed);
            }
        });
    });
    if eager {
        loader.start(app);
    }
}

/// The plan as the live bundle takes it, encoded ([`HandedPlan`]). Tracks
/// the units, the model, the scenario and the estimate.
fn handed(app: AppState) -> JsValue {
    let plan = app.estimate.with(|e| {
        let e = e.as_ref()?;
        app.model.with(|m| {
            let m = m.as_ref().ok()?;
            app.scenario.with(|s| s.as_ref().map(|s| LivePlan::of(m, s, e)))
        })
    });
    let handed = HandedPlan { units: app.units.get(), plan };
    // The types encode whatever they hold; an error would leave live mode
    // without a plan, which the bundle says.
    Uint8Array::from(&encode(&handed).unwrap_or_default()[..]).into()
}

fn use_loader() -> LiveLoader {
    // Not `expect_context` (see `state::use_app`).
    use_context::<LiveLoader>().unwrap_or_else(|| panic!("live mode's loader is provided by App"))
}

/// The live section: the connect panel's shell and the host panels' container.
#[component]
pub fn LiveSection() -> impl IntoView {
    let loader = use_loader();
    let app = use_app();
    let status = move || match loader.load.get() {
        Load::Loading => "Loading live mode…".to_owned(),
        Load::Failed(e) => format!("Live mode could not load: {e}"),
        Load::Idle | Load::Ready => String::new(),
    };
    view! {
        <section class="live" id="live" aria-labelledby="live-heading" data-testid="live">
            <h2 id="live-heading">"Live: your GPUs right now"</h2>
            <details class="card connect" id="connect-panel" data-testid="connect-panel" on:toggle=move |_| loader.start(app)>
                <summary><h3 id="connect-heading" tabindex="-1">"Connect to a GPU host"</h3></summary>
                <p class="hint" role="status" hidden=move || status().is_empty()>{status}</p>
                <div id="live-connect"></div>
            </details>
            <div id="live-hosts" class="live-html"></div>
            <div id="live-fleet" class="live-html"></div>
        </section>
    }
}

/// The connection state, always visible in the header (the bundle sets it).
#[component]
pub fn LiveStatusChip() -> impl IntoView {
    let loader = use_loader();
    let app = use_app();
    view! {
        <a class="live-chip" id="live-chip" href="#live" data-testid="live-status" data-state="none"
            on:click=move |_| loader.start(app)>
            <span class="dot" aria-hidden="true"></span>
            <span id="live-chip-text" role="status" aria-live="polite">"Not connected to a GPU host"</span>
        </a>
    }
}

/// Where "fits now" goes, under the verdict (the bundle fills it).
#[component]
pub fn VerdictNow() -> impl IntoView {
    view! { <div id="live-now" class="live-html"></div> }
}
