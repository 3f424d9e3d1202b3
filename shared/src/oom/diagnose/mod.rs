//! Diagnosis of a parsed out-of-memory error: which of the causes of the
//! OOM checklist (`PRODUCT.md`) it is, with the evidence for each, and the
//! fixes with the memory they save and the code or flags that apply them.
//!
//! [`diagnose`] reasons from three sources, each optional but the first:
//! - the error's own figures ([`OomReport`]): the request against what was
//!   free, reserved but unallocated, held by other processes or capped;
//! - the plan, when one is known (the calculator's current plan on the page,
//!   `--model`/`--config` and the plan flags on the command line): the
//!   estimator then says whether the weights fit, at which token the cache
//!   runs out, and which change makes it fit (`crate::fixes`);
//! - live readings of the GPU from the agent ([`LiveGpu`]): who holds memory
//!   now.
//!
//! Every rule that suspects a cause adds a score and a sentence with the
//! figures behind it, so each ranking can be explained. Scores are on a
//! 0–100 scale and mean "how surely removing this cause alone would have
//! avoided the error": a cause proved by the plan or by the figures (the
//! reserved-but-unallocated memory exceeds what was missing) scores 70–95, a
//! pattern that only suggests it (a tiny request on a full GPU) 40–60.
//!
//! Layout: `facts` reads the error and the live readings into figures;
//! the rules (`rules` for the error's figures, `plan` for the plan) add
//! scores, evidence and fixes to the `board`; `checklist` writes the summary
//! and the checklist from the ranked causes; `text` formats the figures.

mod board;
mod checklist;
mod facts;
mod plan;
mod rules;
mod text;

use serde::{Deserialize, Serialize};

use super::{OomKind, OomReport};
use crate::catalog::ModelPreset;
use crate::engines::EngineKind;
use crate::estimate::{Scenario, Verdict};
use crate::fixes::GivesUp;
use crate::model::Model;
use board::Board;
use checklist::{checklist, summary};
use facts::Facts;
use plan::from_the_plan;
use rules::{from_the_error, leftovers, several_gpus, too_few_figures};

/// A plan to check the error against.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    pub model: &'a Model,
    pub scenario: &'a Scenario,
}

/// A preset's model (`None` if it does not read).
pub type PresetModel = fn(&ModelPreset) -> Option<Model>;

/// What besides the error is known.
#[derive(Debug, Clone, Copy)]
pub struct DiagnoseContext<'a> {
    /// The plan that was (meant to be) run.
    pub plan: Option<Plan<'a>>,
    /// The agent's latest readings, one per GPU.
    pub live: &'a [LiveGpu],
    /// Where the presets' models come from, for "a smaller model of the same
    /// family": read from their `config.json` ([`Self::error_only`]), or
    /// given by a caller that has them already (the page's diagnose bundle
    /// has their build-time reading, and so carries none of the configs).
    pub presets: PresetModel,
}

impl Default for DiagnoseContext<'_> {
    fn default() -> Self {
        Self::with_presets(|p| Model::from_preset(p).ok())
    }
}

impl<'a> DiagnoseContext<'a> {
    /// Nothing but the error; the presets read from their configs.
    pub fn error_only() -> Self {
        Self::default()
    }

    /// Nothing but the error; the presets' models from `presets`, which
    /// must give what [`Model::from_preset`] gives.
    pub fn with_presets(presets: PresetModel) -> Self {
        Self { plan: None, live: &[], presets }
    }

    pub fn with_plan(mut self, model: &'a Model, scenario: &'a Scenario) -> Self {
        self.plan = Some(Plan { model, scenario });
        self
    }

    pub fn with_live(mut self, live: &'a [LiveGpu]) -> Self {
        self.live = live;
        self
    }
}

/// One GPU as the agent reads it now (converted by the caller from the wire
/// types, so that this module stays free of the protocol).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveGpu {
    pub index: u32,
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    pub processes: Vec<LiveProcess>,
}

/// A process holding memory on a GPU now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveProcess {
    pub pid: u32,
    pub name: Option<String>,
    pub used_bytes: u64,
}

/// The causes, with stable ids (`weights_too_large`, …) for scripts and the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseId {
    /// The weights do not fit in this precision.
    WeightsTooLarge,
    /// The KV cache (or the activations of the workload) grows past the GPU.
    KvCacheGrowth,
    /// A diffusion or training workload's own tensors (activations; in
    /// training also gradients and optimizer state) outgrow the GPU: no KV
    /// cache there (`oom::Workload`).
    Activations,
    /// One GPU of several carries more than its share.
    GpuImbalance,
    /// Memory reserved by PyTorch's cache but not allocated, in pieces too small.
    Fragmentation,
    /// Memory held by other processes.
    OtherProcesses,
    /// A per-process cap (`torch.cuda.set_per_process_memory_fraction`) and
    /// not the GPU ran out.
    MemoryCap,
    /// Genuinely too big for this GPU: no setting makes it fit.
    TooLargeOverall,
    /// The host's RAM, not the GPU, is too small for the part of the model
    /// kept there (Ollama checks it before it loads).
    HostMemory,
    /// A limit on one allocation (a Metal buffer's `maxBufferLength`, a
    /// runtime's largest single allocation), not the GPU's memory, was hit.
    AllocationLimit,
    /// One buffer is larger than any GPU there is: the engine sized it wrong
    /// (a compute graph for an oversized batch), not a full GPU.
    MisSizedBuffer,
    /// CUDA graphs captured at start-up found no room: the engine sized its
    /// cache first and captures them in what its budget left.
    GraphCapture,
    /// A serving engine's KV cache, allocated whole at start-up, holds fewer
    /// tokens than the requests running at once need: it evicts some and
    /// recomputes them later. Slower serving, no error.
    KvPoolFull,
}

impl CauseId {
    pub const ALL: &[CauseId] = &[
        Self::WeightsTooLarge,
        Self::KvCacheGrowth,
        Self::Activations,
        Self::GpuImbalance,
        Self::Fragmentation,
        Self::OtherProcesses,
        Self::MemoryCap,
        Self::TooLargeOverall,
        Self::HostMemory,
        Self::AllocationLimit,
        Self::MisSizedBuffer,
        Self::GraphCapture,
        Self::KvPoolFull,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::WeightsTooLarge => "weights_too_large",
            Self::KvCacheGrowth => "kv_cache_growth",
            Self::Activations => "activations",
            Self::GpuImbalance => "gpu_imbalance",
            Self::Fragmentation => "fragmentation",
            Self::OtherProcesses => "other_processes",
            Self::MemoryCap => "memory_cap",
            Self::TooLargeOverall => "too_large_overall",
            Self::HostMemory => "host_memory",
            Self::AllocationLimit => "allocation_limit",
            Self::MisSizedBuffer => "mis_sized_buffer",
            Self::GraphCapture => "graph_capture",
            Self::KvPoolFull => "kv_pool_full",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Self::WeightsTooLarge => "The weights are too large for this precision",
            Self::KvCacheGrowth => "The KV cache (or the workload's activations) grows past the GPU",
            Self::Activations => {
                "The workload's activations (or a training run's gradients and optimizer state) outgrow the GPU"
            }
            Self::GpuImbalance => "One GPU of several is overloaded by the split",
            Self::Fragmentation => "Memory is reserved but unallocated (fragmentation)",
            Self::OtherProcesses => "Other processes hold GPU memory",
            Self::MemoryCap => "A per-process memory cap, not the GPU, ran out",
            Self::TooLargeOverall => "Genuinely too large for this GPU",
            Self::HostMemory => "The host's RAM, not the GPU, is too small for the model",
            Self::AllocationLimit => "One allocation is over a limit on single buffers, not over the GPU's memory",
            Self::MisSizedBuffer => "One buffer is larger than any GPU: a mis-sized compute graph, not a full GPU",
            Self::GraphCapture => "Capturing CUDA graphs at start-up found no room beside the model and its cache",
            Self::KvPoolFull => "The KV cache allocated at start-up is too small for the requests running at once",
        }
    }

    /// Where the cause sits on the OOM checklist.
    pub fn step(self) -> ChecklistStep {
        match self {
            Self::WeightsTooLarge | Self::TooLargeOverall | Self::HostMemory => ChecklistStep::Precision,
            Self::KvCacheGrowth | Self::Activations | Self::MisSizedBuffer | Self::GraphCapture | Self::KvPoolFull => {
                ChecklistStep::Growth
            }
            Self::GpuImbalance => ChecklistStep::Balance,
            Self::Fragmentation | Self::OtherProcesses | Self::MemoryCap | Self::AllocationLimit => {
                ChecklistStep::Leftovers
            }
        }
    }
}

/// The five steps of the OOM checklist (`PRODUCT.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChecklistStep {
    /// Do the weights alone fit? At which format would they?
    Precision,
    /// Does memory fail at load, or climb during generation?
    Growth,
    /// The largest `max_new_tokens`, input length or concurrency that fits.
    Limits,
    /// Is one GPU of several overloaded by the split?
    Balance,
    /// Memory held by other processes, or reserved but unallocated.
    Leftovers,
}

impl ChecklistStep {
    pub const ALL: &[ChecklistStep] = &[Self::Precision, Self::Growth, Self::Limits, Self::Balance, Self::Leftovers];

    pub fn number(self) -> u8 {
        match self {
            Self::Precision => 1,
            Self::Growth => 2,
            Self::Limits => 3,
            Self::Balance => 4,
            Self::Leftovers => 5,
        }
    }

    pub fn question(self) -> &'static str {
        match self {
            Self::Precision => "Do the weights alone fit at this precision?",
            Self::Growth => "Does memory fail at load, or climb during generation?",
            Self::Limits => "What is the largest length or concurrency that fits?",
            Self::Balance => "Is one GPU of several overloaded by the split?",
            Self::Leftovers => "Is memory held by other processes, capped, or reserved but unallocated?",
        }
    }
}

/// One suspected cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    pub id: CauseId,
    /// 1 for the most likely cause.
    pub rank: u32,
    /// 0–100: how surely removing this cause alone would have avoided the error.
    pub score: u32,
    pub step: ChecklistStep,
    pub title: String,
    /// Sentences with the figures behind the score, strongest first.
    pub evidence: Vec<String>,
}

/// One step of the checklist with what the diagnosis found there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChecklistItem {
    pub step: ChecklistStep,
    pub number: u8,
    pub question: String,
    pub finding: String,
    /// Whether a likely cause (score ≥ 40) sits on this step.
    pub flagged: bool,
}

/// Stable ids of the kinds of fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixId {
    ExpandableSegments,
    MaxSplitSize,
    EmptyCache,
    KillProcess,
    InspectGpu,
    MemoryFraction,
    SdpaAttention,
    GpuMemoryUtilization,
    MemFractionStatic,
    MaxNumSeqs,
    KvCacheDtype,
    MaxNewTokens,
    MaxModelLen,
    SmallerContext,
    SmallerBatch,
    Concurrency,
    WeightFormat,
    OffloadLayers,
    EnforceEager,
    DeviceMap,
    MoreGpus,
    BiggerGpu,
    SmallerModel,
    UpdateEngine,
    /// A runtime's own limit on one allocation lifted (Level Zero's relaxed
    /// allocation limits for ggml-sycl).
    RelaxAllocationLimit,
    GradientCheckpointing,
    Lora,
    ShardTraining,
}

/// A concrete change, with what it saves and how to apply it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiagnosisFix {
    pub id: FixId,
    /// The cause it addresses.
    pub cause: CauseId,
    pub title: String,
    pub gives_up: GivesUp,
    /// Expected memory saved (or freed) on the failing GPU, when it can be told.
    pub saves_bytes: Option<u64>,
    /// With a plan: whether the plan fits with this change alone.
    pub fits: Option<bool>,
    /// The code, flags or settings that apply it.
    pub code: String,
}

/// The plan as checked against the error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanCheck {
    /// Which plan, as a question to the user: the plan may not be what ran
    /// (on the page it is whatever the calculator shows).
    pub checked_against: String,
    pub model: String,
    pub weight_format: String,
    pub engine: EngineKind,
    /// Capacity of each GPU as checked (the error's total when it gives one).
    pub capacity_bytes: u64,
    /// Weights on the fullest GPU.
    pub weight_bytes: u64,
    /// Everything on the fullest GPU at the plan's peak.
    pub need_bytes: u64,
    pub fits: bool,
    pub verdict: Verdict,
}

/// The whole diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    /// Whether the text held an out-of-memory message at all.
    pub recognised: bool,
    /// The diagnosis in one sentence.
    pub summary: String,
    /// Ranked, most likely first.
    pub causes: Vec<Cause>,
    /// Ordered by the rank of their cause, then by what they give up.
    pub fixes: Vec<DiagnosisFix>,
    pub checklist: Vec<ChecklistItem>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanCheck>,
    /// The figures that would sharpen the diagnosis, and where to get them:
    /// never an empty answer without saying what is missing.
    pub needs: Vec<String>,
    /// What to know about how the diagnosis was reached.
    pub notes: Vec<String>,
}

/// A cause is "likely" (flagged on the checklist) from this score.
pub const LIKELY_SCORE: u32 = 40;

/// Diagnoses a parsed error. Never panics; an unrecognised report gives no
/// causes and a summary saying so.
pub fn diagnose(report: &OomReport, ctx: &DiagnoseContext) -> Diagnosis {
    // The plan is LLM inference's: it says nothing of a diffusion or training run.
    let unplanned = DiagnoseContext { plan: None, ..*ctx };
    let dropped = report.workload.filter(|_| ctx.plan.is_some());
    let ctx = if report.workload.is_some() { &unplanned } else { ctx };
    let facts = Facts::new(report, ctx);
    let mut b = Board::default();
    if report.kind.is_none() {
        return Diagnosis {
            recognised: false,
            summary: "No out-of-memory message was recognised, so there is nothing to diagnose.".into(),
            causes: Vec::new(),
            fixes: Vec::new(),
            checklist: checklist(&[], &facts, None, &b.limits),
            plan: None,
            needs: Vec::new(),
            notes: Vec::new(),
        };
    }
    leftovers(&facts, &mut b);
    from_the_error(&facts, &mut b);
    several_gpus(&facts, &mut b);
    let plan = ctx.plan.and_then(|p| from_the_plan(p, ctx.presets, &facts, &mut b));
    // Nothing placed: the figures cannot tell the cause, and the summary
    // says so, but the checks to make are still listed.
    let placed = !b.is_empty();
    if !placed {
        too_few_figures(&facts, &mut b);
    }
    b.notes.extend(facts.notes.iter().cloned());
    // The paste shows which server ran out; a plan of another engine checks
    // the error against a run it was not.
    if let (Some(ran), Some(p)) = (report.serving_engine(), ctx.plan)
        && p.scenario.engine.kind() != ran
    {
        b.notes.push(format!(
            "The paste comes from {}, the plan runs {}: set the plan's engine to {} to check the error against it.",
            ran.name(),
            p.scenario.engine.kind().name(),
            ran.name()
        ));
    }
    if let Some(w) = dropped {
        b.notes.push(format!("The paste is {}, not LLM inference: the plan is not checked against it.", w.label()));
    }
    let causes = b.ranked();
    let fixes = b.ordered_fixes(&causes, facts.has_plan);
    let summary = summary(if placed { &causes } else { &[] }, &facts);
    Diagnosis {
        recognised: true,
        summary,
        checklist: checklist(&causes, &facts, plan.as_ref(), &b.limits),
        needs: needs(&facts),
        causes,
        fixes,
        plan,
        notes: b.notes,
    }
}

/// What the diagnosis did not have, each with where to find it.
fn needs(f: &Facts) -> Vec<String> {
    let mut out = Vec::new();
    if !f.has_plan && f.r.workload.is_none() {
        out.push(
            "the model and workload that ran (the plan): with them the weights, the cache's growth and the limits \
             are checked"
                .into(),
        );
    }
    // The GPU's figures do not bear on a check of the host's RAM, on a
    // limit on one buffer, nor on a full KV cache (its size is the engine's
    // setting, and nothing failed).
    if matches!(f.r.kind, Some(OomKind::OllamaHostMemory | OomKind::PytorchMpsBufferSize | OomKind::MlxBufferSize))
        || f.r.kind.is_some_and(OomKind::is_pool_full)
    {
        return out;
    }
    if f.r.kind == Some(OomKind::QuantizedOffload) {
        out.push(
            "what the GPU had free before the model loaded (nvidia-smi) and which model and bit width were loaded: \
             with --model the weights are checked"
                .into(),
        );
        return out;
    }
    if matches!(f.r.kind, Some(OomKind::PytorchMps | OomKind::MlxOutOfMemory)) {
        // The GPU shares the Mac's memory: no capacity or free figure to ask for.
        out.push(
            "how much memory the Mac has (Apple menu > About This Mac) and what else was open (Activity Monitor's \
             Memory tab): the error gives only this process's share"
                .into(),
        );
        return out;
    }
    let pytorch = matches!(f.r.kind, Some(OomKind::Pytorch | OomKind::PytorchLegacy | OomKind::PytorchAsync));
    if pytorch && f.free.is_none() {
        out.push(
            "what was free and what PyTorch reserved: PyTorch 2.1 and later print both in the error, so paste the \
             whole message"
                .into(),
        );
    }
    if f.total.is_none() {
        out.push("the GPU's capacity: paste the whole message, or connect the agent to the GPU host".into());
    }
    if f.live.is_none() && f.r.processes.is_empty() && f.free.is_none() {
        out.push(format!("who else holds the GPU: {}, or connect the agent for live readings", f.process_tool().0));
    }
    out
}
