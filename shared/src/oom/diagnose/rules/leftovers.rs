//! Step 5 from the error: leftovers (fragmentation, other processes, a per-process cap).

use crate::fixes::GivesUp;
use crate::oom::OomKind;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::{gib, pct};
use crate::oom::diagnose::{CauseId, FixId};
use crate::units::{GIB, MIB};

/// How much more than the printed request a failed allocation may have
/// needed, so that "free ≥ request" proves nothing below it. PyTorch's
/// caching allocator asks the driver for more than it was asked
/// (c10/cuda/CUDACachingAllocator.cpp): a request of 1 – 10 MiB takes a
/// whole 20 MiB segment (`get_allocation_size`: `kLargeBuffer`), expandable
/// segments map the large pool in 20 MiB pages (`kLargeBuffer`), and larger
/// requests round up to 2 MiB (`kRoundLarge`): at most 20 MiB more. And
/// `format_size` prints the request and the free memory to 0.01 of their
/// unit, each off by up to half of 0.01 GiB.
const ALLOCATOR_SLACK_BYTES: u64 = 20 * MIB + GIB / 100;

/// Step 5: fragmentation, other processes, a per-process cap.
pub(crate) fn leftovers(f: &Facts, b: &mut Board) {
    let r = f.r;
    let (Some(q), Some(free)) = (f.requested, f.free) else {
        others_without_figures(f, b);
        return;
    };
    let shortage = f.shortage.unwrap_or(0);

    // A cap set with torch.cuda.set_per_process_memory_fraction. PyTorch
    // prints "X allowed" whenever a fraction is set, 1.0 included
    // (`c10/cuda/CUDACachingAllocator.cpp`, `malloc`'s OOM message: `if
    // (set_fraction) allowed_info = format_size(allowed_memory_maximum) + "
    // allowed; "`, 1.13 - 2.5): only a cap below the capacity limits anything.
    let cap = r.allowed_bytes.filter(|&allowed| !f.total.is_some_and(|t| covers_capacity(allowed, t)));
    if r.allowed_bytes.is_some() && cap.is_none() {
        b.notes.push(
            "The message's \"allowed\" equals the GPU's capacity: a memory fraction of 1.0, which PyTorch prints \
             but which caps nothing."
                .into(),
        );
    }
    if let Some(allowed) = cap {
        let reserved = r.reserved_bytes.or(r.allocated_bytes).unwrap_or(0);
        let over = reserved.saturating_add(q) > allowed;
        let text = format!(
            "this process may use at most {} (set_per_process_memory_fraction); it had {} reserved and asked for {} more",
            gib(allowed),
            gib(reserved),
            gib(q)
        );
        if free >= q {
            b.add(CauseId::MemoryCap, 85, format!("{text}, while the GPU still had {} free", gib(free)));
        } else if over {
            // The cap and the GPU's free memory both stand in the way.
            b.add(CauseId::MemoryCap, 55, format!("{text}; the GPU itself had only {} free", gib(free)));
        } else {
            b.add(CauseId::MemoryCap, 30, format!("a per-process cap of {} is set", gib(allowed)));
        }
        if let Some(t) = f.total.filter(|&t| t > 0) {
            // Room for the request above both what is reserved and the current cap.
            let want = reserved.max(allowed).saturating_add(q).min(t);
            let fraction = ((want as f64 / t as f64) * 20.0).ceil() / 20.0;
            if fraction > allowed as f64 / t as f64 && fraction <= 1.0 {
                b.fix(fix(
                    FixId::MemoryFraction,
                    CauseId::MemoryCap,
                    format!("Raise the per-process cap to {:.0} % of the GPU", fraction * 100.0),
                    GivesUp::Nothing,
                    Some(((fraction * t as f64) as u64).saturating_sub(allowed)),
                    format!("{}.set_per_process_memory_fraction({fraction:.2})", f.torch_module()),
                ));
            }
        }
    }

    // Fragmentation: reserved by the cache, not allocated, in pieces too small.
    // Not when PyTorch holds more than the GPU has: that memory is system RAM
    // the driver lent (see `pytorch::beyond_capacity`), not split blocks.
    if let Some(u) = r.reserved_unallocated_bytes
        && let Some(t) = f.total.filter(|&t| t > 0)
        && !super::pytorch::beyond_capacity(f, t)
    {
        let share = u as f64 / t as f64;
        let base: u32 = if share >= 0.10 {
            80
        } else if share >= 0.05 {
            60
        } else if share >= 0.02 {
            35
        } else if share >= 0.005 {
            15
        } else {
            0
        };
        if base > 0 {
            let mut text = format!("reserved but unallocated is {} = {} of capacity", gib(u), pct(u, t));
            let score = if u >= q && shortage > 0 {
                text.push_str(&format!(
                    ", more than the {} requested: the cache held the memory, in pieces too small",
                    gib(q)
                ));
                base + 10
            } else if u >= shortage && shortage > 0 {
                text.push_str(&format!(", enough for the {} that was missing", gib(shortage)));
                base + 5
            } else if shortage > 0 {
                text.push_str(&format!(", less than the {} that was missing", gib(shortage)));
                base.saturating_sub(10).max(5)
            } else {
                base
            };
            b.add(CauseId::Fragmentation, score, text);
            if let Some(conf) = f.alloc_conf() {
                let (title, code) = if f.is_legacy() {
                    (
                        "Limit block splitting in PyTorch's cache (PyTorch < 2.1)".to_owned(),
                        format!("export {conf}=max_split_size_mb:128"),
                    )
                } else {
                    (
                        "Let PyTorch's cache grow segments instead of splitting blocks".to_owned(),
                        format!("export {conf}=expandable_segments:True"),
                    )
                };
                b.fix(fix(
                    if f.is_legacy() { FixId::MaxSplitSize } else { FixId::ExpandableSegments },
                    CauseId::Fragmentation,
                    title,
                    GivesUp::Nothing,
                    Some(u),
                    code,
                ));
            }
            // A vLLM server holds no earlier run of the same process.
            if f.serving.is_none() {
                b.fix(fix(
                    FixId::EmptyCache,
                    CauseId::Fragmentation,
                    "Free what earlier runs left in the same process before loading or generating again".into(),
                    GivesUp::Nothing,
                    Some(u),
                    format!("del model; gc.collect(); {}.empty_cache()", f.torch_module()),
                ));
            }
        }
    }

    // Other processes, listed by the error or read live by the agent.
    let others = f.others_total();
    let pytorch = matches!(r.kind, Some(OomKind::Pytorch | OomKind::PytorchLegacy | OomKind::PytorchAsync));
    let free_beyond_slack = free >= q.saturating_add(ALLOCATOR_SLACK_BYTES);
    if free >= q && !free_beyond_slack && cap.is_none() && pytorch {
        b.notes.push(format!(
            "{} was free, above the {} requested by less than the allocator's rounding (a request may take a whole \
             20 MiB segment) and the figures' printing: the GPU was full, not raced by another allocation.",
            gib(free),
            gib(q)
        ));
    }
    if free_beyond_slack && cap.is_none() && pytorch {
        b.add(
            CauseId::OtherProcesses,
            40,
            format!(
                "{} was free when PyTorch wrote the message, more than the {} requested: the memory was missing only \
                 for a moment, typically because another process (a second engine or worker) allocated at the same time",
                gib(free),
                gib(q)
            ),
        );
    }
    if others > 0 {
        let t = f.total.unwrap_or(others).max(1);
        let only_inferred = f.others.is_empty();
        let covers = shortage > 0 && others >= shortage;
        let score = if covers {
            let s = 60 + (25.0 * (others as f64 / t as f64 / 0.25).min(1.0)) as u32;
            if only_inferred { s.min(50) } else { s }
        } else if others >= t / 20 {
            35
        } else {
            20
        };
        for h in &f.others {
            let who = h.who();
            let when = if h.now { " now (agent reading)" } else { "" };
            b.add(CauseId::OtherProcesses, score, format!("{who} holds {} = {}{when}", gib(h.bytes), pct(h.bytes, t)));
            if let Some(pid) = h.pid {
                b.fix(fix(
                    FixId::KillProcess,
                    CauseId::OtherProcesses,
                    format!("Stop {who} if it is a leftover (a finished job, an idle notebook kernel)"),
                    GivesUp::Nothing,
                    Some(h.bytes),
                    format!("kill {pid}"),
                ));
            }
        }
        if f.unlisted > 0 {
            let what = if f.is_legacy() {
                "outside PyTorch's cache: by other processes, or this process's own non-PyTorch memory (CUDA libraries, NCCL)"
            } else {
                "by processes the error does not list (other containers or users)"
            };
            b.add(
                CauseId::OtherProcesses,
                score,
                format!("{} = {} of the GPU is held {what}", gib(f.unlisted), pct(f.unlisted, t)),
            );
        }
        let covers_text = if covers {
            format!("together {} held elsewhere, more than the {} that was missing", gib(others), gib(shortage))
        } else if shortage > 0 {
            format!("together {} held elsewhere, less than the {} that was missing", gib(others), gib(shortage))
        } else {
            format!("together {} held elsewhere", gib(others))
        };
        b.add(CauseId::OtherProcesses, score, covers_text);
        inspect_fix(f, b, Some(others));
        if !f.others.is_empty() {
            b.fix(fix(
                FixId::EmptyCache,
                CauseId::OtherProcesses,
                "In a notebook or server of your own that holds the GPU, free the old model first".into(),
                GivesUp::Nothing,
                None,
                format!("del model; gc.collect(); {}.empty_cache()", f.torch_module()),
            ));
        }
    }
}

/// Whether a cap is the whole GPU: at or above the capacity, or below it by
/// no more than the two figures' rounding (PyTorch prints both to 0.01 of
/// their unit, so 0.5 % covers a printed pair even in MiB).
fn covers_capacity(allowed: u64, total: u64) -> bool {
    allowed.saturating_add(total / 200) >= total
}

/// Who holds the GPU when the error has no figures: the live readings.
fn others_without_figures(f: &Facts, b: &mut Board) {
    let Some(live) = f.live else { return };
    let others = f.others_total();
    if others == 0 {
        return;
    }
    let t = live.total_bytes.max(1);
    let score = if others >= t / 4 { 50 } else { 25 };
    for h in &f.others {
        let who = h.who();
        b.add(
            CauseId::OtherProcesses,
            score,
            format!("{who} holds {} = {} now (agent reading)", gib(h.bytes), pct(h.bytes, t)),
        );
        if let Some(pid) = h.pid {
            b.fix(fix(
                FixId::KillProcess,
                CauseId::OtherProcesses,
                format!("Stop {who} if it is a leftover"),
                GivesUp::Nothing,
                Some(h.bytes),
                format!("kill {pid}"),
            ));
        }
    }
}

pub(super) fn inspect_fix(f: &Facts, b: &mut Board, saves: Option<u64>) {
    b.fix(fix(
        FixId::InspectGpu,
        CauseId::OtherProcesses,
        "See which processes hold the GPU".into(),
        GivesUp::Nothing,
        saves,
        f.process_tool().1.into(),
    ));
}
