//! The calculator's plan as the page hands it to live mode: the page
//! computes [`LivePlan`] with the engines (it holds them) and sends it encoded
//! (postcard) with its units whenever the plan changes; the live bundle
//! decodes it, and so carries no engine's rules, link decoding or model
//! readers of its own (issue 38).

use serde::{Deserialize, Serialize};
use shared::live::{LivePlan, PlanGpu};
use shared::units::UnitSystem;

/// What live mode knows of the calculator.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HandedPlan {
    pub units: UnitSystem,
    /// `None` while the inputs make no runnable plan.
    pub plan: Option<LivePlan>,
}

impl HandedPlan {
    /// The plan's GPUs, in order.
    pub fn gpus(&self) -> Option<&[PlanGpu]> {
        self.plan.as_ref().map(|p| &p.gpus[..])
    }
}

/// The page's side. Without postcard's reason, as [`decode`]: its error
/// texts (the first load's, through this call) could only say that a type
/// of the page's own does not serialise.
pub fn encode(handed: &HandedPlan) -> Result<Vec<u8>, String> {
    postcard::to_allocvec(handed).map_err(|_| "the plan could not be encoded".to_string())
}

/// The live bundle's side: the inverse of [`encode`] (without postcard's
/// reason: the bytes are the page's own).
pub fn decode(bytes: &[u8]) -> Result<HandedPlan, String> {
    postcard::from_bytes(bytes).map_err(|_| "a broken encoded plan".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::estimate::{Estimate, GpuSlot, Scenario, estimate};
    use shared::live::PlanFacts;
    use shared::model::Model;
    use shared::units::GIB;

    /// Llama 3.1 8B at TP 1 over two 24 GiB cards (two pipeline stages): the
    /// model, its estimate and the plan handed for it.
    fn handed_with() -> (Model, Estimate, HandedPlan) {
        let m = Model::preset("llama-3.1-8b").unwrap_or_else(|e| panic!("{e}"));
        let s = Scenario { gpus: vec![GpuSlot::custom("RTX 4090", 24 * GIB); 2], ..Scenario::default() };
        let s = s.validate().unwrap_or_else(|e| panic!("{e}"));
        let e = estimate(&m, s.clone());
        let h = HandedPlan { units: UnitSystem::Decimal, plan: Some(LivePlan::of(&m, &s, &e)) };
        (m, e, h)
    }

    fn handed() -> HandedPlan {
        handed_with().2
    }

    #[test]
    fn the_handed_plan_is_the_pages_plan() {
        let (m, e, h) = handed_with();
        let bytes = encode(&h).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(decode(&bytes), Ok(h.clone()));
        let plan = h.plan.as_ref().unwrap_or_else(|| panic!("a plan"));
        // Each GPU's budget, the findings' figures and each GPU's probe are the estimate's.
        assert_eq!(plan.gpus.len(), 2);
        for (g, peak) in plan.gpus.iter().zip(&e.per_gpu) {
            assert_eq!((g.index, g.total_bytes, g.budget), (peak.index, peak.total_bytes, peak.budget));
        }
        assert_eq!(plan.facts, PlanFacts::of(&m, &e));
        assert_eq!(plan.probes.len(), 2);
        assert!(plan.probes[0].steps.iter().any(|s| s.label == "embeddings"));
        assert!(plan.probes[1].steps.iter().any(|s| s.label == "final norm and lm_head"));
        // Each GPU's weights are what its probe allocates for them.
        for (g, p) in plan.gpus.iter().zip(&plan.probes) {
            let weights: u64 = p
                .steps
                .iter()
                .filter(|s| s.label.contains("weights") || s.label.contains("embed") || s.label.contains("lm_head"))
                .map(|s| s.bytes)
                .sum();
            assert_eq!(weights, g.budget.weight_bytes, "GPU {}", g.index);
        }
    }

    #[test]
    fn a_broken_handed_plan_is_refused() {
        let bytes = encode(&handed()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(decode(&bytes[..bytes.len() / 2]), Err("a broken encoded plan".to_string()));
        assert!(decode(&[]).is_err());
        // No plan is a plan too: the units alone.
        let none = HandedPlan { units: UnitSystem::Binary, plan: None };
        assert_eq!(decode(&encode(&none).unwrap_or_else(|e| panic!("{e}"))), Ok(none));
    }
}
