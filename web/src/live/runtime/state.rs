//! Live mode's state: the hosts, the target GPU, the calculator's plan and
//! the page's callback, in one thread-local (the bundle has no framework).

use std::cell::RefCell;

use js_sys::Function;
use web_sys::{Document, window};

use crate::live::plan::HandedPlan;
use crate::live::view_model::host::HostModel;
use crate::live::view_model::reality::Target;

/// The page's containers (ids set by `components::live` in the main bundle).
pub(super) const CHIP: &str = "live-chip";
pub(super) const CHIP_TEXT: &str = "live-chip-text";
pub(super) const CONNECT: &str = "live-connect";
pub(super) const HOSTS: &str = "live-hosts";
pub(super) const NOW: &str = "live-now";
pub(super) const FLEET: &str = "live-fleet";

/// One agent.
#[derive(Debug)]
pub(super) struct Host {
    pub(super) id: u32,
    pub(super) model: HostModel,
    /// The GPU picked in the probe panel.
    pub(super) chosen: u32,
    /// Why the last probe could not start.
    pub(super) error: String,
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) hosts: Vec<Host>,
    pub(super) next_id: u32,
    /// The live GPU the plan is checked against.
    pub(super) target: Option<Target>,
    /// Keep addresses and tokens in `localStorage` (the person asked).
    pub(super) remember: bool,
    /// A CUDA context cost measured by a probe, used instead of the
    /// calculator's assumption in "fits now" (the person asked).
    pub(super) context: Option<u64>,
    /// The calculator's plan, as the page last handed it over.
    pub(super) plan: HandedPlan,
    /// The page's `useGpu(catalogId, bytes)`: sets the calculator's GPU input.
    pub(super) use_gpu: Option<Function>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

pub(super) fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|s| f(&mut s.borrow_mut()))
}

pub(super) fn document() -> Option<Document> {
    window()?.document()
}

/// A line in the browser console.
pub fn log(message: &str) {
    web_sys::console::log_1(&message.into());
}
