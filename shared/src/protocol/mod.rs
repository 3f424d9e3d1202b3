//! The wire protocol between the agent (`headroom serve`) and its clients (the
//! page, scripts): typed, versioned JSON messages, documented in
//! `docs/protocol.md` (a test locks every message kind to that file).
//!
//! Every WebSocket text frame is one envelope `{"type": ..., "data": ...}`.
//! The client opens with [`Hello`]; the agent answers [`Welcome`] or an
//! [`ErrorMessage`] and closes. A [`Subscribe`] then starts [`Sample`]s at the
//! chosen interval. A [`ProbeStart`] asks the agent to allocate GPU memory
//! for real (in a short-lived child process); it answers [`ProbeStarted`],
//! [`ProbeProgress`] messages and one [`ProbeResult`]. After each sample the
//! agent sends its diagnosis of the readings so far, [`Findings`].
//!
//! These types are the wire format only. The agent converts its telemetry into
//! them explicitly; no third-party struct (nvml-wrapper's, say) is ever
//! serialized directly. Unknown message types decode to
//! [`DecodeError::UnknownType`] so either side can answer or skip them rather
//! than drop the connection.

mod client;
mod envelope;
mod error;
mod findings;
mod fleet;
mod gpu;
mod http;
mod probes;
mod reading;
mod server;

pub use client::{Hello, Subscribe};
pub use envelope::{ClientMessage, DecodeError, ServerMessage};
pub use error::{ErrorCode, ErrorMessage};
pub use findings::{Finding, FindingCause, FindingCertainty, Findings, Growth, Spread};
pub use fleet::{FleetGpu, FleetSnapshot};
pub use gpu::{
    ComputeMode, GpuInfo, GpuProcess, GpuSample, HostInfo, Launch, LaunchEngine, LaunchFlag, MemoryReading,
    MemorySource, MigInstance, MigMode, MigPlacement, PodRef, Sample, Utilization,
};
pub use http::{Health, Snapshot};
pub use probes::{
    ProbeCancel, ProbeOutcome, ProbePhase, ProbeProgress, ProbeResult, ProbeStart, ProbeStarted, ProbeStop, StopReason,
};
pub use reading::{Field, Unavailable};
pub use server::{Limits, ProbeLimits, Welcome};

pub use crate::probe::{ProbeMode, ProbeStep};

/// Bumped on any change an older peer would misread. Additive changes (a new
/// optional field, a new message type) keep the version.
pub const PROTOCOL_VERSION: u32 = 1;
/// The fastest sample interval a client may ask for: NVML takes the driver's
/// global lock, so faster polling slows the GPU's own work (research/agent.md §1.2).
pub const MIN_INTERVAL_MS: u32 = 100;
/// The slowest sample interval a client may ask for.
pub const MAX_INTERVAL_MS: u32 = 60_000;
/// The interval of a `subscribe` that names none.
pub const DEFAULT_INTERVAL_MS: u32 = 1_000;
/// The largest text frame the agent accepts from a client. A hello is under
/// 200 bytes; anything near this limit is a mistake or an attack.
pub const MAX_CLIENT_MESSAGE_BYTES: u32 = 16 * 1024;
/// The most allocations a plan probe may list (a 126-layer model needs ~130).
pub const MAX_PROBE_STEPS: u32 = 512;
