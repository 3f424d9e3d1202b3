//! TensorRT-LLM's (PyTorch backend) account of a component that did not fit
//! while it built its executor (`_ExecutorMemoryMonitor._maybe_explain_if_oom`,
//! tensorrt_llm/_torch/pyexecutor/py_executor_creator.py, 1.0):
//!
//! ```text
//! Executor creation failed due to insufficient GPU memory.
//!
//! The following component could not be created: KV cache
//! Total GPU memory (GiB): 140.06
//! Free GPU memory before component creation attempt (GiB): 108.86
//! ```
//!
//! Figures are `bytes / 1024**3` with two decimals.

use super::scan::{self, Cur};
use super::{Occurrence, OomKind, OomReport, TrtllmComponent};
use crate::units::GIB;

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    // Every rank prints it: one failure, the last one read.
    let Some((start, end)) = scan::find_last(t, t.len(), "Executor creation failed due to insufficient GPU memory")
    else {
        return;
    };
    let mut r = OomReport { kind: Some(OomKind::TrtllmExecutorMemory), ..OomReport::default() };
    let mut c = Cur::new(t, end);
    if c.find("The following component could not be created:", 200) {
        let from = scan::skip_ws(t, c.pos);
        let line = t.get(from..scan::line_end(t, from, 0)).unwrap_or_default();
        r.trtllm_component = Some(TrtllmComponent::of(line));
    }
    let gib_at = |c: &mut Cur, label: &str| {
        (c.find(label, 300) && c.lit("(GiB):"))
            .then(|| c.fraction_permille())
            .flatten()
            .map(|p| u64::try_from((u128::from(p) * u128::from(GIB) + 500) / 1000).unwrap_or(u64::MAX))
    };
    r.total_bytes = gib_at(&mut c, "Total GPU memory");
    r.free_bytes = gib_at(&mut c, "Free GPU memory before component creation attempt");
    out.push(Occurrence { start, report: r });
}

impl TrtllmComponent {
    /// The component's name as `_ExecutorCreationStage` spells it.
    fn of(name: &[u8]) -> Self {
        let is = |p: &str| name.len() >= p.len() && name[..p.len()].eq_ignore_ascii_case(p.as_bytes());
        if is("Model resources") {
            Self::Activations
        } else if is("Model") || is("Draft model") {
            Self::Model
        } else if is("KV cache") {
            Self::KvCache
        } else if is("Sampler") || is("Drafter") {
            Self::Sampler
        } else {
            Self::Activations
        }
    }
}
