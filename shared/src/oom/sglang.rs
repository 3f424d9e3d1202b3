//! SGLang's messages about its KV pool: the warning that it is full while
//! serving ([`pool_full`]), and its start-up failure when it comes out empty
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
use super::{Occurrence, OomKind, OomReport, ServingPhase};

/// Whether the text at `start` opens a quoted string: the source line a
/// traceback shows (`"Not enough memory. …"`, `f"Prefill out of memory…`).
fn quoted(t: &[u8], start: usize) -> bool {
    start.checked_sub(1).and_then(|i| t.get(i)).is_some_and(|&b| b == b'"' || b == b'\'')
}

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    for (start, end) in scan::find_all(t, "Not enough memory. Please try to increase --mem-fraction-static") {
        // The source line a traceback shows (or `msg = "Not enough memory. …"`) is not the message.
        if quoted(t, start) {
            continue;
        }
        let mut r = OomReport { kind: Some(OomKind::SglangNoKvPool), ..OomReport::default() };
        // Later versions add ` Current value: mem_fraction_static=0.84`
        // (`pool_configurator.py`); 0.5's `model_runner.py` printed the
        // f-string `{self.server_args.mem_fraction_static=}`, which names
        // the expression: ` Current value: self.server_args.mem_fraction_static=0.2`.
        let mut c = Cur::new(t, end);
        c.lit(".");
        if c.lit("Current value:") && (c.lit("mem_fraction_static=") || c.lit("self.server_args.mem_fraction_static="))
        {
            r.mem_fraction_static_permille = c.fraction_permille().filter(|p| (1..=1000).contains(p));
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

/// SGLang's scheduler finding its KV pool full while it serves
/// (managers/scheduler.py `update_running_batch`, logged once per
/// retraction by every TP rank):
///
/// ```text
/// KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 646, #new_token_ratio: 0.0980 -> 0.3487
/// ```
///
/// 0.5.10 – 0.5.23 add `#new_tokens_gained` (and `#mamba_num_gained` for a
/// hybrid model); 0.4.7 – 0.5.5 print `#retracted_reqs` and
/// `#new_token_ratio` alone; 0.4.6 and before (0.4.4.post1 read) opened
/// with `Decode out of memory happened.` (the same check,
/// `batch.check_decode_mem()`). Not its
/// `Decode out of memory. Try to lower your batch size.`, an allocation
/// that failed (mem_cache/allocation.py), nor `Testing retraction.`
/// (`SGLANG_TEST_RETRACT`).
pub(super) fn pool_full(t: &[u8], out: &mut Vec<Occurrence>) {
    let mut anchors = scan::find_all(t, "KV cache pool is full. Retract requests.");
    anchors.extend(scan::find_all(t, "Decode out of memory happened."));
    crate::order::sort_by_key(&mut anchors, |a| a.0);
    for (i, &(start, end)) in anchors.iter().enumerate() {
        // The source line a traceback shows (quoted, its figures not yet
        // formatted) is not the message; a JSON log's quoted message is.
        let in_quotes = quoted(t, start);
        // Its figures follow on its line (or a wrapped next one), before the next warning.
        let limit = anchors.get(i + 1).map_or(t.len(), |a| a.0).min(scan::line_end(t, end, 1));
        let mut r = OomReport { kind: Some(OomKind::SglangKvPoolFull), ..OomReport::default() };
        let mut c = Cur::new(t, end);
        if c.find("#retracted_reqs:", limit.saturating_sub(c.pos)) && c.on_line() {
            r.preempted_requests = c.uint();
        }
        if in_quotes && r.preempted_requests.is_none() {
            continue;
        }
        if c.find("#new_token_ratio:", limit.saturating_sub(c.pos)) && c.on_line() {
            c.fraction_permille();
            if c.lit("->") && c.on_line() {
                r.new_token_ratio_permille = c.fraction_permille().filter(|&p| p <= 1000);
            }
        }
        out.push(Occurrence { start, report: r });
    }
}

/// What the paste says around the full pool's last warning (at `at`): the
/// last `Decode batch` line's token usage before it (`full token usage`
/// where a sliding-window model logs both pools), and `available_gpu_mem`
/// of the start-up line (managers/scheduler.py, `f"...={free:.2f} GB"` of
/// `get_available_gpu_memory`, bytes / 2^30).
pub(super) fn pool_context(t: &[u8], at: usize, r: &mut OomReport) {
    if let Some((batch, _)) = scan::find_last(t, at, "Decode batch") {
        let line = scan::line_end(t, batch, 0);
        let usage =
            scan::find(t, batch, line, "full token usage:").or_else(|| scan::find(t, batch, line, "token usage:"));
        if let Some((_, end)) = usage {
            r.kv_cache_usage_permille = Cur::new(t, end).fraction_permille().filter(|&p| p <= 1000);
        }
    }
    r.available_gpu_mem_bytes = scan::last_of(t, &["available_gpu_mem="], |c| c.binary_size());
}

/// SGLang's allocator finding no free KV slots for a batch even after
/// retracting (mem_cache/allocation.py, 0.5.23, logged and raised as a
/// `RuntimeError`; `Decode` for a decode batch):
///
/// ```text
/// Prefill out of memory. Try to lower your batch size.
/// Try to allocate 8192 tokens.
/// ```
///
/// Its source line in a traceback (`f"Prefill out of memory…`) is not it.
pub(super) fn alloc_failed(t: &[u8], out: &mut Vec<Occurrence>) {
    for phase in ["Prefill", "Decode"] {
        for (start, _) in scan::find_all(t, &format!("{phase} out of memory. Try to lower your batch size.")) {
            if quoted(t, start) {
                continue;
            }
            out.push(Occurrence {
                start,
                report: OomReport { kind: Some(OomKind::SglangKvAllocFailed), ..OomReport::default() },
            });
        }
    }
}

/// `mem_fraction_static` where SGLang or its launcher names it: the last of
/// `--mem-fraction-static[=| ]X` (a command line) and `mem_fraction_static=X`
/// (the `server_args=ServerArgs(…)` line the server logs at start, the
/// dataclass's repr in srt/server_args.py, 0.4 – 0.5; the no-pool error's
/// `Current value:`). A fraction past 1 is no setting.
pub(super) fn mem_fraction_static(t: &[u8]) -> Option<u64> {
    const FORMS: [&str; 3] = ["--mem-fraction-static=", "--mem-fraction-static ", "mem_fraction_static="];
    scan::last_of(t, &FORMS, |c| c.fraction_permille().filter(|p| (1..=1000).contains(p)))
}

/// Whether the paste comes from an SGLang server: its launcher
/// (`sglang.launch_server`), its sources in a traceback (`sglang/srt/`), its
/// schedulers' process title (`sglang::scheduler`) or their log prefix,
/// `[2025-03-08 12:29:11 TP0]` with `DPn`, `TPn`, `PPn` (`EPn` later) after
/// the time (`managers/scheduler.py::run_scheduler_process`, 0.4 – 0.5).
/// Read before normalising, which strips the prefixes.
pub(super) fn process(t: &[u8]) -> bool {
    ["sglang.launch_server", "sglang/srt/", "sglang::scheduler"].into_iter().any(|m| !scan::find_all(t, m).is_empty())
        || t.iter().enumerate().any(|(i, &b)| b == b'[' && rank_prefix(t.get(i + 1..).unwrap_or_default()))
}

/// Whether an SGLang traceback failed in a batch the scheduler ran while it
/// served (`run_batch`, managers/scheduler.py, under `event_loop_normal`,
/// `event_loop_overlap` and their disaggregated forms; the worker's
/// `forward_batch_generation`, managers/tp_worker.py and
/// speculative/eagle_worker.py; the overlap thread's `forward_thread_func`,
/// managers/tp_worker_overlap_thread.py in 0.4.x) and in none of its
/// start-up (model_executor/model_runner.py's `initialize`, `load_model`,
/// `profile_max_num_token`, `init_memory_pool`, `init_cuda_graphs` (0.4.x) /
/// `init_device_graphs` (0.5.x); cuda_graph_runner.py's and
/// piecewise_cuda_graph_runner.py's `capture_one_batch_size` and
/// `warmup_and_capture`, which a serving step's `recapture_if_needed` also
/// reaches; scheduler.py's `init_model_worker` and `init_tp_model_worker`,
/// tp_worker.py's `_init_model_runner`: sglang 0.4.4.post1 and 0.5.5). The
/// event loops alone are not enough: they also run the requests that
/// update weights or flush the cache. `init_memory_pool` allocates the
/// whole KV pool once, before the graphs and before the first batch: a
/// failure in a batch came after it.
pub(super) fn serving(t: &[u8]) -> bool {
    const STEP: [&str; 3] = ["in run_batch", "in forward_batch_generation", "in forward_thread_func"];
    const START_UP: [&str; 11] = [
        "in initialize",
        "in load_model",
        "in profile_max_num_token",
        "in init_memory_pool",
        "in init_cuda_graphs",
        "in init_device_graphs",
        "in capture_one_batch_size",
        "in warmup_and_capture",
        "in init_model_worker",
        "in init_tp_model_worker",
        "in _init_model_runner",
    ];
    scan::in_steps_only(t, &STEP, &START_UP)
}

/// Which step of serving the traceback shows, where its frames say so
/// (model_executor/model_runner.py `_forward_raw`, sglang 0.4.4.post1 –
/// 0.5.5): `forward_decode` is a decode batch; `forward_extend` (and
/// 0.5's `forward_split_prefill`) a prefill, unless speculative decoding's
/// `verify` (speculative/eagle_worker.py) ran it, which is the decode
/// step's check of the draft tokens; a prefill through the logits
/// processor's input logprobs (layers/logits_processor.py
/// `compute_temp_top_p_normalized_logprobs`, which only input logprobs
/// call, and 0.5's `_process_input_logprobs`) is their own case. An idle
/// batch (`forward_idle`, a data-parallel rank without requests) or frames
/// that name no step tell nothing.
pub(super) fn phase(t: &[u8]) -> Option<ServingPhase> {
    let has = |m: &str| scan::find(t, 0, t.len(), m).is_some();
    let verify = has("in verify");
    let decode = has("in forward_decode");
    let prefill = has("in forward_extend") || has("in forward_split_prefill");
    if verify || (decode && !prefill) {
        Some(ServingPhase::Decode)
    } else if prefill && !decode {
        let logprobs = has("in compute_temp_top_p_normalized_logprobs") || has("in _process_input_logprobs");
        Some(if logprobs { ServingPhase::InputLogprobs } else { ServingPhase::Prefill })
    } else {
        None
    }
}

/// `2025-03-08 12:29:11 DP0 TP0]`: a date, a time, then one or more ranks.
fn rank_prefix(after: &[u8]) -> bool {
    let Some(len) = after.iter().take(64).position(|&b| b == b']' || b == b'\n') else { return false };
    if after.get(len) != Some(&b']') {
        return false;
    }
    let mut words = after.get(..len).unwrap_or_default().split(|&b| b == b' ').filter(|w| !w.is_empty());
    // `SGLANG_LOG_MS` adds milliseconds to the time (`12:29:11.123`).
    let stamp = |w: Option<&[u8]>, sep: u8| {
        w.is_some_and(|w| {
            w.first().is_some_and(u8::is_ascii_digit)
                && w.iter().all(|&b| b.is_ascii_digit() || b == sep || (sep == b':' && b == b'.'))
        })
    };
    if !(stamp(words.next(), b'-') && stamp(words.next(), b':')) {
        return false;
    }
    let mut ranks = 0;
    // `TP0`, and 0.5.23's `ATTN_CP0`, `MOE_DP0` (scheduler.py's prefix).
    for w in words {
        let cut = w.iter().rposition(|b| !b.is_ascii_digit()).map_or(0, |i| i + 1);
        let (name, digits) = w.split_at(cut);
        let kind = name.rsplit(|&b| b == b'_').next().unwrap_or_default();
        if !(matches!(kind, b"TP" | b"DP" | b"PP" | b"EP" | b"CP")
            && name.iter().all(|&b| b.is_ascii_uppercase() || b == b'_')
            && !digits.is_empty())
        {
            return false;
        }
        ranks += 1;
    }
    ranks > 0
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
        assert!(!r.sglang_process);
        let positive =
            parse("max_total_tokens=131072 is larger than the profiled value 52000. Use the profiled value instead.");
        assert_eq!(positive.kind, None);
    }

    #[test]
    fn sglang_is_told_by_its_launcher_sources_and_rank_prefixes() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 26.00 MiB.";
        for (text, want) in [
            ("python -m sglang.launch_server --model-path m --tp-size 2", true),
            (
                "  File \"/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/model_runner.py\", line 1",
                true,
            ),
            ("[2025-03-08 12:29:11 TP0] Scheduler hit an exception:", true),
            ("[2025-07-02 07:41:58 DP0 TP0] Load weight end.", true),
            ("[2026-05-07 13:39:14 DP1 TP1 EP1] Capture cuda graph end.", true),
            // `SGLANG_LOG_MS`, and 0.5.23's attention and MoE ranks.
            ("[2025-03-08 12:29:11.123 TP0] Scheduler hit an exception:", true),
            ("[2026-05-07 13:39:14 ATTN_CP0 MOE_DP1 TP0] Load weight end.", true),
            ("[2026-05-07 13:39:14 tp0] lower case", false),
            ("[2025-03-08 12:29:11] INFO: started", false),
            ("[TP0] no date", false),
            ("(VllmWorker TP0 pid=1) INFO", false),
        ] {
            assert_eq!(parse(&format!("{text}\n{oom}")).sglang_process, want, "{text}");
        }
    }
}
