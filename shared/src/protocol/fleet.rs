//! `GET /api/fleet`: every GPU the team's Prometheus knows, as the agent
//! relays it (`headroom serve --prometheus URL`). Read from the
//! dcgm-exporter-compatible series, so GPUs exported by dcgm-exporter itself
//! count as much as those of other Headroom agents.

use serde::{Deserialize, Serialize};

/// The fleet as one round of fixed queries saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetSnapshot {
    /// Unix time of the queries, in milliseconds.
    pub queried_at_ms: u64,
    /// How far back a GPU that is no longer scraped is still listed (as stale).
    pub lookback_s: u32,
    /// Whole GPUs (MIG instances are not listed), by host then GPU index.
    pub gpus: Vec<FleetGpu>,
    /// GPUs left out because the answer would have been too large.
    #[serde(default)]
    pub truncated: u32,
}

/// One GPU, from its latest scraped memory series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetGpu {
    /// The exporter's host name (`Hostname`/`hostname` label), else the scrape target.
    pub host: String,
    /// The scrape target (`instance` label).
    pub instance: String,
    /// The GPU index on its host (`gpu` label).
    pub gpu: String,
    /// `UUID` label; empty when the exporter sends none.
    pub uuid: String,
    /// `modelName` label, e.g. `NVIDIA H100 80GB HBM3`.
    pub model: String,
    /// `free + used + reserved`, from whole MiB.
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub used_bytes: u64,
    /// Absent when the exporter does not send `DCGM_FI_DEV_FB_RESERVED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_bytes: Option<u64>,
    /// Not in the latest scrape (the target is down or stopped exporting it):
    /// the figures are the last ones seen, within `lookback_s`.
    pub stale: bool,
}
