//! The terms and warnings that explain an estimate, and the verdict in words.

use crate::arch::{AttentionKind, LayerAttention};
use crate::explain::{Basis, Term, thousands};
use crate::formats::WeightFormat;
use crate::units::{UnitSystem, format_bytes};

use super::{CUDA_CONTEXT_BYTES, Estimate, GpuBudget, Prepared, Verdict, WeightSource};

pub(super) fn terms(p: &Prepared, per_gpu: &[GpuBudget], kv_cache_bytes: u64) -> Vec<Term> {
    let model = p.model;
    let s = &p.scenario;
    let t = &model.arch.text;
    let b = super::ParamBreakdown::of(&model.layout);
    let mut terms = Vec::with_capacity(8);
    terms.push(Term::count(
        "parameters",
        model.parameters(),
        format!(
            "embeddings {} + attention {} + MLP {} + experts {} + norms/biases {} + lm_head {} + vision {}",
            thousands(b.embeddings),
            thousands(b.attention),
            thousands(b.mlp),
            thousands(b.experts),
            thousands(b.norms_and_biases),
            thousands(b.lm_head),
            thousands(b.vision)
        ),
        Basis::Exact,
    ));
    let bpw = p.weights.total as f64 * 8.0 / model.parameters().max(1) as f64;
    let weight_formula = match p.weights.source {
        WeightSource::Checkpoint => {
            format!("checkpoint safetensors size (exact), {bpw:.3} bits per parameter on average")
        }
        WeightSource::Estimated => {
            let kept = s.weights.kept_in_high_precision();
            format!(
                "{} parameters × {bpw:.3} bits on average ({}){}",
                thousands(model.parameters()),
                s.weights.describe(),
                if kept.is_empty() { String::new() } else { format!("; {kept}") }
            )
        }
    };
    terms.push(Term::bytes("weights", p.weights.total, weight_formula, Basis::Exact));
    let per_token = crate::kv::bytes_per_token(&p.kv_layers);
    let growing = t.layers.iter().filter(|l| l.attention != LayerAttention::Cross).count();
    let kv_formula = match t.attention {
        AttentionKind::Standard { .. } => format!(
            "{growing} layers × (K {} + V {}) × {} KV heads in {} ({} bytes per layer-token)",
            t.head_dim,
            t.v_head_dim,
            t.num_kv_heads,
            s.kv_dtype.id(),
            thousands(p.kv_layers.first().map_or(0, |l| l.bytes_per_token))
        ),
        AttentionKind::Mla(m) => format!(
            "{growing} layers × one MLA latent of {} + {} values in {} (no separate K and V)",
            m.kv_lora_rank,
            m.qk_rope_head_dim,
            s.kv_dtype.id()
        ),
    };
    terms.push(Term::bytes("KV cache per token", per_token, kv_formula, Basis::Exact));
    let sliding = t.layers.iter().filter_map(|l| match l.attention {
        LayerAttention::Sliding(w) => Some(w),
        _ => None,
    });
    let (n_sliding, window) = sliding.fold((0, 0), |(n, _), w| (n + 1, w));
    let window_note = if n_sliding > 0 {
        format!("; {n_sliding} sliding-window layers hold at most {} tokens", thousands(window))
    } else {
        String::new()
    };
    terms.push(Term::bytes(
        "KV cache",
        kv_cache_bytes,
        format!(
            "{} tokens ({} prompt + {} new) × {} sequences{window_note}",
            thousands(s.sequence_tokens()),
            thousands(s.prompt_tokens),
            thousands(s.max_new_tokens),
            s.concurrency
        ),
        Basis::Exact,
    ));
    let act: u64 = per_gpu.iter().map(|g| g.activation_bytes).fold(0, u64::saturating_add);
    terms.push(Term::bytes(
        "activations",
        act,
        format!(
            "peak of one decoder layer: {} in-flight tokens × (2 × hidden {} + max(q/k/v/out, 3 × intermediate {})) × {} bytes, plus fp32 logits and scores of the last token (2 × vocab {} × 4 bytes × {} sequences); transformers generate with SDPA attention",
            thousands(s.prompt_tokens.saturating_mul(s.concurrency)),
            t.hidden_size,
            t.intermediate_size,
            p.act_bytes(),
            thousands(t.vocab_size),
            s.concurrency
        ),
        Basis::Empirical,
    ));
    terms.push(Term::bytes(
        "overhead",
        CUDA_CONTEXT_BYTES.saturating_mul(s.gpus.len() as u64),
        format!(
            "CUDA context of the PyTorch process, {} per GPU × {} (lazy module loading; pytorch/pytorch#107667, #86509)",
            format_bytes(CUDA_CONTEXT_BYTES, UnitSystem::Binary),
            s.gpus.len()
        ),
        Basis::Empirical,
    ));
    let capacity: u64 = s.gpus.iter().map(|g| g.capacity_bytes).fold(0, u64::saturating_add);
    terms.push(Term::bytes(
        "capacity",
        capacity,
        s.gpus
            .iter()
            .map(|g| format!("{} {}", g.name, format_bytes(g.capacity_bytes, UnitSystem::Binary)))
            .collect::<Vec<_>>()
            .join(" + "),
        Basis::Exact,
    ));
    terms
}

pub(super) fn warnings(p: &Prepared) -> Vec<String> {
    let model = p.model;
    let s = &p.scenario;
    let mut w = Vec::new();
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
    if matches!(s.weights, WeightFormat::Gguf(_)) {
        w.push("GGUF weights are run by llama.cpp, whose context and compute buffers differ from transformers; the engine model here is transformers".into());
    }
    if s.gpus.len() > 1 {
        w.push("several GPUs are split layer-wise (device_map / pipeline), one sequence step at a time on each".into());
    }
    w
}

/// The verdict as a sentence.
pub fn verdict_text(e: &Estimate, units: UnitSystem) -> String {
    let gpu_name = |g: usize| {
        if e.per_gpu.len() > 1 { format!(" on GPU {g}") } else { String::new() }
    };
    match e.verdict {
        Verdict::Fits { max_concurrency } => format!(
            "Fits: {} tokens × {} sequence{} use {} of {}; up to {} concurrent sequences of this length fit",
            thousands(e.prompt_tokens.saturating_add(e.max_new_tokens)),
            e.concurrency,
            if e.concurrency == 1 { "" } else { "s" },
            format_bytes(e.total_bytes, units),
            format_bytes(e.capacity_bytes, units),
            thousands(max_concurrency)
        ),
        Verdict::DoesNotFitAtLoad { gpu, shortfall_bytes } => format!(
            "Does not fit at load{}: the weights alone need {} more",
            gpu_name(gpu),
            format_bytes(shortfall_bytes, units)
        ),
        Verdict::RunsOutInPrefill { gpu, shortfall_bytes } => format!(
            "Loads, but runs out while processing the prompt{}: {} short",
            gpu_name(gpu),
            format_bytes(shortfall_bytes, units)
        ),
        Verdict::RunsOutAtToken { gpu, token, generated } => format!(
            "Runs out at token {}{} (after {} generated tokens)",
            thousands(token),
            gpu_name(gpu),
            thousands(generated)
        ),
    }
}
