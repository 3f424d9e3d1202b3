//! Ollama's settings, declared once (`super::super::knobs`): in the order a
//! link writes them. Short labels for the page's two-column grid; the fixes
//! write the variables (`OLLAMA_NUM_PARALLEL`, `OLLAMA_KV_CACHE_TYPE`,
//! `LLAMA_ARG_N_CPU_MOE`).

#[cfg(feature = "cli")]
use crate::engines::knobs::Cli;
use crate::engines::knobs::{About, Knob, cache_type, count, on_off, on_or_off, opt, tokens};
use crate::engines::knobs::{cpu_moe_knob, host_ram_knob};
use crate::engines::llamacpp::{FlashAttention, Report};

use super::{Options, parse_flash_attention};

type K = Knob<Options, Report>;

pub static KNOBS: &[K] = &[
    K {
        about: About {
            key: "numctx",
            label: "num_ctx",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "num-ctx",
                help: "num_ctx, one request's context (default: 4096, 32768 or 262144 by the GPUs' memory)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt(o.num_ctx),
        set: |o, v| {
            o.num_ctx = tokens(v)?;
            Ok(())
        },
        effective: Some(|r| r.n_ctx_per_slot.to_string()),
    },
    K {
        about: About {
            key: "np",
            label: "Parallel requests",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "num-parallel", help: "OLLAMA_NUM_PARALLEL, requests at once (default 1)", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.num_parallel.to_string(),
        set: |o, v| {
            o.num_parallel = count(v, 1, 4096)?;
            Ok(())
        },
        effective: Some(|r| r.parallel.to_string()),
    },
    K {
        about: About {
            key: "kvt",
            label: "KV cache type",
            choices: &["default", "f16", "q8_0", "q4_0"],
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "kv-cache-type",
                help: "OLLAMA_KV_CACHE_TYPE (f16, q8_0, q4_0, …); default: --kv-dtype",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.kv_cache_type.map_or("", |t| t.id()).into(),
        set: |o, v| {
            o.kv_cache_type = cache_type(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "fa",
            label: "Flash attention",
            choices: &["auto", "on", "off"],
            #[cfg(feature = "cli")]
            cli: Cli { flag: "flash-attention", help: "OLLAMA_FLASH_ATTENTION, auto (unset), on or off", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.flash_attention.map_or("", FlashAttention::id).into(),
        set: |o, v| {
            o.flash_attention = parse_flash_attention(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "numgpu",
            label: "num_gpu",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "num-gpu",
                help: "num_gpu, the layers passed as -ngl (default: llama.cpp's --fit places them)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt(o.num_gpu),
        set: |o, v| {
            o.num_gpu = Some(count(v, 0, 100_000)?);
            Ok(())
        },
        effective: Some(|r| r.n_gpu_layers.to_string()),
    },
    K {
        about: About {
            key: "numbatch",
            label: "num_batch",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "num-batch",
                help: "num_batch, passed as -b and -ub (default: Ollama's choice of 512, 1024 or 2048)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt(o.num_batch),
        set: |o, v| {
            o.num_batch = Some(count(v, 1, 65_536)?);
            Ok(())
        },
        effective: Some(|r| r.n_ubatch.to_string()),
    },
    cpu_moe_knob!(
        "CPU MoE layers",
        "LLAMA_ARG_N_CPU_MOE=N, the routed experts of the first N layers stay on the CPU",
        "every layer's routed experts stay on the CPU"
    ),
    K {
        about: About {
            key: "mmproj",
            label: "Projector",
            choices: &["off", "on"],
            #[cfg(feature = "cli")]
            cli: Cli {
                switches: &[("mmproj", "on", "the model's multimodal projector is loaded (its vision tower's bytes)")],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| on_off(o.mmproj),
        set: |o, v| {
            o.mmproj = on_or_off(v)?;
            Ok(())
        },
        effective: None,
    },
    host_ram_knob!(),
];
