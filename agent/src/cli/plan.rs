//! The plan flags shared by `headroom estimate` and `headroom diagnose`: raw
//! flags become a validated `Model` and `Scenario` here, at the edge.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use shared::engines::{Engine, EngineKind};

use super::engine_flags::EngineFlags;
use shared::estimate::{GpuSlot, Scenario, ValidScenario};
use shared::formats::WeightFormat;
use shared::kv::KvDtype;
use shared::model::Model;
use shared::units::parse_size;

/// What to run, where and with which workload.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// model.safetensors.index.json or a safetensors JSON header: exact weight bytes.
    #[arg(long)]
    safetensors_index: Option<PathBuf>,
    /// Weight format (default: the checkpoint's own dtype or quantization).
    #[arg(long = "weights", value_name = "FORMAT")]
    pub(super) weights: Option<String>,
    /// KV cache dtype (default: the engine's own, fp16 for llama.cpp and Ollama, else the activation dtype, bf16 or fp16).
    #[arg(long)]
    kv_dtype: Option<String>,
    /// A GPU id from `headroom gpus`; a comma list for mixed GPUs (rtx-4090,rtx-4080).
    #[arg(long, default_value = shared::estimate::DEFAULT_GPU)]
    gpu: String,
    /// GPU memory instead of a catalog GPU (24GiB, 80GB, 81559MiB, bytes); a comma list for mixed GPUs.
    #[arg(long)]
    gpu_memory: Option<String>,
    /// How many GPUs of the (single) kind given; default tp × pp (× vLLM's --data-parallel-size).
    #[arg(long)]
    gpus: Option<usize>,
    /// Inference engine: transformers, vllm, sglang, llama.cpp, ollama.
    #[arg(long, default_value = "transformers")]
    pub engine: String,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1)]
    tp: u64,
    /// Pipeline stages (layer-wise split); default: GPUs ÷ tp.
    #[arg(long)]
    pp: Option<u64>,
    /// llama.cpp --fit on the memory free now: SIZE[,SIZE…] per GPU (nvidia-smi's memory.free), or `nvml` to read this host's GPUs; default: idle GPUs.
    #[arg(long)]
    pub fit_free: Option<String>,
    /// Each engine's settings (`--max-model-len`, `--n-ctx`, …), as the engines declare them.
    #[command(flatten)]
    engine_flags: EngineFlags,
    /// Tokens in the prompt: `4096`, `32k` (32,000), `128K` (131,072), as vLLM reads counts.
    #[arg(long, default_value_t = 2048, value_parser = tokens)]
    prompt_tokens: u64,
    /// Tokens generated per sequence (same forms as --prompt-tokens).
    #[arg(long, default_value_t = 512, value_parser = tokens)]
    max_new_tokens: u64,
    /// Sequences generated at once.
    #[arg(long, default_value_t = 1)]
    concurrency: u64,
}

/// A token count flag: the page's token fields read the same forms.
fn tokens(value: &str) -> Result<u64, String> {
    shared::link::parse_tokens(value, shared::estimate::MAX_TOKENS)
}

/// Where the model comes from: `--model` or `--config`. Each command declares
/// these two flags itself, because whether one is required differs.
#[derive(Debug, Clone, Copy)]
pub enum ModelSource<'a> {
    Preset(&'a str),
    Config(&'a Path),
}

impl<'a> ModelSource<'a> {
    pub fn from_flags(model: Option<&'a String>, config: Option<&'a PathBuf>) -> Option<Self> {
        match (model, config) {
            (Some(id), _) => Some(Self::Preset(id)),
            (None, Some(path)) => Some(Self::Config(path)),
            (None, None) => None,
        }
    }
}

pub(super) fn read_input(path: &Path) -> anyhow::Result<String> {
    super::input::read_text(path, super::input::MAX_INPUT_BYTES)
}

pub(super) fn load_model(source: ModelSource, args: &PlanArgs) -> anyhow::Result<Model> {
    let model = match source {
        ModelSource::Preset(id) => Model::preset(id)?,
        ModelSource::Config(path) => {
            let text = read_input(path)?;
            let name =
                if path.as_os_str() == "-" { "config.json (stdin)".to_owned() } else { path.display().to_string() };
            Model::from_config_json(name, &text).with_context(|| format!("{}", path.display()))?
        }
    };
    let exact = match &args.safetensors_index {
        Some(path) => {
            Some(shared::safetensors::total_bytes(&read_input(path)?).with_context(|| format!("{}", path.display()))?)
        }
        None => None,
    };
    Ok(model.with_checkpoint_bytes(exact))
}

fn gpu_slots(args: &PlanArgs) -> anyhow::Result<Vec<GpuSlot>> {
    match &args.gpu_memory {
        Some(sizes) => sizes
            .split(',')
            .map(|size| {
                let bytes = parse_size(size).with_context(|| format!("--gpu-memory {size}"))?;
                Ok(GpuSlot::custom(format!("custom {}", size.trim()), bytes))
            })
            .collect(),
        None => args
            .gpu
            .split(',')
            .map(|id| {
                let gpu = shared::catalog::gpu(id.trim())
                    .with_context(|| format!("unknown GPU `{}` (see `headroom gpus`)", id.trim()))?;
                Ok(GpuSlot::from_catalog(gpu))
            })
            .collect(),
    }
}

fn engine(args: &PlanArgs) -> anyhow::Result<Engine> {
    args.engine_flags.engine(EngineKind::parse(&args.engine)?, host_ram)
}

pub(super) fn scenario(args: &PlanArgs, model: &Model) -> anyhow::Result<ValidScenario> {
    let weights = match &args.weights {
        Some(w) => WeightFormat::parse(w)?,
        None => model.default_format(),
    };
    let engine = engine(args)?;
    let kv_dtype = match &args.kv_dtype {
        Some(k) => KvDtype::parse(k)?,
        None => engine.kind().default_kv_dtype(model, weights),
    };
    let mut gpus = gpu_slots(args)?;
    // vLLM's data-parallel replicas each hold tp × pp GPUs.
    let replicas = shared::plan::EngineRules::replicas(&engine);
    let replica = args.tp.saturating_mul(replicas);
    let wanted = match (args.gpus, args.pp) {
        (Some(n), Some(pp)) if n as u64 != replica.saturating_mul(pp) => {
            let dp = if replicas > 1 { format!(" × --data-parallel-size {replicas}") } else { String::new() };
            bail!("--gpus {n} does not equal --tp {} × --pp {pp}{dp}", args.tp)
        }
        (Some(n), _) => n,
        (None, Some(pp)) => replica.saturating_mul(pp) as usize,
        (None, None) if gpus.len() > 1 => gpus.len(),
        (None, None) => replica as usize,
    };
    if wanted == 0 {
        bail!("--gpus must be at least 1");
    }
    if wanted > shared::estimate::MAX_GPUS {
        bail!("at most {} GPUs are supported", shared::estimate::MAX_GPUS);
    }
    match gpus.len() {
        1 => gpus = vec![gpus[0].clone(); wanted],
        n if n != wanted => bail!("{n} GPUs listed but {wanted} asked for"),
        _ => {}
    }
    let scenario = Scenario {
        weights,
        kv_dtype,
        gpus,
        prompt_tokens: args.prompt_tokens,
        max_new_tokens: args.max_new_tokens,
        concurrency: args.concurrency,
        engine,
        tp: args.tp,
    };
    Ok(scenario.validate_for(model)?)
}

/// `--fit-free`: the memory free on each GPU now, as sizes or read from
/// this host's GPUs through NVML (`nvml`).
pub(super) fn free_memory(text: &str) -> anyhow::Result<Vec<u64>> {
    if text == "nvml" {
        use agent::telemetry::{Backend, nvml::NvmlBackend};
        let mut nvml = NvmlBackend::open(None).map_err(|e| {
            anyhow::anyhow!(
                "--fit-free nvml: no NVML on this host ({e}); give the sizes instead \
                 (nvidia-smi --query-gpu=memory.free --format=csv)"
            )
        })?;
        return nvml
            .read_devices(std::time::Duration::ZERO)
            .iter()
            .enumerate()
            .map(|(i, r)| {
                r.memory.as_ref().map(|m| m.free_bytes).map_err(|e| anyhow::anyhow!("--fit-free nvml: GPU {i}: {e:?}"))
            })
            .collect();
    }
    text.split(',')
        .map(|part| parse_size(part.trim()).map_err(|e| anyhow::anyhow!("--fit-free `{part}`: {e}")))
        .collect()
}

/// `--host-ram auto`: this host's RAM (what the agent reports in its `welcome`).
fn host_ram() -> anyhow::Result<u64> {
    agent::telemetry::host_memory()
        .map_err(|why| anyhow::anyhow!("this host's RAM is not readable ({why:?}); give the size instead"))
}
