//! The link's state: every input of the page, with the defaults a bare link opens with.

use super::{DEFAULT_GPU, DEFAULT_HUB, DEFAULT_MODEL};
use crate::engines::Engine;
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::units::UnitSystem;

/// Where the model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// `model=`: a preset id from the catalog.
    Preset(String),
    /// `cfg=`: a pasted `config.json` (its compact JSON text).
    Config(String),
    /// `hf=`: a Hugging Face repository id, fetched by the page.
    Hub(String),
    /// `params=`: only a parameter count is known.
    Params(u64),
    /// `file=`: checkpoint files dropped on the page (the name of the first
    /// file). The files themselves never leave the browser: the link carries
    /// their name and, in `st=`, their weight bytes, and its recipient is
    /// asked to drop the same files.
    Local(String),
}

/// Which GPU.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GpuChoice {
    /// `gpu=`: a catalog id.
    Catalog(String),
    /// `mem=`: a custom memory size in bytes.
    Custom(u64),
}

/// Every input of the page.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkState {
    pub model: ModelSource,
    /// `st=`: exact checkpoint bytes (from a safetensors index), for `cfg=` models.
    pub checkpoint_bytes: Option<u64>,
    /// `w=`: `None` is the checkpoint's own format.
    pub weights: Option<WeightFormat>,
    /// `kv=`: `None` is the engine's own cache
    /// ([`crate::engines::EngineKind::default_kv_dtype`]), or the activation
    /// dtype with `kv_activation`.
    pub kv_dtype: Option<KvDtype>,
    /// `kv=act`, or a link before v3 that left `kv` out: no dtype chosen
    /// means the activation dtype, as it did then (it differs from the
    /// engine's own for llama.cpp and Ollama, whose cache is f16).
    pub kv_activation: bool,
    pub prompt_tokens: u64,
    pub max_new_tokens: u64,
    pub concurrency: u64,
    pub gpu: GpuChoice,
    pub gpu_count: u64,
    /// `mix=`: more GPUs after the `gpu_count` of `gpu` (mixed GPUs, in order).
    pub more_gpus: Vec<GpuChoice>,
    /// `tp=`: tensor-parallel degree; the pipeline stages are the GPUs ÷ `tp`.
    pub tp: u64,
    /// `e=` and the engine's knob keys (`gmu=`, `mml=`, `ngl=`, …).
    pub engine: Engine,
    /// `oom=`: a pasted out-of-memory error, only when the person shares it.
    pub oom: Option<String>,
    /// `u=gb` for decimal units.
    pub units: UnitSystem,
    /// `hub=`: a hub mirror, without a trailing slash.
    pub hub: Option<String>,
}

impl Default for LinkState {
    fn default() -> Self {
        Self {
            model: ModelSource::Preset(DEFAULT_MODEL.into()),
            checkpoint_bytes: None,
            weights: None,
            kv_dtype: None,
            kv_activation: false,
            prompt_tokens: 2048,
            max_new_tokens: 512,
            concurrency: 1,
            gpu: GpuChoice::Catalog(DEFAULT_GPU.into()),
            gpu_count: 1,
            more_gpus: Vec::new(),
            tp: 1,
            engine: Engine::default(),
            oom: None,
            units: UnitSystem::Binary,
            hub: None,
        }
    }
}

impl LinkState {
    /// The hub base URL in effect.
    pub fn hub_base(&self) -> &str {
        self.hub.as_deref().unwrap_or(DEFAULT_HUB)
    }

    /// Every GPU of the plan, in order: `gpu_count` × `gpu`, then `more_gpus`.
    pub fn gpu_choices(&self) -> Vec<GpuChoice> {
        let mut all = vec![self.gpu.clone(); usize::try_from(self.gpu_count).unwrap_or(1)];
        all.extend(self.more_gpus.iter().cloned());
        all
    }

    /// How many GPUs the plan has.
    pub fn total_gpus(&self) -> u64 {
        self.gpu_count.saturating_add(self.more_gpus.len() as u64)
    }
}

/// A decoded link: the state and what was ignored on the way.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decoded {
    pub state: LinkState,
    pub notices: Vec<String>,
    /// The link format version it was read as (`v=`, 1 when absent).
    pub version: super::version::LinkVersion,
}

/// From the state (what the person chose) to the scenario the estimator
/// takes, for a model already resolved: one reading for the page and the CLI
/// (`headroom watch --plan`).
impl LinkState {
    /// The weight format in effect: the chosen one, or the checkpoint's own.
    pub fn weights_for(&self, model: &crate::model::Model) -> WeightFormat {
        self.weights.unwrap_or_else(|| model.default_format())
    }

    /// The KV dtype in effect.
    pub fn kv_dtype_for(&self, model: &crate::model::Model) -> KvDtype {
        let weights = self.weights_for(model);
        self.kv_dtype.unwrap_or_else(|| match self.kv_activation {
            true => crate::estimate::Scenario::activation_kv_dtype(model, weights),
            false => self.engine.kind().default_kv_dtype(model, weights),
        })
    }

    /// The scenario, or why it cannot run (a tensor-parallel degree that
    /// does not divide the GPUs, an engine knob out of range).
    pub fn scenario_for(&self, model: &crate::model::Model) -> Result<crate::estimate::ValidScenario, String> {
        let s = crate::estimate::Scenario {
            weights: self.weights_for(model),
            kv_dtype: self.kv_dtype_for(model),
            gpus: self.gpu_choices().iter().map(GpuChoice::slot).collect(),
            prompt_tokens: self.prompt_tokens,
            max_new_tokens: self.max_new_tokens,
            concurrency: self.concurrency,
            engine: self.engine,
            tp: self.tp,
        };
        s.validate_for(model).map_err(|e| e.to_string())
    }
}

impl GpuChoice {
    /// The GPU slot this choice names (an unknown catalog id: a 0-byte slot
    /// the plan then refuses).
    pub fn slot(&self) -> crate::estimate::GpuSlot {
        use crate::estimate::GpuSlot;
        match self {
            GpuChoice::Catalog(id) => match crate::catalog::gpu(id) {
                Some(g) => GpuSlot::from_catalog(g),
                None => GpuSlot::custom(id.clone(), 0),
            },
            GpuChoice::Custom(bytes) => {
                GpuSlot::custom(format!("custom {}", crate::units::format_bytes(*bytes, Default::default())), *bytes)
            }
        }
    }
}

impl GpuChoice {
    /// A GPU an agent reports: its catalog entry when the agent simulates
    /// one of exactly that size, else its capacity in bytes.
    pub fn of_device(catalog_id: Option<&str>, total_bytes: u64) -> GpuChoice {
        match catalog_id.and_then(crate::catalog::gpu).filter(|g| g.memory_bytes == total_bytes) {
            Some(g) => GpuChoice::Catalog(g.id.clone()),
            None => GpuChoice::Custom(total_bytes),
        }
    }
}

impl LinkState {
    /// The plan a running launch describes (`startup::launch`): its engine
    /// with the flags it was started with (`startup::configured_engine`, the
    /// same reading as a start-up log's), its TP degree, KV dtype and weight
    /// format, on `gpus` GPUs like `gpu`; the workload stays the link's
    /// defaults. `model` is what the caller could resolve the model to.
    pub fn of_launch(launch: &crate::startup::Launch, model: ModelSource, gpu: GpuChoice, gpus: u64) -> LinkState {
        let c = &launch.config;
        let kind = launch.launcher.engine();
        let planned = super::version::new_engine(kind.kind());
        let (engine, _) = crate::startup::configured_engine(kind, c, planned);
        // vLLM and SGLang start one rank per GPU; a llama.cpp process spans
        // the GPUs it was seen on.
        let tp = c.tensor_parallel.unwrap_or(1).max(1);
        let gpu_count = match kind {
            crate::startup::LogEngine::Vllm | crate::startup::LogEngine::Sglang => {
                tp.saturating_mul(c.pipeline_parallel.unwrap_or(1).max(1))
            }
            crate::startup::LogEngine::LlamaCpp => gpus.max(1),
        };
        let quantised_copy = match &model {
            ModelSource::Hub(repo) | ModelSource::Local(repo) => crate::startup::names_a_quantised_copy(repo),
            ModelSource::Preset(_) | ModelSource::Config(_) | ModelSource::Params(_) => false,
        };
        let weights = c
            .quantization
            .as_deref()
            .and_then(crate::startup::quantization_format)
            .filter(|w| !quantised_copy && !matches!(w, WeightFormat::Awq { .. } | WeightFormat::Gptq { .. }));
        LinkState {
            model,
            // A method that quantizes at load (fp8, bitsandbytes) is the
            // plan's format; AWQ and GPTQ only load a checkpoint already in
            // theirs, whose own group size and bits the link keeps (none),
            // as it keeps a checkpoint's whose name says it is a quantised
            // copy (`-FP8`: its own blocks; `-bnb-8bit`: its own bits).
            weights,
            // `auto` is the model's dtype: the link's default.
            kv_dtype: c.kv_cache_dtype.as_deref().filter(|k| *k != "auto").and_then(|k| KvDtype::parse(k).ok()),
            gpu,
            gpu_count,
            tp: match kind {
                crate::startup::LogEngine::Vllm | crate::startup::LogEngine::Sglang => tp,
                crate::startup::LogEngine::LlamaCpp => 1,
            },
            engine,
            ..LinkState::default()
        }
    }
}
