//! The delegated handlers: one per container, each decoding the
//! `data-action` it landed on ([`Action::parse`]) and matching its own group
//! of actions exhaustively; and the connect form's submit.

use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{Element, Event, HtmlInputElement, HtmlSelectElement, window};

use super::commands::{cancel_probe, connect, probe, remove, save, update, use_gpu};
use super::draw::{render, set_html};
use super::state::{CONNECT, document, with};
use crate::html::action::{Action, HostAction, NowAction};
use crate::live::socket;
use crate::live::view_model::panels;
use crate::live::view_model::reality::Target;
use crate::live::view_model::status::LinkStatus;

pub(super) fn listen(id: &str, event: &str, f: fn(Event)) {
    let Some(el) = document().and_then(|d| d.get_element_by_id(id)) else { return };
    let cb = Closure::<dyn FnMut(Event)>::new(f);
    let _ = el.add_event_listener_with_callback(event, cb.as_ref().unchecked_ref());
    cb.forget();
}

/// The `data-action` element an event landed on, its action, and its host's id.
pub(super) fn action(ev: &Event) -> Option<(Action, Element, Option<u32>)> {
    let target = ev.target()?.dyn_into::<Element>().ok()?;
    let el = target.closest("[data-action]").ok()??;
    let host = el.closest("[data-host]").ok().flatten().and_then(|h| h.get_attribute("data-host")?.parse().ok());
    Some((Action::parse(&el.get_attribute("data-action")?)?, el, host))
}

pub(super) fn num(el: &Element, name: &str) -> Option<u64> {
    el.get_attribute(name).and_then(|v| v.parse().ok())
}

pub(super) fn on_host_click(ev: Event) {
    let Some((Action::Host(action), el, Some(id))) = action(&ev) else { return };
    match action {
        HostAction::UseGpu => {
            let gpu = num(&el, "data-gpu").and_then(|g| u32::try_from(g).ok()).unwrap_or(0);
            let same = with(|s| s.target == Some(Target { host: id, gpu }));
            if same {
                with(|s| s.target = None);
                render();
            } else {
                // The probe panel follows the GPU being checked.
                with(|s| {
                    if let Some(h) = s.hosts.iter_mut().find(|h| h.id == id) {
                        h.chosen = gpu;
                    }
                });
                use_gpu(id, gpu);
            }
        }
        HostAction::Reconnect => socket::restart(id),
        HostAction::Disconnect => {
            socket::stop(id);
            update(id, |m| m.status = LinkStatus::Stopped);
        }
        HostAction::Remove => remove(id),
        HostAction::UseContext => {
            with(|s| s.context = num(&el, "data-bytes"));
            render();
        }
        HostAction::ProbeStart => {
            let chosen = with(|s| s.hosts.iter().find(|h| h.id == id).map_or(0, |h| h.chosen));
            let error = probe(id, chosen).err().unwrap_or_default();
            with(|s| {
                if let Some(h) = s.hosts.iter_mut().find(|h| h.id == id) {
                    h.error = error;
                }
            });
            render();
        }
        HostAction::ProbeCancel => cancel_probe(id),
        // A change, not a click (`on_host_change`).
        HostAction::ProbeGpu => {}
    }
}

pub(super) fn on_host_change(ev: Event) {
    let Some((Action::Host(HostAction::ProbeGpu), el, Some(id))) = action(&ev) else { return };
    let chosen = el.dyn_into::<HtmlSelectElement>().ok().and_then(|s| s.value().parse().ok()).unwrap_or(0);
    with(|s| {
        if let Some(h) = s.hosts.iter_mut().find(|h| h.id == id) {
            h.chosen = chosen;
        }
    });
    render();
}

pub(super) fn on_now_click(ev: Event) {
    let Some((Action::Now(action), _, _)) = action(&ev) else { return };
    match action {
        NowAction::ClearTarget => with(|s| s.target = None),
        NowAction::ContextClear => with(|s| s.context = None),
    }
    render();
}

pub(super) fn input(id: &str) -> Option<HtmlInputElement> {
    document()?.get_element_by_id(id)?.dyn_into().ok()
}

pub(super) fn draw_connect_form(remembered: bool) {
    let Some(doc) = document() else { return };
    let start = window().and_then(|w| w.location().host().ok()).unwrap_or_default();
    let address = if start.is_empty() { "127.0.0.1:7878".to_owned() } else { start };
    set_html(&doc, CONNECT, &panels::connect_form(&address, remembered));
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
