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

mod buffers;
pub mod launch;
mod llamacpp;
mod logged_model;
mod reconcile;
mod sglang;
mod vllm;
mod whatif;

pub use buffers::{BufferCheck, llamacpp_buffers};
pub use launch::{Launch, LaunchFlag, LaunchModel, Launcher, read_command_line};
pub use llamacpp::layer_split as llamacpp_layer_split;
pub use logged_model::{LoggedModel, file_type_format, model as logged_model};
pub use reconcile::{Amount, Row, SUGGESTION_SPARE_BYTES, reconcile};
pub use whatif::{WhatIf, WhatIfs, what_if, what_ifs};

use serde::Serialize;

use crate::engines::llamacpp::{CacheType, DEFAULT_N_UBATCH, FlashAttention};
use crate::engines::{Engine, EngineKind};
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
    /// CUDA-graph memory: estimated before the KV cache is sized (vLLM
    /// ≥ 0.18 `Estimated CUDA graph memory`) or measured after capture (vLLM
    /// `Graph capturing finished … took`, SGLang `Capture cuda graph end …
    /// mem usage`).
    CudaGraphs { bytes: u64, estimated: bool },
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
    /// SGLang's KV pool: tokens and the K and V bytes (MLA: all in `k_bytes`).
    KvPool { tokens: u64, k_bytes: u64, v_bytes: u64 },
    /// SGLang's `max_total_num_tokens`.
    MaxTotalTokens { tokens: u64 },
    /// Free device memory SGLang reports after a stage (`avail mem=`).
    Free { after: Stage, bytes: u64 },
    /// A llama.cpp buffer on one device or the host.
    Buffer { buffer: Buffer, bytes: u64 },
    /// llama.cpp's KV cache summary: its total and the K and V parts.
    KvSummary { bytes: u64, k_bytes: u64, v_bytes: u64, cells: Option<u64>, layers: Option<u64> },
    /// llama.cpp `offloaded N/M layers to GPU`.
    Offloaded { layers: u64, of: u64 },
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
            Figure::CudaGraphs { bytes, estimated: true } => {
                format!("CUDA graphs (estimated before the KV cache): {}", b(bytes))
            }
            Figure::CudaGraphs { bytes, estimated: false } => format!("CUDA graphs (captured): {}", b(bytes)),
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
            Figure::KvPool { tokens, k_bytes, v_bytes } => format!(
                "KV pool: {} tokens, {} (K {}, V {})",
                thousands(tokens),
                b(k_bytes.saturating_add(v_bytes)),
                b(k_bytes),
                b(v_bytes)
            ),
            Figure::MaxTotalTokens { tokens } => format!("max_total_num_tokens: {}", thousands(tokens)),
            Figure::Free { after, bytes } => format!(
                "free after {}: {}",
                match after {
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
            Figure::Offloaded { layers, of } => format!("layers offloaded to the GPU: {layers} of {of}"),
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
    pub model: Option<String>,
    pub dtype: Option<String>,
    pub quantization: Option<String>,
    pub kv_cache_dtype: Option<String>,
    pub tensor_parallel: Option<u64>,
    pub pipeline_parallel: Option<u64>,
    /// vLLM `max_seq_len`, SGLang `context_len`.
    pub max_model_len: Option<u64>,
    pub enforce_eager: Option<bool>,
    /// vLLM `max_num_batched_tokens` (`Chunked prefill is enabled with
    /// max_num_batched_tokens=N`, the non-default args) and `max_num_seqs`.
    pub max_num_batched_tokens: Option<u64>,
    pub max_num_seqs: Option<u64>,
    /// The top-k/top-p sampler vLLM set up (its `Using FlashInfer …` or
    /// `Falling back to the PyTorch-native …` line).
    pub sampler: Option<crate::engines::vllm::Sampler>,
    /// The MXFP4 MoE kernel vLLM took (`Using Marlin backend`, …).
    pub mxfp4_kernel: Option<crate::engines::vllm::Mxfp4Kernel>,
    /// SGLang `mem_fraction_static` in thousandths.
    pub mem_fraction_static_permille: Option<u64>,
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
}

impl LoggedConfig {
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

/// The engine of `planned` as the log says it ran: the log's engine (with
/// its newest rules) when the plan runs another, the rules of the release
/// the log names, and the knobs the plan leaves at their defaults set to
/// the logged ones (`gpu_memory_utilization`, `max_model_len`,
/// `max_num_batched_tokens`, `max_num_seqs`; SGLang's
/// `mem_fraction_static` and context length). Also what was taken, in
/// words, for the reader. TP, PP and the GPUs stay the plan's.
pub fn logged_engine(log: &StartupLog, planned: Engine) -> (Engine, Vec<String>) {
    let mut config = log.config.clone();
    config.gpu_memory_utilization_permille = config.gpu_memory_utilization_permille.or_else(|| {
        log.first(|f| match f {
            Figure::Utilization { permille } => Some(*permille),
            _ => None,
        })
        .map(|(_, p)| p)
    });
    // `offloaded N/M layers to GPU` (src/llama-model.cpp `load_tensors`) is
    // the `-ngl` a partial offload ran with; a full one is the default.
    if config.n_gpu_layers.is_none()
        && let Some((_, (layers, of))) = log.first(|f| match f {
            Figure::Offloaded { layers, of } => Some((*layers, *of)),
            _ => None,
        })
        && layers < of
    {
        config.n_gpu_layers = Some(layers);
    }
    configured_engine(log.engine, &config, planned)
}

/// The engine of `planned` as a launch configuration (a start-up log's or a
/// command line's) says it runs: [`logged_engine`] without the log.
pub fn configured_engine(ran: LogEngine, c: &LoggedConfig, planned: Engine) -> (Engine, Vec<String>) {
    let mut taken = Vec::new();
    let kind = match ran {
        LogEngine::Vllm => EngineKind::Vllm,
        LogEngine::Sglang => EngineKind::Sglang,
        LogEngine::LlamaCpp => EngineKind::LlamaCpp,
    };
    let mut engine = planned;
    if planned.kind() != kind {
        engine = kind.with_defaults();
        taken.push(format!("engine {}", kind.name()));
    }
    let utilization = c.gpu_memory_utilization_permille.map(|p| p as f64 / 1000.0);
    match &mut engine {
        Engine::Vllm(o) => {
            if let Some(v) =
                c.version.as_deref().and_then(crate::engines::vllm::Version::for_release).filter(|v| *v != o.version)
            {
                o.version = v;
                taken.push(format!("vLLM rules {} (the log's {})", v.id(), c.version.as_deref().unwrap_or("")));
            }
            if let Some(u) = utilization.filter(|_| o.gpu_memory_utilization.is_none()) {
                o.gpu_memory_utilization = Some(u);
                taken.push(format!("gpu_memory_utilization {u}"));
            }
            let mut fill = |slot: &mut Option<u64>, logged: Option<u64>, name: &str| {
                if let Some(v) = logged.filter(|_| slot.is_none()) {
                    *slot = Some(v);
                    taken.push(format!("{name} {v}"));
                }
            };
            fill(&mut o.max_model_len, c.max_model_len, "max_model_len");
            fill(&mut o.max_num_batched_tokens, c.max_num_batched_tokens, "max_num_batched_tokens");
            fill(&mut o.max_num_seqs, c.max_num_seqs, "max_num_seqs");
            if let Some(sampler) = c.sampler.filter(|_| o.sampler.is_none()) {
                o.sampler = Some(sampler);
                taken.push(format!("the {} sampler", sampler.id()));
            }
            if let Some(kernel) = c.mxfp4_kernel.filter(|_| o.mxfp4_kernel.is_none()) {
                o.mxfp4_kernel = Some(kernel);
                taken.push(format!("the {} MXFP4 kernel", kernel.id()));
            }
        }
        Engine::Sglang(o) => {
            if let Some(f) = c.mem_fraction_static_permille.filter(|_| o.mem_fraction_static.is_none()) {
                o.mem_fraction_static = Some(f as f64 / 1000.0);
                taken.push(format!("mem_fraction_static {}", f as f64 / 1000.0));
            }
            if let Some(len) = c.max_model_len.filter(|_| o.context_length.is_none()) {
                o.context_length = Some(len);
                taken.push(format!("context length {len}"));
            }
        }
        Engine::LlamaCpp(o) => {
            if let Some(n) = c.n_ctx.filter(|_| o.n_ctx.is_none()) {
                o.n_ctx = Some(n);
                taken.push(format!("n_ctx {n}"));
            }
            // The plan's defaults (flash attention on, `-ub 512`, the
            // model's cache type) give way to what the log ran with.
            if c.flash_attention() == Some(FlashAttention::Off) && o.flash_attention == FlashAttention::On {
                o.flash_attention = FlashAttention::Off;
                taken.push("flash attention off".into());
            }
            if let Some(n) = c.n_ubatch.filter(|&n| n != o.n_ubatch && o.n_ubatch == DEFAULT_N_UBATCH) {
                o.n_ubatch = n;
                taken.push(format!("n_ubatch {n}"));
            }
            if let Some(k) =
                c.cache_type_k.as_deref().and_then(|t| CacheType::parse(t).ok()).filter(|_| o.cache_type_k.is_none())
            {
                o.cache_type_k = Some(k);
                taken.push(format!("K cache {}", k.id()));
            }
            if let Some(v) =
                c.cache_type_v.as_deref().and_then(|t| CacheType::parse(t).ok()).filter(|_| o.cache_type_v.is_none())
            {
                o.cache_type_v = Some(v);
                taken.push(format!("V cache {}", v.id()));
            }
            launched_placement(c, o, &mut taken);
        }
        // A log is llama.cpp's (Ollama's runner prints llama-server's
        // lines), so a plan of Ollama is rebuilt as the llama.cpp it ran.
        Engine::Transformers(_) | Engine::Ollama(_) => {}
    }
    (engine, taken)
}

/// The llama.cpp flags only a command line names: slots, layers on the GPU,
/// the split and the tensors kept on the CPU. A value the engine's own
/// parser refuses is left out.
fn launched_placement(c: &LoggedConfig, o: &mut crate::engines::llamacpp::Options, taken: &mut Vec<String>) {
    use crate::engines::llamacpp::{SplitMode, TensorOverrides, TensorSplit};
    let mut fill = |slot: &mut Option<u64>, given: Option<u64>, name: &str| {
        if let Some(v) = given.filter(|_| slot.is_none()) {
            *slot = Some(v);
            taken.push(format!("{name} {v}"));
        }
    };
    fill(&mut o.parallel, c.parallel, "-np");
    fill(&mut o.n_gpu_layers, c.n_gpu_layers, "-ngl");
    if let Some(n) = c.n_cpu_moe.filter(|_| o.n_cpu_moe == 0) {
        o.n_cpu_moe = n;
        taken.push(format!("--n-cpu-moe {n}"));
    }
    if let Some(split) = c.tensor_split.as_deref().and_then(|t| TensorSplit::parse(t).ok()) {
        o.tensor_split = split;
        taken.push(format!("-ts {}", o.tensor_split.text()));
    }
    if let Some(rules) = c.override_tensor.as_deref().and_then(|t| TensorOverrides::parse(t).ok()) {
        o.tensor_overrides = rules;
        taken.push(format!("-ot {}", o.tensor_overrides.as_str()));
    }
    if let Some(mode) = c.split_mode.as_deref().and_then(|m| SplitMode::parse(m).ok()) {
        o.split_mode = mode;
        taken.push(format!("-sm {}", mode.id()));
    }
    if let Some(g) = c.main_gpu.and_then(|g| u16::try_from(g).ok()) {
        o.main_gpu = g;
        taken.push(format!("-mg {g}"));
    }
    for (on, slot, name) in [
        (c.no_kv_offload, &mut o.no_kv_offload, "-nkvo"),
        (c.kv_unified, &mut o.kv_unified, "--kv-unified"),
        (c.swa_full, &mut o.swa_full, "--swa-full"),
    ] {
        if on == Some(true) && !*slot {
            *slot = true;
            taken.push(name.into());
        }
    }
}

/// Reads the memory lines of a start-up log; `None` when the text has none
/// of any engine's.
pub fn read(text: &str) -> Option<StartupLog> {
    let lines: Vec<(usize, String)> = text.lines().enumerate().map(|(i, l)| (i + 1, plain(l))).collect();
    let candidates = [
        (LogEngine::Vllm, vllm::read(&lines)),
        (LogEngine::Sglang, sglang::read(&lines)),
        (LogEngine::LlamaCpp, llamacpp::read(&lines)),
    ];
    candidates.into_iter().filter(|(_, (_, facts))| !facts.is_empty()).max_by_key(|(_, (_, facts))| facts.len()).map(
        |(engine, (config, facts))| {
            let model = if engine == LogEngine::LlamaCpp { logged_model::read(&lines) } else { None };
            StartupLog { engine, config, facts, model }
        },
    )
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

/// A decimal such as `0.90` or `10.79` in thousandths (`hundredths: false`)
/// or hundredths, rounded; at most 6 digits after the point.
fn fixed(text: &str, per_unit: u64) -> Option<u64> {
    let t = text.trim_start();
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (whole, frac) = match t[..end].split_once('.') {
        Some((w, f)) => (w, f),
        None => (&t[..end], ""),
    };
    if whole.is_empty() && frac.is_empty() || frac.len() > 6 {
        return None;
    }
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
        assert_eq!(size(" 53.31 GB", true), Some(5331 * (1 << 30) / 100));
        assert_eq!(size("1.95 MiB", false), Some(2_044_723));
    }

    #[test]
    fn text_without_startup_lines_is_not_a_log() {
        assert_eq!(read("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"), None);
        assert_eq!(read(""), None);
    }
}
