//! A start-up log against the estimate of the plan that was started: each
//! logged figure beside the one the estimate predicts for the same term, on
//! the same GPU, so the page and the CLI can show where they part.

use serde::Serialize;

use super::{Fact, Figure, LogEngine, StartupLog};
use crate::engines::EngineReport;
use crate::estimate::Estimate;

/// How a figure is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "unit", content = "value")]
pub enum Amount {
    Bytes(u64),
    Tokens(u64),
    Blocks(u64),
    /// A ratio in hundredths (vLLM's `Maximum concurrency … 5.23x`).
    Hundredths(u64),
    /// A fraction in thousandths.
    Permille(u64),
}

impl Amount {
    fn value(self) -> u64 {
        match self {
            Amount::Bytes(v) | Amount::Tokens(v) | Amount::Blocks(v) | Amount::Hundredths(v) | Amount::Permille(v) => v,
        }
    }
}

/// One logged figure and the estimate's for the same term.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// What is compared, in words.
    pub term: &'static str,
    /// The log line the figure came from.
    pub line: usize,
    /// The GPU the row is about (the plan's index), when the log says.
    pub gpu: usize,
    pub logged: Amount,
    /// `None` when the estimate has no figure for this term (another engine
    /// in the plan, or a term the estimate does not model).
    pub predicted: Option<Amount>,
}

impl Row {
    /// `(predicted − logged) / logged` in tenths of a percent, when both are there.
    pub fn error_permille(&self) -> Option<i64> {
        error_permille(self.logged.value(), self.predicted?.value())
    }
}

/// The rows for every logged figure the estimate can answer for. A log of
/// another engine than the plan's gets rows without predictions, and one
/// note saying so.
pub fn reconcile(log: &StartupLog, e: &Estimate) -> (Vec<Row>, Vec<String>) {
    let mut notes = Vec::new();
    let rows: Vec<Row> = match (log.engine, &e.engine_report) {
        (LogEngine::Vllm, Some(EngineReport::Vllm(r))) => {
            log.facts.iter().filter_map(|f| vllm_row(f, r, e, &mut notes)).collect()
        }
        (LogEngine::Sglang, Some(EngineReport::Sglang(r))) => {
            notes.extend(sglang_logged_free(log, r, e));
            log.facts.iter().flat_map(|f| sglang_rows(f, r, e)).collect()
        }
        // Buffer by buffer, with llama.cpp's own names: `buffers.rs`.
        (LogEngine::LlamaCpp, Some(EngineReport::LlamaCpp(_))) => Vec::new(),
        _ => {
            notes.push(format!(
                "the log is {}'s but the plan runs {}: pass --engine to compare them",
                log.engine.name(),
                e.engine.name()
            ));
            Vec::new()
        }
    };
    (rows, notes)
}

/// The plan GPU a fact is about: `Worker_TP3` / `TP3` / `VllmWorker rank=3`
/// → 3, else the first.
fn gpu_of(f: &Fact, e: &Estimate) -> usize {
    let n =
        f.scope.as_deref().and_then(|s| s.rsplit(['P', '=']).next()).and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
    n.min(e.per_gpu.len().saturating_sub(1))
}

fn vllm_row(f: &Fact, r: &crate::engines::vllm::Report, e: &Estimate, notes: &mut Vec<String>) -> Option<Row> {
    let gpu = gpu_of(f, e);
    let kv = r.per_gpu.get(gpu);
    let row = |term, logged, predicted| Some(Row { term, line: f.line, gpu, logged, predicted });
    match f.figure {
        Figure::Weights { bytes } => row("weights", Amount::Bytes(bytes), kv.map(|k| Amount::Bytes(k.weight_bytes))),
        Figure::NonTorch { bytes } => {
            row("memory outside PyTorch", Amount::Bytes(bytes), kv.map(|k| Amount::Bytes(k.non_torch_bytes)))
        }
        Figure::ActivationPeak { bytes } => {
            row("activation peak", Amount::Bytes(bytes), kv.map(|k| Amount::Bytes(k.activation_bytes)))
        }
        Figure::CudaGraphs { bytes } => {
            row("CUDA graphs", Amount::Bytes(bytes), kv.map(|k| Amount::Bytes(k.cuda_graph_bytes)))
        }
        // From 0.21 the estimate is what the KV budget takes; before, it
        // is logged beside a capture the plan models.
        Figure::CudaGraphEstimate { bytes } => match u64::try_from(bytes) {
            Ok(bytes) => row("CUDA graphs", Amount::Bytes(bytes), kv.map(|k| Amount::Bytes(k.estimated_graph_bytes()))),
            // No row holds a negative figure: said in words, with what it
            // did to the KV cache.
            Err(_) => {
                notes.extend(kv.map(|k| negative_graph_estimate(f.line, bytes.unsigned_abs(), k, r)));
                None
            }
        },
        // Under 0.34's extensible KV cache the line is the profile's
        // estimate, which reserves the range the measured pool commits.
        Figure::AvailableKv { bytes, negative: false } => {
            row("available KV cache memory", Amount::Bytes(bytes), kv.map(|k| Amount::Bytes(k.logged_kv_bytes())))
        }
        // What CUDA reports (`mem_get_info`'s total), which vLLM requests its
        // share of: the plan's from what it requests, its capacity otherwise.
        Figure::DeviceTotal { bytes } => {
            let cuda_total = kv
                .filter(|_| r.gpu_memory_utilization > 0.0)
                .map(|k| (k.requested_bytes as f64 / r.gpu_memory_utilization).round() as u64)
                .or_else(|| e.per_gpu.get(gpu).map(|g| g.capacity_bytes));
            row("device memory", Amount::Bytes(bytes), cuda_total.map(Amount::Bytes))
        }
        Figure::Utilization { permille } => row(
            "gpu_memory_utilization",
            Amount::Permille(permille),
            Some(Amount::Permille((r.gpu_memory_utilization * 1000.0).round() as u64)),
        ),
        Figure::KvTokens { tokens } => {
            row("KV cache tokens", Amount::Tokens(tokens), Some(Amount::Tokens(r.kv_cache_tokens)))
        }
        Figure::KvBlocks { blocks } => row("KV blocks", Amount::Blocks(blocks), Some(Amount::Blocks(r.num_gpu_blocks))),
        // vLLM's own suggestion keeps 150 MiB spare and counts the CUDA
        // graphs it captured (0.33.0 `gpu_worker.py`, `redundancy_buffer_memory`).
        Figure::SuggestedKv { bytes } => row(
            "suggested --kv-cache-memory",
            Amount::Bytes(bytes),
            kv.map(|k| {
                // 0.34's extensible cache: the profile's estimate less the
                // graphs captured, not the pool it measured.
                let estimated = k.reserved_kv_bytes.is_some() || !r.version.subtracts_cuda_graphs();
                let graphs = if estimated { k.cuda_graph_bytes } else { 0 };
                Amount::Bytes(k.logged_kv_bytes().saturating_sub(graphs).saturating_sub(SUGGESTION_SPARE_BYTES))
            }),
        ),
        Figure::AutoMaxModelLen { tokens } => {
            row("max_model_len chosen by auto-fit", Amount::Tokens(tokens), r.auto_max_model_len.map(Amount::Tokens))
        }
        Figure::Concurrency { tokens_per_request, hundredths } => {
            if tokens_per_request != r.max_model_len {
                notes.push(format!(
                    "the log's concurrency is for {tokens_per_request} tokens per request, the plan's max_model_len \
                     is {}: pass --max-model-len {tokens_per_request} to compare",
                    r.max_model_len
                ));
                return None;
            }
            row(
                "maximum concurrency",
                Amount::Hundredths(hundredths),
                Some(Amount::Hundredths((r.max_concurrency * 100.0).round() as u64)),
            )
        }
        _ => None,
    }
}

/// A negative `Estimated CUDA graph memory` (`minus` bytes below zero) in
/// words: from 0.21 vLLM takes the estimate from the KV budget as it is
/// (`v1/worker/gpu_worker.py::determine_available_memory`), so the log's
/// graphs added to its KV cache what the plan's estimate takes away.
fn negative_graph_estimate(
    line: usize,
    minus: u64,
    k: &crate::engines::vllm::GpuKv,
    r: &crate::engines::vllm::Report,
) -> String {
    use crate::units::{UnitSystem, format_bytes};
    let b = |n: u64| format_bytes(n, UnitSystem::Binary);
    let plan = k.estimated_graph_bytes();
    let head = format!(
        "line {line}: vLLM estimated its CUDA graphs at -{} before sizing the KV cache, the plan at {}",
        b(minus),
        b(plan)
    );
    if k.subtracted_graph_bytes > 0 {
        format!(
            "{head}; the {} rules take the estimate from the KV budget, so the log's added {} to its KV cache where \
             the plan's takes {} away: {} of the KV figures' difference is this term",
            r.version.id(),
            b(minus),
            b(plan),
            b(minus.saturating_add(plan))
        )
    } else {
        format!("{head}; the {} rules do not take the estimate from the KV budget", r.version.id())
    }
}

/// The memory vLLM leaves spare in the `--kv-cache-memory` it suggests
/// (`redundancy_buffer_memory = 150 * (1 << 20)`, 0.11.0 – 0.33.0 `v1/worker/gpu_worker.py`).
pub const SUGGESTION_SPARE_BYTES: u64 = 150 << 20;

/// The rows of one SGLang fact: the pool in tokens and in bytes, the
/// recurrent-state pool, the weights, the distributed init; the CUDA graphs
/// captured without a prediction, which SGLang's plan leaves inside the
/// memory `mem_fraction_static` keeps back rather than counting apart.
fn sglang_rows(f: &Fact, r: &crate::engines::sglang::Report, e: &Estimate) -> Vec<Row> {
    let gpu = gpu_of(f, e);
    let peak = e.per_gpu.get(gpu);
    let row = |term, logged, predicted| Row { term, line: f.line, gpu, logged, predicted };
    match f.figure {
        Figure::KvPool { tokens, bytes, .. } => vec![
            row("KV pool tokens", Amount::Tokens(tokens), Some(Amount::Tokens(r.max_total_num_tokens))),
            row("KV pool", Amount::Bytes(bytes), peak.map(|g| Amount::Bytes(g.budget.kv_cache_bytes))),
        ],
        _ => sglang_row(f, r, e).into_iter().collect(),
    }
}

fn sglang_row(f: &Fact, r: &crate::engines::sglang::Report, e: &Estimate) -> Option<Row> {
    let gpu = gpu_of(f, e);
    let peak = e.per_gpu.get(gpu);
    let row = |term, logged, predicted| Some(Row { term, line: f.line, gpu, logged, predicted });
    match f.figure {
        Figure::Weights { bytes } => {
            row("weights", Amount::Bytes(bytes), peak.map(|g| Amount::Bytes(g.budget.weight_bytes)))
        }
        // The plan's pool where it has one (a model with a recurrent state).
        Figure::StatePool { bytes, .. } => row(
            "recurrent-state pool",
            Amount::Bytes(bytes),
            peak.map(|g| g.budget.state_bytes).filter(|&b| b > 0).map(Amount::Bytes),
        ),
        Figure::CudaGraphs { bytes } => row("CUDA graphs", Amount::Bytes(bytes), None),
        Figure::MaxTotalTokens { tokens } => {
            row("max_total_num_tokens", Amount::Tokens(tokens), Some(Amount::Tokens(r.max_total_num_tokens)))
        }
        // Only the rules that count it (`0.5.23-init`, `0.5.23-alloc`) predict it.
        Figure::DistInit { bytes } => {
            row(
                "distributed init",
                Amount::Bytes(bytes),
                // The overhead beyond the CUDA context, under the rules that count it.
                match r.version {
                    crate::engines::sglang::Version::V0_5_23Init | crate::engines::sglang::Version::V0_5_23Alloc => {
                        peak.map(|g| {
                            Amount::Bytes(g.budget.overhead_bytes.saturating_sub(crate::plan::CUDA_CONTEXT_BYTES))
                        })
                    }
                    crate::engines::sglang::Version::TpTable | crate::engines::sglang::Version::V0_5_23 => None,
                },
            )
        }
        _ => None,
    }
}

/// SGLang's pool from the log's own free memory: the rule (`rest = free after
/// the weights − reserved`, `model_runner.py::profile_max_num_token`) over
/// what the first rank logged (`Load weight end. … avail mem=…, mem usage=…`:
/// free after the weights, and the weights, whose sum was free before them).
/// Beside it, the `mem_fraction_static` the logged pool implies, and the
/// plan's free memory before the weights: where that is more than the log's,
/// the rest was held before SGLang loaded the weights (other processes, a
/// display, a larger CUDA context), which SGLang sizes its pool from and the
/// plan does not count.
/// `None` without those lines, or for a model with a recurrent state (its
/// pool splits `rest` first).
fn sglang_logged_free(log: &StartupLog, r: &crate::engines::sglang::Report, e: &Estimate) -> Option<String> {
    use crate::engines::sglang::Version;
    use crate::units::{UnitSystem, format_bytes};
    if e.state_bytes_per_sequence > 0 || r.cell_size_bytes == 0 {
        return None;
    }
    let first = |want: fn(&Figure) -> Option<u64>| log.facts.iter().find_map(|f| want(&f.figure));
    let weights = first(|f| match *f {
        Figure::Weights { bytes } => Some(bytes),
        _ => None,
    })?;
    let free_after = first(|f| match *f {
        Figure::Free { after: super::Stage::Weights, bytes } => Some(bytes),
        _ => None,
    })?;
    let logged = first(|f| match *f {
        Figure::MaxTotalTokens { tokens } | Figure::KvPool { tokens, .. } => Some(tokens),
        _ => None,
    })?;
    let before = free_after.saturating_add(weights);
    let kept_back = 1.0 - r.mem_fraction_static;
    // What the share is of: CUDA's total (the same GPU's in the log and the
    // plan), or what was free before the weights.
    let base = match r.version {
        Version::TpTable | Version::V0_5_23 => (r.reserved_bytes as f64 / kept_back.max(f64::EPSILON)).round() as u64,
        Version::V0_5_23Init | Version::V0_5_23Alloc => before,
    };
    let reserved = (base as f64 * kept_back).ceil() as u64;
    let tokens = free_after.saturating_sub(reserved) / r.cell_size_bytes;
    let error = error_permille(logged, tokens).map_or(String::new(), |p| format!(" ({:+.1} %)", p as f64 / 10.0));
    // The share the logged pool leaves of the same base.
    let kept = free_after.saturating_sub(logged.saturating_mul(r.cell_size_bytes));
    let implied = 1.0 - kept as f64 / base.max(1) as f64;
    let gib = |b: u64| format_bytes(b, UnitSystem::Binary);
    let plan = r.free_before_weights_bytes;
    let memory = match plan.cmp(&before) {
        std::cmp::Ordering::Greater => format!(
            "the plan's GPU has {} free before the weights, {} more than this one had: memory the GPU held before \
             SGLang loaded the weights that the plan does not count (other processes, a display, a larger CUDA \
             context), which SGLang sizes its pool from",
            gib(plan),
            gib(plan - before)
        ),
        _ => format!("the plan's GPU has {} free before the weights, {} less", gib(plan), gib(before - plan)),
    };
    Some(format!(
        "SGLang's rule over the log's own memory ({} free before the weights, {} of weights, {} free after them) \
         gives a pool of {} tokens against {} logged{error} at the plan's mem_fraction_static {:.3}; the logged pool \
         leaves {} of {}, a mem_fraction_static of {implied:.3}; {memory}",
        gib(before),
        gib(weights),
        gib(free_after),
        crate::explain::thousands(tokens),
        crate::explain::thousands(logged),
        r.mem_fraction_static,
        gib(kept),
        gib(base),
    ))
}

/// `(predicted − logged) / logged` in tenths of a percent; `None` for a zero log.
pub(super) fn error_permille(logged: u64, predicted: u64) -> Option<i64> {
    let logged = i128::from(logged);
    if logged == 0 {
        return None;
    }
    i64::try_from((i128::from(predicted) - logged) * 1000 / logged).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_relative_to_the_logged_figure() {
        let row = |logged, predicted| Row { term: "t", line: 1, gpu: 0, logged: Amount::Bytes(logged), predicted };
        assert_eq!(row(1000, Some(Amount::Bytes(1041))).error_permille(), Some(41));
        assert_eq!(row(1000, Some(Amount::Bytes(927))).error_permille(), Some(-73));
        assert_eq!(row(0, Some(Amount::Bytes(5))).error_permille(), None);
        assert_eq!(row(10, None).error_permille(), None);
    }
}
