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

pub(crate) use families::text_config;
pub use fields::ConfigError;
pub use params::{KeptRoles, Role, TensorGroup, TensorLayout};

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
    /// Phi-1/1.5/2 (`phi`): parallel attention and MLP under one LayerNorm, biases.
    Phi,
    Phi3,
    DeepseekV2,
    DeepseekV3,
    /// DeepSeek-V3.2: MLA with the DeepSeek-sparse-attention indexer.
    DeepseekV32,
    /// GLM-5 (`glm_moe_dsa`): the same attention at GLM's shapes.
    GlmMoeDsa,
    /// DeepSeek-V4 (`deepseek_v4`): compressed sparse and heavily compressed
    /// attention beside a sliding window, hyper-connections, hash-routed
    /// first layers.
    DeepseekV4,
    Gpt2,
    GptNeox,
    Falcon,
    Opt,
    // The 2025–2026 generation (`families/moe.rs`, `dense.rs`, `hybrid.rs`).
    GptOss,
    Llama4,
    Glm4Moe,
    MinimaxM2,
    Phimoe,
    GraniteMoe,
    Smollm3,
    Olmo2,
    Glm4,
    Cohere2,
    Starcoder2,
    Granite,
    Exaone4,
    Bloom,
    Qwen3Next,
    Qwen35,
    Qwen35Moe,
    NemotronH,
    GraniteMoeHybrid,
    Lfm2,
    /// MiMo-V2-Flash: sliding layers with their own KV heads and sinks.
    MimoV2Flash,
    /// Falcon-H1: attention and Mamba-2 side by side in every layer.
    FalconH1,
    /// Gemma 4: per-layer input embeddings, wider global layers, shared KV.
    Gemma4,
    /// Jamba: Mamba (1) layers with attention every 8th and MoE every 2nd.
    Jamba,
    /// Gemma 3n: AltUp streams, LAuReL blocks, per-layer inputs, shared KV.
    Gemma3n,
    // The late-2026 additions (transformers 5.25).
    /// OLMo 3: OLMo 2's layers, three sliding layers then a global one.
    Olmo3,
    /// Ministral 3: Mistral's layers without a default window.
    Ministral3,
    /// Mistral 4 (`mistral4`): DeepSeek-V3's latent attention and experts.
    Mistral4,
    /// GLM-4.7-Flash (`glm4_moe_lite`): DeepSeek-V3's shapes at GLM's sizes.
    Glm4MoeLite,
    /// OLMoE: OLMo's whole-width q/k norms, every layer of experts.
    Olmoe,
    /// ERNIE 4.5 dense (`ernie4_5`): Llama layers, optional biases, tied head.
    Ernie45,
    /// ERNIE 4.5 MoE: shared experts, experts from `moe_layer_start_index`.
    Ernie45Moe,
    /// dots.llm1 (`dots1`): DeepSeek-V3's routing over standard attention.
    Dots1,
    /// Seed-OSS: Llama layers with q/k/v biases.
    SeedOss,
    /// Arcee AFM: Llama layers with a plain (ReLU²) MLP.
    Arcee,
    /// EXAONE MoE: per-head q/k norms, sliding layers, shared experts.
    ExaoneMoe,
    /// Hunyuan dense (`hunyuan_v1_dense`): Llama layers with per-head q/k norms.
    HunyuanDense,
    /// Hunyuan MoE (`hunyuan_v1_moe`): every layer experts beside a shared MLP.
    HunyuanMoe,
    /// LFM2-MoE: LFM2's short convolutions with experts after the first layers.
    Lfm2Moe,
    /// Apertus: per-head q/k norms, a plain MLP with a learned xIELU.
    Apertus,
    /// Command R / R+ (`cohere`): Cohere2's parallel layer without windows.
    Cohere,
    /// Nemotron-4 and Minitron (`nemotron`): LayerNorms, a plain ReLU² MLP.
    Nemotron,
    /// MiniCPM3: dense layers with DeepSeek's latent attention.
    MiniCpm3,
    /// EXAONE 3.x (`exaone`): Llama layers under EXAONE's own key names.
    Exaone,
    /// InternLM2 / 2.5 (`internlm2`, remote code; InternVL 1.5 – 2.5's
    /// language model): Llama layers with a fused `wqkv`, biased with `bias`.
    InternLm2,
    /// Kimi-Linear (`kimi_linear`, remote code; vLLM 0.34 `models/kimi_k3`):
    /// Kimi delta attention layers beside DeepSeek's latent attention, MoE.
    KimiLinear,
    Generic,
}

impl Family {
    /// Families whose reader interprets `layer_types` entries beyond full
    /// and sliding attention itself.
    pub(crate) fn reads_own_layer_types(self) -> bool {
        matches!(
            self,
            Family::Llama4 | Family::Qwen3Next | Family::Qwen35 | Family::Qwen35Moe | Family::Lfm2 | Family::Lfm2Moe
        )
    }
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
#[serde(rename_all = "snake_case")]
pub enum CheckpointQuant {
    Gptq {
        bits: u8,
        group_size: u32,
    },
    Awq {
        bits: u8,
        group_size: u32,
    },
    Fp8 {
        block: Option<u32>,
    },
    BitsAndBytes4 {
        double_quant: bool,
        nf4: bool,
    },
    BitsAndBytes8,
    /// `quant_method: mxfp4` (gpt-oss); `experts_only` when attention is in
    /// `modules_to_not_convert`.
    Mxfp4 {
        experts_only: bool,
    },
    /// NVFP4: ModelOpt `quant_algo: NVFP4` or compressed-tensors `nvfp4`.
    Nvfp4,
}

/// How a decoder layer attends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerAttention {
    /// Attends to the whole context: its cache grows with every token.
    Full,
    /// Attends to the last `window` tokens: its cache stops there.
    Sliding(u64),
    /// Cross-attention to image tokens (Llama 3.2 Vision): no per-token cache.
    Cross,
    /// Attends within fixed chunks of `chunk` tokens (Llama 4's local
    /// layers): its cache never holds more than one chunk.
    Chunked(u64),
    /// No attention in this layer: a recurrent mixer (`LayerSpec::state`), or
    /// a feed-forward-only layer (Nemotron-H's `-` and `E` blocks).
    None,
}

/// What a layer's feed-forward block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ffn {
    Dense,
    Moe,
    /// No feed-forward block (Nemotron-H's mixer-only layers).
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerSpec {
    pub attention: LayerAttention,
    pub ffn: Ffn,
    /// The layer runs the model's recurrent mixer ([`TextModel::recurrent`]):
    /// a constant-size state per sequence instead of (or beside) a KV cache.
    #[serde(default)]
    pub state: bool,
    /// Where this layer's shape differs from the model's.
    #[serde(default)]
    pub shape: LayerShape,
}

impl LayerSpec {
    pub fn new(attention: LayerAttention, ffn: Ffn) -> Self {
        Self { attention, ffn, state: false, shape: LayerShape::default() }
    }

    /// A recurrent mixer layer ([`TextModel::recurrent`]) without attention.
    pub fn recurrent(ffn: Ffn) -> Self {
        Self { state: true, ..Self::new(LayerAttention::None, ffn) }
    }

    /// Key/value heads of this layer, given the model's.
    pub fn kv_heads(&self, model: u64) -> u64 {
        if self.shape.kv_heads == 0 { model } else { self.shape.kv_heads }
    }

    /// Key and value head widths of this layer, given the model's.
    pub fn head_dims(&self, key: u64, value: u64) -> (u64, u64) {
        if self.shape.head_dim == 0 { (key, value) } else { (self.shape.head_dim, self.shape.head_dim) }
    }
}

/// One layer's shape where it differs from [`TextModel`]'s (MiMo-V2-Flash's
/// sliding layers: twice the key/value heads and attention sinks; Gemma 4's
/// global layers: wider heads, keys that are also the values, and layers that
/// reuse an earlier layer's cache). The default means "as the model".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerShape {
    /// Key/value heads of this layer; 0: the model's `num_kv_heads`.
    #[serde(default)]
    pub kv_heads: u64,
    /// Head width of this layer's queries, keys and values; 0: the model's.
    #[serde(default)]
    pub head_dim: u64,
    /// One learned attention-sink logit per query head in this layer.
    #[serde(default)]
    pub sinks: bool,
    /// The keys are also the values: no `v_proj` (Gemma 4 `attention_k_eq_v`).
    #[serde(default)]
    pub k_eq_v: bool,
    /// The layer reads an earlier layer's keys and values: no `k_proj`,
    /// `v_proj` or cache of its own (Gemma 4 `num_kv_shared_layers`).
    #[serde(default)]
    pub kv_shared: bool,
    /// Width of this layer's dense MLP; 0: the model's `intermediate_size`.
    #[serde(default)]
    pub ffn_width: u64,
    /// The layer reuses the top-k of an earlier layer's DSA lightning
    /// indexer: no indexer, and no indexer keys, of its own (GLM-5.2's
    /// IndexShare, `indexer_types` "shared"; transformers 5
    /// `GlmMoeDsaConfig.indexer_types`).
    #[serde(default)]
    pub indexer_shared: bool,
    /// Tokens one compressed KV entry of this layer stands for (DeepSeek-V4:
    /// 4 for compressed sparse attention, with its lightning indexer, 128
    /// for heavily compressed attention); 0: no compressor, the sliding
    /// window alone (transformers 5.25 `DeepseekV4Config.compress_rates`
    /// by `layer_types`).
    #[serde(default)]
    pub compress_ratio: u64,
    /// The layer routes each token to experts by a fixed table of its id
    /// (`tid2eid`, vocabulary × experts per token) instead of a learned
    /// score and its correction bias (DeepSeek-V4's `hash_moe` layers).
    #[serde(default)]
    pub hash_routed: bool,
}

impl LayerShape {
    pub fn is_model(&self) -> bool {
        *self == Self::default()
    }
}

/// A recurrent token mixer: its memory per sequence is constant in length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recurrent {
    /// Gated DeltaNet (Qwen3-Next, Qwen3.5): a key × value state per value
    /// head plus a causal conv over q, k and v.
    GatedDeltaNet { key_heads: u64, value_heads: u64, key_head_dim: u64, value_head_dim: u64, conv_kernel: u64 },
    /// Mamba-2 (Nemotron-H, Granite 4.0-H): an SSM state of `heads ×
    /// head_dim × d_state` plus a causal conv over x, B and C.
    /// `gated_norm`: a gated RMSNorm of the inner width before `out_proj`
    /// (always in Nemotron-H and Granite 4.0-H, `mamba_rms_norm` in Falcon-H1).
    Mamba2 {
        heads: u64,
        head_dim: u64,
        d_state: u64,
        groups: u64,
        conv_kernel: u64,
        conv_bias: bool,
        proj_bias: bool,
        #[serde(default = "yes")]
        gated_norm: bool,
    },
    /// Mamba (Jamba): an SSM state of `inner × d_state` plus a causal conv
    /// over the inner width; `dt_rank` is the time-step projection's rank.
    Mamba1 { inner: u64, d_state: u64, dt_rank: u64, conv_kernel: u64, conv_bias: bool, proj_bias: bool },
    /// LFM2's gated short convolution: only a conv state of `hidden ×
    /// (kernel − 1)`.
    ShortConv { kernel: u64, bias: bool },
    /// Kimi delta attention (Kimi-Linear): a `head_dim × head_dim` state per
    /// head and short convs over q, k and v, each `heads × head_dim` wide.
    KimiDelta { heads: u64, head_dim: u64, conv_kernel: u64 },
}

impl Recurrent {
    /// The mixer and its state's shape, as the explanation names them.
    pub fn describe(&self) -> String {
        match *self {
            Recurrent::GatedDeltaNet { value_heads, key_head_dim, value_head_dim, .. } => {
                format!("gated DeltaNet: {value_heads} value heads × {key_head_dim} × {value_head_dim} state + conv")
            }
            Recurrent::Mamba2 { heads, head_dim, d_state, .. } => {
                format!("Mamba-2: {heads} heads × {head_dim} × {d_state} SSM state + conv")
            }
            Recurrent::Mamba1 { inner, d_state, .. } => format!("Mamba: {inner} channels × {d_state} SSM state + conv"),
            Recurrent::ShortConv { kernel, .. } => {
                format!("short conv: hidden × {} conv state", kernel.saturating_sub(1))
            }
            Recurrent::KimiDelta { heads, head_dim, .. } => {
                format!("Kimi delta attention: {heads} heads × {head_dim} × {head_dim} state + conv")
            }
        }
    }
}

fn yes() -> bool {
    true
}

/// Per-model details of the newer families that the shared fields above do
/// not describe. All default to "absent".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extras {
    /// One learned attention-sink logit per query head and attention layer (gpt-oss).
    #[serde(default)]
    pub attn_sinks: bool,
    /// q/k norms over the whole projection, not per head (OLMo 2, MiniMax-M2).
    #[serde(default)]
    pub qk_norm_full: bool,
    /// The query projection also yields a sigmoid output gate of the same
    /// width (Qwen3-Next / Qwen3.5 full-attention layers).
    #[serde(default)]
    pub attn_output_gate: bool,
    /// Norm vectors of `hidden_size` outside the layers besides the final one
    /// (BLOOM's and LFM2's embedding norm).
    #[serde(default)]
    pub embedding_norm: bool,
    /// The final norm and the layer norms of a LayerNorm model have no bias
    /// (Cohere's LayerNorm).
    #[serde(default)]
    pub norm_without_bias: bool,
    /// The config asks for an FP32 SSM state (`mamba_ssm_cache_dtype:
    /// float32`, Nemotron-H; `mamba_ssm_dtype: float32`, Qwen3.5), which
    /// vLLM and SGLang honour.
    #[serde(default)]
    pub ssm_state_f32: bool,
    /// Width of the per-layer input embeddings (Gemma 4
    /// `hidden_size_per_layer_input`); 0: none.
    #[serde(default)]
    pub per_layer_input: u64,
    /// Rows of the per-layer input embedding table (`vocab_size_per_layer_input`).
    #[serde(default)]
    pub per_layer_vocab: u64,
    /// The router scales its input per channel and its output per expert
    /// (Gemma 4 `Gemma4TextRouter`: `scale`, `per_expert_scale`).
    #[serde(default)]
    pub router_scales: bool,
    /// AltUp's parallel streams (Gemma 3n `altup_num_inputs`); 0: none.
    #[serde(default)]
    pub altup_inputs: u64,
    /// Rank of the LAuReL low-rank residual block (Gemma 3n `laurel_rank`); 0: none.
    #[serde(default)]
    pub laurel_rank: u64,
    /// Positions of the distinct rotary tables the config asks for, summed
    /// (each `head_dim` wide), as an engine that precomputes cos/sin tables
    /// sizes them: `max_position_embeddings`, times the factor of a `linear`
    /// or `dynamic` scaling (`original_max_position_embeddings` × factor for
    /// `yarn`); 0: not read (only the Gemma 3 and Llama 4 readers read it).
    #[serde(default)]
    pub rope_table_positions: u64,
    /// Llama 3's RoPE scaling (`rope_type: llama3`), which llama.cpp's
    /// converter writes as a `rope_freqs` tensor every layer's RoPE reads
    /// (convert_hf_to_gguf.py `LlamaModel.generate_extra_tensors`).
    #[serde(default)]
    pub rope_freqs: bool,
    /// Multi-token-prediction layers the checkpoint ships (built only for
    /// speculative decoding); 0: none.
    #[serde(default)]
    pub mtp_layers: u64,
    /// Learned parameters of each layer's MLP activation (Apertus's xIELU:
    /// `alpha_p` and `alpha_n`); 0: a fixed activation.
    #[serde(default)]
    pub activation_params: u64,
    /// Residual streams of manifold-constrained hyper-connections (DeepSeek-V4
    /// `hc_mult`): each layer mixes them before and after attention and the
    /// MLP, and a head mixes them before the final norm; 0: one plain
    /// residual stream.
    #[serde(default)]
    pub hyper_connections: u64,
}

/// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mla {
    pub q_lora_rank: Option<u64>,
    pub kv_lora_rank: u64,
    pub qk_nope_head_dim: u64,
    pub qk_rope_head_dim: u64,
    pub v_head_dim: u64,
    /// DeepSeek sparse attention's lightning indexer (V3.2, GLM-5): its keys
    /// are a per-token cache of their own.
    #[serde(default)]
    pub indexer: Option<Indexer>,
}

/// The DSA indexer: `heads` query heads scoring one shared key of `head_dim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indexer {
    pub heads: u64,
    pub head_dim: u64,
}

/// DeepSeek-V4's attention (transformers 5.25 `modeling_deepseek_v4.py`,
/// vLLM 0.34 `models/deepseek_v4/attention.py`): a query LoRA, one shared
/// key/value head of `head_dim` (its last `rope_head_dim` rotated) over a
/// sliding window of `window` tokens, a grouped low-rank output projection
/// and a sink per head; a layer with a [`LayerShape::compress_ratio`] also
/// attends to compressed entries of `ratio` tokens each, picked by the
/// lightning `indexer` where the ratio is 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompressedAttention {
    pub q_lora_rank: u64,
    pub head_dim: u64,
    pub rope_head_dim: u64,
    pub o_groups: u64,
    pub o_lora_rank: u64,
    pub window: u64,
    pub indexer: Indexer,
    /// The compression ratio of the layers that score their entries with
    /// the indexer (compressed sparse attention's, 4; transformers'
    /// `DeepseekV4CSACompressor.indexer`).
    pub sparse_ratio: u64,
}

impl CompressedAttention {
    /// Whether a layer compressing by `ratio` runs the lightning indexer.
    pub fn indexed(&self, ratio: u64) -> bool {
        ratio != 0 && ratio == self.sparse_ratio
    }
}

/// Attention projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKind {
    /// MHA, GQA or MQA, told apart by `num_kv_heads`.
    Standard {
        qkv_bias: bool,
        o_bias: bool,
    },
    Mla(Mla),
    /// DeepSeek-V4: sliding window plus compressed entries.
    Compressed(CompressedAttention),
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
    /// Each expert's projections carry biases (gpt-oss).
    #[serde(default)]
    pub expert_bias: bool,
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
    /// The recurrent mixer of the layers with `state` set.
    #[serde(default)]
    pub recurrent: Option<Recurrent>,
    #[serde(default)]
    pub extra: Extras,
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
    /// The largest image as the engines profile it: the patches the tower
    /// runs over and the tokens it gives the language model (0: not read
    /// for this kind of tower).
    #[serde(default)]
    pub item: VisionItem,
    /// The tower's MLP width.
    #[serde(default)]
    pub intermediate_size: u64,
    /// Qwen3-VL's "deepstack" levels: the tower hands the language model
    /// `1 + deepstack` embeddings per token, its main output and one per
    /// level (`deepstack_visual_indexes`).
    #[serde(default)]
    pub deepstack: u64,
    /// The largest video of the Qwen3-VL processors as vLLM 0.11 – 0.12
    /// profile it; for InternVL's remote code around a model that takes
    /// video, one frame, as many as `max_model_len` holds making the video
    /// (`engines::vllm::encoder`); zero for towers without one.
    #[serde(default)]
    pub video: VisionItem,
}

/// The largest image a tower takes, as vLLM's profile run builds it
/// (`get_image_size_with_most_features`, `get_max_image_tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisionItem {
    pub patches: u64,
    pub tokens: u64,
    /// The pixel values the processor hands over for it (channels × the
    /// patches' pixels; 0: not read for this kind of tower).
    #[serde(default)]
    pub values: u64,
}

impl VisionTower {
    pub fn params(&self) -> u64 {
        self.linear_params.saturating_add(self.other_params)
    }
}

/// A model as the memory model sees it.
///
/// Its serde form is not a contract: the page carries its presets in it,
/// read at build time and encoded with postcard (`web/build.rs`), which is why
/// every enum here is externally tagged (postcard reads no internal tags).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Architecture {
    pub family: Family,
    /// The config's own `model_type`.
    pub model_type: String,
    pub text: TextModel,
    pub vision: Option<VisionTower>,
    /// A multimodal wrapper's config (a `text_config` or a `vision_config`
    /// beside the language model's fields): transformers builds its
    /// `*ForConditionalGeneration`, the language model nested in it.
    #[serde(default)]
    pub multimodal: bool,
    /// The wrapper also builds a tower Headroom does not read (a vision
    /// tower of an unsupported kind, an audio tower): neither its parameters
    /// nor its module names are known.
    #[serde(default)]
    pub towers_unread: bool,
    /// `torch_dtype` / `dtype` of the checkpoint.
    pub checkpoint_dtype: Option<CheckpointDtype>,
    pub quantization: Option<CheckpointQuant>,
    /// What that quantisation leaves unconverted, as roles.
    #[serde(default)]
    pub quant_kept: KeptRoles,
    /// The `quantization_config` names an FP8 KV cache (compressed-tensors'
    /// `kv_cache_scheme`, ModelOpt's `kv_cache_quant_algo: FP8`), which an
    /// engine may take for its `auto` cache ([`crate::engines::EngineKind::default_kv_dtype`]).
    #[serde(default)]
    pub kv_cache_fp8: bool,
    /// Assumptions made while reading the config.
    pub warnings: Vec<String>,
}

impl Architecture {
    /// Reads a `config.json`. Unknown keys are ignored; a missing or
    /// nonsensical required field is an error naming the field.
    pub fn from_config_json(text: &str) -> Result<Self, ConfigError> {
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            // Python's `json.dumps` writes `Infinity` / `NaN` (e.g. Mamba's
            // `time_step_limit: [0.0, Infinity]` in Granite 4.0-H and
            // Nemotron-H configs); no field we read is one of them.
            Err(e) => {
                serde_json::from_str(&python_floats_to_null(text)).map_err(|_| ConfigError::Json(e.to_string()))?
            }
        };
        let map = value.as_object().ok_or(ConfigError::NotAnObject)?;
        families::read(map)
    }

    /// Whether any layer keeps a recurrent state instead of (or beside) a KV cache.
    pub fn has_state(&self) -> bool {
        self.text.recurrent.is_some() && self.text.layers.iter().any(|l| l.state)
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

/// Replaces the bare tokens `Infinity`, `-Infinity` and `NaN` outside strings
/// with `null`, so that configs written by Python's `json` module parse.
fn python_floats_to_null(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        let token = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t));
        match token {
            Some(t) => {
                out.push_str("null");
                rest = &rest[t.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::python_floats_to_null;

    #[test]
    fn python_infinity_outside_strings_becomes_null() {
        assert_eq!(
            python_floats_to_null(r#"{"a": [0.0, Infinity, -Infinity, NaN], "b": "NaN Infinity \" NaN"}"#),
            r#"{"a": [0.0, null, null, null], "b": "NaN Infinity \" NaN"}"#
        );
    }
}
