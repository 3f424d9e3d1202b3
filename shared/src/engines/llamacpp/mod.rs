//! llama.cpp (`llama-server` / `llama-cli`): everything is allocated at
//! start-up — the offloaded layers, a KV cache for the whole `n_ctx`, and the
//! compute buffers — so a plan either loads or fails at once.
//!
//! `-c/--ctx-size` is the total context shared by `-np/--parallel` slots
//! (each slot gets `n_ctx / parallel`); `-ngl N` offloads the output layer
//! and the last N − 1 repeating layers (the output layer counts as the
//! last of `layers + 1`); the token embedding stays on the CPU.
//! Sliding-window layers keep `window × slots + n_ubatch` tokens
//! (`llama_kv_cache_iswa`).
//!
//! Files: `options.rs` (its settings, defaults and checks); `knobs.rs` (the
//! same declared once for links, the CLI and the page); `cache.rs` (K/V cache
//! types, cells as llama.cpp pads and streams them, DeepSeek-V4's
//! `llama_kv_cache_dsv4`); `tensors.rs` (every
//! tensor by llama.cpp name: the GGUF header's, else named from the
//! layout's groups); `devices.rs` (the layer split over GPUs as
//! `load_tensors` does it, `-ot` / `--n-cpu-moe` overrides, per-device model
//! buffers, computed once per plan in `EnginePlan`); `compute.rs` (each
//! GPU's compute buffer: the layer's activations, MLA's query side and
//! DeepSeek sparse attention's indexer mask and scores, the weight staged
//! for host-resident experts, a pipeline's input copies);
//! `graph.rs` (the compute buffer of dense, Qwen3-MoE, GLM-4.5, gpt-oss
//! and Gemma 4 layers as ggml-alloc lays out the reserved graph, replayed
//! over at most three layers, a window period for Gemma 4; the GLU build);
//! `host.rs` (the KV cache, state and compute buffer left in host memory,
//! the host RAM a plan needs; the KQ mask in F32 before b9410); `fit.rs`
//! (what `--fit` loads instead: common/fit.cpp's decisions replayed);
//! `pattern.rs` (the `-ot` ECMAScript matcher, a lazily built DFA, linear in
//! the name: no regex crate in the page's first load); `fixes.rs` (the
//! `-ngl` / `--n-cpu-moe` / `--tensor-split` / `-ot` solvers and
//! `llama-server` lines); `warnings.rs` (what llama.cpp says first);
//! `rows.rs` (its report's figures); `ik.rs` (ik_llama.cpp as a rule set of
//! its own: `-mla`, `-amb`, `-fmoe`, `-rtr` and their defaults by build).

mod cache;
mod compute;
mod devices;
mod fit;
mod fixes;
mod graph;
mod host;
pub mod ik;
mod knobs;
mod options;
mod pattern;
mod rows;
mod tensors;
mod warnings;

pub use cache::{CacheType, UnknownCacheType};
pub use compute::{OP_OFFLOAD_MIN_BATCH, OUTPUTS_MAX_BUILD, SCHED_COPIES};
use compute::{compute_buffer, pipeline_copies, pipelined, staged_weight};
pub use devices::{Buffer, MAX_OVERRIDE_TEXT, MAX_SPLIT, SplitMode, TensorOverrides, TensorSplit};
pub use fit::{Fit, FitChoice, predict as predict_fit};
pub use fixes::{
    COMMANDS, cpu_moe_answer, flash_attention_flag, gpu_layers_answer, max_gpu_layers, min_cpu_moe, server_command,
    with_cpu_moe,
};
pub(crate) use fixes::{gguf_file, pinned_split};
pub use host::EMBD_INPUT_BUILD;
use host::{Host, host, host_ram_limit};
pub use knobs::KNOBS;
pub(crate) use options::check_knobs;
pub use options::{
    DEFAULT_N_BATCH, DEFAULT_N_UBATCH, F16_MASK_BUILD, FIT_BUILD, FIT_MARGIN_BYTES, FitMode, FlashAttention, Fork,
    MLA_BUILD, OFFLOAD_DEFAULT_BUILD, OUTPUT_FIRST_BUILD, Options, VLESS_MLA_BUILD,
};
pub use pattern::Pattern;
pub(crate) use tensors::Tensors;
pub(crate) use warnings::warnings;

use std::borrow::Cow;

use serde::Serialize;

use super::parallel::{self, SplitError};
use super::{EngineTerms, Plan, Scenario};
use crate::arch::TextModel;
use crate::explain::{Basis, Term, thousands};
use crate::kv::LayerKv;
use crate::plan::{GpuBudget, MAX_CONCURRENCY, Placement, Search, Verdict, largest};
use crate::state::StateRules;
use crate::units::{UnitSystem, format_bytes, mib_2dp};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub n_ctx: u64,
    pub parallel: u64,
    pub n_ctx_per_slot: u64,
    /// `-ub`: the physical batch the compute buffers are sized for.
    pub n_ubatch: u64,
    pub n_gpu_layers: u64,
    pub layers_on_gpu: u64,
    pub output_on_gpu: bool,
    /// The GPU that holds the output layer, when one does.
    pub output_gpu: Option<usize>,
    /// Repeating layers per GPU.
    pub gpu_layers: Vec<u64>,
    /// Each GPU's model buffer: the tensors placed there (`CUDA<g> model
    /// buffer size`).
    pub gpu_weight_bytes: Vec<u64>,
    /// Weights left in system memory (token embedding, CPU layers and the
    /// routed experts kept on the CPU): llama.cpp's `CPU_Mapped` buffer.
    pub cpu_weight_bytes: u64,
    /// The routed experts `--n-cpu-moe` / `--cpu-moe` keep on the CPU (part
    /// of `cpu_weight_bytes`).
    pub cpu_expert_bytes: u64,
    /// Tensors an `-ot` rule moved off their layer's device (the first few)
    /// and how many.
    pub overridden_tensors: Vec<String>,
    pub overridden_count: usize,
    /// The `--mmproj` projector's weights and the GPU that holds them
    /// (`None`: the CPU, or no projector).
    pub mmproj_bytes: u64,
    pub mmproj_gpu: Option<usize>,
    /// KV cache of the layers that stay on the CPU (every layer with
    /// `--no-kv-offload`).
    pub cpu_kv_bytes: u64,
    /// Recurrent state kept on the CPU.
    pub cpu_state_bytes: u64,
    /// The host compute buffer (`CUDA_Host compute buffer size`).
    pub host_compute_bytes: u64,
    /// The host RAM the plan needs: CPU weights (mmap'd pages llama.cpp
    /// touches), host KV cache and state, the host compute buffer.
    pub host_ram_bytes: u64,
    /// The host's RAM, when given (checked against `host_ram_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_ram_limit_bytes: Option<u64>,
    /// KV cells of a full-attention layer, over all streams.
    pub kv_cells: u64,
    /// The K and V cache types (`ggml_type_name`).
    pub cache_type_k: String,
    pub cache_type_v: String,
    /// The largest per-GPU compute buffer.
    pub compute_buffer_bytes: u64,
    pub fit_margin_bytes: u64,
    /// Whether every GPU keeps the `--fit` margin of CUDA's total free, as
    /// `--fit` first checks (when not, it changes the plan before loading:
    /// [`fit::predict`]).
    pub keeps_fit_margin: bool,
    /// Whether llama.cpp's `--fit` (on by default) changes this plan before
    /// loading: a GPU keeps less than its target free and no flag makes
    /// `--fit` give up. Not in the JSON: `fit` there says what it loads.
    #[serde(skip)]
    pub fit_moves: bool,
    /// Ollama: the `num_ctx` a longer request is cut to (its prompt is
    /// truncated), when the plan's requests are longer.
    #[serde(skip)]
    pub prompt_cut_to: Option<u64>,
    /// ik_llama.cpp's `-rtr`: mmap is off, so the host weights are read
    /// into allocated memory (not page cache the kernel may drop).
    #[serde(skip)]
    pub weights_read_into_ram: bool,
    pub log_lines: Vec<String>,
}

pub(super) fn slots(p: &Plan, o: Options) -> u64 {
    o.parallel.unwrap_or(p.scenario.concurrency).max(1)
}

/// The context llama.cpp allocates: `-c`, where 0 means the model's trained
/// context (`cparams.n_ctx = params.n_ctx == 0 ? hparams.n_ctx_train : …`,
/// src/llama-context.cpp, llama.cpp as vendored by llama-cpp-python 0.3.36),
/// per slot under `--fit`; without `-c`, the plan's sequences over its slots.
pub(super) fn n_ctx(p: &Plan, o: Options) -> u64 {
    context(p, o, slots(p, o))
}

/// [`n_ctx`] with `slots` slots.
fn context(p: &Plan, o: Options, slots: u64) -> u64 {
    context_for(p, o, p.scenario.sequence_tokens(), slots)
}

/// [`context`] for sequences of `seq` tokens.
fn context_for(p: &Plan, o: Options, seq: u64, slots: u64) -> u64 {
    let planned = || seq.saturating_mul(slots);
    // With --fit on, `-c 0` is the trained context for every stream: it
    // sets `n_ctx = n_ctx_train × n_streams` before anything else, one
    // stream per slot unless the cache is unified (common/fit.cpp).
    let streams = if o.runs_fit() && !o.kv_unified { slots } else { 1 };
    match o.n_ctx {
        Some(0) => p
            .model
            .arch
            .text
            .max_position_embeddings
            .filter(|&n| n > 0)
            .map_or_else(planned, |n| n.saturating_mul(streams)),
        Some(n) => n,
        None => planned(),
    }
    .max(1)
}

/// The repeating layers `-ngl` offloads and whether the output layer goes
/// too. llama.cpp counts the output layer as layer `n` of `n + 1` and
/// offloads from the back: `i_gpu_start = max(n + 1 - ngl, 0)`, so any
/// `-ngl ≥ 1` takes the output layer first and `ngl - 1` repeating layers
/// with it (`load_tensors` in src/llama-model.cpp, llama.cpp as vendored by
/// llama-cpp-python 0.3.36: "offloading output layer to GPU", "offloading
/// N - 1 repeating layers"). Builds before [`OUTPUT_FIRST_BUILD`], and
/// ik_llama.cpp, start at `max(n - ngl, 0)`: the last `ngl` repeating
/// layers, the output layer only when `ngl > n` (a b5398 log: `-ngl 93` of
/// 94 layers keeps 93 on the GPU and the output on the CPU).
fn gpu_layers(p: &Plan, o: Options) -> (u64, bool) {
    let n = p.kv_layers.len() as u64;
    let ngl = o.n_gpu_layers.unwrap_or(n + 1).min(n + 1);
    let output_first = o.fork == Fork::Mainline && o.build.is_none_or(|b| b >= OUTPUT_FIRST_BUILD);
    if output_first { (ngl.saturating_sub(1), ngl >= 1) } else { (ngl.min(n), ngl > n) }
}

/// llama.cpp (as vendored in llama-cpp-python 0.3.36): `create_memory`
/// in src/llama-model.cpp builds the recurrent (and hybrid) memory with
/// `recurrent_type_r` / `recurrent_type_s` = `GGML_TYPE_F32` and
/// `max(1, n_seq_max)` cells: one per sequence slot.
pub(crate) const STATE_RULES: StateRules =
    StateRules { conv_bytes: 4, ssm_bytes: 4, conv_columns_full_kernel: false, draft_conv_columns: 0 };

/// The splits llama.cpp refuses: more stages than layers, and `-c 0` (the
/// model's trained context) for a config that states none.
pub(crate) fn check_split(o: Options, s: &Scenario, text: &TextModel) -> Result<(), SplitError> {
    parallel::check_stages(s, text)?;
    if o.n_ctx == Some(0) && text.max_position_embeddings.is_none_or(|n| n == 0) {
        return Err(SplitError::NoTrainedContext);
    }
    // src/llama-context.cpp: an MLA model "does not support different K
    // and V cache types" (its V is a view of the K latent). Mainline's:
    // ik_llama.cpp runs `-mla 3 -ctk q8_0` beside its default f16 V (the
    // fixture `llamacpp-ik-b3737-deepseek-r1-0528-iq3kr4-2x4090-mla3-ot-q8kv`).
    if let (crate::arch::AttentionKind::Mla(_), Some(k), Some(v)) = (text.attention, o.cache_type_k, o.cache_type_v)
        && k != v
        && o.fork == Fork::Mainline
    {
        return Err(SplitError::MlaCacheTypes { k: k.id(), v: v.id() });
    }
    Ok(())
}

pub(crate) fn too_many_stages(stages: u64, layers: u64) -> String {
    format!("llama.cpp splits whole layers over GPUs, so {} GPU(s) would hold none", stages - layers)
}

/// `-ngl` offloads the last layers; they are split over the GPUs as
/// llama.cpp's `load_tensors` does (`devices.rs`); the token embedding
/// stays on the CPU.
pub(crate) fn place(p: &Plan, o: Options) -> Placement {
    let (offloaded, output) = gpu_layers(p, o);
    let a = devices::assign(p, &o, offloaded as usize, output);
    let ranges = (0..p.scenario.gpus.len()).map(|g| a.range(g)).collect();
    Placement { ranges, first_on_gpu: false, last_on_gpu: output }
}

/// Where llama.cpp puts every tensor, computed once per plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Devices {
    assignment: devices::Assignment,
    weights: devices::Weights,
    /// The `--mmproj` projector's bytes and its GPU (`None`: the CPU).
    mmproj_bytes: u64,
    mmproj_gpu: Option<usize>,
    /// The GPUs llama.cpp uses (`--split-mode none`: the main GPU alone).
    used: Vec<bool>,
    /// Each layer's cache, for the same options: computed once here, not
    /// for every GPU of every fit check (issue 39).
    kv: Vec<LayerKv>,
}

/// The bytes of the model's multimodal projector (`--mmproj`).
pub(crate) fn projector_bytes(p: &Plan) -> u64 {
    tensors::multimodal_bytes(p)
}

/// Where the plan's tensors go with `o`; `tensors`: those a solver built
/// once for the many plans it tries ([`Tensors`]), when it did.
pub(crate) fn devices(p: &Plan, o: Options, tensors: Option<&Tensors>) -> Devices {
    if devices::moves_none(&o) {
        let homes = tensors.map_or_else(|| Cow::Owned(tensors::home_bytes(p)), |t| t.homes_of_plan(p));
        devices_by_home(p, o, &homes)
    } else {
        let pieces = tensors.map_or_else(|| Cow::Owned(tensors::pieces(p)), |t| t.of_plan(p));
        devices_with(p, o, &pieces, &|_| None)
    }
}

/// [`devices`] of `pieces` with more tensor overrides after `-ot`'s.
fn devices_with(
    p: &Plan,
    o: Options,
    pieces: &[tensors::Piece],
    more: &dyn Fn(&tensors::Piece) -> Option<Buffer>,
) -> Devices {
    let (offloaded, output) = gpu_layers(p, o);
    let assignment = devices::assign(p, &o, offloaded as usize, output);
    let splits = devices::splits(p, &o);
    let weights = devices::weights_with(pieces, &assignment, &o, &splits, more);
    placed(p, o, assignment, weights)
}

/// [`devices`] when no tensor leaves its layer's device
/// ([`devices::moves_none`]): each home's bytes, not each tensor's.
fn devices_by_home(p: &Plan, o: Options, homes: &tensors::HomeBytes) -> Devices {
    let (offloaded, output) = gpu_layers(p, o);
    let assignment = devices::assign(p, &o, offloaded as usize, output);
    let weights = devices::weights_by_home(homes, &assignment, p.scenario.gpus.len());
    placed(p, o, assignment, weights)
}

/// The devices of a plan whose tensors are placed.
fn placed(p: &Plan, o: Options, assignment: devices::Assignment, weights: devices::Weights) -> Devices {
    let gpus = p.scenario.gpus.len();
    let used = (0..gpus).map(|g| o.split_mode != SplitMode::None || g == usize::from(o.main_gpu)).collect();
    // tools/mtmd/clip.cpp: the projector takes the first GPU
    // (`ggml_backend_init_by_type(GPU)`, common/arg.cpp leaves
    // `mmproj_device` unset) unless --no-mmproj-offload keeps it on the CPU.
    let mmproj_gpu = (o.mmproj && !o.no_mmproj_offload && gpus > 0).then_some(0);
    let mmproj_bytes = if o.mmproj { tensors::multimodal_bytes(p) } else { 0 };
    Devices { assignment, weights, mmproj_bytes, mmproj_gpu, used, kv: kv_layers(p, o) }
}

impl Devices {
    /// The model buffer of GPU `g`: the tensors placed there (and the
    /// projector on its GPU).
    fn gpu_weights(&self, g: usize) -> u64 {
        let mmproj = if self.mmproj_gpu == Some(g) { self.mmproj_bytes } else { 0 };
        self.weights.gpu.get(g).copied().unwrap_or(0).saturating_add(mmproj)
    }

    fn cpu_weights(&self) -> u64 {
        let mmproj = if self.mmproj_gpu.is_none() { self.mmproj_bytes } else { 0 };
        self.weights.cpu.saturating_add(mmproj)
    }

    fn overhead(&self, p: &Plan, g: usize) -> u64 {
        if self.used.get(g).copied().unwrap_or(false) { p.scenario.gpus[g].context_bytes() } else { 0 }
    }
}

/// The K and V storage: `-ctk` (default: the scenario's KV dtype) and
/// `-ctv` (default: the key type).
fn types(p: &Plan, o: Options) -> cache::Types {
    let k = o.cache_type_k.or(CacheType::of(p.scenario.kv_dtype));
    cache::Types { k, v: o.cache_type_v.or(k), fallback: p.scenario.kv_dtype }
}

/// Bytes per cell of every layer in llama.cpp's K and V types.
fn kv_layers(p: &Plan, o: Options) -> Vec<LayerKv> {
    let (text, types) = (&p.model.arch.text, types(p, o));
    if let Some(layers) = ik::kv_layers(text, types, o) {
        return layers;
    }
    let mut layers = cache::layers(&p.model.arch, types, o.fork, o.build);
    let crate::arch::AttentionKind::Mla(m) = text.attention else { return layers };
    if o.fork != Fork::Mainline {
        return layers;
    }
    use crate::kv::CachePart::{Key, Value};
    // A GGUF converted before MLA, or a build before [`MLA_BUILD`], caches
    // every head's K and V instead of the latent; builds before
    // [`VLESS_MLA_BUILD`] cache the latent's V beside it.
    let (heads, k) = (text.num_heads, m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim));
    let mha = types.bytes(Key, k, heads.saturating_mul(k));
    let mha = mha.saturating_add(types.bytes(Value, m.v_head_dim, heads.saturating_mul(m.v_head_dim)));
    let as_mha = heads_cached(p, o);
    let with_v = o.build.is_some_and(|b| b < VLESS_MLA_BUILD);
    for l in layers.iter_mut().filter(|l| l.bytes_per_token > 0) {
        if as_mha {
            l.bytes_per_token = mha;
        } else if with_v {
            l.bytes_per_token = l.bytes_per_token.saturating_add(types.bytes(Value, m.kv_lora_rank, m.kv_lora_rank));
        }
    }
    layers
}

/// Whether llama.cpp runs this plan with DeepSeek sparse attention
/// ([`cache::dsa_indexer`]).
pub(crate) fn sparse_attention(p: &Plan, o: Options) -> bool {
    cache::dsa_indexer(&p.model.arch, o.fork, o.build).is_some()
}

/// Whether mainline llama.cpp runs an MLA model as multi-head attention
/// (decompressing the latent, caching each head's K and V): a build before
/// [`MLA_BUILD`], or a GGUF converted before it
/// ([`crate::model::Model::legacy_mla_gguf`],
/// which every build runs so).
pub(crate) fn heads_cached(p: &Plan, o: Options) -> bool {
    o.fork == Fork::Mainline
        && matches!(p.model.arch.text.attention, crate::arch::AttentionKind::Mla(_))
        && (p.model.legacy_mla_gguf || o.build.is_some_and(|b| b < MLA_BUILD))
}

fn cells(p: &Plan, o: Options, ctx: u64, slots: u64) -> cache::Cells {
    let rules = cache::Rules::of(o.fork, o.build, o.flash_attention == FlashAttention::On, o.n_batch, o.ubatch());
    let cells = cache::Cells::by(ctx, slots, o.kv_unified, o.swa_full, rules);
    if deepseek4(p) { cells.per_sequence_streams() } else { cells }
}

/// DeepSeek-V4's window (`n_swa`), 0 for any other model.
fn window(p: &Plan) -> u64 {
    match p.model.arch.text.attention {
        crate::arch::AttentionKind::Compressed(c) => c.window,
        crate::arch::AttentionKind::Standard { .. } | crate::arch::AttentionKind::Mla(_) => 0,
    }
}

/// Whether llama.cpp runs this plan as `deepseek4`, with its own cache
/// (`cache::layers`' DeepSeek-V4 branch; ik_llama.cpp's is taken as
/// mainline's).
pub(crate) fn deepseek4(p: &Plan) -> bool {
    matches!(p.model.arch.text.attention, crate::arch::AttentionKind::Compressed(_))
}

/// The experts the replay stages on GPU `g` (`graph::Staged`): on the GPU
/// that runs host-resident expert ops (the first, `compute::staged_weight`),
/// where a rule (`--n-cpu-moe`, `-ot`, `--fit`'s) left both the gate or up
/// and the down experts of some layers in host memory, for a prompt batch
/// CUDA offloads. gpt-oss (a b6699 log, 456.98 MiB, `graph.rs` tests) and
/// Qwen3-MoE (llama-server's own reservation on llvmpipe Vulkan, the first
/// half or all of the layers' experts on the CPU:
/// `graph::tests::qwen3_moe_stages_its_host_experts`); GLM-4.5's shared
/// experts and dense lead keep the copy staged beside the replay, which no
/// log contradicts yet.
fn staged_experts(p: &Plan, o: Options, d: &Devices, g: usize, first: bool) -> Option<graph::Staged> {
    let &(gate_up, down) = d.weights.largest_cpu_experts.get(g)?;
    let checked = matches!(p.model.arch.family, crate::arch::Family::GptOss | crate::arch::Family::Qwen3Moe);
    (checked && first && gate_up > 0 && down > 0 && o.ubatch() >= compute::OP_OFFLOAD_MIN_BATCH).then(|| {
        let layers = &d.weights.cpu_expert_layers;
        graph::Staged { gate_up, down, from: layers.start, until: layers.end }
    })
}

/// The repeating layers left in host memory whose ops the first GPU runs
/// (`graph::Host`; dense layers, and Qwen3-MoE's): mainline llama.cpp with
/// flash attention and no BLAS,
/// on a GPU that offloads host weights' ops (not
/// Metal, whose offload the replay has not been checked against). Checked
/// against llama-server's own reservation (llama-cpp-python 0.3.36's
/// vendored llama.cpp on Mesa's llvmpipe Vulkan device, which stages and
/// copies as CUDA does): the Ollama 0.30 Hermes 3 log's 248.00 MiB, and
/// 160.00, 38.56 and 66.57 MiB at other sizes, `-ngl` and `-ub`, each exact.
fn host_layers(p: &Plan, o: Options, d: &Devices, ctx: u64) -> Option<graph::Host> {
    let layers = d.assignment.layers.iter().filter(|l| l.is_none()).count() as u64;
    let apple = p.scenario.gpus.iter().any(|s| s.vendor == Some(crate::catalog::GpuVendor::Apple));
    let [q, k, v, out, up, down] = d.weights.roles;
    let runs = layers > 0
        && o.fork == Fork::Mainline
        && o.flash_attention == FlashAttention::On
        && !(o.blas || apple || o.no_gpu_backend || o.no_kv_offload)
        && o.ubatch() >= compute::OP_OFFLOAD_MIN_BATCH
        && q > 0
        && k > 0
        && v > 0;
    let first = d.assignment.layers.iter().position(|l| l.is_none())?;
    let t = &p.model.arch.text;
    // The layer's cell split between K and V as their types store them
    // (`-ctk q8_0 -ctv f16`: 272 and 512 bytes of a 256-wide row).
    use crate::kv::CachePart::{Key, Value};
    let kv_types = types(p, o);
    let k_row = kv_types.bytes(Key, t.head_dim, t.num_kv_heads.saturating_mul(t.head_dim));
    let v_row = kv_types.bytes(Value, t.v_head_dim, t.num_kv_heads.saturating_mul(t.v_head_dim));
    let per_cell = d.kv.get(first).map_or(0, |l| l.bytes_per_token);
    let k_cell = u64::try_from(u128::from(per_cell) * u128::from(k_row) / u128::from(k_row + v_row).max(1)).ok()?;
    let cells = cache::pad(ctx);
    let rope_freqs = if t.extra.rope_freqs { t.head_dim.saturating_mul(2) } else { 0 };
    // Qwen3-MoE's host layers: the router (`ffn_gate_inp`, which
    // llama-quantize keeps in F32: src/llama-quant.cpp) and the largest
    // expert stacks (the roles' FFN slots), each staged (checked against
    // llama-server, `graph::tests::qwen3_moe_host_layers_stage_router_and_experts`).
    let experts = match (p.model.arch.family, t.moe) {
        (crate::arch::Family::Qwen3Moe, Some(m)) if up > 0 && down > 0 => {
            let router = t.hidden_size.saturating_mul(m.num_experts).saturating_mul(4);
            Some((router, graph::Staged { gate_up: up, down, from: 0, until: u64::MAX }))
        }
        _ => None,
    };
    runs.then(|| graph::Host {
        layers,
        q,
        k,
        v,
        o: out,
        up,
        down,
        k_cache: k_cell.saturating_mul(cells),
        v_cache: (per_cell - k_cell).saturating_mul(cells),
        rope_freqs,
        experts,
    })
}

fn gpu_parts(p: &Plan, o: Options, d: &Devices, g: usize, ctx: u64, slots: u64) -> GpuBudget {
    let range = d.assignment.range(g);
    let cells = cells(p, o, ctx, slots);
    let kv = if o.no_kv_offload { 0 } else { cells.bytes(d.kv.get(range.clone()).unwrap_or(&[])) };
    let has_output = d.assignment.output == Some(g);
    let first = d.used.iter().position(|&u| u) == Some(g);
    let part = graph::Part {
        start: range.start as u64,
        layers: range.len() as u64,
        first,
        output: has_output,
        staged: staged_experts(p, o, d, g, first),
        host: if first { host_layers(p, o, d, ctx) } else { None },
    };
    let compute = if range.is_empty() && !has_output {
        0
    } else {
        compute_buffer(p, o, ctx, cells, part, slots).saturating_add(pipeline_copies(p, o, &d.kv, cells, first))
    };
    let staged = staged_weight(p, o, d, g).map(|s| s.saturating_add(compute::beneath_staged(p, o, ctx, part, s)));
    let compute = compute.max(staged.unwrap_or(0));
    // `llama_memory_recurrent`: one state cell per sequence slot
    // (`mem_size = max(1, n_seq_max)`), allocated at start-up.
    let state = if o.no_kv_offload {
        0
    } else {
        crate::state::sequence_bytes(p.state_layers.get(range).unwrap_or(&[])).saturating_mul(slots.max(1))
    };
    GpuBudget {
        weight_bytes: d.gpu_weights(g),
        kv_cache_bytes: kv,
        state_bytes: state,
        activation_bytes: compute,
        overhead_bytes: d.overhead(p, g),
    }
}

pub(crate) fn parts(p: &Plan, o: Options, d: &Devices, g: usize, batch: u64) -> GpuBudget {
    let s = slots(p, o).max(batch);
    let ctx = context(p, o, s);
    gpu_parts(p, o, d, g, ctx, s)
}

pub(super) fn overflow(p: &Plan, o: Options, d: &Devices, ctx: u64, slots: u64) -> Option<(usize, u64)> {
    (0..p.scenario.gpus.len()).find_map(|g| {
        let total = gpu_parts(p, o, d, g, ctx, slots).total_bytes();
        let cap = p.scenario.gpus[g].capacity_bytes;
        (total > cap).then(|| (g, total - cap))
    })
}

/// Whether `batch` sequences of `seq` tokens fit: llama.cpp allocates its
/// context for every slot at start-up (`-np`, else one slot a sequence; `-c`,
/// else the sequences over the slots), so a plan of `batch` sequences first
/// loads, then holds their cells.
pub(crate) fn fits(p: &Plan, o: Options, d: &Devices, seq: u64, batch: u64) -> bool {
    let slots = o.parallel.unwrap_or(batch).max(1);
    let (loaded, held) = ((context_for(p, o, seq, slots), slots), (seq.saturating_mul(batch).max(1), batch.max(1)));
    // The same context twice (no `-c`, no `-np`) is checked once: each check
    // replays the compute graph (`graph.rs`).
    overflow(p, o, d, loaded.0, loaded.1).is_none() && (held == loaded || overflow(p, o, d, held.0, held.1).is_none())
}

/// `DoesNotFitAtLoad` when a GPU cannot hold the tensors placed on it and
/// its context.
pub(super) fn load_verdict(p: &Plan, d: &Devices) -> Option<Verdict> {
    (0..p.scenario.gpus.len()).find_map(|g| {
        let fixed = d.gpu_weights(g).saturating_add(d.overhead(p, g));
        let cap = p.scenario.gpus[g].capacity_bytes;
        (fixed > cap).then(|| Verdict::DoesNotFitAtLoad { gpu: g, shortfall_bytes: fixed - cap })
    })
}

/// Whether the plan loads: every GPU holds its tensors, context, KV cache
/// and compute buffers (all allocated at start-up); `d`: the plan's devices
/// for `o`.
pub(crate) fn loads(p: &Plan, o: Options, d: &Devices) -> bool {
    load_verdict(p, d).is_none() && overflow(p, o, d, n_ctx(p, o), slots(p, o)).is_none()
}

pub(crate) fn verdict(p: &Plan, o: Options, d: &Devices, search: Search) -> Verdict {
    if let Some(v) = load_verdict(p, d) {
        return v;
    }
    if let Some((gpu, shortfall_bytes)) = overflow(p, o, d, n_ctx(p, o), slots(p, o)) {
        // Context and compute buffers are allocated at start-up too.
        return Verdict::DoesNotFitAtLoad { gpu, shortfall_bytes };
    }
    let (own, per_slot) = (slots(p, o), n_ctx(p, o) / slots(p, o));
    // Up to the plan's own slots the launch just checked holds them; past
    // them llama.cpp would start with more slots (`-np k`), each checked.
    // (Without `-np`, fewer slots than the plan's own mean longer streams, a
    // larger mask and possibly more compute: not the plan's launch.)
    Verdict::Fits {
        max_concurrency: search.answer(own, || largest(MAX_CONCURRENCY, |k| k <= own || fits(p, o, d, per_slot, k))),
    }
}

impl Report {
    /// llama.cpp's report, when the estimate is of llama.cpp.
    pub fn of(r: Option<&super::EngineReport>) -> Option<&Report> {
        match r? {
            super::EngineReport::LlamaCpp(r) => Some(r),
            super::EngineReport::Vllm(_) | super::EngineReport::Sglang(_) => None,
        }
    }
}

pub(crate) fn report(p: &Plan, o: Options, d: &Devices) -> Report {
    let ctx = n_ctx(p, o);
    let s = slots(p, o);
    let (offloaded, output) = gpu_layers(p, o);
    let gpus = p.scenario.gpus.len();
    let per_gpu: Vec<GpuBudget> = (0..gpus).map(|g| gpu_parts(p, o, d, g, ctx, s)).collect();
    let cells = cells(p, o, ctx, s);
    let kv = kv_layers(p, o);
    let Host { kv: cpu_kv, state: cpu_state, compute: host_compute } = host(p, o, d);
    let cpu_weights = d.cpu_weights();
    let t = types(p, o);
    let type_name = |c: Option<CacheType>| c.map_or_else(|| p.scenario.kv_dtype.id().to_owned(), |c| c.id().to_owned());
    let keeps_margin = per_gpu
        .iter()
        .zip(&p.scenario.gpus)
        .all(|(parts, slot)| parts.total_bytes().saturating_add(o.fit_target_bytes()) <= slot.cuda_total_bytes);
    let ngl = o.n_gpu_layers.unwrap_or(offloaded + 1);
    // `{:.2}` of an f64 would bring the float formatter back into the page's
    // first load: `mib_2dp` prints the same digits from the integer bytes.
    // load_tensors counts the output layer: "offloaded {min(ngl, n + 1)}/{n + 1}".
    let all = p.kv_layers.len() as u64 + 1;
    let mut log_lines = vec![format!("offloaded {}/{all} layers to GPU", offloaded + u64::from(output))];
    // load_tensors prints one model buffer per buffer type (CPU_Mapped for
    // the mmap'd weights left on the host).
    // `-rtr` turns mmap off (ik's llama_model_loader): the host weights are
    // read into an allocated `CPU` buffer.
    let host_buffer = if ik::repacks(o) { "CPU" } else { "CPU_Mapped" };
    log_lines.push(format!("{host_buffer} model buffer size = {} MiB", mib_2dp(cpu_weights)));
    for (g, parts) in per_gpu.iter().enumerate().filter(|(g, _)| d.used[*g]) {
        log_lines.push(format!("CUDA{g} model buffer size = {} MiB", mib_2dp(parts.weight_bytes)));
    }
    log_lines.push(format!("n_ctx = {}, n_ctx_seq = {}, n_seq_max = {s}", cells.n_ctx, cells.per_stream));
    log_lines.push(format!(
        "llama_kv_cache: size = {} MiB ({} cells, {} seqs), K ({}), V ({})",
        mib_2dp(kv_total(&kv, cells)),
        cells.of(None),
        s,
        type_name(t.k),
        type_name(t.v)
    ));
    Report {
        n_ctx: ctx,
        parallel: s,
        n_ctx_per_slot: ctx / s,
        n_ubatch: o.ubatch(),
        n_gpu_layers: ngl,
        layers_on_gpu: offloaded,
        output_on_gpu: output,
        output_gpu: d.assignment.output,
        gpu_layers: (0..gpus).map(|g| d.assignment.range(g).len() as u64).collect(),
        gpu_weight_bytes: per_gpu.iter().map(|b| b.weight_bytes).collect(),
        cpu_weight_bytes: cpu_weights,
        cpu_expert_bytes: d.weights.cpu_experts,
        overridden_tensors: d.weights.overridden.clone(),
        overridden_count: d.weights.overridden_count,
        mmproj_bytes: d.mmproj_bytes,
        mmproj_gpu: d.mmproj_gpu,
        cpu_kv_bytes: cpu_kv,
        cpu_state_bytes: cpu_state,
        host_compute_bytes: host_compute,
        host_ram_bytes: cpu_weights.saturating_add(cpu_kv).saturating_add(cpu_state).saturating_add(host_compute),
        host_ram_limit_bytes: host_ram_limit(p, o, &per_gpu.iter().map(GpuBudget::total_bytes).collect::<Vec<_>>()),
        kv_cells: cells.of(None),
        cache_type_k: type_name(t.k),
        cache_type_v: type_name(t.v),
        compute_buffer_bytes: per_gpu.iter().map(|x| x.activation_bytes).max().unwrap_or(0),
        fit_margin_bytes: o.fit_target_bytes(),
        keeps_fit_margin: keeps_margin,
        fit_moves: !keeps_margin && o.runs_fit() && fit::gives_up(o, gpus).is_none(),
        prompt_cut_to: None,
        weights_read_into_ram: ik::repacks(o),
        log_lines,
    }
}

fn kv_total(kv: &[LayerKv], cells: cache::Cells) -> u64 {
    cells.bytes(kv)
}

pub(crate) fn terms(p: &Plan, o: Options, r: &Report) -> EngineTerms {
    EngineTerms {
        kv_cache: (
            if deepseek4(p) {
                format!(
                    "llama.cpp's DeepSeek-V4 cache (llama_kv_cache_dsv4) at start-up, one stream per slot ({} × {} \
                     cells, K only, {}): every layer's {}-token window (its n_ubatch beside it), one entry per 4 or \
                     128 tokens on the compressed layers (padded to 256 cells) with the lightning indexer's keys on \
                     the ratio-4 ones, and the F32 compressor state",
                    r.parallel,
                    thousands(r.kv_cells / r.parallel.max(1)),
                    r.cache_type_k,
                    window(p)
                )
            } else {
                format!(
                "llama.cpp allocates n_ctx = {} tokens ({} slots × {}; {} cells after padding to 256) of K ({}) and V ({}) for the {} GPU layers at start-up{}",
                thousands(r.n_ctx),
                r.parallel,
                thousands(r.n_ctx_per_slot),
                thousands(r.kv_cells),
                r.cache_type_k,
                r.cache_type_v,
                r.layers_on_gpu,
                crate::plan::terms::window_note(p)
                )
            },
            Basis::EngineRule,
        ),
        state: "llama.cpp keeps one F32 state cell per sequence slot",
        activations: match p.model.arch.text.attention {
            crate::arch::AttentionKind::Mla(_) if !heads_cached(p, o) && sparse_attention(p, o) => {
                "llama.cpp compute buffer: MLA's query side, KQ mask, and the sparse attention's indexer mask and scores (glm-dsa.cpp)"
            }
            crate::arch::AttentionKind::Mla(_) if !heads_cached(p, o) => {
                "llama.cpp compute buffer: MLA's query side and KQ mask (deepseek2.cpp)"
            }
            _ if graph::Shape::of(p, &o).is_some() => {
                "llama.cpp compute buffer: ggml-alloc's peak over the graph it reserves for one n_ubatch of tokens (each layer's activations, the KQ masks, the output rows), replayed layer by layer"
            }
            crate::arch::AttentionKind::Mla(_)
            | crate::arch::AttentionKind::Standard { .. }
            | crate::arch::AttentionKind::Compressed(_) => "llama.cpp compute buffer: 4 × n_ubatch × max(1 + 4 × hidden + attention scores without flash attention, hidden + vocab) bytes (Ollama's GraphSize for llama graphs)",
        }
        .into(),
        overhead: crate::plan::terms::tp_comm_note(p),
        own: vec![Term::bytes(
            "llama.cpp CPU weights",
            r.cpu_weight_bytes,
            format!(
                "{} in system memory; {} repeating layers{} offloaded (-ngl {}){}",
                if r.output_on_gpu { "token embedding stays" } else { "token embedding and output head stay" },
                r.layers_on_gpu,
                if r.output_on_gpu { " and the output layer" } else { "" },
                r.n_gpu_layers,
                if r.cpu_expert_bytes > 0 {
                    format!(
                        "; {} of routed experts kept on the CPU (--n-cpu-moe)",
                        format_bytes(r.cpu_expert_bytes, UnitSystem::Binary)
                    )
                } else {
                    String::new()
                }
            ),
            Basis::EngineRule,
        ), Term::bytes(
            "llama.cpp host RAM",
            r.host_ram_bytes,
            format!(
                "CPU weights ({}) + KV cache and state kept on the host + the host compute buffer ({})",
                if r.weights_read_into_ram {
                    "read into allocated memory: ik_llama.cpp's -rtr turns mmap off and repacks them in place, same bytes"
                } else {
                    "the mmap'd pages llama.cpp reads"
                },
                if o.no_gpu_backend {
                    "the whole graph: a build without a GPU backend"
                } else if host::embeddings_input(o) {
                    "token embeddings and the embeddings input F32 × n_ubatch, the KQ masks n_kv × n_ubatch"
                } else {
                    "token embeddings F32 × n_ubatch, the KQ masks n_kv × n_ubatch"
                }
            ),
            Basis::EngineRule,
        )],
    }
}
