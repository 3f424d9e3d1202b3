//! The plan: for one model and one validated scenario, everything that does
//! not depend on which engine's rules count the bytes — weights per
//! tensor-parallel rank (`weights`), KV cost and recurrent state per layer
//! (`crate::kv`, `crate::state`), the layer split over pipeline stages
//! (`split`), the per-GPU budget type and the verdict (`budget`), activation
//! formulas (`activations`) and the search helpers ([`largest`], [`Search`]).
//!
//! **Layer rule:** this module names no engine. What it needs from one (the
//! checks of its knobs, its state dtypes, where it places layers) it asks
//! through [`EngineRules`], which `crate::engines` implements.

pub mod activations;
mod budget;
mod scenario;
pub mod split;
pub mod terms;
pub mod weights;

pub use budget::{GpuBudget, GpuPeak, Verdict};
pub use scenario::{
    DEFAULT_GPU, GpuSlot, MAX_CONCURRENCY, MAX_GPUS, MAX_TOKENS, Scenario, ScenarioError, ValidScenario,
};
pub use split::Placement;
pub use weights::{ExpertSplit, Sharding, WeightPlan, WeightSource};

use crate::arch::TextModel;
use crate::kv::{self, LayerKv};
use crate::model::Model;
use crate::state::{self, LayerState, StateRules};
use crate::units::MIB;

/// CUDA context of one PyTorch process on one GPU. Empirical: ~300 MB with
/// lazy module loading (CUDA ≥ 11.7, default since 12.2), per ptrblck in
/// pytorch/pytorch#107667; 287 MB measured in pytorch/pytorch#86509.
pub const CUDA_CONTEXT_BYTES: u64 = 300 * MIB;

/// NCCL and custom all-reduce buffers of one rank when tensor parallelism is
/// on. Empirical: vLLM's non-torch memory rises from 0.13 GiB at TP=1 to
/// 0.55 GiB at TP=2 on H100 (llm-d `empirical-vllm-memory-results.md`).
pub const TP_COMM_BYTES: u64 = 430 * MIB;

/// What a plan needs from the engine that runs it. `crate::engines::Engine`
/// implements it, one exhaustive match per question.
pub trait EngineRules: Sized {
    /// A split the engine refuses for a model, in its own words.
    type Refusal;
    /// The engine's checks of its own knobs.
    fn check_knobs(scenario: &Scenario<Self>) -> Result<(), String>;
    /// The tensor- and pipeline-parallel splits the engine refuses for this model.
    fn check_split(scenario: &Scenario<Self>, text: &TextModel) -> Result<(), Self::Refusal>;
    /// The dtypes the engine keeps recurrent state in.
    fn state_rules(&self, model: &Model, bytes_per_element: u64) -> StateRules;
    /// Which layers each pipeline stage holds on GPU.
    fn place(plan: &Plan<'_, Self>) -> Placement;
    /// Data-parallel replicas: consecutive groups of `tp × stages` GPUs that
    /// each run the whole model with a KV pool of their own (1: none).
    fn replicas(&self) -> u64;
    /// How `tp`-way groups split the model (most engines: everything over
    /// TP, [`Sharding::tensor_parallel`]).
    fn sharding(&self, tp: u64) -> Sharding;
}

/// Whether a verdict runs its searches (the largest concurrency, the
/// largest context an engine starts with) or skips them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// Run the searches: the verdict carries the exact largest figures.
    Run,
    /// Skip them: the verdict carries a known lower bound instead.
    Skip,
}

impl Search {
    /// The number `search` finds, or `skipped` when searches are skipped.
    pub fn answer(self, skipped: u64, search: impl FnOnce() -> u64) -> u64 {
        match self {
            Self::Run => search(),
            Self::Skip => skipped,
        }
    }
}

/// Everything about a scenario that does not depend on the workload size,
/// computed once and reused by engines, solvers and sweeps.
#[derive(Debug, Clone)]
pub struct Plan<'m, E> {
    pub model: &'m Model,
    pub scenario: ValidScenario<E>,
    /// Weights on one tensor-parallel rank.
    pub weights: WeightPlan,
    /// KV cost of every layer on one rank.
    pub kv_layers: Vec<LayerKv>,
    /// Recurrent state of every layer for one sequence on one rank, in the
    /// engine's state dtypes.
    pub state_layers: Vec<LayerState>,
    /// The run of layers each pipeline stage holds on GPU (an engine may
    /// keep some on the CPU).
    pub ranges: split::Ranges,
    /// Whether the embeddings (and vision tower) sit on the first stage.
    pub first_on_gpu: bool,
    /// Whether the final norm and lm_head sit on the last stage.
    pub last_on_gpu: bool,
    bytes_per_element: u64,
    /// How the engine splits the tensors over the stage's GPUs (TP, the
    /// attention's and embedding's own ranks, the experts).
    sharding: Sharding,
}

impl<'m, E: EngineRules> Plan<'m, E> {
    pub fn new(model: &'m Model, scenario: ValidScenario<E>) -> Self {
        let weights = WeightPlan::sharded(model, scenario.weights, scenario.engine.sharding(scenario.tp));
        Self::with_weights(model, scenario, weights)
    }

    /// [`Plan::new`] with `weights` already computed for the same model,
    /// format and tensor parallelism: a solver's many plans that differ
    /// only in an engine's flags compute them once (issue 39).
    pub(crate) fn with_weights(model: &'m Model, scenario: ValidScenario<E>, weights: WeightPlan) -> Self {
        // The KV heads and recurrent state split as attention does.
        let sharding = scenario.engine.sharding(scenario.tp);
        let tp = sharding.attention;
        let kv_layers = kv::layer_costs(&model.arch.text, scenario.kv_dtype, tp);
        let bytes_per_element = if scenario.weights.is_fp32() { 4 } else { 2 };
        let rules = scenario.engine.state_rules(model, bytes_per_element);
        let state_layers = state::layer_states(&model.arch.text, rules, tp);
        let mut p = Self {
            model,
            scenario,
            weights,
            kv_layers,
            state_layers,
            ranges: Vec::new(),
            first_on_gpu: true,
            last_on_gpu: true,
            bytes_per_element,
            sharding,
        };
        let placement = E::place(&p);
        p.ranges = placement.ranges;
        p.first_on_gpu = placement.first_on_gpu;
        p.last_on_gpu = placement.last_on_gpu;
        p
    }
}

impl<E: EngineRules> Plan<'_, E> {
    /// The pipeline stage GPU `g` belongs to (in its data-parallel replica:
    /// every replica holds the same stages).
    pub fn stage(&self, g: usize) -> usize {
        (g / self.tp() as usize) % self.scenario.stages()
    }

    /// Data-parallel replicas of the plan (1 for most engines).
    pub fn replicas(&self) -> u64 {
        self.scenario.engine.replicas()
    }

    pub fn is_last_stage(&self, stage: usize) -> bool {
        stage + 1 == self.scenario.stages() && self.last_on_gpu
    }

    /// Weights one GPU of a stage holds.
    pub fn stage_weights(&self, stage: usize) -> u64 {
        let first = stage == 0 && self.first_on_gpu;
        self.weights.slice(self.stage_range(stage), first, self.is_last_stage(stage))
    }

    /// `DoesNotFitAtLoad` when some GPU cannot even hold its weights and context.
    pub fn load_verdict(&self) -> Option<Verdict> {
        (0..self.scenario.gpus.len()).find_map(|g| {
            let fixed = self.stage_weights(self.stage(g)).saturating_add(self.base_overhead());
            let cap = self.scenario.gpus[g].capacity_bytes;
            (fixed > cap).then(|| Verdict::DoesNotFitAtLoad { gpu: g, shortfall_bytes: fixed - cap })
        })
    }

    /// Stage capacities for balancing: the smallest GPU of each stage (over
    /// every data-parallel replica, which all hold the same layers).
    pub fn stage_capacities(&self) -> Vec<u64> {
        let mut caps = vec![u64::MAX; self.scenario.stages()];
        for (g, slot) in self.scenario.gpus.iter().enumerate() {
            let c = &mut caps[self.stage(g)];
            *c = (*c).min(slot.capacity_bytes);
        }
        caps
    }
}

impl<E> Plan<'_, E> {
    pub fn tp(&self) -> u64 {
        self.scenario.tp
    }

    /// Bytes of one activation element: 4 for fp32 weights, else 2.
    pub fn bytes_per_element(&self) -> u64 {
        self.bytes_per_element
    }

    pub fn stage_range(&self, stage: usize) -> std::ops::Range<usize> {
        self.ranges.get(stage).cloned().unwrap_or(0..0)
    }

    /// KV costs of the layers a stage holds.
    pub fn stage_kv(&self, stage: usize) -> &[LayerKv] {
        self.kv_layers.get(self.stage_range(stage)).unwrap_or(&[])
    }

    /// Recurrent state of one sequence in the layers a stage holds.
    pub fn stage_state(&self, stage: usize) -> u64 {
        state::sequence_bytes(self.state_layers.get(self.stage_range(stage)).unwrap_or(&[]))
    }

    /// Fixed per-GPU overhead: the CUDA context, plus communication buffers
    /// under tensor parallelism.
    pub fn base_overhead(&self) -> u64 {
        CUDA_CONTEXT_BYTES.saturating_add(if self.tp() > 1 { TP_COMM_BYTES } else { 0 })
    }

    /// Layer costs for a memory-balanced split: weights plus the KV cache the
    /// stage will hold for `tokens` tokens of each of `batch` sequences.
    pub fn layer_costs(&self, tokens: u64, batch: u64) -> Vec<u64> {
        self.weights
            .per_layer
            .iter()
            .zip(&self.kv_layers)
            .map(|(w, k)| {
                let held = k.tokens_held(tokens).saturating_mul(k.bytes_per_token);
                w.saturating_add(held.saturating_add(k.compressed_bytes(tokens)).saturating_mul(batch))
            })
            .collect()
    }

    /// KV bytes of one token over all layers and ranks.
    pub fn kv_bytes_per_token(&self) -> u64 {
        kv::bytes_per_token(&self.kv_layers).saturating_mul(self.attention_tp())
    }

    /// The ranks one sequence's KV cache is split over: the TP degree, or
    /// the attention's own (SGLang's data-parallel attention).
    pub fn attention_tp(&self) -> u64 {
        self.sharding.attention
    }

    /// How the engine splits the tensors over the stage's GPUs.
    pub fn sharding(&self) -> Sharding {
        self.sharding
    }

    /// The KV cache the workload itself needs: every sequence at its full
    /// length, over all ranks.
    pub fn kv_demand_bytes(&self) -> u64 {
        let s = &self.scenario;
        kv::sequence_bytes(&self.kv_layers, s.sequence_tokens(), None)
            .saturating_mul(s.concurrency)
            .saturating_mul(self.attention_tp())
    }

    /// Recurrent state of one sequence over all layers and ranks.
    pub fn state_bytes_per_sequence(&self) -> u64 {
        state::sequence_bytes(&self.state_layers).saturating_mul(self.attention_tp())
    }
}

/// The largest `n` in `0..=max` for which `ok(n)` holds, assuming `ok` is
/// monotone (true up to some point, false after): exponential then binary search.
pub fn largest(max: u64, ok: impl Fn(u64) -> bool) -> u64 {
    if max == 0 || !ok(1) {
        return 0;
    }
    let mut lo = 1;
    let mut hi = 2u64.min(max);
    while hi < max && ok(hi) {
        lo = hi;
        hi = hi.saturating_mul(2).min(max);
    }
    if ok(hi) {
        return hi;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) { lo = mid } else { hi = mid }
    }
    lo
}
