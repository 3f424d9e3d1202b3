//! The checklist's four causes as rules over a [`Window`]. Each threshold
//! says why it is what it is; the GPU's own memory (read at every sample)
//! gives the shape and the timing, the process lists (read every few
//! seconds) say whose memory it is.

use crate::engines::live::{from_process_name, growing_fix, loaded_fix, preallocates, split_fix};
use crate::units::{GIB, MIB, UnitSystem, format_bytes};

use super::finding::{Cause, Certainty, Finding, Growth};
use super::window::{GpuSeries, ListPoint, MemoryPoint, Window};

/// "Near capacity": the checklist's ≥ 90 % of the GPU.
const NEAR_FULL_PCT: u64 = 90;
/// "Near empty" beside a full GPU: at most 60 % used, and the process holds
/// at most a third of what it holds on the full one.
const NEAR_EMPTY_PCT: u64 = 60;
/// A load settles within seconds of its last shard; 3 s of flat readings
/// (6 at the page's 500 ms) tell a finished load from a pause.
const SETTLE_MS: u64 = 3_000;
/// "One burst": a whole load within a minute (a 14 GiB checkpoint from a
/// 500 MB/s disk takes 30 s).
const BURST_MAX_MS: u64 = 60_000;
/// Generation runs kernels; loading weights barely does (the simulated and
/// real loads read 0–5 %). A climb counts only while the GPU is this busy.
const BUSY_PCT: u32 = 10;
/// A climb: at least 3 steps over at least 3 s.
const MIN_STEPS: u32 = 3;
const MIN_CLIMB_MS: u64 = 3_000;
/// A process idle beside a working one: flat for 4 s over 3 process lists.
const MIN_IDLE_MS: u64 = 4_000;
const MIN_LISTS: usize = 3;

/// Changes smaller than this are noise: the driver's and the allocator's
/// small allocations (64 MiB, or 0.25 % of a large card).
fn tolerance(total: u64) -> u64 {
    (64 * MIB).max(total / 400)
}

fn pct(part: u64, whole: u64) -> u64 {
    if whole == 0 { 0 } else { (u128::from(part) * 100 / u128::from(whole)) as u64 }
}

fn bytes(b: u64) -> String {
    format_bytes(b, UnitSystem::Binary)
}

fn seconds(ms: u64) -> String {
    format!("{} s", ms.div_ceil(1000))
}

fn who(pid: Option<u32>, name: Option<&str>) -> String {
    match (pid, name) {
        (Some(pid), Some(name)) => format!("PID {pid} ({name})"),
        (Some(pid), None) => format!("PID {pid}"),
        (None, _) => "the GPU's memory".into(),
    }
}

/// Every finding the window shows, by GPU then cause.
pub fn diagnose(window: &Window) -> Vec<Finding> {
    // A GPU filled by a bad split is the split's finding, not the precision's.
    let mut out = unbalanced(window);
    for (gpu, series) in window.gpus() {
        let Some(now) = series.latest() else { continue };
        if let Some(f) = growing(gpu, series, now) {
            out.push(f);
        } else if let Some(f) = near_capacity(gpu, series, now)
            && !f.pid.is_some_and(|pid| spread_to_room(window, gpu, pid))
        {
            out.push(f);
        }
        out.extend(leftovers(gpu, series, now));
    }
    crate::order::sort_by_key(&mut out, |f| (f.gpu, f.cause, f.pid));
    out
}

/// Whether `pid` also runs on another GPU that has room: then a full `gpu`
/// is the split's doing (cause 3, once both have settled), not the precision's.
fn spread_to_room(window: &Window, gpu: u32, pid: u32) -> bool {
    window.gpus().any(|(other, s)| {
        other != gpu
            && s.lists.back().is_some_and(|l| l.held_by(pid) > 0)
            && s.latest().is_some_and(|m| m.used_bytes * 100 < m.total_bytes * NEAR_FULL_PCT)
    })
}

/// The process whose memory changed most between the last list at or before
/// `from_ms` (none: every process held 0) and the latest list, when it made
/// at least half of `change`.
fn mover(series: &GpuSeries, from_ms: u64, change: u64) -> Option<(u32, Option<String>, u64)> {
    let last = series.lists.back()?;
    let before = series.lists.iter().rev().find(|l| l.t_ms <= from_ms);
    let held_before = |pid| before.map_or(0, |l: &ListPoint| l.held_by(pid));
    let (p, delta) = last
        .processes
        .iter()
        .filter_map(|p| Some((p, p.used_bytes?.saturating_sub(held_before(p.pid)))))
        .max_by_key(|(_, d)| *d)?;
    (delta.saturating_mul(2) >= change).then(|| (p.pid, p.name.clone(), p.used_bytes.unwrap_or(0)))
}

/// A finding with the fields every rule fills the same way.
fn finding(cause: Cause, gpu: u32, now: &MemoryPoint, who: Option<(u32, Option<String>)>) -> Finding {
    let (pid, process) = match who {
        Some((pid, name)) => (Some(pid), name),
        None => (None, None),
    };
    Finding {
        cause,
        gpu,
        pid,
        engine: process.as_deref().and_then(from_process_name),
        process,
        certainty: Certainty::Likely,
        since_ms: now.t_ms,
        found_ms: now.t_ms,
        bytes: 0,
        gpu_total_bytes: now.total_bytes,
        evidence: String::new(),
        fix: String::new(),
        growth: None,
        spread: Vec::new(),
    }
}

// ---------------------------------------------------------------------------
// 2. Growing during generation

/// A climb: the GPU's memory rising in steps while kernels run, with no drop
/// since, the last step recent.
fn growing(gpu: u32, series: &GpuSeries, now: &MemoryPoint) -> Option<Finding> {
    let tol = tolerance(now.total_bytes);
    let points = &series.memory;
    // Steps as (index of the point after the rise), latest first.
    let mut steps = Vec::new();
    for i in (1..points.len()).rev() {
        let (a, b) = (points[i - 1], points[i]);
        if a.used_bytes > b.used_bytes.saturating_add(tol) {
            break;
        }
        if b.used_bytes > a.used_bytes.saturating_add(tol) {
            // The window's readings are in strictly increasing time, so the
            // kernels that ran over this rise are the later reading's.
            if b.gpu_pct.is_none_or(|busy| busy < BUSY_PCT) {
                break;
            }
            steps.push(i);
        }
    }
    let (&last, &first) = (steps.first()?, steps.last()?);
    let n = steps.len() as u32;
    let (first_at, last_at) = (points[first], points[last]);
    let span_ms = last_at.t_ms - first_at.t_ms;
    let start = points[first - 1];
    let climbed = now.used_bytes.saturating_sub(start.used_bytes);
    let mean_gap_ms = span_ms / u64::from(n - 1).max(1);
    let stalled = now.t_ms - last_at.t_ms > (2 * mean_gap_ms).max(5_000);
    if n < MIN_STEPS || span_ms < MIN_CLIMB_MS || stalled || climbed < (256 * MIB).max(now.total_bytes / 100) {
        return None;
    }
    // From the first step to the last: a regular staircase reads exactly.
    let rate = (last_at.used_bytes - first_at.used_bytes).saturating_mul(1000) / span_ms.max(1);
    if rate == 0 {
        return None;
    }
    let to_capacity_s = now.free_bytes / rate;
    let who = mover(series, start.t_ms, climbed).or_else(|| only_holder(series));
    let mut f = finding(Cause::Growing, gpu, now, who.as_ref().map(|(p, n, _)| (*p, n.clone())));
    f.certainty = if n >= 5 { Certainty::Likely } else { Certainty::Possible };
    f.since_ms = start.t_ms;
    f.bytes = who.as_ref().map_or(now.used_bytes, |w| w.2);
    f.growth = Some(Growth {
        bytes_per_s: rate,
        climbed_bytes: climbed,
        steps: n,
        free_bytes: now.free_bytes,
        seconds_to_capacity: to_capacity_s,
    });
    f.evidence = format!(
        "{} climbed {} in {} steps over {} while the GPU computed ({}/s); at this rate the {} still free run out in about {}",
        who_of(&f),
        bytes(climbed),
        n,
        seconds(now.t_ms - start.t_ms),
        bytes(rate),
        bytes(now.free_bytes),
        seconds(to_capacity_s * 1000),
    );
    f.fix = growing_fix(f.engine).into();
    Some(f)
}

/// The one process that holds real memory on the GPU (1 GiB or more), if
/// there is exactly one.
fn only_holder(series: &GpuSeries) -> Option<(u32, Option<String>, u64)> {
    let last = series.lists.back()?;
    let mut big = last.processes.iter().filter(|p| p.used_bytes.unwrap_or(0) >= GIB);
    let p = big.next()?;
    big.next().is_none().then(|| (p.pid, p.name.clone(), p.used_bytes.unwrap_or(0)))
}

fn who_of(f: &Finding) -> String {
    who(f.pid, f.process.as_deref())
}

// ---------------------------------------------------------------------------
// 1. Loaded near capacity

/// A burst to ≥ 90 % of the GPU that has since held still: what was loaded
/// is too big for the card before anything is generated.
fn near_capacity(gpu: u32, series: &GpuSeries, now: &MemoryPoint) -> Option<Finding> {
    if now.used_bytes * 100 < now.total_bytes * NEAR_FULL_PCT {
        return None;
    }
    let tol = tolerance(now.total_bytes);
    let points = &series.memory;
    // The flat stretch at the end.
    let mut flat = points.len() - 1;
    while flat > 0 && points[flat - 1].used_bytes.abs_diff(now.used_bytes) <= tol {
        flat -= 1;
    }
    let settled = points[flat];
    if flat == 0 || now.t_ms - settled.t_ms < SETTLE_MS {
        return None;
    }
    // The burst before it: rising readings back to the last one that did not rise.
    let mut start = flat - 1;
    while start > 0 && points[start - 1].used_bytes.saturating_add(tol) < points[start].used_bytes {
        start -= 1;
    }
    let base = points[start];
    let rise = settled.used_bytes.saturating_sub(base.used_bytes);
    if rise * 2 < now.used_bytes || settled.t_ms - base.t_ms > BURST_MAX_MS {
        return None;
    }
    let who = mover(series, base.t_ms, rise);
    if let Some((_, Some(name), _)) = &who
        && preallocates(name)
    {
        return None;
    }
    // The holder must hold most of the GPU; otherwise it is a crowd (cause 4).
    if let Some((_, _, held)) = &who
        && held * 3 < now.used_bytes * 2
    {
        return None;
    }
    let mut f = finding(Cause::NearCapacity, gpu, now, who.as_ref().map(|(p, n, _)| (*p, n.clone())));
    f.since_ms = base.t_ms;
    f.bytes = who.as_ref().map_or(now.used_bytes, |w| w.2);
    if who.is_none() {
        f.certainty = Certainty::Possible;
    }
    f.evidence = format!(
        "{} rose by {} in {} and has held still for {}: {} % of the GPU in use before anything was generated",
        who_of(&f),
        bytes(rise),
        seconds(settled.t_ms - base.t_ms),
        seconds(now.t_ms - settled.t_ms),
        pct(now.used_bytes, now.total_bytes),
    );
    f.fix = loaded_fix(f.engine).into();
    Some(f)
}

// ---------------------------------------------------------------------------
// 3. Unbalanced split

/// One process on several GPUs, settled, one ≥ 90 % full and another that
/// holds a third or less of it and is at most 60 % used.
fn unbalanced(window: &Window) -> Vec<Finding> {
    use std::collections::BTreeMap;
    let mut by_pid: BTreeMap<u32, Vec<Place>> = BTreeMap::new();
    for (gpu, series) in window.gpus() {
        let (Some(list), Some(now)) = (series.lists.back(), series.latest()) else { continue };
        if !settled(series, now) {
            continue;
        }
        for p in &list.processes {
            if let Some(held) = p.used_bytes.filter(|&b| b > 0) {
                by_pid.entry(p.pid).or_default().push((gpu, held, p.name.clone(), now));
            }
        }
    }
    let mut out = Vec::new();
    for (pid, places) in by_pid {
        if places.len() < 2 {
            continue;
        }
        let Some(&(full_gpu, full_held, ref name, full_now)) = places.iter().max_by_key(|p| p.1) else { continue };
        if full_now.used_bytes * 100 < full_now.total_bytes * NEAR_FULL_PCT {
            continue;
        }
        let Some(&(empty_gpu, empty_held, _, empty_now)) =
            places.iter().filter(|p| p.0 != full_gpu).min_by_key(|p| p.1)
        else {
            continue;
        };
        if empty_held * 3 > full_held || empty_now.used_bytes * 100 > empty_now.total_bytes * NEAR_EMPTY_PCT {
            continue;
        }
        let mut f = finding(Cause::Unbalanced, full_gpu, full_now, Some((pid, name.clone())));
        f.bytes = full_held;
        f.spread = places.iter().map(|p| (p.0, p.1)).collect();
        crate::order::sort(&mut f.spread);
        f.since_ms = full_now.t_ms.saturating_sub(SETTLE_MS);
        f.evidence = format!(
            "{} holds {} on GPU {full_gpu} ({} % full) and {} on GPU {empty_gpu} ({} % full)",
            who_of(&f),
            bytes(full_held),
            pct(full_now.used_bytes, full_now.total_bytes),
            bytes(empty_held),
            pct(empty_now.used_bytes, empty_now.total_bytes),
        );
        let held: u64 = f.spread.iter().map(|s| s.1).sum();
        let each_gib = (held / f.spread.len() as u64).div_ceil(GIB) + 1;
        let gpus: Vec<u32> = f.spread.iter().map(|s| s.0).collect();
        f.fix = split_fix(f.engine, &gpus, each_gib);
        out.push(f);
    }
    out
}

/// Where a process runs: `(gpu, held, name, the GPU's latest memory)`.
type Place<'a> = (u32, u64, Option<String>, &'a MemoryPoint);

/// No change beyond noise for the last [`SETTLE_MS`].
fn settled(series: &GpuSeries, now: &MemoryPoint) -> bool {
    let tol = tolerance(now.total_bytes);
    let since = now.t_ms.saturating_sub(SETTLE_MS);
    let first = series.memory.front().is_some_and(|m| m.t_ms <= since);
    first && series.memory.iter().filter(|m| m.t_ms >= since).all(|m| m.used_bytes.abs_diff(now.used_bytes) <= tol)
}

// ---------------------------------------------------------------------------
// 4. Leftovers

/// Memory held by a process that sat still while another on the same GPU
/// loaded or grew, and memory no listed process holds.
fn leftovers(gpu: u32, series: &GpuSeries, now: &MemoryPoint) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(last) = series.lists.back() else { return out };
    let tol = tolerance(now.total_bytes);
    let big = GIB.max(now.total_bytes / 10);
    for p in &last.processes {
        let Some(held) = p.used_bytes.filter(|&b| b >= big) else { continue };
        if p.name.as_deref().is_some_and(preallocates) {
            continue;
        }
        let seen: Vec<&ListPoint> = series.lists.iter().filter(|l| l.process(p.pid).is_some()).collect();
        let (Some(first), true) = (seen.first(), seen.len() >= MIN_LISTS) else { continue };
        let idle_ms = last.t_ms - first.t_ms;
        if idle_ms < MIN_IDLE_MS || seen.iter().any(|l| l.held_by(p.pid).abs_diff(held) > tol) {
            continue;
        }
        // Another process that moved by a GiB while this one sat still.
        let busy = last.processes.iter().filter(|q| q.pid != p.pid).find_map(|q| {
            let held_q = seen.iter().map(|l| l.held_by(q.pid));
            let (lo, hi) = held_q.fold((u64::MAX, 0), |(lo, hi), b| (lo.min(b), hi.max(b)));
            (hi.saturating_sub(lo) >= GIB).then_some((q, lo, hi))
        });
        let Some((q, lo, hi)) = busy else { continue };
        let mut f = finding(Cause::Leftover, gpu, now, Some((p.pid, p.name.clone())));
        f.certainty = Certainty::Possible;
        f.since_ms = first.t_ms;
        f.bytes = held;
        f.evidence = format!(
            "{} has held {} unchanged for {} while {} went from {} to {}; together {} % of the GPU is in use",
            who_of(&f),
            bytes(held),
            seconds(idle_ms),
            who(Some(q.pid), q.name.as_deref()),
            bytes(lo),
            bytes(hi),
            pct(now.used_bytes, now.total_bytes),
        );
        f.fix = format!(
            "If PID {pid} is an earlier notebook kernel or job, free it there (del model; gc.collect(); torch.cuda.empty_cache()), restart that kernel, or kill {pid}",
            pid = p.pid
        );
        out.push(f);
    }
    if let Some(f) = unaccounted(gpu, series, now) {
        out.push(f);
    }
    out
}

/// GPU memory in use that the listed processes do not hold, in every one of
/// the last lists.
fn unaccounted(gpu: u32, series: &GpuSeries, now: &MemoryPoint) -> Option<Finding> {
    let floor = GIB.max(now.total_bytes / 20);
    let recent: Vec<&ListPoint> = series.lists.iter().rev().take(MIN_LISTS).collect();
    let (Some(latest), Some(oldest)) = (recent.first(), recent.last()) else { return None };
    if recent.len() < MIN_LISTS || latest.t_ms - oldest.t_ms < MIN_IDLE_MS {
        return None;
    }
    let gap = recent
        .iter()
        .map(|l| Some(l.gpu_used_bytes.saturating_sub(l.listed_bytes()?)))
        .try_fold(u64::MAX, |lo, g| Some(lo.min(g?)))?;
    if gap < floor {
        return None;
    }
    let mut f = finding(Cause::Leftover, gpu, now, None);
    f.certainty = Certainty::Possible;
    f.since_ms = oldest.t_ms;
    f.bytes = gap;
    f.evidence = format!(
        "{} of GPU {gpu}'s memory in use is held by no listed process, in {} process lists over {}",
        bytes(gap),
        recent.len(),
        seconds(latest.t_ms - oldest.t_ms),
    );
    f.fix = format!(
        "A process that exited without releasing it, or one in a namespace the agent cannot see: `fuser -v /dev/nvidia{gpu}` names what holds the device; kill it; if nothing does, reset the GPU (nvidia-smi -r -i {gpu})"
    );
    Some(f)
}
