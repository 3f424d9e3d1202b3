//! Live mode: the page connected to one or more agents (`headroom serve`).
//!
//! Everything here but [`store::take_fragment_token`], [`store::has_saved`]
//! and [`plan::encode`] runs in the on-demand live bundle (`src/bin/live.rs`),
//! which the page loads on first use (`components::live` is the page's small
//! loader), so the page's first load does without it.
//!
//! - [`view_model`]: the pure model (a host's readings and history, what the cards,
//!   the process table and "fits now" show), tested natively.
//! - [`wire`]: the agent's messages through `shared::protocol`'s types.
//! - [`socket`]: the WebSocket client (web-sys), with reconnect and backoff.
//! - [`fleet`]: the fleet view's polling of `/api/fleet` (agents started
//!   with `--prometheus`).
//! - [`store`]: where tokens live: memory and this tab's `sessionStorage`,
//!   `localStorage` only when the person ticks "remember"; never the link.
//! - [`plan`]: the calculator's plan as the page computes it for live mode
//!   and hands it over (the bundle carries no engine of its own).
//! - [`runtime`]: the hosts, the target GPU and the plan, drawn as HTML into
//!   the containers the page leaves for live mode.
//!
//! **Architecture Invariant:** nothing live feeds the calculator's figures.
//! Disconnected, the page is the same calculator; picking a live GPU only
//! edits the GPU input, like a person would.

pub mod fleet;
pub mod origin;
pub mod plan;
pub mod runtime;
pub mod socket;
pub mod store;
pub mod view_model;
pub mod wire;
