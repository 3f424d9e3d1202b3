//! The agent's side of a probe: start `headroom probe-worker` with the GPU
//! mapped by UUID, hand it the job, relay its events, and kill it on cancel
//! or past its deadline (the watchdog). The driver frees a killed worker's
//! memory; [`Worker::run`] returns only once the worker has exited, so a GPU
//! is never probed twice at once.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use shared::protocol::{ErrorCode, ErrorMessage, ProbeMode, ProbeOutcome, ProbePhase, ProbeProgress, ProbeResult};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

use super::job::{Event, Job, Report};

/// How to start one worker.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The `headroom` binary.
    pub program: PathBuf,
    pub job: Job,
    /// `CUDA_VISIBLE_DEVICES` for a real GPU: its UUID (or, without NVML, its
    /// PCI-ordered ordinal).
    pub visible_device: Option<String>,
    /// The watchdog: the worker is killed if still running after this.
    pub deadline: Duration,
}

/// A started worker.
#[derive(Debug)]
pub struct Worker {
    child: Child,
    /// Kept open while we wait: the worker exits when it closes.
    _stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: tokio::task::JoinHandle<String>,
    deadline: Instant,
}

/// How a worker ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Done(Report),
    Cancelled,
    TimedOut,
    Failed(ErrorMessage),
}

/// What the worker's events said so far: enough to describe a probe that
/// was cut short.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub peak_held_bytes: u64,
    pub largest_block_bytes: u64,
    pub context_bytes: Option<u64>,
    pub free_before_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
}

impl Seen {
    fn note(&mut self, event: &Event) {
        match event {
            Event::Context { context_bytes, free_before_bytes, total_bytes, .. } => {
                self.context_bytes = *context_bytes;
                self.free_before_bytes = *free_before_bytes;
                self.total_bytes = Some(*total_bytes);
            }
            Event::Step { bytes, allocated, held_bytes, .. } => {
                self.peak_held_bytes = self.peak_held_bytes.max(*held_bytes);
                if *allocated {
                    self.largest_block_bytes = self.largest_block_bytes.max(*bytes);
                }
            }
            Event::Hold { .. } | Event::Done(_) | Event::Error { .. } => {}
        }
    }
}

/// Starts the worker and gives it its job.
pub async fn spawn(launch: &Launch) -> std::io::Result<Worker> {
    let mut command = Command::new(&launch.program);
    command
        .arg("probe-worker")
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(visible) = &launch.visible_device {
        command.env("CUDA_VISIBLE_DEVICES", visible);
    }
    let deadline = Instant::now() + launch.deadline;
    let mut child = command.spawn()?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the worker's pipes are missing"));
    };
    let line = serde_json::to_string(&launch.job).map_err(std::io::Error::other)? + "\n";
    stdin.write_all(line.as_bytes()).await?;
    stdin.flush().await?;
    // Only a panic writes to stderr; keep its end for the error message.
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_string(&mut text).await;
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    });
    Ok(Worker { child, _stdin: stdin, stdout, stderr, deadline })
}

impl Worker {
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Relays events to `on_event` until the worker exits, `cancel`
    /// completes, or the deadline passes; then makes sure it is gone.
    pub async fn run(mut self, mut on_event: impl FnMut(&Event), cancel: impl Future<Output = ()>) -> (End, Seen) {
        tokio::pin!(cancel);
        let mut seen = Seen::default();
        let mut ended: Option<End> = None;
        let mut lines = BufReader::new(&mut self.stdout).lines();
        loop {
            tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(line)) => match serde_json::from_str::<Event>(&line) {
                        Ok(Event::Done(report)) => ended = Some(End::Done(report)),
                        Ok(Event::Error { code, message }) => ended = Some(End::Failed(ErrorMessage::new(code, message))),
                        Ok(event) => {
                            seen.note(&event);
                            on_event(&event);
                        }
                        Err(e) => tracing::warn!("probe worker: unreadable line ({e})"),
                    },
                    Ok(None) | Err(_) => break,
                },
                () = &mut cancel => return (kill(&mut self.child, End::Cancelled).await, seen),
                () = tokio::time::sleep_until(self.deadline) => return (kill(&mut self.child, End::TimedOut).await, seen),
            }
        }
        // Its stdout is closed: wait for the exit, still under the watchdog.
        let status = tokio::select! {
            status = self.child.wait() => status,
            () = &mut cancel => return (kill(&mut self.child, End::Cancelled).await, seen),
            () = tokio::time::sleep_until(self.deadline) => return (kill(&mut self.child, End::TimedOut).await, seen),
        };
        let end = match ended {
            Some(end) => end,
            None => {
                let stderr = tokio::time::timeout(Duration::from_secs(1), &mut self.stderr).await;
                let detail = stderr.ok().and_then(Result::ok).filter(|s| !s.is_empty());
                let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                let message = match detail {
                    Some(detail) => format!("the probe worker died ({status}): {detail}"),
                    None => format!("the probe worker died ({status}) without a result"),
                };
                End::Failed(ErrorMessage::new(ErrorCode::ProbeWorkerFailed, message))
            }
        };
        (end, seen)
    }
}

async fn kill(child: &mut Child, end: End) -> End {
    // `kill` waits for the exit: the driver has freed the memory by then.
    if let Err(e) = child.kill().await {
        tracing::warn!("could not kill the probe worker: {e}");
    }
    end
}

/// The `probe_progress` for a worker event (none for the final ones).
pub fn progress(probe_id: u64, event: &Event, elapsed: Duration) -> Option<ProbeProgress> {
    let elapsed_ms = elapsed.as_millis() as u64;
    let progress = |phase, step, label: &str, bytes, allocated, held_bytes, context_bytes| ProbeProgress {
        probe_id,
        phase,
        step,
        label: label.to_owned(),
        bytes,
        allocated,
        held_bytes,
        context_bytes,
        elapsed_ms,
    };
    match event {
        Event::Context { context_bytes, .. } => {
            Some(progress(ProbePhase::Context, 0, "CUDA context", 0, true, 0, *context_bytes))
        }
        Event::Step { step, label, bytes, allocated, held_bytes } => {
            Some(progress(ProbePhase::Allocate, *step, label, *bytes, *allocated, *held_bytes, None))
        }
        Event::Hold { held_bytes, .. } => {
            Some(progress(ProbePhase::Hold, 0, "hold", *held_bytes, true, *held_bytes, None))
        }
        Event::Done(_) | Event::Error { .. } => None,
    }
}

/// Who asked for what, to word the result.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    pub probe_id: u64,
    pub gpu: u32,
    pub mode: ProbeMode,
    pub simulated: bool,
    pub requested_bytes: u64,
}

/// The `probe_result` for how a worker ended.
pub fn result(asked: Asked, end: End, seen: &Seen, duration: Duration) -> ProbeResult {
    let mut result = ProbeResult {
        probe_id: asked.probe_id,
        gpu: asked.gpu,
        mode: asked.mode,
        simulated: asked.simulated,
        ok: false,
        outcome: ProbeOutcome::Failed,
        stopped_at: None,
        requested_bytes: asked.requested_bytes,
        achieved_bytes: seen.peak_held_bytes,
        largest_block_bytes: seen.largest_block_bytes,
        context_bytes: seen.context_bytes,
        free_before_bytes: seen.free_before_bytes,
        free_after_bytes: None,
        total_bytes: seen.total_bytes,
        held_ms: 0,
        duration_ms: duration.as_millis() as u64,
        error: None,
    };
    match end {
        End::Done(report) => {
            result.ok = report.ok;
            result.outcome = if report.completed { ProbeOutcome::Completed } else { ProbeOutcome::Stopped };
            result.stopped_at = report.stopped_at;
            result.achieved_bytes = report.achieved_bytes;
            result.largest_block_bytes = report.largest_block_bytes;
            result.context_bytes = report.context_bytes;
            result.free_before_bytes = report.free_before_bytes;
            result.free_after_bytes = report.free_after_bytes;
            result.total_bytes = report.total_bytes;
            result.held_ms = report.held_ms;
        }
        End::Cancelled => result.outcome = ProbeOutcome::Cancelled,
        End::TimedOut => {
            result.outcome = ProbeOutcome::TimedOut;
            result.error =
                Some(ErrorMessage::new(ErrorCode::ProbeTimedOut, "the watchdog killed the probe past its deadline"));
        }
        End::Failed(error) => result.error = Some(error),
    }
    result
}
