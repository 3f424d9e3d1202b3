//! The terms and warnings that explain an estimate, and the verdict in words.

use crate::arch::{AttentionKind, LayerAttention};
use crate::explain::{Basis, Term, thousands};
use crate::formats::WeightFormat;
use crate::units::{UnitSystem, decimal, decimal_short, format_bytes};

use super::{CUDA_CONTEXT_BYTES, Estimate, GpuBudget, Prepared, TP_COMM_BYTES, Verdict, WeightSource};
use crate::engines::{Engine, EngineReport, llamacpp, vllm};

/// The recurrent state: per layer kind, per sequence, and how the engine holds it.
fn state_term(p: &Prepared, per_gpu: &[GpuBudget]) -> Option<Term> {
    let r = p.model.arch.text.recurrent?;
    let layer = p.state_layers.iter().find(|l| l.bytes() > 0)?;
    let layers = p.state_layers.iter().filter(|l| l.bytes() > 0).count();
    let per_seq = crate::state::sequence_bytes(&p.state_layers).saturating_mul(p.tp());
    let held: u64 = per_gpu.iter().map(|g| g.state_bytes).fold(0, u64::saturating_add);
    let kind = r.describe();
    let engine = match p.scenario.engine {
        Engine::Vllm(_) => {
            "vLLM keeps each request's state in one block per state group of the shared pool (page padded to the attention page)"
        }
        Engine::Sglang(_) => "SGLang's mamba pool takes 0.9/1.9 of the free memory, one slot per running request",
        Engine::LlamaCpp(_) => "llama.cpp keeps one F32 state cell per sequence slot",
        Engine::Transformers(_) => "transformers' cache holds one state per sequence of the batch",
    };
    Some(Term::bytes(
        "recurrent state",
        held,
        format!(
            "{layers} layers × ({kind}: {} conv + {} state bytes per rank) = {} per sequence, whatever its length; {engine}",
            thousands(layer.conv_bytes),
            thousands(layer.ssm_bytes),
            format_bytes(per_seq, UnitSystem::Binary)
        ),
        Basis::EngineRule,
    ))
}

pub(super) fn terms(
    p: &Prepared,
    per_gpu: &[GpuBudget],
    kv_cache_bytes: u64,
    kv_demand_bytes: u64,
    report: Option<&EngineReport>,
) -> Vec<Term> {
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
    terms.push(Term::bytes("weights", p.weights.total, weight_formula, Basis::Exact));
    let per_token = crate::kv::bytes_per_token(&p.kv_layers);
    let growing = p.kv_layers.iter().filter(|l| l.bytes_per_token > 0).count();
    let kv_formula = match t.attention {
        AttentionKind::Standard { .. } => format!(
            "{growing} layers × (K {} + V {}) × {} KV heads in {} ({} bytes per layer-token)",
            t.head_dim,
            t.v_head_dim,
            t.num_kv_heads,
            s.kv_dtype.id(),
            thousands(p.kv_layers.iter().find(|l| l.bytes_per_token > 0).map_or(0, |l| l.bytes_per_token))
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
        LayerAttention::Sliding(w) | LayerAttention::Chunked(w) => Some(w),
        _ => None,
    });
    let (n_sliding, window) = sliding.fold((0, 0), |(n, _), w| (n + 1, w));
    let window_note = if n_sliding > 0 {
        format!("; {n_sliding} sliding-window layers hold at most {} tokens", thousands(window))
    } else {
        String::new()
    };
    let demand = format!(
        "{} tokens ({} prompt + {} new) × {} sequences{window_note}",
        thousands(s.sequence_tokens()),
        thousands(s.prompt_tokens),
        thousands(s.max_new_tokens),
        s.concurrency
    );
    let (kv_formula, kv_basis) = match report {
        Some(EngineReport::Vllm(r)) => (
            format!(
                "vLLM pre-allocates every free block: {} blocks of {} tokens; this workload needs {} for {demand}",
                r.num_gpu_blocks,
                r.block_size,
                format_bytes(kv_demand_bytes, UnitSystem::Binary)
            ),
            Basis::EngineRule,
        ),
        Some(EngineReport::Sglang(r)) => (
            format!(
                "SGLang pre-allocates a pool of {} tokens; this workload needs {} for {demand}",
                thousands(r.max_total_num_tokens),
                format_bytes(kv_demand_bytes, UnitSystem::Binary)
            ),
            Basis::EngineRule,
        ),
        Some(EngineReport::LlamaCpp(r)) => (
            format!(
                "llama.cpp allocates n_ctx = {} tokens ({} slots × {}) for the {} GPU layers at start-up{window_note}",
                thousands(r.n_ctx),
                r.parallel,
                thousands(r.n_ctx_per_slot),
                r.layers_on_gpu
            ),
            Basis::EngineRule,
        ),
        None => (demand, Basis::Exact),
    };
    terms.push(Term::bytes("KV cache", kv_cache_bytes, kv_formula, kv_basis));
    if let Some(term) = state_term(p, per_gpu) {
        terms.push(term);
    }
    let act: u64 = per_gpu.iter().map(|g| g.activation_bytes).fold(0, u64::saturating_add);
    let act_formula = match (&s.engine, report) {
        (Engine::Vllm(_), Some(EngineReport::Vllm(r))) => format!(
            "vLLM profile run: a dummy batch of {} tokens × 3 × (hidden {} + intermediate {}) × {} bytes (fitted to vLLM's RTX 3090 logs), plus fp32 logits and probabilities of {} sequences",
            thousands(r.max_num_batched_tokens),
            t.hidden_size,
            t.intermediate_size,
            p.act_bytes(),
            thousands(r.max_num_seqs.min(r.max_num_batched_tokens))
        ),
        (Engine::LlamaCpp(_), _) => "llama.cpp compute buffer: 4 × n_ubatch × max(1 + 4 × hidden + attention scores without flash attention, hidden + vocab) bytes (Ollama's GraphSize for llama graphs)".into(),
        (Engine::Sglang(_), Some(EngineReport::Sglang(r))) => format!(
            "one chunk of {} prefill tokens through one decoder layer (SGLang keeps it outside mem_fraction_static)",
            thousands(r.chunked_prefill_size)
        ),
        _ => format!(
            "peak of one decoder layer: {} in-flight tokens at prefill × (2 × hidden {} + max(q/k/v/out, 3 × intermediate {})) × {} bytes, plus fp32 logits and scores (2 × vocab {} × 4 bytes × {} sequences); transformers generate — the bar shows the larger of the prefill and end-of-generation states",
            thousands(s.prompt_tokens.saturating_mul(s.concurrency)),
            t.hidden_size,
            t.intermediate_size,
            p.act_bytes(),
            thousands(t.vocab_size),
            s.concurrency
        ),
    };
    terms.push(Term::bytes("activations", act, act_formula, Basis::Empirical));
    let overhead: u64 = per_gpu.iter().map(|g| g.overhead_bytes).fold(0, u64::saturating_add);
    let mut overhead_formula = format!(
        "CUDA context {} per GPU × {} (lazy module loading; pytorch/pytorch#107667, #86509)",
        format_bytes(CUDA_CONTEXT_BYTES, UnitSystem::Binary),
        s.gpus.len()
    );
    if p.tp() > 1 && !matches!(s.engine, Engine::Vllm(_)) {
        overhead_formula.push_str(&format!(
            " + NCCL/all-reduce buffers {} per GPU under TP (llm-d measurements)",
            format_bytes(TP_COMM_BYTES, UnitSystem::Binary)
        ));
    }
    if let Some(EngineReport::Vllm(r)) = report {
        let graphs = r.per_gpu.first().map_or(0, |g| g.cuda_graph_bytes);
        let non_torch = r.per_gpu.first().map_or(0, |g| g.non_torch_bytes);
        overhead_formula.push_str(&format!(
            " + vLLM non-torch memory {} (llm-d) + CUDA graphs {} ({} captured sizes × {} per layer, fitted to vLLM logs{})",
            format_bytes(non_torch, UnitSystem::Binary),
            format_bytes(graphs, UnitSystem::Binary),
            vllm::CUDA_GRAPH_CAPTURE_SIZES,
            format_bytes(vllm::CUDA_GRAPH_BYTES_PER_LAYER_SIZE, UnitSystem::Binary),
            if r.version.subtracts_cuda_graphs() { "; subtracted from the KV budget since v0.21" } else { "; outside the utilization budget before v0.21" }
        ));
    }
    terms.push(Term::bytes("overhead", overhead, overhead_formula, Basis::Empirical));
    engine_terms(&mut terms, report);
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

pub(super) fn warnings(p: &Prepared, per_gpu: &[GpuBudget], verdict: Verdict) -> Vec<String> {
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
    if matches!(s.weights, WeightFormat::Gguf(_)) && !matches!(s.engine, Engine::LlamaCpp(_)) {
        w.push(format!("GGUF weights are run by llama.cpp; this plan models {}", s.engine.kind().id()));
    }
    if s.stages() > 1 && matches!(s.engine, Engine::Transformers(_)) {
        w.push("layers are split over the GPUs (device_map / pipeline): one GPU works at a time".into());
    }
    if let Some(imbalance) = imbalance(per_gpu) {
        w.push(imbalance);
    }
    match s.engine {
        Engine::Vllm(_) if matches!(verdict, Verdict::Fits { max_concurrency } if s.concurrency > max_concurrency) => {
            w.push(format!(
                "{} concurrent requests asked, {} fit in the KV cache: vLLM queues or preempts the rest",
                s.concurrency,
                p.max_concurrency()
            ));
        }
        Engine::LlamaCpp(_) if per_gpu.iter().any(|g| g.fits && g.free_bytes < llamacpp::FIT_MARGIN_BYTES) => {
            w.push(format!(
                "less than llama.cpp's {} --fit margin stays free: loading may fail once other buffers appear",
                format_bytes(llamacpp::FIT_MARGIN_BYTES, UnitSystem::Binary)
            ));
        }
        _ => {}
    }
    w
}

/// Flags a split whose GPUs are filled unevenly (relative to capacity).
fn imbalance(per_gpu: &[GpuBudget]) -> Option<String> {
    if per_gpu.len() < 2 {
        return None;
    }
    let util = |g: &GpuBudget| g.total_bytes as f64 / g.capacity_bytes.max(1) as f64;
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

fn engine_terms(terms: &mut Vec<Term>, report: Option<&EngineReport>) {
    match report {
        Some(EngineReport::Vllm(r)) => {
            if let Some(g) = r.per_gpu.first() {
                terms.push(Term::bytes(
                    "vLLM requested memory",
                    g.requested_bytes,
                    format!(
                        "total × gpu_memory_utilization {} (default {} for {})",
                        decimal_short(r.gpu_memory_utilization, 3),
                        decimal_short(r.version.default_utilization(), 3),
                        r.version.releases()
                    ),
                    Basis::EngineRule,
                ));
                terms.push(Term::bytes(
                    "vLLM KV budget",
                    g.available_kv_bytes,
                    "requested − weights − profiled activation peak − non-torch − CUDA graphs (0.21+ only)".to_string(),
                    Basis::EngineRule,
                ));
            }
            terms.push(Term::count(
                "vLLM GPU blocks",
                r.num_gpu_blocks,
                format!(
                    "KV budget ÷ (block of {} tokens × layers per group × per-layer page), min over GPUs",
                    r.block_size
                ),
                Basis::EngineRule,
            ));
            terms.push(Term::tokens(
                "vLLM KV cache size",
                r.kv_cache_tokens,
                format!(
                    "{} blocks ÷ KV groups × {} tokens per block; max concurrency {}x at {} tokens",
                    r.num_gpu_blocks,
                    r.block_size,
                    decimal(r.max_concurrency, 2),
                    thousands(r.max_model_len)
                ),
                Basis::EngineRule,
            ));
        }
        Some(EngineReport::Sglang(r)) => terms.push(Term::tokens(
            "SGLang max_total_num_tokens",
            r.max_total_num_tokens,
            format!(
                "(free after weights − total × (1 − mem_fraction_static {})) ÷ cell size {} bytes",
                decimal_short(r.mem_fraction_static, 3),
                thousands(r.cell_size_bytes)
            ),
            Basis::EngineRule,
        )),
        Some(EngineReport::LlamaCpp(r)) => terms.push(Term::bytes(
            "llama.cpp CPU weights",
            r.cpu_weight_bytes,
            format!(
                "token embedding{} stay in system memory; {} of the layers offloaded (-ngl {})",
                if r.output_on_gpu { "" } else { " and output head" },
                r.layers_on_gpu,
                r.n_gpu_layers
            ),
            Basis::EngineRule,
        )),
        None => {}
    }
}

/// The verdict as a sentence.
pub fn verdict_text(e: &Estimate, units: UnitSystem) -> String {
    let gpu_name = |g: usize| {
        if e.per_gpu.len() > 1 { format!(" on GPU {g}") } else { String::new() }
    };
    match e.verdict {
        Verdict::Fits { max_concurrency }
            if e.engine_report.is_some() && e.engine != crate::engines::EngineKind::LlamaCpp =>
        {
            format!(
                "Fits: {} tokens × {} sequence{} — the engine reserves {} of {}; up to {} concurrent sequences of this length fit",
                thousands(e.prompt_tokens.saturating_add(e.max_new_tokens)),
                e.concurrency,
                if e.concurrency == 1 { "" } else { "s" },
                format_bytes(e.total_bytes, units),
                format_bytes(e.capacity_bytes, units),
                thousands(max_concurrency)
            )
        }
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
        Verdict::EngineRefuses { largest_context, .. } => {
            let (engine, why) = match &e.engine_report {
                Some(EngineReport::Vllm(r)) => (
                    "vLLM",
                    r.startup_error.clone().unwrap_or_else(|| {
                        format!(
                            "requests of {} tokens exceed max_model_len {}",
                            thousands(e.prompt_tokens.saturating_add(e.max_new_tokens)),
                            thousands(r.max_model_len)
                        )
                    }),
                ),
                Some(EngineReport::Sglang(r)) => (
                    "SGLang",
                    r.startup_error
                        .clone()
                        .unwrap_or_else(|| format!("its pool holds only {} tokens", thousands(r.max_total_num_tokens))),
                ),
                _ => ("The engine", String::new()),
            };
            if largest_context > 0 {
                format!(
                    "{engine} refuses: {why} — the largest context that works is {} tokens",
                    thousands(largest_context)
                )
            } else {
                format!("{engine} refuses to start: {why}")
            }
        }
        Verdict::RunsOutAtToken { gpu, token, generated } => format!(
            "Runs out at token {}{} (after {} generated tokens)",
            thousands(token),
            gpu_name(gpu),
            thousands(generated)
        ),
    }
}
