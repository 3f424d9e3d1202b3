//! The three probe algorithms, against any [`Allocator`] (CUDA in a real
//! worker, the simulated GPU in tests and `--simulate`). Each allocates,
//! reports every attempt, holds the peak for the job's hold time, and frees
//! everything it holds before returning — on error too.

use std::time::{Duration, Instant};

use shared::protocol::{ProbeMode, ProbeStop, StopReason};
use shared::units::{GIB, MIB, gib};

use super::job::{Event, Job};

/// The largest-block search's resolution, and the smallest chunk `max-total`
/// halves down to: the CUDA driver's large-page granularity.
pub const RESOLUTION_BYTES: u64 = 2 * MIB;
/// The default `max-total` chunk.
pub const DEFAULT_CHUNK_BYTES: u64 = GIB;
/// The smallest `max-total` chunk a client may ask for: smaller ones only
/// multiply the allocations (and the progress lines) without more insight.
pub const MIN_CHUNK_BYTES: u64 = 64 * MIB;
/// A bound on the allocations of one probe, whatever the driver does.
const MAX_ATTEMPTS: u32 = 20_000;

/// Device memory as a probe needs it.
pub trait Allocator {
    /// Allocates `bytes` as one block: a handle, or `None` when the driver
    /// refuses for lack of memory.
    fn alloc(&mut self, bytes: u64) -> Result<Option<u64>, AllocError>;
    fn free(&mut self, handle: u64) -> Result<(), AllocError>;
}

/// A failure other than "out of memory".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AllocError(pub String);

/// What a mode achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Ran to the end (a refused plan step: `false`).
    pub completed: bool,
    pub stopped_at: Option<ProbeStop>,
    pub achieved_bytes: u64,
    pub largest_block_bytes: u64,
    pub held_ms: u64,
}

/// Runs `job`'s mode, holding at most `limit_bytes` at once.
pub fn run(
    alloc: &mut dyn Allocator,
    job: &Job,
    limit_bytes: u64,
    emit: &mut dyn FnMut(Event),
) -> Result<Outcome, AllocError> {
    let mut probe = Probe { alloc, emit, held: Vec::new(), attempts: 0, largest: 0 };
    let result = match job.mode {
        ProbeMode::Plan => probe.plan(job, limit_bytes),
        ProbeMode::LargestBlock => probe.largest_block(job, limit_bytes),
        ProbeMode::MaxTotal => probe.max_total(job, limit_bytes),
    };
    // Free whatever is still held, even after an error.
    let released = probe.release();
    let outcome = result?;
    released?;
    Ok(outcome)
}

struct Probe<'a> {
    alloc: &'a mut dyn Allocator,
    emit: &'a mut dyn FnMut(Event),
    /// `(handle, bytes)` of every block held.
    held: Vec<(u64, u64)>,
    attempts: u32,
    largest: u64,
}

impl Probe<'_> {
    fn held_bytes(&self) -> u64 {
        self.held.iter().map(|&(_, b)| b).sum()
    }

    /// Tries one allocation and reports it; a granted block is kept.
    fn attempt(&mut self, label: String, bytes: u64) -> Result<bool, AllocError> {
        self.attempts += 1;
        let granted = self.alloc.alloc(bytes)?;
        if let Some(handle) = granted {
            self.held.push((handle, bytes));
            self.largest = self.largest.max(bytes);
        }
        let held_bytes = self.held_bytes();
        (self.emit)(Event::Step { step: self.attempts, label, bytes, allocated: granted.is_some(), held_bytes });
        Ok(granted.is_some())
    }

    /// Frees the block taken last.
    fn free_last(&mut self) -> Result<(), AllocError> {
        match self.held.pop() {
            Some((handle, _)) => self.alloc.free(handle),
            None => Ok(()),
        }
    }

    fn release(&mut self) -> Result<(), AllocError> {
        let mut first_error = Ok(());
        while let Some((handle, _)) = self.held.pop() {
            if let Err(e) = self.alloc.free(handle)
                && first_error.is_ok()
            {
                first_error = Err(e);
            }
        }
        first_error
    }

    /// Holds what is held for the job's hold time; returns how long it held.
    fn hold(&mut self, job: &Job) -> u64 {
        let held_bytes = self.held_bytes();
        if held_bytes == 0 {
            return 0;
        }
        (self.emit)(Event::Hold { held_bytes, hold_ms: job.hold_ms });
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(job.hold_ms));
        start.elapsed().as_millis() as u64
    }

    fn stop(&self, label: String, bytes: u64, reason: StopReason) -> Option<ProbeStop> {
        Some(ProbeStop { step: self.attempts, label, bytes, reason })
    }

    /// The plan's chunks in order, until one is refused or would cross the limit.
    fn plan(&mut self, job: &Job, limit: u64) -> Result<Outcome, AllocError> {
        let mut stopped_at = None;
        for step in &job.steps {
            if self.held_bytes().saturating_add(step.bytes) > limit {
                self.attempts += 1;
                stopped_at = self.stop(step.label.clone(), step.bytes, StopReason::Margin);
                break;
            }
            if !self.attempt(step.label.clone(), step.bytes)? {
                stopped_at = self.stop(step.label.clone(), step.bytes, StopReason::OutOfMemory);
                break;
            }
        }
        let achieved_bytes = self.held_bytes();
        let held_ms = self.hold(job);
        Ok(Outcome {
            completed: stopped_at.is_none(),
            stopped_at,
            achieved_bytes,
            largest_block_bytes: self.largest,
            held_ms,
        })
    }

    /// Binary search for the largest single block, at [`RESOLUTION_BYTES`].
    /// The limit itself is tried first: it is granted on a healthy GPU, and
    /// then the margin, not the driver, ends the search.
    fn largest_block(&mut self, job: &Job, limit: u64) -> Result<Outcome, AllocError> {
        let (mut lo, mut hi) = (0u64, limit / RESOLUTION_BYTES);
        let mut stopped_at = None;
        if hi > 0 {
            let bytes = hi * RESOLUTION_BYTES;
            if self.attempt(format!("try {:.2} GiB", gib(bytes)), bytes)? {
                self.free_last()?;
                lo = hi;
                stopped_at = self.stop(format!("try {:.2} GiB", gib(bytes)), bytes, StopReason::Margin);
            } else {
                hi -= 1;
            }
        }
        while lo < hi && self.attempts < MAX_ATTEMPTS {
            let mid = lo + (hi - lo).div_ceil(2);
            let bytes = mid * RESOLUTION_BYTES;
            if self.attempt(format!("try {:.2} GiB", gib(bytes)), bytes)? {
                self.free_last()?;
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let best = lo * RESOLUTION_BYTES;
        // Take the block once more and hold it, so that a watcher (NVML,
        // nvidia-smi) sees what was found.
        if best > 0 {
            self.attempt("hold the largest block".into(), best)?;
        }
        let held_ms = self.hold(job);
        Ok(Outcome { completed: true, stopped_at, achieved_bytes: best, largest_block_bytes: best, held_ms })
    }

    /// Fixed chunks until the driver refuses; then halve the chunk down to
    /// [`RESOLUTION_BYTES`] to take what is left in smaller holes.
    fn max_total(&mut self, job: &Job, limit: u64) -> Result<Outcome, AllocError> {
        let mut chunk = round_down(job.chunk_bytes).max(RESOLUTION_BYTES);
        let mut stopped_at = None;
        let mut chunks = 0u32;
        while self.attempts < MAX_ATTEMPTS {
            let room = round_down(limit.saturating_sub(self.held_bytes()));
            if room == 0 {
                self.attempts += 1;
                stopped_at = self.stop("next chunk".into(), RESOLUTION_BYTES, StopReason::Margin);
                break;
            }
            let bytes = chunk.min(room);
            let label = format!("chunk {} ({:.2} GiB)", chunks + 1, gib(bytes));
            if self.attempt(label.clone(), bytes)? {
                chunks += 1;
            } else if bytes <= RESOLUTION_BYTES {
                stopped_at = self.stop(label, bytes, StopReason::OutOfMemory);
                break;
            } else {
                chunk = round_down(bytes / 2).max(RESOLUTION_BYTES);
            }
        }
        let achieved_bytes = self.held_bytes();
        let held_ms = self.hold(job);
        Ok(Outcome { completed: true, stopped_at, achieved_bytes, largest_block_bytes: self.largest, held_ms })
    }
}

fn round_down(bytes: u64) -> u64 {
    bytes / RESOLUTION_BYTES * RESOLUTION_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::job::Device;
    use shared::protocol::ProbeStep;

    /// Free memory as separate holes, first fit; counts what is live.
    struct Holes {
        holes: Vec<u64>,
        live: Vec<Option<(usize, u64)>>,
    }

    impl Allocator for Holes {
        fn alloc(&mut self, bytes: u64) -> Result<Option<u64>, AllocError> {
            let Some(i) = self.holes.iter().position(|&h| h >= bytes) else { return Ok(None) };
            self.holes[i] -= bytes;
            self.live.push(Some((i, bytes)));
            Ok(Some(self.live.len() as u64 - 1))
        }

        fn free(&mut self, handle: u64) -> Result<(), AllocError> {
            let (i, bytes) = self.live[handle as usize].take().expect("double free");
            self.holes[i] += bytes;
            Ok(())
        }
    }

    fn job(mode: ProbeMode, steps: &[u64]) -> Job {
        Job {
            mode,
            steps: steps.iter().map(|&b| ProbeStep { label: format!("{b}"), bytes: b }).collect(),
            limit_bytes: u64::MAX,
            margin_bytes: 0,
            chunk_bytes: GIB,
            hold_ms: 0,
            device: Device::Cuda { uuid: None },
        }
    }

    fn check(mode: ProbeMode, holes: &[u64], steps: &[u64], limit: u64) -> (Outcome, Vec<Event>) {
        let mut alloc = Holes { holes: holes.to_vec(), live: Vec::new() };
        let mut events = Vec::new();
        let outcome = run(&mut alloc, &job(mode, steps), limit, &mut |e| events.push(e)).unwrap();
        // Only the allocation attempts, not the hold.
        events.retain(|e| matches!(e, Event::Step { .. }));
        assert!(alloc.live.iter().all(Option::is_none), "everything is freed");
        assert_eq!(alloc.holes, holes, "every hole is whole again");
        (outcome, events)
    }

    #[test]
    fn plans_stop_at_the_first_refused_step_or_the_limit() {
        let (o, events) = check(ProbeMode::Plan, &[10 * GIB], &[4 * GIB, 4 * GIB], u64::MAX);
        assert!(o.completed && o.stopped_at.is_none());
        assert_eq!((o.achieved_bytes, o.largest_block_bytes), (8 * GIB, 4 * GIB));
        assert_eq!(events.len(), 2);
        let (o, _) = check(ProbeMode::Plan, &[10 * GIB], &[4 * GIB, 4 * GIB, 4 * GIB], u64::MAX);
        let stop = o.stopped_at.unwrap();
        assert_eq!((stop.step, stop.reason, o.achieved_bytes), (3, StopReason::OutOfMemory, 8 * GIB));
        let (o, events) = check(ProbeMode::Plan, &[10 * GIB], &[4 * GIB, 4 * GIB], 6 * GIB);
        assert_eq!(o.stopped_at.unwrap().reason, StopReason::Margin);
        assert_eq!(events.len(), 1, "the step over the limit is never tried");
    }

    #[test]
    fn largest_block_finds_the_biggest_hole_at_2_mib() {
        let holes = [3 * GIB + 5 * MIB, 7 * GIB + 3 * MIB, GIB];
        let (o, events) = check(ProbeMode::LargestBlock, &holes, &[], 100 * GIB);
        assert_eq!(o.largest_block_bytes, 7 * GIB + 2 * MIB);
        assert!(o.stopped_at.is_none());
        assert!(events.len() <= 20, "{}", events.len());
        // Capped by the limit: one try, and the margin is what stopped it.
        let (o, events) = check(ProbeMode::LargestBlock, &holes, &[], 2 * GIB);
        assert_eq!((o.largest_block_bytes, events.len()), (2 * GIB, 2));
        assert_eq!(o.stopped_at.unwrap().reason, StopReason::Margin);
    }

    #[test]
    fn max_total_takes_the_holes_too() {
        let holes = [3 * GIB + 5 * MIB, 7 * GIB + 3 * MIB, GIB];
        let (o, _) = check(ProbeMode::MaxTotal, &holes, &[], 100 * GIB);
        assert_eq!(o.achieved_bytes, 11 * GIB + 6 * MIB);
        assert_eq!(o.stopped_at.unwrap().reason, StopReason::OutOfMemory);
        let (o, _) = check(ProbeMode::MaxTotal, &holes, &[], 5 * GIB + 1);
        assert_eq!(o.achieved_bytes, 5 * GIB);
        assert_eq!(o.stopped_at.unwrap().reason, StopReason::Margin);
    }
}
