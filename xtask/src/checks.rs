//! What CI checks: `cargo xtask test` (formatting, lints, the purity of
//! `shared`, the wasm32 lints, the bundle within its budget, the tests),
//! `cargo xtask check-shared` and `cargo xtask e2e`.

use anyhow::bail;

use crate::cmd::{cargo, output, step};
use crate::dist::{Budget, dist};
use crate::tools::{setup, setup_axe, setup_browser, setup_fleet_tools};

/// Crates that must never become reachable from `shared` (the pure core).
const FORBIDDEN_IN_SHARED: &[&str] = &["tokio", "axum", "leptos", "web-sys", "nvml-wrapper", "cudarc", "wasm-bindgen"];

pub(crate) fn test() -> anyhow::Result<()> {
    setup()?;
    step("format", cargo().args(["fmt", "--all", "--", "--check"]))?;
    step("lints", cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    check_shared()?;
    step(
        "web lints (wasm32)",
        cargo().args(["clippy", "-p", "web", "--target", "wasm32-unknown-unknown", "--", "-D", "warnings"]),
    )?;
    // The workspace tests include the browser tests (crate `e2e`), which load `dist/`.
    dist(Budget::Enforce)?;
    setup_browser()?;
    setup_fleet_tools()?;
    setup_axe()?;
    step("tests", cargo().args(["test", "--workspace"]))?;
    Ok(())
}

/// `shared` builds for wasm32 and reaches none of the forbidden crates.
pub(crate) fn check_shared() -> anyhow::Result<()> {
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

pub(crate) fn e2e() -> anyhow::Result<()> {
    dist(Budget::Enforce)?;
    setup_browser()?;
    setup_fleet_tools()?;
    setup_axe()?;
    step("browser end-to-end tests", cargo().args(["test", "-p", "e2e"]))
}
