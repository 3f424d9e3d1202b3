//! The HTTP routes: health, snapshot, metrics, the page.

use shared::protocol::{ErrorMessage, Health, Snapshot};

use crate::support::{self, TOKEN};

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

#[tokio::test]
async fn health_needs_no_token_and_says_simulated() {
    let server = support::start().await;
    let (status, body) = server.get("/api/health", &[]).await;
    assert_eq!(status, 200);
    let health: Health = serde_json::from_str(&body).unwrap();
    assert!(health.simulated);
}

#[tokio::test]
async fn snapshot_needs_the_bearer_token() {
    let server = support::start().await;
    let (status, body) = server.get("/api/snapshot", &[]).await;
    assert_eq!(status, 401);
    let error: ErrorMessage = serde_json::from_str(&body).unwrap();
    assert_eq!(error.code, shared::protocol::ErrorCode::Unauthorized);
    let (status, body) = server.get("/api/snapshot", &[("Authorization", &bearer())]).await;
    assert_eq!(status, 200);
    let snapshot: Snapshot = serde_json::from_str(&body).unwrap();
    assert!(snapshot.host.simulated && snapshot.sample.simulated);
    assert_eq!(snapshot.sample.gpus.len(), 2);
}

#[tokio::test]
async fn metrics_are_prometheus_text_labelled_simulated() {
    let server = support::start().await;
    assert_eq!(server.get("/metrics", &[]).await.0, 401);
    let (status, body) = server.get("/metrics", &[("Authorization", &bearer())]).await;
    assert_eq!(status, 200);
    for family in [
        "headroom_gpu_memory_total_bytes",
        "headroom_gpu_memory_used_bytes",
        "headroom_gpu_memory_free_bytes",
        "headroom_gpu_utilization_ratio",
        "headroom_gpu_temperature_celsius",
        "headroom_gpu_power_draw_watts",
    ] {
        assert!(body.contains(&format!("# TYPE {family} gauge")), "{family} missing:\n{body}");
    }
    assert!(body.contains(r#"simulated="true""#));
    // Every sample line is `name{labels} number`.
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }
    let mut config = support::config();
    config.public_metrics = true;
    let open = support::start_with(config).await;
    assert_eq!(open.get("/metrics", &[]).await.0, 200);
}

#[tokio::test]
async fn foreign_hosts_are_refused_everywhere() {
    let server = support::start().await;
    let (status, body) = server.get("/api/health", &[("Host", "rebind.evil.example")]).await;
    assert_eq!(status, 403);
    assert!(body.contains("forbidden_host"));
    assert_eq!(server.get("/api/health", &[("Host", "localhost:7878")]).await.0, 200);
}

#[tokio::test]
async fn the_page_or_a_clear_message() {
    let server = support::start().await;
    let (status, body) = server.get("/", &[]).await;
    assert_eq!(status, 200);
    assert!(body.contains("built without the calculator page") && body.contains("simulated"), "{body}");
    assert_eq!(server.get("/app.js", &[]).await.0, 404);

    let dir = std::env::temp_dir().join(format!("headroom-web-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("index.html"), "<title>Headroom</title>").unwrap();
    std::fs::write(dir.join("pkg/app.wasm"), b"\0asm").unwrap();
    let mut config = support::config();
    config.web = agent::server::web::WebRoot::Dir(dir.clone());
    let served = support::start_with(config).await;
    assert_eq!(served.get("/", &[]).await, (200, "<title>Headroom</title>".into()));
    assert_eq!(served.get("/pkg/app.wasm", &[]).await.0, 200);
    assert_eq!(served.get("/../Cargo.toml", &[]).await.0, 404);
    std::fs::remove_dir_all(dir).unwrap();
}
