//! Ollama (0.30 and later) as the llama-server it launches: its defaults
//! (server/routes.go, server/sched.go, llm/llama_server.go of v0.33.0-rc2),
//! the plan equal to llama.cpp's with those flags, and fixes in Ollama's words.

use crate::estimate;
use crate::llamacpp::{model, report};
use shared::catalog::gpu;
use shared::engines::llamacpp::{self, CacheType, FlashAttention};
use shared::engines::{Engine, EngineKind, ollama};
use shared::estimate::{GpuSlot, Scenario, Verdict};
use shared::fixes::fixes;
use shared::formats::WeightFormat;
use shared::link::{decode, encode};
use shared::model::Model;
use shared::units::GIB;

fn on(o: ollama::Options, gpus: Vec<GpuSlot>) -> Scenario {
    Scenario {
        weights: WeightFormat::parse("q4_k_m").unwrap_or_else(|e| panic!("{e}")),
        engine: Engine::Ollama(o),
        gpus,
        // Ollama's own cache (`EngineKind::default_kv_dtype`), as a link plans it.
        kv_dtype: shared::kv::KvDtype::F16,
        ..Scenario::default()
    }
}

fn catalog(id: &str, n: usize) -> Vec<GpuSlot> {
    let g = gpu(id).unwrap_or_else(|| panic!("{id} is in the catalog"));
    (0..n).map(|_| GpuSlot::from_catalog(g)).collect()
}

fn custom(gib: u64) -> Vec<GpuSlot> {
    vec![GpuSlot::custom("gpu", gib * GIB)]
}

/// The llama-server flags the plan runs with, read off its report.
fn launched(m: &Model, s: Scenario) -> llamacpp::Report {
    report(m, s).0
}

#[test]
fn the_default_context_follows_the_gpus_memory_in_three_tiers() {
    // Qwen3 30B-A3B: a trained context of 40,960 tokens caps the top tier.
    let m = model("llama-3.1-8b");
    let ctx = |gpus| launched(&m, on(ollama::Options::default(), gpus)).n_ctx;
    // server/routes.go: ≥ 47 GiB → 262,144, ≥ 23 GiB → 32,768, else 4,096
    // (CUDA's total of every GPU, summed).
    assert_eq!(ctx(custom(16)), 4_096);
    assert_eq!(ctx(custom(23)), 32_768, "23 GiB is the lower bound of the middle tier");
    assert_eq!(ctx(catalog("rtx-4090", 1)), 32_768);
    assert_eq!(ctx(catalog("rtx-4090", 2)), 131_072, "two GPUs together pass 47 GiB; capped at the trained 128k");
    assert_eq!(ctx(custom(46)), 32_768);
    // NewLlamaServer caps num_ctx at the trained context (Llama 3.1: 131,072).
    assert_eq!(ctx(catalog("h100-sxm", 1)), 131_072);
    // A given num_ctx is one request's; -c is it times OLLAMA_NUM_PARALLEL.
    let r =
        launched(&m, on(ollama::Options { num_ctx: Some(8192), num_parallel: 3, ..Default::default() }, custom(24)));
    assert_eq!((r.n_ctx, r.parallel, r.n_ctx_per_slot), (24_576, 3, 8192));
}

#[test]
fn num_batch_is_picked_by_context_and_memory() {
    let m = model("llama-3.1-8b");
    let ub = |o: ollama::Options, gpus| launched(&m, on(o, gpus)).n_ubatch;
    let d = ollama::Options::default;
    // server/sched.go generationBatchForContext: ≤ 4,096 → 512, ≤ 32,768 → 1024, more → 2048.
    assert_eq!(ub(d(), custom(16)), 512);
    assert_eq!(ub(d(), catalog("rtx-4090", 1)), 1024);
    assert_eq!(ub(d(), catalog("h100-sxm", 1)), 2048);
    // Stepped down when the predicted memory passes 60 % (2048) of the free memory:
    // 4.6 GiB of weights and 16 GiB of f16 KV at 128k on 40 GiB is 51 %; on 32 GiB, 64 %.
    let long = ollama::Options { num_ctx: Some(131_072), ..d() };
    assert_eq!(ub(long, custom(40)), 2048);
    assert_eq!(ub(long, custom(32)), 1024);
    // Over 80 % of it: 512, whatever the context.
    assert_eq!(ub(long, custom(24)), 512);
    // Flash attention off on CUDA: 512, and 256 past 4,096 tokens on 8 GiB or less.
    let off = ollama::Options { flash_attention: Some(FlashAttention::Off), ..d() };
    assert_eq!(ub(off, catalog("rtx-4090", 1)), 512);
    assert_eq!(ub(ollama::Options { num_ctx: Some(8192), ..off }, catalog("rtx-3070", 1)), 256);
    // A given num_batch is passed as -b and -ub.
    assert_eq!(ub(ollama::Options { num_batch: Some(128), ..d() }, custom(24)), 128);
}

#[test]
fn the_plan_is_llama_cpp_with_the_flags_ollama_passes() {
    let m = model("qwen3-30b-a3b");
    for (o, gpus) in [
        (ollama::Options::default(), catalog("rtx-4090", 1)),
        (ollama::Options { num_gpu: Some(20), kv_cache_type: Some(CacheType::Q8_0), ..Default::default() }, custom(12)),
        (ollama::Options { n_cpu_moe: 30, num_parallel: 2, num_ctx: Some(16_384), ..Default::default() }, custom(8)),
    ] {
        let s = on(o, gpus.clone());
        let (r, e) = report(&m, s.clone());
        let flags = llamacpp::Options {
            n_ctx: Some(r.n_ctx),
            n_gpu_layers: o.num_gpu,
            parallel: Some(r.parallel),
            n_ubatch: r.n_ubatch,
            cache_type_k: Some(o.kv_cache_type.unwrap_or(CacheType::F16)),
            cache_type_v: Some(o.kv_cache_type.unwrap_or(CacheType::F16)),
            n_cpu_moe: o.n_cpu_moe,
            ..Default::default()
        };
        let (lr, le) = report(&m, Scenario { engine: Engine::LlamaCpp(flags), ..s });
        assert_eq!(r, lr, "the report of {o:?}");
        assert_eq!(e.per_gpu, le.per_gpu);
        assert_eq!(e.verdict, le.verdict);
        assert_eq!(e.engine, EngineKind::Ollama);
    }
}

#[test]
fn some_architectures_serve_one_request_at_a_time() {
    // server/sched.go: lfm2 (and others) ignore OLLAMA_NUM_PARALLEL.
    let o = ollama::Options { num_parallel: 4, ..Default::default() };
    assert_eq!(launched(&model("lfm2-1.2b"), on(o, custom(80))).parallel, 1);
    assert_eq!(launched(&model("llama-3.1-8b"), on(o, custom(80))).parallel, 4);
    let e = estimate(&model("llama-3.1-8b"), Scenario { concurrency: 8, ..on(o, custom(80)) });
    assert!(e.warnings.iter().any(|w| w.contains("serves 4 request(s) at once")), "{:?}", e.warnings);
    let long = Scenario { prompt_tokens: 8000, ..on(ollama::Options::default(), custom(16)) };
    let e = estimate(&model("llama-3.1-8b"), long);
    assert!(e.warnings.iter().any(|w| w.contains("longer than num_ctx 4096")), "{:?}", e.warnings);
}

#[test]
fn a_projector_raises_the_fit_target_or_stays_on_the_cpu() {
    let m = model("gemma-3-4b");
    let with = |gpus| launched(&m, on(ollama::Options { mmproj: true, ..Default::default() }, gpus));
    let r = with(custom(24));
    assert!(r.mmproj_bytes > 0);
    assert_eq!(r.mmproj_gpu, Some(0));
    // mmprojFitTargetMiB: the projector and 1 GiB, in whole MiB.
    assert_eq!(r.fit_margin_bytes, (r.mmproj_bytes + GIB).div_ceil(1 << 20) << 20);
    // num_gpu below the layers and the output: --no-mmproj-offload.
    let r = launched(&m, on(ollama::Options { mmproj: true, num_gpu: Some(3), ..Default::default() }, custom(24)));
    assert_eq!((r.mmproj_gpu, r.fit_margin_bytes), (None, llamacpp::FIT_MARGIN_BYTES));
}

#[test]
fn fixes_speak_ollama() {
    let m = model("qwen3-30b-a3b");
    let s = on(ollama::Options { num_ctx: Some(32_768), ..Default::default() }, custom(12));
    assert!(!matches!(estimate(&m, s.clone()).verdict, Verdict::Fits { .. }), "18 GiB of weights on 12 GiB");
    let all = fixes(&m, &s);
    assert!(!all.is_empty());
    for f in &all {
        assert!(!f.code.contains("llama-server -m"), "{}: {}", f.title, f.code);
        assert_eq!(f.scenario.engine.kind(), EngineKind::Ollama, "{}", f.title);
    }
    let codes: Vec<&str> = all.iter().map(|f| f.code.as_str()).collect();
    assert!(codes.iter().any(|c| c.contains("PARAMETER num_ctx")), "{codes:#?}");
    assert!(codes.iter().any(|c| c.contains("LLAMA_ARG_N_CPU_MOE=") || c.contains("PARAMETER num_gpu")), "{codes:#?}");
    // Each fix's plan fits as Ollama launches it.
    for f in all.iter().filter(|f| f.fits) {
        assert!(matches!(estimate(&m, f.scenario.clone()).verdict, Verdict::Fits { .. }), "{}", f.title);
    }
}

#[test]
fn fit_runs_on_the_flags_ollama_passes() {
    let m = model("qwen3-30b-a3b");
    let s = on(ollama::Options::default(), custom(12));
    let fit = llamacpp::predict_fit(&m, &s, None).expect("Ollama runs --fit");
    assert!(matches!(fit, llamacpp::Fit::Fitted(ref c) if c.expert_layers_on_host > 0), "{fit:?}");
    // num_gpu makes llama.cpp's --fit give up, as -ngl does.
    let pinned = on(ollama::Options { num_gpu: Some(49), ..Default::default() }, custom(12));
    assert!(matches!(llamacpp::predict_fit(&m, &pinned, None), Some(llamacpp::Fit::GivesUp { .. })));
}

#[test]
fn links_keep_ollamas_settings() {
    let e = Engine::Ollama(ollama::Options {
        num_ctx: Some(8192),
        num_parallel: 2,
        kv_cache_type: Some(CacheType::Q8_0),
        flash_attention: Some(FlashAttention::Off),
        num_gpu: Some(30),
        num_batch: Some(256),
        n_cpu_moe: 12,
        mmproj: true,
        host_ram_bytes: Some(64 * GIB),
    });
    let state = shared::link::LinkState { engine: e, ..Default::default() };
    let q = encode(&state);
    for key in
        ["e=ollama", "numctx=8192", "np=2", "kvt=q8_0", "fa=off", "numgpu=30", "numbatch=256", "ncmoe=12", "mmproj=on"]
    {
        assert!(q.contains(key), "{key} in {q}");
    }
    assert_eq!(decode(&q).state.engine, e);
    // Defaults write nothing but the engine.
    let q = encode(&shared::link::LinkState { engine: EngineKind::Ollama.with_defaults(), ..Default::default() });
    assert!(q.contains("e=ollama") && !q.contains("numctx") && !q.contains("np="), "{q}");
    assert!(!decode("v=2&e=ollama&kvt=q9").notices.is_empty());
}
