//! The calculator page: a Leptos app, client-side rendered and compiled to
//! wasm by `cargo xtask dist`.
//!
//! - [`view_model`] is the view model: pure functions from `shared` results to what
//!   the page shows (strings, bar segments, chart series). Tested natively.
//! - [`state`] holds the one input signal, its memos, and the effects that talk
//!   to the outside world (URL, clipboard, hub fetch).
//! - [`html`] is the one escaping HTML builder every panel uses (calculator,
//!   diagnose view and live mode).
//! - [`components`] are the views, one per file, in folders mirroring the page.
//!
//! **Architecture Invariant:** no arithmetic in `view!`; every figure shown is a
//! memo over `shared` and `view_model` functions.

pub mod app;
pub mod components;
pub mod html;
pub mod live;
pub mod state;
pub mod view_model;

pub use app::App;

/// Every bundle's allocator in the browser: talc instead of the default
/// dlmalloc, which was 7.5 kB of the page's wasm (dlmalloc's `malloc`
/// alone 5.0 kB). Single-threaded (no `atomics`), growing the wasm memory
/// as dlmalloc does.
#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
