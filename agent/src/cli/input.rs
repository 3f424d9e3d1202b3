//! Files and standard input the commands read, each up to a stated size: a
//! path like `/dev/zero` or a runaway pipe must end in an error, not in the
//! kernel's out-of-memory killer.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail};

/// A `config.json`, a safetensors index or header, an OOM log: the largest
/// real ones are a few MiB (a safetensors index of a 1T-parameter checkpoint
/// lists ~100k tensors in ~10 MiB), so 64 MiB is generous.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// A token file: one token, 16+ characters.
pub const MAX_TOKEN_FILE_BYTES: u64 = 4 * 1024;

/// Reads `path` (`-`: standard input) up to `limit` bytes; more is an error
/// that names the limit.
pub fn read_bytes(path: &Path, limit: u64) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        read_capped(std::io::stdin().lock(), limit, &mut bytes).context("reading standard input")?;
    } else {
        let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        read_capped(file, limit, &mut bytes).with_context(|| format!("reading {}", path.display()))?;
    }
    Ok(bytes)
}

/// Like [`read_bytes`], as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> anyhow::Result<String> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", describe(path)))
}

fn describe(path: &Path) -> String {
    if path.as_os_str() == "-" { "standard input".to_owned() } else { path.display().to_string() }
}

fn read_capped(source: impl Read, limit: u64, into: &mut Vec<u8>) -> anyhow::Result<()> {
    // One byte past the limit tells "exactly at the limit" from "over it".
    source.take(limit.saturating_add(1)).read_to_end(into)?;
    if into.len() as u64 > limit {
        bail!(
            "more than {} (headroom reads at most that much)",
            shared::units::format_bytes(limit, Default::default())
        );
    }
    Ok(())
}
