//! Weight bytes by placement (before the first layer, per layer, after the
//! last) on one tensor-parallel rank, in one format.
//!
//! Under tensor parallelism (Megatron-style, as vLLM and SGLang shard):
//! attention and MLP projections and every expert are split across ranks;
//! the embedding and lm_head are vocab-parallel (split); norms, routers and
//! biases of row-parallel layers are replicated, the routed experts' biases
//! go with their experts; K/V projections hold
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

/// How a MoE model's routed experts lie over the GPUs of one pipeline
/// stage: whole experts spread over `ranks` (expert parallelism; the first
/// `E mod ranks` hold one more, vLLM's `determine_expert_map`, and the plan
/// budgets the fullest), each sharded over `shards` (tensor parallelism, as
/// the other projections are), with `redundant` copies of experts beside
/// them (load balancing's replicas: `E + redundant` experts are placed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpertSplit {
    pub ranks: u64,
    pub shards: u64,
    pub redundant: u64,
}

impl ExpertSplit {
    /// Every expert sharded over `n` ranks.
    pub fn sharded(n: u64) -> Self {
        Self { ranks: 1, shards: n.max(1), redundant: 0 }
    }

    /// Whole experts over `n` ranks.
    pub fn whole(n: u64) -> Self {
        Self { ranks: n.max(1), shards: 1, redundant: 0 }
    }

    /// The experts one rank holds (the fullest) and their intermediate width there.
    pub fn local(self, m: &crate::arch::Moe) -> (u64, u64) {
        (self.placed(m.num_experts).div_ceil(self.ranks.max(1)), m.expert_intermediate_size / self.shards.max(1))
    }

    /// The experts placed: the model's and their redundant copies.
    pub fn placed(self, num_experts: u64) -> u64 {
        num_experts.saturating_add(self.redundant)
    }

    /// The share of all experts' bytes one rank holds, as `num / den`.
    fn share(self, num_experts: u64) -> (u64, u64) {
        let e = num_experts.max(1);
        (self.placed(e).div_ceil(self.ranks.max(1)), e.saturating_mul(self.shards.max(1)))
    }
}

/// How one pipeline stage's GPUs split the model's tensors: the
/// tensor-parallel degree, and where an engine splits some parts over
/// fewer ranks (SGLang's data-parallel attention) or spreads the experts
/// otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharding {
    pub tp: u64,
    /// The ranks attention (its projections and KV heads) is split over.
    pub attention: u64,
    /// The ranks the vocab-parallel embedding is split over.
    pub embedding: u64,
    pub experts: ExpertSplit,
}

impl Sharding {
    /// Everything split over `tp` ranks (Megatron-style tensor parallelism).
    pub fn tensor_parallel(tp: u64) -> Self {
        let tp = tp.max(1);
        Self { tp, attention: tp, embedding: tp, experts: ExpertSplit::sharded(tp) }
    }
}

/// The share of a group one rank holds under `sharding`, as a fraction
/// `num / den`: attention over its ranks, the embedding over its own, the
/// routed experts by their split, the rest over `tp`.
fn rank_share(role: Role, model: &Model, sharding: Sharding) -> (u64, u64) {
    let kv = model.arch.text.num_kv_heads.max(1);
    let tp = match role {
        Role::AttnQkv | Role::AttnQ | Role::AttnK | Role::AttnV | Role::AttnO | Role::MlaDown | Role::MlaUp => {
            sharding.attention
        }
        Role::Embedding => sharding.embedding,
        _ => sharding.tp,
    };
    match role {
        // Multi-token-prediction heads load only for speculative decoding
        // (vLLM skips them in `load_weights` otherwise).
        Role::Mtp => (0, 1),
        Role::ExpertUp | Role::ExpertDown => sharding.experts.share(model.arch.text.moe.map_or(1, |m| m.num_experts)),
        // vLLM's and SGLang's gpt-oss: the gate/up biases (E × 2I) split as
        // their experts do; the down biases (E × H) only by expert, whole
        // on each tensor-parallel shard (vLLM's `Mxfp4MoEMethod`: `w2_bias`
        // is (experts, hidden_size); gpt_oss.py zeroes it past rank 0).
        Role::ExpertBias => match model.arch.text.moe {
            Some(m) => {
                let t = &model.arch.text;
                let up = m.expert_intermediate_size.saturating_mul(if t.mlp_gated { 2 } else { 1 });
                let (local, all) = sharding.experts.share(m.num_experts);
                let shards = sharding.experts.shards.max(1);
                (
                    local.saturating_mul(up.saturating_add(shards.saturating_mul(t.hidden_size))),
                    all.saturating_mul(up.saturating_add(t.hidden_size)),
                )
            }
            None => (1, 1),
        },
        _ if tp <= 1 => (1, 1),
        // A fused q/k/v: the query heads split, each rank keeps
        // max(1, kv/tp) key and value heads: (H/tp + 2·kpr)/(H + 2K).
        Role::AttnQkv => {
            let h = model.arch.text.num_heads.max(1);
            let kpr = kv_heads_per_rank(kv, tp);
            (h.saturating_add(2 * kpr * tp), tp.saturating_mul(h.saturating_add(2 * kv)))
        }
        // vLLM's MLA: q_a_proj and kv_a_proj_with_mqa are ReplicatedLinear.
        Role::MlaDown => (1, 1),
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
        Self::sharded(model, format, Sharding::tensor_parallel(tp))
    }

    /// [`WeightPlan::new`] split as `sharding` says.
    pub fn sharded(model: &Model, format: WeightFormat, sharding: Sharding) -> Self {
        let ctx = model.layout_context();
        let mut plan = Self {
            first: 0,
            per_layer: vec![0; model.layout.num_layers as usize],
            last: 0,
            total: 0,
            per_rank: 0,
            source: WeightSource::Estimated,
        };
        let as_stored = format == model.default_format();
        match model.checkpoint.as_ref().filter(|_| as_stored) {
            // Tensor by tensor: the checkpoint's bytes, sharded by role.
            Some(c) => {
                for g in &c.layout.groups {
                    let group =
                        TensorGroup { role: g.role, layer: g.layer, params: g.params, in_features: g.in_features };
                    plan.add(&group, g.bytes, rank_share(g.role, model, sharding));
                }
                plan.source = WeightSource::Checkpoint;
            }
            None => {
                for g in &model.layout.groups {
                    plan.add(g, format.bpw(g, &ctx).bytes(g.params), rank_share(g.role, model, sharding));
                }
                if let Some(exact) = model.checkpoint_bytes.filter(|_| as_stored && model.checkpoint.is_none()) {
                    plan.rescale(exact);
                }
            }
        }
        plan.per_rank = plan.per_layer.iter().fold(plan.first.saturating_add(plan.last), |a, b| a.saturating_add(*b));
        plan
    }

    fn add(&mut self, g: &TensorGroup, bytes: u64, (num, den): (u64, u64)) {
        // In u64 when the product fits: the same quotient without the u128
        // division routine, once per tensor group (issue 39).
        let rank_bytes = match bytes.checked_mul(num) {
            Some(b) => b.div_ceil(den.max(1)),
            None => u64::try_from((u128::from(bytes) * u128::from(num)).div_ceil(u128::from(den.max(1))))
                .unwrap_or(u64::MAX),
        };
        if num > 0 {
            self.total = self.total.saturating_add(bytes);
        }
        match TensorLayout::placement(g) {
            Placement::First => self.first = self.first.saturating_add(rank_bytes),
            Placement::Last => self.last = self.last.saturating_add(rank_bytes),
            Placement::Layer(l) => {
                if let Some(slot) = self.per_layer.get_mut(l as usize) {
                    *slot = slot.saturating_add(rank_bytes);
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// gpt-oss-20b's expert biases (24 layers of 32 experts, bf16) as vLLM's
    /// and SGLang's loaders hold them: the gate/up biases (2 × 2880 each)
    /// split with their experts over tensor-parallel ranks while the down
    /// biases (2880) stay whole on each; expert parallelism splits both by
    /// expert.
    #[test]
    fn expert_biases_shard_as_the_engines_load_them() {
        let mut m = Model::preset("gpt-oss-20b").unwrap();
        m.layout.groups.retain(|g| g.role == Role::ExpertBias);
        let per_rank = |s: Sharding| WeightPlan::sharded(&m, WeightFormat::Bf16, s).per_rank;
        assert_eq!(per_rank(Sharding::tensor_parallel(1)), 24 * 32 * (2 * 2880 + 2880) * 2);
        assert_eq!(per_rank(Sharding::tensor_parallel(2)), 24 * 32 * (2880 + 2880) * 2);
        let ep = Sharding { experts: ExpertSplit::whole(2), ..Sharding::tensor_parallel(2) };
        assert_eq!(per_rank(ep), 24 * 16 * (2 * 2880 + 2880) * 2);
    }
}
