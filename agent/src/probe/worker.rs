//! `headroom probe-worker`: the short-lived child that owns the CUDA context.
//! It reads one [`Job`] line from stdin, measures the context's cost, runs the
//! mode, holds, frees everything and exits, writing [`Event`] lines to stdout.
//! If stdin closes early (the agent died) it exits at once; the driver frees
//! whatever it held.

use std::io::{BufRead, Write};
use std::time::Duration;

use shared::protocol::ErrorCode;

use super::job::{Device, Event, Job, Report};
use super::modes::{self, Allocator};
use super::sim::SimAllocator;
use crate::telemetry::Backend as _;
use crate::telemetry::{nvml::NvmlBackend, simulated};

/// Why a probe could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub code: ErrorCode,
    pub message: String,
}

/// Exit status when stdin closed before the probe ended.
const ORPHANED_EXIT: i32 = 3;

/// The worker's entry point on the process's own stdin and stdout.
pub fn main() -> Result<(), Failure> {
    let stdin = std::io::stdin();
    let mut line = String::new();
    let job = match stdin.lock().read_line(&mut line) {
        Ok(n) if n > 0 => serde_json::from_str::<Job>(&line)
            .map_err(|e| Failure { code: ErrorCode::InvalidMessage, message: format!("bad probe job on stdin: {e}") }),
        _ => Err(Failure { code: ErrorCode::InvalidMessage, message: "no probe job on stdin".into() }),
    };
    // The agent keeps our stdin open while it waits for us: end of file
    // means it is gone, and so should we be.
    let _ = std::thread::Builder::new().name("stdin-watch".into()).spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        std::process::exit(ORPHANED_EXIT);
    });
    let mut stdout = std::io::stdout().lock();
    let mut emit = |event: Event| {
        // A closed stdout also means the agent is gone.
        if writeln!(stdout, "{}", event.line()).and_then(|()| stdout.flush()).is_err() {
            std::process::exit(ORPHANED_EXIT);
        }
    };
    let outcome = job.and_then(|job| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&job, &mut emit))).unwrap_or_else(|_| {
            Err(Failure { code: ErrorCode::Internal, message: "the probe worker panicked (see its stderr)".into() })
        })
    });
    match outcome {
        Ok(report) => {
            emit(Event::Done(report));
            Ok(())
        }
        Err(failure) => {
            emit(Event::Error { code: failure.code, message: failure.message.clone() });
            Err(failure)
        }
    }
}

/// Runs one job and reports what it measured.
pub fn run(job: &Job, emit: &mut dyn FnMut(Event)) -> Result<Report, Failure> {
    match &job.device {
        Device::Simulated { free_bytes, total_bytes, step_delay_ms } => {
            let memory = simulated::probe_memory(*free_bytes, *total_bytes);
            let mut sim = SimAllocator::new(&memory, Duration::from_millis(*step_delay_ms));
            let context = Context {
                context_bytes: Some(memory.context_bytes),
                free_before_bytes: Some(*free_bytes),
                free_bytes: sim.free_bytes(),
                total_bytes: *total_bytes,
            };
            let mut report = measure(&mut sim, job, &context, emit)?;
            report.free_after_bytes = Some(sim.free_bytes());
            Ok(report)
        }
        Device::Cuda { uuid } => {
            let mut nvml = uuid.as_deref().and_then(NvmlFree::open);
            let before = nvml.as_mut().and_then(NvmlFree::read);
            let mut device = super::cuda::CudaDevice::open()?;
            let (free, total) = device.memory()?;
            let after = nvml.as_mut().and_then(NvmlFree::read);
            let context = Context {
                context_bytes: before.zip(after).map(|(b, a)| b.saturating_sub(a)),
                free_before_bytes: before,
                free_bytes: free,
                total_bytes: total,
            };
            let mut report = measure(&mut device, job, &context, emit)?;
            report.free_after_bytes = device.memory().ok().map(|(free, _)| free);
            Ok(report)
        }
    }
}

/// What the worker saw once its context existed.
struct Context {
    context_bytes: Option<u64>,
    free_before_bytes: Option<u64>,
    /// Free by the allocator's own count, context included.
    free_bytes: u64,
    total_bytes: u64,
}

fn measure(
    alloc: &mut dyn Allocator,
    job: &Job,
    context: &Context,
    emit: &mut dyn FnMut(Event),
) -> Result<Report, Failure> {
    let limit_bytes = job.limit_bytes.min(context.free_bytes.saturating_sub(job.margin_bytes));
    emit(Event::Context {
        context_bytes: context.context_bytes,
        free_before_bytes: context.free_before_bytes,
        free_bytes: context.free_bytes,
        total_bytes: context.total_bytes,
        limit_bytes,
    });
    let outcome = modes::run(alloc, job, limit_bytes, emit)
        .map_err(|e| Failure { code: ErrorCode::ProbeCudaError, message: e.0 })?;
    Ok(Report {
        ok: outcome.completed,
        completed: outcome.completed,
        stopped_at: outcome.stopped_at,
        achieved_bytes: outcome.achieved_bytes,
        largest_block_bytes: outcome.largest_block_bytes,
        context_bytes: context.context_bytes,
        free_before_bytes: context.free_before_bytes,
        free_after_bytes: None,
        total_bytes: Some(context.total_bytes),
        held_ms: outcome.held_ms,
    })
}

/// NVML's free memory of one GPU, to measure what the context costs. NVML
/// ignores `CUDA_VISIBLE_DEVICES`, so the GPU is found by UUID.
struct NvmlFree {
    backend: NvmlBackend,
    index: usize,
}

impl NvmlFree {
    fn open(uuid: &str) -> Option<Self> {
        let backend = NvmlBackend::open(None).ok()?;
        let index = backend.host().devices.iter().position(|d| d.uuid.as_deref() == Ok(uuid))?;
        Some(Self { backend, index })
    }

    fn read(&mut self) -> Option<u64> {
        let devices = self.backend.read_devices(Duration::ZERO);
        devices.get(self.index)?.memory.as_ref().ok().map(|m| m.free_bytes)
    }
}
