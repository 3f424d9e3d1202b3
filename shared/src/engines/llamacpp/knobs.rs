//! llama.cpp's settings, declared once (`super::super::knobs`): in the order
//! a link writes them.

#[cfg(feature = "cli")]
use crate::engines::knobs::Cli;
use crate::engines::knobs::{About, Knob, bit, cache_type, count, opt, switch, tokens_or_zero};
use crate::engines::knobs::{cpu_moe_knob, host_ram_knob};

use super::{CacheType, FitMode, FlashAttention, Fork, Options, Report, SplitMode, TensorOverrides, TensorSplit};

type K = Knob<Options, Report>;

/// A `1`/`0` setting that is a switch on the command line.
macro_rules! toggle {
    ($key:literal, $flag:literal, $help:literal, $field:ident) => {
        K {
            about: About {
                key: $key,
                #[cfg(feature = "cli")]
                cli: Cli { switches: &[($flag, "1", $help)], ..Cli::NONE },
                ..About::NONE
            },
            get: |o| bit(o.$field),
            set: |o, v| {
                o.$field = switch(v)?;
                Ok(())
            },
            effective: None,
        }
    };
}

pub static KNOBS: &[K] = &[
    K {
        about: About {
            key: "nctx",
            label: "n_ctx (-c)",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "n-ctx",
                help: "-c, the total context of all slots (default: prompt + new tokens for every slot; 0: the trained \
                       context)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt(o.n_ctx),
        set: |o, v| {
            o.n_ctx = tokens_or_zero(v)?;
            Ok(())
        },
        effective: Some(|r| r.n_ctx.to_string()),
    },
    K {
        about: About {
            key: "ngl",
            label: "n_gpu_layers (-ngl)",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "n-gpu-layers", help: "-ngl (default: every layer and the output)", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| opt(o.n_gpu_layers),
        set: |o, v| {
            o.n_gpu_layers = Some(count(v, 0, 100_000)?);
            Ok(())
        },
        effective: Some(|r| r.n_gpu_layers.to_string()),
    },
    K {
        about: About {
            key: "np",
            label: "parallel (-np)",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "parallel", help: "-np, parallel slots (default: --concurrency)", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| opt(o.parallel),
        set: |o, v| {
            o.parallel = Some(count(v, 1, 4096)?);
            Ok(())
        },
        effective: Some(|r| r.parallel.to_string()),
    },
    K {
        about: About {
            key: "fa",
            label: "Flash attention (-fa)",
            choices: &["on", "off"],
            #[cfg(feature = "cli")]
            cli: Cli { flag: "flash-attn", help: "-fa on, off or auto (auto is on where CUDA runs it)", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.flash_attention.id().into(),
        set: |o, v| {
            o.flash_attention = FlashAttention::parse(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "ctk",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "cache-type-k",
                help: "-ctk/--cache-type-k (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1); default: --kv-dtype",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.cache_type_k.map_or("", CacheType::id).into(),
        set: |o, v| {
            o.cache_type_k = cache_type(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "ctv",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "cache-type-v", help: "-ctv/--cache-type-v; default: the key type", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.cache_type_v.map_or("", CacheType::id).into(),
        set: |o, v| {
            o.cache_type_v = cache_type(v)?;
            Ok(())
        },
        effective: None,
    },
    cpu_moe_knob!(
        "n_cpu_moe (--n-cpu-moe)",
        "--n-cpu-moe N, the routed experts of the first N layers stay on the CPU",
        "--cpu-moe, every layer's routed experts stay on the CPU"
    ),
    toggle!("nkvo", "no-kv-offload", "-nkvo/--no-kv-offload, the KV cache stays in host memory", no_kv_offload),
    toggle!("kvu", "kv-unified", "--kv-unified, one KV stream for all slots", kv_unified),
    toggle!("swafull", "swa-full", "--swa-full, sliding-window layers keep the whole context", swa_full),
    K {
        about: About {
            key: "ot",
            label: "Tensor overrides (-ot)",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "override-tensor",
                aliases: &["ot"],
                help: "-ot/--override-tensor PATTERN=BUFFER[,…] (CPU, CUDA0, …); repeatable, the first match wins",
                repeats: true,
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.tensor_overrides.as_str().into(),
        set: |o, v| {
            o.tensor_overrides = TensorOverrides::parse(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "ts",
            label: "Tensor split (-ts)",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "tensor-split",
                help: "-ts/--tensor-split, a proportion per GPU (`3,1`); default: by memory",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.tensor_split.text(),
        set: |o, v| {
            o.tensor_split = TensorSplit::parse(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "sm",
            label: "Split mode (-sm)",
            choices: &["layer", "row", "none"],
            #[cfg(feature = "cli")]
            cli: Cli { flag: "split-mode", help: "-sm/--split-mode layer, row or none", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.split_mode.id().into(),
        set: |o, v| {
            o.split_mode = SplitMode::parse(&v.trim().to_ascii_lowercase())?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "mg",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "main-gpu", help: "-mg/--main-gpu, the GPU --split-mode none uses", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.main_gpu.to_string(),
        set: |o, v| {
            o.main_gpu = count(v, 0, 1023)? as u16;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "mmproj",
            label: "Projector (--mmproj)",
            choices: &["off", "gpu", "cpu"],
            #[cfg(feature = "cli")]
            cli: Cli {
                switches: &[
                    (
                        "mmproj",
                        "gpu",
                        "--mmproj, the model's multimodal projector is loaded (its vision tower's bytes)",
                    ),
                    ("no-mmproj-offload", "cpu", "--no-mmproj-offload, the projector stays on the CPU"),
                ],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| {
            match (o.mmproj, o.no_mmproj_offload) {
                (false, _) => "",
                (true, false) => "gpu",
                (true, true) => "cpu",
            }
            .into()
        },
        set: |o, v| {
            (o.mmproj, o.no_mmproj_offload) = match v.trim().to_ascii_lowercase().as_str() {
                "off" => (false, false),
                "gpu" => (true, false),
                "cpu" => (true, true),
                _ => return Err("use off, gpu or cpu".into()),
            };
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "fit",
            label: "--fit",
            choices: &["on", "off"],
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "fit",
                help: "--fit on|off, whether it fits the flags left at their defaults to free memory before loading",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.fit.id().into(),
        set: |o, v| {
            o.fit = FitMode::parse(v)?;
            Ok(())
        },
        effective: None,
    },
    host_ram_knob!(),
    K {
        about: About {
            key: "ub",
            label: "n_ubatch (-ub)",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "n-ubatch", help: "-ub/--ubatch-size, the physical batch (default 512)", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.n_ubatch.to_string(),
        set: |o, v| {
            o.n_ubatch = count(v, 1, 65_536)?;
            Ok(())
        },
        effective: Some(|r| r.n_ubatch.to_string()),
    },
    K {
        about: About {
            key: "nb",
            label: "n_batch (-b)",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "batch-size",
                short: Some('b'),
                help: "-b/--batch-size, the logical batch (default 2048); the physical batch is at most this",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.n_batch.to_string(),
        set: |o, v| {
            o.n_batch = count(v, 1, 1 << 20)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "fitt",
            #[cfg(feature = "cli")]
            cli: Cli { flag: "fit-target", help: "--fit-target MiB, what --fit keeps free on each GPU", ..Cli::NONE },
            ..About::NONE
        },
        get: |o| o.fit_target_mib.to_string(),
        set: |o, v| {
            o.fit_target_mib = count(v, 0, 1 << 20)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "lcb",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "llamacpp-build",
                help: "the llama.cpp build whose rules apply, as its log's `build: N (…)` names it (default: the \
                       newest known; before b9410 the KQ mask is held in F32 even with flash attention)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt(o.build),
        set: |o, v| {
            o.build = Some(count(v, 0, 1_000_000)?);
            Ok(())
        },
        effective: None,
    },
    // ik_llama.cpp's settings (`ik.rs`), off the page (its first load is at
    // its ceiling): the CLI, links and a pasted log set them. Refused on a
    // mainline plan (`ik::check`).
    K {
        about: About {
            key: "fork",
            choices: &["mainline", "ik"],
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "llamacpp-fork",
                help: "which llama.cpp: mainline (ggml-org) or ik (ikawrakow/ik_llama.cpp, its own flags and defaults; \
                       --llamacpp-build is then ik's build number)",
                switches: &[("ik-llama", "ik", "the plan runs ik_llama.cpp (the same as --llamacpp-fork ik)")],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.fork.id().into(),
        set: |o, v| {
            o.fork = Fork::parse(v)?;
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "mla",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "mla-use",
                aliases: &["mla"],
                help: "ik_llama.cpp -mla/--mla-use 0-3, how an MLA model's cache is kept (0: K and V; 1-3: the latent; \
                       default: 3 from build 3983, 0 before)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.mla.map(|m| m.to_string()).unwrap_or_default(),
        set: |o, v| {
            o.mla = Some(count(v, 0, 3)? as u8);
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "amb",
            #[cfg(feature = "cli")]
            cli: Cli {
                flag: "attention-max-batch",
                aliases: &["amb"],
                help: "ik_llama.cpp -amb/--attention-max-batch MiB, the cap on one attention intermediate (0: none; \
                       default: 256 from build 4832, 0 before)",
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| opt(o.attn_max_batch_mib),
        set: |o, v| {
            o.attn_max_batch_mib = Some(count(v, 0, 1 << 20)?);
            Ok(())
        },
        effective: None,
    },
    K {
        about: About {
            key: "fmoe",
            #[cfg(feature = "cli")]
            cli: Cli {
                switches: &[
                    ("fused-moe", "1", "ik_llama.cpp -fmoe/--fused-moe, one op for the experts' up and gate"),
                    (
                        "no-fused-moe",
                        "0",
                        "ik_llama.cpp -no-fmoe/--no-fused-moe (fused is the default from build 3928)",
                    ),
                ],
                ..Cli::NONE
            },
            ..About::NONE
        },
        get: |o| o.fused_moe.map(bit).unwrap_or_default(),
        set: |o, v| {
            o.fused_moe = Some(switch(v)?);
            Ok(())
        },
        effective: None,
    },
    toggle!(
        "rtr",
        "run-time-repack",
        "ik_llama.cpp -rtr/--run-time-repack, host weights repacked at load (mmap off: read into RAM)",
        run_time_repack
    ),
];
