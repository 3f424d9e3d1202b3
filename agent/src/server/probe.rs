//! Probes over the WebSocket: `probe_start` passes the safety rules, starts a
//! worker and answers `probe_started`; a task relays the worker's progress and
//! sends one `probe_result`. Each session holds at most one probe in its
//! [`ProbeSlot`]; `probe_cancel`, or the session ending for any reason (the
//! client vanishing included), kills the worker at once.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use shared::protocol::{ErrorCode, ProbeCancel, ProbeLimits, ProbeResult, ProbeStart, ProbeStarted, ServerMessage};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::AppState;
use crate::probe::ProbeConfig;
use crate::probe::guard::{GpuLocks, RateLimiter};
use crate::probe::job::{Device, Job};
use crate::probe::runner::{self, Asked, Launch};
use crate::probe::safety::{self, GpuFacts, Refusal};

/// The server's probe state, shared by every session.
#[derive(Debug)]
pub struct ProbeService {
    config: ProbeConfig,
    locks: Arc<GpuLocks>,
    limiter: RateLimiter,
    next_id: AtomicU64,
}

impl ProbeService {
    pub fn new(config: ProbeConfig) -> Self {
        let limiter = RateLimiter::new(config.rate_burst, config.rate_refill, crate::probe::guard::MAX_TRACKED);
        Self { config, locks: Arc::default(), limiter, next_id: AtomicU64::new(1) }
    }

    pub fn limits(&self) -> ProbeLimits {
        self.config.limits()
    }
}

/// A session's probe, if one runs.
#[derive(Debug, Default)]
pub struct ProbeSlot {
    active: Option<Active>,
}

#[derive(Debug)]
struct Active {
    id: u64,
    /// Progress, then the result, from the probe's task.
    events: mpsc::Receiver<ServerMessage>,
    /// Dropping it (cancel, or the session ending) kills the worker.
    cancel: Option<oneshot::Sender<()>>,
}

/// Progress messages a slow client may fall behind by before some are skipped.
const PROGRESS_QUEUE: usize = 64;
/// How fresh the memory reading behind the margin check must be.
const READING_MAX_AGE: Duration = Duration::from_secs(1);

fn error(refusal: Refusal) -> ServerMessage {
    ServerMessage::error(refusal.code, refusal.message)
}

impl ProbeSlot {
    pub fn is_running(&self) -> bool {
        self.active.is_some()
    }

    /// Handles `probe_start`: `probe_started`, or the error that refuses it.
    pub async fn start(&mut self, state: &AppState, ip: IpAddr, start: ProbeStart) -> ServerMessage {
        match self.try_start(state, ip, start).await {
            Ok(started) => ServerMessage::ProbeStarted(started),
            Err(refusal) => error(refusal),
        }
    }

    async fn try_start(&mut self, state: &AppState, ip: IpAddr, start: ProbeStart) -> Result<ProbeStarted, Refusal> {
        let received = Instant::now();
        let service = state.probes();
        let config = &service.config;
        let refuse = |code, message: String| Refusal { code, message };
        if !config.enabled {
            return Err(refuse(ErrorCode::ProbesDisabled, "this agent runs with --no-probes".into()));
        }
        if let Some(active) = &self.active {
            return Err(refuse(ErrorCode::ProbeBusy, format!("probe {} of this connection still runs", active.id)));
        }
        let checked = safety::check_request(&start, config)?;
        let host = state.sampler().host().clone();
        let Some(info) = host.gpus.iter().find(|g| g.index == start.gpu) else {
            return Err(refuse(ErrorCode::ProbeUnknownGpu, format!("this agent has no GPU {}", start.gpu)));
        };
        if !service.limiter.allows(ip) {
            return Err(refuse(ErrorCode::ProbeRateLimited, "too many probes from this address; retry later".into()));
        }
        let reading = state.sampler().fresh(READING_MAX_AGE, Duration::from_secs(5)).await;
        let memory = reading
            .as_ref()
            .and_then(|p| p.sample.gpus.iter().find(|g| g.index == start.gpu))
            .and_then(|g| g.memory.value().cloned());
        let facts = GpuFacts {
            index: start.gpu,
            compute_mode: info.compute_mode.value().copied(),
            mig_enabled: info.mig_mode.value().is_some_and(|m| m.enabled),
            free_bytes: memory.as_ref().map(|m| m.free_bytes),
        };
        let limit_bytes = safety::check_gpu(&facts, checked.requested_bytes, config.margin_bytes)?;
        let (device, visible_device) = match (&memory, info.uuid.value()) {
            (Some(m), _) if host.simulated => (
                Device::Simulated {
                    free_bytes: m.free_bytes,
                    total_bytes: m.total_bytes,
                    step_delay_ms: config.sim_step_delay.as_millis() as u64,
                },
                None,
            ),
            (_, Some(uuid)) => (Device::Cuda { uuid: Some(uuid.clone()) }, Some(uuid.clone())),
            (_, None) => {
                return Err(refuse(ErrorCode::ProbeUnavailable, format!("GPU {} has no UUID to map it by", start.gpu)));
            }
        };
        let Some(lease) = service.locks.try_lock(start.gpu) else {
            return Err(refuse(ErrorCode::ProbeBusy, format!("another probe runs on GPU {}", start.gpu)));
        };
        if !service.limiter.try_take(ip) {
            return Err(refuse(ErrorCode::ProbeRateLimited, "too many probes from this address; retry later".into()));
        }
        let launch = Launch {
            program: config.worker.clone(),
            job: Job {
                mode: checked.mode,
                steps: checked.steps.clone(),
                limit_bytes: checked.requested_bytes,
                margin_bytes: config.margin_bytes,
                chunk_bytes: checked.chunk_bytes,
                hold_ms: u64::from(checked.hold_ms),
                device,
            },
            visible_device,
            deadline: config.deadline,
        };
        let worker = runner::spawn(&launch).await.map_err(|e| {
            tracing::warn!("could not start the probe worker {}: {e}", launch.program.display());
            refuse(ErrorCode::ProbeWorkerFailed, "the probe worker could not start (see the agent's log)".into())
        })?;
        let id = service.next_id.fetch_add(1, Ordering::Relaxed);
        let asked = Asked {
            probe_id: id,
            gpu: start.gpu,
            mode: checked.mode,
            simulated: host.simulated,
            requested_bytes: checked.requested_bytes,
        };
        let started = ProbeStarted {
            probe_id: id,
            gpu: start.gpu,
            mode: checked.mode,
            requested_bytes: checked.requested_bytes,
            limit_bytes,
            hold_ms: checked.hold_ms,
            steps: if checked.mode == shared::protocol::ProbeMode::Plan { checked.steps.len() as u32 } else { 0 },
            worker_pid: worker.pid(),
            simulated: host.simulated,
        };
        tracing::info!(probe = id, gpu = start.gpu, mode = checked.mode.id(), bytes = checked.requested_bytes, %ip, "probe started");
        let (events_tx, events) = mpsc::channel(PROGRESS_QUEUE);
        let (cancel, cancelled) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let (end, seen) = worker
                .run(
                    |event| {
                        if let Some(p) = runner::progress(id, event, received.elapsed()) {
                            // Latest wins: never let a slow client stall a
                            // worker that holds GPU memory.
                            let _ = events_tx.try_send(ServerMessage::ProbeProgress(p));
                        }
                    },
                    async {
                        let _ = cancelled.await;
                    },
                )
                .await;
            // The worker has exited: the GPU is free for the next probe
            // before this one's result is even sent.
            drop(lease);
            let result = runner::result(asked, end, &seen, received.elapsed());
            log_result(&result);
            let _ = events_tx.send(ServerMessage::ProbeResult(result)).await;
        });
        self.active = Some(Active { id, events, cancel: Some(cancel) });
        Ok(started)
    }

    /// Handles `probe_cancel`: `None` when the probe is being stopped (its
    /// `probe_result` follows), else the error to answer with.
    pub fn cancel(&mut self, cancel: ProbeCancel) -> Option<ServerMessage> {
        match &mut self.active {
            Some(active) if cancel.probe_id.is_none_or(|id| id == active.id) => {
                if let Some(tx) = active.cancel.take() {
                    let _ = tx.send(());
                }
                None
            }
            _ => Some(ServerMessage::error(ErrorCode::ProbeNotRunning, "no such probe runs on this connection")),
        }
    }

    /// The next message of the running probe; pending while none runs.
    pub async fn next(&mut self) -> Option<ServerMessage> {
        let Some(active) = &mut self.active else { return std::future::pending().await };
        let message = active.events.recv().await;
        if !matches!(message, Some(ServerMessage::ProbeProgress(_))) {
            self.active = None;
        }
        message
    }
}

fn log_result(r: &ProbeResult) {
    tracing::info!(
        probe = r.probe_id,
        gpu = r.gpu,
        outcome = ?r.outcome,
        achieved = r.achieved_bytes,
        largest_block = r.largest_block_bytes,
        context = r.context_bytes,
        duration_ms = r.duration_ms,
        "probe ended"
    );
}
