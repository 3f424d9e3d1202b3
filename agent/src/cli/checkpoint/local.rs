//! A checkpoint on this machine: a folder with `config.json` and safetensors
//! files, a Hugging Face cache entry (`models--ORG--NAME`, resolved through
//! `refs/main` to its snapshot, the layout `hf-hub` and `huggingface_hub`
//! share), a `.safetensors` file, or a `.gguf` file (the first part of a
//! split model reads the rest beside it).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::Files;

/// Small files read whole (config.json, the index) stay under this.
const MAX_TEXT_BYTES: u64 = 64 << 20;

#[derive(Debug)]
pub struct Local {
    root: PathBuf,
    /// A single `.safetensors` file given directly.
    single: Option<String>,
}

/// What a path names.
#[derive(Debug)]
pub struct Resolved {
    pub files: Local,
    /// The `.gguf` file (first part) when the path is one.
    pub gguf: Option<String>,
}

impl Local {
    /// The files of one folder.
    pub fn folder(root: PathBuf) -> Self {
        Self { root, single: None }
    }
}

pub fn resolve(path: &Path) -> anyhow::Result<Resolved> {
    let meta = std::fs::metadata(path).with_context(|| format!("--checkpoint {}", path.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let parent = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    if meta.is_file() {
        return if name.ends_with(".gguf") {
            Ok(Resolved { files: Local { root: parent, single: None }, gguf: Some(name) })
        } else if name.ends_with(".safetensors") {
            Ok(Resolved { files: Local { root: parent, single: Some(name) }, gguf: None })
        } else {
            bail!("--checkpoint {}: expected a folder, a .safetensors or a .gguf file", path.display())
        };
    }
    let root = snapshot(path)?.unwrap_or_else(|| path.to_path_buf());
    // A folder holding only GGUF files: the first one (or first part).
    let local = Local { root, single: None };
    if local.safetensors_files()?.is_empty() && !local.root.join("model.safetensors.index.json").exists() {
        let mut ggufs = list(&local.root, ".gguf")?;
        ggufs.retain(|g| !g.contains("-of-") || g.contains("-00001-of-"));
        if let [one] = ggufs.as_slice() {
            return Ok(Resolved { gguf: Some(one.clone()), files: local });
        }
        if ggufs.len() > 1 {
            bail!(
                "{} holds several GGUF files ({}): name one with --checkpoint FILE",
                path.display(),
                ggufs.join(", ")
            );
        }
    }
    Ok(Resolved { files: local, gguf: None })
}

/// A Hugging Face cache entry resolves to the snapshot its `refs/main` names.
fn snapshot(path: &Path) -> anyhow::Result<Option<PathBuf>> {
    let refs = path.join("refs").join("main");
    if !path.join("snapshots").is_dir() || !refs.is_file() {
        return Ok(None);
    }
    let commit = std::fs::read_to_string(&refs).with_context(|| refs.display().to_string())?;
    let commit = commit.trim();
    if commit.is_empty() || commit.contains(['/', '\\', '.']) {
        bail!("{}: not a commit hash", refs.display());
    }
    Ok(Some(path.join("snapshots").join(commit)))
}

fn list(dir: &Path, suffix: &str) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| dir.display().to_string())? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(suffix) {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

impl Files for Local {
    fn describe(&self, file: &str) -> String {
        self.root.join(file).display().to_string()
    }

    fn text(&self, file: &str) -> anyhow::Result<Option<String>> {
        // A single file given directly is read alone, whatever index sits beside it.
        if self.single.is_some() && file.ends_with(".index.json") {
            return Ok(None);
        }
        let path = self.root.join(file);
        let Ok(meta) = std::fs::metadata(&path) else { return Ok(None) };
        if meta.len() > MAX_TEXT_BYTES {
            bail!("{}: {} bytes is too large for a config or index", path.display(), meta.len());
        }
        std::fs::read_to_string(&path).map(Some).with_context(|| path.display().to_string())
    }

    fn range(&self, file: &str, start: u64, len: u64) -> anyhow::Result<(Vec<u8>, u64)> {
        let path = self.root.join(file);
        let mut f = std::fs::File::open(&path).with_context(|| path.display().to_string())?;
        let size = f.metadata().with_context(|| path.display().to_string())?.len();
        f.seek(SeekFrom::Start(start.min(size))).with_context(|| path.display().to_string())?;
        let mut out = Vec::new();
        f.take(len.min(size.saturating_sub(start)))
            .read_to_end(&mut out)
            .with_context(|| path.display().to_string())?;
        Ok((out, size))
    }

    fn safetensors_files(&self) -> anyhow::Result<Vec<String>> {
        match &self.single {
            Some(one) => Ok(vec![one.clone()]),
            None => list(&self.root, ".safetensors"),
        }
    }
}
