//! What a known plan adds to a finding: the plan's own figures beside the
//! readings ("holding 17.40 GiB ≈ Llama 2 7B in fp16; in 4-bit ≈ 3.90 GiB").
//! The agent diagnoses without a plan; the page and `headroom watch --plan`
//! know one and add these notes.

use serde::{Deserialize, Serialize};

use crate::engines::live::token_limit;
use crate::engines::{EngineKind, EnginePlan, ValidScenario};
use crate::estimate::Estimate;
use crate::formats::WeightFormat;
use crate::model::Model;
use crate::plan::{GpuBudget, GpuPeak, WeightPlan};
use crate::probe::{ProbePlan, plan_for_gpu};
use crate::units::{UnitSystem, format_bytes};

use super::finding::{Cause, Finding};

/// The figures of a plan a diagnosis compares with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanFacts {
    pub model: String,
    pub engine: EngineKind,
    pub weight_format: WeightFormat,
    /// What the plan needs on each GPU.
    pub per_gpu_bytes: Vec<u64>,
    pub kv_bytes_per_token: u64,
    pub concurrency: u64,
    /// The model's weights in the formats a fix loads them in, all GPUs.
    pub weights_in: Vec<(WeightFormat, u64)>,
}

/// The formats the checklist's first fix names: fp32, 16-bit, 8-bit, 4-bit.
const LADDER: [WeightFormat; 4] =
    [WeightFormat::F32, WeightFormat::F16, WeightFormat::Int8, WeightFormat::Bnb4 { nf4: true, double_quant: false }];

impl PlanFacts {
    pub fn of(model: &Model, estimate: &Estimate) -> Self {
        Self {
            model: model.name.clone(),
            engine: estimate.engine,
            weight_format: estimate.weight_format,
            per_gpu_bytes: estimate.per_gpu.iter().map(|g| g.total_bytes).collect(),
            kv_bytes_per_token: estimate.kv_bytes_per_token,
            concurrency: estimate.concurrency.max(1),
            weights_in: LADDER.iter().map(|&f| (f, WeightPlan::new(model, f, 1).total)).collect(),
        }
    }
}

/// One GPU of the plan as live mode draws it beside a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanGpu {
    pub index: usize,
    /// `budget.total_bytes()`.
    pub total_bytes: u64,
    pub budget: GpuBudget,
}

impl From<&GpuPeak> for PlanGpu {
    fn from(g: &GpuPeak) -> Self {
        Self { index: g.index, total_bytes: g.total_bytes, budget: g.budget }
    }
}

/// What live mode takes of the calculator's plan: each GPU's budget, the
/// figures its findings are compared with, and what a probe of each GPU
/// allocates. The page computes it with the engines and hands it to the
/// live bundle, which so carries no engine's rules (issue 38).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LivePlan {
    pub gpus: Vec<PlanGpu>,
    pub facts: PlanFacts,
    /// [`plan_for_gpu`] of every plan GPU, in order.
    pub probes: Vec<ProbePlan>,
}

impl LivePlan {
    /// `estimate` is `model` under `scenario`.
    pub fn of(model: &Model, scenario: &ValidScenario, estimate: &Estimate) -> Self {
        let plan = EnginePlan::new(model, scenario.clone());
        Self {
            gpus: estimate.per_gpu.iter().map(PlanGpu::from).collect(),
            facts: PlanFacts::of(model, estimate),
            probes: (0..estimate.per_gpu.len()).map(|gpu| plan_for_gpu(&plan, gpu)).collect(),
        }
    }
}

fn bytes(b: u64) -> String {
    format_bytes(b, UnitSystem::Binary)
}

fn words(f: WeightFormat) -> &'static str {
    match f {
        WeightFormat::F32 => "fp32",
        WeightFormat::F16 | WeightFormat::Bf16 => "16-bit",
        WeightFormat::Int8 => "8-bit",
        _ => "4-bit",
    }
}

/// The plan's figures for a finding, as sentences; none when the plan says
/// nothing the readings do not.
pub fn plan_notes(f: &Finding, plan: &PlanFacts) -> Vec<String> {
    let mut out = Vec::new();
    let need = plan.per_gpu_bytes.get(f.gpu as usize).copied();
    match f.cause {
        Cause::NearCapacity => {
            // The largest format whose weights fit in what is held.
            let loaded = plan.weights_in.iter().find(|(_, w)| *w <= f.bytes && *w * 10 >= f.bytes * 6);
            if let Some(&(format, w)) = loaded {
                let mut s =
                    format!("{} held ≈ {} in {} ({} of weights)", bytes(f.bytes), plan.model, words(format), bytes(w));
                let smaller: Vec<String> = plan
                    .weights_in
                    .iter()
                    .filter(|(g, w2)| *w2 < w && words(*g) != words(format))
                    .map(|(g, w2)| format!("in {} ≈ {}", words(*g), bytes(*w2)))
                    .collect();
                if !smaller.is_empty() {
                    s.push_str(&format!("; {}", smaller.join(", ")));
                }
                out.push(s);
            }
            if let Some(need) = need.filter(|&n| n * 10 < f.bytes * 8) {
                out.push(format!(
                    "The plan ({}, {}) needs {} on this GPU: the process holds more than it would",
                    plan.weight_format.id(),
                    plan.engine.name(),
                    bytes(need)
                ));
            }
        }
        Cause::Growing => {
            if let (Some(g), true) = (f.growth, plan.kv_bytes_per_token > 0) {
                let more = g.free_bytes / plan.kv_bytes_per_token;
                let per_sequence = (g.climbed_bytes + g.free_bytes) / plan.kv_bytes_per_token / plan.concurrency;
                out.push(format!(
                    "At the plan's {} of KV cache per token, the {} free hold about {more} more tokens (all sequences together); counting from when the climb began, keep new tokens under about {per_sequence} per sequence ({} at once): {}",
                    bytes(plan.kv_bytes_per_token),
                    bytes(g.free_bytes),
                    plan.concurrency,
                    token_limit(plan.engine, per_sequence),
                ));
            }
        }
        Cause::Unbalanced => {
            if plan.per_gpu_bytes.len() == f.spread.len() && plan.per_gpu_bytes.len() > 1 {
                let split: Vec<String> =
                    plan.per_gpu_bytes.iter().enumerate().map(|(i, b)| format!("GPU {i} {}", bytes(*b))).collect();
                out.push(format!("The plan's split: {}", split.join(", ")));
            }
        }
        Cause::Leftover => {
            if let Some(need) = need {
                out.push(format!(
                    "The plan needs {} on GPU {}; {} of it is held by what the finding names",
                    bytes(need),
                    f.gpu,
                    bytes(f.bytes)
                ));
            }
        }
    }
    out
}
