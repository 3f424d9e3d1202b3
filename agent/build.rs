//! Embeds the built page (`<workspace>/dist/`) into release builds when it
//! exists, as a list of `(path, bytes)` in `$OUT_DIR/dist.rs`. Debug builds
//! embed nothing and read `dist/` at run time instead, so rebuilding the page
//! does not rebuild the agent.

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
    let mut code = String::from("pub static FILES: &[(&str, &[u8])] = &[\n");
    for (name, path) in &files {
        println!("cargo::rerun-if-changed={}", path.display());
        let _ = writeln!(code, "    ({name:?}, include_bytes!({:?})),", path.display().to_string());
    }
    code.push_str("];\n");
    if let Err(e) = std::fs::write(&out, code) {
        println!("cargo::error=cannot write {}: {e}", out.display());
    }
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
