//! Model architectures read from a Hugging Face `config.json`.
//!
//! [`Architecture::from_config_json`] turns the raw config (any of the
//! supported families, or an unknown one through the generic fields with a
//! warning) into one normalised description; [`params`] lays its tensors out
//! layer by layer so the weight, KV and split calculations never look at JSON.

mod families;
pub mod fields;
pub mod params;
mod vision;

pub use fields::ConfigError;
pub use params::{Role, TensorGroup, TensorLayout};

use serde::{Deserialize, Serialize};

/// The families whose layouts Headroom knows. `Generic` is the fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Llama,
    Mllama,
    Mistral,
    Mixtral,
    Qwen2,
    Qwen2Moe,
    Qwen2Vl,
    Qwen3,
    Qwen3Moe,
    Gemma,
    Gemma2,
    Gemma3,
    Phi3,
    DeepseekV2,
    DeepseekV3,
    Gpt2,
    GptNeox,
    Falcon,
    Opt,
    Generic,
}

/// Storage type of a checkpoint's tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointDtype {
    F32,
    F16,
    Bf16,
    Fp8,
}

/// A `quantization_config` found in the checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum CheckpointQuant {
    Gptq { bits: u8, group_size: u32 },
    Awq { bits: u8, group_size: u32 },
    Fp8 { block: Option<u32> },
    BitsAndBytes4 { double_quant: bool, nf4: bool },
    BitsAndBytes8,
}

/// How a decoder layer attends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "window")]
pub enum LayerAttention {
    /// Attends to the whole context: its cache grows with every token.
    Full,
    /// Attends to the last `window` tokens: its cache stops there.
    Sliding(u64),
    /// Cross-attention to image tokens (Llama 3.2 Vision): no per-token cache.
    Cross,
}

/// What a layer's feed-forward block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ffn {
    Dense,
    Moe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerSpec {
    pub attention: LayerAttention,
    pub ffn: Ffn,
}

/// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mla {
    pub q_lora_rank: Option<u64>,
    pub kv_lora_rank: u64,
    pub qk_nope_head_dim: u64,
    pub qk_rope_head_dim: u64,
    pub v_head_dim: u64,
}

/// Attention projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum AttentionKind {
    /// MHA, GQA or MQA, told apart by `num_kv_heads`.
    Standard {
        qkv_bias: bool,
        o_bias: bool,
    },
    Mla(Mla),
}

/// Mixture-of-experts feed-forward blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moe {
    pub num_experts: u64,
    pub experts_per_token: u64,
    pub expert_intermediate_size: u64,
    /// Width of the always-on shared expert MLP (0 when there is none).
    pub shared_intermediate_size: u64,
    /// Qwen2-MoE gates its shared expert with a `hidden → 1` linear.
    pub shared_expert_gate: bool,
    /// DeepSeek-V3's `e_score_correction_bias` beside the router.
    pub router_bias: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NormKind {
    /// RMSNorm: a weight vector.
    Rms,
    /// LayerNorm: weight and bias.
    Layer,
}

/// The language model, normalised across families.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextModel {
    pub hidden_size: u64,
    pub vocab_size: u64,
    /// Rows of the input embedding when it differs from `vocab_size`
    /// (Llama 3.2 Vision adds 8 image tokens to the input table only).
    pub embedding_rows: u64,
    pub num_heads: u64,
    pub num_kv_heads: u64,
    /// Width of one query/key head.
    pub head_dim: u64,
    /// Width of one value head (equal to `head_dim` except in MLA).
    pub v_head_dim: u64,
    pub intermediate_size: u64,
    pub attention: AttentionKind,
    pub mlp_gated: bool,
    pub mlp_bias: bool,
    pub norm: NormKind,
    /// Norm vectors of `hidden_size` per layer (2 pre-norm, 4 in Gemma 2/3).
    pub norms_per_layer: u64,
    /// Per-head RMSNorm on queries and keys (Qwen3, Gemma 3).
    pub qk_norm: bool,
    pub final_norm: bool,
    pub moe: Option<Moe>,
    pub tie_word_embeddings: bool,
    /// Rows of a learned position table (GPT-2, OPT); 0 for rotary models.
    pub learned_positions: u64,
    /// OPT-350m projects embeddings from a narrower width.
    pub embed_proj_dim: Option<u64>,
    pub max_position_embeddings: Option<u64>,
    pub layers: Vec<LayerSpec>,
    /// The cache of every layer as a checkpoint's attention tensors give it
    /// (architectures no reader knows); `None`: from the fields above.
    pub cache_from_tensors: Option<Vec<LayerCache>>,
}

/// One layer's cached vectors per token, read from its attention tensors:
/// `kv_heads` keys of `key_dim` and values of `value_dim` (MLA: one latent of
/// `key_dim`, no values; 0 heads: a layer without a per-token cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerCache {
    pub kv_heads: u64,
    pub key_dim: u64,
    pub value_dim: u64,
}

impl TextModel {
    pub fn num_layers(&self) -> u64 {
        self.layers.len() as u64
    }
}

/// A vision encoder and its projector into the language model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisionTower {
    /// `siglip`, `mllama`, `qwen2_5_vl`, …
    pub kind: String,
    pub num_layers: u64,
    pub hidden_size: u64,
    /// Parameters of the encoder's linear layers (quantisable).
    pub linear_params: u64,
    /// Everything else: patch/position embeddings, norms, biases, gates.
    pub other_params: u64,
}

impl VisionTower {
    pub fn params(&self) -> u64 {
        self.linear_params.saturating_add(self.other_params)
    }
}

/// A model as the memory model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Architecture {
    pub family: Family,
    /// The config's own `model_type`.
    pub model_type: String,
    pub text: TextModel,
    pub vision: Option<VisionTower>,
    /// `torch_dtype` / `dtype` of the checkpoint.
    pub checkpoint_dtype: Option<CheckpointDtype>,
    pub quantization: Option<CheckpointQuant>,
    /// Assumptions made while reading the config.
    pub warnings: Vec<String>,
}

impl Architecture {
    /// Reads a `config.json`. Unknown keys are ignored; a missing or
    /// nonsensical required field is an error naming the field.
    pub fn from_config_json(text: &str) -> Result<Self, ConfigError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        let map = value.as_object().ok_or(ConfigError::NotAnObject)?;
        families::read(map)
    }

    /// The tensor layout (parameters by role and layer).
    pub fn layout(&self) -> TensorLayout {
        params::layout(self)
    }

    /// Total parameters, derived from the layout.
    pub fn parameters(&self) -> u64 {
        self.layout().total_params()
    }
}
