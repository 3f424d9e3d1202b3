//! A stand-in for the Hugging Face Hub on loopback: `/{repo}/resolve/{rev}/{file}`
//! with Range support, a redirect to a second "CDN" server on another port
//! (as the Hub redirects to its CDN), a gated repo answering 401 without the
//! right token, a missing file answering 404, a repo answering an HTML page
//! and one that redirects to itself forever; the file list
//! `/api/models/{repo}/tree/{rev}?recursive=true` in pages of
//! [`TREE_PAGE`] files linked by `Link: <…>; rel="next"` as the Hub pages it.
//! Only the revisions in [`REVISIONS`] exist. It counts the bytes it serves,
//! so tests can show that only headers were read, and the connections each
//! server accepts: connections are kept open between requests (HTTP/1.1
//! keep-alive, as the Hub and its CDN keep them), so a client may reuse them.
//! Std threads only.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A file: its first bytes, then zeros up to `size` (tensor data is never read).
#[derive(Debug, Clone)]
pub struct File {
    pub head: Vec<u8>,
    pub size: u64,
}

impl File {
    pub fn text(s: &str) -> Self {
        Self { head: s.as_bytes().to_vec(), size: s.len() as u64 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Public,
    /// 401 unless `Authorization: Bearer {GATED_TOKEN}`.
    Gated,
    /// Every file answers an HTML page with status 200.
    Html,
    /// Every file redirects to itself.
    Loop,
}

pub const GATED_TOKEN: &str = "hf_standin_secret";
/// The revisions every repo has, as they appear in a URL (`/` as `%2F`).
pub const REVISIONS: [&str; 2] = ["main", "refs%2Fpr%2F1"];
/// Files per page of a tree listing (the Hub's pages are larger; a small
/// page makes every test's listing span pages).
pub const TREE_PAGE: usize = 2;

#[derive(Debug, Default)]
pub struct Stats {
    pub requests: AtomicU64,
    pub body_bytes: AtomicU64,
    /// TCP connections accepted by the Hub (the endpoint).
    pub hub_connections: AtomicU64,
    /// TCP connections accepted by the CDN the Hub redirects shards to.
    pub cdn_connections: AtomicU64,
}

#[derive(Debug)]
pub struct StandIn {
    /// `http://127.0.0.1:PORT`: what `HF_ENDPOINT` is set to.
    pub endpoint: String,
    pub stats: Arc<Stats>,
}

type Repos = Arc<HashMap<String, (Kind, HashMap<String, File>)>>;

/// One repo: its id, kind and files.
pub type RepoSpec<'a> = (&'a str, Kind, Vec<(&'a str, File)>);

/// Starts the Hub and its CDN; they serve until the test process ends.
pub fn start(repos: Vec<RepoSpec>) -> StandIn {
    let repos: Repos = Arc::new(
        repos
            .into_iter()
            .map(|(name, kind, files)| {
                (name.to_owned(), (kind, files.into_iter().map(|(f, b)| (f.to_owned(), b)).collect()))
            })
            .collect(),
    );
    let stats = Arc::new(Stats::default());
    let cdn = TcpListener::bind("127.0.0.1:0").unwrap();
    let cdn_addr = format!("http://{}", cdn.local_addr().unwrap());
    let hub = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", hub.local_addr().unwrap());
    serve(cdn, repos.clone(), stats.clone(), None);
    serve(hub, repos, stats.clone(), Some(cdn_addr));
    StandIn { endpoint, stats }
}

fn serve(listener: TcpListener, repos: Repos, stats: Arc<Stats>, cdn: Option<String>) {
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let accepted = if cdn.is_some() { &stats.hub_connections } else { &stats.cdn_connections };
            accepted.fetch_add(1, Ordering::Relaxed);
            let (repos, stats, cdn) = (repos.clone(), stats.clone(), cdn.clone());
            std::thread::spawn(move || {
                let _ = connection(stream, &repos, &stats, cdn.as_deref());
            });
        }
    });
}

/// Answers the requests of one connection until the client closes it.
fn connection(stream: TcpStream, repos: &Repos, stats: &Stats, cdn: Option<&str>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut stream = stream;
    while handle(&mut reader, &mut stream, repos, stats, cdn)? {}
    Ok(())
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    // The page reads the stand-in from another origin, as it reads the Hub.
    head.push_str("Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Headers: Range, Authorization\r\n");
    head.push_str("Access-Control-Expose-Headers: Content-Range, Content-Length, Link\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    // One write: the head alone would wait, on a kept connection, for the
    // client's delayed ACK before the body (Nagle's algorithm).
    let mut response = head.into_bytes();
    response.extend_from_slice(body);
    stream.write_all(&response)
}

/// Answers one request; `false` when the client has closed the connection.
fn handle(
    reader: &mut BufReader<TcpStream>,
    stream: &mut TcpStream,
    repos: &Repos,
    stats: &Stats,
    cdn: Option<&str>,
) -> std::io::Result<bool> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(false);
    }
    respond_to(&line, reader, stream, repos, stats, cdn)?;
    Ok(true)
}

fn respond_to(
    line: &str,
    reader: &mut BufReader<TcpStream>,
    stream: &mut TcpStream,
    repos: &Repos,
    stats: &Stats,
    cdn: Option<&str>,
) -> std::io::Result<()> {
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    stats.requests.fetch_add(1, Ordering::Relaxed);
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("/").to_owned();
    if method == "OPTIONS" {
        return respond(stream, "204 No Content", &[], b"");
    }
    if let Some(tree) = path.strip_prefix("/api/models/") {
        return list_tree(stream, repos, tree, &headers);
    }
    // /{org}/{name}/resolve/{rev}/{file…}
    let segments: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
    let [org, name, "resolve", rev, file] = segments.as_slice() else {
        return respond(stream, "404 Not Found", &[], b"Repository not found");
    };
    let Some((kind, files)) = repos.get(&format!("{org}/{name}")) else {
        return respond(stream, "404 Not Found", &[], b"Repository not found");
    };
    if !REVISIONS.contains(rev) {
        return respond(stream, "404 Not Found", &[("X-Error-Code", "RevisionNotFound".into())], b"Invalid rev id");
    }
    match kind {
        Kind::Html => {
            let page = b"<!DOCTYPE html><html><body>Sign in to continue</body></html>";
            return respond(stream, "200 OK", &[("Content-Type", "text/html; charset=utf-8".into())], page);
        }
        Kind::Loop => return respond(stream, "302 Found", &[("Location", path.clone())], b""),
        // The CDN's URLs are signed: only the Hub checks the token.
        Kind::Gated if cdn.is_some() && headers.get("authorization") != Some(&format!("Bearer {GATED_TOKEN}")) => {
            return respond(stream, "401 Unauthorized", &[], b"Access to model is restricted");
        }
        _ => {}
    }
    let Some(file) = files.get(*file) else {
        return respond(stream, "404 Not Found", &[("X-Error-Code", "EntryNotFound".into())], b"Entry not found");
    };
    // The Hub redirects large files to its CDN, on another host.
    if let Some(cdn) = cdn
        && file.size > 4096
    {
        return respond(stream, "302 Found", &[("Location", format!("{cdn}{path}"))], b"");
    }
    let range = headers.get("range").and_then(|r| r.strip_prefix("bytes=")).and_then(|r| {
        let (a, b) = r.split_once('-')?;
        let a: u64 = a.parse().ok()?;
        let b: u64 = if b.is_empty() { file.size.saturating_sub(1) } else { b.parse().ok()? };
        Some((a, b.min(file.size.saturating_sub(1))))
    });
    let slice =
        |a: u64, b: u64| -> Vec<u8> { (a..=b).map(|i| file.head.get(i as usize).copied().unwrap_or(0)).collect() };
    match range {
        Some((a, _)) if a >= file.size => respond(stream, "416 Range Not Satisfiable", &[], b""),
        Some((a, b)) => {
            let body = slice(a, b);
            stats.body_bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
            let cr = format!("bytes {a}-{b}/{}", file.size);
            respond(stream, "206 Partial Content", &[("Content-Range", cr)], &body)
        }
        None => {
            let body = if file.size == 0 { Vec::new() } else { slice(0, file.size - 1) };
            stats.body_bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
            respond(stream, "200 OK", &[], &body)
        }
    }
}

/// `{org}/{name}/tree/{rev}?recursive=true[&cursor=N]`: a page of the
/// repo's files as JSON, sorted by path, and a `Link` to the next page.
fn list_tree(
    stream: &mut TcpStream,
    repos: &Repos,
    tree: &str,
    headers: &HashMap<String, String>,
) -> std::io::Result<()> {
    let (route, query) = tree.split_once('?').unwrap_or((tree, ""));
    let segments: Vec<&str> = route.splitn(4, '/').collect();
    let [org, name, "tree", rev] = segments.as_slice() else {
        return respond(stream, "404 Not Found", &[], b"Not found");
    };
    let Some((kind, files)) = repos.get(&format!("{org}/{name}")) else {
        return respond(stream, "404 Not Found", &[], b"Repository not found");
    };
    if *kind == Kind::Gated && headers.get("authorization") != Some(&format!("Bearer {GATED_TOKEN}")) {
        return respond(stream, "401 Unauthorized", &[], b"Access to model is restricted");
    }
    if !REVISIONS.contains(rev) || !query.split('&').any(|q| q == "recursive=true") {
        return respond(stream, "404 Not Found", &[], b"Invalid rev id");
    }
    let cursor: usize = query.split('&').find_map(|q| q.strip_prefix("cursor=")?.parse().ok()).unwrap_or(0);
    let mut paths: Vec<(&String, &File)> = files.iter().collect();
    paths.sort_by(|a, b| a.0.cmp(b.0));
    let page: Vec<serde_json::Value> = paths
        .iter()
        .skip(cursor)
        .take(TREE_PAGE)
        .map(|(path, file)| serde_json::json!({"type": "file", "oid": "0", "size": file.size, "path": path}))
        .collect();
    // Folders are listed too, as the Hub lists them.
    let folders = paths.iter().filter_map(|(p, _)| p.rsplit_once('/').map(|(dir, _)| dir)).collect::<BTreeSet<_>>();
    let mut body: Vec<serde_json::Value> = if cursor == 0 {
        folders.iter().map(|d| serde_json::json!({"type": "directory", "path": d})).collect()
    } else {
        vec![]
    };
    body.extend(page);
    let mut link = Vec::new();
    if cursor + TREE_PAGE < paths.len() {
        let host = headers.get("host").map_or("", String::as_str);
        let next = format!("http://{host}/api/models/{route}?recursive=true&cursor={}", cursor + TREE_PAGE);
        link.push(("Link", format!("<{next}>; rel=\"next\"")));
    }
    link.push(("Content-Type", "application/json".into()));
    respond(stream, "200 OK", &link, serde_json::Value::Array(body).to_string().as_bytes())
}
