//! An engine's command line read into the launch it names: the engine, the
//! model and the flags Headroom models, as the same [`LoggedConfig`] a
//! start-up log gives (so [`super::configured_engine`] turns either into the
//! plan's engine). The agent reads a GPU process's `/proc/<pid>/cmdline`
//! with it; the llama.cpp log reader reads Ollama's `starting llama server
//! cmd="…"` line with it.
//!
//! Only the flags in each engine's table are read; every other argument is
//! dropped unread, so an `--api-key sk-…` or a token never leaves here. A
//! value is kept only once it parses as what its flag takes (a number, a
//! fraction, a dtype word); a model that is a path keeps its last component
//! for display ([`LaunchModel::name`]).
//!
//! Flag names: vLLM 0.10 – 0.11 `vllm/engine/arg_utils.py`
//! (`EngineArgs.add_cli_args`; `vllm serve MODEL` from
//! `vllm/entrypoints/cli/serve.py`, `--model` for
//! `python -m vllm.entrypoints.openai.api_server`; `FlexibleArgumentParser`
//! reads `--max_model_len` as `--max-model-len`), SGLang 0.5
//! `python/sglang/srt/server_args.py` (`ServerArgs.add_cli_args`),
//! llama.cpp `common/arg.cpp` (b6700: `-fa on|off|auto`, earlier a bare
//! `-fa`), Ollama 0.5 – 0.11 `llm/server.go` (the runner's flags:
//! `runner --model PATH --ctx-size N --batch-size N --n-gpu-layers N
//! --parallel N [--flash-attn] [--kv-cache-type T] [--tensor-split a,b]`;
//! Go's `flag` reads `-flag` and `--flag` alike).

use serde::Serialize;

use super::{LogEngine, LoggedConfig, fixed};

/// Arguments read at most (the agent also caps the command line's bytes).
pub const MAX_ARGS: usize = 4096;
/// The longest value kept (an `-ot` list is the longest flag read).
pub const MAX_VALUE_CHARS: usize = 1024;

/// The program a command line starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Launcher {
    /// `vllm serve`, `python -m vllm.entrypoints.openai.api_server`.
    Vllm,
    /// `python -m sglang.launch_server`.
    Sglang,
    /// `llama-server`.
    LlamaServer,
    /// `ollama runner`: the llama-server Ollama starts per model.
    OllamaRunner,
}

impl Launcher {
    /// The engine whose rules run it: Ollama's runner is llama.cpp.
    pub fn engine(self) -> LogEngine {
        match self {
            Launcher::Vllm => LogEngine::Vllm,
            Launcher::Sglang => LogEngine::Sglang,
            Launcher::LlamaServer | Launcher::OllamaRunner => LogEngine::LlamaCpp,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Launcher::Vllm => "vLLM",
            Launcher::Sglang => "SGLang",
            Launcher::LlamaServer => "llama.cpp",
            Launcher::OllamaRunner => "Ollama",
        }
    }
}

/// The model a launch names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchModel {
    /// A Hugging Face repository, `ORG/NAME` (vLLM and SGLang fetch it into
    /// the hub cache; llama-server's `-hf ORG/NAME[:QUANT]`).
    Hub(String),
    /// A path on the host: a folder, a `.gguf` file, an Ollama blob. Kept
    /// for the agent to read its config or header; never sent.
    Path(String),
}

impl LaunchModel {
    /// What identifies the model without its directories: the repository,
    /// or the path's last component.
    pub fn name(&self) -> &str {
        match self {
            LaunchModel::Hub(id) => id,
            LaunchModel::Path(p) => p.trim_end_matches('/').rsplit('/').next().unwrap_or_default(),
        }
    }
}

/// One flag read, as the engine spells it (its long name) and its value as
/// read (empty for a switch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchFlag {
    pub flag: &'static str,
    pub value: String,
}

/// What a command line launches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub launcher: Launcher,
    pub model: Option<LaunchModel>,
    /// The launch configuration, as a start-up log would give it.
    pub config: LoggedConfig,
    /// The flags read, in command-line order (the model not among them).
    pub flags: Vec<LaunchFlag>,
}

/// What a flag sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Model,
    HfRepo,
    Tp,
    Pp,
    /// vLLM `--data-parallel-size`, `--enable-expert-parallel`; SGLang
    /// `--dp-size`, `--enable-dp-attention`, `--ep-size`.
    Dp,
    ExpertParallel,
    DpAttention,
    EpSize,
    /// vLLM `--all2all-backend`.
    All2All,
    /// SGLang `--moe-a2a-backend`, `--deepep-mode`.
    MoeA2a,
    DeepepMode,
    /// vLLM `--num-redundant-experts` (0.9 – 0.11) and `--eplb-config`'s
    /// `num_redundant_experts`; SGLang `--ep-num-redundant-experts`.
    RedundantExperts,
    EplbConfig,
    Utilization,
    MaxModelLen,
    KvCacheDtype,
    Quantization,
    MaxNumSeqs,
    KvCacheMemory,
    /// vLLM `--cpu-offload-gb`.
    CpuOffload,
    BlockSize,
    EnableLora,
    MaxLoras,
    MaxLoraRank,
    ChunkedPrefill,
    EnforceEager,
    ExtensibleKv,
    NoExtensibleKv,
    SpeculativeConfig,
    LimitMmPerPrompt,
    MaxNumBatchedTokens,
    MemFractionStatic,
    Ctx,
    Batch,
    Ubatch,
    Parallel,
    GpuLayers,
    CacheTypeK,
    CacheTypeV,
    /// llama.cpp `-fa on|off|auto`; Ollama's runner: a switch.
    FlashAttn,
    TensorSplit,
    NCpuMoe,
    CpuMoe,
    OverrideTensor,
    NoKvOffload,
    KvUnified,
    SwaFull,
    SplitMode,
    MainGpu,
    Fit,
    FitTarget,
    Mmproj,
    NoMmprojOffload,
    /// ik_llama.cpp `-mla N`, `-amb N`, `-fmoe`, `-no-fmoe`, `-rtr`.
    Mla,
    AttnMaxBatch,
    FusedMoe,
    NoFusedMoe,
    RunTimeRepack,
    /// ik_llama.cpp from build 3928: `-no-fa`.
    NoFlashAttn,
    /// Ollama's `--kv-cache-type`: both caches.
    KvCacheType,
}

/// A flag's names (the first is its long name, the one reported) and what it sets.
type Table = &'static [(&'static [&'static str], Key)];

/// vLLM `EngineArgs.add_cli_args`.
const VLLM: Table = &[
    (&["--model"], Key::Model),
    (&["--tensor-parallel-size", "-tp"], Key::Tp),
    (&["--pipeline-parallel-size", "-pp"], Key::Pp),
    (&["--data-parallel-size", "-dp"], Key::Dp),
    (&["--enable-expert-parallel"], Key::ExpertParallel),
    (&["--all2all-backend"], Key::All2All),
    (&["--num-redundant-experts"], Key::RedundantExperts),
    (&["--eplb-config"], Key::EplbConfig),
    (&["--gpu-memory-utilization"], Key::Utilization),
    (&["--max-model-len"], Key::MaxModelLen),
    (&["--kv-cache-dtype"], Key::KvCacheDtype),
    (&["--quantization", "-q"], Key::Quantization),
    (&["--max-num-seqs"], Key::MaxNumSeqs),
    (&["--kv-cache-memory-bytes", "--kv-cache-memory"], Key::KvCacheMemory),
    (&["--cpu-offload-gb"], Key::CpuOffload),
    (&["--enforce-eager"], Key::EnforceEager),
    (&["--enable-extensible-kv-cache"], Key::ExtensibleKv),
    (&["--no-enable-extensible-kv-cache"], Key::NoExtensibleKv),
    (&["--speculative-config", "-sc"], Key::SpeculativeConfig),
    (&["--limit-mm-per-prompt"], Key::LimitMmPerPrompt),
    (&["--block-size"], Key::BlockSize),
    (&["--enable-lora"], Key::EnableLora),
    (&["--max-loras"], Key::MaxLoras),
    (&["--max-lora-rank"], Key::MaxLoraRank),
    (&["--max-num-batched-tokens"], Key::MaxNumBatchedTokens),
];

/// SGLang `ServerArgs.add_cli_args` (`--tp` and `--model` are its aliases).
const SGLANG: Table = &[
    (&["--model-path", "--model"], Key::Model),
    (&["--tp-size", "--tensor-parallel-size", "--tp"], Key::Tp),
    (&["--pp-size", "--pipeline-parallel-size"], Key::Pp),
    (&["--dp-size", "--data-parallel-size", "--dp"], Key::Dp),
    (&["--enable-dp-attention"], Key::DpAttention),
    (&["--ep-size", "--expert-parallel-size", "--ep"], Key::EpSize),
    (&["--ep-num-redundant-experts"], Key::RedundantExperts),
    (&["--moe-a2a-backend"], Key::MoeA2a),
    (&["--deepep-mode"], Key::DeepepMode),
    (&["--mem-fraction-static"], Key::MemFractionStatic),
    (&["--context-length"], Key::MaxModelLen),
    (&["--kv-cache-dtype"], Key::KvCacheDtype),
    (&["--quantization"], Key::Quantization),
    (&["--max-running-requests"], Key::MaxNumSeqs),
    (&["--chunked-prefill-size"], Key::ChunkedPrefill),
];

/// llama.cpp `common/arg.cpp` (llama-server's flags).
const LLAMA_SERVER: Table = &[
    (&["--model", "-m"], Key::Model),
    (&["--hf-repo", "-hf", "-hfr"], Key::HfRepo),
    (&["--ctx-size", "-c"], Key::Ctx),
    (&["--batch-size", "-b"], Key::Batch),
    (&["--ubatch-size", "-ub"], Key::Ubatch),
    (&["--parallel", "-np"], Key::Parallel),
    (&["--n-gpu-layers", "-ngl", "--gpu-layers"], Key::GpuLayers),
    (&["--cache-type-k", "-ctk"], Key::CacheTypeK),
    (&["--cache-type-v", "-ctv"], Key::CacheTypeV),
    (&["--flash-attn", "-fa"], Key::FlashAttn),
    (&["--tensor-split", "-ts"], Key::TensorSplit),
    (&["--n-cpu-moe", "-ncmoe"], Key::NCpuMoe),
    (&["--cpu-moe", "-cmoe"], Key::CpuMoe),
    (&["--override-tensor", "-ot"], Key::OverrideTensor),
    (&["--no-kv-offload", "-nkvo"], Key::NoKvOffload),
    (&["--kv-unified", "-kvu"], Key::KvUnified),
    (&["--swa-full"], Key::SwaFull),
    (&["--split-mode", "-sm"], Key::SplitMode),
    (&["--main-gpu", "-mg"], Key::MainGpu),
    (&["--fit", "-fit"], Key::Fit),
    (&["--fit-target", "-fitt"], Key::FitTarget),
    (&["--mmproj", "-mm"], Key::Mmproj),
    (&["--no-mmproj-offload"], Key::NoMmprojOffload),
    // ik_llama.cpp (common/common.cpp@18b0375:934-1090, and `-no-fmoe`
    // from 41d6c42b9): a line with these runs ik's llama-server.
    (&["--mla-use", "-mla"], Key::Mla),
    (&["--attention-max-batch", "-amb"], Key::AttnMaxBatch),
    (&["--fused-moe", "-fmoe"], Key::FusedMoe),
    (&["--no-flash-attn", "-no-fa"], Key::NoFlashAttn),
    (&["--no-fused-moe", "-no-fmoe"], Key::NoFusedMoe),
    (&["--run-time-repack", "-rtr"], Key::RunTimeRepack),
];

/// Ollama's runner (`llm/server.go` builds these; `-flag` is `--flag`).
const OLLAMA_RUNNER: Table = &[
    (&["--model"], Key::Model),
    (&["--ctx-size"], Key::Ctx),
    (&["--batch-size"], Key::Batch),
    (&["--parallel"], Key::Parallel),
    (&["--n-gpu-layers"], Key::GpuLayers),
    (&["--flash-attn"], Key::FlashAttn),
    (&["--kv-cache-type"], Key::KvCacheType),
    (&["--tensor-split"], Key::TensorSplit),
    (&["--main-gpu"], Key::MainGpu),
];

/// Reads a command line (`argv`, the program first); `None` unless it
/// launches one of the engines above.
pub fn read_command_line<S: AsRef<str>>(argv: &[S]) -> Option<Launch> {
    let argv: Vec<&str> = argv.iter().take(MAX_ARGS).map(AsRef::as_ref).collect();
    let (launcher, rest) = recognise(&argv)?;
    let table = match launcher {
        Launcher::Vllm => VLLM,
        Launcher::Sglang => SGLANG,
        Launcher::LlamaServer => LLAMA_SERVER,
        Launcher::OllamaRunner => OLLAMA_RUNNER,
    };
    let mut launch = Launch { launcher, model: None, config: LoggedConfig::default(), flags: Vec::new() };
    // vLLM before 0.12 takes its all-to-all backend from the environment
    // (`VLLM_ALL2ALL_BACKEND`, envs.py 0.10.0 – 0.11.0), as the tool prints it.
    for (name, value) in argv.iter().map_while(|w| assignment(w)) {
        if launcher == Launcher::Vllm && name == "VLLM_ALL2ALL_BACKEND" {
            apply(&mut launch, "VLLM_ALL2ALL_BACKEND", Key::All2All, Some(value));
        }
    }
    // `vllm serve MODEL`: only the word right after `serve` is the model (a
    // later bare word may be another flag's value, such as an API key).
    let mut at = 0;
    if launcher == Launcher::Vllm
        && rest_is_after_serve(&argv, rest)
        && let Some(positional) = rest.first()
        && !positional.starts_with('-')
    {
        launch.model = model(positional);
        at = 1;
    }
    while at < rest.len() {
        let word = rest[at];
        at += 1;
        if !word.starts_with('-') {
            continue;
        }
        let (name, inline) = match word.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (word, None),
        };
        let name = normalise(launcher, name);
        let Some(&(names, key)) = table.iter().find(|(names, _)| names.contains(&name.as_str())) else {
            continue;
        };
        let value = match (key, inline) {
            (_, Some(v)) => Some(v),
            (
                Key::CpuMoe
                | Key::NoKvOffload
                | Key::KvUnified
                | Key::SwaFull
                | Key::NoMmprojOffload
                | Key::FusedMoe
                | Key::NoFusedMoe
                | Key::RunTimeRepack
                | Key::NoFlashAttn
                | Key::EnforceEager
                | Key::ExtensibleKv
                | Key::NoExtensibleKv
                | Key::ExpertParallel
                | Key::EnableLora
                | Key::DpAttention,
                None,
            ) => None,
            // `-fa` alone (older llama.cpp, Ollama's runner) is on; newer
            // llama.cpp takes a value.
            (Key::FlashAttn, None) => match rest.get(at) {
                Some(v) if matches!(*v, "on" | "off" | "auto") => {
                    at += 1;
                    Some(*v)
                }
                _ => None,
            },
            (_, None) => {
                let v = rest.get(at).copied();
                at += 1;
                v
            }
        };
        apply(&mut launch, names[0], key, value);
    }
    let start = argv.len() - rest.len();
    // Its hellaswag, winogrande and multiple-choice scores size the batch otherwise.
    let scored = rest.iter().any(|w| ["--hellaswag", "--winogrande", "--multiple-choice"].contains(w));
    if launcher == Launcher::LlamaServer && start > 0 && program_name(argv[start - 1]) == "llama-perplexity" && !scored
    {
        perplexity_context(&mut launch.config);
    }
    Some(launch)
}

/// llama-perplexity's context: `-c` is one chunk, and it evaluates
/// `n_seq = max(1, n_batch / n_ctx)` chunks at once, each its own sequence
/// (examples/perplexity/perplexity.cpp `main`, b4905: `params.n_parallel =
/// n_seq; params.n_ctx = n_seq * n_ctx; params.n_batch = min(n_batch,
/// n_kv)`; a log of `--ctx-size 512` prints `n_seq_max = 4`, `n_ctx =
/// 2048`); without `-c`, chunks of 512 (its `main` sets `params.n_ctx =
/// 512` before reading the flags). A log's own context lines, where it
/// prints them, win.
fn perplexity_context(c: &mut LoggedConfig) {
    let chunk = c.n_ctx.filter(|&n| n > 0).unwrap_or(PERPLEXITY_CHUNK);
    let batch = c.n_batch.unwrap_or(crate::engines::llamacpp::DEFAULT_N_BATCH);
    let n_seq = (batch / chunk).max(1);
    let n_kv = n_seq.saturating_mul(chunk);
    c.n_ctx = Some(n_kv);
    c.parallel = Some(n_seq);
    c.n_batch = Some(batch.min(n_kv));
}

/// llama-perplexity's default chunk (examples/perplexity/perplexity.cpp
/// `main`: `params.n_ctx = 512`).
const PERPLEXITY_CHUNK: u64 = 512;

/// The longest pasted command read (its continued lines joined).
const MAX_PASTED_CHARS: usize = 16 * 1024;
/// The words a pasted command's program may follow: a shell prompt, the
/// environment, a wrapper (`numactl -N 0 -m 0`, `sudo`, `taskset -c 0-7`).
const MAX_WORDS_BEFORE: usize = 12;

/// A llama.cpp command line pasted above its log, as people quote it: its
/// `\`-continued lines (PowerShell's `` ` ``) joined; a shell prompt
/// (`user@host:~/dir$ `, `(base) user@host$ `, `PS C:\dir> `, `host
/// llama.cpp % `), environment assignments or a wrapper before the program;
/// the program by any path, with or without `.exe`. Its words are split as
/// a POSIX shell does (quotes kept together, `\` escaping a space, a quote
/// or itself; else, as in a Windows path or an `-ot` pattern, kept). The
/// first such line that names one of [`LLAMA_TOOLS`] and a flag; `None`
/// without one. A structured log line (`cmd="…/llama-server …"`, Ollama's)
/// is an assignment, not a program, and is not read here.
pub(super) fn pasted_llamacpp(lines: &[(usize, String)]) -> Option<Launch> {
    pasted(lines, Launcher::LlamaServer)
}

/// Like [`pasted_llamacpp`], for the engine `want` runs: a `vllm serve`
/// or `python -m vllm.…`/`sglang.…` line pasted above the log.
pub(super) fn pasted(lines: &[(usize, String)], want: Launcher) -> Option<Launch> {
    let program = |w: &str| match want {
        Launcher::LlamaServer | Launcher::OllamaRunner => LLAMA_TOOLS.contains(&program_name(w)),
        Launcher::Vllm => program_name(w) == "vllm" || program_name(w).starts_with("python"),
        Launcher::Sglang => program_name(w).starts_with("python"),
    };
    let mut joined = String::new();
    for (_, line) in lines {
        let trimmed = line.trim_end();
        // PowerShell's `` ` `` after a space (a Markdown fence is not one).
        let backtick = trimmed.strip_suffix(" `");
        let (body, continued) = match trimmed.strip_suffix('\\').or(backtick) {
            Some(body) => (body, true),
            None => (trimmed, false),
        };
        if joined.len() + body.len() < MAX_PASTED_CHARS {
            joined.push_str(body);
            joined.push(' ');
        }
        if continued {
            continue;
        }
        let words = shell_words(&joined);
        joined.clear();
        let at = words
            .iter()
            .take(MAX_WORDS_BEFORE + 1)
            .position(|w| assignment(w).is_none() && program(w) && !w.contains(['"', '\'', '=']));
        let Some(at) = at else { continue };
        if !words[at + 1..].iter().any(|w| w.starts_with('-')) {
            continue;
        }
        if let Some(launch) = read_command_line(&words[at..]).filter(|l| l.launcher == want) {
            return Some(launch);
        }
    }
    None
}

/// A command line's words as a POSIX shell splits them: `'…'` literal,
/// `"…"` with `\"`, `\\`, `\$` and `` \` `` escaped, a bare `\` escaping a
/// space, a quote or a `\` (any other is kept: a Windows path, a regex).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    word.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' if chars.peek().is_some_and(|n| matches!(n, '"' | '\\' | '$' | '`')) => {
                            word.extend(chars.next());
                        }
                        d => word.push(d),
                    }
                }
            }
            '\\' if chars.peek().is_some_and(|n| n.is_whitespace() || matches!(n, '"' | '\'' | '\\')) => {
                in_word = true;
                word.extend(chars.next());
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
        if words.len() >= MAX_ARGS {
            return words;
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Whether `rest` starts right after `vllm serve`.
fn rest_is_after_serve(argv: &[&str], rest: &[&str]) -> bool {
    let start = argv.len() - rest.len();
    start > 0 && argv[start - 1] == "serve"
}

/// vLLM's parser reads `--max_model_len` as `--max-model-len`; Go's flag
/// package (Ollama) reads `-ctx-size` as `--ctx-size`.
fn normalise(launcher: Launcher, name: &str) -> String {
    match launcher {
        Launcher::Vllm if name.starts_with("--") => name.replace('_', "-"),
        Launcher::OllamaRunner if !name.starts_with("--") => format!("-{name}"),
        Launcher::Vllm | Launcher::Sglang | Launcher::LlamaServer | Launcher::OllamaRunner => name.to_owned(),
    }
}

/// A shell's environment assignment before the program (`NAME=value`, as
/// in `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve …`, which the tool
/// prints): its name and value.
fn assignment(word: &str) -> Option<(&str, &str)> {
    word.split_once('=').filter(|(name, _)| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// The llama.cpp programs that read common/arg.cpp's arguments (its
/// `LLAMA_EXAMPLE_*` sets: server, main — `llama-cli`, from b7000 also
/// `llama-completion` —, perplexity, batched-bench, and ik_llama.cpp's and
/// mainline's `llama-sweep-bench`), read as llama-server's flags. Not
/// `llama-bench`: its own parser (tools/llama-bench) takes lists of values.
const LLAMA_TOOLS: &[&str] =
    &["llama-server", "llama-cli", "llama-completion", "llama-sweep-bench", "llama-perplexity", "llama-batched-bench"];

/// A program word without its directories (`/`, or Windows' `\`) and
/// Windows' `.exe`.
fn program_name(word: &str) -> &str {
    let name = word.rsplit(['/', '\\']).next().unwrap_or_default();
    match name.len().checked_sub(4).and_then(|cut| name.get(cut..).map(|ext| (cut, ext))) {
        Some((cut, ext)) if ext.eq_ignore_ascii_case(".exe") => &name[..cut],
        _ => name,
    }
}

/// The engine and the arguments after the program (and its subcommand).
fn recognise<'a, 'b>(argv: &'b [&'a str]) -> Option<(Launcher, &'b [&'a str])> {
    let argv = &argv[argv.iter().take_while(|w| assignment(w).is_some()).count()..];
    let base = |w: &str| program_name(w).to_owned();
    let program = base(argv.first()?);
    // The program itself, or a script an interpreter runs (`python3
    // /venv/bin/vllm serve …`).
    for i in 0..argv.len().min(3) {
        let here = base(argv[i]);
        let next = argv.get(i + 1).copied();
        if here == "vllm" && next == Some("serve") {
            return Some((Launcher::Vllm, &argv[i + 2..]));
        }
        if LLAMA_TOOLS.contains(&here.as_str()) {
            return Some((Launcher::LlamaServer, &argv[i + 1..]));
        }
        if here == "ollama" && next == Some("runner") {
            return Some((Launcher::OllamaRunner, &argv[i + 2..]));
        }
        if !(i == 0 && program.starts_with("python")) {
            break;
        }
    }
    if program.starts_with("python") {
        // `python -m MODULE` after interpreter options (`-u`, `-X dev`).
        let m = argv.iter().take(8).position(|w| *w == "-m")?;
        let module = *argv.get(m + 1)?;
        let rest = &argv[m + 2..];
        return match module {
            "vllm.entrypoints.openai.api_server" => Some((Launcher::Vllm, rest)),
            // The benchmarks take the server's arguments (`ServerArgs.add_cli_args`).
            "sglang.launch_server" | "sglang.bench_one_batch" | "sglang.bench_offline_throughput" => {
                Some((Launcher::Sglang, rest))
            }
            _ => None,
        };
    }
    None
}

/// A model value: a Hugging Face id (`ORG/NAME`) or a path.
fn model(value: &str) -> Option<LaunchModel> {
    let value = value.trim();
    if value.is_empty() || value.chars().count() > MAX_VALUE_CHARS || value.chars().any(char::is_control) {
        return None;
    }
    let looks_like_path = value.starts_with(['/', '.', '~']) || value.split('/').count() != 2;
    if !looks_like_path && crate::hub::HubRef::parse(value).is_ok() {
        return Some(LaunchModel::Hub(value.to_owned()));
    }
    let name = LaunchModel::Path(value.to_owned());
    // The name shown must be a plain file name.
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.+".contains(c);
    (!name.name().is_empty() && name.name().chars().all(ok)).then_some(name)
}

/// KV cache dtypes: vLLM 0.11 `vllm/config/cache.py` (`CacheDType`; 0.20 added
/// `int8_per_token_head`),
/// SGLang 0.5 `server_args.py` (`--kv-cache-dtype` choices).
const KV_CACHE_DTYPES: &[&str] = &[
    "auto",
    "bfloat16",
    "bf16",
    "float16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_ds_mla",
    "fp4_e2m1",
    "int8_per_token_head",
];

/// Quantisation methods: vLLM 0.11
/// `vllm/model_executor/layers/quantization/__init__.py`
/// (`QuantizationMethods`), SGLang 0.5 `server_args.py` (`QUANTIZATION_CHOICES`).
const QUANTIZATIONS: &[&str] = &[
    "awq",
    "awq_marlin",
    "gptq",
    "gptq_marlin",
    "gptq_marlin_24",
    "marlin",
    "fp8",
    "fbgemm_fp8",
    "ptpc_fp8",
    "modelopt",
    "modelopt_fp4",
    "mxfp4",
    "bitsandbytes",
    "gguf",
    "compressed-tensors",
    "experts_int8",
    "moe_wna16",
    "torchao",
    "quark",
    "hqq",
    "fp_quant",
    "w8a8_int8",
    "w8a8_fp8",
    "petit_nvfp4",
    "inc",
    "auto-round",
    // vLLM lower-cases the value and turns an AutoRound checkpoint's method
    // into `inc` before checking it (0.21 `config/model.py`
    // `validate_quantization_before`, `_verify_quantization`), so the
    // underscore spelling club-3090's recipes pass starts as well.
    "auto_round",
];

/// A value from a closed list, as the list spells it.
fn one_of(value: &str, list: &[&'static str]) -> Option<String> {
    let lower = value.to_ascii_lowercase();
    list.iter().find(|w| **w == lower).map(|w| (*w).to_owned())
}

/// A llama.cpp cache type (`common/arg.cpp` `kv_cache_types`).
fn cache_type(value: &str) -> Option<String> {
    crate::engines::llamacpp::CacheType::parse(value).ok().map(|t| t.id().to_owned())
}

/// A count without grouping, as argparse's `int` and `std::stoi` read it.
fn number(value: &str) -> Option<u64> {
    (value.len() <= 12 && !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit())).then(|| value.parse().ok())?
}

/// vLLM's `human_readable_int` (0.10.2 `engine/arg_utils.py`, the type of
/// `--max-model-len`, `--max-num-batched-tokens` and `--kv-cache-memory-bytes`):
/// a plain number, or one with a decimal suffix (`k`, `m`, `g`: 10³, 10⁶, 10⁹;
/// `25.6k` is 25,600, truncated as Python's `int`) or a binary one (`K`, `M`,
/// `G`: 2¹⁰, 2²⁰, 2³⁰; whole numbers only, as vLLM refuses `1.5K`).
fn human_readable_int(value: &str) -> Option<u64> {
    let Some(suffix) = value.chars().last().filter(|c| "kmgKMG".contains(*c)) else { return number(value) };
    let digits = &value[..value.len() - 1];
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let (exponent, binary) = match suffix {
        'k' => (3, false),
        'm' => (6, false),
        'g' => (9, false),
        'K' => (10, true),
        'M' => (20, true),
        _ => (30, true),
    };
    let whole = number(whole)?;
    if binary {
        return fraction.is_empty().then(|| whole.checked_mul(1 << exponent))?;
    }
    let scale = 10u64.pow(exponent);
    let fraction = match fraction {
        "" if !digits.contains('.') => 0,
        f if f.len() <= 9 => number(f)?.checked_mul(scale)? / 10u64.pow(f.len() as u32),
        _ => return None,
    };
    whole.checked_mul(scale)?.checked_add(fraction)
}

fn apply(launch: &mut Launch, flag: &'static str, key: Key, value: Option<&str>) {
    // vLLM reads its large integers as `32K` or `25.6k` too.
    let int = if launch.launcher == Launcher::Vllm { human_readable_int } else { number };
    let c = &mut launch.config;
    let value = value.map(str::trim).filter(|v| v.chars().count() <= MAX_VALUE_CHARS);
    // The value as it is kept and shown, when it parsed.
    let kept: Option<String> = match (key, value) {
        (Key::Model, Some(v)) => {
            launch.model = model(v).or(launch.model.take());
            return;
        }
        (Key::HfRepo, Some(v)) => {
            if crate::hub::HubRef::parse(v).is_ok() && v.contains('/') {
                launch.model = Some(LaunchModel::Hub(v.to_owned()));
            }
            return;
        }
        (Key::Tp, Some(v)) => number(v).filter(|&n| n > 0).inspect(|&n| c.tensor_parallel = Some(n)).map(s),
        (Key::Pp, Some(v)) => number(v).filter(|&n| n > 0).inspect(|&n| c.pipeline_parallel = Some(n)).map(s),
        (Key::Dp, Some(v)) => number(v).filter(|&n| n > 0).inspect(|&n| c.data_parallel = Some(n)).map(s),
        (Key::ExpertParallel, _) => {
            c.expert_parallel = Some(true);
            Some(String::new())
        }
        (Key::EnableLora, _) => {
            c.enable_lora = Some(true);
            Some(String::new())
        }
        (Key::DpAttention, _) => {
            c.dp_attention = Some(true);
            Some(String::new())
        }
        (Key::All2All, Some(v)) => {
            crate::engines::vllm::All2All::parse(v).inspect(|b| c.all2all_backend = Some(*b)).map(|_| v.to_owned())
        }
        (Key::RedundantExperts, Some(v)) => number(v).inspect(|&n| c.redundant_experts = Some(n)).map(s),
        (Key::MoeA2a, Some(v)) => {
            crate::engines::sglang::moe_a2a_deepep(v).inspect(|&d| c.deepep = Some(d)).map(|_| v.to_owned())
        }
        (Key::DeepepMode, Some(v)) => {
            crate::engines::sglang::DeepepMode::parse(v).inspect(|&m| c.deepep_mode = Some(m)).map(|_| v.to_owned())
        }
        (Key::EplbConfig, Some(v)) => {
            let rest = v.split_once("num_redundant_experts").map(|(_, r)| r.trim_start_matches(['"', '\'', ':', ' ']));
            let n = rest.and_then(|r| number(&r[..r.find([',', '}']).unwrap_or(r.len())]));
            n.inspect(|&n| c.redundant_experts = Some(n)).map(|_| v.to_owned())
        }
        (Key::EpSize, Some(v)) => number(v).filter(|&n| n > 0).inspect(|&n| c.ep_size = Some(n)).map(s),
        (Key::Utilization, Some(v)) => fixed(v, 1000)
            .filter(|p| (1..=1000).contains(p))
            .inspect(|&p| c.gpu_memory_utilization_permille = Some(p))
            .map(|_| v.to_owned()),
        (Key::MemFractionStatic, Some(v)) => fixed(v, 1000)
            .filter(|p| (1..=1000).contains(p))
            .inspect(|&p| c.mem_fraction_static_permille = Some(p))
            .map(|_| v.to_owned()),
        (Key::MaxModelLen, Some(v)) => int(v).inspect(|&n| c.max_model_len = Some(n)).map(s),
        (Key::KvCacheDtype, Some(v)) => one_of(v, KV_CACHE_DTYPES).inspect(|w| c.kv_cache_dtype = Some(w.clone())),
        (Key::Quantization, Some(v)) => one_of(v, QUANTIZATIONS).inspect(|w| c.quantization = Some(w.clone())),
        (Key::MaxNumSeqs, Some(v)) => number(v).inspect(|&n| c.max_num_seqs = Some(n)).map(s),
        (Key::KvCacheMemory, Some(v)) => int(v).inspect(|&n| c.kv_cache_memory_bytes = Some(n)).map(s),
        (Key::CpuOffload, Some(v)) => super::offload_gb(v).inspect(|g| c.cpu_offload_gb = Some(g.clone())),
        (Key::BlockSize, Some(v)) => number(v).inspect(|&n| c.block_size = Some(n)).map(s),
        (Key::MaxLoras, Some(v)) => number(v).inspect(|&n| c.max_loras = Some(n)).map(s),
        (Key::MaxLoraRank, Some(v)) => number(v).inspect(|&n| c.max_lora_rank = Some(n)).map(s),
        (Key::ChunkedPrefill, Some(v)) => number(v).inspect(|&n| c.chunked_prefill_size = Some(n)).map(s),
        (Key::EnforceEager, _) => {
            c.enforce_eager = Some(true);
            Some(String::new())
        }
        (Key::ExtensibleKv | Key::NoExtensibleKv, _) => {
            c.extensible_kv_cache = Some(key == Key::ExtensibleKv);
            Some(String::new())
        }
        (Key::SpeculativeConfig, Some(v)) => crate::engines::vllm::Speculative::parse(v)
            .ok()
            .inspect(|sc| c.speculative = Some(*sc))
            .map(|_| v.to_owned()),
        (Key::LimitMmPerPrompt, Some(v)) => {
            crate::engines::vllm::MmLimits::parse(v).ok().inspect(|l| c.mm_limits = Some(*l)).map(|_| v.to_owned())
        }
        (Key::MaxNumBatchedTokens, Some(v)) => int(v).inspect(|&n| c.max_num_batched_tokens = Some(n)).map(s),
        (Key::Ctx, Some(v)) => number(v).inspect(|&n| c.n_ctx = Some(n)).map(s),
        (Key::Batch, Some(v)) => number(v).inspect(|&n| c.n_batch = Some(n)).map(s),
        (Key::Ubatch, Some(v)) => number(v).inspect(|&n| c.n_ubatch = Some(n)).map(s),
        (Key::Parallel, Some(v)) => number(v).filter(|&n| n > 0).inspect(|&n| c.parallel = Some(n)).map(s),
        // `-ngl` also takes `auto` and `all` (llama.cpp b6700), the default.
        (Key::GpuLayers, Some(v)) => number(v).inspect(|&n| c.n_gpu_layers = Some(n)).map(s),
        (Key::CacheTypeK, Some(v)) => cache_type(v).inspect(|w| c.cache_type_k = Some(w.clone())),
        (Key::CacheTypeV, Some(v)) => cache_type(v).inspect(|w| c.cache_type_v = Some(w.clone())),
        (Key::KvCacheType, Some(v)) => cache_type(v).inspect(|w| {
            c.cache_type_k = Some(w.clone());
            c.cache_type_v = Some(w.clone());
        }),
        (Key::FlashAttn, v) => {
            let on = v.unwrap_or("on");
            let value = match on {
                "on" | "auto" | "1" | "true" => "1",
                "off" | "0" | "false" => "0",
                _ => return,
            };
            c.flash_attn = Some(value.into());
            Some(on.to_owned())
        }
        (Key::TensorSplit, Some(v)) => {
            let ok = v.split([',', '/']).all(|p| !p.is_empty() && p.len() <= 12 && fixed(p, 1000).is_some());
            ok.then(|| v.to_owned()).inspect(|t| c.tensor_split = Some(t.clone()))
        }
        (Key::NCpuMoe, Some(v)) => number(v).inspect(|&n| c.n_cpu_moe = Some(n)).map(s),
        // `--cpu-moe`: every layer's experts (PlanArgs sets the same).
        (Key::CpuMoe, _) => {
            c.n_cpu_moe = Some(u64::from(u32::MAX));
            Some(String::new())
        }
        (Key::OverrideTensor, Some(v)) => {
            // Repeatable: the rules add up, the first match wins.
            let all = match c.override_tensor.take() {
                Some(before) => format!("{before},{v}"),
                None => v.to_owned(),
            };
            let ok = all.chars().count() <= MAX_VALUE_CHARS && !all.chars().any(char::is_control);
            c.override_tensor = ok.then(|| all.clone());
            ok.then(|| v.to_owned())
        }
        (Key::NoKvOffload, _) => {
            c.no_kv_offload = Some(true);
            Some(String::new())
        }
        (Key::KvUnified, _) => {
            c.kv_unified = Some(true);
            Some(String::new())
        }
        (Key::SwaFull, _) => {
            c.swa_full = Some(true);
            Some(String::new())
        }
        (Key::SplitMode, Some(v)) => {
            matches!(v, "none" | "layer" | "row").then(|| v.to_owned()).inspect(|m| c.split_mode = Some(m.clone()))
        }
        (Key::MainGpu, Some(v)) => number(v).filter(|&n| n < 1024).inspect(|&n| c.main_gpu = Some(n)).map(s),
        (Key::Fit, Some(v)) => match v {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        }
        .inspect(|&on| c.fit = Some(on))
        .map(|_| v.to_owned()),
        (Key::FitTarget, Some(v)) => number(v).inspect(|&n| c.fit_target_mib = Some(n)).map(s),
        // The projector's file is a path: only that one is loaded is kept.
        (Key::Mmproj, Some(_)) => {
            c.mmproj = Some(true);
            Some(String::new())
        }
        (Key::Mla, Some(v)) => number(v).filter(|&n| n <= 3).inspect(|&n| c.ik_mla = Some(n)).map(s),
        (Key::AttnMaxBatch, Some(v)) => number(v).inspect(|&n| c.ik_attn_max_batch = Some(n)).map(s),
        (Key::FusedMoe | Key::NoFusedMoe, _) => {
            c.ik_fused_moe = Some(key == Key::FusedMoe);
            Some(String::new())
        }
        (Key::NoFlashAttn, _) => {
            c.flash_attn = Some("0".into());
            Some(String::new())
        }
        (Key::RunTimeRepack, _) => {
            c.ik_run_time_repack = Some(true);
            Some(String::new())
        }
        (Key::NoMmprojOffload, _) => {
            c.no_mmproj_offload = Some(true);
            Some(String::new())
        }
        (_, None) => None,
    };
    if let Some(value) = kept {
        launch.flags.push(LaunchFlag { flag, value });
    }
}

fn s(n: u64) -> String {
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Option<Launch> {
        read_command_line(&line.split(' ').collect::<Vec<_>>())
    }

    fn flags(l: &Launch) -> Vec<(&str, &str)> {
        l.flags.iter().map(|f| (f.flag, f.value.as_str())).collect()
    }

    #[test]
    fn vllm_serve_and_the_api_server_module() {
        let l = read(
            "/opt/venv/bin/python3 /opt/venv/bin/vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 2 \
             --gpu-memory-utilization 0.90 --max-model-len=32768 --api-key sk-secret --kv-cache-dtype fp8 --max_num_seqs 64",
        )
        .unwrap();
        assert_eq!(l.launcher, Launcher::Vllm);
        assert_eq!(l.model, Some(LaunchModel::Hub("meta-llama/Llama-3.1-70B-Instruct".into())));
        assert_eq!(
            flags(&l),
            [
                ("--tensor-parallel-size", "2"),
                ("--gpu-memory-utilization", "0.90"),
                ("--max-model-len", "32768"),
                ("--kv-cache-dtype", "fp8"),
                ("--max-num-seqs", "64"),
            ]
        );
        assert_eq!(l.config.gpu_memory_utilization_permille, Some(900));
        assert_eq!((l.config.tensor_parallel, l.config.max_model_len), (Some(2), Some(32768)));

        let l =
            read("python -u -m vllm.entrypoints.openai.api_server --model /data/models/Qwen3-8B/ -tp 4 -pp 2").unwrap();
        assert_eq!(l.model.as_ref().map(LaunchModel::name), Some("Qwen3-8B"));
        assert_eq!(l.model, Some(LaunchModel::Path("/data/models/Qwen3-8B/".into())));
        assert_eq!((l.config.tensor_parallel, l.config.pipeline_parallel), (Some(4), Some(2)));
    }

    /// vLLM reads `--max-model-len 32K` as 32,768 (`human_readable_int`): a
    /// note's `vllm serve … --max-model-len 32K` logs "Maximum concurrency
    /// for 32,768 tokens per request". SGLang's `--context-length` is a
    /// plain integer.
    #[test]
    fn vllm_reads_human_readable_lengths() {
        let len = |v: &str| read(&format!("vllm serve org/m --max-model-len {v}")).unwrap().config.max_model_len;
        assert_eq!(len("32K"), Some(32_768));
        assert_eq!(len("32k"), Some(32_000));
        assert_eq!(len("25.6k"), Some(25_600));
        assert_eq!(len("1M"), Some(1 << 20));
        assert_eq!((len("1.5K"), len("25.k"), len("k"), len("32KB")), (None, None, None, None));
        let l = read("vllm serve org/m --max-num-batched-tokens 8k --kv-cache-memory-bytes 20G").unwrap();
        assert_eq!((l.config.max_num_batched_tokens, l.config.kv_cache_memory_bytes), (Some(8000), Some(20 << 30)));
        let sglang = read("python -m sglang.launch_server --model-path org/m --context-length 32K").unwrap();
        assert_eq!(sglang.config.max_model_len, None);
    }

    #[test]
    fn vllm_0_34_extensible_kv_cache_switches() {
        let off = read("vllm serve org/model --no-enable-extensible-kv-cache --enforce-eager").unwrap();
        assert_eq!((off.config.extensible_kv_cache, off.config.enforce_eager), (Some(false), Some(true)));
        let on = read("vllm serve org/model --enable-extensible-kv-cache").unwrap();
        assert_eq!(on.config.extensible_kv_cache, Some(true));
        assert_eq!(read("vllm serve org/model").unwrap().config.extensible_kv_cache, None);
    }

    #[test]
    fn a_bare_word_after_another_flag_is_never_the_model() {
        let l = read("vllm serve --api-key sk-live-123 --model org/model").unwrap();
        assert_eq!(l.model, Some(LaunchModel::Hub("org/model".into())));
        let l = read("vllm serve --api-key sk-live-123").unwrap();
        assert_eq!(l.model, None);
    }

    #[test]
    fn sglang_launch_server() {
        let l = read(
            "python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 --mem-fraction-static 0.8 \
             --context-length 8192 --host 0.0.0.0 --max-running-requests 64",
        )
        .unwrap();
        assert_eq!(l.launcher, Launcher::Sglang);
        assert_eq!(l.model.as_ref().map(LaunchModel::name), Some("Qwen/Qwen2.5-7B-Instruct"));
        assert_eq!(l.config.mem_fraction_static_permille, Some(800));
        assert_eq!(
            flags(&l),
            [
                ("--tp-size", "2"),
                ("--mem-fraction-static", "0.8"),
                ("--context-length", "8192"),
                ("--max-running-requests", "64")
            ]
        );
    }

    #[test]
    fn llama_server_and_its_placement_flags() {
        let l = read(
            "/usr/local/bin/llama-server -m /models/Qwen3-30B-A3B-Q4_K_M.gguf -c 32768 -ngl 99 -fa on -ctk q8_0 \
             -ctv q8_0 -np 4 -ts 3,1 --n-cpu-moe 8 -ot blk\\.[0-9]\\.ffn_.*_exps\\.=CPU --port 8080 --api-key sk-x",
        )
        .unwrap();
        assert_eq!(l.launcher, Launcher::LlamaServer);
        assert_eq!(l.model.as_ref().map(LaunchModel::name), Some("Qwen3-30B-A3B-Q4_K_M.gguf"));
        let c = &l.config;
        assert_eq!((c.n_ctx, c.n_gpu_layers, c.parallel, c.n_cpu_moe), (Some(32768), Some(99), Some(4), Some(8)));
        assert_eq!((c.cache_type_k.as_deref(), c.flash_attn.as_deref()), (Some("q8_0"), Some("1")));
        assert_eq!(c.tensor_split.as_deref(), Some("3,1"));
        assert_eq!(c.override_tensor.as_deref(), Some("blk\\.[0-9]\\.ffn_.*_exps\\.=CPU"));
        // An older build's bare `-fa` is on; the word after it is not eaten.
        let l = read("llama-server -fa -hf unsloth/gpt-oss-20b-GGUF:Q4_K_M").unwrap();
        assert_eq!(l.config.flash_attn.as_deref(), Some("1"));
        assert_eq!(l.model, Some(LaunchModel::Hub("unsloth/gpt-oss-20b-GGUF:Q4_K_M".into())));
    }

    #[test]
    fn every_common_args_tool_by_any_path_reads_as_llama_server() {
        for program in [
            "llama-cli",
            "./build/bin/llama-sweep-bench",
            "../ik_llama.cpp//build/bin/llama-cli",
            "llama-batched-bench",
            "./llama-server.exe",
            "C:\\llama\\llama-server.EXE",
            "/opt/llama.cpp/build/bin/llama-completion",
        ] {
            let l = read(&format!("{program} -m /m/x.gguf -c 8192 -ngl 20")).unwrap_or_else(|| panic!("{program}"));
            assert_eq!(
                (l.launcher, l.config.n_ctx, l.config.n_gpu_layers),
                (Launcher::LlamaServer, Some(8192), Some(20))
            );
        }
        // llama-bench's own parser takes lists (`-ngl 10,20`): not read.
        assert_eq!(read("llama-bench -m /m/x.gguf -ngl 10,20"), None);
    }

    #[test]
    fn llama_perplexity_runs_n_batch_over_c_chunks_in_one_context() {
        // The b4905 log of `--ctx-size 512`: n_seq_max = 4, n_ctx = 2048.
        let c = read("llama-perplexity -m /m/x.gguf --ctx-size 512 --ubatch-size 512").unwrap().config;
        assert_eq!((c.n_ctx, c.parallel, c.n_batch), (Some(2048), Some(4), Some(2048)));
        let c = read("llama-perplexity -m /m/x.gguf -c 4096 -b 2048").unwrap().config;
        assert_eq!((c.n_ctx, c.parallel, c.n_batch), (Some(4096), Some(1), Some(2048)));
        // Its own 512-token chunks without `-c`; a scoring task's batch is its own.
        let c = read("llama-perplexity -m /m/x.gguf -f wiki.test.raw").unwrap().config;
        assert_eq!((c.n_ctx, c.parallel, c.n_batch), (Some(2048), Some(4), Some(2048)));
        let c = read("llama-perplexity -m /m/x.gguf -c 512 --hellaswag -f hs.txt").unwrap().config;
        assert_eq!((c.n_ctx, c.parallel), (Some(512), None));
    }

    fn pasted(text: &str) -> Option<Launch> {
        let lines: Vec<(usize, String)> = text.lines().enumerate().map(|(i, l)| (i + 1, l.to_owned())).collect();
        pasted_llamacpp(&lines)
    }

    #[test]
    fn a_command_pasted_above_a_log_is_read_behind_its_prompt_and_environment() {
        // ik_llama.cpp#437: a conda prompt, a quoted assignment with a space,
        // continued lines, quoted -ot patterns.
        let l = pasted(
            "```\n(base) mukul@jarvis:~/dev-ai/ik_llama.cpp$ CUDA_VISIBLE_DEVICES=\"0, 1\" ./build/bin/llama-server \\\n    \
             --ctx-size 32768 \\\n    -ctk q8_0 \\\n    -ot \"blk\\.(3)\\.ffn_.*=CUDA0\" \\\n    \
             --override-tensor exps=CPU \\\n    --n-gpu-layers 63 --parallel 1\n```\nggml_cuda_init: found 2 CUDA devices:",
        )
        .expect("a command");
        let c = &l.config;
        assert_eq!((c.n_ctx, c.n_gpu_layers, c.parallel), (Some(32768), Some(63), Some(1)));
        assert_eq!(c.cache_type_k.as_deref(), Some("q8_0"));
        assert_eq!(c.override_tensor.as_deref(), Some("blk\\.(3)\\.ffn_.*=CUDA0,exps=CPU"));
        // A bare pattern keeps its backslashes (bash would drop them: the
        // same regex but for `.`); `$model` is no model.
        let l = pasted(
            "./build/bin/llama-sweep-bench \\\n  --model \"$model\" \\\n  -ot blk\\.1[3-9]\\.ffn.*=CPU \\\n  -ngl 99",
        )
        .expect("a command");
        assert_eq!(l.config.override_tensor.as_deref(), Some("blk\\.1[3-9]\\.ffn.*=CPU"));
        assert_eq!(l.model, None);
        // PowerShell, a wrapper, a bare `$`, a macOS prompt.
        for (text, ctx) in [
            ("PS C:\\neuro\\llama-avx2> ./llama-server.exe -t 8 -c 4096 -m F:\\llm\\Qwen3-30B-A3B-Q5_K_M.gguf", 4096),
            ("$ numactl -N 0 -m 0 \\\n./build/bin/llama-cli \\\n    -c 1024", 1024),
            ("user@host llama.cpp % ./build/bin/llama-server -c 2048 -ngl 99", 2048),
            ("PS C:\\x> .\\llama-server.exe `\n  -c 3072", 3072),
        ] {
            assert_eq!(pasted(text).and_then(|l| l.config.n_ctx), Some(ctx), "{text}");
        }
    }

    #[test]
    fn log_lines_and_prose_are_not_pasted_commands() {
        for text in [
            // Ollama's runner command is a structured field (read elsewhere).
            "time=2025-01-01T00:00:00 level=INFO msg=\"starting llama server\" cmd=\"/usr/bin/llama-server --model /m -c 8192\"",
            "main: llama-server is listening on 127.0.0.1",
            "llama_context: n_ctx = 4096",
            "./build/bin/llama-server",
            "some words before the program that are far too many to be a prompt or a wrapper of llama-server -c 1",
        ] {
            assert_eq!(pasted(text), None, "{text}");
        }
    }

    #[test]
    fn ollama_runner() {
        let l = read(
            "/usr/local/bin/ollama runner --model /root/.ollama/models/blobs/sha256-6a0746a1ec1a --ctx-size 8192 \
             --batch-size 512 --n-gpu-layers 33 --threads 8 --parallel 4 --flash-attn --kv-cache-type q8_0 --port 41823",
        )
        .unwrap();
        assert_eq!(l.launcher, Launcher::OllamaRunner);
        assert_eq!(l.model.as_ref().map(LaunchModel::name), Some("sha256-6a0746a1ec1a"));
        let c = &l.config;
        assert_eq!((c.n_ctx, c.n_batch, c.parallel, c.n_gpu_layers), (Some(8192), Some(512), Some(4), Some(33)));
        assert_eq!((c.cache_type_v.as_deref(), c.flash_attn.as_deref()), (Some("q8_0"), Some("1")));
        // Go's flag package takes one dash as well.
        assert_eq!(read("ollama runner -ctx-size 4096").unwrap().config.n_ctx, Some(4096));
        // The new engine gets its settings over HTTP: only what it is.
        let l = read("ollama runner --ollama-engine --port 40000").unwrap();
        assert_eq!((l.model, l.flags.len()), (None, 0));
    }

    #[test]
    fn other_programs_are_not_launches() {
        for line in [
            "python train.py --model meta-llama/Llama-3.1-8B",
            "python -m torch.distributed.run train.py",
            "ollama serve",
            "vllm bench --model x/y",
            "/usr/bin/Xorg :0",
            "",
        ] {
            assert_eq!(read(line), None, "{line}");
        }
        assert_eq!(read_command_line::<&str>(&[]), None);
    }

    #[test]
    fn hostile_command_lines_keep_nothing_they_should_not() {
        let huge = "9".repeat(100_000);
        let secret = "sk-proj-0123456789abcdef";
        let line = format!(
            "vllm serve org/m --api-key {secret} --max-model-len {huge} --gpu-memory-utilization 7 \
             --kv-cache-dtype fp8\u{fffd}x --tensor-parallel-size -1 --hf-token hf_abcdef --quantization {secret}/x \
             --max-num-seqs"
        );
        let l = read(&line).unwrap();
        assert!(l.flags.is_empty(), "{:?}", l.flags);
        assert_eq!(l.config, LoggedConfig::default());
        let shown = format!("{:?}", l);
        assert!(!shown.contains("sk-proj") && !shown.contains("hf_abc"), "{shown}");
        // A model path with odd characters is not shown at all.
        let l = read("llama-server -m /m/evil<script>.gguf").unwrap();
        assert_eq!(l.model, None);
        // Past MAX_ARGS nothing more is read.
        let mut argv = vec!["llama-server".to_owned()];
        argv.extend(std::iter::repeat_n("--port".to_owned(), MAX_ARGS));
        argv.extend(["-c".to_owned(), "4096".to_owned()]);
        assert_eq!(read_command_line(&argv).unwrap().config.n_ctx, None);
    }
}
