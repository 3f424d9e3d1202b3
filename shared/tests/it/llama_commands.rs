//! What llama.cpp's and Ollama's printed commands launch: each fix's code
//! must start the plan it was measured for on the build the plan names
//! (no `--fit` where the build has none, `-fa` as the build spells it, the
//! context of every slot), and Ollama's set-up keeps the rest of the plan.

use crate::llamacpp::model;
use shared::catalog::gpu;
use shared::engines::llamacpp::{self, Fork, Options, predict_fit};
use shared::engines::{Engine, ollama};
use shared::estimate::{GpuSlot, Scenario};
use shared::fixes::{Fix, FixKind, fixes};
use shared::formats::WeightFormat;
use shared::model::Model;

fn on_4090s(engine: Engine, n: usize) -> Scenario {
    let g = gpu("rtx-4090").unwrap_or_else(|| panic!("rtx-4090 is in the catalog"));
    Scenario {
        weights: WeightFormat::parse("q4_k_m").unwrap_or_else(|e| panic!("{e}")),
        // The engine's own cache, as a link without `kv` plans it.
        kv_dtype: shared::kv::KvDtype::F16,
        engine,
        gpus: (0..n).map(|_| GpuSlot::from_catalog(g)).collect(),
        ..Scenario::default()
    }
}

/// The audit's plan: Llama 3.1 70B at Q4_K_M on 2 × RTX 4090, four
/// sequences of 16,384 prompt tokens, with llama.cpp's options `o`.
fn seventy_b(o: Options) -> (Model, Scenario) {
    let s = Scenario { concurrency: 4, prompt_tokens: 16_384, ..on_4090s(Engine::LlamaCpp(o), 2) };
    (model("llama-3.1-70b"), s)
}

fn verdict(m: &Model, s: &Scenario) -> String {
    let e = crate::estimate(m, s.clone());
    shared::estimate::verdict_text(&e, shared::units::UnitSystem::Binary)
}

fn codes(all: &[Fix]) -> String {
    all.iter().map(|f| format!("{}\n{}\n", f.title, f.code)).collect()
}

#[test]
fn no_fit_where_the_build_has_none() {
    let newest = seventy_b(Options::default());
    // The newest build fits the plan with --fit: the test can tell.
    assert!(matches!(predict_fit(&newest.0, &newest.1, None), Some(llamacpp::Fit::Fitted(_))));
    assert!(fixes(&newest.0, &newest.1).iter().any(|f| f.kind == FixKind::Fit));
    assert!(verdict(&newest.0, &newest.1).contains("--fit"));
    for o in [
        Options { build: Some(5000), ..Options::default() },
        Options { build: Some(llamacpp::FIT_BUILD - 1), ..Options::default() },
        Options { fork: Fork::Ik, ..Options::default() },
        Options { fork: Fork::Ik, build: Some(4000), ..Options::default() },
    ] {
        let (m, s) = seventy_b(o);
        assert_eq!(predict_fit(&m, &s, None), None, "{o:?}");
        let all = fixes(&m, &s);
        assert!(!all.iter().any(|f| f.kind == FixKind::Fit), "{o:?}: {}", codes(&all));
        assert!(!codes(&all).contains("--fit"), "{o:?}: {}", codes(&all));
        assert!(!verdict(&m, &s).contains("--fit"), "{o:?}: {}", verdict(&m, &s));
        let e = crate::estimate(&m, s.clone());
        assert!(!e.warnings.iter().any(|w| w.contains("--fit")), "{o:?}: {:?}", e.warnings);
    }
}

/// ik_llama.cpp before its build 4761 keeps every layer on the CPU unless
/// `-ngl` asks (`llama_model_default_params` `n_gpu_layers = 0`): a plan
/// with every layer on the GPU says so.
#[test]
fn old_ik_builds_are_asked_for_every_layer() {
    let ngl = |build: Option<u64>| {
        let (m, s) = seventy_b(Options { fork: Fork::Ik, build, ..Options::default() });
        llamacpp::server_command(&m, &s).contains(" -ngl 999")
    };
    assert!(ngl(Some(llamacpp::ik::NGL_AUTO_BUILD - 1)));
    assert!(!ngl(Some(llamacpp::ik::NGL_AUTO_BUILD)));
    assert!(!ngl(None));
}

fn on_ollama(o: ollama::Options, gpus: Vec<GpuSlot>) -> Scenario {
    Scenario { engine: Engine::Ollama(o), gpus, ..on_4090s(Engine::Ollama(o), 1) }
}

fn custom(gib: u64) -> Vec<GpuSlot> {
    vec![GpuSlot::custom("gpu", gib * shared::units::GIB)]
}

/// `num_gpu` makes llama-server's `--fit` give up (Ollama passes it as
/// `-ngl`): the fix that lets `--fit` place the model prints the set-up
/// without it.
#[test]
fn ollamas_fit_fix_drops_num_gpu() {
    let m = model("qwen3-30b-a3b");
    let s = on_ollama(ollama::Options { num_gpu: Some(33), ..Default::default() }, custom(12));
    let all = fixes(&m, &s);
    let f = all.iter().find(|f| f.kind == FixKind::Fit).unwrap_or_else(|| panic!("a --fit fix: {}", codes(&all)));
    assert!(f.title.starts_with("Drop num_gpu and let llama-server's --fit place it"), "{}", f.title);
    assert!(!f.code.contains("num_gpu"), "{}", f.code);
    // Any other fix keeps the plan's num_gpu.
    assert!(all.iter().any(|f| f.kind != FixKind::Fit && f.code.contains("PARAMETER num_gpu")), "{}", codes(&all));
}

/// Ollama's automatic `num_batch` with flash attention off: 512 only with a
/// CUDA device (server/sched.go `hasCUDADevice`); ROCm and Metal take the
/// context's batch (1024 past 4,096 tokens).
#[test]
fn ollamas_batch_without_flash_attention_is_cudas_alone() {
    let m = model("llama-3.1-8b");
    let o = ollama::Options {
        num_ctx: Some(8192),
        flash_attention: Some(shared::engines::llamacpp::FlashAttention::Off),
        ..Default::default()
    };
    let batch = |id: &str| {
        let g = gpu(id).unwrap_or_else(|| panic!("{id} is in the catalog"));
        crate::llamacpp::report(&m, on_ollama(o, vec![GpuSlot::from_catalog(g)])).0.n_ubatch
    };
    assert_eq!(batch("rtx-4090"), 512);
    assert_eq!(batch("rx-7900-xtx"), 1024);
    assert_eq!(batch("m2-max-32gb"), 1024);
}

/// Ollama 0.30+ logs the llama-server it starts as `msg="starting
/// llama-server" cmd="…"` (llm/llama_server.go v0.33.0-rc2,
/// `slog.Info("starting llama-server", "cmd", cmd)`, the arguments of
/// `startLlamaServer`): its flags are the launch's configuration. The line
/// is written here in that format; no llama.cpp context line follows it.
#[test]
fn ollamas_llama_server_launch_line_is_read() {
    let text = "time=2026-08-20T10:00:00.000Z level=INFO source=llama_server.go:433 msg=\"starting llama-server\" \
                cmd=\"/usr/local/lib/ollama/llama-server --model /root/.ollama/models/blobs/sha256-1 --port 40123 \
                --host 127.0.0.1 --no-webui --offline -c 32768 -np 4 --cache-type-k q8_0 --cache-type-v q8_0 \
                --flash-attn on -b 512 -ub 512\"\n\
                time=2026-08-20T10:00:05.000Z level=INFO source=llama_server.go:500 msg=\"llama-server: \
                load_tensors:        CUDA0 model buffer size =  4403.49 MiB\"";
    let c = shared::startup::read(text).expect("an Ollama log").config;
    assert_eq!((c.n_ctx, c.n_seq_max, c.n_batch), (Some(32_768), Some(4), Some(512)));
    assert_eq!((c.cache_type_k.as_deref(), c.cache_type_v.as_deref()), (Some("q8_0"), Some("q8_0")));
    assert_eq!(c.flash_attn.as_deref(), Some("1"));
}

/// `--cpu-moe` (every layer) is `LLAMA_ARG_CPU_MOE=1` in `ollama serve`'s
/// environment: llama-server reads `LLAMA_ARG_N_CPU_MOE` with `std::stoi`,
/// which throws on 4294967295 (common/arg.cpp `common_params_parse_ex`).
#[test]
fn ollamas_cpu_moe_is_a_switch() {
    let m = model("qwen3-30b-a3b");
    let env = |n: u64| {
        ollama::ollama_command(&m, &on_ollama(ollama::Options { n_cpu_moe: n, ..Default::default() }, custom(24)))
    };
    let all = env(u64::from(u32::MAX));
    assert!(all.starts_with("LLAMA_ARG_CPU_MOE=1 ollama serve\n"), "{all}");
    let layers = m.layout.num_layers as u64;
    assert!(env(layers).starts_with("LLAMA_ARG_CPU_MOE=1 ollama serve\n"));
    assert!(env(layers - 1).starts_with(&format!("LLAMA_ARG_N_CPU_MOE={} ollama serve\n", layers - 1)));
}

/// Llama 3.1 8B with four sequences of 24,576 + 16,384 tokens on one
/// RTX 4090: its cache is what does not fit.
fn long_sequences(engine: Engine) -> (Model, Scenario) {
    let s = Scenario { concurrency: 4, prompt_tokens: 24_576, max_new_tokens: 16_384, ..on_4090s(engine, 1) };
    (model("llama-3.1-8b"), s)
}

fn fix(all: &[Fix], kind: FixKind) -> &Fix {
    all.iter().find(|f| f.kind == kind).unwrap_or_else(|| panic!("a {kind:?} fix: {}", codes(all)))
}

/// `-c` is the context of every slot together (`-np`, common/arg.cpp
/// "size of the prompt context", split over the slots by
/// tools/server/server.cpp `n_ctx_slot = n_ctx / params.n_parallel`): a
/// fix with fewer new tokens or fewer sequences prints the `-c` its plan
/// was measured with, with its `-np`.
#[test]
fn llamacpp_fixes_size_the_context_for_every_slot() {
    let (m, s) = long_sequences(Engine::LlamaCpp(Options::default()));
    let all = fixes(&m, &s);
    let f = fix(&all, FixKind::MaxNewTokens);
    let n = f.scenario.max_new_tokens;
    assert!(n < s.max_new_tokens);
    let c = (s.prompt_tokens + n) * 4;
    assert!(f.code.contains(&format!(" -c {c} -np 4 ")) && f.code.ends_with(&format!(" -n {n}")), "{}", f.code);
    assert_eq!(f.code, format!("{} -n {n}", llamacpp::server_command(&m, &f.scenario)));
    let f = fix(&all, FixKind::Concurrency);
    let k = f.scenario.concurrency;
    assert!(k < 4 && f.code.contains(&format!(" -c {} -np {k} ", s.sequence_tokens() * k)), "{}", f.code);
}

/// `-fa` before b6325 is a bare switch (common/arg.cpp; `-fa on` is
/// "error: invalid argument: on" there), from it `-fa on|off|auto`; ik
/// has flash attention on by default from its build 3928.
#[test]
fn the_kv_cache_fix_spells_flash_attention_as_the_build_does() {
    for (o, fa) in [
        (Options::default(), " -fa on -ctk q8_0"),
        (Options { build: Some(5000), ..Options::default() }, " -fa -ctk q8_0"),
        (Options { fork: Fork::Ik, ..Options::default() }, " -ctk q8_0"),
        (Options { fork: Fork::Ik, build: Some(3900), ..Options::default() }, " -fa -ctk q8_0"),
    ] {
        let (m, s) = long_sequences(Engine::LlamaCpp(o));
        let all = fixes(&m, &s);
        let f = fix(&all, FixKind::KvCacheDtype);
        assert!(f.code.contains(fa) && f.code.contains("-ctv q8_0"), "{o:?}: {}", f.code);
        assert_eq!(f.code, llamacpp::server_command(&m, &f.scenario));
    }
}

/// `ollama serve`'s environment is read once for all its models
/// (envconfig/config.go): a fix that restarts it keeps the plan's other
/// variables (here `OLLAMA_NUM_PARALLEL=4`) and its Modelfile.
#[test]
fn ollamas_env_fixes_keep_the_rest_of_the_set_up() {
    let o = ollama::Options { num_parallel: 4, num_ctx: Some(49_152), ..Default::default() };
    let (m, s) = long_sequences(Engine::Ollama(o));
    let all = fixes(&m, &s);
    let f = fix(&all, FixKind::KvCacheDtype);
    assert!(f.code.starts_with("OLLAMA_NUM_PARALLEL=4 OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve\n"), "{}", f.code);
    assert_eq!(f.code, ollama::ollama_command(&m, &f.scenario));
    let f = fix(&all, FixKind::MoreGpus);
    assert!(
        f.code.starts_with("CUDA_VISIBLE_DEVICES=0,1 OLLAMA_SCHED_SPREAD=1 OLLAMA_NUM_PARALLEL=4 ollama serve\n"),
        "{}",
        f.code
    );
    assert!(f.code.contains("PARAMETER num_ctx 49152"), "{}", f.code);
}

/// The OOM diagnosis of a llama.cpp KV-cache failure against the audit's
/// plan on `o`: its levers and the plan's fixes, as printed.
fn diagnosed(o: Options) -> String {
    use shared::oom::{self, DiagnoseContext};
    let path = format!("{}/tests/fixtures/oom/34-llama-kv-cache-device-1.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (m, s) = seventy_b(o);
    let d = oom::diagnose(&oom::parse(&text), &DiagnoseContext::error_only().with_plan(&m, &s));
    d.fixes.iter().map(|f| format!("{}\n{}\n", f.title, f.code)).collect()
}

/// The OOM levers speak the plan's build: `-fa` bare before b6325 (`-fa
/// on` is "error: invalid argument: on" there), no `--fit` before b7407 or
/// on ik_llama.cpp (whose `--fit` is a bare opt-in switch).
#[test]
fn oom_levers_speak_the_plans_build() {
    // Plans without flash attention, so the levers that need it add it
    // (under a plan with it, `llama-server ...` already carries it).
    let off = Options { flash_attention: llamacpp::FlashAttention::Off, ..Options::default() };
    let newest = diagnosed(off);
    assert!(newest.contains("-fa on -ctk q8_0 -ctv q8_0") && newest.contains("--fit"), "{newest}");
    let old = diagnosed(Options { build: Some(5000), ..off });
    assert!(old.contains(" -fa -ctk q8_0 -ctv q8_0"), "{old}");
    assert!(!old.contains("-fa on") && !old.contains("--fit"), "{old}");
    let ik = diagnosed(Options { fork: Fork::Ik, ..off });
    assert!(ik.contains("llama-server ... -ctk q8_0 -ctv q8_0"), "{ik}");
    assert!(!ik.contains("-fa on") && !ik.contains("--fit"), "{ik}");
}

/// A lighter quantisation is the plan's whole `llama-server` line in it (it
/// had been `llama-server -m model-Q4_K_M.gguf ...`, which dropped the
/// plan's context, slots and flags), and Ollama's the whole set-up with the
/// plan's environment and Modelfile; Ollama's shorter context is the
/// Modelfile's `num_ctx` in that set-up (it had been a `PARAMETER` line alone).
#[test]
fn weight_and_context_fixes_are_whole_set_ups() {
    let q8 = WeightFormat::parse("q8_0").unwrap_or_else(|e| panic!("{e}"));
    let plan = |engine| Scenario {
        weights: q8,
        concurrency: 2,
        prompt_tokens: 4096,
        gpus: custom(8),
        kv_dtype: shared::kv::KvDtype::F16,
        engine,
        ..Scenario::default()
    };
    let m = model("llama-3.1-8b");
    let s = plan(Engine::LlamaCpp(Options { n_batch: 1024, ..Options::default() }));
    let all = fixes(&m, &s);
    let f = fix(&all, FixKind::WeightFormat);
    assert!(f.scenario.weights != q8, "{}", codes(&all));
    assert_eq!(f.code, llamacpp::server_command(&m, &f.scenario));
    assert!(f.code.contains(" -np 2 -b 1024"), "{}", f.code);
    let o = ollama::Options { num_parallel: 2, ..Default::default() };
    let all = fixes(&m, &plan(Engine::Ollama(o)));
    let f = fix(&all, FixKind::WeightFormat);
    assert_eq!(f.code, ollama::ollama_command(&m, &f.scenario));
    assert!(f.code.starts_with("OLLAMA_NUM_PARALLEL=2 ollama serve\n# Modelfile\nFROM ./model-Q"), "{}", f.code);
    let s = Scenario { gpus: custom(12), ..plan(Engine::Ollama(ollama::Options { num_ctx: Some(65_536), ..o })) };
    let all = fixes(&m, &s);
    let f = fix(&all, FixKind::MaxModelLen);
    assert_eq!(f.code, ollama::ollama_command(&m, &f.scenario));
    assert!(
        f.code.starts_with("OLLAMA_NUM_PARALLEL=2 ollama serve\n") && f.code.contains("\nPARAMETER num_ctx "),
        "{}",
        f.code
    );
}

/// llama.cpp's own cache is f16 (`cache_type_k`/`cache_type_v`,
/// common/common.h), which Ollama's llama-server keeps: a v3 link that chose
/// no KV dtype plans that cache and its line names none (it had printed
/// `-ctk bf16 -ctv bf16` for every bf16 checkpoint, and the page offered
/// "default (bf16)"); the serving engines keep the activation dtype's.
#[test]
fn a_plan_without_a_kv_choice_runs_the_engines_own_cache() {
    use shared::kv::KvDtype;
    use shared::link::decode;
    let m = model("llama-3.1-8b");
    let kv = |q: &str| decode(q).state.kv_dtype_for(&m);
    assert_eq!(kv("?v=3&model=llama-3.1-8b&w=q8_0&e=llamacpp"), KvDtype::F16);
    assert_eq!(kv("?v=3&model=llama-3.1-8b&w=q8_0&e=ollama"), KvDtype::F16);
    assert_eq!(kv("?v=3&model=llama-3.1-8b&e=vllm"), KvDtype::Bf16);
    assert_eq!(kv("?v=3&model=llama-3.1-8b&w=q8_0&kv=bf16&e=llamacpp"), KvDtype::Bf16, "a choice is kept");
    // A link before v3 keeps the plan it meant (the link promise, docs/links.md).
    assert_eq!(kv("?v=2&model=llama-3.1-8b&w=q8_0&e=llamacpp"), KvDtype::Bf16);
    assert_eq!(kv("?v=3&model=llama-3.1-8b&w=q8_0&kv=act&e=llamacpp"), KvDtype::Bf16);
    let s = decode("?v=3&model=llama-3.1-8b&w=q8_0&e=llamacpp").state.scenario_for(&m);
    let s = s.unwrap_or_else(|e| panic!("{e}"));
    let line = llamacpp::server_command(&m, &s);
    assert!(!line.contains("-ctk") && !line.contains("-ctv"), "{line}");
}
