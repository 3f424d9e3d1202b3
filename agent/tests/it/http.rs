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

/// A raw GET: the status line and headers (lower-cased names), and the body.
async fn get_full(
    addr: std::net::SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// The page as a static host should serve it: the precompressed sibling the
/// browser accepts, a strong ETag per encoding, and 304 on a second visit.
#[tokio::test]
async fn the_page_is_served_precompressed_and_revalidated() {
    let dir = std::env::temp_dir().join(format!("headroom-web-enc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), "<title>Headroom</title>").unwrap();
    std::fs::write(dir.join("web.js"), "the script, as written").unwrap();
    std::fs::write(dir.join("web.js.gz"), "gzip of the script").unwrap();
    std::fs::write(dir.join("web.js.br"), "brotli of the script").unwrap();
    let mut config = support::config();
    config.web = agent::server::web::WebRoot::Dir(dir.clone());
    let served = support::start_with(config).await;
    let chrome = [("Accept-Encoding", "gzip, deflate, br, zstd")];

    let (status, h, body) = get_full(served.addr, "/web.js", &chrome).await;
    assert_eq!((status, body.as_str()), (200, "brotli of the script"));
    assert_eq!(header(&h, "content-encoding"), Some("br"));
    assert_eq!(header(&h, "content-type"), Some("text/javascript; charset=utf-8"));
    assert_eq!(header(&h, "vary"), Some("accept-encoding"));
    assert_eq!(header(&h, "cache-control"), Some("no-cache"));
    let tag = header(&h, "etag").unwrap().to_owned();
    assert!(tag.starts_with('"') && tag.ends_with("-br\""), "{tag}");

    let (_, h, body) = get_full(served.addr, "/web.js", &[("Accept-Encoding", "gzip")]).await;
    assert_eq!((header(&h, "content-encoding"), body.as_str()), (Some("gzip"), "gzip of the script"));
    assert_ne!(header(&h, "etag"), Some(tag.as_str()), "one tag per encoding");
    let (_, h, body) = get_full(served.addr, "/web.js", &[]).await;
    assert_eq!((header(&h, "content-encoding"), body.as_str()), (None, "the script, as written"));
    let (_, h, _) = get_full(served.addr, "/index.html", &chrome).await;
    assert_eq!(header(&h, "content-encoding"), None, "no sibling: as written");

    // The second visit: 304, no body, the same tag.
    let (status, h, body) = get_full(served.addr, "/web.js", &[chrome[0], ("If-None-Match", &tag)]).await;
    assert_eq!((status, body.as_str()), (304, ""));
    assert_eq!(header(&h, "etag"), Some(tag.as_str()));
    // A changed file is sent again.
    std::fs::write(dir.join("web.js"), "the script, changed").unwrap();
    assert_eq!(get_full(served.addr, "/web.js", &[chrome[0], ("If-None-Match", &tag)]).await.0, 200);
    // Siblings are not files of their own.
    assert_eq!(get_full(served.addr, "/web.js.br", &[]).await.0, 404);
    std::fs::remove_dir_all(dir).unwrap();
}
