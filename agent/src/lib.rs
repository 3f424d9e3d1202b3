//! The Headroom agent as a library: GPU telemetry (NVML or simulated), the
//! server that streams it (`headroom serve`), probe allocations, run in a
//! child process (`headroom probe-worker`), and the fleet relay to
//! Prometheus. The `headroom` binary's command line lives in `src/cli/`;
//! tests and the bench build the real server from here.

pub mod fleet;
pub mod limit;
pub mod probe;
pub mod server;
pub mod telemetry;
