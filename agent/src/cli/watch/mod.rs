//! `headroom watch`: the terminal view for someone on the GPU host, where
//! they would otherwise run `watch nvidia-smi`: memory bars, processes, a
//! short timeline and the OOM checklist's findings, refreshed in place. It
//! reads this host's GPUs (NVML, or `--simulate`), or a running agent
//! (`--agent`); `--plan` adds a share link's figures to the findings.
//! Full-screen on a terminal; plain text when piped or with `--once`; JSON
//! lines with `--json`.

mod plan;
mod source;
mod tui;
mod view;

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use agent::telemetry::BackendChoice;
use agent::telemetry::simulated::{Scenario, SimSpec};
use anyhow::Context as _;
use clap::Args;
use shared::protocol::{MAX_INTERVAL_MS, MIN_INTERVAL_MS};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Read a running agent instead of this host's GPUs: HOST:PORT or
    /// http://HOST:PORT (its token from --token or HEADROOM_TOKEN).
    #[arg(long, value_name = "URL", conflicts_with_all = ["simulate", "scenario", "nvml_lib"])]
    agent: Option<String>,
    /// The agent's access token (default: HEADROOM_TOKEN).
    #[arg(long)]
    token: Option<String>,
    /// Simulate GPUs from the catalog instead of reading NVML, e.g. 2xrtx-4090.
    #[arg(long, value_name = "SPEC")]
    simulate: Option<String>,
    /// What the simulated GPUs do: cycle, steady, fp32-load, kv-growth,
    /// unbalanced or leftover. Implies --simulate (2xrtx-4090 unless given).
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Load NVML from this file instead of `libnvidia-ml.so.1`.
    #[arg(long, value_name = "PATH", conflicts_with = "simulate")]
    nvml_lib: Option<PathBuf>,
    /// A share link (the page's URL): its plan's figures join the findings.
    #[arg(long, value_name = "LINK")]
    plan: Option<String>,
    /// One JSON object per refresh (JSON lines).
    #[arg(long)]
    json: bool,
    /// Print one refresh and exit.
    #[arg(long)]
    once: bool,
    /// Milliseconds between refreshes.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    interval: u32,
}

/// The backend `serve` and `watch` read: a simulated one (with its
/// scenario), NVML from a given file, or NVML if it loads.
pub fn backend_choice(
    simulate: Option<&str>,
    scenario: Option<&str>,
    nvml_lib: Option<&PathBuf>,
) -> anyhow::Result<BackendChoice> {
    let scenario = scenario.map(Scenario::parse).transpose().context("--scenario")?;
    Ok(match (simulate, scenario, nvml_lib) {
        (_, Some(_), Some(_)) => anyhow::bail!("--scenario plays simulated GPUs; leave out --nvml-lib"),
        (Some(spec), scenario, _) => {
            let spec = SimSpec::parse(spec).context("--simulate")?;
            BackendChoice::Simulate(spec.with_scenario(scenario.unwrap_or_default()).context("--scenario")?)
        }
        (None, Some(scenario), _) => {
            BackendChoice::Simulate(SimSpec::default_spec().with_scenario(scenario).context("--scenario")?)
        }
        (None, None, Some(path)) => BackendChoice::NvmlAt(path.clone()),
        (None, None, None) => BackendChoice::Auto,
    })
}

/// How the refreshes are written.
enum Output {
    Screen(tui::Screen),
    Text,
    Json,
}

pub fn run(args: WatchArgs) -> anyhow::Result<()> {
    if !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(&args.interval) {
        anyhow::bail!("--interval {}: from {MIN_INTERVAL_MS} to {MAX_INTERVAL_MS} ms", args.interval);
    }
    let plan = args.plan.as_deref().map(plan::from_link).transpose()?;
    let interval = Duration::from_millis(u64::from(args.interval));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("headroom-watch")
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let mut frames = match &args.agent {
            Some(url) => {
                let url = source::ws_url(url)?;
                let token = args
                    .token
                    .clone()
                    .or_else(|| std::env::var("HEADROOM_TOKEN").ok().filter(|t| !t.trim().is_empty()))
                    .context("--agent needs the agent's token: --token or HEADROOM_TOKEN")?;
                source::remote(url, token, interval)
            }
            None => {
                let choice =
                    backend_choice(args.simulate.as_deref(), args.scenario.as_deref(), args.nvml_lib.as_ref())?;
                source::local(choice, interval)?
            }
        };
        let mut output = if args.json {
            Output::Json
        } else if args.once || !std::io::stdout().is_terminal() {
            Output::Text
        } else {
            Output::Screen(tui::Screen::enter())
        };
        let mut keys = match output {
            Output::Screen(_) => Some(tui::quit_keys()),
            _ => None,
        };
        let mut watch = view::Watch::new(plan);
        loop {
            let frame = tokio::select! {
                frame = frames.recv() => frame,
                _ = tokio::signal::ctrl_c() => None,
                Some(()) = async { match keys.as_mut() { Some(k) => k.recv().await, None => std::future::pending().await } } => None,
            };
            let Some(frame) = frame else { break };
            let v = watch.view(&frame?);
            match &mut output {
                Output::Screen(screen) => screen.draw(&v)?,
                Output::Text if args.once => super::emit(&view::text(&v))?,
                Output::Text => super::emit(&format!("{}\n", view::text(&v)))?,
                Output::Json => super::emit(&view::json(&v))?,
            }
            if args.once {
                break;
            }
        }
        Ok(())
    })
}
