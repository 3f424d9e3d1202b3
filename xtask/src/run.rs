//! `cargo xtask run`: the page built, then the product started with it.

use std::process::Command;

use anyhow::{Context, bail};

use crate::cmd::{cargo, dirs, step};
use crate::dist::{Budget, dist};
use crate::tools::setup;

/// Builds the page, then starts `headroom serve` with the page embedded (real
/// GPUs through NVML when a driver is present, the simulated backend
/// otherwise); the agent prints the URL to open as its last line. Extra
/// arguments go to `headroom` instead (`cargo xtask run estimate --model
/// llama-3.1-8b`). The size budget is the tests' business: over it, `run`
/// warns and still starts the product.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    setup()?;
    dist(Budget::Warn)?;
    // Built first and started as its own step, so that nothing cargo prints
    // comes after the agent's URL line.
    step("agent: release build (the page embedded)", cargo().args(["build", "--release", "-p", "agent"]))?;
    let (_, target) = dirs()?;
    let mut cmd = Command::new(target.join("release").join("headroom"));
    if args.is_empty() {
        cmd.arg("serve");
    } else {
        cmd.args(args);
    }
    eprintln!("\n==> headroom {}", if args.is_empty() { "serve".to_owned() } else { args.join(" ") });
    let status = cmd.status().context("starting headroom")?;
    if !status.success() {
        bail!("headroom exited with {status}");
    }
    Ok(())
}
