//! Speed targets (issue 39): one full estimate under 20 µs in every engine
//! (the page's what-if grid and charts run dozens per change, inside a
//! frame), a 5-format × 64-context sweep (what a chart needs), and each
//! solver under 250 µs.
//! Run with `cargo xtask bench` (or `cargo bench -p shared`).

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use shared::engines::{Engine, EngineKind, llamacpp};
use shared::estimate::{EnginePlan, GpuSlot, Scenario, ValidScenario, estimate};
use shared::formats::WeightFormat;
use shared::model::Model;
use shared::solve::{self, Question};
use shared::units::GIB;

fn model(id: &str) -> Model {
    match Model::preset(id) {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    }
}

fn valid(s: Scenario) -> ValidScenario {
    match s.validate() {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

fn q4_k_m() -> WeightFormat {
    WeightFormat::parse("q4_k_m").unwrap_or(WeightFormat::Bf16)
}

/// The default scenario in `engine` with its defaults; the GGUF engines run
/// a Q4_K_M file, as people run them.
fn in_engine(engine: EngineKind) -> ValidScenario {
    let weights = match engine {
        EngineKind::Transformers | EngineKind::Vllm | EngineKind::Sglang => Scenario::default().weights,
        EngineKind::LlamaCpp | EngineKind::Ollama => q4_k_m(),
    };
    valid(Scenario { engine: engine.with_defaults(), weights, ..Scenario::default() })
}

fn estimates(c: &mut Criterion) {
    let llama = model("llama-3.1-8b");
    let deepseek = model("deepseek-v3");
    // Names kept from the first runs (docs/measurements.md): `transformers`
    // and `vllm` without a format are the default scenario's BF16.
    for (engine, name) in [
        (EngineKind::Transformers, "estimate llama-3.1-8b transformers"),
        (EngineKind::Vllm, "estimate llama-3.1-8b vllm"),
        (EngineKind::Sglang, "estimate llama-3.1-8b sglang"),
        (EngineKind::LlamaCpp, "estimate llama-3.1-8b llama.cpp q4_k_m"),
        (EngineKind::Ollama, "estimate llama-3.1-8b ollama q4_k_m"),
    ] {
        let s = in_engine(engine);
        c.bench_function(name, |b| b.iter(|| estimate(black_box(&llama), s.clone())));
    }
    let big = valid(Scenario { gpus: vec![GpuSlot::custom("H200", 141 * GIB); 8], ..Scenario::default() });
    c.bench_function("estimate deepseek-v3 8 GPUs", |b| b.iter(|| estimate(black_box(&deepseek), big.clone())));
    c.bench_function("model from config.json", |b| b.iter(|| Model::preset(black_box("llama-3.1-8b"))));
}

fn sweep(c: &mut Criterion) {
    let llama = model("llama-3.1-8b");
    let formats =
        ["bf16", "fp8", "int8", "nf4", "q4_k_m"].map(|f| WeightFormat::parse(f).unwrap_or(WeightFormat::Bf16));
    c.bench_function("sweep 5 formats x 64 contexts", |b| {
        b.iter(|| {
            let mut fits = 0;
            for f in formats {
                for i in 1..=64u64 {
                    let s = Scenario { weights: f, prompt_tokens: i * 2048, max_new_tokens: 0, ..Scenario::default() };
                    fits += usize::from(EnginePlan::new(&llama, valid(s)).fits_with(1));
                }
            }
            black_box(fits)
        })
    });
}

fn solvers(c: &mut Criterion) {
    let llama = model("llama-3.1-8b");
    let s = valid(Scenario::default());
    let mut group = c.benchmark_group("solve");
    for q in [
        Question::Fits,
        Question::OomToken,
        Question::MaxConcurrency,
        Question::MaxContext,
        Question::MaxNewTokens,
        Question::Weights,
        Question::MinGpus,
        Question::SmallestGpu,
    ] {
        group.bench_function(q.id(), |b| b.iter(|| solve::solve(black_box(&llama), &s, q)));
    }
    let vllm = in_engine(EngineKind::Vllm);
    group.bench_function("max-context (vllm)", |b| b.iter(|| solve::solve(&llama, &vllm, Question::MaxContext)));
    let sglang = in_engine(EngineKind::Sglang);
    group.bench_function("max-context (sglang)", |b| b.iter(|| solve::solve(&llama, &sglang, Question::MaxContext)));
    let seventy = model("llama-3.1-70b");
    let lc =
        Scenario { weights: q4_k_m(), engine: Engine::LlamaCpp(llamacpp::Options::default()), ..Scenario::default() };
    group.bench_function("max-gpu-layers (llama.cpp 70B)", |b| {
        b.iter(|| solve::solve(&seventy, &lc, Question::MaxGpuLayers))
    });
    group.bench_function("max-context (llama.cpp 70B)", |b| {
        b.iter(|| solve::solve(&seventy, &lc, Question::MaxContext))
    });
    let ollama = Scenario { engine: EngineKind::Ollama.with_defaults(), ..lc.clone() };
    group.bench_function("max-gpu-layers (ollama 70B)", |b| {
        b.iter(|| solve::solve(&seventy, &ollama, Question::MaxGpuLayers))
    });
    let moe = model("qwen3-30b-a3b");
    let lc_moe = in_engine(EngineKind::LlamaCpp);
    group.bench_function("min-cpu-moe (llama.cpp Qwen3-30B-A3B)", |b| {
        b.iter(|| solve::solve(&moe, &lc_moe, Question::MinCpuMoe))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(2)).warm_up_time(std::time::Duration::from_millis(500));
    targets = estimates, sweep, solvers
}
criterion_main!(benches);
