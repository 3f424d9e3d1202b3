//! The agent's one integration-test binary: the real server on port 0 with a
//! real WebSocket client, the real NVML path through a fake library, and the
//! protocol's JSON locked to `docs/protocol.md`.

// Tests may unwrap (clippy.toml allows it in `#[test]` functions; this extends
// it to their helpers).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod checkpoint;
mod checkpoint_bench;
mod cli;
mod deploy;
mod diagnose;
mod findings;
mod fleet;
mod hostile;
mod http;
mod nvml;
mod probe;
mod protocol_doc;
mod standin_hub;
mod support;
mod tls;
mod watch;
mod ws;
