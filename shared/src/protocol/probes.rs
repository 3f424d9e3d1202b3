//! Probe messages: start and cancel (client), started, progress and result (agent).

use serde::{Deserialize, Serialize};

use super::{ErrorMessage, ProbeMode, ProbeStep};

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
