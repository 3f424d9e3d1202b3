//! SGLang (`model_runner.py::profile_max_num_token`): a static share of the
//! GPU, `mem_fraction_static` × total, holds the weights and the KV pool;
//! the rest is left for activations and CUDA graphs.
//!
//! ```text
//! rest                 = free memory after weights − total × (1 − mem_fraction_static)
//! max_total_num_tokens = rest / cell_size   (cell: KV bytes of one token, all layers, one rank)
//! ```

use serde::{Deserialize, Serialize};

use crate::estimate::{Depth, Parts, Prepared, Verdict, activations};
use crate::kv;
use crate::units::GIB;

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Options {
    /// Default: SGLang's table by tensor-parallel degree.
    pub mem_fraction_static: Option<f64>,
    /// `--context-length`; default: the model's `max_position_embeddings`.
    pub context_length: Option<u64>,
    /// `--chunked-prefill-size`; default 2,048, or 8,192 on ≥ 70 GiB GPUs.
    pub chunked_prefill_size: Option<u64>,
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

struct Pool {
    fraction: f64,
    tokens: u64,
    cell: u64,
    chunk: u64,
}

fn pool(p: &Prepared, o: Options) -> Pool {
    let fraction = o.mem_fraction_static.unwrap_or_else(|| default_mem_fraction(p.tp()));
    let large = p.scenario.gpus.first().is_some_and(|g| g.capacity_bytes >= 70 * GIB);
    let chunk = o.chunked_prefill_size.unwrap_or(if large { 8192 } else { 2048 });
    let mut tokens = u64::MAX;
    let mut cell_max = 0;
    for (g, slot) in p.scenario.gpus.iter().enumerate() {
        let stage = p.stage(g);
        let cell = kv::bytes_per_token(p.stage_kv(stage));
        cell_max = cell_max.max(cell);
        // Free after loading weights (the context already resident), minus the reserved share.
        let free_after_weights =
            slot.capacity_bytes.saturating_sub(p.base_overhead()).saturating_sub(p.stage_weights(stage));
        let reserved = (slot.capacity_bytes as f64 * (1.0 - fraction)).ceil() as u64;
        let rest = free_after_weights.saturating_sub(reserved);
        tokens = tokens.min(rest.checked_div(cell).unwrap_or(0));
    }
    Pool { fraction, tokens: if tokens == u64::MAX { 0 } else { tokens }, cell: cell_max, chunk }
}

fn context_length(p: &Prepared, o: Options) -> u64 {
    o.context_length.or(p.model.arch.text.max_position_embeddings).unwrap_or_else(|| p.scenario.sequence_tokens())
}

pub(crate) fn parts(p: &Prepared, o: Options, g: usize) -> Parts {
    let pool = pool(p, o);
    let stage = p.stage(g);
    let text = &p.model.arch.text;
    let mut act = activations::layer_peak(text, pool.chunk, p.act_bytes(), p.tp());
    if p.is_last_stage(stage) {
        act = act.saturating_add(activations::logits(text.vocab_size, p.scenario.concurrency, 1, p.tp()));
    }
    Parts {
        weights: p.stage_weights(stage),
        kv: pool.tokens.saturating_mul(kv::bytes_per_token(p.stage_kv(stage))),
        activations: act,
        overhead: p.base_overhead(),
    }
}

pub(crate) fn fits(p: &Prepared, o: Options, seq: u64, batch: u64) -> bool {
    let pool = pool(p, o);
    p.load_verdict().is_none() && pool.tokens > 0 && seq.saturating_mul(batch) <= pool.tokens
}

/// The most sequences of `seq` tokens the pool holds at once, directly.
pub(crate) fn max_concurrency(p: &Prepared, o: Options, seq: u64) -> u64 {
    let pool = pool(p, o);
    if p.load_verdict().is_some() || pool.tokens == 0 {
        return 0;
    }
    pool.tokens.checked_div(seq).unwrap_or(u64::MAX).min(crate::estimate::MAX_CONCURRENCY)
}

pub(crate) fn verdict(p: &Prepared, o: Options, depth: Depth) -> Verdict {
    if let Some(v) = p.load_verdict() {
        return v;
    }
    let pool = pool(p, o);
    if pool.tokens == 0 {
        return Verdict::EngineRefuses { gpu: 0, largest_context: 0 };
    }
    if p.scenario.sequence_tokens() > pool.tokens {
        return Verdict::EngineRefuses { gpu: 0, largest_context: pool.tokens };
    }
    let _ = depth; // direct: nothing to skip
    Verdict::Fits { max_concurrency: p.max_concurrency() }
}

pub(crate) fn report(p: &Prepared, o: Options) -> Report {
    let pool = pool(p, o);
    let error =
        (pool.tokens == 0).then(|| "Not enough memory. Please try to increase --mem-fraction-static.".to_owned());
    let mut log_lines = vec![format!("max_total_num_tokens={}", pool.tokens)];
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
