//! vLLM's settings, declared once (`super::super::knobs`): in the order a
//! link writes them.

#[cfg(feature = "cli")]
use crate::engines::knobs::Cli;
use crate::engines::knobs::{
    About, Knob, bytes, count, fraction, gibibytes, on_off, on_or_off, opt, opt_fraction, opt_size, tokens,
};
use crate::plan::MAX_CONCURRENCY;
use crate::units::shortest;

use super::{All2All, MAX_DATA_PARALLEL, MmLimits, Mxfp4Kernel, Options, Report, Sampler, Speculative, Version};

type K = Knob<Options, Report>;

pub static KNOBS: &[K] = &[
    K {
        about: About {
            key: "vllm",
            label: "vLLM version",
            choices: Version::IDS_NEWEST_FIRST,
            always: true,
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "vllm-version",
                help: "which release's accounting (latest: the newest known)",
                default_word: "latest",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.version.id().into(),
        set: |o, v| {
            o.version = Version::parse_pinned(v).ok_or_else(|| {
                format!("not a vLLM version Headroom knows ({})", Version::IDS_NEWEST_FIRST.join(", "))
            })?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "gmu",
            label: "gpu_memory_utilization",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "gpu-memory-utilization",
                help: "--gpu-memory-utilization (default 0.92 from 0.21, 0.9 before)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt_fraction(o.gpu_memory_utilization),
        set: |o, v| {
            o.gpu_memory_utilization = Some(fraction(v)?);
            Ok(())
        },
        effective: Some(|r| shortest(r.gpu_memory_utilization)),
    },
    K {
        about: About {
            key: "mml",
            label: "max_model_len",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "max-model-len",
                help: "--max-model-len (default: the model's max_position_embeddings)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt(o.max_model_len),
        set: |o, v| {
            o.max_model_len = tokens(v)?;
            Ok(())
        },
        effective: Some(|r| r.max_model_len.to_string()),
    },
    K {
        about: About {
            key: "mbt",
            label: "max_num_batched_tokens",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "max-num-batched-tokens", help: "--max-num-batched-tokens", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| opt(o.max_num_batched_tokens),
        set: |o, v| {
            o.max_num_batched_tokens = tokens(v)?;
            Ok(())
        },
        effective: Some(|r| r.max_num_batched_tokens.to_string()),
    },
    K {
        about: About {
            key: "mns",
            label: "max_num_seqs",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "max-num-seqs", help: "--max-num-seqs", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| opt(o.max_num_seqs),
        set: |o, v| {
            o.max_num_seqs = Some(count(v, 1, MAX_CONCURRENCY)?);
            Ok(())
        },
        effective: Some(|r| r.max_num_seqs.to_string()),
    },
    K {
        about: About {
            key: "bs",
            label: "block_size",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "block-size", help: "--block-size", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| opt(o.block_size),
        set: |o, v| {
            o.block_size = Some(count(v, 1, 1024)?);
            Ok(())
        },
        effective: Some(|r| r.block_size.to_string()),
    },
    K {
        about: About {
            key: "loras",
            label: "max_loras (LoRA)",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "max-loras",
                help: "--max-loras with --enable-lora (0: LoRA off): its GPU buffers join the weights",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.max_loras.to_string(),
        set: |o, v| {
            o.max_loras = count(v, 0, 1024)?;
            Ok(())
        },
        effective: Some(|r| r.max_loras.to_string()),
    },
    K {
        about: About {
            key: "lorar",
            label: "max_lora_rank",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "max-lora-rank", help: "--max-lora-rank", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.max_lora_rank.to_string(),
        set: |o, v| {
            o.max_lora_rank = count(v, 1, 512)?;
            Ok(())
        },
        effective: Some(|r| r.max_lora_rank.to_string()),
    },
    K {
        about: About {
            key: "samp",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "vllm-sampler",
                help: "the top-k/top-p sampler its profile runs (flashinfer, triton or native; default: the \
                       version's, VLLM_USE_FLASHINFER_SAMPLER and whether FlashInfer is installed decide)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.sampler.map_or("", Sampler::id).into(),
        set: |o, v| {
            o.sampler = Some(Sampler::parse(v).ok_or("use flashinfer, triton or native")?);
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "mxfp4",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "vllm-mxfp4-kernel",
                help: "the MXFP4 MoE kernel (marlin, triton or flashinfer; default: the GPU's usual one, Marlin on \
                       Hopper without triton_kernels). A pasted start-up log names it",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.mxfp4_kernel.map_or("", Mxfp4Kernel::id).into(),
        set: |o, v| {
            o.mxfp4_kernel = Some(Mxfp4Kernel::parse(v).ok_or("use marlin, triton or flashinfer")?);
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "kvmem",
            label: "kv_cache_memory",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "kv-cache-memory-bytes",
                aliases: &["kv-cache-memory"],
                help: "--kv-cache-memory-bytes (0.11+): each GPU's KV pool, bytes or a size (40GiB); the memory \
                       profile is skipped and --gpu-memory-utilization no longer sizes the pool",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt_size(o.kv_cache_memory_bytes),
        set: |o, v| {
            o.kv_cache_memory_bytes = Some(bytes(v)?);
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "xkv",
            label: "extensible KV cache (0.34+)",
            choices: &["on", "off"],
            #[cfg(feature = "cli")]
            cli: Cli {
                switches: &[(
                    "no-enable-extensible-kv-cache",
                    "off",
                    "--no-enable-extensible-kv-cache (0.34+): the KV pool from the profile's estimate within \
                     --gpu-memory-utilization (default 0.92), as before 0.34, not measured after warmup",
                )],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| on_off(!o.no_extensible_kv_cache),
        set: |o, v| {
            o.no_extensible_kv_cache = !on_or_off(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "eager",
            label: "enforce_eager",
            choices: &["off", "on"],
            #[cfg(feature = "cli")]
            cli: Cli {
                switches: &[("enforce-eager", "on", "--enforce-eager: no CUDA graphs captured, none profiled")],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| on_off(o.enforce_eager),
        set: |o, v| {
            o.enforce_eager = on_or_off(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "cpuoff",
            label: "cpu_offload_gb",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "cpu-offload-gb",
                help: "--cpu-offload-gb: GiB of each GPU's decoder-layer weights kept in host memory and read over \
                       PCIe every step (a bigger GPU, virtually, at a slower speed)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt_fraction(o.cpu_offload_gb),
        set: |o, v| {
            o.cpu_offload_gb = Some(gibibytes(v)?).filter(|g| *g > 0.0);
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "spec",
            label: "speculative decoding",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "speculative-config",
                help: "--speculative-config, vLLM's JSON or method:tokens (ngram:4, suffix:8, mtp, mtp:2): MTP adds \
                       the checkpoint's prediction layers to the weights and the KV cache; n-gram and suffix only the rejection \
                       sampler's warm-up rows",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.speculative.map_or_else(String::new, Speculative::text),
        set: |o, v| {
            o.speculative = match v.trim() {
                "off" | "none" => None,
                v => Some(Speculative::parse(v)?),
            };
            Ok(())
        },
        effective: Some(|_| "off".into()),
    },
    K {
        about: About {
            key: "mm",
            label: "limit_mm_per_prompt",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "limit-mm-per-prompt",
                help: "--limit-mm-per-prompt, vLLM's JSON or image:N,video:N (one count: every modality; 0: none): \
                       the images the profile runs the vision tower over (default 999 each)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.mm_limits.text(),
        set: |o, v| {
            o.mm_limits = MmLimits::parse(v)?;
            Ok(())
        },
        effective: Some(|_| "999".into()),
    },
    K {
        about: About {
            key: "dp",
            label: "data_parallel_size",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "data-parallel-size",
                help: "--data-parallel-size: replicas of the TP × PP group, each with its own KV pool, the requests \
                       spread over them (the GPUs are DP × TP × PP)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.data_parallel_size.to_string(),
        set: |o, v| {
            o.data_parallel_size = count(v, 1, MAX_DATA_PARALLEL)?;
            Ok(())
        },
        effective: Some(|_| "1".into()),
    },
    K {
        about: About {
            key: "ep",
            label: "enable_expert_parallel",
            choices: &["off", "on"],
            #[cfg(feature = "cli")]
            cli: Cli {
                switches: &[(
                    "enable-expert-parallel",
                    "on",
                    "--enable-expert-parallel: a MoE model's experts go whole to the DP × TP ranks instead of being \
                     sharded by TP",
                )],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| on_off(o.enable_expert_parallel),
        set: |o, v| {
            o.enable_expert_parallel = on_or_off(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "a2a",
            label: "all2all_backend",
            choices: All2All::IDS,
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "all2all-backend",
                help: "--all2all-backend with expert parallelism over data-parallel replicas: DeepEP's kernels hold \
                       1 GiB of NVLink buffer, and the low-latency ones an RDMA buffer for 256 tokens per rank and \
                       expert, outside the KV budget",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.all2all_backend.map_or("", All2All::id).into(),
        set: |o, v| {
            o.all2all_backend = Some(All2All::parse(v).ok_or_else(|| format!("use {}", All2All::IDS.join(", ")))?);
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "ner",
            label: "num_redundant_experts",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "num-redundant-experts",
                help: "--enable-eplb with num_redundant_experts (--eplb-config): copies of experts placed beside the \
                       model's over the EP ranks (needs --enable-expert-parallel)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.num_redundant_experts.to_string(),
        set: |o, v| {
            o.num_redundant_experts = count(v, 0, 1 << 16)?;
            Ok(())
        },
        effective: Some(|_| "0".into()),
    },
];
