//! Transient activation memory: the tensors alive at once inside the largest
//! decoder layer, the logits the sampler reads, eager attention's scores, and
//! vLLM's profiled peak.

use crate::arch::{AttentionKind, TextModel};

/// Width of the MLP's intermediate activations per token: the dense MLP, or
/// for MoE the routed experts' share plus the shared expert.
fn mlp_width(text: &TextModel) -> u64 {
    match text.moe {
        Some(m) => text.intermediate_size.max(
            m.expert_intermediate_size.saturating_mul(m.experts_per_token).saturating_add(m.shared_intermediate_size),
        ),
        None => text.intermediate_size,
    }
}

/// Bytes alive at the peak of one decoder layer processing `tokens` tokens
/// (batch × sequence) in `act_bytes`-wide activations, on one of `tp` ranks.
///
/// Counted: the residual stream and its normed copy (2 × hidden, replicated
/// on every rank), then the larger of attention (q, k, v and the attention
/// output) and the MLP (gate, up and their product: 3 × intermediate), both
/// sharded by `tp`. SDPA/flash never materialise the seq² score matrix.
pub fn layer_peak(text: &TextModel, tokens: u64, act_bytes: u64, tp: u64) -> u64 {
    let tp = tp.max(1);
    let attn_width = match text.attention {
        AttentionKind::Standard { .. } => {
            let q = text.num_heads.saturating_mul(text.head_dim);
            let kv = text.num_kv_heads.saturating_mul(text.head_dim.saturating_add(text.v_head_dim));
            q.saturating_add(kv).saturating_add(text.num_heads.saturating_mul(text.v_head_dim))
        }
        // transformers decompresses MLA into per-head keys and values.
        AttentionKind::Mla(m) => {
            let qk = m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim);
            text.num_heads.saturating_mul(qk.saturating_mul(2).saturating_add(m.v_head_dim.saturating_mul(2)))
        }
    };
    let mlp = mlp_width(text).saturating_mul(3);
    let width = text.hidden_size.saturating_mul(2).saturating_add(attn_width.max(mlp) / tp);
    width.saturating_mul(tokens).saturating_mul(act_bytes)
}

/// Eager attention's `batch × heads × seq × seq` scores and their softmax.
pub fn eager_scores(text: &TextModel, seq: u64, batch: u64, act_bytes: u64, tp: u64) -> u64 {
    let heads = text.num_heads.div_ceil(tp.max(1));
    batch.saturating_mul(heads).saturating_mul(seq).saturating_mul(seq).saturating_mul(act_bytes).saturating_mul(2)
}

/// Logits for `positions` positions of each of `sequences` sequences, as
/// fp32 plus the fp32 scores the sampler derives from them (transformers ≥
/// 4.45 keeps the last position only during `generate`), vocab-parallel.
pub fn logits(vocab: u64, sequences: u64, positions: u64, tp: u64) -> u64 {
    vocab.div_ceil(tp.max(1)).saturating_mul(sequences).saturating_mul(positions).saturating_mul(4 * 2)
}

/// vLLM's profiled activation peak for a dummy batch of `tokens` tokens
/// spread over `seqs` sequences, on one of `tp` ranks.
///
/// Empirical: `tokens × act_bytes × 3 × (hidden + intermediate / tp)` for the
/// forward pass, fitted to vLLM's own start-up logs for Llama-3.1-8B on an
/// RTX 3090 (raising max_model_len from 20,000 to 29,000 tokens, and with it
/// the dummy batch, cost 474 blocks of 2 MiB: 110.5 kB per token, against
/// 110.6 kB from this formula), plus the sampler's fp32 logits and
/// probabilities for `seqs` sequences.
pub fn vllm_profile_peak(text: &TextModel, tokens: u64, seqs: u64, act_bytes: u64, tp: u64) -> u64 {
    let tp = tp.max(1);
    let per_token = text.hidden_size.saturating_add(mlp_width(text) / tp).saturating_mul(3).saturating_mul(act_bytes);
    let forward = per_token.saturating_mul(tokens);
    forward.saturating_add(logits(text.vocab_size, seqs.min(tokens.max(1)), 1, tp))
}
