//! Speed bounds from the GPU's peak figures: an upper bound on decode tokens/s
//! (every step reads the weights it uses and the KV cache it attends to) and a
//! lower bound on prefill time (2 FLOPs per active parameter per token plus
//! attention). Bounds, not predictions: real kernels reach 60–90 % of peak.

use serde::Serialize;

use crate::arch::Role;
use crate::kv;
use crate::plan::Plan;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpeedBounds {
    /// Bytes read from memory per decode step of the whole batch.
    pub bytes_per_step: u64,
    /// Upper bound on decode steps per second (tokens/s of one sequence).
    pub decode_tokens_per_s_per_sequence: f64,
    /// Upper bound on tokens/s over all concurrent sequences.
    pub decode_tokens_per_s_total: f64,
    /// Lower bound on the time to process the prompts (time to first token).
    pub prefill_ms: f64,
    /// The GPUs' combined memory bandwidth (GB/s) and bf16 TFLOP/s used.
    pub bandwidth_gb_s: f64,
    pub bf16_tflops: f64,
}

/// Bounds for a plan, when every GPU's bandwidth and throughput are known.
pub fn bounds<E: crate::plan::EngineRules>(p: &Plan<'_, E>) -> Option<SpeedBounds> {
    let s = &p.scenario;
    let model = p.model;
    let bandwidth: f64 = s.gpus.iter().map(|g| g.bandwidth_gb_s).sum::<Option<f64>>()?;
    let tflops: f64 = s.gpus.iter().map(|g| g.bf16_tflops).sum::<Option<f64>>()?;
    // Under pipeline parallelism one stage works at a time: the effective
    // figures are those of one stage (tp GPUs) of one data-parallel replica,
    // which serves its share of the sequences (the replicas side by side;
    // a MoE model's experts spread over them are not modelled apart).
    let replicas = p.replicas().max(1);
    let share = (s.stages() as u64).saturating_mul(replicas) as f64;
    let (bw, fl) = (bandwidth / share, tflops / share);
    let batch = s.concurrency.div_ceil(replicas);
    // Weights read per step: all non-expert weights, and for MoE the experts
    // the batch touches (at most all of them).
    let total = p.weights.total as f64;
    let (expert_bytes, touched) = match model.arch.text.moe {
        Some(m) => {
            let expert_params: u64 = model
                .layout
                .groups
                .iter()
                .filter(|g| matches!(g.role, Role::ExpertUp | Role::ExpertDown | Role::ExpertBias))
                .map(|g| g.params)
                .sum();
            let frac = expert_params as f64 / model.parameters().max(1) as f64;
            let touched = ((batch.saturating_mul(m.experts_per_token)) as f64 / m.num_experts.max(1) as f64).min(1.0);
            (total * frac, touched)
        }
        None => (0.0, 1.0),
    };
    let weights_read = total - expert_bytes + expert_bytes * touched;
    // KV read per step: each sequence attends to its whole cache (average
    // over the generation: prompt + half the new tokens).
    let avg_len = s.prompt_tokens.saturating_add(s.max_new_tokens / 2);
    let kv_read =
        kv::sequence_bytes(&p.kv_layers, avg_len, None).saturating_mul(p.attention_tp()).saturating_mul(batch);
    let bytes_per_step = (weights_read as u64).saturating_add(kv_read);
    let steps_per_s = bw * 1e9 / bytes_per_step.max(1) as f64;
    // Prefill: 2 FLOPs per active parameter per token, plus attention
    // (4 × layers × prompt² × heads × head_dim / 2 for the causal half).
    let t = &model.arch.text;
    let tokens = s.prompt_tokens.saturating_mul(batch) as f64;
    let linear = 2.0 * model.active_parameters() as f64 * tokens;
    let attention = 2.0
        * t.num_layers() as f64
        * (s.prompt_tokens as f64).powi(2)
        * (t.num_heads * t.head_dim) as f64
        * batch as f64;
    let prefill_s = (linear + attention) / (fl * 1e12);
    Some(SpeedBounds {
        bytes_per_step,
        decode_tokens_per_s_per_sequence: steps_per_s,
        decode_tokens_per_s_total: steps_per_s * batch as f64 * replicas as f64,
        prefill_ms: prefill_s * 1e3,
        bandwidth_gb_s: bw,
        bf16_tflops: fl,
    })
}
