//! `headroom estimate`: flags → `Model` + `Scenario` → breakdown or JSON.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use shared::estimate::{self, Estimate, GpuSlot, Scenario, verdict_text};
use shared::formats::WeightFormat;
use shared::kv::KvDtype;
use shared::model::Model;
use shared::units::{UnitSystem, parse_size};

use super::render;

/// Version of the `--json` object; bumped only on incompatible changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// A model preset id (see `headroom models`).
    #[arg(long, conflicts_with = "config", required_unless_present = "config")]
    model: Option<String>,
    /// A Hugging Face config.json (`-` reads standard input).
    #[arg(long)]
    config: Option<PathBuf>,
    /// model.safetensors.index.json or a safetensors JSON header: exact weight bytes.
    #[arg(long)]
    safetensors_index: Option<PathBuf>,
    /// Weight format (default: the checkpoint's own dtype or quantization).
    #[arg(long = "weights", value_name = "FORMAT")]
    weights: Option<String>,
    /// KV cache dtype (default: the activation dtype, bf16 or fp16).
    #[arg(long)]
    kv_dtype: Option<String>,
    /// A GPU id from `headroom gpus`.
    #[arg(long, default_value = "rtx-4090")]
    gpu: String,
    /// GPU memory instead of a catalog GPU (24GiB, 80GB, 81559MiB, bytes).
    #[arg(long)]
    gpu_memory: Option<String>,
    /// How many GPUs (split layer-wise).
    #[arg(long, default_value_t = 1)]
    gpus: usize,
    #[arg(long, default_value_t = 2048)]
    prompt_tokens: u64,
    #[arg(long, default_value_t = 512)]
    max_new_tokens: u64,
    /// Sequences generated at once.
    #[arg(long, default_value_t = 1)]
    concurrency: u64,
    /// Print one JSON object (documented in docs/cli.md).
    #[arg(long)]
    json: bool,
    /// Also print the terms behind every figure.
    #[arg(long)]
    explain: bool,
    /// Print sizes in GB instead of GiB.
    #[arg(long)]
    decimal: bool,
}

#[derive(Serialize)]
struct JsonOut<'a> {
    schema_version: u32,
    #[serde(flatten)]
    estimate: &'a Estimate,
    verdict_text: String,
}

pub fn run(args: EstimateArgs) -> anyhow::Result<()> {
    let model = load_model(&args)?;
    let scenario = scenario(&args, &model)?;
    let estimate = estimate::estimate(&model, scenario);
    let units = if args.decimal { UnitSystem::Decimal } else { UnitSystem::Binary };
    if args.json {
        let out = JsonOut {
            schema_version: JSON_SCHEMA_VERSION,
            estimate: &estimate,
            verdict_text: verdict_text(&estimate, units),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", render::breakdown(&estimate, units, args.explain));
    }
    Ok(())
}

fn read_input(path: &PathBuf) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn load_model(args: &EstimateArgs) -> anyhow::Result<Model> {
    let model = match (&args.model, &args.config) {
        (Some(id), _) => Model::preset(id)?,
        (None, Some(path)) => {
            let text = read_input(path)?;
            let name =
                if path.as_os_str() == "-" { "config.json (stdin)".to_owned() } else { path.display().to_string() };
            Model::from_config_json(name, &text).with_context(|| format!("{}", path.display()))?
        }
        (None, None) => bail!("give --model PRESET or --config PATH"),
    };
    let exact = match &args.safetensors_index {
        Some(path) => {
            Some(shared::safetensors::total_bytes(&read_input(path)?).with_context(|| format!("{}", path.display()))?)
        }
        None => None,
    };
    Ok(model.with_checkpoint_bytes(exact))
}

fn scenario(args: &EstimateArgs, model: &Model) -> anyhow::Result<Scenario> {
    let weights = match &args.weights {
        Some(w) => WeightFormat::parse(w)?,
        None => model.default_format(),
    };
    let kv_dtype = match &args.kv_dtype {
        Some(k) => KvDtype::parse(k)?,
        None => Scenario::default_kv_dtype(model, weights),
    };
    let slot = match &args.gpu_memory {
        Some(size) => GpuSlot {
            name: format!("custom {size}"),
            capacity_bytes: parse_size(size).with_context(|| format!("--gpu-memory {size}"))?,
        },
        None => {
            let gpu = shared::catalog::gpu(&args.gpu)
                .with_context(|| format!("unknown GPU `{}` (see `headroom gpus`)", args.gpu))?;
            GpuSlot { name: gpu.name.clone(), capacity_bytes: gpu.memory_bytes }
        }
    };
    if args.gpus == 0 {
        bail!("--gpus must be at least 1");
    }
    let scenario = Scenario {
        weights,
        kv_dtype,
        gpus: vec![slot; args.gpus],
        prompt_tokens: args.prompt_tokens,
        max_new_tokens: args.max_new_tokens,
        concurrency: args.concurrency,
    };
    scenario.validate()?;
    Ok(scenario)
}
