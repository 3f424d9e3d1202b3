//! vLLM's own accounting (`gpu_worker.py::determine_available_memory`,
//! `kv_cache_utils.py`), reproduced so that the figures match what vLLM logs:
//!
//! ```text
//! requested = total × gpu_memory_utilization          (per GPU, of TOTAL memory)
//! available = requested − weights − profiled activation peak − non-torch − CUDA graphs
//! blocks    = available // (page × layers per group)  (min over GPUs)
//! ```
//!
//! Version differences: the V0 engine profiled a dummy batch of
//! `max(max_model_len, 2048)` tokens (chunked prefill off below 32K context);
//! V1 always chunks prefill (2,048 tokens for `vllm serve`, 8,192 on ≥ 70 GiB
//! non-A100 GPUs) and groups sliding-window layers; since 0.21 the default
//! utilization is 0.92 and CUDA-graph memory is estimated and subtracted;
//! since 0.34 the extensible KV cache measures the pool after warmup and
//! CUDA-graph capture instead (`extensible.rs`), within a utilization of 1.0.
//! Each [`Version`]'s rules are frozen: share links pin one (`vllm=0.21`).
//!
//! Files: `options.rs` (its knobs and their checks), `knobs.rs` (the same
//! declared once for links, the CLI and the page), `version.rs` (each
//! release's rules), `extras.rs` (what the budget holds besides weights and
//! KV: the memory outside PyTorch by release and board, the sampler's bytes,
//! the fused-MoE workspace, MXFP4 expert padding by kernel, LoRA buffers),
//! `spec.rs` (what `--speculative-config` adds), `all2all.rs` (the
//! all-to-all backends and DeepEP's buffers), `encoder.rs` (the vision
//! tower in the profile run, by `--limit-mm-per-prompt`), `extensible.rs`
//! (0.34's extensible KV cache: the pool measured after warmup and CUDA
//! graphs), `packed.rs` (DeepSeek-V4's caches packed into KV cache groups,
//! 0.34's `_get_packed_kv_cache_groups`), `words.rs` (terms, warnings, fixes and the `vllm serve` launch, the
//! report's rows). Its report also carries the pinned `--kv-cache-memory`
//! and the `--max-model-len auto` choice.
//!
//! Hybrid models (vLLM 0.33, `platforms/interface.py::_align_hybrid_block_size`):
//! Mamba / DeltaNet layers form KV-cache groups of their own whose page is one
//! sequence's state; the attention block size grows to
//! `a × ⌈state page / (a × attention bytes per token)⌉` tokens, `a` the larger
//! of the kernel's 16 and the default block (64 from 0.34), so that both
//! pages are equal (the state page is padded up to it), and each request
//! takes one block per state group whatever its length (from 0.15 one more
//! per draft token). Attention kinds of
//! different pages (Gemma 4's global and sliding layers) share the pool from
//! 0.12 by the smaller page's group holding more tokens a block
//! (`unify_kv_cache_spec_page_size`).

mod all2all;
mod encoder;
mod extensible;
mod extras;
mod knobs;
mod options;
mod packed;
mod spec;
mod version;
mod words;

pub use all2all::{All2All, DEEPEP_BUFFER_BYTES, DEEPEP_LOW_LATENCY_TOKENS, low_latency_rdma_bytes};
use extras::mxfp4_padding_bytes;
pub use extras::{
    MoeKernel, Mxfp4Kernel, NATIVE_SAMPLER_BYTES, NON_TORCH_MULTI, NON_TORCH_MULTI_0_12, NON_TORCH_MULTI_0_12_SORT,
    NON_TORCH_MULTI_NVSWITCH, NON_TORCH_SINGLE, NON_TORCH_SINGLE_0_19, NON_TORCH_TP2_NVSWITCH_0_19,
    NON_TORCH_TP4_NVSWITCH_0_19, SAMPLER_FP32_BYTES, Sampler, TRITON_SAMPLER_EXTRA_BYTES, block_slack_bytes,
    lora_bytes, native_sampler_bytes_per_logit, profile_peak, rope_table_bytes, sampler_bytes_per_logit,
    segment_slack_bytes,
};
pub(crate) use extras::{is_rocm, plan_on_rocm};
pub use knobs::KNOBS;

pub use options::{
    DEFAULT_MAX_LORA_RANK, DEFAULT_MAX_LORAS, DEFAULT_MM_LIMIT, MAX_CPU_OFFLOAD_GB, MAX_DATA_PARALLEL, MAX_SPEC_TOKENS,
    MmLimits, Options, SpecMethod, Speculative,
};
pub(crate) use options::{check_knobs, setting_refusal};
pub use version::{EncoderPadding, EncoderProfile, Version};

pub use words::COMMANDS;
pub(crate) use words::{launch, need_and_usable, terms, warnings};

use serde::Serialize;

pub use super::parallel::Board;
use super::parallel::{self, HeadCheck, SplitError};
use super::{EngineKind, Plan, Scenario};
use crate::arch::{AttentionKind, Family, LayerAttention, TextModel};
use crate::explain::thousands;
use crate::model::Model;
use crate::plan::{CUDA_CONTEXT_BYTES, GpuBudget, GpuSlot, MAX_CONCURRENCY, Search, Verdict, largest};
use crate::state::StateRules;
use crate::units::{GIB, KIB, MIB, decimal};

/// Tokens per KV block (`CacheConfig.DEFAULT_BLOCK_SIZE`) before 0.34
/// ([`Version::default_block_size`]).
pub const DEFAULT_BLOCK_SIZE: u64 = 16;
/// CUDA-graph memory per decoder layer and captured batch size. Empirical:
/// fitted to vLLM's "Graph capturing finished … took 0.5 GiB" for 32-layer
/// 7–8B models with the default 67 capture sizes (1, 2, 4, 8 … 512). The
/// whole figure up to 0.17 ([`Version::empties_cache_before_capture`]),
/// and, not re-fitted, what the plan takes for vLLM's own estimate where
/// the KV budget subtracts it ([`Version::subtracts_cuda_graphs`]) by the
/// rules that do not model it ([`Version::models_graph_estimate`]).
pub const CUDA_GRAPH_BYTES_PER_LAYER_SIZE: u64 = 256 * KIB;
/// vLLM 0.18+ (`captured_graph_bytes`): the capture's fixed first-capture
/// cost, once per process (vLLM 0.19's own PIECEWISE first capture less the
/// activations is 50 – 100 MiB; a cuBLAS workspace for the capture stream
/// and scratch, by inference). Empirical: fitted with
/// [`CUDA_GRAPH_BYTES_PER_LAYER_GRAPH`] to the 48 positive "took" figures
/// of the 0.18+ fixture logs (the fit minimising median + ½ · p90 of the
/// error; docs/measurements.md, "The eighteenth session").
pub const CUDA_GRAPH_FIRST_CAPTURE_BYTES: u64 = 92 * MIB;
/// vLLM 0.18+: one layer's kernels in one captured graph (piecewise splits
/// at each attention op, so a size is about one graph per layer; a FULL
/// graph holds the same kernels), the driver's graph memory and the pool's
/// rounding. Empirical, fitted with [`CUDA_GRAPH_FIRST_CAPTURE_BYTES`].
pub const CUDA_GRAPH_BYTES_PER_LAYER_GRAPH: u64 = 176 * KIB;
/// FlashAttention 3's split-KV upper bound for FULL graphs, so that "large
/// enough intermediate buffers are pre-allocated during capture"
/// (`AttentionConfig.flash_attn_max_num_splits_for_cuda_graph`, 0.19.0
/// config/attention.py; `VLLM_FLASH_ATTN_MAX_NUM_SPLITS_FOR_CUDA_GRAPH`
/// in envs.py before).
pub const FA3_CUDA_GRAPH_MAX_SPLITS: u64 = 32;
pub const CUDA_GRAPH_CAPTURE_SIZES: u64 = 67;

/// vLLM (and SGLang, which follows the same shapes): conv and SSM state
/// in `mamba_cache_dtype` / `mamba_ssm_cache_dtype`, both "auto" = the
/// model dtype (`MambaStateDtypeCalculator._mamba_state_dtype`), except
/// where the config names an FP32 SSM state (Nemotron-H: float32,
/// `NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype`; Qwen3.5's
/// `mamba_ssm_dtype`). A gated-DeltaNet conv state keeps `kernel − 1 +
/// draft_tokens` columns (`gated_delta_net_state_shape(num_spec)`, which
/// qwen3_next.py and qwen3_5.py pass `num_speculative_tokens`, 0.11.0 –
/// 0.25.1): SGLang keeps its draft states in pools of their own.
/// `num_speculative_tokens` as vLLM resolves it for `model` (0 without a drafter).
pub(crate) fn draft_tokens(model: &Model, o: Options) -> u64 {
    spec::draft_tokens(&model.arch.text, o)
}

/// A Kimi-delta-attention state is float32 whatever the cache dtypes say:
/// vLLM 0.34's layer asks `kda_state_dtype(model dtype, mamba_cache_dtype)`
/// without `mamba_ssm_cache_dtype`, whose "auto" is float32
/// (`KimiGatedDeltaNetAttention.get_state_dtype`,
/// layers/mamba/gdn/kimi_gdn_linear_attn.py; `MambaStateDtypeCalculator.
/// kda_state_dtype`), and SGLang 0.5.23's `KimiLinearCacheParams` keeps the
/// default `mamba2_state_dtype(None)`, float32 (configs/mamba_utils.py).
pub(crate) fn state_rules(model: &Model, bytes_per_element: u64, draft_tokens: u64) -> StateRules {
    let kda = matches!(model.arch.text.recurrent, Some(crate::arch::Recurrent::KimiDelta { .. }));
    let ssm_f32 = model.arch.text.extra.ssm_state_f32 || kda;
    StateRules {
        conv_bytes: bytes_per_element,
        ssm_bytes: if ssm_f32 { 4 } else { bytes_per_element },
        conv_columns_full_kernel: false,
        draft_conv_columns: draft_tokens,
    }
}

/// The splits vLLM refuses: query and KV heads that do not divide over the
/// ranks (checked up front, `ModelConfig.verify_with_parallel_config`), and
/// more pipeline stages than layers.
pub(crate) fn check_split(o: Options, s: &Scenario, text: &TextModel) -> Result<(), SplitError> {
    parallel::check_heads(EngineKind::Vllm, HeadCheck::UpFront, s.tp, text)?;
    parallel::check_stages(s, text)?;
    // EPLB places `E + redundant` experts evenly (`EplbState`, 0.19.0).
    let split = o.expert_split(s.tp);
    if let Some(m) =
        text.moe.filter(|m| split.redundant > 0 && !split.placed(m.num_experts).is_multiple_of(split.ranks))
    {
        return Err(SplitError::VllmRedundantExperts { placed: split.placed(m.num_experts), ranks: split.ranks });
    }
    spec::check(o, text)
}

pub(crate) fn too_many_stages(stages: u64, layers: u64) -> String {
    let empty = (0..stages).filter(|&s| pp_layers(layers, s, stages) == 0).count();
    format!("vLLM's get_pp_indices would give {empty} of the stages no layer at all")
}

/// Layers vLLM's `get_pp_indices` gives stage `rank` of `size`: an even
/// share, the remainder spread over the stages before the last.
fn pp_layers(layers: u64, rank: u64, size: u64) -> u64 {
    let base = layers / size;
    let remainder = layers % size;
    // partitions[-i] += 1 for i in 2..remainder + 2: ranks size-2 down to size-1-remainder.
    let extra = rank + 1 < size && rank + 1 + remainder >= size;
    base + u64::from(extra)
}

/// Each pipeline stage's layers as vLLM's `get_pp_indices` places them
/// (0.10.0 distributed/utils.py: the remainder on the stages before the last).
pub(crate) fn stage_ranges(layers: usize, stages: usize) -> crate::plan::split::Ranges {
    crate::plan::split::consecutive(
        (0..stages as u64).map(|rank| pp_layers(layers as u64, rank, stages as u64) as usize),
    )
}

/// One KV cache group: layers of one attention kind sharing a block table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    window: Option<u64>,
    /// A group of recurrent layers: one block per request (and per draft
    /// token, [`Version::state_blocks_per_draft_token`]).
    state: bool,
    /// Tokens one block of this group holds: the engine's block, or a
    /// multiple of it that brings a smaller page up to the pool's
    /// ([`Version::unifies_page_sizes`]).
    block: u64,
}

impl Group {
    /// Whether `self` is a group of the same attention kind as `other`.
    fn same_kind(self, other: Group) -> bool {
        self.window == other.window && self.state == other.state
    }
}

/// vLLM's budget on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GpuKv {
    pub requested_bytes: u64,
    /// The weights as vLLM holds them: with its MXFP4 padding, the LoRA
    /// buffers (`lora_bytes`) and, by the `-rope` and `-mm` rules, the
    /// buffers built with the model (`buffer_bytes`).
    pub weight_bytes: u64,
    /// The rotary cos/sin tables (`rope_table_bytes`) and, by the 0.11 – 0.17
    /// rules, Qwen3-VL's deepstack inputs (`encoder::deepstack_buffer_bytes`),
    /// part of `weight_bytes`.
    #[serde(skip_serializing_if = "is_zero")]
    pub buffer_bytes: u64,
    /// What PyTorch's allocator hands out beyond the weight tensors
    /// (`block_slack_bytes`, by the `0.19-alloc` rules), part of `weight_bytes`.
    #[serde(skip_serializing_if = "is_zero")]
    pub block_slack_bytes: u64,
    /// vLLM's LoRA buffers (`--max-loras` × `--max-lora-rank`), part of `weight_bytes`.
    pub lora_bytes: u64,
    /// The speculative drafter's weights (its MTP layers), part of `weight_bytes`.
    #[serde(skip_serializing_if = "is_zero")]
    pub draft_bytes: u64,
    pub activation_bytes: u64,
    pub non_torch_bytes: u64,
    /// DeepEP's buffers ([`all2all::buffer_bytes`]), part of `non_torch_bytes`.
    #[serde(skip_serializing_if = "is_zero")]
    pub all2all_bytes: u64,
    pub cuda_graph_bytes: u64,
    /// What the KV budget takes for the CUDA graphs before they are captured:
    /// from 0.21 vLLM's own estimate (`profile_cudagraph_memory`), modelled
    /// by the 0.33-graphs rules (`profiled_graph_bytes`), the per-layer rule
    /// by the older ones; 0 where nothing is taken.
    #[serde(skip_serializing_if = "is_zero")]
    pub subtracted_graph_bytes: u64,
    /// What the extensible KV cache (0.34+) keeps free beyond the activation
    /// peak ([`extensible::Measured::margin`]); 0 without it.
    #[serde(skip_serializing_if = "is_zero")]
    pub margin_bytes: u64,
    /// With the extensible KV cache, the profile's estimate that only
    /// reserves the cache's address range (0.34 logs it as "Available KV
    /// cache memory"): `requested − weights − activation peak − non-torch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_kv_bytes: Option<u64>,
    /// `requested − everything else`; 0 when nothing is left.
    pub available_kv_bytes: u64,
    /// Bytes of one block across the layers of one group slot.
    pub block_bytes: u64,
    pub blocks: u64,
}

impl GpuKv {
    /// What vLLM's "Available KV cache memory" line states for this GPU: the
    /// pool, or under 0.34's extensible KV cache the profile's estimate
    /// that reserves it.
    pub fn logged_kv_bytes(&self) -> u64 {
        self.reserved_kv_bytes.unwrap_or(self.available_kv_bytes)
    }

    /// The plan's figure for vLLM's `Estimated CUDA graph memory`: what the
    /// KV budget takes for the graphs where it takes one (0.21+), else the
    /// capture the estimate foretells (0.19 – 0.20 log it and take nothing).
    pub fn estimated_graph_bytes(&self) -> u64 {
        if self.subtracted_graph_bytes > 0 { self.subtracted_graph_bytes } else { self.cuda_graph_bytes }
    }
}

/// vLLM's budget over the plan's GPUs at one `max_model_len`: computed once
/// per plan (`crate::engines::EnginePlan`), it answers every question.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Budget {
    utilization: f64,
    max_model_len: u64,
    max_num_batched_tokens: u64,
    /// Tokens a sliding window holds blocks for beyond its width: one
    /// batch, or for DeepSeek-V4's groups 0.34's `max_in_flight_tokens`
    /// ([`Version::in_flight_batches`]).
    in_flight_tokens: u64,
    max_num_seqs: u64,
    block: u64,
    gpus: Vec<GpuKv>,
    num_blocks: u64,
    groups: Vec<Group>,
    /// Blocks one request holds in each state group whatever its length.
    blocks_per_state_group: u64,
    layer_page_bytes: u64,
    /// `--kv-cache-memory-bytes`: the pool is given, not what is left.
    pool_given: bool,
    /// 0.34's extensible KV cache sizes the pool (its errors say so).
    extensible: bool,
    /// A GPU that cannot hold its weights (less `--cpu-offload-gb`'s) and
    /// context ([`load_verdict`]).
    load: Option<Verdict>,
}

/// What vLLM itself reports at start-up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub version: Version,
    pub gpu_memory_utilization: f64,
    pub max_model_len: u64,
    /// Whether `--max-model-len` was given (else it is the model's own length).
    #[serde(skip)]
    pub max_model_len_set: bool,
    pub max_num_batched_tokens: u64,
    pub max_num_seqs: u64,
    pub block_size: u64,
    /// `--max-loras` (0: LoRA off) and `--max-lora-rank`.
    pub max_loras: u64,
    pub max_lora_rank: u64,
    /// `--enforce-eager`: no CUDA graphs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub enforce_eager: bool,
    pub num_gpu_blocks: u64,
    /// Blocks one request of `max_model_len` tokens takes (all groups).
    pub blocks_per_request: u64,
    pub kv_cache_tokens: u64,
    /// Requests of `max_model_len` tokens the KV cache holds at once, to two
    /// decimals as vLLM prints it.
    pub max_concurrency: f64,
    pub per_gpu: Vec<GpuKv>,
    /// vLLM's start-up error, when it would refuse to start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_error: Option<String>,
    /// The largest `max_model_len` that starts (when the configured one does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_max_model_len: Option<u64>,
    /// `--kv-cache-memory` bytes (vLLM 0.11+) that reproduce this plan's KV
    /// pool without the memory profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_kv_cache_memory_bytes: Option<u64>,
    /// What `--max-model-len auto` (vLLM 0.21+) would choose: the longest
    /// request the pool holds, at most the model's own length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_max_model_len: Option<u64>,
    /// The lines vLLM would log.
    pub log_lines: Vec<String>,
}

/// The GPUs of one data-parallel replica (each its own engine core, with
/// its own TP × PP process groups).
pub(crate) fn replica_gpus(p: &Plan) -> usize {
    p.scenario.gpus.len() / p.replicas().max(1) as usize
}

/// The GPUs a rank exchanges with in the profile: its replica's, or, for a
/// MoE model, every replica's (its MoE layers span them all and gather
/// their tokens, `FusedMoEParallelConfig.make`, 0.19.0).
pub(crate) fn communicating_gpus(p: &Plan) -> usize {
    if p.model.arch.text.moe.is_some() { p.scenario.gpus.len() } else { replica_gpus(p) }
}

/// The API server's default `max_num_batched_tokens` and `max_num_seqs`,
/// chosen together by GPU (`engine/arg_utils.py::_set_default_args`,
/// 0.10.0 – 0.34.0): ≥ 70 GiB and no A100 in the name, the large tier;
/// from 0.34.0 ≥ 160 GiB (B200, B300) the largest, and a GB10 (compute
/// capability 12.1, "the memory but not the compute of a large discrete
/// GPU") the small one. `--performance-mode throughput` doubles both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tier {
    Small,
    Large,
    Largest,
}

impl Tier {
    pub(crate) const ALL: [Tier; 3] = [Tier::Small, Tier::Large, Tier::Largest];

    fn of(p: &Plan, o: Options) -> Tier {
        let Some(g) = p.scenario.gpus.first() else { return Tier::Small };
        let newest = o.version == Version::V0_34;
        if newest && g.capacity_bytes >= 160 * GIB {
            Tier::Largest
        } else if g.capacity_bytes >= 70 * GIB
            && !g.name.contains("A100")
            && !(newest && g.compute_capability == Some(121))
        {
            Tier::Large
        } else {
            Tier::Small
        }
    }

    pub(crate) fn batched_tokens(self) -> u64 {
        match self {
            Tier::Small => 2048,
            Tier::Large => 8192,
            Tier::Largest => 16_384,
        }
    }

    pub(crate) fn max_num_seqs(self) -> u64 {
        match self {
            Tier::Small => 256,
            Tier::Large | Tier::Largest => 1024,
        }
    }
}

pub(crate) fn default_max_model_len(p: &Plan, o: Options) -> u64 {
    o.max_model_len.or(p.model.arch.text.max_position_embeddings).unwrap_or_else(|| p.scenario.sequence_tokens()).max(1)
}

/// The KV cache groups of `stage` and their size in layers
/// (`kv_cache_utils.py::get_kv_cache_groups`), for attention blocks of
/// `block` tokens in pages of `page` bytes.
fn groups(p: &Plan, o: Options, stage: usize, block: u64, page: u64) -> (Vec<Group>, u64) {
    // Each kind: its group, its layer count and its largest bytes per token.
    let mut kinds: Vec<(Group, u64, u64)> = Vec::new();
    let mut count = |kind: Group, layers: u64, per_token: u64| match kinds.iter_mut().find(|(g, ..)| g.same_kind(kind))
    {
        Some((_, n, t)) => {
            *n += layers;
            *t = (*t).max(per_token);
        }
        None => kinds.push((kind, layers, per_token)),
    };
    let text = &p.model.arch.text;
    let range = p.stage_range(stage);
    let states = p.state_layers.get(range.clone()).unwrap_or(&[]);
    for ((spec, kv), st) in text.layers[range].iter().zip(p.stage_kv(stage)).zip(states) {
        if st.bytes() > 0 {
            count(Group { window: None, state: true, block }, 1, 0);
        }
        if kv.bytes_per_token == 0 {
            continue;
        }
        let window = match spec.attention {
            // vLLM V1 gives chunked local attention (Llama 4) its own group too
            // (`ChunkedLocalAttentionSpec`, vllm/v1/kv_cache_interface.py).
            LayerAttention::Sliding(w) | LayerAttention::Chunked(w) if o.version.groups_sliding_windows() => Some(w),
            _ => None,
        };
        count(Group { window, state: false, block }, 1, kv.bytes_per_token);
    }
    // The drafter's attention layers join the full-attention group (its
    // layers are built like the model's last full-attention layer).
    let draft = if p.is_last_stage(stage) { spec::draft_kv_layers(p, o) } else { 0 };
    if draft > 0 {
        let per_token = spec::draft_kv_bytes_per_token(p);
        count(Group { window: None, state: false, block }, draft, per_token);
    }
    // `unify_kv_cache_spec_page_size`: a kind whose page divides the pool's
    // holds as many more tokens a block.
    if o.version.unifies_page_sizes() {
        for (g, _, per_token) in kinds.iter_mut().filter(|(g, ..)| !g.state) {
            let own = per_token.saturating_mul(block);
            if own > 0 && page > own && page.is_multiple_of(own) {
                g.block = block.saturating_mul(page / own);
            }
        }
    }
    // `_get_kv_cache_groups_uniform_page_size`: one group size for all kinds
    // (the smallest kind's layer count, or from 0.18 the largest's where it
    // is under 1.5 × the smallest); larger kinds split into several groups,
    // the last padded ("Add N padding layers"): a padded slot is a page of
    // every block, held memory (Qwen3.5-27B with its MTP layer: 17
    // full-attention layers, 48 GDN in three groups of 17).
    let fewest = kinds.iter().map(|(_, n, _)| *n).min().unwrap_or(0);
    let most = kinds.iter().map(|(_, n, _)| *n).max().unwrap_or(0);
    let close = most.saturating_mul(2) < fewest.saturating_mul(3);
    let size = if o.version.groups_by_the_largest_when_close() && close { most } else { fewest };
    let groups = kinds.iter().flat_map(|(g, n, _)| std::iter::repeat_n(*g, n.div_ceil(size.max(1)) as usize)).collect();
    (groups, size)
}

/// `max_num_batched_tokens`: the only part of the budget that depends on
/// `max_model_len` (and only in V0).
fn batched_tokens(o: Options, tier: Tier, max_model_len: u64) -> u64 {
    o.max_num_batched_tokens.unwrap_or(match o.version {
        // SchedulerConfig (V0): without chunked prefill the dummy batch is a whole max-length sequence.
        Version::V0 if max_model_len <= 32_768 => max_model_len.max(2048),
        Version::V0 => 2048,
        // `_` is every later rule set: V1 always chunks the prefill.
        _ => tier.batched_tokens(),
    })
}

fn budget(p: &Plan, o: Options, max_model_len: u64) -> Budget {
    let s = &p.scenario;
    let extensible = o.extensible_kv_cache();
    let utilization = o.utilization();
    let tier = Tier::of(p, o);
    let mnbt = batched_tokens(o, tier, max_model_len);
    let max_num_seqs = o.max_num_seqs.unwrap_or(if o.version == Version::V0 { 256 } else { tier.max_num_seqs() });
    let per_token = p.kv_layers.iter().map(|l| l.bytes_per_token).max().unwrap_or(0);
    let state_page = p.state_layers.iter().map(|l| l.bytes()).max().unwrap_or(0);
    // DeepSeek-V4's caches are packed into groups of their own (`packed.rs`):
    // its blocks are the full-attention caches' 256 tokens.
    let packed = packed::groups(p);
    let full_block = packed.as_ref().and_then(|g| g.iter().find(|x| x.group.window.is_none())).map(|x| x.group.block);
    let block = full_block.unwrap_or_else(|| {
        hybrid_block_size(o.block_size.unwrap_or(o.version.default_block_size()).max(1), per_token, state_page)
    });
    let (non_torch, _) = o.version.non_torch(p.tp(), communicating_gpus(p), Board::of(&s.gpus), o.enforce_eager);
    // DeepEP's buffers come after the weights, outside PyTorch: the same on every rank.
    let a2a = all2all::buffer_bytes(p, o);
    let non_torch = non_torch.saturating_add(a2a);
    let text = &p.model.arch.text;
    let mut gpus = Vec::with_capacity(s.gpus.len());
    let mut num_blocks = u64::MAX;
    // The state page is padded up to the attention page (or is the page, in
    // a model without attention layers).
    let layer_page_bytes = match &packed {
        Some(g) => packed::bytes_per_block(g, p.stage_range(0)),
        None => per_token.saturating_mul(block).max(state_page),
    };
    let model_groups = match &packed {
        Some(g) => g.iter().map(|x| x.group).collect(),
        None => groups(p, o, 0, block, layer_page_bytes).0,
    };
    for (g, slot) in s.gpus.iter().enumerate() {
        let stage = p.stage(g);
        let layers = p.stage_range(stage).len() as u64;
        // `MemorySnapshot.measure`: `torch.cuda.mem_get_info()`'s total, CUDA's.
        let requested = (slot.cuda_total_bytes as f64 * utilization).floor() as u64;
        // The 0.10 and 0.33 rules pad MXFP4 experts as vLLM's kernels need.
        let padding =
            if o.version.profile_peak_is_larger_half() { mxfp4_padding_bytes(p, stage, &slot.name, o) } else { 0 };
        let lora = lora_bytes(p, o, stage);
        let rope = if o.version.holds_rope_tables() && layers > 0 { rope_table_bytes(p) } else { 0 };
        let slack = if o.version.weights_in_allocator_blocks() { block_slack_bytes(p, stage) } else { 0 };
        let draft = if p.is_last_stage(stage) { spec::draft_weight_bytes(p, o) } else { 0 };
        let deepstack = if stage == 0 && p.first_on_gpu { encoder::deepstack_buffer_bytes(p, o, mnbt) } else { 0 };
        let weights = p
            .stage_weights(stage)
            .saturating_add(padding)
            .saturating_add(lora)
            .saturating_add(rope)
            .saturating_add(slack)
            .saturating_add(draft)
            .saturating_add(deepstack);
        // `--cpu-offload-gb` takes the layers' parameters as vLLM holds them
        // (their padding and allocator slack with them); the embedding, head,
        // adapters, tables and drafter stay.
        let kept = p
            .stage_weights(stage)
            .saturating_sub(p.weights.slice(p.stage_range(stage), false, false))
            .saturating_add(lora)
            .saturating_add(rope)
            .saturating_add(draft)
            .saturating_add(deepstack);
        let weights = if offloaded_bytes(p, o, stage) > 0 {
            weights.saturating_sub(offload_limit(o)).max(kept.min(weights))
        } else {
            weights
        };
        let seqs = if p.is_last_stage(stage) { max_num_seqs } else { 0 };
        let act = if layers > 0 { profile_peak(text, mnbt, seqs, p.bytes_per_element(), p.tp(), o) } else { 0 };
        // The vision tower's pass over the profile's images, on the stage
        // that holds it, and the outputs kept through the text's.
        let act = if stage == 0 && p.first_on_gpu {
            encoder::peak(p, o, mnbt, max_num_seqs, max_model_len, act)
        } else {
            act
        };
        // `--enforce-eager` captures none (`CUDAGraphMode.NONE`).
        let captured = if o.enforce_eager { 0 } else { o.version.cuda_graphs(max_num_seqs, mnbt) };
        let per_layer_size = CUDA_GRAPH_BYTES_PER_LAYER_SIZE.saturating_mul(captured).saturating_mul(layers);
        let graphs = if o.version.empties_cache_before_capture() && captured > 0 && layers > 0 {
            captured_graph_bytes(
                p,
                o,
                slot,
                Capture { graphs: captured, layers, max_num_seqs, max_num_batched_tokens: mnbt },
            )
        } else {
            per_layer_size
        };
        // vLLM subtracts its own estimate (0.21 `profile_cudagraph_memory`),
        // not what the capture takes: modelled by the 0.33-graphs rules, the
        // per-layer rule by the older ones. The extensible cache skips the
        // estimate and measures the graphs it captured.
        let subtracted_graphs = if !o.version.subtracts_cuda_graphs() || extensible {
            0
        } else if o.version.models_graph_estimate() && captured > 0 && layers > 0 {
            profiled_graph_bytes(
                p,
                o,
                slot,
                Capture { graphs: captured, layers, max_num_seqs, max_num_batched_tokens: mnbt },
            )
        } else {
            per_layer_size
        };
        let measured = extensible.then(|| extensible::Measured {
            init_free: slot.cuda_total_bytes.saturating_sub(p.base_overhead()),
            requested,
            used: weights.saturating_add(non_torch).saturating_add(graphs),
            transient_peak: act,
            rocm: is_rocm(&slot.name),
        });
        // `--kv-cache-memory-bytes`: the pool is given, whatever the profile
        // finds (0.11.0 – 0.24.0 `gpu_worker.py::determine_available_memory`
        // returns it after a profile run that sizes nothing).
        let profiled = requested
            .saturating_sub(weights)
            .saturating_sub(act)
            .saturating_sub(non_torch)
            .saturating_sub(subtracted_graphs);
        // The extensible cache's profile only reserves the address range, and
        // the measured pool is capped by it (`finalize_extensible_kv_cache`);
        // the measurement, which also takes the graphs, is always the smaller here.
        let available =
            o.kv_cache_memory_bytes.unwrap_or_else(|| measured.map_or(profiled, |m| profiled.min(m.kv_bytes())));
        let block_bytes = match &packed {
            Some(g) => packed::bytes_per_block(g, p.stage_range(stage)),
            None => layer_page_bytes.saturating_mul(groups(p, o, stage, block, layer_page_bytes).1),
        };
        let blocks = available.checked_div(block_bytes).unwrap_or(0);
        num_blocks = num_blocks.min(blocks);
        gpus.push(GpuKv {
            requested_bytes: requested,
            weight_bytes: weights,
            buffer_bytes: rope.saturating_add(deepstack),
            block_slack_bytes: slack,
            lora_bytes: lora,
            draft_bytes: draft,
            activation_bytes: act,
            non_torch_bytes: non_torch,
            all2all_bytes: a2a,
            cuda_graph_bytes: graphs,
            subtracted_graph_bytes: subtracted_graphs,
            margin_bytes: measured.map_or(0, extensible::Measured::margin),
            reserved_kv_bytes: measured.map(|_| profiled),
            available_kv_bytes: available,
            block_bytes,
            blocks,
        });
    }
    Budget {
        utilization,
        max_model_len,
        max_num_batched_tokens: mnbt,
        in_flight_tokens: if packed.is_some() {
            mnbt.saturating_mul(o.version.in_flight_batches(p.ranges.len() as u64))
        } else {
            mnbt
        },
        max_num_seqs,
        block,
        gpus,
        num_blocks: if num_blocks == u64::MAX { 0 } else { num_blocks },
        groups: model_groups,
        blocks_per_state_group: if o.version.state_blocks_per_draft_token() {
            1 + spec::draft_tokens(&p.model.arch.text, o)
        } else {
            1
        },
        layer_page_bytes,
        pool_given: o.kv_cache_memory_bytes.is_some(),
        extensible,
        load: load_verdict(p, o),
    }
}

/// What [`captured_graph_bytes`] counts the capture over.
struct Capture {
    /// Captured sizes, piecewise and FULL ([`Version::cuda_graphs`]).
    graphs: u64,
    /// Decoder layers on the rank.
    layers: u64,
    max_num_seqs: u64,
    max_num_batched_tokens: u64,
}

/// vLLM 0.18+'s "Graph capturing finished … took" on one rank
/// (`GPUModelRunner.capture_model`: free memory before less after, the
/// cache emptied first, [`Version::empties_cache_before_capture`]). Captured
/// largest first, all sizes in one pool, so the largest sets what is held:
/// 1. a fixed first-capture cost, [`CUDA_GRAPH_FIRST_CAPTURE_BYTES`];
/// 2. the activations of the largest piecewise batch, which its eager
///    warm-up run (`_dummy_run`, `CUDAGraphMode.NONE`) leaves cached: the
///    residual, queries/keys/values and the MLP per token, at this rank's
///    heads and width (a fused-MoE layer: each routed expert's MLP and
///    its copy of the token);
/// 3. FlashAttention 3's split-KV buffers in the FULL graphs,
///    `[splits, heads, tokens, head_dim]` in fp32 and the log-sum-exp
///    (v1/attention/backends/flash_attn.py `FlashAttentionMetadataBuilder`,
///    mla/flashattn_mla.py for MLA at the latent width, 0.19.0);
/// 4. each graph's kernels, [`CUDA_GRAPH_BYTES_PER_LAYER_GRAPH`] per layer.
///
/// Fitted with one constant per term for dense and MoE alike: MoE layers
/// run more kernels and come out lower than logged (0.19: 249 – 446 KiB per
/// graph and layer against ~200 KiB dense). The capture mode is not read:
/// FULL_AND_PIECEWISE is counted, also where vLLM falls back to piecewise.
fn captured_graph_bytes(p: &Plan, o: Options, slot: &GpuSlot, c: Capture) -> u64 {
    let (piecewise, full) = o.version.cuda_graph_largest(c.max_num_seqs, c.max_num_batched_tokens);
    CUDA_GRAPH_FIRST_CAPTURE_BYTES
        .saturating_add(warm_up_activation_bytes(p, piecewise))
        .saturating_add(fa3_split_bytes(p, slot, full))
        .saturating_add(CUDA_GRAPH_BYTES_PER_LAYER_GRAPH.saturating_mul(c.graphs).saturating_mul(c.layers))
}

/// vLLM 0.20 – 0.33's own estimate of its CUDA graphs, which the KV budget
/// takes ([`Version::models_graph_estimate`];
/// `v1/worker/gpu_model_runner.py::profile_cudagraph_memory`, 0.21.0, the
/// same code in 0.19.0 where it is only logged): in a pool of its own, each
/// mode (PIECEWISE, then FULL) captures its two largest sizes and reads free
/// memory around each; the estimate is the larger first capture (both modes
/// share the pool at run time) plus, for each mode, the second sample
/// (at least 1 MiB) times its other sizes. The samples are GPU
/// measurements; the plan takes them from the capture's terms
/// ([`captured_graph_bytes`]):
/// - PIECEWISE first: the fixed first-capture cost and the warm-up's
///   activations of its largest batch, with one graph;
/// - FULL first: FlashAttention 3's split buffers at its largest batch
///   (the warm-up's activations fit in what the piecewise warm-up left
///   cached), with one graph;
/// - the second sample: one graph, [`CUDA_GRAPH_BYTES_PER_LAYER_GRAPH`]
///   per layer.
///
/// The 45 0.19.0 DEBUG logs print these samples (`Estimated PIECEWISE CUDA
/// graph memory: … first-capture + (n-1) × … per-graph`): Llama-3.1-8B on
/// one H100, 138 and 260 MiB first, 6 MiB a graph (the terms: 157, 264, 5.5).
fn profiled_graph_bytes(p: &Plan, o: Options, slot: &GpuSlot, c: Capture) -> u64 {
    let (piecewise, full) = o.version.cuda_graph_largest(c.max_num_seqs, c.max_num_batched_tokens);
    let (piecewise_graphs, full_graphs) = o.version.cuda_graphs_per_mode(c.max_num_seqs, c.max_num_batched_tokens);
    let per_graph = CUDA_GRAPH_BYTES_PER_LAYER_GRAPH.saturating_mul(c.layers).max(MIB);
    let first_piecewise = if piecewise_graphs > 0 {
        CUDA_GRAPH_FIRST_CAPTURE_BYTES.saturating_add(warm_up_activation_bytes(p, piecewise)).saturating_add(per_graph)
    } else {
        0
    };
    let first_full = if full_graphs > 0 { fa3_split_bytes(p, slot, full).saturating_add(per_graph) } else { 0 };
    let others = piecewise_graphs.saturating_sub(1).saturating_add(full_graphs.saturating_sub(1));
    first_piecewise.max(first_full).saturating_add(per_graph.saturating_mul(others))
}

/// What the eager warm-up of a `tokens` batch leaves in PyTorch's cache:
/// the residual, queries/keys/values and the MLP per token, at this rank's
/// heads and width (a fused-MoE layer: each routed expert's MLP and its
/// copy of the token).
fn warm_up_activation_bytes(p: &Plan, tokens: u64) -> u64 {
    let text = &p.model.arch.text;
    let (tp, bytes) = (p.tp().max(1), p.bytes_per_element());
    let qkv = text.num_heads.saturating_add(text.num_kv_heads.saturating_mul(2)).saturating_mul(text.head_dim) / tp;
    let mlp = match text.moe {
        Some(m) => m.experts_per_token.saturating_mul(
            m.expert_intermediate_size.saturating_mul(3).checked_div(tp).unwrap_or(0).saturating_add(text.hidden_size),
        ),
        None => text.intermediate_size.saturating_mul(3) / tp,
    };
    let per_token = text.hidden_size.saturating_mul(3).saturating_add(qkv).saturating_add(mlp);
    tokens.saturating_mul(per_token).saturating_mul(bytes)
}

/// FlashAttention 3's split-KV buffers in a FULL graph of `tokens`:
/// `[splits, heads, tokens, head_dim]` in fp32 and the log-sum-exp
/// (v1/attention/backends/flash_attn.py `FlashAttentionMetadataBuilder`,
/// mla/flashattn_mla.py for MLA at the latent width, 0.19.0); 0 off
/// FlashAttention 3 or without FULL graphs.
fn fa3_split_bytes(p: &Plan, slot: &GpuSlot, tokens: u64) -> u64 {
    if tokens == 0 || !flash_attention_3(p, slot) {
        return 0;
    }
    let text = &p.model.arch.text;
    let heads = text.num_heads / p.tp().max(1);
    let width = match text.attention {
        // The accumulators are the output's width: MLA's V is the latent.
        AttentionKind::Mla(m) => m.kv_lora_rank,
        AttentionKind::Compressed(c) => c.head_dim,
        AttentionKind::Standard { .. } => text.head_dim,
    };
    FA3_CUDA_GRAPH_MAX_SPLITS
        .saturating_mul(tokens)
        .saturating_mul(heads)
        .saturating_mul(width.saturating_add(1))
        .saturating_mul(4)
}

/// Whether the model's attention runs on FlashAttention 3: a Hopper GPU
/// (`get_flash_attn_version`: 3 on compute capability 9.x, 2 elsewhere,
/// which sizes its splits by heuristics), in half precision (fp32 has no
/// FlashAttention backend), without attention sinks (gpt-oss: their FULL
/// first capture holds no split buffers in the 0.19 logs) and not Gemma 3
/// with its vision tower (`use_mm_prefix`: TRITON_ATTN, the 0.19.0 logs).
fn flash_attention_3(p: &Plan, slot: &GpuSlot) -> bool {
    let arch = &p.model.arch;
    let sinks = arch.text.extra.attn_sinks || arch.text.layers.iter().any(|l| l.shape.sinks);
    let mm_prefix = arch.family == Family::Gemma3 && arch.vision.is_some();
    slot.compute_capability.is_some_and(|c| c / 10 == 9) && p.bytes_per_element() < 4 && !sinks && !mm_prefix
}

/// The attention block size of a hybrid model: the alignment (the larger of
/// FlashAttention's `MultipleOf(16)` and the block size) times enough
/// alignments for one attention page to hold one state page.
fn hybrid_block_size(block: u64, per_token: u64, state_page: u64) -> u64 {
    const ALIGN: u64 = 16;
    if state_page == 0 || per_token == 0 {
        return block;
    }
    let align = ALIGN.max(block);
    block.max(align.saturating_mul(state_page.div_ceil(align.saturating_mul(per_token))))
}

impl Budget {
    /// Blocks one request holds in the state groups whatever its length.
    fn state_blocks(&self) -> u64 {
        (self.groups.iter().filter(|g| g.state).count() as u64).saturating_mul(self.blocks_per_state_group)
    }

    /// Blocks one request of `len` tokens needs across all groups
    /// (`SlidingWindowSpec.max_memory_usage_bytes`: window − 1 + one chunk, plus one block).
    fn blocks_per_request(&self, len: u64) -> u64 {
        self.groups.iter().fold(0u64, |acc, g| {
            let n = match g.window {
                None if g.state => self.blocks_per_state_group,
                None => len.div_ceil(g.block),
                Some(w) => (w.saturating_sub(1).saturating_add(self.in_flight_tokens)).min(len).div_ceil(g.block) + 1,
            };
            acc.saturating_add(n)
        })
    }

    /// The log's "GPU KV cache size" in tokens, as `version` counts them
    /// ([`Version::tokens_from_concurrency`]).
    fn kv_cache_tokens(&self, version: Version) -> u64 {
        if version.tokens_from_concurrency() {
            return (self.concurrency(self.max_model_len) * self.max_model_len as f64) as u64;
        }
        self.num_blocks / (self.groups.len().max(1) as u64) * self.block
    }

    fn concurrency(&self, len: u64) -> f64 {
        let need = self.blocks_per_request(len);
        if need == 0 { 0.0 } else { self.num_blocks as f64 / need as f64 }
    }

    /// Whether vLLM starts with this pool and `max_model_len`: what
    /// [`Budget::error`] says, without writing the message.
    fn starts_with(&self, max_model_len: u64) -> bool {
        self.num_blocks > 0 && self.blocks_per_request(max_model_len) <= self.num_blocks
    }

    fn starts(&self) -> bool {
        self.starts_with(self.max_model_len)
    }

    /// vLLM's start-up error, if any.
    fn error(&self, version: Version) -> Option<String> {
        let hint = self.hint(version);
        if self.num_blocks == 0 && version.extensible_kv_cache() {
            return Some(format!("No available memory for the cache blocks. {hint}"));
        }
        if self.num_blocks == 0 {
            return Some("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.".into());
        }
        if self.starts() {
            return None;
        }
        Some(match version {
            Version::V0 => format!(
                "The model's max seq len ({}) is larger than the maximum number of tokens that can be stored in KV cache ({}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
                self.max_model_len,
                self.kv_cache_tokens(version)
            ),
            // `_` is every later rule set: V1's wording.
            _ => {
                let needed = self
                    .blocks_per_request(self.max_model_len)
                    .saturating_mul(self.layer_page_bytes)
                    .saturating_mul(self.group_slots());
                let available =
                    self.num_blocks.saturating_mul(self.layer_page_bytes).saturating_mul(self.group_slots());
                // 0.11.0 and later `kv_cache_utils.py::_check_enough_kv_cache_memory`
                // add `estimate_max_model_len`'s answer: a binary search
                // for the longest request the available memory holds.
                let estimated =
                    version.kv_memory_tools().then(|| self.longest_request(self.max_model_len)).filter(|&n| n > 0);
                let estimated = estimated.map_or_else(String::new, |n| {
                    format!("Based on the available memory, the estimated maximum model length is {n}. ")
                });
                let (needed, available) =
                    (decimal(needed as f64 / GIB as f64, 2), decimal(available as f64 / GIB as f64, 2));
                let len = self.max_model_len;
                if version.extensible_kv_cache() {
                    // 0.34 `kv_cache_planning.py::_check_enough_kv_cache_memory`.
                    format!(
                        "To serve at least one request with the model's max seq len ({len}), ({needed} GiB KV cache is needed, which is larger than the available KV cache memory ({available} GiB). {estimated}{hint} Decreasing `max_model_len` also reduces what is needed."
                    )
                } else {
                    format!(
                        "To serve at least one request with the models's max seq len ({len}), ({needed} GiB KV cache is needed, which is larger than the available KV cache memory ({available} GiB). {estimated}{hint}"
                    )
                }
            }
        })
    }

    /// How vLLM says to make room for the KV cache (0.34
    /// `kv_cache_planning.py::_more_kv_cache_memory_hint`, after warmup where
    /// the extensible cache measured the pool).
    fn hint(&self, version: Version) -> String {
        let graphs = " CUDA graphs take less with fewer or smaller capture sizes in the compilation config.";
        if self.extensible && self.utilization < 1.0 {
            format!(
                "The KV cache gets what is left after the model, its activations, CUDA graphs and warmup within `gpu_memory_utilization`={}; increase it (with the extensible KV cache it defaults to 1.0) or decrease `max_model_len` or `max_num_seqs`.{graphs}",
                crate::units::shortest(self.utilization)
            )
        } else if self.extensible {
            format!(
                "The extensible KV cache already takes all device memory left after the model, its activations, CUDA graphs and warmup; decrease `max_model_len` or `max_num_seqs`, or the model needs a device with more memory.{graphs}"
            )
        } else if version.extensible_kv_cache() {
            "Try increasing `gpu_memory_utilization` when initializing the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name).".into()
        } else {
            "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.".into()
        }
    }

    /// The longest request (at most `upper` tokens) whose blocks the pool
    /// holds: vLLM's `estimate_max_model_len` (the binary search of
    /// 0.11.0 – 0.33.0 `kv_cache_utils.py`) and, up to the model's own
    /// length, what `--max-model-len auto` chooses
    /// (`_auto_fit_max_model_len`, 0.21.0 and later).
    fn longest_request(&self, upper: u64) -> u64 {
        largest(upper, |len| self.blocks_per_request(len) <= self.num_blocks)
    }

    /// `--kv-cache-memory` bytes that give this pool: every rank gets the
    /// same bytes and the smallest count of blocks wins
    /// (`get_kv_cache_configs`), so the blocks times the largest block.
    fn pinned_bytes(&self) -> u64 {
        self.num_blocks.saturating_mul(self.gpus.iter().map(|g| g.block_bytes).max().unwrap_or(0))
    }

    fn group_slots(&self) -> u64 {
        self.gpus.first().map_or(0, |g| g.block_bytes.checked_div(self.layer_page_bytes).unwrap_or(0))
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The largest `max_model_len` vLLM would start with (0: none). `b`, the
/// plan's budget, is the budget of every length with its
/// `max_num_batched_tokens` (all of them from V1 on), so only V0's short
/// lengths are budgeted again.
fn largest_max_model_len(p: &Plan, o: Options, b: &Budget, upper: u64) -> u64 {
    let tier = Tier::of(p, o);
    largest(upper, |len| {
        if batched_tokens(o, tier, len) == b.max_num_batched_tokens {
            b.starts_with(len)
        } else {
            budget(p, o, len).starts()
        }
    })
}

/// The budget at the configured `max_model_len`, computed once per plan.
pub(crate) fn budget_for(p: &Plan, o: Options) -> Budget {
    budget(p, o, default_max_model_len(p, o))
}

/// Budget of GPU `g` with `batch` requests running: the pool is one, shared
/// by attention and state groups; the state shown is the blocks the running
/// requests' states take from it, the KV cache the rest of the pool.
pub(crate) fn parts(p: &Plan, b: &Budget, g: usize, batch: u64) -> GpuBudget {
    let Some(k) = b.gpus.get(g) else { return GpuBudget::default() };
    let pool = b.num_blocks.saturating_mul(k.block_bytes);
    let state_blocks = batch.min(b.max_num_seqs).saturating_mul(b.state_blocks()).min(b.num_blocks);
    let state = if p.stage_state(p.stage(g)) > 0 { state_blocks.saturating_mul(k.block_bytes) } else { 0 };
    GpuBudget {
        weight_bytes: k.weight_bytes,
        kv_cache_bytes: pool.saturating_sub(state),
        state_bytes: state,
        activation_bytes: k.activation_bytes,
        overhead_bytes: CUDA_CONTEXT_BYTES.saturating_add(k.non_torch_bytes).saturating_add(k.cuda_graph_bytes),
    }
}

/// A given pool (`--kv-cache-memory-bytes`) is allocated whatever the GPU
/// holds: past its capacity, vLLM fails with CUDA's out-of-memory as it
/// allocates the KV cache. The first GPU it overflows, with the shortfall.
fn given_pool_overflow(p: &Plan, b: &Budget) -> Option<(usize, u64)> {
    if !b.pool_given {
        return None;
    }
    let over = |g: usize| parts(p, b, g, 0).total_bytes().checked_sub(p.scenario.gpus[g].capacity_bytes);
    (0..b.gpus.len()).find_map(|g| over(g).filter(|&n| n > 0).map(|n| (g, n)))
}

/// The bytes `--cpu-offload-gb` moves from `stage`'s GPUs to host memory:
/// its decoder layers' parameters (from 0.34 with a vision tower's, built
/// first: `supports_tower_offload`; the layers' bytes bound it here), up to
/// `int(cpu_offload_gb × 1024³)` (0.24.0 `offloader/base.py`); none on
/// unified memory. vLLM moves whole parameters until it
/// reaches the limit, so it may go up to one parameter past it; that
/// parameter is not known here.
pub(crate) fn offloaded_bytes(p: &Plan, o: Options, stage: usize) -> u64 {
    if o.cpu_offload_gb.is_none_or(|g| g <= 0.0) {
        return 0;
    }
    // On one pool for the CPU and the GPU (DGX Spark, Strix Halo) host
    // memory is the GPU's: "pinned memory eats into GPU memory" (0.34.0
    // `offloader/base.py::should_pin_memory`), so nothing is saved.
    if p.scenario.gpus.iter().any(|g| g.unified_bytes.is_some()) {
        return 0;
    }
    offload_limit(o).min(p.weights.slice(p.stage_range(stage), false, false))
}

/// `int(cpu_offload_gb × 1024³)` (0.24.0 `offloader/base.py`).
fn offload_limit(o: Options) -> u64 {
    o.cpu_offload_gb.map_or(0, |gb| (gb * crate::units::GIB as f64) as u64)
}

/// `DoesNotFitAtLoad` when some GPU cannot hold its weights, less what
/// `--cpu-offload-gb` keeps on the host, and the context
/// ([`Plan::load_verdict`] with the offload).
fn load_verdict(p: &Plan, o: Options) -> Option<Verdict> {
    (0..p.scenario.gpus.len()).find_map(|g| {
        let stage = p.stage(g);
        let weights = p.stage_weights(stage).saturating_sub(offloaded_bytes(p, o, stage));
        let fixed = weights.saturating_add(p.base_overhead());
        let cap = p.scenario.gpus[g].capacity_bytes;
        (fixed > cap).then(|| Verdict::DoesNotFitAtLoad { gpu: g, shortfall_bytes: fixed - cap })
    })
}

/// Whether vLLM loads the plan: the weights, and a given pool.
fn loads(p: &Plan, b: &Budget) -> bool {
    b.load.is_none() && given_pool_overflow(p, b).is_none()
}

pub(crate) fn fits(p: &Plan, b: &Budget, seq: u64, batch: u64) -> bool {
    loads(p, b)
        && b.starts()
        && seq <= b.max_model_len
        && batch.div_ceil(p.replicas()) <= b.max_num_seqs
        && b.blocks_per_request(seq).saturating_mul(batch.div_ceil(p.replicas())) <= b.num_blocks
}

/// The most requests of `seq` tokens the KV cache holds at once (capped by
/// `max_num_seqs`), over every data-parallel replica: the same answer a
/// search over [`fits`] gives, directly.
pub(crate) fn max_concurrency(p: &Plan, b: &Budget, seq: u64) -> u64 {
    if !loads(p, b) || !b.starts() || seq > b.max_model_len {
        return 0;
    }
    let per_request = b.blocks_per_request(seq);
    let by_blocks = b.num_blocks.checked_div(per_request).unwrap_or(u64::MAX);
    by_blocks.min(b.max_num_seqs).saturating_mul(p.replicas()).min(MAX_CONCURRENCY)
}

pub(crate) fn verdict(p: &Plan, o: Options, b: &Budget, search: Search) -> Verdict {
    if let Some(v) = b.load {
        return v;
    }
    if let Some((gpu, shortfall_bytes)) = given_pool_overflow(p, b) {
        return Verdict::DoesNotFitAtLoad { gpu, shortfall_bytes };
    }
    let mml = default_max_model_len(p, o);
    if !b.starts() {
        let gpu = b.gpus.iter().position(|g| g.blocks == b.num_blocks).unwrap_or(0);
        return Verdict::EngineRefuses {
            gpu,
            largest_context: search.answer(0, || largest_max_model_len(p, o, b, mml)),
        };
    }
    let seq = p.scenario.sequence_tokens();
    if seq > mml {
        return Verdict::EngineRefuses { gpu: 0, largest_context: mml };
    }
    // Direct, so no search to skip either way.
    Verdict::Fits { max_concurrency: max_concurrency(p, b, seq) }
}

pub(crate) fn report(p: &Plan, o: Options, b: &Budget, verdict: Verdict) -> Report {
    let mml = default_max_model_len(p, o);
    let error = b.error(o.version);
    let concurrency = round2(b.concurrency(mml));
    let tokens = b.kv_cache_tokens(o.version);
    let mut log_lines = vec![
        format!("# GPU blocks: {}", b.num_blocks),
        format!("GPU KV cache size: {} tokens", thousands(tokens)),
        format!("Maximum concurrency for {} tokens per request: {}x", thousands(mml), decimal(concurrency, 2)),
    ];
    if o.extensible_kv_cache() {
        // 0.34 `extensible_kv_cache.py::extend_kv_cache`, of one rank.
        let bytes = b.gpus.first().map_or(0, |g| b.num_blocks.saturating_mul(g.block_bytes));
        log_lines.push(format!(
            "Extended KV cache to {} blocks ({} GiB).",
            b.num_blocks,
            decimal(bytes as f64 / GIB as f64, 2)
        ));
    }
    log_lines.extend(encoder::log_line(p, o, b.max_num_batched_tokens, b.max_num_seqs, mml));
    let seq = p.scenario.sequence_tokens();
    if seq > mml {
        log_lines.push(format!(
            "requests of {} tokens (prompt + max new tokens) exceed max_model_len {}: vLLM rejects them",
            thousands(seq),
            thousands(mml)
        ));
    }
    if let Some(e) = &error {
        log_lines.push(format!("ValueError: {e}"));
    }
    let pinned = o.version.kv_memory_tools().then(|| b.pinned_bytes()).filter(|&n| n > 0);
    if let Some(bytes) = o.kv_cache_memory_bytes {
        log_lines.push(format!(
            "reserved {} GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling",
            decimal(bytes as f64 / GIB as f64, 2)
        ));
    } else if let Some(bytes) = pinned {
        log_lines.push(format!(
            "pinned: --kv-cache-memory={bytes} (skips the memory profile, vllm#56698: re-derive it on any change){}",
            if o.extensible_kv_cache() { "; it turns 0.34's extensible KV cache off" } else { "" }
        ));
    }
    let auto = match o.version {
        // `--max-model-len auto` arrived in 0.14, within the 0.12 rules' range: not promised there.
        Version::V0
        | Version::V1
        | Version::V0_10
        | Version::V0_12
        | Version::V0_11Mm
        | Version::V0_11Sort
        | Version::V0_12Mm
        | Version::V0_12Sort
        | Version::V0_17Mm
        | Version::V0_16Sort
        | Version::V0_17Triton => None,
        Version::V0_18
        | Version::V0_19
        | Version::V0_19Rope
        | Version::V0_19Mm
        | Version::V0_19Alloc
        | Version::V0_21
        | Version::V0_33
        | Version::V0_24
        | Version::V0_24Rope
        | Version::V0_24Mm
        | Version::V0_33Graphs
        | Version::V0_34 => {
            let model_len = p.model.arch.text.max_position_embeddings.unwrap_or(mml);
            Some(b.longest_request(model_len)).filter(|&n| n > 0)
        }
    };
    if let Some(n) = auto {
        log_lines.push(format!("--max-model-len auto would choose {}", thousands(n)));
    }
    Report {
        version: o.version,
        gpu_memory_utilization: b.utilization,
        max_model_len: mml,
        max_model_len_set: o.max_model_len.is_some(),
        max_num_batched_tokens: b.max_num_batched_tokens,
        max_num_seqs: b.max_num_seqs,
        block_size: b.block,
        max_loras: o.max_loras,
        max_lora_rank: o.max_lora_rank,
        enforce_eager: o.enforce_eager,
        num_gpu_blocks: b.num_blocks,
        blocks_per_request: b.blocks_per_request(mml),
        kv_cache_tokens: tokens,
        max_concurrency: concurrency,
        largest_max_model_len: error.as_ref().map(|_| match verdict {
            Verdict::EngineRefuses { largest_context, .. } => largest_context,
            _ => largest_max_model_len(p, o, b, mml),
        }),
        startup_error: error,
        per_gpu: b.gpus.clone(),
        pinned_kv_cache_memory_bytes: pinned,
        auto_max_model_len: auto,
        log_lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_partitions_like_get_pp_indices() {
        // get_pp_indices(32, r, 40): ranks 0-6 and 39 get nothing.
        let parts: Vec<u64> = (0..40).map(|r| pp_layers(32, r, 40)).collect();
        assert_eq!(parts.iter().sum::<u64>(), 32);
        assert!(parts[..7].iter().all(|&p| p == 0) && parts[39] == 0);
        assert!(parts[7..39].iter().all(|&p| p == 1));
        // 30 layers over 4: [7, 8, 8, 7] (the remainder skips the last).
        let parts: Vec<u64> = (0..4).map(|r| pp_layers(30, r, 4)).collect();
        assert_eq!(parts, [7, 8, 8, 7]);
    }
}
