//! llama.cpp's settings as a plan holds them, their defaults (common/common.h
//! as vendored by llama-cpp-python 0.3.36) and their checks; `knobs.rs`
//! declares them for links, the CLI and the page.

use serde::{Deserialize, Serialize};

use super::{Buffer, CacheType, SplitMode, TensorOverrides, TensorSplit};
use crate::units::MIB;

/// The default headroom llama.cpp's `--fit` keeps free on each device
/// (ggml-org/llama.cpp#16653; common/common.h `fit_params_target`, 1024 MiB
/// per device, as vendored by llama-cpp-python 0.3.36).
pub const FIT_MARGIN_BYTES: u64 = 1024 * MIB;

/// `--fit on|off`: whether llama.cpp fits the flags left at their defaults
/// to free memory before loading (common/common.h `fit_params = true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitMode {
    #[default]
    On,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlashAttention {
    /// `-fa on` (the default `auto` picks it on CUDA): no KQ matrix.
    #[default]
    On,
    /// `-fa off`: the compute buffer holds `n_ctx × n_ubatch × heads` scores.
    Off,
}

impl FitMode {
    /// `--fit`'s value and the link's `fit=`.
    pub fn id(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            _ => Err("use on or off".into()),
        }
    }
}

impl FlashAttention {
    /// `-fa`'s value and the link's `fa=`.
    pub fn id(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
        }
    }

    /// `-fa on|off|auto` (common/arg.cpp; `auto` turns it on wherever the
    /// backend supports it, as CUDA does), also `1`/`0`. One parser for the
    /// CLI and links.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "on" | "auto" | "1" => Ok(Self::On),
            "off" | "0" => Ok(Self::Off),
            _ => Err("use on, off or auto".into()),
        }
    }
}

/// Which llama.cpp a plan runs: ggml-org's, or ikawrakow's fork
/// ik_llama.cpp (github.com/ikawrakow/ik_llama.cpp), whose memory flags
/// (`-mla`, `-amb`, `-fmoe`, `-rtr`) and defaults are its own. Its rules
/// are in `ik.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fork {
    #[default]
    Mainline,
    Ik,
}

impl Fork {
    /// The link's `fork=` and `--llamacpp-fork`'s value.
    pub fn id(self) -> &'static str {
        match self {
            Self::Mainline => "mainline",
            Self::Ik => "ik",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "mainline" | "llama.cpp" => Ok(Self::Mainline),
            "ik" | "ik_llama.cpp" | "ik_llama" => Ok(Self::Ik),
            _ => Err("use mainline or ik".into()),
        }
    }

    /// The program's name in words.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mainline => "llama.cpp",
            Self::Ik => "ik_llama.cpp",
        }
    }
}

/// `-ub` when none is given (common/common.h `n_ubatch = 512`).
pub const DEFAULT_N_UBATCH: u64 = 512;
/// `-b` when none is given (common/common.h `n_batch = 2048`).
pub const DEFAULT_N_BATCH: u64 = 2048;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `-c`: total context; default prompt + new tokens for every slot.
    pub n_ctx: Option<u64>,
    /// `-ngl`; default: every layer and the output head.
    pub n_gpu_layers: Option<u64>,
    /// `-np`; default: the scenario's concurrency.
    pub parallel: Option<u64>,
    /// `-ub`: the physical batch the compute buffer is sized for, at most
    /// `-b` ([`Options::ubatch`]).
    pub n_ubatch: u64,
    /// `-b/--batch-size`: the logical batch.
    #[serde(default = "default_n_batch", skip_serializing_if = "is_default_n_batch")]
    pub n_batch: u64,
    pub flash_attention: FlashAttention,
    /// `-ctk/--cache-type-k`; default: the scenario's KV dtype.
    #[serde(default)]
    pub cache_type_k: Option<CacheType>,
    /// `-ctv/--cache-type-v`; default: the key type.
    #[serde(default)]
    pub cache_type_v: Option<CacheType>,
    /// `--n-cpu-moe N`: the routed experts of the first N layers stay in
    /// host memory (`--cpu-moe`: N ≥ the layer count, every layer).
    #[serde(default)]
    pub n_cpu_moe: u64,
    /// `-nkvo/--no-kv-offload`: the KV cache (and recurrent state) stays in
    /// host memory (`offload_kqv = false`, src/llama-kv-cache.cpp puts
    /// every layer's cache in the CPU buffer type).
    #[serde(default)]
    pub no_kv_offload: bool,
    /// `--kv-unified`: one cache stream shared by all slots (default off,
    /// common/common.h `kv_unified = false`; `-np auto` turns it on).
    #[serde(default)]
    pub kv_unified: bool,
    /// `--swa-full`: sliding-window layers keep the whole context.
    #[serde(default)]
    pub swa_full: bool,
    /// `-ot/--override-tensor PATTERN=BUFFER,…`: tensors whose name a
    /// pattern matches go to that buffer (the first matching rule wins).
    #[serde(default)]
    pub tensor_overrides: TensorOverrides,
    /// `-ts/--tensor-split`: a proportion of the offloaded layers per GPU
    /// (none: by each GPU's free memory).
    #[serde(default)]
    pub tensor_split: TensorSplit,
    /// `-sm/--split-mode`.
    #[serde(default)]
    pub split_mode: SplitMode,
    /// `-mg/--main-gpu`: the GPU `--split-mode none` uses.
    #[serde(default)]
    pub main_gpu: u16,
    /// `--mmproj`: the model's multimodal projector is loaded too.
    #[serde(default)]
    pub mmproj: bool,
    /// `--no-mmproj-offload`: the projector stays on the CPU.
    #[serde(default)]
    pub no_mmproj_offload: bool,
    /// `--fit on|off`.
    #[serde(default)]
    pub fit: FitMode,
    /// `--fit-target MiB`: what `--fit` keeps free on each GPU.
    #[serde(default = "default_fit_target_mib")]
    pub fit_target_mib: u64,
    /// The host's RAM, when given: what the plan needs there is checked
    /// against it (not a llama.cpp flag).
    #[serde(default)]
    pub host_ram_bytes: Option<u64>,
    /// The llama.cpp build whose rules apply (a pasted log names it;
    /// `None`: the newest this tool knows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<u64>,
    /// Which llama.cpp: mainline, or ik_llama.cpp (`build` is then its
    /// build number, `git rev-list --count` of ikawrakow/ik_llama.cpp).
    #[serde(default, skip_serializing_if = "is_mainline")]
    pub fork: Fork,
    /// ik_llama.cpp `-mla N/--mla-use N` (0–3): how an MLA model's cache is
    /// laid out and attention computed; `None`: the build's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mla: Option<u8>,
    /// ik_llama.cpp `-amb N/--attention-max-batch N`: MiB one attention
    /// intermediate may take (0: no cap); `None`: the build's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attn_max_batch_mib: Option<u64>,
    /// ik_llama.cpp `-fmoe/--fused-moe` (`-no-fmoe` where it is the
    /// default): one op for the experts' up and gate; `None`: the build's
    /// default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused_moe: Option<bool>,
    /// ik_llama.cpp `-rtr/--run-time-repack`: host weights repacked at load,
    /// which turns mmap off.
    #[serde(default, skip_serializing_if = "is_false")]
    pub run_time_repack: bool,
    /// A build with an ACCEL backend (`GGML_BLAS`), which
    /// src/llama-context.cpp@1d36b367:131 puts between the GPUs and the CPU:
    /// a log shows its `CPU` compute buffer beside the CPU backend's, of the
    /// first GPU's `_Host` type (:199). It keeps host weights' `MUL_MAT`s.
    #[serde(default, skip_serializing_if = "is_false")]
    pub blas: bool,
    /// A build without a GPU backend (a log that names no device and prints
    /// only the CPU backend's buffers): the CPU backend runs the whole graph,
    /// so its compute buffer is the graph's (b5273's Qwen3-30B-A3B:
    /// `CPU compute buffer size = 300.75 MiB`, the figure b7342's A100 run
    /// of the same shapes prints for its GPU), and no GPU stages anything.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_gpu_backend: bool,
    /// The graph is the one Ollama's own Go engine reserves (`ollama runner
    /// --ollama-engine`, v0.5 – v0.29; `ollama::own`), read from its log.
    /// Its whole batch as one graph is `n_ubatch` = `n_batch` (set with it);
    /// this flag itself only gives the CPU's compute buffer with every layer
    /// on the GPUs (`host.rs`): its other differences are not modelled. Not
    /// a llama.cpp flag.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ollama_engine: bool,
}

fn is_mainline(f: &Fork) -> bool {
    *f == Fork::Mainline
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The first build that reserves the KQ mask in F16 on the host when flash
/// attention is on (ggml-org/llama.cpp#23764, commit 031ddb2e0, b9410);
/// builds before reserve it in F32 and cast it for the GPU.
pub const F16_MASK_BUILD: u64 = 9410;

/// The first build that offloads every layer and runs flash attention by
/// default (ggml-org/llama.cpp#15434, e81b8e4b7, b6325: `n_gpu_layers` 0 →
/// 999, flash attention off → `auto`, and `-fa` from a bare switch to
/// `on|off|auto`). A plan on an older build must ask for both.
pub const OFFLOAD_DEFAULT_BUILD: u64 = 6325;

/// The first build that offloads the output layer first
/// (ggml-org/llama.cpp#18148 "llama: offload output layer to GPU first",
/// 57c1e0564, b7467: `i_gpu_start` from `max(n_layer - ngl, 0)` to
/// `max(n_layer + 1 - ngl, 0)`; its parent 9cff4cc5 = b7466 keeps the old
/// rule). Build numbers by `git rev-list --count` in a full-history fork,
/// checked against b7407, b7446, b7470, b7475 and b7832.
pub const OUTPUT_FIRST_BUILD: u64 = 7467;

/// The first build with `--fit` (on by default; #16653, b1f3a6e5d, b7407):
/// older builds have no such flag.
pub const FIT_BUILD: u64 = 7407;

/// The first build that caches an MLA model's latent (#12801 "llama :
/// DeepSeek V2/V3 MLA implementation", daa42288, b5137: `is_mla` when the
/// GGUF has `key_length_mla`). Before it `deepseek2` ran as multi-head
/// attention with every head's K (`qk_nope + qk_rope`) and V (`v_head_dim`)
/// cached: the b4905 DeepSeek-R1 log's `K (f16): 5856.00 MiB, V (f16):
/// 3904.00 MiB` at n_ctx 2048, 61 layers, 128 heads of 192 and 128.
pub const MLA_BUILD: u64 = 5137;

/// The first build whose MLA models (DeepSeek V2/V3, Kimi K2: `deepseek2`
/// GGUFs with `key_length_mla`) keep no V cache (ggml-org/llama.cpp#19067
/// "kv-cache : support V-less cache", d9c6ce46f, b7832: `has_v = !is_mla`
/// in src/llama-kv-cache.cpp). From MLA's arrival (#12801, b5137) to b7831
/// the cache also holds V, `kv_lora_rank` per token and layer in type_v
/// (the b5331 log: `K (f16): 1098.00 MiB, V (f16): 976.00 MiB`; #18986,
/// b7812, only read V as a view of K). Build numbers are
/// `git rev-list --count` of master, checked against six logged pairs.
pub const VLESS_MLA_BUILD: u64 = 7832;

fn default_n_batch() -> u64 {
    DEFAULT_N_BATCH
}

fn is_default_n_batch(n: &u64) -> bool {
    *n == DEFAULT_N_BATCH
}

fn default_fit_target_mib() -> u64 {
    FIT_MARGIN_BYTES / MIB
}

impl Default for Options {
    fn default() -> Self {
        Self {
            n_ctx: None,
            n_gpu_layers: None,
            parallel: None,
            n_ubatch: DEFAULT_N_UBATCH,
            n_batch: DEFAULT_N_BATCH,
            flash_attention: FlashAttention::On,
            cache_type_k: None,
            cache_type_v: None,
            n_cpu_moe: 0,
            no_kv_offload: false,
            kv_unified: false,
            swa_full: false,
            tensor_overrides: TensorOverrides::default(),
            tensor_split: TensorSplit::default(),
            split_mode: SplitMode::Layer,
            main_gpu: 0,
            mmproj: false,
            no_mmproj_offload: false,
            fit: FitMode::On,
            fit_target_mib: default_fit_target_mib(),
            host_ram_bytes: None,
            build: None,
            fork: Fork::Mainline,
            mla: None,
            attn_max_batch_mib: None,
            fused_moe: None,
            run_time_repack: false,
            blas: false,
            no_gpu_backend: false,
            ollama_engine: false,
        }
    }
}

impl Options {
    /// Bytes per element of the KQ mask the graph's inputs hold: F16 with
    /// flash attention from [`F16_MASK_BUILD`], else F32.
    pub fn mask_bytes(&self) -> u64 {
        let from = match self.fork {
            Fork::Mainline => F16_MASK_BUILD,
            Fork::Ik => super::ik::F16_MASK_BUILD,
        };
        let f16 = self.flash_attention == FlashAttention::On && self.build.is_none_or(|b| b >= from);
        if f16 { 2 } else { 4 }
    }

    /// The physical batch llama.cpp runs: `-ub`, at most `-b`
    /// (src/llama-context.cpp: `n_ubatch = min(n_batch, n_ubatch)`).
    pub fn ubatch(&self) -> u64 {
        self.n_ubatch.min(self.n_batch)
    }

    /// What `--fit` keeps free on each GPU.
    pub fn fit_target_bytes(&self) -> u64 {
        self.fit_target_mib.saturating_mul(MIB)
    }

    /// Whether this llama.cpp has mainline's `--fit on|off` (from
    /// [`FIT_BUILD`]). ik_llama.cpp's `--fit` is another thing: a bare
    /// switch, off unless given (common/common.h@8337e4cd3 `bool fit =
    /// false`), that only moves MoE tensors (#1501); it is not replayed here.
    pub fn has_fit(&self) -> bool {
        self.fork == Fork::Mainline && self.build.is_none_or(|b| b >= FIT_BUILD)
    }

    /// Whether `--fit` changes the plan before loading: a build that has it
    /// ([`Options::has_fit`]), not turned off.
    pub fn runs_fit(&self) -> bool {
        self.has_fit() && self.fit == FitMode::On
    }
}

/// llama.cpp's checks of its knobs, on `gpus` GPUs.
pub(crate) fn check_knobs(o: Options, tp: u64, gpus: usize) -> Result<(), String> {
    if tp > 1 {
        return Err("llama.cpp splits layers, not tensors: use several GPUs without --tp".into());
    }
    // src/llama.cpp: "invalid value for main_gpu" past the devices.
    if usize::from(o.main_gpu) >= gpus {
        return Err(format!("--main-gpu {} names a GPU the plan does not have ({gpus} GPU(s))", o.main_gpu));
    }
    if let Some((_, Buffer::Gpu(g))) =
        o.tensor_overrides.rules().find(|(_, b)| matches!(b, Buffer::Gpu(g) if *g >= gpus))
    {
        // common/arg.cpp: "unknown buffer type" for a device that is not there.
        return Err(format!("an -ot rule names GPU {g}, which the plan does not have ({gpus} GPU(s))"));
    }
    // src/llama.cpp: `--split-mode none` keeps only the main GPU's device, so
    // no other GPU's buffer type exists for an `-ot` rule to name.
    if o.split_mode == SplitMode::None
        && let Some((_, Buffer::Gpu(g))) =
            o.tensor_overrides.rules().find(|(_, b)| matches!(b, Buffer::Gpu(g) if *g != usize::from(o.main_gpu)))
    {
        return Err(format!("with --split-mode none only GPU {} is used: an -ot rule names GPU {g}", o.main_gpu));
    }
    if o.tensor_split.is_set() && o.tensor_split.ratios().iter().take(gpus).all(|&r| r == 0.0) {
        return Err(format!("--tensor-split {} gives the plan's {gpus} GPU(s) nothing", o.tensor_split.text()));
    }
    if o.parallel.is_some_and(|n| n == 0 || n > 4096) {
        return Err("parallel must be between 1 and 4096".into());
    }
    if !(1..=65_536).contains(&o.n_ubatch) {
        return Err("n_ubatch must be between 1 and 65536".into());
    }
    if o.n_batch == 0 {
        return Err("n_batch must be at least 1".into());
    }
    super::ik::check(o)
}
