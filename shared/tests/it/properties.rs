//! Invariants of the memory model over random plans, with tensor- and
//! pipeline-parallel splits: memory never shrinks as the workload grows,
//! totals are sums of their parts, the ranks together hold every weight, the
//! KV cache never shrinks as the context grows, no input panics or wraps,
//! tensor parallelism never adds weight to a GPU, and every solver answer is
//! a boundary (it fits, one more does not).

use crate::estimate;
use proptest::prelude::*;
use shared::catalog::MODEL_PRESETS;
use shared::engines::{Engine, EngineKind, EnginePlan, Plan, llamacpp, vllm};
use shared::estimate::{GpuSlot, MAX_CONCURRENCY, MAX_TOKENS, Scenario};
use shared::formats::WeightFormat;
use shared::kv::KvDtype;
use shared::model::Model;
use shared::solve::{self, Question};
use shared::units::GIB;
use std::sync::OnceLock;

fn models() -> &'static [Model] {
    static MODELS: OnceLock<Vec<Model>> = OnceLock::new();
    MODELS
        .get_or_init(|| MODEL_PRESETS.iter().map(|p| Model::from_preset(p).unwrap_or_else(|e| panic!("{e}"))).collect())
}

fn model() -> impl Strategy<Value = &'static Model> {
    (0..models().len()).prop_map(|i| &models()[i])
}

fn format() -> impl Strategy<Value = WeightFormat> {
    (0..WeightFormat::CHOICES.len()).prop_map(|i| WeightFormat::CHOICES[i])
}

fn kv() -> impl Strategy<Value = KvDtype> {
    (0..KvDtype::CHOICES.len()).prop_map(|i| KvDtype::CHOICES[i])
}

fn engine() -> impl Strategy<Value = Engine> {
    prop_oneof![
        Just(EngineKind::Transformers.with_defaults()),
        (0.3f64..0.99, prop::option::of(512u64..200_000)).prop_map(|(u, len)| Engine::Vllm(vllm::Options {
            gpu_memory_utilization: Some(u),
            max_model_len: len,
            ..Default::default()
        })),
        Just(EngineKind::Sglang.with_defaults()),
        prop::option::of(0u64..130)
            .prop_map(|ngl| Engine::LlamaCpp(llamacpp::Options { n_gpu_layers: ngl, ..Default::default() })),
    ]
}

/// A tensor-parallel degree and a number of pipeline stages (llama.cpp
/// splits layers only: its degree is 1).
fn split() -> impl Strategy<Value = (u64, usize)> {
    (prop_oneof![Just(1u64), Just(2), Just(4)], 1usize..4)
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (format(), kv(), 1u64..200, split(), 0u64..40_000, 0u64..40_000, 1u64..64, engine()).prop_map(
        |(weights, kv_dtype, gib, (tp, pp), prompt, new, conc, engine)| {
            let tp = if matches!(engine, Engine::LlamaCpp(_)) { 1 } else { tp };
            Scenario {
                weights,
                kv_dtype,
                gpus: vec![GpuSlot::custom("test", gib * GIB); tp as usize * pp],
                prompt_tokens: prompt,
                max_new_tokens: new,
                concurrency: conc,
                engine,
                tp,
            }
        },
    )
}

fn plan(m: &Model, s: Scenario) -> EnginePlan<'_> {
    EnginePlan::new(m, s.validate().unwrap_or_else(|e| panic!("the strategy makes valid scenarios: {e}")))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn totals_are_sums_of_parts((m, s) in (model(), scenario())) {
        let e = estimate(m, s);
        let mut sum = 0u64;
        for g in &e.per_gpu {
            let b = g.budget;
            let parts = b.weight_bytes + b.kv_cache_bytes + b.state_bytes + b.activation_bytes + b.overhead_bytes;
            prop_assert_eq!(g.total_bytes, parts);
            prop_assert_eq!(g.fits, g.total_bytes <= g.capacity_bytes);
            prop_assert_eq!(g.free_bytes + g.total_bytes.min(g.capacity_bytes), g.capacity_bytes);
            sum += g.total_bytes;
        }
        prop_assert_eq!(e.total_bytes, sum);
        prop_assert_eq!(e.kv_cache_bytes, e.per_gpu.iter().map(|g| g.budget.kv_cache_bytes).sum::<u64>());
        prop_assert_eq!(e.state_bytes, e.per_gpu.iter().map(|g| g.budget.state_bytes).sum::<u64>());
        prop_assert_eq!(e.per_gpu.len(), e.pipeline_stages * e.tp as usize);
    }

    /// The ranks of one stage together hold every weight the stage holds:
    /// sharded tensors round up, replicated ones count once per rank. Only
    /// a checkpoint's exact size spread over the layout rounds each part
    /// down, by less than a byte per part.
    #[test]
    fn the_ranks_hold_every_weight((m, s) in (model(), scenario())) {
        let tp = s.tp;
        let p = Plan::new(m, s.validate().expect("valid"));
        let parts = p.weights.per_layer.len() as u64 + 2;
        prop_assert!(
            p.weights.per_rank.saturating_mul(tp) + parts >= p.weights.total,
            "tp {tp}: {} per rank, {} in all", p.weights.per_rank, p.weights.total
        );
        // The stages hold the rank's weights that sit on a GPU.
        let on_gpu: u64 = (0..p.scenario.stages()).map(|st| p.stage_weights(st)).sum();
        prop_assert!(on_gpu <= p.weights.per_rank);
        if p.first_on_gpu && p.last_on_gpu {
            prop_assert_eq!(on_gpu, p.weights.per_rank);
        }
    }

    /// KV bytes per sequence never shrink as the context grows, on any
    /// layer (sliding windows stop growing, they never shrink).
    #[test]
    fn kv_bytes_never_shrink_with_context((m, s) in (model(), scenario()), a in 0u64..200_000, more in 0u64..200_000) {
        let p = Plan::new(m, s.validate().expect("valid"));
        let at = |len| shared::kv::sequence_bytes(&p.kv_layers, len, None);
        prop_assert!(at(a + more) >= at(a), "{} tokens: {} < {} at {a}", a + more, at(a + more), at(a));
    }

    #[test]
    fn transformers_memory_never_shrinks_as_work_grows(
        (m, mut s) in (model(), scenario()), more_tokens in 0u64..10_000, more_seqs in 0u64..8,
    ) {
        s.engine = EngineKind::Transformers.with_defaults();
        let before = estimate(m, s.clone());
        let mut grown = s.clone();
        grown.max_new_tokens += more_tokens;
        grown.concurrency += more_seqs;
        let after = estimate(m, grown);
        // The same split (one GPU) keeps the comparison per GPU.
        if s.gpus.len() == 1 {
            prop_assert!(after.total_bytes >= before.total_bytes, "{} < {}", after.total_bytes, before.total_bytes);
            prop_assert!(after.kv_cache_bytes >= before.kv_cache_bytes);
        }
        prop_assert!(after.kv_demand_bytes >= before.kv_demand_bytes);
    }

    #[test]
    fn tensor_parallelism_never_adds_weight_to_a_gpu((m, s) in (model(), scenario()), tp in 1u64..9) {
        let mut one = s.clone();
        one.gpus.truncate(1);
        one.tp = 1;
        // llama.cpp splits layers, never tensors.
        one.engine = match one.engine {
            Engine::LlamaCpp(_) => EngineKind::Transformers.with_defaults(),
            e => e,
        };
        let mut many = one.clone();
        many.gpus = vec![one.gpus[0].clone(); tp as usize];
        many.tp = tp;
        let w1 = plan(m, one).weights.per_rank;
        let wn = plan(m, many).weights.per_rank;
        prop_assert!(wn <= w1, "tp {tp}: {wn} > {w1}");
    }

    #[test]
    fn wild_numbers_never_panic(
        m in model(), gib in 0u64..u64::MAX / GIB, prompt in any::<u64>(), new in any::<u64>(), conc in any::<u64>(),
        engine in engine(),
    ) {
        let s = Scenario {
            gpus: vec![GpuSlot::custom("x", gib.saturating_mul(GIB).max(1))],
            prompt_tokens: prompt % (1 << 31),
            max_new_tokens: new % (1 << 31),
            concurrency: conc % (1 << 21) + 1,
            engine,
            ..Scenario::default()
        };
        let in_bounds = s.prompt_tokens <= MAX_TOKENS
            && s.max_new_tokens <= MAX_TOKENS
            && s.concurrency <= MAX_CONCURRENCY
            && s.gpus[0].capacity_bytes <= u64::MAX / 4;
        match s.validate() {
            // Out of bounds is refused, never computed.
            Err(e) => prop_assert!(!in_bounds, "{e}"),
            Ok(valid) => {
                prop_assert!(in_bounds);
                let e = shared::estimate::estimate(m, valid);
                // Saturating, not wrapping: no part exceeds its total.
                let g = &e.per_gpu[0];
                prop_assert_eq!(g.total_bytes, g.budget.total_bytes());
                prop_assert!(g.budget.weight_bytes <= g.total_bytes && g.budget.kv_cache_bytes <= g.total_bytes);
                prop_assert_eq!(e.total_bytes, g.total_bytes);
                prop_assert_eq!(g.fits, g.total_bytes <= g.capacity_bytes);
            }
        }
    }
}

proptest! {
    // Solvers re-run the estimate many times: fewer, focused cases.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn solver_answers_are_boundaries((m, s) in (model(), scenario())) {
        let max = solve::solve(m, &s, Question::MaxConcurrency).value.unwrap_or(0);
        let p = plan(m, s.clone());
        if max > 0 {
            prop_assert!(p.fits_with(max));
        }
        if max < MAX_CONCURRENCY {
            prop_assert!(!p.fits_with(max + 1));
        }

        let ctx = solve::max_context(m, &s);
        if ctx > 0 && ctx < MAX_TOKENS {
            prop_assert!(solve::fits(m, &solve::with_length(&s, ctx)));
            prop_assert!(!solve::fits(m, &solve::with_length(&s, ctx + 1)));
        }
        if let Some(n) = solve::max_new_tokens(m, &s).filter(|&n| n < MAX_TOKENS) {
            let mut at = s.clone();
            at.max_new_tokens = n;
            prop_assert!(solve::fits(m, &at));
            at.max_new_tokens = n + 1;
            prop_assert!(!solve::fits(m, &at));
        }
    }
}

#[test]
fn max_gpu_layers_is_a_boundary() {
    let m = Model::preset("llama-3.1-70b").unwrap();
    let s = Scenario {
        weights: WeightFormat::parse("q4_k_m").unwrap(),
        engine: EngineKind::LlamaCpp.with_defaults(),
        ..Scenario::default()
    };
    let n = solve::solve(&m, &s, Question::MaxGpuLayers).value.unwrap();
    assert!(n > 0 && n < 80, "{n}");
    let with = |ngl| {
        let mut t = s.clone();
        t.engine = Engine::LlamaCpp(llamacpp::Options { n_gpu_layers: Some(ngl), ..Default::default() });
        solve::fits(&m, &t)
    };
    assert!(with(n));
    assert!(!with(n + 1));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The verdict without searches (for chart sweeps) agrees with the full
    /// one on everything but the searched numbers.
    #[test]
    fn verdicts_without_searches_agree_with_full_ones((m, s) in (model(), scenario())) {
        use shared::estimate::Verdict;
        let p = plan(m, s.clone());
        match (p.verdict(), p.verdict_without_searches()) {
            (Verdict::Fits { max_concurrency }, Verdict::Fits { max_concurrency: shallow }) => {
                // Searched engines carry the plan's own concurrency (which
                // fits); vLLM and SGLang compute theirs directly at both depths.
                prop_assert!(shallow == max_concurrency || (shallow == s.concurrency && max_concurrency >= shallow));
            }
            (
                Verdict::EngineRefuses { gpu: a, largest_context: full },
                Verdict::EngineRefuses { gpu: b, largest_context: shallow },
            ) => {
                prop_assert_eq!(a, b);
                // Searched (vLLM's start-up check) → 0 when shallow; known outright → equal.
                prop_assert!(shallow == 0 || shallow == full);
            }
            (full, shallow) => prop_assert_eq!(full, shallow),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// llama.cpp's `--fit` on one GPU: what it loads keeps its target free
    /// whenever anything can, the same flags given by hand use the same
    /// bytes, and one more layer (or one fewer layer's experts on the host)
    /// would not keep the target.
    #[test]
    fn fit_lands_on_the_boundary(m in model(), gib in 2u64..40, ctx in 512u64..32_768, fmt in 0usize..3) {
        let weights = WeightFormat::parse(["q4_k_m", "q8_0", "q6_k"][fmt]).unwrap();
        let o = llamacpp::Options { n_ctx: Some(ctx), ..Default::default() };
        let s = Scenario {
            weights,
            engine: Engine::LlamaCpp(o),
            gpus: vec![GpuSlot::custom("gpu", gib * GIB)],
            ..Scenario::default()
        };
        prop_assume!(s.clone().validate().is_ok());
        let Some(llamacpp::Fit::Fitted(c)) = llamacpp::predict_fit(m, &s, None) else { return Ok(()) };
        let used = |o: llamacpp::Options| {
            let e = estimate(m, Scenario { engine: Engine::LlamaCpp(o), ..s.clone() });
            e.per_gpu[0].total_bytes - e.per_gpu[0].budget.overhead_bytes
        };
        let target = c.gpu_target_bytes[0];
        if c.expert_layers_on_host + c.overflow_layers == 0 {
            let at = used(llamacpp::Options { n_gpu_layers: Some(c.n_gpu_layers), ..o });
            prop_assert_eq!(at, c.gpu_used_bytes[0]);
            prop_assert!(!c.meets_targets || at <= target);
            let layers = m.layout.num_layers as u64 + 1;
            if c.n_gpu_layers < layers {
                let more = used(llamacpp::Options { n_gpu_layers: Some(c.n_gpu_layers + 1), ..o });
                prop_assert!(more > target, "one more layer: {} ≤ {}", more, target);
            }
        } else {
            // Every layer offloaded; k layers' experts on the host fit, k − 1
            // do not (`--n-cpu-moe` counts from the first layer, dense
            // layers included: the n that covers k layers with experts).
            prop_assert!(!c.meets_targets || c.gpu_used_bytes[0] <= target);
            // Not even every layer without its experts fits: llama.cpp stops
            // at the dense-only fill (step 3).
            prop_assume!(c.n_gpu_layers == m.layout.num_layers as u64 + 1);
            let k = (c.expert_layers_on_host + c.overflow_layers) as usize;
            let mut moe: Vec<u64> = m
                .layout
                .groups
                .iter()
                .filter(|g| matches!(g.role, shared::arch::Role::ExpertUp | shared::arch::Role::ExpertDown))
                .filter_map(|g| g.layer.map(u64::from))
                .collect();
            moe.sort_unstable();
            moe.dedup();
            // Expert layers that are not all alike: `--n-cpu-moe` and `--fit`
            // move different bytes.
            let sizes: Vec<u64> = moe.iter().map(|&l| m.layout.groups.iter().filter(|g| g.layer == Some(l as u32) && matches!(g.role, shared::arch::Role::ExpertUp | shared::arch::Role::ExpertDown)).map(|g| g.params).sum()).collect();
            prop_assert!(!c.meets_targets || c.gpu_used_bytes[0] <= target);
            // The exact comparison needs alike expert layers in a format
            // without per-layer mixes (Q4_K_M and Q6_K give some layers'
            // ffn_down more bits): Q8_0.
            prop_assume!(fmt == 1 && sizes.windows(2).all(|w| w[0] == w[1]));
            let covering = |k: usize| if k == 0 { 0 } else { moe[k - 1] + 1 };
            // (Not "k fit too", nor "every expert on the host uses less": a
            // partial layer's overflow takes its router and shared experts
            // along, which `--n-cpu-moe` leaves on the GPU.)
            let with_fewer = used(llamacpp::Options { n_cpu_moe: covering(k - 1), ..o });
            prop_assert!(with_fewer > target, "k - 1: {} ≤ {}", with_fewer, target);
        }
    }
}
