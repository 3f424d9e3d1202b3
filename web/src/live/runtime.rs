//! Live mode as the on-demand bundle runs it (`src/bin/live.rs`): the hosts,
//! their models, the target GPU and the plan, kept outside any framework, and
//! drawn into the containers the page leaves for it (the status chip, the
//! connect panel's body, the host list, "fits now" under the verdict, the
//! fleet view).
//!
//! Every panel is an escaped HTML string ([`super::vm::html`]) set with
//! `innerHTML` only when it changed; buttons carry `data-action` and one
//! delegated handler per container acts on them. The page hands the bundle
//! its plan as a share-link query ([`set_plan`]) and a callback that sets the
//! calculator's GPU input; nothing else of the calculator is touched.

use std::cell::RefCell;
use std::fmt::Write;

use js_sys::{Function, Reflect};
use shared::estimate::{EnginePlan, Estimate, ValidScenario, estimate};
use shared::link::GpuChoice;
use shared::model::Model;
use shared::units::UnitSystem;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Document, Element, Event, HtmlElement, HtmlInputElement, HtmlSelectElement, window};

use super::vm::cards::{gpu_card, process_rows, timeline};
use super::vm::host::HostModel;
use super::vm::html::{self, Head, esc};
use super::vm::probe::{ProbeRun, limits_text, plan_request};
use super::vm::reality::{NowVerdict, Target, balance, context_term, gpu_choice, verdict_now};
use super::vm::status::{LinkStatus, agent_ws_url};
use super::{decode, fleet, socket, store};
use crate::vm::hub::HubState;
use crate::vm::resolve;

/// The page's containers (ids set by `components::live` in the main bundle).
const CHIP: &str = "live-chip";
const CHIP_TEXT: &str = "live-chip-text";
const CONNECT: &str = "live-connect";
const HOSTS: &str = "live-hosts";
const NOW: &str = "live-now";
const FLEET: &str = "live-fleet";

/// One agent.
#[derive(Debug)]
struct Host {
    id: u32,
    model: HostModel,
    /// The GPU picked in the probe panel.
    chosen: u32,
    /// Why the last probe could not start.
    error: String,
}

/// The calculator's plan, as the page last handed it over.
#[derive(Debug, Default)]
struct Plan {
    units: UnitSystem,
    inputs: Option<(Model, ValidScenario)>,
    estimate: Option<Estimate>,
}

#[derive(Debug, Default)]
struct State {
    hosts: Vec<Host>,
    next_id: u32,
    /// The live GPU the plan is checked against.
    target: Option<Target>,
    /// Keep addresses and tokens in `localStorage` (the person asked).
    remember: bool,
    /// A CUDA context cost measured by a probe, used instead of the
    /// calculator's assumption in "fits now" (the person asked).
    context: Option<u64>,
    plan: Plan,
    /// The page's `useGpu(catalogId, bytes)`: sets the calculator's GPU input.
    use_gpu: Option<Function>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|s| f(&mut s.borrow_mut()))
}

fn document() -> Option<Document> {
    window()?.document()
}

/// A line in the browser console.
pub fn log(message: &str) {
    web_sys::console::log_1(&message.into());
}

/// Starts live mode: draws the connect form, then connects to the agent that
/// served the page (`fragment_token`, read by the page before anything
/// rewrote the URL) and to the agents this tab (or a remembered list) knew.
pub fn start(use_gpu: Function, fragment_token: Option<String>) {
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

/// The calculator's plan changed: `query` is its share-link query; `hub_id`
/// is empty unless the model came from the hub, then `hub_config` is its
/// config.json and `hub_checkpoint` its safetensors total (empty when unknown).
pub fn set_plan(query: &str, hub_id: &str, hub_config: &str, hub_checkpoint: &str) {
    let state = shared::link::decode(query).state;
    let hub = HubState::from_bundle_args(hub_id, hub_config, hub_checkpoint);
    let inputs = resolve::model(&state, &hub).ok().and_then(|m| resolve::scenario(&state, &m).ok().map(|s| (m, s)));
    let estimate = inputs.as_ref().map(|(m, s)| estimate(m, s.clone()));
    with(|s| s.plan = Plan { units: state.units, inputs, estimate });
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

fn known(url: &str) -> Option<u32> {
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

fn remove(id: u32) {
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
fn use_gpu(id: u32, gpu: u32) {
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
fn probe(id: u32, gpu: u32) -> Result<(), String> {
    let request = with(|s| {
        let target = s.target.filter(|t| t.host == id && gpu >= t.gpu);
        let (m, sc) = s.plan.inputs.as_ref()?;
        let plan_gpu = target.map_or(0, |t| (gpu - t.gpu) as usize).min(sc.gpus.len().saturating_sub(1));
        Some(plan_request(&EnginePlan::new(m, sc.clone()), plan_gpu, gpu))
    });
    let Some(request) = request else { return Err("the calculator has no runnable plan to probe".into()) };
    let run = ProbeRun::new(&request);
    if !socket::send(id, &request.encode()) {
        return Err("not connected".into());
    }
    update(id, |m| m.probe = Some(run));
    Ok(())
}

fn cancel_probe(id: u32) {
    let probe_id = with(|s| {
        s.hosts
            .iter()
            .find(|h| h.id == id)
            .and_then(|h| h.model.probe.as_ref().and_then(|r| r.started.as_ref().map(|s| s.probe_id)))
    });
    socket::send(id, &decode::probe_cancel(probe_id));
}

/// Addresses and tokens into this tab's storage (and `localStorage` if remembered).
fn save() {
    let (list, remember) = with(|s| {
        let list: Vec<(String, String)> =
            s.hosts.iter().filter_map(|h| socket::token(h.id).map(|t| (h.model.url.clone(), t))).collect();
        (list, s.remember)
    });
    store::save(&list, remember);
}

// ---------------------------------------------------------------------------
// Events.

fn listen(id: &str, event: &str, f: fn(Event)) {
    let Some(el) = document().and_then(|d| d.get_element_by_id(id)) else { return };
    let cb = Closure::<dyn FnMut(Event)>::new(f);
    let _ = el.add_event_listener_with_callback(event, cb.as_ref().unchecked_ref());
    cb.forget();
}

/// The `data-action` element an event landed on, and its host's id.
fn action(ev: &Event) -> Option<(String, Element, Option<u32>)> {
    let target = ev.target()?.dyn_into::<Element>().ok()?;
    let el = target.closest("[data-action]").ok()??;
    let host = el.closest("[data-host]").ok().flatten().and_then(|h| h.get_attribute("data-host")?.parse().ok());
    Some((el.get_attribute("data-action")?, el, host))
}

fn num(el: &Element, name: &str) -> Option<u64> {
    el.get_attribute(name).and_then(|v| v.parse().ok())
}

fn on_host_click(ev: Event) {
    let Some((action, el, Some(id))) = action(&ev) else { return };
    match action.as_str() {
        "use-gpu" => {
            let gpu = num(&el, "data-gpu").and_then(|g| u32::try_from(g).ok()).unwrap_or(0);
            let same = with(|s| s.target == Some(Target { host: id, gpu }));
            if same {
                with(|s| s.target = None);
                render();
            } else {
                use_gpu(id, gpu);
            }
        }
        "reconnect" => socket::restart(id),
        "disconnect" => {
            socket::stop(id);
            update(id, |m| m.status = LinkStatus::Stopped);
        }
        "remove" => remove(id),
        "use-context" => {
            with(|s| s.context = num(&el, "data-bytes"));
            render();
        }
        "probe-start" => {
            let chosen = with(|s| s.hosts.iter().find(|h| h.id == id).map_or(0, |h| h.chosen));
            let error = probe(id, chosen).err().unwrap_or_default();
            with(|s| {
                if let Some(h) = s.hosts.iter_mut().find(|h| h.id == id) {
                    h.error = error;
                }
            });
            render();
        }
        "probe-cancel" => cancel_probe(id),
        _ => {}
    }
}

fn on_host_change(ev: Event) {
    let Some((action, el, Some(id))) = action(&ev) else { return };
    if action != "probe-gpu" {
        return;
    }
    let chosen = el.dyn_into::<HtmlSelectElement>().ok().and_then(|s| s.value().parse().ok()).unwrap_or(0);
    with(|s| {
        if let Some(h) = s.hosts.iter_mut().find(|h| h.id == id) {
            h.chosen = chosen;
        }
    });
    render();
}

fn on_now_click(ev: Event) {
    let Some((action, _, _)) = action(&ev) else { return };
    match action.as_str() {
        "clear-target" => with(|s| s.target = None),
        "context-clear" => with(|s| s.context = None),
        _ => return,
    }
    render();
}

fn input(id: &str) -> Option<HtmlInputElement> {
    document()?.get_element_by_id(id)?.dyn_into().ok()
}

fn draw_connect_form(remembered: bool) {
    let Some(doc) = document() else { return };
    let start = window().and_then(|w| w.location().host().ok()).unwrap_or_default();
    let address = if start.is_empty() { "127.0.0.1:7878".to_owned() } else { start };
    set_html(&doc, CONNECT, &connect_form(&address, remembered));
    let on_submit = Closure::<dyn FnMut(Event)>::new(|ev: Event| {
        ev.prevent_default();
        let address = input("agent-url").map(|i| i.value()).unwrap_or_default();
        let token = input("agent-token").map(|i| i.value()).unwrap_or_default();
        let error = match connect(&address, &token) {
            Ok(()) => {
                if let Some(t) = input("agent-token") {
                    t.set_value("");
                }
                String::new()
            }
            Err(e) => e,
        };
        if let Some(e) = document().and_then(|d| d.get_element_by_id("live-connect-error")) {
            e.set_text_content(Some(&error));
        }
    });
    let on_remember = Closure::<dyn FnMut(Event)>::new(|_: Event| {
        let on = input("agent-remember").is_some_and(|i| i.checked());
        with(|s| s.remember = on);
        save();
    });
    if let Some(form) = doc.get_element_by_id("live-connect-form") {
        let _ = form.add_event_listener_with_callback("submit", on_submit.as_ref().unchecked_ref());
    }
    if let Some(check) = doc.get_element_by_id("agent-remember") {
        let _ = check.add_event_listener_with_callback("change", on_remember.as_ref().unchecked_ref());
    }
    on_submit.forget();
    on_remember.forget();
}

/// "Connect to a GPU host": the agent's address and token, "remember", and
/// how to reach a lab machine when the browser will not.
pub fn connect_form(address: &str, remembered: bool) -> String {
    format!(
        "<form class=\"connect-form\" id=\"live-connect-form\">\
         <div class=\"field\"><label for=\"agent-url\">Agent address</label>\
         <input id=\"agent-url\" type=\"text\" data-testid=\"agent-url\" placeholder=\"127.0.0.1:7878\" value=\"{}\"></div>\
         <div class=\"field\"><label for=\"agent-token\">Token</label>\
         <input id=\"agent-token\" type=\"password\" autocomplete=\"off\" data-testid=\"agent-token\" \
         placeholder=\"printed by headroom serve\"></div>\
         <button type=\"submit\" class=\"primary\" data-testid=\"agent-connect\">Connect</button>\
         <label class=\"check\"><input type=\"checkbox\" id=\"agent-remember\" data-testid=\"agent-remember\"{}>\
         Remember on this browser</label>\
         <p class=\"error\" role=\"alert\" id=\"live-connect-error\" data-testid=\"connect-error\"></p></form>\
         <p class=\"hint\">Run <code>headroom serve</code> on the GPU host. The token stays in this tab (never in the \
         share link); “remember” keeps it in this browser's storage.</p>\
         <details class=\"more\"><summary>Cannot connect? Reaching a lab machine</summary><ul class=\"hint\">\
         <li><strong>SSH tunnel</strong> (simplest, safest): <code>ssh -N -L 7878:127.0.0.1:7878 gpu-host</code>, \
         then connect to 127.0.0.1:7878 or open http://127.0.0.1:7878/ on your machine.</li>\
         <li><strong>Open the page from the agent</strong>: the URL <code>headroom serve</code> prints (with \
         <code>#token=…</code>) connects by itself: same origin, nothing for the browser to block.</li>\
         <li><strong>TLS</strong>: an https:// page may not open plain ws:// to a network address (mixed content). \
         Start the agent with <code>--tls-cert</code>/<code>--tls-key</code> and connect with wss://; \
         add <code>--allow-origin</code> with this page's origin.</li>\
         <li>Chrome and Firefox may ask permission before a website reaches local-network addresses; allow it, \
         or use the tunnel.</li></ul></details>",
        esc(address),
        if remembered { " checked" } else { "" }
    )
}

// ---------------------------------------------------------------------------
// Drawing.

/// Which state speaks for several hosts: the one that needs attention.
fn rank(key: &str) -> u8 {
    match key {
        "refused" | "blocked" => 5,
        "reconnecting" => 4,
        "connecting" => 3,
        "live" => 2,
        _ => 1,
    }
}

/// The header chip: one agent's state, or a count per state when there are several.
fn chip(hosts: &[Host]) -> (&'static str, String) {
    match hosts {
        [] => ("none", "Not connected to a GPU host".to_owned()),
        [h] => (h.model.status.key(), format!("{}: {}", h.model.name(), h.model.status.text())),
        many => {
            let worst = many.iter().map(|h| h.model.status.key()).max_by_key(|k| rank(k)).unwrap_or("none");
            let live_n = many.iter().filter(|h| h.model.status == LinkStatus::Live).count();
            let attention = if worst == "live" { "" } else { ", one needs attention" };
            (worst, format!("{} hosts: {live_n} live{attention}", many.len()))
        }
    }
}

/// One host panel's parts: head, body (cards, balance, processes), probe.
#[derive(Debug)]
struct HostView {
    id: u32,
    state: &'static str,
    head: String,
    body: String,
    /// `None` until the agent said whether it allows probes.
    probe: Option<(String, String)>,
}

fn host_view(h: &Host, s: &State) -> HostView {
    let m = &h.model;
    let units = s.plan.units;
    let e = s.plan.estimate.as_ref();
    let sub = match (m.simulated(), m.welcome.as_ref().and_then(|w| w.driver_version.as_ref())) {
        (true, _) => "simulated GPUs".to_owned(),
        (false, Some(d)) => format!("driver {d}"),
        (false, None) => String::new(),
    };
    let head = html::head(&Head {
        name: m.name(),
        state: m.status.key(),
        status: m.status.text(),
        advice: m.status.advice(),
        sub,
        simulated: m.simulated(),
    });
    let mut body = String::from("<div class=\"gpu-grid\">");
    for g in m.latest.iter().flat_map(|l| &l.gpus) {
        let index = g.index;
        // The plan GPU that runs here when this host is the target, else the plan's busiest GPU.
        let plan = e.and_then(|e| match s.target {
            Some(t) if t.host == h.id => e.per_gpu.get(index.checked_sub(t.gpu)? as usize).map(|g| g.total_bytes),
            _ => e.per_gpu.iter().map(|g| g.total_bytes).max(),
        });
        let card = gpu_card(m, g, units);
        let tl = timeline(m, index, plan, units);
        let targeted = s.target == Some(Target { host: h.id, gpu: index });
        body.push_str(&html::gpu_card(index, Some(&card), &tl, targeted));
    }
    body.push_str("</div>");
    body.push_str(&html::balance(balance(m, e, units).as_ref()));
    body.push_str(&html::processes(&process_rows(m, units)));
    let probe = m.welcome.as_ref().map(|w| {
        let running = m.probe.as_ref().is_some_and(ProbeRun::running);
        let gpus: Vec<u32> = w.gpus.iter().map(|g| g.index).collect();
        let controls = probe_controls(h, &limits_text(&w.probes, units), w.probes.enabled, &gpus, running);
        let run = m.probe.as_ref().map_or_else(String::new, |r| {
            let result = r.result_text(units);
            html::probe_run(r.key(), r.fraction_pct(), &r.progress_text(units), result.as_deref(), r.context_bytes())
        });
        (controls, run)
    });
    HostView { id: h.id, state: m.status.key(), head, body, probe }
}

/// The probe panel's heading, the agent's limits and, when probes are
/// allowed, the GPU, start and cancel.
fn probe_controls(h: &Host, limits: &str, enabled: bool, gpus: &[u32], running: bool) -> String {
    let mut s =
        format!("<h4>Probe the plan on a GPU</h4><p class=\"hint\" data-testid=\"probe-limits\">{}</p>", esc(limits));
    if enabled {
        let id = h.id;
        let _ = write!(
            s,
            "<div class=\"inline\"><label for=\"probe-gpu-{id}\">GPU</label>\
             <select id=\"probe-gpu-{id}\" data-testid=\"probe-gpu\" data-action=\"probe-gpu\">"
        );
        for i in gpus {
            let selected = if *i == h.chosen { " selected" } else { "" };
            let _ = write!(s, "<option value=\"{i}\"{selected}>GPU {i}</option>");
        }
        let _ = write!(
            s,
            "</select><button type=\"button\" class=\"primary\" data-testid=\"probe-start\" data-action=\"probe-start\"{}>\
             Allocate the plan for real, then free it</button>",
            if running { " disabled" } else { "" }
        );
        if running {
            s.push_str(
                "<button type=\"button\" class=\"ghost\" data-testid=\"probe-cancel\" data-action=\"probe-cancel\">Cancel</button>",
            );
        }
        let _ = write!(s, "</div><p class=\"error\" role=\"alert\">{}</p>", esc(&h.error));
    }
    s
}

/// "Fits now" under the verdict, when a live GPU is the target.
fn now_html(v: &NowVerdict, context: Option<u64>, units: UnitSystem) -> String {
    let key = v.key();
    let mut s = format!(
        "<div class=\"card now {key}\"><p class=\"verdict-now\" data-testid=\"verdict-now\" data-fits=\"{key}\" \
         role=\"status\">{}</p>",
        esc(&v.text)
    );
    for bar in &v.bars {
        let _ = write!(
            s,
            "<div class=\"bar-row\" data-testid=\"now-bar\"><div class=\"bar-label\"><span>{}</span><span class=\"{}\">{}</span>\
             </div><div class=\"bar\" role=\"img\" aria-label=\"{}\">",
            esc(&bar.label),
            if bar.fits { "bar-sum" } else { "bar-sum over" },
            esc(&bar.summary),
            esc(&bar.summary)
        );
        for seg in &bar.segments {
            let _ = write!(
                s,
                "<span class=\"seg {}\" style=\"width:{}\" title=\"{}\"></span>",
                seg.class,
                esc(&seg.width),
                esc(&seg.title)
            );
        }
        let _ = write!(
            s,
            "<span class=\"cap-line\" style=\"left:{}\" title=\"real capacity\"></span></div></div>",
            esc(&bar.capacity_at)
        );
    }
    if let Some(c) = context {
        let _ = write!(
            s,
            "<p class=\"term\" data-testid=\"context-override\">{} <button type=\"button\" class=\"ghost\" \
             data-action=\"context-clear\">Use the assumption again</button></p>",
            esc(&context_term(c, units))
        );
    }
    s.push_str(
        "<button type=\"button\" class=\"ghost\" data-testid=\"clear-target\" data-action=\"clear-target\">\
         Stop checking against the live GPU</button></div>",
    );
    s
}

/// Everything live on the page, as strings, then into the DOM.
fn render() {
    let (chip, hosts, now, fleet_html) = with(|s| {
        let now = s.target.and_then(|t| {
            let h = s.hosts.iter().find(|h| h.id == t.host)?;
            let e = s.plan.estimate.as_ref()?;
            let v = verdict_now(e, &h.model, t.gpu, s.context, s.plan.units);
            Some(now_html(&v, s.context, s.plan.units))
        });
        let fleet_html = fleet::html(s.plan.estimate.as_ref(), s.plan.units);
        (
            chip(&s.hosts),
            s.hosts.iter().map(|h| host_view(h, s)).collect::<Vec<_>>(),
            now.unwrap_or_default(),
            fleet_html,
        )
    });
    let Some(doc) = document() else { return };
    if let Some(el) = doc.get_element_by_id(CHIP) {
        let _ = el.set_attribute("data-state", chip.0);
    }
    if let Some(el) = doc.get_element_by_id(CHIP_TEXT)
        && el.text_content().as_deref() != Some(chip.1.as_str())
    {
        el.set_text_content(Some(&chip.1));
    }
    set_html(&doc, NOW, &now);
    set_html(&doc, FLEET, &fleet_html);
    let Some(list) = doc.get_element_by_id(HOSTS) else { return };
    // Panels of removed hosts go.
    let children = list.children();
    for i in (0..children.length()).rev() {
        if let Some(c) = children.item(i) {
            let id: Option<u32> = c.get_attribute("data-host").and_then(|v| v.parse().ok());
            if !hosts.iter().any(|h| Some(h.id) == id) {
                c.remove();
            }
        }
    }
    for h in &hosts {
        let pid = format!("live-host-{}", h.id);
        let panel = match doc.get_element_by_id(&pid) {
            Some(p) => p,
            None => {
                let Ok(p) = doc.create_element("div") else { continue };
                p.set_id(&pid);
                p.set_class_name("card host");
                let _ = p.set_attribute("data-testid", "live-host");
                let _ = p.set_attribute("data-host", &h.id.to_string());
                p.set_inner_html(&format!(
                    "<div class=\"live-html\" id=\"{pid}-head\"></div><div class=\"live-html\" id=\"{pid}-body\"></div>\
                     <div class=\"live-html\" id=\"{pid}-probe\"></div>"
                ));
                let _ = list.append_child(&p);
                p
            }
        };
        let _ = panel.set_attribute("data-state", h.state);
        set_html(&doc, &format!("{pid}-head"), &h.head);
        set_html(&doc, &format!("{pid}-body"), &h.body);
        let shell = if h.probe.is_some() {
            format!(
                "<div class=\"probe\" data-testid=\"probe-panel\"><div class=\"live-html\" id=\"{pid}-probe-controls\"></div>\
                 <div class=\"live-html\" id=\"{pid}-probe-run\"></div></div>"
            )
        } else {
            String::new()
        };
        set_html(&doc, &format!("{pid}-probe"), &shell);
        if let Some((controls, run)) = &h.probe {
            set_html(&doc, &format!("{pid}-probe-controls"), controls);
            set_html(&doc, &format!("{pid}-probe-run"), run);
        }
    }
}

/// Sets element `id`'s HTML when it differs from what was last set there.
/// The focused control inside keeps focus across updates (found again by its
/// `data-action` and `data-gpu`), so keyboard users are not thrown out by
/// each sample.
fn set_html(doc: &Document, id: &str, html: &str) {
    let Some(el) = doc.get_element_by_id(id) else { return };
    let key = JsValue::from_str("headroomHtml");
    if Reflect::get(&el, &key).ok().and_then(|v| v.as_string()).as_deref() == Some(html) {
        return;
    }
    let focused = doc
        .active_element()
        .filter(|a| el.contains(Some(a)))
        .and_then(|a| Some((a.get_attribute("data-action")?, a.get_attribute("data-gpu"))));
    el.set_inner_html(html);
    let _ = Reflect::set(&el, &key, &JsValue::from_str(html));
    if let Some((action, gpu)) = focused {
        let sel = match gpu {
            Some(g) => format!("[data-action=\"{action}\"][data-gpu=\"{g}\"]"),
            None => format!("[data-action=\"{action}\"]"),
        };
        if let Ok(Some(e)) = el.query_selector(&sel)
            && let Ok(e) = e.dyn_into::<HtmlElement>()
        {
            let _ = e.focus();
        }
    }
}
