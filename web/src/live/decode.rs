//! The wire format, read and written by hand: the agent's messages decoded
//! from a `serde_json::Value` into small structs that hold only what the page
//! shows, and the four client messages built as JSON.
//!
//! Why not `shared::protocol`'s serde derives: monomorphised per type they
//! cost ~48 kB gzip of wasm, while the `Value` parser is already in the bundle
//! (the core reads `config.json` through it). Decoding is tolerant like the
//! derived one (`#[serde(other)]`, missing `probes`): an unknown reason, code
//! or phase reads as `Unknown`; a missing number as 0. Locked to the agent's
//! real output through the examples in `docs/protocol.md` (tests below).

use serde_json::{Map, Value, json};

/// The protocol version this page speaks (`shared::protocol::PROTOCOL_VERSION`).
pub const PROTOCOL_VERSION: u32 = 1;
/// The sample interval the page subscribes with.
pub const INTERVAL_MS: u32 = 1_000;

/// A reading that may be unavailable, and then says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field<T> {
    Value(T),
    Unavailable(Unavailable),
}

impl<T> Field<T> {
    pub fn value(&self) -> Option<&T> {
        match self {
            Field::Value(v) => Some(v),
            Field::Unavailable(_) => None,
        }
    }
}

/// Why a reading is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    NotSupported,
    NoPermission,
    MissingInDriver,
    Unreliable,
    NotVisible,
    GpuLost,
    NotSampled,
    Failed,
    Unknown,
}

/// The error codes the page acts on; any other reads as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Unauthorized,
    RateLimited,
    UnsupportedVersion,
    HandshakeRequired,
    HandshakeTimeout,
    ForbiddenOrigin,
    ForbiddenHost,
    ShuttingDown,
    InvalidMessage,
    ProbesDisabled,
    ProbeUnknownGpu,
    ProbeNotConfirmed,
    ProbeNotAllowed,
    ProbeOverMargin,
    ProbeBusy,
    ProbeRateLimited,
    ProbeComputeMode,
    ProbeUnavailable,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMessage {
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorMessage {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

/// `welcome`: the host, its GPUs and the probe policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Welcome {
    pub hostname: String,
    pub driver_version: Option<String>,
    pub simulated: bool,
    pub gpus: Vec<GpuInfo>,
    pub probes: ProbeLimits,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    pub index: u32,
    pub name: Option<String>,
    pub memory_total_bytes: Option<u64>,
    /// The catalog id of a simulated GPU.
    pub catalog_id: Option<String>,
}

/// The agent's probe policy; a missing `probes` reads as disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProbeLimits {
    pub enabled: bool,
    pub allow_full_probes: bool,
    pub margin_bytes: u64,
    pub default_hold_ms: u32,
    pub deadline_ms: u32,
    pub rate_burst: u32,
    pub rate_refill_ms: u32,
}

/// `sample`: one reading of every GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub timestamp_ms: u64,
    pub processes_timestamp_ms: u64,
    pub gpus: Vec<GpuSample>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSample {
    pub index: u32,
    pub memory: Field<MemoryReading>,
    pub utilization: Field<Utilization>,
    pub temperature_c: Field<u32>,
    pub power_draw_mw: Field<u32>,
    pub power_limit_mw: Field<u32>,
    pub processes: Field<Vec<GpuProcess>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryReading {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    /// `None` when the driver does not report its reserve (v1 call).
    pub reserved_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utilization {
    pub gpu_pct: u32,
    pub memory_pct: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuProcess {
    pub pid: u32,
    pub name: Field<String>,
    pub container: Option<String>,
    /// The Kubernetes pod, `namespace/name` (or `uid …` when the agent cannot see names).
    pub pod: Option<String>,
    pub used_bytes: Field<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeStarted {
    pub probe_id: u64,
    pub gpu: u32,
    pub steps: u32,
    pub worker_pid: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbePhase {
    Context,
    Allocate,
    Hold,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeProgress {
    pub probe_id: u64,
    pub phase: ProbePhase,
    pub step: u32,
    pub label: String,
    pub bytes: u64,
    pub allocated: bool,
    pub held_bytes: u64,
    pub context_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeOutcome {
    Completed,
    Stopped,
    Cancelled,
    TimedOut,
    Failed,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    OutOfMemory,
    Margin,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeStop {
    pub step: u32,
    pub label: String,
    pub bytes: u64,
    pub reason: StopReason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    pub gpu: u32,
    pub simulated: bool,
    pub ok: bool,
    pub outcome: ProbeOutcome,
    pub stopped_at: Option<ProbeStop>,
    pub requested_bytes: u64,
    pub achieved_bytes: u64,
    pub largest_block_bytes: u64,
    pub context_bytes: Option<u64>,
    pub duration_ms: u64,
    pub error: Option<ErrorMessage>,
}

/// What the agent sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMessage {
    Welcome(Welcome),
    Sample(Sample),
    Error(ErrorMessage),
    ProbeStarted(ProbeStarted),
    ProbeProgress(ProbeProgress),
    ProbeResult(ProbeResult),
}

// ---------------------------------------------------------------------------
// Reading values

pub(crate) fn num(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

fn num32(v: &Value, k: &str) -> u32 {
    u32::try_from(num(v, k)).unwrap_or(u32::MAX)
}

pub(crate) fn opt_num(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

pub(crate) fn flag(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

pub(crate) fn text(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn opt_text(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

fn key<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

pub(crate) fn list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn unavailable(reason: &str) -> Unavailable {
    match reason {
        "not_supported" => Unavailable::NotSupported,
        "no_permission" => Unavailable::NoPermission,
        "missing_in_driver" => Unavailable::MissingInDriver,
        "unreliable" => Unavailable::Unreliable,
        "not_visible" => Unavailable::NotVisible,
        "gpu_lost" => Unavailable::GpuLost,
        "not_sampled" => Unavailable::NotSampled,
        "failed" => Unavailable::Failed,
        _ => Unavailable::Unknown,
    }
}

/// `{"value": …}` or `{"unavailable": "<reason>"}`; anything else is `Unknown`.
fn field<T>(v: &Value, k: &str, read: impl FnOnce(&Value) -> Option<T>) -> Field<T> {
    let f = v.get(k);
    match f.and_then(|f| f.get("value")).and_then(read) {
        Some(x) => Field::Value(x),
        None => Field::Unavailable(unavailable(f.map_or("", |f| key(f, "unavailable")))),
    }
}

fn field_num(v: &Value, k: &str) -> Field<u64> {
    field(v, k, Value::as_u64)
}

fn field_num32(v: &Value, k: &str) -> Field<u32> {
    field(v, k, |x| x.as_u64().and_then(|n| u32::try_from(n).ok()))
}

fn field_text(v: &Value, k: &str) -> Field<String> {
    field(v, k, |x| x.as_str().map(str::to_owned))
}

pub fn error_code(code: &str) -> ErrorCode {
    match code {
        "unauthorized" => ErrorCode::Unauthorized,
        "rate_limited" => ErrorCode::RateLimited,
        "unsupported_version" => ErrorCode::UnsupportedVersion,
        "handshake_required" => ErrorCode::HandshakeRequired,
        "handshake_timeout" => ErrorCode::HandshakeTimeout,
        "forbidden_origin" => ErrorCode::ForbiddenOrigin,
        "forbidden_host" => ErrorCode::ForbiddenHost,
        "shutting_down" => ErrorCode::ShuttingDown,
        "invalid_message" => ErrorCode::InvalidMessage,
        "probes_disabled" => ErrorCode::ProbesDisabled,
        "probe_unknown_gpu" => ErrorCode::ProbeUnknownGpu,
        "probe_not_confirmed" => ErrorCode::ProbeNotConfirmed,
        "probe_not_allowed" => ErrorCode::ProbeNotAllowed,
        "probe_over_margin" => ErrorCode::ProbeOverMargin,
        "probe_busy" => ErrorCode::ProbeBusy,
        "probe_rate_limited" => ErrorCode::ProbeRateLimited,
        "probe_compute_mode" => ErrorCode::ProbeComputeMode,
        "probe_unavailable" => ErrorCode::ProbeUnavailable,
        _ => ErrorCode::Other,
    }
}

fn error(v: &Value) -> ErrorMessage {
    ErrorMessage { code: error_code(key(v, "code")), message: text(v, "message") }
}

fn welcome(d: &Value) -> Welcome {
    let p = d.get("probes").unwrap_or(&Value::Null);
    Welcome {
        hostname: text(d, "hostname"),
        driver_version: field_text(d, "driver_version").value().cloned(),
        simulated: flag(d, "simulated"),
        gpus: list(d.get("gpus"))
            .iter()
            .map(|g| GpuInfo {
                index: num32(g, "index"),
                name: field_text(g, "name").value().cloned(),
                memory_total_bytes: field_num(g, "memory_total_bytes").value().copied(),
                catalog_id: opt_text(g, "catalog_id"),
            })
            .collect(),
        probes: ProbeLimits {
            enabled: flag(p, "enabled"),
            allow_full_probes: flag(p, "allow_full_probes"),
            margin_bytes: num(p, "margin_bytes"),
            default_hold_ms: num32(p, "default_hold_ms"),
            deadline_ms: num32(p, "deadline_ms"),
            rate_burst: num32(p, "rate_burst"),
            rate_refill_ms: num32(p, "rate_refill_ms"),
        },
    }
}

fn gpu_sample(g: &Value) -> GpuSample {
    GpuSample {
        index: num32(g, "index"),
        memory: field(g, "memory", |m| {
            Some(MemoryReading {
                total_bytes: num(m, "total_bytes"),
                used_bytes: num(m, "used_bytes"),
                free_bytes: num(m, "free_bytes"),
                reserved_bytes: field_num(m, "reserved_bytes").value().copied(),
            })
        }),
        utilization: field(g, "utilization", |u| {
            Some(Utilization { gpu_pct: num32(u, "gpu_pct"), memory_pct: num32(u, "memory_pct") })
        }),
        temperature_c: field_num32(g, "temperature_c"),
        power_draw_mw: field_num32(g, "power_draw_mw"),
        power_limit_mw: field_num32(g, "power_limit_mw"),
        processes: field(g, "processes", |l| {
            let procs = l.as_array()?.iter().map(|p| GpuProcess {
                pid: num32(p, "pid"),
                name: field_text(p, "name"),
                container: opt_text(p, "container"),
                pod: p.get("pod").map(|pod| match (opt_text(pod, "namespace"), opt_text(pod, "name")) {
                    (Some(ns), Some(name)) => format!("{ns}/{name}"),
                    _ => format!("uid {}", text(pod, "uid")),
                }),
                used_bytes: field_num(p, "used_bytes"),
            });
            Some(procs.collect())
        }),
    }
}

fn probe_result(d: &Value) -> ProbeResult {
    ProbeResult {
        gpu: num32(d, "gpu"),
        simulated: flag(d, "simulated"),
        ok: flag(d, "ok"),
        outcome: match key(d, "outcome") {
            "completed" => ProbeOutcome::Completed,
            "stopped" => ProbeOutcome::Stopped,
            "cancelled" => ProbeOutcome::Cancelled,
            "timed_out" => ProbeOutcome::TimedOut,
            "failed" => ProbeOutcome::Failed,
            _ => ProbeOutcome::Unknown,
        },
        stopped_at: d.get("stopped_at").filter(|s| s.is_object()).map(|s| ProbeStop {
            step: num32(s, "step"),
            label: text(s, "label"),
            bytes: num(s, "bytes"),
            reason: match key(s, "reason") {
                "out_of_memory" => StopReason::OutOfMemory,
                "margin" => StopReason::Margin,
                _ => StopReason::Unknown,
            },
        }),
        requested_bytes: num(d, "requested_bytes"),
        achieved_bytes: num(d, "achieved_bytes"),
        largest_block_bytes: num(d, "largest_block_bytes"),
        context_bytes: opt_num(d, "context_bytes"),
        duration_ms: num(d, "duration_ms"),
        error: d.get("error").filter(|e| e.is_object()).map(error),
    }
}

/// Decodes one text frame. `Ok(None)`: a message type this page does not
/// know (a newer agent's), to skip; `Err`: not an envelope at all.
pub fn decode(frame: &str) -> Result<Option<ServerMessage>, String> {
    let v: Value = serde_json::from_str(frame).map_err(|e| format!("not a message envelope: {e}"))?;
    let kind = v.get("type").and_then(Value::as_str).ok_or("not a message envelope: no `type`")?;
    let d = v.get("data").unwrap_or(&Value::Null);
    Ok(Some(match kind {
        "welcome" => ServerMessage::Welcome(welcome(d)),
        "sample" => ServerMessage::Sample(Sample {
            timestamp_ms: num(d, "timestamp_ms"),
            processes_timestamp_ms: num(d, "processes_timestamp_ms"),
            gpus: list(d.get("gpus")).iter().map(gpu_sample).collect(),
        }),
        "error" => ServerMessage::Error(error(d)),
        "probe_started" => ServerMessage::ProbeStarted(ProbeStarted {
            probe_id: num(d, "probe_id"),
            gpu: num32(d, "gpu"),
            steps: num32(d, "steps"),
            worker_pid: opt_num(d, "worker_pid").and_then(|p| u32::try_from(p).ok()),
        }),
        "probe_progress" => ServerMessage::ProbeProgress(ProbeProgress {
            probe_id: num(d, "probe_id"),
            phase: match key(d, "phase") {
                "context" => ProbePhase::Context,
                "allocate" => ProbePhase::Allocate,
                "hold" => ProbePhase::Hold,
                _ => ProbePhase::Unknown,
            },
            step: num32(d, "step"),
            label: text(d, "label"),
            bytes: num(d, "bytes"),
            allocated: flag(d, "allocated"),
            held_bytes: num(d, "held_bytes"),
            context_bytes: opt_num(d, "context_bytes"),
        }),
        "probe_result" => ServerMessage::ProbeResult(probe_result(d)),
        _ => return Ok(None),
    }))
}

// ---------------------------------------------------------------------------
// Client messages

fn envelope(kind: &str, data: Value) -> String {
    json!({"type": kind, "data": data}).to_string()
}

/// `hello` with the token.
pub fn hello(token: &str) -> String {
    envelope(
        "hello",
        json!({
            "token": token,
            "protocol_version": PROTOCOL_VERSION,
            "client": concat!("headroom-web/", env!("CARGO_PKG_VERSION")),
        }),
    )
}

/// `subscribe` at [`INTERVAL_MS`].
pub fn subscribe() -> String {
    envelope("subscribe", json!({ "interval_ms": INTERVAL_MS }))
}

/// One allocation of a plan probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub label: String,
    pub bytes: u64,
}

/// A plan probe: the allocations in order, on live GPU `gpu`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeRequest {
    pub gpu: u32,
    pub steps: Vec<Step>,
}

impl ProbeRequest {
    pub fn total_bytes(&self) -> u64 {
        self.steps.iter().fold(0u64, |a, s| a.saturating_add(s.bytes))
    }

    /// `probe_start` in `plan` mode, with `confirm_bytes` echoing the total.
    pub fn encode(&self) -> String {
        let steps = self.steps.iter().map(|s| json!({"label": s.label, "bytes": s.bytes})).collect();
        let mut d = Map::new();
        d.insert("gpu".into(), self.gpu.into());
        d.insert("mode".into(), "plan".into());
        d.insert("steps".into(), Value::Array(steps));
        d.insert("confirm_bytes".into(), self.total_bytes().into());
        envelope("probe_start", Value::Object(d))
    }
}

/// `probe_cancel`, for `probe_id` when known.
pub fn probe_cancel(probe_id: Option<u64>) -> String {
    let mut d = Map::new();
    if let Some(id) = probe_id {
        d.insert("probe_id".into(), id.into());
    }
    envelope("probe_cancel", Value::Object(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::protocol as wire;

    /// The JSON block after `<!-- example: NAME -->` in docs/protocol.md
    /// (locked to the agent's real output by agent/tests/it/protocol_doc.rs).
    fn example(name: &str) -> String {
        let doc = include_str!("../../../docs/protocol.md");
        let marker = format!("<!-- example: {name} -->\n```json\n");
        let start = doc.find(&marker).unwrap_or_else(|| panic!("no `{name}` example")) + marker.len();
        doc[start..start + doc[start..].find("```").expect("closed block")].to_owned()
    }

    fn decoded(name: &str) -> ServerMessage {
        decode(&example(name)).expect("an envelope").expect("a known type")
    }

    #[test]
    fn welcome_reads_the_host_the_gpus_and_the_probe_policy() {
        let ServerMessage::Welcome(w) = decoded("welcome") else { panic!("welcome") };
        let real = match wire::ServerMessage::decode(&example("welcome")) {
            Ok(wire::ServerMessage::Welcome(w)) => w,
            other => panic!("{other:?}"),
        };
        assert_eq!(w.hostname, real.host.hostname);
        assert_eq!(w.driver_version, real.host.driver_version.value().cloned());
        assert_eq!(w.simulated, real.host.simulated);
        assert_eq!(w.gpus.len(), real.host.gpus.len());
        for (g, r) in w.gpus.iter().zip(&real.host.gpus) {
            assert_eq!(g.index, r.index);
            assert_eq!(g.name, r.name.value().cloned());
            assert_eq!(g.memory_total_bytes, r.memory_total_bytes.value().copied());
            assert_eq!(g.catalog_id, r.catalog_id);
        }
        let (p, rp) = (w.probes, real.probes);
        assert_eq!(
            (p.enabled, p.allow_full_probes, p.margin_bytes, p.default_hold_ms, p.deadline_ms),
            (rp.enabled, rp.allow_full_probes, rp.margin_bytes, rp.default_hold_ms, rp.deadline_ms)
        );
        assert_eq!((p.rate_burst, p.rate_refill_ms), (rp.rate_burst, rp.rate_refill_ms));
        assert!(p.enabled && p.margin_bytes == 1 << 30, "{p:?}");
        // An older agent sends no `probes`: off.
        let old = r#"{"type":"welcome","data":{"hostname":"h","simulated":true,"gpus":[]}}"#;
        let Ok(Some(ServerMessage::Welcome(w))) = decode(old) else { panic!("welcome") };
        assert!(!w.probes.enabled && w.simulated && w.hostname == "h");
    }

    #[test]
    fn sample_reads_memory_processes_and_unavailable_fields() {
        let ServerMessage::Sample(s) = decoded("sample") else { panic!("sample") };
        let real = match wire::ServerMessage::decode(&example("sample")) {
            Ok(wire::ServerMessage::Sample(s)) => s,
            other => panic!("{other:?}"),
        };
        assert_eq!((s.timestamp_ms, s.processes_timestamp_ms), (real.timestamp_ms, real.processes_timestamp_ms));
        assert_eq!(s.gpus.len(), real.gpus.len());
        for (g, r) in s.gpus.iter().zip(&real.gpus) {
            assert_eq!(g.index, r.index);
            let (m, rm) = (g.memory.value().expect("memory"), r.memory.value().expect("memory"));
            assert_eq!((m.total_bytes, m.used_bytes, m.free_bytes), (rm.total_bytes, rm.used_bytes, rm.free_bytes));
            assert_eq!(m.reserved_bytes, rm.reserved_bytes.value().copied());
            let (u, ru) = (g.utilization.value().expect("util"), r.utilization.value().expect("util"));
            assert_eq!((u.gpu_pct, u.memory_pct), (ru.gpu_pct, ru.memory_pct));
            assert_eq!(g.temperature_c.value(), r.temperature_c.value());
            assert_eq!(g.power_draw_mw.value(), r.power_draw_mw.value());
            assert_eq!(g.power_limit_mw.value(), r.power_limit_mw.value());
            let (ps, rps) = (g.processes.value().expect("procs"), r.processes.value().expect("procs"));
            assert_eq!(ps.len(), rps.len());
            for (p, rp) in ps.iter().zip(rps) {
                assert_eq!((p.pid, &p.container, p.used_bytes.value()), (rp.pid, &rp.container, rp.used_bytes.value()));
                assert_eq!(p.name.value(), rp.name.value());
            }
        }
        let procs = s.gpus[0].processes.value().expect("procs");
        assert_eq!(procs[0].pod.as_deref(), Some("ml-serving/vllm-llama-0"));
        assert_eq!(procs[1].name, Field::Unavailable(Unavailable::NotVisible));
        assert_eq!(procs[1].pod, None);
        // Unknown reasons (a newer agent) and missing fields are never a value.
        let g = gpu_sample(&json!({"index": 1, "memory": {"unavailable": "from_the_future"}}));
        assert_eq!(g.memory, Field::Unavailable(Unavailable::Unknown));
        assert_eq!(g.processes, Field::Unavailable(Unavailable::Unknown));
    }

    #[test]
    fn errors_and_probe_messages_read_like_the_agent_wrote_them() {
        let ServerMessage::Error(e) = decoded("error") else { panic!("error") };
        assert_eq!(e.code, ErrorCode::Unauthorized);
        assert!(!e.message.is_empty());
        let ServerMessage::ProbeStarted(s) = decoded("probe_started") else { panic!("probe_started") };
        let Ok(wire::ServerMessage::ProbeStarted(rs)) = wire::ServerMessage::decode(&example("probe_started")) else {
            panic!("probe_started")
        };
        assert_eq!((s.probe_id, s.gpu, s.steps, s.worker_pid), (rs.probe_id, rs.gpu, rs.steps, rs.worker_pid));
        let ServerMessage::ProbeProgress(p) = decoded("probe_progress") else { panic!("probe_progress") };
        let Ok(wire::ServerMessage::ProbeProgress(rp)) = wire::ServerMessage::decode(&example("probe_progress")) else {
            panic!("probe_progress")
        };
        assert_eq!((p.probe_id, p.step, &p.label, p.bytes), (rp.probe_id, rp.step, &rp.label, rp.bytes));
        assert_eq!((p.allocated, p.held_bytes, p.context_bytes), (rp.allocated, rp.held_bytes, rp.context_bytes));
        assert_eq!(format!("{:?}", p.phase), format!("{:?}", rp.phase));
        let ServerMessage::Error(e) = decoded("probe_error") else { panic!("probe_error") };
        assert_eq!(e.code, ErrorCode::ProbeOverMargin);
        for name in ["probe_result", "probe_result_stopped"] {
            let ServerMessage::ProbeResult(r) = decoded(name) else { panic!("{name}") };
            let Ok(wire::ServerMessage::ProbeResult(rr)) = wire::ServerMessage::decode(&example(name)) else {
                panic!("{name}")
            };
            assert_eq!((r.gpu, r.simulated, r.ok), (rr.gpu, rr.simulated, rr.ok), "{name}");
            assert_eq!(format!("{:?}", r.outcome), format!("{:?}", rr.outcome), "{name}");
            assert_eq!((r.requested_bytes, r.achieved_bytes), (rr.requested_bytes, rr.achieved_bytes), "{name}");
            assert_eq!((r.largest_block_bytes, r.context_bytes), (rr.largest_block_bytes, rr.context_bytes));
            assert_eq!(r.duration_ms, rr.duration_ms);
            assert_eq!(r.stopped_at.is_some(), rr.stopped_at.is_some(), "{name}");
            if let (Some(s), Some(rs)) = (&r.stopped_at, &rr.stopped_at) {
                assert_eq!((s.step, &s.label, s.bytes), (rs.step, &rs.label, rs.bytes));
                assert_eq!(format!("{:?}", s.reason), format!("{:?}", rs.reason));
            }
            assert_eq!(r.error.as_ref().map(|e| &e.message), rr.error.as_ref().map(|e| &e.message), "{name}");
        }
    }

    #[test]
    fn unknown_types_are_skipped_and_garbage_is_an_error() {
        assert_eq!(decode(r#"{"type":"from_the_future","data":{}}"#), Ok(None));
        assert!(decode("{").is_err());
        assert!(decode(r#"{"data":{}}"#).is_err());
    }

    #[test]
    fn client_messages_decode_on_the_agent_side() {
        let Ok(wire::ClientMessage::Hello(h)) = wire::ClientMessage::decode(&hello("t\"ok\\")) else { panic!("hello") };
        assert_eq!((h.token.as_str(), h.protocol_version), ("t\"ok\\", wire::PROTOCOL_VERSION));
        assert!(h.client.is_some_and(|c| c.starts_with("headroom-web/")));
        assert_eq!(
            wire::ClientMessage::decode(&subscribe()),
            Ok(wire::ClientMessage::Subscribe(wire::Subscribe { interval_ms: wire::DEFAULT_INTERVAL_MS }))
        );
        let req = ProbeRequest {
            gpu: 1,
            steps: vec![Step { label: "layer 0 weights".into(), bytes: 10 }, Step { label: "KV".into(), bytes: 5 }],
        };
        let Ok(wire::ClientMessage::ProbeStart(s)) = wire::ClientMessage::decode(&req.encode()) else {
            panic!("start")
        };
        assert_eq!((s.gpu, s.mode, s.steps.len(), s.confirm_bytes), (1, wire::ProbeMode::Plan, 2, Some(15)));
        assert_eq!(s.requested_bytes(), Some(15));
        assert_eq!(
            wire::ClientMessage::decode(&probe_cancel(Some(7))),
            Ok(wire::ClientMessage::ProbeCancel(wire::ProbeCancel { probe_id: Some(7) }))
        );
        assert_eq!(
            wire::ClientMessage::decode(&probe_cancel(None)),
            Ok(wire::ClientMessage::ProbeCancel(wire::ProbeCancel { probe_id: None }))
        );
    }
}
