//! The agent's welcome: its host, its limits and its probe policy.

use serde::{Deserialize, Serialize};

use super::{DEFAULT_INTERVAL_MS, HostInfo, MAX_CLIENT_MESSAGE_BYTES, MAX_INTERVAL_MS, MIN_INTERVAL_MS};

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
