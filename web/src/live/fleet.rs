//! The fleet view's fetching: every [`POLL_MS`], `GET /api/fleet` (with the
//! bearer token) from the first connected agent that relays a Prometheus
//! (`headroom serve --prometheus`); agents that answer `fleet_not_configured`
//! are not asked again until they reconnect. The answer is kept here;
//! [`html`] draws it with the current plan ([`super::view_model::fleet`]).

use std::cell::RefCell;
use std::collections::HashSet;

use shared::live::PlanGpu;
use shared::units::UnitSystem;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{JsFuture, spawn_local};
use web_sys::{Headers, Request, RequestInit, Response, window};

use super::runtime::{live_hosts, redraw};
use super::socket;
use super::view_model::fleet::view;
use super::view_model::panels;
use super::wire;
use crate::html::Markup;
use shared::protocol::FleetGpu;

/// How often the fleet is asked for. The agent reuses a round for 2 s and
/// Prometheus scrapes every 15 s by default: faster would show nothing new.
const POLL_MS: i32 = 5_000;

#[derive(Debug, Default)]
struct Fleet {
    /// The last good answer and the agent that relayed it.
    gpus: Option<(String, Vec<FleetGpu>)>,
    error: String,
    /// Agents (by ws URL) that said they relay no Prometheus.
    without: HashSet<String>,
    started: bool,
}

thread_local! {
    static FLEET: RefCell<Fleet> = RefCell::new(Fleet::default());
}

fn with<R>(f: impl FnOnce(&mut Fleet) -> R) -> R {
    FLEET.with(|s| f(&mut s.borrow_mut()))
}

/// Starts polling (once).
pub fn start() {
    if with(|f| std::mem::replace(&mut f.started, true)) {
        return;
    }
    poll();
}

/// An agent reconnected: ask it again.
pub fn forget(url: &str) {
    with(|f| f.without.remove(url));
}

/// The fleet view with the plan's GPUs `plan`, or nothing before any agent
/// relays one.
pub fn html(plan: Option<&[PlanGpu]>, units: UnitSystem) -> Markup {
    with(|f| match &f.gpus {
        Some((source, gpus)) => panels::fleet(&view(gpus, plan, units), source, &f.error),
        None => Markup::default(),
    })
}

/// `ws://host:port/ws` → `http://host:port/api/fleet` (and wss → https).
pub fn fleet_url(ws_url: &str) -> Option<String> {
    let (scheme, rest) = ws_url.split_once("://")?;
    let http = match scheme {
        "ws" => "http",
        "wss" => "https",
        _ => return None,
    };
    let authority = rest.split('/').next()?;
    Some(format!("{http}://{authority}/api/fleet"))
}

fn poll() {
    spawn_local(async {
        let candidates: Vec<(String, String, String, String)> = live_hosts()
            .into_iter()
            .filter(|(_, url, _)| with(|f| !f.without.contains(url)))
            .filter_map(|(id, url, name)| Some((fleet_url(&url)?, socket::token(id)?, url, name)))
            .collect();
        let mut outcome = match (candidates.is_empty(), with(|f| f.gpus.is_some())) {
            (true, true) => Some(Err("no connected agent relays the fleet now: these are the last figures".to_owned())),
            _ => None,
        };
        for (api, token, url, name) in candidates {
            match get(&api, &token).await {
                Ok(Answer::Fleet(gpus)) => {
                    outcome = Some(Ok((name, gpus)));
                    break;
                }
                Ok(Answer::NotConfigured) => {
                    with(|f| f.without.insert(url));
                }
                Err(e) => outcome = Some(Err(format!("{name}: {e}"))),
            }
        }
        let changed = with(|f| match outcome {
            Some(Ok(answer)) => {
                f.gpus = Some(answer);
                f.error.clear();
                true
            }
            Some(Err(e)) => {
                f.error = e;
                f.gpus.is_some()
            }
            None => false,
        });
        if changed {
            redraw();
        }
        let next = Closure::once_into_js(poll);
        if let Some(w) = window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(next.unchecked_ref(), POLL_MS);
        }
    });
}

enum Answer {
    Fleet(Vec<FleetGpu>),
    NotConfigured,
}

async fn get(url: &str, token: &str) -> Result<Answer, String> {
    let unreachable = |_: JsValue| "the agent did not answer the fleet request".to_owned();
    let headers = Headers::new().map_err(unreachable)?;
    headers.set("Authorization", &format!("Bearer {token}")).map_err(unreachable)?;
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_headers(&headers);
    let request = Request::new_with_str_and_init(url, &init).map_err(unreachable)?;
    let w = window().ok_or("no window")?;
    let response: Response =
        JsFuture::from(w.fetch_with_request(&request)).await.map_err(unreachable)?.dyn_into().map_err(unreachable)?;
    let body = JsFuture::from(response.text().map_err(unreachable)?).await.map_err(unreachable)?;
    let body = body.as_string().unwrap_or_default();
    match response.status() {
        200 => wire::fleet(&body).map(|f| Answer::Fleet(f.gpus)),
        404 if body.contains("fleet_not_configured") => Ok(Answer::NotConfigured),
        502 => Err("its Prometheus did not answer; see the agent's log".to_owned()),
        status => Err(format!("the agent answered HTTP {status}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_url_follows_the_socket() {
        assert_eq!(fleet_url("ws://10.0.0.5:7878/ws").as_deref(), Some("http://10.0.0.5:7878/api/fleet"));
        assert_eq!(fleet_url("wss://lab.example/ws").as_deref(), Some("https://lab.example/api/fleet"));
        assert_eq!(fleet_url("http://x/ws"), None);
    }
}
