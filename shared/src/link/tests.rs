//! Whole links: the documented example, garbage, and round trips of every state.

use super::*;
use crate::catalog::{MODEL_PRESETS, gpus, model_preset};
use crate::engines::{Engine, EngineKind, llamacpp, transformers, vllm};
use crate::estimate::{MAX_CONCURRENCY, MAX_GPUS, MAX_TOKENS};
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::units::{GIB, UnitSystem};
use proptest::prelude::*;

fn check(query: &str, want: LinkState, notices: usize) {
    let d = decode(query);
    assert_eq!(d.state, want, "{query}");
    assert_eq!(d.notices.len(), notices, "{query}: {:?}", d.notices);
}

#[test]
fn reads_the_documented_example() {
    let want = LinkState {
        weights: Some(WeightFormat::Bnb4 { nf4: true, double_quant: false }),
        kv_dtype: Some(KvDtype::Fp8),
        ..LinkState::default()
    };
    check("?model=llama-3.1-8b&w=nf4&kv=fp8&p=2048&n=512&c=1&gpu=rtx-4090&g=1", want.clone(), 0);
    assert_eq!(encode(&want), "v=3&model=llama-3.1-8b&w=nf4&kv=fp8&p=2048&n=512&c=1&gpu=rtx-4090&g=1");
}

#[test]
fn ignores_garbage_with_notices() {
    check("", LinkState::default(), 0);
    check("?zzz=1&p=abc&c=0&gpu=nope&model=nope&&=&%ZZ", LinkState::default(), 7);
    check("?w=int3000&kv=fp9&g=99999&mem=12%20parsecs&u=km&hub=ftp://x", LinkState::default(), 6);
    check("?cfg=!!!&cfg=e30&hf=..%2Fetc&params=3", LinkState::default(), 4);
    let custom = LinkState { gpu: GpuChoice::Custom(24 * GIB), ..LinkState::default() };
    check("?mem=24GiB", custom, 0);
    let two = LinkState { model: ModelSource::Hub("Qwen/Qwen2.5-7B".into()), ..LinkState::default() };
    check("?model=gpt2&hf=Qwen/Qwen2.5-7B", two, 1);
    // The hub grammar whole: a revision with `/` and a quantisation tag.
    let gguf = "unsloth/Qwen3-30B-A3B-GGUF@refs/pr/1:Q4_K_M";
    let pick = LinkState { model: ModelSource::Hub(gguf.into()), ..LinkState::default() };
    check("?hf=unsloth/Qwen3-30B-A3B-GGUF@refs%2Fpr%2F1:Q4_K_M", pick.clone(), 0);
    assert_eq!(decode(&encode(&pick)).state, pick);
    check("?hf=a/b:..%2Fx.gguf", LinkState::default(), 1);
}

#[test]
fn reads_engine_and_parallelism_keys() {
    let want = LinkState {
        gpu_count: 1,
        more_gpus: vec![GpuChoice::Catalog("rtx-4080".into())],
        tp: 2,
        // A link without `v=` or `vllm=` means the 0.21 rules (`LinkVersion::vllm_latest`).
        engine: Engine::Vllm(vllm::Options {
            version: vllm::Version::V0_21,
            gpu_memory_utilization: Some(0.9),
            max_model_len: Some(8192),
            ..Default::default()
        }),
        ..LinkState::default()
    };
    check("?mml=8192&e=vllm&gmu=0.9&mix=rtx-4080&tp=2", want.clone(), 0);
    assert_eq!(
        encode(&want),
        "v=3&model=llama-3.1-8b&p=2048&n=512&c=1&gpu=rtx-4090&g=1&mix=rtx-4080&tp=2&e=vllm&vllm=0.21&gmu=0.9&mml=8192"
    );
    // A knob of another engine, a tp that does not divide the GPUs, a bad fraction.
    check(
        "?ngl=20&tp=3&e=vllm&gmu=1.5",
        LinkState {
            engine: Engine::Vllm(vllm::Options { version: vllm::Version::V0_21, ..Default::default() }),
            ..LinkState::default()
        },
        3,
    );
    let llama = LinkState {
        engine: Engine::LlamaCpp(llamacpp::Options { n_gpu_layers: Some(20), ..Default::default() }),
        ..LinkState::default()
    };
    // A link before v3 keeps the activation dtype's cache it meant.
    check("?e=llama.cpp&ngl=20", LinkState { kv_activation: true, ..llama.clone() }, 0);
    check("?v=3&e=llama.cpp&ngl=20", llama, 0);
    // Engines that split layers drop a tensor-parallel degree with a notice,
    // Ollama as llama.cpp (the link's copy of the rule once named llama.cpp only).
    for (engine, name) in [("llama.cpp", "llama.cpp"), ("ollama", "Ollama")] {
        let d = decode(&format!("?e={engine}&g=2&tp=2"));
        assert_eq!((d.state.tp, d.state.gpu_count), (1, 2), "{engine}");
        assert_eq!(d.notices, [format!("Ignored `tp=2`: {name} splits layers over GPUs, not tensors.")], "{engine}");
    }
    let oom = LinkState { oom: Some("CUDA out of memory. Tried 2+2".into()), ..LinkState::default() };
    assert!(encode(&oom).ends_with("&oom=CUDA+out+of+memory.+Tried+2%2B2"));
    check(&encode(&oom), oom, 0);
}

#[test]
fn links_without_a_version_keep_the_defaults_of_their_day() {
    // Every link made before v2: no `v`, `vllm=latest` or no `vllm` at all.
    let vllm_021 = Engine::Vllm(vllm::Options { version: vllm::Version::V0_21, ..Default::default() });
    for query in [
        "?e=vllm",
        "?e=vllm&vllm=latest",
        "?vllm=LATEST&e=vllm",
        "?e=vllm&vllm=new",
        "?v=2&e=vllm&vllm=0.21",
        "?v=1&e=vllm",
    ] {
        let d = decode(query);
        assert_eq!(d.state.engine, vllm_021, "{query}");
        assert!(d.notices.is_empty(), "{query}: {:?}", d.notices);
    }
    assert_eq!(decode("?e=vllm").version, LinkVersion::V1);
    assert_eq!(decode("?e=vllm&v=2").version, LinkVersion::V2);
    // A link read today is written back pinned, with the same meaning.
    for query in ["?e=vllm&vllm=latest&gpu=h100-sxm", "?e=sglang&mfs=0.8", "?e=llama.cpp&fa=off", "?attn=eager"] {
        let old = decode(query).state;
        let again = decode(&encode(&old));
        assert_eq!((again.state, again.version), (old, LinkVersion::CURRENT), "{query}");
    }
    assert!(encode(&decode("?e=vllm").state).contains("&e=vllm&vllm=0.21"));
    // A llama.cpp link before v3 that left `kv` out meant the activation
    // dtype: written back as `kv=act`; from v3 it means llama.cpp's own f16.
    let old = decode("?v=2&e=llama.cpp&w=q4_k_m").state;
    assert!(old.kv_activation && encode(&old).contains("&kv=act&"), "{}", encode(&old));
    assert!(!decode("?v=3&e=llama.cpp&w=q4_k_m").state.kv_activation);
    assert!(!decode("?v=2&e=vllm").state.kv_activation, "the activation dtype is vLLM's own");
    // The frozen defaults are today's: a fresh page and a bare link agree. When a
    // page default moves, links keep theirs: add a link version whose defaults are
    // the new ones (`version.rs`) and compare the newest here instead.
    let moved = "a page default moved: freeze it in a new LinkVersion (docs/links.md)";
    assert_eq!(LinkVersion::CURRENT.defaults(), LinkState::default(), "{moved}");
    for kind in EngineKind::ALL {
        // `new_engine`: the current version's knobs with the newest engine version (pinned anyway).
        assert_eq!(new_engine(*kind), kind.with_defaults(), "{kind:?}: {moved}");
    }
}

#[test]
fn lora_and_sglang_rules_are_link_keys() {
    let lora = LinkState {
        engine: Engine::Vllm(vllm::Options { max_loras: 4, max_lora_rank: 64, ..Default::default() }),
        ..LinkState::default()
    };
    let text = encode(&lora);
    assert!(text.ends_with("&e=vllm&vllm=0.34&loras=4&lorar=64"), "{text}");
    check(&format!("?{text}"), lora, 0);
    // Links from before the keys: LoRA off, SGLang's TP table.
    let d = decode("?e=sglang");
    let Engine::Sglang(o) = d.state.engine else { panic!("{:?}", d.state.engine) };
    assert_eq!(o.version, crate::engines::sglang::Version::TpTable);
    let d = decode("?e=vllm");
    let Engine::Vllm(o) = d.state.engine else { panic!("{:?}", d.state.engine) };
    assert_eq!((o.max_loras, o.max_lora_rank), (0, 16));
    assert_eq!(decode("?e=vllm&lorar=0").notices.len(), 1);
}

#[test]
fn the_vllm_sampler_travels_in_a_link() {
    let d = decode("?e=vllm&samp=native");
    let Engine::Vllm(o) = d.state.engine else { panic!("{:?}", d.state.engine) };
    assert_eq!(o.sampler, Some(vllm::Sampler::Native));
    assert!(encode(&d.state).contains("samp=native"), "{}", encode(&d.state));
    assert_eq!(decode(&encode(&d.state)).state, d.state);
    let bad = decode("?e=vllm&samp=greedy");
    assert!(bad.notices.len() == 1 && bad.notices[0].contains("flashinfer, triton or native"), "{:?}", bad.notices);
    let Engine::Vllm(o) = bad.state.engine else { panic!("vLLM") };
    assert_eq!(o.sampler, None);
}

#[test]
fn link_versions_from_elsewhere_read_with_a_notice() {
    let d = decode("?v=7&model=gpt2");
    assert_eq!(d.version, LinkVersion::CURRENT);
    assert!(d.notices.len() == 1 && d.notices[0].contains("newer Headroom"), "{:?}", d.notices);
    let d = decode("?v=x&e=vllm");
    assert_eq!((d.version, d.notices.len()), (LinkVersion::V1, 1));
    let d = decode("?e=vllm&vllm=0.99");
    assert!(
        d.notices[0].contains("0.24, 0.33, 0.21, 0.19, 0.18, 0.17-mm, 0.12-mm, 0.11-mm, 0.12, 0.10, v1, v0"),
        "{:?}",
        d.notices
    );
}

#[test]
fn new_plans_are_representable_in_a_link() {
    for kind in EngineKind::ALL {
        let s = LinkState { engine: new_engine(*kind), ..LinkState::default() };
        assert_eq!(decode(&encode(&s)).state, s, "{kind:?}");
    }
    assert_eq!(decode(&encode(&LinkState::default())).state, LinkState::default());
}

fn model_source() -> impl Strategy<Value = ModelSource> {
    let presets = prop::sample::select(MODEL_PRESETS.iter().map(|p| p.id).collect::<Vec<_>>());
    prop_oneof![
        presets.clone().prop_map(|id| ModelSource::Preset(id.into())),
        presets.prop_map(|id| {
            let p = model_preset(id).expect("preset");
            ModelSource::Config(compact_config(p.config_json()).expect("preset config"))
        }),
        // `ORG/NAME[@REVISION][:PICK]` (`shared::hub`), never with `..`.
        "[A-Za-z0-9]([A-Za-z0-9_-]|[.][A-Za-z0-9_-]){0,10}(/[A-Za-z0-9]([A-Za-z0-9_-]|[.][A-Za-z0-9_-]){0,15})?\
         (@[a-z0-9]{1,8}(/[a-z0-9]{1,4}){0,2})?(:[A-Za-z0-9_]{1,8}([.]gguf)?)?"
            .prop_map(ModelSource::Hub),
        (MIN_PARAMS..=MAX_PARAMS).prop_map(ModelSource::Params),
        "[A-Za-z0-9]([A-Za-z0-9 ._()+&=%-]{0,40}[A-Za-z0-9])?".prop_map(ModelSource::Local),
    ]
}

fn engine() -> impl Strategy<Value = Engine> {
    let frac = prop::option::of(prop_oneof![(1u32..=100).prop_map(|n| f64::from(n) / 100.0), 1e-6f64..=1.0]);
    let tokens = || prop::option::of(1..=MAX_TOKENS);
    prop_oneof![
        (prop::bool::ANY, prop::bool::ANY).prop_map(|(eager, all)| Engine::Transformers(transformers::Options {
            attention: if eager { transformers::AttentionImpl::Eager } else { transformers::AttentionImpl::Sdpa },
            logits: if all { transformers::LogitsMode::AllPositions } else { transformers::LogitsMode::LastToken },
        })),
        (
            prop::sample::select(vllm::Version::ALL.to_vec()),
            frac.clone(),
            tokens(),
            tokens(),
            prop::option::of(1..=MAX_CONCURRENCY),
            prop::option::of(1..=1024u64),
            (1..=8u64, prop::bool::ANY),
        )
            .prop_map(|(version, gmu, mml, mbt, mns, bs, (dp, ep))| Engine::Vllm(vllm::Options {
                version,
                gpu_memory_utilization: gmu,
                max_model_len: mml,
                max_num_batched_tokens: mbt,
                max_num_seqs: mns,
                block_size: bs,
                data_parallel_size: dp,
                enable_expert_parallel: ep,
                ..Default::default()
            })),
        (
            prop::sample::select(crate::engines::sglang::Version::ALL.to_vec()),
            frac,
            tokens(),
            tokens(),
            (1..=8u64, prop::bool::ANY, 1..=8u64),
            (prop::bool::ANY, prop::sample::select(crate::engines::sglang::DeepepMode::IDS.to_vec())),
        )
            .prop_map(|(version, mfs, cl, cps, (dp, dpa, ep), (deepep, mode))| {
                Engine::Sglang(crate::engines::sglang::Options {
                    version,
                    mem_fraction_static: mfs,
                    context_length: cl,
                    chunked_prefill_size: cps,
                    dp_size: dp,
                    enable_dp_attention: dpa,
                    ep_size: ep,
                    ep_num_redundant_experts: 0,
                    moe_a2a_deepep: deepep,
                    deepep_mode: crate::engines::sglang::DeepepMode::parse(mode).unwrap_or_default(),
                })
            }),
        (tokens(), prop::option::of(0..=100_000u64), prop::option::of(1..=4096u64), prop::bool::ANY).prop_map(
            |(n_ctx, ngl, np, fa_off)| Engine::LlamaCpp(llamacpp::Options {
                n_ctx,
                n_gpu_layers: ngl,
                parallel: np,
                flash_attention: if fa_off { llamacpp::FlashAttention::Off } else { llamacpp::FlashAttention::On },
                ..Default::default()
            })
        ),
    ]
}

fn link_state() -> impl Strategy<Value = LinkState> {
    let formats = prop::option::of(prop::sample::select(WeightFormat::CHOICES.to_vec()));
    let kvs = prop::option::of(prop::sample::select(KvDtype::CHOICES.to_vec()));
    let gpu_ids = prop::sample::select(gpus().iter().map(|g| g.id.clone()).collect::<Vec<_>>());
    let gpu = prop_oneof![gpu_ids.prop_map(GpuChoice::Catalog), (1..=u64::MAX / 4).prop_map(GpuChoice::Custom)];
    let more = prop::collection::vec(gpu.clone(), 0..4);
    // Text as `compact_oom` leaves it: no blank lines, no spaces at the ends.
    let oom = prop::option::of("[!-~]([ -~\n]{0,80}[!-~])?".prop_filter("no blank lines", |t| !t.contains("\n\n")));
    let hub = prop::option::of("https?://[a-z0-9.-]{1,20}(:[0-9]{2,5})?(/[a-z0-9_-]{1,10}){0,2}");
    (
        model_source(),
        prop::option::of(1..=u64::MAX / 4),
        formats,
        kvs,
        (0..=MAX_TOKENS, 0..=MAX_TOKENS, 1..=MAX_CONCURRENCY),
        gpu,
        1..=MAX_GPUS as u64,
        prop::bool::ANY,
        hub,
        (more, engine(), 1..=4u64, oom, prop::bool::ANY),
    )
        .prop_map(
            |(model, st, weights, kv_dtype, (p, n, c), gpu, g, decimal, hub, (more, engine, tp, oom, act))| {
                let g = g.min(MAX_GPUS as u64 - more.len() as u64);
                let total = g + more.len() as u64;
                // tp must divide the GPUs; llama.cpp has none.
                let tp = if engine.kind() == EngineKind::LlamaCpp || !total.is_multiple_of(tp) { 1 } else { tp };
                LinkState {
                    model,
                    checkpoint_bytes: st,
                    weights,
                    kv_dtype,
                    // `kv=act` is kept where it means something: no dtype chosen,
                    // on the engines whose own cache is not the activation dtype's.
                    kv_activation: act && kv_dtype.is_none() && engine.kind() == EngineKind::LlamaCpp,
                    prompt_tokens: p,
                    max_new_tokens: n,
                    concurrency: c,
                    gpu,
                    gpu_count: g,
                    more_gpus: more,
                    tp,
                    engine,
                    oom: oom.map(|t: String| t.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")),
                    units: if decimal { UnitSystem::Decimal } else { UnitSystem::Binary },
                    hub: hub.filter(|h| h != DEFAULT_HUB),
                }
            },
        )
}

proptest! {
    #[test]
    fn links_round_trip(state in link_state()) {
        let query = encode(&state);
        let d = decode(&query);
        prop_assert!(d.notices.is_empty(), "{query}: {:?}", d.notices);
        prop_assert_eq!(d.state, state);
    }

    #[test]
    fn decoding_never_panics(query in "\\PC{0,200}") {
        let _ = decode(&query);
    }
}
