//! Ollama's check of the host's memory before it starts a runner
//! (`NewLlamaServer` in `llm/server.go`, 0.5 – 0.11; `verifyLayout` from
//! 0.12, same sentence until 0.20):
//!
//! ```text
//! model requires more system memory (164.8 GiB) than is available (13.4 GiB)
//! ```
//!
//! The first figure is what stays in system RAM (`TotalSize − VRAMSize`, the
//! layers not offloaded and the CPU buffers), the second the host's free
//! memory plus free swap; both printed by `format.HumanBytes2`, binary units.
//! Not a GPU figure at all: the GPU's memory is not in this message.

use super::scan::{self, Cur};
use super::{Occurrence, OomKind, OomReport};

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    for (start, end) in scan::find_all(t, "model requires more system memory") {
        let mut c = Cur::new(t, end);
        let mut r = OomReport { kind: Some(OomKind::OllamaHostMemory), ..OomReport::default() };
        if c.lit("(") {
            r.host_required_bytes = c.size();
            c.lit(")");
        }
        if c.lit("than is available") && c.lit("(") {
            r.host_available_bytes = c.size();
        }
        out.push(Occurrence { start, report: r });
    }
}
