//! Parsing of pasted out-of-memory errors (PyTorch, vLLM, llama.cpp) into
//! figures in bytes: the input of the OOM diagnosis (issue 7).
//!
//! [`parse`] takes a whole pasted log, not just the message: the message may
//! be wrapped over lines, prefixed by log metadata on every line, repeated by
//! several ranks, quoted inside a Python `repr` or a JSON string, or buried in
//! a traceback. It never fails: text it does not recognise gives a report with
//! `kind: None` and a note saying so, and a message cut short gives the
//! figures it could read plus a note naming the missing ones. That is the
//! crate's rule for calculations with unknowns: a partial result plus
//! warnings rather than an error.
//!
//! Recognised messages:
//! - PyTorch's caching allocator, before 2.1 (`Tried to allocate X (GPU n; T
//!   total capacity; A already allocated; F free; R reserved in total by
//!   PyTorch)`, also the older `C cached` form) and from 2.1 (`GPU n has a
//!   total capacity of T of which F is free. Process P has M memory in use.
//!   … Of the allocated memory A is allocated by PyTorch, …`), on CUDA and on
//!   ROCm (`HIP out of memory`);
//! - PyTorch's MPS allocator on Apple silicon (`MPS backend out of memory
//!   (MPS allocated: A, other allocations: O, max allowed: L). Tried to
//!   allocate X on private pool.`);
//! - PyTorch's `cudaMallocAsync` backend (`Allocation on device n would
//!   exceed allowed memory. (out of memory)` and its table of figures);
//! - a bare `CUDA error: out of memory` or `CUBLAS_STATUS_ALLOC_FAILED`,
//!   raised outside the caching allocator;
//! - vLLM's three KV-cache start-up errors, and its sampler warm-up failure;
//! - SGLang's empty KV pool (`Not enough memory. Please try to increase
//!   --mem-fraction-static`, or a negative profiled token count before it);
//! - TGI's warm-up of its largest prefill batch (`Not enough memory to
//!   handle N prefill tokens`), with the PyTorch message that caused it;
//! - TensorRT-LLM's executor that could not create a component
//!   (`Executor creation failed due to insufficient GPU memory`);
//! - Ollama's host-RAM check (`model requires more system memory`);
//! - llama.cpp / ggml buffer allocation failures on CUDA, ROCm, Vulkan,
//!   SYCL (Intel GPUs through Level Zero: `UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY`,
//!   `can't allocate N Bytes of memory on device`) and (2023's) Metal; its warning that pinned host memory could not be had
//!   (`ggml_cuda_host_malloc: failed to allocate … of pinned memory`) is
//!   said to be no GPU failure, never read as one;
//! - PyTorch's MPS allocator refusing one buffer longer than Metal's
//!   `maxBufferLength` (`Invalid buffer size: X GB`);
//! - MLX on a Mac (mlx, mlx-lm, LM Studio's MLX engine): one array longer
//!   than Metal's largest buffer (`[metal::malloc] Attempting to allocate …
//!   greater than the maximum allowed buffer size of …`), and Metal out of
//!   memory (`[METAL] Command buffer execution failed: Insufficient Memory`,
//!   `[malloc] Unable to allocate N bytes`);
//! - transformers refusing a bitsandbytes model that `device_map="auto"`
//!   could not place on the GPUs (`Some modules are dispatched on the CPU or
//!   the disk`);
//! - and no error at all: SGLang's and vLLM's warnings that their KV cache
//!   was full while serving, so they evicted running requests to recompute
//!   later (SGLang's `KV cache pool is full. Retract requests.`, vLLM's
//!   `… is preempted by PreemptionMode.RECOMPUTE mode …` and its stats
//!   line's `Preemptions: N`). A paste with a real error beside them is
//!   that error's report.
//!
//! The parser is hand-written (the `scan` module has the primitives) because the
//! `regex` crate would add about 300 KB to the page's wasm bundle.

mod diagnose;
mod llama_cpp;
mod mlx;
mod normalize;
mod ollama;
mod pytorch;
pub(crate) mod scan;
mod sglang;
mod tgi;
mod transformers;
mod trtllm;
mod vllm;
mod workload;

pub use diagnose::{
    Cause, CauseId, ChecklistItem, ChecklistStep, DiagnoseContext, Diagnosis, DiagnosisFix, FixId, LIKELY_SCORE,
    LiveGpu, LiveProcess, Plan, PlanCheck, PresetModel, diagnose,
};
pub use workload::Workload;

/// Bytes as the notes and the diagnosis write them (`23.50 GiB`).
fn gib(bytes: u64) -> String {
    crate::units::format_bytes(bytes, crate::units::UnitSystem::Binary)
}

use serde::{Deserialize, Serialize};

/// Which message a report was read from. The figures mean the same across
/// backends; the kind tells which of them the message can carry at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OomKind {
    /// PyTorch before 2.1: `Tried to allocate X (GPU n; … total capacity; …)`.
    PytorchLegacy,
    /// PyTorch 2.1 and later: `… GPU n has a total capacity of …`.
    Pytorch,
    /// PyTorch's `cudaMallocAsync` allocator backend (2.0 and later,
    /// `PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync`): `Allocation on
    /// device n would exceed allowed memory. (out of memory)` with what
    /// PyTorch has allocated, the request, the device's total, CUDA's free
    /// and the fraction's limit; it caches nothing, so no reserved figure.
    PytorchAsync,
    /// PyTorch's MPS allocator (Apple silicon, aten/src/ATen/mps/MPSAllocator.mm,
    /// `MPSHeapAllocatorImpl::alloc_buffer_block`): what its heaps hold,
    /// the process's other Metal memory, the high-watermark limit
    /// (`PYTORCH_MPS_HIGH_WATERMARK_RATIO` × Metal's recommended working
    /// set; absent when the ratio is 0.0), the request and its pool. The
    /// GPU shares the Mac's memory, so no capacity or free figure.
    PytorchMps,
    /// PyTorch's MPS allocator refused one buffer as longer than Metal's
    /// `maxBufferLength` (MPSAllocator.mm, `alloc_buffer_block`:
    /// `TORCH_CHECK(size < m_max_buffer_size, "Invalid buffer size: ", …)`,
    /// 2.0 and later): one tensor, whatever memory is free.
    PytorchMpsBufferSize,
    /// `CUDA error: out of memory` (or HIP's, or `CUBLAS_STATUS_ALLOC_FAILED`)
    /// from the runtime or a library, outside PyTorch's caching allocator, so
    /// without figures: typically a CUDA context, cuBLAS workspace or NCCL
    /// buffer that did not fit.
    CudaError,
    /// vLLM: the model's max seq len is larger than the tokens the KV cache
    /// can hold.
    VllmMaxSeqLen,
    /// vLLM (V1 engine): the KV cache one max-length request needs is larger
    /// than the memory left for it.
    VllmKvCacheTooSmall,
    /// vLLM: no memory at all was left for KV cache blocks.
    VllmNoCacheBlocks,
    /// vLLM (V1): the GPU ran out while warming up the sampler (or pooler)
    /// with `max_num_seqs` dummy requests, after the KV cache was allocated.
    VllmSamplerWarmup,
    /// vLLM (V1): less of the GPU was free at start-up than
    /// `gpu_memory_utilization` asks for, so it stopped before loading
    /// anything: the rest was held by something else.
    VllmFreeBelowRequest,
    /// SGLang: the KV pool came out at zero or fewer tokens after the weights.
    SglangNoKvPool,
    /// SGLang's scheduler found its KV pool full while serving and retracted
    /// running requests to recompute later (managers/scheduler.py
    /// `update_running_batch`: `KV cache pool is full. Retract requests.`,
    /// 0.4.7 – 0.5.23; `Decode out of memory happened.` before, 0.4.6 and
    /// 0.4.4.post1 read).
    /// A warning: the server goes on, slower. Its `Testing retraction.` is a
    /// test mode and not read.
    SglangKvPoolFull,
    /// SGLang found no free KV slots for a batch even after retracting
    /// (mem_cache/allocation.py, 0.5.23: `Prefill out of memory. Try to
    /// lower your batch size.` or `Decode …`, a `RuntimeError`): the same
    /// pool too small for the load, and the server stops.
    SglangKvAllocFailed,
    /// vLLM V0 preempted a sequence group for want of KV cache space
    /// (core/scheduler.py `_preempt`, 0.6.6: `Sequence group X is
    /// preempted by PreemptionMode.RECOMPUTE mode because there is not
    /// enough KV cache space.`, or `.SWAP`). A warning, as above.
    VllmPreempted,
    /// vLLM V1's periodic stats line counting preemptions (v1/metrics/
    /// loggers.py `LoggingStatLogger.log`, 0.34, since vllm#28522: `…,
    /// Preemptions: N, GPU KV cache usage: X%`, printed only when N > 0). A
    /// warning, as above.
    VllmPreemptions,
    /// TGI: its start-up warm-up of the largest prefill batch
    /// (`--max-batch-prefill-tokens`) ran out of memory.
    TgiPrefillWarmup,
    /// TensorRT-LLM (PyTorch backend): a component of its executor did not
    /// fit at start-up (`Executor creation failed due to insufficient GPU
    /// memory`).
    TrtllmExecutorMemory,
    /// Ollama: the part of the model kept in system RAM is more than the
    /// host has free (RAM plus swap): host memory, not the GPU's.
    OllamaHostMemory,
    /// llama.cpp / ggml could not allocate a backend buffer.
    LlamaCpp,
    /// transformers: `device_map="auto"` left modules of a bitsandbytes
    /// model on the CPU or disk, which bitsandbytes refuses.
    QuantizedOffload,
    /// MLX refused one array as longer than Metal's largest buffer
    /// (mlx/backend/metal/allocator.cpp, `MetalAllocator::malloc`: `size >
    /// device_->maxBufferLength()`, mlx 0.9 – 0.32): one array, whatever
    /// memory is free.
    MlxBufferSize,
    /// MLX on Metal ran out of memory: a command buffer Metal could not run
    /// (`[METAL] Command buffer execution failed: Insufficient Memory
    /// (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)`,
    /// mlx/backend/metal/device.cpp, mlx 0.1 – 0.32) or a buffer Metal did
    /// not give (`[malloc] Unable to allocate N bytes`, allocator.cpp).
    /// The GPU shares the Mac's memory: no capacity or free figure.
    MlxOutOfMemory,
}

impl OomKind {
    /// The message's kind in a few words, as the page and the CLI name it
    /// (the backend, GPU and llama.cpp stage are said beside it).
    pub fn label(self) -> &'static str {
        match self {
            Self::PytorchLegacy => "PyTorch (before 2.1) out of memory",
            Self::Pytorch => "PyTorch (2.1+) out of memory",
            Self::PytorchAsync => "PyTorch (cudaMallocAsync backend) out of memory",
            Self::PytorchMps => "PyTorch MPS (Apple silicon) out of memory",
            Self::PytorchMpsBufferSize => "PyTorch MPS: one buffer longer than Metal allows",
            Self::CudaError => "CUDA error: out of memory (outside PyTorch's cache)",
            Self::VllmMaxSeqLen => "vLLM: max seq len larger than the KV cache",
            Self::VllmKvCacheTooSmall => "vLLM: KV cache too small for one request",
            Self::VllmNoCacheBlocks => "vLLM: no memory left for KV cache blocks",
            Self::VllmSamplerWarmup => "vLLM: out of memory warming up the sampler at start-up",
            Self::VllmFreeBelowRequest => "vLLM: less free at start-up than gpu_memory_utilization asks for",
            Self::SglangNoKvPool => "SGLang: no memory left for the KV pool at start-up",
            Self::SglangKvPoolFull => "SGLang: KV pool full, running requests retracted (slower, not a crash)",
            Self::SglangKvAllocFailed => "SGLang: no KV slots left for a batch (its pool too small for the load)",
            Self::VllmPreempted => "vLLM: KV cache full, a request preempted (slower, not a crash)",
            Self::VllmPreemptions => "vLLM: KV cache full, preemptions in its stats (slower, not a crash)",
            Self::TgiPrefillWarmup => "TGI: out of memory warming up the largest prefill batch at start-up",
            Self::TrtllmExecutorMemory => "TensorRT-LLM: a component did not fit while creating the executor",
            Self::OllamaHostMemory => "Ollama: not enough system memory (host RAM) to load the model",
            Self::LlamaCpp => "llama.cpp / ggml buffer allocation failed",
            Self::QuantizedOffload => {
                "transformers: the quantized model does not fit on the GPU (modules sent to CPU/disk)"
            }
            Self::MlxBufferSize => "MLX: one array longer than Metal allows in a buffer",
            Self::MlxOutOfMemory => "MLX (Metal) out of memory",
        }
    }
}

impl OomReport {
    /// The serving engine with a plan of its own that the paste shows ran
    /// out: its process's marks, or a message only it prints.
    pub fn serving_engine(&self) -> Option<crate::engines::EngineKind> {
        use crate::engines::EngineKind;
        let by_message = self.kind.and_then(OomKind::engine);
        if self.vllm_process || by_message == Some(EngineKind::Vllm) {
            Some(EngineKind::Vllm)
        } else if self.sglang_process || by_message == Some(EngineKind::Sglang) {
            Some(EngineKind::Sglang)
        } else {
            None
        }
    }
}

impl OomKind {
    /// A serving engine's warning that its KV cache was full while it
    /// served (it evicted requests to recompute later): no error.
    pub fn is_pool_full(self) -> bool {
        matches!(self, Self::SglangKvPoolFull | Self::VllmPreempted | Self::VllmPreemptions)
    }

    /// The engine with a plan of its own that alone prints this message.
    pub fn engine(self) -> Option<crate::engines::EngineKind> {
        use crate::engines::EngineKind;
        match self {
            Self::VllmMaxSeqLen
            | Self::VllmKvCacheTooSmall
            | Self::VllmNoCacheBlocks
            | Self::VllmSamplerWarmup
            | Self::VllmFreeBelowRequest
            | Self::VllmPreempted
            | Self::VllmPreemptions => Some(EngineKind::Vllm),
            Self::SglangNoKvPool | Self::SglangKvPoolFull | Self::SglangKvAllocFailed => Some(EngineKind::Sglang),
            Self::PytorchLegacy
            | Self::Pytorch
            | Self::PytorchAsync
            | Self::PytorchMps
            | Self::PytorchMpsBufferSize
            | Self::CudaError
            | Self::TgiPrefillWarmup
            | Self::TrtllmExecutorMemory
            | Self::OllamaHostMemory
            | Self::LlamaCpp
            | Self::QuantizedOffload
            | Self::MlxBufferSize
            | Self::MlxOutOfMemory => None,
        }
    }
}

/// The GPU software stack named by the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuBackend {
    /// NVIDIA CUDA.
    Cuda,
    /// AMD ROCm (PyTorch says `HIP out of memory`, ggml names buffers `ROCm0`).
    Hip,
    /// Vulkan (ggml's `ggml_vulkan:` lines), on any vendor's GPU.
    Vulkan,
    /// Apple Metal (ggml's `ggml_metal_…` lines, MLX's `[metal::malloc]`
    /// and `[METAL]` messages).
    Metal,
    /// Intel GPUs through PyTorch's XPU backend (`XPU out of memory`, from
    /// PyTorch's own allocator or IPEX's): PyTorch's `torch.xpu` API, not
    /// `torch.cuda`, and none of NVIDIA's tools.
    Xpu,
    /// Apple silicon (or an Intel Mac's GPU) through PyTorch's MPS backend
    /// (`MPS backend out of memory`): `torch.mps`, the Mac's unified memory,
    /// none of CUDA's tools or settings.
    Mps,
    /// Intel GPUs through llama.cpp's SYCL backend (ggml-sycl) on Level
    /// Zero: `SYCL0` buffers, Unified Runtime's `UR_RESULT_ERROR_…` codes;
    /// devices chosen with `ONEAPI_DEVICE_SELECTOR`, not PyTorch's XPU.
    Sycl,
}

/// Which of the MPS allocator's pools the failed request was for
/// (MPSAllocator.mm: `UsageFlags::SHARED` buffers are visible to the CPU
/// too, private ones to the GPU only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MpsPool {
    Private,
    Shared,
}

/// Which of TensorRT-LLM's executor components did not fit, by the lever
/// its own message names for it (`tuning_knobs`, py_executor_creator.py).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrtllmComponent {
    /// The model's weights, or a draft model's: shard them, fewer `max_num_tokens`.
    Model,
    /// The KV cache, sized as a fraction of what was free: a lower fraction.
    KvCache,
    /// The sampler or drafter: a shorter `max_seq_len`.
    Sampler,
    /// The temporary estimation cache and the executor's other buffers:
    /// fewer `max_num_tokens`.
    Activations,
}

/// What llama.cpp was allocating when it failed: the checklist's "does it
/// fail at load or later" question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlamaCppStage {
    /// Loading the weights (`llama_model_load: error loading model`).
    ModelWeights,
    /// The KV cache for the context (`failed to allocate buffer for kv cache`).
    KvCache,
    /// The compute (graph) buffers (`failed to allocate compute buffers`).
    ComputeBuffers,
    /// Running the graph, after every buffer was allocated: a Metal command
    /// buffer failed for want of memory (`ggml_metal_graph_compute: command
    /// buffer 0 failed with status 5` / `error: Insufficient Memory
    /// (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)`,
    /// ggml-metal-context.m @a0ed91a).
    GraphCompute,
}

/// The step of serving a serving engine failed in: what its FAQ's levers
/// are chosen by (SGLang's docs, references/faq.md "CUDA Out of Memory").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServingPhase {
    /// A prefill (extend) batch: its chunk's activations.
    Prefill,
    /// A prefill that computed the prompt's input logprobs: logits over
    /// every prompt token from `logprob_start_len` on.
    InputLogprobs,
    /// A decode batch (or speculative decoding's verify step): the running
    /// requests' activations, logits and sampling.
    Decode,
}

/// Another process holding memory on the GPU, as PyTorch 2.1+ lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OomProcess {
    pub pid: Option<u32>,
    pub used_bytes: Option<u64>,
}

/// Everything read from a pasted out-of-memory error. Every size is in bytes,
/// converted exactly from the printed figure (`1.95 GiB` is
/// `round(1.95 × 2^30)`); a figure the message does not carry, or that could
/// not be read, is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OomReport {
    /// The recognised message; `None` when nothing was recognised.
    pub kind: Option<OomKind>,
    pub backend: Option<GpuBackend>,
    /// The single allocation that failed.
    pub requested_bytes: Option<u64>,
    pub gpu_index: Option<u32>,
    /// The GPU's total memory as the driver reports it.
    pub total_bytes: Option<u64>,
    /// Free on the GPU at the moment of failure, for all processes.
    pub free_bytes: Option<u64>,
    /// Allocated to live tensors by PyTorch (2.1+: including private pools).
    pub allocated_bytes: Option<u64>,
    /// Reserved by PyTorch's caching allocator in total: allocated plus
    /// reserved-but-unallocated. On MPS, "MPS allocated": the allocator's
    /// heaps, cached buffers included (`m_total_allocated_memory`).
    pub reserved_bytes: Option<u64>,
    /// Reserved by PyTorch but not allocated: the fragmentation the
    /// `expandable_segments` / `max_split_size_mb` settings address.
    pub reserved_unallocated_bytes: Option<u64>,
    /// Allocated in private pools (CUDA Graphs); part of `allocated_bytes`.
    pub private_pool_bytes: Option<u64>,
    /// This process's whole use of the GPU, PyTorch or not ("Including
    /// non-PyTorch memory, this process has M memory in use"). On MPS,
    /// "MPS allocated" plus "other allocations": Metal's
    /// `currentAllocatedSize` for the process, what
    /// `torch.mps.driver_allocated_memory()` returns.
    pub process_in_use_bytes: Option<u64>,
    /// The paste says one allocation is over a limit on single allocations,
    /// not over the GPU's memory ([`allocation_limit`]).
    #[serde(default)]
    pub allocation_limit: bool,
    /// The cap from `torch.cuda.set_per_process_memory_fraction`, when set.
    /// On MPS, "max allowed": the high-watermark limit,
    /// `PYTORCH_MPS_HIGH_WATERMARK_RATIO` (or
    /// `torch.mps.set_per_process_memory_fraction`) × Metal's recommended
    /// working set.
    pub allowed_bytes: Option<u64>,
    /// MPS: the pool the failed request was for.
    pub mps_pool: Option<MpsPool>,
    /// MLX: the largest buffer Metal gives this Mac (`maxBufferLength`), as
    /// `[metal::malloc]`'s message states it.
    #[serde(default)]
    pub max_buffer_bytes: Option<u64>,
    /// The engine function the error names as where it failed: ggml-sycl's
    /// `in function X at file:line` (ggml/src/ggml-sycl/common.hpp,
    /// `ggml_sycl_error`); ggml-metal's `ggml_metal_graph_compute` or
    /// `ggml_metal_synchronize` for a command buffer Metal could not run.
    #[serde(default)]
    pub failed_in: Option<String>,
    /// Other processes on the same GPU.
    pub processes: Vec<OomProcess>,
    /// vLLM: the model's max sequence length (`max_model_len`).
    pub max_seq_len: Option<u64>,
    /// vLLM: the tokens the KV cache can hold.
    pub kv_cache_tokens: Option<u64>,
    /// vLLM: the KV cache one max-length request needs.
    pub kv_needed_bytes: Option<u64>,
    /// vLLM: the memory left for the KV cache (0 when vLLM printed a negative
    /// figure; a note then says so).
    pub kv_available_bytes: Option<u64>,
    /// vLLM: the longest `max_model_len` that would fit, by its own estimate.
    pub estimated_max_model_len: Option<u64>,
    /// vLLM: how far below zero it computed the memory left for the KV cache.
    pub kv_deficit_bytes: Option<u64>,
    /// vLLM: the weights' memory as its start-up lines state it before the
    /// error (`Model loading took X GiB`, V1's gpu_model_runner.py; `Loading
    /// model weights took X GB`, before 0.8; V0's profile `model weights take
    /// X GiB`, worker/worker.py), each `bytes / 2^30`.
    pub weights_bytes: Option<u64>,
    /// vLLM: `gpu_memory_utilization` as the paste's command line, argument
    /// dict or memory profile names it, in thousandths.
    pub gpu_memory_utilization_permille: Option<u64>,
    /// vLLM: the KV cache's dtype as the paste names it (`--kv-cache-dtype
    /// fp8`, the engine config's `kv_cache_dtype=fp8`), lower-cased.
    pub kv_cache_dtype: Option<String>,
    /// vLLM: `max_num_batched_tokens` as the paste names it (its flag, the
    /// engine config, the args dict, a launcher's `MAX_NUM_BATCHED_TOKENS`).
    #[serde(default)]
    pub max_num_batched_tokens: Option<u64>,
    /// llama.cpp: what was being allocated.
    pub llama_cpp_stage: Option<LlamaCppStage>,
    /// llama.cpp: the log is ik_llama.cpp's with its MLA cache (`KV self
    /// size = …, c^KV (f16): …`, src/llama.cpp@18b0375:21243-21250), whose
    /// attention batch `-amb` caps.
    pub ik_mla: bool,
    /// llama.cpp: the failure came through Ollama, which runs llama.cpp as
    /// its runner and reports `llama runner process has terminated: …`
    /// (llm/server.go, 0.1 – 0.12; `llama runner process no longer running:
    /// …` in 0.1.32) or logs `msg="llama runner terminated"`:
    /// its levers are Ollama's (`PARAMETER num_ctx`, `OLLAMA_*`), not
    /// llama-server's flags.
    pub via_ollama: bool,
    /// llama.cpp: every GPU its log names a buffer on (`CUDA3 KV buffer
    /// size`, `ROCm1 model buffer size`, `on device 4`), ascending: the
    /// devices the model is split over, whichever one failed.
    pub devices_in_log: Vec<u32>,
    /// vLLM: how many distinct worker prefixes the log has (`(VllmWorker
    /// rank=1 pid=…)` in 0.8 – 0.9, `(Worker_TP1 pid=…)` and
    /// `(Worker_PP1_TP0 pid=…)` from 0.10, v1/executor/multiproc_executor.py):
    /// more than one is a split over GPUs.
    pub worker_ranks: u32,
    /// The error came from a vLLM process (its workers' or engine core's
    /// line prefixes, `(VllmWorker rank=…`, `(Worker_TP…`, `(EngineCore_DP…`,
    /// V0's `(VllmWorkerProcess pid=…`, Ray's `(RayWorkerWrapper pid=…`;
    /// its launcher on a command line; its start-up lines; a traceback
    /// through its package: `vllm::process`, `vllm::traceback`): a PyTorch
    /// OOM there is vLLM's to fix with its flags, not `model.generate`'s.
    #[serde(default)]
    pub vllm_process: bool,
    /// The error came from an SGLang server (its launcher, its `sglang/srt/`
    /// sources in a traceback, its schedulers' `[… TP0]` line prefixes): a
    /// PyTorch OOM there is SGLang's to fix with its flags. Never set with
    /// [`Self::vllm_process`].
    #[serde(default)]
    pub sglang_process: bool,
    /// A PyTorch or CUDA error struck while CUDA graphs were being captured
    /// ([`graph_capture`]): after the engine sized its cache, in what its
    /// budget left, not while serving.
    #[serde(default)]
    pub graph_capture: bool,
    /// A serving engine failed while it served requests ([`vllm::serving`],
    /// [`sglang::serving`]): its traceback runs through the engine's step,
    /// after its KV cache (vLLM's blocks, SGLang's pool) was allocated whole
    /// at start-up, and through none of its start-up.
    #[serde(default)]
    pub serving: bool,
    /// Which step of serving the traceback shows, where the engine's frames
    /// tell it ([`sglang::phase`]; vLLM's step mixes prefills and decodes).
    #[serde(default)]
    pub serving_phase: Option<ServingPhase>,
    /// llama.cpp: why `--fit` gave up before the failure, in its own words
    /// (`failed to fit params to free device memory:
    /// model_params::tensor_buft_overrides already set by user, abort`,
    /// src/llama.cpp:349 and :751 @a0ed91a, `common_fit_params` once the fit
    /// moved to common/): logged as a warning, after which llama.cpp loads
    /// the flags as given, unfitted.
    #[serde(default)]
    pub fit_gave_up: Option<String>,
    /// llama.cpp: what `--fit` projected over its target before it gave up
    /// (`cannot meet free memory target of 1024 MiB, need to reduce device
    /// memory by 3523 MiB`, `llama_params_fit_impl`).
    #[serde(default)]
    pub fit_shortfall_bytes: Option<u64>,
    /// llama.cpp: the failure is the multimodal projector's (`--mmproj`,
    /// tools/mtmd/clip.cpp) warm-up, after `warmup: warmup with image size =
    /// W x H` (clip.cpp:1954 @a0ed91a): the vision encoder's compute buffer
    /// on the GPU clip.cpp chose (`clip_ctx: CLIP using CUDA0 backend`),
    /// loaded after the text model filled the GPUs.
    #[serde(default)]
    pub clip_warmup: bool,
    /// llama.cpp: the projector clip.cpp loaded (`load_hparams: projector:
    /// qwen3vl_merger`), when the paste prints it.
    #[serde(default)]
    pub clip_projector: Option<String>,
    /// llama.cpp: the projector's weights (`load_hparams: model size:
    /// 2198.75 MiB`, clip.cpp), which sit on the same GPU as its warm-up.
    #[serde(default)]
    pub clip_model_bytes: Option<u64>,
    /// llama.cpp: `pipeline parallelism enabled (n_copies=N)`
    /// (src/llama-context.cpp): each GPU keeps N copies of its compute
    /// buffers.
    pub pipeline_copies: Option<u64>,
    /// vLLM: `--pipeline-parallel-size N` (or `-pp N`,
    /// `pipeline_parallel_size=N`) as the paste names it.
    pub pipeline_parallel_size: Option<u64>,
    /// vLLM: `VLLM_PP_LAYER_PARTITION=a,b,…`, the layers of each pipeline
    /// stage, as the paste sets it.
    pub pp_layer_partition: Vec<u64>,
    /// The messages on several GPUs carry the same request and allocation:
    /// ranks of a symmetric (tensor-parallel) split, not one overloaded GPU.
    pub same_on_every_gpu: bool,
    /// vLLM: how many dummy requests the sampler warm-up ran.
    pub warmup_requests: Option<u64>,
    /// SGLang: `mem_fraction_static` as the error names it, in thousandths.
    pub mem_fraction_static_permille: Option<u64>,
    /// A full KV cache's warning: the requests it evicted. SGLang:
    /// `#retracted_reqs` of its last retraction; vLLM V0:
    /// `total_num_cumulative_preemption`, every preemption since start;
    /// V1: `Preemptions` of the last stats interval (10 s by default,
    /// `VLLM_LOG_STATS_INTERVAL`).
    #[serde(default)]
    pub preempted_requests: Option<u64>,
    /// SGLang: the new-token ratio its last retraction set (`#new_token_ratio:
    /// a -> b`), in thousandths: the share of each running request's
    /// remaining `max_new_tokens` it keeps free before it admits more.
    #[serde(default)]
    pub new_token_ratio_permille: Option<u64>,
    /// A full KV cache's warning: how full the cache was, in thousandths.
    /// vLLM's `GPU KV cache usage: X%` (V1's stats line itself, V0's last
    /// stats line before the warning); SGLang's last `Decode batch` line's
    /// `token usage` (`full token usage` of a sliding-window model).
    #[serde(default)]
    pub kv_cache_usage_permille: Option<u64>,
    /// SGLang, beside a full pool's warning: what was free on the GPU after
    /// the weights, the pool and the CUDA graphs at start-up, which its
    /// activations get (`available_gpu_mem=X GB`, managers/scheduler.py,
    /// GiB printed as GB).
    #[serde(default)]
    pub available_gpu_mem_bytes: Option<u64>,
    /// The error came from a TGI server (its launcher's, router's or
    /// shards' log targets, its launcher or image: `tgi::process`): its
    /// levers are the launcher's flags. Never set with the other two.
    #[serde(default)]
    pub tgi_process: bool,
    /// A PyTorch error from a workload other than LLM inference, as the
    /// paste shows it (`workload.rs`): its fixes are its own. Never set
    /// with a serving engine's process.
    #[serde(default)]
    pub workload: Option<Workload>,
    /// How many distinct `[rankN]:` prefixes the paste has (torchrun's
    /// workers): more than one is work on several GPUs.
    #[serde(default)]
    pub distributed_ranks: u32,
    /// TGI: the tokens of the prefill batch its warm-up ran.
    pub prefill_tokens: Option<u64>,
    /// TensorRT-LLM: the executor component that did not fit.
    pub trtllm_component: Option<TrtllmComponent>,
    /// Ollama: the model's share that stays in system RAM.
    pub host_required_bytes: Option<u64>,
    /// Ollama: the host's free RAM plus free swap.
    pub host_available_bytes: Option<u64>,
    /// How many out-of-memory messages the text holds; the report describes
    /// the last complete one.
    pub occurrences: u32,
    /// Every GPU index named by any of those messages, ascending: several
    /// GPUs hint at a multi-GPU split to rebalance.
    pub gpus_seen: Vec<u32>,
    /// What a person should know about how the text was read.
    pub notes: Vec<String>,
}

/// Reads the out-of-memory error in a pasted log. Never panics and never
/// fails; see the module documentation.
pub fn parse(text: &str) -> OomReport {
    // Read before normalising, which strips the workers' line prefixes.
    let worker_ranks = vllm::worker_ranks(text.as_bytes());
    // vLLM's own prefixes and launchers first; then SGLang's, whose early
    // releases ran vLLM's layers, so a traceback through `vllm/` alone says
    // vLLM only when nothing says SGLang.
    let raw = text.as_bytes();
    let vllm_marked = worker_ranks > 0 || vllm::process(raw);
    let sglang_process = !vllm_marked && sglang::process(raw);
    // TGI 1.x ran vLLM's kernels: a `vllm/` frame in its traceback is not vLLM.
    let tgi_process = !vllm_marked && !sglang_process && tgi::process(raw);
    let vllm_process = vllm_marked || (!sglang_process && !tgi_process && vllm::traceback(raw));
    let ollama_process = ollama::process(raw);
    let text = normalize::normalize(text);
    let t = text.as_bytes();

    let mut found = Vec::new();
    pytorch::scan(t, &mut found);
    vllm::scan(t, &mut found);
    sglang::scan(t, &mut found);
    ollama::scan(t, &mut found);
    sglang::pool_full(t, &mut found);
    sglang::alloc_failed(t, &mut found);
    llama_cpp::scan(t, &mut found);
    mlx::scan(t, &mut found);
    transformers::scan(t, &mut found);
    tgi::scan(t, &mut found);
    trtllm::scan(t, &mut found);
    crate::order::sort_by_key(&mut found, |o| o.start);
    llama_cpp::fold_echoes(&mut found);
    tgi::fold_cause(&mut found);
    // A full KV cache's warnings are the engine coping, not failing: a real
    // error in the same paste is what the report describes.
    let warnings = found.iter().filter(|o| o.report.kind.is_some_and(OomKind::is_pool_full)).count();
    let beside_error = warnings > 0 && warnings < found.len();
    if beside_error {
        found.retain(|o| !o.report.kind.is_some_and(OomKind::is_pool_full));
    }

    let pinned = llama_cpp::pinned_warning(t).map(|(from, to)| pinned_note(&text, from, to));
    let Some(last) = found.len().checked_sub(1) else {
        let mut report = unrecognised(&text);
        if let Some(note) = pinned {
            report.notes = vec![format!("No GPU out-of-memory error here. {note}")];
        }
        return report;
    };
    let mut gpus_seen: Vec<u32> = found.iter().filter_map(|o| o.report.gpu_index).collect();
    crate::order::sort(&mut gpus_seen);
    gpus_seen.dedup();
    let count = found.len();
    let same_on_every_gpu = gpus_seen.len() > 1 && symmetric(&found);
    let chosen = found.iter().rposition(|o| missing_fields(&o.report).is_empty()).unwrap_or(last);
    // vLLM's sampler warm-up re-raises PyTorch's own message, which comes
    // first in the same traceback with the figures the re-raise leaves out.
    // (Within one traceback's reach: an earlier run's or rank's message is
    // not this one's.)
    const SAME_TRACEBACK_BYTES: usize = 32 * 1024;
    let warmup = found.get(chosen).filter(|o| o.report.kind == Some(OomKind::VllmSamplerWarmup)).map(|o| o.start);
    let torch_figures = warmup
        .and_then(|at| {
            found.get(..chosen)?.iter().rev().take_while(|o| at - o.start <= SAME_TRACEBACK_BYTES).find(|o| {
                matches!(o.report.kind, Some(OomKind::Pytorch | OomKind::PytorchLegacy | OomKind::PytorchAsync))
                    && missing_fields(&o.report).is_empty()
            })
        })
        .map(|o| o.report.clone());
    let Occurrence { start, mut report } = found.swap_remove(chosen);
    if let Some(torch) = torch_figures {
        let mut notes = torch.notes.clone();
        notes.append(&mut report.notes);
        report = OomReport { kind: report.kind, warmup_requests: report.warmup_requests, notes, ..torch };
    }

    vllm::fill_context(t, start, vllm_process, &mut report);
    if matches!(report.kind, Some(OomKind::SglangKvPoolFull | OomKind::SglangKvAllocFailed)) {
        sglang::pool_context(t, start, &mut report);
    }
    if beside_error {
        report.notes.push(format!(
            "The paste also has {warnings} warning(s) that the serving engine's KV cache was full (requests evicted \
             and recomputed later): they slow serving but crash nothing; this report is the error's."
        ));
    }
    let missing = missing_fields(&report);
    if !missing.is_empty() {
        report.notes.push(format!("The message looks cut short or altered: could not read {}.", missing.join(", ")));
    }
    if count > 1 {
        report.notes.push(if report.kind.is_some_and(OomKind::is_pool_full) {
            format!("Found {count} of these warnings; this report reads the last complete one.")
        } else {
            format!("Found {count} out-of-memory messages; this report describes the last complete one.")
        });
    }
    if chosen != last {
        report.notes.push("The last message is incomplete, so an earlier complete one is reported.".into());
    }
    if gpus_seen.len() > 1 {
        let list: Vec<String> = gpus_seen.iter().map(u32::to_string).collect();
        report.notes.push(if same_on_every_gpu {
            format!(
                "The messages on GPUs {} ask for the same memory with the same amount allocated: ranks of a \
                 symmetric split, each as full as the others.",
                list.join(", ")
            )
        } else {
            format!(
                "The messages name several GPUs ({}): check whether one GPU of the split is overloaded.",
                list.join(", ")
            )
        });
    }
    // llama.cpp's failure in Ollama's own log: its levers are Ollama's.
    if report.kind == Some(OomKind::LlamaCpp) {
        report.via_ollama |= ollama_process;
        // llm/server.go (0.12 and later) retries a layout that did not fit
        // with fewer layers on the GPUs before it gives up.
        if scan::find(t, 0, t.len(), "model layout did not fit, applying backoff").is_some() {
            report.notes.push(
                "Ollama logged \"model layout did not fit, applying backoff\": it retries with fewer layers on the \
                 GPUs by itself, so this failure may not be the last word; memory another model still held (one \
                 just unloaded) is a common reason."
                    .into(),
            );
        }
    }
    report.notes.extend(pinned);
    report.allocation_limit |= allocation_limit(t, report.kind);
    report.graph_capture = matches!(
        report.kind,
        Some(OomKind::Pytorch | OomKind::PytorchLegacy | OomKind::PytorchAsync | OomKind::CudaError)
    ) && graph_capture(t);
    report.same_on_every_gpu = same_on_every_gpu;
    report.worker_ranks = worker_ranks;
    report.vllm_process = vllm_process;
    report.serving = (vllm_process && vllm::serving(t)) || (sglang_process && sglang::serving(t));
    report.serving_phase = (report.serving && sglang_process).then(|| sglang::phase(t)).flatten();
    report.sglang_process = sglang_process;
    if sglang_process || matches!(report.kind, Some(OomKind::SglangKvPoolFull | OomKind::SglangKvAllocFailed)) {
        // The error's own figure, where it gives one, is what the run asked for.
        report.mem_fraction_static_permille =
            report.mem_fraction_static_permille.or_else(|| sglang::mem_fraction_static(t));
    }
    report.tgi_process = tgi_process;
    report.distributed_ranks = workload::distributed_ranks(raw);
    let torch = matches!(
        report.kind,
        Some(
            OomKind::Pytorch
                | OomKind::PytorchLegacy
                | OomKind::PytorchAsync
                | OomKind::PytorchMps
                | OomKind::PytorchMpsBufferSize
                | OomKind::CudaError
        )
    );
    if torch && !vllm_process && !sglang_process && !tgi_process {
        report.workload = workload::workload(raw);
    }
    report.occurrences = u32::try_from(count).unwrap_or(u32::MAX);
    report.gpus_seen = gpus_seen;
    report
}

/// Whether the paste says an allocation is over a limit on one allocation:
/// ggml-vulkan's `Requested buffer size exceeds device buffer size limit`
/// or `… device memory allocation limit` (ggml/src/ggml-vulkan/ggml-vulkan.cpp,
/// `ggml_vk_create_buffer`: `size > device->max_buffer_size`, the driver's
/// `maxBufferSize`, or `> max_memory_allocation_size` in builds before it),
/// for a llama.cpp failure, but not the same words in the warning `Failed
/// to allocate pinned memory (…)`, after which ggml falls back to host
/// memory; IPEX's `Current platform can NOT allocate memory block with size
/// larger than 4GB!` (intel-extension-for-pytorch, csrc/gpu/runtime/
/// CachingDeviceAllocator.cpp, 2.x xpu: `kStatefulLimit`, on GPUs without
/// 2D block arrays such as Arc), for a PyTorch one.
fn allocation_limit(t: &[u8], kind: Option<OomKind>) -> bool {
    match kind {
        Some(OomKind::LlamaCpp) => ["exceeds device buffer size limit", "exceeds device memory allocation limit"]
            .into_iter()
            .flat_map(|m| scan::find_all(t, m))
            .any(|(start, _)| {
                let from = scan::line_start(t, start).max(start.saturating_sub(200));
                scan::find(t, from, start, "pinned memory").is_none()
            }),
        Some(OomKind::Pytorch | OomKind::PytorchLegacy | OomKind::PytorchAsync) => {
            scan::find(t, 0, t.len(), "can NOT allocate memory block with size larger than").is_some()
        }
        Some(OomKind::PytorchMpsBufferSize | OomKind::MlxBufferSize) => true,
        Some(
            OomKind::MlxOutOfMemory
            | OomKind::PytorchMps
            | OomKind::QuantizedOffload
            | OomKind::CudaError
            | OomKind::VllmMaxSeqLen
            | OomKind::VllmKvCacheTooSmall
            | OomKind::VllmNoCacheBlocks
            | OomKind::VllmSamplerWarmup
            | OomKind::VllmFreeBelowRequest
            | OomKind::SglangNoKvPool
            | OomKind::SglangKvPoolFull
            | OomKind::SglangKvAllocFailed
            | OomKind::VllmPreempted
            | OomKind::VllmPreemptions
            | OomKind::TgiPrefillWarmup
            | OomKind::TrtllmExecutorMemory
            | OomKind::OllamaHostMemory,
        )
        | None => false,
    }
}

/// Whether the paste shows CUDA graphs being captured when it failed: a
/// traceback through the capture (PyTorch's `torch.cuda.graph(…)` context
/// and its `capture_end()`, torch/cuda/graphs.py; vLLM's `capture_model`,
/// worker/model_runner.py 0.5 – 0.10 and v1/worker/gpu_model_runner.py;
/// SGLang's `Capture cuda graph failed` and `capture_one_batch_size`,
/// model_executor/cuda_graph_runner.py 0.4 – 0.5, whose other frames
/// (`replay`) run graphs already captured), or the engine's log opening a
/// capture it never reports done
/// (vLLM's `Capturing cudagraphs` or `Capturing the model for CUDA graphs`
/// without a later `Graph capturing finished`; SGLang's `Capture cuda graph
/// begin` without `Capture cuda graph end`).
fn graph_capture(t: &[u8]) -> bool {
    const TRACEBACK: [&str; 5] = [
        "torch.cuda.graph(",
        "capture_end()",
        "in capture_model",
        "Capture cuda graph failed",
        "in capture_one_batch_size",
    ];
    if TRACEBACK.into_iter().any(|m| scan::find(t, 0, t.len(), m).is_some()) {
        return true;
    }
    let last = |marks: &[&str]| marks.iter().filter_map(|m| scan::find_last(t, t.len(), m)).map(|(s, _)| s).max();
    // `scan` ignores case: "CUDA graph begin" is also the old `Capture cuda graph begin`.
    let begun = last(&[
        "Capturing cudagraphs",
        "Capturing CUDA graphs",
        "Capturing the model for CUDA graphs",
        "CUDA graph begin",
    ]);
    let done = last(&["Graph capturing finished", "CUDA graph end"]);
    match (begun, done) {
        (Some(b), Some(d)) => b > d,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Whether every message names a GPU and asks for the same bytes with the
/// same allocation (within 2 %, what two ranks' differing rounding and
/// bookkeeping allow): tensor-parallel ranks fail alike.
fn symmetric(found: &[Occurrence]) -> bool {
    let Some(first) = found.first().map(|o| &o.report) else { return false };
    let near = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => a.abs_diff(b) <= a.max(b) / 50,
        (None, None) => true,
        (Some(_), None) | (None, Some(_)) => false,
    };
    first.requested_bytes.is_some()
        && found.iter().all(|o| {
            o.report.gpu_index.is_some()
                && o.report.requested_bytes == first.requested_bytes
                && near(o.report.allocated_bytes, first.allocated_bytes)
        })
}

/// One message found in the text, before one is chosen for the report.
#[derive(Debug)]
struct Occurrence {
    /// Where the message starts in the normalised text, to order messages.
    start: usize,
    report: OomReport,
}

/// The fields a message of this kind always carries but that could not be
/// read, by their JSON names. Empty means the message is complete.
fn missing_fields(r: &OomReport) -> Vec<&'static str> {
    let required: &[(&'static str, bool)] = match r.kind {
        Some(OomKind::PytorchLegacy) => &[
            ("requested_bytes", r.requested_bytes.is_some()),
            ("gpu_index", r.gpu_index.is_some()),
            ("total_bytes", r.total_bytes.is_some()),
            ("allocated_bytes", r.allocated_bytes.is_some()),
            ("free_bytes", r.free_bytes.is_some()),
            ("reserved_bytes", r.reserved_bytes.is_some()),
        ],
        Some(OomKind::PytorchAsync) => &[
            ("requested_bytes", r.requested_bytes.is_some()),
            ("gpu_index", r.gpu_index.is_some()),
            ("total_bytes", r.total_bytes.is_some()),
            ("free_bytes", r.free_bytes.is_some()),
            ("allocated_bytes", r.allocated_bytes.is_some()),
        ],
        Some(OomKind::Pytorch) => &[
            ("requested_bytes", r.requested_bytes.is_some()),
            ("gpu_index", r.gpu_index.is_some()),
            ("total_bytes", r.total_bytes.is_some()),
            ("free_bytes", r.free_bytes.is_some()),
            ("allocated_bytes", r.allocated_bytes.is_some()),
            ("reserved_unallocated_bytes", r.reserved_unallocated_bytes.is_some()),
        ],
        Some(OomKind::PytorchMps) => &[
            ("requested_bytes", r.requested_bytes.is_some()),
            ("reserved_bytes", r.reserved_bytes.is_some()),
            ("process_in_use_bytes", r.process_in_use_bytes.is_some()),
        ],
        Some(OomKind::VllmMaxSeqLen) => {
            &[("max_seq_len", r.max_seq_len.is_some()), ("kv_cache_tokens", r.kv_cache_tokens.is_some())]
        }
        Some(OomKind::VllmKvCacheTooSmall) => &[
            ("max_seq_len", r.max_seq_len.is_some()),
            ("kv_needed_bytes", r.kv_needed_bytes.is_some()),
            ("kv_available_bytes", r.kv_available_bytes.is_some()),
        ],
        Some(OomKind::VllmFreeBelowRequest) => &[
            ("free_bytes", r.free_bytes.is_some()),
            ("total_bytes", r.total_bytes.is_some()),
            ("gpu_memory_utilization", r.gpu_memory_utilization_permille.is_some()),
        ],
        Some(OomKind::OllamaHostMemory) => &[
            ("host_required_bytes", r.host_required_bytes.is_some()),
            ("host_available_bytes", r.host_available_bytes.is_some()),
        ],
        Some(OomKind::PytorchMpsBufferSize) => &[("requested_bytes", r.requested_bytes.is_some())],
        Some(OomKind::MlxBufferSize) => {
            &[("requested_bytes", r.requested_bytes.is_some()), ("max_buffer_bytes", r.max_buffer_bytes.is_some())]
        }
        Some(OomKind::TgiPrefillWarmup) => &[("prefill_tokens", r.prefill_tokens.is_some())],
        Some(OomKind::TrtllmExecutorMemory) => &[("trtllm_component", r.trtllm_component.is_some())],
        Some(OomKind::SglangKvPoolFull | OomKind::VllmPreempted | OomKind::VllmPreemptions) => {
            &[("preempted_requests", r.preempted_requests.is_some())]
        }
        Some(
            OomKind::CudaError
            | OomKind::QuantizedOffload
            | OomKind::VllmNoCacheBlocks
            | OomKind::VllmSamplerWarmup
            | OomKind::SglangNoKvPool
            | OomKind::SglangKvAllocFailed
            | OomKind::LlamaCpp
            | OomKind::MlxOutOfMemory,
        )
        | None => &[],
    };
    required.iter().filter(|(_, present)| !present).map(|(name, _)| *name).collect()
}

/// What ggml's pinned-memory warning means ([`llama_cpp::pinned_warning`]):
/// host RAM, not the GPU, and a fallback rather than a failure.
/// `GGML_CUDA_NO_PINNED` is read by `ggml_cuda_host_malloc` (ggml-cuda.cu, b8211).
fn pinned_note(text: &str, from: usize, to: usize) -> String {
    format!(
        "\"{}\" is llama.cpp's warning that CUDA could not pin (page-lock) host RAM for a buffer kept on the CPU: \
         it then uses ordinary host memory and goes on, a little slower to copy. It is not the GPU running out; \
         GGML_CUDA_NO_PINNED=1 skips pinning and the warning.",
        excerpt(text, from, to, 160)
    )
}

/// The report for text with no recognised message: says whether it at least
/// mentions running out of memory, quoting the line.
fn unrecognised(text: &str) -> OomReport {
    let t = text.as_bytes();
    let hit = scan::find(t, 0, t.len(), "out of memory").or_else(|| scan::find(t, 0, t.len(), "OutOfMemory"));
    let note = match hit {
        Some((start, _)) => {
            let from = scan::line_start(t, start);
            let to = scan::line_end(t, start, 0);
            format!(
                "This mentions running out of memory, but not in a format Headroom reads \
                 (PyTorch on CUDA, ROCm, XPU or MPS, transformers' bitsandbytes loading, vLLM, SGLang, TGI, TensorRT-LLM, llama.cpp, Ollama or MLX): \"{}\".",
                excerpt(text, from, to, 200)
            )
        }
        None => "No out-of-memory message found. Paste the whole error as the engine printed it: \
                 PyTorch's `torch.OutOfMemoryError: CUDA out of memory …`, vLLM's or SGLang's start-up \
                 error, llama.cpp's `failed to allocate …` lines or Ollama's `Error: …` line."
            .to_owned(),
    };
    OomReport { notes: vec![note], ..OomReport::default() }
}

/// `text[from..to]`, at most `max` bytes, cut at character boundaries.
fn excerpt(text: &str, from: usize, to: usize, max: usize) -> String {
    let mut from = from.min(text.len());
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = to.min(text.len()).min(from.saturating_add(max)).max(from);
    while !text.is_char_boundary(to) {
        to -= 1;
    }
    text.get(from..to).unwrap_or_default().trim().to_owned()
}
