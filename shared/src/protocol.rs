//! The wire protocol between the agent (`headroom serve`) and its clients (the
//! page, scripts): typed, versioned JSON messages, documented in
//! `docs/protocol.md` (a test locks every message kind to that file).
//!
//! Every WebSocket text frame is one envelope `{"type": ..., "data": ...}`.
//! The client opens with [`Hello`]; the agent answers [`Welcome`] or an
//! [`ErrorMessage`] and closes. A [`Subscribe`] then starts [`Sample`]s at the
//! chosen interval. A [`ProbeStart`] asks the agent to allocate GPU memory
//! for real (in a short-lived child process); it answers [`ProbeStarted`],
//! [`ProbeProgress`] messages and one [`ProbeResult`].
//!
//! These types are the wire format only. The agent converts its telemetry into
//! them explicitly; no third-party struct (nvml-wrapper's, say) is ever
//! serialized directly. Unknown message types decode to
//! [`DecodeError::UnknownType`] so either side can answer or skip them rather
//! than drop the connection.

use serde::{Deserialize, Serialize};

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

// ---------------------------------------------------------------------------
// Envelopes

/// What a client sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum ClientMessage {
    Hello(Hello),
    Subscribe(Subscribe),
    ProbeStart(ProbeStart),
    ProbeCancel(ProbeCancel),
}

/// What the agent sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum ServerMessage {
    Welcome(Welcome),
    Sample(Sample),
    Error(ErrorMessage),
    ProbeStarted(ProbeStarted),
    ProbeProgress(ProbeProgress),
    ProbeResult(ProbeResult),
}

/// The first message of every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The agent's token (printed at start, or `--token`).
    pub token: String,
    /// The client's [`PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// Free-form client name for the agent's log, e.g. `headroom-web/0.1.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// Starts (or re-times) the stream of samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscribe {
    /// Between [`MIN_INTERVAL_MS`] and [`MAX_INTERVAL_MS`]; defaults to
    /// [`DEFAULT_INTERVAL_MS`]. Out of range is an `interval_out_of_range` error.
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u32,
}

fn default_interval_ms() -> u32 {
    DEFAULT_INTERVAL_MS
}

impl Default for Subscribe {
    fn default() -> Self {
        Self { interval_ms: DEFAULT_INTERVAL_MS }
    }
}

/// The agent's answer to a good hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub protocol_version: u32,
    #[serde(flatten)]
    pub host: HostInfo,
    pub limits: Limits,
    /// What probes this agent allows. An older agent sends none: probes off.
    #[serde(default)]
    pub probes: ProbeLimits,
}

/// What the agent allows; a client adapts instead of guessing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub min_interval_ms: u32,
    pub max_interval_ms: u32,
    pub default_interval_ms: u32,
    pub max_message_bytes: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            min_interval_ms: MIN_INTERVAL_MS,
            max_interval_ms: MAX_INTERVAL_MS,
            default_interval_ms: DEFAULT_INTERVAL_MS,
            max_message_bytes: MAX_CLIENT_MESSAGE_BYTES,
        }
    }
}

/// The agent's probe policy, so a page can say what a probe may do before
/// asking for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeLimits {
    /// False when the agent runs with `--no-probes` (or predates probes).
    pub enabled: bool,
    /// `largest-block` and `max-total` are allowed (`--allow-full-probes`).
    pub allow_full_probes: bool,
    /// A probe may take at most the GPU's free memory minus this.
    pub margin_bytes: u64,
    /// The hold of a `probe_start` without `hold_ms`.
    pub default_hold_ms: u32,
    /// Longer `hold_ms` are shortened to this.
    pub max_hold_ms: u32,
    /// The watchdog kills a probe still running after this.
    pub deadline_ms: u32,
    /// The most `steps` a plan probe may list.
    pub max_steps: u32,
    /// Probes a client (address) may start at once, then one per `rate_refill_ms`.
    pub rate_burst: u32,
    pub rate_refill_ms: u32,
}

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

// ---------------------------------------------------------------------------
// Probes

/// Allocate GPU memory for real, then free it. The agent refuses (an `error`
/// with a `probe_*` code) unless every safety rule holds; see `docs/protocol.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeStart {
    /// The GPU's `index` (as in `welcome.gpus`).
    pub gpu: u32,
    #[serde(default)]
    pub mode: ProbeMode,
    /// `plan`: the total (one block when `steps` is empty; if both are given
    /// they must agree). `largest-block`, `max-total`: the most the probe may
    /// take. At most the GPU's free memory minus `probes.margin_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// `plan` only: the allocations, in order (`shared::probe::plan_for_gpu`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<ProbeStep>,
    /// `max-total` only: the chunk size (default 1 GiB, at least 64 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<u64>,
    /// How long to hold what was allocated before freeing it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_ms: Option<u32>,
    /// Must repeat the bytes asked for (`bytes`, or the steps' total), so
    /// that no stray or replayed message allocates by accident.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_bytes: Option<u64>,
}

impl ProbeStart {
    /// What the probe asks for: `bytes`, else the steps' total.
    pub fn requested_bytes(&self) -> Option<u64> {
        match (self.bytes, self.steps.is_empty()) {
            (Some(b), _) => Some(b),
            (None, false) => Some(self.steps.iter().fold(0u64, |a, s| a.saturating_add(s.bytes))),
            (None, true) => None,
        }
    }
}

/// Stops this connection's running probe at once (the worker is killed; the
/// driver frees its memory). Answered by the probe's `probe_result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeCancel {
    /// Optional: only cancel if this is the running probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_id: Option<u64>,
}

/// A probe passed every check and its worker runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeStarted {
    pub probe_id: u64,
    pub gpu: u32,
    pub mode: ProbeMode,
    pub requested_bytes: u64,
    /// The GPU's free memory (latest reading) minus the margin: the most the
    /// probe may hold. The worker lowers it further once its own CUDA context
    /// exists.
    pub limit_bytes: u64,
    pub hold_ms: u32,
    /// `plan`: the number of allocations; otherwise 0.
    pub steps: u32,
    /// The worker's PID: it shows up in the GPU's process list meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_pid: Option<u32>,
    pub simulated: bool,
}

/// What a probe is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbePhase {
    /// The worker's CUDA context exists (`context_bytes` says what it cost).
    Context,
    /// One allocation was tried.
    Allocate,
    /// Holding `held_bytes` for `hold_ms` before freeing everything.
    Hold,
    #[serde(other)]
    Unknown,
}

/// Progress of a running probe. Latest wins: a slow client may miss some.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeProgress {
    pub probe_id: u64,
    pub phase: ProbePhase,
    /// The 1-based allocation attempt (0 before the first).
    pub step: u32,
    /// What the attempt stands for: `layer 3 weights`, `try 37.5 GiB`, `chunk 4`.
    pub label: String,
    /// The attempt's size (`hold`: what is held).
    pub bytes: u64,
    /// Whether the driver granted it.
    pub allocated: bool,
    /// Everything the probe holds now.
    pub held_bytes: u64,
    /// `context` only: what creating the CUDA context cost, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_bytes: Option<u64>,
    pub elapsed_ms: u64,
}

/// How a probe ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeOutcome {
    /// It ran to the end: every plan step was granted, or the search finished.
    Completed,
    /// A plan step was refused (`stopped_at` says which).
    Stopped,
    /// `probe_cancel`, or the client went away.
    Cancelled,
    /// The watchdog killed it past its deadline.
    TimedOut,
    /// It could not run; `error` says why.
    Failed,
    #[serde(other)]
    Unknown,
}

/// Why allocating stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The driver refused (`CUDA_ERROR_OUT_OF_MEMORY`).
    OutOfMemory,
    /// One more would cross the safety margin, so it was not tried.
    Margin,
    #[serde(other)]
    Unknown,
}

/// The allocation that ended a probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeStop {
    pub step: u32,
    pub label: String,
    pub bytes: u64,
    pub reason: StopReason,
}

/// The end of a probe; everything it allocated has been freed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub probe_id: u64,
    pub gpu: u32,
    pub mode: ProbeMode,
    pub simulated: bool,
    /// `plan`: every step was granted. Other modes: the search finished.
    pub ok: bool,
    pub outcome: ProbeOutcome,
    /// What ended the allocations: a refused plan step or chunk, or the margin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<ProbeStop>,
    pub requested_bytes: u64,
    /// `plan`, `max-total`: held at the peak. `largest-block`: the block found.
    pub achieved_bytes: u64,
    /// The largest single allocation the driver granted.
    pub largest_block_bytes: u64,
    /// Free memory lost to the worker's CUDA context (NVML free before minus
    /// after); `null` when it could not be measured.
    pub context_bytes: Option<u64>,
    /// Free memory before the context (NVML), when read.
    pub free_before_bytes: Option<u64>,
    /// Free memory after everything was freed, context still alive (CUDA).
    pub free_after_bytes: Option<u64>,
    /// The GPU's total memory as CUDA reports it.
    pub total_bytes: Option<u64>,
    /// How long the peak was held.
    pub held_ms: u64,
    /// From the request to the worker's exit.
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorMessage>,
}

// ---------------------------------------------------------------------------
// Readings

/// A reading that may be unavailable, and then says why: never a silent zero.
/// JSON: `{"value": 54}` or `{"unavailable": "not_supported"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field<T> {
    Value(T),
    Unavailable(Unavailable),
}

impl<T> Field<T> {
    pub fn value(&self) -> Option<&T> {
        match self {
            Field::Value(v) => Some(v),
            Field::Unavailable(_) => None,
        }
    }
}

impl<T> From<Result<T, Unavailable>> for Field<T> {
    fn from(r: Result<T, Unavailable>) -> Self {
        match r {
            Ok(v) => Field::Value(v),
            Err(why) => Field::Unavailable(why),
        }
    }
}

/// Why a reading is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unavailable {
    /// This GPU or driver does not report it (e.g. power on some boards,
    /// framebuffer memory on unified-memory parts).
    NotSupported,
    /// The agent's user may not read it.
    NoPermission,
    /// The driver's NVML library lacks the call (too old).
    MissingInDriver,
    /// The driver is known to return garbage for it (e.g. the process list on
    /// drivers 535.43–535.85), so the agent does not show it.
    Unreliable,
    /// The process is not visible from the agent's PID namespace (container).
    NotVisible,
    /// The GPU fell off the bus.
    GpuLost,
    /// Not read yet (the process list is read less often than memory).
    NotSampled,
    /// Any other failure; the agent logs the details.
    Failed,
    /// A reason from a newer agent.
    #[serde(other)]
    Unknown,
}

/// The agent and its host, sent once per connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub agent_version: String,
    pub hostname: String,
    pub driver_version: Field<String>,
    /// `major.minor` of the CUDA driver API, e.g. `12.8`.
    pub cuda_driver_version: Field<String>,
    /// True when the readings come from the simulated backend, not a GPU.
    pub simulated: bool,
    pub gpus: Vec<GpuInfo>,
}

/// What does not change while the agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML's index. Not stable across reboots: key on `uuid` where you can.
    pub index: u32,
    pub uuid: Field<String>,
    pub name: Field<String>,
    /// `domain:bus:device.function`, e.g. `00000000:18:00.0`.
    pub pci_bus_id: Field<String>,
    pub memory_total_bytes: Field<u64>,
    pub compute_mode: Field<ComputeMode>,
    pub mig_mode: Field<MigMode>,
    /// The catalog id of the simulated GPU (`h100-sxm`); `None` for real GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeMode {
    Default,
    ExclusiveThread,
    ExclusiveProcess,
    Prohibited,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigMode {
    pub enabled: bool,
    /// The mode after the next GPU reset.
    pub pending_enabled: bool,
}

/// One reading of every GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Increases by one per reading; a repeated `seq` is the same reading.
    pub seq: u64,
    /// Unix time of the reading, in milliseconds.
    pub timestamp_ms: u64,
    /// Unix time at which the process lists were read (they are read less
    /// often than memory).
    pub processes_timestamp_ms: u64,
    pub simulated: bool,
    pub gpus: Vec<GpuSample>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    pub index: u32,
    pub memory: Field<MemoryReading>,
    pub utilization: Field<Utilization>,
    pub temperature_c: Field<u32>,
    pub power_draw_mw: Field<u32>,
    pub power_limit_mw: Field<u32>,
    pub sm_clock_mhz: Field<u32>,
    pub memory_clock_mhz: Field<u32>,
    /// MIG instances with their memory; empty when MIG is off.
    pub mig_instances: Field<Vec<MigInstance>>,
    /// Processes holding a compute context on this GPU.
    pub processes: Field<Vec<GpuProcess>>,
}

/// Framebuffer memory. The four numbers are sent as read: budget from
/// `free_bytes`, never from `total - used` (v1 `used` includes the reserve, v2
/// does not; research/agent.md §2.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryReading {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    /// The driver's reserve; only the v2 call reports it.
    pub reserved_bytes: Field<u64>,
    pub source: MemorySource,
}

/// Which call produced a [`MemoryReading`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemorySource {
    /// `nvmlDeviceGetMemoryInfo_v2` (R510+): `used` excludes `reserved`.
    NvmlV2,
    /// `nvmlDeviceGetMemoryInfo`: `used` includes the reserve.
    NvmlV1,
    /// The simulated backend (v2 semantics).
    Simulated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Utilization {
    /// Share of the last sample period with a kernel running, 0–100.
    pub gpu_pct: u32,
    /// Share of the last sample period with memory being read or written, 0–100.
    pub memory_pct: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigInstance {
    pub index: u32,
    pub uuid: Field<String>,
    pub memory: Field<MemoryReading>,
}

/// A process holding GPU memory. PIDs are host PIDs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    pub pid: u32,
    /// The process name from `/proc/<pid>/comm`.
    pub name: Field<String>,
    /// The short container id, when the process runs in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    pub used_bytes: Field<u64>,
    /// The MIG instance it runs on, when MIG is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<MigPlacement>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigPlacement {
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
}

// ---------------------------------------------------------------------------
// HTTP bodies

/// `GET /api/snapshot`: the host and its latest sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub protocol_version: u32,
    #[serde(flatten)]
    pub host: HostInfo,
    pub sample: Sample,
}

/// `GET /api/health`: deliberately says nothing a stranger could use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    pub status: String,
    pub protocol_version: u32,
    pub simulated: bool,
}

// ---------------------------------------------------------------------------
// Encoding and tolerant decoding

/// Why a text frame is not a message this side understands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a message envelope: {0}")]
    Malformed(String),
    #[error("unknown message type `{0}`")]
    UnknownType(String),
    #[error("bad `{kind}` message: {reason}")]
    InvalidData { kind: String, reason: String },
}

impl DecodeError {
    /// The error code to answer with.
    pub fn code(&self) -> ErrorCode {
        match self {
            DecodeError::Malformed(_) => ErrorCode::Malformed,
            DecodeError::UnknownType(_) => ErrorCode::UnknownType,
            DecodeError::InvalidData { .. } => ErrorCode::InvalidMessage,
        }
    }
}

#[derive(Deserialize)]
struct RawEnvelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: serde_json::Value,
}

fn envelope(text: &str) -> Result<RawEnvelope, DecodeError> {
    serde_json::from_str(text).map_err(|e| DecodeError::Malformed(e.to_string()))
}

fn data<T: serde::de::DeserializeOwned>(kind: &str, data: serde_json::Value) -> Result<T, DecodeError> {
    // A message without `data` (or with `null`) reads as `{}`, so
    // `{"type": "subscribe"}` takes every default.
    let data = if data.is_null() { serde_json::Value::Object(Default::default()) } else { data };
    serde_json::from_value(data).map_err(|e| DecodeError::InvalidData { kind: kind.to_owned(), reason: e.to_string() })
}

impl ClientMessage {
    /// Decodes one text frame; unknown types are an error the caller answers.
    pub fn decode(text: &str) -> Result<Self, DecodeError> {
        let raw = envelope(text)?;
        match raw.kind.as_str() {
            "hello" => data(&raw.kind, raw.data).map(ClientMessage::Hello),
            "subscribe" => data(&raw.kind, raw.data).map(ClientMessage::Subscribe),
            "probe_start" => data(&raw.kind, raw.data).map(ClientMessage::ProbeStart),
            "probe_cancel" => data(&raw.kind, raw.data).map(ClientMessage::ProbeCancel),
            _ => Err(DecodeError::UnknownType(raw.kind)),
        }
    }

    pub fn encode(&self) -> String {
        encode(self)
    }
}

impl ServerMessage {
    /// Decodes one text frame; a client skips unknown types (newer agents).
    pub fn decode(text: &str) -> Result<Self, DecodeError> {
        let raw = envelope(text)?;
        match raw.kind.as_str() {
            "welcome" => data(&raw.kind, raw.data).map(ServerMessage::Welcome),
            "sample" => data(&raw.kind, raw.data).map(ServerMessage::Sample),
            "error" => data(&raw.kind, raw.data).map(ServerMessage::Error),
            "probe_started" => data(&raw.kind, raw.data).map(ServerMessage::ProbeStarted),
            "probe_progress" => data(&raw.kind, raw.data).map(ServerMessage::ProbeProgress),
            "probe_result" => data(&raw.kind, raw.data).map(ServerMessage::ProbeResult),
            _ => Err(DecodeError::UnknownType(raw.kind)),
        }
    }

    pub fn encode(&self) -> String {
        encode(self)
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMessage::Error(ErrorMessage::new(code, message))
    }
}

fn encode<T: Serialize>(message: &T) -> String {
    // These types hold only strings, numbers and string-keyed structs, which
    // serde_json always serializes; the fallback is unreachable in practice.
    serde_json::to_string(message)
        .unwrap_or_else(|_| r#"{"type":"error","data":{"code":"internal","message":"encoding failed"}}"#.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_messages_round_trip_and_default() {
        let hello = ClientMessage::Hello(Hello { token: "t".into(), protocol_version: 1, client: None });
        assert_eq!(ClientMessage::decode(&hello.encode()), Ok(hello));
        assert_eq!(
            ClientMessage::decode(r#"{"type":"subscribe"}"#),
            Ok(ClientMessage::Subscribe(Subscribe { interval_ms: DEFAULT_INTERVAL_MS }))
        );
    }

    #[test]
    fn decoding_names_what_is_wrong() {
        assert!(matches!(ClientMessage::decode("{"), Err(DecodeError::Malformed(_))));
        assert!(matches!(ClientMessage::decode(r#"{"data":{}}"#), Err(DecodeError::Malformed(_))));
        assert_eq!(ClientMessage::decode(r#"{"type":"probe"}"#), Err(DecodeError::UnknownType("probe".into())));
        // A probe without its confirm field still decodes: the agent refuses it with a probe code.
        let start = ClientMessage::decode(r#"{"type":"probe_start","data":{"gpu":0,"bytes":1024}}"#);
        assert!(matches!(start, Ok(ClientMessage::ProbeStart(ProbeStart { confirm_bytes: None, .. }))));
        let bad = ClientMessage::decode(r#"{"type":"subscribe","data":{"interval_ms":"fast"}}"#);
        assert_eq!(bad.map_err(|e| e.code()), Err(ErrorCode::InvalidMessage));
    }

    #[test]
    fn newer_codes_and_reasons_decode_as_unknown() {
        let e: ErrorMessage = serde_json::from_str(r#"{"code":"from_the_future","message":"m"}"#).unwrap();
        assert_eq!(e.code, ErrorCode::Unknown);
        let f: Field<u32> = serde_json::from_str(r#"{"unavailable":"from_the_future"}"#).unwrap();
        assert_eq!(f, Field::Unavailable(Unavailable::Unknown));
    }
}
