//! The estimate: for one model, weight format, KV dtype, engine, workload and
//! set of GPUs, the bytes each GPU needs (weights, KV cache, activations,
//! overhead), whether it fits, where it stops fitting, and the terms behind
//! every figure.
//!
//! This is the top of the core, and only puts things together: the
//! engine-free [`crate::plan`] computes weights per rank, KV and state per
//! layer and the split; [`crate::engines`] decides the budget and the
//! verdict; this module assembles their answers into one [`Estimate`]. The
//! front ends' names (`Scenario`, `GpuSlot`, the limits) are re-exported here.

mod verdict;

pub use crate::engines::{EnginePlan, Scenario, ScenarioError, ValidScenario};
pub use crate::plan::{
    CUDA_CONTEXT_BYTES, DEFAULT_GPU, GpuBudget, GpuPeak, GpuSlot, MAX_CONCURRENCY, MAX_GPUS, MAX_TOKENS, TP_COMM_BYTES,
    Verdict, WeightSource,
};
pub use verdict::verdict_text;

use serde::Serialize;

use crate::arch::{Family, TensorLayout, params::Category};
use crate::engines::{EngineKind, EngineReport, transformers::DeviceMap};
use crate::explain::Term;
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;
use crate::plan::terms;

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
        let by = layout.params_by_category();
        Self {
            embeddings: by[Category::Embeddings as usize],
            attention: by[Category::Attention as usize],
            mlp: by[Category::Mlp as usize],
            experts: by[Category::Experts as usize],
            norms_and_biases: by[Category::NormsAndBiases as usize],
            lm_head: by[Category::LmHead as usize],
            vision: by[Category::Vision as usize],
            other: by[Category::Other as usize],
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
    pub per_gpu: Vec<GpuPeak>,
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
    /// The context the model was trained to (`max_position_embeddings`),
    /// when the config says: a plan past it fits in memory, not in the
    /// model. The JSON says it in `warnings`.
    #[serde(skip)]
    pub trained_tokens: Option<u64>,
    /// Why the engine, by its rule set, does not load the weight format
    /// ([`crate::engines::Engine::refuses`]); the figures are as if it did.
    #[serde(skip)]
    pub engine_refuses: Option<&'static str>,
    /// Why the engine keeps no KV cache of the plan's dtype
    /// ([`crate::engines::Engine::kv_refusal`]); the figures are as if it did.
    #[serde(skip)]
    pub kv_refused: Option<String>,
    /// A setting the engine's release does not have
    /// ([`crate::engines::Engine::setting_refusal`]); the figures are as it runs.
    #[serde(skip)]
    pub setting_refused: Option<String>,
}

/// The whole estimate of a plan in its engine.
pub fn of(ep: &EnginePlan) -> Estimate {
    let p = &ep.plan;
    let s = &p.scenario;
    let model = p.model;
    let verdict = ep.verdict();
    let per_gpu = ep.peaks();
    let (report, engine) = ep.explain(verdict);
    let engine_warnings = ep.warnings(&per_gpu, verdict);
    let mut warnings = terms::model_warnings(p);
    warnings.extend(engine_warnings.setup);
    warnings.extend(terms::imbalance(&per_gpu));
    warnings.extend(engine_warnings.fit);
    // What sits in GPU memory: the sequences' cache (transformers), the
    // pre-allocated pool (vLLM, SGLang) or the n_ctx cache (llama.cpp).
    let kv_cache_bytes = GpuPeak::sum(&per_gpu, |g| g.budget.kv_cache_bytes);
    let (kv_formula, kv_basis) = engine.kv_cache;
    let mut all_terms = vec![terms::parameters(p), terms::weights(p), terms::kv_per_token(p)];
    all_terms.push(Term::bytes("KV cache", kv_cache_bytes, kv_formula, kv_basis));
    all_terms.extend(terms::state(p, &per_gpu, engine.state));
    let activation_bytes = GpuPeak::sum(&per_gpu, |g| g.budget.activation_bytes);
    all_terms.push(Term::bytes("activations", activation_bytes, engine.activations, crate::explain::Basis::Empirical));
    all_terms.push(terms::overhead(p, &per_gpu, &engine.overhead));
    all_terms.extend(engine.own);
    all_terms.push(terms::capacity(p));
    let (num_gpu_blocks, kv_cache_tokens, max_concurrency) =
        report.as_ref().map_or((None, None, None), EngineReport::vllm_figures);
    Estimate {
        model: model.name.clone(),
        family: model.arch.family,
        parameters: model.parameters(),
        active_parameters: model.active_parameters(),
        parameter_breakdown: ParamBreakdown::of(&model.layout),
        weight_format: s.weights,
        kv_dtype: s.kv_dtype,
        weight_bytes: p.weights.total,
        weight_bytes_source: p.weights.source,
        weights_source: p.weights.source,
        architecture_known: model.architecture_known(),
        checkpoint: model.checkpoint.as_ref().map(|c| CheckpointSummary::of(&c.layout)),
        kv_bytes_per_token: p.kv_bytes_per_token(),
        kv_cache_bytes,
        kv_demand_bytes: p.kv_demand_bytes(),
        state_bytes_per_sequence: p.state_bytes_per_sequence(),
        state_bytes: GpuPeak::sum(&per_gpu, |g| g.budget.state_bytes),
        activation_bytes,
        overhead_bytes: GpuPeak::sum(&per_gpu, |g| g.budget.overhead_bytes),
        total_bytes: GpuPeak::sum(&per_gpu, |g| g.total_bytes),
        capacity_bytes: GpuPeak::sum(&per_gpu, |g| g.capacity_bytes),
        prompt_tokens: s.prompt_tokens,
        max_new_tokens: s.max_new_tokens,
        concurrency: s.concurrency,
        engine: s.engine.kind(),
        tp: p.tp(),
        pipeline_stages: s.stages(),
        fits: matches!(verdict, Verdict::Fits { .. }),
        verdict,
        terms: all_terms,
        device_map: ep.device_map(),
        speed: crate::speed::bounds(p),
        num_gpu_blocks,
        kv_cache_tokens,
        max_concurrency,
        engine_report: report,
        per_gpu,
        warnings,
        trained_tokens: model.arch.text.max_position_embeddings,
        engine_refuses: s.engine.refuses(s.weights),
        kv_refused: s.engine.kv_refusal(s.kv_dtype, s.weights),
        setting_refused: s.engine.setting_refusal(),
    }
}

impl Estimate {
    /// The trained context, when each request (prompt + new tokens) goes
    /// past it.
    pub fn beyond_training(&self) -> Option<u64> {
        self.trained_tokens.filter(|&t| self.prompt_tokens.saturating_add(self.max_new_tokens) > t)
    }
}

/// One-call estimate.
pub fn estimate(model: &Model, scenario: ValidScenario) -> Estimate {
    of(&EnginePlan::new(model, scenario))
}
