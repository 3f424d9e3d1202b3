//! The benchmarks: `cargo xtask bench` (criterion), `bench-agent` (the
//! agent's footprint) and `bench-web` (the page in headless Chromium).

use std::process::Command;

use crate::cmd::{cargo, step};
use crate::dist::{Budget, dist};
use crate::tools::setup_browser;

pub(crate) fn bench() -> anyhow::Result<()> {
    step("benchmarks", cargo().args(["bench", "-p", "shared", "--bench", "estimate"]))
}

/// The agent's footprint (idle RSS, CPU with 100 clients, fan-out latency):
/// `bench/agent.sh [clients] [seconds]`.
pub(crate) fn bench_agent(args: &[String]) -> anyhow::Result<()> {
    step("agent bench", Command::new("bench/agent.sh").args(args))
}

pub(crate) fn bench_web() -> anyhow::Result<()> {
    dist(Budget::Warn)?;
    setup_browser()?;
    step(
        "page benchmark (headless Chromium)",
        cargo().args([
            "test",
            "-p",
            "e2e",
            "--test",
            "browser",
            "--",
            "--ignored",
            "--exact",
            "bench::bench_web",
            "--nocapture",
        ]),
    )
}
