//! A model ready for estimates: its architecture, its tensor layout (computed
//! once) and, when known, the exact bytes of its checkpoint.

use crate::arch::{Architecture, ConfigError, TensorLayout};
use crate::catalog::{ModelPreset, model_preset};
use crate::formats::{LayoutContext, WeightFormat};

#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// A display name (preset name, repo id or "pasted config").
    pub name: String,
    /// The Hugging Face repository, when known (for code snippets).
    pub repo: Option<String>,
    pub arch: Architecture,
    pub layout: TensorLayout,
    /// Exact bytes of the checkpoint's weights (safetensors header or index),
    /// which beat the estimate for the checkpoint's own format.
    pub checkpoint_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("unknown model preset `{0}` (see `headroom models`)")]
    UnknownPreset(String),
    #[error("preset `{id}` has a broken config: {error}")]
    BrokenPreset { id: String, error: ConfigError },
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl Model {
    pub fn from_config_json(name: impl Into<String>, text: &str) -> Result<Self, ConfigError> {
        let arch = Architecture::from_config_json(text)?;
        Ok(Self::from_architecture(name, arch))
    }

    pub fn from_architecture(name: impl Into<String>, arch: Architecture) -> Self {
        let layout = arch.layout();
        Self { name: name.into(), repo: None, arch, layout, checkpoint_bytes: None }
    }

    pub fn from_preset(preset: &ModelPreset) -> Result<Self, ModelError> {
        let mut model = Self::from_config_json(preset.name, preset.config_json)
            .map_err(|error| ModelError::BrokenPreset { id: preset.id.into(), error })?;
        model.repo = Some(preset.hf_repo.into());
        Ok(model)
    }

    pub fn preset(id: &str) -> Result<Self, ModelError> {
        let preset = model_preset(id).ok_or_else(|| ModelError::UnknownPreset(id.into()))?;
        Self::from_preset(preset)
    }

    pub fn with_checkpoint_bytes(mut self, bytes: Option<u64>) -> Self {
        self.checkpoint_bytes = bytes;
        self
    }

    pub fn parameters(&self) -> u64 {
        self.layout.total_params()
    }

    /// The format the checkpoint loads in when the user does not choose one.
    pub fn default_format(&self) -> WeightFormat {
        WeightFormat::from_checkpoint(self.arch.checkpoint_dtype, self.arch.quantization)
    }

    pub fn layout_context(&self) -> LayoutContext {
        let t = &self.arch.text;
        LayoutContext { num_layers: self.layout.num_layers, gqa_ratio: t.num_heads / t.num_kv_heads.max(1) }
    }

    /// Parameters that take part in one token's forward pass (all of them for
    /// dense models; the routed experts' share for MoE).
    pub fn active_parameters(&self) -> u64 {
        let t = &self.arch.text;
        let Some(moe) = t.moe else { return self.parameters() };
        self.layout.groups.iter().fold(0u64, |acc, g| {
            let p = match g.role {
                crate::arch::Role::ExpertUp | crate::arch::Role::ExpertDown => {
                    g.params / moe.num_experts.max(1) * moe.experts_per_token.min(moe.num_experts)
                }
                _ => g.params,
            };
            acc.saturating_add(p)
        })
    }
}
