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
    /// `kv=`: `None` is the activation dtype.
    pub kv_dtype: Option<KvDtype>,
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
        self.kv_dtype.unwrap_or_else(|| crate::estimate::Scenario::default_kv_dtype(model, self.weights_for(model)))
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
