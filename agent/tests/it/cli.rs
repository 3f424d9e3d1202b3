//! `headroom estimate|models|gpus` as a user runs them: the real binary, its
//! JSON contract (`docs/cli.md`) locked by snapshots, and one clear line on
//! bad input.

use std::process::{Command, Output};

fn headroom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_headroom")).args(args).output().expect("run headroom")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = headroom(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn estimate_json_is_a_stable_contract() {
    let cases: &[(&str, &[&str])] = &[
        ("llama_8b_4090", &["estimate", "--model", "llama-3.1-8b", "--json"]),
        (
            "qwen_32b_two_4090_vllm_awq",
            &[
                "estimate",
                "--model",
                "qwen2.5-32b",
                "--gpu",
                "rtx-4090",
                "--gpus",
                "2",
                "--tp",
                "2",
                "--weights",
                "awq-int4",
                "--engine",
                "vllm",
                "--max-model-len",
                "8192",
                "--json",
            ],
        ),
        (
            "llama_70b_q4km_llamacpp",
            &[
                "estimate",
                "--model",
                "llama-3.1-70b",
                "--weights",
                "q4_k_m",
                "--engine",
                "llama.cpp",
                "--n-ctx",
                "8192",
                "--n-gpu-layers",
                "40",
                "--json",
            ],
        ),
        (
            "mixtral_mixed_gpus_split",
            &["estimate", "--model", "mixtral-8x7b", "--weights", "nf4", "--gpu", "rtx-4090,rtx-4080", "--json"],
        ),
        ("gemma3_sglang", &["estimate", "--model", "gemma-3-27b", "--gpu", "h100-sxm", "--engine", "sglang", "--json"]),
        (
            "solve_max_context",
            &[
                "estimate",
                "--model",
                "llama-3.1-8b",
                "--weights",
                "fp8",
                "--concurrency",
                "4",
                "--solve",
                "max-context",
                "--json",
            ],
        ),
    ];
    for (name, args) in cases {
        let value = json(args);
        for key in ["parameters", "weight_bytes", "kv_bytes_per_token", "fits", "per_gpu"] {
            assert!(value.get(key).is_some(), "{name}: no `{key}`");
        }
        insta::assert_json_snapshot!(*name, value);
    }
}

#[test]
fn vllm_fields_sit_at_the_top_level() {
    let v = json(&["estimate", "--model", "llama-3.1-8b", "--engine", "vllm", "--max-model-len", "16384", "--json"]);
    assert!(v["num_gpu_blocks"].as_u64().unwrap() > 0);
    // vLLM 0.34's blocks are 64 tokens.
    assert_eq!(v["engine_report"]["block_size"].as_u64().unwrap(), 64);
    assert_eq!(v["kv_cache_tokens"].as_u64().unwrap(), v["num_gpu_blocks"].as_u64().unwrap() * 64);
    assert!(v["max_concurrency"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_layer_wise_split_prints_a_device_map() {
    let v = json(&[
        "estimate",
        "--model",
        "qwen2.5-32b",
        "--weights",
        "int8",
        "--gpu",
        "rtx-4090",
        "--gpus",
        "2",
        "--json",
    ]);
    let map = v["device_map"].as_object().expect("device_map");
    assert_eq!(map["model.embed_tokens"], 0);
    assert_eq!(map["lm_head"], 1);
    assert_eq!(map.len(), 64 + 3);
}

#[test]
fn catalogs_list_as_json() {
    let models = json(&["models", "--json"]);
    assert!(models.as_array().unwrap().len() >= 40);
    let gpus = json(&["gpus", "--json"]);
    assert!(gpus.as_array().unwrap().iter().all(|g| g["memory_bytes"].as_u64().unwrap() > 0));
}

#[test]
fn bad_input_exits_non_zero_with_one_line() {
    for args in [
        &["estimate", "--model", "no-such-model"][..],
        &["estimate", "--model", "llama-3.1-8b", "--weights", "q9_z"],
        &["estimate", "--model", "llama-3.1-8b", "--gpu-memory", "lots"],
        &["estimate", "--model", "llama-3.1-8b", "--gpu", "rtx-9999"],
        &["estimate", "--model", "llama-3.1-8b", "--engine", "vllm", "--gpu-memory-utilization", "1.5"],
        &["estimate", "--model", "llama-3.1-8b", "--gpus", "3", "--tp", "2"],
        &["estimate", "--config", "/nonexistent/config.json"],
        &["estimate", "--model", "llama-3.1-8b", "--engine", "llama.cpp", "--fit", "maybe"],
        &["estimate", "--model", "llama-3.1-8b", "--engine", "llama.cpp", "--fit-free", "5banana"],
        &["estimate", "--model", "llama-3.1-8b", "--engine", "llama.cpp", "--host-ram", "lots"],
    ] {
        let out = headroom(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("headroom: "), "{err}");
    }
}

#[test]
fn a_broken_config_names_the_field() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("headroom-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.json");
    std::fs::write(&path, r#"{"model_type":"llama","hidden_size":4096,"num_hidden_layers":"thirty"}"#).unwrap();
    let out = headroom(&["estimate", "--config", path.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("num_hidden_layers"));
}

/// `/dev/zero` as a config or an OOM log was read until the kernel killed
/// the process at 24 GB (issue 18); every input now stops at 64 MiB.
#[test]
fn endless_inputs_stop_at_the_stated_size() {
    for args in [
        &["estimate", "--config", "/dev/zero"][..],
        &["estimate", "--model", "llama-3.1-8b", "--safetensors-index", "/dev/zero"],
        &["diagnose", "/dev/zero"],
    ] {
        let out = headroom(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("/dev/zero") && err.contains("64") && err.contains("at most"), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// Splits the engine would refuse get its own words, not a "Fits".
#[test]
fn splits_the_engine_refuses_are_refused_in_its_words() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--engine", "vllm", "--tp", "3"],
            "Total number of attention heads (32) must be divisible by tensor parallel size (3).",
        ),
        (&["--engine", "sglang", "--tp", "3"], "\"32 is not divisible by 3\""),
        (&["--engine", "vllm", "--pp", "40"], "40 pipeline stages for a model of 32 layers"),
        (&["--pp", "40"], "8 GPU(s) would hold none"),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"];
        args.extend_from_slice(extra);
        let out = headroom(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

/// llama.cpp's `-c 0` is the model's trained context, not one token.
#[test]
fn llamacpp_context_zero_is_the_trained_context() {
    let v = json(&["estimate", "--model", "llama-3.1-8b", "--engine", "llama.cpp", "--n-ctx", "0", "--json"]);
    assert_eq!(v["engine_report"]["n_ctx"], 131_072, "{}", v["engine_report"]);
}

/// `--allow-origin null`, `*` or an origin without a scheme were accepted
/// silently (issue 18); `null` admits sandboxed iframes and file:// pages.
#[test]
fn allow_origin_takes_only_a_serialised_origin() {
    for origin in ["null", "*", "headroom.example", "https://headroom.example/app"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_headroom"))
            .args(["serve", "--simulate", "l4", "--bind", "127.0.0.1:0", "--allow-origin", origin])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("serve --allow-origin {origin} kept running");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(!status.success(), "--allow-origin {origin} was accepted");
        assert!(err.contains("--allow-origin") && err.contains(origin), "{origin}: {err}");
    }
}

/// `--override-tensor` (repeatable; rules append in order), `--tensor-split`,
/// `--split-mode`, `--main-gpu`, `--mmproj`: the JSON gives each GPU's model
/// buffer; bad rules fail with llama.cpp's reason.
#[test]
fn llamacpp_placement_flags() {
    let base =
        ["estimate", "--model", "qwen3-30b-a3b", "--engine", "llama.cpp", "--weights", "q4_k_m", "--n-ctx", "8192"];
    let run = |extra: &[&str]| {
        let out = headroom(&[&base[..], extra, &["--json"]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["engine_report"].clone()
    };
    let cpu_moe = run(&["--cpu-moe"]);
    let ot = run(&["--override-tensor", "ffn_(up|gate)_exps=CPU", "--ot", "ffn_down_exps=CPU"]);
    assert_eq!(ot["gpu_weight_bytes"], cpu_moe["gpu_weight_bytes"]);
    let two = run(&["--gpus", "2", "--tensor-split", "3,1"]);
    // 48 layers + the output: k / 49 < 3/4 for k ≤ 36, so 37 layers on GPU 0.
    assert_eq!(two["gpu_layers"], serde_json::json!([37, 11]), "{two}");
    let none = run(&["--gpus", "2", "--split-mode", "none", "--main-gpu", "1"]);
    assert_eq!(none["gpu_weight_bytes"][0], 0);
    let out = headroom(&[
        "estimate",
        "--model",
        "qwen2.5-vl-7b",
        "--engine",
        "llama.cpp",
        "--mmproj",
        "--no-mmproj-offload",
        "--json",
    ]);
    let mm: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mm = &mm["engine_report"];
    assert!(mm["mmproj_bytes"].as_u64().unwrap() > 0 && mm["mmproj_gpu"].is_null(), "{mm}");
    for (flag, value, why) in [
        ("--override-tensor", "exps=GPU0", "unknown buffer type"),
        ("--override-tensor", r"(a)\1=CPU", "back-reference"),
        ("--tensor-split", "3,x", "not a number"),
        ("--split-mode", "rows", "unknown split mode"),
    ] {
        let bad = headroom(&[&base[..], &[flag, value]].concat());
        assert!(!bad.status.success());
        assert!(String::from_utf8_lossy(&bad.stderr).contains(why), "{}", String::from_utf8_lossy(&bad.stderr));
    }
}

/// `--n-cpu-moe` / `--cpu-moe`: the estimate text gives the host RAM, the
/// JSON its parts, and `--solve min-cpu-moe` the llama-server line.
#[test]
fn llamacpp_expert_offload_flags() {
    let base = [
        "estimate",
        "--model",
        "qwen3-30b-a3b",
        "--engine",
        "llama.cpp",
        "--weights",
        "q4_k_m",
        "--n-ctx",
        "8192",
        "--gpu-memory",
        "12GiB",
    ];
    let out = headroom(&[&base[..], &["--cpu-moe"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("host RAM") && text.contains("routed experts"), "{text}");
    let out = headroom(&[&base[..], &["--n-cpu-moe", "30", "--cache-type-v", "q4_0", "--json"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["engine_report"];
    assert_eq!(r["cache_type_v"], "q4_0");
    assert!(r["cpu_expert_bytes"].as_u64().unwrap() > 0);
    assert!(r["host_ram_bytes"].as_u64().unwrap() >= r["cpu_weight_bytes"].as_u64().unwrap());
    let out = headroom(&[&base[..], &["--solve", "min-cpu-moe", "--json"]].concat());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let solution = &v["solution"];
    let n = solution["value"].as_u64().unwrap();
    assert!(solution["choice"].as_str().unwrap().ends_with(&format!("--n-cpu-moe {n}")), "{solution}");
    let bad = headroom(&[&base[..], &["--cache-type-k", "fp8"]].concat());
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unsupported cache type `fp8`"));
}

/// llama.cpp's `--fit`: what it loads instead, on an idle GPU or on the
/// memory free now, and `--fit off`.
#[test]
fn llamacpp_fit_on_the_memory_free_now() {
    let base = [
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--weights",
        "q8_0",
        "--gpu",
        "rtx-3070",
        "--engine",
        "llama.cpp",
        "--n-ctx",
        "8192",
        "--json",
    ];
    let fit = |more: &[&str]| json(&[&base[..], more].concat())["engine_report"]["fit"].clone();
    let idle = fit(&[]);
    assert_eq!(idle["kind"], "fitted", "{idle}");
    let busy = fit(&["--fit-free", "5GiB"]);
    assert_eq!(busy["gpu_target_bytes"][0], 5 * 1024_u64.pow(3) - 1324 * 1024 * 1024, "{busy}");
    assert!(busy["n_gpu_layers"].as_u64() < idle["n_gpu_layers"].as_u64(), "{busy} {idle}");
    assert_eq!(fit(&["--fit", "off"])["kind"], "off");
    assert_eq!(fit(&["--n-gpu-layers", "33"])["flag"], "-ngl");
    // The text output says it too.
    let out = headroom(&base[..base.len() - 1]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("--fit         loads it as -ngl"));
    // No NVML here (CI): one clear line.
    let out = headroom(&[&base[..base.len() - 1], &["--fit-free", "nvml"]].concat());
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.trim().lines().count() == 1 && err.contains("--fit-free nvml"), "{err}");
    }
}

/// `--host-ram`: the host's RAM against what the plan leaves on the CPU.
#[test]
fn llamacpp_host_ram() {
    let base =
        ["estimate", "--model", "qwen3-30b-a3b", "--weights", "q4_k_m", "--engine", "llama.cpp", "--cpu-moe", "--json"];
    let small = json(&[&base[..], &["--host-ram", "8GiB"]].concat());
    assert_eq!(small["engine_report"]["host_ram_limit_bytes"], 8 * 1024_u64.pow(3));
    let warns = |v: &serde_json::Value| {
        v["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("of host RAM"))
    };
    assert!(warns(&small), "{}", small["warnings"]);
    assert!(!warns(&json(&base)));
    // This host's own RAM.
    if std::path::Path::new("/proc/meminfo").exists() {
        let own = json(&[&base[..], &["--host-ram", "auto"]].concat());
        assert!(own["engine_report"]["host_ram_limit_bytes"].as_u64().unwrap() > 0);
    }
}

#[test]
fn ollama_launches_llama_server_with_its_defaults() {
    let base = ["estimate", "--model", "llama-3.1-8b", "--weights", "q4_k_m", "--engine", "ollama", "--json"];
    // server/routes.go: 32,768 tokens on 24 GB; -c is num_ctx × OLLAMA_NUM_PARALLEL.
    let v = json(&base);
    assert_eq!(v["engine"], "ollama");
    let r = &v["engine_report"];
    assert_eq!(
        (r["n_ctx"].as_u64(), r["parallel"].as_u64(), r["n_ubatch"].as_u64()),
        (Some(32_768), Some(1), Some(1024))
    );
    let v = json(&[&base[..], &["--num-ctx", "8192", "--num-parallel", "2", "--kv-cache-type", "q8_0"]].concat());
    let r = &v["engine_report"];
    assert_eq!((r["n_ctx"].as_u64(), r["cache_type_v"].as_str()), (Some(16_384), Some("q8_0")));
    let out = headroom(&[&base[..], &["--flash-attention", "maybe"]].concat());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("use on, off or auto"), "{e}");
}

/// llama.cpp on unified memory beyond the DGX Spark: a Mac (Metal: no CUDA
/// context, the GPU side is the working-set limit) and Strix Halo (ROCm: a
/// HIP context as CUDA's), the host's share being what the pool leaves
/// beside the GPU side; vLLM is refused on the Mac in one line.
#[test]
fn llamacpp_on_a_mac_and_strix_halo() {
    let catalog = json(&["gpus", "--json"]);
    let gpu =
        |id: &str| catalog.as_array().unwrap().iter().find(|g| g["id"] == id).unwrap_or_else(|| panic!("{id}")).clone();
    let plan = |gpu: &[&str]| {
        let base = ["estimate", "--model", "gpt-oss-120b", "--weights", "q4_k_m", "--engine", "llama.cpp"];
        json(&[&base[..], gpu, &["--n-cpu-moe", "12", "--json"]].concat())
    };
    let on_gpu = |v: &serde_json::Value| v["per_gpu"][0]["total_bytes"].as_u64().unwrap();
    let overhead_formula = |v: &serde_json::Value| {
        let terms = v["terms"].as_array().unwrap();
        terms.iter().find(|t| t["name"] == "overhead").unwrap()["formula"].as_str().unwrap().to_owned()
    };

    // The Mac: Metal's working set is the capacity; no CUDA context.
    let mac = gpu("m4-max-128gb");
    assert_eq!(mac["vendor"], "apple");
    let v = plan(&["--gpu", "m4-max-128gb"]);
    assert_eq!(v["capacity_bytes"], mac["memory_bytes"]);
    assert_eq!(v["overhead_bytes"], 0, "{v}");
    assert!(overhead_formula(&v).starts_with("no CUDA context on Metal"), "{}", overhead_formula(&v));
    let r = &v["engine_report"];
    assert!(r["cpu_expert_bytes"].as_u64().unwrap() > 0, "{r}");
    // The host's share: the 128 GiB pool less what the GPU side holds.
    let pool = mac["unified_bytes"].as_u64().unwrap();
    assert_eq!(r["host_ram_limit_bytes"].as_u64(), Some(pool - on_gpu(&v)), "{r}");
    // The same memory as a custom (CUDA) GPU: the same plan plus the CUDA
    // context (shared::plan::CUDA_CONTEXT_BYTES, 300 MiB), and no pool (both
    // builds stage the host experts' copy for their matmuls: Metal's
    // `offload_op` from b6441, as CUDA's).
    let custom = plan(&["--gpu-memory", &format!("{}MiB", mac["memory_bytes"].as_u64().unwrap() >> 20)]);
    assert_eq!(on_gpu(&custom), on_gpu(&v) + 300 * 1024 * 1024, "{custom}");
    assert_eq!(custom["engine_report"]["host_ram_limit_bytes"], serde_json::Value::Null);
    // The text says so too.
    let out = headroom(&[
        "estimate",
        "--model",
        "gpt-oss-120b",
        "--weights",
        "q4_k_m",
        "--engine",
        "llama.cpp",
        "--gpu",
        "m4-max-128gb",
        "--n-cpu-moe",
        "12",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("none: no CUDA context on Metal") && text.contains("the host may use"), "{text}");

    // Strix Halo: ROCm's GTT pool is the capacity, a HIP context is counted.
    let strix = gpu("strix-halo-128gb");
    assert_eq!(strix["vendor"], "amd");
    let v = plan(&["--gpu", "strix-halo-128gb"]);
    assert_eq!(v["capacity_bytes"], strix["memory_bytes"]);
    assert_eq!(v["overhead_bytes"], 300 * 1024 * 1024, "{v}");
    let pool = strix["unified_bytes"].as_u64().unwrap();
    assert_eq!(v["engine_report"]["host_ram_limit_bytes"].as_u64(), Some(pool - on_gpu(&v)), "{v}");

    // vLLM has no Metal backend: refused on the Mac, in one line.
    let out = headroom(&["estimate", "--model", "gpt-oss-120b", "--engine", "vllm", "--gpu", "m4-max-128gb"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let reason = "vLLM needs CUDA or ROCm; the MacBook Pro (M4 Max, 128 GB) runs Metal: plan it in llama.cpp or Ollama";
    assert!(err.starts_with("headroom: ") && err.contains(reason), "{err}");
    // It runs on Strix Halo (ROCm).
    json(&["estimate", "--model", "gpt-oss-120b", "--engine", "vllm", "--gpu", "strix-halo-128gb", "--json"]);
}

/// The headline says what the engine will do (issue 34), as a user reads it:
/// gpt-oss's MXFP4 loads in llama.cpp; llama.cpp's default `--fit` loads
/// Qwen3-30B-A3B on 8 GiB with experts in host memory; vLLM refuses
/// `--max-model-len 32768` for 70B FP8 on one H100 and says what fits,
/// with its own error on the next line.
#[test]
fn the_headline_is_what_the_engine_does_as_launched() {
    let text = |args: &[&str]| {
        let out = headroom(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let gpt_oss = text(&["estimate", "--model", "gpt-oss-120b", "--engine", "llama.cpp", "--gpu", "rtx-4090"]);
    assert!(!gpt_oss.contains("does not load"), "{gpt_oss}");
    assert!(gpt_oss.contains("\nLoads with llama.cpp's default --fit, which keeps layers or experts in host memory"));
    let qwen = text(&["estimate", "--model", "qwen3-30b-a3b", "--engine", "llama.cpp", "--gpu-memory", "8GiB"]);
    assert!(qwen.contains("\nLoads with llama.cpp's default --fit"), "{qwen}");
    assert!(!qwen.contains("Does not fit at load"), "{qwen}");
    let off = text(&[
        "estimate",
        "--model",
        "qwen3-30b-a3b",
        "--engine",
        "llama.cpp",
        "--gpu-memory",
        "8GiB",
        "--fit",
        "off",
    ]);
    assert!(off.contains("\nDoes not fit at load: the weights alone need "), "{off}");
    let vllm = text(&[
        "estimate",
        "--model",
        "llama-3.1-70b",
        "--weights",
        "fp8",
        "--engine",
        "vllm",
        "--gpu",
        "h100-sxm",
        "--max-model-len",
        "32768",
    ]);
    assert!(vllm.contains("\nvLLM refuses to start with --max-model-len 32768: only 18,624 tokens fit\n"), "{vllm}");
    assert!(vllm.contains("\n  vLLM would print: To serve at least one request"), "{vllm}");
}

/// `-b/--batch-size` caps the physical batch as llama.cpp does
/// (src/llama-context.cpp: `n_ubatch = min(n_batch, n_ubatch)`), and a
/// format the CLI does not know lists every one it does.
#[test]
fn batch_size_caps_the_ubatch_and_unknown_formats_list_every_choice() {
    let base = ["estimate", "--model", "llama-3.1-8b", "--weights", "q4_k_m", "--engine", "llama.cpp", "--json"];
    let ub = |extra: &[&str]| json(&[&base[..], extra].concat())["engine_report"]["n_ubatch"].as_u64();
    assert_eq!(ub(&["-b", "256"]), Some(256));
    assert_eq!(ub(&["--batch-size", "4096", "--n-ubatch", "1024"]), Some(1024));
    assert_eq!(ub(&[]), Some(512));
    let out = headroom(&["estimate", "--model", "llama-3.1-8b", "--weights", "q4_k_x"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && ["q5_k_s", "q4_k_s", "gguf-f16"].iter().all(|f| e.contains(f)), "{e}");
}

/// ik_llama.cpp's flags (issue 35): taken with `--llamacpp-fork ik` and
/// written back in the `llama-server` line; refused on a mainline plan in
/// one line that says whose flags they are.
#[test]
fn ik_llama_flags_need_the_ik_fork() {
    let base = ["estimate", "--model", "qwen3-30b-a3b", "--weights", "q4_k_m", "--engine", "llama.cpp"];
    let out = headroom(&[&base[..], &["--fused-moe"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a mainline plan took --fused-moe");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("ik_llama.cpp") && err.contains("-fmoe/--fused-moe"), "{err}");
    // Build 3912: `-fmoe` is still a switch (41d6c42b9, build 3928, made it the default).
    let ik = [
        "--llamacpp-fork",
        "ik",
        "--llamacpp-build",
        "3912",
        "--mla-use",
        "3",
        "--amb",
        "512",
        "--fused-moe",
        "--run-time-repack",
    ];
    let small = ["--n-ctx", "8192", "--gpu-memory", "12GiB", "--solve", "min-cpu-moe", "--json"];
    let out = headroom(&[&base[..], &ik[..], &small[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let choice = v["solution"]["choice"].as_str().unwrap_or_default();
    assert!(choice.contains("--n-cpu-moe") && choice.ends_with(" -mla 3 -amb 512 -fmoe -rtr"), "{v}");
    assert!(headroom(&[&base[..], &["--ik-llama", "--no-fused-moe"]].concat()).status.success());
}
