//! The WebSocket client: one socket per agent, `hello` with the token,
//! `subscribe`, samples into the host's model; on a lost connection,
//! reconnect with backoff; on a refusal (wrong token …), stop and say why.
//!
//! Sockets, their callbacks and tokens live here; each event updates the
//! host's model in [`super::runtime`], which redraws. Each socket's callbacks
//! carry a generation, so a late event from a replaced socket is ignored.

use std::cell::RefCell;
use std::collections::HashMap;

use super::runtime::{log, update};
use super::wire;
use shared::protocol::{ErrorCode, ServerMessage};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{CloseEvent, MessageEvent, WebSocket, window};

use super::view_model::status::{LinkStatus, backoff_ms, blocked_reason, is_refusal, refusal, unreachable_advice};

struct Handlers {
    _open: Closure<dyn FnMut()>,
    _message: Closure<dyn FnMut(MessageEvent)>,
    _close: Closure<dyn FnMut(CloseEvent)>,
}

struct Conn {
    url: String,
    token: String,
    generation: u32,
    socket: Option<(WebSocket, Handlers)>,
    /// Consecutive failed attempts (0 once live).
    attempt: u32,
    /// The socket reached the agent (a close then means "lost", not "unreachable").
    opened: bool,
    /// Set by a refusal or by the person: no automatic reconnect.
    halted: bool,
    /// The pending reconnect's timeout handle.
    timer: Option<i32>,
}

thread_local! {
    static CONNS: RefCell<HashMap<u32, Conn>> = RefCell::new(HashMap::new());
}

fn with_conn<R>(id: u32, f: impl FnOnce(&mut Conn) -> R) -> Option<R> {
    CONNS.with(|c| c.borrow_mut().get_mut(&id).map(f))
}

/// The token of host `id`, for this tab's storage.
pub fn token(id: u32) -> Option<String> {
    with_conn(id, |c| c.token.clone())
}

/// Sends `message` (an encoded frame, [`wire`]) on host `id`'s socket; false when it is not open.
pub fn send(id: u32, message: &str) -> bool {
    let ws = with_conn(id, |c| c.socket.as_ref().map(|(ws, _)| ws.clone())).flatten();
    ws.is_some_and(|ws| ws.ready_state() == WebSocket::OPEN && ws.send_with_str(message).is_ok())
}

/// (Re)connects host `id` to `url` with `token`.
pub fn open(id: u32, url: String, token: String) {
    forget(id);
    CONNS.with(|c| {
        c.borrow_mut().insert(
            id,
            Conn { url, token, generation: 0, socket: None, attempt: 0, opened: false, halted: false, timer: None },
        )
    });
    start(id);
}

/// Connects again after a refusal or a stop, with the same token.
pub fn restart(id: u32) {
    let known = with_conn(id, |c| {
        c.halted = false;
        c.attempt = 0;
    });
    if known.is_some() {
        start(id);
    }
}

/// Closes host `id`'s socket and cancels any reconnect; keeps its token.
pub fn stop(id: u32) {
    with_conn(id, |c| {
        c.halted = true;
        c.generation += 1;
        close(c);
    });
}

/// Stops host `id` and forgets its token.
pub fn forget(id: u32) {
    stop(id);
    CONNS.with(|c| c.borrow_mut().remove(&id));
}

fn close(c: &mut Conn) {
    if let (Some(handle), Some(w)) = (c.timer.take(), window()) {
        w.clear_timeout_with_handle(handle);
    }
    if let Some((ws, _handlers)) = c.socket.take() {
        ws.set_onopen(None);
        ws.set_onmessage(None);
        ws.set_onclose(None);
        let _ = ws.close();
    }
}

fn page_origin() -> String {
    window().and_then(|w| w.location().origin().ok()).unwrap_or_default()
}

/// Whether `ws://host:port/…` is this page's own origin (the agent always
/// allows its own pages).
fn url_is_same_origin(url: &str) -> bool {
    let http = url.replacen("ws", "http", 1);
    let origin = page_origin();
    !origin.is_empty() && http.starts_with(&origin) && http[origin.len()..].starts_with('/')
}

fn start(id: u32) {
    let Some((url, generation)) = with_conn(id, |c| {
        c.generation += 1;
        close(c);
        c.opened = false;
        (c.url.clone(), c.generation)
    }) else {
        return;
    };
    let protocol = window().and_then(|w| w.location().protocol().ok()).unwrap_or_default();
    if let Some(why) = blocked_reason(&protocol, &url) {
        with_conn(id, |c| c.halted = true);
        update(id, |m| m.status = LinkStatus::Blocked(why));
        return;
    }
    update(id, |m| m.status = LinkStatus::Connecting);
    let ws = match WebSocket::new(&url) {
        Ok(ws) => ws,
        Err(e) => {
            let detail = e.as_string().or_else(|| js_sys::JSON::stringify(&e).ok().and_then(|s| s.as_string()));
            let why = format!(
                "The browser refused to open {url} ({}). {}",
                detail.unwrap_or_else(|| "no reason given".into()),
                blocked_reason("https:", &url).unwrap_or_default()
            );
            with_conn(id, |c| c.halted = true);
            update(id, |m| m.status = LinkStatus::Blocked(why));
            return;
        }
    };
    let current = move || with_conn(id, |c| c.generation == generation).unwrap_or(false);

    let ws_open = ws.clone();
    let on_open = Closure::<dyn FnMut()>::new(move || {
        if !current() {
            return;
        }
        with_conn(id, |c| c.opened = true);
        let Some(token) = token(id) else { return };
        let _ = ws_open.send_with_str(&wire::hello(&token));
    });

    let ws_msg = ws.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        if !current() {
            return;
        }
        let Some(text) = ev.data().as_string() else { return };
        match wire::read(&text) {
            Ok(Some(ServerMessage::Welcome(w))) => {
                with_conn(id, |c| c.attempt = 0);
                update(id, |m| m.apply(ServerMessage::Welcome(w)));
                let _ = ws_msg.send_with_str(&wire::subscribe());
            }
            Ok(Some(ServerMessage::Error(e))) if is_refusal(e.code) => {
                with_conn(id, |c| c.halted = true);
                update(id, |m| m.status = LinkStatus::Refused { code: e.code, message: e.message });
            }
            Ok(Some(ServerMessage::Error(e))) if e.code == ErrorCode::ShuttingDown => {
                log(&format!("live: host {id} is shutting down"));
            }
            Ok(Some(ServerMessage::Error(e))) => {
                // A probe refusal lands on the probe; anything else is only logged.
                log(&format!("live: agent says: {}", e.message));
                update(id, |m| m.apply(ServerMessage::Error(e)));
            }
            Ok(Some(other)) => update(id, |m| m.apply(other)),
            // A newer agent's message type: skip it (docs/protocol.md).
            Ok(None) => {}
            Err(e) => log(&format!("live: {e}")),
        }
    });

    let on_close = Closure::<dyn FnMut(CloseEvent)>::new(move |ev: CloseEvent| {
        if !current() {
            return;
        }
        closed(id, ev.code());
    });

    ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    with_conn(id, |c| c.socket = Some((ws, Handlers { _open: on_open, _message: on_message, _close: on_close })));
}

/// The socket closed: stay refused or stopped, else retry after a backoff.
fn closed(id: u32, code: u16) {
    let Some((halted, opened, url)) = with_conn(id, |c| (c.halted, c.opened, c.url.clone())) else {
        return;
    };
    if halted {
        // A refusal already set the status; the socket is done.
        return;
    }
    let attempt = with_conn(id, |c| {
        c.attempt += 1;
        c.attempt
    })
    .unwrap_or(1);
    let in_ms = backoff_ms(attempt);
    let why = match (opened, code) {
        (true, 1001) => "The agent stopped (it said it was shutting down); waiting for it to come back.".to_owned(),
        (true, 1008) => format!("The agent closed the connection: {}.", refusal(ErrorCode::Unknown)),
        (true, _) => format!("The connection to the agent was lost (close code {code})."),
        (false, _) => unreachable_advice(&url, &page_origin()),
    };
    update(id, |m| m.status = LinkStatus::Reconnecting { attempt, in_ms, why });
    // Never opened, from another origin: was it the agent saying no to this
    // page's origin? (See `origin`: the browser hides the 403.)
    if !opened && !url_is_same_origin(&url) {
        let generation = with_conn(id, |c| c.generation).unwrap_or_default();
        wasm_bindgen_futures::spawn_local(async move {
            if super::origin::refused(&url).await
                && with_conn(id, |c| c.generation == generation && !c.halted).unwrap_or(false)
            {
                with_conn(id, |c| {
                    c.halted = true;
                    close(c);
                });
                let message = ["the WebSocket upgrade from ", &page_origin(), " was refused"].concat();
                update(id, |m| m.status = LinkStatus::Refused { code: ErrorCode::ForbiddenOrigin, message });
            }
        });
    }
    // A one-shot callback frees itself once called (the timer is cleared
    // only when the person stops the host meanwhile).
    let retry = Closure::once_into_js(move || start(id));
    let timer = window().and_then(|w| {
        w.set_timeout_with_callback_and_timeout_and_arguments_0(
            retry.unchecked_ref(),
            i32::try_from(in_ms).unwrap_or(i32::MAX),
        )
        .ok()
    });
    with_conn(id, |c| c.timer = timer);
}
