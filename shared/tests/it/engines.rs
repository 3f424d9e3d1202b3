//! Engine budgets against what the engines themselves report.

use crate::estimate;
use shared::engines::{Engine, EngineReport, vllm};
use shared::estimate::{GpuSlot, Scenario, Verdict};
use shared::model::Model;
use shared::units::{GIB, MIB};

fn model(id: &str) -> Model {
    Model::preset(id).unwrap_or_else(|e| panic!("{e}"))
}

fn vllm_report(s: Scenario, m: &Model) -> (vllm::Report, Verdict) {
    let e = estimate(m, s);
    match e.engine_report {
        Some(EngineReport::Vllm(r)) => (r, e.verdict),
        other => panic!("no vLLM report: {other:?}"),
    }
}

/// vLLM's start-up logs for Llama-3.1-8B-Instruct on one RTX 3090 (vLLM
/// reports a total of 23.58 GiB), gpu_memory_utilization 0.90, V0 engine:
/// max_model_len 20000 → 1952 blocks, "Maximum concurrency for 20000 tokens
/// per request: 1.56x"; max_model_len 29000 → 1478 blocks and the error that
/// 29000 exceeds the 23648 tokens the KV cache can hold.
fn rtx3090(max_model_len: u64) -> Scenario {
    Scenario {
        gpus: vec![GpuSlot::custom("RTX 3090 (vLLM: 23.58 GiB)", (23.58 * GIB as f64) as u64)],
        engine: Engine::Vllm(vllm::Options {
            version: vllm::Version::V0,
            gpu_memory_utilization: Some(0.90),
            max_model_len: Some(max_model_len),
            ..Default::default()
        }),
        ..Scenario::default()
    }
}

fn within(got: u64, want: u64, tolerance: f64) -> bool {
    (got as f64 - want as f64).abs() / want as f64 <= tolerance
}

#[test]
fn vllm_reproduces_the_rtx3090_start_up_logs() {
    let m = model("llama-3.1-8b");
    let (r, verdict) = vllm_report(rtx3090(20_000), &m);
    println!("mml 20000: {} blocks, {} tokens, {:.2}x", r.num_gpu_blocks, r.kv_cache_tokens, r.max_concurrency);
    assert!(within(r.num_gpu_blocks, 1952, 0.03), "{} blocks vs 1952", r.num_gpu_blocks);
    assert!((r.max_concurrency - 1.56).abs() <= 0.05, "{}x vs 1.56x", r.max_concurrency);
    assert!(matches!(verdict, Verdict::Fits { .. }), "{verdict:?}");
    assert!(r.log_lines.iter().any(|l| l.starts_with("Maximum concurrency for 20,000 tokens per request")));

    let (r, verdict) = vllm_report(rtx3090(29_000), &m);
    println!("mml 29000: {} blocks, {} tokens, error {:?}", r.num_gpu_blocks, r.kv_cache_tokens, r.startup_error);
    assert!(within(r.num_gpu_blocks, 1478, 0.03), "{} blocks vs 1478", r.num_gpu_blocks);
    assert!(within(r.kv_cache_tokens, 23_648, 0.03));
    let error = r.startup_error.unwrap_or_default();
    assert!(error.contains("max seq len (29000) is larger than the maximum number of tokens"), "{error}");
    let Verdict::EngineRefuses { largest_context, .. } = verdict else { panic!("{verdict:?}") };
    // The largest max_model_len that starts lies between the two logged runs.
    assert!((23_648..29_000).contains(&largest_context), "{largest_context}");
    assert_eq!(r.largest_max_model_len, Some(largest_context));
}

#[test]
fn vllm_utilization_never_costs_blocks() {
    let m = model("llama-3.1-8b");
    let mut last = 0;
    for util in [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.92, 0.95, 0.99] {
        let mut s = rtx3090(8192);
        if let Engine::Vllm(o) = &mut s.engine {
            o.gpu_memory_utilization = Some(util);
        }
        let (r, _) = vllm_report(s, &m);
        assert!(r.num_gpu_blocks >= last, "utilization {util}: {} < {last}", r.num_gpu_blocks);
        last = r.num_gpu_blocks;
    }
}

fn report_of(m: &Model, s: Scenario) -> (Option<EngineReport>, Verdict, shared::estimate::Estimate) {
    let e = estimate(m, s);
    (e.engine_report.clone(), e.verdict, e)
}

#[test]
fn llamacpp_default_compute_buffer_holds_a_gated_ffn_the_replay_does_not_build() {
    // Gemma 3 (sliding-window layers, not replayed) on today's llama-server,
    // one output row per slot: the FFN's input, its norm, gate, up and their
    // GeGLU product are alive at once (`2·E + 3·F` per token, F32), wider
    // than Ollama's `4·E` layer; with a row per token the logits are wider.
    use shared::engines::llamacpp::{OUTPUTS_MAX_BUILD, Options};
    let m = model("gemma-3-27b");
    let t = &m.arch.text;
    let compute = |build: Option<u64>| {
        let s = Scenario {
            weights: shared::formats::WeightFormat::parse("q4_k_m").unwrap(),
            engine: Engine::LlamaCpp(Options { n_ctx: Some(8192), build, ..Default::default() }),
            ..Scenario::default()
        };
        match report_of(&m, s).0 {
            Some(EngineReport::LlamaCpp(r)) => r.compute_buffer_bytes,
            _ => panic!("a llama.cpp report"),
        }
    };
    let ffn = 4 * 512 * (2 * t.hidden_size + 3 * t.intermediate_size);
    let logits = 4 * 512 * (t.hidden_size + t.vocab_size);
    assert!(compute(None) >= ffn && compute(None) < logits, "{} {ffn} {logits}", compute(None));
    assert!(compute(Some(OUTPUTS_MAX_BUILD - 1)) >= logits);
}

#[test]
fn llamacpp_compute_buffer_follows_the_graph_size_rule() {
    // Ollama's GraphSize for llama graphs with flash attention: 4 × n_ubatch ×
    // (hidden + vocab) on the GPU holding the output layer. For Llama 3 8B at
    // n_ubatch 512: 4 × 512 × (4096 + 128256) = 258.5 MiB, the "CUDA0 compute
    // buffer size" llama.cpp prints for this model, in builds whose server
    // reserves an output row per token (before `OUTPUTS_MAX_BUILD`).
    use shared::engines::llamacpp::{OUTPUTS_MAX_BUILD, Options};
    let m = model("llama-3-8b");
    let with = |build: Option<u64>| Scenario {
        weights: shared::formats::WeightFormat::parse("q4_k_m").unwrap(),
        engine: Engine::LlamaCpp(Options { n_ctx: Some(8192), build, ..Default::default() }),
        ..Scenario::default()
    };
    let compute = |build| match report_of(&m, with(build)).0 {
        Some(EngineReport::LlamaCpp(r)) => r.compute_buffer_bytes,
        _ => panic!("a llama.cpp report"),
    };
    assert_eq!(compute(Some(OUTPUTS_MAX_BUILD - 1)), 4 * 512 * (4096 + 128_256));
    // A plan that names no build is today's llama-server: one output row per
    // slot, so the FFN's widest point sets the buffer, not the logits.
    assert_eq!(compute(None), compute(Some(OUTPUTS_MAX_BUILD)));
    assert!(compute(None) < 4 * 512 * (4096 + 128_256) / 2, "{}", compute(None));
    let (report, verdict, e) = report_of(&m, with(None));
    let Some(EngineReport::LlamaCpp(r)) = report else { panic!() };
    assert_eq!(r.n_ctx, 8192);
    assert!(r.output_on_gpu);
    // The KV cache: 8192 tokens × 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 bytes = 1 GiB.
    assert_eq!(e.kv_cache_bytes, GIB);
    assert!(matches!(verdict, Verdict::Fits { .. }));
}

#[test]
fn llamacpp_partial_offload_keeps_layers_on_the_cpu() {
    let m = model("llama-3.1-70b");
    let s = Scenario {
        weights: shared::formats::WeightFormat::parse("q4_k_m").unwrap(),
        engine: Engine::LlamaCpp(shared::engines::llamacpp::Options {
            n_ctx: Some(4096),
            n_gpu_layers: Some(40),
            ..Default::default()
        }),
        ..Scenario::default()
    };
    let (report, verdict, e) = report_of(&m, s);
    let Some(EngineReport::LlamaCpp(r)) = report else { panic!() };
    // llama.cpp counts the output layer as the last of 81 and offloads from
    // the back (src/llama-model.cpp `i_gpu_start = n_layer + 1 - ngl`): the
    // output layer and 39 repeating layers.
    assert_eq!(r.layers_on_gpu, 39);
    assert!(r.output_on_gpu);
    // Half the layers and the embedding stay in system memory.
    assert!(r.cpu_weight_bytes > e.per_gpu[0].budget.weight_bytes);
    assert_eq!(e.per_gpu[0].layers, [41, 80]);
    assert!(matches!(verdict, Verdict::Fits { .. }), "{verdict:?}");
}

#[test]
fn sglang_pool_is_the_static_fraction_left_after_weights() {
    let m = model("llama-3.1-8b");
    let gpu = GpuSlot::custom("80 GiB", 80 * GIB);
    let s = Scenario {
        gpus: vec![gpu],
        engine: shared::engines::Engine::Sglang(shared::engines::sglang::Options {
            version: shared::engines::sglang::Version::TpTable,
            ..Default::default()
        }),
        ..Scenario::default()
    };
    let (report, _, e) = report_of(&m, s);
    let Some(EngineReport::Sglang(r)) = report else { panic!() };
    assert_eq!(r.mem_fraction_static, 0.88);
    // (80 GiB × 0.88 − weights − context) ÷ 128 KiB per token.
    let expected =
        ((80.0 * 0.88 * GIB as f64) as u64 - e.weight_bytes - shared::estimate::CUDA_CONTEXT_BYTES) / (128 * 1024);
    assert!(r.max_total_num_tokens.abs_diff(expected) <= 1, "{} vs {expected}", r.max_total_num_tokens);
    assert_eq!(r.cell_size_bytes, 128 * 1024);
}

#[test]
fn tensor_parallel_kv_heads_are_replicated_past_their_count() {
    // Llama 3.1 70B has 8 KV heads: at TP 16 each rank still holds one.
    let m = model("llama-3.1-70b");
    let at = |tp: u64| {
        let s = Scenario {
            gpus: vec![GpuSlot::custom("H100", 80 * GIB); tp as usize],
            tp,
            engine: shared::engines::EngineKind::Vllm.with_defaults(),
            ..Scenario::default()
        };
        estimate(&m, s).kv_bytes_per_token
    };
    assert_eq!(at(1), 80 * 8 * 128 * 2 * 2);
    assert_eq!(at(8), at(1));
    assert_eq!(at(16), 2 * at(1));
}

#[test]
fn vllm_groups_sliding_window_layers() {
    // Gemma 3 27B: 52 sliding (1024-token window) and 10 full layers. vLLM V1
    // groups them (7 groups of 10 layer slots): a 32K request needs 2,048
    // blocks in the full group but only cdiv(1023 + 8192, 16) + 1 = 577 in
    // each of the 6 sliding groups, so the same memory serves ~2.6× the
    // requests of V0, which treats every layer as full.
    let m = model("gemma-3-27b");
    let s = |version| Scenario {
        gpus: vec![GpuSlot::custom("H100", 80 * GIB)],
        engine: Engine::Vllm(vllm::Options { version, max_model_len: Some(32_768), ..Default::default() }),
        ..Scenario::default()
    };
    let (v0, _) = vllm_report(s(vllm::Version::V0), &m);
    let (v1, _) = vllm_report(s(vllm::Version::V1), &m);
    assert!(v1.max_concurrency > 2.0 * v0.max_concurrency, "{} vs {}", v1.max_concurrency, v0.max_concurrency);
}

/// vLLM's default `max_model_len` (the model's 131,072) does not start on a
/// 24 GiB GPU while the workload's 2,560 tokens do: the headline says what
/// vLLM does as launched (it refuses), names the default and what runs the
/// workload, and fix 1 sets the context to the workload without touching it.
#[test]
fn an_engine_default_that_refuses_a_fitting_workload_is_named_in_the_headline() {
    use shared::fixes::{FixKind, GivesUp, fixes};
    let m = model("llama-3.1-8b");
    let s = Scenario {
        gpus: vec![GpuSlot::custom("24 GiB", 24 * GIB)],
        engine: Engine::Vllm(vllm::Options::default()),
        prompt_tokens: 2048,
        max_new_tokens: 512,
        ..Scenario::default()
    };
    let e = estimate(&m, s.clone());
    assert!(matches!(e.verdict, Verdict::EngineRefuses { largest_context, .. } if largest_context >= 2560));
    let text = shared::estimate::verdict_text(&e, shared::units::UnitSystem::Binary);
    assert!(
        text.starts_with(
            "vLLM refuses to start as launched: its context defaults to the model's 131,072 tokens: only "
        ),
        "{text}"
    );
    assert!(text.ends_with("; your 2,560 run with --max-model-len 2560"), "{text}");
    let all = fixes(&m, &s);
    let first = &all[0];
    assert_eq!((first.kind, first.gives_up, first.fits), (FixKind::MaxModelLen, GivesUp::Nothing, true), "{all:?}");
    assert!(first.code.ends_with("--max-model-len 2560"), "{}", first.code);
    // It changes what it says and nothing else: the workload stays.
    assert_eq!((first.scenario.prompt_tokens, first.scenario.max_new_tokens), (2048, 512));
    let Engine::Vllm(o) = first.scenario.engine else { panic!("engine changed") };
    assert_eq!(o.max_model_len, Some(2560));

    // A workload that is itself too long gets shorter, and the fix says how.
    let long = Scenario { max_new_tokens: 200_000, engine: Engine::Vllm(vllm::Options::default()), ..s };
    let fix = fixes(&m, &long).into_iter().find(|f| f.kind == FixKind::MaxModelLen).unwrap_or_else(|| panic!("none"));
    assert_eq!(fix.gives_up, GivesUp::Length);
    assert!(fix.title.contains("max new tokens 200,000 → "), "{}", fix.title);
    assert_eq!(fix.scenario.prompt_tokens, 2048);
}

/// Llama 3.1 70B in FP8 on one H100 with `--max-model-len 32768` (issue 34):
/// vLLM refuses as launched, and the headline says so with its figures; the
/// fixes keep the 32k asked for first, and the one that cuts it says so
/// with the figures and never sets the prompt or the new tokens to 0.
#[test]
fn an_asked_context_that_does_not_fit_is_kept_by_the_first_fixes() {
    use shared::fixes::{FixKind, GivesUp, fixes};
    use shared::formats::WeightFormat;
    let m = model("llama-3.1-70b");
    let h100 = shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("h100-sxm"));
    let s = Scenario {
        weights: WeightFormat::Fp8 { block: None },
        gpus: vec![GpuSlot::from_catalog(h100)],
        // The figures of 0.24's rules (0.34's extensible pool holds 18,944).
        engine: Engine::Vllm(vllm::Options {
            version: vllm::Version::V0_24Mm,
            max_model_len: Some(32_768),
            ..Default::default()
        }),
        ..Scenario::default()
    };
    let text = shared::estimate::verdict_text(&estimate(&m, s.clone()), shared::units::UnitSystem::Binary);
    assert_eq!(text, "vLLM refuses to start with --max-model-len 32768: only 3,664 tokens fit");
    let all = fixes(&m, &s);
    let cut = all.iter().position(|f| f.kind == FixKind::MaxModelLen).unwrap_or_else(|| panic!("{all:?}"));
    let f = &all[cut];
    assert_eq!(f.gives_up, GivesUp::Length);
    assert!(f.title.starts_with("32,768 tokens do not fit on 1 × H100 SXM"), "{}", f.title);
    assert!(f.title.contains(": 3,664 do; 32,768 need 2 × H100 SXM"), "{}", f.title);
    assert!(f.title.ends_with("with TP 2"), "{}", f.title);
    // Every fix that keeps the 32k comes first.
    assert!(all[..cut].iter().all(|f| f.gives_up != GivesUp::Length), "{all:?}");
    assert!(all.iter().any(|f| f.kind == FixKind::MoreGpus && f.fits), "{all:?}");
    assert_eq!(all.last().map(|f| f.kind), Some(FixKind::MaxModelLen), "{all:?}");

    // A 32k prompt that does not fit: the prompt is cut, not the new tokens to 0.
    let long = Scenario { prompt_tokens: 32_768, engine: Engine::Vllm(vllm::Options::default()), ..s.clone() };
    for f in fixes(&m, &long) {
        assert!(f.scenario.prompt_tokens > 0 && f.scenario.max_new_tokens > 0, "{}: {:?}", f.title, f.scenario);
        assert!(f.scenario.concurrency > 0, "{}", f.title);
        if f.kind == FixKind::MaxModelLen {
            assert_eq!(f.scenario.max_new_tokens, 512, "{}", f.title);
            assert!(f.title.contains("prompt 32,768 → "), "{}", f.title);
        }
    }
}

/// GGUF weights with transformers: the verdict says first that transformers
/// does not load them, and the one fix runs the plan in llama.cpp.
#[test]
fn an_engine_that_does_not_load_the_format_says_so_first() {
    use shared::engines::EngineKind;
    use shared::fixes::{FixKind, fixes};
    use shared::formats::WeightFormat;
    let m = model("llama-3.1-8b");
    let weights = WeightFormat::parse("q4_k_m").unwrap_or_else(|e| panic!("{e}"));
    let s = Scenario { weights, gpus: vec![GpuSlot::custom("24 GiB", 24 * GIB)], ..Scenario::default() };
    assert_eq!(s.engine.kind(), EngineKind::Transformers);
    let text = shared::estimate::verdict_text(&estimate(&m, s.clone()), shared::units::UnitSystem::Binary);
    assert!(
        text.starts_with(
            "transformers does not load q4_k_m weights (it dequantises a GGUF file as it loads it; llama.cpp does) — \
             as if it did: Fits"
        ),
        "{text}"
    );
    let all = fixes(&m, &s);
    assert_eq!(all[0].kind, FixKind::Engine);
    // Or the engine keeps it in a format it loads: bf16 stores more than
    // q4_k_m, so it gives up nothing.
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!((all[1].kind, all[1].gives_up), (FixKind::WeightFormat, shared::fixes::GivesUp::Nothing));
    assert_eq!(all[1].scenario.weights, WeightFormat::Bf16);
    assert_eq!(all[0].scenario.engine.kind(), EngineKind::LlamaCpp);
    assert!(all[0].fits);
    // In its own engine the format needs no such line.
    let text =
        shared::estimate::verdict_text(&estimate(&m, all[0].scenario.clone()), shared::units::UnitSystem::Binary);
    assert!(text.starts_with("Fits"), "{text}");
}

/// llama.cpp loads every tensor type a GGUF file holds (ggml/include/ggml.h
/// `enum ggml_type`: F32, F16, BF16, the quants, MXFP4, NVFP4), so
/// gpt-oss's MXFP4 experts are planned as they are; FP8, bitsandbytes, GPTQ
/// and AWQ have no ggml type and are refused with that reason, and the fixes
/// offer a format it loads beside the engine that loads the one asked.
#[test]
fn llamacpp_loads_every_ggml_type_and_refuses_the_rest_with_its_reason() {
    use shared::engines::EngineKind;
    use shared::fixes::{FixKind, fixes};
    use shared::formats::WeightFormat;
    for kind in [EngineKind::LlamaCpp, EngineKind::Ollama] {
        for id in ["fp32", "bf16", "fp16", "mxfp4", "mxfp4-moe", "nvfp4", "q8_0", "q4_k_m", "iq4_xs", "q2_k"] {
            let f = WeightFormat::parse(id).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(kind.refuses(f), None, "{} {id}", kind.name());
        }
        for id in ["fp8", "fp8-b128", "int8", "nf4", "gptq-int4", "awq-int4"] {
            let f = WeightFormat::parse(id).unwrap_or_else(|e| panic!("{e}"));
            let why = kind.refuses(f).unwrap_or_else(|| panic!("{} loads {id}", kind.name()));
            assert!(why.starts_with("GGUF has no "), "{why}");
        }
    }
    // gpt-oss-120b (MXFP4 experts) on one RTX 4090: no refusal in the verdict.
    let m = model("gpt-oss-120b");
    let s = Scenario {
        engine: EngineKind::LlamaCpp.with_defaults(),
        weights: m.default_format(),
        gpus: vec![GpuSlot::custom("24 GiB", 24 * GIB)],
        ..Scenario::default()
    };
    assert_eq!(s.weights.id(), "mxfp4-moe");
    let text = shared::estimate::verdict_text(&estimate(&m, s.clone()), shared::units::UnitSystem::Binary);
    assert!(!text.contains("does not load"), "{text}");
    assert!(fixes(&m, &s).iter().all(|f| f.kind != FixKind::Engine));
    // FP8 in llama.cpp: refused with its reason; fixed by transformers or by a GGUF format.
    let fp8 =
        Scenario { weights: WeightFormat::Fp8 { block: None }, gpus: vec![GpuSlot::custom("80 GiB", 80 * GIB)], ..s };
    let text = shared::estimate::verdict_text(&estimate(&m, fp8.clone()), shared::units::UnitSystem::Binary);
    assert!(text.starts_with("llama.cpp does not load fp8 weights (GGUF has no FP8 type"), "{text}");
    let all = fixes(&m, &fp8);
    assert_eq!(all[0].kind, FixKind::Engine);
    assert!(all[0].title.contains("llama.cpp does not: GGUF has no FP8 type"), "{}", all[0].title);
    assert!(all.iter().any(|f| f.kind == FixKind::WeightFormat && EngineKind::LlamaCpp.runs(f.scenario.weights)));
}

/// A pinned start and `--max-model-len auto` from the same pool: Llama-3.1-8B
/// at its own 131,072 tokens does not start on 24 GiB; vLLM's error names the
/// longest request the memory holds (0.11+), `auto` chooses exactly it
/// (0.21+), and `--kv-cache-memory` of the blocks times the block starts
/// the same pool without profiling.
#[test]
fn vllm_pinned_start_and_auto_max_model_len_agree_with_the_pool() {
    let m = model("llama-3.1-8b");
    let s = |max_model_len| Scenario {
        gpus: vec![GpuSlot::custom("24 GiB", 24 * GIB)],
        engine: Engine::Vllm(vllm::Options { version: vllm::Version::V0_33, max_model_len, ..Default::default() }),
        ..Scenario::default()
    };
    let (r, verdict) = vllm_report(s(None), &m);
    let auto = r.auto_max_model_len.unwrap_or_else(|| panic!("no auto-fit: {r:?}"));
    assert!(auto < 131_072, "{auto}");
    let error = r.startup_error.clone().unwrap_or_default();
    assert!(error.contains(&format!("the estimated maximum model length is {auto}.")), "{error}");
    let Verdict::EngineRefuses { largest_context, .. } = verdict else { panic!("{verdict:?}") };
    assert_eq!(largest_context, auto);
    // auto starts; one token more does not.
    let (at, _) = vllm_report(s(Some(auto)), &m);
    assert_eq!(at.startup_error, None);
    assert!(vllm_report(s(Some(auto + 1)), &m).0.startup_error.is_some());
    let pinned = r.pinned_kv_cache_memory_bytes.unwrap_or_else(|| panic!("no pinned bytes"));
    let block = r.per_gpu[0].block_bytes;
    assert_eq!((pinned / block, pinned % block), (r.num_gpu_blocks, 0));
    assert!(r.log_lines.iter().any(|l| l.contains(&format!("--kv-cache-memory={pinned}")) && l.contains("vllm#56698")));
    // The frozen V1 rules name neither.
    let v1 = Scenario {
        engine: Engine::Vllm(vllm::Options { version: vllm::Version::V1, ..Default::default() }),
        ..s(None)
    };
    let (r1, _) = vllm_report(v1, &m);
    assert_eq!((r1.auto_max_model_len, r1.pinned_kv_cache_memory_bytes), (None, None));
    assert!(!r1.startup_error.unwrap_or_default().contains("estimated maximum model length"));
}

#[test]
fn vllm_releases_map_to_their_rules() {
    use vllm::Version;
    let cases = [
        ("0.6.5", Version::V0),
        ("0.8.5.dev169+gce17db808.d20250423", Version::V1),
        ("0.10.1.1", Version::V0_10),
        // 0.11 and 0.12 with their own encoder profile (issue 36, sixth session).
        ("0.11.0", Version::V0_11Sort),
        ("0.11.2", Version::V0_11Sort),
        ("0.12.0", Version::V0_12Sort),
        // 0.13 – 0.17 keep the outputs and pixels unpadded.
        ("0.13.0", Version::V0_16Sort),
        ("0.16.0", Version::V0_16Sort),
        // 0.17 samples top-k/top-p with Triton from 8 rows, in place.
        ("0.17.1", Version::V0_17Triton),
        // With the rotary tables since issue 36's fourth session, the vision
        // tower's profile since its fifth, the allocator's blocks since its
        // TP 2 session (0.18.0 and 0.19.0 alike: torch 2.10, no split cap).
        ("0.18.0", Version::V0_19Alloc),
        ("0.19.1", Version::V0_19Alloc),
        // 0.20.0 already subtracts the CUDA-graph estimate and asks 0.92;
        // the budget takes vLLM's own estimate, modelled (0.33-graphs).
        ("0.20.2", Version::V0_33Graphs),
        ("0.21.0", Version::V0_33Graphs),
        ("v0.27.2rc1.dev77+gac7509e2b", Version::V0_33Graphs),
        ("0.33.0", Version::V0_33Graphs),
        // 0.34 sizes the pool with its extensible KV cache.
        ("0.34.0", Version::V0_34),
        ("0.35.0rc1", Version::V0_34),
    ];
    for (release, want) in cases {
        assert_eq!(Version::for_release(release), Some(want), "{release}");
    }
    assert_eq!(Version::for_release("main"), None);
}

/// SGLang 0.5.23 picks `mem_fraction_static` from the GPU's memory
/// (`memory_hook.py`). An H100 (81,559 MiB) at TP 1 reserves 512 MiB,
/// 8,192 tokens × 1.5 MiB, 1/8 GiB of parallel slack, 256 decode graphs ×
/// 2 MiB and 58 prefill graphs × 8 MiB: 13,904 MiB, so 0.830 (sglang#29092
/// measured 0.828 on an H100, the docs say 0.9). At TP 4: 512 decode graphs
/// and 1/2 GiB of slack, 0.819. An RTX 4090 (24,564 MiB): 4,096-token
/// chunks, 48 graphs and 50 prefill graphs, 0.704.
#[test]
fn sglang_0_5_23_takes_mem_fraction_static_from_gpu_memory() {
    use shared::engines::sglang;
    let m = model("llama-3.1-8b");
    let fraction = |gpu: &str, tp: u64| {
        let g = shared::catalog::gpu(gpu).unwrap_or_else(|| panic!("{gpu}"));
        let s = Scenario {
            gpus: vec![GpuSlot::from_catalog(g); tp as usize],
            tp,
            engine: shared::engines::EngineKind::Sglang.with_defaults(),
            ..Scenario::default()
        };
        let (report, _, _) = report_of(&m, s);
        let Some(EngineReport::Sglang(r)) = report else { panic!() };
        assert_eq!(r.version, sglang::Version::V0_5_23Alloc);
        (r.mem_fraction_static, r.chunked_prefill_size)
    };
    assert_eq!(fraction("h100-sxm", 1), (0.830, 8192));
    assert_eq!(fraction("h100-sxm", 4), (0.819, 8192));
    assert_eq!(fraction("rtx-4090", 1), (0.704, 4096));
}

/// The reserve counts the chunk SGLang runs with, a given
/// `--chunked-prefill-size` too (`memory_hook.py` reads the resolved
/// `chunked_prefill_size`, and the prefill graphs are captured up to it): an
/// H100 at TP 1 with 2,048-token chunks reserves 512 + 3,072 + 128 + 512 +
/// 42 × 8 = 4,560 MiB, under the 10 GiB floor for GPUs over 60 GiB, so
/// (81,559 − 10,240) ÷ 81,559 = 0.874; on an RTX 4090 (no floor) 4,096 →
/// 2,048 tokens frees 3,072 MiB of activations and 8 prefill graphs.
#[test]
fn sglang_0_5_23_reserves_for_the_chunk_it_is_given() {
    use shared::engines::sglang;
    let m = model("llama-3.1-8b");
    let fraction = |gpu: &str, chunk: Option<u64>| {
        let g = shared::catalog::gpu(gpu).unwrap_or_else(|| panic!("{gpu}"));
        let o = sglang::Options { chunked_prefill_size: chunk, ..Default::default() };
        let s = Scenario { gpus: vec![GpuSlot::from_catalog(g)], engine: Engine::Sglang(o), ..Scenario::default() };
        let (report, _, _) = report_of(&m, s);
        let Some(EngineReport::Sglang(r)) = report else { panic!() };
        (r.mem_fraction_static, r.chunked_prefill_size)
    };
    assert_eq!(fraction("h100-sxm", Some(2048)), (0.874, 2048));
    assert_eq!(fraction("h100-sxm", None), (0.830, 8192));
    let (default, small) = (fraction("rtx-4090", None).0, fraction("rtx-4090", Some(2048)).0);
    assert!(((small - default) - (3072.0 + 8.0 * 8.0) / 24564.0).abs() <= 0.001 + 1e-9, "{default} → {small}");
}

/// The native sampler peaks where PyTorch sorts the logits (the `-sort`
/// rules): 38 bytes per bf16 logit from 128 rows (cub's segmented sort),
/// 50 below (the full sort of `segmented_sort_pairs_by_full_sort`), 28
/// after the sort for one row. The two 0.12.0 Qwen3-VL logs with 256 and 64
/// rows of 151,936 logits differ by 0.92 GiB of KV cache, as these give.
#[test]
fn the_native_sampler_peaks_at_pytorchs_sort() {
    use vllm::native_sampler_bytes_per_logit as bytes;
    let vocab = 151_936;
    assert_eq!((bytes(2, 1024, vocab), bytes(2, 128, vocab), bytes(2, 127, vocab)), (38, 38, 50));
    assert_eq!((bytes(2, 1, vocab), bytes(2, 256, 1_000_000)), (28, 28));
    let pair = (256 * bytes(2, 256, vocab) - 64 * bytes(2, 64, vocab)) * vocab;
    let logged = (3815 - 3723) * GIB / 100;
    assert!(pair.abs_diff(logged) < GIB / 100, "{pair} against {logged}");
}

/// SGLang measures its weights by the free memory CUDA reports (0.4.3
/// `model_runner.py::load_model`), so each weight of 10 MiB or more counts
/// as the 2 MiB-rounded segment PyTorch's allocator reserves for it. QwQ-32B
/// at TP 4 (`sglang-043-qwq-32b-l4-tp4`, "mem usage=15.54 GB" per rank):
/// per layer `qkv_proj` 17.5 MiB in 18, `o_proj` 12.5 in 14, `gate_up_proj`
/// 135 in 136, `down_proj` 67.5 in 68, and the embedding and head 371.25
/// in 372 each: 225.5 MiB beyond the parameters, which leave the pool.
#[test]
fn sglang_weights_are_the_allocators_segments() {
    use shared::engines::sglang;
    let m = model("qwen2.5-32b");
    let l4 = shared::catalog::gpu("l4").unwrap_or_else(|| panic!("l4"));
    let run = |version| {
        let s = Scenario {
            gpus: vec![GpuSlot::from_catalog(l4); 4],
            tp: 4,
            engine: Engine::Sglang(sglang::Options { version, mem_fraction_static: Some(0.85), ..Default::default() }),
            ..Scenario::default()
        };
        let (report, _, e) = report_of(&m, s);
        let Some(EngineReport::Sglang(r)) = report else { panic!("SGLang") };
        (e.per_gpu[0].budget.weight_bytes, r.max_total_num_tokens, r.cell_size_bytes)
    };
    let (params, tokens, cell) = run(sglang::Version::V0_5_23Init);
    let (segments, fewer, _) = run(sglang::Version::V0_5_23Alloc);
    let slack = 225 * MIB + MIB / 2;
    assert_eq!(segments - params, slack);
    assert_eq!(tokens - fewer, slack / cell);
    // Within 0.07 GiB of the 15.54 GiB the log says, 0.28 GiB short before.
    let logged = 1554 * GIB / 100;
    assert!(logged - segments < 7 * GIB / 100, "{segments}");
    assert!(logged - params > 27 * GIB / 100, "{params}");
}

/// The same segments under SGLang's data-parallel attention (`--dp-size 4
/// --enable-dp-attention` at TP 4): attention is whole on each rank and so
/// is the embedding, so their tensors are sized as such (`qkv_proj` 70 MiB
/// and `o_proj` 50, whole segments; the embedding 1,485 in 1,486);
/// `gate_up_proj` 135 in 136 and `down_proj` 67.5 in 68 stay split over TP,
/// as does the head (371.25 in 372): 97.75 MiB.
#[test]
fn sglang_segments_follow_data_parallel_attention() {
    use shared::engines::sglang;
    let m = model("qwen2.5-32b");
    let l4 = shared::catalog::gpu("l4").unwrap_or_else(|| panic!("l4"));
    let run = |version| {
        let o = sglang::Options { version, dp_size: 4, enable_dp_attention: true, ..Default::default() };
        let s = Scenario {
            gpus: vec![GpuSlot::from_catalog(l4); 4],
            tp: 4,
            engine: Engine::Sglang(sglang::Options { mem_fraction_static: Some(0.85), ..o }),
            ..Scenario::default()
        };
        let (_, _, e) = report_of(&m, s);
        e.per_gpu[0].budget.weight_bytes
    };
    let slack = run(sglang::Version::V0_5_23Alloc) - run(sglang::Version::V0_5_23Init);
    assert_eq!(slack, 97 * MIB + 3 * MIB / 4);
}

/// vLLM's LoRA buffers: one slot of rank 16 on every linear layer of
/// Llama-3.1-8B holds as many elements as a rank-16 all-linear adapter has
/// parameters (PEFT's "trainable params: 41,943,040" for Llama-3-8B), in
/// bf16, per slot; they come out of the KV budget, and TP 2 halves the
/// sharded sides only.
#[test]
fn vllm_lora_buffers_join_the_weights() {
    let m = model("llama-3.1-8b");
    let s = |max_loras, tp: u64| Scenario {
        gpus: vec![GpuSlot::custom("80 GiB", 80 * GIB); tp as usize],
        tp,
        engine: Engine::Vllm(vllm::Options { max_loras, ..Default::default() }),
        ..Scenario::default()
    };
    let (off, _) = vllm_report(s(0, 1), &m);
    let (four, _) = vllm_report(s(4, 1), &m);
    assert_eq!(off.per_gpu[0].lora_bytes, 0);
    assert_eq!(four.per_gpu[0].lora_bytes, 4 * 41_943_040 * 2);
    assert_eq!(four.per_gpu[0].weight_bytes - off.per_gpu[0].weight_bytes, four.per_gpu[0].lora_bytes);
    assert_eq!(off.per_gpu[0].available_kv_bytes - four.per_gpu[0].available_kv_bytes, four.per_gpu[0].lora_bytes);
    let (tp2, _) = vllm_report(s(4, 2), &m);
    let per_rank = tp2.per_gpu[0].lora_bytes;
    assert!(per_rank > four.per_gpu[0].lora_bytes / 2 && per_rank < four.per_gpu[0].lora_bytes, "{per_rank}");
}

/// PyTorch's caching allocator gives a tensor of 10 MiB or more a block
/// rounded up to 2 MiB and keeps the rest when 1 MiB or less: "Model loading
/// took" counts it (0.19-alloc). Qwen2.5-72B's `down_proj` is 231 MiB at
/// TP 2, one 232 MiB block a layer (80 MiB); at TP 4 `gate_up_proj` is
/// 231 MiB and `down_proj` 115.5 MiB (120 MiB); Qwen2.5-7B on one GPU keeps
/// 2 MiB a layer and 0.5 MiB each for the embedding and head (57 MiB);
/// Llama-3.1-8B's tensors are whole 2 MiB multiples. The 0.19.0 logs say
/// 67.80, 34.01 (Kimi-Dev, a larger rotary table), 14.25 and 14.99 GiB.
#[test]
fn vllm_weights_are_the_blocks_the_allocator_hands_out() {
    const MIB: u64 = 1 << 20;
    let slack = |preset: &str, tp: u64, version| {
        let s = Scenario {
            gpus: vec![GpuSlot::custom("80 GiB", 80 * GIB); tp as usize],
            tp,
            engine: Engine::Vllm(vllm::Options { version, ..Default::default() }),
            ..Scenario::default()
        };
        let (r, _) = vllm_report(s, &model(preset));
        r.per_gpu[0].block_slack_bytes
    };
    let alloc = vllm::Version::V0_19Alloc;
    assert_eq!(slack("qwen2.5-72b", 2, alloc), 80 * MIB);
    assert_eq!(slack("qwen2.5-72b", 4, alloc), 120 * MIB);
    assert_eq!(slack("qwen2.5-7b", 1, alloc), 57 * MIB);
    assert_eq!(slack("llama-3.1-8b", 1, alloc), 0);
    // The released rules stay as they were.
    assert_eq!(slack("qwen2.5-72b", 2, vllm::Version::V0_19Mm), 0);
}

/// The CUDA graphs vLLM captures: up to 0.9 the 67 sizes of 1 … 512; in
/// 0.10 those up to `2 × max_num_seqs`, 1, 2, 4 then by 8; from 0.11 the sizes up to `2 × max_num_seqs` (at most 512) plus a full graph
/// per size up to `max_num_seqs`, as a 0.26 log with `max_num_seqs` 16
/// counts them (`PIECEWISE=7 (largest=32), FULL=5 (largest=16)`).
#[test]
fn vllm_counts_the_cuda_graphs_it_captures() {
    use vllm::Version;
    assert_eq!(Version::V1.cuda_graphs(16, 2048), 67);
    assert_eq!(Version::V0_10.cuda_graphs(16, 2048), 3 + 4);
    assert_eq!(Version::V0_18.cuda_graphs(1024, 8192), 51 + 51);
    assert_eq!(Version::V0_33.cuda_graphs(16, 2048), 7 + 5);
    assert_eq!(Version::V0_33.cuda_graphs(256, 2048), 51 + 35);
    assert_eq!(Version::V0_21.cuda_graphs(1024, 8192), 51 + 51);
    assert_eq!(Version::V0_33.cuda_graphs(1, 2048), 2 + 1);
    // The largest size is at most max_num_batched_tokens: 256 → 35 + 35.
    assert_eq!(Version::V0_12.cuda_graphs(256, 256), 35 + 35);
}

/// The keyword arguments of the `from_pretrained(...)` call in `code`, as
/// `name=value` pairs (values with their nested brackets and quotes kept).
fn from_pretrained_kwargs(code: &str) -> Vec<(String, String)> {
    let line = code
        .lines()
        .find(|l| l.starts_with("model = AutoModelForCausalLM.from_pretrained("))
        .unwrap_or_else(|| panic!("no from_pretrained call in {code}"));
    let inner = &line["model = AutoModelForCausalLM.from_pretrained(".len()..line.len() - 1];
    let (mut parts, mut depth, mut quoted, mut start) = (Vec::new(), 0i32, false, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '{' | '(' | '[' if !quoted => depth += 1,
            '}' | ')' | ']' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(inner[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(inner[start..].trim().to_owned());
    parts.iter().filter_map(|p| p.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned()))).collect()
}

/// The transformers snippet carries the plan (issue 34): 70B NF4 on two RTX
/// 4090s loads with a BitsAndBytesConfig of NF4 (it loaded bf16, 131 GiB,
/// without one), its dtype, `device_map="sequential"` and the plan's caps,
/// explained where they exceed the card; each 16-bit and 8-bit format too.
#[test]
fn the_transformers_snippet_loads_the_plans_format_under_its_caps() {
    use shared::formats::WeightFormat;
    let m = model("llama-3.1-70b");
    let gpu = shared::catalog::gpu("rtx-4090").unwrap_or_else(|| panic!("rtx-4090"));
    for (id, quant, dtype) in [
        ("nf4", Some("load_in_4bit=True, bnb_4bit_quant_type=\"nf4\""), "torch.bfloat16"),
        ("fp4", Some("load_in_4bit=True, bnb_4bit_quant_type=\"fp4\""), "torch.bfloat16"),
        ("int8", Some("load_in_8bit=True"), "torch.float16"),
        ("bf16", None, "torch.bfloat16"),
        ("fp16", None, "torch.float16"),
    ] {
        let weights = WeightFormat::parse(id).unwrap_or_else(|e| panic!("{e}"));
        let gpus = if matches!(id, "bf16" | "fp16") { 8 } else { 2 };
        let s = Scenario { weights, gpus: vec![GpuSlot::from_catalog(gpu); gpus], ..Scenario::default() };
        let e = estimate(&m, s);
        let map = e.device_map.as_ref().unwrap_or_else(|| panic!("{id}: a layer-wise split"));
        let code = map.snippet("meta-llama/Llama-3.1-70B-Instruct", weights);
        let kwargs = from_pretrained_kwargs(&code);
        let get = |k: &str| kwargs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("dtype"), Some(dtype), "{id}: {code}");
        assert_eq!(get("device_map"), Some("\"sequential\""), "{id}: {code}");
        assert_eq!(get("max_memory"), Some(map.max_memory_python().as_str()), "{id}: {code}");
        match quant {
            Some(q) => {
                assert_eq!(get("quantization_config"), Some("quant"), "{id}: {code}");
                let config = code
                    .lines()
                    .find(|l| l.starts_with("quant = BitsAndBytesConfig("))
                    .unwrap_or_else(|| panic!("{id}: no config in {code}"));
                assert!(config.contains(q), "{id}: {config}");
                assert!(code.contains("bitsandbytes caps each GPU at 90 %"), "{code}");
            }
            None => assert_eq!(get("quantization_config"), None, "{id}: {code}"),
        }
    }
}

/// vLLM's and SGLang's fixes are whole launches of their plan (issue 34): 70B
/// FP8 on H100s carries `--quantization fp8`, the context and the TP degree,
/// and no fix names a repository that does not exist.
#[test]
fn vllm_and_sglang_fixes_launch_their_whole_plan() {
    use shared::engines::sglang;
    use shared::fixes::{FixKind, fixes};
    use shared::formats::WeightFormat;
    let mut m = model("llama-3.1-70b");
    m.repo = Some("meta-llama/Llama-3.1-70B-Instruct".into());
    let h100 = shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("h100-sxm"));
    let base = Scenario {
        weights: WeightFormat::Fp8 { block: None },
        gpus: vec![GpuSlot::from_catalog(h100)],
        ..Scenario::default()
    };
    let vllm_plan = Scenario {
        engine: Engine::Vllm(vllm::Options { max_model_len: Some(32_768), ..Default::default() }),
        ..base.clone()
    };
    let all = fixes(&m, &vllm_plan);
    for f in &all {
        let line = f.code.lines().last().unwrap_or_default();
        assert!(line.starts_with("vllm serve "), "{}: {}", f.title, f.code);
        if f.scenario.weights == vllm_plan.weights {
            assert!(line.contains(" --quantization fp8"), "{}: {}", f.title, f.code);
        }
        assert!(!f.code.contains("-GPTQ-Int4") && !f.code.contains("Instruct-AWQ"), "{}", f.code);
    }
    let more = all.iter().find(|f| f.kind == FixKind::MoreGpus).unwrap_or_else(|| panic!("{all:?}"));
    assert_eq!(
        more.code,
        "vllm serve meta-llama/Llama-3.1-70B-Instruct --quantization fp8 --max-model-len 32768 --tensor-parallel-size 2"
    );
    let sglang_plan = Scenario {
        engine: Engine::Sglang(sglang::Options { context_length: Some(32_768), ..Default::default() }),
        gpus: vec![GpuSlot::from_catalog(h100); 2],
        tp: 2,
        ..base
    };
    let line = (shared::engines::EngineKind::Sglang.commands().launch.unwrap_or_else(|| panic!("a launch")))(
        &m,
        &sglang_plan,
        "meta-llama/Llama-3.1-70B-Instruct",
    );
    assert_eq!(
        line,
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --quantization fp8 --context-length 32768 --tp-size 2"
    );
    // A GPTQ format names the checkpoint it needs and its flag, in the
    // plan's whole launch (the fix of an engine that refuses the plan's
    // format prints it as it is).
    let gptq = WeightFormat::parse("gptq-int4").unwrap_or_else(|e| panic!("{e}"));
    let t = Scenario { weights: gptq, ..vllm_plan };
    let line = (shared::engines::EngineKind::Vllm.commands().weights)(&m, &t, "meta-llama/Llama-3.1-70B-Instruct");
    assert_eq!(
        line,
        "vllm serve <a GPTQ checkpoint of meta-llama/Llama-3.1-70B-Instruct> --quantization gptq --max-model-len 32768"
    );
}

/// A pipeline over GPUs of unequal memory is split in proportion to it by
/// each engine's own means: vLLM's and SGLang's `PP_LAYER_PARTITION`
/// variables before their whole launch (one count per stage, summing to the
/// layers, as `get_pp_indices` requires), llama.cpp's whole line with the
/// split pinned; stages of equal memory are the engines' own even split
/// already, and no fix is offered for them.
#[test]
fn an_uneven_pipeline_is_split_by_memory_in_each_engines_words() {
    use shared::engines::{llamacpp, sglang};
    use shared::formats::WeightFormat;
    use shared::startup::{configured_engine, read_command_line};
    let m = model("llama-3.1-8b");
    let mixed = vec![GpuSlot::custom("24 GiB", 24 * GIB), GpuSlot::custom("48 GiB", 48 * GIB)];
    let vllm_plan =
        Scenario { gpus: mixed.clone(), engine: Engine::Vllm(vllm::Options::default()), ..Scenario::default() };
    let rebalance = |s: &Scenario, layers: &[usize]| shared::engines::commands::rebalance(&m, s, "org/model", layers);
    assert_eq!(
        rebalance(&vllm_plan, &[16, 16]).as_deref(),
        Some("VLLM_PP_LAYER_PARTITION=11,21 vllm serve org/model --pipeline-parallel-size 2")
    );
    let sglang_plan = Scenario { engine: Engine::Sglang(sglang::Options::default()), ..vllm_plan.clone() };
    assert_eq!(
        rebalance(&sglang_plan, &[16, 16]).as_deref(),
        Some("SGLANG_PP_LAYER_PARTITION=11,21 python -m sglang.launch_server --model-path org/model --pp-size 2")
    );
    // TP 2 within each stage: one count per stage; a stage's memory is its smallest GPU's.
    let (small, large) = (mixed[0].clone(), mixed[1].clone());
    let tp =
        Scenario { gpus: vec![small.clone(), large.clone(), large.clone(), large.clone()], tp: 2, ..vllm_plan.clone() };
    let line = rebalance(&tp, &[16, 16, 16, 16]).unwrap_or_default();
    assert!(line.starts_with("VLLM_PP_LAYER_PARTITION=11,21 "), "{line}");
    // Data-parallel replicas each split alike: one count per stage of one
    // replica (vLLM refuses a list longer than `pp_size`), the stage's
    // smallest GPU in any replica.
    let dp = Scenario {
        gpus: vec![large.clone(), large.clone(), small.clone(), large.clone()],
        engine: Engine::Vllm(vllm::Options { data_parallel_size: 2, ..Default::default() }),
        ..vllm_plan.clone()
    };
    let line = rebalance(&dp, &[16, 16, 16, 16]).unwrap_or_default();
    assert!(line.starts_with("VLLM_PP_LAYER_PARTITION=11,21 ") && line.contains("--data-parallel-size 2"), "{line}");
    // Every stage keeps a layer, however small its GPU.
    let tiny = Scenario {
        gpus: vec![GpuSlot::custom("1 GiB", GIB), GpuSlot::custom("80 GiB", 80 * GIB)],
        ..vllm_plan.clone()
    };
    assert!(rebalance(&tiny, &[16, 16]).is_some_and(|c| c.starts_with("VLLM_PP_LAYER_PARTITION=1,31 ")));
    let even = Scenario { gpus: vec![large.clone(); 2], ..vllm_plan.clone() };
    assert_eq!(rebalance(&even, &[16, 16]), None);
    // Each engine places a remainder its own way (`get_pp_indices`: vLLM
    // 0.10.0 on the stages before the last, SGLang 0.5.23 on the last ones),
    // and a partition that is the engine's own is no fix.
    let three = |engine: Engine| {
        let s = Scenario { gpus: vec![GpuSlot::custom("24 GiB", 24 * GIB); 3], engine, ..Scenario::default() };
        let e = crate::estimate(&m, s);
        e.per_gpu.iter().map(|g| g.layers[1] - g.layers[0]).collect::<Vec<_>>()
    };
    assert_eq!(three(Engine::Vllm(vllm::Options::default())), [11, 11, 10]);
    assert_eq!(three(Engine::Sglang(sglang::Options::default())), [10, 11, 11]);
    let uneven = Scenario {
        gpus: vec![
            GpuSlot::custom("24 GiB", 24 * GIB),
            GpuSlot::custom("24 GiB", 24 * GIB),
            GpuSlot::custom("21.5 GiB", 22_016 * MIB),
        ],
        ..vllm_plan.clone()
    };
    assert_eq!(rebalance(&uneven, &[11, 11, 10]), None, "vLLM's own split already");
    // llama.cpp spreads `-ts` over the offloaded layers with the output
    // layer among them: the pinned line plans the very split it pins.
    let llama = Scenario {
        engine: Engine::LlamaCpp(llamacpp::Options::default()),
        weights: WeightFormat::parse("q4_k_m").unwrap_or_else(|e| panic!("{e}")),
        ..vllm_plan
    };
    for split in [[11usize, 21], [22, 10]] {
        let line = rebalance(&llama, &split).unwrap_or_default();
        assert!(line.starts_with("llama-server -m model-Q4_K_M.gguf "), "{line}");
        let read = read_command_line(&line.split_whitespace().collect::<Vec<_>>()).unwrap_or_else(|| panic!("{line}"));
        let (engine, _) = configured_engine(read.launcher.engine(), &read.config, llama.engine);
        let e = crate::estimate(&m, Scenario { engine, ..llama.clone() });
        let placed: Vec<usize> = e.per_gpu.iter().map(|g| g.layers[1] - g.layers[0]).collect();
        assert_eq!(placed, split, "{line}");
    }
}

/// vLLM 0.10's all-to-all backends are `naive`, `pplx` and DeepEP's (0.10.0
/// and 0.10.2 `cuda_communicator.py` raise "Unknown all2all backend" for
/// `allgather_reducescatter`, which 0.11.0 added): such a plan still opens,
/// says so before its verdict and launches as 0.10's default `naive`.
/// Before 0.12 the backend is `VLLM_ALL2ALL_BACKEND`, which the launch
/// reader reads back.
#[test]
fn vllm_010_has_no_allgather_backend_and_its_environment_reads_back() {
    let m = model("qwen3-30b-a3b");
    let plan = |version: &str, backend| Scenario {
        gpus: vec![GpuSlot::custom("80 GiB", 80 * GIB); 2],
        engine: Engine::Vllm(vllm::Options {
            version: vllm::Version::parse(version).unwrap_or_else(|| panic!("{version}")),
            data_parallel_size: 2,
            enable_expert_parallel: true,
            all2all_backend: Some(backend),
            ..Default::default()
        }),
        ..Scenario::default()
    };
    let launch = shared::engines::EngineKind::Vllm.commands().launch.unwrap_or_else(|| panic!("a launch"));
    let old = plan("0.10", vllm::All2All::AllgatherReducescatter).validate_for(&m).unwrap_or_else(|e| panic!("{e}"));
    let e = crate::estimate(&m, (*old).clone());
    let said = shared::estimate::verdict_text(&e, shared::units::UnitSystem::Binary);
    assert!(said.starts_with("vLLM's 0.10 rules have no allgather_reducescatter"), "{said}");
    let line = launch(&m, &old, "Qwen/Qwen3-30B-A3B");
    assert!(line.starts_with("vllm serve ") && !line.contains("ALL2ALL"), "{line}");
    let new = plan("0.11-mm", vllm::All2All::AllgatherReducescatter).validate_for(&m).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(crate::estimate(&m, (*new).clone()).setting_refused, None);
    for version in ["0.10", "0.11-mm"] {
        let s = plan(version, vllm::All2All::DeepepLowLatency);
        let valid = s.clone().validate_for(&m).unwrap_or_else(|e| panic!("{version}: {e}"));
        let line = (shared::engines::EngineKind::Vllm.commands().launch.unwrap_or_else(|| panic!("a launch")))(
            &m,
            &valid,
            "Qwen/Qwen3-30B-A3B",
        );
        assert!(line.starts_with("VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve "), "{line}");
        let read = shared::startup::read_command_line(&line.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("{line}"));
        assert_eq!(read.config.all2all_backend, Some(vllm::All2All::DeepepLowLatency), "{line}");
    }
}

/// `--kv-cache-memory-bytes` (issue 33's setting added in one module): the
/// pool is given, so the utilisation no longer sizes it; a pool past the GPU
/// fails as vLLM allocates it; rules older than 0.11 refuse it.
#[test]
fn vllm_given_kv_pool_replaces_the_profile() {
    let m = model("llama-3.1-8b");
    let s = |utilization, kv: Option<u64>| Scenario {
        gpus: vec![GpuSlot::custom("24 GiB", 24 * GIB)],
        engine: Engine::Vllm(vllm::Options {
            max_model_len: Some(8192),
            gpu_memory_utilization: Some(utilization),
            kv_cache_memory_bytes: kv,
            ..Default::default()
        }),
        ..Scenario::default()
    };
    let (profiled, _) = vllm_report(s(0.9, None), &m);
    let pinned = profiled.pinned_kv_cache_memory_bytes.expect("the suggested pool");
    for utilization in [0.5, 0.9, 0.95] {
        let (given, verdict) = vllm_report(s(utilization, Some(pinned)), &m);
        assert_eq!(given.num_gpu_blocks, profiled.num_gpu_blocks, "utilization {utilization}");
        assert_eq!(given.per_gpu[0].available_kv_bytes, pinned);
        assert!(matches!(verdict, Verdict::Fits { .. }), "{verdict:?}");
        assert!(given.log_lines.iter().any(|l| l.contains("as specified by kv_cache_memory_bytes")));
    }
    // 30 GiB of KV beside 15 GiB of weights on 24 GiB.
    let (over, verdict) = vllm_report(s(0.9, Some(30 * GIB)), &m);
    let Verdict::DoesNotFitAtLoad { gpu: 0, shortfall_bytes } = verdict else { panic!("{verdict:?}") };
    let g = &over.per_gpu[0];
    let held = g.weight_bytes + g.activation_bytes + g.non_torch_bytes + g.cuda_graph_bytes + 30 * GIB;
    // What it holds, and vLLM's CUDA context, past the 24 GiB.
    assert!(shortfall_bytes > held - 24 * GIB && shortfall_bytes < held - 24 * GIB + GIB, "{shortfall_bytes}");
    let v1 = Scenario {
        engine: Engine::Vllm(vllm::Options {
            version: vllm::Version::V1,
            kv_cache_memory_bytes: Some(GIB),
            ..Default::default()
        }),
        ..Scenario::default()
    };
    let err = v1.validate_for(&m).expect_err("0.8 – 0.9 have no kv_cache_memory_bytes");
    assert!(err.to_string().contains("arrived in vLLM 0.11"), "{err}");
}

/// `--speculative-config` (issue 36): what each method adds, from vLLM's
/// source (`engines/vllm/spec.rs`), checked against the 0.18.0 A/B pair of
/// start-up logs where n-gram drafting changed no figure.
#[test]
fn vllm_speculative_decoding_adds_only_what_its_drafter_builds() {
    use vllm::{SpecMethod, Speculative};
    let s = |id: &str, spec: Option<&str>, tp: u64| {
        let m = model(id);
        let s = Scenario {
            gpus: vec![GpuSlot::custom("141 GiB", 141 * GIB); tp as usize],
            tp,
            engine: Engine::Vllm(vllm::Options {
                max_model_len: Some(8192),
                speculative: spec.map(|t| Speculative::parse(t).unwrap_or_else(|e| panic!("{e}"))),
                ..Default::default()
            }),
            ..Scenario::default()
        };
        (m, s)
    };
    // n-gram and suffix: nothing but the rejection sampler's warm-up rows.
    let (m, off) = s("qwen3-8b", None, 1);
    let (_, ngram) = s("qwen3-8b", Some("ngram:4"), 1);
    let (a, _) = vllm_report(off, &m);
    let (b, _) = vllm_report(ngram, &m);
    assert_eq!(
        (a.per_gpu[0].weight_bytes, a.per_gpu[0].block_bytes),
        (b.per_gpu[0].weight_bytes, b.per_gpu[0].block_bytes)
    );
    assert_eq!(b.per_gpu[0].draft_bytes, 0);
    // 1,024 sequences (≥ 70 GiB) × 151,936 logits × 2 rows × 2 bytes more,
    // where the sampler's phase is the profile's peak.
    let rows = 1024 * 151_936 * 2 * 2;
    assert_eq!(b.per_gpu[0].activation_bytes - a.per_gpu[0].activation_bytes, rows);
    // MTP on GLM-4.5-Air (one layer): the drafter's weights are one MoE
    // layer like the last, with eh_proj and norms, and every KV block holds
    // one layer more (46 + 1).
    let (m, off) = s("glm-4.5-air", None, 2);
    let (_, mtp) = s("glm-4.5-air", Some("mtp"), 2);
    let (a, _) = vllm_report(off, &m);
    let (b, _) = vllm_report(mtp, &m);
    let t = &m.arch.text;
    assert_eq!(t.extra.mtp_layers, 1);
    let layers = t.num_layers();
    assert_eq!(b.per_gpu[0].block_bytes * layers, a.per_gpu[0].block_bytes * (layers + 1));
    let draft = b.per_gpu[1].draft_bytes;
    assert_eq!(b.per_gpu[1].weight_bytes - a.per_gpu[1].weight_bytes, draft);
    let layer = a.per_gpu[1].weight_bytes / layers;
    assert!(draft > layer / 2 && draft < 2 * layer, "one layer's worth: {draft} vs {layer} on average");
    assert!(b.per_gpu[1].available_kv_bytes < a.per_gpu[1].available_kv_bytes);
    // A model without MTP layers is refused, and so are draft counts that
    // are no multiple of them.
    let (m, none) = s("llama-3.1-8b", Some("mtp"), 1);
    let err = none.validate_for(&m).expect_err("no MTP layers");
    assert!(err.to_string().contains("num_nextn_predict_layers"), "{err}");
    let (m, three) = s("qwen3.5-27b", Some("mtp:3"), 1);
    assert!(m.arch.text.extra.mtp_layers == 1 && three.validate_for(&m).is_ok());
    // The V0 rules do not model it.
    let v0 = Scenario {
        engine: Engine::Vllm(vllm::Options {
            version: vllm::Version::V0,
            speculative: Some(Speculative { method: SpecMethod::Ngram, tokens: Some(4) }),
            ..Default::default()
        }),
        ..Scenario::default()
    };
    assert!(v0.validate().is_err());
}

/// vLLM's own `--speculative-config` JSON, the link's `method:tokens`, and
/// the drafters that need a model of their own refused by name.
#[test]
fn vllm_speculative_config_reads_vllms_json_and_the_short_form() {
    use vllm::{SpecMethod, Speculative};
    let ngram = Speculative { method: SpecMethod::Ngram, tokens: Some(4) };
    assert_eq!(Speculative::parse("ngram:4"), Ok(ngram));
    assert_eq!(
        Speculative::parse(r#"{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 5}"#),
        Ok(ngram)
    );
    assert_eq!(Speculative::parse(&ngram.json()), Ok(ngram));
    assert_eq!(Speculative::parse(&ngram.text()), Ok(ngram));
    assert_eq!(Speculative::parse("deepseek_mtp"), Ok(Speculative { method: SpecMethod::Mtp, tokens: None }));
    for (bad, says) in [
        ("ngram", "needs num_speculative_tokens"),
        ("ngram:0", "between 1 and 128"),
        ("ngram:x", "between 1 and 128"),
        (r#"{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}"#, "not modelled yet"),
        ("medusa:2", "not modelled yet"),
        ("lookahead:2", "use ngram, suffix or mtp"),
        ("{}", "name a method"),
    ] {
        let err = Speculative::parse(bad).expect_err(bad);
        assert!(err.contains(says), "{bad}: {err}");
    }
}

/// `--limit-mm-per-prompt` as vLLM takes it, and the short form of links.
#[test]
fn vllm_mm_limits_read_vllms_json_and_the_short_form() {
    use vllm::MmLimits;
    let two = MmLimits { image: Some(2), video: Some(0) };
    assert_eq!(MmLimits::parse(r#"{"image": 2, "video": 0}"#), Ok(two));
    assert_eq!(MmLimits::parse("image:2,video:0"), Ok(two));
    assert_eq!(MmLimits::parse(&two.json()), Ok(two));
    assert_eq!(MmLimits::parse(&two.text()), Ok(two));
    assert_eq!(MmLimits::parse("0"), Ok(MmLimits { image: Some(0), video: Some(0) }));
    assert_eq!(MmLimits::parse(r#"{"audio": 1}"#), Ok(MmLimits::default()));
    for bad in ["image:x", "pictures:2", "5000", "image"] {
        assert!(MmLimits::parse(bad).is_err(), "{bad}");
    }
}

/// vLLM 0.34's extensible KV cache (`extensible_kv_cache.py`): with
/// utilization 1.0 by default the pool is CUDA's total less what the worker
/// holds at its snapshot (the CUDA context), the weights, the memory outside
/// PyTorch, the captured CUDA graphs, the activation peak and a margin of
/// max(1 GiB, ¾ × the peak); the profile's figure (without the graph
/// estimate, which 0.34 skips) only reserves the address range. Blocks are
/// 64 tokens. Llama 3.1 8B on an H100 SXM: 59.80 GiB against 0.24's 55.09.
#[test]
fn vllm_0_34_measures_its_pool_after_warmup() {
    let m = model("llama-3.1-8b");
    let plan = |o: vllm::Options| Scenario {
        gpus: vec![GpuSlot::from_catalog(shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("h100-sxm")))],
        engine: Engine::Vllm(o),
        ..Scenario::default()
    };
    let o = vllm::Options { version: vllm::Version::V0_34, ..Default::default() };
    let (r, _) = vllm_report(plan(o), &m);
    let g = &r.per_gpu[0];
    let cuda_total = g.requested_bytes;
    assert_eq!((r.gpu_memory_utilization, r.block_size), (1.0, 64));
    let peak = g.activation_bytes;
    assert_eq!(g.margin_bytes, GIB.max(peak / 4 * 3));
    let used = g.weight_bytes + g.non_torch_bytes + g.cuda_graph_bytes;
    let want = cuda_total - shared::plan::CUDA_CONTEXT_BYTES - used - g.margin_bytes - peak;
    assert_eq!(g.available_kv_bytes, want);
    assert_eq!(g.reserved_kv_bytes, Some(cuda_total - g.weight_bytes - peak - g.non_torch_bytes));
    assert_eq!(r.num_gpu_blocks, want / g.block_bytes);
    assert!(r.log_lines.iter().any(|l| l.starts_with(&format!("Extended KV cache to {} blocks", r.num_gpu_blocks))));

    // The same plan under 0.24's rules: 0.92 of the total, graphs estimated.
    let (old, _) = vllm_report(plan(vllm::Options { version: vllm::Version::V0_24Mm, ..o }), &m);
    assert_eq!((old.gpu_memory_utilization, old.block_size), (0.92, 16));
    let gained = g.available_kv_bytes - old.per_gpu[0].available_kv_bytes;
    assert!((4 * GIB..5 * GIB).contains(&gained), "{gained}");

    // A utilization below 1.0 caps the pool within its share.
    let (capped, _) = vllm_report(plan(vllm::Options { gpu_memory_utilization: Some(0.5), ..o }), &m);
    let c = &capped.per_gpu[0];
    assert_eq!(c.available_kv_bytes, c.requested_bytes - used - peak);

    // A given pool turns it off: 0.92 and no margin (the blocks stay 64).
    let given = vllm::Options { kv_cache_memory_bytes: Some(20 * GIB), ..o };
    let (pinned, _) = vllm_report(plan(given), &m);
    assert_eq!((pinned.gpu_memory_utilization, pinned.per_gpu[0].margin_bytes), (0.92, 0));
    assert_eq!(pinned.per_gpu[0].available_kv_bytes, 20 * GIB);

    // `--block-size 16` is kept.
    let (small, _) = vllm_report(plan(vllm::Options { block_size: Some(16), ..o }), &m);
    assert_eq!(small.block_size, 16);

    // `--no-enable-extensible-kv-cache`: the profile's estimate within 0.92,
    // as 0.24 sized it, in 0.34's 64-token blocks; the launch line says so
    // and reads back as the same plan.
    let off = vllm::Options { no_extensible_kv_cache: true, ..o };
    let (profiled, _) = vllm_report(plan(off), &m);
    assert_eq!((profiled.gpu_memory_utilization, profiled.block_size, profiled.per_gpu[0].margin_bytes), (0.92, 64, 0));
    assert_eq!(profiled.per_gpu[0].available_kv_bytes, old.per_gpu[0].available_kv_bytes);
    let line = shared::engines::vllm::COMMANDS.launch.map(|f| f(&m, &plan(off), "meta-llama/Llama-3.1-8B-Instruct"));
    let line = line.unwrap_or_else(|| panic!("vLLM prints a launch line"));
    assert!(line.contains(" --no-enable-extensible-kv-cache"), "{line}");
    // A utilization below 1.0 only withholds memory from the measured pool:
    // the fix leaves the flag out (0.34's start-up warning says as much).
    let habit = vllm::Options { gpu_memory_utilization: Some(0.9), max_model_len: Some(16_384), ..o };
    let fp8 = shared::formats::WeightFormat::Fp8 { block: None };
    let all = shared::fixes::fixes(&model("llama-3.1-70b"), &Scenario { weights: fp8, ..plan(habit) });
    let unset = all.iter().find(|f| f.kind == shared::fixes::FixKind::HigherUtilization);
    let unset = unset.unwrap_or_else(|| panic!("{all:?}"));
    assert!(unset.title.starts_with("Leave --gpu-memory-utilization unset"), "{}", unset.title);
    assert!(matches!(unset.scenario.engine, Engine::Vllm(u) if u.gpu_memory_utilization.is_none()));

    // A context that does not fit: 0.34's own words, with nothing to raise.
    let big = model("llama-3.1-70b");
    let at_32k = Scenario {
        weights: shared::formats::WeightFormat::Fp8 { block: None },
        ..plan(vllm::Options { max_model_len: Some(32_768), ..o })
    };
    let (refused, _) = vllm_report(at_32k, &big);
    let error = refused.startup_error.unwrap_or_default();
    assert!(error.contains("The extensible KV cache already takes all device memory left after"), "{error}");
    assert!(error.ends_with("Decreasing `max_model_len` also reduces what is needed."), "{error}");
    // The flag does not exist before 0.34.
    let old_off = vllm::Options { version: vllm::Version::V0_24Mm, ..off };
    assert!(plan(old_off).validate().is_err());
}

/// A vLLM 0.34 log plans with the 0.34 rules, and its
/// `enable_extensible_kv_cache: False` (the non-default args) turns the
/// measured pool off; its "Extended KV cache to N blocks" is the pool.
#[test]
fn a_vllm_0_34_log_names_its_kv_sizing() {
    let m = model("llama-3.1-8b");
    let disabled = "INFO 12-01 10:00:00 [api_server.py:1755] vLLM API server version 0.34.0\n\
                    WARNING 12-01 10:00:30 [abstract.py:176] Disabling the extensible KV cache: the driver has no \
                    virtual memory management. The KV cache will be sized from the memory profile.\n\
                    (EngineCore pid=1) INFO 12-01 10:00:40 [gpu_model_runner.py:1892] Model loading took 14.99 GiB\n";
    let read = shared::startup::read(disabled).unwrap_or_else(|| panic!("a start-up log"));
    let plan = Scenario { engine: Engine::Vllm(Default::default()), ..Default::default() };
    let (s, _) = shared::startup::logged_scenario(&read, &m, plan);
    assert!(matches!(s.engine, Engine::Vllm(o) if o.no_extensible_kv_cache), "{:?}", s.engine);
    let log = "INFO 12-01 10:00:00 [api_server.py:1755] vLLM API server version 0.34.0\n\
               INFO 12-01 10:00:00 [utils.py:261] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct', \
               'enable_extensible_kv_cache': False}\n\
               (EngineCore pid=1) INFO 12-01 10:01:00 [extensible_kv_cache.py:536] Extended KV cache to 7654 blocks (59.80 GiB).\n";
    let read = shared::startup::read(log).unwrap_or_else(|| panic!("a start-up log"));
    let (s, taken) = shared::startup::logged_scenario(
        &read,
        &m,
        Scenario { engine: Engine::Vllm(Default::default()), ..Default::default() },
    );
    let Engine::Vllm(o) = s.engine else { panic!("{:?}", s.engine) };
    assert_eq!((o.version, o.no_extensible_kv_cache), (vllm::Version::V0_34, true), "{taken:?}");
    assert!(taken.iter().any(|t| t == "no extensible KV cache"), "{taken:?}");
    let blocks = read.facts.iter().find_map(|f| match f.figure {
        shared::startup::Figure::KvBlocks { blocks } => Some(blocks),
        _ => None,
    });
    assert_eq!(blocks, Some(7654));
}

/// The what-ifs of a 0.34 log compare its "Available KV cache memory" (the
/// profile's estimate under the extensible cache) with the plan's estimate,
/// not with the measured pool, and carry that residual onto the pool.
#[test]
fn vllm_0_34_what_ifs_compare_like_with_like() {
    let m = model("llama-3.1-8b");
    let h100 = GpuSlot::from_catalog(shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("h100-sxm")));
    let o = vllm::Options { version: vllm::Version::V0_34, max_model_len: Some(32_768), ..Default::default() };
    let s = Scenario { gpus: vec![h100], engine: Engine::Vllm(o), ..Scenario::default() };
    let (r, _) = vllm_report(s.clone(), &m);
    let g = &r.per_gpu[0];
    let reserved = g.reserved_kv_bytes.unwrap_or_else(|| panic!("0.34 reserves the range"));
    let log = format!(
        "INFO 12-01 10:00:00 [api_server.py:1755] vLLM API server version 0.34.0\n\
         (EngineCore pid=1) INFO 12-01 10:00:40 [gpu_worker.py:790] Available KV cache memory: {:.2} GiB\n",
        reserved as f64 / GIB as f64
    );
    let read = shared::startup::read(&log).unwrap_or_else(|| panic!("a start-up log"));
    let valid = s.validate_for(&m).unwrap_or_else(|e| panic!("{e}"));
    let w = shared::startup::what_ifs(&read, &m, &valid).unwrap_or_else(|| panic!("what-ifs"));
    // Two decimals of GiB: within 5.12 MiB.
    assert!(w.residual_bytes.unsigned_abs() <= 6 * MIB, "{}", w.residual_bytes);
    let as_logged = &w.rows[0];
    assert_eq!(as_logged.change, "as logged");
    assert!(as_logged.available_kv_bytes.abs_diff(g.available_kv_bytes) <= 6 * MIB);
}

/// vLLM from 0.21.0 logs its KV cache size as the pool's concurrency at
/// `max_model_len` times that length (`int(max_concurrency ×
/// max_model_len)`, `v1/core/kv_cache_utils.py`; the 0.22.1 Qwen3-30B-A3B
/// log's 464,656 tokens at 56.72× of 8,192 is no multiple of its 16-token
/// blocks); 0.20 and before, the blocks over the groups. gpt-oss keeps a
/// sliding-window group beside the full one, whose blocks a request holds
/// only over its window: the two counts part.
#[test]
fn vllm_counts_kv_tokens_from_its_concurrency_from_0_21() {
    let tokens = |version: vllm::Version| {
        let s = Scenario {
            gpus: vec![GpuSlot::custom("80 GiB", 80 * GIB)],
            engine: Engine::Vllm(vllm::Options { version, max_model_len: Some(32_768), ..Default::default() }),
            ..Scenario::default()
        };
        vllm_report(s, &model("gpt-oss-20b")).0
    };
    let old = tokens(vllm::Version::V0_19);
    assert_eq!(old.kv_cache_tokens, old.num_gpu_blocks / 2 * old.block_size);
    let new = tokens(vllm::Version::V0_24);
    let want = (new.num_gpu_blocks as f64 / new.blocks_per_request as f64 * 32_768.0) as u64;
    assert_eq!(new.kv_cache_tokens, want);
    assert!(new.kv_cache_tokens > new.num_gpu_blocks / 2 * new.block_size * 3 / 2, "{new:?}");
}

/// `--cpu-offload-gb`: vLLM moves the decoder layers' parameters to pinned
/// host memory until that much has gone (0.24.0 `offloader/uva.py`), so each
/// GPU holds that much less weight and its KV pool is that much larger; a
/// model whose weights do not load on the GPU loads with enough of them
/// offloaded. At most the layers' own bytes move: the embedding and head
/// stay.
#[test]
fn vllm_cpu_offload_moves_layer_weights_to_the_host() {
    let run = |offload: Option<f64>, gpu_gib: u64| {
        let s = Scenario {
            gpus: vec![GpuSlot::custom("gpu", gpu_gib * GIB)],
            engine: Engine::Vllm(vllm::Options {
                version: vllm::Version::V0_24,
                max_model_len: Some(8192),
                cpu_offload_gb: offload,
                ..Default::default()
            }),
            ..Scenario::default()
        };
        vllm_report(s, &model("llama-3.1-8b"))
    };
    let (base, _) = run(None, 40);
    let (off, _) = run(Some(4.0), 40);
    let (w0, w4) = (base.per_gpu[0].weight_bytes, off.per_gpu[0].weight_bytes);
    assert_eq!(w0 - w4, 4 * GIB);
    let kv = |r: &vllm::Report| r.per_gpu[0].available_kv_bytes;
    assert_eq!(kv(&off) - kv(&base), 4 * GIB);
    // 15 GiB of bf16 weights on a 14 GiB GPU: they do not load without it.
    let (_, refused) = run(None, 14);
    assert!(matches!(refused, Verdict::DoesNotFitAtLoad { .. }), "{refused:?}");
    let (_, loads) = run(Some(10.0), 14);
    assert!(matches!(loads, Verdict::Fits { .. }), "{loads:?}");
    // Past the layers' bytes, only the layers move.
    let (all, _) = run(Some(1000.0), 40);
    assert!(all.per_gpu[0].weight_bytes > GIB / 2 && all.per_gpu[0].weight_bytes < 2 * GIB, "{all:?}");
    // On one pool for the CPU and the GPU it saves nothing, and says so.
    let spark = |offload: Option<f64>| {
        let slot = GpuSlot::from_catalog(shared::catalog::gpu("dgx-spark").unwrap_or_else(|| panic!("dgx-spark")));
        let s = Scenario {
            gpus: vec![slot],
            engine: Engine::Vllm(vllm::Options { cpu_offload_gb: offload, ..Default::default() }),
            ..Scenario::default()
        };
        estimate(&model("llama-3.1-8b"), s)
    };
    let (with, without) = (spark(Some(4.0)), spark(None));
    assert_eq!(with.per_gpu[0].budget.weight_bytes, without.per_gpu[0].budget.weight_bytes);
    assert!(with.warnings.iter().any(|w| w.contains("saves nothing")), "{:?}", with.warnings);
}

/// vLLM's default batch by GPU (`engine/arg_utils.py::_set_default_args`):
/// from 0.34.0 a GPU of ≥ 160 GiB takes 16,384 batched tokens (B200,
/// B300), and a GB10 (DGX Spark, compute capability 12.1), whose 128 GB are
/// past the large tier's 70 GiB, the small tier; before 0.34 both are the
/// large tier's 8,192 with 1,024 sequences.
#[test]
fn vllm_default_batch_follows_its_tiers_by_release() {
    let batch = |gpu: &str, version: vllm::Version| {
        let slot = GpuSlot::from_catalog(shared::catalog::gpu(gpu).unwrap_or_else(|| panic!("{gpu}")));
        let s = Scenario {
            gpus: vec![slot],
            engine: Engine::Vllm(vllm::Options { version, max_model_len: Some(8192), ..Default::default() }),
            ..Scenario::default()
        };
        let (r, _) = vllm_report(s, &model("llama-3.1-8b"));
        (r.max_num_batched_tokens, r.max_num_seqs)
    };
    assert_eq!(batch("b200", vllm::Version::V0_34), (16_384, 1024));
    assert_eq!(batch("b200", vllm::Version::V0_24), (8192, 1024));
    assert_eq!(batch("h100-sxm", vllm::Version::V0_34), (8192, 1024));
    assert_eq!(batch("dgx-spark", vllm::Version::V0_34), (2048, 256));
    assert_eq!(batch("dgx-spark", vllm::Version::V0_24), (8192, 1024));
    assert_eq!(batch("rtx-4090", vllm::Version::V0_34), (2048, 256));
}

/// A log planned with the preset of its model's base name (the 0.22.1 log of
/// `Qwen/Qwen3-30B-A3B-Instruct-2507`, 262,144 tokens long, on the
/// `qwen3-30b-a3b` preset's 40,960) calls its longest what-if the preset's
/// own length, not the model's.
#[test]
fn a_stand_in_presets_what_if_says_whose_length_it_is() {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/startup/vllm-v1-0221-qwen3-30b-a3b-fp8online-h100.txt");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    let log = shared::startup::read(&text).unwrap_or_else(|| panic!("a start-up log"));
    let preset = shared::startup::logged_base_preset(&log).unwrap_or_else(|| panic!("no preset"));
    let m = model(preset.id);
    let planned = Scenario { engine: Engine::Vllm(vllm::Options::default()), ..Scenario::default() };
    let (s, _) = shared::startup::logged_scenario(&log, &m, planned);
    let valid = s.validate_for(&m).unwrap_or_else(|e| panic!("{e}"));
    let w = shared::startup::what_ifs(&log, &m, &valid).unwrap_or_else(|| panic!("what-ifs"));
    let changes: Vec<&str> = w.rows.iter().map(|r| r.change.as_str()).collect();
    assert!(changes.contains(&"the preset's own length"), "{changes:?}");
}
