//! `findings`: the agent's diagnosis of its latest readings (`crate::live`),
//! sent after each `sample` to subscribed clients; an empty list says no
//! cause is showing. Causes and certainties from a newer agent read as
//! `unknown` and are skipped by clients that do not know them.

use serde::{Deserialize, Serialize};

use crate::live;

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

impl From<&live::Finding> for Finding {
    fn from(f: &live::Finding) -> Self {
        Self {
            cause: match f.cause {
                live::Cause::NearCapacity => FindingCause::NearCapacity,
                live::Cause::Growing => FindingCause::Growing,
                live::Cause::Unbalanced => FindingCause::Unbalanced,
                live::Cause::Leftover => FindingCause::Leftover,
            },
            number: f.cause.number(),
            gpu: f.gpu,
            pid: f.pid,
            process: f.process.clone(),
            certainty: match f.certainty {
                live::Certainty::Likely => FindingCertainty::Likely,
                live::Certainty::Possible => FindingCertainty::Possible,
            },
            since_ms: f.since_ms,
            found_ms: f.found_ms,
            bytes: f.bytes,
            gpu_total_bytes: f.gpu_total_bytes,
            evidence: f.evidence.clone(),
            fix: f.fix.clone(),
            growth: f.growth.map(|g| Growth {
                bytes_per_s: g.bytes_per_s,
                climbed_bytes: g.climbed_bytes,
                steps: g.steps,
                free_bytes: g.free_bytes,
                seconds_to_capacity: g.seconds_to_capacity,
            }),
            spread: f.spread.iter().map(|&(gpu, bytes)| Spread { gpu, bytes }).collect(),
        }
    }
}

impl Finding {
    /// The diagnosis' own finding, for a client that adds a plan's figures
    /// ([`live::plan_notes`]); `None` for a cause from a newer agent.
    pub fn to_live(&self) -> Option<live::Finding> {
        let cause = match self.cause {
            FindingCause::NearCapacity => live::Cause::NearCapacity,
            FindingCause::Growing => live::Cause::Growing,
            FindingCause::Unbalanced => live::Cause::Unbalanced,
            FindingCause::Leftover => live::Cause::Leftover,
            FindingCause::Unknown => return None,
        };
        Some(live::Finding {
            cause,
            gpu: self.gpu,
            pid: self.pid,
            engine: self.process.as_deref().and_then(live::engine_of),
            process: self.process.clone(),
            certainty: match self.certainty {
                FindingCertainty::Likely => live::Certainty::Likely,
                _ => live::Certainty::Possible,
            },
            since_ms: self.since_ms,
            found_ms: self.found_ms,
            bytes: self.bytes,
            gpu_total_bytes: self.gpu_total_bytes,
            evidence: self.evidence.clone(),
            fix: self.fix.clone(),
            growth: self.growth.map(|g| live::Growth {
                bytes_per_s: g.bytes_per_s,
                climbed_bytes: g.climbed_bytes,
                steps: g.steps,
                free_bytes: g.free_bytes,
                seconds_to_capacity: g.seconds_to_capacity,
            }),
            spread: self.spread.iter().map(|s| (s.gpu, s.bytes)).collect(),
        })
    }
}

impl Findings {
    pub fn of(seq: u64, timestamp_ms: u64, findings: &[live::Finding]) -> Self {
        Self { seq, timestamp_ms, findings: findings.iter().map(Finding::from).collect() }
    }
}
