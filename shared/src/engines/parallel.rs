//! The splits an engine refuses for a given model, with the words the engine
//! itself would use: a plan the engine cannot start gets no verdict at all.
//!
//! - Tensor parallelism shards attention by heads. vLLM checks the query
//!   heads up front (`ModelConfig.verify_with_parallel_config`,
//!   vllm/config/model.py, vLLM 0.33.0); vLLM and SGLang both shard the KV
//!   heads in `QKVParallelLinear` (vllm/model_executor/layers/linear.py,
//!   vLLM 0.33.0; sglang/srt/layers/linear.py, SGLang 0.5.23): split when
//!   there are more KV heads than ranks, replicated when there are fewer, and
//!   either way through `divide`, which asserts "{n} is not divisible by {d}"
//!   (vllm/distributed/utils.py, sglang/srt/distributed/utils.py). SGLang has
//!   no up-front check: the same `divide` fails on the query heads. MLA
//!   models have one latent per layer, no KV heads to shard.
//! - Pipeline parallelism (and any layer-wise split) places whole layers:
//!   more stages than layers leaves stages empty. SGLang asserts
//!   `num_hidden_layers >= pp_size` in `make_layers`
//!   (sglang/srt/utils/common.py, 0.5.23); vLLM's `get_pp_indices`
//!   (vllm/distributed/utils.py, 0.33.0) hands the extra stages zero layers.
//! - llama.cpp's `-c 0` is the model's trained context (`n_ctx_train`,
//!   src/llama-context.cpp in the llama.cpp vendored by llama-cpp-python
//!   0.3.36); without one stated in the config there is nothing to plan.
//! - [`Board`]: how the GPUs are linked, which decides what NCCL sets up
//!   between them (vLLM's and SGLang's TP buffers).

use super::{Engine, EngineKind, Scenario};
use crate::arch::{AttentionKind, TextModel};

/// A split the engine would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error(
        "vLLM refuses --tensor-parallel-size {tp}: \"Total number of attention heads ({heads}) must be divisible by \
         tensor parallel size ({tp}).\" ({})",
        suggest(.valid)
    )]
    VllmHeads { heads: u64, tp: u64, valid: Degrees },
    #[error(
        "{} fails loading with --tp-size {tp}: \"{heads} is not divisible by {tp}\" (its QKVParallelLinear splits the \
         {heads} attention heads over the {tp} ranks) ({})",
        engine_name(.engine),
        suggest(.valid)
    )]
    Heads { engine: EngineKind, heads: u64, tp: u64, valid: Degrees },
    #[error(
        "{} fails loading with --tp-size {tp}: \"{numerator} is not divisible by {denominator}\" (its QKVParallelLinear \
         {} the model's {kv_heads} KV heads over {tp} ranks) ({})",
        engine_name(.engine),
        kv_verb(.tp, .kv_heads),
        suggest(.valid)
    )]
    KvHeads { engine: EngineKind, kv_heads: u64, tp: u64, numerator: u64, denominator: u64, valid: Degrees },
    #[error(
        "{stages} pipeline stages for a model of {layers} layers: {} (use at most {layers} stages)",
        stage_consequence(.engine, .stages, .layers)
    )]
    TooManyStages { engine: EngineKind, stages: u64, layers: u64 },
    #[error(
        "llama.cpp reads -c 0 as the model's trained context (n_ctx_train), and this config states none \
         (max_position_embeddings): give the context size, e.g. --n-ctx 8192"
    )]
    NoTrainedContext,
    /// src/llama-context.cpp (llama-cpp-python 0.3.36 vendor): an MLA
    /// model's V is a view of its K latent.
    #[error("llama.cpp refuses different K ({k}) and V ({v}) cache types for an MLA model: give one type to both")]
    MlaCacheTypes { k: &'static str, v: &'static str },
    /// vLLM 0.24.0 `config/speculative.py`: `mtp` builds the checkpoint's
    /// own `num_nextn_predict_layers` layers.
    #[error(
        "vLLM's speculative method mtp needs the checkpoint's multi-token-prediction layers, and this config has \
         none (num_nextn_predict_layers): use ngram or suffix"
    )]
    NoMtpLayers,
    /// vLLM 0.19.0 EPLB: the experts and their redundant copies spread evenly.
    #[error("vLLM's EPLB needs the {placed} experts (with the redundant ones) divisible by the {ranks} EP ranks")]
    VllmRedundantExperts { placed: u64, ranks: u64 },
    /// SGLang 0.5.4 `fused_moe_triton/layer.py::FusedMoE.__init__`; `why`
    /// is where the EP size comes from (`--ep-size`, or DeepEP's `--tp-size`).
    #[error(
        "SGLang fails loading with EP size {ep} ({why}): \"assert num_experts % moe_ep_size == 0\" ({experts} experts)"
    )]
    SglangExperts { experts: u64, ep: u64, why: &'static str },
    /// vLLM 0.12.0 – 0.24.0 `SpeculativeConfig.__post_init__`.
    #[error("vLLM refuses num_speculative_tokens {tokens}: \"must be divisible by n_predict={layers}\"")]
    SpecTokens { tokens: u64, layers: u64 },
}

/// The tensor-parallel degrees up to 64 that would work, as a bit set
/// (bit `d - 1` for degree `d`): small, `Copy` and printable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Degrees(u64);

impl Degrees {
    pub fn contains(self, tp: u64) -> bool {
        (1..=64).contains(&tp) && self.0 & (1 << (tp - 1)) != 0
    }

    pub fn iter(self) -> impl Iterator<Item = u64> {
        (1..=64).filter(move |&d| self.contains(d))
    }
}

fn kv_verb(tp: &u64, kv_heads: &u64) -> &'static str {
    if tp >= kv_heads { "replicates" } else { "splits" }
}

fn suggest(valid: &Degrees) -> String {
    let list: Vec<String> = valid.iter().map(|d| d.to_string()).collect();
    format!("tensor-parallel degrees that work for this model: {}", list.join(", "))
}

fn engine_name(engine: &EngineKind) -> &'static str {
    engine.name()
}

fn stage_consequence(engine: &EngineKind, stages: &u64, layers: &u64) -> String {
    let (stages, layers) = (*stages, *layers);
    match engine {
        EngineKind::Transformers => super::transformers::too_many_stages(stages, layers),
        EngineKind::Vllm => super::vllm::too_many_stages(stages, layers),
        EngineKind::Sglang => super::sglang::too_many_stages(stages, layers),
        EngineKind::LlamaCpp | EngineKind::Ollama => super::llamacpp::too_many_stages(stages, layers),
    }
}

/// Whether a TP degree shards this model's attention in vLLM and SGLang.
fn tp_fits(text: &TextModel, tp: u64) -> bool {
    text.num_heads.is_multiple_of(tp) && kv_fits(text, tp)
}

fn kv_fits(text: &TextModel, tp: u64) -> bool {
    let kv = text.num_kv_heads.max(1);
    match text.attention {
        // One latent, or DeepSeek-V4's one shared head: whole on every rank.
        AttentionKind::Mla(_) | AttentionKind::Compressed(_) => true,
        AttentionKind::Standard { .. } if tp >= kv => tp.is_multiple_of(kv),
        AttentionKind::Standard { .. } => kv.is_multiple_of(tp),
    }
}

fn valid_degrees(text: &TextModel) -> Degrees {
    Degrees((1..=64u64).filter(|&d| tp_fits(text, d)).fold(0, |bits, d| bits | (1 << (d - 1))))
}

/// When an engine checks that attention heads divide over the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadCheck {
    /// Before loading, with its own message (vLLM's `verify_with_parallel_config`).
    UpFront,
    /// When loading, in `divide` (SGLang).
    AtLoad,
}

/// The refusal of an engine that shards attention heads (`check`) when
/// they do not divide over `tp` ranks.
pub(crate) fn check_heads(engine: EngineKind, check: HeadCheck, tp: u64, text: &TextModel) -> Result<(), SplitError> {
    let tp = tp.max(1);
    if tp <= 1 {
        return Ok(());
    }
    let heads = text.num_heads.max(1);
    if !heads.is_multiple_of(tp) {
        let valid = valid_degrees(text);
        return Err(match check {
            HeadCheck::UpFront => SplitError::VllmHeads { heads, tp, valid },
            HeadCheck::AtLoad => SplitError::Heads { engine, heads, tp, valid },
        });
    }
    if !kv_fits(text, tp) {
        let kv_heads = text.num_kv_heads.max(1);
        let (numerator, denominator) = if tp >= kv_heads { (tp, kv_heads) } else { (kv_heads, tp) };
        return Err(SplitError::KvHeads { engine, kv_heads, tp, numerator, denominator, valid: valid_degrees(text) });
    }
    Ok(())
}

/// The refusal of more pipeline stages than layers (every engine places
/// whole layers).
pub(crate) fn check_stages(s: &Scenario, text: &TextModel) -> Result<(), SplitError> {
    let stages = s.stages() as u64;
    let layers = text.num_layers();
    if stages > 1 && stages > layers {
        return Err(SplitError::TooManyStages { engine: s.engine.kind(), stages, layers });
    }
    Ok(())
}

/// The engine's refusal of this scenario's split for this model, if any.
pub fn check(s: &Scenario, text: &TextModel) -> Result<(), SplitError> {
    match s.engine {
        Engine::Transformers(_) => check_stages(s, text),
        Engine::Vllm(o) => super::vllm::check_split(o, s, text),
        Engine::Sglang(_) => super::sglang::check_split(s, text),
        Engine::LlamaCpp(o) => super::llamacpp::check_split(o, s, text),
        // Ollama always passes a context and one cache type for K and V.
        Engine::Ollama(_) => check_stages(s, text),
    }
}

/// How a plan's GPUs are linked, by the catalog's names: what NCCL sets up
/// between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Board {
    /// Hopper or Blackwell SXM parts on an NVSwitch board, where NCCL adds
    /// NVLink SHARP (NVLS) buffers.
    NvSwitchHopper,
    /// Other SXM parts (A100 / A800): NVLink without NVLS.
    NvLink,
    /// PCIe cards (bridges at most).
    Pcie,
}

impl Board {
    pub fn of(gpus: &[crate::plan::GpuSlot]) -> Self {
        // PCIe and NVL cards and the GH200 superchip are not on an NVSwitch board.
        let all = |marks: &[&str]| {
            gpus.iter().all(|g| {
                let name = g.name.to_ascii_uppercase();
                marks.iter().any(|m| name.contains(m)) && !["PCIE", "NVL", "GH200"].iter().any(|m| name.contains(m))
            })
        };
        if all(&["H100 SXM", "H100 80GB HBM3", "H200", "H800", "B200", "B300"]) {
            Self::NvSwitchHopper
        } else if all(&["SXM"]) {
            Self::NvLink
        } else {
            Self::Pcie
        }
    }
}
