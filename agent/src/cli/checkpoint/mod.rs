//! `--checkpoint PATH`, `--hf ORG/NAME[@REV][:PICK]` and `--ollama NAME`: a model from its
//! checkpoint's headers. Only headers are read — the first bytes of each
//! safetensors shard or GGUF part — never tensor data; the same reading runs
//! over local files ([`local`]) and HTTP Range requests to the Hub ([`hub`]).

pub mod hub;
pub mod local;
pub mod ollama;

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, bail};
use shared::checkpoint::read::{self, Step};
use shared::checkpoint::safetensors::Header;
use shared::checkpoint::{Checkpoint, CheckpointError, gguf};
use shared::model::Model;

pub use shared::checkpoint::read::CLI_CONCURRENCY as CONCURRENCY;

/// Where the files of a checkpoint are read from.
pub trait Files: Sync {
    /// How to name `file` in messages (a path or a URL).
    fn describe(&self, file: &str) -> String;
    /// A small text file (config.json, the index), `None` when absent.
    fn text(&self, file: &str) -> anyhow::Result<Option<String>>;
    /// Bytes `start .. start + len` of `file` (fewer at its end) and the file's size.
    fn range(&self, file: &str, start: u64, len: u64) -> anyhow::Result<(Vec<u8>, u64)>;
    /// The safetensors files when there is no index (a local folder lists
    /// them; the Hub has `model.safetensors`).
    fn safetensors_files(&self) -> anyhow::Result<Vec<String>>;
}

/// Reads `file` from its first bytes on, as `step` asks, until it parses.
fn header<T>(
    files: &dyn Files,
    file: &str,
    step: impl Fn(&[u8], Option<u64>) -> Result<Step<T>, CheckpointError>,
) -> anyhow::Result<T> {
    let named = |e: CheckpointError| anyhow::anyhow!("{}: {e}", files.describe(file));
    let (mut bytes, size) = files.range(file, 0, read::FIRST_READ)?;
    loop {
        match step(&bytes, Some(size)).map_err(named)? {
            Step::Done(t) => return Ok(t),
            Step::Read { start, len } => {
                let (more, _) = files.range(file, start, len)?;
                if more.is_empty() {
                    return Err(named(read::ended(bytes.len() as u64, start, len)));
                }
                bytes.extend_from_slice(&more);
            }
        }
    }
}

/// One safetensors shard's header.
pub fn safetensors_header(files: &dyn Files, file: &str) -> anyhow::Result<Header> {
    header(files, file, read::safetensors)
}

/// One GGUF file's header, read on in doubling steps until it parses.
pub fn gguf_header(files: &dyn Files, file: &str) -> anyhow::Result<gguf::File> {
    header(files, file, read::gguf)
}

/// Runs `read` over `items` with at most [`CONCURRENCY`] at once, keeping
/// their order, with a progress line on a terminal when there are many.
fn read_all<T: Send>(items: &[String], read: impl Fn(&str) -> anyhow::Result<T> + Sync) -> anyhow::Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<anyhow::Result<T>>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let progress = items.len() > 4 && std::io::stderr().is_terminal();
    std::thread::scope(|s| {
        for _ in 0..CONCURRENCY.min(items.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = read(item);
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(r);
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if progress {
                        eprint!("\rreading checkpoint headers: {n}/{}", items.len());
                    }
                }
            });
        }
    });
    if progress {
        eprintln!();
    }
    let all = results.into_inner().map_err(|_| anyhow::anyhow!("a header reader panicked"))?;
    all.into_iter().zip(items).map(|(r, item)| r.unwrap_or_else(|| bail!("{item} was not read"))).collect()
}

/// The config text (when there is one) and the checkpoint of a model.
pub fn read(files: &dyn Files, gguf_file: Option<&str>) -> anyhow::Result<(Option<String>, Checkpoint)> {
    if let Some(first) = gguf_file {
        let parts = read::Plan::gguf(first).files().to_vec();
        let headers = read_all(&parts, |p| gguf_header(files, p))?;
        let named = parts.into_iter().zip(headers).collect();
        let checkpoint = Checkpoint::from_gguf(named).with_context(|| files.describe(first))?;
        return Ok((None, checkpoint));
    }
    let config = files.text("config.json")?;
    let shards = match files.text("model.safetensors.index.json")? {
        Some(text) => read::Plan::from_index(&text)
            .with_context(|| files.describe("model.safetensors.index.json"))?
            .files()
            .to_vec(),
        None => files.safetensors_files()?,
    };
    if shards.is_empty() {
        bail!("{}: no safetensors files (and no model.safetensors.index.json)", files.describe(""));
    }
    let headers = read_all(&shards, |s| safetensors_header(files, s))?;
    let checkpoint = Checkpoint::from_safetensors(shards.into_iter().zip(headers).collect())?;
    Ok((config, checkpoint))
}

/// The model `--checkpoint PATH` or `--hf REPO` (with `--file`) names, as
/// `estimate` and `diagnose` read it; `config` (from `--config`) replaces the
/// checkpoint's own config.json. `None` when neither flag is given.
pub fn from_flags(
    path: Option<&std::path::Path>,
    hf: Option<&str>,
    file: Option<&str>,
    config: Option<&std::path::PathBuf>,
) -> anyhow::Result<Option<Model>> {
    let config = || config.map(|c| super::plan::read_input(c)).transpose();
    match (path, hf) {
        (Some(path), _) => {
            let resolved = local::resolve(path)?;
            model(path.display().to_string(), &resolved.files, resolved.gguf.as_deref(), config()?).map(Some)
        }
        (None, Some(repo)) => {
            let hub = hub::Hub::new(repo)?;
            let gguf = hub.gguf_file(file)?;
            let mut model = model(repo.to_owned(), &hub, gguf.as_deref(), config()?)?;
            model.repo = Some(hub.repo().to_owned());
            Ok(Some(model))
        }
        (None, None) => Ok(None),
    }
}

/// A model from checkpoint headers; `config` (from `--config`) replaces the
/// checkpoint's own config.json.
pub fn model(
    name: String,
    files: &dyn Files,
    gguf_file: Option<&str>,
    config: Option<String>,
) -> anyhow::Result<Model> {
    let (own, checkpoint) = read(files, gguf_file)?;
    let config = config.or(own);
    Model::from_checkpoint(name.clone(), config.as_deref(), &checkpoint).with_context(|| name)
}
