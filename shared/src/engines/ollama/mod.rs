//! Ollama (0.30 and later): a front end that starts llama.cpp's
//! `llama-server` for every GGUF model ("Remove CGO engines, use
//! llama-server exclusively for GGML models", ollama/ollama#16031, in
//! v0.30.0). Its memory is llama.cpp's; what Ollama adds is the launch: the
//! defaults it picks and the flags it passes (`startLlamaServer` in
//! llm/llama_server.go, `Scheduler.load` in server/sched.go, v0.33.0-rc2).
//! [`launch`] turns Ollama's settings into those `llama-server` flags, and
//! the plan runs as llama.cpp with them; `fixes.rs` writes Ollama's own
//! command lines (`ollama run`, Modelfile parameters, `ollama serve`
//! environment), and `levers.rs` llama.cpp's levers in Ollama's words for
//! an error that came through its runner; `own.rs` what the Go engine of
//! the releases before 0.30 logs beyond llama.cpp's cache (a hybrid's
//! recurrent checkpoints), for its start-up logs.

mod fixes;
mod knobs;
mod levers;
pub mod own;

pub(crate) use fixes::serve_with;
pub use fixes::{COMMANDS, ollama_command};
pub use knobs::KNOBS;
pub use levers::{LEVERS, Levers, parameter};

use serde::{Deserialize, Serialize};

use super::Plan;
use super::llamacpp::{self, CacheType, FitMode, FlashAttention};
use crate::kv::KvDtype;
use crate::units::{GIB, MIB};

/// Ollama's settings that reach llama.cpp's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `num_ctx` (a request's or Modelfile's `PARAMETER num_ctx`, else
    /// `OLLAMA_CONTEXT_LENGTH`): one request's context; default by the
    /// GPUs' memory ([`default_num_ctx`]), at most the trained context.
    #[serde(default)]
    pub num_ctx: Option<u64>,
    /// `OLLAMA_NUM_PARALLEL` (default 1, envconfig/config.go): requests
    /// served at once, each with its own `num_ctx`.
    #[serde(default = "one")]
    pub num_parallel: u64,
    /// `OLLAMA_KV_CACHE_TYPE`, passed as both `--cache-type-k` and
    /// `--cache-type-v`; default: the scenario's KV dtype ([`cache_type`]).
    #[serde(default)]
    pub kv_cache_type: Option<CacheType>,
    /// `OLLAMA_FLASH_ATTENTION=1|0`; unset: `--flash-attn auto`, which
    /// every GPU of the catalog runs on (`FlashAttentionSupported` in
    /// ml/device.go: CUDA compute 6.0 and later but 7.2, ROCm, Metal, Vulkan).
    #[serde(default)]
    pub flash_attention: Option<FlashAttention>,
    /// `num_gpu`: passed as `-ngl` when set; unset, llama.cpp's `--fit`
    /// places the layers.
    #[serde(default)]
    pub num_gpu: Option<u64>,
    /// `num_batch`: passed as `-b` and `-ub`; unset, Ollama picks 512, 1024
    /// or 2048 by the context and the memory ([`auto_batch`]).
    #[serde(default)]
    pub num_batch: Option<u64>,
    /// `LLAMA_ARG_N_CPU_MOE` in `ollama serve`'s environment: llama-server
    /// reads it as `--n-cpu-moe` (common/arg.cpp `set_env`), and Ollama
    /// passes its environment through (`SetupLlamaServerCommandEnv`).
    #[serde(default)]
    pub n_cpu_moe: u64,
    /// The model has a projector (`--mmproj`, from its Modelfile).
    #[serde(default)]
    pub mmproj: bool,
    /// The host's RAM, when given (not an Ollama setting).
    #[serde(default)]
    pub host_ram_bytes: Option<u64>,
}

fn one() -> u64 {
    1
}

impl Default for Options {
    fn default() -> Self {
        Self {
            num_ctx: None,
            num_parallel: 1,
            kv_cache_type: None,
            flash_attention: None,
            num_gpu: None,
            num_batch: None,
            n_cpu_moe: 0,
            mmproj: false,
            host_ram_bytes: None,
        }
    }
}

/// The architectures Ollama serves one request at a time whatever
/// `OLLAMA_NUM_PARALLEL` says (server/sched.go `load`, ollama/ollama#4165),
/// compared without `_` so that transformers' `model_type` (`qwen3_next`)
/// and GGUF's `general.architecture` (`qwen3next`) both match.
const SERIAL_ARCHITECTURES: &[&str] = &[
    "mllama",
    "qwen3vl",
    "qwen3vlmoe",
    "qwen35",
    "qwen35moe",
    "qwen3next",
    "lfm2",
    "lfm2moe",
    "nemotronh",
    "nemotronhmoe",
    "nemotronhomni",
];

/// `-np`: `OLLAMA_NUM_PARALLEL`, or 1 for the architectures Ollama keeps serial.
pub fn parallel(p: &Plan, o: Options) -> u64 {
    let t = &p.model.arch.model_type;
    let serial = SERIAL_ARCHITECTURES.iter().any(|a| t.bytes().filter(|&b| b != b'_').eq(a.bytes()));
    if serial { 1 } else { o.num_parallel.max(1) }
}

/// Ollama's default `num_ctx` by the GPUs' total memory (server/routes.go
/// `Serve`, since ollama/ollama 0334ffa, 2026-01-27): 262,144 tokens from
/// 47 GiB, 32,768 from 23 GiB, else 4,096 ("slightly lower thresholds
/// (47/23 GiB vs. 48/24 GiB) to account for small differences").
pub fn default_num_ctx(p: &Plan) -> u64 {
    // `TotalMemory` of every GPU Ollama finds: CUDA's total.
    let total = p.scenario.gpus.iter().fold(0u64, |a, g| a.saturating_add(g.cuda_total_bytes));
    if total >= 47 * GIB {
        262_144
    } else if total >= 23 * GIB {
        32_768
    } else {
        4_096
    }
}

/// One request's context: `num_ctx` (or the default), at most the trained
/// context (`NewLlamaServer` in llm/server.go: "requested context size too
/// large for model").
pub fn num_ctx(p: &Plan, o: Options) -> u64 {
    let n = o.num_ctx.unwrap_or_else(|| default_num_ctx(p)).max(1);
    match p.model.arch.text.max_position_embeddings {
        Some(t) if t > 0 => n.min(t),
        _ => n,
    }
}

/// `llm.PredictServerVRAM` (llm/llama_server.go): the GGUF file's size and
/// an f16 K and V of `ctx` tokens with `hidden / heads` channels per head
/// and the fewest KV heads of any layer. Ollama's own rough figure, used
/// only to pick `num_batch`.
fn predicted_vram(p: &Plan, ctx: u64) -> u64 {
    let t = &p.model.arch.text;
    let layers = p.kv_layers.len() as u64;
    let head_dim = t.hidden_size.checked_div(t.num_heads).unwrap_or(0);
    let kv = 2u64
        .saturating_mul(layers)
        .saturating_mul(t.num_kv_heads.max(1))
        .saturating_mul(head_dim)
        .saturating_mul(ctx)
        .saturating_mul(2);
    p.weights.total.saturating_add(kv)
}

/// Ollama's automatic `num_batch` (server/sched.go
/// `automaticGenerationBatch`): with flash attention off and a CUDA device
/// among the GPUs (`hasCUDADevice`: an NVIDIA GPU, or one known only by its
/// size), 512 (256 past 4,096 tokens when a CUDA GPU has 8 GiB or less,
/// `constrainedCUDAWithoutFlashAttention`); else (ROCm, Metal) 2048 past 32,768
/// tokens, 1024 past 4,096, 512 below, stepping down while the predicted
/// memory is over 60 % (2048) or 75 % (1024) of the GPUs' free memory, or
/// leaves less than the batch's surcharge (2 GiB, 768 MiB) under 80 %.
pub fn auto_batch(p: &Plan, ctx: u64, fa: FlashAttention) -> u64 {
    let gpus = &p.scenario.gpus;
    let cuda = |v: Option<crate::catalog::GpuVendor>| v.is_none_or(|v| v == crate::catalog::GpuVendor::Nvidia);
    if fa == FlashAttention::Off && gpus.iter().any(|g| cuda(g.vendor)) {
        let small = gpus.iter().any(|g| cuda(g.vendor) && g.cuda_total_bytes <= 8 * GIB);
        return if ctx > 4_096 && small { 256 } else { 512 };
    }
    // An idle GPU's free memory: CUDA's total.
    let available = gpus.iter().fold(0u64, |a, g| a.saturating_add(g.cuda_total_bytes));
    let predicted = predicted_vram(p, ctx);
    let fits = |batch: u64| {
        if predicted == 0 || available == 0 {
            return true;
        }
        let threshold = available / 100 * 80;
        let (headroom, surcharge) = if batch >= 2048 { (60, 2 * GIB) } else { (75, 768 * MIB) };
        predicted <= threshold
            && predicted <= available / 100 * headroom
            && surcharge <= threshold.saturating_sub(predicted)
    };
    let mut batch = if ctx > 32_768 {
        2048
    } else if ctx > 4_096 {
        1024
    } else {
        512
    };
    while batch > 512 && !fits(batch) {
        batch /= 2;
    }
    batch
}

/// `appendMMProjArgs` / `shouldDisableMMProjOffload`: the projector stays
/// on the CPU with `num_gpu 0`, with fewer `num_gpu` than the layers and
/// the output, or when a GPU has less than the projector and 1 GiB.
fn mmproj_on_cpu(p: &Plan, o: Options, need: u64) -> bool {
    let layers = p.kv_layers.len() as u64 + 1;
    o.num_gpu.is_some_and(|n| n < layers) || p.scenario.gpus.iter().any(|g| g.cuda_total_bytes < need)
}

/// The K and V cache type: `OLLAMA_KV_CACHE_TYPE`, else the plan's KV
/// dtype where llama-server has it (f32, bf16, q8_0, q4_0), else
/// llama-server's own f16 (the plan's default, `EngineKind::default_kv_dtype`).
/// Ollama passes the variable to llama-server as it is (`NewLlamaServer` in
/// llm/server.go, v0.33.0-rc2); the f16/q8_0/q4_0 filter of
/// `SupportsKVCacheType` (fs/ggml/ggml.go) was the old runner's, called up
/// to v0.24.0 and by nothing from v0.30.0.
pub fn cache_type(o: Options, plan_dtype: KvDtype) -> CacheType {
    o.kv_cache_type.unwrap_or(match CacheType::of(plan_dtype) {
        Some(t @ (CacheType::F32 | CacheType::Bf16 | CacheType::Q8_0 | CacheType::Q4_0)) => t,
        _ => CacheType::F16,
    })
}

/// The `llama-server` flags Ollama starts: `-c num_ctx × parallel -np
/// parallel`, the cache type for K and V, `--flash-attn`, `-b`/`-ub`,
/// `-ngl` when `num_gpu` is set, and `--fit` (on by default) with
/// `LLAMA_ARG_FIT_TARGET` raised by the projector and 1 GiB when it goes
/// to a GPU (`mmprojFitTargetMiB`).
pub fn launch(p: &Plan, o: Options) -> llamacpp::Options {
    let np = parallel(p, o);
    let ctx = num_ctx(p, o).saturating_mul(np);
    let fa = o.flash_attention.unwrap_or(FlashAttention::On);
    // The projector and 1 GiB (`mmprojOffloadHeadroom`).
    let need = if o.mmproj { llamacpp::projector_bytes(p).saturating_add(GIB) } else { 0 };
    let on_cpu = o.mmproj && mmproj_on_cpu(p, o, need);
    let kv = Some(cache_type(o, p.scenario.kv_dtype));
    // `num_batch` is passed as both `-b` and `-ub`.
    let batch = o.num_batch.unwrap_or_else(|| auto_batch(p, ctx, fa));
    let fit_target_mib = if o.mmproj && !on_cpu { need.div_ceil(MIB) } else { llamacpp::FIT_MARGIN_BYTES / MIB };
    llamacpp::Options {
        n_ctx: Some(ctx),
        n_gpu_layers: o.num_gpu,
        parallel: Some(np),
        n_ubatch: batch,
        n_batch: batch,
        flash_attention: fa,
        cache_type_k: kv,
        cache_type_v: kv,
        n_cpu_moe: o.n_cpu_moe,
        mmproj: o.mmproj,
        no_mmproj_offload: on_cpu,
        fit: FitMode::On,
        fit_target_mib,
        host_ram_bytes: o.host_ram_bytes,
        ..llamacpp::Options::default()
    }
}

/// `OLLAMA_FLASH_ATTENTION` as a person writes it: `auto` (unset, Ollama
/// chooses by model and GPU) or llama.cpp's `-fa` values. One parser for
/// the CLI and links.
pub fn parse_flash_attention(s: &str) -> Result<Option<FlashAttention>, String> {
    if s.trim().eq_ignore_ascii_case("auto") { Ok(None) } else { FlashAttention::parse(s).map(Some) }
}

/// Ollama's checks of its settings (the ranges llama-server accepts); it
/// splits layers as llama.cpp does, never tensors.
pub(crate) fn check_knobs(o: Options, tp: u64) -> Result<(), String> {
    if tp > 1 {
        return Err("Ollama splits layers, not tensors: use several GPUs without --tp".into());
    }
    if !(1..=4096).contains(&o.num_parallel) {
        return Err("OLLAMA_NUM_PARALLEL must be between 1 and 4096".into());
    }
    if o.num_batch.is_some_and(|b| !(1..=65_536).contains(&b)) {
        return Err("num_batch must be between 1 and 65536".into());
    }
    if o.num_ctx == Some(0) {
        return Err("num_ctx must be at least 1".into());
    }
    Ok(())
}

/// What Ollama does with the plan's requests that its launch does not
/// hold: more at once than `OLLAMA_NUM_PARALLEL` queue (`Scheduler`), and a
/// longer one than `num_ctx` is cut (`completionPromptForRequest`: the
/// prompt is truncated, generation shifts the context).
pub(crate) fn warnings(p: &Plan, o: Options) -> Vec<String> {
    let s = &p.scenario;
    let (np, ctx) = (parallel(p, o), num_ctx(p, o));
    let mut out = Vec::new();
    if s.concurrency > np {
        out.push(format!("Ollama serves {np} request(s) at once (OLLAMA_NUM_PARALLEL): the other requests wait"));
    }
    if s.sequence_tokens() > ctx {
        out.push(format!(
            "a request of {} tokens is longer than num_ctx {ctx}: Ollama cuts the prompt (PARAMETER num_ctx to keep it)",
            s.sequence_tokens()
        ));
    }
    out
}
