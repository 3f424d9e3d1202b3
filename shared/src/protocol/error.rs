//! Errors the agent reports: the message and its stable codes.

use serde::{Deserialize, Serialize};

/// A refusal or a problem with the client's last message. Also the body of
/// every HTTP error response (without the envelope).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorMessage {
    pub code: ErrorCode,
    /// For people; may change between versions. Match on `code`.
    pub message: String,
}

impl ErrorMessage {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

/// Stable error codes: a client matches on these, never on the message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The token is missing or wrong. The connection closes.
    Unauthorized,
    /// Too many failed attempts from this address; wait and retry. Closes.
    RateLimited,
    /// The client's protocol version is not this agent's. Closes.
    UnsupportedVersion,
    /// The first message was not a `hello`. Closes.
    HandshakeRequired,
    /// No `hello` arrived in time. Closes.
    HandshakeTimeout,
    /// Not JSON, or no `type`. The connection survives.
    Malformed,
    /// A `type` this agent does not know. The connection survives.
    UnknownType,
    /// A known `type` with bad `data`. The connection survives.
    InvalidMessage,
    /// `subscribe.interval_ms` outside the limits. The connection survives.
    IntervalOutOfRange,
    /// A frame over `limits.max_message_bytes`. Closes (code 1009).
    MessageTooLarge,
    /// Nothing heard from the client (not even a pong) for too long. Closes.
    IdleTimeout,
    /// The agent is stopping. Closes (code 1001).
    ShuttingDown,
    /// The agent already serves its maximum number of connections (HTTP 503).
    TooManyConnections,
    /// The request's `Origin` is not allowed (HTTP 403).
    ForbiddenOrigin,
    /// The request's `Host` is not this agent's (DNS rebinding guard, HTTP 403).
    ForbiddenHost,
    /// No such HTTP resource (HTTP 404).
    NotFound,
    /// No sample could be read in time (HTTP 503).
    BackendUnavailable,
    /// `GET /api/fleet` on an agent started without `--prometheus` (HTTP 404).
    FleetNotConfigured,
    /// The agent's Prometheus did not answer, or not as expected (HTTP 502).
    PrometheusUnavailable,
    /// The agent runs with `--no-probes`. The connection survives.
    ProbesDisabled,
    /// `probe_start.gpu` is not a GPU of this agent.
    ProbeUnknownGpu,
    /// `confirm_bytes` is missing or does not equal the bytes asked for.
    ProbeNotConfirmed,
    /// `largest-block` and `max-total` need the agent's `--allow-full-probes`.
    ProbeNotAllowed,
    /// The probe asks for more than the GPU's free memory minus the margin.
    ProbeOverMargin,
    /// A probe already runs on that GPU, or on this connection.
    ProbeBusy,
    /// This client started too many probes lately; wait and retry.
    ProbeRateLimited,
    /// The GPU's compute mode (exclusive-process, prohibited) forbids a second context.
    ProbeComputeMode,
    /// The GPU cannot be probed now: no memory reading, no UUID, or MIG is on.
    ProbeUnavailable,
    /// `probe_cancel` with no probe of this connection running.
    ProbeNotRunning,
    /// (In `probe_result.error`.) No CUDA driver library, a missing symbol, or no device.
    ProbeCudaUnavailable,
    /// (In `probe_result.error`.) A CUDA call failed (other than out of memory).
    ProbeCudaError,
    /// (In `probe_result.error`.) The watchdog killed the probe past its deadline.
    ProbeTimedOut,
    /// (In `probe_result.error`.) The probe worker could not start or died.
    ProbeWorkerFailed,
    /// A bug in the agent; details are in its log, not here.
    Internal,
    /// A code from a newer agent; never sent by this version.
    #[serde(other)]
    Unknown,
}
