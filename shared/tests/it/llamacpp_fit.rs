//! llama.cpp's `--fit` (common/fit.cpp): what it loads instead of a plan
//! that does not keep its target free, checked against the plan run with
//! the flags it stands for.

use crate::llamacpp::{model, report, scenario};
use shared::engines::Engine;
use shared::engines::llamacpp::{Fit, FitChoice, FitMode, Options, predict_fit};
use shared::estimate::Estimate;
use shared::fixes::{FixKind, fixes};
use shared::model::Model;
use shared::units::{GIB, MIB};

/// What `--fit` keeps free by default and what llama.cpp's own process
/// holds (the plan's CUDA context) on each GPU.
const TARGET: u64 = 1024 * MIB;
const CONTEXT: u64 = 300 * MIB;

fn fit(m: &Model, o: Options, gpus: usize, gib: u64) -> Fit {
    predict_fit(m, &scenario(o, gpus, gib), None).unwrap_or_else(|| panic!("no llama.cpp plan"))
}

fn fitted(m: &Model, o: Options, gpus: usize, gib: u64) -> FitChoice {
    match fit(m, o, gpus, gib) {
        Fit::Fitted(c) => c,
        other => panic!("not fitted: {other:?}"),
    }
}

/// Each GPU's use as llama.cpp measures it (no CUDA context) with `o`.
fn used(m: &Model, o: Options, gpus: usize, gib: u64) -> Vec<u64> {
    let e: Estimate = report(m, scenario(o, gpus, gib)).1;
    e.per_gpu.iter().map(|g| g.total_bytes - g.budget.overhead_bytes).collect()
}

fn usable(gib: u64) -> u64 {
    gib * GIB - CONTEXT - TARGET
}

#[test]
fn a_dense_model_gets_the_most_layers_that_keep_the_target_free() {
    let m = model("llama-3.1-8b");
    let o = Options { n_ctx: Some(8192), ..Default::default() };
    let c = fitted(&m, o, 1, 4);
    assert_eq!(c.gpu_target_bytes, [usable(4)]);
    assert!(c.meets_targets && c.expert_layers_on_host == 0 && c.overflow_layers == 0, "{c:?}");
    let at = |ngl: u64| used(&m, Options { n_gpu_layers: Some(ngl), ..o }, 1, 4)[0];
    assert_eq!(at(c.n_gpu_layers), c.gpu_used_bytes[0]);
    assert!(at(c.n_gpu_layers) <= usable(4) && at(c.n_gpu_layers + 1) > usable(4), "{c:?}");
    // The plan as given does not load: the warning says --fit changes it,
    // and the fixes say how, applied as the same -ngl.
    let e = report(&m, scenario(o, 1, 4)).1;
    assert!(
        e.warnings.iter().any(|w| w.contains("--fit (on by default) moves layers or experts off the GPU")),
        "{:?}",
        e.warnings
    );
    let all = fixes(&m, &scenario(o, 1, 4));
    let f = all.iter().find(|f| f.kind == FixKind::Fit).expect("a --fit fix");
    assert!(f.title.contains(&format!("-ngl {}", c.n_gpu_layers)) && f.fits, "{f:?}");
    assert_eq!(f.scenario.engine, Engine::LlamaCpp(Options { n_gpu_layers: Some(c.n_gpu_layers), ..o }));
    assert!(!f.code.contains("-ngl"), "llama.cpp chooses by itself: {}", f.code);
}

#[test]
fn a_plan_that_fits_without_the_margin_is_changed_too() {
    let m = model("llama-3.1-8b");
    let o = Options { n_ctx: Some(8192), ..Default::default() };
    // Find a GPU size where the plan fits but keeps less than 1 GiB free.
    let full = used(&m, o, 1, 80)[0] + CONTEXT;
    let gib = full.div_ceil(GIB);
    let (r, e) = report(&m, scenario(o, 1, gib));
    if e.fits && !r.keeps_fit_margin {
        let c = fitted(&m, o, 1, gib);
        assert!(c.n_gpu_layers < m.layout.num_layers as u64 + 1, "{c:?}");
        let all = fixes(&m, &scenario(o, 1, gib));
        assert!(all.len() == 1 && all[0].kind == FixKind::Fit && all[0].fits, "{all:?}");
    } else {
        assert!(r.keeps_fit_margin && fit(&m, o, 1, gib) == Fit::Unchanged);
    }
}

#[test]
fn a_moe_model_keeps_every_layer_and_moves_the_fewest_experts() {
    let m = model("qwen3-30b-a3b");
    let o = Options { n_ctx: Some(16384), ..Default::default() };
    let c = fitted(&m, o, 1, 12);
    let layers = m.layout.num_layers as u64;
    // Every layer and the output layer are offloaded; experts move instead.
    assert_eq!(c.n_gpu_layers, layers + 1);
    assert!(c.meets_targets && (1..layers).contains(&c.expert_layers_on_host), "{c:?}");
    assert!(c.gpu_used_bytes[0] <= usable(12));
    // Against `--n-cpu-moe`: k layers' experts on the host fit, k − 1 do not
    // (fit may keep part of one of its k layers on the GPU, never more). The
    // layer fit writes first with the attention-only pattern,
    // `blk.i.ffn_(gate|up|gate_up|down).*`, takes its router
    // (`ffn_gate_inp`, F32) to the host with its experts.
    let k = c.expert_layers_on_host;
    let moe = m.arch.text.moe.expect("a MoE model");
    let router = m.arch.text.hidden_size * moe.num_experts * 4;
    let with = |n: u64| used(&m, Options { n_cpu_moe: n, ..o }, 1, 12)[0];
    assert!(with(k) <= c.gpu_used_bytes[0] + router && with(k - 1) > usable(12), "{} {} {c:?}", with(k), with(k - 1));
}

#[test]
fn two_gpus_are_filled_from_the_last_with_the_output_layer_there() {
    let m = model("llama-3.1-8b");
    let o = Options { n_ctx: Some(8192), ..Default::default() };
    let c = fitted(&m, o, 2, 3);
    assert_eq!(c.gpu_layers.iter().sum::<u64>(), c.n_gpu_layers);
    assert!(c.gpu_layers[1] > 0 && c.meets_targets, "{c:?}");
    // The same split given as flags: each GPU within its target.
    let ts = c.gpu_layers.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let flags = Options {
        n_gpu_layers: Some(c.n_gpu_layers),
        tensor_split: shared::engines::llamacpp::TensorSplit::parse(&ts).unwrap(),
        ..o
    };
    assert_eq!(used(&m, flags, 2, 3), c.gpu_used_bytes);
    // One more layer on the last GPU does not fit.
    let mut more = c.gpu_layers.clone();
    more[1] += 1;
    let ts = more.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let flags = Options {
        n_gpu_layers: Some(c.n_gpu_layers + 1),
        tensor_split: shared::engines::llamacpp::TensorSplit::parse(&ts).unwrap(),
        ..o
    };
    assert!(used(&m, flags, 2, 3)[1] > usable(3));
}

#[test]
fn it_gives_up_on_flags_it_would_change_and_stays_off_when_told() {
    let m = model("llama-3.1-8b");
    let base = Options { n_ctx: Some(8192), ..Default::default() };
    let fit = |o: Options, gib: u64| fit(&m, o, 1, gib);
    assert_eq!(fit(base, 80), Fit::Unchanged);
    assert_eq!(fit(Options { fit: FitMode::Off, ..base }, 4), Fit::Off);
    assert!(
        matches!(fit(Options { n_gpu_layers: Some(33), ..base }, 4), Fit::GivesUp { flag: "-ngl", .. }),
        "{:?}",
        fit(Options { n_gpu_layers: Some(33), ..base }, 4)
    );
    assert!(matches!(fit(Options { n_cpu_moe: 4, ..base }, 4), Fit::GivesUp { flag: "--n-cpu-moe", .. }));
    // A larger target leaves fewer layers.
    let layers = |mib: u64| match fit(Options { fit_target_mib: mib, ..base }, 4) {
        Fit::Fitted(c) => c.n_gpu_layers,
        other => panic!("{other:?}"),
    };
    assert!(layers(2048) < layers(1024));
}

#[test]
fn memory_in_use_leaves_fewer_layers() {
    let m = model("llama-3.1-8b");
    let o = Options { n_ctx: Some(8192), ..Default::default() };
    let fitted_on = |free: Option<&[u64]>| match predict_fit(&m, &scenario(o, 1, 6), free) {
        Some(Fit::Fitted(c)) => c,
        other => panic!("{other:?}"),
    };
    // 2 GiB of the 6 held by another process: the target is the 4 GiB
    // free less the context and the margin.
    let busy = fitted_on(Some(&[4 * GIB]));
    assert_eq!(busy.gpu_target_bytes, [4 * GIB - CONTEXT - TARGET]);
    assert!(busy.n_gpu_layers < fitted_on(None).n_gpu_layers, "{busy:?}");
}

#[test]
fn share_links_carry_fit() {
    use shared::link::{LinkState, decode, encode};
    let o = Options { fit: FitMode::Off, ..Default::default() };
    let state = LinkState { engine: Engine::LlamaCpp(o), ..LinkState::default() };
    let link = encode(&state);
    assert!(link.contains("fit=off"), "{link}");
    assert_eq!(decode(&link).state, state);
    assert!(!decode("?e=llama.cpp&fit=maybe").notices.is_empty());
    assert_eq!(fit(&model("llama-3.1-8b"), o, 1, 80), Fit::Off);
}

/// `-c 0` under `--fit` is the trained context for every slot's stream
/// (common/fit.cpp `n_ctx_max = n_ctx_train × n_streams`); without it, or
/// with one unified stream, the trained context in all.
#[test]
fn context_zero_under_fit_is_per_stream() {
    let m = model("llama-3.1-8b");
    let trained = m.arch.text.max_position_embeddings.unwrap();
    let ctx = |o: Options| report(&m, scenario(Options { n_ctx: Some(0), parallel: Some(4), ..o }, 1, 80)).0.n_ctx;
    assert_eq!(ctx(Options::default()), trained * 4);
    assert_eq!(ctx(Options { fit: FitMode::Off, ..Default::default() }), trained);
    assert_eq!(ctx(Options { kv_unified: true, ..Default::default() }), trained);
}
