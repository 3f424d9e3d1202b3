//! Headroom's pure core: the inference memory model, the catalogs, the parsers
//! and the wire protocol, shared by the web page and the agent.
//!
//! **Architecture Invariant:** nothing here does I/O, reads a clock, spawns a
//! thread or depends on wasm- or native-only crates. CI builds it for
//! `wasm32-unknown-unknown` and fails if tokio, axum, leptos, web-sys or
//! nvml-wrapper become reachable from it.

pub mod arch;
pub mod catalog;
pub mod checkpoint;
pub mod decimal;
pub mod engines;
pub mod estimate;
pub mod explain;
pub mod fixes;
pub mod formats;
pub mod hub;
pub mod kv;
pub mod link;
pub mod live;
pub mod model;
pub mod oom;
pub mod order;
pub mod plan;
pub mod probe;
pub mod protocol;
/// safetensors headers and indexes (kept at its old path).
pub use checkpoint::safetensors;
pub mod solve;
pub mod speed;
pub mod startup;
pub mod state;
pub mod units;
