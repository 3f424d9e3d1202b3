//! Every real llama.cpp start-up log under `shared/tests/fixtures/startup/`
//! (`llamacpp-*`, and Ollama's, whose runner prints llama.cpp's lines),
//! planned as it ran and scored buffer by buffer: model, KV and compute,
//! device by device, predicted vs logged (issue 35). The table this prints
//! with `--nocapture` is the one in docs/measurements.md, section "llama.cpp
//! start-up logs, buffer by buffer (issue 35)".
//!
//! Each log is planned the way `headroom diagnose LOG` plans a log given
//! alone: the model rebuilt from the log's own metadata
//! (`startup::logged_model`), in the format its file type names, then
//! `startup::logged_scenario` (n_ctx, n_ubatch, flash attention, cache
//! types, `-ngl`, the split from the per-GPU KV buffers). What only a command
//! line says (`-ot`, `--n-cpu-moe`) is taken from the command the log's
//! source quotes, read by `startup::read_command_line` as a `llama-server`
//! line (llama-cli and llama-sweep-bench share common/arg.cpp). The GPUs
//! are large (the runs loaded; memory is not what is scored) and `--fit` is
//! off: none of these builds has it.

use shared::engines::Engine;
use shared::engines::llamacpp::{FitMode, Options};
use shared::estimate::{GpuSlot, Scenario};
use shared::formats::WeightFormat;
use shared::model::Model;
use shared::startup::{self, BufferCheck, StartupLog};
use shared::units::{GIB, MIB};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/startup");

/// One log: its fixture, the flags its source's command line gives that a
/// log does not print, and whether it ran on ik_llama.cpp (whose rules and
/// types Headroom does not model yet: scored, not held).
struct Run {
    file: &'static str,
    flags: &'static [&'static str],
    ik: bool,
    /// For an excerpt without the model's metadata: the preset (or the
    /// config) and the format the repository's other tests plan it with.
    given: Option<(&'static str, &'static str)>,
}

/// Command-R v01 as `llamacpp_split.rs` writes it (ggml-org/llama.cpp#6122).
const COMMAND_R: &str = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
    "num_attention_heads": 64, "num_key_value_heads": 64, "num_hidden_layers": 40,
    "intermediate_size": 22528, "vocab_size": 256000, "max_position_embeddings": 131072}"#;

const RUNS: &[Run] = &[
    Run { file: "ollama-054-llama31-8b-q4km-rtx4090", flags: &[], ik: false, given: None },
    Run { file: "ollama-013-phi4-14b-q4km-gb10", flags: &[], ik: false, given: Some(("phi-4", "q4_k_m")) },
    Run { file: "ollama-ggml-mistral3-q8-two-gpus", flags: &[], ik: false, given: None },
    Run { file: "ollama-device-go-cuda0", flags: &[], ik: false, given: None },
    Run { file: "llamacpp-mistral-7b-2k", flags: &[], ik: false, given: Some(("mistral-7b-v0.3", "q4_k_m")) },
    Run { file: "llamacpp-mistral-7b-32k", flags: &[], ik: false, given: Some(("mistral-7b-v0.3", "q4_k_m")) },
    // Flash attention did not exist yet in builds of its time (March 2024).
    Run { file: "llamacpp-old-two-gpus", flags: &["-fa", "off"], ik: false, given: Some((COMMAND_R, "q4_k_m")) },
    Run { file: "llamacpp-eight-gpus-q4-k", flags: &[], ik: false, given: None },
    Run { file: "llamacpp-new-iswa-colour", flags: &[], ik: false, given: None },
    Run {
        file: "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on",
        flags: &[
            "-ot",
            r"blk\.([0-7])\..*_exps\.=CUDA0",
            "-ot",
            r"blk\.([8-9]|1[0-1])\..*_exps\.=CUDA1",
            "-ot",
            r"blk\.(1[2-6])\..*_exps\.=CUDA2",
            "-ot",
            r"blk\.(1[7-9]|2[0-6])\..*_exps\.=CUDA3",
            "-ot",
            r"blk\..*_exps\.=CPU",
        ],
        ik: false,
        given: None,
    },
    Run { file: "llamacpp-b5192-glm-z1-32b-iq4xs-1gpu-fa-on", flags: &[], ik: false, given: None },
    Run { file: "llamacpp-b5269-qwen3-235b-a22b-q6k-2gpu-ngl0-fa-on", flags: &[], ik: false, given: None },
    Run {
        file: "llamacpp-b5622-qwen3-30b-a3b-q4km-2gpu-ot-exps-cpu-fa-off",
        flags: &["-ot", ".ffn_.*_exps.=CPU"],
        ik: false,
        given: None,
    },
    Run { file: "llamacpp-b5781-llama31-8b-q40-vulkan-1gpu-fa-on", flags: &[], ik: false, given: None },
    Run {
        file: "llamacpp-ik-18b0375-deepseek-r1-0528-3gpu-mla3-ot",
        flags: &[
            "-ot",
            r"blk\.(3|4|5|6)\.ffn_.*=CUDA0",
            "-ot",
            r"blk\.(7|8|9)\.ffn_.*=CUDA1",
            "-ot",
            r"blk\.(10|11|12)\.ffn_.*=CUDA2",
            "-ot",
            "exps=CPU",
        ],
        ik: true,
        given: None,
    },
    Run { file: "llamacpp-ik-b3673-qwen3-30b-a3b-udq4kxl-2gpu-t4-fmoe", flags: &[], ik: true, given: None },
];

/// A log planned as it ran, and each of its buffers beside the prediction;
/// `Err` with the reason when it cannot be planned from the log alone.
fn scored(run: &Run) -> Result<(StartupLog, Vec<BufferCheck>), String> {
    let text = std::fs::read_to_string(format!("{DIR}/{}.txt", run.file)).map_err(|e| e.to_string())?;
    let mut log = startup::read(&text).ok_or("no start-up lines")?;
    let (model, format) = match run.given {
        Some((id, weights)) => {
            let model = if id.starts_with('{') {
                Model::from_config_json("command-r-like", id).map_err(|e| e.to_string())?
            } else {
                Model::preset(id).map_err(|e| e.to_string())?
            };
            (model, Some(WeightFormat::parse(weights).map_err(|e| e.to_string())?))
        }
        None => {
            let meta = log.model.as_ref().ok_or("the excerpt prints no model metadata")?;
            let (model, format, _) = startup::logged_model(meta)?;
            (model, format)
        }
    };
    if !run.flags.is_empty() {
        let argv: Vec<&str> = std::iter::once("llama-server").chain(run.flags.iter().copied()).collect();
        let launch = startup::read_command_line(&argv).ok_or("the flags do not read")?;
        let c = launch.config;
        log.config.override_tensor = c.override_tensor.or(log.config.override_tensor.take());
        log.config.n_cpu_moe = c.n_cpu_moe.or(log.config.n_cpu_moe);
        log.config.flash_attn = log.config.flash_attn.take().or(c.flash_attn);
    }
    let planned = Scenario {
        weights: format.unwrap_or(Scenario::default().weights),
        engine: Engine::LlamaCpp(Options { fit: FitMode::Off, ..Options::default() }),
        gpus: vec![GpuSlot::custom("gpu", 1024 * GIB)],
        ..Scenario::default()
    };
    let (run_as, _) = startup::logged_scenario(&log, &model, planned);
    let valid = run_as.validate_for(&model).map_err(|e| e.to_string())?;
    let e = shared::estimate::estimate(&model, valid);
    Ok((log.clone(), startup::llamacpp_buffers(&log, &e)))
}

fn mib(b: u64) -> String {
    format!("{:.2}", b as f64 / MIB as f64)
}

/// The buffers of one kind, `DEVICE predicted / logged (error)`.
fn cells(checks: &[BufferCheck], kind: &str, gpu_only: bool) -> String {
    let rows: Vec<String> = checks
        .iter()
        .filter(|c| c.buffer == kind && (!gpu_only || is_gpu(&c.device)))
        .map(|c| match (c.predicted_bytes, c.error_percent()) {
            (Some(p), Some(err)) => format!("{} {} / {} ({err:+.1} %)", c.device, mib(p), mib(c.logged_bytes)),
            _ => format!("{} — / {}", c.device, mib(c.logged_bytes)),
        })
        .collect();
    if rows.is_empty() { "—".into() } else { rows.join(", ") }
}

fn is_gpu(device: &str) -> bool {
    !(device.starts_with("CPU") || device.ends_with("_Host") || device == "all")
}

/// Whether every buffer of `kind` on a GPU is within `permille` (and there
/// is one).
fn within(checks: &[BufferCheck], kind: &str, permille: i64) -> Option<bool> {
    let errors: Vec<i64> = checks
        .iter()
        .filter(|c| c.buffer == kind && is_gpu(&c.device))
        .filter_map(BufferCheck::error_permille)
        .collect();
    (!errors.is_empty()).then(|| errors.iter().all(|e| e.abs() <= permille))
}

/// GPU model buffers beyond 1 % and KV buffers not exact, on mainline logs.
const KNOWN_MISSES: &[&str] = &[
    "ollama-013-phi4-14b-q4km-gb10 CUDA0 model",
    "llamacpp-old-two-gpus CUDA0 model",
    "llamacpp-old-two-gpus CUDA1 model",
    "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on CUDA0 model",
    "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on CUDA1 model",
    "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on CUDA2 model",
    "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on CUDA0 kv",
    "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on CUDA1 kv",
    "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on CUDA2 kv",
    "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on CUDA3 kv",
];

/// Logs with a GPU compute buffer beyond 10 %.
const COMPUTE_MISSES: &[&str] = &[
    "llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on",
    "llamacpp-b5192-glm-z1-32b-iq4xs-1gpu-fa-on",
    "llamacpp-b5781-llama31-8b-q40-vulkan-1gpu-fa-on",
    "llamacpp-ik-18b0375-deepseek-r1-0528-3gpu-mla3-ot",
];

#[test]
fn every_llamacpp_log_is_scored_buffer_by_buffer() {
    let mut scored_logs = 0;
    let (mut compute_ok, mut compute_scored, mut kv_exact, mut kv_scored) = (0, 0, 0, 0);
    let (mut host_exact, mut host_scored, mut host_misses) = (0, 0, Vec::new());
    let mut broken: Vec<String> = Vec::new();
    let mut misses: Vec<&str> = Vec::new();
    println!("| Log | Model buffers (GPU) | KV buffers (GPU) | GPU compute | Host compute |");
    println!("|---|---|---|---|---|");
    for run in RUNS {
        let (_, checks) = match scored(run) {
            Ok(s) => s,
            Err(why) => {
                println!("| `{}` | not planned from the log alone: {why} | | | |", run.file);
                continue;
            }
        };
        scored_logs += 1;
        println!(
            "| `{}`{} | {} | {} | {} | {} |",
            run.file,
            if run.ik { " (ik_llama.cpp)" } else { "" },
            cells(&checks, "model", true),
            cells(&checks, "kv", true),
            cells(&checks, "compute", true),
            checks
                .iter()
                .filter(|c| c.buffer == "compute" && !is_gpu(&c.device))
                .map(|c| format!(
                    "{} {} / {}",
                    c.device,
                    c.predicted_bytes.map_or("—".into(), mib),
                    mib(c.logged_bytes)
                ))
                .collect::<Vec<_>>()
                .join(", "),
        );
        if let Some(ok) = within(&checks, "compute", 100) {
            compute_scored += 1;
            compute_ok += usize::from(ok);
            if !ok {
                misses.push(run.file);
            }
        }
        if let Some(exact) = within(&checks, "kv", 0) {
            kv_scored += 1;
            kv_exact += usize::from(exact);
        }
        // The host compute buffer (the graph's inputs on the host), by the
        // rules of the build the log names (F32 masks before b9410).
        for c in checks.iter().filter(|c| c.buffer == "compute" && c.device.ends_with("_Host")) {
            host_scored += 1;
            // To the log's two decimals of a MiB.
            if c.predicted_bytes.is_some_and(|p| p.abs_diff(c.logged_bytes) <= (1 << 20) / 200) {
                host_exact += 1;
            } else {
                host_misses.push(run.file);
            }
        }
        // What holds today on mainline builds (ik_llama.cpp's types and
        // rules are not modelled): the GPU KV buffers exact, the model
        // buffers within 1 %.
        if !run.ik {
            for c in checks.iter().filter(|c| is_gpu(&c.device)) {
                match c.buffer {
                    "kv" if c.predicted_bytes != Some(c.logged_bytes) => {
                        broken.push(format!("{} {} kv", run.file, c.device))
                    }
                    "model" if c.error_permille().is_none_or(|e| e.abs() > 10) => {
                        broken.push(format!("{} {} model", run.file, c.device))
                    }
                    _ => {}
                }
            }
        }
    }
    println!(
        "\n{scored_logs} of {} logs planned from the log alone; GPU compute within 10 % on {compute_ok} of \
         {compute_scored}; GPU KV exact on {kv_exact} of {kv_scored}; compute misses: {misses:?}",
        RUNS.len()
    );
    assert!(RUNS.len() >= 15);
    assert_eq!(scored_logs, 12, "logs planned");
    // What misses today, each said why in docs/measurements.md: a mix the
    // file type does not name (Unsloth's UD-Q2_K_XL, Phi-4's Q4_K_M from a
    // preset, Command-R from a config), and DeepSeek's V cache that builds
    // before b5500-ish still allocated beside K (-47 %).
    assert_eq!(broken, KNOWN_MISSES, "the GPU model/KV buffers that miss changed: update the list and the table");
    assert_eq!(misses, COMPUTE_MISSES, "the GPU compute buffers beyond 10 % changed: update the list and the table");
    assert_eq!((compute_ok, compute_scored, kv_exact, kv_scored), (8, 12, 10, 11));
    println!("host compute exact on {host_exact} of {host_scored}; misses: {host_misses:?}");
    // Phi-4 on Ollama's GB10 (23.01 logged, 18.01: its graph is not
    // llama.cpp's) and the `-ngl 0` run (the first GPU's host buffer holds
    // what the CPU backend computes, not modelled).
    assert_eq!(
        host_misses,
        ["ollama-013-phi4-14b-q4km-gb10", "llamacpp-b5269-qwen3-235b-a22b-q6k-2gpu-ngl0-fa-on"],
        "the host compute buffers that miss changed"
    );
    assert_eq!((host_exact, host_scored), (9, 11));
}
