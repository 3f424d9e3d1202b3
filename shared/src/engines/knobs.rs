//! Each engine's settings, declared once in the engine's own module (its
//! `KNOBS`): the share link's key, the page's label and choices, the CLI's
//! flag and help, one reader and one writer of its text, and what the engine
//! runs when it is left out. The link's encoder and decoder
//! (`crate::link`), the CLI's flags (`agent/src/cli/engine_flags.rs`) and the
//! page's engine inputs (`web/src/view_model/engine.rs`) are driven by these
//! declarations and name no setting: adding a setting is one entry here, in
//! its engine's module.
//!
//! The CLI's words (flags and help) are compiled only with the `cli`
//! feature: the page's first load carries the labels it shows, not the
//! CLI's help.

use super::{Engine, EngineKind, EngineReport, llamacpp, ollama, sglang, transformers, vllm};
use crate::plan::MAX_TOKENS;
use crate::units::{GIB, MIB, exact_size, in_range, parse_size, parse_tokens, size_text};

/// What the front ends know of a setting, whatever its engine.
#[derive(Debug)]
pub struct About {
    /// The share link's key (`gmu`), unique within its engine.
    pub key: &'static str,
    /// The page's label; empty: not one of the page's inputs.
    pub label: &'static str,
    /// A few values, the first the default: a choice on the page.
    pub choices: &'static [&'static str],
    /// Written in every link, even at its default (the pinned versions,
    /// which decide the defaults of the rest).
    pub always: bool,
    /// Link texts the page shows as a word (`--cpu-moe`'s every layer: `all`).
    pub words: &'static [(&'static str, &'static str)],
    /// How the CLI takes it.
    #[cfg(feature = "cli")]
    pub cli: Cli,
}

impl About {
    /// A setting with its key and label, nothing else yet.
    pub const NONE: About = About {
        key: "",
        label: "",
        choices: &[],
        always: false,
        words: &[],
        #[cfg(feature = "cli")]
        cli: Cli::NONE,
    };

    /// The page's word for a link text, or the text itself.
    pub fn word(&self, text: String) -> String {
        match self.words.iter().find(|(t, _)| *t == text) {
            Some((_, w)) => (*w).to_owned(),
            None => text,
        }
    }
}

/// A setting on the command line: `--flag VALUE`, switches that set a
/// value, both or neither.
#[cfg(feature = "cli")]
#[derive(Debug)]
pub struct Cli {
    /// `--flag VALUE` (empty: none).
    pub flag: &'static str,
    pub short: Option<char>,
    /// Other names of the flag (`--ot`).
    pub aliases: &'static [&'static str],
    /// The help; the CLI puts the engines that take the flag before it.
    pub help: &'static str,
    /// `--flag` alone, setting a value (`--cpu-moe`: `all`), with its help.
    pub switches: &'static [(&'static str, &'static str, &'static str)],
    /// Given several times, the values join with `,` (`-ot`).
    pub repeats: bool,
    /// The word that leaves the setting at its default (`latest`).
    pub default_word: &'static str,
    /// `auto` is this host's RAM (the CLI reads it).
    pub host_ram: bool,
}

#[cfg(feature = "cli")]
impl Cli {
    pub const NONE: Cli = Cli {
        flag: "",
        short: None,
        aliases: &[],
        help: "",
        switches: &[],
        repeats: false,
        default_word: "",
        host_ram: false,
    };
}

/// One setting of an engine whose knobs are `O` and whose report is `R`.
#[derive(Debug)]
pub struct Knob<O: 'static, R: 'static> {
    pub about: About,
    /// Its text as a link writes it (empty: unset).
    pub get: fn(&O) -> String,
    /// Reads a text into the knobs: one reader for the link, the CLI and the page.
    pub set: fn(&mut O, &str) -> Result<(), String>,
    /// What the engine runs when it is left out, from its report.
    pub effective: Option<fn(&R) -> String>,
}

fn abouts<O, R>(knobs: &'static [Knob<O, R>]) -> Vec<&'static About> {
    knobs.iter().map(|k| &k.about).collect()
}

fn find<O, R>(knobs: &'static [Knob<O, R>], key: &str) -> Option<&'static Knob<O, R>> {
    knobs.iter().find(|k| k.about.key == key)
}

fn text<O, R>(knobs: &'static [Knob<O, R>], o: &O, key: &str) -> Option<String> {
    find(knobs, key).map(|k| (k.get)(o))
}

fn set<O, R>(knobs: &'static [Knob<O, R>], o: &mut O, key: &str, value: &str, name: &str) -> Result<(), String> {
    let k = find(knobs, key).ok_or_else(|| format!("not a setting of {name}"))?;
    (k.set)(o, value)
}

fn effective<O, R>(knobs: &'static [Knob<O, R>], r: &R, key: &str) -> Option<String> {
    find(knobs, key).and_then(|k| k.effective).map(|f| f(r))
}

impl EngineKind {
    /// The engine's settings, in the order a link writes them.
    pub fn settings(self) -> Vec<&'static About> {
        match self {
            Self::Transformers => abouts(transformers::KNOBS),
            Self::Vllm => abouts(vllm::KNOBS),
            Self::Sglang => abouts(sglang::KNOBS),
            Self::LlamaCpp => abouts(llamacpp::KNOBS),
            Self::Ollama => abouts(ollama::KNOBS),
        }
    }

    /// Whether some engine has a setting with this link key.
    pub fn any_has_setting(key: &str) -> bool {
        Self::ALL.iter().any(|k| k.settings().iter().any(|a| a.key == key))
    }
}

impl Engine {
    /// A setting's text as a link writes it; `None`: not a setting of this engine.
    pub fn setting(&self, key: &str) -> Option<String> {
        match self {
            Self::Transformers(o) => text(transformers::KNOBS, o, key),
            Self::Vllm(o) => text(vllm::KNOBS, o, key),
            Self::Sglang(o) => text(sglang::KNOBS, o, key),
            Self::LlamaCpp(o) => text(llamacpp::KNOBS, o, key),
            Self::Ollama(o) => text(ollama::KNOBS, o, key),
        }
    }

    /// Sets one setting from its text; `Err` says why it does not apply.
    pub fn set_setting(&mut self, key: &str, value: &str) -> Result<(), String> {
        let name = self.kind().id();
        match self {
            Self::Transformers(o) => set(transformers::KNOBS, o, key, value, name),
            Self::Vllm(o) => set(vllm::KNOBS, o, key, value, name),
            Self::Sglang(o) => set(sglang::KNOBS, o, key, value, name),
            Self::LlamaCpp(o) => set(llamacpp::KNOBS, o, key, value, name),
            Self::Ollama(o) => set(ollama::KNOBS, o, key, value, name),
        }
    }
}

impl EngineKind {
    /// What the engine runs for a setting left out, read from its report.
    pub fn effective(self, report: &EngineReport, key: &str) -> Option<String> {
        match (self, report) {
            (Self::Vllm, EngineReport::Vllm(r)) => effective(vllm::KNOBS, r, key),
            (Self::Sglang, EngineReport::Sglang(r)) => effective(sglang::KNOBS, r, key),
            (Self::LlamaCpp, EngineReport::LlamaCpp(r)) => effective(llamacpp::KNOBS, r, key),
            (Self::Ollama, EngineReport::LlamaCpp(r)) => effective(ollama::KNOBS, r, key),
            // `_` is not an engine here: the first element lists every
            // engine, and a report of another engine says nothing of this
            // one's settings (transformers reports nothing).
            (Self::Transformers | Self::Vllm | Self::Sglang | Self::LlamaCpp | Self::Ollama, _) => None,
        }
    }
}

// Settings llama.cpp and Ollama declare alike (their `Options` name the
// fields the same): one declaration each, expanded in both modules.

/// `ram`: the host's RAM a plan's host-resident part is checked against.
macro_rules! host_ram_knob {
    () => {
        $crate::engines::knobs::Knob {
            about: $crate::engines::knobs::About {
                key: "ram",
                label: "Host RAM (GiB)",
                #[cfg(feature = "cli")]
                cli: $crate::engines::knobs::Cli {
                    flag: "host-ram",
                    help: "the host's RAM, SIZE or `auto` (this host's MemTotal): what the plan leaves on the CPU is \
                           checked against it",
                    host_ram: true,
                    ..$crate::engines::knobs::Cli::NONE
                },
                ..$crate::engines::knobs::About::NONE
            },
            get: |o| $crate::engines::knobs::opt_size(o.host_ram_bytes),
            set: |o, v| {
                o.host_ram_bytes = $crate::engines::knobs::host_ram(v)?;
                Ok(())
            },
            effective: None,
        }
    };
}
pub(crate) use host_ram_knob;

/// `ncmoe`: the routed experts of the first N layers in host memory
/// (`--cpu-moe`, `all`: every layer), with the engine's label and help.
macro_rules! cpu_moe_knob {
    ($label:literal, $help:literal, $all_help:literal) => {
        $crate::engines::knobs::Knob {
            about: $crate::engines::knobs::About {
                key: "ncmoe",
                label: $label,
                words: $crate::engines::knobs::CPU_MOE_WORDS,
                #[cfg(feature = "cli")]
                cli: $crate::engines::knobs::Cli {
                    flag: "n-cpu-moe",
                    help: $help,
                    switches: &[("cpu-moe", "all", $all_help)],
                    ..$crate::engines::knobs::Cli::NONE
                },
                ..$crate::engines::knobs::About::NONE
            },
            get: |o| o.n_cpu_moe.to_string(),
            set: |o, v| {
                o.n_cpu_moe = $crate::engines::knobs::cpu_moe(v)?;
                Ok(())
            },
            effective: Some(|_| "0; all = --cpu-moe".into()),
        }
    };
}
pub(crate) use cpu_moe_knob;

// Readers and writers the declarations share.

/// A token count as the prompt and the CLI read it (`32k`, `128K`), at least 1.
pub(crate) fn tokens(v: &str) -> Result<Option<u64>, String> {
    match parse_tokens(v, MAX_TOKENS)? {
        0 => Err("must be at least 1 token".to_owned()),
        n => Ok(Some(n)),
    }
}

/// A token count where 0 has a meaning (llama.cpp's `-c 0`: the trained context).
pub(crate) fn tokens_or_zero(v: &str) -> Result<Option<u64>, String> {
    parse_tokens(v, MAX_TOKENS).map(Some)
}

/// A whole number from `lo` to `hi`.
pub(crate) fn count(v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    crate::units::parse_count(v.trim(), lo, hi)
}

/// A fraction in (0, 1], as `gpu_memory_utilization` and `mem_fraction_static` take.
pub fn fraction(value: &str) -> Result<f64, String> {
    match crate::decimal::Decimal::parse(value.trim()).map(crate::decimal::Decimal::to_f64) {
        Some(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err("must be a fraction above 0 and at most 1".into()),
    }
}

/// A number of GiB, as vLLM's and SGLang's `--cpu-offload-gb` take it (a
/// float; 0: none), at most [`crate::engines::vllm::MAX_CPU_OFFLOAD_GB`].
pub(crate) fn gibibytes(value: &str) -> Result<f64, String> {
    let most = crate::engines::vllm::MAX_CPU_OFFLOAD_GB;
    match crate::decimal::Decimal::parse(value.trim()).map(crate::decimal::Decimal::to_f64) {
        Some(g) if (0.0..=most as f64).contains(&g) => Ok(g),
        _ => Err(format!("must be a number of GiB from 0 to {most}")),
    }
}

/// `1` or `0`.
pub(crate) fn switch(value: &str) -> Result<bool, String> {
    match value.trim() {
        "1" => Ok(true),
        "0" => Ok(false),
        _ => Err("use 1 or 0".into()),
    }
}

/// `on` or `off` (also `1`/`true`, `0`/`false`): a page choice's words.
pub(crate) fn on_or_off(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        _ => Err("use on or off".into()),
    }
}

/// An on/off setting as a link writes it.
pub(crate) fn on_off(on: bool) -> String {
    if on { "on" } else { "off" }.to_owned()
}

/// The host's RAM; a bare number is GiB, as people say how much RAM they have.
pub(crate) fn host_ram(value: &str) -> Result<Option<u64>, String> {
    let value = value.trim();
    let bytes = match value.bytes().all(|b| b.is_ascii_digit()) {
        true => value.parse::<u64>().ok().and_then(|g| g.checked_mul(GIB)),
        false => exact_size(value).or_else(|| parse_size(value).ok()),
    };
    let bytes = bytes.ok_or("a size such as 64GiB (a bare number is GiB)")?;
    in_range(bytes, MIB, 1 << 60).map(Some)
}

/// A size in bytes as engines take it: a bare number is bytes (vLLM's
/// `--kv-cache-memory-bytes`), else `40GiB`, `42897MiB`.
pub(crate) fn bytes(value: &str) -> Result<u64, String> {
    let value = value.trim();
    let bytes = exact_size(value).or_else(|| parse_size(value).ok()).ok_or("a size such as 40GiB or bytes")?;
    in_range(bytes, MIB, 1 << 50)
}

/// A K/V cache type (`q8_0`).
pub(crate) fn cache_type(value: &str) -> Result<Option<llamacpp::CacheType>, String> {
    llamacpp::CacheType::parse(value).map(Some).map_err(|e| e.to_string())
}

/// `--cpu-moe` is `--n-cpu-moe` over every layer: `all` (any N ≥ the layer count).
pub(crate) fn cpu_moe(value: &str) -> Result<u64, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "all" => Ok(u64::from(u32::MAX)),
        v => count(v, 0, u64::from(u32::MAX)),
    }
}

/// `--cpu-moe`'s every layer as the page shows it.
pub(crate) const CPU_MOE_WORDS: &[(&str, &str)] = &[("4294967295", "all")];

/// An optional count as a link writes it.
pub(crate) fn opt(v: Option<u64>) -> String {
    v.map(|n| n.to_string()).unwrap_or_default()
}

/// An optional fraction as a link writes it (`{}` of f64, without the float formatter).
pub(crate) fn opt_fraction(v: Option<f64>) -> String {
    v.map(crate::units::shortest).unwrap_or_default()
}

/// A flag as a link writes it.
pub(crate) fn bit(on: bool) -> String {
    if on { "1" } else { "0" }.to_owned()
}

/// An optional size as a link writes it.
pub(crate) fn opt_size(v: Option<u64>) -> String {
    v.map(size_text).unwrap_or_default()
}
