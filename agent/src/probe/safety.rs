//! The safety rules every probe passes before a worker starts, shared by the
//! server and `headroom probe`: a confirmed, well-formed request; full probes
//! only when allowed; a compute mode that admits a second context; and never
//! more than the GPU's free memory minus the margin. Pure functions.

use shared::protocol::{ComputeMode, ErrorCode, ProbeMode, ProbeStart, ProbeStep};
use shared::units::{UnitSystem, format_bytes};

use super::ProbeConfig;
use super::modes::{DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES};

/// A refused probe: a stable code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

fn refuse(code: ErrorCode, message: impl Into<String>) -> Refusal {
    Refusal { code, message: message.into() }
}

/// A request that passed [`check_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub mode: ProbeMode,
    /// `plan`: the allocations (one block when the request gave only bytes).
    pub steps: Vec<ProbeStep>,
    /// `plan`: the total; other modes: the ceiling.
    pub requested_bytes: u64,
    pub chunk_bytes: u64,
    pub hold_ms: u32,
}

/// Checks what a client asked for, before looking at the GPU.
pub fn check_request(start: &ProbeStart, config: &ProbeConfig) -> Result<Checked, Refusal> {
    let invalid = |m: String| refuse(ErrorCode::InvalidMessage, m);
    let mode = start.mode;
    if mode != ProbeMode::Plan {
        if !start.steps.is_empty() {
            return Err(invalid(format!("`steps` are for plan probes, not {}", mode.id())));
        }
        if !config.allow_full_probes {
            return Err(refuse(
                ErrorCode::ProbeNotAllowed,
                format!("{} probes need the agent's --allow-full-probes", mode.id()),
            ));
        }
    }
    if start.steps.len() > config.max_steps as usize {
        return Err(invalid(format!("at most {} steps", config.max_steps)));
    }
    if start.steps.iter().any(|s| s.bytes == 0) {
        return Err(invalid("every step needs bytes > 0".into()));
    }
    let total = start.steps.iter().fold(0u64, |a, s| a.saturating_add(s.bytes));
    if let Some(bytes) = start.bytes
        && !start.steps.is_empty()
        && bytes != total
    {
        return Err(invalid(format!("`bytes` ({bytes}) is not the steps' total ({total})")));
    }
    let Some(requested_bytes) = start.requested_bytes().filter(|&b| b > 0) else {
        return Err(invalid(match mode {
            ProbeMode::Plan => "a plan probe needs `bytes` or `steps`".into(),
            _ => format!("a {} probe needs `bytes`: the most it may take", mode.id()),
        }));
    };
    if start.confirm_bytes != Some(requested_bytes) {
        return Err(refuse(
            ErrorCode::ProbeNotConfirmed,
            format!("`confirm_bytes` must repeat the bytes asked for ({requested_bytes})"),
        ));
    }
    let chunk_bytes = match (mode, start.chunk_bytes) {
        (ProbeMode::MaxTotal, Some(c)) if c < MIN_CHUNK_BYTES => {
            return Err(invalid(format!("`chunk_bytes` must be at least {MIN_CHUNK_BYTES} (64 MiB)")));
        }
        (ProbeMode::MaxTotal, Some(c)) => c,
        (_, Some(_)) => return Err(invalid("`chunk_bytes` is for max-total probes".into())),
        (_, None) => DEFAULT_CHUNK_BYTES,
    };
    let steps = match (mode, start.steps.is_empty()) {
        (ProbeMode::Plan, true) => vec![ProbeStep { label: "plan".into(), bytes: requested_bytes }],
        _ => start.steps.clone(),
    };
    let hold_ms = start.hold_ms.unwrap_or(config.default_hold_ms()).min(config.max_hold_ms());
    Ok(Checked { mode, steps, requested_bytes, chunk_bytes, hold_ms })
}

/// What the agent knows about a GPU from NVML (or the simulation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuFacts {
    pub index: u32,
    pub compute_mode: Option<ComputeMode>,
    pub mig_enabled: bool,
    pub free_bytes: Option<u64>,
}

/// Checks the GPU can be probed for `requested` bytes; returns the limit
/// (free minus margin) the probe runs under.
pub fn check_gpu(gpu: &GpuFacts, requested: u64, margin_bytes: u64) -> Result<u64, Refusal> {
    let index = gpu.index;
    match gpu.compute_mode {
        Some(ComputeMode::ExclusiveProcess | ComputeMode::ExclusiveThread) => {
            return Err(refuse(
                ErrorCode::ProbeComputeMode,
                format!(
                    "GPU {index} is in an exclusive compute mode: a probe's context would be refused or lock others out"
                ),
            ));
        }
        Some(ComputeMode::Prohibited) => {
            return Err(refuse(ErrorCode::ProbeComputeMode, format!("GPU {index} prohibits compute contexts")));
        }
        Some(ComputeMode::Default) | None => {}
    }
    if gpu.mig_enabled {
        return Err(refuse(
            ErrorCode::ProbeUnavailable,
            format!("GPU {index} has MIG on; probing MIG instances is not supported yet"),
        ));
    }
    let Some(free) = gpu.free_bytes else {
        return Err(refuse(
            ErrorCode::ProbeUnavailable,
            format!("no memory reading of GPU {index}; the margin cannot be checked"),
        ));
    };
    let limit = free.saturating_sub(margin_bytes);
    if requested > limit {
        let size = |b| format_bytes(b, UnitSystem::Binary);
        return Err(refuse(
            ErrorCode::ProbeOverMargin,
            format!(
                "the probe asks for {} but GPU {index} has {} free; with the {} margin it may take at most {}",
                size(requested),
                size(free),
                size(margin_bytes),
                size(limit)
            ),
        ));
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::units::GIB;

    fn start(mode: ProbeMode, bytes: u64, confirm: Option<u64>) -> ProbeStart {
        ProbeStart {
            gpu: 0,
            mode,
            bytes: Some(bytes),
            steps: Vec::new(),
            chunk_bytes: None,
            hold_ms: None,
            confirm_bytes: confirm,
        }
    }

    fn code<T: std::fmt::Debug>(r: Result<T, Refusal>) -> ErrorCode {
        r.unwrap_err().code
    }

    #[test]
    fn requests_must_be_confirmed_and_full_probes_allowed() {
        let mut config = ProbeConfig::default();
        assert!(check_request(&start(ProbeMode::Plan, GIB, Some(GIB)), &config).is_ok());
        assert_eq!(code(check_request(&start(ProbeMode::Plan, GIB, None), &config)), ErrorCode::ProbeNotConfirmed);
        assert_eq!(
            code(check_request(&start(ProbeMode::Plan, GIB, Some(GIB + 1)), &config)),
            ErrorCode::ProbeNotConfirmed
        );
        let full = start(ProbeMode::MaxTotal, GIB, Some(GIB));
        assert_eq!(code(check_request(&full, &config)), ErrorCode::ProbeNotAllowed);
        config.allow_full_probes = true;
        assert_eq!(check_request(&full, &config).unwrap().chunk_bytes, DEFAULT_CHUNK_BYTES);
        let mut steps = start(ProbeMode::Plan, 3, Some(3));
        steps.steps = vec![ProbeStep { label: "a".into(), bytes: 1 }, ProbeStep { label: "b".into(), bytes: 2 }];
        assert_eq!(check_request(&steps, &config).unwrap().steps.len(), 2);
        steps.bytes = Some(4);
        assert_eq!(code(check_request(&steps, &config)), ErrorCode::InvalidMessage);
    }

    #[test]
    fn gpus_must_admit_a_context_and_keep_the_margin() {
        let gpu = GpuFacts {
            index: 1,
            compute_mode: Some(ComputeMode::Default),
            mig_enabled: false,
            free_bytes: Some(10 * GIB),
        };
        assert_eq!(check_gpu(&gpu, 9 * GIB, GIB), Ok(9 * GIB));
        assert_eq!(code(check_gpu(&gpu, 9 * GIB + 1, GIB)), ErrorCode::ProbeOverMargin);
        for mode in [ComputeMode::ExclusiveProcess, ComputeMode::Prohibited] {
            let gpu = GpuFacts { compute_mode: Some(mode), ..gpu };
            assert_eq!(code(check_gpu(&gpu, GIB, GIB)), ErrorCode::ProbeComputeMode);
        }
        assert_eq!(code(check_gpu(&GpuFacts { mig_enabled: true, ..gpu }, GIB, GIB)), ErrorCode::ProbeUnavailable);
        assert_eq!(code(check_gpu(&GpuFacts { free_bytes: None, ..gpu }, GIB, GIB)), ErrorCode::ProbeUnavailable);
    }
}
