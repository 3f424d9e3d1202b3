//! What-ifs on a logged vLLM start, with the log's own figures as measured
//! facts: the memory vLLM said it left to the KV cache is the truth for the
//! launch that ran, and what the plan predicts for it differs from that by
//! a residual (a driver's reserve, a buffer the rules do not know). Each
//! what-if is the plan's prediction for the changed launch plus that
//! residual, so "at `max_model_len` 65,536, does it still start, and how
//! many requests fit?" is answered from the measurement, not from the
//! formula alone.
//!
//! The residual carries over while the change leaves the profile as it was:
//! `max_model_len` does not enter vLLM's profile run (`max_num_batched_tokens`
//! and `max_num_seqs` do), and `gpu_memory_utilization` moves only the
//! requested share of the total. Both are what the what-ifs change.

use serde::Serialize;

use super::{Figure, LogEngine, StartupLog};
use crate::engines::{Engine, EngineReport, vllm};
use crate::estimate::{Scenario, ValidScenario, estimate};
use crate::model::Model;

/// One changed launch and what it would give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    /// What changed from the logged launch, in words (`as logged`,
    /// `max_model_len × 2`).
    pub change: String,
    pub max_model_len: u64,
    pub gpu_memory_utilization: f64,
    /// The memory left to the KV cache on the tightest GPU: the plan's
    /// prediction plus the logged launch's residual.
    pub available_kv_bytes: u64,
    pub kv_cache_tokens: u64,
    /// Requests of `max_model_len` tokens the KV cache holds at once, in hundredths.
    pub max_concurrency_hundredths: u64,
    /// Whether vLLM starts: one request of `max_model_len` tokens fits.
    pub starts: bool,
}

/// The what-ifs and the residual they carry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIfs {
    /// Logged minus predicted available KV memory of the logged launch
    /// (bytes; negative when the plan predicted more than vLLM left).
    pub residual_bytes: i64,
    pub rows: Vec<WhatIf>,
}

/// The what-ifs of a logged vLLM start whose plan is `logged` (the launch
/// as the log names it, see [`super::logged_engine`]): the launch itself
/// (which reproduces the log), longer `max_model_len`s up to the model's
/// own, and 0.05 more `gpu_memory_utilization`. `None` when the log is not
/// vLLM's, states no available KV memory, or the plan is not vLLM's.
pub fn what_ifs(log: &StartupLog, model: &Model, logged: &ValidScenario) -> Option<WhatIfs> {
    let c = Calibrated::new(log, model, logged)?;
    let (mml, util) = (c.base.max_model_len, c.base.gpu_memory_utilization);
    let longest = model.arch.text.max_position_embeddings.unwrap_or(mml).max(mml);
    let mut changes: Vec<(String, u64, f64)> = vec![("as logged".into(), mml, util)];
    for factor in [2, 4] {
        let len = mml.saturating_mul(factor);
        if len <= longest {
            changes.push((format!("max_model_len × {factor}"), len, util));
        }
    }
    if longest > mml.saturating_mul(4) || (longest > mml && changes.len() == 1) {
        // A preset standing in for the log's model by its base name
        // (`-Instruct-2507`) has its own length, not the log's model's.
        let stand_in =
            super::logged_preset(log).is_none() && super::logged_base_preset(log).is_some_and(|p| p.name == model.name);
        let name = if stand_in { "the preset's own length" } else { "the model's own length" };
        changes.push((name.into(), longest, util));
    }
    if changes.len() == 1 && mml >= 2 {
        changes.push(("max_model_len ÷ 2".into(), mml / 2, util));
    }
    if util < 0.9 + 1e-9 {
        let more = ((util + 0.05) * 100.0).round() / 100.0;
        changes.push((format!("gpu_memory_utilization {more}"), mml, more));
    }
    let rows = changes.into_iter().filter_map(|(change, len, u)| c.at(model, logged, change, len, u)).collect();
    Some(WhatIfs { residual_bytes: c.residual_bytes, rows })
}

/// One what-if of a logged vLLM start: the launch with `max_model_len` and
/// `gpu_memory_utilization` changed, the log's residual kept.
pub fn what_if(
    log: &StartupLog,
    model: &Model,
    logged: &ValidScenario,
    max_model_len: u64,
    gpu_memory_utilization: f64,
) -> Option<WhatIf> {
    let c = Calibrated::new(log, model, logged)?;
    c.at(model, logged, "asked".into(), max_model_len, gpu_memory_utilization)
}

/// A logged launch's options, its predicted report and the residual.
struct Calibrated {
    options: vllm::Options,
    base: vllm::Report,
    residual_bytes: i64,
}

impl Calibrated {
    fn new(log: &StartupLog, model: &Model, logged: &ValidScenario) -> Option<Self> {
        if log.engine != LogEngine::Vllm {
            return None;
        }
        let Engine::Vllm(options) = logged.engine else { return None };
        // The tightest GPU, as vLLM sizes one pool for all by the smallest.
        let logged_kv = log
            .facts
            .iter()
            .filter_map(|f| match f.figure {
                Figure::AvailableKv { bytes, negative: false } => Some(bytes),
                _ => None,
            })
            .min()?;
        let base = report(model, logged, options)?;
        let residual_bytes = i64::try_from(i128::from(logged_kv) - i128::from(logged_figure(&base))).ok()?;
        Some(Self { options, base, residual_bytes })
    }

    fn at(&self, model: &Model, logged: &ValidScenario, change: String, len: u64, util: f64) -> Option<WhatIf> {
        let o = vllm::Options { max_model_len: Some(len), gpu_memory_utilization: Some(util), ..self.options };
        Some(corrected(change, &report(model, logged, o)?, self.residual_bytes.into()))
    }
}

/// The vLLM report of `logged` run with `o`, or `None` when the changed
/// launch is not a valid plan.
fn report(model: &Model, logged: &ValidScenario, o: vllm::Options) -> Option<vllm::Report> {
    let s: Scenario = Scenario { engine: Engine::Vllm(o), ..logged.clone().into_inner() };
    match estimate(model, s.validate_for(model).ok()?).engine_report {
        Some(EngineReport::Vllm(r)) => Some(r),
        Some(EngineReport::Sglang(_) | EngineReport::LlamaCpp(_)) | None => None,
    }
}

fn tightest(r: &vllm::Report) -> u64 {
    r.per_gpu.iter().map(|g| g.available_kv_bytes).min().unwrap_or(0)
}

/// The plan's figure for the log's "Available KV cache memory": the pool,
/// or under 0.34's extensible KV cache the profile's estimate that line
/// prints (the pool is measured later, the residual the same memory).
fn logged_figure(r: &vllm::Report) -> u64 {
    r.per_gpu.iter().map(vllm::GpuKv::logged_kv_bytes).min().unwrap_or(0)
}

/// The report's figures with `residual` added to its available memory:
/// blocks of the largest block, and tokens and concurrency in proportion
/// to the blocks (vLLM's `GPU KV cache size` and `Maximum concurrency` are
/// both the blocks over a per-request count).
fn corrected(change: String, r: &vllm::Report, residual: i128) -> WhatIf {
    let available = u64::try_from((i128::from(tightest(r)) + residual).max(0)).unwrap_or(u64::MAX);
    let block = r.per_gpu.iter().map(|g| g.block_bytes).max().unwrap_or(0);
    let blocks = available.checked_div(block).unwrap_or(0);
    let scale = |figure: u128| -> u64 {
        match u128::from(r.num_gpu_blocks) {
            0 => 0,
            predicted => u64::try_from(figure * u128::from(blocks) / predicted).unwrap_or(u64::MAX),
        }
    };
    let tokens =
        if r.num_gpu_blocks == 0 { blocks.saturating_mul(r.block_size) } else { scale(r.kv_cache_tokens.into()) };
    // vLLM's own test: one request of `max_model_len` fits in the blocks.
    let need = r.blocks_per_request;
    let hundredths = u64::try_from(u128::from(blocks) * 100 / u128::from(need.max(1))).unwrap_or(u64::MAX);
    WhatIf {
        change,
        max_model_len: r.max_model_len,
        gpu_memory_utilization: r.gpu_memory_utilization,
        available_kv_bytes: available,
        kv_cache_tokens: tokens,
        max_concurrency_hundredths: hundredths,
        starts: need > 0 && blocks >= need,
    }
}
