//! What a probe allocates for a plan: the calculator's budget for one GPU as an
//! engine would request it — the weights layer by layer, then the KV cache as
//! one block, then the activation peak — so the agent can check it with real
//! allocations.

use serde::{Deserialize, Serialize};

use crate::engines::EnginePlan;

/// How a probe allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeMode {
    /// The plan's chunks in order.
    #[default]
    Plan,
    /// Binary-search the largest single allocation (2 MiB resolution).
    LargestBlock,
    /// Fixed-size chunks until the driver refuses.
    MaxTotal,
}

impl ProbeMode {
    pub fn id(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::LargestBlock => "largest-block",
            Self::MaxTotal => "max-total",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Plan, Self::LargestBlock, Self::MaxTotal].into_iter().find(|m| m.id() == s.trim())
    }
}

/// One allocation of a plan probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeStep {
    /// What the bytes stand for (`layer 12 weights`, `KV cache`, …).
    pub label: String,
    pub bytes: u64,
}

/// The allocations of a plan probe on one GPU, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbePlan {
    pub gpu: usize,
    pub steps: Vec<ProbeStep>,
}

impl ProbePlan {
    pub fn total_bytes(&self) -> u64 {
        self.steps.iter().fold(0u64, |a, s| a.saturating_add(s.bytes))
    }
}

/// The chunks GPU `gpu` of a plan would hold at its peak, as an engine
/// allocates them. The CUDA context is not a step: the probe measures it.
pub fn plan_for_gpu(p: &EnginePlan, gpu: usize) -> ProbePlan {
    let stage = p.stage(gpu);
    let mut steps = Vec::new();
    let mut push = |label: String, bytes: u64| {
        if bytes > 0 {
            steps.push(ProbeStep { label, bytes });
        }
    };
    if stage == 0 && p.first_on_gpu {
        push("embeddings".into(), p.weights.first);
    }
    for layer in p.stage_range(stage) {
        push(format!("layer {layer} weights"), p.weights.per_layer.get(layer).copied().unwrap_or(0));
    }
    if p.is_last_stage(stage) {
        push("final norm and lm_head".into(), p.weights.last);
    }
    let peak = p.peak(gpu, p.scenario.concurrency);
    push("KV cache".into(), peak.kv_cache_bytes);
    push("activation peak".into(), peak.activation_bytes);
    ProbePlan { gpu, steps }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::Scenario;
    use crate::model::Model;

    #[test]
    fn a_plan_probe_allocates_the_budget_without_the_context() {
        let m = Model::preset("llama-3.1-8b").unwrap();
        let p = EnginePlan::new(&m, Scenario::default().validate().unwrap());
        let plan = plan_for_gpu(&p, 0);
        let peak = p.peak(0, 1);
        assert_eq!(plan.total_bytes(), peak.total_bytes() - peak.overhead_bytes);
        assert_eq!(plan.steps.iter().filter(|s| s.label.ends_with("weights")).count(), 32);
        assert_eq!(plan.steps.last().map(|s| s.label.as_str()), Some("activation peak"));
        for mode in [ProbeMode::Plan, ProbeMode::LargestBlock, ProbeMode::MaxTotal] {
            assert_eq!(ProbeMode::parse(mode.id()), Some(mode));
        }
    }
}
