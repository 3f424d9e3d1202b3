//! Drawing: every live panel built from the state as [`Markup`], then into
//! the page's containers, each only when it changed, keeping focus.

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Document, HtmlElement};

use super::state::{CHIP, CHIP_TEXT, FLEET, HOSTS, Host, NOW, State, document, with};
use crate::html::{Html, Markup};
use crate::live::fleet;
use crate::live::view_model::cards::{gpu_card, process_rows, timeline};
use crate::live::view_model::findings;
use crate::live::view_model::panels::{self, Head};
use crate::live::view_model::probe::{ProbeRun, limits_text};
use crate::live::view_model::reality::{Target, balance, context_term, verdict_now};
use crate::live::view_model::status::LinkStatus;
use shared::units::format_bytes;

/// Which state speaks for several hosts: the one that needs attention.
pub(super) fn rank(key: &str) -> u8 {
    match key {
        "refused" | "blocked" => 5,
        "reconnecting" => 4,
        "connecting" => 3,
        "live" => 2,
        _ => 1,
    }
}

/// The header chip: one agent's state, or a count per state when there are several.
pub(super) fn chip(hosts: &[Host]) -> (&'static str, String) {
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
pub(super) struct HostView {
    id: u32,
    state: &'static str,
    head: Markup,
    body: Markup,
    /// `None` until the agent said whether it allows probes.
    probe: Option<(Markup, Markup)>,
}

pub(super) fn host_view(h: &Host, s: &State) -> HostView {
    let m = &h.model;
    let units = s.plan.units;
    let e = s.plan.gpus();
    let sub = match (m.simulated(), m.welcome.as_ref().and_then(|w| w.host.driver_version.value())) {
        (true, _) => "simulated GPUs".to_owned(),
        (false, Some(d)) => format!("driver {d}"),
        (false, None) => String::new(),
    };
    // The host's RAM, for the llama.cpp plan's "Host RAM" input.
    let sub = match m.welcome.as_ref().and_then(|w| w.host.memory_total_bytes.value()) {
        Some(&ram) if sub.is_empty() => format!("RAM {}", format_bytes(ram, units)),
        Some(&ram) => format!("{sub} · RAM {}", format_bytes(ram, units)),
        None => sub,
    };
    let head = panels::head(&Head {
        name: m.name(),
        state: m.status.key(),
        status: m.status.text(),
        advice: m.status.advice(),
        sub,
        simulated: m.simulated(),
    });
    let mut body = Html::new();
    body.raw("<div class=\"gpu-grid\">");
    for g in m.latest.iter().flat_map(|l| &l.gpus) {
        let index = g.index;
        // The plan GPU that runs here when this host is the target, else the plan's busiest GPU.
        let plan = e.and_then(|e| match s.target {
            Some(t) if t.host == h.id => e.get(index.checked_sub(t.gpu)? as usize).map(|g| g.total_bytes),
            _ => e.iter().map(|g| g.total_bytes).max(),
        });
        let card = gpu_card(m, g, units);
        let found = findings::on_gpu(m, index);
        let tl = timeline(m, index, plan, &found, units);
        let found = findings::cards(&found, s.plan.plan.as_ref().map(|p| &p.facts));
        let targeted = s.target == Some(Target { host: h.id, gpu: index });
        body.markup(&panels::gpu_card(index, Some(&card), &tl, &found, targeted));
    }
    body.raw("</div>")
        .markup(&panels::balance(balance(m, e, units).as_ref()))
        .markup(&panels::processes(&process_rows(m, units), m.status == LinkStatus::Live));
    let probe = m.welcome.as_ref().map(|w| {
        let running = m.probe.as_ref().is_some_and(ProbeRun::running);
        let gpus: Vec<u32> = w.host.gpus.iter().map(|g| g.index).collect();
        let limits = limits_text(&w.probes, units);
        let controls = panels::probe_controls(h.id, &limits, w.probes.enabled, &gpus, h.chosen, running, &h.error);
        let run = m.probe.as_ref().map_or_else(Markup::default, |r| {
            let result = r.result_text(units);
            panels::probe_run(r.key(), r.fraction_pct(), &r.progress_text(units), result.as_deref(), r.context_bytes())
        });
        (controls, run)
    });
    HostView { id: h.id, state: m.status.key(), head, body: body.into_markup(), probe }
}

/// Everything live on the page, as strings, then into the DOM.
pub(super) fn render() {
    let (chip, hosts, now, fleet_html) = with(|s| {
        let now = s.target.and_then(|t| {
            let h = s.hosts.iter().find(|h| h.id == t.host)?;
            let e = s.plan.gpus()?;
            let v = verdict_now(e, &h.model, t.gpu, s.context, s.plan.units);
            let term = s.context.map(|c| context_term(c, s.plan.units));
            Some(panels::now(&v, term.as_deref()))
        });
        let fleet_html = fleet::html(s.plan.gpus(), s.plan.units);
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
                p.set_inner_html(panels::host_shell(h.id).as_str());
                let _ = list.append_child(&p);
                p
            }
        };
        let _ = panel.set_attribute("data-state", h.state);
        set_html(&doc, &format!("{pid}-head"), &h.head);
        set_html(&doc, &format!("{pid}-body"), &h.body);
        let shell = if h.probe.is_some() { panels::probe_shell(h.id) } else { Markup::default() };
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
pub(super) fn set_html(doc: &Document, id: &str, html: &Markup) {
    let html = html.as_str();
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
