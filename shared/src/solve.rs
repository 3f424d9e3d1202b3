//! Solvers: each answers one question about a plan with a value and why.
//! Every answer is the boundary: the answer fits and one step further does not
//! (tested as a property).

use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::engines::{Engine, EngineAnswer, EnginePlan, Scenario};
use crate::explain::thousands;
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;
use crate::plan::{GpuSlot, MAX_TOKENS, largest};

/// The questions a plan can be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Question {
    /// Does the plan fit as it is?
    Fits,
    /// The sequence length (prompt + generated) at which it stops fitting.
    OomToken,
    /// The most concurrent sequences of the plan's length.
    MaxConcurrency,
    /// The longest sequence (prompt + generated) at the plan's concurrency.
    MaxContext,
    /// The most new tokens after the plan's prompt.
    MaxNewTokens,
    /// The least aggressive weight format that fits.
    Weights,
    /// The fewest GPUs of the plan's kind.
    MinGpus,
    /// The smallest catalog GPU that fits (same count).
    SmallestGpu,
    /// llama.cpp: the most layers `-ngl` can offload.
    MaxGpuLayers,
    /// llama.cpp: the smallest `--n-cpu-moe` that loads (MoE models).
    MinCpuMoe,
}

impl Question {
    pub const ALL: &[Question] = &[
        Self::Fits,
        Self::OomToken,
        Self::MaxConcurrency,
        Self::MaxContext,
        Self::MaxNewTokens,
        Self::Weights,
        Self::MinGpus,
        Self::SmallestGpu,
        Self::MaxGpuLayers,
        Self::MinCpuMoe,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Self::Fits => "fits",
            Self::OomToken => "oom-token",
            Self::MaxConcurrency => "max-concurrency",
            Self::MaxContext => "max-context",
            Self::MaxNewTokens => "max-new-tokens",
            Self::Weights => "weights",
            Self::MinGpus => "min-gpus",
            Self::SmallestGpu => "smallest-gpu",
            Self::MaxGpuLayers => "max-gpu-layers",
            Self::MinCpuMoe => "min-cpu-moe",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase().replace('_', "-");
        Self::ALL.iter().copied().find(|q| q.id() == s)
    }
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Solution {
    pub question: Question,
    /// A number (tokens, sequences, GPUs, layers), when the answer is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// A choice (a weight format or GPU id), when the answer is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    /// Whether a satisfying answer exists.
    pub found: bool,
    /// The answer in a sentence, with why.
    pub explanation: String,
}

impl Solution {
    fn number(question: Question, value: u64, explanation: String) -> Self {
        Self { question, value: Some(value), choice: None, found: value > 0, explanation }
    }

    fn of(question: Question, a: EngineAnswer) -> Self {
        Self { question, value: a.value, choice: a.choice, found: a.found, explanation: a.explanation }
    }
}

/// Whether a scenario fits (its own concurrency and length); one that does
/// not pass its checks does not.
pub fn fits(model: &Model, s: &Scenario) -> bool {
    let Ok(valid) = s.clone().validate() else { return false };
    EnginePlan::new(model, valid).fits_with(s.concurrency)
}

/// A scenario for sequences of `len` tokens: the prompt is kept up to `len`,
/// the rest is generated; engines with a configured context follow it.
pub fn with_length(s: &Scenario, len: u64) -> Scenario {
    let mut out = s.clone();
    out.prompt_tokens = s.prompt_tokens.min(len);
    out.max_new_tokens = len - out.prompt_tokens;
    out.engine = s.engine.for_length(len);
    out
}

pub fn max_context(model: &Model, s: &Scenario) -> u64 {
    largest(MAX_TOKENS, |len| fits(model, &with_length(s, len)))
}

pub fn max_new_tokens(model: &Model, s: &Scenario) -> Option<u64> {
    let with_new = |n: u64| {
        let mut out = s.clone();
        out.max_new_tokens = n;
        out
    };
    if !fits(model, &with_new(0)) {
        return None;
    }
    Some(largest(MAX_TOKENS, |n| fits(model, &with_new(n))))
}

/// Whether the engine loads `format` on every GPU of `gpus`: it loads the
/// format at its rule set ([`Engine::refuses`]), and each GPU whose compute capability is known meets the
/// engine's minimum for it (`Engine::min_capability`, by its rule set).
pub fn runs_on_gpus(format: WeightFormat, engine: &Engine, gpus: &[GpuSlot]) -> bool {
    engine.refuses(format).is_none()
        && engine
            .min_capability(format)
            .is_none_or(|min| gpus.iter().all(|g| g.compute_capability.is_none_or(|c| c >= min)))
}

pub fn least_aggressive_format(model: &Model, s: &Scenario) -> Option<WeightFormat> {
    WeightFormat::CHOICES
        .iter()
        .copied()
        .filter(|&f| runs_on_gpus(f, &s.engine, &s.gpus))
        .find(|&f| fits(model, &kept_kv(model, Scenario { weights: f, ..s.clone() })))
}

/// `t` with a KV dtype its engine keeps under its weights: the plan's, else
/// the default for its weights (an fp32 cache only follows fp32 weights;
/// a dtype the engine keeps none of, `Engine::kv_refusal`, is its own
/// default), so a plan whose engine or weights a fix or a search changed
/// runs as printed.
pub fn kept_kv(model: &Model, mut t: Scenario) -> Scenario {
    let f32_cache = t.kv_dtype == KvDtype::F32 && t.weights != WeightFormat::F32;
    if f32_cache || t.engine.kv_refusal(t.kv_dtype, t.weights).is_some() {
        t.kv_dtype = t.engine.kind().default_kv_dtype(model, t.weights);
    }
    t
}

/// The fewest GPUs like the plan's first. Engines whose extra GPUs are
/// tensor-parallel (vLLM, SGLang: `Commands::more_gpus_are_tensor_parallel`)
/// grow the degree in powers of two, in each of the plan's data-parallel
/// replicas; the others split layers. Splits the engine would refuse
/// (heads that do not divide, more stages than layers) are skipped.
pub fn min_gpus(model: &Model, s: &Scenario) -> Option<u64> {
    let slot = s.gpus.first()?.clone();
    let tensor_parallel = s.engine.kind().commands().more_gpus_are_tensor_parallel;
    let replicas = crate::plan::EngineRules::replicas(&s.engine).max(1);
    let try_n = |n: u64| {
        let out = with_gpus(s, slot.clone(), n, tensor_parallel);
        out.validate_for(model).is_ok_and(|v| EnginePlan::new(model, v).fits_with(s.concurrency))
    };
    if tensor_parallel {
        [1u64, 2, 4, 8, 16, 32, 64].into_iter().map(|tp| tp * replicas).find(|&n| try_n(n))
    } else {
        (1..=64).find(|&n| try_n(n))
    }
}

/// `s` on `n` GPUs like `slot`: tensor-parallel over each data-parallel
/// replica's share when the engine's extra GPUs are, else split by layers.
pub fn with_gpus(s: &Scenario, slot: GpuSlot, n: u64, tensor_parallel: bool) -> Scenario {
    let mut out = s.clone();
    out.gpus = vec![slot; n as usize];
    out.tp = if tensor_parallel { (n / crate::plan::EngineRules::replicas(&s.engine).max(1)).max(1) } else { 1 };
    out
}

/// The smallest catalog GPU (by memory) that fits, with the plan's GPU count.
pub fn smallest_gpu(model: &Model, s: &Scenario) -> Option<&'static catalog::Gpu> {
    catalog::gpus().iter().find(|g| fits_on(model, s, g))
}

/// Whether the plan fits on as many of catalog GPU `g` as it has GPUs.
fn fits_on(model: &Model, s: &Scenario, g: &catalog::Gpu) -> bool {
    let mut out = s.clone();
    out.gpus = vec![GpuSlot::from_catalog(g); s.gpus.len()];
    fits(model, &out)
}

/// The smallest catalog GPU of the plan's GPU's vendor on which the plan
/// fits (a CUDA user is not sent to a Radeon, nor a Mac to a data centre),
/// else of any other vendor. A GPU given by its memory alone is taken as
/// NVIDIA's, the common case; an AMD or Apple user names theirs.
pub fn smallest_gpu_like(model: &Model, s: &Scenario) -> Option<&'static catalog::Gpu> {
    let vendor = s.gpus.first()?.vendor.unwrap_or(catalog::GpuVendor::Nvidia);
    let (same, other): (Vec<_>, Vec<_>) = catalog::gpus().iter().partition(|g| g.vendor == vendor);
    same.into_iter().chain(other).find(|g| fits_on(model, s, g))
}

/// Answers one question.
pub fn solve(model: &Model, s: &Scenario, q: Question) -> Solution {
    let seq = s.sequence_tokens();
    match q {
        Question::Fits => {
            let ok = fits(model, s);
            Solution {
                question: q,
                value: None,
                choice: None,
                found: ok,
                explanation: if ok {
                    format!("yes: {} × {} tokens fit", s.concurrency, thousands(seq))
                } else {
                    format!("no: {} × {} tokens do not fit", s.concurrency, thousands(seq))
                },
            }
        }
        Question::OomToken => {
            let max = max_context(model, s);
            if max >= MAX_TOKENS {
                return Solution::number(q, 0, "memory never runs out within the supported range".into());
            }
            Solution::number(
                q,
                max + 1,
                format!(
                    "with {} sequence(s), sequences of {} tokens fit and the {}th token does not",
                    s.concurrency,
                    thousands(max),
                    thousands(max + 1)
                ),
            )
        }
        Question::MaxConcurrency => {
            let n = s.clone().validate().map_or(0, |v| EnginePlan::new(model, v).max_concurrency());
            Solution::number(
                q,
                n,
                format!("{n} concurrent sequences of {} tokens fit; {} do not", thousands(seq), n + 1),
            )
        }
        Question::MaxContext => {
            let n = max_context(model, s);
            Solution::number(
                q,
                n,
                format!(
                    "sequences of up to {} tokens fit at concurrency {}; {} tokens do not",
                    thousands(n),
                    s.concurrency,
                    thousands(n + 1)
                ),
            )
        }
        Question::MaxNewTokens => match max_new_tokens(model, s) {
            Some(n) => Solution::number(
                q,
                n,
                format!(
                    "after a {}-token prompt, up to {} new tokens fit; {} do not",
                    thousands(s.prompt_tokens),
                    thousands(n),
                    thousands(n + 1)
                ),
            ),
            None => Solution {
                question: q,
                value: Some(0),
                choice: None,
                found: false,
                explanation: format!("even the {}-token prompt alone does not fit", thousands(s.prompt_tokens)),
            },
        },
        Question::Weights => match least_aggressive_format(model, s) {
            Some(f) => Solution {
                question: q,
                value: None,
                choice: Some(f.id()),
                found: true,
                explanation: format!("{} is the most precise format that fits ({})", f.id(), f.describe()),
            },
            None => Solution {
                question: q,
                value: None,
                choice: None,
                found: false,
                explanation: "no weight format fits".into(),
            },
        },
        Question::MinGpus => match min_gpus(model, s) {
            Some(n) => Solution::number(q, n, format!("{n} × {} fit; {} do not", s.gpus[0].name, n.saturating_sub(1))),
            None => Solution {
                question: q,
                value: None,
                choice: None,
                found: false,
                explanation: format!("not even 64 × {} fit", s.gpus[0].name),
            },
        },
        Question::SmallestGpu => match smallest_gpu(model, s) {
            Some(g) => Solution {
                question: q,
                value: Some(g.memory_bytes),
                choice: Some(g.id.clone()),
                found: true,
                explanation: format!(
                    "{} × {} ({}) is the smallest catalog GPU that fits",
                    s.gpus.len(),
                    g.name,
                    g.memory_label
                ),
            },
            None => Solution {
                question: q,
                value: None,
                choice: None,
                found: false,
                explanation: "no catalog GPU fits this plan".into(),
            },
        },
        // llama.cpp's own solvers, answered in its words.
        Question::MaxGpuLayers => Solution::of(q, crate::engines::gpu_layers_answer(model, s)),
        Question::MinCpuMoe => Solution::of(q, crate::engines::cpu_moe_answer(model, s)),
    }
}
