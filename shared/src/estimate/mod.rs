//! The estimate: for one model, weight format, KV dtype, workload and set of
//! GPUs, the bytes each GPU needs (weights, KV cache, activations, overhead),
//! whether it fits, where it stops fitting, and the terms behind every figure.
//!
//! The engine modelled is Hugging Face transformers `generate` with SDPA
//! attention and a layer-wise `device_map` over several GPUs.

pub mod activations;
mod explain;
pub use explain::verdict_text;
pub mod split;

use serde::Serialize;

use crate::arch::{Family, TensorLayout, params::Category, params::Placement};
use crate::explain::Term;
use crate::formats::WeightFormat;
use crate::kv::{self, KvDtype, LayerKv};
use crate::model::Model;
use crate::units::MIB;

/// CUDA context of one PyTorch process on one GPU. Empirical: ~300 MB with
/// lazy module loading (CUDA ≥ 11.7, default since 12.2), per ptrblck in
/// pytorch/pytorch#107667; 287 MB measured in pytorch/pytorch#86509.
pub const CUDA_CONTEXT_BYTES: u64 = 300 * MIB;

/// Upper bounds on workload inputs: far beyond any real deployment, low
/// enough that no product of them can overflow.
pub const MAX_TOKENS: u64 = 1 << 30;
pub const MAX_CONCURRENCY: u64 = 1 << 20;
pub const MAX_GPUS: usize = 1024;

/// One GPU of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuSlot {
    pub name: String,
    pub capacity_bytes: u64,
}

/// What the user plans to run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub weights: WeightFormat,
    pub kv_dtype: KvDtype,
    pub gpus: Vec<GpuSlot>,
    pub prompt_tokens: u64,
    pub max_new_tokens: u64,
    pub concurrency: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    #[error("at least one GPU is needed")]
    NoGpu,
    #[error("at most {MAX_GPUS} GPUs are supported")]
    TooManyGpus,
    #[error("{0} must be between {1} and {2}")]
    OutOfRange(&'static str, u64, u64),
}

impl Default for Scenario {
    /// The page's and the CLI's starting point: one RTX 4090-sized GPU
    /// (24,564 MiB as the driver reports it), bf16 weights and cache, a
    /// 2,048-token prompt and 512 new tokens for one sequence.
    fn default() -> Self {
        Self {
            weights: WeightFormat::Bf16,
            kv_dtype: KvDtype::Bf16,
            gpus: vec![GpuSlot { name: "GeForce RTX 4090".into(), capacity_bytes: 24_564 * MIB }],
            prompt_tokens: 2048,
            max_new_tokens: 512,
            concurrency: 1,
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
        for g in &self.gpus {
            range("GPU memory", g.capacity_bytes, 1, u64::MAX / 4)?;
        }
        Ok(())
    }

    pub fn sequence_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.max_new_tokens)
    }
}

/// Where the weight figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightSource {
    /// Parameters by role × the format's bits per weight.
    Estimated,
    /// The checkpoint's own safetensors sizes.
    Checkpoint,
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
    pub kv_bytes_per_token: u64,
    /// KV cache of all sequences at their full length.
    pub kv_cache_bytes: u64,
    pub activation_bytes: u64,
    pub overhead_bytes: u64,
    pub total_bytes: u64,
    pub capacity_bytes: u64,
    pub prompt_tokens: u64,
    pub max_new_tokens: u64,
    pub concurrency: u64,
    pub fits: bool,
    pub verdict: Verdict,
    pub per_gpu: Vec<GpuBudget>,
    pub terms: Vec<Term>,
    pub warnings: Vec<String>,
}

/// Weight bytes by placement, in one format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightPlan {
    pub first: u64,
    pub per_layer: Vec<u64>,
    pub last: u64,
    pub total: u64,
    pub source: WeightSource,
}

impl WeightPlan {
    pub fn new(model: &Model, format: WeightFormat) -> Self {
        let ctx = model.layout_context();
        let mut plan = Self {
            first: 0,
            per_layer: vec![0; model.layout.num_layers as usize],
            last: 0,
            total: 0,
            source: WeightSource::Estimated,
        };
        for g in &model.layout.groups {
            let bytes = format.bpw(g, &ctx).bytes(g.params);
            match TensorLayout::placement(g) {
                Placement::First => plan.first = plan.first.saturating_add(bytes),
                Placement::Last => plan.last = plan.last.saturating_add(bytes),
                Placement::Layer(l) => {
                    if let Some(slot) = plan.per_layer.get_mut(l as usize) {
                        *slot = slot.saturating_add(bytes);
                    }
                }
            }
            plan.total = plan.total.saturating_add(bytes);
        }
        if let Some(exact) = model.checkpoint_bytes.filter(|_| format == model.default_format()) {
            plan.rescale(exact);
        }
        plan
    }

    /// Spreads the checkpoint's exact size over the layout in proportion to
    /// the estimate, so splits stay consistent with the exact total.
    fn rescale(&mut self, exact: u64) {
        let est = u128::from(self.total.max(1));
        let scale = |b: u64| u64::try_from(u128::from(b) * u128::from(exact) / est).unwrap_or(u64::MAX);
        self.first = scale(self.first);
        for b in &mut self.per_layer {
            *b = scale(*b);
        }
        let placed = self.per_layer.iter().fold(self.first, |a, b| a.saturating_add(*b));
        self.last = exact.saturating_sub(placed);
        self.total = exact;
        self.source = WeightSource::Checkpoint;
    }
}

/// The load of one GPU, split into what is fixed and what grows.
#[derive(Debug, Clone)]
struct GpuLoad<'a> {
    weights: u64,
    overhead: u64,
    kv: &'a [LayerKv],
    has_layers: bool,
    has_head: bool,
}

/// Everything an estimate needs that does not depend on the workload size,
/// computed once and reused by solvers and sweeps.
#[derive(Debug, Clone)]
pub struct Prepared<'m> {
    pub model: &'m Model,
    pub scenario: Scenario,
    pub weights: WeightPlan,
    pub kv_layers: Vec<LayerKv>,
    pub ranges: split::Ranges,
    act_bytes: u64,
}

impl<'m> Prepared<'m> {
    pub fn new(model: &'m Model, scenario: Scenario) -> Self {
        let weights = WeightPlan::new(model, scenario.weights);
        let kv_layers = kv::layer_costs(&model.arch.text, scenario.kv_dtype, 1);
        let n = scenario.gpus.len();
        let seq = scenario.sequence_tokens();
        let layer_costs: Vec<u64> = weights
            .per_layer
            .iter()
            .zip(&kv_layers)
            .map(|(w, k)| {
                w.saturating_add(
                    k.tokens_held(seq).saturating_mul(k.bytes_per_token).saturating_mul(scenario.concurrency),
                )
            })
            .collect();
        let mut fixed = vec![CUDA_CONTEXT_BYTES; n];
        if let Some(f) = fixed.first_mut() {
            *f = f.saturating_add(weights.first);
        }
        if let Some(l) = fixed.last_mut() {
            *l = l.saturating_add(weights.last);
        }
        let caps: Vec<u64> = scenario.gpus.iter().map(|g| g.capacity_bytes).collect();
        let ranges = split::balance(&layer_costs, &fixed, &caps);
        let act_bytes = if scenario.weights.is_fp32() { 4 } else { 2 };
        Self { model, scenario, weights, kv_layers, ranges, act_bytes }
    }

    fn load(&self, g: usize) -> GpuLoad<'_> {
        let n = self.scenario.gpus.len();
        let range = self.ranges.get(g).cloned().unwrap_or(0..0);
        let mut weights = self.weights.per_layer[range.clone()].iter().fold(0u64, |a, b| a.saturating_add(*b));
        if g == 0 {
            weights = weights.saturating_add(self.weights.first);
        }
        if g + 1 == n {
            weights = weights.saturating_add(self.weights.last);
        }
        GpuLoad {
            weights,
            overhead: CUDA_CONTEXT_BYTES,
            kv: &self.kv_layers[range.clone()],
            has_layers: !range.is_empty(),
            has_head: g + 1 == n,
        }
    }

    /// Activation peak on a GPU for `tokens` tokens in flight across `batch` sequences.
    fn activations(&self, load: &GpuLoad, tokens: u64, batch: u64) -> u64 {
        let text = &self.model.arch.text;
        let layer = if load.has_layers { activations::layer_peak(text, tokens, self.act_bytes) } else { 0 };
        let head = if load.has_head { activations::logits(text.vocab_size, batch) } else { 0 };
        layer.saturating_add(head)
    }

    /// Parts of GPU `g` with `batch` sequences of `seq` tokens, in prefill
    /// (all prompt tokens in flight) or decode (one token per sequence).
    fn parts(&self, g: usize, seq: u64, batch: u64, prefill: bool) -> Parts {
        let load = self.load(g);
        let kv = kv::sequence_bytes(load.kv, seq, None).saturating_mul(batch);
        let in_flight = if prefill { seq.saturating_mul(batch) } else { batch };
        let act = self.activations(&load, in_flight, batch);
        Parts { weights: load.weights, kv, activations: act, overhead: load.overhead }
    }

    /// The larger of the prefill and end-of-generation states of GPU `g`.
    fn peak(&self, g: usize, batch: u64) -> Parts {
        let s = &self.scenario;
        let prefill = self.parts(g, s.prompt_tokens, batch, true);
        let decode = self.parts(g, s.sequence_tokens(), batch, false);
        if prefill.total() > decode.total() { prefill } else { decode }
    }

    fn fits_all(&self, seq: u64, batch: u64, prefill: bool) -> Option<(usize, u64)> {
        (0..self.scenario.gpus.len()).find_map(|g| {
            let total = self.parts(g, seq, batch, prefill).total();
            let cap = self.scenario.gpus[g].capacity_bytes;
            (total > cap).then(|| (g, total - cap))
        })
    }

    /// Whether `batch` sequences fit through prefill and to the last token.
    pub fn fits_with(&self, batch: u64) -> bool {
        let s = &self.scenario;
        self.fits_all(s.prompt_tokens, batch, true).is_none()
            && self.fits_all(s.sequence_tokens(), batch, false).is_none()
    }

    /// The verdict for the scenario's own concurrency.
    pub fn verdict(&self) -> Verdict {
        let s = &self.scenario;
        let b = s.concurrency;
        for g in 0..s.gpus.len() {
            let load = self.load(g);
            let fixed = load.weights.saturating_add(load.overhead);
            if fixed > s.gpus[g].capacity_bytes {
                return Verdict::DoesNotFitAtLoad { gpu: g, shortfall_bytes: fixed - s.gpus[g].capacity_bytes };
            }
        }
        if let Some((gpu, shortfall_bytes)) = self.fits_all(s.prompt_tokens, b, true) {
            return Verdict::RunsOutInPrefill { gpu, shortfall_bytes };
        }
        if let Some(gpu_at_end) = self.fits_all(s.sequence_tokens(), b, false).map(|(g, _)| g) {
            // Memory grows with the sequence: find the first token that does not fit.
            let (mut lo, mut hi) = (s.prompt_tokens, s.sequence_tokens());
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if self.fits_all(mid, b, false).is_some() { hi = mid } else { lo = mid }
            }
            let gpu = self.fits_all(hi, b, false).map_or(gpu_at_end, |(g, _)| g);
            return Verdict::RunsOutAtToken { gpu, token: hi, generated: hi - s.prompt_tokens };
        }
        Verdict::Fits { max_concurrency: self.max_concurrency() }
    }

    /// The most sequences of the scenario's length that fit.
    pub fn max_concurrency(&self) -> u64 {
        if !self.fits_with(1) {
            return 0;
        }
        let mut hi = 2;
        while hi < MAX_CONCURRENCY && self.fits_with(hi) {
            hi = hi.saturating_mul(2);
        }
        let mut lo = hi / 2;
        if hi >= MAX_CONCURRENCY && self.fits_with(MAX_CONCURRENCY) {
            return MAX_CONCURRENCY;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.fits_with(mid) { lo = mid } else { hi = mid }
        }
        lo
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
                let range = self.ranges.get(g).cloned().unwrap_or(0..0);
                GpuBudget {
                    index: g,
                    name: s.gpus[g].name.clone(),
                    capacity_bytes: cap,
                    total_bytes: total,
                    weight_bytes: p.weights,
                    kv_cache_bytes: p.kv,
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
        let kv_cache_bytes =
            kv::sequence_bytes(&self.kv_layers, s.sequence_tokens(), None).saturating_mul(s.concurrency);
        let mut warnings = model.arch.warnings.clone();
        warnings.extend(explain::warnings(self));
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
            kv_bytes_per_token: kv::bytes_per_token(&self.kv_layers),
            kv_cache_bytes,
            activation_bytes: sum(|g| g.activation_bytes),
            overhead_bytes: sum(|g| g.overhead_bytes),
            total_bytes: sum(|g| g.total_bytes),
            capacity_bytes: sum(|g| g.capacity_bytes),
            prompt_tokens: s.prompt_tokens,
            max_new_tokens: s.max_new_tokens,
            concurrency: s.concurrency,
            fits: matches!(verdict, Verdict::Fits { .. }),
            verdict,
            terms: explain::terms(self, &per_gpu, kv_cache_bytes),
            per_gpu,
            warnings,
        }
    }

    pub(crate) fn act_bytes(&self) -> u64 {
        self.act_bytes
    }
}

#[derive(Debug, Clone, Copy)]
struct Parts {
    weights: u64,
    kv: u64,
    activations: u64,
    overhead: u64,
}

impl Parts {
    fn total(&self) -> u64 {
        self.weights.saturating_add(self.kv).saturating_add(self.activations).saturating_add(self.overhead)
    }
}

/// One-call estimate.
pub fn estimate(model: &Model, scenario: Scenario) -> Estimate {
    Prepared::new(model, scenario).estimate()
}
