//! Recurrent state: memory a sequence holds in its Mamba-2, gated-DeltaNet,
//! Kimi-delta-attention or short-conv layers. Unlike the KV cache it does
//! not grow with the context: each such layer keeps one conv state (the
//! last `kernel − 1` inputs of its causal convolution) and, for SSM /
//! linear-attention layers, one state matrix per head, whatever the length.
//!
//! The shapes follow vLLM 0.33 `MambaStateShapeCalculator`
//! (vllm/model_executor/layers/mamba/mamba_utils.py): under tensor
//! parallelism heads (and Mamba groups, replicated up to `tp` when they do
//! not divide) are split across ranks. The engines differ in the dtypes and
//! in how many conv columns they keep ([`StateRules`], which each engine's
//! module in `crate::engines` fills).

use serde::Serialize;

use crate::arch::{Recurrent, TextModel};

/// How an engine stores recurrent state (each engine's `state_rules`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StateRules {
    /// Bytes of one conv-state value.
    pub conv_bytes: u64,
    /// Bytes of one SSM / DeltaNet state value.
    pub ssm_bytes: u64,
    /// Conv columns kept: `kernel − 1` (vLLM, SGLang, llama.cpp) or the
    /// whole `kernel` (transformers' `LinearAttentionLayer`).
    pub conv_columns_full_kernel: bool,
    /// Conv columns a gated-DeltaNet layer keeps beside those for the draft
    /// tokens of speculative decoding (vLLM: `num_speculative_tokens`).
    pub draft_conv_columns: u64,
}

/// One layer's state for one sequence on one tensor-parallel rank.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LayerState {
    pub conv_bytes: u64,
    pub ssm_bytes: u64,
}

impl LayerState {
    pub fn bytes(self) -> u64 {
        self.conv_bytes.saturating_add(self.ssm_bytes)
    }
}

fn per_rank(n: u64, tp: u64) -> u64 {
    n.div_ceil(tp.max(1))
}

/// The state of every layer (zero for layers without one) on one of `tp` ranks.
pub fn layer_states(text: &TextModel, rules: StateRules, tp: u64) -> Vec<LayerState> {
    let tp = tp.max(1);
    let one = text.recurrent.map(|r| state_of(r, text.hidden_size, rules, tp)).unwrap_or_default();
    text.layers.iter().map(|l| if l.state { one } else { LayerState::default() }).collect()
}

fn state_of(r: Recurrent, hidden: u64, rules: StateRules, tp: u64) -> LayerState {
    let columns = |kernel: u64| if rules.conv_columns_full_kernel { kernel } else { kernel.saturating_sub(1) };
    match r {
        Recurrent::GatedDeltaNet { key_heads, value_heads, key_head_dim, value_head_dim, conv_kernel } => {
            // `gated_delta_net_state_shape`: conv over q, k, v; one
            // head_v_dim × head_k_dim state per value head.
            let conv_dim = key_heads
                .saturating_mul(key_head_dim)
                .saturating_mul(2)
                .saturating_add(value_heads.saturating_mul(value_head_dim));
            LayerState {
                conv_bytes: per_rank(conv_dim, tp)
                    .saturating_mul(columns(conv_kernel).saturating_add(rules.draft_conv_columns))
                    .saturating_mul(rules.conv_bytes),
                ssm_bytes: per_rank(value_heads, tp)
                    .saturating_mul(key_head_dim)
                    .saturating_mul(value_head_dim)
                    .saturating_mul(rules.ssm_bytes),
            }
        }
        Recurrent::Mamba2 { heads, head_dim, d_state, groups, conv_kernel, .. } => {
            // `mamba2_state_shape`: groups replicated up to `tp` when they do
            // not divide (`extra_groups_for_head_shards`).
            let groups = if groups.is_multiple_of(tp) { groups } else { groups.saturating_add(tp - groups % tp) };
            let conv_dim =
                heads.saturating_mul(head_dim).saturating_add(groups.saturating_mul(d_state).saturating_mul(2));
            LayerState {
                conv_bytes: per_rank(conv_dim, tp)
                    .saturating_mul(columns(conv_kernel))
                    .saturating_mul(rules.conv_bytes),
                ssm_bytes: per_rank(heads, tp)
                    .saturating_mul(head_dim)
                    .saturating_mul(d_state)
                    .saturating_mul(rules.ssm_bytes),
            }
        }
        // `mamba1_state_shape`: a conv state of inner × (kernel − 1) and an
        // SSM state of inner × d_state, both split by TP.
        Recurrent::Mamba1 { inner, d_state, conv_kernel, .. } => LayerState {
            conv_bytes: per_rank(inner, tp).saturating_mul(columns(conv_kernel)).saturating_mul(rules.conv_bytes),
            ssm_bytes: per_rank(inner, tp).saturating_mul(d_state).saturating_mul(rules.ssm_bytes),
        },
        // `kda_state_shape` (vLLM 0.34): one conv state over q, k and v of
        // `3 × heads × head_dim / tp` channels, `kernel − 1 + num_spec`
        // columns; one `head_dim × head_dim` state per head.
        Recurrent::KimiDelta { heads, head_dim, conv_kernel } => LayerState {
            conv_bytes: per_rank(heads.saturating_mul(head_dim).saturating_mul(3), tp)
                .saturating_mul(columns(conv_kernel).saturating_add(rules.draft_conv_columns))
                .saturating_mul(rules.conv_bytes),
            ssm_bytes: per_rank(heads, tp)
                .saturating_mul(head_dim)
                .saturating_mul(head_dim)
                .saturating_mul(rules.ssm_bytes),
        },
        // `short_conv_state_shape`: hidden × (L_cache − 1), no SSM state.
        Recurrent::ShortConv { kernel, .. } => LayerState {
            conv_bytes: per_rank(hidden, tp).saturating_mul(columns(kernel)).saturating_mul(rules.conv_bytes),
            ssm_bytes: 0,
        },
    }
}

/// Bytes of one sequence's state over `layers`.
pub fn sequence_bytes(layers: &[LayerState]) -> u64 {
    layers.iter().fold(0u64, |acc, l| acc.saturating_add(l.bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM's rules for a bf16 model (`crate::engines::vllm::state_rules`).
    const VLLM_BF16: StateRules =
        StateRules { conv_bytes: 2, ssm_bytes: 2, conv_columns_full_kernel: false, draft_conv_columns: 0 };
    /// transformers' rules for a bf16 gated-DeltaNet model (float32 state, whole kernel).
    const TRANSFORMERS_DELTANET_BF16: StateRules =
        StateRules { conv_bytes: 2, ssm_bytes: 4, conv_columns_full_kernel: true, draft_conv_columns: 0 };

    #[test]
    fn deltanet_state_follows_vllm_shapes() {
        // Qwen3-Next: 16 key heads, 32 value heads of 128; kernel 4.
        let r = Recurrent::GatedDeltaNet {
            key_heads: 16,
            value_heads: 32,
            key_head_dim: 128,
            value_head_dim: 128,
            conv_kernel: 4,
        };
        let s = state_of(r, 2048, VLLM_BF16, 1);
        assert_eq!(s.conv_bytes, (2 * 16 * 128 + 32 * 128) * 3 * 2);
        assert_eq!(s.ssm_bytes, 32 * 128 * 128 * 2);
        let s4 = state_of(r, 2048, VLLM_BF16, 4);
        assert_eq!(s4.ssm_bytes * 4, s.ssm_bytes);
        // transformers keeps 4 conv columns and the state in float32.
        let t = state_of(r, 2048, TRANSFORMERS_DELTANET_BF16, 1);
        assert_eq!(t.conv_bytes, 8192 * 4 * 2);
        assert_eq!(t.ssm_bytes, 32 * 128 * 128 * 4);
    }

    #[test]
    fn mamba2_groups_are_replicated_when_tp_does_not_divide_them() {
        let r = Recurrent::Mamba2 {
            heads: 128,
            head_dim: 64,
            d_state: 256,
            groups: 1,
            conv_kernel: 4,
            conv_bias: true,
            proj_bias: false,
            gated_norm: true,
        };
        let one = state_of(r, 4096, VLLM_BF16, 1);
        assert_eq!(one.conv_bytes, (8192 + 2 * 256) * 3 * 2);
        assert_eq!(one.ssm_bytes, 128 * 64 * 256 * 2);
        // tp = 2: one group becomes two, each rank holds one.
        let two = state_of(r, 4096, VLLM_BF16, 2);
        assert_eq!(two.conv_bytes, (8192 + 2 * 2 * 256) / 2 * 3 * 2);
    }
}
