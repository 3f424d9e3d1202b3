//! The calculator page, served by the agent itself so page and WebSocket
//! share an origin (no mixed content, no local-network prompt, no CORS).
//!
//! Release builds embed `dist/` when it exists at build time (see `build.rs`).
//! Otherwise the page is read from a directory at run time (`--web-dir`, or
//! the workspace's `dist/` in development), and without either `GET /` says
//! how to build it.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, Uri, header};
use axum::response::{Html, IntoResponse, Response};

use super::{ApiError, AppState};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/dist.rs"));
}

/// Where the page comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebRoot {
    /// Compiled into the binary.
    Embedded,
    /// Read from this directory on each request.
    Dir(PathBuf),
    /// No page: `GET /` explains how to build it.
    Missing,
}

impl WebRoot {
    /// `dir` if given, else the embedded page, else the workspace's `dist/`
    /// when it exists (development builds), else `Missing`.
    pub fn detect(dir: Option<PathBuf>) -> Self {
        if let Some(dir) = dir {
            return WebRoot::Dir(dir);
        }
        if !embedded::FILES.is_empty() {
            return WebRoot::Embedded;
        }
        let dev = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist");
        if dev.join("index.html").is_file() { WebRoot::Dir(dev) } else { WebRoot::Missing }
    }

    pub fn describe(&self) -> String {
        match self {
            WebRoot::Embedded => format!("embedded ({} files)", embedded::FILES.len()),
            WebRoot::Dir(dir) => format!("from {}", dir.display()),
            WebRoot::Missing => "not built".to_owned(),
        }
    }
}

pub async fn index(State(state): State<AppState>) -> Response {
    match file(&state.config().web, "index.html").await {
        Some(response) => response,
        None => missing_page(state.sampler().host().simulated).into_response(),
    }
}

pub async fn asset(State(state): State<AppState>, uri: Uri) -> Result<Response, ApiError> {
    let path = uri.path().trim_start_matches('/');
    if !safe(path) {
        return Err(ApiError::NotFound);
    }
    file(&state.config().web, path).await.ok_or(ApiError::NotFound)
}

/// Only plain relative names: no `..`, no hidden files, no odd characters.
fn safe(path: &str) -> bool {
    !path.is_empty()
        && path.split('/').all(|part| !part.is_empty() && !part.starts_with('.'))
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'/'))
}

async fn file(root: &WebRoot, path: &str) -> Option<Response> {
    let body = match root {
        WebRoot::Embedded => {
            Body::from(embedded::FILES.iter().find(|(name, _)| *name == path).map(|(_, bytes)| *bytes)?)
        }
        WebRoot::Dir(dir) => Body::from(tokio::fs::read(dir.join(path)).await.ok()?),
        WebRoot::Missing => return None,
    };
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(path)));
    // index.html names hashed assets; it must never be cached stale.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Some(response)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn missing_page(simulated: bool) -> Html<String> {
    let mode =
        if simulated { " It is running the <strong>simulated</strong> backend (no NVIDIA driver found)." } else { "" };
    Html(format!(
        "<!doctype html><meta charset=utf-8><title>Headroom agent</title>\
         <h1>Headroom agent</h1>\
         <p>This agent was built without the calculator page.{mode}</p>\
         <p>Build the page with <code>cargo xtask dist</code>, then either rebuild the agent in release mode \
         (it embeds <code>dist/</code>) or start it with <code>--web-dir dist</code>.</p>\
         <p>The WebSocket (<code>/ws</code>), <code>/api/snapshot</code> and <code>/metrics</code> work regardless.</p>"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_are_served() {
        assert!(safe("index.html"));
        assert!(safe("pkg/web_bg.wasm"));
        for bad in ["", "../Cargo.toml", "a/../../b", ".env", "a//b", "a/.git/config", "a%2e%2e/b"] {
            assert!(!safe(bad), "{bad}");
        }
    }
}
