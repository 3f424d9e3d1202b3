//! The `headroom` binary, built from the workspace, and the bundle.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, bail};
use serde_json::Value;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn target_dir() -> anyhow::Result<PathBuf> {
    let out = cargo().args(["metadata", "--format-version", "1", "--no-deps"]).output()?;
    let meta: Value = serde_json::from_slice(&out.stdout).context("cargo metadata")?;
    Ok(PathBuf::from(meta["target_directory"].as_str().context("target_directory")?))
}

/// `target/debug/headroom`, built once per run.
pub fn headroom() -> anyhow::Result<PathBuf> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let status =
            cargo().args(["build", "-q", "-p", "agent", "--bin", "headroom"]).status().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("cargo build -p agent failed".into());
        }
        let exe = target_dir().map_err(|e| e.to_string())?.join("debug").join("headroom");
        Ok(exe)
    })
    .clone()
    .map_err(anyhow::Error::msg)
}

/// `dist/`, built by `cargo xtask dist` when it is missing.
pub fn dist() -> anyhow::Result<PathBuf> {
    let dist = root().join("dist");
    if !dist.join("index.html").exists() || !dist.join("web_bg.wasm").exists() {
        let status = cargo().args(["run", "-q", "-p", "xtask", "--", "dist"]).status()?;
        if !status.success() {
            bail!("cargo xtask dist failed");
        }
    }
    Ok(dist)
}

/// `headroom estimate --json ARGS`.
pub fn estimate(args: &[&str]) -> anyhow::Result<Value> {
    estimate_env(args, &[])
}

/// [`estimate`] with `env` set (`HF_ENDPOINT`), and no token of this machine's.
pub fn estimate_env(args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Value> {
    let mut cmd = Command::new(headroom()?);
    cmd.arg("estimate").arg("--json").args(args).env_remove("HF_TOKEN").env("HF_HOME", "/nonexistent-headroom-e2e");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output()?;
    if !out.status.success() {
        bail!("headroom estimate {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// The figures the page shows with `data-bytes`, by `data-testid`, from the CLI's JSON.
pub fn figures(json: &Value) -> Vec<(&'static str, u64)> {
    let get = |k: &str| json[k].as_u64().unwrap_or(u64::MAX);
    let conc = json["verdict"]["max_concurrency"].as_u64().unwrap_or(0);
    vec![
        ("parameters", get("parameters")),
        ("weight-bytes", get("weight_bytes")),
        ("kv-bytes-per-token", get("kv_bytes_per_token")),
        ("kv-cache-bytes", get("kv_cache_bytes")),
        ("activation-bytes", get("activation_bytes")),
        ("overhead-bytes", get("overhead_bytes")),
        ("total-bytes", get("total_bytes")),
        ("capacity-bytes", get("capacity_bytes")),
        ("max-concurrency", conc),
    ]
}

/// `headroom diagnose --json FILE ARGS`.
pub fn diagnose(file: &std::path::Path, args: &[&str]) -> anyhow::Result<Value> {
    let out = Command::new(headroom()?).arg("diagnose").arg("--json").args(args).arg(file).output()?;
    if !out.status.success() {
        bail!("headroom diagnose {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}
