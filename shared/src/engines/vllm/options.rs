//! vLLM's knobs as a plan holds them (`vllm serve` flags and the two a
//! start-up log names), their defaults and vLLM's checks of them.

use serde::{Deserialize, Serialize};

use super::{DEFAULT_BLOCK_SIZE, Mxfp4Kernel, Sampler, Version};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Options {
    pub version: Version,
    pub gpu_memory_utilization: Option<f64>,
    /// Default: the model's `max_position_embeddings`, as vLLM does.
    pub max_model_len: Option<u64>,
    pub max_num_batched_tokens: Option<u64>,
    pub max_num_seqs: Option<u64>,
    pub block_size: u64,
    /// `--max-loras` with `--enable-lora` (0: LoRA off): adapters resident
    /// on the GPU at once, each with buffers of `max_lora_rank`.
    #[serde(default)]
    pub max_loras: u64,
    /// `--max-lora-rank` (vLLM's default 16).
    #[serde(default = "default_lora_rank")]
    pub max_lora_rank: u64,
    /// The sampler the profile runs (`None`: the version's default; a
    /// pasted start-up log names it).
    #[serde(default)]
    pub sampler: Option<Sampler>,
    /// The MXFP4 MoE kernel (`None`: the GPU's usual one; a pasted start-up
    /// log names it).
    #[serde(default)]
    pub mxfp4_kernel: Option<Mxfp4Kernel>,
    /// `--kv-cache-memory-bytes` (vLLM 0.11+): the KV pool of every rank,
    /// given; the memory profile is skipped and `gpu_memory_utilization`
    /// no longer sizes the pool (`gpu_worker.py::determine_available_memory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_memory_bytes: Option<u64>,
    /// `--enforce-eager`: no CUDA graph is captured (and none profiled).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enforce_eager: bool,
}

/// `LoRAConfig.max_lora_rank` default (vLLM 0.33.0 `config/lora.py`).
pub const DEFAULT_MAX_LORA_RANK: u64 = 16;

fn default_lora_rank() -> u64 {
    DEFAULT_MAX_LORA_RANK
}

impl Default for Options {
    fn default() -> Self {
        Self {
            version: Version::default(),
            gpu_memory_utilization: None,
            max_model_len: None,
            max_num_batched_tokens: None,
            max_num_seqs: None,
            block_size: DEFAULT_BLOCK_SIZE,
            max_loras: 0,
            max_lora_rank: DEFAULT_MAX_LORA_RANK,
            sampler: None,
            mxfp4_kernel: None,
            kv_cache_memory_bytes: None,
            enforce_eager: false,
        }
    }
}

/// vLLM's checks of its knobs.
pub(crate) fn check_knobs(o: Options) -> Result<(), String> {
    crate::engines::fraction("gpu_memory_utilization", o.gpu_memory_utilization)?;
    if !(1..=1024).contains(&o.block_size) {
        return Err(format!("block_size must be between 1 and 1024, got {}", o.block_size));
    }
    // `LoRAConfig`: max_loras ≥ 1 when LoRA is on; ranks up to 512.
    if o.max_loras > 1024 {
        return Err(format!("max_loras must be at most 1024, got {}", o.max_loras));
    }
    if !(1..=512).contains(&o.max_lora_rank) {
        return Err(format!("max_lora_rank must be between 1 and 512, got {}", o.max_lora_rank));
    }
    if o.kv_cache_memory_bytes.is_some() && !o.version.kv_memory_tools() {
        return Err(format!("kv_cache_memory_bytes arrived in vLLM 0.11; the {} rules are older", o.version.id()));
    }
    Ok(())
}
