//! Splits the engines refuse, refused with the engines' own words; splits
//! they accept (KV heads replicated past their count) still estimated.

use shared::engines::parallel::SplitError;
use shared::engines::{Engine, EngineKind, llamacpp};
use shared::estimate::{GpuSlot, Scenario, ScenarioError};
use shared::model::Model;
use shared::solve;
use shared::units::GIB;

fn model(id: &str) -> Model {
    Model::preset(id).unwrap_or_else(|e| panic!("{e}"))
}

fn plan(engine: EngineKind, tp: u64, stages: u64) -> Scenario {
    Scenario {
        gpus: vec![GpuSlot::custom("H100", 80 * GIB); (tp * stages) as usize],
        tp,
        engine: engine.with_defaults(),
        ..Scenario::default()
    }
}

/// `Ok(())` or the refusal's text, for one model and split.
fn check(id: &str, engine: EngineKind, tp: u64, stages: u64) -> Result<(), String> {
    plan(engine, tp, stages).validate_for(&model(id)).map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn tp_must_divide_the_attention_heads() {
    // Llama 3.1 8B: 32 heads, 8 KV heads.
    let err = check("llama-3.1-8b", EngineKind::Vllm, 3, 1).unwrap_err();
    assert!(
        err.contains("\"Total number of attention heads (32) must be divisible by tensor parallel size (3).\""),
        "{err}"
    );
    assert!(err.contains("1, 2, 4, 8, 16, 32"), "the degrees that work: {err}");
    let err = check("llama-3.1-8b", EngineKind::Sglang, 3, 1).unwrap_err();
    assert!(err.starts_with("SGLang fails loading with --tp-size 3: \"32 is not divisible by 3\""), "{err}");
    for tp in [1, 2, 4, 8] {
        assert_eq!(check("llama-3.1-8b", EngineKind::Vllm, tp, 1), Ok(()), "TP {tp}");
    }
}

#[test]
fn kv_heads_are_split_or_replicated_but_must_divide_either_way() {
    // Mixtral 8x22B: 48 heads, 8 KV heads. TP 6 divides the heads but splits
    // 8 KV heads over 6 ranks; TP 12 replicates them, 12 ranks over 8.
    let err = check("mixtral-8x22b", EngineKind::Vllm, 6, 1).unwrap_err();
    assert!(err.contains("\"8 is not divisible by 6\"") && err.contains("splits the model's 8 KV heads"), "{err}");
    let err = check("mixtral-8x22b", EngineKind::Sglang, 12, 1).unwrap_err();
    assert!(err.contains("\"12 is not divisible by 8\"") && err.contains("replicates"), "{err}");
    // TP 16: one KV head per rank, each replicated twice, as vLLM does.
    assert_eq!(check("mixtral-8x22b", EngineKind::Vllm, 16, 1), Ok(()));
    assert_eq!(check("llama-3.1-70b", EngineKind::Vllm, 16, 1), Ok(()));
    // Phi-4: 40 heads, 10 KV heads: TP 4 and 8 fail on the KV heads.
    assert!(check("phi-4", EngineKind::Vllm, 4, 1).unwrap_err().contains("\"10 is not divisible by 4\""));
    assert_eq!(check("phi-4", EngineKind::Vllm, 20, 1), Ok(()));
}

#[test]
fn mla_has_no_kv_heads_to_split() {
    // DeepSeek-V2-Lite: 16 heads, one latent per layer.
    assert_eq!(check("deepseek-v2-lite", EngineKind::Vllm, 8, 1), Ok(()));
    assert!(check("deepseek-v2-lite", EngineKind::Vllm, 3, 1).is_err());
}

#[test]
fn more_stages_than_layers_are_refused() {
    // Llama 3.1 8B has 32 layers.
    let err = check("llama-3.1-8b", EngineKind::Vllm, 1, 40).unwrap_err();
    // get_pp_indices(32, r, 40): ranks 0-6 and 39 get no layer.
    assert!(err.contains("40 pipeline stages for a model of 32 layers") && err.contains("8 of the stages"), "{err}");
    let err = check("llama-3.1-8b", EngineKind::Sglang, 1, 33).unwrap_err();
    assert!(err.contains("num_hidden_layers >= pp_size"), "{err}");
    let err = check("llama-3.1-8b", EngineKind::Transformers, 1, 40).unwrap_err();
    assert!(err.contains("8 GPU(s) would hold none"), "{err}");
    assert_eq!(check("llama-3.1-8b", EngineKind::Vllm, 1, 32), Ok(()));
    assert_eq!(check("llama-3.1-8b", EngineKind::Transformers, 1, 32), Ok(()));
    let typed = plan(EngineKind::LlamaCpp, 1, 40).validate_for(&model("llama-3.1-8b"));
    assert!(matches!(typed, Err(ScenarioError::Split(SplitError::TooManyStages { .. }))), "{typed:?}");
}

#[test]
fn min_gpus_never_proposes_a_refused_split() {
    // Phi-4 in bf16 (~29 GB) on 12 GiB cards: TP 2 is too small, and TP 4
    // and 8 would split its 10 KV heads unevenly.
    let m = model("phi-4");
    let s = Scenario {
        gpus: vec![GpuSlot::custom("12 GiB", 12 * GIB)],
        engine: EngineKind::Vllm.with_defaults(),
        ..Scenario::default()
    };
    let n = solve::min_gpus(&m, &s);
    if let Some(n) = n {
        let mut out = s.clone();
        out.gpus = vec![s.gpus[0].clone(); n as usize];
        out.tp = n;
        assert_eq!(out.validate_for(&m).map(|_| ()), Ok(()), "min_gpus proposed TP {n}");
    }
    assert!(!matches!(n, Some(4 | 8)), "{n:?}");
}

#[test]
fn llamacpp_context_zero_is_the_trained_context() {
    let m = model("llama-3.1-8b");
    let with = |n_ctx| {
        let s = Scenario {
            engine: Engine::LlamaCpp(llamacpp::Options { n_ctx: Some(n_ctx), ..Default::default() }),
            gpus: vec![GpuSlot::custom("H100", 80 * GIB)],
            ..Scenario::default()
        };
        shared::estimate::estimate(&m, s.validate_for(&m).unwrap()).kv_cache_bytes
    };
    // 128 KiB per token for Llama 3.1 8B in bf16.
    assert_eq!(with(0), 131_072 * 128 * 1024);
    assert_eq!(with(0), with(131_072));
    // A config that states no trained context cannot mean "-c 0".
    let mut m = model("llama-3.1-8b");
    m.arch.text.max_position_embeddings = None;
    let s = Scenario {
        engine: Engine::LlamaCpp(llamacpp::Options { n_ctx: Some(0), ..Default::default() }),
        ..Scenario::default()
    };
    let err = s.validate_for(&m).unwrap_err().to_string();
    assert!(err.contains("trained context") && err.contains("--n-ctx"), "{err}");
}

/// accelerate's sequential fill (transformers 5.24.0
/// `integrations/accelerate.py` `infer_auto_device_map`): modules in order,
/// each on the current GPU while it stays under that GPU's cap (GPU 0 keeping
/// the largest module free), else on the next one.
fn sequential_fill(sizes: &[u64], caps: &[u64], largest: u64) -> Vec<usize> {
    let mut used = vec![0u64; caps.len()];
    let mut gpu = 0;
    sizes
        .iter()
        .map(|&size| {
            loop {
                let cap = caps[gpu].saturating_sub(if gpu == 0 { largest } else { 0 });
                if used[gpu] + size <= cap || gpu == caps.len() - 1 {
                    used[gpu] += size;
                    return gpu;
                }
                gpu += 1;
            }
        })
        .collect()
}

#[test]
fn max_memory_caps_make_accelerate_place_the_plans_split() {
    use shared::engines::EnginePlan;
    use shared::formats::WeightFormat;
    // Uneven GPUs, so that the caps (not an even share) decide the split.
    for (id, weights) in [
        ("llama-3.1-70b", WeightFormat::Bf16),
        ("qwen2.5-32b", WeightFormat::Bf16),
        ("llama-3.1-70b", WeightFormat::Bnb4 { nf4: true, double_quant: false }),
    ] {
        let m = model(id);
        let s = Scenario {
            gpus: vec![GpuSlot::custom("A", 80 * GIB), GpuSlot::custom("B", 48 * GIB), GpuSlot::custom("C", 24 * GIB)],
            weights,
            engine: EngineKind::Transformers.with_defaults(),
            ..Scenario::default()
        };
        let ep = EnginePlan::new(&m, s.validate_for(&m).expect("valid"));
        let map = ep.device_map().expect("a layer-wise split has a map");
        let w = &ep.plan.weights;
        // The map's modules: embedding(s), the layers, then norm and head (one size).
        let embeddings = map.modules.len() - w.per_layer.len() - 2;
        let mut sizes = vec![0; embeddings - 1];
        sizes.push(w.first);
        sizes.extend(&w.per_layer);
        sizes.extend([w.last, 0]);
        let largest = w.per_layer.iter().copied().chain([w.first, w.last]).max().unwrap();
        let bnb = matches!(weights, WeightFormat::Bnb4 { .. });
        // What the quantizer leaves of each cap (`adjust_max_memory`: 90 %),
        // from the MiB the snippet prints.
        let caps: Vec<u64> = map
            .max_memory
            .iter()
            .map(|b| b.div_ceil(1 << 20) << 20)
            .map(|b| if bnb { b * 9 / 10 } else { b })
            .collect();
        let placed = sequential_fill(&sizes, &caps, largest);
        let planned: Vec<usize> = map.modules.iter().map(|(_, g)| *g).collect();
        assert_eq!(placed, planned, "{id} {weights:?}: {:?}", map.max_memory);
        let snippet = map.snippet("org/m", weights);
        assert!(snippet.contains("device_map=\"sequential\", max_memory={0: \""), "{snippet}");
    }
}
