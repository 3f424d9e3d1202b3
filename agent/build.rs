//! Embeds the built page (`<workspace>/dist/`) into release builds when it
//! exists, as a list of `File`s in `$OUT_DIR/dist.rs`: each file's bytes,
//! the `.gz` and `.br` siblings `cargo xtask dist` wrote beside it, and a
//! strong ETag from its content. Debug builds embed nothing and read `dist/`
//! at run time instead, so rebuilding the page does not rebuild the agent.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("dist.rs");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dist = manifest.join("../dist");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let mut files = Vec::new();
    if release {
        println!("cargo::rerun-if-changed={}", dist.display());
        if dist.join("index.html").is_file() {
            collect(&dist, &dist, &mut files);
            files.sort();
        }
    }
    let mut code = String::from("pub static FILES: &[File] = &[\n");
    let is_sibling = |name: &str| {
        [".gz", ".br"].iter().any(|s| name.strip_suffix(s).is_some_and(|base| files.iter().any(|(n, _)| n == base)))
    };
    for (name, path) in files.iter().filter(|(name, _)| !is_sibling(name)) {
        println!("cargo::rerun-if-changed={}", path.display());
        let bytes = std::fs::read(path).unwrap_or_default();
        let sibling = |suffix: &str| match files.iter().find(|(n, _)| *n == format!("{name}{suffix}")) {
            Some((_, p)) => format!("Some(include_bytes!({:?}))", p.display().to_string()),
            None => "None".to_owned(),
        };
        let _ = writeln!(
            code,
            "    File {{ name: {name:?}, etag: \"{:016x}\", identity: include_bytes!({:?}), gzip: {}, brotli: {} }},",
            fnv1a(&bytes),
            path.display().to_string(),
            sibling(".gz"),
            sibling(".br"),
        );
    }
    code.push_str("];\n");
    if let Err(e) = std::fs::write(&out, code) {
        println!("cargo::error=cannot write {}: {e}", out.display());
    }
}

/// FNV-1a, 64 bits: the ETag's content hash (a cache key, not a signature;
/// the agent's `web::etag` computes the same for `--web-dir`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo::rerun-if-changed={}", path.display());
            collect(root, &path, files);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let name = rel.to_string_lossy().replace('\\', "/");
            if let Ok(abs) = path.canonicalize() {
                files.push((name, abs));
            }
        }
    }
}
