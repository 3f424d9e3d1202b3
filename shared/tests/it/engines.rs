//! Engine budgets against what the engines themselves report.

use shared::engines::{Engine, EngineReport, vllm};
use shared::estimate::{GpuSlot, Scenario, Verdict, estimate};
use shared::model::Model;
use shared::units::GIB;

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
