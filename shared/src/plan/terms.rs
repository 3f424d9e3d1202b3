//! The terms and warnings every engine shares: the parameters, the weights,
//! the KV cost per token, the workload's demand, the recurrent state, the
//! CUDA context and the capacity. What an engine adds is in its own module
//! (`crate::engines::EngineTerms`); `crate::estimate` puts them in order.

use crate::arch::{AttentionKind, LayerAttention, params::Category};
use crate::explain::{Basis, Term, thousands};
use crate::units::{UnitSystem, decimal, format_bytes};

use super::{CUDA_CONTEXT_BYTES, GpuPeak, Plan, TP_COMM_BYTES, WeightSource};

/// The parameters by part of the model.
pub fn parameters<E>(p: &Plan<'_, E>) -> Term {
    let model = p.model;
    let by = model.layout.params_by_category();
    let l = |c: Category| thousands(by[c as usize]);
    Term::count(
        "parameters",
        model.parameters(),
        format!(
            "embeddings {} + attention {} + MLP {} + experts {} + norms/biases {} + lm_head {} + vision {}",
            l(Category::Embeddings),
            l(Category::Attention),
            l(Category::Mlp),
            l(Category::Experts),
            l(Category::NormsAndBiases),
            l(Category::LmHead),
            l(Category::Vision)
        ),
        Basis::Exact,
    )
}

pub fn weights<E>(p: &Plan<'_, E>) -> Term {
    let model = p.model;
    let s = &p.scenario;
    let bpw = p.weights.total as f64 * 8.0 / model.parameters().max(1) as f64;
    let formula = match p.weights.source {
        WeightSource::Checkpoint => {
            format!("checkpoint safetensors size (exact), {} bits per parameter on average", decimal(bpw, 3))
        }
        WeightSource::Estimated => {
            let kept = s.weights.kept_in_high_precision();
            format!(
                "{} parameters × {} bits on average ({}){}",
                thousands(model.parameters()),
                decimal(bpw, 3),
                s.weights.describe(),
                if kept.is_empty() { String::new() } else { format!("; {kept}") }
            )
        }
    };
    Term::bytes("weights", p.weights.total, formula, Basis::Exact)
}

pub fn kv_per_token<E>(p: &Plan<'_, E>) -> Term {
    let s = &p.scenario;
    let t = &p.model.arch.text;
    let per_token = crate::kv::bytes_per_token(&p.kv_layers);
    let growing = p.kv_layers.iter().filter(|l| l.bytes_per_token > 0).count();
    let formula = match t.attention {
        AttentionKind::Standard { .. } => format!(
            "{growing} layers × (K {} + V {}) × {} KV heads in {} ({} bytes per layer-token)",
            t.head_dim,
            t.v_head_dim,
            t.num_kv_heads,
            s.kv_dtype.id(),
            thousands(p.kv_layers.iter().find(|l| l.bytes_per_token > 0).map_or(0, |l| l.bytes_per_token))
        ),
        // A DSA model's layer-token holds the indexer's key too, and its
        // fp8 latent carries scales (`kv::layer_costs`): the bytes say it.
        AttentionKind::Mla(m) => format!(
            "{growing} layers × one MLA latent of {} + {} values in {} (no separate K and V){} ({} bytes per layer-token)",
            m.kv_lora_rank,
            m.qk_rope_head_dim,
            s.kv_dtype.id(),
            m.indexer.map_or(String::new(), |ix| {
                // GLM-5.2's "shared" layers reuse an earlier top k and keep no key.
                let own = t.layers.iter().filter(|l| !l.shape.indexer_shared).count();
                let on = if own < t.layers.len() { format!(" on {own} of them") } else { String::new() };
                format!(
                    " with the sparse-attention indexer's key of {} values{on} where the engine caches it",
                    ix.head_dim
                )
            }),
            layer_token_bytes(p)
        ),
        AttentionKind::Compressed(c) => {
            let compressed = t.layers.iter().filter(|l| l.shape.compress_ratio > 0).count();
            format!(
                "{} layers × a sliding window of {} tokens of one {}-value head in {} ({} bytes a token), \
                 {compressed} of them also compressed entries (1 per {} or {} tokens, the indexer's keys on the \
                 first kind) and the compressors' fp32 state, as vLLM 0.34 pages them",
                t.layers.len(),
                c.window,
                c.head_dim,
                s.kv_dtype.id(),
                layer_token_bytes(p),
                c.sparse_ratio,
                t.layers.iter().map(|l| l.shape.compress_ratio).filter(|&r| r != c.sparse_ratio).max().unwrap_or(0),
            )
        }
    };
    Term::bytes("KV cache per token", per_token, formula, Basis::Exact)
}

/// A cached layer's bytes per token, or the most and the least where layers
/// differ (a DSA layer with the indexer's key and one without).
fn layer_token_bytes<E>(p: &Plan<'_, E>) -> String {
    let bytes = p.kv_layers.iter().map(|l| l.bytes_per_token).filter(|&b| b > 0);
    let (low, high) = bytes.fold((u64::MAX, 0), |(lo, hi), b| (lo.min(b), hi.max(b)));
    if low < high { format!("{} or {}", thousands(high), thousands(low)) } else { thousands(high) }
}

/// "; N sliding-window layers hold at most W tokens", or nothing.
pub fn window_note<E>(p: &Plan<'_, E>) -> String {
    let sliding = p.model.arch.text.layers.iter().filter_map(|l| match l.attention {
        LayerAttention::Sliding(w) | LayerAttention::Chunked(w) => Some(w),
        LayerAttention::Full | LayerAttention::Cross | LayerAttention::None => None,
    });
    let (n_sliding, window) = sliding.fold((0, 0), |(n, _), w| (n + 1, w));
    if n_sliding > 0 {
        format!("; {n_sliding} sliding-window layers hold at most {} tokens", thousands(window))
    } else {
        String::new()
    }
}

/// The workload's sequences in words, with the sliding windows.
pub fn demand<E>(p: &Plan<'_, E>) -> String {
    let s = &p.scenario;
    format!(
        "{} tokens ({} prompt + {} new) × {} sequences{}",
        thousands(s.sequence_tokens()),
        thousands(s.prompt_tokens),
        thousands(s.max_new_tokens),
        s.concurrency,
        window_note(p)
    )
}

/// The recurrent state: per layer kind, per sequence, and how the engine
/// holds it (`holding`).
pub fn state<E>(p: &Plan<'_, E>, per_gpu: &[GpuPeak], holding: &str) -> Option<Term> {
    let r = p.model.arch.text.recurrent?;
    let layer = p.state_layers.iter().find(|l| l.bytes() > 0)?;
    let layers = p.state_layers.iter().filter(|l| l.bytes() > 0).count();
    let held = GpuPeak::sum(per_gpu, |g| g.budget.state_bytes);
    let kind = r.describe();
    Some(Term::bytes(
        "recurrent state",
        held,
        format!(
            "{layers} layers × ({kind}: {} conv + {} state bytes per rank) = {} per sequence, whatever its length; {holding}",
            thousands(layer.conv_bytes),
            thousands(layer.ssm_bytes),
            format_bytes(p.state_bytes_per_sequence(), UnitSystem::Binary)
        ),
        Basis::EngineRule,
    ))
}

/// "CUDA's total X (less the driver's reserve)": the total an engine
/// that asks `torch.cuda.mem_get_info` sizes its budget from, on the first GPU.
pub fn cuda_total<E>(p: &Plan<'_, E>) -> String {
    let g = p.scenario.gpus.first().map_or(0, |g| g.cuda_total_bytes);
    format!("CUDA's total {} (less the driver's reserve)", format_bytes(g, UnitSystem::Binary))
}

/// " + NCCL/all-reduce buffers … under TP", when tensor parallelism is on.
pub fn tp_comm_note<E>(p: &Plan<'_, E>) -> String {
    if p.tp() > 1 {
        format!(
            " + NCCL/all-reduce buffers {} per GPU under TP (llm-d measurements)",
            format_bytes(TP_COMM_BYTES, UnitSystem::Binary)
        )
    } else {
        String::new()
    }
}

/// The overhead over all GPUs: the CUDA context, then what the engine adds (`engine`).
pub fn overhead<E>(p: &Plan<'_, E>, per_gpu: &[GpuPeak], engine: &str) -> Term {
    let contexts = p.scenario.gpus.iter().filter(|g| g.context_bytes() > 0).count();
    let formula = if contexts == 0 {
        // Metal's free memory is the working set less this process's buffers
        // (`GpuSlot::context_bytes`); short, as the page's first load carries it.
        format!("no CUDA context on Metal (ggml-metal-device.m){engine}")
    } else {
        format!(
            "CUDA context {} per GPU × {contexts} (lazy module loading; pytorch/pytorch#107667, #86509){engine}",
            format_bytes(CUDA_CONTEXT_BYTES, UnitSystem::Binary),
        )
    };
    Term::bytes("overhead", GpuPeak::sum(per_gpu, |g| g.budget.overhead_bytes), formula, Basis::Empirical)
}

pub fn capacity<E>(p: &Plan<'_, E>) -> Term {
    let gpus = &p.scenario.gpus;
    Term::bytes(
        "capacity",
        gpus.iter().map(|g| g.capacity_bytes).fold(0, u64::saturating_add),
        gpus.iter()
            .map(|g| format!("{} {}", g.name, format_bytes(g.capacity_bytes, UnitSystem::Binary)))
            .collect::<Vec<_>>()
            .join(" + "),
        Basis::Exact,
    )
}

/// Warnings about the model and the workload, before the engine's.
pub fn model_warnings<E>(p: &Plan<'_, E>) -> Vec<String> {
    let model = p.model;
    let s = &p.scenario;
    let mut w = model.arch.warnings.clone();
    if model.checkpoint_bytes.is_some() && p.weights.source == WeightSource::Estimated {
        w.push(format!(
            "the checkpoint's exact size applies to its own format ({}); {} is estimated",
            model.default_format().id(),
            s.weights.id()
        ));
    }
    if let Some(max) = model.arch.text.max_position_embeddings.filter(|&m| s.sequence_tokens() > m) {
        w.push(format!(
            "{} tokens exceed the model's max_position_embeddings ({})",
            thousands(s.sequence_tokens()),
            thousands(max)
        ));
    }
    w
}

/// Flags a split whose GPUs are filled unevenly (relative to capacity).
pub fn imbalance(per_gpu: &[GpuPeak]) -> Option<String> {
    if per_gpu.len() < 2 {
        return None;
    }
    let util = |g: &GpuPeak| g.total_bytes as f64 / g.capacity_bytes.max(1) as f64;
    let (hi, lo) = per_gpu.iter().fold((&per_gpu[0], &per_gpu[0]), |(hi, lo), g| {
        (if util(g) > util(hi) { g } else { hi }, if util(g) < util(lo) { g } else { lo })
    });
    let (u_hi, u_lo) = (util(hi), util(lo));
    (u_hi - u_lo > 0.10).then(|| {
        format!(
            "imbalanced split: GPU {} is {} % full, GPU {} only {} %",
            hi.index,
            decimal(u_hi * 100.0, 0),
            lo.index,
            decimal(u_lo * 100.0, 0)
        )
    })
}
