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

use serde::{Deserialize, Serialize};

use super::{GpuBackend, LlamaCppStage, OomKind, OomReport};
use crate::catalog;
use crate::engines::{Engine, EngineKind};
use crate::estimate::{CUDA_CONTEXT_BYTES, Estimate, GpuBudget, Prepared, Scenario, Verdict};
use crate::explain::thousands;
use crate::fixes::{self, FixKind, GivesUp};
use crate::kv::KvDtype;
use crate::model::Model;
use crate::solve;
use crate::units::{MIB, UnitSystem, format_bytes};

/// A plan to check the error against.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    pub model: &'a Model,
    pub scenario: &'a Scenario,
}

/// What besides the error is known.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiagnoseContext<'a> {
    /// The plan that was (meant to be) run.
    pub plan: Option<Plan<'a>>,
    /// The agent's latest readings, one per GPU.
    pub live: &'a [LiveGpu],
}

impl<'a> DiagnoseContext<'a> {
    /// Nothing but the error.
    pub fn error_only() -> Self {
        Self::default()
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
}

impl CauseId {
    pub const ALL: &[CauseId] = &[
        Self::WeightsTooLarge,
        Self::KvCacheGrowth,
        Self::GpuImbalance,
        Self::Fragmentation,
        Self::OtherProcesses,
        Self::MemoryCap,
        Self::TooLargeOverall,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::WeightsTooLarge => "weights_too_large",
            Self::KvCacheGrowth => "kv_cache_growth",
            Self::GpuImbalance => "gpu_imbalance",
            Self::Fragmentation => "fragmentation",
            Self::OtherProcesses => "other_processes",
            Self::MemoryCap => "memory_cap",
            Self::TooLargeOverall => "too_large_overall",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Self::WeightsTooLarge => "The weights are too large for this precision",
            Self::KvCacheGrowth => "The KV cache (or the workload's activations) grows past the GPU",
            Self::GpuImbalance => "One GPU of several is overloaded by the split",
            Self::Fragmentation => "Memory is reserved but unallocated (fragmentation)",
            Self::OtherProcesses => "Other processes hold GPU memory",
            Self::MemoryCap => "A per-process memory cap, not the GPU, ran out",
            Self::TooLargeOverall => "Genuinely too large for this GPU",
        }
    }

    /// Where the cause sits on the OOM checklist.
    pub fn step(self) -> ChecklistStep {
        match self {
            Self::WeightsTooLarge | Self::TooLargeOverall => ChecklistStep::Precision,
            Self::KvCacheGrowth => ChecklistStep::Growth,
            Self::GpuImbalance => ChecklistStep::Balance,
            Self::Fragmentation | Self::OtherProcesses | Self::MemoryCap => ChecklistStep::Leftovers,
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
    /// What to know about how the diagnosis was reached.
    pub notes: Vec<String>,
}

/// A cause is "likely" (flagged on the checklist) from this score.
pub const LIKELY_SCORE: u32 = 40;

/// Diagnoses a parsed error. Never panics; an unrecognised report gives no
/// causes and a summary saying so.
pub fn diagnose(report: &OomReport, ctx: &DiagnoseContext) -> Diagnosis {
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
            notes: Vec::new(),
        };
    }
    leftovers(&facts, &mut b);
    from_the_error(&facts, &mut b);
    several_gpus(&facts, &mut b);
    let plan = ctx.plan.map(|p| from_the_plan(p, &facts, &mut b));
    b.notes.extend(facts.notes.iter().cloned());
    let causes = b.ranked();
    let fixes = b.ordered_fixes(&causes);
    let summary = summary(&causes, &facts);
    Diagnosis {
        recognised: true,
        summary,
        checklist: checklist(&causes, &facts, plan.as_ref(), &b.limits),
        causes,
        fixes,
        plan,
        notes: b.notes,
    }
}

// ---------------------------------------------------------------------------
// Facts: the error's figures, completed from the live readings.

/// Another holder of memory on the failing GPU.
#[derive(Debug, Clone)]
struct Holder {
    pid: Option<u32>,
    name: Option<String>,
    bytes: u64,
    /// Read by the agent now rather than listed by the error.
    now: bool,
}

impl Holder {
    fn who(&self) -> String {
        match (&self.pid, &self.name) {
            (Some(pid), Some(name)) => format!("process {pid} ({name})"),
            (Some(pid), None) => format!("process {pid}"),
            (None, _) => "another process".into(),
        }
    }
}

#[derive(Debug)]
struct Facts<'r> {
    r: &'r OomReport,
    /// The GPU's capacity: the error's, else the live reading's.
    total: Option<u64>,
    free: Option<u64>,
    requested: Option<u64>,
    /// What was missing: requested − free (0 when the free memory would have held it).
    shortage: Option<u64>,
    /// This process's use of the GPU.
    this_process: Option<u64>,
    others: Vec<Holder>,
    /// Held outside this process and not listed (other containers, users, the
    /// display server), when it is large enough to matter.
    unlisted: u64,
    live: Option<&'r LiveGpu>,
    /// Every live GPU, for comparing GPUs of a split.
    all_live: &'r [LiveGpu],
    /// Whether a plan is known: its exact fixes then replace the generic ones.
    has_plan: bool,
    /// The plan's repository, for code snippets.
    repo: String,
    notes: Vec<String>,
}

impl<'r> Facts<'r> {
    fn new(r: &'r OomReport, ctx: &DiagnoseContext<'r>) -> Self {
        let live = match r.gpu_index {
            Some(i) => ctx.live.iter().find(|g| g.index == i),
            None if ctx.live.len() == 1 => ctx.live.first(),
            None => None,
        };
        let mut notes = Vec::new();
        let total = r.total_bytes.or(live.map(|g| g.total_bytes)).filter(|&t| t > 0);
        if r.total_bytes.is_none()
            && let Some(t) = total
        {
            notes.push(format!("The GPU's capacity ({}) is the agent's live reading.", gib(t)));
        }
        let requested = r.requested_bytes;
        let shortage = match (requested, r.free_bytes) {
            (Some(q), Some(f)) => Some(q.saturating_sub(f)),
            _ => None,
        };
        // PyTorch lists this process as "Process P" when it runs in another PID
        // namespace (a container): the listed process that holds at least
        // everything PyTorch reserved is this one.
        let mut self_pid = None;
        let mut this_process = r.process_in_use_bytes;
        if this_process.is_none()
            && let Some(reserved) = r.reserved_bytes.or(r.allocated_bytes)
            && let Some(p) =
                r.processes.iter().filter(|p| p.used_bytes.is_some_and(|u| u >= reserved)).max_by_key(|p| p.used_bytes)
        {
            self_pid = p.pid;
            this_process = p.used_bytes;
            notes.push(format!(
                "Process {} holds at least everything PyTorch reserved, so it is taken to be the process that failed.",
                p.pid.map_or("?".into(), |p| p.to_string())
            ));
        }
        let mut others: Vec<Holder> = r
            .processes
            .iter()
            .filter(|p| self_pid.is_none() || p.pid != self_pid)
            .filter_map(|p| Some(Holder { pid: p.pid, name: None, bytes: p.used_bytes?, now: false }))
            .collect();
        let estimated_self = this_process.or(r.reserved_bytes.map(|v| v.saturating_add(CUDA_CONTEXT_BYTES)));
        if let Some(g) = live {
            for p in &g.processes {
                if let Some(h) = others.iter_mut().find(|h| h.pid == Some(p.pid)) {
                    h.name = h.name.take().or(p.name.clone());
                    continue;
                }
                if Some(p.pid) == self_pid {
                    continue;
                }
                // A live process using what the failing one used is most likely it
                // (a notebook kernel still alive), seen from another PID namespace.
                if estimated_self.is_some_and(|s| p.used_bytes.abs_diff(s) <= s / 20) {
                    notes.push(format!(
                        "Process {} holds about what the failing process held ({}): taken to be that process, still running.",
                        p.pid,
                        gib(p.used_bytes)
                    ));
                    continue;
                }
                others.push(Holder { pid: Some(p.pid), name: p.name.clone(), bytes: p.used_bytes, now: true });
            }
        }
        let listed: u64 = others.iter().filter(|h| !h.now).map(|h| h.bytes).fold(0, u64::saturating_add);
        let unlisted = match (total, r.free_bytes, estimated_self) {
            (Some(t), Some(f), Some(me)) => {
                let rest = t.saturating_sub(f).saturating_sub(me).saturating_sub(listed);
                if rest >= 512 * MIB && rest >= t / 50 { rest } else { 0 }
            }
            _ => 0,
        };
        Self {
            r,
            total,
            free: r.free_bytes,
            requested,
            shortage,
            this_process,
            others,
            unlisted,
            live,
            all_live: ctx.live,
            has_plan: ctx.plan.is_some(),
            repo: ctx.plan.and_then(|p| p.model.repo.clone()).unwrap_or_else(|| "MODEL_ID".into()),
            notes,
        }
    }

    fn others_total(&self) -> u64 {
        self.others.iter().map(|h| h.bytes).fold(self.unlisted, u64::saturating_add)
    }

    /// `x` as a share of the GPU: "18 %" (one decimal under 10 %).
    fn share(&self, x: u64) -> Option<String> {
        self.total.map(|t| pct(x, t))
    }

    fn is_legacy(&self) -> bool {
        self.r.kind == Some(OomKind::PytorchLegacy)
    }

    fn alloc_conf(&self) -> &'static str {
        match self.r.backend {
            Some(GpuBackend::Hip) => "PYTORCH_HIP_ALLOC_CONF",
            _ => "PYTORCH_CUDA_ALLOC_CONF",
        }
    }

    fn gpu_label(&self) -> String {
        match (self.r.gpu_index, self.total) {
            (Some(i), Some(t)) => format!("GPU {i} ({})", gib(t)),
            (Some(i), None) => format!("GPU {i}"),
            (None, Some(t)) => format!("the {} GPU", gib(t)),
            (None, None) => "the GPU".into(),
        }
    }
}

// ---------------------------------------------------------------------------
// The board: scores, evidence and fixes as rules add them.

/// A sentence of evidence with the score its rule gave.
type Evidence = (u32, String);

#[derive(Debug, Default)]
struct Board {
    scores: Vec<(CauseId, u32, Vec<Evidence>)>,
    fixes: Vec<DiagnosisFix>,
    notes: Vec<String>,
    /// Findings for the "limits" step.
    limits: Vec<String>,
}

impl Board {
    /// Suspects `id` with `score`; the cause's score is the highest of its rules.
    fn add(&mut self, id: CauseId, score: u32, evidence: String) {
        let score = score.min(100);
        match self.scores.iter_mut().find(|(c, _, _)| *c == id) {
            Some((_, s, ev)) => {
                *s = (*s).max(score);
                ev.push((score, evidence));
            }
            None => self.scores.push((id, score, vec![(score, evidence)])),
        }
    }

    fn fix(&mut self, fix: DiagnosisFix) {
        if !self.fixes.iter().any(|f| f.id == fix.id && f.code == fix.code) {
            self.fixes.push(fix);
        }
    }

    fn has(&self, id: CauseId) -> bool {
        self.scores.iter().any(|(c, _, _)| *c == id)
    }

    fn ranked(&self) -> Vec<Cause> {
        let mut list: Vec<_> = self.scores.clone();
        list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        list.into_iter()
            .enumerate()
            .map(|(i, (id, score, mut evidence))| {
                evidence.sort_by_key(|e| std::cmp::Reverse(e.0));
                Cause {
                    id,
                    rank: u32::try_from(i + 1).unwrap_or(u32::MAX),
                    score,
                    step: id.step(),
                    title: id.title().into(),
                    evidence: evidence.into_iter().map(|(_, e)| e).collect(),
                }
            })
            .collect()
    }

    fn ordered_fixes(&self, causes: &[Cause]) -> Vec<DiagnosisFix> {
        let rank = |id: CauseId| causes.iter().find(|c| c.id == id).map_or(u32::MAX, |c| c.rank);
        let mut out = self.fixes.clone();
        // Stable: within a cause and a cost, rules added the most telling fix first.
        out.sort_by_key(|f| (rank(f.cause), f.fits == Some(false), f.gives_up));
        out
    }
}

fn fix(id: FixId, cause: CauseId, title: String, gives_up: GivesUp, saves: Option<u64>, code: String) -> DiagnosisFix {
    DiagnosisFix { id, cause, title, gives_up, saves_bytes: saves, fits: None, code }
}

// ---------------------------------------------------------------------------
// Rules from the error's figures.

/// Step 5: fragmentation, other processes, a per-process cap.
fn leftovers(f: &Facts, b: &mut Board) {
    let r = f.r;
    let (Some(q), Some(free)) = (f.requested, f.free) else {
        others_without_figures(f, b);
        return;
    };
    let shortage = f.shortage.unwrap_or(0);

    // A cap set with torch.cuda.set_per_process_memory_fraction.
    if let Some(allowed) = r.allowed_bytes {
        let reserved = r.reserved_bytes.or(r.allocated_bytes).unwrap_or(0);
        let over = reserved.saturating_add(q) > allowed;
        let text = format!(
            "this process may use at most {} (set_per_process_memory_fraction); it had {} reserved and asked for {} more",
            gib(allowed),
            gib(reserved),
            gib(q)
        );
        if free >= q {
            b.add(CauseId::MemoryCap, 85, format!("{text}, while the GPU still had {} free", gib(free)));
        } else if over {
            // The cap and the GPU's free memory both stand in the way.
            b.add(CauseId::MemoryCap, 55, format!("{text}; the GPU itself had only {} free", gib(free)));
        } else {
            b.add(CauseId::MemoryCap, 30, format!("a per-process cap of {} is set", gib(allowed)));
        }
        if let Some(t) = f.total.filter(|&t| t > 0) {
            // Room for the request above both what is reserved and the current cap.
            let want = reserved.max(allowed).saturating_add(q).min(t);
            let fraction = ((want as f64 / t as f64) * 20.0).ceil() / 20.0;
            if fraction > allowed as f64 / t as f64 && fraction <= 1.0 {
                b.fix(fix(
                    FixId::MemoryFraction,
                    CauseId::MemoryCap,
                    format!("Raise the per-process cap to {:.0} % of the GPU", fraction * 100.0),
                    GivesUp::Nothing,
                    Some(((fraction * t as f64) as u64).saturating_sub(allowed)),
                    format!("torch.cuda.set_per_process_memory_fraction({fraction:.2})"),
                ));
            }
        }
    }

    // Fragmentation: reserved by the cache, not allocated, in pieces too small.
    if let Some(u) = r.reserved_unallocated_bytes
        && let Some(t) = f.total.filter(|&t| t > 0)
    {
        let share = u as f64 / t as f64;
        let base: u32 = if share >= 0.10 {
            80
        } else if share >= 0.05 {
            60
        } else if share >= 0.02 {
            35
        } else if share >= 0.005 {
            15
        } else {
            0
        };
        if base > 0 {
            let mut text = format!("reserved but unallocated is {} = {} of capacity", gib(u), pct(u, t));
            let score = if u >= q && shortage > 0 {
                text.push_str(&format!(
                    ", more than the {} requested: the cache held the memory, in pieces too small",
                    gib(q)
                ));
                base + 10
            } else if u >= shortage && shortage > 0 {
                text.push_str(&format!(", enough for the {} that was missing", gib(shortage)));
                base + 5
            } else if shortage > 0 {
                text.push_str(&format!(", less than the {} that was missing", gib(shortage)));
                base.saturating_sub(10).max(5)
            } else {
                base
            };
            b.add(CauseId::Fragmentation, score, text);
            let (title, code) = if f.is_legacy() {
                (
                    "Limit block splitting in PyTorch's cache (PyTorch < 2.1)".to_owned(),
                    format!("export {}=max_split_size_mb:128", f.alloc_conf()),
                )
            } else {
                (
                    "Let PyTorch's cache grow segments instead of splitting blocks".to_owned(),
                    format!("export {}=expandable_segments:True", f.alloc_conf()),
                )
            };
            b.fix(fix(
                if f.is_legacy() { FixId::MaxSplitSize } else { FixId::ExpandableSegments },
                CauseId::Fragmentation,
                title,
                GivesUp::Nothing,
                Some(u),
                code,
            ));
            b.fix(fix(
                FixId::EmptyCache,
                CauseId::Fragmentation,
                "Free what earlier runs left in the same process before loading or generating again".into(),
                GivesUp::Nothing,
                Some(u),
                "del model; gc.collect(); torch.cuda.empty_cache()".into(),
            ));
        }
    }

    // Other processes, listed by the error or read live by the agent.
    let others = f.others_total();
    if free >= q && r.allowed_bytes.is_none() && matches!(r.kind, Some(OomKind::Pytorch | OomKind::PytorchLegacy)) {
        b.add(
            CauseId::OtherProcesses,
            40,
            format!(
                "{} was free when PyTorch wrote the message, more than the {} requested: the memory was missing only \
                 for a moment, typically because another process (a second engine or worker) allocated at the same time",
                gib(free),
                gib(q)
            ),
        );
    }
    if others > 0 {
        let t = f.total.unwrap_or(others).max(1);
        let only_inferred = f.others.is_empty();
        let covers = shortage > 0 && others >= shortage;
        let score = if covers {
            let s = 60 + (25.0 * (others as f64 / t as f64 / 0.25).min(1.0)) as u32;
            if only_inferred { s.min(50) } else { s }
        } else if others >= t / 20 {
            35
        } else {
            20
        };
        for h in &f.others {
            let who = h.who();
            let when = if h.now { " now (agent reading)" } else { "" };
            b.add(CauseId::OtherProcesses, score, format!("{who} holds {} = {}{when}", gib(h.bytes), pct(h.bytes, t)));
            if let Some(pid) = h.pid {
                b.fix(fix(
                    FixId::KillProcess,
                    CauseId::OtherProcesses,
                    format!("Stop {who} if it is a leftover (a finished job, an idle notebook kernel)"),
                    GivesUp::Nothing,
                    Some(h.bytes),
                    format!("kill {pid}"),
                ));
            }
        }
        if f.unlisted > 0 {
            let what = if f.is_legacy() {
                "outside PyTorch's cache: by other processes, or this process's own non-PyTorch memory (CUDA libraries, NCCL)"
            } else {
                "by processes the error does not list (other containers or users)"
            };
            b.add(
                CauseId::OtherProcesses,
                score,
                format!("{} = {} of the GPU is held {what}", gib(f.unlisted), pct(f.unlisted, t)),
            );
        }
        let covers_text = if covers {
            format!("together {} held elsewhere, more than the {} that was missing", gib(others), gib(shortage))
        } else if shortage > 0 {
            format!("together {} held elsewhere, less than the {} that was missing", gib(others), gib(shortage))
        } else {
            format!("together {} held elsewhere", gib(others))
        };
        b.add(CauseId::OtherProcesses, score, covers_text);
        inspect_fix(b, Some(others));
        if !f.others.is_empty() {
            b.fix(fix(
                FixId::EmptyCache,
                CauseId::OtherProcesses,
                "In a notebook or server of your own that holds the GPU, free the old model first".into(),
                GivesUp::Nothing,
                None,
                "del model; gc.collect(); torch.cuda.empty_cache()".into(),
            ));
        }
    }
}

/// Who holds the GPU when the error has no figures: the live readings.
fn others_without_figures(f: &Facts, b: &mut Board) {
    let Some(live) = f.live else { return };
    let others = f.others_total();
    if others == 0 {
        return;
    }
    let t = live.total_bytes.max(1);
    let score = if others >= t / 4 { 50 } else { 25 };
    for h in &f.others {
        let who = h.who();
        b.add(
            CauseId::OtherProcesses,
            score,
            format!("{who} holds {} = {} now (agent reading)", gib(h.bytes), pct(h.bytes, t)),
        );
        if let Some(pid) = h.pid {
            b.fix(fix(
                FixId::KillProcess,
                CauseId::OtherProcesses,
                format!("Stop {who} if it is a leftover"),
                GivesUp::Nothing,
                Some(h.bytes),
                format!("kill {pid}"),
            ));
        }
    }
}

fn inspect_fix(b: &mut Board, saves: Option<u64>) {
    b.fix(fix(
        FixId::InspectGpu,
        CauseId::OtherProcesses,
        "See which processes hold the GPU".into(),
        GivesUp::Nothing,
        saves,
        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv".into(),
    ));
}

/// Steps 1–3 from the error alone: what this process's own memory is made of.
fn from_the_error(f: &Facts, b: &mut Board) {
    match f.r.kind {
        Some(OomKind::Pytorch | OomKind::PytorchLegacy) => pytorch_workload(f, b),
        Some(OomKind::CudaError) => {
            b.add(
                CauseId::TooLargeOverall,
                40,
                "the error came from the CUDA runtime or a library (cuBLAS, NCCL), outside PyTorch's cache and \
                 without figures: the GPU was already full when a context or workspace needed memory"
                    .into(),
            );
            if !b.has(CauseId::OtherProcesses) {
                b.add(
                    CauseId::OtherProcesses,
                    30,
                    "without figures, memory held by other processes cannot be ruled out".into(),
                );
            }
            inspect_fix(b, None);
        }
        Some(OomKind::VllmMaxSeqLen) => vllm_max_seq_len(f, b),
        Some(OomKind::VllmKvCacheTooSmall) => vllm_kv_too_small(f, b),
        Some(OomKind::VllmNoCacheBlocks) => vllm_no_cache_blocks(f, b),
        Some(OomKind::LlamaCpp) => llama_cpp(f, b),
        None => {}
    }
}

fn pytorch_workload(f: &Facts, b: &mut Board) {
    let (Some(q), Some(t)) = (f.requested, f.total.filter(|&t| t > 0)) else { return };
    let shortage = f.shortage.unwrap_or(0);
    if q > t {
        b.add(
            CauseId::TooLargeOverall,
            95,
            format!(
                "a single allocation of {} is {} the GPU's {}: no setting can make it fit",
                gib(q),
                times(q, t),
                gib(t)
            ),
        );
        b.fix(fix(
            FixId::SmallerBatch,
            CauseId::TooLargeOverall,
            "Compute it in chunks that each fit".into(),
            GivesUp::Speed,
            Some(q.saturating_sub(f.free.unwrap_or(0))),
            "for chunk in torch.split(inputs, chunk_size):  # each chunk's result well under the free memory\n    ..."
                .into(),
        ));
        bigger_gpu_from_figures(f, b, q.saturating_add(f.this_process.unwrap_or(0)));
        return;
    }
    if shortage == 0 {
        return;
    }
    let leftovers = f.r.reserved_unallocated_bytes.unwrap_or(0).saturating_add(f.others_total());
    let covered = leftovers >= shortage;
    let mine = f.this_process.or(f.r.reserved_bytes).or(f.r.allocated_bytes).unwrap_or(0);
    let request_share = q as f64 / t as f64;
    if request_share < 0.02 {
        if mine >= t / 2 {
            b.add(
                CauseId::KvCacheGrowth,
                60,
                format!(
                    "the failing request is only {} ({} of the GPU) while this process holds {} ({}): memory filled \
                     up step by step, the signature of a KV cache growing token by token",
                    gib(q),
                    pct(q, t),
                    gib(mine),
                    pct(mine, t)
                ),
            );
        } else {
            b.add(
                CauseId::KvCacheGrowth,
                30,
                format!("the failing request is only {} ({} of the GPU)", gib(q), pct(q, t)),
            );
        }
    } else {
        let score = 45 + (50.0 * request_share).min(30.0) as u32;
        b.add(
            CauseId::KvCacheGrowth,
            if covered { score.saturating_sub(5) } else { score },
            format!(
                "a single allocation of {} = {} of the GPU: activations or cache for a long input or a large batch",
                gib(q),
                pct(q, t)
            ),
        );
        b.fix(fix(
            FixId::SmallerBatch,
            CauseId::KvCacheGrowth,
            "Send fewer or shorter sequences at once".into(),
            GivesUp::Length,
            Some(shortage),
            "# split the batch: for chunk in batches_of(n): model.generate(**chunk, ...)".into(),
        ));
    }
    if !covered {
        b.add(
            CauseId::KvCacheGrowth,
            45,
            format!(
                "the {} that was missing is more than the {} of leftovers (reserved but unallocated, other \
                 processes): this process's own tensors need more than the GPU has",
                gib(shortage),
                gib(leftovers)
            ),
        );
    }
    private_pools(f, b, t);
    if f.has_plan {
        // The plan's own fixes carry exact figures.
        return;
    }
    b.fix(fix(
        FixId::MaxNewTokens,
        CauseId::KvCacheGrowth,
        "Generate fewer new tokens (the cache grows with every token); --model and the plan flags give the exact limit"
            .into(),
        GivesUp::Length,
        None,
        "model.generate(**inputs, max_new_tokens=...)  # fewer than now".into(),
    ));
    b.fix(fix(
        FixId::KvCacheDtype,
        CauseId::KvCacheGrowth,
        "Quantise the KV cache to 4 bits (about a quarter of a 16-bit cache)".into(),
        GivesUp::CachePrecision,
        None,
        "model.generate(**inputs, cache_implementation=\"quantized\", cache_config={\"backend\": \"quanto\", \"nbits\": 4})"
            .into(),
    ));
}

/// CUDA graphs' private pools, as vLLM and `torch.compile` capture them.
fn private_pools(f: &Facts, b: &mut Board, t: u64) {
    if let Some(pools) = f.r.private_pool_bytes.filter(|&p| p > 0) {
        b.add(
            CauseId::TooLargeOverall,
            35,
            format!(
                "CUDA graphs hold {} ({}) in private pools, on top of the model and cache",
                gib(pools),
                pct(pools, t)
            ),
        );
        b.fix(fix(
            FixId::EnforceEager,
            CauseId::TooLargeOverall,
            "Run without CUDA graphs (vLLM), or lower --gpu-memory-utilization to leave room for capturing them".into(),
            GivesUp::Speed,
            Some(pools),
            "vllm serve ... --enforce-eager".into(),
        ));
    }
}

/// The smallest catalog GPU with at least `need` bytes, as a fix.
fn bigger_gpu_from_figures(f: &Facts, b: &mut Board, need: u64) {
    let current = f.total.unwrap_or(0);
    match catalog::gpus().iter().find(|g| g.memory_bytes >= need && g.memory_bytes > current) {
        Some(g) => b.fix(fix(
            FixId::BiggerGpu,
            CauseId::TooLargeOverall,
            format!(
                "A GPU with at least {}: the {} ({}) is the smallest in the catalog",
                gib(need),
                g.name,
                g.memory_label
            ),
            GivesUp::Money,
            None,
            format!("# rent or use a {} ({} as the driver reports it)", g.name, gib(g.memory_bytes)),
        )),
        None => b.notes.push(format!("No GPU in the catalog has {}: split the work or use several GPUs.", gib(need))),
    }
}

fn vllm_max_seq_len(f: &Facts, b: &mut Board) {
    let r = f.r;
    let (Some(len), Some(tokens)) = (r.max_seq_len, r.kv_cache_tokens) else {
        b.add(CauseId::KvCacheGrowth, 80, "vLLM's KV cache cannot hold one request of the model's max length".into());
        return;
    };
    b.add(
        CauseId::KvCacheGrowth,
        90,
        format!(
            "vLLM's KV cache holds {} tokens, {} of the {} one request of max_model_len needs: vLLM refuses to start",
            thousands(tokens),
            pct(tokens, len),
            thousands(len)
        ),
    );
    b.limits.push(format!("vLLM's cache holds {} tokens: --max-model-len {} fits", thousands(tokens), tokens));
    b.fix(fix(
        FixId::MaxModelLen,
        CauseId::KvCacheGrowth,
        format!("Limit the context to the {} tokens the cache holds", thousands(tokens)),
        GivesUp::Length,
        None,
        format!("vllm serve ... --max-model-len {tokens}"),
    ));
    vllm_more_memory(f, b, None, Some(len as f64 / tokens.max(1) as f64));
    vllm_fp8_cache(b, None, len.saturating_sub(tokens) <= tokens);
}

fn vllm_kv_too_small(f: &Facts, b: &mut Board) {
    let r = f.r;
    let (Some(len), Some(needed), Some(available)) = (r.max_seq_len, r.kv_needed_bytes, r.kv_available_bytes) else {
        b.add(CauseId::KvCacheGrowth, 80, "vLLM's KV cache cannot hold one request of the model's max length".into());
        return;
    };
    let missing = needed.saturating_sub(available);
    b.add(
        CauseId::KvCacheGrowth,
        90,
        format!(
            "one request of {} tokens needs {} of KV cache, {} ({}) more than the {} left for it",
            thousands(len),
            gib(needed),
            gib(missing),
            pct(missing, needed),
            gib(available)
        ),
    );
    let per_token = needed / len.max(1);
    let fitting = match r.estimated_max_model_len {
        Some(n) => n,
        None => (available / per_token.max(1)) / 256 * 256,
    };
    if fitting > 0 {
        let source = if r.estimated_max_model_len.is_some() { "vLLM's own estimate" } else { "in proportion" };
        b.limits.push(format!("--max-model-len {fitting} fits ({source})"));
        b.fix(fix(
            FixId::MaxModelLen,
            CauseId::KvCacheGrowth,
            format!("Limit the context to {} tokens ({source})", thousands(fitting)),
            GivesUp::Length,
            Some(needed.saturating_sub(per_token.saturating_mul(fitting))),
            format!("vllm serve ... --max-model-len {fitting}"),
        ));
    }
    vllm_more_memory(f, b, Some(missing), None);
    vllm_fp8_cache(b, Some(needed / 2), needed / 2 <= available);
}

/// Raise `--gpu-memory-utilization` by what is missing (bytes, or a factor
/// of the current cache when only tokens are known).
fn vllm_more_memory(f: &Facts, b: &mut Board, missing: Option<u64>, factor: Option<f64>) {
    let code = match (missing, f.total) {
        (Some(m), Some(t)) if t > 0 => {
            let add = ((m as f64 / t as f64) * 100.0).ceil() / 100.0;
            format!(
                "vllm serve ... --gpu-memory-utilization <current + {add:.2}>   # e.g. 0.90 → {:.2}; only if nothing else uses the GPU",
                0.90 + add
            )
        }
        _ => "vllm serve ... --gpu-memory-utilization 0.95   # only if nothing else uses the GPU".into(),
    };
    let title = match (missing, factor) {
        (Some(m), _) => format!("Give vLLM {} more of the GPU", gib(m)),
        (None, Some(x)) => format!("Give vLLM's KV cache {x:.1}× the memory it has"),
        _ => "Give vLLM more of the GPU".into(),
    };
    b.fix(fix(FixId::GpuMemoryUtilization, CauseId::KvCacheGrowth, title, GivesUp::Nothing, None, code));
}

fn vllm_fp8_cache(b: &mut Board, saves: Option<u64>, fits: bool) {
    b.fix(DiagnosisFix {
        fits: saves.map(|_| fits),
        ..fix(
            FixId::KvCacheDtype,
            CauseId::KvCacheGrowth,
            "Store the KV cache in fp8 (half of a 16-bit cache, twice the tokens)".into(),
            GivesUp::CachePrecision,
            saves,
            "vllm serve ... --kv-cache-dtype fp8".into(),
        )
    });
}

fn vllm_no_cache_blocks(f: &Facts, b: &mut Board) {
    let negative = f.r.notes.iter().any(|n| n.contains("negative"));
    b.add(
        CauseId::WeightsTooLarge,
        80,
        format!(
            "vLLM had no memory left for KV cache blocks{}: the weights and the profiled activation peak already take \
             gpu_memory_utilization × the GPU",
            if negative { " (it computed a negative amount)" } else { "" }
        ),
    );
    b.add(
        CauseId::TooLargeOverall,
        50,
        "unless a lighter format or more GPUs are an option, the model does not fit this GPU for serving".into(),
    );
    vllm_more_memory(f, b, None, None);
    b.fix(fix(
        FixId::WeightFormat,
        CauseId::WeightsTooLarge,
        "Load the weights in fp8 (about half of 16-bit)".into(),
        GivesUp::Quality,
        None,
        "vllm serve ... --quantization fp8".into(),
    ));
    b.fix(fix(
        FixId::MoreGpus,
        CauseId::TooLargeOverall,
        "Shard the weights over two GPUs".into(),
        GivesUp::Money,
        None,
        "vllm serve ... --tensor-parallel-size 2".into(),
    ));
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::WeightsTooLarge,
        "Profile a smaller batch, so the activation peak vLLM reserves shrinks".into(),
        GivesUp::Speed,
        None,
        "vllm serve ... --max-num-batched-tokens 2048".into(),
    ));
}

fn llama_cpp(f: &Facts, b: &mut Board) {
    let q = f.requested;
    let on = f.r.gpu_index.map_or(String::new(), |i| format!(" on GPU {i}"));
    let size = q.map_or(String::new(), |q| format!(" of {}", gib(q)));
    match f.r.llama_cpp_stage {
        Some(LlamaCppStage::ModelWeights) => {
            b.add(
                CauseId::WeightsTooLarge,
                85,
                format!("llama.cpp failed while loading the weights: the weight buffer{size}{on} did not fit"),
            );
            b.fix(fix(
                FixId::OffloadLayers,
                CauseId::WeightsTooLarge,
                "Offload fewer layers to the GPU (the rest run on the CPU)".into(),
                GivesUp::Speed,
                None,
                "llama-server ... --fit on   # or lower -ngl until the model loads".into(),
            ));
            b.fix(fix(
                FixId::WeightFormat,
                CauseId::WeightsTooLarge,
                "Use a smaller GGUF quantisation".into(),
                GivesUp::Quality,
                None,
                "llama-server -m model-Q4_K_M.gguf ...".into(),
            ));
        }
        Some(LlamaCppStage::KvCache) => {
            b.add(
                CauseId::KvCacheGrowth,
                85,
                format!("llama.cpp failed to allocate the KV cache{size}{on} for the context (-c)"),
            );
            b.fix(fix(
                FixId::SmallerContext,
                CauseId::KvCacheGrowth,
                "Halve the context (-c): the cache is pre-allocated for all of it".into(),
                GivesUp::Length,
                q.map(|q| q / 2),
                "llama-server ... -c <half of now>".into(),
            ));
            let q8 = KvDtype::Q8_0.bpw(128).as_f64() / 16.0;
            b.fix(fix(
                FixId::KvCacheDtype,
                CauseId::KvCacheGrowth,
                "Store the KV cache in q8_0".into(),
                GivesUp::CachePrecision,
                q.map(|q| (q as f64 * (1.0 - q8)) as u64),
                "llama-server ... -fa on -ctk q8_0 -ctv q8_0".into(),
            ));
        }
        Some(LlamaCppStage::ComputeBuffers) => {
            b.add(
                CauseId::TooLargeOverall,
                60,
                format!(
                    "llama.cpp loaded the weights and the KV cache, then the compute buffers{size}{on} did not fit: \
                     the GPU is full to the last buffer"
                ),
            );
            b.add(
                CauseId::KvCacheGrowth,
                50,
                "the compute buffers grow with the batch (-ub) and, without flash attention, with the context (-c)"
                    .into(),
            );
            b.fix(fix(
                FixId::SmallerBatch,
                CauseId::TooLargeOverall,
                "Halve the physical batch the compute buffers are sized for".into(),
                GivesUp::Speed,
                q.map(|q| q / 2),
                "llama-server ... -ub 256 -fa on".into(),
            ));
            b.fix(fix(
                FixId::SmallerContext,
                CauseId::KvCacheGrowth,
                "Shrink the context (-c) to free room for the buffers".into(),
                GivesUp::Length,
                None,
                "llama-server ... -c <smaller>".into(),
            ));
        }
        None => {
            b.add(
                CauseId::TooLargeOverall,
                50,
                format!("ggml ran out of memory{on} while running, after the model and cache were allocated"),
            );
            b.add(
                CauseId::KvCacheGrowth,
                45,
                "the buffers that grow at run time scale with the batch (-ub) and the context (-c)".into(),
            );
            b.fix(fix(
                FixId::SmallerBatch,
                CauseId::TooLargeOverall,
                "Halve the physical batch".into(),
                GivesUp::Speed,
                None,
                "llama-server ... -ub 256 -fa on".into(),
            ));
            b.fix(fix(
                FixId::OffloadLayers,
                CauseId::TooLargeOverall,
                "Offload one or two fewer layers to leave room at run time".into(),
                GivesUp::Speed,
                None,
                "llama-server ... -ngl <fewer>".into(),
            ));
        }
    }
}

/// Step 4 from the error: messages naming several GPUs.
fn several_gpus(f: &Facts, b: &mut Board) {
    live_imbalance(f, b);
    let seen = &f.r.gpus_seen;
    if seen.len() < 2 {
        return;
    }
    let list: Vec<String> = seen.iter().map(u32::to_string).collect();
    b.add(
        CauseId::GpuImbalance,
        25,
        format!(
            "the log has out-of-memory errors on GPUs {}: the work is split over several GPUs; check whether one \
             carries more than its share",
            list.join(", ")
        ),
    );
    let code = match f.r.kind {
        Some(OomKind::LlamaCpp) => {
            "llama-server ... --tensor-split 1,1   # proportional to each GPU's free memory".into()
        }
        _ => format!("AutoModelForCausalLM.from_pretrained(\"{}\", device_map=\"balanced\")", f.repo),
    };
    b.fix(fix(
        FixId::DeviceMap,
        CauseId::GpuImbalance,
        "Balance the split over the GPUs".into(),
        GivesUp::Nothing,
        None,
        code,
    ));
}

/// Step 4 from the live readings: the failing GPU is much fuller than the others.
fn live_imbalance(f: &Facts, b: &mut Board) {
    let Some(failing) = f.live else { return };
    let others: Vec<&LiveGpu> = f.all_live.iter().filter(|g| g.index != failing.index && g.total_bytes > 0).collect();
    let Some(emptiest) = others.iter().max_by_key(|g| g.free_bytes) else { return };
    let used = |g: &LiveGpu| g.used_bytes as f64 / g.total_bytes.max(1) as f64;
    if used(failing) >= 0.8 && used(emptiest) <= used(failing) * 0.6 {
        b.add(
            CauseId::GpuImbalance,
            55,
            format!(
                "GPU {} uses {} now while GPU {} uses {} and has {} free (agent reading)",
                failing.index,
                pct(failing.used_bytes, failing.total_bytes),
                emptiest.index,
                pct(emptiest.used_bytes, emptiest.total_bytes),
                gib(emptiest.free_bytes)
            ),
        );
    }
}

// ---------------------------------------------------------------------------
// Rules from the plan.

fn from_the_plan(plan: Plan, f: &Facts, b: &mut Board) -> PlanCheck {
    let model = plan.model;
    let mut s = plan.scenario.clone();
    // Check the plan on the GPU that failed: its capacity is a fact.
    if let Some(t) = f.total {
        let same = s.gpus.windows(2).all(|w| w[0].capacity_bytes == w[1].capacity_bytes);
        let slots: Vec<usize> = if same {
            (0..s.gpus.len()).collect()
        } else {
            f.r.gpu_index.map(|i| i as usize).filter(|&i| i < s.gpus.len()).into_iter().collect()
        };
        let differs = slots.iter().any(|&i| s.gpus[i].capacity_bytes.abs_diff(t) > t / 100);
        if differs {
            b.notes.push(format!(
                "The plan is checked on the failing GPU's {} rather than the plan's {}.",
                gib(t),
                gib(s.gpus[slots[0]].capacity_bytes)
            ));
            for i in slots {
                s.gpus[i].capacity_bytes = t;
            }
        }
    }
    let e = crate::estimate::estimate(model, s.clone());
    let g = fullest(&e);
    let cap = g.map_or(0, |g| g.capacity_bytes);
    let weights = g.map_or(0, |g| g.weight_bytes);
    let need = g.map_or(0, |g| g.total_bytes);
    let fmt = s.weights.id();
    let name = &model.name;
    let check = PlanCheck {
        model: name.clone(),
        weight_format: fmt.clone(),
        engine: s.engine.kind(),
        capacity_bytes: cap,
        weight_bytes: weights,
        need_bytes: need,
        fits: e.fits,
        verdict: e.verdict,
    };
    let gpu_word = if s.gpus.len() > 1 { format!("{} × {}", s.gpus.len(), gib(cap)) } else { gib(cap) };

    match e.verdict {
        Verdict::DoesNotFitAtLoad { gpu, shortfall_bytes } => {
            let text = if weights > cap {
                format!(
                    "the weights of {name} in {fmt} need {}{}, {} the {gpu_word} GPU",
                    gib(weights),
                    if s.gpus.len() > 1 { format!(" on GPU {gpu}") } else { String::new() },
                    times(weights, cap)
                )
            } else {
                format!(
                    "the weights of {name} in {fmt} ({}) and the CUDA context are {} more than the {} GPU {gpu} has",
                    gib(weights),
                    gib(shortfall_bytes),
                    gib(cap)
                )
            };
            b.add(CauseId::WeightsTooLarge, 90, text);
            match solve::least_aggressive_format(model, &s) {
                Some(better) => b.add(
                    CauseId::WeightsTooLarge,
                    90,
                    format!("in {} the whole plan fits ({})", better.id(), better.describe()),
                ),
                None => {
                    let lightest = crate::formats::WeightFormat::CHOICES
                        .iter()
                        .copied()
                        .filter(|w| solve::runs_on(*w, s.engine.kind()))
                        .map(|w| {
                            let mut t = s.clone();
                            t.weights = w;
                            let e = crate::estimate::estimate(model, t);
                            (w, fullest(&e).map_or(0, |g| g.weight_bytes))
                        })
                        .min_by_key(|(_, bytes)| *bytes);
                    let even = lightest.map_or(String::new(), |(w, bytes)| {
                        format!(": even in {} the weights need {} per GPU", w.id(), gib(bytes))
                    });
                    b.add(
                        CauseId::TooLargeOverall,
                        95,
                        format!(
                            "no weight format the {} engine runs fits {name} on {gpu_word}{even}",
                            s.engine.kind().id()
                        ),
                    );
                }
            }
        }
        Verdict::RunsOutAtToken { gpu, token, generated } => {
            b.add(
                CauseId::KvCacheGrowth,
                90,
                format!(
                    "the plan runs out on GPU {gpu} at token {} ({} generated) of the planned {}: the KV cache grows {} \
                     per token per sequence ({} for the whole run)",
                    thousands(token),
                    thousands(generated),
                    thousands(s.sequence_tokens()),
                    gib(e.kv_bytes_per_token),
                    gib(e.kv_demand_bytes)
                ),
            );
            heavy_weights(b, name, &fmt, weights, cap);
        }
        Verdict::RunsOutInPrefill { gpu, shortfall_bytes } => {
            b.add(
                CauseId::KvCacheGrowth,
                85,
                format!(
                    "processing the {}-token prompt × {} needs {} more than GPU {gpu} has: the cache and activations \
                     of the prompt do not fit",
                    thousands(s.prompt_tokens),
                    s.concurrency,
                    gib(shortfall_bytes)
                ),
            );
            heavy_weights(b, name, &fmt, weights, cap);
        }
        Verdict::EngineRefuses { gpu, largest_context } => {
            if largest_context == 0 {
                b.add(
                    CauseId::WeightsTooLarge,
                    85,
                    format!(
                        "after the weights of {name} in {fmt} ({}) the engine has no memory left for its cache on GPU {gpu}",
                        gib(weights)
                    ),
                );
            } else {
                b.add(
                    CauseId::KvCacheGrowth,
                    90,
                    format!(
                        "the engine's cache on GPU {gpu} holds at most {} tokens, less than the context it is configured for",
                        thousands(largest_context)
                    ),
                );
                b.limits
                    .push(format!("the plan starts with a context of at most {} tokens", thousands(largest_context)));
            }
        }
        Verdict::Fits { .. } => plan_fits(f, b, &e, need, cap),
    }
    if !e.fits {
        limits(model, &s, b);
    }
    imbalance(f, b, &e, model);
    for x in fixes::fixes(model, &s) {
        let (id, cause) = map_fix(x.kind);
        b.fix(DiagnosisFix {
            id,
            cause,
            title: x.title,
            gives_up: x.gives_up,
            saves_bytes: Some(x.saves_bytes).filter(|&v| v > 0 || x.kind != FixKind::BiggerGpu),
            fits: Some(x.fits),
            code: x.code,
        });
    }
    if !e.fits
        && let Some(x) = smaller_model(model, &s, need)
    {
        b.fix(x);
    }
    check
}

/// The GPU that is fullest relative to its capacity.
fn fullest(e: &Estimate) -> Option<&GpuBudget> {
    e.per_gpu.iter().max_by(|a, b| {
        let ra = a.total_bytes as f64 / a.capacity_bytes.max(1) as f64;
        let rb = b.total_bytes as f64 / b.capacity_bytes.max(1) as f64;
        ra.total_cmp(&rb)
    })
}

fn heavy_weights(b: &mut Board, name: &str, fmt: &str, weights: u64, cap: u64) {
    if cap > 0 && weights >= cap / 10 * 8 {
        b.add(
            CauseId::WeightsTooLarge,
            55,
            format!(
                "the weights of {name} in {fmt} take {} = {} of the GPU, leaving little for the cache",
                gib(weights),
                pct(weights, cap)
            ),
        );
    }
}

/// The plan fits an empty GPU: then leftovers decide.
fn plan_fits(f: &Facts, b: &mut Board, e: &Estimate, need: u64, cap: u64) {
    let spare = cap.saturating_sub(need);
    let others = f.others_total();
    if others > spare && others > 0 {
        b.add(
            CauseId::OtherProcesses,
            90,
            format!(
                "the plan needs {} of {} and fits an empty GPU, but the {} other processes hold leaves only {}",
                gib(need),
                gib(cap),
                gib(others),
                gib(cap.saturating_sub(others))
            ),
        );
    }
    if let Some(u) = f.r.reserved_unallocated_bytes
        && u > spare
    {
        b.add(
            CauseId::Fragmentation,
            80,
            format!(
                "the plan needs {} of {}, so it has {} to spare: the {} reserved but unallocated is more than that",
                gib(need),
                gib(cap),
                gib(spare),
                gib(u)
            ),
        );
    }
    if let Some(me) = f.this_process.or(f.r.reserved_bytes)
        && me > need.saturating_add(need / 10)
    {
        b.notes.push(format!(
            "The plan fits with {} to spare, but the failing process held {}, more than the plan's {}: it ran more than \
             the plan (longer inputs, more sequences, another model or format).",
            gib(spare),
            gib(me),
            gib(need)
        ));
    } else {
        b.notes.push(format!("The plan fits this GPU with {} to spare ({}).", gib(spare), verdict_word(e)));
    }
}

fn verdict_word(e: &Estimate) -> String {
    match e.verdict {
        Verdict::Fits { max_concurrency } => format!("up to {max_concurrency} sequences of this length"),
        _ => "it does not fit".into(),
    }
}

/// Step 3: the limits that fit.
fn limits(model: &Model, s: &Scenario, b: &mut Board) {
    match s.engine.kind() {
        EngineKind::Transformers | EngineKind::LlamaCpp => match solve::max_new_tokens(model, s) {
            Some(n) => b.limits.push(format!(
                "after the {}-token prompt, at most {} new tokens fit (not {})",
                thousands(s.prompt_tokens),
                thousands(n),
                thousands(s.max_new_tokens)
            )),
            None => b.limits.push(format!("even the {}-token prompt alone does not fit", thousands(s.prompt_tokens))),
        },
        EngineKind::Vllm | EngineKind::Sglang => {
            let n = solve::max_context(model, &solve::with_length(s, s.sequence_tokens()));
            b.limits.push(format!("sequences of at most {} tokens fit at concurrency {}", thousands(n), s.concurrency));
        }
    }
}

/// Step 4 from the plan: the failing GPU held more than a balanced split puts there.
fn imbalance(f: &Facts, b: &mut Board, e: &Estimate, model: &Model) {
    if e.per_gpu.len() < 2 || e.pipeline_stages < 2 {
        return;
    }
    let Some(i) = f.r.gpu_index.map(|i| i as usize) else { return };
    let Some(g) = e.per_gpu.get(i) else { return };
    let Some(held) = f.this_process.or(f.r.reserved_bytes) else { return };
    // More than its share, but no more than the whole plan: the plan's own
    // memory piled up unevenly, rather than a different, bigger workload.
    let whole = e.per_gpu.iter().map(|g| g.total_bytes).fold(0, u64::saturating_add);
    if !g.fits || held <= g.total_bytes.saturating_add(g.total_bytes / 10) || held > whole.saturating_add(whole / 10) {
        return;
    }
    b.add(
        CauseId::GpuImbalance,
        75,
        format!(
            "GPU {i} held {}, more than the {} a balanced split of the plan puts there: the split was uneven",
            gib(held),
            gib(g.total_bytes)
        ),
    );
    let repo = model.repo.clone().unwrap_or_else(|| "MODEL_ID".into());
    let code = match (&e.device_map, e.engine) {
        (Some(m), _) => format!("AutoModelForCausalLM.from_pretrained(\"{repo}\", device_map={})", m.python()),
        (None, EngineKind::LlamaCpp) => {
            let split: Vec<String> = e.per_gpu.iter().map(|g| (g.layers[1] - g.layers[0]).to_string()).collect();
            format!("llama-server ... --tensor-split {}", split.join(","))
        }
        (None, _) => format!("AutoModelForCausalLM.from_pretrained(\"{repo}\", device_map=\"balanced\")"),
    };
    b.fix(fix(
        FixId::DeviceMap,
        CauseId::GpuImbalance,
        "Split the layers in proportion to each GPU's memory".into(),
        GivesUp::Nothing,
        Some(held.saturating_sub(g.total_bytes)),
        code,
    ));
}

fn map_fix(kind: FixKind) -> (FixId, CauseId) {
    match kind {
        FixKind::SdpaAttention => (FixId::SdpaAttention, CauseId::KvCacheGrowth),
        FixKind::HigherUtilization => (FixId::GpuMemoryUtilization, CauseId::KvCacheGrowth),
        FixKind::KvCacheDtype => (FixId::KvCacheDtype, CauseId::KvCacheGrowth),
        FixKind::MaxNewTokens => (FixId::MaxNewTokens, CauseId::KvCacheGrowth),
        FixKind::MaxModelLen => (FixId::MaxModelLen, CauseId::KvCacheGrowth),
        FixKind::Concurrency => (FixId::Concurrency, CauseId::KvCacheGrowth),
        FixKind::WeightFormat => (FixId::WeightFormat, CauseId::WeightsTooLarge),
        FixKind::OffloadLayers => (FixId::OffloadLayers, CauseId::WeightsTooLarge),
        FixKind::MoreGpus => (FixId::MoreGpus, CauseId::TooLargeOverall),
        FixKind::BiggerGpu => (FixId::BiggerGpu, CauseId::TooLargeOverall),
    }
}

/// The largest preset of the same family, smaller than the model, that fits the plan.
fn smaller_model(model: &Model, s: &Scenario, need: u64) -> Option<DiagnosisFix> {
    let params = model.parameters();
    let mut candidates: Vec<Model> = catalog::MODEL_PRESETS
        .iter()
        .filter_map(|p| Model::from_preset(p).ok())
        .filter(|m| m.arch.family == model.arch.family && m.parameters() < params && m.name != model.name)
        .collect();
    candidates.sort_by_key(|m| std::cmp::Reverse(m.parameters()));
    let m = candidates.into_iter().find(|m| solve::fits(m, s))?;
    let p = Prepared::new(&m, s.clone());
    let e = p.estimate();
    let after = fullest(&e).map_or(0, |g| g.total_bytes);
    let repo = m.repo.clone().unwrap_or_else(|| m.name.clone());
    let code = match s.engine {
        Engine::Vllm(_) => format!("vllm serve {repo}"),
        Engine::Sglang(_) => format!("python -m sglang.launch_server --model-path {repo}"),
        Engine::LlamaCpp(_) => format!("llama-server -m <a {} GGUF of {repo}> ...", s.weights.id()),
        Engine::Transformers(_) => format!("AutoModelForCausalLM.from_pretrained(\"{repo}\", device_map=\"auto\")"),
    };
    Some(DiagnosisFix {
        id: FixId::SmallerModel,
        cause: CauseId::TooLargeOverall,
        title: format!("Run {} instead ({} parameters, same family)", m.name, thousands(m.parameters())),
        gives_up: GivesUp::Quality,
        saves_bytes: Some(need.saturating_sub(after)).filter(|&v| v > 0),
        fits: Some(true),
        code,
    })
}

// ---------------------------------------------------------------------------
// Summary and checklist.

fn summary(causes: &[Cause], f: &Facts) -> String {
    let Some(top) = causes.first() else {
        return format!("An out-of-memory error on {}, without figures to tell the cause.", f.gpu_label());
    };
    let because = top.evidence.first().map_or(String::new(), |e| format!(": {e}"));
    let on =
        if f.r.gpu_index.is_some() || f.total.is_some() { format!(" on {}", f.gpu_label()) } else { String::new() };
    format!("Most likely{on}: {}{because}.", lower_first(top.title.as_str()))
}

fn checklist(causes: &[Cause], f: &Facts, plan: Option<&PlanCheck>, limits: &[String]) -> Vec<ChecklistItem> {
    ChecklistStep::ALL
        .iter()
        .map(|&step| {
            let here: Vec<&Cause> = causes.iter().filter(|c| c.step == step).collect();
            let flagged = here.iter().any(|c| c.score >= LIKELY_SCORE);
            let finding = match here.first().and_then(|c| c.evidence.first()) {
                Some(e) if step != ChecklistStep::Limits => capitalise(e),
                _ => default_finding(step, f, plan, limits),
            };
            ChecklistItem { step, number: step.number(), question: step.question().into(), finding, flagged }
        })
        .collect()
}

fn default_finding(step: ChecklistStep, f: &Facts, plan: Option<&PlanCheck>, limits: &[String]) -> String {
    match step {
        ChecklistStep::Precision => match plan {
            Some(p) => format!(
                "The weights of {} in {} take {} of the {} GPU: they fit.",
                p.model,
                p.weight_format,
                gib(p.weight_bytes),
                gib(p.capacity_bytes)
            ),
            None => "Unknown without the model: give the plan (--model or --config) to check the weights.".into(),
        },
        ChecklistStep::Growth => match plan {
            Some(p) if p.fits => "The plan's cache and activations fit at its full length.".into(),
            _ => "No sign that memory ran out while growing.".into(),
        },
        ChecklistStep::Limits => match limits.first() {
            Some(l) => capitalise(l),
            None if plan.is_some() => "The plan's length and concurrency fit.".into(),
            None => "Unknown without the plan: give --model or --config with the workload flags.".into(),
        },
        ChecklistStep::Balance => {
            if f.r.gpus_seen.len() > 1 {
                "Several GPUs ran out; no sign that one carries more than its share.".into()
            } else {
                "One GPU is involved: nothing to balance.".into()
            }
        }
        ChecklistStep::Leftovers => {
            match (f.r.reserved_unallocated_bytes, f.share(f.r.reserved_unallocated_bytes.unwrap_or(0))) {
                (Some(u), Some(share)) => format!(
                    "Reserved but unallocated is only {} = {share} of capacity, and no other process holds much.",
                    gib(u)
                ),
                _ => "The error does not say; run `nvidia-smi` or connect the agent to see who holds the GPU.".into(),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Small formatting helpers.

fn gib(bytes: u64) -> String {
    format_bytes(bytes, UnitSystem::Binary)
}

/// `x / of` as a percentage: one decimal under 10 %.
fn pct(x: u64, of: u64) -> String {
    let p = x as f64 * 100.0 / of.max(1) as f64;
    if p < 10.0 { format!("{p:.1} %") } else { format!("{p:.0} %") }
}

/// `x / of` as a factor: "5.5×".
fn times(x: u64, of: u64) -> String {
    format!("{:.1}×", x as f64 / of.max(1) as f64)
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or(String::new(), |first| first.to_lowercase().chain(c).collect())
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    let mut out: String = c.next().map_or(String::new(), |first| first.to_uppercase().chain(c).collect());
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}
