//! SGLang (`model_runner.py::profile_max_num_token`): a static share of the
//! GPU, `mem_fraction_static` × total, holds the weights and the KV pool;
//! the rest is left for activations and CUDA graphs.
//!
//! ```text
//! rest                 = free memory after weights − total × (1 − mem_fraction_static)
//! max_total_num_tokens = rest / cell_size   (cell: KV bytes of one token, all layers, one rank)
//! ```
//!
//! Hybrid models (Mamba-2, gated DeltaNet): the mamba pool takes
//! `ratio / (1 + ratio)` of `rest` (`mamba_full_memory_ratio`, fallback 0.9),
//! holding `budget // per_req − 1` request slots plus one padding slot; the KV
//! pool gets what remains (SGLang 0.5.23 `kv_cache_configurator.py`,
//! `arg_groups/fields/schedule.py`). DeepSeek-V4's pools are sized as its
//! own configurator sizes them (`dsv4.rs`).

mod dsv4;
mod knobs;

pub use knobs::KNOBS;

use serde::{Deserialize, Serialize};

use super::commands::{Commands, Shorten, no_settings};
use super::parallel::{self, HeadCheck, SplitError};
use super::{Engine, EngineKind, EngineTerms, EngineWarnings, Plan, Scenario, vllm};
use crate::arch::TextModel;
use crate::explain::{Basis, Term, thousands};
use crate::kv::{self, KvDtype};
use crate::model::Model;
use crate::plan::{GpuBudget, MAX_CONCURRENCY, Verdict, activations, terms::demand};
use crate::units::{GIB, MIB, UnitSystem, decimal_short, format_bytes};

/// The SGLang rules Headroom models, each frozen once released (share links
/// pin one, `sglang=`); a new rule set is a new variant, never an edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub enum Version {
    /// `mem_fraction_static` from the TP degree (0.88 … 0.79), chunked
    /// prefill 2,048, or 8,192 on ≥ 70 GiB GPUs: Headroom's first SGLang rules.
    #[serde(rename = "tp")]
    TpTable,
    /// SGLang 0.5.23 (`arg_groups/memory_hook.py::_handle_gpu_memory_settings`):
    /// chunked prefill and the decode CUDA-graph batch by GPU memory, and
    /// `mem_fraction_static` = (GPU memory − the reserve for activations,
    /// CUDA graphs and parallel slack) / GPU memory.
    #[serde(rename = "0.5.23")]
    V0_5_23,
    /// SGLang 0.5.23 read again with 0.4.9's source and real start-up logs:
    /// as [`Version::V0_5_23`], but the memory its distributed init takes
    /// at TP ≥ 2 ([`dist_init_bytes`]) comes before the weights, and the
    /// reserve outside `mem_fraction_static` is a share of the memory free
    /// before the weights (`pre_model_load_memory`, 0.5.23
    /// `mem_cache/kv_cache_configurator.py::_profile_available_bytes`;
    /// `total_gpu_memory`, the distributed init's `min_per_gpu_memory`, in
    /// 0.4.9 `model_runner.py::profile_max_num_token`), not of CUDA's total.
    #[serde(rename = "0.5.23-init")]
    V0_5_23Init,
    /// SGLang 0.4.3 – 0.5.23 read a third time, from the 0.4.3 source and a
    /// 0.4.3 start-up log: as [`Version::V0_5_23Init`], with each weight
    /// tensor of 10 MiB or more counted as the segment PyTorch's caching
    /// allocator reserves for it ([`vllm::segment_slack_bytes`]): SGLang
    /// measures its weights, and sizes its pool, by the free memory CUDA
    /// reports after `torch.cuda.empty_cache` (0.4.3
    /// `model_runner.py::load_model`, `profile_max_num_token`;
    /// `utils.py::get_available_gpu_memory`), which a segment's unused rest
    /// is not.
    #[default]
    #[serde(rename = "0.5.23-alloc", alias = "latest")]
    V0_5_23Alloc,
}

impl Version {
    /// Every known version, oldest first.
    pub const ALL: &[Version] = &[Self::TpTable, Self::V0_5_23, Self::V0_5_23Init, Self::V0_5_23Alloc];
    /// The newest rules this build knows: what a new plan gets.
    pub const LATEST: Version = Self::V0_5_23Alloc;
    /// Their ids, newest first (the page's choices).
    pub const IDS_NEWEST_FIRST: &[&str] = &["0.5.23-alloc", "0.5.23-init", "0.5.23", "tp"];

    pub fn id(self) -> &'static str {
        match self {
            Self::TpTable => "tp",
            Self::V0_5_23 => "0.5.23",
            Self::V0_5_23Init => "0.5.23-init",
            Self::V0_5_23Alloc => "0.5.23-alloc",
        }
    }

    /// An id naming one version (`tp`, `0.5.23`, `0.5.23-init`, `0.5.23-alloc`), or `latest`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().trim_start_matches('v') {
            "latest" | "new" => Some(Self::LATEST),
            other => Self::parse_pinned(other),
        }
    }

    /// An id naming one version (not the moving `latest`).
    pub fn parse_pinned(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().trim_start_matches('v') {
            "tp" => Some(Self::TpTable),
            "0.5.23" => Some(Self::V0_5_23),
            "0.5.23-init" => Some(Self::V0_5_23Init),
            "0.5.23-alloc" => Some(Self::V0_5_23Alloc),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Which SGLang's defaults (links pin it: `sglang=`).
    #[serde(default)]
    pub version: Version,
    /// Default: SGLang's table by tensor-parallel degree.
    pub mem_fraction_static: Option<f64>,
    /// `--context-length`; default: the model's `max_position_embeddings`.
    pub context_length: Option<u64>,
    /// `--chunked-prefill-size`; default 2,048, or 8,192 on ≥ 70 GiB GPUs.
    pub chunked_prefill_size: Option<u64>,
    /// `--dp-size`: without `--enable-dp-attention`, replicas of the TP × PP
    /// group, each a scheduler and pool of its own
    /// (`managers/data_parallel_controller.py::launch_dp_schedulers`); with
    /// it, the attention groups within the TP group.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub dp_size: u64,
    /// `--enable-dp-attention`: attention (its projections and KV heads)
    /// split over `tp / dp` ranks, `dp` groups each with its own requests;
    /// the MLP and experts over the whole TP group, the embedding replicated
    /// (SGLang 0.5.4 `layers/dp_attention.py::compute_dp_attention_world_info`,
    /// `VocabParallelEmbedding(enable_tp=not is_dp_attention_enabled())`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_dp_attention: bool,
    /// `--ep-size`: the experts split into `ep` sets, each expert sharded
    /// over `tp / ep` ranks (0.5.4 `parallel_state.py::initialize_model_parallel`,
    /// `fused_moe_triton/layer.py::FusedMoE.__init__`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ep_size: u64,
    /// `--ep-num-redundant-experts`: copies of experts beside the model's,
    /// `E + redundant` split into the `ep` sets (0.5.4 models pass
    /// `num_experts + ep_num_redundant_experts` to `FusedMoE`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ep_num_redundant_experts: u64,
    /// `--moe-a2a-backend deepep`: DeepEP's all-to-all moves the tokens to
    /// their experts, which then span every TP rank (`ep_size` becomes
    /// `tp_size`: 0.5.23 `arg_groups/overrides.py::_a2a_ep_size`), and the
    /// automatic `mem_fraction_static` keeps room for its buffers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub moe_a2a_deepep: bool,
    /// `--deepep-mode` (with DeepEP).
    #[serde(default, skip_serializing_if = "DeepepMode::is_auto")]
    pub deepep_mode: DeepepMode,
}

/// The lowest compute capability (`major × 10 + minor`) on which SGLang
/// loads fp8 weights: its own `Fp8Config.get_min_capability()`
/// (srt/layers/quantization/fp8.py) returns 80 on CUDA in every release
/// read, 0.4.3 – 0.4.9 and 0.5.23 (100 only for MXFP8); 0.4.0 took vLLM's
/// `Fp8Config`, 80 in the vLLM it ran with. Below it the loader refuses
/// ("The quantization method fp8 is not supported for the current GPU",
/// `_get_quantization_config` in model_loader/loader.py), so a T4 or a V100
/// gets no fp8 weights from SGLang, where today's vLLM loads them on a T4.
pub const FP8_MIN_CAPABILITY: u32 = 80;

/// `--moe-a2a-backend`'s values Headroom models, the default first.
pub const MOE_A2A_IDS: &[&str] = &["none", "deepep"];

/// `--moe-a2a-backend value`: `Some(true)` for DeepEP, `Some(false)` for
/// none, `None` for a backend Headroom does not model.
pub fn moe_a2a_deepep(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "deepep" => Some(true),
        "none" => Some(false),
        _ => None,
    }
}

/// `--deepep-mode`: which of DeepEP's kernels SGLang runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeepepMode {
    /// Normal kernels for prefill, low-latency ones for decode (the default).
    #[default]
    Auto,
    /// Normal kernels only: SGLang turns its CUDA graphs off
    /// (0.5.23 `arg_groups/moe_hook.py::handle_a2a_moe`).
    Normal,
    LowLatency,
}

impl DeepepMode {
    /// The page's choices, the default first.
    pub const IDS: &[&str] = &["auto", "normal", "low_latency"];

    pub fn id(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Normal => "normal",
            Self::LowLatency => "low_latency",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Self::Auto),
            "normal" => Some(Self::Normal),
            "low_latency" => Some(Self::LowLatency),
            _ => None,
        }
    }

    fn is_auto(&self) -> bool {
        *self == Self::Auto
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

impl Default for Options {
    fn default() -> Self {
        Self {
            version: Version::default(),
            mem_fraction_static: None,
            context_length: None,
            chunked_prefill_size: None,
            dp_size: 1,
            enable_dp_attention: false,
            ep_size: 1,
            ep_num_redundant_experts: 0,
            moe_a2a_deepep: false,
            deepep_mode: DeepepMode::Auto,
        }
    }
}

impl Options {
    /// Data-parallel replicas: `--dp-size` without data-parallel attention.
    pub fn replicas(self) -> u64 {
        if self.enable_dp_attention { 1 } else { self.dp_size.max(1) }
    }

    /// The expert-parallel size SGLang runs with: `--ep-size`, or `tp_size`
    /// under DeepEP (0.5.23 `arg_groups/overrides.py::_a2a_ep_size`).
    pub fn effective_ep(self, tp: u64) -> u64 {
        if self.moe_a2a_deepep { tp.max(1) } else { self.ep_size.max(1) }
    }

    /// Whether SGLang captures CUDA graphs: not with DeepEP's normal mode
    /// (0.5.23 `arg_groups/moe_hook.py::handle_a2a_moe`, both phases).
    pub fn cuda_graphs(self) -> bool {
        !(self.moe_a2a_deepep && self.deepep_mode == DeepepMode::Normal)
    }

    /// How `tp`-way groups split the model: attention over `tp / dp` ranks
    /// and the embedding replicated with data-parallel attention; the
    /// experts in `ep` sets, each sharded over `tp / ep`.
    pub fn sharding(self, tp: u64) -> crate::plan::Sharding {
        let tp = tp.max(1);
        let (attention, embedding) =
            if self.enable_dp_attention { ((tp / self.dp_size.max(1)).max(1), 1) } else { (tp, tp) };
        let ep = self.effective_ep(tp);
        crate::plan::Sharding {
            tp,
            attention,
            embedding,
            experts: crate::plan::ExpertSplit {
                ranks: ep,
                shards: (tp / ep).max(1),
                redundant: self.ep_num_redundant_experts,
            },
        }
    }

    /// The groups of requests with pools of their own: replicas, or
    /// data-parallel attention groups.
    pub fn request_groups(self) -> u64 {
        self.dp_size.max(1)
    }
}

/// The splits SGLang refuses: heads that do not divide over the ranks (in
/// `divide`, at load) and more stages than layers (`assert
/// num_hidden_layers >= pp_size` in make_layers).
pub(crate) fn check_split(s: &Scenario, text: &TextModel) -> Result<(), SplitError> {
    // Data-parallel attention splits the heads over its own ranks.
    let o = match s.engine {
        Engine::Sglang(o) => o,
        Engine::Transformers(_) | Engine::Vllm(_) | Engine::LlamaCpp(_) | Engine::Ollama(_) => Options::default(),
    };
    parallel::check_heads(EngineKind::Sglang, HeadCheck::AtLoad, o.sharding(s.tp).attention, text)?;
    // `FusedMoE.__init__`: `assert num_experts % moe_ep_size == 0`, the
    // redundant copies counted.
    let placed = |m: &crate::arch::Moe| m.num_experts.saturating_add(o.ep_num_redundant_experts);
    let ep = o.effective_ep(s.tp);
    if let Some(m) = text.moe.filter(|m| !placed(m).is_multiple_of(ep)) {
        let why = if o.moe_a2a_deepep { "DeepEP sets it to --tp-size" } else { "--ep-size" };
        return Err(SplitError::SglangExperts { experts: placed(&m), ep, why });
    }
    parallel::check_stages(s, text)
}

pub(crate) fn too_many_stages(_: u64, _: u64) -> String {
    "SGLang refuses it (`assert num_hidden_layers >= pp_size` in make_layers)".to_owned()
}

/// SGLang's checks of its knobs (0.5.4 `server_args.py`:
/// `_handle_data_parallelism`, `initialize_model_parallel`).
pub(crate) fn check_knobs(o: Options, tp: u64) -> Result<(), String> {
    super::fraction("mem_fraction_static", o.mem_fraction_static)?;
    if o.enable_dp_attention && !tp.is_multiple_of(o.dp_size.max(1)) {
        return Err(format!(
            "SGLang's --enable-dp-attention needs --tp-size ({tp}) divisible by --dp-size ({})",
            o.dp_size
        ));
    }
    // Under DeepEP the expert-parallel size is the TP size, whatever was given.
    if !tp.is_multiple_of(o.effective_ep(tp)) {
        return Err(format!("SGLang needs --tp-size ({tp}) divisible by --ep-size ({})", o.ep_size));
    }
    Ok(())
}

/// `mem_fraction_static` when none is given, by `o.version`'s rules.
pub fn default_mem_fraction_for(p: &Plan, o: Options) -> f64 {
    match o.version {
        Version::TpTable => default_mem_fraction(p.tp()),
        Version::V0_5_23 | Version::V0_5_23Init | Version::V0_5_23Alloc => {
            gpu_memory_settings(p, o).mem_fraction_static
        }
    }
}

/// What SGLang 0.5.23 sets from the GPU's memory when it is not given
/// (`arg_groups/memory_hook.py::_handle_gpu_memory_settings`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuMemorySettings {
    pub chunked_prefill_size: u64,
    /// `cuda_graph_config.decode.max_bs`.
    pub decode_graph_max_bs: u64,
    /// The MiB SGLang keeps outside `mem_fraction_static`.
    pub reserved_mib: f64,
    /// Of those, what DeepEP adds (its buffers, the prefill graphs' bridge
    /// pool where it clears the 10 GiB floor); 0 without it.
    pub deepep_mib: f64,
    pub mem_fraction_static: f64,
}

/// SGLang 0.5.23's choices for the plan's GPUs under its settings `o`:
/// `gpu_mem` is the smallest GPU's memory in MiB as nvidia-smi reports it
/// (`get_nvgpu_memory_capacity`), which is what the GPU catalog holds.
pub fn gpu_memory_settings(p: &Plan, o: Options) -> GpuMemorySettings {
    let gpu_mem = p.scenario.gpus.iter().map(|g| g.capacity_bytes).min().unwrap_or(0) as f64 / (1u64 << 20) as f64;
    let tp = p.tp();
    let gib = |n: f64| n * 1024.0;
    // (chunked_prefill_size, decode max_bs) by GPU memory: T4/4080; A10/4090/5090;
    // A100 40GB/L40; H100/A100 80GB; H20/H200; B200/MI300.
    let (table_chunk, max_bs) = if gpu_mem < gib(20.0) {
        (2048, 8)
    } else if gpu_mem < gib(35.0) {
        (4096, if tp < 4 { 48 } else { 160 })
    } else if gpu_mem < gib(60.0) {
        (4096, if tp < 4 { 32 } else { 160 })
    } else if gpu_mem < gib(160.0) {
        (8192, if tp < 4 { 256 } else { 512 })
    } else {
        (16384, 512)
    };
    let rocm = vllm::plan_on_rocm(p);
    let mla = matches!(p.model.arch.text.attention, crate::arch::AttentionKind::Mla(_));
    // The table's only when none is given: the reserve's activation tokens
    // and the prefill graphs' sizes follow `--chunked-prefill-size`.
    let chunk = o.chunked_prefill_size.unwrap_or(table_chunk);
    // DeepEP's normal mode turns both phases' graphs off.
    let (decode_graphs, prefill_graphs_on) = (o.cuda_graphs(), o.cuda_graphs() && !rocm);
    // `reserve_for_graph_mb`: 2 MiB per decode batch; the prefill graphs
    // (breakable by default on CUDA, off on ROCm: `default_prefill_backend`)
    // 8 MiB per captured size, 1.5 GiB under MLA, and 1 GiB more for
    // DeepEP's bridge pool in breakable prefill graphs.
    let prefill_graphs = if !prefill_graphs_on {
        0.0
    } else if mla {
        1536.0
    } else {
        prefill_graph_sizes(chunk) as f64 * 8.0
    };
    let bridge = if prefill_graphs_on && o.moe_a2a_deepep { 1024.0 } else { 0.0 };
    // Data-parallel attention pads its decode batches: 3 MiB per batch
    // entry per attention group, 4.5 above 300 entries (`reserve_for_graph_mb`).
    let attn_dp = if o.enable_dp_attention && o.dp_size > 1 { o.dp_size as f64 } else { 0.0 };
    let dp_padding = max_bs as f64 * attn_dp * if max_bs > 300 { 4.5 } else { 3.0 };
    let decode = if decode_graphs { max_bs as f64 * 2.0 } else { 0.0 };
    let graphs = decode + dp_padding + prefill_graphs;
    // 512 MiB of metadata, 1.5 MiB per activation token, 1 GiB per 8 ranks.
    let stages = p.scenario.stages() as f64;
    let base = 512.0 + (chunk.max(2048) as f64) * 1.5 + (tp as f64 * stages) / 8.0 * 1024.0 + graphs;
    let floor = if gpu_mem > gib(60.0) { gib(10.0) } else { 0.0 };
    // DeepEP's all-to-all buffers captured in the decode graphs, on top of
    // the floor (`reserve_for_deepep_a2a_mb`).
    let buffers = if o.moe_a2a_deepep && decode_graphs { gib(2.0) } else { 0.0 };
    let reserved = (base + bridge).max(floor) + buffers;
    let fraction = if gpu_mem > 0.0 { ((gpu_mem - reserved) / gpu_mem * 1000.0).round() / 1000.0 } else { 0.95 };
    GpuMemorySettings {
        chunked_prefill_size: chunk,
        decode_graph_max_bs: max_bs,
        reserved_mib: reserved,
        deepep_mib: reserved - base.max(floor),
        mem_fraction_static: fraction.clamp(0.0, 1.0),
    }
}

/// How many prefill CUDA graphs SGLang captures up to `max_bs` tokens
/// (0.5.23 `arg_groups/cuda_graph_hook.py::generate_prefill_cuda_graph_batch_sizes`:
/// 4 … 32 by 4, 48 … 256 by 16, 288 … 512 by 32, 576 … 1024 by 64,
/// 1280 … 4096 by 256, then by 512).
fn prefill_graph_sizes(max_bs: u64) -> usize {
    let ranges: [(u64, u64, u64); 6] =
        [(4, 32, 4), (48, 256, 16), (288, 512, 32), (576, 1024, 64), (1280, 4096, 256), (4608, u64::MAX, 512)];
    ranges
        .iter()
        .map(|&(from, to, step)| {
            let to = to.min(max_bs);
            if to < from { 0 } else { ((to - from) / step + 1) as usize }
        })
        .sum()
}

/// `mem_fraction_static` by TP degree in SGLang 0.4.0 – 0.4.7
/// (`server_args.py::__post_init__`, read in 0.4.0, 0.4.3, 0.4.4, 0.4.5,
/// 0.4.6 and 0.4.7): 0.88, 0.87 from TP 2, 0.85 from 4, 0.81 from 8, 0.79
/// from 16. 0.4.6 and 0.4.7 take it only on GPUs of at most
/// [`TP_TABLE_MAX_GPU_MIB`]; 0.4.7.post1 sizes it from GPU memory.
pub fn default_mem_fraction_0_4(tp: u64) -> f64 {
    match tp {
        0 | 1 => 0.88,
        2 | 3 => 0.87,
        4..=7 => 0.85,
        8..=15 => 0.81,
        _ => 0.79,
    }
}

/// The GPU memory (nvidia-smi's MiB, `get_nvgpu_memory_capacity`) up to
/// which SGLang 0.4.6 – 0.4.7 keep [`default_mem_fraction_0_4`]'s table
/// (`if gpu_mem <= 81920`).
pub const TP_TABLE_MAX_GPU_MIB: u64 = 81_920;

/// The dates (year, month, day) between which a start-up log ran a release with
/// [`default_mem_fraction_0_4`]'s table: from 0.4.0's wheel (its
/// `server_args.py` built 2024-12-03) to before 0.4.7.post1's (built
/// 2025-06-16), the first release that sizes it from GPU memory; 0.4.7
/// (built 2025-06-10) still keeps the table. A log dated in this span
/// could not have run the later code. (Its GPU-memory guard,
/// [`TP_TABLE_MAX_GPU_MIB`], is 0.4.6 – 0.4.7's and is applied to the whole
/// span: 0.4.0 – 0.4.5 on a GPU above it are left to the newest rules.)
pub const TP_TABLE_DATES: (Date, Date) = ((2024, 12, 3), (2025, 6, 16));

/// A day: year, month, day (ordered as the calendar).
pub type Date = (u16, u8, u8);

/// `mem_fraction_static` by GPU memory in SGLang 0.4.7.post1 – 0.5.2
/// (`server_args.py::ServerArgs.__post_init__`, read in 0.4.7.post1,
/// 0.4.10.post2 and 0.5.2, the same table in each): `(gpu_mem − reserved) /
/// gpu_mem` rounded to 0.001, `gpu_mem` the smallest GPU's MiB as nvidia-smi
/// reports it (`get_nvgpu_memory_capacity`, what the catalog holds), and
/// `reserved` (2.8 + TP × PP / 10) GiB below 35 GiB, (9.5 + TP × PP / 2) GiB
/// below 90, (12 + TP × PP / 2) GiB below 160, else 32 GiB, with 4 GiB more
/// for data-parallel attention (and 2 for speculative decoding, which no plan
/// runs). 0.5.3 sizes the reserve from the chunk and the CUDA-graph batch
/// instead, as [`gpu_memory_settings`] does.
pub fn default_mem_fraction_0_4_7_post1(gpu_mib: u64, parallel: u64, dp_attention: bool) -> f64 {
    let (gpu, n) = (gpu_mib as f64, parallel.max(1) as f64);
    let gib = 1024.0;
    let reserved = if gpu < 35.0 * gib {
        (2.8 + n / 10.0) * gib
    } else if gpu < 90.0 * gib {
        (9.5 + n / 2.0) * gib
    } else if gpu < 160.0 * gib {
        (12.0 + n / 2.0) * gib
    } else {
        32.0 * gib
    } + if dp_attention { 4.0 * gib } else { 0.0 };
    if gpu <= 0.0 { 0.88 } else { ((gpu - reserved) / gpu * 1000.0).round() / 1000.0 }
}

/// The dates between which a start-up log ran a release with
/// [`default_mem_fraction_0_4_7_post1`]'s table: from 0.4.7.post1's wheel
/// (its `server_args.py` built 2025-06-16) to before 0.5.3's (built
/// 2025-10-06), the first that sizes the reserve from the chunk.
pub const GPU_RESERVE_DATES: (Date, Date) = ((2025, 6, 16), (2025, 10, 6));

/// The default `mem_fraction_static` of the release a log dated `date` ran,
/// where the date pins a rule older than the newest: 0.4.0 – 0.4.7's table
/// by TP ([`TP_TABLE_DATES`], on GPUs of at most [`TP_TABLE_MAX_GPU_MIB`]),
/// or 0.4.7.post1 – 0.5.2's reserve by GPU memory ([`GPU_RESERVE_DATES`]).
/// `None` for a later date, whose release sizes it as the newest rules do.
pub fn dated_default_mem_fraction(date: Date, gpu_mib: u64, tp: u64, pp: u64, dp_attention: bool) -> Option<f64> {
    let within = |(from, before): (Date, Date)| (from..before).contains(&date);
    if within(TP_TABLE_DATES) {
        return (gpu_mib <= TP_TABLE_MAX_GPU_MIB).then(|| default_mem_fraction_0_4(tp));
    }
    within(GPU_RESERVE_DATES).then(|| default_mem_fraction_0_4_7_post1(gpu_mib, tp.saturating_mul(pp), dp_attention))
}

/// `mem_fraction_static` default by TP degree (`server_args.py`, the table
/// used before the GPU-size-based rule: 0.88 / 0.87 / 0.85 / 0.83 / 0.79),
/// frozen with the `tp` rule set and the links that name it. The 0.4.0 –
/// 0.4.7 sources read since give 0.87 at TP 3 (here 0.85) and 0.81 at TP
/// 5 – 8 (here 0.83): [`default_mem_fraction_0_4`], which a dated log uses.
pub fn default_mem_fraction(tp: u64) -> f64 {
    match tp {
        0 | 1 => 0.88,
        2 => 0.87,
        3 | 4 => 0.85,
        5..=8 => 0.83,
        _ => 0.79,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub version: Version,
    pub mem_fraction_static: f64,
    pub max_total_num_tokens: u64,
    /// KV bytes of one token on one rank (all layers).
    pub cell_size_bytes: u64,
    pub context_length: u64,
    pub chunked_prefill_size: u64,
    /// The expert-parallel size it runs with (`--ep-size`, or DeepEP's TP).
    pub ep_size: u64,
    /// On the GPU that sets the pool: the memory free before the weights load
    /// (what `torch.cuda.mem_get_info` reports after the CUDA context and the
    /// distributed init), and what the rules keep back of it or of CUDA's
    /// total (`total × (1 − mem_fraction_static)`).
    pub free_before_weights_bytes: u64,
    pub reserved_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_error: Option<String>,
    pub log_lines: Vec<String>,
}

/// SGLang 0.5.23 `mamba_full_memory_ratio` fallback.
pub const MAMBA_FULL_MEMORY_RATIO: f64 = 0.9;

struct Pool {
    fraction: f64,
    tokens: u64,
    cell: u64,
    /// Hybrid models: request slots of the mamba pool (`max_mamba_cache_size`).
    state_slots: Option<u64>,
    chunk: u64,
    /// The GPU that sets the pool: its free memory before the weights and
    /// the share of memory the rules keep back.
    free_before_weights: u64,
    reserved: u64,
}

fn pool(p: &Plan, o: Options) -> Pool {
    let fraction = o.mem_fraction_static.unwrap_or_else(|| default_mem_fraction_for(p, o));
    // Data-parallel attention divides the chunk among its groups
    // (0.5.4 `server_args.py::_handle_data_parallelism`).
    let chunk = o.chunked_prefill_size.unwrap_or_else(|| default_chunk(p, o));
    let chunk = if o.enable_dp_attention { (chunk / o.dp_size.max(1)).max(1) } else { chunk };
    let mut tokens = u64::MAX;
    let mut cell_max = 0;
    let mut state_slots: Option<u64> = None;
    let (mut free_before_weights, mut reserved_of_smallest) = (0, 0);
    for (g, slot) in p.scenario.gpus.iter().enumerate() {
        let stage = p.stage(g);
        let cell = kv::bytes_per_token(p.stage_kv(stage));
        // DeepSeek-V4: its own pools' sizing (`dsv4.rs`).
        let sizing = dsv4::sizing(p, o, g, stage);
        cell_max = cell_max.max(sizing.map_or(cell, |s| s.bytes_per_full_token.ceil() as u64));
        // Free after loading weights (the context already resident), minus the
        // reserved share; both as `torch.cuda.mem_get_info` sees them.
        let (before, free_after_weights, reserved) = match o.version {
            // A share of CUDA's total.
            Version::TpTable | Version::V0_5_23 => {
                let before = slot.cuda_total_bytes.saturating_sub(p.base_overhead());
                (
                    before,
                    before.saturating_sub(p.stage_weights(stage)),
                    (slot.cuda_total_bytes as f64 * (1.0 - fraction)).ceil() as u64,
                )
            }
            // A share of what was free before the weights.
            Version::V0_5_23Init | Version::V0_5_23Alloc => {
                let before = slot.cuda_total_bytes.saturating_sub(overhead(p, o));
                (before, before.saturating_sub(weights(p, o, stage)), (before as f64 * (1.0 - fraction)).ceil() as u64)
            }
        };
        let mut rest = free_after_weights.saturating_sub(reserved);
        let per_req = p.stage_state(stage);
        let ratio = MAMBA_FULL_MEMORY_RATIO;
        let budget = (rest as f64 * ratio / (1.0 + ratio)) as u64;
        if let Some(slots) = budget.saturating_sub(per_req).checked_div(per_req) {
            state_slots = Some(state_slots.map_or(slots, |s| s.min(slots)));
            // The pool's slots plus its padding slot leave the KV budget.
            rest = rest.saturating_sub(slots.saturating_add(1).saturating_mul(per_req));
        }
        let here = match sizing {
            Some(s) => s.tokens(rest),
            None => rest.checked_div(cell).unwrap_or(0),
        };
        if here < tokens {
            (free_before_weights, reserved_of_smallest) = (before, reserved);
        }
        tokens = tokens.min(here);
    }
    Pool {
        fraction,
        tokens: if tokens == u64::MAX { 0 } else { tokens },
        cell: cell_max,
        chunk,
        state_slots,
        free_before_weights,
        reserved: reserved_of_smallest,
    }
}

/// `--chunked-prefill-size` when none is given, by `o.version`'s rules.
fn default_chunk(p: &Plan, o: Options) -> u64 {
    match o.version {
        Version::TpTable => {
            let large = p.scenario.gpus.first().is_some_and(|g| g.capacity_bytes >= 70 * GIB);
            if large { 8192 } else { 2048 }
        }
        Version::V0_5_23 | Version::V0_5_23Init | Version::V0_5_23Alloc => {
            gpu_memory_settings(p, o).chunked_prefill_size
        }
    }
}

pub(crate) fn context_length(p: &Plan, o: Options) -> u64 {
    o.context_length.or(p.model.arch.text.max_position_embeddings).unwrap_or_else(|| p.scenario.sequence_tokens())
}

/// Memory SGLang's distributed init takes on each GPU before the weights
/// (`Init torch distributed ends. mem usage=`, 0.4.9
/// `model_runner.py::init_torch_distributed`): at TP ≥ 2 the TP group's
/// pynccl communicator and its one-element warm-up all-reduce, which, with
/// the `NCCL_CUMEM_ENABLE=0` SGLang sets (0.4.9 `entrypoints/engine.py`
/// `_set_envs_and_config`, 0.5.23 likewise), makes NCCL allocate its
/// channel buffers at once; the custom all-reduce's IPC buffers are ~24 MiB
/// of it (0.4.9 `custom_all_reduce.py`). NVLS stays off by default
/// (`NCCL_NVLS_ENABLE=0`).
pub fn dist_init_bytes(p: &Plan) -> u64 {
    if p.tp() < 2 {
        return 0;
    }
    match parallel::Board::of(&p.scenario.gpus) {
        parallel::Board::NvSwitchHopper => DIST_INIT_NVSWITCH,
        parallel::Board::NvLink => crate::plan::TP_COMM_BYTES,
        parallel::Board::Pcie => DIST_INIT_PCIE,
    }
}

/// [`dist_init_bytes`] over PCIe (or across nodes). Measured: the `mem
/// usage` of real start-up logs, 0.13 GiB (4 × L4, custom all-reduce off,
/// `sglang-0.4.3-qwq-32b-l4-tp4`), 0.23 (2 × 24 GB), 0.26 (2 × RTX 4090),
/// 0.39 (4 × RTX PRO 6000), 0.22 and 0.27 (TP 16 over two nodes): median
/// 0.25 GiB.
pub const DIST_INIT_PCIE: u64 = 256 * MIB;

/// [`dist_init_bytes`] on an NVSwitch board (HGX Hopper). Measured on the
/// rank that takes most (the pool is sized by the smallest free memory over
/// the ranks): 1.13 GiB (TP 4, 96 GB Hopper, sglang#10407), 1.25 (TP 8,
/// 80 GB H100, `sglang-0.5.2-grok2-fp8-h100-tp8`), 1.90 (TP 8 H200 with DP
/// attention, sglang#6017), 2.01 (TP 8 H200, sglang#11716): median 1.58 GiB.
pub const DIST_INIT_NVSWITCH: u64 = 1618 * MIB;

/// What SGLang holds on each GPU besides weights, KV and activations: the
/// CUDA context and, by `o.version`'s rules, the TP buffers.
fn overhead(p: &Plan, o: Options) -> u64 {
    match o.version {
        Version::TpTable | Version::V0_5_23 => p.base_overhead(),
        Version::V0_5_23Init | Version::V0_5_23Alloc => {
            crate::plan::CUDA_CONTEXT_BYTES.saturating_add(dist_init_bytes(p))
        }
    }
}

/// The weights on one GPU of `stage` as SGLang measures them (`Load weight
/// end. … mem usage`): by the `0.5.23-alloc` rules, with the segments'
/// slack ([`vllm::segment_slack_bytes`]).
fn weights(p: &Plan, o: Options, stage: usize) -> u64 {
    let slack = match o.version {
        Version::TpTable | Version::V0_5_23 | Version::V0_5_23Init => 0,
        Version::V0_5_23Alloc => vllm::segment_slack_bytes(p, stage),
    };
    p.stage_weights(stage).saturating_add(slack)
}

pub(crate) fn parts(p: &Plan, o: Options, g: usize) -> GpuBudget {
    let pool = pool(p, o);
    let stage = p.stage(g);
    let text = &p.model.arch.text;
    let mut act = activations::layer_peak(text, pool.chunk, p.bytes_per_element(), p.tp());
    if p.is_last_stage(stage) {
        act = act.saturating_add(activations::logits(text.vocab_size, p.scenario.concurrency, 1, p.tp()));
    }
    GpuBudget {
        weight_bytes: weights(p, o, stage),
        kv_cache_bytes: match dsv4::sizing(p, o, g, stage) {
            Some(s) => s.bytes(pool.tokens),
            None => pool.tokens.saturating_mul(kv::bytes_per_token(p.stage_kv(stage))),
        },
        state_bytes: pool.state_slots.map_or(0, |s| s.saturating_add(1).saturating_mul(p.stage_state(stage))),
        activation_bytes: act,
        overhead_bytes: overhead(p, o),
    }
}

pub(crate) fn fits(p: &Plan, o: Options, seq: u64, batch: u64) -> bool {
    let pool = pool(p, o);
    // Each data-parallel group (replica or attention group) holds its share.
    let batch = batch.div_ceil(o.request_groups());
    p.load_verdict().is_none()
        && pool.tokens > 0
        && seq.saturating_mul(batch) <= pool.tokens
        && pool.state_slots.is_none_or(|s| batch <= s)
        && max_running_requests(p, o).is_none_or(|r| batch <= r)
}

/// The requests one data-parallel worker runs at once where SGLang sets it
/// for the model: DeepSeek-V4's 256 ([`dsv4::MAX_RUNNING_REQUESTS`]).
fn max_running_requests(p: &Plan, o: Options) -> Option<u64> {
    dsv4::sizing(p, o, 0, 0).map(|s| s.max_running_requests)
}

/// The most sequences of `seq` tokens the pool holds at once, directly.
pub(crate) fn max_concurrency(p: &Plan, o: Options, seq: u64) -> u64 {
    let pool = pool(p, o);
    if p.load_verdict().is_some() || pool.tokens == 0 {
        return 0;
    }
    let by_tokens = pool.tokens.checked_div(seq).unwrap_or(u64::MAX);
    // Every data-parallel group has a pool of its own.
    by_tokens
        .min(pool.state_slots.unwrap_or(u64::MAX))
        .min(max_running_requests(p, o).unwrap_or(u64::MAX))
        .saturating_mul(o.request_groups())
        .min(MAX_CONCURRENCY)
}

/// The verdict: the pool answers directly, so there is no search to skip.
pub(crate) fn verdict(p: &Plan, o: Options) -> Verdict {
    if let Some(v) = p.load_verdict() {
        return v;
    }
    let pool = pool(p, o);
    if pool.tokens == 0 || pool.state_slots == Some(0) {
        return Verdict::EngineRefuses { gpu: 0, largest_context: 0 };
    }
    if p.scenario.sequence_tokens() > pool.tokens {
        return Verdict::EngineRefuses { gpu: 0, largest_context: pool.tokens };
    }
    Verdict::Fits { max_concurrency: max_concurrency(p, o, p.scenario.sequence_tokens()) }
}

pub(crate) fn report(p: &Plan, o: Options) -> Report {
    let pool = pool(p, o);
    let error = (pool.tokens == 0 || pool.state_slots == Some(0))
        .then(|| "Not enough memory. Please try to increase --mem-fraction-static.".to_owned());
    let mut log_lines = vec![format!("max_total_num_tokens={}", pool.tokens)];
    if let Some(slots) = pool.state_slots {
        log_lines
            .push(format!("max_mamba_cache_size={slots}: at most {slots} requests hold a recurrent state at once"));
    }
    // `DSV4PoolConfigurator._to_config`'s line (0.5.23).
    if dsv4::sizing(p, o, 0, 0).is_some() {
        let full = pool.tokens;
        let swa = dsv4::swa_tokens(full);
        log_lines.push(format!("DSV4 pool sizes: full={full}, swa={swa}, c4={}, c128={}", full / 4, full / 128));
    }
    let ctx = context_length(p, o);
    if pool.tokens > 0 && pool.tokens < ctx {
        log_lines.push(format!(
            "the pool holds {} tokens, fewer than context_length {ctx}: one request cannot reach its full context",
            pool.tokens
        ));
    }
    Report {
        version: o.version,
        mem_fraction_static: pool.fraction,
        max_total_num_tokens: pool.tokens,
        cell_size_bytes: pool.cell,
        context_length: ctx,
        chunked_prefill_size: pool.chunk,
        ep_size: o.effective_ep(p.tp()),
        free_before_weights_bytes: pool.free_before_weights,
        reserved_bytes: pool.reserved,
        startup_error: error,
        log_lines,
    }
}

pub(crate) fn terms(p: &Plan, r: &Report, kv_demand_bytes: u64) -> EngineTerms {
    let dsv4_sizing = if let Engine::Sglang(o) = p.scenario.engine { dsv4::sizing(p, o, 0, 0) } else { None };
    EngineTerms {
        kv_cache: (
            format!(
                "SGLang pre-allocates a pool of {} tokens; this workload needs {} for {}",
                thousands(r.max_total_num_tokens),
                format_bytes(kv_demand_bytes, UnitSystem::Binary),
                demand(p)
            ),
            Basis::EngineRule,
        ),
        state: "SGLang's mamba pool takes 0.9/1.9 of the free memory, one slot per running request",
        activations: format!(
            "one chunk of {} prefill tokens through one decoder layer (SGLang keeps it outside mem_fraction_static)",
            thousands(r.chunked_prefill_size)
        ),
        overhead: match r.version {
            Version::TpTable | Version::V0_5_23 => crate::plan::terms::tp_comm_note(p),
            Version::V0_5_23Init | Version::V0_5_23Alloc if p.tp() > 1 => format!(
                " + SGLang's NCCL init {} per GPU (its logs)",
                format_bytes(dist_init_bytes(p), UnitSystem::Binary)
            ),
            Version::V0_5_23Init | Version::V0_5_23Alloc => String::new(),
        },
        own: vec![Term::tokens(
            "SGLang max_total_num_tokens",
            r.max_total_num_tokens,
            format!(
                "(free after weights − {} × (1 − mem_fraction_static {}, {}){}) ÷ {} {} bytes",
                match r.version {
                    Version::TpTable | Version::V0_5_23 => crate::plan::terms::cuda_total(p),
                    Version::V0_5_23Init | Version::V0_5_23Alloc => "free before weights".to_owned(),
                },
                decimal_short(r.mem_fraction_static, 3),
                match r.version {
                    Version::TpTable => "default by TP",
                    Version::V0_5_23 | Version::V0_5_23Init | Version::V0_5_23Alloc => {
                        "default from GPU memory, 0.5.23"
                    }
                },
                match dsv4_sizing {
                    Some(s) => format!(
                        " − DeepSeek-V4's ratio-128 compressor state for {} requests, {}",
                        s.max_running_requests,
                        format_bytes(s.fixed_bytes, UnitSystem::Binary)
                    ),
                    None => String::new(),
                },
                if dsv4_sizing.is_some() {
                    "in whole pages of 256, DeepSeek-V4's bytes_per_full_token (its window pool at 0.1 of it, the \
                     compressed and indexer caches, the ratio-4 state; DSV4PoolConfigurator, 0.5.23) of about"
                } else {
                    "cell size"
                },
                thousands(r.cell_size_bytes)
            ),
            Basis::EngineRule,
        )]
        .into_iter()
        .chain(parallel_terms(p))
        .collect(),
    }
}

/// What `--dp-size`, `--enable-dp-attention` and `--ep-size` change.
fn parallel_terms(p: &Plan) -> Vec<Term> {
    let Engine::Sglang(o) = p.scenario.engine else { return Vec::new() };
    let mut out = Vec::new();
    if o.dp_size > 1 {
        out.push(Term::count(
            "SGLang data-parallel groups",
            o.dp_size,
            if o.enable_dp_attention {
                format!(
                    "attention over {} rank(s) each, its KV heads too, the embedding whole on every GPU, the MLP and \
                     experts over all {} (--enable-dp-attention: dp_attention.py, 0.5.4); each group's requests in \
                     its own pool, chunked prefill ÷ {}",
                    p.attention_tp(),
                    p.tp(),
                    o.dp_size
                )
            } else {
                "replicas of the TP × PP group, each a scheduler and pool of its own (data_parallel_controller.py, \
                 0.5.4)"
                    .to_owned()
            },
            Basis::EngineRule,
        ));
    }
    let ep = o.effective_ep(p.tp());
    if let (true, Some(m)) = (ep > 1, p.model.arch.text.moe) {
        out.push(Term::count(
            "SGLang experts per GPU",
            m.num_experts.saturating_add(o.ep_num_redundant_experts) / ep,
            format!(
                "{} experts{} in {} sets{}, each expert sharded over TP ÷ EP = {} rank(s) \
                 (fused_moe_triton/layer.py, 0.5.4)",
                m.num_experts,
                if o.ep_num_redundant_experts > 0 {
                    format!(" and {} redundant copies", o.ep_num_redundant_experts)
                } else {
                    String::new()
                },
                ep,
                match (o.moe_a2a_deepep, o.cuda_graphs()) {
                    (false, _) => " (--ep-size)",
                    (true, true) => " (DeepEP: --ep-size is --tp-size, overrides.py::_a2a_ep_size)",
                    (true, false) => {
                        " (DeepEP: --ep-size is --tp-size, overrides.py::_a2a_ep_size; its normal mode turns CUDA \
                         graphs off, moe_hook.py)"
                    }
                },
                (p.tp() / ep).max(1)
            ),
            Basis::EngineRule,
        ));
    }
    // The automatic mem_fraction_static of the 0.5.23 rules keeps room for
    // DeepEP's buffers while graphs are captured (`memory_hook.py`).
    let automatic = o.mem_fraction_static.is_none()
        && matches!(o.version, Version::V0_5_23 | Version::V0_5_23Init | Version::V0_5_23Alloc);
    let deepep_mib = if o.moe_a2a_deepep && automatic { gpu_memory_settings(p, o).deepep_mib } else { 0.0 };
    if deepep_mib > 0.0 {
        // The bridge pool counts only where the reserve clears its floor.
        let bridge = if deepep_mib > 2048.0 { " + 1 GiB for the prefill graphs' bridge pool" } else { "" };
        out.push(Term::bytes(
            "SGLang DeepEP reserve",
            (deepep_mib * (1u64 << 20) as f64) as u64,
            format!(
                "2 GiB for DeepEP's all-to-all buffers{bridge}, kept outside mem_fraction_static \
                 (memory_hook.py::reserve_for_deepep_a2a_mb, reserve_for_graph_mb, 0.5.23)"
            ),
            Basis::EngineRule,
        ));
    }
    out
}

pub(crate) fn warnings(p: &Plan) -> EngineWarnings {
    EngineWarnings { setup: super::gguf_warning(p).into_iter().collect(), fit: Vec::new() }
}

/// The bytes a plan needs on GPU `g` against what SGLang may use there: the
/// fixed parts and the sequences' KV cache (DeepSeek-V4: its full pool's
/// tokens and the pools sized by requests, `dsv4.rs`), against
/// `mem_fraction_static` × capacity plus the activations it keeps outside
/// that share.
pub(crate) fn need_and_usable(
    p: &Plan,
    o: Options,
    g: usize,
    fixed: u64,
    per_token: u64,
    activations: u64,
    cap: f64,
) -> (u64, f64) {
    let s = &p.scenario;
    let fraction = o.mem_fraction_static.unwrap_or_else(|| default_mem_fraction_for(p, o));
    let tokens = s.sequence_tokens().saturating_mul(s.concurrency);
    let work = match dsv4::sizing(p, o, g, p.stage(g)) {
        Some(d) => d.bytes(tokens),
        None => per_token.saturating_mul(tokens),
    };
    (fixed.saturating_add(work), cap * fraction + activations as f64)
}

/// SGLang's flags; FP8 (e4m3) is its cheapest KV cache.
pub const COMMANDS: Commands = Commands {
    cheaper_kv_dtype: KvDtype::Fp8,
    kv_dtype: launch,
    shorten: Shorten::Context(launch),
    // The plan's launch, capped: the plan does not model the flag.
    concurrency: |model, t, repo, n| format!("{} --max-running-requests {n}", launch(model, t, repo)),
    more_gpus_are_tensor_parallel: true,
    // `--tp-size` (`--tp` parses only as its unique prefix: server_args.py, 0.5.23).
    more_gpus: |model, t, repo, _| launch(model, t, repo),
    weights: launch,
    settings: no_settings,
    adjusts: crate::engines::commands::no_adjustment,
    launch: Some(launch),
};

/// Each pipeline stage's layers as SGLang's `get_pp_indices` places them
/// (0.5.23 srt/distributed/utils.py: the last `remainder` stages one more).
pub(crate) fn stage_ranges(layers: usize, stages: usize) -> crate::plan::split::Ranges {
    let stages = stages.max(1);
    let (base, extra_from) = (layers / stages, stages - layers % stages);
    crate::plan::split::consecutive((0..stages).map(|rank| base + usize::from(rank >= extra_from)))
}

/// `--dp-size`, `--enable-dp-attention`, `--ep-size` and the all-to-all
/// backend, each with a space before it, where they are not SGLang's
/// defaults.
fn parallel_flags(o: Options) -> String {
    let mut out = String::new();
    if o.dp_size > 1 {
        out.push_str(&format!(" --dp-size {}", o.dp_size));
    }
    if o.enable_dp_attention {
        out.push_str(" --enable-dp-attention");
    }
    if o.ep_size > 1 {
        out.push_str(&format!(" --ep-size {}", o.ep_size));
    }
    if o.ep_num_redundant_experts > 0 {
        out.push_str(&format!(" --ep-num-redundant-experts {}", o.ep_num_redundant_experts));
    }
    if o.moe_a2a_deepep {
        out.push_str(" --moe-a2a-backend deepep");
        if o.deepep_mode != DeepepMode::Auto {
            out.push_str(&format!(" --deepep-mode {}", o.deepep_mode.id()));
        }
    }
    out
}

/// `python -m sglang.launch_server` for a plan: every flag it depends on
/// that differs from SGLang's default (python/sglang/srt/server_args.py
/// `ServerArgs`).
pub(crate) fn launch(model: &Model, s: &Scenario, repo: &str) -> String {
    let (checkpoint, quant) = super::commands::checkpoint_for(model, s.weights, repo);
    // Past the model's own length SGLang refuses to start unless told to
    // (0.5.23 configs/model_config.py `_derive_context_length`: "To allow
    // overriding this maximum, set the env var
    // SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1").
    let long = super::commands::past_model_length(model, s.engine.asked_context());
    let env = if long { "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 " } else { "" };
    let mut cmd = format!("{env}python -m sglang.launch_server --model-path {checkpoint}");
    let mut flag = |f: String| {
        cmd.push(' ');
        cmd.push_str(&f);
    };
    if let Some(q) = quant {
        flag(q.to_owned());
    }
    let Engine::Sglang(o) = s.engine else { return cmd };
    if let Some(len) = o.context_length {
        flag(format!("--context-length {len}"));
    }
    if s.tp > 1 {
        flag(format!("--tp-size {}", s.tp));
    }
    let dp = parallel_flags(o);
    if !dp.is_empty() {
        flag(dp.trim_start().to_owned());
    }
    if s.stages() > 1 {
        flag(format!("--pp-size {}", s.stages()));
    }
    if let Some(f) = o.mem_fraction_static {
        flag(format!("--mem-fraction-static {}", crate::units::shortest(f)));
    }
    if let Some(n) = o.chunked_prefill_size {
        flag(format!("--chunked-prefill-size {n}"));
    }
    if s.kv_dtype == KvDtype::Fp8 {
        flag("--kv-cache-dtype fp8_e4m3".into());
    }
    cmd
}

impl Report {
    /// SGLang's own start-up figures.
    pub(crate) fn rows(&self) -> Vec<super::ReportRow> {
        let fraction = crate::units::shortest(self.mem_fraction_static);
        vec![
            super::ReportRow::new(
                "max-total-num-tokens",
                "max_total_num_tokens",
                thousands(self.max_total_num_tokens),
                self.max_total_num_tokens,
            ),
            super::ReportRow::new("mem-fraction-static", "mem_fraction_static", fraction.clone(), fraction),
        ]
    }
}
