//! `headroom diagnose` as a user runs it: the real binary on the parser's
//! corpus (`shared/tests/fixtures/oom/`), its JSON contract (`docs/cli.md`),
//! a plan given with the same flags as `estimate`, and one clear line on
//! input it cannot read.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/tests/fixtures/oom");

fn fixture(name: &str) -> String {
    format!("{CORPUS}/{name}")
}

fn headroom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_headroom")).args(args).output().expect("run headroom")
}

fn json(args: &[&str]) -> Value {
    let out = headroom(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn cause_ids(v: &Value) -> Vec<&str> {
    v["causes"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect()
}

#[test]
fn json_has_the_figures_and_ranked_causes() {
    let file = fixture("10-modern-several-processes.txt");
    let v = json(&["diagnose", &file, "--json"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["recognised"], true);
    assert_eq!(v["kind"], "pytorch");
    assert_eq!(v["requested_bytes"], 3_758_096_384_u64);
    assert_eq!(v["gpu_index"], 2);
    assert_eq!(v["total_bytes"], 84_986_665_370_u64);
    assert_eq!(v["free_bytes"], 1_299_227_607_u64);
    assert_eq!(v["allocated_bytes"], 19_112_604_467_u64);
    assert_eq!(v["reserved_bytes"], 20_197_083_709_u64);
    assert_eq!(v["reserved_unallocated_bytes"], 1_084_479_242_u64);
    assert_eq!(v["processes"][0]["pid"], 31337);
    assert_eq!(v["processes"][0]["used_bytes"], 43_078_521_979_u64);
    assert_eq!(cause_ids(&v)[0], "other_processes");
    let causes = v["causes"].as_array().unwrap();
    for (i, c) in causes.iter().enumerate() {
        assert_eq!(c["rank"], i + 1);
        assert!(c["score"].as_u64().unwrap() <= 100);
        assert!(!c["evidence"].as_array().unwrap().is_empty());
    }
    let fixes = v["fixes"].as_array().unwrap();
    assert_eq!(fixes[0]["id"], "kill_process");
    assert_eq!(fixes[0]["code"], "kill 31337");
    assert_eq!(fixes[0]["saves_bytes"], 43_078_521_979_u64);
    assert_eq!(v["checklist"].as_array().unwrap().len(), 5);
    assert!(v.get("plan").is_none());
}

#[test]
fn json_is_a_stable_contract() {
    for (name, file) in [
        ("diagnose_fragmentation", "16-modern-json-log-escaped.txt"),
        ("diagnose_vllm_kv", "28-vllm-v1-kv-too-small-estimate.txt"),
        ("diagnose_llama_weights", "33-llama-model-load.txt"),
    ] {
        let value = json(&["diagnose", &fixture(file), "--json"]);
        insta::assert_json_snapshot!(name, value);
    }
}

/// Every figure and fact the paste's reader finds is in `--json`: the report's
/// own fields, by name (its notes are merged with the diagnosis's).
#[test]
fn json_carries_every_field_of_the_report() {
    let file = fixture("33-llama-model-load.txt");
    let text = std::fs::read_to_string(&file).expect("fixture");
    let report = serde_json::to_value(shared::oom::parse(&text)).expect("a report");
    let out = json(&["diagnose", &file, "--json"]);
    let missing: Vec<&String> =
        report.as_object().expect("an object").keys().filter(|k| out.get(k.as_str()).is_none()).collect();
    assert!(missing.is_empty(), "diagnose --json lacks {missing:?}");
}

#[test]
fn a_plan_uses_the_same_flags_as_estimate() {
    let file = fixture("08-modern-basic.txt");
    let v = json(&["diagnose", &file, "--model", "llama-3.1-70b", "--weights", "bf16", "--json"]);
    assert_eq!(cause_ids(&v)[..2], ["too_large_overall", "weights_too_large"]);
    assert_eq!(v["plan"]["model"], "Llama 3.1 70B Instruct");
    assert_eq!(v["plan"]["fits"], false);
    assert_eq!(v["plan"]["verdict"]["kind"], "does_not_fit_at_load");
    let fixes: Vec<&str> = v["fixes"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert!(fixes.contains(&"bigger_gpu") && fixes.contains(&"smaller_model"), "{fixes:?}");

    let v = json(&[
        "diagnose",
        &file,
        "--model",
        "llama-3.1-8b",
        "--max-new-tokens",
        "4096",
        "--concurrency",
        "16",
        "--json",
    ]);
    assert_eq!(cause_ids(&v)[0], "kv_cache_growth");
    let fix = v["fixes"].as_array().unwrap().iter().find(|f| f["id"] == "max_new_tokens").expect("max_new_tokens");
    assert_eq!(fix["fits"], true);
    assert!(fix["code"].as_str().unwrap().starts_with("model.generate(**inputs, max_new_tokens="));
}

#[test]
fn reads_standard_input_and_prints_text() {
    let text = std::fs::read(fixture("12-modern-memory-fraction-allowed.txt")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["diagnose", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[memory_cap, score 85]"), "{stdout}");
    assert!(stdout.contains("torch.cuda.set_per_process_memory_fraction(0.50)"), "{stdout}");
    assert!(stdout.contains("Checklist:"), "{stdout}");
}

#[test]
fn unreadable_or_unrecognised_input_exits_non_zero_with_one_line() {
    let no_oom = fixture("40-no-oom-keyerror.txt");
    for args in [
        &["diagnose", "/nonexistent/oom.txt"][..],
        &["diagnose", CORPUS],
        &["diagnose", &no_oom],
        &["diagnose", &no_oom, "--json"],
        &["diagnose", &fixture("08-modern-basic.txt"), "--model", "no-such-model"],
    ] {
        let out = headroom(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("headroom: "), "{err}");
    }
    // Unrecognised text still prints its (empty) diagnosis for scripts.
    let out = headroom(&["diagnose", &no_oom, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["recognised"], false);
    assert_eq!(v["causes"], Value::Array(Vec::new()));
}

const STARTUP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/tests/fixtures/startup");

/// A start-up log alone is not an error: it is read, listed and exits 0.
#[test]
fn a_startup_log_is_listed_line_by_line() {
    let file = format!("{STARTUP}/llamacpp-old-two-gpus.txt");
    let out = headroom(&["diagnose", &file]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("llama.cpp start-up log (n_ctx 4,096, cache types K f16 / V f16)"), "{text}");
    assert!(text.contains("line    10 [CUDA1]: model buffer: 13.66 GiB"), "{text}");
    assert!(text.starts_with("\nllama.cpp start-up log"), "the empty diagnosis is not printed: {text}");

    let v = json(&["diagnose", &format!("{STARTUP}/vllm-v1-021-cudagraph-profiled.txt"), "--json"]);
    assert_eq!(v["recognised"], false);
    assert_eq!(v["startup"]["engine"], "vllm");
    let facts = v["startup"]["facts"].as_array().unwrap();
    assert_eq!(facts[1]["figure"]["kind"], "available_kv");
    assert_eq!(facts[1]["line"], 4);
    // 111.99 GiB, exact from the logged decimals.
    assert_eq!(facts[1]["figure"]["bytes"], (11_199_u64 * (1 << 30) + 50) / 100);
}

/// vLLM's "Free memory on device" line copied from a web page, with a
/// no-break space before its first figure (a fuzzing finding, issue 40:
/// `fuzz/regressions/startup/`): read as the plain line is, not a panic.
#[test]
fn a_no_break_space_in_a_vllm_line_reads_its_figures() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/regressions/startup/startup-no-break-space.txt");
    let v = json(&["diagnose", file, "--json"]);
    let facts = v["startup"]["facts"].as_array().unwrap();
    let bytes = |kind: &str| {
        facts.iter().find(|f| f["figure"]["kind"] == kind).map(|f| f["figure"]["bytes"].clone()).unwrap_or_default()
    };
    // 16.92 and 5.66 GiB, exact from the logged decimals.
    assert_eq!(bytes("weights"), (1692_u64 * (1 << 30) + 50) / 100, "{facts:?}");
    assert_eq!(bytes("activation_peak"), (566_u64 * (1 << 30) + 50) / 100, "{facts:?}");
}

/// With a plan, each logged figure sits beside the estimate's; the flags left
/// at their defaults take what the log says was run.
#[test]
fn a_startup_log_is_reconciled_with_the_plan() {
    let file = format!("{STARTUP}/vllm-v0-profile-llama3-8b.txt");
    let args = ["diagnose", &file, "--model", "llama-3-8b", "--gpu", "h100-sxm", "--vllm-version", "v0"];
    let out = headroom(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("taken from the log: engine vLLM, gpu_memory_utilization 0.9"), "{text}");
    assert!(text.contains("weights                    logged      14.96 GiB, predicted      14.96 GiB"), "{text}");

    let mut with_json = args.to_vec();
    with_json.push("--json");
    let v = json(&with_json);
    let rows = v["reconciled"].as_array().unwrap();
    let weights = rows.iter().find(|r| r["term"] == "weights").unwrap();
    assert_eq!(weights["line"], 8);
    assert_eq!(weights["logged"]["unit"], "bytes");
    assert!(
        rows.iter().any(|r| r["term"] == "available KV cache memory" && r["predicted"]["value"].as_u64().is_some())
    );

    // A log of another engine than the plan's: the plan runs as the log
    // says it ran, as the page runs it (`startup::logged_scenario`).
    let sglang = format!("{STARTUP}/sglang-qwen3moe-load-and-pool.txt");
    let out = headroom(&["diagnose", &sglang, "--model", "qwen3-30b-a3b", "--engine", "vllm"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("taken from the log: engine SGLang"), "{text}");
    assert!(!text.contains("but the plan runs vLLM"), "{text}");
}

/// A llama.cpp log with the plan that ran: each buffer predicted vs logged.
/// The log of ggml-org/llama.cpp#6122 is Command-R v01 (40 layers of 64 KV
/// heads × 128, f16 cache, n_ctx 4096) on a 12 GiB and a 24 GiB GPU.
#[test]
fn a_llamacpp_log_reconciles_with_the_plan() {
    let dir = std::env::temp_dir().join(format!("headroom-reconcile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "num_attention_heads": 64, "num_key_value_heads": 64, "num_hidden_layers": 40,
        "intermediate_size": 22528, "vocab_size": 256000, "max_position_embeddings": 131072}"#,
    )
    .unwrap();
    let file = format!("{STARTUP}/llamacpp-old-two-gpus.txt");
    let args = [
        "diagnose",
        &file,
        "--config",
        config.to_str().unwrap(),
        "--engine",
        "llama.cpp",
        "--weights",
        "q4_k_m",
        "--n-ctx",
        "4096",
        "--cache-type-k",
        "f16",
        // Flash attention was off by default in builds of its time.
        "--flash-attn",
        "off",
        "--gpu-memory",
        "12GiB,24GiB",
    ];
    let out = headroom(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("llama.cpp buffers, predicted vs logged"), "{text}");
    let v = json(&[&args[..], &["--json"]].concat());
    let buffers = v["buffers"].as_array().unwrap();
    let kv: u64 = buffers
        .iter()
        .filter(|b| b["buffer"] == "kv" && b["device"].as_str().unwrap().starts_with("CUDA"))
        .map(|b| b["predicted_bytes"].as_u64().unwrap())
        .sum();
    // KV self size = 5120.00 MiB in the log: the whole cache, exact.
    assert_eq!(kv, 5120 << 20);
    // The split is taken from the log's per-GPU KV (12 and 28 layers, the
    // output with the second): each GPU's KV buffer is exact too.
    assert!(text.contains("--tensor-split 12,29"), "{text}");
    for b in buffers.iter().filter(|b| b["buffer"] == "kv" && b["device"].as_str().unwrap().starts_with("CUDA")) {
        assert_eq!(b["predicted_bytes"], b["logged_bytes"], "{b}");
    }
    let total = buffers.iter().find(|b| b["buffer"] == "kv_total").unwrap();
    assert_eq!(total["predicted_bytes"], total["logged_bytes"]);
    // "pipeline parallelism enabled (n_copies=4)": CUDA0 keeps four copies
    // of the token embeddings and three more KQ masks (issue 35). Logged
    // 672.01 MiB; within 1 %.
    let compute = buffers.iter().find(|b| b["device"] == "CUDA0" && b["buffer"] == "compute").unwrap();
    let (predicted, logged) = (compute["predicted_bytes"].as_f64().unwrap(), compute["logged_bytes"].as_f64().unwrap());
    assert!((predicted / logged - 1.0).abs() < 0.01, "{compute}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Real Ollama start-up logs: Ollama's runner prints llama.cpp's buffer
/// lines, and the plan runs as the log says (its `n_ctx`, and flash
/// attention off as Ollama defaulted it): Llama 3.1 8B Q4_K_M with 4 slots
/// of 2,048 on an RTX 4090 (Ollama 0.5.4) reconciles to the byte on the GPU's
/// model, KV and compute buffers; Phi-4 on a DGX Spark (Ollama ~0.13,
/// ollama/ollama#13552) to the MiB on its KV buffer, its compute buffer
/// within 5 %.
#[test]
fn ollama_logs_reconcile_buffer_by_buffer() {
    let buffer = |v: &Value, device: &str, kind: &str| {
        let b = v["buffers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["device"] == device && b["buffer"] == kind)
            .unwrap_or_else(|| panic!("no {device} {kind} in {v}"))
            .clone();
        (b["logged_bytes"].as_u64().unwrap(), b["predicted_bytes"].as_u64().unwrap())
    };
    let file = format!("{STARTUP}/ollama-054-llama31-8b-q4km-rtx4090.txt");
    let args = ["diagnose", file.as_str(), "--model", "llama-3.1-8b", "--weights", "q4_k_m"];
    let text = String::from_utf8_lossy(&headroom(&args).stdout).into_owned();
    assert!(text.contains("flash attention off"), "{text}");
    let v = json(&[&args[..], &["--json"]].concat());
    for kind in ["model", "kv", "compute"] {
        let (logged, predicted) = buffer(&v, "CUDA0", kind);
        assert!(logged.abs_diff(predicted) <= 1 << 20, "CUDA0 {kind}: logged {logged}, predicted {predicted}");
    }
    let file = format!("{STARTUP}/ollama-013-phi4-14b-q4km-gb10.txt");
    let args =
        ["diagnose", file.as_str(), "--model", "phi-4", "--weights", "q4_k_m", "--gpu-memory", "119GiB", "--json"];
    let v = json(&args);
    let (logged, predicted) = buffer(&v, "CUDA0", "kv");
    assert_eq!(logged, predicted);
    let (logged, predicted) = buffer(&v, "CUDA0", "compute");
    assert!(logged.abs_diff(predicted) * 20 <= logged, "compute: logged {logged}, predicted {predicted}");
}

/// A pasted llama.cpp log and nothing else: its metadata (the GGUF header
/// dump and `llm_load_print_meta:`) names the model, so it is planned and
/// every buffer is predicted beside the logged one. Llama 3.1 8B Q4_K_M
/// (Ollama 0.5.4's runner): the model, KV and compute buffers to the byte,
/// as with `--model llama-3.1-8b` above.
#[test]
fn a_log_alone_names_its_model_and_is_planned() {
    let file = format!("{STARTUP}/ollama-054-llama31-8b-q4km-rtx4090.txt");
    let text = String::from_utf8_lossy(&headroom(&["diagnose", file.as_str()]).stdout).into_owned();
    assert!(text.contains("the model from the log's metadata (Meta Llama 3.1 8B Instruct)"), "{text}");
    assert!(text.contains("weights q4_k_m (the log's file type)"), "{text}");
    let v = json(&["diagnose", file.as_str(), "--json"]);
    assert_eq!(v["startup"]["model"]["layers"], 32);
    assert_eq!(v["startup"]["model"]["file_type"], "Q4_K - Medium");
    let buffers = v["buffers"].as_array().expect("buffers");
    let modelled: Vec<_> = buffers.iter().filter(|b| b["predicted_bytes"].is_u64()).collect();
    assert_eq!(modelled.len(), 6, "{buffers:?}");
    for b in modelled {
        let (logged, predicted) = (b["logged_bytes"].as_u64().unwrap(), b["predicted_bytes"].as_u64().unwrap());
        assert!(logged.abs_diff(predicted) <= 1 << 16, "{b}");
    }
}

/// A vLLM log given alone plans the preset its `model=` names (its Hub repo,
/// or a local path ending in it), as if `--model` named it.
#[test]
fn a_vllm_log_alone_plans_the_preset_it_names() {
    let file = format!("{STARTUP}/vllm-v1-0190-qwen25-7b-h100-debug.txt");
    let text = String::from_utf8_lossy(&headroom(&["diagnose", file.as_str()]).stdout).into_owned();
    assert!(text.contains("the model the log names (Qwen/Qwen2.5-7B-Instruct: the preset qwen2.5-7b)"), "{text}");
    // And its GPU by the memory CUDA reported (79.19 GiB: an H100).
    assert!(text.contains("GPU H100 SXM (79.19 GiB as CUDA reported it)"), "{text}");
    let alone = json(&["diagnose", file.as_str(), "--json"]);
    let given = json(&["diagnose", file.as_str(), "--model", "qwen2.5-7b", "--json"]);
    assert_eq!(alone["reconciled"], given["reconciled"]);
    // The log planned by itself: its KV budget within 0.1 % (58.53 GiB).
    let row = |term: &str| {
        alone["reconciled"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["term"] == term))
            .unwrap_or_else(|| panic!("a {term} row: {alone}"))
    };
    let kv = row("available KV cache memory");
    let (logged, predicted) = (kv["logged"]["value"].as_u64().unwrap(), kv["predicted"]["value"].as_u64().unwrap());
    assert!(logged.abs_diff(predicted) * 1000 <= logged, "{kv}");
    // The device's memory as CUDA reports it, beside the plan's (not the
    // larger nvidia-smi total): 79.19 GiB both, to the byte vLLM's floor
    // of the request leaves.
    let device = row("device memory");
    let (logged, predicted) = (device["logged"]["value"].as_u64(), device["predicted"]["value"].as_u64());
    assert!(logged.zip(predicted).is_some_and(|(l, p)| l.abs_diff(p) <= 2), "{device}");
    // A local path ending in the repo names it too (the Qwen3-VL runs).
    let vl = format!("{STARTUP}/vllm-v1-012-qwen3-vl-30b-a3b-h100-tp2-seqs64.txt");
    let text = String::from_utf8_lossy(&headroom(&["diagnose", vl.as_str()]).stdout).into_owned();
    assert!(text.contains("the preset qwen3-vl-30b-a3b"), "{text}");
    let v = json(&["diagnose", vl.as_str(), "--json"]);
    assert!(v["reconciled"].as_array().is_some_and(|r| !r.is_empty()), "{v}");
}

/// `headroom diagnose` and the page rebuild the same plan from every start-up
/// log fixture (`shared::startup::logged_scenario`, issue 33): the page's
/// path — the link's default plan for the model, run as the log says — gives
/// exactly the rows the CLI prints for the same model, or both refuse it.
#[test]
fn the_cli_and_the_page_plan_every_start_up_log_alike() {
    use shared::link::{LinkState, ModelSource};
    use shared::model::Model;
    use shared::startup;

    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/tests/fixtures/startup");
    // Heads and KV heads that every logged TP degree divides.
    let preset = "llama-3.1-8b";
    let model = Model::preset(preset).expect("preset");
    let mut paths: Vec<_> = std::fs::read_dir(dir).expect("fixtures").map(|e| e.expect("entry").path()).collect();
    paths.sort();
    let (mut compared, mut refused) = (0, 0);
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("fixture");
        let Some(log) = startup::read(&text) else { continue };
        let state = LinkState { model: ModelSource::Preset(preset.into()), ..LinkState::default() };
        let page = state.scenario_for(&model).and_then(|planned| {
            let (run, _) = startup::logged_scenario(&log, &model, planned.into_inner());
            run.validate_for(&model).map_err(|e| e.to_string())
        });
        let file = path.to_str().expect("UTF-8 path");
        let out = headroom(&["diagnose", file, "--json", "--model", preset]);
        match page {
            Ok(scenario) => {
                assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
                let cli: Value = serde_json::from_slice(&out.stdout).expect("JSON");
                let (rows, _) = startup::reconcile(&log, &shared::estimate::estimate(&model, scenario));
                assert_eq!(cli["reconciled"], serde_json::to_value(&rows).expect("rows"), "{file}");
                compared += 1;
            }
            Err(why) => {
                assert!(!out.status.success(), "{file}: the page refuses ({why}), the CLI plans it");
                refused += 1;
            }
        }
    }
    assert!(compared >= 40, "{compared} logs compared, {refused} refused by both");
}

/// A start-up log whose model is no preset is read, and says why nothing
/// stands beside its figures and what would set them against a plan.
#[test]
fn a_log_of_a_model_that_is_no_preset_says_how_to_plan_it() {
    let log = "INFO 04-22 15:13:40 [config.py:100] Initializing a V1 LLM engine (v0.19.0) with config: \
               model='ibm-granite/granite-3.1-8b-instruct', dtype=torch.bfloat16, max_seq_len=8192, \
               tensor_parallel_size=1\n\
               INFO 04-22 15:14:40 [kv_cache_utils.py:1087] GPU KV cache size: 384,432 tokens\n";
    let mut child = Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(["diagnose", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run headroom");
    child.stdin.take().expect("stdin").write_all(log.as_bytes()).expect("write the log");
    let out = child.wait_with_output().expect("headroom's output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains(
            "Not set against a plan: the log names the model ibm-granite/granite-3.1-8b-instruct, which is not a preset."
        ),
        "{text}"
    );
    assert!(text.contains("--model PRESET, --config config.json"), "{text}");
}

/// ggml's pinned-memory warning in a start-up log is said in the text
/// report too, not only in `--json`: it is no GPU out-of-memory error.
#[test]
fn a_start_up_log_with_only_the_pinned_warning_says_what_it_is() {
    let out = headroom(&["diagnose", &fixture("95-llama-pinned-host-only-ollama-deepseek.txt")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("note: No GPU out-of-memory error here"), "{text}");
    assert!(!text.contains("Paste the whole error"), "{text}");
}

/// An SGLang error checked against a model with no engine flag is checked
/// against SGLang's plan (its fixes SGLang's, not transformers' code), and
/// weights beyond any mem_fraction_static are not told to raise it.
#[test]
fn an_engines_own_error_sets_the_plans_engine() {
    let out = headroom(&[
        "diagnose",
        &fixture("116-sglang-0510-qwen3-8b-bf16-16gb-mfs093.txt"),
        "--model",
        "qwen3-8b",
        "--gpu-memory",
        "16GB",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("in bf16 with sglang"), "{text}");
    assert!(!text.contains("from_pretrained") && !text.contains("--mem-fraction-static 0.95"), "{text}");
}

/// A plan that fits with less to spare than the request that failed is at
/// the GPU's edge, within its own error: said so, not "the run differed"
/// (ik_llama.cpp#822 with `-fa`: 682 MiB asked; the log's plan fits its
/// 8 GiB RTX 3070 with about 100 MiB to spare).
#[test]
fn a_plan_at_the_edge_says_it_is_within_its_error() {
    let out = headroom(&["diagnose", &fixture("113-ik-llama-gptoss-compute-buffer-131k-fa.txt")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("the plan sits at the GPU's edge, within its own error"), "{text}");
}
