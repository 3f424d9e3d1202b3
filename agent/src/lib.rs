//! The Headroom agent as a library: GPU telemetry (NVML or simulated) and the
//! server that streams it (`headroom serve`). The `headroom` binary's command
//! line lives in `src/cli/`; tests and the bench build the real server from here.

pub mod server;
pub mod telemetry;
