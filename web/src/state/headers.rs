//! Checkpoint headers read in the browser, as `headroom estimate --hf` and
//! `--checkpoint` read them: over HTTP Range requests from the hub (its
//! first 100 kB, then the rest of a longer header, [`CONCURRENCY`] files at
//! once) or with `File.slice` from dropped files — nothing is uploaded. The
//! bytes go to `shared::checkpoint::read`, which says what to read next, and
//! the headers become the model the CLI builds (`Model::from_checkpoint`).
//!
//! Only the reader bundle (`src/bin/reader.rs`) reaches this module, so the
//! parsers and the layout code stay out of the page's first load.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Function, Promise, Uint8Array};
use leptos::prelude::window;
use shared::arch::Architecture;
use shared::checkpoint::read::{self, CONCURRENCY, Plan, Step};
use shared::checkpoint::{Checkpoint, CheckpointError};
use shared::hub::{HubRef, MAX_TREE_PAGES};
use shared::model::Model;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{JsFuture, future_to_promise};
use web_sys::{File, RequestInit, Response};

use crate::view_model::hub::{HubFailure, failure_message, file_url};
use crate::view_model::presets::encode_model;

/// Small files read whole (config.json, the index) stay under this, as the
/// CLI's (`agent/src/cli/checkpoint/hub.rs`, `MAX_TEXT_BYTES`).
const MAX_TEXT_BYTES: u64 = 64 << 20;

/// Where the files are.
#[derive(Debug)]
enum Source {
    Hub { base: String, id: String },
    Files(Vec<File>),
}

/// Why a read failed: the file is absent, or a message naming it.
#[derive(Debug)]
enum Failure {
    Missing,
    Other(String),
}

/// A header step as `shared::checkpoint::read` gives them.
type Stepper<T> = fn(&[u8], Option<u64>) -> Result<Step<T>, CheckpointError>;

impl Source {
    fn describe(&self, file: &str) -> String {
        match self {
            Self::Hub { base, id } => file_url(base, id, file),
            Self::Files(_) => file.to_owned(),
        }
    }

    fn file(&self, name: &str) -> Option<&File> {
        match self {
            Self::Files(files) => files.iter().find(|f| f.name() == name),
            Self::Hub { .. } => None,
        }
    }

    /// Bytes `start .. start + len` of `file` (fewer at its end) and the
    /// file's size when the source says it.
    async fn range(&self, file: &str, start: u64, len: u64) -> Result<(Vec<u8>, Option<u64>), Failure> {
        match self {
            Self::Hub { .. } => fetch_range(&self.describe(file), start, len).await,
            Self::Files(_) => {
                let f = self.file(file).ok_or(Failure::Missing)?;
                let size = f.size() as u64;
                let end = start.saturating_add(len).min(size);
                let blob = f
                    .slice_with_f64_and_f64(start.min(size) as f64, end as f64)
                    .map_err(|e| Failure::Other(format!("{file}: {}", why(&e))))?;
                let buffer = JsFuture::from(blob.array_buffer())
                    .await
                    .map_err(|e| Failure::Other(format!("{file}: the browser could not read it ({})", why(&e))))?;
                Ok((Uint8Array::new(&buffer).to_vec(), Some(size)))
            }
        }
    }

    /// A small text file, `None` when absent.
    async fn text(&self, file: &str) -> Result<Option<String>, String> {
        match self {
            Self::Hub { .. } => fetch_text(&self.describe(file)).await,
            Self::Files(_) => {
                let Some(f) = self.file(file) else { return Ok(None) };
                if f.size() as u64 > MAX_TEXT_BYTES {
                    return Err(format!("{file}: {} bytes is too large for a config or index", f.size()));
                }
                let text = JsFuture::from(f.text()).await.map_err(|e| format!("{file}: {}", why(&e)))?;
                text.as_string().map(Some).ok_or_else(|| format!("{file}: not text"))
            }
        }
    }

    fn missing(&self, file: &str) -> String {
        match self {
            Self::Hub { id, .. } => {
                format!("{}: HTTP 404 — no such file in `{id}`", self.describe(file))
            }
            Self::Files(_) => format!("{file} was not given"),
        }
    }
}

fn why(e: &JsValue) -> String {
    super::bundles::why(e)
}

/// One file's header, from its `first` bytes on, read on as `step` asks.
async fn header_from<T>(
    src: &Source,
    file: &str,
    first: (Vec<u8>, Option<u64>),
    step: Stepper<T>,
) -> Result<T, String> {
    let named = |e: CheckpointError| format!("{}: {e}", src.describe(file));
    let (mut bytes, size) = first;
    loop {
        match step(&bytes, size).map_err(named)? {
            Step::Done(t) => return Ok(t),
            Step::Read { start, len } => {
                let (more, _) = src.range(file, start, len).await.map_err(|f| failure(src, file, f))?;
                if more.is_empty() {
                    return Err(named(read::ended(bytes.len() as u64, start, len)));
                }
                bytes.extend_from_slice(&more);
            }
        }
    }
}

fn failure(src: &Source, file: &str, f: Failure) -> String {
    match f {
        Failure::Missing => src.missing(file),
        Failure::Other(m) => m,
    }
}

async fn header<T>(src: &Source, file: &str, step: Stepper<T>) -> Result<T, String> {
    let first = src.range(file, 0, read::FIRST_READ).await.map_err(|f| failure(src, file, f))?;
    header_from(src, file, first, step).await
}

/// Each file's header once read (or why not), in the files' order.
type Slots<T> = Rc<RefCell<Vec<Option<Result<T, String>>>>>;

/// Every file's header, [`CONCURRENCY`] at once, in order; `progress` is
/// called with (read, of) after each file. The first failure stops the rest.
async fn read_all<T: 'static>(
    src: &Rc<Source>,
    files: &[String],
    step: Stepper<T>,
    progress: Option<&Function>,
) -> Result<Vec<T>, String> {
    let files: Rc<Vec<String>> = Rc::new(files.to_vec());
    let next = Rc::new(Cell::new(0usize));
    let done = Rc::new(Cell::new(0u32));
    let results: Slots<T> = Rc::new(RefCell::new((0..files.len()).map(|_| None).collect()));
    let workers = Array::new();
    for _ in 0..CONCURRENCY.min(files.len()) {
        let (src, files, next, done, results) =
            (src.clone(), files.clone(), next.clone(), done.clone(), results.clone());
        let progress = progress.cloned();
        workers.push(&future_to_promise(async move {
            loop {
                let i = next.get();
                let Some(file) = files.get(i) else { break };
                next.set(i + 1);
                let r = header(&src, file, step).await;
                if r.is_err() {
                    next.set(files.len());
                }
                results.borrow_mut()[i] = Some(r);
                done.set(done.get() + 1);
                if let Some(p) = &progress {
                    let (n, of) = (done.get().to_string(), files.len().to_string());
                    let _ = p.call2(&JsValue::NULL, &n.into(), &of.into());
                }
            }
            Ok(JsValue::UNDEFINED)
        }));
    }
    JsFuture::from(Promise::all(&workers)).await.map_err(|e| why(&e))?;
    let all = std::mem::take(&mut *results.borrow_mut());
    let mut out = Vec::with_capacity(all.len());
    for r in all {
        match r {
            Some(r) => out.push(r?),
            // A file left unread after another failed: that failure came first.
            None => continue,
        }
    }
    Ok(out)
}

/// The checkpoint of `plan`'s files.
async fn checkpoint(src: &Rc<Source>, plan: &Plan, progress: Option<&Function>) -> Result<Checkpoint, String> {
    let names = plan.files();
    let first = names.first().map(String::as_str).unwrap_or_default();
    let built = match plan {
        Plan::Gguf(_) => {
            let headers = read_all(src, names, read::gguf, progress).await?;
            Checkpoint::from_gguf(names.iter().cloned().zip(headers).collect())
        }
        Plan::Safetensors(_) => {
            let headers = read_all(src, names, read::safetensors, progress).await?;
            Checkpoint::from_safetensors(names.iter().cloned().zip(headers).collect())
        }
    };
    built.map_err(|e| format!("{}: {e}", src.describe(first)))
}

/// What the page keeps of a model read from headers: its config text (empty
/// when none), its exact weight bytes and the encoded model.
pub type Read = (String, Option<u64>, Vec<u8>);

fn finish(name: &str, repo: Option<&str>, config: Option<&str>, checkpoint: &Checkpoint) -> Result<Read, String> {
    let mut model = Model::from_checkpoint(name, config, checkpoint).map_err(|e| format!("`{name}`: {e}"))?;
    model.repo = repo.map(str::to_owned);
    Ok((config.unwrap_or_default().to_owned(), model.checkpoint_bytes, encode_model(&model)?))
}

/// A hub model: config.json, then every shard header the index names (or
/// `model.safetensors`'s). Without safetensors files the weights are
/// estimated from the config, which must then be one a reader knows. A
/// GGUF file named after `:` (a path, or a tag chosen from the repository's
/// file list) is read instead, as is a repository's only GGUF model when it
/// has no config.json.
pub async fn hub(base: &str, id: &str, progress: Option<&Function>) -> Result<Read, String> {
    let named = HubRef::parse(id).map_err(|e| format!("`{id}`: {e}"))?;
    let src = Rc::new(Source::Hub { base: base.to_owned(), id: id.to_owned() });
    if let Some(pick) = named.pick {
        let file = if shared::hub::is_gguf_path(pick) {
            pick.to_owned()
        } else {
            shared::hub::choose_gguf(named.repo, &tree(base, &named).await?, pick)?
        };
        return gguf(&src, id, &file, named.repo, progress).await;
    }
    let config_url = file_url(base, id, "config.json");
    let config = match fetch(&config_url, None).await {
        Ok(r) => body_text(r).await.map_err(|e| format!("{config_url}: {e}"))?,
        // No config.json: a GGUF repository, read when it holds one model.
        Err(HubFailure::Status(404)) => {
            let Ok(files) = tree(base, &named).await else {
                return Err(failure_message(base, id, HubFailure::Status(404)));
            };
            let file = shared::hub::lone_gguf(named.repo, &files)?;
            return gguf(&src, id, &file, named.repo, progress).await;
        }
        // `fetch` reads an HTML answer as unreadable: say which.
        Err(HubFailure::Unreadable) => return Err(html_instead(&config_url)),
        Err(f) => return Err(failure_message(base, id, f)),
    };
    let index = src.text("model.safetensors.index.json").await?;
    let plan = match index {
        Some(text) => {
            Plan::from_index(&text).map_err(|e| format!("{}: {e}", src.describe("model.safetensors.index.json")))?
        }
        None => {
            let single = "model.safetensors";
            match src.range(single, 0, read::FIRST_READ).await {
                Ok(first) => {
                    let header = header_from(&src, single, first, read::safetensors).await?;
                    let checkpoint = Checkpoint::from_safetensors(vec![(single.to_owned(), header)])
                        .map_err(|e| format!("{}: {e}", src.describe(single)))?;
                    return finish(id, Some(named.repo), Some(&config), &checkpoint);
                }
                // No safetensors: a GGUF repository that kept its config.json
                // is told to pick a file, as `--hf` is; else the weights come
                // from the config's architecture.
                Err(Failure::Missing) => {
                    if let Ok(files) = tree(base, &named).await
                        && !shared::hub::gguf_models(&files).is_empty()
                    {
                        return Err(shared::hub::no_safetensors(named.repo, &files));
                    }
                    return Architecture::from_config_json(&config)
                        .map(|_| (config.clone(), None, Vec::new()))
                        .map_err(|e| format!("`{id}`: {e}"));
                }
                Err(Failure::Other(m)) => return Err(m),
            }
        }
    };
    let checkpoint = checkpoint(&src, &plan, progress).await?;
    finish(id, Some(named.repo), Some(&config), &checkpoint)
}

/// A GGUF model of the hub (`file`, the first part of a split one): its
/// parts' headers, as `--hf ORG/NAME:FILE` reads them. `id` is the text
/// the model goes by, `repo` the repository alone (for the commands the
/// page prints).
async fn gguf(src: &Rc<Source>, id: &str, file: &str, repo: &str, progress: Option<&Function>) -> Result<Read, String> {
    let checkpoint = checkpoint(src, &Plan::gguf(file), progress).await?;
    finish(id, Some(repo), None, &checkpoint)
}

/// Every file path of the model's revision: the Hub's tree listing, page by
/// page as its `Link: <…>; rel="next"` headers lead (where the browser may
/// read them).
async fn tree(base: &str, named: &HubRef<'_>) -> Result<Vec<String>, String> {
    let mut url = named.tree_url(base);
    let mut files = Vec::new();
    for _ in 0..MAX_TREE_PAGES {
        let response = fetch(&url, None).await.map_err(|f| match file_failure(&url, f) {
            Failure::Missing => format!("{url}: HTTP 404 — no `{}` at revision `{}`", named.repo, named.revision()),
            Failure::Other(m) => m,
        })?;
        let next = response.headers().get("link").ok().flatten().and_then(|l| shared::hub::next_page(&l));
        let text = body_text(response).await.map_err(|e| format!("{url}: {e}"))?;
        files.extend(shared::hub::tree_files(&text).map_err(|e| format!("{url}: {e}"))?);
        match next {
            Some(n) => url = n,
            None => return Ok(files),
        }
    }
    Err(format!("{url}: more than {MAX_TREE_PAGES} pages of files"))
}

/// Dropped files: a `.gguf` (with its other parts) or safetensors shards,
/// with `config.json` and `model.safetensors.index.json` when given. The
/// model is named after its first file.
pub async fn local(files: Vec<File>) -> Result<(String, Read), String> {
    let names: Vec<String> = files.iter().map(File::name).collect();
    let src = Rc::new(Source::Files(files));
    let index = src.text("model.safetensors.index.json").await?;
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let plan = Plan::dropped(&refs, index.as_deref()).map_err(|e| e.to_string())?;
    // The link carries the name (`file=`), which keeps no space at its ends.
    let name = plan.files().first().map(|f| f.trim().to_owned()).unwrap_or_default();
    let config = match plan {
        Plan::Gguf(_) => None,
        Plan::Safetensors(_) => src.text("config.json").await?,
    };
    let checkpoint = checkpoint(&src, &plan, None).await?;
    finish(&name, None, config.as_deref(), &checkpoint).map(|read| (name, read))
}

/// A GET of `url` (a `Range` when given): the response, or why not.
async fn fetch(url: &str, range: Option<(u64, u64)>) -> Result<Response, HubFailure> {
    let init = RequestInit::new();
    if let Some((start, len)) = range {
        let headers = js_sys::Object::new();
        let value = format!("bytes={start}-{}", start + len.max(1) - 1);
        js_sys::Reflect::set(&headers, &"Range".into(), &value.into()).map_err(|_| HubFailure::Unreachable)?;
        init.set_headers(&headers);
    }
    let response =
        JsFuture::from(window().fetch_with_str_and_init(url, &init)).await.map_err(|_| HubFailure::Unreachable)?;
    let response: Response = response.dyn_into().map_err(|_| HubFailure::Unreachable)?;
    if !response.ok() {
        return Err(HubFailure::Status(response.status()));
    }
    let html = response
        .headers()
        .get("content-type")
        .ok()
        .flatten()
        .is_some_and(|c| c.to_ascii_lowercase().contains("text/html"));
    if html {
        return Err(HubFailure::Unreadable);
    }
    Ok(response)
}

/// Why a request for a file other than config.json failed, naming its URL.
fn file_failure(url: &str, f: HubFailure) -> Failure {
    Failure::Other(match f {
        HubFailure::Status(404) => return Failure::Missing,
        HubFailure::Status(s @ (401 | 403)) => {
            format!("{url}: HTTP {s} — the repository is gated or private, and the page cannot send a token")
        }
        HubFailure::Status(416) => format!("{url}: HTTP 416 — the range asked for is past the end of the file"),
        HubFailure::Status(s) => format!("{url}: HTTP {s}"),
        HubFailure::Unreachable => format!("{url}: no answer (offline, or the browser blocked the request)"),
        HubFailure::Unreadable => html_instead(url),
    })
}

fn html_instead(url: &str) -> String {
    format!("{url}: the server sent an HTML page instead of the file (a login, error or mirror page)")
}

async fn body_text(response: Response) -> Result<String, String> {
    let text = response.text().map_err(|e| why(&e))?;
    let text = JsFuture::from(text).await.map_err(|e| why(&e))?.as_string().ok_or("not text")?;
    if text.len() as u64 > MAX_TEXT_BYTES {
        return Err(format!("larger than {MAX_TEXT_BYTES} bytes"));
    }
    if looks_like_html(text.as_bytes()) {
        return Err("an HTML page instead of the file".into());
    }
    Ok(text)
}

/// A small text file from the hub, `None` on 404.
async fn fetch_text(url: &str) -> Result<Option<String>, String> {
    match fetch(url, None).await {
        Ok(r) => body_text(r).await.map(Some).map_err(|e| format!("{url}: {e}")),
        Err(f) => match file_failure(url, f) {
            Failure::Missing => Ok(None),
            Failure::Other(m) => Err(m),
        },
    }
}

fn looks_like_html(bytes: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).trim_start().to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// Bytes `start .. start + len` of a hub file and its size: from
/// `Content-Range` (206), or `Content-Length` when a server ignores Range
/// and sends the whole file (only the range asked for is kept).
async fn fetch_range(url: &str, start: u64, len: u64) -> Result<(Vec<u8>, Option<u64>), Failure> {
    let response = fetch(url, Some((start, len))).await.map_err(|f| file_failure(url, f))?;
    let header = |name: &str| response.headers().get(name).ok().flatten();
    let partial = response.status() == 206;
    let size = match (partial, header("content-range"), header("content-length")) {
        (true, Some(range), _) => range.rsplit('/').next().and_then(|s| s.trim().parse::<u64>().ok()),
        (false, _, Some(length)) => length.trim().parse().ok(),
        _ => None,
    };
    let buffer = response.array_buffer().map_err(|e| Failure::Other(format!("{url}: {}", why(&e))))?;
    let buffer = JsFuture::from(buffer).await.map_err(|e| Failure::Other(format!("{url}: {}", why(&e))))?;
    let all = Uint8Array::new(&buffer);
    let skip = if partial { 0 } else { start.min(u64::from(all.length())) as u32 };
    let end = (u64::from(skip) + len).min(u64::from(all.length())) as u32;
    let bytes = all.subarray(skip, end).to_vec();
    if start == 0 && looks_like_html(&bytes) {
        return Err(file_failure(url, HubFailure::Unreadable));
    }
    Ok((bytes, size))
}
