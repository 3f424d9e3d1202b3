//! What the person (or the page) asks of live mode: take a new plan,
//! connect, remove a host, check the plan on a live GPU, probe it, and keep
//! the list of agents in this tab's storage.

use shared::link::GpuChoice;
use wasm_bindgen::JsValue;
use web_sys::window;

use super::draw::render;
use super::state::{Host, with};
use crate::live::plan::{self, HandedPlan};
use crate::live::view_model::host::HostModel;
use crate::live::view_model::probe::{ProbeRun, plan_request};
use crate::live::view_model::reality::{Target, gpu_choice};
use crate::live::view_model::status::{LinkStatus, agent_ws_url};
use crate::live::{fleet, socket, store, wire};

/// The calculator's plan changed: `handed` is what the page computed of it
/// for live mode ([`plan::encode`]); bytes that do not decode are logged and
/// leave no plan.
pub fn set_plan(handed: &[u8]) {
    let plan = plan::decode(handed).unwrap_or_else(|e| {
        super::state::log(&format!("live mode: {e}"));
        HandedPlan::default()
    });
    with(|s| s.plan = plan);
    render();
}

/// The live hosts: id, socket URL, name (for the fleet view).
pub fn live_hosts() -> Vec<(u32, String, String)> {
    with(|s| {
        s.hosts
            .iter()
            .filter(|h| h.model.status == LinkStatus::Live)
            .map(|h| (h.id, h.model.url.clone(), h.model.name()))
            .collect()
    })
}

/// Draws everything again (the fleet view got an answer).
pub fn redraw() {
    render();
}

/// Changes host `id`'s model, then redraws.
pub fn update(id: u32, f: impl FnOnce(&mut HostModel)) {
    let found = with(|s| s.hosts.iter_mut().find(|h| h.id == id).map(|h| f(&mut h.model)));
    if found.is_some() {
        render();
    }
}

pub(super) fn known(url: &str) -> Option<u32> {
    with(|s| s.hosts.iter().find(|h| h.model.url == url).map(|h| h.id))
}

/// Connects to `address` (as typed) with `token`; an agent already in the
/// list is reconnected with the new token.
pub fn connect(address: &str, token: &str) -> Result<(), String> {
    let page_https = window().and_then(|w| w.location().protocol().ok()).is_some_and(|p| p == "https:");
    let url = agent_ws_url(address, page_https)?;
    if token.trim().is_empty() {
        return Err("enter the token `headroom serve` printed".into());
    }
    let id = known(&url).unwrap_or_else(|| {
        with(|s| {
            let id = s.next_id;
            s.next_id += 1;
            s.hosts.push(Host { id, model: HostModel::new(url.clone()), chosen: 0, error: String::new() });
            id
        })
    });
    fleet::forget(&url);
    socket::open(id, url, token.trim().to_owned());
    save();
    render();
    Ok(())
}

pub(super) fn remove(id: u32) {
    socket::forget(id);
    with(|s| {
        s.hosts.retain(|h| h.id != id);
        if s.target.is_some_and(|t| t.host == id) {
            s.target = None;
        }
    });
    save();
    render();
}

/// Checks the plan against GPU `gpu` of host `id`: the GPU input takes its
/// real capacity (through the page), and "fits now" appears under the verdict.
pub(super) fn use_gpu(id: u32, gpu: u32) {
    let (choice, hook) = with(|s| {
        let choice = s.hosts.iter().find(|h| h.id == id).and_then(|h| h.model.info(gpu).and_then(gpu_choice));
        s.target = Some(Target { host: id, gpu });
        (choice, s.use_gpu.clone())
    });
    if let (Some(choice), Some(hook)) = (choice, hook) {
        let (catalog, bytes) = match choice {
            GpuChoice::Catalog(c) => (c, String::new()),
            GpuChoice::Custom(b) => (String::new(), b.to_string()),
        };
        let _ = hook.call2(&JsValue::NULL, &catalog.into(), &bytes.into());
    }
    render();
}

/// Probes the current plan on GPU `gpu` of host `id`: the chunks of the plan
/// GPU that would run there (`shared::probe::plan_for_gpu`).
pub(super) fn probe(id: u32, gpu: u32) -> Result<(), String> {
    let request = with(|s| {
        let target = s.target.filter(|t| t.host == id && gpu >= t.gpu);
        let probes = &s.plan.plan.as_ref()?.probes;
        let plan_gpu = target.map_or(0, |t| (gpu - t.gpu) as usize).min(probes.len().saturating_sub(1));
        Some(plan_request(probes.get(plan_gpu)?, gpu))
    });
    let Some(request) = request else { return Err("the calculator has no runnable plan to probe".into()) };
    let run = ProbeRun::new(&request);
    if !socket::send(id, &wire::encode_probe_start(&request)) {
        return Err("not connected".into());
    }
    update(id, |m| m.probe = Some(run));
    Ok(())
}

pub(super) fn cancel_probe(id: u32) {
    let probe_id = with(|s| {
        s.hosts
            .iter()
            .find(|h| h.id == id)
            .and_then(|h| h.model.probe.as_ref().and_then(|r| r.started.as_ref().map(|s| s.probe_id)))
    });
    socket::send(id, &wire::probe_cancel(probe_id));
}

/// Addresses and tokens into this tab's storage (and `localStorage` if remembered).
pub(super) fn save() {
    let (list, remember) = with(|s| {
        let list: Vec<(String, String)> =
            s.hosts.iter().filter_map(|h| socket::token(h.id).map(|t| (h.model.url.clone(), t))).collect();
        (list, s.remember)
    });
    store::save(&list, remember);
}
