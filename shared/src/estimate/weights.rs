//! Weight bytes by placement (before the first layer, per layer, after the
//! last) on one tensor-parallel rank, in one format.
//!
//! Under tensor parallelism (Megatron-style, as vLLM and SGLang shard):
//! attention and MLP projections and every expert are split across ranks;
//! the embedding and lm_head are vocab-parallel (split); norms, routers and
//! biases of row-parallel layers are replicated; K/V projections hold
//! `max(1, kv_heads / tp)` heads per rank, replicated when `tp` exceeds them.

use serde::Serialize;

use crate::arch::{Role, TensorGroup, TensorLayout, params::Placement};
use crate::formats::WeightFormat;
use crate::kv::kv_heads_per_rank;
use crate::model::Model;

/// Where the weight figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightSource {
    /// Parameters by role × the format's bits per weight.
    Estimated,
    /// The checkpoint's own safetensors sizes.
    Checkpoint,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightPlan {
    pub first: u64,
    pub per_layer: Vec<u64>,
    pub last: u64,
    /// All weights of the model (every rank together, counted once).
    pub total: u64,
    /// What one rank holds.
    pub per_rank: u64,
    pub source: WeightSource,
}

/// The share of a group one of `tp` ranks holds, as a fraction `num / den`.
fn rank_share(group: &TensorGroup, model: &Model, tp: u64) -> (u64, u64) {
    let kv = model.arch.text.num_kv_heads.max(1);
    match group.role {
        _ if tp <= 1 => (1, 1),
        // Each rank keeps max(1, kv/tp) of the kv heads (MLA's latent
        // projections are row/column-parallel like the others).
        Role::AttnV => (kv_heads_per_rank(kv, tp), kv),
        Role::AttnK if matches!(model.arch.text.attention, crate::arch::AttentionKind::Standard { .. }) => {
            (kv_heads_per_rank(kv, tp), kv)
        }
        r if r.is_linear() => (1, tp),
        Role::Embedding | Role::LmHead => (1, tp),
        Role::VisionLinear => (1, tp),
        _ => (1, 1),
    }
}

impl WeightPlan {
    pub fn new(model: &Model, format: WeightFormat, tp: u64) -> Self {
        let ctx = model.layout_context();
        let tp = tp.max(1);
        let mut plan = Self {
            first: 0,
            per_layer: vec![0; model.layout.num_layers as usize],
            last: 0,
            total: 0,
            per_rank: 0,
            source: WeightSource::Estimated,
        };
        for g in &model.layout.groups {
            let bytes = format.bpw(g, &ctx).bytes(g.params);
            let (num, den) = rank_share(g, model, tp);
            let rank_bytes = u64::try_from((u128::from(bytes) * u128::from(num)).div_ceil(u128::from(den.max(1))))
                .unwrap_or(u64::MAX);
            plan.total = plan.total.saturating_add(bytes);
            match TensorLayout::placement(g) {
                Placement::First => plan.first = plan.first.saturating_add(rank_bytes),
                Placement::Last => plan.last = plan.last.saturating_add(rank_bytes),
                Placement::Layer(l) => {
                    if let Some(slot) = plan.per_layer.get_mut(l as usize) {
                        *slot = slot.saturating_add(rank_bytes);
                    }
                }
            }
        }
        if let Some(exact) = model.checkpoint_bytes.filter(|_| format == model.default_format()) {
            plan.rescale(exact);
        }
        plan.per_rank = plan.per_layer.iter().fold(plan.first.saturating_add(plan.last), |a, b| a.saturating_add(*b));
        plan
    }

    /// Spreads the checkpoint's exact size over the layout in proportion to
    /// the estimate, so splits stay consistent with the exact total.
    fn rescale(&mut self, exact: u64) {
        let est = u128::from(self.total.max(1));
        let scale = |b: u64| u64::try_from(u128::from(b) * u128::from(exact) / est).unwrap_or(u64::MAX);
        self.first = scale(self.first);
        self.last = scale(self.last);
        for b in &mut self.per_layer {
            *b = scale(*b);
        }
        self.total = exact;
        self.source = WeightSource::Checkpoint;
    }

    /// Weights of the layers `range` plus, where asked, what sits before the
    /// first layer and after the last.
    pub fn slice(&self, range: std::ops::Range<usize>, with_first: bool, with_last: bool) -> u64 {
        let layers = self.per_layer.get(range).unwrap_or(&[]).iter().fold(0u64, |a, b| a.saturating_add(*b));
        let first = if with_first { self.first } else { 0 };
        let last = if with_last { self.last } else { 0 };
        layers.saturating_add(first).saturating_add(last)
    }
}
