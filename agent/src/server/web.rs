//! The calculator page, served by the agent itself so page and WebSocket
//! share an origin (no mixed content, no local-network prompt, no CORS).
//!
//! Release builds embed `dist/` when it exists at build time (see `build.rs`).
//! Otherwise the page is read from a directory at run time (`--web-dir`, or
//! the workspace's `dist/` in development), and without either `GET /` says
//! how to build it.
//!
//! Served as a static host should, for people on the far side of an SSH
//! tunnel: the `.br` or `.gz` sibling `cargo xtask dist` wrote, as the
//! browser's `Accept-Encoding` allows (brotli first); a strong `ETag` per
//! file and encoding, and `If-None-Match` answered with `304 Not Modified`.
//! The file names are not content-hashed (the page loads its bundles by
//! name), so every file is revalidated (`no-cache`): a second visit
//! transfers only the 304s' headers.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};

use super::{ApiError, AppState};

mod embedded {
    use super::File;
    include!(concat!(env!("OUT_DIR"), "/dist.rs"));
}

/// One embedded file: its bytes, its precompressed siblings and its ETag
/// (FNV-1a of the bytes, in hex).
#[derive(Debug)]
pub struct File {
    pub name: &'static str,
    pub etag: &'static str,
    pub identity: &'static [u8],
    pub gzip: Option<&'static [u8]>,
    pub brotli: Option<&'static [u8]>,
}

/// How a response's body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Gzip,
    Brotli,
}

impl Encoding {
    fn suffix(self) -> &'static str {
        match self {
            Encoding::Identity => "",
            Encoding::Gzip => ".gz",
            Encoding::Brotli => ".br",
        }
    }

    /// The `Content-Encoding` token; none for identity.
    fn token(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Gzip => Some("gzip"),
            Encoding::Brotli => Some("br"),
        }
    }
}

/// The encodings `Accept-Encoding` allows, best first: brotli, then gzip
/// (RFC 9110 §12.5.3: a coding with `q=0` is refused; `*` stands for those
/// not named). Identity is always acceptable here.
pub fn accepted(accept_encoding: &str) -> Vec<Encoding> {
    let mut named: Vec<(String, bool)> = Vec::new();
    for part in accept_encoding.split(',') {
        let mut it = part.split(';');
        let coding = it.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused =
            it.any(|p| p.trim().strip_prefix("q=").is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)));
        if !coding.is_empty() {
            named.push((coding, !refused));
        }
    }
    let allows = |token: &str| match named.iter().find(|(c, _)| c == token) {
        Some((_, ok)) => *ok,
        None => named.iter().any(|(c, ok)| c == "*" && *ok),
    };
    let mut out: Vec<Encoding> =
        [Encoding::Brotli, Encoding::Gzip].into_iter().filter(|e| allows(e.token().unwrap_or(""))).collect();
    out.push(Encoding::Identity);
    out
}

/// The strong ETag of one encoding of a file whose content hashes to `hash`.
fn etag(hash: &str, encoding: Encoding) -> String {
    format!("\"{hash}{}\"", encoding.token().map(|t| format!("-{t}")).unwrap_or_default())
}

/// FNV-1a of `bytes` in hex, as `build.rs` computes it for embedded files.
fn content_hash(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{h:016x}")
}

/// Whether `If-None-Match` names `tag` (or is `*`).
fn matches(if_none_match: &str, tag: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|t| t == "*" || t == tag || t.strip_prefix("W/") == Some(tag))
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
            WebRoot::Embedded => format!(
                "embedded ({} files, {} with brotli, {} with gzip)",
                embedded::FILES.len(),
                embedded::FILES.iter().filter(|f| f.brotli.is_some()).count(),
                embedded::FILES.iter().filter(|f| f.gzip.is_some()).count()
            ),
            WebRoot::Dir(dir) => format!("from {}", dir.display()),
            WebRoot::Missing => "not built".to_owned(),
        }
    }
}

pub async fn index(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match file(&state.config().web, "index.html", &headers).await {
        Some(response) => response,
        None => missing_page(state.sampler().host().simulated).into_response(),
    }
}

pub async fn asset(State(state): State<AppState>, uri: Uri, headers: HeaderMap) -> Result<Response, ApiError> {
    let path = uri.path().trim_start_matches('/');
    // The siblings are served through their file's name, never by their own.
    if !safe(path) || path.ends_with(".gz") || path.ends_with(".br") {
        return Err(ApiError::NotFound);
    }
    file(&state.config().web, path, &headers).await.ok_or(ApiError::NotFound)
}

/// Only plain relative names: no `..`, no hidden files, no odd characters.
fn safe(path: &str) -> bool {
    !path.is_empty()
        && path.split('/').all(|part| !part.is_empty() && !part.starts_with('.'))
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'/'))
}

async fn file(root: &WebRoot, path: &str, request: &HeaderMap) -> Option<Response> {
    let text = |name| request.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).unwrap_or("");
    let wanted = accepted(text(header::ACCEPT_ENCODING));
    // The best encoding there is a body for, and the file's content hash.
    let (encoding, body, hash): (Encoding, Body, String) = match root {
        WebRoot::Embedded => {
            let f = embedded::FILES.iter().find(|f| f.name == path)?;
            let pick = |e: Encoding| match e {
                Encoding::Identity => Some(f.identity),
                Encoding::Gzip => f.gzip,
                Encoding::Brotli => f.brotli,
            };
            let (e, bytes) = wanted.iter().find_map(|&e| Some((e, pick(e)?)))?;
            (e, Body::from(bytes), f.etag.to_owned())
        }
        WebRoot::Dir(dir) => {
            let identity = tokio::fs::read(dir.join(path)).await.ok()?;
            let hash = content_hash(&identity);
            let mut chosen = (Encoding::Identity, identity);
            for &e in wanted.iter().filter(|e| **e != Encoding::Identity) {
                if let Ok(bytes) = tokio::fs::read(dir.join(format!("{path}{}", e.suffix()))).await {
                    chosen = (e, bytes);
                    break;
                }
            }
            (chosen.0, Body::from(chosen.1), hash)
        }
        WebRoot::Missing => return None,
    };
    let tag = etag(&hash, encoding);
    let fresh = matches(text(header::IF_NONE_MATCH), &tag);
    let mut response = if fresh { StatusCode::NOT_MODIFIED.into_response() } else { body.into_response() };
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, v);
    }
    // The names are not content-hashed: every file is revalidated, and a
    // cache keeps one copy per encoding.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if !fresh {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(path)));
        if let Some(token) = encoding.token() {
            headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(token));
        }
    }
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
    fn accept_encoding_picks_brotli_then_gzip() {
        use Encoding::*;
        assert_eq!(accepted("gzip, deflate, br, zstd"), [Brotli, Gzip, Identity]);
        assert_eq!(accepted("gzip"), [Gzip, Identity]);
        assert_eq!(accepted(""), [Identity]);
        assert_eq!(accepted("br;q=0, gzip;q=0.5"), [Gzip, Identity]);
        assert_eq!(accepted("*"), [Brotli, Gzip, Identity]);
        assert_eq!(accepted("*;q=0.1, br;q=0"), [Gzip, Identity]);
        assert_eq!(accepted("BR ; q=1.0"), [Brotli, Identity]);
    }

    #[test]
    fn if_none_match_names_the_encodings_tag() {
        let br = etag("00ff", Encoding::Brotli);
        assert_eq!(br, "\"00ff-br\"");
        assert!(matches("\"00ff-br\"", &br) && matches("\"x\", \"00ff-br\"", &br) && matches("*", &br));
        assert!(matches("W/\"00ff-br\"", &br), "a weak comparison for If-None-Match");
        assert!(!matches("\"00ff\"", &br) && !matches("", &br));
        assert_eq!(content_hash(b""), "cbf29ce484222325");
    }

    #[test]
    fn only_plain_paths_are_served() {
        assert!(safe("index.html"));
        assert!(safe("pkg/web_bg.wasm"));
        for bad in ["", "../Cargo.toml", "a/../../b", ".env", "a//b", "a/.git/config", "a%2e%2e/b"] {
            assert!(!safe(bad), "{bad}");
        }
    }
}
