//! vLLM's KV-cache start-up errors.

use crate::explain::thousands;
use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::{gib, pct};
use crate::oom::diagnose::{CauseId, DiagnosisFix, FixId};

pub(super) fn vllm_max_seq_len(f: &Facts, b: &mut Board) {
    let r = f.r;
    let (Some(len), Some(tokens)) = (r.max_seq_len, r.kv_cache_tokens) else {
        b.add(CauseId::KvCacheGrowth, 80, "vLLM's KV cache cannot hold one request of the model's max length".into());
        return;
    };
    b.add(
        CauseId::KvCacheGrowth,
        90,
        format!(
            "vLLM's KV cache holds {} tokens, {} of the {} one request of max_model_len needs: vLLM refuses to start",
            thousands(tokens),
            pct(tokens, len),
            thousands(len)
        ),
    );
    b.limits.push(format!("vLLM's cache holds {} tokens: --max-model-len {} fits", thousands(tokens), tokens));
    b.fix(fix(
        FixId::MaxModelLen,
        CauseId::KvCacheGrowth,
        format!("Limit the context to the {} tokens the cache holds", thousands(tokens)),
        GivesUp::Length,
        None,
        format!("vllm serve ... --max-model-len {tokens}"),
    ));
    vllm_more_memory(f, b, None, Some(len as f64 / tokens.max(1) as f64));
    vllm_fp8_cache(b, None, len.saturating_sub(tokens) <= tokens);
}

pub(super) fn vllm_kv_too_small(f: &Facts, b: &mut Board) {
    let r = f.r;
    let (Some(len), Some(needed), Some(available)) = (r.max_seq_len, r.kv_needed_bytes, r.kv_available_bytes) else {
        b.add(CauseId::KvCacheGrowth, 80, "vLLM's KV cache cannot hold one request of the model's max length".into());
        return;
    };
    let missing = needed.saturating_sub(available);
    b.add(
        CauseId::KvCacheGrowth,
        90,
        format!(
            "one request of {} tokens needs {} of KV cache, {} ({}) more than the {} left for it",
            thousands(len),
            gib(needed),
            gib(missing),
            pct(missing, needed),
            gib(available)
        ),
    );
    let per_token = needed / len.max(1);
    let fitting = match r.estimated_max_model_len {
        Some(n) => n,
        None => (available / per_token.max(1)) / 256 * 256,
    };
    if fitting > 0 {
        let source = if r.estimated_max_model_len.is_some() { "vLLM's own estimate" } else { "in proportion" };
        b.limits.push(format!("--max-model-len {fitting} fits ({source})"));
        b.fix(fix(
            FixId::MaxModelLen,
            CauseId::KvCacheGrowth,
            format!("Limit the context to {} tokens ({source})", thousands(fitting)),
            GivesUp::Length,
            Some(needed.saturating_sub(per_token.saturating_mul(fitting))),
            format!("vllm serve ... --max-model-len {fitting}"),
        ));
    }
    vllm_more_memory(f, b, Some(missing), None);
    vllm_fp8_cache(b, Some(needed / 2), needed / 2 <= available);
}

/// Raise `--gpu-memory-utilization` by what is missing (bytes, or a factor
/// of the current cache when only tokens are known).
fn vllm_more_memory(f: &Facts, b: &mut Board, missing: Option<u64>, factor: Option<f64>) {
    let code = match (missing, f.total) {
        (Some(m), Some(t)) if t > 0 => {
            let add = ((m as f64 / t as f64) * 100.0).ceil() / 100.0;
            format!(
                "vllm serve ... --gpu-memory-utilization <current + {add:.2}>   # e.g. 0.90 → {:.2}; only if nothing else uses the GPU",
                0.90 + add
            )
        }
        _ => "vllm serve ... --gpu-memory-utilization 0.95   # only if nothing else uses the GPU".into(),
    };
    let title = match (missing, factor) {
        (Some(m), _) => format!("Give vLLM {} more of the GPU", gib(m)),
        (None, Some(x)) => format!("Give vLLM's KV cache {x:.1}× the memory it has"),
        _ => "Give vLLM more of the GPU".into(),
    };
    b.fix(fix(FixId::GpuMemoryUtilization, CauseId::KvCacheGrowth, title, GivesUp::Nothing, None, code));
}

fn vllm_fp8_cache(b: &mut Board, saves: Option<u64>, fits: bool) {
    b.fix(DiagnosisFix {
        fits: saves.map(|_| fits),
        ..fix(
            FixId::KvCacheDtype,
            CauseId::KvCacheGrowth,
            "Store the KV cache in fp8 (half of a 16-bit cache, twice the tokens)".into(),
            GivesUp::CachePrecision,
            saves,
            "vllm serve ... --kv-cache-dtype fp8".into(),
        )
    });
}

pub(super) fn vllm_no_cache_blocks(f: &Facts, b: &mut Board) {
    let negative = f.r.notes.iter().any(|n| n.contains("negative"));
    b.add(
        CauseId::WeightsTooLarge,
        80,
        format!(
            "vLLM had no memory left for KV cache blocks{}: the weights and the profiled activation peak already take \
             gpu_memory_utilization × the GPU",
            if negative { " (it computed a negative amount)" } else { "" }
        ),
    );
    b.add(
        CauseId::TooLargeOverall,
        50,
        "unless a lighter format or more GPUs are an option, the model does not fit this GPU for serving".into(),
    );
    vllm_more_memory(f, b, None, None);
    b.fix(fix(
        FixId::WeightFormat,
        CauseId::WeightsTooLarge,
        "Load the weights in fp8 (about half of 16-bit)".into(),
        GivesUp::Quality,
        None,
        "vllm serve ... --quantization fp8".into(),
    ));
    b.fix(fix(
        FixId::MoreGpus,
        CauseId::TooLargeOverall,
        "Shard the weights over two GPUs".into(),
        GivesUp::Money,
        None,
        "vllm serve ... --tensor-parallel-size 2".into(),
    ));
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::WeightsTooLarge,
        "Profile a smaller batch, so the activation peak vLLM reserves shrinks".into(),
        GivesUp::Speed,
        None,
        "vllm serve ... --max-num-batched-tokens 2048".into(),
    ));
}

/// `CUDA out of memory occurred when warming up sampler with N dummy
/// requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization`
/// when initializing the engine.` (`v1/worker/gpu_model_runner.py`
/// `_dummy_sampler_run`, 0.8 – 0.13): the logits and sampling tensors of N
/// requests at once, N = min(max_num_seqs, max_num_batched_tokens), did not
/// fit beside the weights and the memory vLLM budgets.
pub(super) fn vllm_sampler_warmup(f: &Facts, b: &mut Board) {
    let n = f.r.warmup_requests;
    let with = n.map_or(String::new(), |n| format!(" with {} dummy requests", thousands(n)));
    b.add(
        CauseId::KvCacheGrowth,
        85,
        format!(
            "vLLM ran out at start-up while warming up its sampler{with}: the logits of that many requests at once \
             (vocabulary × requests) did not fit beside the weights and the memory gpu_memory_utilization gives vLLM"
        ),
    );
    let fewer = n.map_or(128, |n| (n / 2).max(1));
    b.fix(fix(
        FixId::MaxNumSeqs,
        CauseId::KvCacheGrowth,
        "Warm up and serve fewer sequences at once, as vLLM asks".into(),
        GivesUp::Speed,
        None,
        match n {
            Some(n) => format!("vllm serve ... --max-num-seqs {fewer}   # warmed up with {n}"),
            None => format!("vllm serve ... --max-num-seqs {fewer}"),
        },
    ));
    b.fix(fix(
        FixId::GpuMemoryUtilization,
        CauseId::KvCacheGrowth,
        "Leave more of the GPU outside vLLM's budget, as vLLM asks: a lower --gpu-memory-utilization".into(),
        GivesUp::Length,
        None,
        "vllm serve ... --gpu-memory-utilization <lower than now, e.g. 0.85 from the default 0.90>".into(),
    ));
}
