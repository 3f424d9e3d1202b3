//! The plan flags shared by `headroom estimate` and `headroom diagnose`: raw
//! flags become a validated `Model` and `Scenario` here, at the edge.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use shared::engines::{Engine, EngineKind, llamacpp, ollama, sglang, transformers, vllm};
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
    /// KV cache dtype (default: the activation dtype, bf16 or fp16).
    #[arg(long)]
    kv_dtype: Option<String>,
    /// A GPU id from `headroom gpus`; a comma list for mixed GPUs (rtx-4090,rtx-4080).
    #[arg(long, default_value = shared::estimate::DEFAULT_GPU)]
    gpu: String,
    /// GPU memory instead of a catalog GPU (24GiB, 80GB, 81559MiB, bytes); a comma list for mixed GPUs.
    #[arg(long)]
    gpu_memory: Option<String>,
    /// How many GPUs of the (single) kind given; default tp × pp.
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
    /// transformers: attention implementation (sdpa, flash_attention_2, eager).
    #[arg(long, default_value = transformers::AttentionImpl::default().id())]
    attention: String,
    /// transformers: logits for every prompt position (transformers < 4.45).
    #[arg(long)]
    full_logits: bool,
    /// vLLM: which release's accounting (0.24, 0.33, 0.21, 0.19, 0.18, 0.12, 0.10, v1, v0; latest: the newest known).
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
    /// vLLM: --max-loras with --enable-lora (0: LoRA off): its GPU buffers join the weights.
    #[arg(long, default_value_t = 0)]
    max_loras: u64,
    /// vLLM: --max-lora-rank.
    #[arg(long, default_value_t = vllm::DEFAULT_MAX_LORA_RANK)]
    max_lora_rank: u64,
    /// vLLM: the top-k/top-p sampler its profile runs (flashinfer, triton or native;
    /// default: the version's, VLLM_USE_FLASHINFER_SAMPLER and whether FlashInfer is installed decide).
    #[arg(long)]
    vllm_sampler: Option<String>,
    /// vLLM: the MXFP4 MoE kernel (marlin, triton or flashinfer; default: the GPU's usual one,
    /// Marlin on Hopper without triton_kernels). A pasted start-up log names it.
    #[arg(long)]
    vllm_mxfp4_kernel: Option<String>,
    /// SGLang: which release's defaults (tp: mem_fraction_static by TP degree; 0.5.23; latest: the newest known).
    #[arg(long, default_value = "latest")]
    sglang_version: String,
    /// SGLang: --mem-fraction-static (default: from GPU memory, 0.5.23; by TP degree, tp).
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
    /// llama.cpp: flash attention on, off or auto.
    #[arg(long, default_value = llamacpp::FlashAttention::default().id())]
    flash_attn: String,
    /// llama.cpp: -ctk/--cache-type-k (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1); default: --kv-dtype.
    #[arg(long)]
    cache_type_k: Option<String>,
    /// llama.cpp: -ctv/--cache-type-v; default: the key type.
    #[arg(long)]
    cache_type_v: Option<String>,
    /// llama.cpp: --n-cpu-moe N, the routed experts of the first N layers stay on the CPU.
    #[arg(long, conflicts_with = "cpu_moe")]
    n_cpu_moe: Option<u64>,
    /// llama.cpp: --cpu-moe, every layer's routed experts stay on the CPU.
    #[arg(long)]
    cpu_moe: bool,
    /// llama.cpp: -nkvo/--no-kv-offload, the KV cache stays in host memory.
    #[arg(long)]
    no_kv_offload: bool,
    /// llama.cpp: --kv-unified, one KV stream for all slots.
    #[arg(long)]
    kv_unified: bool,
    /// llama.cpp: --swa-full, sliding-window layers keep the whole context.
    #[arg(long)]
    swa_full: bool,
    /// llama.cpp: -ot/--override-tensor PATTERN=BUFFER[,…] (CPU, CUDA0, …); repeatable, the first match wins.
    #[arg(long = "override-tensor", visible_alias = "ot")]
    override_tensor: Vec<String>,
    /// llama.cpp: -ts/--tensor-split, a proportion per GPU (`3,1`); default: by memory.
    #[arg(long)]
    tensor_split: Option<String>,
    /// llama.cpp: -sm/--split-mode layer, row or none.
    #[arg(long, default_value = llamacpp::SplitMode::default().id())]
    split_mode: String,
    /// llama.cpp: -mg/--main-gpu, the GPU --split-mode none uses.
    #[arg(long, default_value_t = 0)]
    main_gpu: u16,
    /// llama.cpp: --mmproj, the model's multimodal projector is loaded (its vision tower's bytes).
    #[arg(long)]
    mmproj: bool,
    /// llama.cpp: --no-mmproj-offload, the projector stays on the CPU.
    #[arg(long, requires = "mmproj")]
    no_mmproj_offload: bool,
    /// llama.cpp: --fit on|off, whether it fits the flags left at their defaults to free memory before loading.
    #[arg(long, default_value = llamacpp::FitMode::default().id())]
    fit: String,
    /// llama.cpp: --fit-target MiB, what --fit keeps free on each GPU.
    #[arg(long, default_value_t = llamacpp::FIT_MARGIN_BYTES / shared::units::MIB)]
    fit_target: u64,
    /// llama.cpp --fit on the memory free now: SIZE[,SIZE…] per GPU (nvidia-smi's memory.free), or `nvml` to read this host's GPUs; default: idle GPUs.
    #[arg(long)]
    pub fit_free: Option<String>,
    /// llama.cpp: the host's RAM, SIZE or `auto` (this host's MemTotal): what the plan leaves on the CPU is checked against it.
    #[arg(long)]
    host_ram: Option<String>,
    /// Ollama: num_ctx, one request's context (default: 4096, 32768 or 262144 by the GPUs' memory).
    #[arg(long)]
    num_ctx: Option<u64>,
    /// Ollama: OLLAMA_NUM_PARALLEL, requests at once (default 1).
    #[arg(long, default_value_t = 1)]
    num_parallel: u64,
    /// Ollama: OLLAMA_KV_CACHE_TYPE (f16, q8_0, q4_0, …); default: --kv-dtype.
    #[arg(long)]
    kv_cache_type: Option<String>,
    /// Ollama: OLLAMA_FLASH_ATTENTION, auto (unset), on or off.
    #[arg(long, default_value = "auto")]
    flash_attention: String,
    /// Ollama: num_gpu, the layers passed as -ngl (default: llama.cpp's --fit places them).
    #[arg(long)]
    num_gpu: Option<u64>,
    /// Ollama: num_batch (default: Ollama's choice of 512, 1024 or 2048).
    #[arg(long)]
    num_batch: Option<u64>,
    /// llama.cpp: -ub/--ubatch-size, the physical batch.
    #[arg(long, default_value_t = llamacpp::DEFAULT_N_UBATCH)]
    n_ubatch: u64,
    /// llama.cpp: -b/--batch-size, the logical batch (default 2048); the
    /// physical batch is at most this (src/llama-context.cpp: `n_ubatch =
    /// min(n_batch, n_ubatch)`).
    #[arg(long = "batch-size", short = 'b')]
    batch_size: Option<u64>,
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
    Ok(match EngineKind::parse(&args.engine)? {
        EngineKind::Transformers => Engine::Transformers(transformers::Options {
            attention: transformers::AttentionImpl::parse(&args.attention)
                .map_err(|e| anyhow::anyhow!("--attention `{}`: {e}", args.attention))?,
            logits: if args.full_logits {
                transformers::LogitsMode::AllPositions
            } else {
                transformers::LogitsMode::LastToken
            },
        }),
        EngineKind::Vllm => Engine::Vllm(vllm::Options {
            version: vllm::Version::parse(&args.vllm_version).with_context(|| {
                format!(
                    "unknown --vllm-version `{}` ({}, latest)",
                    args.vllm_version,
                    vllm::Version::IDS_NEWEST_FIRST.join(", ")
                )
            })?,
            gpu_memory_utilization: args.gpu_memory_utilization,
            max_model_len: args.max_model_len,
            max_num_batched_tokens: args.max_num_batched_tokens,
            max_num_seqs: args.max_num_seqs,
            block_size: args.block_size,
            max_loras: args.max_loras,
            max_lora_rank: args.max_lora_rank,
            sampler: args
                .vllm_sampler
                .as_deref()
                .map(|name| {
                    vllm::Sampler::parse(name)
                        .with_context(|| format!("unknown --vllm-sampler `{name}` (flashinfer, triton or native)"))
                })
                .transpose()?,
            mxfp4_kernel: args
                .vllm_mxfp4_kernel
                .as_deref()
                .map(|name| {
                    vllm::Mxfp4Kernel::parse(name)
                        .with_context(|| format!("unknown --vllm-mxfp4-kernel `{name}` (marlin, triton or flashinfer)"))
                })
                .transpose()?,
        }),
        EngineKind::Sglang => Engine::Sglang(sglang::Options {
            version: sglang::Version::parse(&args.sglang_version)
                .with_context(|| format!("unknown --sglang-version `{}` (tp, 0.5.23, latest)", args.sglang_version))?,
            mem_fraction_static: args.mem_fraction_static,
            context_length: args.context_length,
            chunked_prefill_size: args.max_num_batched_tokens,
        }),
        EngineKind::LlamaCpp => Engine::LlamaCpp(llamacpp::Options {
            n_ctx: args.n_ctx,
            n_gpu_layers: args.n_gpu_layers,
            parallel: args.parallel,
            flash_attention: llamacpp::FlashAttention::parse(&args.flash_attn)
                .map_err(|e| anyhow::anyhow!("--flash-attn `{}`: {e}", args.flash_attn))?,
            cache_type_k: args.cache_type_k.as_deref().map(llamacpp::CacheType::parse).transpose()?,
            cache_type_v: args.cache_type_v.as_deref().map(llamacpp::CacheType::parse).transpose()?,
            // `--cpu-moe` is every layer: llama.cpp's `--n-cpu-moe` with no cut.
            n_cpu_moe: if args.cpu_moe { u64::from(u32::MAX) } else { args.n_cpu_moe.unwrap_or(0) },
            no_kv_offload: args.no_kv_offload,
            kv_unified: args.kv_unified,
            swa_full: args.swa_full,
            n_ubatch: args.batch_size.map_or(args.n_ubatch, |b| args.n_ubatch.min(b)),
            // Several -ot flags append their rules, as common/arg.cpp does.
            tensor_overrides: llamacpp::TensorOverrides::parse(&args.override_tensor.join(","))
                .map_err(|e| anyhow::anyhow!("--override-tensor: {e}"))?,
            tensor_split: llamacpp::TensorSplit::parse(args.tensor_split.as_deref().unwrap_or(""))
                .map_err(|e| anyhow::anyhow!("--tensor-split: {e}"))?,
            split_mode: llamacpp::SplitMode::parse(&args.split_mode)
                .map_err(|e| anyhow::anyhow!("--split-mode: {e}"))?,
            main_gpu: args.main_gpu,
            mmproj: args.mmproj,
            no_mmproj_offload: args.no_mmproj_offload,
            fit: llamacpp::FitMode::parse(&args.fit).map_err(|e| anyhow::anyhow!("--fit `{}`: {e}", args.fit))?,
            fit_target_mib: args.fit_target,
            host_ram_bytes: args.host_ram.as_deref().map(host_ram).transpose()?,
        }),
        EngineKind::Ollama => Engine::Ollama(ollama::Options {
            num_ctx: args.num_ctx,
            num_parallel: args.num_parallel,
            kv_cache_type: args.kv_cache_type.as_deref().map(llamacpp::CacheType::parse).transpose()?,
            flash_attention: ollama::parse_flash_attention(&args.flash_attention)
                .map_err(|e| anyhow::anyhow!("--flash-attention `{}`: {e}", args.flash_attention))?,
            num_gpu: args.num_gpu,
            num_batch: args.num_batch,
            n_cpu_moe: if args.cpu_moe { u64::from(u32::MAX) } else { args.n_cpu_moe.unwrap_or(0) },
            mmproj: args.mmproj,
            host_ram_bytes: args.host_ram.as_deref().map(host_ram).transpose()?,
        }),
    })
}

pub(super) fn scenario(args: &PlanArgs, model: &Model) -> anyhow::Result<ValidScenario> {
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

/// `--host-ram`: a size, or `auto` for this host's RAM (what the agent
/// reports in its `welcome`).
fn host_ram(text: &str) -> anyhow::Result<u64> {
    if text != "auto" {
        return parse_size(text).map_err(|e| anyhow::anyhow!("--host-ram `{text}`: {e}"));
    }
    agent::telemetry::host_memory().map_err(|why| {
        anyhow::anyhow!("--host-ram auto: this host's RAM is not readable ({why:?}); give the size instead")
    })
}
