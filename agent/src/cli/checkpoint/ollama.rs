//! `--ollama NAME`: a model Ollama has pulled, read where Ollama keeps it.
//! A name is `[HOST/][NAMESPACE/]MODEL[:TAG]` (defaults `registry.ollama.ai`,
//! `library`, `latest`: types/model/name.go); its manifest is
//! `$OLLAMA_MODELS/manifests/HOST/NAMESPACE/MODEL/TAG` (default
//! `~/.ollama/models`, envconfig/config.go `Models`), whose layer of media
//! type `application/vnd.ollama.image.model` names the GGUF blob
//! `blobs/sha256-HEX` (manifest/paths.go `BlobsPath`), as Ollama v0.33 lays
//! them out. Only the blob's header is read.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

use super::local::Local;

/// A manifest is a few hundred bytes; this bounds a hostile one.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

#[derive(Debug)]
pub struct Pulled {
    pub files: Local,
    /// The GGUF blob's file name in `files` (`sha256-…`).
    pub gguf: String,
    /// The name as Ollama writes it in full.
    pub name: String,
    /// Whether the manifest has a projector layer (a separate GGUF).
    pub projector: bool,
}

#[derive(Deserialize)]
struct Manifest {
    layers: Vec<Layer>,
}

#[derive(Deserialize)]
struct Layer {
    #[serde(rename = "mediaType")]
    media_type: String,
    digest: String,
}

/// One part of a name, as types/model/name.go allows it: a letter, digit
/// or `_` first, then those and `extra`; 1 to `max` characters. No part
/// can be `..` or hold a `/`, so a name never leaves the manifests folder.
fn part<'a>(what: &str, text: &'a str, extra: &[u8], max: usize) -> anyhow::Result<&'a str> {
    let ok = !text.is_empty()
        && text.len() <= max
        && text
            .bytes()
            .enumerate()
            .all(|(i, b)| b.is_ascii_alphanumeric() || b == b'_' || (i > 0 && extra.contains(&b)));
    if !ok {
        bail!("`{text}` is not an Ollama {what}");
    }
    Ok(text)
}

/// `[HOST/][NAMESPACE/]MODEL[:TAG]` as (host, namespace, model, tag).
pub fn parse_name(name: &str) -> anyhow::Result<[String; 4]> {
    let name = name.trim();
    let (path, tag) = match (name.rfind(':'), name.rfind('/')) {
        (Some(c), slash) if slash.is_none_or(|s| c > s) => (&name[..c], &name[c + 1..]),
        _ => (name, "latest"),
    };
    let parts: Vec<&str> = path.split('/').collect();
    let (host, ns, model) = match parts.as_slice() {
        [m] => ("registry.ollama.ai", "library", *m),
        [n, m] => ("registry.ollama.ai", *n, *m),
        [h, n, m] => (*h, *n, *m),
        _ => bail!("`{name}` is not an Ollama model name ([HOST/][NAMESPACE/]MODEL[:TAG])"),
    };
    Ok([
        part("host", host, b"-_.:", 350)?.to_owned(),
        part("namespace", ns, b"-_", 80)?.to_owned(),
        part("model", model, b"-_.", 80)?.to_owned(),
        part("tag", tag, b"-_.", 80)?.to_owned(),
    ])
}

/// Where Ollama keeps its models: `OLLAMA_MODELS`, else `~/.ollama/models`.
pub fn models_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("OLLAMA_MODELS").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").context("neither OLLAMA_MODELS nor HOME is set")?;
    Ok(Path::new(&home).join(".ollama").join("models"))
}

/// The pulled model `name` in `models` (see [`models_dir`]).
pub fn resolve(models: &Path, name: &str) -> anyhow::Result<Pulled> {
    let [host, ns, model, tag] = parse_name(name)?;
    let manifest = models.join("manifests").join(&host).join(&ns).join(&model).join(&tag);
    let full = format!("{host}/{ns}/{model}:{tag}");
    let meta = std::fs::metadata(&manifest).with_context(|| {
        format!(
            "--ollama {full}: no manifest at {} (pull it with `ollama pull {name}`; a system service keeps its \
             models under /usr/share/ollama/.ollama/models: set OLLAMA_MODELS)",
            manifest.display()
        )
    })?;
    if meta.len() > MAX_MANIFEST_BYTES {
        bail!("{}: {} bytes is too large for a manifest", manifest.display(), meta.len());
    }
    let text = std::fs::read_to_string(&manifest).with_context(|| manifest.display().to_string())?;
    let m: Manifest = serde_json::from_str(&text).with_context(|| format!("{}: not a manifest", manifest.display()))?;
    let layer = |kind: &str| m.layers.iter().find(|l| l.media_type == format!("application/vnd.ollama.image.{kind}"));
    let Some(weights) = layer("model") else {
        bail!(
            "{}: no model layer (a safetensors or cloud model Ollama does not run through llama.cpp)",
            manifest.display()
        )
    };
    // manifest/paths.go: only `sha256[:-]` and 64 hex digits.
    let hex = weights.digest.strip_prefix("sha256:").or_else(|| weights.digest.strip_prefix("sha256-"));
    let Some(hex) = hex.filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())) else {
        bail!("{}: `{}` is not a sha256 digest", manifest.display(), weights.digest)
    };
    Ok(Pulled {
        files: Local::folder(models.join("blobs")),
        gguf: format!("sha256-{hex}"),
        name: full,
        projector: layer("projector").is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_ollamas_defaults() {
        assert_eq!(parse_name("qwen3").expect("valid"), ["registry.ollama.ai", "library", "qwen3", "latest"]);
        assert_eq!(parse_name("qwen3:30b-a3b").expect("valid")[3], "30b-a3b");
        assert_eq!(
            parse_name("hf.co/unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M").expect("valid"),
            ["hf.co", "unsloth", "Qwen3-30B-A3B-GGUF", "Q4_K_M"]
        );
        assert_eq!(parse_name("localhost:5000/me/m:v1").expect("valid")[0], "localhost:5000");
        for bad in ["", "../x", "a/../../etc", "a/b/c/d", "m:", ":t", "m:../x", "a b"] {
            assert!(parse_name(bad).is_err(), "{bad}");
        }
    }
}
