//! SGLang's start-up failure when its KV pool comes out empty
//! (`python/sglang/srt/model_executor/model_runner.py::init_memory_pool`,
//! 0.4.3 – 0.4.8; `mem_cache/pool_configurator.py::MemoryPoolConfig` later):
//!
//! ```text
//! max_total_tokens=131072 is larger than the profiled value -561981. Use the profiled value instead.
//! RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.
//! ```
//!
//! `profile_max_num_token` sizes the pool as what is free after the weights
//! less `(1 − mem_fraction_static)` × the memory before them, over the bytes
//! of one token; `init_memory_pool` raises when that is ≤ 0. The warning
//! comes first, and only when `--max-total-tokens` was given, so a negative
//! profiled value is the same failure read one line earlier.

use super::scan::{self, Cur};
use super::{Occurrence, OomKind, OomReport};

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    for (start, end) in scan::find_all(t, "Not enough memory. Please try to increase --mem-fraction-static") {
        // The source line a traceback shows (`"Not enough memory. …"`, or
        // `msg = "Not enough memory. …"`) is not the message.
        let quoted = start.checked_sub(1).and_then(|i| t.get(i)).is_some_and(|&b| b == b'"' || b == b'\'');
        if quoted {
            continue;
        }
        let mut r = OomReport { kind: Some(OomKind::SglangNoKvPool), ..OomReport::default() };
        // Later versions add ` Current value: mem_fraction_static=0.84`
        // (`pool_configurator.py`); 0.5's `model_runner.py` printed the
        // f-string `{self.server_args.mem_fraction_static=}`, which names
        // the expression: ` Current value: self.server_args.mem_fraction_static=0.2`.
        let mut c = Cur::new(t, end);
        c.lit(".");
        if c.lit("Current value:")
            && (c.lit("mem_fraction_static=") || c.lit("self.server_args.mem_fraction_static="))
        {
            r.mem_fraction_static_permille = c.fraction_permille();
        }
        out.push(Occurrence { start, report: r });
    }
    for (start, end) in scan::find_all(t, "is larger than the profiled value") {
        let mut c = Cur::new(t, end);
        if !c.lit("-") {
            // A positive profiled value is a pool smaller than asked, not a failure.
            continue;
        }
        let Some(tokens) = c.uint() else { continue };
        let mut r = OomReport { kind: Some(OomKind::SglangNoKvPool), ..OomReport::default() };
        r.notes.push(format!(
            "SGLang profiled a KV pool of -{} tokens: after the weights, less was free than the (1 − \
             mem_fraction_static) share it keeps back.",
            crate::explain::thousands(tokens)
        ));
        let line = scan::line_start(t, start);
        out.push(Occurrence { start: line.max(start.saturating_sub(40)), report: r });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{OomKind, parse};

    #[test]
    fn the_fraction_named_by_later_versions_is_read_and_source_lines_are_not_messages() {
        let r = parse(
            "    msg = \"Not enough memory. Please try to increase --mem-fraction-static.\"\n\
             RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.84",
        );
        assert_eq!(r.kind, Some(OomKind::SglangNoKvPool));
        assert_eq!(r.occurrences, 1);
        assert_eq!(r.mem_fraction_static_permille, Some(840));
        let older = parse(
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: \
             self.server_args.mem_fraction_static=0.2",
        );
        assert_eq!(older.mem_fraction_static_permille, Some(200));
        let positive =
            parse("max_total_tokens=131072 is larger than the profiled value 52000. Use the profiled value instead.");
        assert_eq!(positive.kind, None);
    }
}
