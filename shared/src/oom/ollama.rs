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

/// Whether the paste is Ollama's own log, which runs llama.cpp (or its own
/// engine over ggml) as its runner: journald's `ollama[PID]:` prefix, its
/// `log/slog` lines' `source=FILE.go:LINE` (server.go, sched.go,
/// runner.go; Go's slog with `AddSource`, set by Ollama's `logutil`), the
/// scheduler's `runner.num_ctx=` and `msg="model layout did not fit`
/// (llm/server.go, 0.12 and later: its backoff before it retries with fewer
/// layers). Read before normalising, which strips the journal's prefix.
pub(super) fn process(t: &[u8]) -> bool {
    // 0.30+'s scheduler: `runtime OOM detected; expiring loaded models`
    // (server/sched.go at fb3076099).
    const MARKS: [&str; 4] =
        ["runner.num_ctx=", "msg=\"model layout did not fit", "msg=\"llama runner", "runtime OOM detected"];
    MARKS.into_iter().any(|m| scan::find(t, 0, t.len(), m).is_some())
        || scan::find_all(t, "ollama[").into_iter().any(|(_, end)| {
            let digits = t.get(end..).unwrap_or_default().iter().take_while(|b| b.is_ascii_digit()).count();
            digits > 0 && t.get(end + digits..end + digits + 2) == Some(b"]:")
        })
        || scan::find_all(t, "source=").into_iter().any(|(_, end)| {
            let word = t.get(end..).unwrap_or_default().iter().take(40).take_while(|b| !b.is_ascii_whitespace());
            let word: Vec<u8> = word.copied().collect();
            word.windows(4).any(|w| w == b".go:")
        })
}
