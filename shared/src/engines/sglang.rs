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
//! `arg_groups/fields/schedule.py`).

use serde::{Deserialize, Serialize};

use super::commands::{Commands, Shorten, no_settings};
use super::parallel::{self, HeadCheck, SplitError};
use super::{EngineKind, EngineTerms, EngineWarnings, Plan, Scenario, transformers, vllm};
use crate::arch::TextModel;
use crate::explain::{Basis, Term, thousands};
use crate::formats::WeightFormat;
use crate::kv::{self, KvDtype};
use crate::plan::{GpuBudget, MAX_CONCURRENCY, Verdict, activations, terms::demand};
use crate::units::{GIB, UnitSystem, decimal_short, format_bytes};

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Options {
    /// Default: SGLang's table by tensor-parallel degree.
    pub mem_fraction_static: Option<f64>,
    /// `--context-length`; default: the model's `max_position_embeddings`.
    pub context_length: Option<u64>,
    /// `--chunked-prefill-size`; default 2,048, or 8,192 on ≥ 70 GiB GPUs.
    pub chunked_prefill_size: Option<u64>,
}

/// The splits SGLang refuses: heads that do not divide over the ranks (in
/// `divide`, at load) and more stages than layers (`assert
/// num_hidden_layers >= pp_size` in make_layers).
pub(crate) fn check_split(s: &Scenario, text: &TextModel) -> Result<(), SplitError> {
    parallel::check_heads(EngineKind::Sglang, HeadCheck::AtLoad, s.tp, text)?;
    parallel::check_stages(s, text)
}

pub(crate) fn too_many_stages(_: u64, _: u64) -> String {
    "SGLang refuses it (`assert num_hidden_layers >= pp_size` in make_layers)".to_owned()
}

/// SGLang's checks of its knobs.
pub(crate) fn check_knobs(o: Options) -> Result<(), String> {
    super::fraction("mem_fraction_static", o.mem_fraction_static)
}

/// `mem_fraction_static` default by TP degree (`server_args.py`, the table
/// used before the GPU-size-based rule: 0.88 / 0.87 / 0.85 / 0.83 / 0.79).
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
    pub mem_fraction_static: f64,
    pub max_total_num_tokens: u64,
    /// KV bytes of one token on one rank (all layers).
    pub cell_size_bytes: u64,
    pub context_length: u64,
    pub chunked_prefill_size: u64,
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
}

fn pool(p: &Plan, o: Options) -> Pool {
    let fraction = o.mem_fraction_static.unwrap_or_else(|| default_mem_fraction(p.tp()));
    let large = p.scenario.gpus.first().is_some_and(|g| g.capacity_bytes >= 70 * GIB);
    let chunk = o.chunked_prefill_size.unwrap_or(if large { 8192 } else { 2048 });
    let mut tokens = u64::MAX;
    let mut cell_max = 0;
    let mut state_slots: Option<u64> = None;
    for (g, slot) in p.scenario.gpus.iter().enumerate() {
        let stage = p.stage(g);
        let cell = kv::bytes_per_token(p.stage_kv(stage));
        cell_max = cell_max.max(cell);
        // Free after loading weights (the context already resident), minus the reserved share.
        let free_after_weights =
            slot.capacity_bytes.saturating_sub(p.base_overhead()).saturating_sub(p.stage_weights(stage));
        let reserved = (slot.capacity_bytes as f64 * (1.0 - fraction)).ceil() as u64;
        let mut rest = free_after_weights.saturating_sub(reserved);
        let per_req = p.stage_state(stage);
        let ratio = MAMBA_FULL_MEMORY_RATIO;
        let budget = (rest as f64 * ratio / (1.0 + ratio)) as u64;
        if let Some(slots) = budget.saturating_sub(per_req).checked_div(per_req) {
            state_slots = Some(state_slots.map_or(slots, |s| s.min(slots)));
            // The pool's slots plus its padding slot leave the KV budget.
            rest = rest.saturating_sub(slots.saturating_add(1).saturating_mul(per_req));
        }
        tokens = tokens.min(rest.checked_div(cell).unwrap_or(0));
    }
    Pool { fraction, tokens: if tokens == u64::MAX { 0 } else { tokens }, cell: cell_max, chunk, state_slots }
}

pub(crate) fn context_length(p: &Plan, o: Options) -> u64 {
    o.context_length.or(p.model.arch.text.max_position_embeddings).unwrap_or_else(|| p.scenario.sequence_tokens())
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
        weight_bytes: p.stage_weights(stage),
        kv_cache_bytes: pool.tokens.saturating_mul(kv::bytes_per_token(p.stage_kv(stage))),
        state_bytes: pool.state_slots.map_or(0, |s| s.saturating_add(1).saturating_mul(p.stage_state(stage))),
        activation_bytes: act,
        overhead_bytes: p.base_overhead(),
    }
}

pub(crate) fn fits(p: &Plan, o: Options, seq: u64, batch: u64) -> bool {
    let pool = pool(p, o);
    p.load_verdict().is_none()
        && pool.tokens > 0
        && seq.saturating_mul(batch) <= pool.tokens
        && pool.state_slots.is_none_or(|s| batch <= s)
}

/// The most sequences of `seq` tokens the pool holds at once, directly.
pub(crate) fn max_concurrency(p: &Plan, o: Options, seq: u64) -> u64 {
    let pool = pool(p, o);
    if p.load_verdict().is_some() || pool.tokens == 0 {
        return 0;
    }
    let by_tokens = pool.tokens.checked_div(seq).unwrap_or(u64::MAX);
    by_tokens.min(pool.state_slots.unwrap_or(u64::MAX)).min(MAX_CONCURRENCY)
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
    let ctx = context_length(p, o);
    if pool.tokens > 0 && pool.tokens < ctx {
        log_lines.push(format!(
            "the pool holds {} tokens, fewer than context_length {ctx}: one request cannot reach its full context",
            pool.tokens
        ));
    }
    Report {
        mem_fraction_static: pool.fraction,
        max_total_num_tokens: pool.tokens,
        cell_size_bytes: pool.cell,
        context_length: ctx,
        chunked_prefill_size: pool.chunk,
        startup_error: error,
        log_lines,
    }
}

pub(crate) fn terms(p: &Plan, r: &Report, kv_demand_bytes: u64) -> EngineTerms {
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
        overhead: crate::plan::terms::tp_comm_note(p),
        own: vec![Term::tokens(
            "SGLang max_total_num_tokens",
            r.max_total_num_tokens,
            format!(
                "(free after weights − total × (1 − mem_fraction_static {})) ÷ cell size {} bytes",
                decimal_short(r.mem_fraction_static, 3),
                thousands(r.cell_size_bytes)
            ),
            Basis::EngineRule,
        )],
    }
}

pub(crate) fn warnings(p: &Plan) -> EngineWarnings {
    EngineWarnings { setup: super::gguf_warning(p).into_iter().collect(), fit: Vec::new() }
}

/// The bytes a plan needs on GPU `g` against what SGLang may use there: the
/// fixed parts and the sequences' KV cache, against `mem_fraction_static` ×
/// capacity plus the activations it keeps outside that share.
pub(crate) fn need_and_usable(
    p: &Plan,
    o: Options,
    fixed: u64,
    per_token: u64,
    activations: u64,
    cap: f64,
) -> (u64, f64) {
    let s = &p.scenario;
    let fraction = o.mem_fraction_static.unwrap_or_else(|| default_mem_fraction(p.tp()));
    let work = per_token.saturating_mul(s.sequence_tokens()).saturating_mul(s.concurrency);
    (fixed.saturating_add(work), cap * fraction + activations as f64)
}

/// SGLang's flags; FP8 (e4m3) is its cheapest KV cache.
pub const COMMANDS: Commands = Commands {
    cheaper_kv_dtype: KvDtype::Fp8,
    kv_dtype: "python -m sglang.launch_server ... --kv-cache-dtype fp8_e4m3",
    shorten: Shorten::Context(|repo, len| {
        format!("python -m sglang.launch_server --model-path {repo} --context-length {len}")
    }),
    concurrency: |repo, n| format!("python -m sglang.launch_server --model-path {repo} --max-running-requests {n}"),
    more_gpus_are_tensor_parallel: true,
    more_gpus: |_, _, repo, n| format!("python -m sglang.launch_server --model-path {repo} --tp {n}"),
    weights: weight_code,
    rebalance: super::commands::balanced_device_map,
    serve: |repo, _| format!("python -m sglang.launch_server --model-path {repo}"),
    settings: no_settings,
};

/// Loading the weights in format `f`: SGLang's quantization flag for FP8;
/// bitsandbytes and GPTQ/AWQ as vLLM loads them; else transformers' code.
fn weight_code(f: WeightFormat, repo: &str) -> String {
    match f {
        WeightFormat::Fp8 { .. } => format!("python -m sglang.launch_server --model-path {repo} --quantization fp8"),
        WeightFormat::Bnb4 { .. } | WeightFormat::Gptq { .. } | WeightFormat::Awq { .. } => {
            (vllm::COMMANDS.weights)(f, repo)
        }
        f => transformers::weight_code(f, repo),
    }
}
