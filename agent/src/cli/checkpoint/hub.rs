//! A checkpoint on the Hugging Face Hub (or a mirror), read with HTTP Range
//! requests: `config.json`, the index and the first bytes of each shard.
//!
//! As `huggingface_hub` and the `hf-hub` crate do: files live at
//! `{HF_ENDPOINT}/{repo}/resolve/{revision}/{file}` (endpoint default
//! `https://huggingface.co`, revision default `main`, `/` in a revision
//! escaped as `%2F`); the token is `HF_TOKEN`, else the file
//! `$HF_HOME/token` (`~/.cache/huggingface/token`). The Hub answers a
//! resolve with a redirect to its CDN; redirects are followed (at most
//! [`MAX_REDIRECTS`]) and the token is not sent to another host.
//!
//! HTTP client: `ureq` 3 — blocking, small, rustls with webpki roots, no
//! async runtime to start for a CLI command; it is the client `hf-hub`'s own
//! sync API uses.

use std::io::Read;
use std::time::Duration;

use anyhow::{Context, bail};

use super::Files;

/// Redirects followed before a loop is assumed (ureq's default is 10 too).
pub const MAX_REDIRECTS: u32 = 10;
/// Small files read whole stay under this (the index of a 1,000-shard model is ~3 MB).
const MAX_TEXT_BYTES: u64 = 64 << 20;
const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

#[derive(Debug)]
pub struct Hub {
    agent: ureq::Agent,
    /// `{endpoint}/{repo}/resolve/{revision}`.
    base: String,
    repo: String,
    token: Option<String>,
}

/// `ORG/NAME` or `ORG/NAME@REVISION`.
pub fn parse_repo(spec: &str) -> anyhow::Result<(String, String)> {
    let (repo, rev) = spec.split_once('@').unwrap_or((spec, "main"));
    let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    match repo.split_once('/') {
        Some((org, name)) if ok(org) && ok(name) && !name.contains("..") && !rev.is_empty() && !rev.contains("..") => {
            Ok((repo.to_owned(), rev.to_owned()))
        }
        _ => bail!("--hf `{spec}`: expected ORG/NAME or ORG/NAME@REVISION"),
    }
}

fn token() -> Option<String> {
    if let Some(t) = std::env::var("HF_TOKEN").ok().filter(|t| !t.trim().is_empty()) {
        return Some(t.trim().to_owned());
    }
    let home = std::env::var_os("HF_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache").join("huggingface")))?;
    std::fs::read_to_string(home.join("token")).ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

impl Hub {
    pub fn new(spec: &str) -> anyhow::Result<Self> {
        let (repo, rev) = parse_repo(spec)?;
        let endpoint = std::env::var("HF_ENDPOINT").ok().filter(|e| !e.trim().is_empty());
        let endpoint = endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT).trim_end_matches('/').to_owned();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(MAX_REDIRECTS)
            .timeout_global(Some(Duration::from_secs(120)))
            .user_agent(concat!("headroom/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let base = format!("{endpoint}/{repo}/resolve/{}", rev.replace('/', "%2F"));
        Ok(Self { agent, base, repo, token: token() })
    }

    fn url(&self, file: &str) -> String {
        format!("{}/{file}", self.base)
    }

    fn get(&self, file: &str, range: Option<(u64, u64)>) -> anyhow::Result<Option<ureq::http::Response<ureq::Body>>> {
        let url = self.url(file);
        let mut req = self.agent.get(&url);
        if let Some((start, len)) = range {
            req = req.header("Range", format!("bytes={start}-{}", start + len.max(1) - 1));
        }
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let response = req.call().map_err(|e| match e {
            ureq::Error::TooManyRedirects => {
                anyhow::anyhow!("{url}: more than {MAX_REDIRECTS} redirects (a redirect loop?)")
            }
            e => anyhow::anyhow!("{url}: {e}"),
        })?;
        let status = response.status().as_u16();
        match status {
            200..=299 => {}
            404 => return Ok(None),
            401 | 403 => bail!(
                "{url}: HTTP {status} — `{}` is gated or private: accept its licence on the Hub and set HF_TOKEN \
                 (or run `hf auth login`){}",
                self.repo,
                if self.token.is_some() { "; the token given has no access" } else { "" }
            ),
            416 => bail!("{url}: HTTP 416 — the range asked for is past the end of the file"),
            _ => bail!("{url}: HTTP {status}"),
        }
        let html = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.to_ascii_lowercase().contains("text/html"));
        if html {
            bail!("{url}: the server sent an HTML page instead of the file (a login, error or mirror page)");
        }
        Ok(Some(response))
    }
}

fn looks_like_html(bytes: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).trim_start().to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

impl Files for Hub {
    fn describe(&self, file: &str) -> String {
        self.url(file)
    }

    fn text(&self, file: &str) -> anyhow::Result<Option<String>> {
        let Some(mut response) = self.get(file, None)? else { return Ok(None) };
        let mut bytes = Vec::new();
        response
            .body_mut()
            .as_reader()
            .take(MAX_TEXT_BYTES + 1)
            .read_to_end(&mut bytes)
            .with_context(|| self.url(file))?;
        if bytes.len() as u64 > MAX_TEXT_BYTES {
            bail!("{}: larger than {MAX_TEXT_BYTES} bytes, not a config or index", self.url(file));
        }
        if looks_like_html(&bytes) {
            bail!("{}: the server sent an HTML page instead of the file", self.url(file));
        }
        String::from_utf8(bytes).map(Some).map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", self.url(file)))
    }

    fn range(&self, file: &str, start: u64, len: u64) -> anyhow::Result<(Vec<u8>, u64)> {
        let url = self.url(file);
        let Some(mut response) = self.get(file, Some((start, len)))? else {
            bail!("{url}: HTTP 404 — no such file in `{}` (check the name and the revision)", self.repo);
        };
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let partial = response.status().as_u16() == 206;
        // `Content-Range: bytes 0-99999/4976698672` gives the file's size.
        let size = match (partial, header("content-range"), header("content-length")) {
            (true, Some(range), _) => range.rsplit('/').next().and_then(|s| s.trim().parse::<u64>().ok()),
            (false, _, Some(length)) if start == 0 => length.trim().parse().ok(),
            _ => None,
        };
        let Some(size) = size else {
            bail!("{url}: the server answered a Range request without the file's size (Content-Range)");
        };
        // A server that ignores Range sends the whole file: read only what was asked.
        let skip = if partial { 0 } else { start };
        let mut reader = response.body_mut().as_reader();
        std::io::copy(&mut (&mut reader).take(skip), &mut std::io::sink()).with_context(|| url.clone())?;
        let mut bytes = Vec::new();
        reader.take(len).read_to_end(&mut bytes).with_context(|| url.clone())?;
        if start == 0 && looks_like_html(&bytes) {
            bail!("{url}: the server sent an HTML page instead of the file");
        }
        Ok((bytes, size))
    }

    fn safetensors_files(&self) -> anyhow::Result<Vec<String>> {
        Ok(vec!["model.safetensors".to_owned()])
    }
}
