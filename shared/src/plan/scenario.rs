//! What the user plans to run, and its validation: a [`Scenario`] becomes a
//! [`ValidScenario`] once, at the edge (CLI flags, URL keys), and only a
//! `ValidScenario` can make a [`super::Plan`] ("parse, don't validate").
//!
//! The scenario is generic over the engine and its knobs (`E`): this layer
//! names no engine; `crate::engines` fills `E` and answers the checks that
//! are the engine's own ([`super::EngineRules`]).

use serde::Serialize;

use crate::catalog::{Gpu, GpuVendor};
use crate::kv::KvDtype;
use crate::model::Model;
use crate::units::MIB;

use super::EngineRules;
use crate::formats::WeightFormat;

/// Upper bounds on workload inputs: far beyond any real deployment, low
/// enough that no product of them can overflow.
pub const MAX_TOKENS: u64 = 1 << 30;
pub const MAX_CONCURRENCY: u64 = 1 << 20;
pub const MAX_GPUS: usize = 1024;

/// The catalog id of the default GPU (the CLI's `--gpu` default too).
pub const DEFAULT_GPU: &str = "rtx-4090";

/// One GPU of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuSlot {
    pub name: String,
    pub capacity_bytes: u64,
    /// What CUDA reports as the device's total (`cudaMemGetInfo`): the
    /// capacity less the driver's reserve (`Gpu::reserved_mib`). vLLM and
    /// SGLang size their budgets from it. A GPU known only by its size
    /// has it equal to the capacity.
    pub cuda_total_bytes: u64,
    /// Peak memory bandwidth (GB/s), when known: for speed bounds.
    pub bandwidth_gb_s: Option<f64>,
    /// Peak dense bf16 TFLOP/s, when known: for speed bounds.
    pub bf16_tflops: Option<f64>,
    /// Unified memory the GPU shares with the host (`Gpu::unified_bytes`):
    /// what the plan keeps in host memory comes out of it too.
    pub unified_bytes: Option<u64>,
    /// Who makes it, for a catalog GPU: on Apple silicon only the engines
    /// with a Metal backend run (`GpuVendor::runs_cuda_or_rocm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor: Option<GpuVendor>,
    /// A catalog NVIDIA GPU's compute capability as vLLM compares it
    /// (`Gpu::capability`, 8.9 → 89): which quantisation kernels run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<u32>,
}

impl GpuSlot {
    /// A GPU known only by its memory size.
    pub fn custom(name: impl Into<String>, capacity_bytes: u64) -> Self {
        Self {
            name: name.into(),
            capacity_bytes,
            cuda_total_bytes: capacity_bytes,
            bandwidth_gb_s: None,
            bf16_tflops: None,
            unified_bytes: None,
            vendor: None,
            compute_capability: None,
        }
    }

    pub fn from_catalog(gpu: &Gpu) -> Self {
        Self {
            name: gpu.name.clone(),
            capacity_bytes: gpu.memory_bytes,
            cuda_total_bytes: gpu.cuda_total_bytes(),
            bandwidth_gb_s: Some(gpu.bandwidth_gb_s),
            bf16_tflops: Some(gpu.bf16_dense_tflops),
            unified_bytes: gpu.unified_bytes,
            vendor: Some(gpu.vendor),
            compute_capability: gpu.capability(),
        }
    }

    /// What the GPU's runtime holds before any buffer: the CUDA (or HIP)
    /// context, or nothing on Apple silicon, where Metal's free memory is the
    /// working-set limit less this process's buffers (`currentAllocatedSize`,
    /// ggml/src/ggml-metal/ggml-metal-device.m) and no context is counted.
    pub fn context_bytes(&self) -> u64 {
        if self.vendor == Some(GpuVendor::Apple) { 0 } else { super::CUDA_CONTEXT_BYTES }
    }
}

/// What the user plans to run, in engine `E` (`crate::engines::Engine`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario<E> {
    pub weights: WeightFormat,
    pub kv_dtype: KvDtype,
    /// Every GPU, in order. With `tp` > 1, consecutive groups of `tp` GPUs
    /// form one pipeline stage; the number of stages is `gpus.len() / tp`.
    pub gpus: Vec<GpuSlot>,
    pub prompt_tokens: u64,
    pub max_new_tokens: u64,
    pub concurrency: u64,
    pub engine: E,
    /// Tensor-parallel degree.
    pub tp: u64,
}

/// Why a scenario cannot be planned; `R` is the engine's refusal of a split
/// (`crate::engines::parallel::SplitError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError<R> {
    #[error("at least one GPU is needed")]
    NoGpu,
    #[error("at most {MAX_GPUS} GPUs are supported")]
    TooManyGpus,
    #[error("{0} must be between {1} and {2}")]
    OutOfRange(&'static str, u64, u64),
    #[error("{gpus} GPUs cannot be split into tensor-parallel groups of {tp}")]
    TpDoesNotDivide { gpus: usize, tp: u64 },
    #[error(
        "{gpus} GPU(s) cannot be split into {replicas} data-parallel replicas of tensor-parallel groups of {tp}: \
         use a multiple of {} GPUs",
        .tp.saturating_mul(*.replicas)
    )]
    DpDoesNotDivide { gpus: usize, tp: u64, replicas: u64 },
    /// An engine knob out of its range, in the engine's words.
    #[error("{0}")]
    Engine(String),
    /// A split the engine refuses for this model.
    #[error(transparent)]
    Split(R),
}

impl<E: Default> Default for Scenario<E> {
    /// The page's and the CLI's starting point: the catalog's RTX 4090, bf16
    /// weights and cache, a 2,048-token prompt and 512 new tokens for one
    /// sequence, in the default engine.
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
            engine: E::default(),
            tp: 1,
        }
    }
}

impl<E> Scenario<E> {
    /// The activation dtype's KV cache, which transformers, vLLM
    /// (`kv_cache_dtype=auto`) and SGLang keep when none is asked for: fp32
    /// for fp32 weights, fp16 for fp16 checkpoints, bf16 otherwise. An
    /// engine's own default is [`crate::engines::EngineKind::default_kv_dtype`].
    pub fn activation_kv_dtype(model: &Model, weights: WeightFormat) -> KvDtype {
        match (weights, model.arch.checkpoint_dtype) {
            (WeightFormat::F32, _) => KvDtype::F32,
            (WeightFormat::F16, _) | (_, Some(crate::arch::CheckpointDtype::F16)) => KvDtype::F16,
            _ => KvDtype::Bf16,
        }
    }

    pub fn sequence_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.max_new_tokens)
    }
}

impl<E: EngineRules> Scenario<E> {
    /// Pipeline stages (groups of `tp` GPUs that each hold a run of layers)
    /// in one data-parallel replica.
    pub fn stages(&self) -> usize {
        let replica = self.tp.max(1).saturating_mul(self.engine.replicas().max(1));
        (self.gpus.len() / replica as usize).max(1)
    }

    /// The bounds that keep every figure meaningful, and the engine's own
    /// checks of its knobs: what a plan needs.
    pub fn validate(self) -> Result<ValidScenario<E>, ScenarioError<E::Refusal>> {
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
        let replicas = self.engine.replicas().max(1);
        if !(self.gpus.len() as u64).is_multiple_of(self.tp.saturating_mul(replicas)) {
            return Err(ScenarioError::DpDoesNotDivide { gpus: self.gpus.len(), tp: self.tp, replicas });
        }
        for g in &self.gpus {
            range("GPU memory", g.capacity_bytes, 1, u64::MAX / 4)?;
        }
        E::check_knobs(&self).map_err(ScenarioError::Engine)?;
        Ok(ValidScenario(self))
    }

    /// [`Scenario::validate`], then the checks that need the model: the
    /// splits its engine would refuse. The check every front end runs.
    pub fn validate_for(self, model: &Model) -> Result<ValidScenario<E>, ScenarioError<E::Refusal>> {
        let valid = self.validate()?;
        E::check_split(&valid, &model.arch.text).map_err(ScenarioError::Split)?;
        Ok(valid)
    }
}

/// A scenario that passed [`Scenario::validate`]: the only input a plan
/// takes. Read it as a [`Scenario`]; change it by going back to one
/// ([`ValidScenario::into_inner`]) and validating again, or through the
/// changes that keep it valid ([`ValidScenario::with_workload`]).
///
/// Nothing else makes one (the field is private):
///
/// ```compile_fail,E0423
/// let unchecked = shared::estimate::Scenario { concurrency: 0, ..Default::default() };
/// let _ = shared::plan::ValidScenario(unchecked);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct ValidScenario<E>(Scenario<E>);

impl<E: Clone> ValidScenario<E> {
    pub fn into_inner(self) -> Scenario<E> {
        self.0
    }

    /// The same plan with another workload, each figure held to its bounds
    /// (so the result is valid too): for sweeps over lengths and batches.
    pub fn with_workload(&self, prompt_tokens: u64, max_new_tokens: u64, concurrency: u64) -> Self {
        Self(Scenario {
            prompt_tokens: prompt_tokens.min(MAX_TOKENS),
            max_new_tokens: max_new_tokens.min(MAX_TOKENS),
            concurrency: concurrency.clamp(1, MAX_CONCURRENCY),
            ..self.0.clone()
        })
    }

    /// The same plan with other weight and cache dtypes (no check depends
    /// on them): for sweeps over formats.
    pub fn with_dtypes(&self, weights: WeightFormat, kv_dtype: KvDtype) -> Self {
        Self(Scenario { weights, kv_dtype, ..self.0.clone() })
    }
}

impl<E> std::ops::Deref for ValidScenario<E> {
    type Target = Scenario<E>;

    fn deref(&self) -> &Scenario<E> {
        &self.0
    }
}
