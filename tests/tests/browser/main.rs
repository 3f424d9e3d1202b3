//! The calculator page in a real headless Chromium, driven through
//! chromedriver (`fantoccini`), against the built `dist/` served by a small
//! static server started here, compared figure by figure with what the
//! `headroom estimate --json` CLI prints for the same inputs.
//!
//! Without Chromium or chromedriver the tests print why and pass, unless
//! `CI=true`, where a missing browser is an error (`cargo xtask test` installs
//! both first).

mod a11y;
mod bench;
mod browser;
mod checkpoint;
mod cli;
mod engines;
mod fleet;
mod journeys;
mod links;
mod live;
mod page;
mod server;
mod sizes;
/// The Hub stand-in the CLI's tests use (Range, a CDN redirect, gated, HTML).
#[path = "../../../agent/tests/it/standin_hub.rs"]
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
mod standin_hub;
/// The two-shard checkpoint the CLI's checkpoint tests read.
#[path = "../../../agent/tests/it/two_shards.rs"]
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
mod two_shards;
mod ux;
/// The safetensors and GGUF header writers of `shared`'s tests.
#[path = "../../../shared/tests/it/checkpoint/writer.rs"]
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
mod writer;
