//! `findings`: the agent's diagnosis of its latest readings (`shared::live`,
//! which converts its findings to these),
//! sent after each `sample` to subscribed clients; an empty list says no
//! cause is showing. Causes and certainties from a newer agent read as
//! `unknown` and are skipped by clients that do not know them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Findings {
    /// The `seq` of the sample they were made from.
    pub seq: u64,
    pub timestamp_ms: u64,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub cause: FindingCause,
    /// The checklist's number of the cause (1–4).
    pub number: u8,
    pub gpu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    pub certainty: FindingCertainty,
    /// Unix ms of the first reading that shows it.
    pub since_ms: u64,
    /// Unix ms of the reading at which it was first found.
    pub found_ms: u64,
    /// What the process holds, or what no process holds.
    pub bytes: u64,
    pub gpu_total_bytes: u64,
    pub evidence: String,
    pub fix: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<Growth>,
    /// Unbalanced: what the process holds on each of its GPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread: Vec<Spread>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingCause {
    NearCapacity,
    Growing,
    Unbalanced,
    Leftover,
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingCertainty {
    Likely,
    Possible,
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Growth {
    pub bytes_per_s: u64,
    pub climbed_bytes: u64,
    pub steps: u32,
    pub free_bytes: u64,
    pub seconds_to_capacity: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spread {
    pub gpu: u32,
    pub bytes: u64,
}
