//! Probe allocations end to end on the simulated backend: the real server,
//! a real WebSocket client and the real `headroom probe-worker` child, whose
//! allocator is the simulated GPU. Plus the real CUDA worker on this machine,
//! which must fail cleanly where there is no CUDA.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use shared::protocol::{
    ClientMessage, ErrorCode, ProbeCancel, ProbeMode, ProbeOutcome, ProbePhase, ProbeProgress, ProbeResult, ProbeStart,
    ProbeStarted, ProbeStep, ServerMessage,
};
use shared::units::{GIB, MIB};

use crate::support::{self, TestServer, Ws, recv, send, subscribe};

fn config() -> agent::server::ServerConfig {
    let mut config = support::config();
    config.probes.worker = PathBuf::from(env!("CARGO_BIN_EXE_headroom"));
    config.probes.sim_step_delay = Duration::ZERO;
    config.probes.allow_full_probes = true;
    config.probes.rate_burst = 100;
    config
}

async fn server(f: impl FnOnce(&mut agent::server::ServerConfig)) -> TestServer {
    let mut config = config();
    f(&mut config);
    support::start_with(config).await
}

fn probe(gpu: u32, mode: ProbeMode, bytes: u64) -> ProbeStart {
    ProbeStart {
        gpu,
        mode,
        bytes: Some(bytes),
        steps: Vec::new(),
        chunk_bytes: None,
        hold_ms: Some(0),
        confirm_bytes: Some(bytes),
    }
}

fn plan(gpu: u32, steps: usize, step_bytes: u64) -> ProbeStart {
    let steps: Vec<ProbeStep> =
        (0..steps).map(|i| ProbeStep { label: format!("layer {i} weights"), bytes: step_bytes }).collect();
    let total = step_bytes * steps.len() as u64;
    ProbeStart { steps, bytes: None, confirm_bytes: Some(total), ..probe(gpu, ProbeMode::Plan, total) }
}

/// The next message that is not a sample.
async fn next(ws: &mut Ws) -> ServerMessage {
    loop {
        match recv(ws).await {
            ServerMessage::Sample(_) => continue,
            other => return other,
        }
    }
}

async fn start(ws: &mut Ws, start: ProbeStart) -> ServerMessage {
    send(ws, &ClientMessage::ProbeStart(start)).await;
    next(ws).await
}

async fn started(ws: &mut Ws, request: ProbeStart) -> ProbeStarted {
    match start(ws, request).await {
        ServerMessage::ProbeStarted(s) => s,
        other => panic!("expected probe_started, got {other:?}"),
    }
}

fn refused(message: ServerMessage) -> ErrorCode {
    match message {
        ServerMessage::Error(e) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Progress until the result.
async fn finish(ws: &mut Ws) -> (Vec<ProbeProgress>, ProbeResult) {
    let mut progress = Vec::new();
    loop {
        match next(ws).await {
            ServerMessage::ProbeProgress(p) => progress.push(p),
            ServerMessage::ProbeResult(r) => return (progress, r),
            other => panic!("expected probe progress, got {other:?}"),
        }
    }
}

async fn first_allocation(ws: &mut Ws) {
    loop {
        match next(ws).await {
            ServerMessage::ProbeProgress(p) if p.phase == ProbePhase::Allocate => return,
            ServerMessage::ProbeProgress(_) => continue,
            other => panic!("expected probe progress, got {other:?}"),
        }
    }
}

/// GPU `gpu`'s free memory from a sample.
async fn free_bytes(ws: &mut Ws, gpu: usize) -> u64 {
    send(ws, &subscribe(60_000)).await;
    loop {
        if let ServerMessage::Sample(s) = recv(ws).await {
            return s.gpus[gpu].memory.value().unwrap().free_bytes;
        }
    }
}

fn gone(pid: u32) -> bool {
    // Killed and reaped: no /proc entry (a zombie would still have one).
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

async fn wait_gone(pid: u32) {
    for _ in 0..100 {
        if gone(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("probe worker {pid} still runs");
}

#[tokio::test]
async fn welcome_advertises_the_probe_limits() {
    let server = server(|c| c.probes.allow_full_probes = false).await;
    let (_ws, welcome) = server.authed().await;
    let ServerMessage::Welcome(w) = welcome else { unreachable!() };
    assert!(w.probes.enabled && !w.probes.allow_full_probes);
    assert_eq!((w.probes.margin_bytes, w.probes.max_hold_ms), (GIB, 5000));
}

#[tokio::test]
async fn a_plan_probe_allocates_its_steps_in_order_and_measures_the_context() {
    let server = server(|_| {}).await;
    let (mut ws, _) = server.authed().await;
    let s = started(&mut ws, plan(0, 3, GIB)).await;
    assert_eq!((s.gpu, s.mode, s.requested_bytes, s.steps), (0, ProbeMode::Plan, 3 * GIB, 3));
    assert!(s.simulated && s.worker_pid.is_some());
    let (progress, result) = finish(&mut ws).await;
    assert_eq!(progress[0].phase, ProbePhase::Context);
    assert!(progress[0].context_bytes.unwrap() > 100 * MIB);
    let steps: Vec<(u32, &str, u64)> = progress
        .iter()
        .filter(|p| p.phase == ProbePhase::Allocate)
        .map(|p| (p.step, p.label.as_str(), p.held_bytes))
        .collect();
    assert_eq!(steps, [(1, "layer 0 weights", GIB), (2, "layer 1 weights", 2 * GIB), (3, "layer 2 weights", 3 * GIB)]);
    assert!(result.ok, "{result:?}");
    assert_eq!((result.outcome, result.probe_id), (ProbeOutcome::Completed, s.probe_id));
    assert_eq!((result.achieved_bytes, result.largest_block_bytes), (3 * GIB, GIB));
    assert_eq!(result.context_bytes, progress[0].context_bytes);
    assert!(result.free_after_bytes.unwrap() + result.context_bytes.unwrap() == result.free_before_bytes.unwrap());
    wait_gone(s.worker_pid.unwrap()).await;
}

#[tokio::test]
async fn full_probes_see_the_simulated_fragmentation() {
    let server = server(|_| {}).await;
    let (mut ws, _) = server.authed().await;
    // Leave slack for the simulated server starting up meanwhile.
    let bytes = free_bytes(&mut ws, 0).await - 3 * GIB;
    started(&mut ws, probe(0, ProbeMode::LargestBlock, bytes)).await;
    let (progress, largest) = finish(&mut ws).await;
    assert!(largest.ok && largest.outcome == ProbeOutcome::Completed, "{largest:?}");
    assert!(largest.largest_block_bytes > 0 && largest.largest_block_bytes % (2 * MIB) == 0);
    assert!(largest.largest_block_bytes < bytes, "fragmented: the largest block is less than free");
    assert!(progress.len() < 40, "a binary search, not a scan: {}", progress.len());
    started(&mut ws, ProbeStart { chunk_bytes: Some(GIB), ..probe(0, ProbeMode::MaxTotal, bytes) }).await;
    let (_, total) = finish(&mut ws).await;
    assert!(total.ok, "{total:?}");
    assert!(
        total.achieved_bytes > largest.largest_block_bytes,
        "{} vs {}",
        total.achieved_bytes,
        largest.largest_block_bytes
    );
    assert!(total.achieved_bytes <= bytes);
    assert!(total.context_bytes.is_some_and(|c| c > 0));
}

#[tokio::test]
async fn probes_past_the_margin_or_not_allowed_are_refused() {
    let server = server(|c| c.probes.allow_full_probes = false).await;
    let (mut ws, _) = server.authed().await;
    let total = 85_520_809_984;
    assert_eq!(refused(start(&mut ws, probe(0, ProbeMode::Plan, total)).await), ErrorCode::ProbeOverMargin);
    let free = free_bytes(&mut ws, 0).await;
    let just_over = free - GIB + 4 * MIB;
    assert_eq!(refused(start(&mut ws, probe(0, ProbeMode::Plan, just_over)).await), ErrorCode::ProbeOverMargin);
    for mode in [ProbeMode::LargestBlock, ProbeMode::MaxTotal] {
        assert_eq!(refused(start(&mut ws, probe(0, mode, GIB)).await), ErrorCode::ProbeNotAllowed);
    }
    assert_eq!(refused(start(&mut ws, probe(7, ProbeMode::Plan, GIB)).await), ErrorCode::ProbeUnknownGpu);
}

#[tokio::test]
async fn a_probe_must_echo_its_bytes() {
    let server = server(|_| {}).await;
    let (mut ws, _) = server.authed().await;
    let missing = ProbeStart { confirm_bytes: None, ..probe(0, ProbeMode::Plan, GIB) };
    assert_eq!(refused(start(&mut ws, missing).await), ErrorCode::ProbeNotConfirmed);
    let wrong = ProbeStart { confirm_bytes: Some(2 * GIB), ..probe(0, ProbeMode::Plan, GIB) };
    assert_eq!(refused(start(&mut ws, wrong).await), ErrorCode::ProbeNotConfirmed);
    // A raw stray message without the field, then a good one: the connection survives.
    support::send_text(&mut ws, r#"{"type":"probe_start","data":{"gpu":0,"bytes":1073741824}}"#).await;
    assert_eq!(refused(next(&mut ws).await), ErrorCode::ProbeNotConfirmed);
    started(&mut ws, probe(0, ProbeMode::Plan, GIB)).await;
    assert!(finish(&mut ws).await.1.ok);
}

#[tokio::test]
async fn cancel_kills_the_worker_at_once() {
    let server = server(|c| c.probes.sim_step_delay = Duration::from_millis(200)).await;
    let (mut ws, _) = server.authed().await;
    send(&mut ws, &ClientMessage::ProbeCancel(ProbeCancel::default())).await;
    assert_eq!(refused(next(&mut ws).await), ErrorCode::ProbeNotRunning);
    let s = started(&mut ws, plan(0, 50, 100 * MIB)).await;
    first_allocation(&mut ws).await;
    send(&mut ws, &ClientMessage::ProbeCancel(ProbeCancel { probe_id: Some(s.probe_id) })).await;
    let (_, result) = finish(&mut ws).await;
    assert_eq!((result.outcome, result.ok), (ProbeOutcome::Cancelled, false));
    assert!(result.achieved_bytes >= 100 * MIB && result.duration_ms < 5000, "{result:?}");
    assert!(gone(s.worker_pid.unwrap()), "the worker is gone before the result");
    // The GPU is free again right away.
    started(&mut ws, plan(0, 1, MIB)).await;
}

#[tokio::test]
async fn a_client_that_disconnects_mid_probe_stops_it() {
    let server = server(|c| c.probes.sim_step_delay = Duration::from_millis(200)).await;
    let (mut ws, _) = server.authed().await;
    let s = started(&mut ws, plan(0, 50, 100 * MIB)).await;
    first_allocation(&mut ws).await;
    ws.close(None).await.unwrap();
    drop(ws);
    wait_gone(s.worker_pid.unwrap()).await;
    let (mut other, _) = server.authed().await;
    let mut answer = start(&mut other, plan(0, 1, MIB)).await;
    for _ in 0..50 {
        if !matches!(&answer, ServerMessage::Error(e) if e.code == ErrorCode::ProbeBusy) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        answer = start(&mut other, plan(0, 1, MIB)).await;
    }
    assert!(matches!(answer, ServerMessage::ProbeStarted(_)), "{answer:?}");
}

#[tokio::test]
async fn one_probe_per_gpu_and_per_connection() {
    let server = server(|c| c.probes.sim_step_delay = Duration::from_millis(200)).await;
    let (mut a, _) = server.authed().await;
    let (mut b, _) = server.authed().await;
    started(&mut a, plan(0, 50, 100 * MIB)).await;
    assert_eq!(refused(start(&mut b, plan(0, 1, MIB)).await), ErrorCode::ProbeBusy);
    assert_eq!(refused(start(&mut a, plan(1, 1, MIB)).await), ErrorCode::ProbeBusy);
    started(&mut b, plan(1, 1, MIB)).await;
    assert!(finish(&mut b).await.1.ok);
    send(&mut a, &ClientMessage::ProbeCancel(ProbeCancel::default())).await;
    assert_eq!(finish(&mut a).await.1.outcome, ProbeOutcome::Cancelled);
}

#[tokio::test]
async fn the_watchdog_kills_a_worker_past_its_deadline() {
    let server = server(|c| {
        c.probes.sim_step_delay = Duration::from_millis(300);
        c.probes.deadline = Duration::from_millis(500);
    })
    .await;
    let (mut ws, _) = server.authed().await;
    let s = started(&mut ws, plan(0, 10, 100 * MIB)).await;
    let (_, result) = finish(&mut ws).await;
    assert_eq!((result.outcome, result.ok), (ProbeOutcome::TimedOut, false));
    assert_eq!(result.error.unwrap().code, ErrorCode::ProbeTimedOut);
    assert!(result.duration_ms < 3000, "{}", result.duration_ms);
    assert!(gone(s.worker_pid.unwrap()));
}

#[tokio::test]
async fn probes_are_rate_limited_per_client() {
    let server = server(|c| {
        c.probes.rate_burst = 2;
        c.probes.rate_refill = Duration::from_secs(3600);
    })
    .await;
    let (mut ws, _) = server.authed().await;
    for _ in 0..2 {
        started(&mut ws, plan(0, 1, MIB)).await;
        finish(&mut ws).await;
    }
    assert_eq!(refused(start(&mut ws, plan(0, 1, MIB)).await), ErrorCode::ProbeRateLimited);
    // The limit is per address, not per connection.
    let (mut again, _) = server.authed().await;
    assert_eq!(refused(start(&mut again, plan(1, 1, MIB)).await), ErrorCode::ProbeRateLimited);
}

#[tokio::test]
async fn no_probes_means_none() {
    let server = server(|c| c.probes.enabled = false).await;
    let (mut ws, welcome) = server.authed().await;
    let ServerMessage::Welcome(w) = welcome else { unreachable!() };
    assert!(!w.probes.enabled);
    assert_eq!(refused(start(&mut ws, plan(0, 1, MIB)).await), ErrorCode::ProbesDisabled);
}

// ---------------------------------------------------------------------------
// The binary: the real worker, and `headroom probe`.

fn headroom(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_headroom")).args(args).output().unwrap()
}

#[test]
fn the_real_worker_fails_cleanly_without_cuda() {
    let job = r#"{"mode":"plan","steps":[{"label":"a","bytes":2097152}],"limit_bytes":2097152,"margin_bytes":0,"chunk_bytes":1073741824,"hold_ms":0,"device":{"cuda":{"uuid":null}}}"#;
    let mut child = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .arg("probe-worker")
        .env("CUDA_VISIBLE_DEVICES", "GPU-00000000-0000-0000-0000-000000000000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Keep stdin open while it runs: the worker exits when the agent's end closes.
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, format!("{job}\n").as_bytes()).unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    if out.status.success() {
        // A machine with CUDA (and that device hidden would not succeed): done.
        assert_eq!(last["event"], "done");
    } else {
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(last["event"], "error", "{stdout}");
        let code = last["code"].as_str().unwrap();
        assert!(["probe_cuda_unavailable", "probe_cuda_error"].contains(&code), "{code}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("headroom: "), "{stderr}");
    }
}

#[test]
fn headroom_probe_reports_a_missing_cuda_as_an_error() {
    let out = headroom(&["probe", "--gpu", "0", "--bytes", "64MiB", "--hold-ms", "0", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for field in ["mode", "ok", "achieved_bytes", "largest_block_bytes", "context_bytes", "duration_ms"] {
        assert!(json.get(field).is_some(), "{field} missing: {json}");
    }
    if !out.status.success() {
        assert_eq!(out.status.code(), Some(1));
        assert_eq!((json["ok"].as_bool(), json["outcome"].as_str()), (Some(false), Some("failed")));
        assert!(json["error"]["code"].as_str().unwrap().starts_with("probe_"), "{json}");
        assert!(stderr.lines().last().unwrap().starts_with("headroom: probe failed: "), "{stderr}");
    }
    // Without --json: one line saying why, no JSON.
    let out = headroom(&["probe", "--gpu", "0", "--bytes", "64MiB", "--hold-ms", "0"]);
    if !out.status.success() {
        assert!(String::from_utf8_lossy(&out.stderr).lines().last().unwrap().starts_with("headroom: "));
    }
}

#[test]
fn headroom_probe_simulates_every_mode() {
    let json = |args: &[&str]| -> serde_json::Value {
        let out = headroom(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let sim = ["--simulate", "h100-sxm", "--hold-ms", "0", "--json"];
    let plan = json(&[&["probe", "--model", "llama-3.1-8b", "--plan-gpu", "h100-sxm"][..], &sim].concat());
    assert_eq!((plan["mode"].as_str(), plan["ok"].as_bool()), (Some("plan"), Some(true)));
    assert!(plan["achieved_bytes"].as_u64().unwrap() > 15 * GIB, "{plan}");
    assert!(plan["context_bytes"].as_u64().unwrap() > 0);
    let largest = json(&[&["probe", "--mode", "largest-block"][..], &sim].concat());
    let total = json(&[&["probe", "--mode", "max-total"][..], &sim].concat());
    assert!(total["achieved_bytes"].as_u64() > largest["largest_block_bytes"].as_u64(), "{total} {largest}");
    // A plan bigger than the GPU: refused before anything is allocated.
    let out = headroom(&[&["probe", "--bytes", "90GiB"][..], &sim].concat());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("margin"));
}
