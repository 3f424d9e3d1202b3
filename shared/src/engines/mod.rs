//! Inference engines and the rules each applies to GPU memory. Users do not
//! run "a model"; they run it in an engine, and each engine spends memory its
//! own way:
//!
//! - [`transformers`]: weights, then a cache that grows token by token.
//! - [`vllm`]: pre-allocates `gpu_memory_utilization` × total and turns what
//!   is left after weights and a profiled activation peak into KV blocks.
//! - [`sglang`]: `mem_fraction_static` × total for weights and the KV pool.
//! - [`llamacpp`]: a context pre-allocated for `n_ctx`, partial offload.

pub mod llamacpp;
pub mod parallel;
pub mod sglang;
pub mod transformers;
pub mod vllm;

use serde::{Deserialize, Serialize};

/// The engine and its knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum Engine {
    Transformers(transformers::Options),
    Vllm(vllm::Options),
    Sglang(sglang::Options),
    #[serde(rename = "llama.cpp")]
    LlamaCpp(llamacpp::Options),
}

impl Default for Engine {
    fn default() -> Self {
        Self::Transformers(transformers::Options::default())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    Transformers,
    Vllm,
    Sglang,
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine `{0}` (transformers, vllm, sglang, llama.cpp)")]
pub struct UnknownEngine(pub String);

impl EngineKind {
    pub const ALL: &[EngineKind] = &[Self::Transformers, Self::Vllm, Self::Sglang, Self::LlamaCpp];

    pub fn id(self) -> &'static str {
        match self {
            Self::Transformers => "transformers",
            Self::Vllm => "vllm",
            Self::Sglang => "sglang",
            Self::LlamaCpp => "llama.cpp",
        }
    }

    pub fn parse(text: &str) -> Result<Self, UnknownEngine> {
        match text.trim().to_ascii_lowercase().as_str() {
            "transformers" | "hf" | "huggingface" => Ok(Self::Transformers),
            "vllm" => Ok(Self::Vllm),
            "sglang" => Ok(Self::Sglang),
            "llama.cpp" | "llamacpp" | "llama-cpp" | "llama_cpp" => Ok(Self::LlamaCpp),
            _ => Err(UnknownEngine(text.trim().to_owned())),
        }
    }

    /// The engine with its default knobs.
    pub fn with_defaults(self) -> Engine {
        match self {
            Self::Transformers => Engine::Transformers(Default::default()),
            Self::Vllm => Engine::Vllm(Default::default()),
            Self::Sglang => Engine::Sglang(Default::default()),
            Self::LlamaCpp => Engine::LlamaCpp(Default::default()),
        }
    }
}

impl Engine {
    pub fn kind(&self) -> EngineKind {
        match self {
            Self::Transformers(_) => EngineKind::Transformers,
            Self::Vllm(_) => EngineKind::Vllm,
            Self::Sglang(_) => EngineKind::Sglang,
            Self::LlamaCpp(_) => EngineKind::LlamaCpp,
        }
    }
}

/// What an engine itself reports, in its own terms.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "engine", rename_all = "snake_case")]
pub enum EngineReport {
    Vllm(vllm::Report),
    Sglang(sglang::Report),
    #[serde(rename = "llama.cpp")]
    LlamaCpp(llamacpp::Report),
}

use crate::estimate::{Depth, Parts, Prepared, Scenario, Verdict, split};

/// Stage capacities for balancing: the smallest GPU of each stage.
fn stage_capacities(p: &Prepared) -> Vec<u64> {
    let tp = p.tp() as usize;
    p.scenario.gpus.chunks(tp).map(|c| c.iter().map(|g| g.capacity_bytes).min().unwrap_or(0)).collect()
}

/// Layer costs for a memory-balanced split: weights plus the KV cache the
/// stage will hold for `tokens` tokens of each of `batch` sequences.
fn layer_costs(p: &Prepared, tokens: u64, batch: u64) -> Vec<u64> {
    p.weights
        .per_layer
        .iter()
        .zip(&p.kv_layers)
        .map(|(w, k)| w.saturating_add(k.tokens_held(tokens).saturating_mul(k.bytes_per_token).saturating_mul(batch)))
        .collect()
}

/// Decides which layers each stage holds.
pub(crate) fn place(p: &mut Prepared) {
    let stages = p.scenario.stages();
    let n_layers = p.kv_layers.len();
    match p.scenario.engine {
        Engine::Transformers(_) => {
            let costs = layer_costs(p, p.scenario.sequence_tokens(), p.scenario.concurrency);
            let mut fixed = vec![p.base_overhead(); stages];
            fixed[0] = fixed[0].saturating_add(p.weights.first);
            fixed[stages - 1] = fixed[stages - 1].saturating_add(p.weights.last);
            p.ranges = split::balance(&costs, &fixed, &stage_capacities(p));
        }
        // vLLM's `get_pp_indices` and SGLang split layers evenly by count.
        Engine::Vllm(_) | Engine::Sglang(_) => p.ranges = split::even(n_layers, stages),
        Engine::LlamaCpp(o) => llamacpp::place(p, o),
    }
}

pub(crate) fn peak(p: &Prepared, g: usize, batch: u64) -> Parts {
    match p.scenario.engine {
        Engine::Transformers(_) => transformers::peak(p, g, batch),
        Engine::Vllm(o) => vllm::parts(p, o, g, batch),
        Engine::Sglang(o) => sglang::parts(p, o, g),
        Engine::LlamaCpp(o) => llamacpp::parts(p, o, g, batch),
    }
}

pub(crate) fn fits(p: &Prepared, prompt: u64, new: u64, batch: u64) -> bool {
    match p.scenario.engine {
        Engine::Transformers(_) => transformers::fits(p, prompt, new, batch),
        Engine::Vllm(o) => vllm::fits(p, o, prompt.saturating_add(new), batch),
        Engine::Sglang(o) => sglang::fits(p, o, prompt.saturating_add(new), batch),
        Engine::LlamaCpp(o) => llamacpp::fits(p, o, prompt.saturating_add(new), batch),
    }
}

pub(crate) fn verdict(p: &Prepared, depth: Depth) -> Verdict {
    match p.scenario.engine {
        Engine::Transformers(_) => transformers::verdict(p, depth),
        Engine::Vllm(o) => vllm::verdict(p, o, depth),
        Engine::Sglang(o) => sglang::verdict(p, o, depth),
        Engine::LlamaCpp(o) => llamacpp::verdict(p, o, depth),
    }
}

/// The engine's own figures; `verdict` is the plan's, already computed.
pub(crate) fn report(p: &Prepared, verdict: Verdict) -> Option<EngineReport> {
    match p.scenario.engine {
        Engine::Transformers(_) => None,
        Engine::Vllm(o) => Some(EngineReport::Vllm(vllm::report(p, o, verdict))),
        Engine::Sglang(o) => Some(EngineReport::Sglang(sglang::report(p, o))),
        Engine::LlamaCpp(o) => Some(EngineReport::LlamaCpp(llamacpp::report(p, o))),
    }
}

/// Engine-specific checks of a scenario.
pub(crate) fn validate(s: &Scenario) -> Result<(), String> {
    let fraction = |name: &str, v: Option<f64>| match v {
        Some(f) if !(f > 0.0 && f <= 1.0) => {
            Err(format!("{name} must be in (0, 1], got {}", crate::units::shortest(f)))
        }
        _ => Ok(()),
    };
    match s.engine {
        Engine::Transformers(_) => Ok(()),
        Engine::Vllm(o) => {
            fraction("gpu_memory_utilization", o.gpu_memory_utilization)?;
            if !(1..=1024).contains(&o.block_size) {
                return Err(format!("block_size must be between 1 and 1024, got {}", o.block_size));
            }
            Ok(())
        }
        Engine::Sglang(o) => fraction("mem_fraction_static", o.mem_fraction_static),
        Engine::LlamaCpp(_) if s.tp > 1 => {
            Err("llama.cpp splits layers, not tensors: use several GPUs without --tp".into())
        }
        Engine::LlamaCpp(o) => {
            if o.parallel.is_some_and(|n| n == 0 || n > 4096) {
                return Err("parallel must be between 1 and 4096".into());
            }
            if !(1..=65_536).contains(&o.n_ubatch) {
                return Err("n_ubatch must be between 1 and 65536".into());
            }
            Ok(())
        }
    }
}
