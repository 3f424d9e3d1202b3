//! Fleets: the dcgm-exporter-compatible series (names, labels, units; a flag
//! turns them off), exposition that `promtool check metrics` accepts, and the
//! `/api/fleet` relay against a stand-in Prometheus (token, fixed queries,
//! bounded answers). The real Prometheus scrapes real agents in the e2e test.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use agent::fleet::{PrometheusUrl, QUERIES};
use agent::server::{DCGM_NAMES, Dcgm};
use shared::protocol::FleetSnapshot;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::deploy::tool;
use crate::support;

fn bearer() -> String {
    format!("Bearer {}", support::TOKEN)
}

async fn metrics(config: agent::server::ServerConfig) -> String {
    let server = support::start_with(config).await;
    let (status, body) = server.get("/metrics", &[("Authorization", &bearer())]).await;
    assert_eq!(status, 200);
    body
}

#[tokio::test]
async fn dcgm_series_carry_dcgm_exporter_names_labels_and_units() {
    let body = metrics(support::config()).await;
    for name in DCGM_NAMES {
        assert!(body.contains(&format!("# TYPE {name} gauge")), "{name} missing");
    }
    let line = |name: &str, gpu: u32| {
        body.lines().find(|l| l.starts_with(&format!("{name}{{gpu=\"{gpu}\","))).unwrap_or_else(|| panic!("{name}"))
    };
    let free = line("DCGM_FI_DEV_FB_FREE", 1);
    // dcgm-exporter's label order (render_metrics.go), then both host-name spellings and the driver.
    let keys: Vec<&str> = free[free.find('{').unwrap() + 1..free.find('}').unwrap()]
        .split("\",")
        .map(|kv| kv.split('=').next().unwrap())
        .collect();
    assert_eq!(
        keys,
        ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "hostname", "DCGM_FI_DRIVER_VERSION"]
    );
    assert!(free.contains("device=\"nvidia1\""), "{free}");
    // MiB, whole: the same reading as headroom's bytes.
    let value = |l: &str| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap();
    let bytes = value(body.lines().find(|l| l.starts_with("headroom_gpu_memory_free_bytes{gpu=\"1\"")).unwrap());
    assert_eq!(value(free), (bytes / 1048576.0).floor());
    let util = value(line("DCGM_FI_DEV_GPU_UTIL", 0));
    assert!((0.0..=100.0).contains(&util) && util.fract() == 0.0, "percent, whole: {util}");
    let sm = value(line("DCGM_FI_DEV_SM_CLOCK", 0));
    assert!(sm > 100.0 && sm < 5000.0, "MHz: {sm}");

    let mut off = support::config();
    off.dcgm_metrics = Dcgm::Off;
    let body = metrics(off).await;
    assert!(!body.contains("DCGM_FI_") && body.contains("headroom_gpu_memory_free_bytes"));
}

/// `promtool check metrics` on the output: no finding on the `headroom_*`
/// series; on the DCGM ones only the naming lint about `modelName`, the
/// camelCase label dcgm-exporter itself sends and its dashboards match on.
#[tokio::test]
async fn exposition_passes_promtool_check_metrics() {
    let Some(promtool) = tool("promtool") else { return };
    let check = |body: &str| {
        let mut child = Command::new(&promtool)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all_sync(body.as_bytes());
        let out = child.wait_with_output().unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let mut own = support::config();
    own.dcgm_metrics = Dcgm::Off;
    let body = metrics(own).await;
    let findings = check(&body);
    assert!(findings.trim().is_empty(), "promtool check metrics:\n{findings}\n---\n{body}");

    let body = metrics(support::config()).await;
    let findings = check(&body);
    let lint = "label names should be written in 'snake_case' not 'camelCase'";
    for line in findings.lines().filter(|l| !l.trim().is_empty()) {
        let (family, what) = line.split_once(' ').unwrap();
        assert!(DCGM_NAMES.contains(&family) && what == lint, "promtool check metrics: {line}\n---\n{body}");
    }
}

trait WriteAllSync {
    fn write_all_sync(self, bytes: &[u8]);
}

impl WriteAllSync for std::process::ChildStdin {
    fn write_all_sync(mut self, bytes: &[u8]) {
        std::io::Write::write_all(&mut self, bytes).unwrap();
    }
}

type Answer = Arc<dyn Fn(&str) -> (u16, String) + Send + Sync>;

/// A stand-in Prometheus: answers `/api/v1/query` with `answer(query)` and
/// records every query it was sent.
async fn fake_prometheus(answer: Answer) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let (answer, log) = (answer.clone(), log.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let mut len = 0;
                while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf[len..]).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => len += n,
                    }
                }
                let head = String::from_utf8_lossy(&buf[..len]).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("").to_owned();
                let query = target
                    .split_once("?query=")
                    .map(|(_, q)| form_urlencoded::parse(format!("q={q}").as_bytes()).next().unwrap().1.into_owned())
                    .unwrap_or_default();
                log.lock().unwrap().push(query.clone());
                let (status, body) = answer(&query);
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
            });
        }
    });
    (addr, seen)
}

fn vector(series: &[(&str, &str, f64)]) -> String {
    let result: Vec<serde_json::Value> = series
        .iter()
        .map(|(instance, gpu, v)| {
            serde_json::json!({
                "metric": {"instance": instance, "gpu": gpu, "UUID": format!("GPU-{instance}-{gpu}"),
                           "modelName": "NVIDIA L4", "Hostname": instance.split(':').next().unwrap()},
                "value": [1767225600.0, v.to_string()]
            })
        })
        .collect();
    serde_json::json!({"status": "success", "data": {"resultType": "vector", "result": result}}).to_string()
}

fn fleet_config(addr: SocketAddr) -> agent::server::ServerConfig {
    let mut config = support::config();
    config.prometheus = Some(PrometheusUrl::parse(&format!("http://{addr}")).unwrap());
    config
}

#[tokio::test]
async fn the_relay_asks_only_its_fixed_queries_and_marks_stale_gpus() {
    let answer: Answer = Arc::new(|q: &str| {
        let all = [("gpu1:7878", "0", 20000.0), ("gpu1:7878", "1", 100.0), ("gpu2:7878", "0", 22000.0)];
        let body = match QUERIES.iter().position(|x| *x == q) {
            Some(0) => vector(&all),
            Some(1) => vector(&[("gpu1:7878", "0", 2000.0), ("gpu1:7878", "1", 21000.0), ("gpu2:7878", "0", 500.0)]),
            Some(2) => vector(&[("gpu1:7878", "0", 500.0), ("gpu1:7878", "1", 500.0), ("gpu2:7878", "0", 500.0)]),
            // gpu2 stopped answering: not in the latest scrape.
            Some(3) => vector(&all[..2]),
            _ => return (400, r#"{"status":"error","error":"unexpected query"}"#.into()),
        };
        (200, body)
    });
    let (prom, seen) = fake_prometheus(answer).await;
    let server = support::start_with(fleet_config(prom)).await;
    assert_eq!(server.get("/api/fleet", &[]).await.0, 401, "the token is required");
    let (status, body) = server.get("/api/fleet?query=up", &[("Authorization", &bearer())]).await;
    assert_eq!(status, 200, "{body}");
    let snap: FleetSnapshot = serde_json::from_str(&body).unwrap();
    let rows: Vec<_> = snap.gpus.iter().map(|g| (g.host.as_str(), g.gpu.as_str(), g.stale)).collect();
    assert_eq!(rows, [("gpu1", "0", false), ("gpu1", "1", false), ("gpu2", "0", true)]);
    assert_eq!(snap.gpus[0].free_bytes, 20000 << 20);
    assert_eq!(snap.gpus[0].total_bytes, 22500 << 20);
    let mut asked = seen.lock().unwrap().clone();
    asked.sort();
    let mut fixed: Vec<String> = QUERIES.iter().map(|q| (*q).to_owned()).collect();
    fixed.sort();
    assert_eq!(asked, fixed, "the client's query string never reaches Prometheus");
    // A second request within the reuse window is served from the last round.
    assert_eq!(server.get("/api/fleet", &[("Authorization", &bearer())]).await.0, 200);
    assert_eq!(seen.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn a_missing_broken_or_oversized_prometheus_is_a_clear_error() {
    let server = support::start().await;
    let (status, body) = server.get("/api/fleet", &[("Authorization", &bearer())]).await;
    assert_eq!(status, 404);
    assert!(body.contains("fleet_not_configured"), "{body}");

    // Nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let server = support::start_with(fleet_config(closed)).await;
    let (status, body) = server.get("/api/fleet", &[("Authorization", &bearer())]).await;
    assert_eq!(status, 502);
    assert!(body.contains("prometheus_unavailable"), "{body}");

    for answer in [
        // Over the 8 MiB bound.
        Arc::new(|_: &str| (200u16, format!("{{\"status\":\"success\",\"pad\":\"{}\"}}", "x".repeat(9 << 20))))
            as Answer,
        Arc::new(|_: &str| (200, "<html>not prometheus</html>".to_owned())),
        Arc::new(|_: &str| (503, "{}".to_owned())),
    ] {
        let (prom, _) = fake_prometheus(answer).await;
        let server = support::start_with(fleet_config(prom)).await;
        let (status, body) = server.get("/api/fleet", &[("Authorization", &bearer())]).await;
        assert_eq!(status, 502, "{body}");
        assert!(!body.contains("pad") && !body.contains("html"), "nothing of Prometheus's answer leaks: {body}");
    }
}

#[tokio::test]
async fn other_origins_need_the_allowlist() {
    let (prom, _) = fake_prometheus(Arc::new(|_: &str| (200, vector(&[])))).await;
    let mut config = fleet_config(prom);
    config.allowed_origins = vec!["https://headroom.example".into()];
    let server = support::start_with(config).await;
    let auth = bearer();
    let (status, _) = server.get("/api/fleet", &[("Authorization", &auth), ("Origin", "https://evil.example")]).await;
    assert_eq!(status, 403);
    let (status, body) =
        server.get("/api/fleet", &[("Authorization", &auth), ("Origin", "https://headroom.example")]).await;
    assert_eq!(status, 200, "{body}");
}
