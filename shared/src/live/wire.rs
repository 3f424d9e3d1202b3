//! Findings to and from the wire (`crate::protocol`'s `findings` message),
//! field by field: the agent sends them, the page and `headroom watch --agent`
//! read them back to add a plan's figures.

use crate::live;
use crate::protocol as wire;

impl From<&live::Finding> for wire::Finding {
    fn from(f: &live::Finding) -> Self {
        Self {
            cause: match f.cause {
                live::Cause::NearCapacity => wire::FindingCause::NearCapacity,
                live::Cause::Growing => wire::FindingCause::Growing,
                live::Cause::Unbalanced => wire::FindingCause::Unbalanced,
                live::Cause::Leftover => wire::FindingCause::Leftover,
            },
            number: f.cause.number(),
            gpu: f.gpu,
            pid: f.pid,
            process: f.process.clone(),
            certainty: match f.certainty {
                live::Certainty::Likely => wire::FindingCertainty::Likely,
                live::Certainty::Possible => wire::FindingCertainty::Possible,
            },
            since_ms: f.since_ms,
            found_ms: f.found_ms,
            bytes: f.bytes,
            gpu_total_bytes: f.gpu_total_bytes,
            evidence: f.evidence.clone(),
            fix: f.fix.clone(),
            growth: f.growth.map(|g| wire::Growth {
                bytes_per_s: g.bytes_per_s,
                climbed_bytes: g.climbed_bytes,
                steps: g.steps,
                free_bytes: g.free_bytes,
                seconds_to_capacity: g.seconds_to_capacity,
            }),
            spread: f.spread.iter().map(|&(gpu, bytes)| wire::Spread { gpu, bytes }).collect(),
        }
    }
}

impl wire::Finding {
    /// The diagnosis' own finding, for a client that adds a plan's figures
    /// ([`live::plan_notes`]); `None` for a cause from a newer agent.
    pub fn to_live(&self) -> Option<live::Finding> {
        let cause = match self.cause {
            wire::FindingCause::NearCapacity => live::Cause::NearCapacity,
            wire::FindingCause::Growing => live::Cause::Growing,
            wire::FindingCause::Unbalanced => live::Cause::Unbalanced,
            wire::FindingCause::Leftover => live::Cause::Leftover,
            wire::FindingCause::Unknown => return None,
        };
        Some(live::Finding {
            cause,
            gpu: self.gpu,
            pid: self.pid,
            engine: self.process.as_deref().and_then(live::engine_of),
            process: self.process.clone(),
            certainty: match self.certainty {
                wire::FindingCertainty::Likely => live::Certainty::Likely,
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

impl wire::Findings {
    pub fn of(seq: u64, timestamp_ms: u64, findings: &[live::Finding]) -> Self {
        Self { seq, timestamp_ms, findings: findings.iter().map(wire::Finding::from).collect() }
    }
}
