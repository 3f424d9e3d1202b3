//! SGLang's settings, declared once (`super::super::knobs`): in the order a
//! link writes them.

#[cfg(feature = "cli")]
use crate::engines::knobs::Cli;
use crate::engines::knobs::{About, Knob, count, fraction, on_off, on_or_off, opt, opt_fraction, tokens};
use crate::units::shortest;

use super::{DeepepMode, MOE_A2A_IDS, Options, Report, Version, moe_a2a_deepep};

type K = Knob<Options, Report>;

pub static KNOBS: &[K] = &[
    K {
        about: About {
            key: "sglang",
            label: "SGLang rules",
            choices: Version::IDS_NEWEST_FIRST,
            always: true,
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "sglang-version",
                help: "which release's defaults (tp: mem_fraction_static by TP degree; latest: the newest known)",
                default_word: "latest",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.version.id().into(),
        set: |o, v| {
            o.version = Version::parse_pinned(v)
                .ok_or_else(|| format!("not SGLang rules Headroom knows ({})", Version::IDS_NEWEST_FIRST.join(", ")))?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "mfs",
            label: "mem_fraction_static",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "mem-fraction-static",
                help: "--mem-fraction-static (default: from GPU memory from 0.5.23; by TP degree, tp)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt_fraction(o.mem_fraction_static),
        set: |o, v| {
            o.mem_fraction_static = Some(fraction(v)?);
            Ok(())
        },
        effective: Some(|r| shortest(r.mem_fraction_static)),
    },
    K {
        about: About {
            key: "cl",
            label: "context_length",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "context-length", help: "--context-length", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| opt(o.context_length),
        set: |o, v| {
            o.context_length = tokens(v)?;
            Ok(())
        },
        effective: Some(|r| r.context_length.to_string()),
    },
    K {
        about: About {
            key: "mbt",
            label: "chunked_prefill_size",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "chunked-prefill-size",
                aliases: &["max-num-batched-tokens"],
                help: "--chunked-prefill-size (default 2,048, or 8,192 on GPUs of 70 GiB or more)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt(o.chunked_prefill_size),
        set: |o, v| {
            o.chunked_prefill_size = tokens(v)?;
            Ok(())
        },
        effective: Some(|r| r.chunked_prefill_size.to_string()),
    },
    K {
        about: About {
            key: "dp",
            label: "dp_size",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "dp-size",
                help: "--dp-size: replicas of the TP × PP group (the GPUs are DP × TP × PP), or, with \
                       --enable-dp-attention, attention groups within the TP group",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.dp_size.to_string(),
        set: |o, v| {
            o.dp_size = count(v, 1, crate::plan::MAX_GPUS as u64)?;
            Ok(())
        },
        effective: Some(|_| "1".into()),
    },
    K {
        about: About {
            key: "dpa",
            label: "enable_dp_attention",
            choices: &["off", "on"],
            #[cfg(feature = "cli")]
            cli: Cli {
                switches: &[(
                    "enable-dp-attention",
                    "on",
                    "--enable-dp-attention: attention over TP ÷ DP ranks (its KV heads too), the embedding \
                     replicated, the MLP and experts over the whole TP group",
                )],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| on_off(o.enable_dp_attention),
        set: |o, v| {
            o.enable_dp_attention = on_or_off(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "ep",
            label: "ep_size",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "ep-size",
                help: "--ep-size: the experts in EP sets over the TP group, each expert sharded over TP ÷ EP ranks",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.ep_size.to_string(),
        set: |o, v| {
            o.ep_size = count(v, 1, crate::plan::MAX_GPUS as u64)?;
            Ok(())
        },
        effective: Some(|r| r.ep_size.to_string()),
    },
    K {
        about: About {
            key: "ner",
            label: "ep_num_redundant_experts",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "ep-num-redundant-experts",
                help: "--ep-num-redundant-experts: copies of experts beside the model's, split into the --ep-size sets",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.ep_num_redundant_experts.to_string(),
        set: |o, v| {
            o.ep_num_redundant_experts = count(v, 0, 1 << 16)?;
            Ok(())
        },
        effective: Some(|_| "0".into()),
    },
    K {
        about: About {
            key: "a2a",
            label: "moe_a2a_backend",
            choices: MOE_A2A_IDS,
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "moe-a2a-backend",
                help: "--moe-a2a-backend deepep: DeepEP's all-to-all, the experts over every TP rank (--ep-size \
                       becomes --tp-size), and from 0.5.23 2 GiB (+1 GiB for prefill graphs) kept outside the \
                       automatic mem_fraction_static for its buffers",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| MOE_A2A_IDS[usize::from(o.moe_a2a_deepep)].into(),
        set: |o, v| {
            o.moe_a2a_deepep =
                moe_a2a_deepep(v).ok_or("use none or deepep (the all-to-all backends Headroom models)")?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "dem",
            label: "deepep_mode",
            choices: DeepepMode::IDS,
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "deepep-mode",
                help: "--deepep-mode with DeepEP: auto (normal kernels for prefill, low-latency for decode), \
                       normal (CUDA graphs off) or low_latency",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.deepep_mode.id().into(),
        set: |o, v| {
            o.deepep_mode = DeepepMode::parse(v).ok_or_else(|| format!("use {}", DeepepMode::IDS.join(", ")))?;
            Ok(())
        },
        effective: None,
    },
];
