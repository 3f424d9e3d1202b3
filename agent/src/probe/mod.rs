//! Probe allocations: really allocating GPU memory to check a plan against
//! the GPU as it is now, then giving it all back.
//!
//! **Architecture Invariant:** the agent never creates a CUDA context. A probe
//! runs in a short-lived child, `headroom probe-worker` ([`worker`]), started
//! by [`runner`] with the GPU mapped by UUID; the child's exit frees its
//! memory whatever happens, and a watchdog kills it past its deadline.
//!
//! - [`safety`]: the rules a request passes first (confirm field, full probes
//!   allowed, compute mode, free memory minus the margin); [`guard`]: one
//!   probe per GPU, a rate limit per client.
//! - [`modes`]: the plan / largest-block / max-total algorithms over an
//!   allocator: CUDA ([`cuda`], cudarc loaded at run time) or the simulated
//!   GPU ([`sim`], from `telemetry::simulated`), so CI runs the whole flow.
//! - [`job`]: the JSON lines between the agent and its worker.

#[allow(unsafe_code)]
mod cuda;
pub mod guard;
pub mod job;
pub mod modes;
pub mod runner;
pub mod safety;
mod sim;
pub mod worker;

use std::path::PathBuf;
use std::time::Duration;

use shared::protocol::{MAX_PROBE_STEPS, ProbeLimits};
use shared::units::GIB;

/// The operator's probe policy (`headroom serve` flags), with safe defaults.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// `--no-probes` turns probes off.
    pub enabled: bool,
    /// `largest-block` and `max-total` take (nearly) all free memory for a
    /// moment: only with `--allow-full-probes`.
    pub allow_full_probes: bool,
    /// A probe never takes more than free memory minus this (`--probe-margin`).
    pub margin_bytes: u64,
    pub default_hold: Duration,
    pub max_hold: Duration,
    /// The watchdog: a worker still running after this is killed. Context
    /// creation alone can take seconds without persistence mode.
    pub deadline: Duration,
    pub max_steps: u32,
    /// Probes per client address: `rate_burst` at once, then one per `rate_refill`.
    pub rate_burst: u32,
    pub rate_refill: Duration,
    /// The `headroom` binary that runs `probe-worker` (this one by default).
    pub worker: PathBuf,
    /// Simulated GPUs: the time each allocation takes, so a probe is visible.
    pub sim_step_delay: Duration,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            allow_full_probes: false,
            margin_bytes: GIB,
            default_hold: Duration::from_secs(1),
            max_hold: Duration::from_secs(5),
            deadline: Duration::from_secs(30),
            max_steps: MAX_PROBE_STEPS,
            rate_burst: 3,
            rate_refill: Duration::from_secs(10),
            worker: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("headroom")),
            sim_step_delay: Duration::from_millis(20),
        }
    }
}

impl ProbeConfig {
    pub fn default_hold_ms(&self) -> u32 {
        millis(self.default_hold)
    }

    pub fn max_hold_ms(&self) -> u32 {
        millis(self.max_hold)
    }

    /// What `welcome` advertises.
    pub fn limits(&self) -> ProbeLimits {
        ProbeLimits {
            enabled: self.enabled,
            allow_full_probes: self.allow_full_probes,
            margin_bytes: self.margin_bytes,
            default_hold_ms: self.default_hold_ms(),
            max_hold_ms: self.max_hold_ms(),
            deadline_ms: millis(self.deadline),
            max_steps: self.max_steps,
            rate_burst: self.rate_burst,
            rate_refill_ms: millis(self.rate_refill),
        }
    }
}

fn millis(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}
