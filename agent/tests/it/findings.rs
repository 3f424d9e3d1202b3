//! The live diagnosis end to end: simulated scenarios through the real
//! sampler, server and WebSocket; the same findings in `/metrics`.

use std::time::{Duration, Instant};

use agent::telemetry::simulated::{Scenario, SimSpec};
use shared::protocol::{FindingCause, ServerMessage};

use crate::support::{self, TOKEN, recv_any, send, subscribe};

/// Reads `findings` messages until one names `cause`; the seconds it took.
async fn until_found(ws: &mut support::Ws, cause: FindingCause, within: Duration) -> (f64, shared::protocol::Findings) {
    let start = Instant::now();
    let mut last_seq = 0;
    loop {
        assert!(start.elapsed() < within, "no {cause:?} within {within:?}");
        match recv_any(ws).await {
            ServerMessage::Sample(s) => last_seq = s.seq,
            ServerMessage::Findings(f) => {
                assert_eq!(f.seq, last_seq, "each findings message follows its sample");
                for other in &f.findings {
                    assert_eq!(other.cause, cause, "only the scenario's cause: {other:?}");
                }
                if !f.findings.is_empty() {
                    return (start.elapsed().as_secs_f64(), f);
                }
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_process_is_found_over_the_websocket_and_in_metrics() {
    let spec = SimSpec::parse("rtx-4090").unwrap().with_scenario(Scenario::KvGrowth).unwrap();
    let server = support::start_simulating(support::config(), spec).await;
    let (mut ws, _) = server.authed().await;
    send(&mut ws, &subscribe(500)).await;
    // The climb starts 6 s into the scenario.
    let (after_s, found) = until_found(&mut ws, FindingCause::Growing, Duration::from_secs(20)).await;
    assert!(after_s <= 16.0, "found after {after_s} s");
    let f = &found.findings[0];
    assert_eq!((f.gpu, f.pid, f.number), (0, Some(41_000), 2));
    let to_capacity = f.growth.unwrap().seconds_to_capacity;
    assert!((10..=60).contains(&to_capacity), "{to_capacity} s");

    let (status, body) =
        support::http_get(server.addr, "/metrics", &[("Authorization", &format!("Bearer {TOKEN}"))]).await;
    assert_eq!(status, 200);
    let line = body.lines().find(|l| l.starts_with("headroom_gpu_finding{")).expect("a finding series");
    assert!(line.contains("cause=\"growing\"") && line.contains("pid=\"41000\"") && line.ends_with(" 1"), "{line}");
    let seconds = body.lines().find(|l| l.starts_with("headroom_gpu_seconds_to_capacity{")).expect("the projection");
    let value: u64 = seconds.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(value <= 60, "{seconds}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_server_gets_empty_findings() {
    let spec = SimSpec::parse("h100-sxm").unwrap().with_scenario(Scenario::Steady).unwrap();
    let server = support::start_simulating(support::config(), spec).await;
    let (mut ws, _) = server.authed().await;
    send(&mut ws, &subscribe(100)).await;
    let mut seen = 0;
    while seen < 20 {
        if let ServerMessage::Findings(f) = recv_any(&mut ws).await {
            assert!(f.findings.is_empty(), "{f:?}");
            seen += 1;
        }
    }
}
