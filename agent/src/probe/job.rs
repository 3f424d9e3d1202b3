//! What the agent tells a probe worker (one JSON line on its stdin) and what
//! the worker answers (JSON lines on its stdout). Internal to this binary:
//! parent and child are always the same build, so this is no public contract.

use serde::{Deserialize, Serialize};
use shared::protocol::{ErrorCode, ProbeMode, ProbeStep, ProbeStop};

/// One probe for one worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub mode: ProbeMode,
    /// `plan`: the allocations in order.
    #[serde(default)]
    pub steps: Vec<ProbeStep>,
    /// The most the probe may hold at once (plan: its total; other modes: the
    /// ceiling), already within the parent's free-minus-margin check.
    pub limit_bytes: u64,
    /// The worker keeps at least this much free by CUDA's own count, after
    /// its context exists: the second, more exact margin check.
    pub margin_bytes: u64,
    /// `max-total`: the first chunk size.
    pub chunk_bytes: u64,
    pub hold_ms: u64,
    pub device: Device,
}

/// Which memory to probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// A real GPU, CUDA ordinal 0 of the worker (the parent sets
    /// `CUDA_VISIBLE_DEVICES=<uuid>`). The UUID, when known, lets the worker
    /// read NVML's free memory around its context.
    Cuda { uuid: Option<String> },
    /// A simulated GPU with this much free memory (the simulated backend's
    /// reading) and total.
    Simulated { free_bytes: u64, total_bytes: u64, step_delay_ms: u64 },
}

/// One line of the worker's stdout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The CUDA context exists. `limit_bytes` is the job's limit lowered to
    /// CUDA's free memory minus the margin.
    Context {
        context_bytes: Option<u64>,
        free_before_bytes: Option<u64>,
        free_bytes: u64,
        total_bytes: u64,
        limit_bytes: u64,
    },
    /// One allocation was tried.
    Step { step: u32, label: String, bytes: u64, allocated: bool, held_bytes: u64 },
    /// Holding the peak before freeing it.
    Hold { held_bytes: u64, hold_ms: u64 },
    /// Everything was freed; the worker exits 0.
    Done(Report),
    /// The probe could not run; the worker exits 1.
    Error { code: ErrorCode, message: String },
}

/// What the worker measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub ok: bool,
    /// The allocations ran to the end (a plan step refused: `false`).
    pub completed: bool,
    pub stopped_at: Option<ProbeStop>,
    pub achieved_bytes: u64,
    pub largest_block_bytes: u64,
    pub context_bytes: Option<u64>,
    pub free_before_bytes: Option<u64>,
    pub free_after_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
    pub held_ms: u64,
}

impl Event {
    pub fn line(&self) -> String {
        // Plain strings and numbers: serialization cannot fail.
        serde_json::to_string(self)
            .unwrap_or_else(|_| r#"{"event":"error","code":"internal","message":"encoding failed"}"#.to_owned())
    }
}
