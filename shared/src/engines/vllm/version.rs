//! The vLLM releases whose memory rules Headroom models, each frozen once
//! released (share links pin one).

use serde::{Deserialize, Serialize};

/// The vLLM releases whose memory rules the estimator models, oldest first.
/// Each variant's rules are frozen once released: a share link that names it
/// (`vllm=v1`) means the same plan in every later Headroom. A new vLLM rule
/// set is a new variant (and [`Version::LATEST`] moves), never an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub enum Version {
    /// The V0 engine (vLLM ≤ 0.7): utilization 0.90, no chunked prefill below
    /// 32K context, sliding windows not per layer, CUDA graphs unaccounted.
    #[serde(rename = "v0")]
    V0,
    /// The V1 engine (0.8 – 0.9): utilization 0.90, chunked prefill, KV
    /// groups for sliding-window layers, CUDA graphs unaccounted.
    #[serde(rename = "v1")]
    V1,
    /// vLLM 0.10 read a second time, from the 0.11.0 source and real
    /// 0.10.1.1 start-up logs: as [`Version::V1`], but the profile run's peak
    /// is its larger half, not the sum (`gpu_model_runner.py::profile_run`
    /// runs the dummy forward pass, frees it, then the sampler), and the
    /// sampler's logits are the whole vocabulary on every rank.
    #[serde(rename = "0.10")]
    V0_10,
    /// vLLM 0.11 – 0.17 read from the 0.11.0 – 0.13.0 source and their
    /// start-up logs: as [`Version::V0_10`], but the sampler the profile
    /// runs is PyTorch's native top-k/top-p sort ([`super::Sampler::Native`]:
    /// FlashInfer is an optional extra of the 0.11 wheels, and from 0.12
    /// `VLLM_USE_FLASHINFER_SAMPLER` defaults to off), with several GPUs the
    /// memory outside PyTorch is what the profile adds after the NCCL
    /// set-up (0.11 moved the snapshot after `init_worker_distributed_environment`),
    /// and a fused-MoE layer peaks as `fused_experts_impl` allocates.
    #[serde(rename = "0.12")]
    V0_12,
    /// vLLM 0.11 read a second time, from the 0.11.0 source and a 0.11.0
    /// Qwen3-VL log, for multimodal models: as [`Version::V0_12`], with the
    /// rotary tables counted as weights ([`Version::V0_19Rope`]) and the
    /// encoder's profile as 0.11 runs it (`gpu_model_runner.py::profile_run`,
    /// `encoder`): each item's output padded to the encoder budget
    /// ([`EncoderPadding::Budget`]), the dummy pixels kept in fp32 through
    /// the text's run, and Qwen3-VL's largest video counted 12.5 × its tokens.
    #[serde(rename = "0.11-mm")]
    V0_11Mm,
    /// vLLM 0.12, as [`Version::V0_11Mm`] with each output padded to its
    /// modality's largest item instead ([`EncoderPadding::LargestItem`],
    /// 0.12.0 `profile_run`; two 0.12.0 Qwen3-VL logs). 0.13.0 dropped the
    /// padding and Qwen3-VL's 12.5.
    #[serde(rename = "0.12-mm")]
    V0_12Mm,
    /// vLLM 0.13 – 0.17, as [`Version::V0_12Mm`] without the padding and
    /// Qwen3-VL's 12.5 (0.13.0 `profile_run` keeps each output as the tower
    /// returns it, `qwen3_vl.py::get_max_video_tokens` counts its tokens).
    #[serde(rename = "0.17-mm")]
    V0_17Mm,
    /// vLLM 0.18 – 0.19 read from the 0.18.0 source and a 0.18.1 log: as
    /// [`Version::V0_12`], with Triton's top-k/top-p sampler
    /// ([`super::Sampler::Triton`], the 0.18 default) and the modular
    /// fused-MoE kernel's workspace.
    #[serde(rename = "0.18")]
    V0_18,
    /// vLLM 0.18 – 0.19 read a second time, from the 0.19.1 source and
    /// fifteen 0.19.0 start-up logs at DEBUG level: as [`Version::V0_18`],
    /// with the memory outside PyTorch that the profile window holds from
    /// 0.19 ([`super::NON_TORCH_SINGLE_0_19`], and at TP ≥ 2 on NVSwitch
    /// boards [`super::NON_TORCH_TP2_NVSWITCH_0_19`]) and Triton's sampler
    /// with its byte per logit more ([`super::TRITON_SAMPLER_EXTRA_BYTES`]).
    #[serde(rename = "0.19")]
    V0_19,
    /// vLLM 0.21 and later: utilization 0.92 (`vllm/config/cache.py`), CUDA
    /// graphs estimated and subtracted from the KV budget
    /// (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`, "default since v0.21.0").
    #[serde(rename = "0.21")]
    V0_21,
    /// vLLM 0.21 and later read a second time, from the 0.33.0 source: as
    /// [`Version::V0_21`], with the profile peak of [`Version::V0_10`].
    #[serde(rename = "0.33")]
    V0_33,
    /// vLLM 0.20 and later read a third time, from the 0.20.2 and 0.24.0
    /// source (the profile window, `flashinfer_all_reduce.py` and the
    /// sampler as in 0.19.1): as [`Version::V0_33`], with
    /// [`Version::V0_19`]'s memory outside PyTorch and sampler bytes.
    #[serde(rename = "0.24")]
    V0_24,
    /// vLLM 0.18 – 0.19 read a third time, from the 0.19.1 source and the
    /// Gemma 3 and Llama 4 Scout 0.19.0 logs: as [`Version::V0_19`], with the
    /// rotary cos/sin tables vLLM builds with the model counted as weights
    /// ([`super::rope_table_bytes`]).
    #[serde(rename = "0.19-rope")]
    V0_19Rope,
    /// vLLM 0.20 and later, as [`Version::V0_24`] with the rotary tables of
    /// [`Version::V0_19Rope`] (unchanged in the 0.20.2 – 0.24.0 source).
    #[serde(rename = "0.24-rope")]
    V0_24Rope,
    /// vLLM 0.18 – 0.19 read a fourth time, from the 0.19.1 and 0.24.0
    /// source for multimodal models: as [`Version::V0_19Rope`], with the
    /// vision tower's pass over the profile's largest images and their
    /// outputs kept through the text's (`gpu_model_runner.py::profile_run`,
    /// `encoder_budget.py`, issue 36).
    #[serde(rename = "0.19-mm")]
    V0_19Mm,
    /// vLLM 0.20 – 0.33, as [`Version::V0_24Rope`] with the encoder's
    /// profile of [`Version::V0_19Mm`].
    #[serde(rename = "0.24-mm")]
    V0_24Mm,
    /// vLLM 0.34 and later, read from the 0.34.0 source: as
    /// [`Version::V0_24Mm`], with the extensible KV cache that 0.34 turns on
    /// by default on CUDA and ROCm (`config/vllm.py::_resolve_extensible_kv_cache`;
    /// off with `--kv-cache-memory-bytes`). The pool is no longer the
    /// profile's estimate within `gpu_memory_utilization` (now 1.0 by
    /// default, `config/cache.py::resolved_gpu_memory_utilization`) but the
    /// memory measured free after warmup and CUDA-graph capture, less the
    /// transient peak and a margin of the larger of 1 GiB (3 GiB on ROCm) and
    /// ¾ of that peak (`v1/worker/extensible_kv_cache.py::measure_kv_cache_bytes`);
    /// the CUDA-graph estimate is skipped (`profile_cudagraph_memory`
    /// returns 0), the captured graphs are measured instead. The default
    /// block is 64 tokens (`CacheConfig.DEFAULT_BLOCK_SIZE`, 16 before).
    #[default]
    #[serde(rename = "0.34", alias = "latest")]
    V0_34,
    /// vLLM 0.18 – 0.19 read a fifth time, from the 0.19.0 source and its
    /// Qwen2.5-72B logs at TP 2 and 4: as [`Version::V0_19Mm`], with each
    /// weight tensor counted as PyTorch's caching allocator hands it out
    /// ([`super::block_slack_bytes`]): "Model loading took" is
    /// `torch.cuda.max_memory_allocated`, which counts whole blocks
    /// (`utils/mem_utils.py::DeviceMemoryProfiler`, `platforms/cuda.py`).
    /// From 0.21 `load_model` caps the allocator's splits at 20 MiB
    /// (`gpu_worker.py::_scoped_allocator_max_split`), another rule. Read
    /// after [`Version::LATEST`] and for older releases only: it sorts after
    /// it, and is not offered it as newer (`link::newer_engine`).
    #[serde(rename = "0.19-alloc")]
    V0_19Alloc,
    /// vLLM 0.17 read again, from the 0.17.0 and 0.17.1 source: as
    /// [`Version::V0_17Mm`], with Triton's top-k/top-p sampler
    /// ([`super::Sampler::Triton`]): 0.17.0 added
    /// `v1/sample/ops/topk_topp_triton.py`, which `apply_top_k_top_p` runs in
    /// place over the fp32 logits for 8 rows or more, where 0.11 – 0.16
    /// sort them (`apply_top_k_top_p_pytorch`). Read after
    /// [`Version::LATEST`] and for 0.17 only, as [`Version::V0_19Alloc`].
    #[serde(rename = "0.17-triton")]
    V0_17Triton,
    /// vLLM 0.20 – 0.33 read again, from the 0.21.0 source
    /// (`v1/worker/gpu_model_runner.py::profile_cudagraph_memory`,
    /// `gpu_worker.py::determine_available_memory`): as [`Version::V0_24Mm`],
    /// with what the KV budget takes for the CUDA graphs modelled as vLLM
    /// estimates it (`super::profiled_graph_bytes`: the two largest sizes of
    /// each mode captured, the larger first capture plus the second sample
    /// for each other size) instead of the per-layer rule. Read after
    /// [`Version::LATEST`] and for 0.20 – 0.33 only, as [`Version::V0_19Alloc`].
    #[serde(rename = "0.33-graphs")]
    V0_33Graphs,
    /// vLLM 0.11 read a third time, from the 0.11.2 – 0.16.0 source and
    /// PyTorch's sort: as [`Version::V0_11Mm`], with the native sampler's
    /// peak where `apply_top_k_top_p` sorts the logits
    /// ([`Version::native_sampler_sorts`]). Read after [`Version::LATEST`]
    /// and for older releases only, as [`Version::V0_19Alloc`].
    #[serde(rename = "0.11-sort")]
    V0_11Sort,
    /// vLLM 0.12, as [`Version::V0_12Mm`] with the native sampler's sort.
    #[serde(rename = "0.12-sort")]
    V0_12Sort,
    /// vLLM 0.13 – 0.16, as [`Version::V0_17Mm`] with the native sampler's
    /// sort (0.17 samples with Triton: [`Version::V0_17Triton`]).
    #[serde(rename = "0.16-sort")]
    V0_16Sort,
}

/// How a rule set counts the vision tower's profile run
/// ([`Version::encoder_profile`], `encoder::held`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncoderProfile {
    /// 0.19 – 0.24 (read from 0.24.0): the tower's pass, and its outputs at
    /// the text's width kept through the text's run.
    Outputs,
    /// 0.11 – 0.17: the outputs at the tower's full width and the dummy
    /// pixels in fp32 kept too, each output also `padding`-ed (0.11 – 0.12);
    /// read from `read_from`'s `profile_run`.
    Kept { padding: Option<EncoderPadding>, read_from: &'static str },
}

impl EncoderProfile {
    /// The release whose `profile_run` the rule was read from.
    pub fn read_from(self) -> &'static str {
        match self {
            Self::Outputs => "0.24.0",
            Self::Kept { read_from, .. } => read_from,
        }
    }
}

/// How vLLM 0.11 – 0.12's profile run pads the encoder's dummy outputs
/// (`gpu_model_runner.py::profile_run`: "we create dummy embeddings of size
/// (encode_budget, hidden_size) and scatter encoder output into it"), each
/// item's output copied into zeros of this many rows when it has fewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncoderPadding {
    /// 0.11.0 – 0.11.2: the encoder budget.
    Budget,
    /// 0.12.0: the modality's largest item (`mm_budget.max_tokens_by_modality`).
    LargestItem,
}

impl Version {
    /// Every known version, oldest first.
    pub const ALL: &[Version] = &[
        Self::V0,
        Self::V1,
        Self::V0_10,
        Self::V0_12,
        Self::V0_11Mm,
        Self::V0_12Mm,
        Self::V0_17Mm,
        Self::V0_18,
        Self::V0_19,
        Self::V0_21,
        Self::V0_33,
        Self::V0_24,
        Self::V0_19Rope,
        Self::V0_24Rope,
        Self::V0_19Mm,
        Self::V0_24Mm,
        Self::V0_34,
        Self::V0_19Alloc,
        Self::V0_17Triton,
        Self::V0_33Graphs,
        Self::V0_11Sort,
        Self::V0_12Sort,
        Self::V0_16Sort,
    ];
    /// The newest rules this build knows for every release: what a new plan
    /// gets ([`Version::V0_19Alloc`], read after it, covers 0.18 – 0.19 only).
    pub const LATEST: Version = Self::V0_34;
    /// Their ids, newest first (the page's choices).
    pub const IDS_NEWEST_FIRST: &[&str] = &[
        "0.33-graphs",
        "0.16-sort",
        "0.12-sort",
        "0.11-sort",
        "0.17-triton",
        "0.19-alloc",
        "0.34",
        "0.24-mm",
        "0.19-mm",
        "0.24-rope",
        "0.19-rope",
        "0.24",
        "0.33",
        "0.21",
        "0.19",
        "0.18",
        "0.17-mm",
        "0.12-mm",
        "0.11-mm",
        "0.12",
        "0.10",
        "v1",
        "v0",
    ];

    /// The id links and the CLI use: `v0`, `v1`, `0.10`, `0.12`, `0.18`, `0.19`, `0.21`, `0.33`, `0.24`.
    pub fn id(self) -> &'static str {
        match self {
            Self::V0 => "v0",
            Self::V1 => "v1",
            Self::V0_10 => "0.10",
            Self::V0_12 => "0.12",
            Self::V0_11Mm => "0.11-mm",
            Self::V0_12Mm => "0.12-mm",
            Self::V0_17Mm => "0.17-mm",
            Self::V0_18 => "0.18",
            Self::V0_19 => "0.19",
            Self::V0_21 => "0.21",
            Self::V0_33 => "0.33",
            Self::V0_24 => "0.24",
            Self::V0_19Rope => "0.19-rope",
            Self::V0_24Rope => "0.24-rope",
            Self::V0_19Mm => "0.19-mm",
            Self::V0_19Alloc => "0.19-alloc",
            Self::V0_17Triton => "0.17-triton",
            Self::V0_11Sort => "0.11-sort",
            Self::V0_12Sort => "0.12-sort",
            Self::V0_16Sort => "0.16-sort",
            Self::V0_24Mm => "0.24-mm",
            Self::V0_33Graphs => "0.33-graphs",
            Self::V0_34 => "0.34",
        }
    }

    /// The releases the rules cover, for people.
    pub fn releases(self) -> &'static str {
        match self {
            Self::V0 => "vLLM ≤ 0.7 (V0 engine)",
            Self::V1 => "vLLM 0.8 – 0.9 (V1 engine)",
            Self::V0_10 => "vLLM 0.10 (read from 0.11)",
            Self::V0_12 => "vLLM 0.11 – 0.17 (read from 0.11 – 0.13)",
            Self::V0_11Mm => "vLLM 0.11 (with the vision profile)",
            Self::V0_12Mm => "vLLM 0.12 (with the vision profile)",
            Self::V0_17Mm => "vLLM 0.13 – 0.17 (with the vision profile)",
            Self::V0_18 => "vLLM 0.18 – 0.19",
            Self::V0_19 => "vLLM 0.18 – 0.19 (read from 0.19)",
            Self::V0_21 => "vLLM 0.20 – 0.33",
            Self::V0_33 => "vLLM 0.20 – 0.33 (read from 0.33)",
            Self::V0_24 => "vLLM 0.20 – 0.33 (read from 0.24)",
            Self::V0_19Rope => "vLLM 0.18 – 0.19 (with rotary tables)",
            Self::V0_24Rope => "vLLM 0.20 – 0.33 (with rotary tables)",
            Self::V0_19Mm => "vLLM 0.18 – 0.19 (with the vision profile)",
            Self::V0_19Alloc => "vLLM 0.18 – 0.19 (with the allocator's blocks)",
            Self::V0_17Triton => "vLLM 0.17 (with Triton's sampler)",
            Self::V0_11Sort => "vLLM 0.11 (with the native sampler's sort)",
            Self::V0_12Sort => "vLLM 0.12 (with the native sampler's sort)",
            Self::V0_16Sort => "vLLM 0.13 – 0.16 (with the native sampler's sort)",
            Self::V0_24Mm => "vLLM 0.20 – 0.33 (with the vision profile)",
            Self::V0_33Graphs => "vLLM 0.20 – 0.33 (with vLLM's own CUDA-graph estimate)",
            Self::V0_34 => "vLLM 0.34+ (the extensible KV cache)",
        }
    }

    /// What this version's rules changed from the previous version's.
    pub fn changes(self) -> &'static str {
        match self {
            Self::V0 => "the V0 engine: no chunked prefill below 32K context",
            Self::V1 => "chunked prefill and KV groups for sliding-window layers",
            Self::V0_10 => "the profile peak is the larger of the forward pass and the sampler",
            Self::V0_12 => "the native sampler, NCCL outside the budget, the fused-MoE peak",
            Self::V0_11Mm | Self::V0_12Mm => {
                "0.11 – 0.12's vision profile: rotary tables, padded encoder outputs, the pixels kept"
            }
            Self::V0_17Mm => "0.13 – 0.17's vision profile: rotary tables, encoder outputs and pixels kept",
            Self::V0_18 => "the Triton sampler and the modular fused-MoE workspace",
            Self::V0_21 => "utilization 0.92 instead of 0.90, and CUDA-graph memory subtracted from the KV budget",
            Self::V0_19 => "0.18 with TP's memory outside PyTorch",
            Self::V0_33 => "0.21 with the 0.10 profile peak",
            Self::V0_24 => "0.33 with 0.19's",
            Self::V0_19Rope | Self::V0_24Rope => "the rotary cos/sin tables counted as weights",
            Self::V0_19Mm | Self::V0_24Mm => "the vision tower's profile run over the largest images",
            Self::V0_34 => "the KV pool measured after warmup and CUDA graphs, utilization 1.0, blocks of 64",
            Self::V0_19Alloc => "the weights in the blocks PyTorch's allocator hands out",
            Self::V0_17Triton => "0.17's Triton top-k/top-p sampler instead of PyTorch's sort",
            Self::V0_33Graphs => {
                "the KV budget takes vLLM's own CUDA-graph estimate (its first captures and a sample per size)"
            }
            Self::V0_11Sort | Self::V0_12Sort | Self::V0_16Sort => {
                "the native sampler's peak at PyTorch's sort of the logits, with its scratch"
            }
        }
    }

    /// An id (`v0`, `v1`, `0.10`, `0.12`, `0.18`, `0.19`, `0.21`, `0.33`, `0.24`, also `0.21.0`, `0`, `1`) or `latest`
    /// (the newest this build knows: for the CLI; links pin instead).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "latest" | "new" => Some(Self::LATEST),
            other => Self::parse_pinned(other),
        }
    }

    /// An id naming one version (not the moving `latest`).
    pub fn parse_pinned(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().trim_start_matches('v') {
            "0" => Some(Self::V0),
            "1" => Some(Self::V1),
            "0.10" | "0.10.0" => Some(Self::V0_10),
            "0.12" | "0.12.0" => Some(Self::V0_12),
            "0.11-mm" => Some(Self::V0_11Mm),
            "0.12-mm" => Some(Self::V0_12Mm),
            "0.17-mm" => Some(Self::V0_17Mm),
            "0.18" | "0.18.0" => Some(Self::V0_18),
            "0.19" | "0.19.0" => Some(Self::V0_19),
            "0.21" | "0.21.0" => Some(Self::V0_21),
            "0.33" | "0.33.0" => Some(Self::V0_33),
            "0.24" | "0.24.0" => Some(Self::V0_24),
            "0.19-rope" => Some(Self::V0_19Rope),
            "0.24-rope" => Some(Self::V0_24Rope),
            "0.19-mm" => Some(Self::V0_19Mm),
            "0.19-alloc" => Some(Self::V0_19Alloc),
            "0.17-triton" => Some(Self::V0_17Triton),
            "0.11-sort" => Some(Self::V0_11Sort),
            "0.12-sort" => Some(Self::V0_12Sort),
            "0.16-sort" => Some(Self::V0_16Sort),
            "0.24-mm" => Some(Self::V0_24Mm),
            "0.33-graphs" => Some(Self::V0_33Graphs),
            "0.34" | "0.34.0" => Some(Self::V0_34),
            _ => None,
        }
    }

    /// `gpu_memory_utilization` default: 0.9 historically, 0.92 in
    /// `vllm/config/cache.py` since 0.21.
    pub fn default_utilization(self) -> f64 {
        match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc => 0.90,
            Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => 0.92,
        }
    }

    /// `gpu_memory_utilization`'s default in a plan: 1.0 where the
    /// extensible KV cache sizes the pool (0.34 `config/cache.py`
    /// `resolved_gpu_memory_utilization`), else [`Version::default_utilization`].
    pub fn plan_utilization(self, extensible: bool) -> f64 {
        if extensible { 1.0 } else { self.default_utilization() }
    }

    /// Whether the extensible KV cache is these rules' default where vLLM
    /// runs on CUDA or ROCm and no `--kv-cache-memory-bytes` is given.
    pub fn extensible_kv_cache(self) -> bool {
        match self {
            Self::V0_34 => true,
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs => false,
        }
    }

    /// Batches of `max_num_batched_tokens` that may be scheduled and not yet
    /// settled, which a sliding window holds blocks for beyond its width
    /// (`VllmConfig.max_in_flight_tokens` = `max_concurrent_batches ×
    /// max_num_batched_tokens`, 0.34.0 config/vllm.py: `pp + 1` with async
    /// scheduling, which 0.34 turns on by default for the multiprocessing
    /// and single-process executors, else `pp`). Earlier rule sets, fitted
    /// to their logs, take one batch. Read only for DeepSeek-V4's groups
    /// (`packed.rs`); other 0.34 sliding-window plans still take one.
    pub(super) fn in_flight_batches(self, pp: u64) -> u64 {
        match self {
            Self::V0_34 => pp.max(1) + 1,
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs => 1,
        }
    }

    /// Whether the log's "GPU KV cache size" is the pool's concurrency at
    /// `max_model_len` times that length (`int(max_concurrency ×
    /// max_model_len)`, `v1/core/kv_cache_utils.py::_report_kv_cache_config`
    /// from 0.21.0, `get_kv_cache_capacity` from 0.24.0): a sliding-window or
    /// state group holds fewer blocks a request than a full one. Before, and
    /// in 0.20.x (read in the 0.20.0 wheel), `num_blocks // groups ×
    /// block_size`. These rule sets span 0.20 – 0.33; they take 0.21's.
    pub fn tokens_from_concurrency(self) -> bool {
        match self {
            Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc => false,
        }
    }

    /// Tokens per KV block when `--block-size` is not given
    /// (`CacheConfig.DEFAULT_BLOCK_SIZE`: 16, and 64 from 0.34).
    pub fn default_block_size(self) -> u64 {
        match self {
            Self::V0_34 => 64,
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs => super::DEFAULT_BLOCK_SIZE,
        }
    }

    /// Whether the estimated CUDA-graph memory comes out of the KV budget.
    pub fn subtracts_cuda_graphs(self) -> bool {
        match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc => false,
            Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
        }
    }

    /// Whether the profile run's peak is the larger of its forward pass and
    /// its sampler run (`profile_run`: one after the other, the forward
    /// pass's activations freed in between) with the sampler's logits over
    /// the whole vocabulary on every rank (V1's `LogitsProcessor` gathers
    /// them to all ranks); the older rules add the two and split the
    /// vocabulary by TP.
    pub fn profile_peak_is_larger_half(self) -> bool {
        match self {
            Self::V0 | Self::V1 | Self::V0_21 => false,
            Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
        }
    }

    /// Whether the weights vLLM holds count its rotary cos/sin tables
    /// ([`super::rope_table_bytes`]). vLLM has built them with the model since
    /// V0; the rules that count them are new variants (Gemma 3 and Llama 4
    /// Scout's 0.19.0 logs show them, issue 36): the released rules stay
    /// as they were.
    pub fn holds_rope_tables(self) -> bool {
        match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_18
            | Self::V0_19
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24 => false,
            Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
        }
    }

    /// Whether the weights vLLM holds are the blocks PyTorch's caching
    /// allocator hands out for them ([`super::block_slack_bytes`]): read
    /// from the 0.19.0 source; vLLM has measured "Model loading took" as
    /// allocated blocks since V1, and the released rules stay as they were.
    pub fn weights_in_allocator_blocks(self) -> bool {
        match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_19Rope
            | Self::V0_24Rope
            | Self::V0_19Mm
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => false,
            Self::V0_19Alloc => true,
        }
    }

    /// The sampler the profile run exercises when the launch does not say
    /// (the V0 and V1 rules count fp32 logits and probabilities instead).
    /// vLLM 0.11 – 0.16 sample natively by default (`TopKTopPSampler.__init__`,
    /// `v1/sample/ops/topk_topp_sampler.py`): 0.11.0 takes FlashInfer only
    /// when it is installed, which its wheel leaves to the `flashinfer` extra
    /// (a log says which: `FlashInfer is not available. Falling back …` or
    /// `Using FlashInfer for top-p & top-k sampling`); 0.11.2 – 0.16 require
    /// flashinfer-python but take it only with `VLLM_USE_FLASHINFER_SAMPLER=1`.
    pub fn default_sampler(self) -> super::Sampler {
        match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => super::Sampler::FlashInfer,
            Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort => super::Sampler::Native,
            Self::V0_18 | Self::V0_19 | Self::V0_19Rope | Self::V0_19Mm | Self::V0_19Alloc | Self::V0_17Triton => {
                super::Sampler::Triton
            }
        }
    }

    /// Whether the release has 0.11's KV-memory tools (the 0.10 rules were
    /// read from 0.11.0): `--kv-cache-memory`, which skips the profile, and
    /// the longest request the pool holds in the start-up error
    /// (`kv_cache_utils.py::_check_enough_kv_cache_memory`,
    /// `estimate_max_model_len`).
    pub fn kv_memory_tools(self) -> bool {
        match self {
            Self::V0 | Self::V1 => false,
            Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
        }
    }

    /// The newest minor release (`0.N`) the rules cover: a rule set that
    /// spans a change takes its later side, as the call sites' reader takes
    /// the newest release it cannot rule out.
    fn newest_minor(self) -> u32 {
        match self {
            Self::V0 => 7,
            Self::V1 => 9,
            Self::V0_10 => 10,
            Self::V0_11Mm | Self::V0_11Sort => 11,
            Self::V0_12Mm | Self::V0_12Sort => 12,
            Self::V0_16Sort => 16,
            Self::V0_12 | Self::V0_17Mm | Self::V0_17Triton => 17,
            Self::V0_18 | Self::V0_19 | Self::V0_19Rope | Self::V0_19Mm | Self::V0_19Alloc => 19,
            Self::V0_21 | Self::V0_33 | Self::V0_24 | Self::V0_24Rope | Self::V0_24Mm | Self::V0_33Graphs => 33,
            Self::V0_34 => 34,
        }
    }

    /// Whether vLLM loads bitsandbytes checkpoints or quantises to them in
    /// flight (`--quantization bitsandbytes`): `quantization/bitsandbytes.py`,
    /// `model_loader/bitsandbytes_loader.py` and the `QUANTIZATION_METHODS`
    /// entry are in the 0.27.1 wheel and gone from 0.28.0's. The rules of
    /// 0.20 – 0.33 take the later side.
    pub fn loads_bitsandbytes(self) -> bool {
        self.newest_minor() < 28
    }

    /// Whether `--all2all-backend` is a flag: in the 0.12.0 wheel's
    /// `engine/arg_utils.py`, not in 0.11.0's, where the backend is
    /// `VLLM_ALL2ALL_BACKEND` (envs.py, 0.10.0 – 0.11.0).
    pub fn all2all_flag(self) -> bool {
        self.newest_minor() >= 12
    }

    /// Whether the `allgather_reducescatter` all-to-all backend exists: in
    /// the 0.11.0 wheel's `cuda_communicator.py`; 0.10.0 and 0.10.2 raise
    /// "Unknown all2all backend" for it.
    pub fn allgather_reducescatter(self) -> bool {
        self.newest_minor() >= 11
    }

    /// Whether `--eplb-config` is a flag: from 0.10.2 (absent from the
    /// 0.10.0 wheel's arg_utils.py); 0.10's rules keep
    /// `--num-redundant-experts`, which 0.10.0 – 0.11.0 take (0.11.0 as
    /// deprecated; 0.12.0 dropped it).
    pub fn eplb_config_flag(self) -> bool {
        self.newest_minor() >= 11
    }

    /// Whether layers of different page sizes share one pool by growing the
    /// smaller pages' block: `kv_cache_utils.py::unify_kv_cache_spec_page_size`
    /// multiplies a layer's `block_size` by the largest page over its own
    /// when it divides it (0.25.1 otherwise pads the page where the backend
    /// reads pages by stride; 0.12.0 – 0.18.0 raise), so a Gemma 4 global layer of
    /// 2 KV heads × 512 beside sliding layers of 8 × 256 holds 32 tokens a
    /// block where the sliding ones hold 16. In the 0.12.0 – 0.25.1 wheels;
    /// 0.10.0's and 0.11.0's `get_kv_cache_config` raise
    /// `NotImplementedError` for such a model.
    pub(super) fn unifies_page_sizes(self) -> bool {
        self.newest_minor() >= 12
    }

    /// Whether a recurrent group holds a block per draft token beside the
    /// request's own: `MambaSpec.max_memory_usage_bytes` is
    /// `page × (1 + num_speculative_blocks)` (`num_speculative_tokens`,
    /// `mamba/abstract.py::get_kv_cache_spec`) in the 0.15.0 – 0.25.1
    /// wheels; 0.14.0's counts `⌈max_model_len / mamba block⌉` blocks, one
    /// without prefix caching, and 0.11.0's one page.
    pub(super) fn state_blocks_per_draft_token(self) -> bool {
        self.newest_minor() >= 15
    }

    /// Whether the group size is the largest layer count where it is under
    /// 1.5 × the smallest (`_get_kv_cache_groups_uniform_page_size`:
    /// "gpt-oss-20b + eagle, with 12 sw + 13 full. We pad it to (13 sw,
    /// 13 full)"), else the smallest: in the 0.18.0 – 0.25.1 wheels, not
    /// 0.17.0's, which always take the smallest.
    pub(super) fn groups_by_the_largest_when_close(self) -> bool {
        self.newest_minor() >= 18
    }

    /// Whether `--kv-cache-dtype int8_per_token_head` exists: `CacheDType`
    /// (config/cache.py) has it from 0.20.0 (absent from the 0.19.0 wheel,
    /// present in 0.20.0, 0.24.0, 0.27.1 and 0.34.0).
    pub fn int8_kv_cache(self) -> bool {
        self.newest_minor() >= 20
    }

    /// Whether the fused-MoE workspace outlives the forward pass: from 0.19
    /// the modular kernel takes it from one shared workspace manager
    /// (`current_workspace_manager`, 0.19.1 – 0.24.0 `model_executor/layers/fused_moe/modular_kernel.py`),
    /// so the sampler runs beside it. The 0.19.0 logs of four MoE models
    /// (Qwen3-30B-A3B, Qwen1.5-MoE-A2.7B, DeepSeek-V2-Lite, Mixtral at TP 2)
    /// peak at the sampler plus this workspace, within 0.03 GiB.
    pub fn moe_workspace_kept(self) -> bool {
        match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_21
            | Self::V0_33 => false,
            Self::V0_19
            | Self::V0_24
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
        }
    }

    /// Bytes per logit the `sampler` holds beyond its named tensors under
    /// these rules ([`super::TRITON_SAMPLER_EXTRA_BYTES`], measured on 0.19
    /// logs).
    pub fn sampler_extra_bytes(self, sampler: super::Sampler) -> u64 {
        let measured = match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_21
            | Self::V0_33 => false,
            Self::V0_19
            | Self::V0_24
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
        };
        if measured && sampler == super::Sampler::Triton { super::TRITON_SAMPLER_EXTRA_BYTES } else { 0 }
    }

    /// Whether the native sampler's peak is PyTorch's sort of the logits
    /// with its scratch ([`super::native_sampler_bytes_per_logit`]) rather
    /// than the fitted [`super::NATIVE_SAMPLER_BYTES`]: the `-sort` rules.
    pub fn native_sampler_sorts(self) -> bool {
        match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_12Mm
            | Self::V0_17Mm
            | Self::V0_18
            | Self::V0_19
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_19Rope
            | Self::V0_24Rope
            | Self::V0_19Mm
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34
            | Self::V0_19Alloc
            | Self::V0_17Triton => false,
            Self::V0_11Sort | Self::V0_12Sort | Self::V0_16Sort => true,
        }
    }

    /// Memory outside PyTorch that the profile adds per GPU, with `gpus`
    /// GPUs of which `tp` in each tensor-parallel group (`board`: how the
    /// GPUs are linked), and where the figure comes from, for people.
    pub fn non_torch(self, tp: u64, gpus: usize, board: super::Board, eager: bool) -> (u64, &'static str) {
        use super::Board;
        let several_gpus = gpus > 1;
        match (self, several_gpus, board) {
            // `--enforce-eager` captures no graph, so the 0.19 window holds
            // no CUDA-graph profile: what is left is the 0.18 window's
            // (a 0.18.1 eager log, 4 × RTX 3090 at TP 4, reads 0.13 GiB).
            (
                Self::V0_19
                | Self::V0_19Rope
                | Self::V0_19Mm
                | Self::V0_19Alloc
                | Self::V0_24
                | Self::V0_24Rope
                | Self::V0_24Mm
                | Self::V0_33Graphs
                | Self::V0_34,
                _,
                Board::Pcie,
            ) if eager => (super::NON_TORCH_SINGLE, "llm-d, eager"),
            // From 0.19 the window also holds the CUDA-graph profile; at
            // TP ≥ 2 on an NVSwitch board, FlashInfer's all-reduce workspace
            // and NCCL's buffers for the first large all-reduce. Pipeline
            // stages alone exchange activations point to point: as one GPU.
            (
                Self::V0_19
                | Self::V0_19Rope
                | Self::V0_19Mm
                | Self::V0_19Alloc
                | Self::V0_24
                | Self::V0_24Rope
                | Self::V0_24Mm
                | Self::V0_33Graphs
                | Self::V0_34,
                _,
                Board::NvSwitchHopper,
            ) if tp >= 4 => (super::NON_TORCH_TP4_NVSWITCH_0_19, "0.19 logs: NCCL, FlashInfer"),
            (
                Self::V0_19
                | Self::V0_19Rope
                | Self::V0_19Mm
                | Self::V0_19Alloc
                | Self::V0_24
                | Self::V0_24Rope
                | Self::V0_24Mm
                | Self::V0_33Graphs
                | Self::V0_34,
                _,
                Board::NvSwitchHopper,
            ) if tp >= 2 => (super::NON_TORCH_TP2_NVSWITCH_0_19, "0.19 logs: NCCL, FlashInfer"),
            (
                Self::V0_19
                | Self::V0_19Rope
                | Self::V0_19Mm
                | Self::V0_19Alloc
                | Self::V0_24
                | Self::V0_24Rope
                | Self::V0_24Mm
                | Self::V0_33Graphs
                | Self::V0_34,
                _,
                Board::NvLink,
            ) if tp >= 2 => (super::NON_TORCH_MULTI_0_12, "0.12 logs"),
            (
                Self::V0_19
                | Self::V0_19Rope
                | Self::V0_19Mm
                | Self::V0_19Alloc
                | Self::V0_24
                | Self::V0_24Rope
                | Self::V0_24Mm
                | Self::V0_33Graphs
                | Self::V0_34,
                _,
                _,
            ) => (super::NON_TORCH_SINGLE_0_19, "0.19 logs"),
            // `_` is every later rule set before 0.19: one GPU.
            (_, false, _) => (super::NON_TORCH_SINGLE, "llm-d"),
            // Up to 0.10 the snapshot precedes NCCL's set-up: its buffers count.
            (Self::V0 | Self::V1 | Self::V0_10, true, Board::NvSwitchHopper) => {
                (super::NON_TORCH_MULTI_NVSWITCH, "llm-d")
            }
            (Self::V0 | Self::V1 | Self::V0_10 | Self::V0_21 | Self::V0_33, true, _) => {
                (super::NON_TORCH_MULTI, "llm-d")
            }
            // From 0.11 NCCL's set-up is in the baseline; what the profile
            // adds is the communicator it creates over NVLink.
            (
                Self::V0_12 | Self::V0_11Mm | Self::V0_12Mm | Self::V0_17Mm | Self::V0_17Triton | Self::V0_18,
                true,
                Board::NvSwitchHopper | Board::NvLink,
            ) => (super::NON_TORCH_MULTI_0_12, "llm-d"),
            // The same, re-derived from its two logs with the sampler's sort.
            (Self::V0_11Sort | Self::V0_12Sort | Self::V0_16Sort, true, Board::NvSwitchHopper | Board::NvLink) => {
                (super::NON_TORCH_MULTI_0_12_SORT, "0.12 and 0.13 logs")
            }
            (
                Self::V0_12
                | Self::V0_11Mm
                | Self::V0_11Sort
                | Self::V0_12Mm
                | Self::V0_12Sort
                | Self::V0_17Mm
                | Self::V0_16Sort
                | Self::V0_17Triton
                | Self::V0_18,
                true,
                Board::Pcie,
            ) => (super::NON_TORCH_SINGLE, "llm-d"),
        }
    }

    /// CUDA graphs vLLM captures with `max_num_seqs` and
    /// `max_num_batched_tokens`. V0 and 0.8 – 0.9: every size of the 67-size
    /// list (1, 2, 4, 8, 16 … 512), piecewise only. 0.10 (0.10.0
    /// `config.py`, 0.10.2 `config/__init__.py`: `VllmConfig._set_cudagraph_sizes`,
    /// the V1 branch), piecewise only too: `[1, 2, 4]` and 8 to
    /// `cuda_graph_sizes` by 8, which `SchedulerConfig.__post_init__`
    /// defaults to `min(max_num_seqs × 2, 512)`, each at most
    /// `max_num_batched_tokens` (a 0.10.2 log with `max_num_seqs` 1
    /// captures `[4, 2, 1]`). From 0.11
    /// (`config/vllm.py::_set_cudagraph_sizes`, 0.11.2 – 0.33.0): `[1, 2, 4]`,
    /// 8 to 248 by 8, then 256 to the largest by 16, the largest
    /// `min(2 × max_num_seqs, 512, max_num_batched_tokens)`; and,
    /// `FULL_AND_PIECEWISE` being the default mode, a second, full graph for
    /// each size up to `max_num_seqs` (uniform decode batches). A 0.26 log
    /// with `max_num_seqs` 16 says `PIECEWISE=7 (largest=32), FULL=5
    /// (largest=16)`; the 0.11.2 and 0.12 logs print the same list.
    pub fn cuda_graphs(self, max_num_seqs: u64, max_num_batched_tokens: u64) -> u64 {
        match self {
            Self::V0 | Self::V1 => super::CUDA_GRAPH_CAPTURE_SIZES,
            Self::V0_10 => {
                let largest = capture_bound(max_num_seqs, max_num_batched_tokens);
                [1, 2, 4].iter().filter(|&&n| n <= max_num_batched_tokens).count() as u64 + largest / 8
            }
            Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => {
                let largest = capture_bound(max_num_seqs, max_num_batched_tokens);
                capture_grid(largest).0 + capture_grid(max_num_seqs.min(largest)).0
            }
        }
    }

    /// The largest piecewise and the largest FULL batch [`Version::cuda_graphs`]
    /// captures (the same sizes: the largest on the 8- and 16-token grid at
    /// most `min(2 × max_num_seqs, 512, max_num_batched_tokens)`, and FULL
    /// at most `max_num_seqs`); FULL is 0 before 0.11, piecewise only.
    pub fn cuda_graph_largest(self, max_num_seqs: u64, max_num_batched_tokens: u64) -> (u64, u64) {
        let largest = capture_bound(max_num_seqs, max_num_batched_tokens);
        let on_grid = |upto: u64| capture_grid(upto).1;
        match self {
            Self::V0 | Self::V1 => (512, 0),
            Self::V0_10 => (if largest >= 8 { largest / 8 * 8 } else { on_grid(largest) }, 0),
            Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => (on_grid(largest), on_grid(max_num_seqs.min(largest))),
        }
    }

    /// The graphs [`Version::cuda_graphs`] captures in each mode, piecewise
    /// and FULL (`CudagraphDispatcher.get_capture_descs`, 0.21.0: one list per
    /// mode, largest first; FULL only up to `max_num_seqs`, none before 0.11).
    pub fn cuda_graphs_per_mode(self, max_num_seqs: u64, max_num_batched_tokens: u64) -> (u64, u64) {
        let (_, full_largest) = self.cuda_graph_largest(max_num_seqs, max_num_batched_tokens);
        let full = if full_largest > 0 { capture_grid(full_largest).0 } else { 0 };
        (self.cuda_graphs(max_num_seqs, max_num_batched_tokens).saturating_sub(full), full)
    }

    /// Whether what the KV budget takes for the CUDA graphs is modelled as
    /// vLLM's own estimate (`super::profiled_graph_bytes`) rather than the
    /// per-layer rule ([`Version::V0_33Graphs`]; only where
    /// [`Version::subtracts_cuda_graphs`]).
    pub fn models_graph_estimate(self) -> bool {
        match self {
            Self::V0_33Graphs => true,
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_34 => false,
        }
    }

    /// Whether `capture_model` empties PyTorch's cache right before it reads
    /// the free memory its "Graph capturing finished … took" is measured from
    /// (`torch.accelerator.empty_cache()` before `start_free`,
    /// v1/worker/gpu_model_runner.py 0.18.0, 0.19.0, 0.21.0; 0.10.0 – 0.16.0
    /// read it with the cache full). From 0.18 the figure counts the eager
    /// warm-up's activations that refill the cache, and the graphs are
    /// modelled term by term (`super::captured_graph_bytes`); before, the
    /// first capture frees what the cache held and the figure is net of it,
    /// which [`super::CUDA_GRAPH_BYTES_PER_LAYER_SIZE`] was fitted to.
    pub fn empties_cache_before_capture(self) -> bool {
        match self {
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton => false,
            Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
        }
    }

    /// `VLLM_FUSED_MOE_CHUNK_SIZE`: the most tokens the fused-MoE kernels
    /// take at once (`fused_moe.py::fused_experts_impl`,
    /// `modular_kernel.py`), which bounds their buffers when data-parallel
    /// replicas gather their batches: 32,768 in 0.10.0 – 0.11.0 (V0 and 0.8 –
    /// 0.9 not read, taken as 0.10's), 16,384 in 0.12.0 and 0.14.0 (0.13 and
    /// 0.15 – 0.18 not read, taken as theirs), none from 0.19.0, whose
    /// modular kernel sizes its workspace for every token (`_allocate_buffers`).
    pub fn fused_moe_chunk(self) -> Option<u64> {
        match self {
            Self::V0 | Self::V1 | Self::V0_10 | Self::V0_11Mm | Self::V0_11Sort => Some(32_768),
            Self::V0_12
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_16Sort
            | Self::V0_17Mm
            | Self::V0_17Triton
            | Self::V0_18 => Some(16_384),
            Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => None,
        }
    }

    /// Whether a fused-MoE layer's profile peak is `fused_experts_impl`'s
    /// buffers rather than the dense formula's.
    pub fn fused_moe_peak(self) -> Option<super::MoeKernel> {
        match self {
            Self::V0 | Self::V1 | Self::V0_10 => None,
            Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton => Some(super::MoeKernel::FusedExperts),
            Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => Some(super::MoeKernel::Modular),
        }
    }

    /// How the profile run counts the vision tower (`encoder`), when these
    /// rules count it. vLLM has profiled the encoder since V1; the rules
    /// that count it are new variants, so the released rules stay as they
    /// were.
    pub fn encoder_profile(self) -> Option<EncoderProfile> {
        let kept = |padding, read_from| Some(EncoderProfile::Kept { padding, read_from });
        match self {
            Self::V0_11Mm | Self::V0_11Sort => kept(Some(EncoderPadding::Budget), "0.11.0"),
            Self::V0_12Mm | Self::V0_12Sort => kept(Some(EncoderPadding::LargestItem), "0.12.0"),
            Self::V0_17Mm | Self::V0_16Sort | Self::V0_17Triton => kept(None, "0.13.0"),
            Self::V0_19Mm | Self::V0_19Alloc | Self::V0_24Mm | Self::V0_33Graphs | Self::V0_34 => {
                Some(EncoderProfile::Outputs)
            }
            Self::V0
            | Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_18
            | Self::V0_19
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_19Rope
            | Self::V0_24Rope => None,
        }
    }

    /// The version a release string names (`0.10.1.1`, `0.24.0`,
    /// `0.8.5.dev169+g…`): the newest rules for that release, `None` when
    /// it is not a `0.N` release. 0.20.0 already subtracts the CUDA-graph
    /// estimate (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to 1
    /// there, `envs.py`) and asks 0.92 of the memory, so the 0.24 rules.
    pub fn for_release(release: &str) -> Option<Self> {
        let mut parts = release.trim().trim_start_matches('v').split('.');
        let major: u64 = parts.next()?.parse().ok()?;
        let minor: u64 = parts.next()?.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()?;
        if major != 0 {
            return Some(Self::LATEST);
        }
        Some(match minor {
            0..=7 => Self::V0,
            8 | 9 => Self::V1,
            10 => Self::V0_10,
            11 => Self::V0_11Sort,
            12 => Self::V0_12Sort,
            13..=16 => Self::V0_16Sort,
            17 => Self::V0_17Triton,
            18 | 19 => Self::V0_19Alloc,
            20..=33 => Self::V0_33Graphs,
            // `_` is every later rule set: the releases after 0.33.
            _ => Self::V0_34,
        })
    }

    /// The lowest compute capability (`major × 10 + minor`) on which vLLM
    /// loads fp8 weights, `Fp8Config.get_min_capability()`
    /// (model_executor/layers/quantization/fp8.py): 80 up to 0.13.0, 75 from
    /// 0.14.0 (read in the 0.13.0, 0.14.0, 0.15.0, 0.16.0, 0.19.0, 0.24.0 and
    /// 0.34.0 wheels); below it the loader refuses ("The quantization method
    /// fp8 is not supported for the current GPU"). Below 8.9 the weights run
    /// through the weight-only FP8 Marlin kernel (`Fp8LinearMethod`), still
    /// in 8 bits. `V0_16Sort` spans 0.13 – 0.16 and takes 0.14's.
    pub fn fp8_min_capability(self) -> u32 {
        if self.newest_minor() < 14 { 80 } else { 75 }
    }

    /// Whether the wheel ships OpenAI's `triton_kernels`
    /// (`vllm/third_party/triton_kernels`, from 0.12.0; absent from the 0.11.0
    /// wheel), so that Hopper's MXFP4 MoE runs the Triton kernel without an
    /// extra package (`utils/import_utils.py::has_triton_kernels`); before,
    /// it falls back to Marlin (0.11.0 `quantization/mxfp4.py::get_mxfp4_backend`,
    /// the 0.11.2 gpt-oss-120b log: `Using Marlin backend`). `V0_12` spans
    /// 0.11 – 0.17 and keeps the later default.
    pub(super) fn ships_triton_kernels(self) -> bool {
        !matches!(self, Self::V0 | Self::V1 | Self::V0_10 | Self::V0_11Mm | Self::V0_11Sort)
    }

    /// Whether sliding-window layers get their own KV cache groups.
    pub(super) fn groups_sliding_windows(self) -> bool {
        match self {
            Self::V0 => false,
            Self::V1
            | Self::V0_10
            | Self::V0_12
            | Self::V0_11Mm
            | Self::V0_11Sort
            | Self::V0_12Mm
            | Self::V0_12Sort
            | Self::V0_17Mm
            | Self::V0_16Sort
            | Self::V0_17Triton
            | Self::V0_18
            | Self::V0_19
            | Self::V0_19Rope
            | Self::V0_19Mm
            | Self::V0_19Alloc
            | Self::V0_21
            | Self::V0_33
            | Self::V0_24
            | Self::V0_24Rope
            | Self::V0_24Mm
            | Self::V0_33Graphs
            | Self::V0_34 => true,
        }
    }
}

/// The largest batch vLLM captures a graph for (0.10 – 0.34,
/// `_set_cudagraph_sizes`): `min(2 × max_num_seqs, 512, max_num_batched_tokens)`.
fn capture_bound(max_num_seqs: u64, max_num_batched_tokens: u64) -> u64 {
    max_num_seqs.saturating_mul(2).min(512).min(max_num_batched_tokens)
}

/// vLLM's capture sizes up to `upto` (`[1, 2, 4]`, 8 to 248 by 8, then 256
/// on by 16, 0.11.2 – 0.33.0 `_set_cudagraph_sizes`): how many, and the
/// largest of them.
fn capture_grid(upto: u64) -> (u64, u64) {
    match upto {
        0 => (0, 0),
        1 => (1, 1),
        2 | 3 => (2, 2),
        4..=7 => (3, 4),
        8..=255 => (3 + upto / 8, upto / 8 * 8),
        _ => (3 + 31 + (upto - 256) / 16 + 1, 256 + (upto - 256) / 16 * 16),
    }
}
