//! Engine start-up logs read into the memory figures they state.
//!
//! While they start, vLLM, SGLang and llama.cpp print what they loaded and
//! what they reserved: the weights, the memory profile, the KV cache in bytes
//! and in tokens, CUDA graphs, each device's buffers. [`read`] finds those
//! lines in a pasted log, whatever their prefix (timestamps, colour codes,
//! `(EngineCore pid=…)`, `[… TP3]`), and returns each as a [`Fact`] with the
//! line it came from, plus the launch configuration the log names. They are
//! measurements of one real start: a plan can be checked against them term
//! by term.
//!
//! Each engine's phrases come from its source; the file is named beside each.
//!
//! Files: `vllm.rs`, `sglang.rs`, `llamacpp.rs` (each engine's lines; the
//! last also the `--tensor-split` a multi-GPU log ran with, from its per-GPU
//! KV buffers, and the build it names); `vllm_sites.rs` (where each vLLM
//! release 0.10.0 – 0.34.0 logs those lines, generated from its wheel by
//! `scripts/vllm-call-sites.py`: the releases a log that prints none fits); `launch.rs` (an engine's command
//! line — `vllm serve`, `sglang.launch_server`, `llama-server`, `ollama
//! runner`, and llama.cpp's other common-args tools — read into the same
//! configuration, only the flags Headroom models, for the agent's running
//! processes, Ollama's logged `cmd=` and a command pasted above a llama.cpp
//! log, behind its shell prompt and continued lines);
//! `plan.rs` (`configured_engine` runs a plan's engine as the log or command
//! line says it ran, `logged_scenario` the whole plan: the one reading the
//! page and `headroom diagnose` share); `reconcile.rs` (each vLLM/SGLang
//! term beside the estimate's figure), `buffers.rs` (each llama.cpp buffer);
//! `logged_model.rs` (the model a llama.cpp log prints, rebuilt as a config,
//! so a log alone is planned); `whatif.rs` (changed vLLM launches answered
//! with the log's residual kept as a measured fact).

mod buffers;
pub mod launch;
mod llamacpp;
mod logged_model;
mod plan;
mod reconcile;
mod sglang;
mod vllm;
mod vllm_sites;
mod whatif;

pub use buffers::{BufferCheck, llamacpp_buffers};
pub use launch::{Launch, LaunchFlag, LaunchModel, Launcher, read_command_line};
pub use llamacpp::layer_split as llamacpp_layer_split;
pub use logged_model::{LoggedModel, config_json as logged_config_json, file_type_format, model as logged_model};
pub use plan::{
    configured_engine, logged_base_preset, logged_engine, logged_preset, logged_scenario, names_a_quantised_copy,
};
pub use reconcile::{Amount, Row, SUGGESTION_SPARE_BYTES, reconcile};
pub use vllm::CallSites;
pub use whatif::{WhatIf, WhatIfs, what_if, what_ifs};

use serde::Serialize;

use crate::engines::llamacpp::FlashAttention;
use crate::explain::thousands;
use crate::oom::scan::Cur;
use crate::units::{UnitSystem, format_bytes};

/// The engine a start-up log comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogEngine {
    Vllm,
    Sglang,
    LlamaCpp,
}

impl LogEngine {
    /// The engine that prints these lines (Ollama's runner prints llama.cpp's).
    pub fn kind(self) -> crate::engines::EngineKind {
        match self {
            LogEngine::Vllm => crate::engines::EngineKind::Vllm,
            LogEngine::Sglang => crate::engines::EngineKind::Sglang,
            LogEngine::LlamaCpp => crate::engines::EngineKind::LlamaCpp,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LogEngine::Vllm => "vLLM",
            LogEngine::Sglang => "SGLang",
            LogEngine::LlamaCpp => "llama.cpp",
        }
    }
}

/// What one line of a start-up log states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Figure {
    /// Memory the weights took on this device (vLLM `Model loading took`,
    /// SGLang `Load weight end … mem usage`).
    Weights { bytes: u64 },
    /// The device's memory as the profile saw it (vLLM V0 `total_gpu_memory`).
    DeviceTotal { bytes: u64 },
    /// `gpu_memory_utilization` in thousandths.
    Utilization { permille: u64 },
    /// Memory allocated outside PyTorch: CUDA context, NCCL, cuBLAS
    /// workspaces (vLLM `non_torch_memory`).
    NonTorch { bytes: u64 },
    /// The activation peak of the profiling run (vLLM `PyTorch activation
    /// peak memory`).
    ActivationPeak { bytes: u64 },
    /// CUDA-graph memory measured after capture (vLLM `Graph capturing
    /// finished … took` and the free-memory breakdown's `for CUDAGraph
    /// memory`, SGLang `Capture cuda graph end … mem usage`).
    CudaGraphs { bytes: u64 },
    /// vLLM's estimate of its CUDA graphs before the KV cache is sized
    /// (≥ 0.18 `Estimated CUDA graph memory: X GiB total`). Signed: the
    /// estimate is a difference of free memory around trial captures and
    /// can come out below zero, and from 0.21 vLLM subtracts it from the KV
    /// budget, so a negative one adds to the pool.
    CudaGraphEstimate { bytes: i64 },
    /// The memory left to the KV cache after the profile (vLLM `Available KV
    /// cache memory`); `negative` when the profile left none.
    AvailableKv { bytes: u64, negative: bool },
    /// A KV cache size given on the command line (vLLM `kv_cache_memory_bytes`),
    /// which skips the profile.
    PinnedKv { bytes: u64 },
    /// Tokens the KV cache holds (vLLM `GPU KV cache size`).
    KvTokens { tokens: u64 },
    /// KV blocks (vLLM V0 `# GPU blocks`).
    KvBlocks { blocks: u64 },
    /// `Maximum concurrency for N tokens per request: X.XXx`, X in hundredths.
    Concurrency { tokens_per_request: u64, hundredths: u64 },
    /// The attention block size a hybrid model was raised to (vLLM
    /// `Setting attention block size to N tokens`).
    AttentionBlock { tokens: u64 },
    /// The `--kv-cache-memory` bytes vLLM suggests to fit the requested
    /// memory without profiling (`Replace gpu_memory_utilization config with
    /// --kv-cache-memory=N … to fit into requested memory`).
    SuggestedKv { bytes: u64 },
    /// The `max_model_len` `--max-model-len auto` chose (vLLM `Auto-fit
    /// max_model_len: reduced from A to B`, or the model's own when it fits).
    AutoMaxModelLen { tokens: u64 },
    /// SGLang's KV pool: tokens, its bytes, and its K and V parts where the
    /// log prints them (`K size:`, `V size:`; a pool that is not split in K
    /// and V, MLA's, prints one `KV size:`, and then neither part is known).
    KvPool { tokens: u64, bytes: u64, k_bytes: Option<u64>, v_bytes: Option<u64> },
    /// SGLang's recurrent-state pool (`Mamba Cache is allocated.`): the
    /// requests it holds a state for (`max_mamba_cache_size`) and its bytes,
    /// every state buffer it prints (`conv_state`, `ssm_state`, and the
    /// intermediate caches of speculative decoding) together.
    StatePool { sequences: u64, bytes: u64 },
    /// SGLang's `max_total_num_tokens`.
    MaxTotalTokens { tokens: u64 },
    /// What SGLang's distributed init took on this rank (`Init torch
    /// distributed ends. mem usage=`).
    DistInit { bytes: u64 },
    /// Free device memory SGLang reports after a stage (`avail mem=`).
    Free { after: Stage, bytes: u64 },
    /// A llama.cpp buffer on one device or the host.
    Buffer { buffer: Buffer, bytes: u64 },
    /// llama.cpp's KV cache summary: its total and the K and V parts.
    KvSummary { bytes: u64, k_bytes: u64, v_bytes: u64, cells: Option<u64>, layers: Option<u64> },
    /// llama.cpp's recurrent-state summary (`llama_memory_recurrent: size =
    /// 299.25 MiB (2 cells, 64 layers, 2 seqs), R (f32): 11.25 MiB, S
    /// (f32): 288.00 MiB`, src/llama-memory-recurrent.cpp:117 @a0ed91a): its
    /// total over every device, the conv (R) and SSM (S) parts, one cell a
    /// sequence.
    StateSummary { bytes: u64, r_bytes: u64, s_bytes: u64, cells: Option<u64> },
    /// llama.cpp `offloaded N/M layers to GPU`.
    Offloaded { layers: u64, of: u64 },
    /// One row of llama.cpp's memory breakdown (`llama_memory_breakdown_print`
    /// in src/llama-context.cpp, b6xxx on; `common_memory_breakdown_print`
    /// once `--fit` moved to common/): a device's (or the host's, or another
    /// buffer type's) model, context (the KV cache and recurrent state:
    /// `memory->memory_breakdown()`) and compute buffers, with a device's
    /// total and free memory as its backend reports them. Whole MiB, each
    /// rounded down (`/ MiB` of a `size_t`).
    MemoryBreakdown {
        total_bytes: Option<u64>,
        free_bytes: Option<u64>,
        model_bytes: u64,
        context_bytes: u64,
        compute_bytes: u64,
    },
    /// `--fit`'s projection with the launch's own parameters, before it
    /// changes any (`llama_params_fit_impl`, later `common_params_fit_impl`,
    /// src/llama.cpp step 1): what a device would use (its model, context
    /// and compute buffers, as the breakdown's `self`) and what that would
    /// leave free, below zero where it does not fit; with several devices one
    /// line each (`- CUDA0 (…): 24117 total, 20903 used, 2870 free vs. target
    /// of 1024`), with one only the sum (`projected to use 19187 MiB of
    /// device memory vs. 24077 MiB of free device memory`, no scope). Whole
    /// MiB, rounded toward zero.
    FitProjection { used_bytes: u64, free_bytes: i64, total_bytes: Option<u64>, target_bytes: Option<u64> },
    /// Ollama's own estimate before it starts the runner (`msg="offload to
    /// cuda"`, later `msg=offload library=cuda`): the layers it puts on the
    /// GPU, the memory it saw free there and what it expects to use, with
    /// the weights, KV cache and compute graph of that estimate.
    OllamaEstimate {
        layers: u64,
        of: u64,
        available_bytes: u64,
        required_bytes: u64,
        weights_bytes: u64,
        kv_bytes: u64,
        graph_bytes: u64,
    },
}

impl Figure {
    /// One line for a reader: what was logged and its figure.
    pub fn describe(&self) -> String {
        let b = |n: u64| format_bytes(n, UnitSystem::Binary);
        match *self {
            Figure::Weights { bytes } => format!("weights loaded: {}", b(bytes)),
            Figure::DeviceTotal { bytes } => format!("device memory: {}", b(bytes)),
            Figure::Utilization { permille } => format!("gpu_memory_utilization: {}", fraction(permille)),
            Figure::NonTorch { bytes } => format!("memory outside PyTorch: {}", b(bytes)),
            Figure::ActivationPeak { bytes } => format!("activation peak of the profile run: {}", b(bytes)),
            Figure::CudaGraphEstimate { bytes } => format!(
                "CUDA graphs (estimated before the KV cache): {}{}",
                if bytes < 0 { "-" } else { "" },
                b(bytes.unsigned_abs())
            ),
            Figure::CudaGraphs { bytes } => format!("CUDA graphs (captured): {}", b(bytes)),
            Figure::AvailableKv { bytes, negative } => {
                format!("available KV cache memory: {}{}", if negative { "-" } else { "" }, b(bytes))
            }
            Figure::PinnedKv { bytes } => format!("KV cache set by kv_cache_memory_bytes (no profile): {}", b(bytes)),
            Figure::KvTokens { tokens } => format!("KV cache: {} tokens", thousands(tokens)),
            Figure::KvBlocks { blocks } => format!("KV cache: {} blocks", thousands(blocks)),
            Figure::Concurrency { tokens_per_request, hundredths } => format!(
                "maximum concurrency at {} tokens per request: {}.{:02}x",
                thousands(tokens_per_request),
                hundredths / 100,
                hundredths % 100
            ),
            Figure::AttentionBlock { tokens } => format!("attention block raised to {tokens} tokens (hybrid model)"),
            Figure::SuggestedKv { bytes } => {
                format!("suggested --kv-cache-memory for the requested memory: {}", b(bytes))
            }
            Figure::AutoMaxModelLen { tokens } => format!("max_model_len chosen by auto-fit: {}", thousands(tokens)),
            Figure::KvPool { tokens, bytes, k_bytes: Some(k), v_bytes: Some(v) } => {
                format!("KV pool: {} tokens, {} (K {}, V {})", thousands(tokens), b(bytes), b(k), b(v))
            }
            Figure::KvPool { tokens, bytes, .. } => format!("KV pool: {} tokens, {}", thousands(tokens), b(bytes)),
            Figure::StatePool { sequences, bytes } => {
                format!("recurrent-state pool: {} requests, {}", thousands(sequences), b(bytes))
            }
            Figure::MaxTotalTokens { tokens } => format!("max_total_num_tokens: {}", thousands(tokens)),
            Figure::DistInit { bytes } => format!("distributed init: {}", b(bytes)),
            Figure::Free { after, bytes } => format!(
                "free after {}: {}",
                match after {
                    Stage::Init => "the CUDA context and distributed init, before the weights",
                    Stage::Weights => "loading the weights",
                    Stage::MemoryPool => "the memory pool",
                    Stage::CudaGraphs => "CUDA graph capture",
                },
                b(bytes)
            ),
            Figure::Buffer { buffer, bytes } => format!(
                "{} buffer: {}",
                match buffer {
                    Buffer::Model => "model",
                    Buffer::Kv => "KV",
                    Buffer::State => "recurrent state",
                    Buffer::Compute => "compute",
                    Buffer::Output => "output",
                },
                b(bytes)
            ),
            Figure::KvSummary { bytes, k_bytes, v_bytes, .. } => {
                format!("KV cache in all: {} (K {}, V {})", b(bytes), b(k_bytes), b(v_bytes))
            }
            Figure::StateSummary { bytes, r_bytes, s_bytes, .. } => {
                format!("recurrent state in all: {} (R {}, S {})", b(bytes), b(r_bytes), b(s_bytes))
            }
            Figure::Offloaded { layers, of } => format!("layers offloaded to the GPU: {layers} of {of}"),
            Figure::MemoryBreakdown { total_bytes, free_bytes, model_bytes, context_bytes, compute_bytes } => {
                let device = match (total_bytes, free_bytes) {
                    (Some(t), Some(f)) => format!(" (device total {}, free {})", b(t), b(f)),
                    _ => String::new(),
                };
                format!(
                    "memory breakdown: model {}, context {}, compute {}{device}",
                    b(model_bytes),
                    b(context_bytes),
                    b(compute_bytes)
                )
            }
            Figure::FitProjection { used_bytes, free_bytes, total_bytes, target_bytes } => {
                let of = total_bytes.map(|t| format!(" of {}", b(t))).unwrap_or_default();
                let target = target_bytes.map(|t| format!(" (target {})", b(t))).unwrap_or_default();
                format!(
                    "--fit's projection with the launch's parameters: {} used{of}, {}{} free after{target}",
                    b(used_bytes),
                    if free_bytes < 0 { "-" } else { "" },
                    b(free_bytes.unsigned_abs())
                )
            }
            Figure::OllamaEstimate {
                layers,
                of,
                available_bytes,
                required_bytes,
                weights_bytes,
                kv_bytes,
                graph_bytes,
            } => {
                format!(
                    "Ollama's estimate: {layers} of {of} layers on the GPU, {} of the {} free there (weights {}, KV {}, compute graph {})",
                    b(required_bytes),
                    b(available_bytes),
                    b(weights_bytes),
                    b(kv_bytes),
                    b(graph_bytes)
                )
            }
        }
    }
}

/// `900` → `0.900`.
fn fraction(permille: u64) -> String {
    format!("{}.{:03}", permille / 1000, permille % 1000)
}

/// The stage after which SGLang printed its free memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The CUDA context and the distributed init, as the weights begin to
    /// load (`Load weight begin. avail mem=`).
    Init,
    Weights,
    MemoryPool,
    CudaGraphs,
}

/// The llama.cpp buffers (`ggml_backend_buffer` names in `llama-model.cpp`,
/// `llama-kv-cache.cpp`, `llama-context.cpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Buffer {
    Model,
    Kv,
    /// Recurrent state (`RS buffer size`).
    State,
    Compute,
    Output,
}

/// One figure and where it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact {
    /// 1-based line of the pasted text.
    pub line: usize,
    /// The rank or device the line is about (`TP3`, `Worker_TP1`, `CUDA0`,
    /// `CUDA_Host`), when the line says.
    pub scope: Option<String>,
    pub figure: Figure,
}

/// The launch configuration a log or a command line names; each field only
/// when it does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoggedConfig {
    pub version: Option<String>,
    /// The vLLM releases consistent with every call site the log prints
    /// (`[gpu_worker.py:298]`), when it prints one the table knows. Left out
    /// of the JSON, whose contract it would change for every V1 log: what it
    /// decided is in the words of what was taken from the log.
    #[serde(skip)]
    pub call_sites: Option<CallSites>,
    pub model: Option<String>,
    pub dtype: Option<String>,
    pub quantization: Option<String>,
    pub kv_cache_dtype: Option<String>,
    pub tensor_parallel: Option<u64>,
    pub pipeline_parallel: Option<u64>,
    /// vLLM `--data-parallel-size` and `--enable-expert-parallel` (the
    /// non-default args, a command line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_parallel: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expert_parallel: Option<bool>,
    /// SGLang `--enable-dp-attention` and `--ep-size` (its server args, a
    /// command line); its `--dp-size` is `data_parallel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all2all_backend: Option<crate::engines::vllm::All2All>,
    /// SGLang `--moe-a2a-backend` (`Some(true)`: DeepEP) and `--deepep-mode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deepep: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deepep_mode: Option<crate::engines::sglang::DeepepMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp_attention: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ep_size: Option<u64>,
    /// vLLM's `num_redundant_experts` (EPLB), SGLang's `--ep-num-redundant-experts`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redundant_experts: Option<u64>,
    /// vLLM's `Local/global number of experts: l/g` (with expert
    /// parallelism): the experts placed, redundant copies included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_experts: Option<u64>,
    /// vLLM `max_seq_len`, SGLang `context_len`.
    pub max_model_len: Option<u64>,
    pub enforce_eager: Option<bool>,
    /// vLLM `cpu_offload_gb` (the non-default args, `--cpu-offload-gb`): its
    /// GiB as written, a decimal ([`offload_gb`]), so it reads back exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_offload_gb: Option<String>,
    /// vLLM 0.34 `enable_extensible_kv_cache` (the non-default args, or
    /// `--[no-]enable-extensible-kv-cache` on a command line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensible_kv_cache: Option<bool>,
    /// vLLM `max_num_batched_tokens` (`Chunked prefill is enabled with
    /// max_num_batched_tokens=N`, the non-default args) and `max_num_seqs`.
    pub max_num_batched_tokens: Option<u64>,
    pub max_num_seqs: Option<u64>,
    /// vLLM `kv_cache_memory_bytes` (`--kv-cache-memory-bytes`, the
    /// non-default args): a pool given, no memory profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_memory_bytes: Option<u64>,
    /// vLLM `--block-size`, `--enable-lora`, `--max-loras` and
    /// `--max-lora-rank`, from a command line or the non-default args.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_lora: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_loras: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lora_rank: Option<u64>,
    /// SGLang `--chunked-prefill-size`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunked_prefill_size: Option<u64>,
    /// vLLM `--speculative-config` (the engine config's
    /// `speculative_config=SpeculativeConfig(method='ngram', …)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<crate::engines::vllm::Speculative>,
    /// vLLM `--limit-mm-per-prompt` (the non-default args' `limit_mm_per_prompt`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mm_limits: Option<crate::engines::vllm::MmLimits>,
    /// The top-k/top-p sampler vLLM set up (its `Using FlashInfer …` or
    /// `Falling back to the PyTorch-native …` line).
    pub sampler: Option<crate::engines::vllm::Sampler>,
    /// The MXFP4 MoE kernel vLLM took (`Using Marlin backend`, …).
    pub mxfp4_kernel: Option<crate::engines::vllm::Mxfp4Kernel>,
    /// SGLang `mem_fraction_static` in thousandths.
    pub mem_fraction_static_permille: Option<u64>,
    /// The date of the first dated line (`[2025-03-25 16:37:06 TP0]`, SGLang)
    /// (year, month, day): a log prints no release, but cannot predate its code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<crate::engines::sglang::Date>,
    /// The device a vLLM or SGLang log names, as the driver spells it (the
    /// fused-MoE kernel's config file, [`moe_config_device`]). Left out of
    /// the JSON, like `call_sites`: what it decided is in the words of what
    /// was taken from the log.
    #[serde(skip)]
    pub device_name: Option<String>,
    /// vLLM ran on ROCm (`Automatically detected platform rocm.`,
    /// vllm/platforms/__init__.py; its `[rocm.py:…]` lines): an AMD GPU,
    /// whichever the log names. Left out of the JSON like `device_name`.
    #[serde(skip)]
    pub rocm: bool,
    /// vLLM's `max_num_seqs` beside the `max_num_batched_tokens` it chose
    /// by GPU, where the non-default args set neither: one tier of
    /// `arg_utils.py::_set_default_args` ([`vllm::tier_max_num_seqs`]).
    #[serde(skip)]
    pub tier_max_num_seqs: Option<u64>,
    /// The llama.cpp build a log names (`build: 5192 (e59a5f1e)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<u64>,
    /// The log names its build as `build: 0 (unknown)`, a source build
    /// without git: any release, planned by the newest rules its lines allow
    /// (`newest_build`).
    #[serde(skip)]
    pub unknown_build: bool,
    /// The newest mainline build that prints what the log prints, where a
    /// line dates it: `llama_kv_cache_unified:` ends at b6232
    /// (`startup::llamacpp::UNIFIED_NAME_LAST_BUILD`).
    #[serde(skip)]
    pub newest_build: Option<u64>,
    /// The line where llama.cpp's DSA cache starts its second cache, the
    /// lightning indexer's keys (`llama_kv_cache_dsa: creating indexer KV
    /// cache`, src/llama-kv-cache-dsa.cpp): the KV buffers after it are
    /// the indexer's, on its "full" layers only, which
    /// `llamacpp::layer_split` leaves out. Left out of the JSON.
    #[serde(skip)]
    pub dsa_indexer_line: Option<usize>,
    /// The devices a llama.cpp log names, in ggml's order (`ggml_cuda_init`:
    /// `Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9`), or the
    /// model's where it runs on others ([`Self::model_devices`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
    /// What each of [`Self::devices`] had free when the model loaded, where
    /// the log says (`using device MTL0 (Apple M4 Pro) (unknown id) - 16383
    /// MiB free`, src/llama.cpp `llama_model_load_from_file_impl`), in bytes.
    #[serde(skip)]
    pub devices_free: Vec<Option<u64>>,
    /// The backends' names of the devices the model runs on, in the order
    /// it uses them (`using device ROCm1 (…)`, src/llama.cpp
    /// `llama_prepare_model_devices`, llama-cpp-python 0.3.36's copy): a
    /// plan's GPU `i` is the `i`-th, whatever ggml numbered it (`-dev
    /// ROCm1`; an iGPU llama.cpp leaves out beside a discrete GPU).
    #[serde(skip)]
    pub model_devices: Vec<String>,
    /// llama.cpp `n_ctx`, `n_batch`, `n_ubatch`, `n_seq_max`.
    pub n_ctx: Option<u64>,
    pub n_batch: Option<u64>,
    pub n_ubatch: Option<u64>,
    pub n_seq_max: Option<u64>,
    /// llama.cpp `flash_attn` as printed (`0`, `1`, `auto`, `enabled`).
    pub flash_attn: Option<String>,
    /// llama.cpp `type_k` / `type_v` (`f16`, `q8_0`, …).
    pub cache_type_k: Option<String>,
    pub cache_type_v: Option<String>,
    // What only a command line names ([`launch`]): a log states the
    // figures these become, not the flags. Left out of the JSON when unset,
    // so `diagnose --json` reads as before.
    /// vLLM `--gpu-memory-utilization` in thousandths (a log's is a
    /// [`Figure::Utilization`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_memory_utilization_permille: Option<u64>,
    /// llama.cpp `-np` (a log's `n_seq_max` is what the slots became).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel: Option<u64>,
    /// llama.cpp `-ngl`, `-ts`, `--n-cpu-moe` (`--cpu-moe`: `u32::MAX`),
    /// `-ot` (repeated rules joined by `,`), `-nkvo`, `--kv-unified`,
    /// `--swa-full`, `-sm`, `-mg`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_gpu_layers: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensor_split: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_cpu_moe: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub override_tensor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_kv_offload: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_unified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swa_full: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub main_gpu: Option<u64>,
    /// llama.cpp `--fit on|off`, `--fit-target MiB`, `--mmproj` (a
    /// projector loaded; its file is not kept) and `--no-mmproj-offload`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit_target_mib: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mmproj: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_mmproj_offload: Option<bool>,
    /// ik_llama.cpp: its own context lines (`mla_attn = 3`, `attn_max_b =
    /// 1024`, `fused_moe = 1`, src/llama.cpp@18b0375:21040ff), a repack
    /// (`============ Repacked N tensors`) or its flags on a command line
    /// (`-mla`, `-amb`, `-fmoe`/`-no-fmoe`, `-rtr`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ik_mla: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ik_attn_max_batch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ik_fused_moe: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ik_run_time_repack: Option<bool>,
    /// Ollama ran its own engine (`msg="starting ollama engine"`, `ollama
    /// runner --ollama-engine`, or its Go backend's `source=ggml.go`
    /// offload lines), not llama.cpp's: its cache and graph are
    /// each model's own (`kvcache/causal.go`, `model/models/*`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ollama_engine: Option<bool>,
    /// The Ollama release the log names (`Listening on 127.0.0.1:11434
    /// (version 0.17.1)`, server/routes.go).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ollama_version: Option<crate::engines::ollama::own::Version>,
}

impl LoggedConfig {
    /// The plan GPU a llama.cpp buffer's device is, by its place among
    /// [`Self::model_devices`] (`ROCm1_Mapped` as `ROCm1`); `None` where
    /// the log does not list it.
    pub fn model_gpu(&self, device: &str) -> Option<usize> {
        let device = device.strip_suffix("_Mapped").unwrap_or(device);
        self.model_devices.iter().position(|d| d == device)
    }

    /// Whether the log or command line is ik_llama.cpp's: it prints or
    /// takes one of ik's own settings.
    pub fn is_ik(&self) -> bool {
        self.ik_mla.is_some()
            || self.ik_attn_max_batch.is_some()
            || self.ik_fused_moe.is_some()
            || self.ik_run_time_repack.is_some()
    }

    /// llama.cpp's `flash_attn` as logged: `0`/`false`/`disabled` off,
    /// `1`/`true`/`enabled` on, `auto` on (CUDA's `auto` turns it on).
    pub fn flash_attention(&self) -> Option<FlashAttention> {
        match self.flash_attn.as_deref()?.trim().to_ascii_lowercase().as_str() {
            "0" | "false" | "disabled" | "off" => Some(FlashAttention::Off),
            "1" | "true" | "enabled" | "on" | "auto" => Some(FlashAttention::On),
            _ => None,
        }
    }
}

/// A start-up log: its engine, its configuration and its memory figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartupLog {
    pub engine: LogEngine,
    pub config: LoggedConfig,
    pub facts: Vec<Fact>,
    /// The model a llama.cpp log describes (`print_info:` and the GGUF
    /// header dump), when it prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<LoggedModel>,
}

impl StartupLog {
    /// The figures of one kind, in log order.
    pub fn figures(&self) -> impl Iterator<Item = &Fact> {
        self.facts.iter()
    }

    /// The first fact whose figure `pick` accepts.
    pub fn first<T>(&self, pick: impl Fn(&Figure) -> Option<T>) -> Option<(usize, T)> {
        self.facts.iter().find_map(|f| pick(&f.figure).map(|v| (f.line, v)))
    }
}

/// Reads the memory lines of a start-up log; `None` when the text has none
/// of any engine's.
pub fn read(text: &str) -> Option<StartupLog> {
    let lines: Vec<(usize, String)> = text
        .lines()
        .enumerate()
        .filter(|&(i, l)| !(i == 0 && is_source_note(l)))
        .map(|(i, l)| (i + 1, plain(l)))
        .collect();
    let candidates = [
        (LogEngine::Vllm, vllm::read(&lines)),
        (LogEngine::Sglang, sglang::read(&lines)),
        (LogEngine::LlamaCpp, llamacpp::read(&lines)),
    ];
    candidates.into_iter().filter(|(_, (_, facts))| !facts.is_empty()).max_by_key(|(_, (_, facts))| facts.len()).map(
        |(engine, (mut config, facts))| {
            if engine != LogEngine::LlamaCpp {
                config.device_name = lines.iter().find_map(|(_, l)| moe_config_device(l));
            }
            let model = if engine == LogEngine::LlamaCpp { logged_model::read(&lines) } else { None };
            StartupLog { engine, config, facts, model }
        },
    )
}

/// The weight format a logged quantization method loads a 16-bit
/// checkpoint in (vLLM's engine configuration `quantization=` and
/// non-default args, SGLang's server args, a command line's
/// `--quantization`): vLLM's online FP8 with one scale per tensor
/// (`quantization/fp8.py`, a checkpoint without `weight_block_size`); AWQ
/// and GPTQ at their usual 4 bits in groups of 128 (the Marlin kernels
/// load the same checkpoints); bitsandbytes quantised in flight, NF4 with
/// its absmax quantised again (`model_loader/bitsandbytes_loader.py`,
/// 0.11.0: `quantize_4bit(compress_statistics=True, quant_type="nf4")`);
/// Intel's AutoRound checkpoints (`auto-round`, `auto_round`, `inc`) as the
/// GPTQ-packed int4 in groups of 128 they default to: vLLM 0.19 – 0.34
/// `quantization/__init__.py` loads `auto-round` and `inc` with `INCConfig`
/// (and `INCConfig.override_quantization_method` turns a checkpoint's
/// `quant_method: "auto-round"` into `inc` whatever `--quantization` said),
/// whose packing defaults to `auto_round:auto_gptq` (0.21 `inc.py`
/// `from_config`, 0.34 `inc/inc.py` `DEFAULT_INT_PACKING_FORMAT`), and
/// AutoRound's own default scheme is W4A16 in groups of 128 (a copy whose
/// name says 8 bits is not planned at 4 by [`logged_base_preset`], as for
/// GPTQ);
/// else a format's own name (`mxfp4`, `nvfp4`). `None` for a method whose
/// scheme the name leaves open (`compressed-tensors`, `modelopt`, `gguf`, …).
pub fn quantization_format(method: &str) -> Option<crate::formats::WeightFormat> {
    use crate::formats::WeightFormat;
    Some(match method.trim().to_ascii_lowercase().as_str() {
        "fp8" | "fbgemm_fp8" | "w8a8_fp8" => WeightFormat::Fp8 { block: None },
        "awq" | "awq_marlin" => WeightFormat::Awq { bits: 4, group_size: 128 },
        "gptq" | "gptq_marlin" | "inc" | "auto-round" | "auto_round" => WeightFormat::Gptq { bits: 4, group_size: 128 },
        "bitsandbytes" => WeightFormat::Bnb4 { nf4: true, double_quant: true },
        other => return WeightFormat::parse(other).ok(),
    })
}

/// `cpu_offload_gb`'s GiB as a log or a command line writes it, when it is
/// a decimal within [`crate::engines::vllm::MAX_CPU_OFFLOAD_GB`].
pub(crate) fn offload_gb(v: &str) -> Option<String> {
    let v = v.trim();
    let gb = crate::decimal::Decimal::parse(v).map(crate::decimal::Decimal::to_f64)?;
    (0.0..=crate::engines::vllm::MAX_CPU_OFFLOAD_GB as f64).contains(&gb).then(|| v.to_owned())
}

/// The device the fused-MoE kernel's config file names, with spaces for
/// its `_`: vLLM `fused_moe.py::get_config_file_name` (0.10 – 0.34) and
/// SGLang `fused_moe_triton` log the file they miss or load,
/// `E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json`,
/// the name being `torch.cuda.get_device_name().replace(" ", "_")`.
fn moe_config_device(line: &str) -> Option<String> {
    let rest = after(line, "device_name=")?;
    let end = rest.find([',', '\'', '"', ']', ')', ' ']).unwrap_or(rest.len());
    let name = rest[..end].trim_end_matches(".json").replace('_', " ");
    (!name.trim().is_empty()).then_some(name)
}

/// A saved log's first line naming where it was copied from (`# source:
/// URL (…)`, the fixtures' header): no engine prints it, and what it quotes
/// is another reader's words, not this start's figures. Line numbers still
/// count it, so a fact points at the line the file shows.
fn is_source_note(line: &str) -> bool {
    line.trim_start().starts_with("# source:")
}

/// One line without ANSI colour codes (`ESC [ … m`) and with tabs as spaces.
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(if c == '\t' { ' ' } else { c });
    }
    out
}

/// The text after the first `key` in `line`.
fn after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.find(key).map(|i| &line[i + key.len()..])
}

/// A size with its unit at the start of `text` (after spaces); `binary_si`
/// reads `GB` as 2^30 bytes (see `oom::scan::unit_bytes`).
fn size(text: &str, binary_si: bool) -> Option<u64> {
    let mut c = Cur::new(text.as_bytes(), 0);
    if binary_si { c.binary_size() } else { c.size() }
}

/// An unsigned integer at the start of `text`, `20,000` grouping allowed.
fn count(text: &str) -> Option<u64> {
    Cur::new(text.as_bytes(), 0).grouped_uint()
}

/// A decimal such as `0.90` or `10.79` in `1 / per_unit`s, rounded. Digits
/// past the ninth after the point are dropped before rounding: engines print
/// their own computed fractions in full (SGLang's automatic
/// `mem_fraction_static=0.8260405859375`, a Python float's repr of
/// `gpu_memory_utilization`), and nine digits decide any rounding here.
fn fixed(text: &str, per_unit: u64) -> Option<u64> {
    let t = text.trim_start();
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (whole, frac) = match t[..end].split_once('.') {
        Some((w, f)) => (w, f),
        None => (&t[..end], ""),
    };
    if whole.is_empty() && frac.is_empty() || frac.contains('.') {
        return None;
    }
    let frac = &frac[..frac.len().min(9)];
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let scale = 10u64.pow(frac.len() as u32);
    let frac: u64 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    whole.checked_mul(per_unit)?.checked_add((frac * per_unit + scale / 2) / scale)
}

/// `key=value` from a `k=v, k=v` configuration line: the value up to the
/// next `,` or `)`, without quotes.
fn field(line: &str, key: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = line[from..].find(key) {
        let at = from + i;
        let boundary = at == 0 || !line.as_bytes()[at - 1].is_ascii_alphanumeric() && line.as_bytes()[at - 1] != b'_';
        if boundary {
            let rest = &line[at + key.len()..];
            let rest = rest.strip_prefix('=')?;
            let end = rest.find([',', ')']).unwrap_or(rest.len());
            let value = rest[..end].trim().trim_matches(['\'', '"']);
            return (!value.is_empty() && value != "None").then(|| value.to_owned());
        }
        from = at + key.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_codes_and_fields() {
        assert_eq!(plain("\u{1b}[34m1.14\u{1b}[0m \u{1b}[32mI \u{1b}[0mllama_context:"), "1.14 I llama_context:");
        let line =
            "model='/m/Qwen', dtype=torch.bfloat16, max_seq_len=16384, quantization=None, tensor_parallel_size=2)";
        assert_eq!(field(line, "model").as_deref(), Some("/m/Qwen"));
        assert_eq!(field(line, "max_seq_len").as_deref(), Some("16384"));
        assert_eq!(field(line, "quantization"), None);
        assert_eq!(field(line, "tensor_parallel_size").as_deref(), Some("2"));
        assert_eq!(field("served_model_name=x, model=y", "model").as_deref(), Some("y"));
        assert_eq!(fixed("0.90", 1000), Some(900));
        assert_eq!(fixed("10.79x", 100), Some(1079));
        assert_eq!(fixed("x", 100), None);
        // Computed fractions printed in full (SGLang 0.5.8's automatic
        // mem_fraction_static, a Python float's repr).
        assert_eq!(fixed("0.8260405859375", 1000), Some(826));
        assert_eq!(fixed("0.6488409887512226", 1000), Some(649));
        assert_eq!(fixed("1.2.3", 1000), None);
        assert_eq!(size(" 53.31 GB", true), Some(5331 * (1 << 30) / 100));
        assert_eq!(size("1.95 MiB", false), Some(2_044_723));
    }

    #[test]
    fn a_source_note_is_not_read_as_the_log() {
        let quoted = "# source: https://example.org/a (the thread says \"Model loading took 9.00 GiB\")\n\
                      INFO worker.py] Model loading took 5.79 GiB memory and 2.1 seconds\n";
        let log = read(quoted).expect("a vLLM log");
        let weights: Vec<_> = log.facts.iter().map(|f| (f.line, f.figure)).collect();
        assert_eq!(weights, [(2, Figure::Weights { bytes: size("5.79 GiB", true).expect("a size") })]);
        // Only as the first line: a note is never a log by itself.
        assert_eq!(read("# source: Model loading took 9.00 GiB"), None);
    }

    #[test]
    fn text_without_startup_lines_is_not_a_log() {
        assert_eq!(read("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"), None);
        assert_eq!(read(""), None);
    }
}
