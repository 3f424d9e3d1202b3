//! A checkpoint on the Hugging Face Hub (or a mirror), read with HTTP Range
//! requests: `config.json`, the index and the first bytes of each shard, or
//! of the GGUF file that `ORG/NAME:TAG` picks from the repository's tree.
//!
//! As `huggingface_hub` and the `hf-hub` crate do: files live at
//! `{HF_ENDPOINT}/{repo}/resolve/{revision}/{file}` (endpoint default
//! `https://huggingface.co`, revision default `main`, `/` in a revision
//! escaped as `%2F`: [`shared::hub::HubRef`]); the token is `HF_TOKEN`, else
//! the file `$HF_HOME/token` (`~/.cache/huggingface/token`). The Hub answers a
//! resolve with a redirect to its CDN; redirects are followed (at most
//! [`MAX_REDIRECTS`]) and the token is not sent to another host. The file
//! list (`/api/models/{repo}/tree/{revision}?recursive=true`) comes in pages
//! linked by `Link: <…>; rel="next"` headers, which are followed.
//!
//! HTTP client: `ureq` 3 — blocking, small, rustls with webpki roots, no
//! async runtime to start for a CLI command; it is the client `hf-hub`'s own
//! sync API uses. One agent per run, shared by every reader, keeps its
//! connections: its pool holds one idle connection per reader for each host
//! (the Hub and its CDN), and every body is read to its end (ureq hands a
//! connection back to the pool only then), so a reader pays the TCP and TLS
//! handshakes once per host, not once per file. ureq speaks HTTP/1.1 only.

use std::io::Read;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, bail};
use shared::hub::{self, HubRef, MAX_TREE_PAGES};

use super::Files;

/// Redirects followed before a loop is assumed (ureq's default is 10 too).
pub const MAX_REDIRECTS: u32 = 10;
/// Small files read whole stay under this (the index of a 1,000-shard model is ~3 MB).
const MAX_TEXT_BYTES: u64 = 64 << 20;
/// What is read past the bytes asked for to reach a body's end, so that its
/// connection goes back to the pool: a 206 ends at once, an error page within
/// a few kB. A server that ignores `Range` and sends a whole shard gets its
/// connection closed instead (dropping a ureq body does that).
const DRAIN_BYTES: u64 = 64 << 10;
/// Hosts one read talks to: the endpoint, and the CDN it redirects shards
/// to (`cas-bridge.xethub.hf.co` or `cdn-lfs.hf.co` on huggingface.co), with
/// room for a mirror's second hop.
const HOSTS: usize = 4;
const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

#[derive(Debug)]
pub struct Hub {
    agent: ureq::Agent,
    endpoint: String,
    repo: String,
    revision: Option<String>,
    /// What follows `:` in `--hf`: a `.gguf` path or a quantisation tag.
    pick: Option<String>,
    token: Option<String>,
    /// `config.json` once fetched (`None` inside: the repository has none),
    /// so that deciding what to read and reading it ask for it once.
    config: OnceLock<Option<String>>,
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
    /// The repository `spec` names (`ORG/NAME[@REVISION][:PICK]`).
    pub fn new(spec: &str) -> anyhow::Result<Self> {
        let named = HubRef::parse(spec)
            .map_err(|e| anyhow::anyhow!("--hf `{spec}`: {e}; expected ORG/NAME[@REVISION][:TAG or :FILE.gguf]"))?;
        let endpoint = std::env::var("HF_ENDPOINT").ok().filter(|e| !e.trim().is_empty());
        let endpoint = endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT).trim_end_matches('/').to_owned();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(MAX_REDIRECTS)
            .timeout_global(Some(Duration::from_secs(120)))
            .user_agent(concat!("headroom/", env!("CARGO_PKG_VERSION")))
            // ureq keeps 3 idle connections per host by default: with more
            // readers than that, every reader past the third would connect anew.
            .max_idle_connections_per_host(super::CONCURRENCY)
            .max_idle_connections(super::CONCURRENCY * HOSTS)
            .build()
            .into();
        Ok(Self {
            agent,
            endpoint,
            repo: named.repo.to_owned(),
            revision: named.revision.map(str::to_owned),
            pick: named.pick.map(str::to_owned),
            token: token(),
            config: OnceLock::new(),
        })
    }

    /// The repository id alone (`ORG/NAME`), for the commands a report prints.
    pub fn repo(&self) -> &str {
        &self.repo
    }

    fn named(&self) -> HubRef<'_> {
        HubRef { repo: &self.repo, revision: self.revision.as_deref(), pick: self.pick.as_deref() }
    }

    fn url(&self, file: &str) -> String {
        self.named().file_url(&self.endpoint, file)
    }

    /// The GGUF file to read, if any: the one `:PICK` names (a path as
    /// given, a tag chosen from the tree), `--file`'s, or — in a repository
    /// without `config.json` — its only GGUF model.
    pub fn gguf_file(&self, file: Option<&str>) -> anyhow::Result<Option<String>> {
        match (self.pick.as_deref(), file) {
            (Some(pick), Some(file)) => {
                bail!("--hf `{}:{pick}` already picks a GGUF file: drop `:{pick}` or --file {file}", self.repo)
            }
            (Some(pick), None) if hub::is_gguf_path(pick) => Ok(Some(pick.to_owned())),
            (Some(pick), None) => {
                let files = self.tree()?;
                hub::choose_gguf(&self.repo, &files, pick).map(Some).map_err(|e| anyhow::anyhow!("{e}"))
            }
            (None, Some(file)) => Ok(Some(file.to_owned())),
            (None, None) => {
                if self.text("config.json")?.is_some() {
                    return Ok(None);
                }
                let files = self.tree()?;
                hub::lone_gguf(&self.repo, &files).map(Some).map_err(|e| anyhow::anyhow!("{e}"))
            }
        }
    }

    /// Every file path of the revision, following the listing's pages.
    fn tree(&self) -> anyhow::Result<Vec<String>> {
        let mut url = self.named().tree_url(&self.endpoint);
        let mut files = Vec::new();
        for _ in 0..MAX_TREE_PAGES {
            let Some(mut response) = self.get_url(&url, None)? else {
                bail!("{url}: HTTP 404 — no repository `{}` at revision `{}`", self.repo, self.named().revision());
            };
            let next =
                response.headers().get_all("link").iter().filter_map(|v| v.to_str().ok()).find_map(hub::next_page);
            let text = read_text(&mut response, &url)?;
            files.extend(hub::tree_files(&text).map_err(|e| anyhow::anyhow!("{url}: {e}"))?);
            match next {
                Some(n) => url = n,
                None => return Ok(files),
            }
        }
        bail!("{url}: more than {MAX_TREE_PAGES} pages of files (a `Link` loop?)")
    }

    fn get(&self, file: &str, range: Option<(u64, u64)>) -> anyhow::Result<Option<ureq::http::Response<ureq::Body>>> {
        self.get_url(&self.url(file), range)
    }

    fn get_url(
        &self,
        url: &str,
        range: Option<(u64, u64)>,
    ) -> anyhow::Result<Option<ureq::http::Response<ureq::Body>>> {
        let mut req = self.agent.get(url);
        if let Some((start, len)) = range {
            req = req.header("Range", format!("bytes={start}-{}", start + len.max(1) - 1));
        }
        // The token goes to the endpoint only (a `Link` could name another host).
        if let Some(t) = self.token.as_ref().filter(|_| url.starts_with(&format!("{}/", self.endpoint))) {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let mut response = req.call().map_err(|e| match e {
            ureq::Error::TooManyRedirects => {
                anyhow::anyhow!("{url}: more than {MAX_REDIRECTS} redirects (a redirect loop?)")
            }
            e => anyhow::anyhow!("{url}: {e}"),
        })?;
        let status = response.status().as_u16();
        if !(200..=299).contains(&status) {
            // The error's small body is read so that its connection is kept.
            drain(&mut response.body_mut().as_reader());
        }
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

/// A whole small body as text, refused when it is too large, an HTML page
/// or not UTF-8.
fn read_text(response: &mut ureq::http::Response<ureq::Body>, url: &str) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    response.body_mut().as_reader().take(MAX_TEXT_BYTES + 1).read_to_end(&mut bytes).with_context(|| url.to_owned())?;
    if bytes.len() as u64 > MAX_TEXT_BYTES {
        bail!("{url}: larger than {MAX_TEXT_BYTES} bytes, not a config, index or file list");
    }
    if looks_like_html(&bytes) {
        bail!("{url}: the server sent an HTML page instead of the file");
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{url}: not UTF-8 text"))
}

/// Reads what is left of a body, up to [`DRAIN_BYTES`]: ureq returns a
/// connection to its pool when a read reaches the body's end, and closes it
/// when the body is dropped before.
fn drain(reader: &mut impl Read) {
    // An error here only means the connection is not kept.
    let _ = std::io::copy(&mut reader.take(DRAIN_BYTES), &mut std::io::sink());
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
        if file == "config.json"
            && let Some(config) = self.config.get()
        {
            return Ok(config.clone());
        }
        let text = match self.get(file, None)? {
            Some(mut response) => Some(read_text(&mut response, &self.url(file))?),
            None => None,
        };
        if file == "config.json" {
            let _ = self.config.set(text.clone());
        }
        Ok(text)
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
        (&mut reader).take(len).read_to_end(&mut bytes).with_context(|| url.clone())?;
        drain(&mut reader);
        if start == 0 && looks_like_html(&bytes) {
            bail!("{url}: the server sent an HTML page instead of the file");
        }
        Ok((bytes, size))
    }

    /// Without an index, `model.safetensors`, unless the repository's tree
    /// lists none: then a GGUF repository (with config.json) is told to
    /// pick a file. An endpoint without the tree API (some mirrors) gets the
    /// read of `model.safetensors` and its answer.
    fn safetensors_files(&self) -> anyhow::Result<Vec<String>> {
        let single = "model.safetensors";
        match self.tree() {
            Ok(files) if !files.iter().any(|f| f == single) => bail!("{}", hub::no_safetensors(&self.repo, &files)),
            _ => Ok(vec![single.to_owned()]),
        }
    }
}
