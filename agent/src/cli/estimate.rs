//! `headroom estimate`: flags → `Model` + `Scenario` → breakdown or JSON.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use shared::engines::{Engine, EngineKind, llamacpp, sglang, transformers, vllm};
use shared::estimate::{self, Estimate, GpuSlot, Scenario, verdict_text};
use shared::formats::WeightFormat;
use shared::kv::KvDtype;
use shared::model::Model;
use shared::solve::{self, Question, Solution};
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
    /// A GPU id from `headroom gpus`; a comma list for mixed GPUs (rtx-4090,rtx-4080).
    #[arg(long, default_value = "rtx-4090")]
    gpu: String,
    /// GPU memory instead of a catalog GPU (24GiB, 80GB, 81559MiB, bytes); a comma list for mixed GPUs.
    #[arg(long)]
    gpu_memory: Option<String>,
    /// How many GPUs of the (single) kind given; default tp × pp.
    #[arg(long)]
    gpus: Option<usize>,
    /// Inference engine: transformers, vllm, sglang, llama.cpp.
    #[arg(long, default_value = "transformers")]
    engine: String,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1)]
    tp: u64,
    /// Pipeline stages (layer-wise split); default: GPUs ÷ tp.
    #[arg(long)]
    pp: Option<u64>,
    /// transformers: attention implementation (sdpa, eager).
    #[arg(long, default_value = "sdpa")]
    attention: String,
    /// transformers: logits for every prompt position (transformers < 4.45).
    #[arg(long)]
    full_logits: bool,
    /// vLLM: which accounting (v0, v1, latest).
    #[arg(long, default_value = "latest")]
    vllm_version: String,
    /// vLLM: --gpu-memory-utilization (default 0.92 latest, 0.9 before).
    #[arg(long)]
    gpu_memory_utilization: Option<f64>,
    /// vLLM: --max-model-len (default: the model's max_position_embeddings).
    #[arg(long)]
    max_model_len: Option<u64>,
    /// vLLM: --max-num-batched-tokens.
    #[arg(long)]
    max_num_batched_tokens: Option<u64>,
    /// vLLM: --max-num-seqs.
    #[arg(long)]
    max_num_seqs: Option<u64>,
    /// vLLM: --block-size.
    #[arg(long, default_value_t = vllm::DEFAULT_BLOCK_SIZE)]
    block_size: u64,
    /// SGLang: --mem-fraction-static (default by TP degree).
    #[arg(long)]
    mem_fraction_static: Option<f64>,
    /// SGLang: --context-length.
    #[arg(long)]
    context_length: Option<u64>,
    /// llama.cpp: -c, the total context of all slots.
    #[arg(long)]
    n_ctx: Option<u64>,
    /// llama.cpp: -ngl.
    #[arg(long)]
    n_gpu_layers: Option<u64>,
    /// llama.cpp: -np, parallel slots (default: --concurrency).
    #[arg(long)]
    parallel: Option<u64>,
    /// llama.cpp: flash attention on or off.
    #[arg(long, default_value = "on")]
    flash_attn: String,
    /// Answer a question: fits, oom-token, max-concurrency, max-context,
    /// max-new-tokens, weights, min-gpus, smallest-gpu, max-gpu-layers.
    #[arg(long, value_name = "WHAT")]
    solve: Option<String>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    solution: Option<Solution>,
}

pub fn run(args: EstimateArgs) -> anyhow::Result<()> {
    let model = load_model(&args)?;
    let scenario = scenario(&args, &model)?;
    let question = match &args.solve {
        Some(q) => Some(Question::parse(q).with_context(|| {
            let all: Vec<&str> = Question::ALL.iter().map(|q| q.id()).collect();
            format!("unknown --solve `{q}` (one of {})", all.join(", "))
        })?),
        None => None,
    };
    let solution = question.map(|q| solve::solve(&model, &scenario, q));
    let estimate = estimate::estimate(&model, scenario);
    let units = if args.decimal { UnitSystem::Decimal } else { UnitSystem::Binary };
    if args.json {
        let out = JsonOut {
            schema_version: JSON_SCHEMA_VERSION,
            estimate: &estimate,
            verdict_text: verdict_text(&estimate, units),
            solution,
        };
        super::emit(&(serde_json::to_string_pretty(&out)? + "\n"))?;
    } else {
        super::emit(&render::breakdown(&estimate, units, args.explain))?;
        if let Some(s) = solution {
            super::emit(&format!("\n{}: {}\n", s.question.id(), s.explanation))?;
        }
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

fn gpu_slots(args: &EstimateArgs) -> anyhow::Result<Vec<GpuSlot>> {
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

fn engine(args: &EstimateArgs) -> anyhow::Result<Engine> {
    Ok(match EngineKind::parse(&args.engine)? {
        EngineKind::Transformers => Engine::Transformers(transformers::Options {
            attention: match args.attention.as_str() {
                "sdpa" | "flash_attention_2" => transformers::AttentionImpl::Sdpa,
                "eager" => transformers::AttentionImpl::Eager,
                other => bail!("unknown --attention `{other}` (sdpa or eager)"),
            },
            logits: if args.full_logits {
                transformers::LogitsMode::AllPositions
            } else {
                transformers::LogitsMode::LastToken
            },
        }),
        EngineKind::Vllm => Engine::Vllm(vllm::Options {
            version: vllm::Version::parse(&args.vllm_version)
                .with_context(|| format!("unknown --vllm-version `{}` (v0, v1, latest)", args.vllm_version))?,
            gpu_memory_utilization: args.gpu_memory_utilization,
            max_model_len: args.max_model_len,
            max_num_batched_tokens: args.max_num_batched_tokens,
            max_num_seqs: args.max_num_seqs,
            block_size: args.block_size,
        }),
        EngineKind::Sglang => Engine::Sglang(sglang::Options {
            mem_fraction_static: args.mem_fraction_static,
            context_length: args.context_length,
            chunked_prefill_size: args.max_num_batched_tokens,
        }),
        EngineKind::LlamaCpp => Engine::LlamaCpp(llamacpp::Options {
            n_ctx: args.n_ctx,
            n_gpu_layers: args.n_gpu_layers,
            parallel: args.parallel,
            flash_attention: match args.flash_attn.as_str() {
                "on" | "auto" => llamacpp::FlashAttention::On,
                "off" => llamacpp::FlashAttention::Off,
                other => bail!("unknown --flash-attn `{other}` (on or off)"),
            },
            ..Default::default()
        }),
    })
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
    let mut gpus = gpu_slots(args)?;
    let wanted = match (args.gpus, args.pp) {
        (Some(n), Some(pp)) if n as u64 != args.tp.saturating_mul(pp) => {
            bail!("--gpus {n} does not equal --tp {} × --pp {pp}", args.tp)
        }
        (Some(n), _) => n,
        (None, Some(pp)) => args.tp.saturating_mul(pp) as usize,
        (None, None) if gpus.len() > 1 => gpus.len(),
        (None, None) => args.tp as usize,
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
        engine: engine(args)?,
        tp: args.tp,
    };
    scenario.validate()?;
    Ok(scenario)
}
