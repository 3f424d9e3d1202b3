//! `--checkpoint PATH` and `--hf ORG/NAME[@REV]`: a model from its
//! checkpoint's headers. Only headers are read — the first bytes of each
//! safetensors shard or GGUF part — never tensor data; the same reading runs
//! over local files ([`local`]) and HTTP Range requests to the Hub ([`hub`]).

pub mod hub;
pub mod local;

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, bail};
use shared::checkpoint::safetensors::{self, Header};
use shared::checkpoint::{Checkpoint, CheckpointError, gguf};
use shared::model::Model;

/// Bytes asked for first: most safetensors headers fit (hf-mem and the
/// Hub's own size read use the same first 100 kB); GGUF metadata is read on.
const FIRST_READ: u64 = 100_000;
/// The largest GGUF header read before giving up (tokenizer vocabularies of
/// 256k tokens with merges take ~10 MB; this leaves a wide margin).
const MAX_GGUF_HEADER: u64 = 256 << 20;
/// Shard headers read at once.
pub const CONCURRENCY: usize = 8;

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

/// One safetensors shard's header.
pub fn safetensors_header(files: &dyn Files, file: &str) -> anyhow::Result<Header> {
    let named = |e: CheckpointError| anyhow::anyhow!("{}: {e}", files.describe(file));
    let (mut bytes, size) = files.range(file, 0, FIRST_READ)?;
    let n = safetensors::header_len(&bytes, Some(size)).map_err(named)?;
    let end = 8 + n;
    if (bytes.len() as u64) < end {
        let have = bytes.len() as u64;
        let (rest, _) = files.range(file, have, end - have)?;
        bytes.extend_from_slice(&rest);
    }
    let json = bytes
        .get(8..end as usize)
        .ok_or_else(|| named(CheckpointError::Truncated { needed: end, have: bytes.len() as u64 }))?;
    safetensors::parse_header(json, Some(size)).map_err(named)
}

/// One GGUF file's header, read on in doubling steps until it parses.
pub fn gguf_header(files: &dyn Files, file: &str) -> anyhow::Result<gguf::File> {
    let named = |e: CheckpointError| anyhow::anyhow!("{}: {e}", files.describe(file));
    let (mut bytes, size) = files.range(file, 0, FIRST_READ.min(MAX_GGUF_HEADER))?;
    loop {
        match gguf::parse(&bytes, Some(size)) {
            Ok(f) => return Ok(f),
            Err(CheckpointError::Truncated { needed, have }) if have < size.min(MAX_GGUF_HEADER) => {
                let want = needed.max(have.saturating_mul(2)).min(size).min(MAX_GGUF_HEADER);
                if want <= have {
                    return Err(named(CheckpointError::Truncated { needed, have }));
                }
                let (more, _) = files.range(file, have, want - have)?;
                if more.is_empty() {
                    return Err(named(CheckpointError::Truncated { needed, have }));
                }
                bytes.extend_from_slice(&more);
            }
            Err(CheckpointError::Truncated { needed, .. }) if needed > MAX_GGUF_HEADER => {
                bail!("{}: the GGUF header would be larger than {MAX_GGUF_HEADER} bytes", files.describe(file))
            }
            Err(e) => return Err(named(e)),
        }
    }
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
        let parts = gguf::split_names(first).unwrap_or_else(|| vec![first.to_owned()]);
        let headers = read_all(&parts, |p| gguf_header(files, p))?;
        let named = parts.into_iter().zip(headers).collect();
        let checkpoint = Checkpoint::from_gguf(named).with_context(|| files.describe(first))?;
        return Ok((None, checkpoint));
    }
    let config = files.text("config.json")?;
    let shards = match files.text("model.safetensors.index.json")? {
        Some(text) => safetensors::parse_index(&text)
            .with_context(|| files.describe("model.safetensors.index.json"))?
            .files()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        None => files.safetensors_files()?,
    };
    if shards.is_empty() {
        bail!("{}: no safetensors files (and no model.safetensors.index.json)", files.describe(""));
    }
    let headers = read_all(&shards, |s| safetensors_header(files, s))?;
    let checkpoint = Checkpoint::from_safetensors(shards.into_iter().zip(headers).collect())?;
    Ok((config, checkpoint))
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
