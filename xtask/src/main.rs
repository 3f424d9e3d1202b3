//! Project automation — the one entry point for what is not plain cargo:
//!
//! - `cargo xtask test`: everything CI checks (formatting, lints, tests, the
//!   purity of `shared`), installing what it needs first.
//! - `cargo xtask run`: builds and runs the product.
//! - `cargo xtask bench`: the criterion benchmarks.

use std::process::Command;

use anyhow::{Context, bail};

/// Crates that must never become reachable from `shared` (the pure core).
const FORBIDDEN_IN_SHARED: &[&str] = &["tokio", "axum", "leptos", "web-sys", "nvml-wrapper", "cudarc", "wasm-bindgen"];

fn main() -> anyhow::Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    let rest: Vec<String> = std::env::args().skip(2).collect();
    match task.as_str() {
        "test" => test(),
        "run" => run(&rest),
        "bench" => bench(),
        "check-shared" => check_shared(),
        _ => {
            eprintln!("usage: cargo xtask <test|run|bench|check-shared>");
            bail!("unknown task `{task}`")
        }
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn step(name: &str, cmd: &mut Command) -> anyhow::Result<()> {
    eprintln!("\n==> {name}");
    let status = cmd.status().with_context(|| format!("starting {name}"))?;
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

fn output(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd.output().context("running a command")?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Installs what the tests need: the wasm32 target (for the purity check).
fn setup() -> anyhow::Result<()> {
    let installed = output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if !installed.lines().any(|l| l.trim() == "wasm32-unknown-unknown") {
        step("install the wasm32 target", Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))?;
    }
    Ok(())
}

fn test() -> anyhow::Result<()> {
    setup()?;
    step("format", cargo().args(["fmt", "--all", "--", "--check"]))?;
    step("lints", cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    check_shared()?;
    step("tests", cargo().args(["test", "--workspace"]))?;
    Ok(())
}

/// `shared` builds for wasm32 and reaches none of the forbidden crates.
fn check_shared() -> anyhow::Result<()> {
    setup()?;
    step("shared builds for wasm32", cargo().args(["check", "-p", "shared", "--target", "wasm32-unknown-unknown"]))?;
    eprintln!("\n==> shared reaches no I/O or platform crate");
    let tree = output(cargo().args([
        "tree",
        "-p",
        "shared",
        "-e",
        "normal,build",
        "--target",
        "all",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]))?;
    let reached: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| FORBIDDEN_IN_SHARED.contains(name))
        .collect();
    if !reached.is_empty() {
        bail!("shared must stay pure, but depends on {reached:?}");
    }
    eprintln!("ok: none of {FORBIDDEN_IN_SHARED:?}");
    Ok(())
}

fn run(args: &[String]) -> anyhow::Result<()> {
    let mut cmd = cargo();
    cmd.args(["run", "--release", "-p", "agent", "--"]);
    if args.is_empty() {
        cmd.args(["estimate", "--model", "qwen2.5-32b", "--gpu", "rtx-4090", "--gpus", "2", "--explain"]);
    } else {
        cmd.args(args);
    }
    step("headroom", &mut cmd)
}

fn bench() -> anyhow::Result<()> {
    step("benchmarks", cargo().args(["bench", "-p", "shared", "--bench", "estimate"]))
}
