//! `headroom probe`: one probe on this machine's GPU, through the same worker
//! (`headroom probe-worker`) and safety rules as the agent's; and
//! `probe-worker` itself, the hidden child both start.

use std::path::PathBuf;
use std::time::Duration;

use agent::probe::job::{Device, Event, Job};
use agent::probe::modes::{DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES};
use agent::probe::runner::{self, Asked, Launch};
use agent::probe::safety::{self, GpuFacts};
use agent::telemetry::simulated::{SimSpec, SimulatedBackend};
use agent::telemetry::{Backend, nvml::NvmlBackend};
use anyhow::{Context as _, bail};
use clap::Args;
use serde::Serialize;
use shared::estimate::EnginePlan;
use shared::protocol::{ErrorMessage, ProbeMode, ProbeOutcome, ProbeResult, ProbeStep, ProbeStop, StopReason};
use shared::units::{UnitSystem, format_bytes, parse_size};

use super::plan::{self, ModelSource, PlanArgs};

/// Version of the `--json` object; bumped only on incompatible changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The GPU to probe: NVML's index (as in nvidia-smi).
    #[arg(long = "gpu", id = "device", value_name = "N", default_value_t = 0)]
    device: u32,
    /// plan (allocate a plan's chunks), largest-block, max-total.
    #[arg(long, default_value = "plan")]
    mode: String,
    /// plan: the bytes to allocate as one block. largest-block / max-total:
    /// the most to take (default: free memory minus the margin).
    #[arg(long, value_name = "SIZE")]
    bytes: Option<String>,
    /// max-total: the chunk size (default 1GiB, at least 64MiB).
    #[arg(long, value_name = "SIZE")]
    chunk: Option<String>,
    /// Keep at least this much free memory.
    #[arg(long, value_name = "SIZE", default_value = "1GiB")]
    margin: String,
    /// How long to hold the peak before freeing it, in milliseconds (at most 5000).
    #[arg(long, default_value_t = 1000)]
    hold_ms: u32,
    /// Kill the worker if it runs longer than this many seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Probe a simulated GPU from the catalog instead (e.g. `h100-sxm`).
    #[arg(long, value_name = "SPEC")]
    simulate: Option<String>,
    /// Print one JSON object (documented in docs/cli.md).
    #[arg(long)]
    json: bool,
    /// plan without --bytes: a model preset id whose plan to allocate.
    #[arg(long, conflicts_with = "config")]
    model: Option<String>,
    /// plan without --bytes: a Hugging Face config.json (`-` reads standard input).
    #[arg(long)]
    config: Option<PathBuf>,
    /// plan without --bytes: which GPU of the plan to allocate (tp/pp plans).
    #[arg(long, default_value_t = 0)]
    plan_rank: usize,
    /// The plan's flags, as for `headroom estimate` (its `--gpu` is `--plan-gpu` here).
    #[command(flatten)]
    plan: PlanArgs,
}

/// `headroom probe-worker` takes its job on stdin; it has no flags.
#[derive(Debug, Args)]
pub struct WorkerArgs {}

pub fn worker(_args: WorkerArgs) -> anyhow::Result<()> {
    Ok(agent::probe::worker::main()?)
}

/// The GPU as `headroom probe` finds it.
struct Target {
    facts: Option<GpuFacts>,
    device: Device,
    visible_device: Option<String>,
    simulated: bool,
    name: String,
}

fn target(args: &ProbeArgs) -> anyhow::Result<Target> {
    let index = args.device;
    if let Some(spec) = &args.simulate {
        let mut backend = SimulatedBackend::new(SimSpec::parse(spec).context("--simulate")?);
        let devices = backend.read_devices(Duration::ZERO);
        let (Some(info), Some(reading)) = (backend.host().devices.get(index as usize), devices.get(index as usize))
        else {
            bail!("--simulate {spec} has no GPU {index}");
        };
        let memory = reading.memory.map_err(|why| anyhow::anyhow!("GPU {index}: no memory reading ({why:?})"))?;
        return Ok(Target {
            facts: Some(GpuFacts {
                index,
                compute_mode: info.compute_mode.ok(),
                mig_enabled: false,
                free_bytes: Some(memory.free_bytes),
            }),
            device: Device::Simulated {
                free_bytes: memory.free_bytes,
                total_bytes: memory.total_bytes,
                step_delay_ms: 0,
            },
            visible_device: None,
            simulated: true,
            name: info.name.clone().unwrap_or_default(),
        });
    }
    match NvmlBackend::open(None) {
        Ok(mut nvml) => {
            let devices = nvml.read_devices(Duration::ZERO);
            let position = nvml.host().devices.iter().position(|d| d.index == index);
            let (Some(info), Some(reading)) =
                (position.and_then(|p| nvml.host().devices.get(p)), position.and_then(|p| devices.get(p)))
            else {
                bail!("NVML has no GPU {index}");
            };
            let uuid = info.uuid.clone().map_err(|why| anyhow::anyhow!("GPU {index} has no UUID ({why:?})"))?;
            Ok(Target {
                facts: Some(GpuFacts {
                    index,
                    compute_mode: info.compute_mode.ok(),
                    mig_enabled: info.mig_mode.is_ok_and(|m| m.enabled),
                    free_bytes: reading.memory.ok().map(|m| m.free_bytes),
                }),
                device: Device::Cuda { uuid: Some(uuid.clone()) },
                visible_device: Some(uuid),
                simulated: false,
                name: info.name.clone().unwrap_or_default(),
            })
        }
        Err(e) => {
            // Without NVML there is no free-memory pre-check; the worker still
            // keeps the margin by CUDA's own count.
            eprintln!("headroom: NVML unavailable ({e}); probing CUDA device {index} in PCI bus order");
            Ok(Target {
                facts: None,
                device: Device::Cuda { uuid: None },
                visible_device: Some(index.to_string()),
                simulated: false,
                name: format!("CUDA device {index}"),
            })
        }
    }
}

fn size(flag: &str, text: &Option<String>) -> anyhow::Result<Option<u64>> {
    text.as_deref().map(|t| parse_size(t).with_context(|| format!("{flag} {t}"))).transpose()
}

fn plan_steps(args: &ProbeArgs) -> anyhow::Result<Vec<ProbeStep>> {
    let source = ModelSource::from_flags(args.model.as_ref(), args.config.as_ref())
        .context("a plan probe needs --bytes SIZE, or --model PRESET / --config PATH to compute the plan")?;
    let model = plan::load_model(source, &args.plan)?;
    let scenario = plan::scenario(&args.plan, &model)?;
    if args.plan_rank >= scenario.gpus.len() {
        bail!("--plan-rank {} but the plan has {} GPU(s)", args.plan_rank, scenario.gpus.len());
    }
    let prepared = EnginePlan::new(&model, scenario);
    Ok(shared::probe::plan_for_gpu(&prepared, args.plan_rank).steps)
}

pub fn run(args: ProbeArgs) -> anyhow::Result<()> {
    let mode = ProbeMode::parse(&args.mode)
        .with_context(|| format!("unknown --mode `{}` (plan, largest-block or max-total)", args.mode))?;
    let margin_bytes = parse_size(&args.margin).with_context(|| format!("--margin {}", args.margin))?;
    let bytes = size("--bytes", &args.bytes)?;
    let chunk_bytes = size("--chunk", &args.chunk)?.unwrap_or(DEFAULT_CHUNK_BYTES);
    if mode == ProbeMode::MaxTotal && chunk_bytes < MIN_CHUNK_BYTES {
        bail!("--chunk must be at least 64MiB");
    }
    if args.hold_ms > 5000 {
        bail!("--hold-ms is at most 5000");
    }
    let steps = match (mode, bytes) {
        (ProbeMode::Plan, Some(b)) => vec![ProbeStep { label: "plan".into(), bytes: b }],
        (ProbeMode::Plan, None) => plan_steps(&args)?,
        _ => Vec::new(),
    };
    let target = target(&args)?;
    let free_limit = target.facts.and_then(|f| f.free_bytes).map(|f| f.saturating_sub(margin_bytes));
    let requested_bytes = match mode {
        ProbeMode::Plan => steps.iter().map(|s| s.bytes).sum(),
        _ => bytes.or(free_limit).unwrap_or(u64::MAX),
    };
    if requested_bytes == 0 {
        bail!("nothing to allocate");
    }
    if let Some(facts) = &target.facts {
        safety::check_gpu(facts, requested_bytes, margin_bytes)?;
    }
    let launch = Launch {
        program: std::env::current_exe().context("locating the headroom binary")?,
        job: Job {
            mode,
            steps,
            limit_bytes: requested_bytes,
            margin_bytes,
            chunk_bytes,
            hold_ms: u64::from(args.hold_ms),
            device: target.device.clone(),
        },
        visible_device: target.visible_device.clone(),
        deadline: Duration::from_secs(args.timeout.max(1)),
    };
    let asked = Asked { probe_id: 0, gpu: args.device, mode, simulated: target.simulated, requested_bytes };
    if !args.json {
        let what = if requested_bytes == u64::MAX { "all it can".to_owned() } else { gib(requested_bytes) };
        eprintln!("probing GPU {} ({}), {}: {what}", args.device, target.name, mode.id());
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    let result = runtime.block_on(probe(&launch, asked, !args.json))?;
    report(&result, args.json)
}

async fn probe(launch: &Launch, asked: Asked, verbose: bool) -> anyhow::Result<ProbeResult> {
    let start = tokio::time::Instant::now();
    let worker = runner::spawn(launch).await.context("starting the probe worker")?;
    let (end, seen) = worker
        .run(
            |event| {
                if verbose {
                    print_event(event);
                }
            },
            async {
                // Ctrl-C stops the probe (and the worker with it), not just us.
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
            },
        )
        .await;
    Ok(runner::result(asked, end, &seen, start.elapsed()))
}

fn gib(bytes: u64) -> String {
    format_bytes(bytes, UnitSystem::Binary)
}

fn print_event(event: &Event) {
    match event {
        Event::Context { context_bytes, free_bytes, limit_bytes, .. } => eprintln!(
            "  CUDA context: {}; free {}, may take {}",
            context_bytes.map_or("not measured".to_owned(), gib),
            gib(*free_bytes),
            gib(*limit_bytes)
        ),
        Event::Step { step, label, bytes, allocated, held_bytes } => eprintln!(
            "  {step:>4} {label}: {} {}, holding {}",
            gib(*bytes),
            if *allocated { "ok" } else { "refused" },
            gib(*held_bytes)
        ),
        Event::Hold { held_bytes, hold_ms } => eprintln!("  holding {} for {hold_ms} ms", gib(*held_bytes)),
        Event::Done(_) | Event::Error { .. } => {}
    }
}

/// `--json`: the result without the agent's probe id.
#[derive(Serialize)]
struct JsonOut<'a> {
    schema_version: u32,
    gpu: u32,
    mode: ProbeMode,
    simulated: bool,
    ok: bool,
    outcome: ProbeOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_at: Option<&'a ProbeStop>,
    requested_bytes: u64,
    achieved_bytes: u64,
    largest_block_bytes: u64,
    context_bytes: Option<u64>,
    free_before_bytes: Option<u64>,
    free_after_bytes: Option<u64>,
    total_bytes: Option<u64>,
    held_ms: u64,
    duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorMessage>,
}

/// Prints the result. Exit status: 0 when the probe ran and `ok`, 2 when it
/// ran but did not fit or was cut short, 1 (an error) when it could not run.
fn report(r: &ProbeResult, json: bool) -> anyhow::Result<()> {
    if json {
        let out = JsonOut {
            schema_version: JSON_SCHEMA_VERSION,
            gpu: r.gpu,
            mode: r.mode,
            simulated: r.simulated,
            ok: r.ok,
            outcome: r.outcome,
            stopped_at: r.stopped_at.as_ref(),
            requested_bytes: r.requested_bytes,
            achieved_bytes: r.achieved_bytes,
            largest_block_bytes: r.largest_block_bytes,
            context_bytes: r.context_bytes,
            free_before_bytes: r.free_before_bytes,
            free_after_bytes: r.free_after_bytes,
            total_bytes: r.total_bytes,
            held_ms: r.held_ms,
            duration_ms: r.duration_ms,
            error: r.error.as_ref(),
        };
        super::emit(&(serde_json::to_string_pretty(&out)? + "\n"))?;
    } else if r.outcome != ProbeOutcome::Failed {
        super::emit(&summary(r))?;
    }
    if let Some(error) = &r.error {
        bail!("probe failed: {}", error.message);
    }
    if !r.ok {
        // A probe that ran but did not fit is an answer, not an error; say
        // so with the status, after the output is complete.
        std::process::exit(2);
    }
    Ok(())
}

fn summary(r: &ProbeResult) -> String {
    let context = r.context_bytes.map_or("not measured".to_owned(), gib);
    let head = match (r.mode, r.outcome) {
        (ProbeMode::Plan, ProbeOutcome::Completed) => format!("fits: allocated all {}", gib(r.achieved_bytes)),
        (ProbeMode::Plan, _) => {
            format!("does not fit: allocated {} of {}", gib(r.achieved_bytes), gib(r.requested_bytes))
        }
        (ProbeMode::LargestBlock, _) => format!("largest single block: {}", gib(r.largest_block_bytes)),
        (ProbeMode::MaxTotal, _) => format!("most allocatable: {}", gib(r.achieved_bytes)),
    };
    let stop = r.stopped_at.as_ref().map_or(String::new(), |s| {
        let why = match s.reason {
            StopReason::OutOfMemory => "the driver refused it",
            StopReason::Margin => "it would cross the safety margin",
            StopReason::Unknown => "unknown",
        };
        format!("\nstopped at step {} ({}, {}): {why}", s.step, s.label, gib(s.bytes))
    });
    let cut = match r.outcome {
        ProbeOutcome::Cancelled => " (cancelled)",
        ProbeOutcome::TimedOut => " (killed by the watchdog)",
        _ => "",
    };
    format!(
        "{head}{cut}{stop}\nlargest block {}, CUDA context {context}, held {} ms, took {} ms{}\n",
        gib(r.largest_block_bytes),
        r.held_ms,
        r.duration_ms,
        if r.simulated { " (simulated)" } else { "" }
    )
}
