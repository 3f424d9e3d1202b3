//! A model ready for estimates: its architecture, its tensor layout (computed
//! once) and, when known, the exact bytes of its checkpoint.

use crate::arch::fields::MAX_LAYERS;
use crate::arch::{Architecture, ConfigError, Family, TensorLayout};
use crate::catalog::{ModelPreset, model_preset};
use crate::checkpoint::layout::{ExactLayout, Hints};
use crate::checkpoint::{Checkpoint, CheckpointError, infer};
use crate::formats::{GgufType, LayoutContext, WeightFormat};

/// Serialisable so that the page's reader bundle can hand a model read from
/// checkpoint headers to the first load (postcard, as the presets travel).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Every tensor of the checkpoint by role and layer, when its headers
    /// were read: the weights in its own format are then exact.
    pub checkpoint: Option<CheckpointWeights>,
    /// The format `checkpoint_bytes` are of, when a source other than the
    /// headers names it (a llama.cpp log's file type): the format the model
    /// loads in by default, whose estimate the bytes replace.
    #[serde(default)]
    pub stored_format: Option<WeightFormat>,
    /// A GGUF of an MLA model (DeepSeek V2/V3, Kimi K2) converted before
    /// llama.cpp had MLA (#12801, b5137): its metadata has `kv_lora_rank`
    /// but no `key_length_mla`, its layers one unsplit `attn_kv_b`. Every
    /// mainline build runs it as multi-head attention and caches each
    /// head's K and V (`llama_hparams::is_mla`, src/llama-hparams.cpp).
    #[serde(default)]
    pub legacy_mla_gguf: bool,
}

/// A checkpoint's exact weights and the format it is stored in.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CheckpointWeights {
    pub layout: ExactLayout,
    /// The format the stored tensors correspond to (what-if formats are
    /// estimated from the parameters; this one is exact).
    pub format: WeightFormat,
    /// A GGUF checkpoint's tensors by name and exact bytes (empty for
    /// safetensors): llama.cpp's `-ot` patterns match these names.
    pub gguf_tensors: Vec<NamedTensor>,
}

/// One tensor of a GGUF checkpoint, classified once where it is read (the
/// reader bundle hands it to the page inside a `Model`, postcard-encoded).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NamedTensor {
    pub name: String,
    pub role: crate::arch::Role,
    pub layer: Option<u32>,
    pub bytes: u64,
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
        Self {
            name: name.into(),
            repo: None,
            arch,
            layout,
            checkpoint_bytes: None,
            checkpoint: None,
            stored_format: None,
            legacy_mla_gguf: false,
        }
    }

    /// A model from its checkpoint's headers and, when there is one, its
    /// `config.json`. A config of a known family gives the architecture (its
    /// KV cache, its defaults); otherwise the tensors do. Weights and
    /// parameters are the checkpoint's own in every case.
    pub fn from_checkpoint(
        name: impl Into<String>,
        config: Option<&str>,
        checkpoint: &Checkpoint,
    ) -> Result<Self, CheckpointError> {
        let config_value: Option<serde_json::Value> = config.and_then(|c| serde_json::from_str(c).ok());
        let hints = hints(config_value.as_ref(), checkpoint)?;
        let mut layout = ExactLayout::of(checkpoint, hints);
        let mut arch = infer::architecture(config, checkpoint, &layout)?;
        // A GGUF holds Llama 3's RoPE scaling as a tensor, whatever a config
        // says (`Extras::rope_freqs`).
        if checkpoint.gguf.is_some() {
            arch.text.extra.rope_freqs = checkpoint.tensors.iter().any(|t| t.name == "rope_freqs.weight");
        }
        let layers = arch.text.num_layers() as u32;
        if layers != layout.num_layers {
            layout = ExactLayout::of(checkpoint, Hints { num_layers: Some(layers), ..hints });
        }
        let format = match &checkpoint.gguf {
            Some(g) => gguf_format(g.get_u64("general.file_type"), &layout, &mut arch.warnings),
            None => WeightFormat::from_checkpoint(arch.checkpoint_dtype, arch.quantization),
        };
        let mtp = layout.bytes_of(crate::arch::Role::Mtp);
        if mtp > 0 {
            arch.warnings.push(format!(
                "the checkpoint holds a multi-token-prediction head ({}) that engines load only for speculative \
                 decoding: it is counted in the parameters but not in the GPU weights",
                crate::units::format_bytes(mtp, crate::units::UnitSystem::Binary)
            ));
        }
        if layout.unclassified_count > 0 {
            arch.warnings.push(format!(
                "{} tensors have names no rule classifies (e.g. `{}`): their bytes are counted as \"other\", placed \
                 with the first layers and not sharded",
                layout.unclassified_count,
                layout.unclassified.first().map_or("", String::as_str)
            ));
        }
        let legacy_mla_gguf = checkpoint.gguf.as_ref().is_some_and(infer::gguf_without_mla);
        if let (true, crate::arch::AttentionKind::Mla(m)) = (legacy_mla_gguf, arch.text.attention) {
            let head = m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim).saturating_add(m.v_head_dim);
            let latent = m.kv_lora_rank.saturating_add(m.qk_rope_head_dim).max(1);
            arch.warnings.push(format!(
                "this GGUF was converted before llama.cpp had MLA (b5137; no `key_length_mla`): mainline llama.cpp \
                 caches every head's K and V, {}× the latent a GGUF converted since caches (ik_llama.cpp derives \
                 the split tensors at load and caches the latent)",
                arch.text.num_heads.saturating_mul(head) / latent
            ));
        }
        let mut model = Self::from_architecture(name, arch);
        model.legacy_mla_gguf = legacy_mla_gguf;
        model.layout = layout.tensor_layout();
        model.checkpoint_bytes = Some(layout.total_bytes());
        let gguf_tensors = match checkpoint.kind {
            crate::checkpoint::CheckpointKind::Gguf => checkpoint
                .tensors
                .iter()
                .map(|t| {
                    let c = crate::checkpoint::roles::classify(&t.name, Some(layout.num_layers));
                    NamedTensor { name: t.name.clone(), role: c.role, layer: c.layer, bytes: t.bytes }
                })
                .collect(),
            crate::checkpoint::CheckpointKind::Safetensors => Vec::new(),
        };
        model.checkpoint = Some(CheckpointWeights { layout, format, gguf_tensors });
        Ok(model)
    }

    /// Whether a family reader knows this architecture (else its layout comes
    /// from a checkpoint's tensors or a generic read of the config).
    pub fn architecture_known(&self) -> bool {
        self.arch.family != Family::Generic
    }

    pub fn from_preset(preset: &ModelPreset) -> Result<Self, ModelError> {
        let mut model = Self::from_config_json(preset.name, preset.config_json())
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

    /// The model stored in `format` (a log's file type names it), so its
    /// `checkpoint_bytes` are the bytes of that format.
    pub fn stored_as(mut self, format: Option<WeightFormat>) -> Self {
        self.stored_format = format;
        self
    }

    pub fn parameters(&self) -> u64 {
        self.layout.total_params()
    }

    /// The format the checkpoint loads in when the user does not choose one.
    pub fn default_format(&self) -> WeightFormat {
        if let Some(c) = &self.checkpoint {
            return c.format;
        }
        if let Some(f) = self.stored_format {
            return f;
        }
        WeightFormat::from_checkpoint(self.arch.checkpoint_dtype, self.arch.quantization)
    }

    pub fn layout_context(&self) -> LayoutContext {
        let t = &self.arch.text;
        let kept = self.arch.quant_kept;
        let num_layers = self.layout.num_layers;
        let grouped = t.num_heads > t.num_kv_heads;
        let family = self.arch.family;
        LayoutContext {
            num_layers,
            gqa_ratio: t.num_heads / t.num_kv_heads.max(1),
            experts: t.moe.as_ref().map_or(0, |m| m.num_experts),
            own_head: self.layout.groups.iter().any(|g| g.role == crate::arch::Role::LmHead),
            class_70b: num_layers == 80
                && match family {
                    Family::Llama | Family::Mistral => grouped,
                    Family::Qwen2 | Family::Qwen2Vl => true,
                    _ => false,
                },
            falcon: family == Family::Falcon,
            fused_qkv: matches!(family, Family::Phi3 | Family::Gpt2 | Family::GptNeox | Family::Falcon | Family::Bloom),
            kept: (!kept.is_empty()).then(|| (self.default_format(), kept)),
        }
    }

    /// Parameters that take part in one token's forward pass (all of them for
    /// dense models; the routed experts' share for MoE).
    pub fn active_parameters(&self) -> u64 {
        let t = &self.arch.text;
        let Some(moe) = t.moe else { return self.parameters() };
        self.layout.groups.iter().fold(0u64, |acc, g| {
            let p = match g.role {
                // The experts' biases too: gpt-oss's model card counts them so
                // (5.13B active of 120b, 3.61B of 20b, less the embedding).
                crate::arch::Role::ExpertUp | crate::arch::Role::ExpertDown | crate::arch::Role::ExpertBias => {
                    g.params / moe.num_experts.max(1) * moe.experts_per_token.min(moe.num_experts)
                }
                _ => g.params,
            };
            acc.saturating_add(p)
        })
    }
}

/// Layers and packing the names need: `num_hidden_layers` (or GGUF
/// `block_count` less its `nextn_predict_layers`), and GPTQ/AWQ bits. A
/// layer count over [`MAX_LAYERS`] is refused, naming where it was read: it
/// would size the per-layer tables of the layout and the inference.
fn hints(config: Option<&serde_json::Value>, checkpoint: &Checkpoint) -> Result<Hints, CheckpointError> {
    let from_config = config.and_then(|c| {
        let text = c
            .as_object()
            .and_then(crate::arch::text_config)
            .and_then(|(t, key)| t.get("num_hidden_layers").and_then(serde_json::Value::as_u64).map(|n| (key, n)));
        match text {
            Some((key, n)) => Some((format!("config.json field `{key}.num_hidden_layers`"), n)),
            None => c
                .get("num_hidden_layers")
                .and_then(serde_json::Value::as_u64)
                .map(|n| ("config.json field `num_hidden_layers`".to_owned(), n)),
        }
    });
    let from_gguf = || {
        let g = checkpoint.gguf.as_ref()?;
        let blocks = g.arch_u64("block_count")?;
        let field = format!("GGUF metadata `{}.block_count`", g.architecture().unwrap_or("unknown"));
        Some((field, blocks.saturating_sub(g.arch_u64("nextn_predict_layers").unwrap_or(0))))
    };
    let num_layers = match from_config.or_else(from_gguf) {
        // Bounded, so the conversion holds.
        Some((field, n)) => Some(infer::bounded(|| field, n, MAX_LAYERS)? as u32),
        None => None,
    };
    let packed_bits = config
        .and_then(|c| c.get("quantization_config"))
        .and_then(|q| q.get("bits").or_else(|| q.get("w_bit")))
        .and_then(serde_json::Value::as_u64)
        .and_then(|b| u8::try_from(b).ok());
    Ok(Hints { num_layers, packed_bits })
}

/// The format a GGUF file is stored in: its `general.file_type` (llama.h
/// `enum llama_ftype`) when it is one of the mixes Headroom models, else the
/// modelled format nearest in bits per weight (named in a warning).
fn gguf_format(file_type: Option<u64>, layout: &ExactLayout, warnings: &mut Vec<String>) -> WeightFormat {
    let known = match file_type {
        Some(0) => Some(WeightFormat::F32),
        Some(32) => Some(WeightFormat::Bf16),
        Some(n) => GgufType::from_ftype(n).map(WeightFormat::Gguf),
        None => None,
    };
    if let Some(f) = known {
        return f;
    }
    let params = layout.total_params().max(1);
    let bpw = layout.total_bytes() as f64 * 8.0 / params as f64;
    let nearest = WeightFormat::CHOICES
        .iter()
        .copied()
        .filter(|f| matches!(f, WeightFormat::Gguf(_)))
        .min_by(|a, b| {
            let d = |f: &WeightFormat| (gguf_bpw(*f) - bpw).abs();
            d(a).total_cmp(&d(b))
        })
        .unwrap_or(WeightFormat::Gguf(GgufType::Q4KM));
    warnings.push(format!(
        "GGUF file type {} ({bpw:.2} bits per weight) is not one of the modelled mixes: what-if figures use {} as \
         the nearest; the weights shown for the file itself are its exact bytes",
        file_type.map_or("(unset)".into(), |t| t.to_string()),
        nearest.id()
    ));
    nearest
}

/// Nominal bits per weight of the modelled GGUF mixes (their base types).
fn gguf_bpw(f: WeightFormat) -> f64 {
    match f {
        WeightFormat::Gguf(t) => t.nominal_bpw(),
        _ => 16.0,
    }
}
