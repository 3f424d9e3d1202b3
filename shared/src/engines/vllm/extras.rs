//! What vLLM holds on a GPU beside the weights as stored and the KV cache:
//! the memory outside PyTorch its profile adds (`NON_TORCH_*`, chosen by
//! `Version::non_torch`), the profiled activation peak of its dummy run
//! ([`profile_peak`], with the sampler's share), the padding its MXFP4 MoE
//! kernels give the experts, the LoRA buffers of `--max-loras` ×
//! `--max-lora-rank`, and the blocks PyTorch's allocator rounds the weight
//! tensors up to.

use serde::{Deserialize, Serialize};

use super::Options;
use crate::arch::TextModel;
use crate::engines::Plan;
use crate::plan::activations;
use crate::units::MIB;

/// vLLM's non-torch memory increase during profiling. Empirical (llm-d,
/// `empirical-vllm-memory-results.md`, H100): 0.13 GiB on one GPU, 0.55 GiB
/// per GPU once NCCL is initialised for several.
pub const NON_TORCH_SINGLE: u64 = 133 * MIB;
pub const NON_TORCH_MULTI: u64 = 563 * MIB;
/// The same per GPU of several linked by NVLink under the 0.12 and 0.18 rules, where NCCL's set-up
/// happens before the memory snapshot and what remains is created during
/// the profile (the TP group's ProcessGroupNCCL communicator at the first
/// logits all-gather, 0.12.0 `distributed/device_communicators/base_device_communicator.py`;
/// NCCL's buffers for its first large all-reduce). Measured: the residual of
/// two real start-up logs with the weights, sampler and forward pass taken
/// out (`vllm-v1-012-qwen3-30b-a3b-h100-tp2`, 2 × H100: 0.86 GiB;
/// `vllm-v1-013-llama3-8b-a800-tp4`, 4 × 80 GB Ampere: 0.85 GiB).
pub const NON_TORCH_MULTI_0_12: u64 = 870 * MIB;
/// The same under the `-sort` rules, re-derived from the same two logs with
/// the native sampler's sort counted ([`native_sampler_bytes_per_logit`]:
/// 50 bytes per logit at the H100 log's 64 rows, 38 at the A800 log's 1,024,
/// where [`NON_TORCH_MULTI_0_12`] took the fitted 34): the residuals are
/// 0.67 GiB (`vllm-v1-012-qwen3-30b-a3b-h100-tp2`) and 0.36 GiB
/// (`vllm-v1-013-llama3-8b-a800-tp4`), the median of the two 0.515 GiB. They
/// no longer agree: the sort's bytes were hidden in the old residuals in
/// proportion to each log's rows, and what is left differs by board (NVLink
/// SHARP buffers on the H100s' NVSwitch, none on the A800s). The two 0.12.0
/// Qwen3-VL logs on the same two H100s, not used here, read 0.54 GiB each.
pub const NON_TORCH_MULTI_0_12_SORT: u64 = 527 * MIB;
/// The same per GPU of several on an NVSwitch board (HGX H100/H200/B200)
/// under the rules up to 0.10, whose snapshot precedes NCCL's set-up: NCCL
/// gives such GPUs NVLink SHARP (NVLS) buffers beside its ring buffers, and
/// vLLM 0.10 disables NCCL's cuMem allocator (`NCCL_CUMEM_ENABLE=0`,
/// 0.10.1.1 `env_override.py`). Measured: the residual of three real 0.10.0
/// start-up logs on HGX H100 with the weights, the native sampler and the
/// forward pass taken out (`vllm-v1-0100-qwen3-32b-h100-tp4-u095`: 2.62 GiB,
/// `…-tp8-kvfp8`: 2.97 GiB, `vllm-v1-0100-qwen3-235b-fp8-h100-tp8-ep`:
/// 2.88 GiB); the median.
pub const NON_TORCH_MULTI_NVSWITCH: u64 = 2950 * MIB;
/// Memory outside PyTorch that vLLM 0.19 – 0.24's profile adds on one GPU
/// (and per GPU of pipeline stages without TP). From 0.19 the window runs
/// from the snapshot after the distributed set-up to the end of the profile,
/// which now also captures graphs to estimate their memory (0.19.1 – 0.24.0
/// `v1/worker/gpu_worker.py` `determine_available_memory`,
/// `utils/mem_utils.py::memory_profiling`). Measured: `non-torch forward
/// increase memory` of fourteen vLLM 0.19.0 start-up logs on one H100 at
/// DEBUG level (llm-d-incubation/llm-d-planner at d3121e05: Llama 3.1,
/// Qwen 2.5/3, Gemma 2/3, Phi-4, MoE models), 0.24 – 0.27 GiB, median
/// 0.25 GiB (`vllm-v1-0190-qwen3-30b-a3b-h100-debug` and two more are
/// fixtures); 0.07 GiB with two or four pipeline stages.
pub const NON_TORCH_SINGLE_0_19: u64 = 256 * MIB;
/// The same per GPU at TP 2 on an NVSwitch board (HGX H100/H200/B200),
/// where the window also holds FlashInfer's all-reduce workspace (0.19.1
/// `distributed/device_communicators/flashinfer_all_reduce.py`, created at
/// the first all-reduce: `tp × max_token_num × hidden × 2` bytes plus three
/// times that for its Lamport buffers, flashinfer-python 0.6.6
/// `comm/trtllm_ar.py`; 512 MiB at TP 2 on Hopper, whose size table gives
/// 64 MiB per all-reduce) and the buffers NCCL connects at the profile's
/// first large all-reduce. Measured, as a whole (the source does not size
/// NCCL's share): seven 0.19.0 logs at TP 2 on H100 (Llama 3.1 8B, Qwen 2.5
/// 7B and 72B, Llama 3.3 70B FP8 and W8A8, Mixtral, gpt-oss-20b), 2.06 –
/// 2.11 GiB, median 2.07 GiB.
pub const NON_TORCH_TP2_NVSWITCH_0_19: u64 = 2120 * MIB;
/// The same at TP ≥ 4 (FlashInfer's workspace is then 2 MiB per
/// all-reduce, NCCL's NVLink SHARP buffers join from three GPUs): five
/// 0.19.0 logs at TP 4 on H100 (Llama 3.1 8B, Qwen 2.5 7B, Llama 3.3 70B
/// FP8, Kimi-Dev-72B, Llama 4 Scout), 2.13 – 2.21 GiB, median 2.17 GiB.
pub const NON_TORCH_TP4_NVSWITCH_0_19: u64 = 2222 * MIB;
/// vLLM's profiled activation peak for a dummy batch of `tokens` tokens
/// spread over `seqs` sequences, on one of `tp` ranks, by `version`'s rules.
///
/// The forward pass: empirical, `tokens × bytes_per_element × 3 × (hidden +
/// intermediate / tp)`, fitted to vLLM's own start-up logs for Llama-3.1-8B
/// on an RTX 3090 (raising max_model_len from 20,000 to 29,000 tokens, and
/// with it the dummy batch, cost 474 blocks of 2 MiB: 110.5 kB per token,
/// against 110.6 kB from this formula).
///
/// The sampler: the V0 and V1 rules add fp32 logits and probabilities of
/// `seqs` sequences, vocabulary split by TP. The 0.10 and 0.33 rules read
/// vLLM's source instead (0.11.0 and 0.33.0 `v1/worker/gpu_model_runner.py`
/// `profile_run`: the dummy forward pass, then `_dummy_sampler_run` on its
/// last hidden states; the model-dtype logits and the sampler's fp32 tensors,
/// [`SAMPLER_FP32_BYTES`]), over the
/// whole vocabulary on every rank (V1's logits are all-gathered), and the
/// peak is the larger of the two runs plus the hidden states kept between.
pub fn profile_peak(text: &TextModel, tokens: u64, seqs: u64, bytes_per_element: u64, tp: u64, o: Options) -> u64 {
    let (v, tp) = (o.version, tp.max(1));
    let per_token = text
        .hidden_size
        .saturating_add(activations::mlp_width(text) / tp)
        .saturating_mul(3)
        .saturating_mul(bytes_per_element);
    let mut forward = per_token.saturating_mul(tokens);
    if let Some(kernel) = v.fused_moe_peak() {
        forward = forward.max(fused_moe_peak(text, tokens, bytes_per_element, tp, o, kernel));
    }
    forward = forward.saturating_add(super::spec::draft_forward_bytes(text.hidden_size, tokens, bytes_per_element, o));
    let seqs = seqs.min(tokens.max(1));
    if !v.profile_peak_is_larger_half() {
        return forward.saturating_add(activations::logits(text.vocab_size, seqs, 1, tp));
    }
    if seqs == 0 {
        return forward;
    }
    let per_logit = sampler_bytes_per_logit(o, bytes_per_element, seqs, text.vocab_size)
        .saturating_add(super::spec::rejection_bytes_per_logit(o, bytes_per_element));
    let sampler = text.vocab_size.saturating_mul(seqs).saturating_mul(per_logit);
    let hidden = text.hidden_size.saturating_mul(tokens).saturating_mul(bytes_per_element);
    // From 0.19 the modular kernel's workspace is one buffer all MoE layers
    // share, kept after the forward pass: still held while the sampler runs.
    let kept = match v.fused_moe_peak() {
        Some(kernel) if v.moe_workspace_kept() => moe_workspace(text, tokens, bytes_per_element, tp, o, kernel),
        _ => 0,
    };
    forward.max(hidden.saturating_add(sampler).saturating_add(kept))
}

/// Bytes per logit of the sampler the profile runs under `o`'s rules, over
/// `rows` rows of a `vocab`-wide vocabulary.
pub fn sampler_bytes_per_logit(o: Options, bytes_per_element: u64, rows: u64, vocab: u64) -> u64 {
    let sampler = o.sampler.unwrap_or_else(|| o.version.default_sampler());
    if sampler == Sampler::Native && o.version.native_sampler_sorts() {
        return native_sampler_bytes_per_logit(bytes_per_element, rows, vocab);
    }
    sampler.bytes_per_logit(bytes_per_element).saturating_add(o.version.sampler_extra_bytes(sampler))
}

/// Bytes per logit of the native top-k/top-p sampler at its peak, `rows`
/// rows of `vocab` logits (the `-sort` rules). vLLM 0.11.0 – 0.16's
/// `apply_top_k_top_p` (`v1/sample/ops/topk_topp_sampler.py`, the same in
/// the 0.11.0, 0.11.2, 0.12.0, 0.13.0 and 0.16.0 wheels, which pin torch
/// 2.8.0 – 2.9.1) sorts the fp32 logits while the model-dtype logits are
/// held by the profile's `_dummy_sampler_run` and the fp32 copy by
/// `Sampler.forward` (nothing else of the vocabulary's width): beside
/// those, the sorted fp32 values (4) and their int64 indices (8), and what
/// PyTorch's sort takes (`aten/src/ATen/native/cuda/SortStable.cu`,
/// `launch_stable_sort_kernel`): from 128 rows (`segmented_sort_pairs`) the
/// int64 reverse indices (8) and cub's segmented radix sort's alternate keys
/// and values (4 + 8: `DeviceSegmentedRadixSort::SortPairs` without a
/// double buffer puts them in its temporary storage); from 2 to 127 rows
/// (`segmented_sort_pairs_by_full_sort`) two int2 index-and-segment arrays
/// (8 + 8), the sorted keys (4) and cub's alternate keys and values (4 + 8);
/// one row, or a vocabulary of a million or more, sorts row by row
/// (`segmented_sort_large_segments`) in negligible scratch. After the sort
/// the function holds the top-k and top-p masks (1 + 1), the softmax (4)
/// and the scattered result (4) instead, 28 bytes at bf16: the peak is the
/// larger. 38 bytes at 256 rows and 50 at 64 give the 0.92 GiB between
/// the two 0.12.0 logs [`NATIVE_SAMPLER_BYTES`] was fitted on, as its 34 did.
pub fn native_sampler_bytes_per_logit(bytes_per_element: u64, rows: u64, vocab: u64) -> u64 {
    let held = bytes_per_element.saturating_add(4 + 4 + 8);
    let scratch = if rows <= 1 || vocab >= 1_000_000 {
        0
    } else if rows < 128 {
        8 + 8 + 4 + 4 + 8
    } else {
        8 + 4 + 8
    };
    held.saturating_add(scratch).max(held.saturating_add(1 + 1 + 4 + 4))
}

/// How vLLM runs an unquantized fused-MoE layer, by the buffers it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoeKernel {
    /// `fused_experts_impl` (0.10 – 0.13 `model_executor/layers/fused_moe/fused_moe.py`):
    /// `intermediate_cache13` of `tokens × top_k × max(2I, hidden)` (gate/up
    /// out, then down out, in one buffer) and `intermediate_cache2` of
    /// `tokens × top_k × I` (the activated half).
    FusedExperts,
    /// The modular kernel over `TritonExperts` (0.14 and later,
    /// `fused_moe/modular_kernel.py`, its `workspace_shapes`): a workspace of
    /// `tokens × top_k × max(I, hidden)` and one of `tokens × top_k × max(2I, hidden)`.
    Modular,
}

/// A decoder layer of a fused-MoE model in the profile run, `tokens` tokens
/// on one of `tp` ranks: the residual stream as the dense formula counts it
/// (3 × hidden) beside the `kernel`'s buffers, `I` the experts' intermediate
/// width on this rank; the router logits (`tokens × experts`, model dtype)
/// and `fused_topk`'s fp32 weights and int32 ids and indices (`tokens × top_k × 12`).
///
/// With data-parallel replicas the MoE layers see every replica's batch
/// ([`moe_tokens`]): the router logits, top-k and the gathered hidden
/// states of all of them, the kernel's buffers in chunks of at most
/// `VLLM_FUSED_MOE_CHUNK_SIZE` tokens where the release has one.
fn fused_moe_peak(
    text: &TextModel,
    tokens: u64,
    bytes_per_element: u64,
    tp: u64,
    o: Options,
    kernel: MoeKernel,
) -> u64 {
    let Some(m) = text.moe else { return 0 };
    let gathered = moe_tokens(tokens, o);
    let routed = gathered.saturating_mul(m.experts_per_token);
    let caches = moe_workspace(text, tokens, bytes_per_element, tp, o, kernel);
    let router = gathered.saturating_mul(m.num_experts).saturating_mul(bytes_per_element);
    let residual = tokens.saturating_mul(text.hidden_size.saturating_mul(3)).saturating_mul(bytes_per_element);
    let others = gathered.saturating_sub(tokens).saturating_mul(text.hidden_size).saturating_mul(bytes_per_element);
    caches
        .saturating_add(router)
        .saturating_add(routed.saturating_mul(12))
        .saturating_add(residual)
        .saturating_add(others)
}

/// The tokens one rank's MoE layers take in the profile run, `tokens` per
/// replica: with data-parallel replicas, every replica's dummy batch (each
/// profiles `max_num_batched_tokens` in lock-step, `num_tokens_across_dp`,
/// `v1/worker/dp_utils.py`), gathered before the experts by the default
/// all-to-all (`allgather_reducescatter` since 0.11, `naive` in 0.10:
/// `distributed/device_communicators/all2all.py`, 0.19.0), with or without
/// expert parallelism. DeepEP's low-latency kernels take them in chunks of
/// `VLLM_MOE_DP_CHUNK_SIZE` (256) per replica (`use_dp_chunking`).
fn moe_tokens(tokens: u64, o: Options) -> u64 {
    let chunked = o.data_parallel_size > 1
        && o.enable_expert_parallel
        && o.all2all_backend == Some(super::All2All::DeepepLowLatency);
    let tokens = if chunked { tokens.min(super::DEEPEP_LOW_LATENCY_TOKENS) } else { tokens };
    tokens.saturating_mul(o.data_parallel_size.max(1))
}

/// The `kernel`'s buffers for `tokens` tokens on one of `tp` ranks (see
/// [`MoeKernel`]); 0 for a dense model.
fn moe_workspace(text: &TextModel, tokens: u64, bytes_per_element: u64, tp: u64, o: Options, kernel: MoeKernel) -> u64 {
    let Some(m) = text.moe else { return 0 };
    let (_, i) = o.expert_split(tp).local(&m);
    let tokens = match o.version.fused_moe_chunk() {
        Some(chunk) => moe_tokens(tokens, o).min(chunk),
        None => moe_tokens(tokens, o),
    };
    let k = text.hidden_size;
    let width = match kernel {
        MoeKernel::FusedExperts => (2 * i).max(k).saturating_add(i),
        MoeKernel::Modular => i.max(k).saturating_add((2 * i).max(k)),
    };
    tokens.saturating_mul(m.experts_per_token).saturating_mul(width).saturating_mul(bytes_per_element)
}

/// The top-k/top-p sampler vLLM's profile run exercises (`_dummy_sampler_run`
/// samples with top-k and top-p together), by the bytes it holds per logit
/// of `seqs × vocabulary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sampler {
    /// FlashInfer's `top_k_top_p_sampling_from_logits` (the log says `Using
    /// FlashInfer for top-p & top-k sampling`): the model-dtype logits, their
    /// fp32 copy and FlashInfer's two fp32 buffers ([`SAMPLER_FP32_BYTES`]).
    #[serde(rename = "flashinfer")]
    FlashInfer,
    /// PyTorch's sort (`apply_top_k_top_p`, vLLM 0.12.0
    /// `v1/sample/ops/topk_topp_sampler.py`; the log says `Falling back to the
    /// PyTorch-native implementation`): [`NATIVE_SAMPLER_BYTES`].
    Native,
    /// Triton's top-k/top-p kernel (0.18.0 `v1/sample/ops/topk_topp_triton.py`,
    /// the default of 0.18 – 0.20): in place over the fp32 copy, then the
    /// fp32 softmax and its fp32 exponential noise, so the FlashInfer path's
    /// bytes per logit; its persistent buffer of (SMs at most) rows is left out.
    Triton,
}

impl Sampler {
    pub fn bytes_per_logit(self, bytes_per_element: u64) -> u64 {
        match self {
            Self::FlashInfer | Self::Triton => bytes_per_element.saturating_add(SAMPLER_FP32_BYTES),
            Self::Native => NATIVE_SAMPLER_BYTES,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            Self::FlashInfer => "flashinfer",
            Self::Native => "native",
            Self::Triton => "triton",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "flashinfer" => Some(Self::FlashInfer),
            "native" => Some(Self::Native),
            "triton" => Some(Self::Triton),
            _ => None,
        }
    }
}

/// Bytes per logit of the native top-k/top-p sampler at its peak. vLLM
/// 0.12.0's `apply_top_k_top_p` holds, beside the bf16 logits (2) and their
/// fp32 copy (4), the sorted fp32 logits (4), their int64 indices (8), the
/// top-k and top-p bool masks (1 + 1), the fp32 probabilities (4) and the
/// scattered fp32 result (4): 28. Two real 0.12.0 start-up logs of one
/// model on the same two H100s, `max_num_seqs` 256 and 64
/// (`vllm-v1-012-qwen3-vl-30b-a3b-h100-tp2-seqs*`), differ by 0.92 GiB of KV
/// cache: 33.9 bytes per logit of the 192 × 151,936 logits between them;
/// the 6 bytes beyond the named tensors are `torch.sort`'s own scratch.
pub const NATIVE_SAMPLER_BYTES: u64 = 34;

/// fp32 bytes per logit the sampler holds beside the model-dtype logits:
/// the fp32 copy (`logits.to(torch.float32)`, vLLM 0.33.0
/// `v1/sample/sampler.py`), then, for the dummy run's top-k (vocabulary − 1)
/// and top-p together (`flashinfer_sample` in
/// `v1/sample/ops/topk_topp_sampler.py`), FlashInfer's top-k-masked fp32
/// logits and their fp32 softmax, both alive while it samples
/// (flashinfer-python 0.7.4 `sampling.py::top_k_top_p_sampling_from_logits`).
pub const SAMPLER_FP32_BYTES: u64 = 4 + 4 + 4;

/// What Triton's top-k/top-p sampler holds per logit beyond the tensors
/// [`Sampler::Triton`] names, under the 0.19 and 0.24 rules: measured on
/// eleven vLLM 0.19.0 start-up logs at DEBUG level whose peak is the
/// sampler's (1,024 rows; `torch peak memory increase` less the named bytes
/// and the hidden states: 0.90 – 0.98 bytes per logit over vocabularies of
/// 128,256 and 152,064), a byte-wide mask's worth.
pub const TRITON_SAMPLER_EXTRA_BYTES: u64 = 1;

/// The MXFP4 MoE kernel a log says vLLM took (`Using Marlin backend`,
/// `Using Triton backend`, `Using FlashInfer MXFP4 …`: 0.11.0
/// `quantization/mxfp4.py::get_mxfp4_backend`). On Hopper it is Marlin when
/// `triton_kernels` is not installed, whatever the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mxfp4Kernel {
    Marlin,
    Triton,
    FlashInfer,
}

impl Mxfp4Kernel {
    pub fn id(self) -> &'static str {
        match self {
            Self::Marlin => "marlin",
            Self::Triton => "triton",
            Self::FlashInfer => "flashinfer",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "marlin" => Some(Self::Marlin),
            "triton" => Some(Self::Triton),
            "flashinfer" => Some(Self::FlashInfer),
            _ => None,
        }
    }

    /// The padding its `create_weights` gives the experts' intermediate and
    /// hidden widths: Marlin `n % 256 == 0 and k % 128 == 0`; Triton the
    /// intermediate width to 64; FlashInfer (SM100) 256 and 256.
    fn padding(self) -> (u64, u64) {
        match self {
            Self::Marlin => (128, 256),
            Self::Triton => (64, 1),
            Self::FlashInfer => (256, 256),
        }
    }
}

/// The MXFP4 MoE kernel vLLM picks for a GPU (0.11.0
/// `quantization/mxfp4.py::get_mxfp4_backend`), by the padding its
/// `create_weights` gives the experts' intermediate and hidden widths; on
/// Hopper, Triton only where the wheel ships `triton_kernels`
/// ([`super::Version::ships_triton_kernels`]).
fn mxfp4_padding(gpu: &str, logged: Option<Mxfp4Kernel>, triton_kernels: bool) -> (u64, u64) {
    if let Some(kernel) = logged {
        return kernel.padding();
    }
    let name = gpu.to_ascii_uppercase();
    let any = |marks: &[&str]| marks.iter().any(|m| name.contains(m));
    if is_rocm(gpu) {
        // ROCm: 256 and 256.
        (256, 256)
    } else if any(&["B200", "B300", "GB200", "GB300"]) {
        // SM100 with FlashInfer (a vLLM dependency): MXFP4 × BF16, 256 and 256.
        (256, 256)
    } else if triton_kernels && any(&["H100", "H200", "H800", "H20", "GH200", "RTX PRO 6000", "RTX 50"]) {
        // Hopper (and consumer Blackwell) with triton_kernels: the
        // intermediate width to 64, the hidden width as it is.
        (64, 1)
    } else {
        // Before Hopper, or without `triton_kernels`: Marlin, `n % 256 == 0 and k % 128 == 0`.
        (128, 256)
    }
}

/// An AMD GPU (the engines run ROCm there), by the catalog's names
/// (Instinct MI…, Radeon RX …).
pub(crate) fn is_rocm(gpu: &str) -> bool {
    let name = gpu.to_ascii_uppercase();
    ["MI2", "MI3", "RADEON", "RX "].iter().any(|m| name.contains(m))
}

/// Whether the plan runs on ROCm, by its first GPU ([`is_rocm`]).
pub(crate) fn plan_on_rocm(p: &crate::engines::Plan) -> bool {
    p.scenario.gpus.first().is_some_and(|g| is_rocm(&g.name))
}

/// Bytes vLLM adds to one stage's MXFP4 experts by padding them for its
/// kernel: each expert's gate/up (`2I × H/2` bytes, `2I × H/32` scales,
/// `2I` bf16 biases) and down (`H × I/2`, `H × I/32`, `H` bf16 biases)
/// with `I` the per-rank intermediate width and `H` the hidden width, at
/// their padded sizes less their own.
pub(super) fn mxfp4_padding_bytes(p: &Plan, stage: usize, gpu: &str, o: Options) -> u64 {
    let logged = o.mxfp4_kernel;
    let text = &p.model.arch.text;
    let (Some(moe), crate::formats::WeightFormat::Mxfp4 { .. }) = (text.moe, p.scenario.weights) else { return 0 };
    let (pad_i, pad_h) = mxfp4_padding(gpu, logged, o.version.ships_triton_kernels());
    let per_expert = |i: u64, h: u64| {
        let bias = if moe.expert_bias { 2 } else { 0 };
        let up = (2 * i).saturating_mul(h / 2 + h / 32 + bias);
        let down = h.saturating_mul(i / 2 + i / 32 + bias);
        up.saturating_add(down)
    };
    let (experts, i) = p.sharding().experts.local(&moe);
    let h = text.hidden_size;
    let padded = per_expert(i.next_multiple_of(pad_i), h.next_multiple_of(pad_h));
    let extra = padded.saturating_sub(per_expert(i, h)).saturating_mul(experts);
    let layers = text.layers[p.stage_range(stage)].iter().filter(|l| l.ffn == crate::arch::Ffn::Moe).count() as u64;
    extra.saturating_mul(layers)
}

/// GPU bytes of vLLM's rotary cos/sin tables on every rank: each distinct
/// rotary embedding (`rotary_embedding/__init__.py::get_rope` caches them in
/// `_ROPE_DICT`, so layers share one per set of parameters) registers a
/// `cos_sin_cache` buffer of `positions × rotary_dim` in the model dtype
/// (vLLM 0.19.1 `rotary_embedding/base.py::RotaryEmbeddingBase.__init__`,
/// `_compute_cos_sin_cache`), built on the GPU with the model and so inside
/// `gpu_model_runner.py::load_model`'s `DeviceMemoryProfiler`: "Model loading
/// took" counts it. The positions are the architecture's
/// ([`crate::arch::Extras::rope_table_positions`]: read for Gemma 3, two
/// tables, one stretched 8× by its linear scaling, and Llama 4, whose Scout
/// config asks for 10,485,760 positions: 2.5 GiB); not sharded by TP.
pub fn rope_table_bytes(p: &Plan) -> u64 {
    let text = &p.model.arch.text;
    text.extra.rope_table_positions.saturating_mul(text.head_dim).saturating_mul(p.bytes_per_element())
}

/// GPU bytes of vLLM's LoRA buffers on one stage: every LoRA-wrapped linear
/// layer holds, per adapter slot, A of `rank × input` and B of `output ×
/// rank` for each of its slices, at its per-rank input and output widths, in
/// the model dtype (0.33.0 `lora/layers/base_linear.py` and
/// `column_parallel_linear.py::create_lora_weights`, not fully sharded).
/// Per decoder layer: the q/k/v slices (input hidden, outputs the heads on
/// this rank), o_proj (input the query width on this rank, output hidden)
/// and, for a dense MLP, gate/up (input hidden, outputs intermediate / TP)
/// and down (input intermediate / TP, output hidden). Allocated with the
/// model, before the profile: counted with the weights. The experts' LoRA
/// (`lora/layers/fused_moe.py`) and an `lm_head` adapter are not counted.
pub fn lora_bytes(p: &Plan, o: Options, stage: usize) -> u64 {
    if o.max_loras == 0 {
        return 0;
    }
    let t = &p.model.arch.text;
    let tp = p.tp().max(1);
    let h = t.hidden_size;
    let q = t.num_heads.saturating_mul(t.head_dim) / tp;
    // KV heads are replicated once there are fewer than ranks.
    let kv_heads = t.num_kv_heads.div_ceil(tp).max(1);
    let k = kv_heads.saturating_mul(t.head_dim);
    let v = kv_heads.saturating_mul(t.v_head_dim);
    let attention =
        h.saturating_mul(3).saturating_add(q).saturating_add(k).saturating_add(v).saturating_add(q).saturating_add(h);
    let mlp = |inter: u64| {
        h.saturating_mul(2).saturating_add((inter / tp).saturating_mul(2)).saturating_add(inter / tp).saturating_add(h)
    };
    let per_slot_width: u64 = t.layers[p.stage_range(stage)]
        .iter()
        .map(|l| {
            let attn = if matches!(l.attention, crate::arch::LayerAttention::None) { 0 } else { attention };
            let ffn = match l.ffn {
                crate::arch::Ffn::Dense => {
                    mlp(if l.shape.ffn_width > 0 { l.shape.ffn_width } else { t.intermediate_size })
                }
                crate::arch::Ffn::Moe | crate::arch::Ffn::None => 0,
            };
            attn.saturating_add(ffn)
        })
        .fold(0u64, u64::saturating_add);
    per_slot_width.saturating_mul(o.max_lora_rank).saturating_mul(o.max_loras).saturating_mul(p.bytes_per_element())
}

/// Bytes PyTorch's caching allocator hands out beyond one tensor of `bytes`
/// (`c10/cuda/CUDACachingAllocator.cpp`, unchanged through PyTorch 2.10,
/// vLLM 0.19.0's): a request of 10 MiB or more (`kMinLargeAlloc`) that no
/// cached block serves gets a new segment rounded up to 2 MiB
/// (`kRoundLarge`, `get_allocation_size`), and its block keeps the rest
/// unless more than 1 MiB (`kSmallSize`) is left (`should_split`); the
/// allocated bytes count the whole block. Smaller requests are split from
/// 2 and 20 MiB buffers, and keep nothing.
fn block_slack(bytes: u64) -> u64 {
    let rest = segment_slack(bytes);
    if rest <= MIB { rest } else { 0 }
}

/// What the segment PyTorch's caching allocator reserves for one tensor of
/// `bytes` holds beyond it: a request of 10 MiB or more gets a segment of
/// its own rounded up to 2 MiB (`get_allocation_size`, as [`block_slack`]);
/// the rest, kept in its block or split off as a free block that no later
/// weight is small enough to take, stays reserved through
/// `torch.cuda.empty_cache` (which frees whole segments only), so the free
/// memory CUDA reports (`torch.cuda.mem_get_info`) is short of it. Smaller
/// requests share 2 and 20 MiB buffers and are left out.
fn segment_slack(bytes: u64) -> u64 {
    const MIN_LARGE_ALLOC: u64 = 10 * MIB;
    const ROUND_LARGE: u64 = 2 * MIB;
    if bytes < MIN_LARGE_ALLOC {
        return 0;
    }
    bytes.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE).saturating_sub(bytes)
}

/// The allocator's slack ([`block_slack`]) over the tensors vLLM creates on
/// one rank of `stage` as it builds the model ([`weight_tensor_slack`]),
/// which "Model loading took" counts (0.19.0
/// `gpu_model_runner.py::load_model`: `DeviceMemoryProfiler`,
/// `torch.cuda.max_memory_allocated`). Qwen2.5-72B at TP 2: `down_proj` is
/// 231 MiB, one 232 MiB block, 80 MiB over 80 layers.
pub fn block_slack_bytes(p: &Plan, stage: usize) -> u64 {
    weight_tensor_slack(p, stage, block_slack)
}

/// The segments' slack ([`segment_slack`]) over the same tensors: what an
/// engine that measures its weights by the free memory CUDA reports after
/// `torch.cuda.empty_cache` sees beyond them (SGLang 0.4.3
/// `model_executor/model_runner.py::load_model` and
/// `utils.py::get_available_gpu_memory`, whose figure after the weights also
/// sizes the KV pool in `profile_max_num_token`). QwQ-32B at TP 4:
/// `o_proj` is 12.5 MiB in a 14 MiB segment, `qkv_proj` 17.5 in 18,
/// `down_proj` 67.5 in 68: 160 MiB over 64 layers.
pub fn segment_slack_bytes(p: &Plan, stage: usize) -> u64 {
    weight_tensor_slack(p, stage, segment_slack)
}

/// `slack_of` summed over the tensors vLLM's model code (which SGLang's
/// follows) creates on one rank of `stage` as it builds the model. Per
/// layer: the fused `qkv_proj`, `o_proj`, the fused `gate_up_proj` and
/// `down_proj`, or the fused-MoE `w13` and `w2` of all experts and the
/// shared expert's two; the vocab-parallel embedding and head, their rows
/// padded to 64 (`vocab_parallel_embedding.py::pad_vocab_size`). Linear
/// layers count when stored in the model dtype (quantised ones are repacked
/// after loading); MLA's projections and the vision tower are not counted.
/// Each part over the ranks the engine splits it over (`Sharding`: SGLang's
/// data-parallel attention holds attention over TP ÷ DP ranks and the
/// embedding whole; the head stays vocab-parallel over TP).
fn weight_tensor_slack(p: &Plan, stage: usize, slack_of: fn(u64) -> u64) -> u64 {
    use crate::arch::{AttentionKind, Ffn, LayerAttention};
    use crate::formats::WeightFormat;
    let t = &p.model.arch.text;
    let tp = p.tp().max(1);
    let sharding = p.sharding();
    let attention_ranks = sharding.attention.max(1);
    let h = t.hidden_size;
    let dtype = p.bytes_per_element();
    // Bytes per element of the attention and dense layers, and of the experts.
    let (dense, experts) = match p.scenario.weights {
        WeightFormat::F32 | WeightFormat::Bf16 | WeightFormat::F16 => (dtype, dtype),
        WeightFormat::Mxfp4 { experts_only: true } => (dtype, 0),
        WeightFormat::Fp8 { .. }
        | WeightFormat::Int8
        | WeightFormat::Bnb4 { .. }
        | WeightFormat::Gptq { .. }
        | WeightFormat::Awq { .. }
        | WeightFormat::Gguf(_)
        | WeightFormat::Mxfp4 { experts_only: false }
        | WeightFormat::Nvfp4 => (0, 0),
    };
    let slack = |rows: u64, cols: u64, bytes: u64| slack_of(rows.saturating_mul(cols).saturating_mul(bytes));
    let mut total = 0u64;
    let standard = matches!(t.attention, AttentionKind::Standard { .. });
    for l in t.layers.get(p.stage_range(stage)).unwrap_or(&[]) {
        if standard && !matches!(l.attention, LayerAttention::None) {
            let (k, v) = l.head_dims(t.head_dim, t.v_head_dim);
            let heads = t.num_heads / attention_ranks;
            let kv = if l.shape.kv_shared {
                0
            } else {
                crate::kv::kv_heads_per_rank(l.kv_heads(t.num_kv_heads), attention_ranks)
            };
            let values = if l.shape.k_eq_v { 0 } else { kv.saturating_mul(v) };
            let qkv = heads.saturating_mul(k).saturating_add(kv.saturating_mul(k)).saturating_add(values);
            total = total.saturating_add(slack(qkv, h, dense)).saturating_add(slack(h, heads.saturating_mul(v), dense));
        }
        let mlp = |width: u64, bytes: u64| {
            let i = width / tp;
            let up = if t.mlp_gated { 2 * i } else { i };
            slack(up, h, bytes).saturating_add(slack(h, i, bytes))
        };
        let ffn = match (l.ffn, t.moe) {
            (Ffn::Dense, _) => mlp(if l.shape.ffn_width > 0 { l.shape.ffn_width } else { t.intermediate_size }, dense),
            (Ffn::Moe, Some(m)) => {
                let (n, i) = sharding.experts.local(&m);
                let shared = if m.shared_intermediate_size > 0 { mlp(m.shared_intermediate_size, dense) } else { 0 };
                slack(n.saturating_mul(2 * i), h, experts)
                    .saturating_add(slack(n.saturating_mul(h), i, experts))
                    .saturating_add(shared)
            }
            (Ffn::Moe, None) | (Ffn::None, _) => 0,
        };
        total = total.saturating_add(ffn);
    }
    // GGUF keeps its embedding quantised.
    let table = if matches!(p.scenario.weights, WeightFormat::Gguf(_)) { 0 } else { dtype };
    let rows = |n: u64, ranks: u64| n.div_ceil(64).saturating_mul(64) / ranks.max(1);
    if stage == 0 && p.first_on_gpu {
        let input = if t.embedding_rows > 0 { t.embedding_rows } else { t.vocab_size };
        total = total.saturating_add(slack(rows(input, sharding.embedding), h, table));
    }
    // A tied head is the embedding, unless pipeline stages hold them apart.
    if p.is_last_stage(stage) && (!t.tie_word_embeddings || stage > 0) {
        total = total.saturating_add(slack(rows(t.vocab_size, tp), h, table));
    }
    total
}
