//! Probing the plan on a live GPU: the request (the calculator's chunks for
//! one plan GPU, `shared::probe::plan_for_gpu`, with the confirmation the
//! agent demands), the run's state as messages arrive, and what the page
//! says about the agent's limits, the progress and the result, including
//! the measured CUDA context against the calculator's assumption.

use shared::estimate::CUDA_CONTEXT_BYTES;
use shared::probe::ProbePlan;

use shared::protocol::{
    ErrorCode, ErrorMessage, ProbeLimits, ProbeOutcome, ProbePhase, ProbeProgress, ProbeResult, ProbeStart,
    ProbeStarted, StopReason,
};

use crate::live::wire;
use shared::units::{UnitSystem, format_bytes};

use super::status::seconds;

/// The `probe_start` for one plan GPU's chunks `plan` run on live GPU `gpu`.
pub fn plan_request(plan: &ProbePlan, gpu: u32) -> ProbeStart {
    wire::probe_start(gpu, plan.steps.clone())
}

/// One probe of this page on one host, from request to result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeRun {
    pub gpu: u32,
    pub requested_bytes: u64,
    pub steps: u32,
    pub started: Option<ProbeStarted>,
    pub progress: Option<ProbeProgress>,
    pub result: Option<ProbeResult>,
    /// The agent refused it (`probe_*` error) or the connection dropped.
    pub error: Option<ErrorMessage>,
}

impl ProbeRun {
    pub fn new(request: &ProbeStart) -> Self {
        Self {
            gpu: request.gpu,
            requested_bytes: request.requested_bytes().unwrap_or(0),
            steps: request.steps.len() as u32,
            started: None,
            progress: None,
            result: None,
            error: None,
        }
    }

    pub fn running(&self) -> bool {
        self.result.is_none() && self.error.is_none()
    }

    /// `pending`, `running`, `done`, `failed`: for `data-state`.
    pub fn key(&self) -> &'static str {
        match (&self.result, &self.error, &self.started) {
            (Some(r), _, _) if r.ok => "done",
            (Some(_), _, _) | (None, Some(_), _) => "failed",
            (None, None, Some(_)) => "running",
            (None, None, None) => "pending",
        }
    }

    /// Share of the steps done, in percent (0–100).
    pub fn fraction_pct(&self) -> u32 {
        if self.result.is_some() {
            return 100;
        }
        match &self.progress {
            Some(p) if self.steps > 0 => p.step.min(self.steps) * 100 / self.steps,
            _ => 0,
        }
    }

    /// One line about where the probe is.
    pub fn progress_text(&self, units: UnitSystem) -> String {
        let b = |x: u64| format_bytes(x, units);
        if let Some(e) = &self.error {
            return format!("Refused: {} ({})", e.message, code_words(e.code));
        }
        if self.result.is_some() {
            return "Finished; the agent freed everything it allocated.".into();
        }
        match (&self.started, &self.progress) {
            (None, _) => format!("Asking the agent to allocate {} on GPU {}…", b(self.requested_bytes), self.gpu),
            (Some(s), None) => {
                format!("Started (worker pid {}); creating its CUDA context…", s.worker_pid.unwrap_or(0))
            }
            (Some(_), Some(p)) => match p.phase {
                ProbePhase::Context => format!(
                    "CUDA context created{}",
                    p.context_bytes.map(|c| format!(": it cost {}", b(c))).unwrap_or_default()
                ),
                ProbePhase::Hold => format!("Holding {} for a moment before freeing it", b(p.held_bytes)),
                _ => format!(
                    "Step {} of {}: {} ({}) {} · holding {}",
                    p.step,
                    self.steps,
                    p.label,
                    b(p.bytes),
                    if p.allocated { "granted" } else { "refused" },
                    b(p.held_bytes)
                ),
            },
        }
    }

    /// The result in plain words.
    pub fn result_text(&self, units: UnitSystem) -> Option<String> {
        let r = self.result.as_ref()?;
        let b = |x: u64| format_bytes(x, units);
        let sim = if r.simulated { " (simulated GPU)" } else { "" };
        let head = match r.outcome {
            ProbeOutcome::Completed if r.ok => {
                format!("The plan fits on GPU {} for real{sim}: all {} allocated and held.", r.gpu, b(r.achieved_bytes))
            }
            ProbeOutcome::Stopped => match &r.stopped_at {
                Some(s) => format!(
                    "The plan does not fit on GPU {}{sim}: step {} ({}, {}) was {} after {} of {}.",
                    r.gpu,
                    s.step,
                    s.label,
                    b(s.bytes),
                    match s.reason {
                        StopReason::OutOfMemory => "refused by the driver (out of memory)",
                        StopReason::Margin => "not tried: it would cross the agent's safety margin",
                        StopReason::Unknown => "stopped",
                    },
                    b(r.achieved_bytes),
                    b(r.requested_bytes)
                ),
                None => format!("The probe stopped at {} of {}{sim}.", b(r.achieved_bytes), b(r.requested_bytes)),
            },
            ProbeOutcome::Cancelled => "The probe was cancelled; everything was freed.".into(),
            ProbeOutcome::TimedOut => "The probe ran past the agent's deadline and was stopped.".into(),
            _ => format!(
                "The probe could not run{sim}: {}",
                r.error.as_ref().map_or("no reason given".to_owned(), |e| e.message.clone())
            ),
        };
        let context = match r.context_bytes {
            Some(c) => format!(
                " Its CUDA context cost {} (the calculator assumes {}).",
                b(c),
                format_bytes(CUDA_CONTEXT_BYTES, units)
            ),
            None => String::new(),
        };
        Some(format!(
            "{head}{context} Largest block granted: {}; took {}.",
            b(r.largest_block_bytes),
            seconds(r.duration_ms)
        ))
    }

    /// The measured context cost, when the probe measured one.
    pub fn context_bytes(&self) -> Option<u64> {
        self.result.as_ref()?.context_bytes
    }
}

/// The agent's probe policy in one sentence.
pub fn limits_text(l: &ProbeLimits, units: UnitSystem) -> String {
    if !l.enabled {
        return "This agent does not allow probes (it runs with --no-probes, or predates them).".into();
    }
    format!(
        "The agent keeps {} free at all times, holds a probe {} then frees it, stops any probe after {}, and allows {} \
         probes at once then one per {}.{}",
        format_bytes(l.margin_bytes, units),
        seconds(u64::from(l.default_hold_ms)),
        seconds(u64::from(l.deadline_ms)),
        l.rate_burst,
        seconds(u64::from(l.rate_refill_ms)),
        if l.allow_full_probes { "" } else { " Only plan probes (no largest-block or max-total)." }
    )
}

/// A probe refusal's code in a few words.
pub fn code_words(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::ProbesDisabled => "probes are off on this agent",
        ErrorCode::ProbeOverMargin => "more than free memory minus the safety margin",
        ErrorCode::ProbeBusy => "a probe already runs on that GPU",
        ErrorCode::ProbeRateLimited => "too many probes lately; wait a little",
        ErrorCode::ProbeComputeMode => "the GPU's compute mode admits no other process",
        ErrorCode::ProbeUnavailable => "the GPU cannot be probed now",
        ErrorCode::ProbeNotConfirmed => "the request was not confirmed",
        _ => "refused",
    }
}

/// Whether an `error` belongs to a probe request.
pub fn is_probe_error(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::ProbesDisabled
            | ErrorCode::ProbeUnknownGpu
            | ErrorCode::ProbeNotConfirmed
            | ErrorCode::ProbeNotAllowed
            | ErrorCode::ProbeOverMargin
            | ErrorCode::ProbeBusy
            | ErrorCode::ProbeRateLimited
            | ErrorCode::ProbeComputeMode
            | ErrorCode::ProbeUnavailable
            | ErrorCode::InvalidMessage
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::estimate::{EnginePlan, Scenario};
    use shared::model::Model;
    use shared::protocol::ProbeMode;
    use shared::units::{GIB, MIB};

    fn run() -> ProbeRun {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let p = shared::probe::plan_for_gpu(&EnginePlan::new(&m, Scenario::default().validate().unwrap()), 0);
        let req = plan_request(&p, 1);
        assert_eq!(req.requested_bytes(), Some(p.total_bytes()));
        assert_eq!(req.confirm_bytes, req.requested_bytes());
        assert_eq!(req.gpu, 1);
        ProbeRun::new(&req)
    }

    #[test]
    fn a_probe_runs_from_request_to_result() {
        let mut r = run();
        assert_eq!((r.key(), r.fraction_pct()), ("pending", 0));
        assert!(r.progress_text(UnitSystem::Binary).starts_with("Asking the agent to allocate"));
        r.started = Some(ProbeStarted {
            probe_id: 1,
            gpu: 1,
            mode: ProbeMode::Plan,
            requested_bytes: r.requested_bytes,
            limit_bytes: r.requested_bytes,
            hold_ms: 1000,
            steps: r.steps,
            worker_pid: Some(99),
            simulated: true,
        });
        r.progress = Some(ProbeProgress {
            probe_id: 1,
            phase: ProbePhase::Allocate,
            step: r.steps / 2,
            label: "layer 14 weights".into(),
            bytes: 436 * MIB,
            allocated: true,
            held_bytes: 7 * GIB,
            context_bytes: None,
            elapsed_ms: 100,
        });
        assert_eq!(r.key(), "running");
        assert!(r.fraction_pct() >= 40 && r.fraction_pct() <= 50);
        assert!(r.progress_text(UnitSystem::Binary).contains("layer 14 weights (436.00 MiB) granted"));
        r.result = Some(ProbeResult {
            probe_id: 1,
            mode: ProbeMode::Plan,
            gpu: 1,
            simulated: true,
            ok: true,
            outcome: ProbeOutcome::Completed,
            stopped_at: None,
            requested_bytes: r.requested_bytes,
            achieved_bytes: r.requested_bytes,
            largest_block_bytes: GIB,
            context_bytes: Some(512 * MIB),
            free_before_bytes: None,
            free_after_bytes: None,
            total_bytes: None,
            held_ms: 1000,
            duration_ms: 2500,
            error: None,
        });
        assert_eq!((r.key(), r.fraction_pct(), r.context_bytes()), ("done", 100, Some(512 * MIB)));
        let text = r.result_text(UnitSystem::Binary).expect("result");
        assert!(text.starts_with("The plan fits on GPU 1 for real (simulated GPU)"), "{text}");
        assert!(text.contains("CUDA context cost 512.00 MiB (the calculator assumes 300.00 MiB)"), "{text}");
    }

    #[test]
    fn refusals_and_limits_read_plainly() {
        let mut r = run();
        r.error = Some(ErrorMessage::new(ErrorCode::ProbeOverMargin, "asks for too much"));
        assert_eq!(r.key(), "failed");
        assert!(r.progress_text(UnitSystem::Binary).contains("safety margin"));
        let l = ProbeLimits {
            enabled: true,
            margin_bytes: GIB,
            default_hold_ms: 1000,
            deadline_ms: 30_000,
            rate_burst: 3,
            rate_refill_ms: 10_000,
            ..ProbeLimits::default()
        };
        let t = limits_text(&l, UnitSystem::Binary);
        assert!(t.contains("keeps 1.00 GiB free") && t.contains("after 30 s"), "{t}");
        assert!(limits_text(&ProbeLimits::default(), UnitSystem::Binary).contains("does not allow"));
        assert!(is_probe_error(ErrorCode::ProbeBusy) && !is_probe_error(ErrorCode::Unauthorized));
    }
}
