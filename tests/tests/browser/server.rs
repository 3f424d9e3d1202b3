//! A minimal static HTTP server: the bundle under `/app/` (a sub-path, to
//! prove the asset paths are relative) and a stand-in Hugging Face hub under
//! `/hub/`. Every page gets a small script that records console errors.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Collects errors and `console.error` calls into `window.__errors`.
const ERROR_HOOK: &str = "<script>window.__errors=[];\
addEventListener('error',e=>__errors.push('error: '+(e.message||e.type)));\
addEventListener('unhandledrejection',e=>__errors.push('rejection: '+e.reason));\
{const ce=console.error;console.error=(...a)=>{__errors.push('console.error: '+a.join(' '));ce(...a)};}</script>";

/// Files the stand-in hub serves: `owner/name/file` → (status, body).
pub type HubFiles = HashMap<String, (u16, String)>;

#[derive(Debug)]
pub struct Server {
    pub base: String,
}

impl Server {
    pub async fn start(dist: PathBuf, hub: HubFiles) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let state = Arc::new((dist, hub));
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let state = state.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let mut len = 0;
                    // Read the request head (bodies are never needed here).
                    while len < buf.len() {
                        match sock.read(&mut buf[len..]).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => len += n,
                        }
                        if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                            break;
                        }
                    }
                    let head = String::from_utf8_lossy(&buf[..len]);
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let (mut status, ctype, mut body) = respond(&state.0, &state.1, &path);
                    // Range requests (the page reads safetensors headers so).
                    let mut extra = String::new();
                    if let Some((a, b)) = range(&head)
                        && status == 200
                        && path.starts_with("/hub/")
                    {
                        let total = body.len();
                        let b = b.min(total.saturating_sub(1));
                        extra = format!("Content-Range: bytes {a}-{b}/{total}\r\n");
                        body = body.get(a..=b).unwrap_or(&[]).to_vec();
                        status = 206;
                    }
                    let reason = match status {
                        200 => "OK",
                        206 => "Partial Content",
                        403 => "Forbidden",
                        404 => "Not Found",
                        _ => "Error",
                    };
                    let head = format!(
                        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}\
                         Access-Control-Allow-Origin: *\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = sock.write_all(head.as_bytes()).await;
                    let _ = sock.write_all(&body).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        Ok(Self { base })
    }

    /// The page URL with a query (`""` for none).
    pub fn page(&self, query: &str) -> String {
        if query.is_empty() { format!("{}/app/", self.base) } else { format!("{}/app/?{query}", self.base) }
    }
}

/// `Range: bytes=a-b` of a request head.
fn range(head: &str) -> Option<(usize, usize)> {
    let line = head.lines().find(|l| l.to_ascii_lowercase().starts_with("range:"))?;
    let (a, b) = line.split_once('=')?.1.trim().split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn respond(dist: &std::path::Path, hub: &HubFiles, target: &str) -> (u16, &'static str, Vec<u8>) {
    let path = target.split('?').next().unwrap_or("/");
    if let Some(rest) = path.strip_prefix("/hub/") {
        // owner/name/resolve/main/file
        let key = rest.replacen("/resolve/main/", "/", 1);
        return match hub.get(&key) {
            Some((status, body)) => (*status, "application/json", body.clone().into_bytes()),
            None => (404, "text/plain", b"Entry not found".to_vec()),
        };
    }
    let Some(rel) = path.strip_prefix("/app/") else { return (404, "text/plain", b"not found".to_vec()) };
    let rel = if rel.is_empty() { "index.html" } else { rel };
    if rel.contains("..") || rel.contains('/') {
        return (404, "text/plain", b"not found".to_vec());
    }
    let Ok(mut bytes) = std::fs::read(dist.join(rel)) else { return (404, "text/plain", b"not found".to_vec()) };
    let ctype = match rel.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        _ => "application/octet-stream",
    };
    if rel == "index.html" {
        let html = String::from_utf8_lossy(&bytes).replacen("<head>", &format!("<head>{ERROR_HOOK}"), 1);
        bytes = html.into_bytes();
    }
    (200, ctype, bytes)
}
