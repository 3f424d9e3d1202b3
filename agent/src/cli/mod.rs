//! Command-line parsing and dispatch. Raw flags become validated domain
//! values (`Model`, `Scenario`) here, at the edge.

mod catalog;
mod checkpoint;
mod diagnose;
mod engine_flags;
mod estimate;
mod input;
mod plan;
mod probe;
mod render;
mod serve;
mod watch;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "headroom",
    version,
    about = "Will this LLM fit on this GPU for inference, and if not, what is the cheapest fix?"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Estimate the GPU memory of an inference plan.
    Estimate(Box<estimate::EstimateArgs>),
    /// Diagnose a pasted out-of-memory error: ranked causes and fixes.
    Diagnose(Box<diagnose::DiagnoseArgs>),
    /// List the model presets.
    Models(catalog::ListArgs),
    /// List the GPU catalog.
    Gpus(catalog::ListArgs),
    /// Serve live GPU telemetry, the page and metrics on this GPU host.
    Serve(Box<serve::ServeArgs>),
    /// Watch the GPUs: memory, processes, a timeline and the OOM checklist's
    /// findings, refreshed in place (this host's GPUs, or a running agent's).
    Watch(Box<watch::WatchArgs>),
    /// Allocate GPU memory for real (a plan, the largest block, the most in
    /// total), then free it.
    #[command(mut_arg("gpu", |a| a.long("plan-gpu")))]
    Probe(Box<probe::ProbeArgs>),
    /// The probe's child process (started by `serve` and `probe`).
    #[command(hide = true)]
    ProbeWorker(probe::WorkerArgs),
}

/// Writes command output to stdout. A closed pipe (`headroom … | head`) ends
/// the output quietly instead of panicking like `println!` would.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Estimate(args) => estimate::run(*args),
        Command::Diagnose(args) => diagnose::run(*args),
        Command::Models(args) => catalog::models(args),
        Command::Gpus(args) => catalog::gpus(args),
        Command::Serve(args) => serve::run(*args),
        Command::Watch(args) => watch::run(*args),
        Command::Probe(args) => probe::run(*args),
        Command::ProbeWorker(args) => probe::worker(args),
    }
}
