//! The estimate: for one model, weight format, KV dtype, engine, workload and
//! set of GPUs, the bytes each GPU needs (weights, KV cache, activations,
//! overhead), whether it fits, where it stops fitting, and the terms behind
//! every figure.
//!
//! [`Prepared`] computes what does not depend on the workload size once
//! (weights per rank, KV costs per layer, the layer split) so that solvers and
//! chart sweeps can ask many questions cheaply. Engine rules live in
//! [`crate::engines`].

pub mod activations;
pub mod device_map;
mod explain;
pub mod split;
mod weights;

pub use device_map::DeviceMap;
pub use explain::verdict_text;
pub use weights::{WeightPlan, WeightSource};

use serde::Serialize;

use crate::arch::{Family, TensorLayout, params::Category};
use crate::catalog::Gpu;
use crate::engines::{self, Engine, EngineKind, EngineReport};
use crate::explain::Term;
use crate::formats::WeightFormat;
use crate::kv::{self, KvDtype, LayerKv};
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

/// Upper bounds on workload inputs: far beyond any real deployment, low
/// enough that no product of them can overflow.
pub const MAX_TOKENS: u64 = 1 << 30;
pub const MAX_CONCURRENCY: u64 = 1 << 20;
pub const MAX_GPUS: usize = 1024;

/// One GPU of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuSlot {
    pub name: String,
    pub capacity_bytes: u64,
    /// Peak memory bandwidth (GB/s), when known: for speed bounds.
    pub bandwidth_gb_s: Option<f64>,
    /// Peak dense bf16 TFLOP/s, when known: for speed bounds.
    pub bf16_tflops: Option<f64>,
}

impl GpuSlot {
    /// A GPU known only by its memory size.
    pub fn custom(name: impl Into<String>, capacity_bytes: u64) -> Self {
        Self { name: name.into(), capacity_bytes, bandwidth_gb_s: None, bf16_tflops: None }
    }

    pub fn from_catalog(gpu: &Gpu) -> Self {
        Self {
            name: gpu.name.clone(),
            capacity_bytes: gpu.memory_bytes,
            bandwidth_gb_s: Some(gpu.bandwidth_gb_s),
            bf16_tflops: Some(gpu.bf16_dense_tflops),
        }
    }
}

/// What the user plans to run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub weights: WeightFormat,
    pub kv_dtype: KvDtype,
    /// Every GPU, in order. With `tp` > 1, consecutive groups of `tp` GPUs
    /// form one pipeline stage; the number of stages is `gpus.len() / tp`.
    pub gpus: Vec<GpuSlot>,
    pub prompt_tokens: u64,
    pub max_new_tokens: u64,
    pub concurrency: u64,
    pub engine: Engine,
    /// Tensor-parallel degree.
    pub tp: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    #[error("at least one GPU is needed")]
    NoGpu,
    #[error("at most {MAX_GPUS} GPUs are supported")]
    TooManyGpus,
    #[error("{0} must be between {1} and {2}")]
    OutOfRange(&'static str, u64, u64),
    #[error("{gpus} GPUs cannot be split into tensor-parallel groups of {tp}")]
    TpDoesNotDivide { gpus: usize, tp: u64 },
    #[error("{0}")]
    Engine(String),
    /// A split the engine refuses for this model.
    #[error(transparent)]
    Split(#[from] engines::parallel::SplitError),
}

/// The catalog id of the default GPU (the CLI's `--gpu` default too).
pub const DEFAULT_GPU: &str = "rtx-4090";

impl Default for Scenario {
    /// The page's and the CLI's starting point: the catalog's RTX 4090, bf16
    /// weights and cache, a 2,048-token prompt and 512 new tokens for one
    /// sequence, in transformers.
    fn default() -> Self {
        // The catalog is compiled in and tested; the fallback only keeps this
        // total if it were ever emptied (24,564 MiB is what the driver reports).
        let gpu = crate::catalog::gpu(DEFAULT_GPU)
            .map_or_else(|| GpuSlot::custom("GeForce RTX 4090", 24_564 * MIB), GpuSlot::from_catalog);
        Self {
            weights: WeightFormat::Bf16,
            kv_dtype: KvDtype::Bf16,
            gpus: vec![gpu],
            prompt_tokens: 2048,
            max_new_tokens: 512,
            concurrency: 1,
            engine: Engine::default(),
            tp: 1,
        }
    }
}

impl Scenario {
    /// The KV dtype a framework picks when none is asked for: the activation
    /// dtype (fp32 for fp32 weights, fp16 for fp16 checkpoints, bf16 otherwise;
    /// vLLM's `kv_cache_dtype=auto` likewise follows the model dtype).
    pub fn default_kv_dtype(model: &Model, weights: WeightFormat) -> KvDtype {
        match (weights, model.arch.checkpoint_dtype) {
            (WeightFormat::F32, _) => KvDtype::F32,
            (WeightFormat::F16, _) | (_, Some(crate::arch::CheckpointDtype::F16)) => KvDtype::F16,
            _ => KvDtype::Bf16,
        }
    }

    /// Checks the bounds that keep every figure meaningful.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.gpus.is_empty() {
            return Err(ScenarioError::NoGpu);
        }
        if self.gpus.len() > MAX_GPUS {
            return Err(ScenarioError::TooManyGpus);
        }
        let range = |name, v: u64, lo, hi| {
            if (lo..=hi).contains(&v) { Ok(()) } else { Err(ScenarioError::OutOfRange(name, lo, hi)) }
        };
        range("prompt tokens", self.prompt_tokens, 0, MAX_TOKENS)?;
        range("max new tokens", self.max_new_tokens, 0, MAX_TOKENS)?;
        range("concurrency", self.concurrency, 1, MAX_CONCURRENCY)?;
        range("tensor-parallel degree", self.tp, 1, MAX_GPUS as u64)?;
        if !(self.gpus.len() as u64).is_multiple_of(self.tp) {
            return Err(ScenarioError::TpDoesNotDivide { gpus: self.gpus.len(), tp: self.tp });
        }
        for g in &self.gpus {
            range("GPU memory", g.capacity_bytes, 1, u64::MAX / 4)?;
        }
        engines::validate(self).map_err(ScenarioError::Engine)
    }

    /// [`Scenario::validate`], then the checks that need the model: the
    /// splits its engine would refuse (`engines::parallel`).
    pub fn validate_for(&self, model: &Model) -> Result<(), ScenarioError> {
        self.validate()?;
        engines::parallel::check(self, &model.arch.text)?;
        Ok(())
    }

    pub fn sequence_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.max_new_tokens)
    }

    /// Pipeline stages (groups of `tp` GPUs that each hold a run of layers).
    pub fn stages(&self) -> usize {
        (self.gpus.len() / self.tp.max(1) as usize).max(1)
    }
}

/// The answer in one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Verdict {
    /// Everything fits; `max_concurrency` sequences of this length would.
    Fits { max_concurrency: u64 },
    /// The weights and fixed overhead alone exceed GPU `gpu`.
    DoesNotFitAtLoad { gpu: usize, shortfall_bytes: u64 },
    /// Loading works, but processing the prompt runs out on GPU `gpu`.
    RunsOutInPrefill { gpu: usize, shortfall_bytes: u64 },
    /// Generation runs out when the sequence reaches `token` tokens
    /// (`generated` of them new).
    RunsOutAtToken { gpu: usize, token: u64, generated: u64 },
    /// The engine refuses to start (vLLM: one request of `max_model_len`
    /// does not fit its KV cache; SGLang: no memory left for the pool).
    /// `largest_context` is the longest context it would start with (0: none).
    EngineRefuses { gpu: usize, largest_context: u64 },
}

/// One GPU's budget at its peak.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuBudget {
    pub index: usize,
    pub name: String,
    pub capacity_bytes: u64,
    pub total_bytes: u64,
    pub weight_bytes: u64,
    pub kv_cache_bytes: u64,
    /// Recurrent state (Mamba, gated DeltaNet, short conv) of the sequences
    /// this GPU holds; 0 for models without recurrent layers.
    pub state_bytes: u64,
    pub activation_bytes: u64,
    pub overhead_bytes: u64,
    /// `capacity − total` when it fits, else 0.
    pub free_bytes: u64,
    /// `total − capacity` when it does not fit, else 0.
    pub shortfall_bytes: u64,
    pub fits: bool,
    /// Decoder layers placed on this GPU (`[start, end)`).
    pub layers: [usize; 2],
}

/// Parameters by part of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ParamBreakdown {
    pub embeddings: u64,
    pub attention: u64,
    pub mlp: u64,
    pub experts: u64,
    pub norms_and_biases: u64,
    pub lm_head: u64,
    pub vision: u64,
    /// MTP heads, recurrent mixers and checkpoint tensors no rule classifies.
    pub other: u64,
}

impl ParamBreakdown {
    pub fn of(layout: &TensorLayout) -> Self {
        Self {
            embeddings: layout.params_in(Category::Embeddings),
            attention: layout.params_in(Category::Attention),
            mlp: layout.params_in(Category::Mlp),
            experts: layout.params_in(Category::Experts),
            norms_and_biases: layout.params_in(Category::NormsAndBiases),
            lm_head: layout.params_in(Category::LmHead),
            vision: layout.params_in(Category::Vision),
            other: layout.params_in(Category::Other),
        }
    }
}

/// What a checkpoint's headers said, in short.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointSummary {
    pub kind: crate::checkpoint::CheckpointKind,
    pub files: usize,
    pub tensors: usize,
    /// Every tensor's bytes (MTP heads included).
    pub total_bytes: u64,
    pub parameters: u64,
    pub dtypes: Vec<crate::checkpoint::layout::DtypeBytes>,
    /// Tensors no naming rule knows (counted as "other").
    pub unclassified_tensors: usize,
}

impl CheckpointSummary {
    pub fn of(layout: &crate::checkpoint::layout::ExactLayout) -> Self {
        Self {
            kind: layout.kind,
            files: layout.files,
            tensors: layout.tensors,
            total_bytes: layout.total_bytes(),
            parameters: layout.total_params(),
            dtypes: layout.dtypes.clone(),
            unclassified_tensors: layout.unclassified_count,
        }
    }
}

/// The full answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    pub model: String,
    pub family: Family,
    pub parameters: u64,
    pub active_parameters: u64,
    pub parameter_breakdown: ParamBreakdown,
    pub weight_format: WeightFormat,
    pub kv_dtype: KvDtype,
    pub weight_bytes: u64,
    pub weight_bytes_source: WeightSource,
    /// Where the weight figure comes from (`checkpoint`: the headers'
    /// exact bytes; `estimated`: parameters × the format's bits).
    pub weights_source: WeightSource,
    /// Whether a family reader knows the architecture; `false`: the layout
    /// and cache come from the checkpoint's tensors (or a flagged generic read).
    pub architecture_known: bool,
    /// What was read from the checkpoint's headers, when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointSummary>,
    pub kv_bytes_per_token: u64,
    /// KV cache held in GPU memory: the sequences' cache (transformers), the
    /// engine's pre-allocated pool (vLLM, SGLang) or the `n_ctx` cache
    /// (llama.cpp, GPU layers only).
    pub kv_cache_bytes: u64,
    /// KV cache the workload itself needs: every sequence at its full length.
    pub kv_demand_bytes: u64,
    /// Recurrent state of one sequence over all GPUs: constant in its length.
    pub state_bytes_per_sequence: u64,
    /// Recurrent state held in GPU memory (all GPUs).
    pub state_bytes: u64,
    pub activation_bytes: u64,
    pub overhead_bytes: u64,
    pub total_bytes: u64,
    pub capacity_bytes: u64,
    pub prompt_tokens: u64,
    pub max_new_tokens: u64,
    pub concurrency: u64,
    pub engine: EngineKind,
    pub tp: u64,
    pub pipeline_stages: usize,
    pub fits: bool,
    pub verdict: Verdict,
    pub per_gpu: Vec<GpuBudget>,
    /// vLLM: `# GPU blocks` as vLLM logs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_gpu_blocks: Option<u64>,
    /// vLLM: `GPU KV cache size: N tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_tokens: Option<u64>,
    /// vLLM: `Maximum concurrency for max_model_len tokens per request: X`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<f64>,
    /// What the engine itself reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_report: Option<EngineReport>,
    /// Layer-wise splits: module → GPU, ready for `from_pretrained(device_map=…)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_map: Option<DeviceMap>,
    /// Upper bounds on decode speed and lower bounds on prefill time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<crate::speed::SpeedBounds>,
    pub terms: Vec<Term>,
    pub warnings: Vec<String>,
}

/// How much of a verdict to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// With the searches (largest concurrency, vLLM's largest max_model_len).
    Full,
    /// Without them.
    Shallow,
}

impl Depth {
    /// The number a search would find, or `fallback` when shallow.
    pub(crate) fn search(self, fallback: u64, search: impl FnOnce() -> u64) -> u64 {
        match self {
            Self::Full => search(),
            Self::Shallow => fallback,
        }
    }
}

/// The parts of one GPU's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Parts {
    pub weights: u64,
    pub kv: u64,
    /// Recurrent state (`crate::state`), beside the KV cache.
    pub state: u64,
    pub activations: u64,
    pub overhead: u64,
}

impl Parts {
    pub fn total(&self) -> u64 {
        self.weights
            .saturating_add(self.kv)
            .saturating_add(self.state)
            .saturating_add(self.activations)
            .saturating_add(self.overhead)
    }
}

/// Everything an estimate needs that does not depend on the workload size,
/// computed once and reused by solvers and sweeps.
#[derive(Debug, Clone)]
pub struct Prepared<'m> {
    pub model: &'m Model,
    pub scenario: Scenario,
    /// Weights on one tensor-parallel rank.
    pub weights: WeightPlan,
    /// KV cost of every layer on one rank.
    pub kv_layers: Vec<LayerKv>,
    /// Recurrent state of every layer for one sequence on one rank, in the
    /// engine's state dtypes.
    pub state_layers: Vec<LayerState>,
    /// The run of layers each pipeline stage holds on GPU (llama.cpp: only
    /// the offloaded layers; the rest stay on the CPU).
    pub ranges: split::Ranges,
    /// Whether the embeddings (and vision tower) sit on the first stage.
    pub first_on_gpu: bool,
    /// Whether the final norm and lm_head sit on the last stage.
    pub last_on_gpu: bool,
    act_bytes: u64,
    /// Engine figures that do not change with the workload (vLLM's budget).
    pub(crate) engine_cache: Option<engines::vllm::Budget>,
}

impl<'m> Prepared<'m> {
    pub fn new(model: &'m Model, scenario: Scenario) -> Self {
        let tp = scenario.tp.max(1);
        let weights = WeightPlan::new(model, scenario.weights, tp);
        let kv_layers = kv::layer_costs(&model.arch.text, scenario.kv_dtype, tp);
        let act_bytes = if scenario.weights.is_fp32() { 4 } else { 2 };
        let state_layers = state::layer_states(&model.arch.text, state_rules(model, &scenario, act_bytes), tp);
        let mut p = Self {
            model,
            scenario,
            weights,
            kv_layers,
            state_layers,
            ranges: Vec::new(),
            first_on_gpu: true,
            last_on_gpu: true,
            act_bytes,
            engine_cache: None,
        };
        engines::place(&mut p);
        if let Engine::Vllm(o) = p.scenario.engine {
            p.engine_cache = Some(engines::vllm::budget_for(&p, o));
        }
        p
    }

    pub fn tp(&self) -> u64 {
        self.scenario.tp.max(1)
    }

    pub fn act_bytes(&self) -> u64 {
        self.act_bytes
    }

    /// The pipeline stage GPU `g` belongs to.
    pub fn stage(&self, g: usize) -> usize {
        g / self.tp() as usize
    }

    pub fn stage_range(&self, stage: usize) -> std::ops::Range<usize> {
        self.ranges.get(stage).cloned().unwrap_or(0..0)
    }

    pub fn is_last_stage(&self, stage: usize) -> bool {
        stage + 1 == self.scenario.stages() && self.last_on_gpu
    }

    /// KV costs of the layers a stage holds.
    pub fn stage_kv(&self, stage: usize) -> &[LayerKv] {
        self.kv_layers.get(self.stage_range(stage)).unwrap_or(&[])
    }

    /// Recurrent state of one sequence in the layers a stage holds.
    pub fn stage_state(&self, stage: usize) -> u64 {
        state::sequence_bytes(self.state_layers.get(self.stage_range(stage)).unwrap_or(&[]))
    }

    /// Weights one GPU of a stage holds.
    pub fn stage_weights(&self, stage: usize) -> u64 {
        let first = stage == 0 && self.first_on_gpu;
        self.weights.slice(self.stage_range(stage), first, self.is_last_stage(stage))
    }

    /// Fixed per-GPU overhead: the CUDA context, plus communication buffers
    /// under tensor parallelism.
    pub fn base_overhead(&self) -> u64 {
        CUDA_CONTEXT_BYTES.saturating_add(if self.tp() > 1 { TP_COMM_BYTES } else { 0 })
    }

    /// `DoesNotFitAtLoad` when some GPU cannot even hold its weights and context.
    pub fn load_verdict(&self) -> Option<Verdict> {
        (0..self.scenario.gpus.len()).find_map(|g| {
            let fixed = self.stage_weights(self.stage(g)).saturating_add(self.base_overhead());
            let cap = self.scenario.gpus[g].capacity_bytes;
            (fixed > cap).then(|| Verdict::DoesNotFitAtLoad { gpu: g, shortfall_bytes: fixed - cap })
        })
    }

    /// Peak parts of GPU `g` with `batch` sequences of the scenario's length.
    pub fn peak(&self, g: usize, batch: u64) -> Parts {
        engines::peak(self, g, batch)
    }

    /// Whether `batch` sequences of `prompt` + `new` tokens fit.
    pub fn fits_sequences(&self, prompt: u64, new: u64, batch: u64) -> bool {
        engines::fits(self, prompt, new, batch)
    }

    /// Whether `batch` sequences of the scenario's length fit.
    pub fn fits_with(&self, batch: u64) -> bool {
        self.fits_sequences(self.scenario.prompt_tokens, self.scenario.max_new_tokens, batch)
    }

    /// The verdict for the scenario's own concurrency.
    pub fn verdict(&self) -> Verdict {
        engines::verdict(self, Depth::Full)
    }

    /// The verdict without its searches: `Fits { max_concurrency }` carries
    /// the scenario's own concurrency (a lower bound) and vLLM's refusal a
    /// `largest_context` of 0. For sweeps that only need "fits, and if not
    /// where": a chart cell costs one check instead of a search.
    pub fn verdict_shallow(&self) -> Verdict {
        engines::verdict(self, Depth::Shallow)
    }

    /// The most sequences of the scenario's length that fit.
    pub fn max_concurrency(&self) -> u64 {
        self.max_concurrency_at(self.scenario.prompt_tokens, self.scenario.max_new_tokens)
    }

    /// The most sequences of `prompt` + `new` tokens that fit.
    pub fn max_concurrency_at(&self, prompt: u64, new: u64) -> u64 {
        let seq = prompt.saturating_add(new);
        match self.scenario.engine {
            // Pre-allocated pools answer directly.
            Engine::Vllm(o) => engines::vllm::max_concurrency(self, o, seq),
            Engine::Sglang(o) => engines::sglang::max_concurrency(self, o, seq),
            _ => largest(MAX_CONCURRENCY, |b| self.fits_sequences(prompt, new, b)),
        }
    }

    /// The whole estimate.
    pub fn estimate(&self) -> Estimate {
        let s = &self.scenario;
        let model = self.model;
        let verdict = self.verdict();
        let per_gpu: Vec<GpuBudget> = (0..s.gpus.len())
            .map(|g| {
                let p = self.peak(g, s.concurrency);
                let cap = s.gpus[g].capacity_bytes;
                let total = p.total();
                let range = self.stage_range(self.stage(g));
                GpuBudget {
                    index: g,
                    name: s.gpus[g].name.clone(),
                    capacity_bytes: cap,
                    total_bytes: total,
                    weight_bytes: p.weights,
                    kv_cache_bytes: p.kv,
                    state_bytes: p.state,
                    activation_bytes: p.activations,
                    overhead_bytes: p.overhead,
                    free_bytes: cap.saturating_sub(total),
                    shortfall_bytes: total.saturating_sub(cap),
                    fits: total <= cap,
                    layers: [range.start, range.end],
                }
            })
            .collect();
        let sum = |f: fn(&GpuBudget) -> u64| per_gpu.iter().fold(0u64, |a, g| a.saturating_add(f(g)));
        // What sits in GPU memory: the sequences' cache (transformers), the
        // pre-allocated pool (vLLM, SGLang) or the n_ctx cache (llama.cpp).
        let kv_cache_bytes = sum(|g| g.kv_cache_bytes);
        let kv_demand_bytes = kv::sequence_bytes(&self.kv_layers, s.sequence_tokens(), None)
            .saturating_mul(s.concurrency)
            .saturating_mul(self.tp());
        let report = engines::report(self, verdict);
        let mut warnings = model.arch.warnings.clone();
        warnings.extend(explain::warnings(self, &per_gpu, verdict));
        let (num_gpu_blocks, kv_cache_tokens, max_concurrency) = match &report {
            Some(EngineReport::Vllm(r)) => (Some(r.num_gpu_blocks), Some(r.kv_cache_tokens), Some(r.max_concurrency)),
            _ => (None, None, None),
        };
        Estimate {
            model: model.name.clone(),
            family: model.arch.family,
            parameters: model.parameters(),
            active_parameters: model.active_parameters(),
            parameter_breakdown: ParamBreakdown::of(&model.layout),
            weight_format: s.weights,
            kv_dtype: s.kv_dtype,
            weight_bytes: self.weights.total,
            weight_bytes_source: self.weights.source,
            weights_source: self.weights.source,
            architecture_known: model.architecture_known(),
            checkpoint: model.checkpoint.as_ref().map(|c| CheckpointSummary::of(&c.layout)),
            kv_bytes_per_token: kv::bytes_per_token(&self.kv_layers).saturating_mul(self.tp()),
            kv_cache_bytes,
            kv_demand_bytes,
            state_bytes_per_sequence: state::sequence_bytes(&self.state_layers).saturating_mul(self.tp()),
            state_bytes: sum(|g| g.state_bytes),
            activation_bytes: sum(|g| g.activation_bytes),
            overhead_bytes: sum(|g| g.overhead_bytes),
            total_bytes: sum(|g| g.total_bytes),
            capacity_bytes: sum(|g| g.capacity_bytes),
            prompt_tokens: s.prompt_tokens,
            max_new_tokens: s.max_new_tokens,
            concurrency: s.concurrency,
            engine: s.engine.kind(),
            tp: self.tp(),
            pipeline_stages: s.stages(),
            fits: matches!(verdict, Verdict::Fits { .. }),
            verdict,
            terms: explain::terms(self, &per_gpu, kv_cache_bytes, kv_demand_bytes, report.as_ref()),
            device_map: device_map::for_estimate(self),
            speed: crate::speed::bounds(self),
            num_gpu_blocks,
            kv_cache_tokens,
            max_concurrency,
            engine_report: report,
            per_gpu,
            warnings,
        }
    }
}

/// The engine's state dtypes (see [`crate::state::StateRules`]).
fn state_rules(model: &Model, scenario: &Scenario, model_dtype_bytes: u64) -> StateRules {
    let text = &model.arch.text;
    match scenario.engine {
        Engine::Transformers(_) => StateRules::transformers(
            model_dtype_bytes,
            matches!(text.recurrent, Some(crate::arch::Recurrent::GatedDeltaNet { .. })),
        ),
        Engine::LlamaCpp(_) => StateRules::llamacpp(),
        Engine::Vllm(_) | Engine::Sglang(_) => {
            StateRules::vllm(model_dtype_bytes, text.extra.ssm_state_f32.then_some(4))
        }
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

/// One-call estimate.
pub fn estimate(model: &Model, scenario: Scenario) -> Estimate {
    Prepared::new(model, scenario).estimate()
}
