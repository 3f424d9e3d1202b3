//! Transient activation memory every engine shares: the tensors alive at
//! once inside the largest decoder layer and the logits the sampler reads.
//! What one engine adds (eager attention's scores, a profiled peak) lives in
//! that engine's module.

use crate::arch::{AttentionKind, TextModel};

/// Width of the MLP's intermediate activations per token: the dense MLP, or
/// for MoE the routed experts' share plus the shared expert.
pub fn mlp_width(text: &TextModel) -> u64 {
    match text.moe {
        Some(m) => text.intermediate_size.max(
            m.expert_intermediate_size.saturating_mul(m.experts_per_token).saturating_add(m.shared_intermediate_size),
        ),
        None => text.intermediate_size,
    }
}

/// Bytes alive at the peak of one decoder layer processing `tokens` tokens
/// (batch × sequence) in `bytes_per_element`-wide activations, on one of `tp` ranks.
///
/// Counted: the residual stream and its normed copy (2 × hidden, replicated
/// on every rank), then the larger of attention (q, k, v and the attention
/// output) and the MLP (gate, up and their product: 3 × intermediate), both
/// sharded by `tp`. SDPA/flash never materialise the seq² score matrix.
pub fn layer_peak(text: &TextModel, tokens: u64, bytes_per_element: u64, tp: u64) -> u64 {
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
        // DeepSeek-V4: the query heads, the one shared key/value head and
        // the attention output before the grouped projection.
        AttentionKind::Compressed(c) => {
            text.num_heads.saturating_mul(c.head_dim).saturating_mul(2).saturating_add(c.head_dim)
        }
    };
    let mlp = mlp_width(text).saturating_mul(3);
    let width = text.hidden_size.saturating_mul(2).saturating_add(attn_width.max(mlp) / tp);
    width.saturating_mul(tokens).saturating_mul(bytes_per_element)
}

/// Logits for `positions` positions of each of `sequences` sequences, as
/// fp32 plus the fp32 scores the sampler derives from them (transformers ≥
/// 4.45 keeps the last position only during `generate`), vocab-parallel.
pub fn logits(vocab: u64, sequences: u64, positions: u64, tp: u64) -> u64 {
    vocab.div_ceil(tp.max(1)).saturating_mul(sequences).saturating_mul(positions).saturating_mul(4 * 2)
}
