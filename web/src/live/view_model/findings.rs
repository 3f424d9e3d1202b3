//! The agent's findings (`findings` messages, `shared::live`) as a GPU card
//! shows them: the checklist's cause, how sure, the readings, the fix and,
//! when the page holds a plan, the plan's figures beside them.

use shared::live::{PlanFacts, plan_notes};
use shared::protocol::{Finding, FindingCause, FindingCertainty};

use super::host::HostModel;

/// One finding under a GPU's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingCard {
    pub cause: &'static str,
    pub number: u8,
    pub title: &'static str,
    /// `likely` or `possible` (also the card's class).
    pub certainty: &'static str,
    pub evidence: String,
    pub fix: String,
    pub notes: Vec<String>,
}

/// The agent's latest findings on GPU `index`, as they came (causes this
/// build does not know are skipped).
pub fn on_gpu(host: &HostModel, index: u32) -> Vec<&Finding> {
    host.findings
        .iter()
        .flat_map(|f| &f.findings)
        .filter(|f| f.gpu == index && f.cause != FindingCause::Unknown)
        .collect()
}

pub fn cards(found: &[&Finding], plan: Option<&PlanFacts>) -> Vec<FindingCard> {
    found
        .iter()
        .filter_map(|f| {
            let live = f.to_live()?;
            Some(FindingCard {
                cause: live.cause.id(),
                number: f.number,
                title: live.cause.title(),
                certainty: match f.certainty {
                    FindingCertainty::Likely => "likely",
                    _ => "possible",
                },
                evidence: f.evidence.clone(),
                fix: f.fix.clone(),
                notes: plan.map(|p| plan_notes(&live, p)).unwrap_or_default(),
            })
        })
        .collect()
}
