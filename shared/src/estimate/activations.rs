//! Transient activation memory of a forward pass (Hugging Face transformers
//! with SDPA/flash attention): the tensors alive at once inside the largest
//! decoder layer, plus the logits the sampler reads.

use crate::arch::{AttentionKind, TextModel};

/// Bytes alive at the peak of one decoder layer processing `tokens` tokens
/// (batch × sequence) in `act_bytes`-wide activations.
///
/// Counted: the residual stream and its normed copy (2 × hidden), then the
/// larger of attention (q, k, v and the attention output) and the MLP (gate,
/// up and their product: 3 × intermediate; for MoE the routed experts' share).
/// SDPA/flash never materialise the seq² score matrix.
pub fn layer_peak(text: &TextModel, tokens: u64, act_bytes: u64) -> u64 {
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
    let mlp_inter = match text.moe {
        Some(m) => text.intermediate_size.max(
            m.expert_intermediate_size.saturating_mul(m.experts_per_token).saturating_add(m.shared_intermediate_size),
        ),
        None => text.intermediate_size,
    };
    let mlp_width = mlp_inter.saturating_mul(3);
    let width = text.hidden_size.saturating_mul(2).saturating_add(attn_width.max(mlp_width));
    width.saturating_mul(tokens).saturating_mul(act_bytes)
}

/// Logits of the last position for each sequence, upcast to fp32, plus the
/// fp32 scores the sampler derives from them (transformers ≥ 4.45 computes
/// logits for the last token only during `generate`).
pub fn logits(vocab: u64, sequences: u64) -> u64 {
    vocab.saturating_mul(sequences).saturating_mul(4 * 2)
}
