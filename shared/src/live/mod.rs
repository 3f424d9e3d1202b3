//! The OOM checklist run on a GPU's own readings. What people are told to do
//! when inference runs out of memory is to watch `nvidia-smi`: memory near
//! capacity right after the load (precision too high), memory climbing during
//! generation (the KV cache), one GPU full while another is nearly empty (the
//! split), memory held by an earlier load or a process that is gone
//! (leftovers). [`Watcher`] keeps the last few minutes of an agent's
//! [`Sample`]s and turns them into [`Finding`]s, each with its cause, the
//! readings that show it, how sure it is and the fix.
//!
//! Pure and deterministic: time is the samples' own timestamps, so recorded
//! series replay exactly (the tests below and the simulated scenarios in the
//! agent). The agent runs it once for every client; a client that knows the
//! plan adds the plan's figures with [`plan_notes`].

mod finding;
mod plan;
mod rules;
mod window;
mod wire;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use crate::engines::live::{from_process_name as engine_of, preallocates};
pub use finding::{Cause, Certainty, Finding, Growth};
pub use plan::{LivePlan, PlanFacts, PlanGpu, plan_notes};
pub use window::{SPAN_MS, Window};

use crate::protocol::Sample;

/// A window of readings and the findings it shows, with the moment each
/// finding was first made (the page marks it on the timeline).
#[derive(Debug, Clone, Default)]
pub struct Watcher {
    window: Window,
    /// `(cause, gpu, pid)` → the reading's time when first found, kept while
    /// the finding holds.
    first_found: BTreeMap<(Cause, u32, Option<u32>), u64>,
    findings: Vec<Finding>,
}

impl Watcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one sample and returns the findings as of it.
    pub fn update(&mut self, sample: &Sample) -> &[Finding] {
        self.window.push(sample);
        let mut findings = rules::diagnose(&self.window);
        let mut kept = BTreeMap::new();
        for f in &mut findings {
            let key = (f.cause, f.gpu, f.pid);
            let at = self.first_found.get(&key).copied().unwrap_or(sample.timestamp_ms);
            f.found_ms = at;
            kept.insert(key, at);
        }
        self.first_found = kept;
        self.findings = findings;
        &self.findings
    }

    /// The findings as of the last sample.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    pub fn window(&self) -> &Window {
        &self.window
    }
}
