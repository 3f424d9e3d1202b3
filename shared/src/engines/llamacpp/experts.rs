//! Routed experts kept in host memory: `--cpu-moe` and `--n-cpu-moe N`.
//!
//! llama.cpp turns both into tensor buffer overrides (common/arg.cpp, as
//! vendored by llama-cpp-python 0.3.36): `--cpu-moe` adds
//! `LLM_FFN_EXPS_REGEX` = `\.ffn_(up|down|gate|gate_up)_(ch|)exps` → CPU
//! (common/common.h `llm_ffn_exps_cpu_override`), `--n-cpu-moe N` adds
//! `blk\.i\.ffn_(up|down|gate|gate_up)_(ch|)exps` → CPU for every `i < N`
//! (`llm_add_n_cpu_ffn_overrides`). Those names are exactly the routed
//! expert tensors: shared experts (`ffn_*_shexp`) and the router
//! (`ffn_gate_inp`) stay with their layer. The routed experts are the
//! groups of role `ExpertUp` / `ExpertDown` (shared/src/checkpoint/roles.rs
//! maps `blk.N.ffn_{gate,up,down}_exps` to them).

use crate::arch::Role;
use crate::plan::Plan;

fn is_routed_expert(role: Role) -> bool {
    matches!(role, Role::ExpertUp | Role::ExpertDown)
}

/// Bytes of every layer's routed experts, on the same footing as
/// `p.weights.per_layer` (the checkpoint's bytes when the plan loads it as
/// stored, else the format's estimate scaled like the layer's weights).
pub(crate) fn per_layer<E>(p: &Plan<'_, E>) -> Vec<u64> {
    let model = p.model;
    let n = p.weights.per_layer.len();
    let mut experts = vec![0u64; n];
    let as_stored = p.scenario.weights == model.default_format();
    if let Some(c) = model.checkpoint.as_ref().filter(|_| as_stored) {
        for g in c.layout.groups.iter().filter(|g| is_routed_expert(g.role)) {
            if let Some(slot) = g.layer.and_then(|l| experts.get_mut(l as usize)) {
                *slot = slot.saturating_add(g.bytes);
            }
        }
        return experts;
    }
    // Estimated: the experts' share of each layer's estimate, applied to the
    // layer's planned bytes (which may be rescaled to the checkpoint's size).
    let ctx = model.layout_context();
    let mut layer = vec![0u64; n];
    for g in &model.layout.groups {
        let Some(l) = g.layer.map(|l| l as usize).filter(|&l| l < n) else { continue };
        let bytes = p.scenario.weights.bpw(g, &ctx).bytes(g.params);
        layer[l] = layer[l].saturating_add(bytes);
        if is_routed_expert(g.role) {
            experts[l] = experts[l].saturating_add(bytes);
        }
    }
    experts
        .iter()
        .zip(&layer)
        .zip(&p.weights.per_layer)
        .map(|((&e, &est), &planned)| {
            if est == 0 {
                0
            } else {
                u64::try_from(u128::from(planned) * u128::from(e) / u128::from(est)).unwrap_or(u64::MAX)
            }
        })
        .collect()
}

/// The expert bytes of layers `range` that stay on the CPU with
/// `--n-cpu-moe n_cpu` (layers `0..n_cpu`).
pub(crate) fn on_cpu(experts: &[u64], range: std::ops::Range<usize>, n_cpu: u64) -> u64 {
    let cut = usize::try_from(n_cpu).unwrap_or(usize::MAX);
    let range = range.start.min(cut)..range.end.min(cut);
    experts.get(range).unwrap_or(&[]).iter().fold(0u64, |acc, &b| acc.saturating_add(b))
}
