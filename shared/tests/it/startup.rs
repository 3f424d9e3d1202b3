//! Real engine start-up logs (`tests/fixtures/startup/`, each citing the
//! thread it was copied from) read into their memory figures. Every expected
//! size is the log's own text, converted by `units::parse_size`.

use shared::startup::{Buffer, Figure, LogEngine, Stage, StartupLog, read};
use shared::units::parse_size;

pub(crate) fn log(name: &str) -> StartupLog {
    let path = format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    read(&text).unwrap_or_else(|| panic!("{name}: no start-up lines found"))
}

fn gib(text: &str) -> u64 {
    parse_size(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn signed(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or_else(|e| panic!("{bytes}: {e}"))
}

fn figures(l: &StartupLog) -> Vec<Figure> {
    l.facts.iter().map(|f| f.figure).collect()
}

#[test]
fn vllm_v0_profile_table() {
    let l = log("vllm-v0-profile-llama3-8b");
    assert_eq!(l.engine, LogEngine::Vllm);
    assert_eq!(
        figures(&l),
        [
            Figure::DeviceTotal { bytes: gib("79.22GiB") },
            Figure::Utilization { permille: 900 },
            Figure::Weights { bytes: gib("14.96GiB") },
            Figure::NonTorch { bytes: gib("1.79GiB") },
            Figure::ActivationPeak { bytes: gib("1.26GiB") },
            Figure::AvailableKv { bytes: gib("53.29GiB"), negative: false },
        ]
    );
    // The lines the figures came from, so the page can point at them.
    assert_eq!(l.facts.iter().map(|f| f.line).collect::<Vec<_>>(), [5, 6, 8, 9, 10, 11]);
}

#[test]
fn vllm_0_6_4_key_value_profile_line() {
    let l = log("vllm-v0-064post1-llama31-8b-rtx3090-mml20k");
    // `peak_torch_memory=17.06GiB` holds the weights logged before it.
    let activation = gib("17.06GiB") - gib("14.9888GiB");
    assert_eq!(
        figures(&l),
        [
            Figure::Weights { bytes: gib("14.9888GiB") },
            Figure::DeviceTotal { bytes: gib("23.58GiB") },
            Figure::NonTorch { bytes: gib("0.35GiB") },
            Figure::AvailableKv { bytes: gib("3.81GiB"), negative: false },
            Figure::Utilization { permille: 900 },
            Figure::ActivationPeak { bytes: activation },
            // `GPU blocks: 1952` without vLLM's `# `.
            Figure::KvBlocks { blocks: 1952 },
            Figure::Concurrency { tokens_per_request: 20_000, hundredths: 156 },
        ]
    );
    assert_eq!(l.facts.iter().map(|f| f.line).collect::<Vec<_>>(), [2, 3, 3, 3, 3, 3, 4, 5]);
    let l = log("vllm-v0-064post1-llama31-8b-rtx3090-mml29k");
    assert!(figures(&l).contains(&Figure::AvailableKv { bytes: gib("2.89GiB"), negative: false }));
    assert!(figures(&l).contains(&Figure::KvBlocks { blocks: 1478 }));
}

#[test]
fn vllm_v0_weights_in_gb_are_gib_and_blocks_are_read() {
    let l = log("vllm-v0-gpu-blocks-llama31-70b-w8a8");
    assert_eq!(
        figures(&l),
        [
            // `Loading model weights took 67.7229 GB` (bytes / 2^30).
            Figure::Weights { bytes: gib("67.7229GiB") },
            Figure::KvBlocks { blocks: 1381 },
            Figure::Concurrency { tokens_per_request: 2048, hundredths: 1079 },
            // The `vllm serve … --gpu-memory-utilization 0.98` pasted above it.
            Figure::Utilization { permille: 980 },
        ]
    );
    assert_eq!(l.config.max_model_len, Some(2048));
}

#[test]
fn vllm_engine_configuration_line() {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/startup/vllm-v0-engine-config-qwen25-7b.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    // Only a configuration line: no memory figure, so not a start-up log …
    assert_eq!(read(&text), None);
    // … until a figure follows it.
    let l = read(&format!("{text}\nINFO 03-20 10:42:20 worker.py:267] GPU KV cache size: 1,024 tokens\n"))
        .unwrap_or_else(|| panic!("no log"));
    let c = &l.config;
    assert_eq!(c.version.as_deref(), Some("0.7.2"));
    assert_eq!(c.model.as_deref(), Some("/data/models/hf/Qwen/Qwen2.5-7B-Instruct"));
    assert_eq!(c.dtype.as_deref(), Some("bfloat16"));
    assert_eq!((c.tensor_parallel, c.pipeline_parallel, c.max_model_len), (Some(1), Some(1), Some(16_384)));
    assert_eq!((c.quantization.as_deref(), c.kv_cache_dtype.as_deref()), (None, Some("auto")));
    assert_eq!(c.enforce_eager, Some(false));
}

#[test]
fn vllm_v1_cuda_graph_estimate_and_kv() {
    let l = log("vllm-v1-cudagraph-estimate-hybrid");
    assert_eq!(
        figures(&l),
        [
            Figure::CudaGraphEstimate { bytes: signed(gib("0.26GiB")) },
            Figure::AvailableKv { bytes: gib("17.36GiB"), negative: false },
            Figure::KvTokens { tokens: 188_640 },
            Figure::Concurrency { tokens_per_request: 131_072, hundredths: 523 },
        ]
    );
    let l = log("vllm-v1-021-cudagraph-profiled");
    assert_eq!(
        figures(&l),
        [
            Figure::CudaGraphEstimate { bytes: signed(gib("0.26GiB")) },
            Figure::AvailableKv { bytes: gib("111.99GiB"), negative: false },
            Figure::KvTokens { tokens: 229_344 },
            Figure::Concurrency { tokens_per_request: 16_384, hundredths: 1400 },
        ]
    );
    let l = log("vllm-v1-gguf-qwen35-override");
    assert_eq!(l.first(|f| matches!(f, Figure::AvailableKv { .. }).then_some(())), Some((5, ())));
    assert!(figures(&l).contains(&Figure::AvailableKv { bytes: gib("6.9GiB"), negative: false }));
}

#[test]
fn vllm_pinned_kv_skips_the_profile() {
    let l = log("vllm-v1-pinned-kv-xpu");
    assert_eq!(figures(&l), [Figure::PinnedKv { bytes: gib("4.25GiB") }]);
}

#[test]
fn vllm_workers_are_scoped_by_rank() {
    let l = log("vllm-v1-tp8-hybrid-mtp");
    let weights = &l.facts[0];
    assert_eq!(weights.figure, Figure::Weights { bytes: gib("15.26GiB") });
    assert_eq!(weights.scope.as_deref(), Some("Worker_TP0"));
    let blocks: Vec<_> =
        l.facts.iter().filter(|f| matches!(f.figure, Figure::AttentionBlock { tokens: 544 })).collect();
    assert_eq!(blocks.iter().map(|f| f.scope.as_deref()).collect::<Vec<_>>(), [Some("Worker_TP0"), Some("Worker_TP6")]);
}

#[test]
fn sglang_pool_and_free_memory() {
    let l = log("sglang-tp8-kv-pool");
    assert_eq!(l.engine, LogEngine::Sglang);
    let pool = Figure::KvPool {
        tokens: 2_795_207,
        bytes: 2 * gib("53.31GiB"),
        k_bytes: Some(gib("53.31GiB")),
        v_bytes: Some(gib("53.31GiB")),
    };
    assert_eq!(l.facts[0].figure, pool);
    assert_eq!(l.facts[0].scope.as_deref(), Some("TP5"));
    assert!(figures(&l).contains(&Figure::Free { after: Stage::MemoryPool, bytes: gib("11.87GiB") }));

    let l = log("sglang-qwen3moe-load-and-pool");
    assert_eq!(
        figures(&l),
        [
            Figure::Weights { bytes: gib("56.98GiB") },
            Figure::Free { after: Stage::Weights, bytes: gib("230.20GiB") },
            Figure::KvPool {
                tokens: 1_669_816,
                bytes: 2 * gib("76.44GiB"),
                k_bytes: Some(gib("76.44GiB")),
                v_bytes: Some(gib("76.44GiB")),
            },
            Figure::Free { after: Stage::MemoryPool, bytes: gib("74.01GiB") },
        ]
    );
}

#[test]
fn llamacpp_old_names_per_device() {
    let l = log("llamacpp-old-two-gpus");
    assert_eq!(l.engine, LogEngine::LlamaCpp);
    let buffers: Vec<(Option<&str>, Figure)> = l.facts.iter().map(|f| (f.scope.as_deref(), f.figure)).collect();
    let mib = |s: &str| gib(&format!("{s}MiB"));
    assert_eq!(
        buffers,
        [
            (None, Figure::Offloaded { layers: 41, of: 41 }),
            (Some("CPU"), Figure::Buffer { buffer: Buffer::Model, bytes: mib("1640.62") }),
            (Some("CUDA0"), Figure::Buffer { buffer: Buffer::Model, bytes: mib("5434.38") }),
            (Some("CUDA1"), Figure::Buffer { buffer: Buffer::Model, bytes: mib("13989.53") }),
            (Some("CUDA0"), Figure::Buffer { buffer: Buffer::Kv, bytes: mib("1536.00") }),
            (Some("CUDA1"), Figure::Buffer { buffer: Buffer::Kv, bytes: mib("3584.00") }),
            (
                None,
                Figure::KvSummary {
                    bytes: mib("5120.00"),
                    k_bytes: mib("2560.00"),
                    v_bytes: mib("2560.00"),
                    cells: None,
                    layers: None
                }
            ),
            (Some("CUDA_Host"), Figure::Buffer { buffer: Buffer::Output, bytes: mib("1.95") }),
            (Some("CUDA0"), Figure::Buffer { buffer: Buffer::Compute, bytes: mib("672.01") }),
        ]
    );
    assert_eq!((l.config.n_ctx, l.config.n_batch, l.config.n_ubatch), (Some(4096), Some(2048), Some(512)));
}

#[test]
fn llamacpp_new_names_and_cache_types() {
    let l = log("llamacpp-eight-gpus-q4-k");
    let c = &l.config;
    assert_eq!((c.n_ctx, c.n_seq_max, c.n_batch, c.n_ubatch), (Some(16_384), Some(8), Some(256), Some(256)));
    assert_eq!(c.flash_attn.as_deref(), Some("0"));
    assert_eq!((c.cache_type_k.as_deref(), c.cache_type_v.as_deref()), (Some("q4_0"), Some("f16")));
    let models = l.facts.iter().filter(|f| matches!(f.figure, Figure::Buffer { buffer: Buffer::Model, .. })).count();
    let kvs = l.facts.iter().filter(|f| matches!(f.figure, Figure::Buffer { buffer: Buffer::Kv, .. })).count();
    assert_eq!((models, kvs), (6, 4));

    // Colour codes and timestamps in front; the interleaved-SWA summary.
    let l = log("llamacpp-new-iswa-colour");
    assert_eq!(
        figures(&l),
        [
            Figure::Buffer { buffer: Buffer::Output, bytes: gib("0.49MiB") },
            Figure::KvSummary { bytes: 0, k_bytes: 0, v_bytes: 0, cells: Some(64_000), layers: Some(0) },
            Figure::Buffer { buffer: Buffer::Kv, bytes: gib("182.75MiB") },
        ]
    );
}

#[test]
fn vllm_v1_non_default_args_and_chunked_prefill_even_when_wrapped() {
    // The log file wraps its lines at 140 columns: `'model': 'Qwe` / `n2-7B-Instruct', …`.
    let l = log("vllm-v1-0101-qwen2-7b-a100-tp2");
    let c = &l.config;
    assert_eq!(c.version.as_deref(), Some("0.10.1.1"));
    assert_eq!((c.tensor_parallel, c.max_model_len, c.max_num_batched_tokens), (Some(2), Some(16_384), Some(2048)));
    assert_eq!(
        figures(&l),
        [
            Figure::Utilization { permille: 500 },
            Figure::Weights { bytes: gib("7.1217GiB") },
            Figure::Weights { bytes: gib("7.1217GiB") },
            Figure::AvailableKv { bytes: gib("31.83GiB"), negative: false },
            Figure::AvailableKv { bytes: gib("31.83GiB"), negative: false },
            Figure::KvTokens { tokens: 1_192_160 },
            Figure::Concurrency { tokens_per_request: 16_384, hundredths: 7276 },
            Figure::KvTokens { tokens: 1_192_160 },
            Figure::Concurrency { tokens_per_request: 16_384, hundredths: 7276 },
            Figure::CudaGraphs { bytes: gib("0.65GiB") },
            Figure::CudaGraphs { bytes: gib("0.65GiB") },
        ]
    );
    // The ranks the lines came from.
    assert_eq!(l.facts[1].scope.as_deref(), Some("VllmWorker TP1"));
}

#[test]
fn vllm_free_memory_breakdown_is_read_term_by_term() {
    let l = log("vllm-v1-free-memory-breakdown-h100");
    assert_eq!(
        figures(&l),
        [
            Figure::DeviceTotal { bytes: gib("79.33GiB") },
            Figure::Utilization { permille: 850 },
            Figure::Weights { bytes: gib("16.92GiB") },
            Figure::ActivationPeak { bytes: gib("5.66GiB") },
            Figure::NonTorch { bytes: gib("0.13GiB") },
            Figure::CudaGraphs { bytes: gib("1.34GiB") },
            Figure::SuggestedKv { bytes: 46_421_742_490 },
        ]
    );
    assert_eq!(l.facts[0].scope.as_deref(), Some("Worker_TP1"));
}

/// The sampler vLLM set up is read from its own line: the native fallback
/// of 0.10.0 without FlashInfer, FlashInfer where the log says so, and the
/// version's default (nothing read) where the excerpt is silent. A pasted
/// log's plan takes it, and with it the sampler's bytes per logit.
#[test]
fn vllm_sampler_line_picks_the_profiled_sampler() {
    use shared::engines::{Engine, EngineKind, vllm::Sampler};
    let native = log("vllm-v1-0100-qwen3-32b-h100-tp4-u095");
    assert_eq!(native.config.sampler, Some(Sampler::Native));
    let flashinfer = read(
        "(EngineCore_0 pid=2881) INFO 09-04 01:29:01 [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k sampling.\n\
         (EngineCore_0 pid=2881) INFO 09-04 01:29:25 [gpu_worker.py:276] Available KV cache memory: 24.83 GiB",
    )
    .expect("a vLLM log");
    assert_eq!(flashinfer.config.sampler, Some(Sampler::FlashInfer));
    assert_eq!(log("vllm-v1-012-qwen3-30b-a3b-h100-tp2").config.sampler, None);
    let (engine, taken) = shared::startup::logged_engine(&native, EngineKind::Vllm.with_defaults());
    let Engine::Vllm(o) = engine else { panic!("{engine:?}") };
    assert_eq!(o.sampler, Some(Sampler::Native));
    assert!(taken.iter().any(|t| t == "the native sampler"), "{taken:?}");
    assert_eq!(Sampler::Native.bytes_per_logit(2), 34);
    // The MXFP4 kernel, likewise (`Using Marlin backend`): Marlin's padding
    // on a Hopper GPU without triton_kernels.
    let marlin = log("vllm-v1-0112-gpt-oss-120b-h100-u096");
    assert_eq!(marlin.config.mxfp4_kernel, Some(shared::engines::vllm::Mxfp4Kernel::Marlin));
    let (engine, taken) = shared::startup::logged_engine(&marlin, EngineKind::Vllm.with_defaults());
    let Engine::Vllm(o) = engine else { panic!("{engine:?}") };
    assert_eq!(o.mxfp4_kernel, Some(shared::engines::vllm::Mxfp4Kernel::Marlin));
    assert!(taken.iter().any(|t| t == "the marlin MXFP4 kernel"), "{taken:?}");
    assert_eq!(Sampler::FlashInfer.bytes_per_logit(2), 14);
}

/// Ollama's own engine prints no llama.cpp buffer lines but its own
/// (`ml/device.go`, `ml/backend/ggml/ggml.go`): model weights, KV cache and
/// compute graph per device, to one decimal. And the runner's launch, from
/// the `starting llama server` command or the new runner's `load` request
/// (ollama/ollama#12027), gives the context, slots, flash attention and
/// cache type when llama.cpp's context lines are not there.
#[test]
fn ollama_engine_lines_are_buffers_and_its_launch_is_the_config() {
    let l = log("ollama-device-go-cuda0");
    assert_eq!(l.engine, LogEngine::LlamaCpp);
    let buffers: Vec<(Option<&str>, Figure)> = l.facts.iter().map(|f| (f.scope.as_deref(), f.figure)).collect();
    let b = |kind: Buffer, text: &str| Figure::Buffer { buffer: kind, bytes: gib(text) };
    assert_eq!(
        buffers,
        [
            (Some("CUDA0"), b(Buffer::Model, "7.0 GiB")),
            (Some("CPU"), b(Buffer::Model, "285.7 MiB")),
            (Some("CUDA0"), b(Buffer::Kv, "912.2 MiB")),
            (Some("CUDA0"), b(Buffer::Compute, "2.9 GiB")),
            (Some("CPU"), b(Buffer::Compute, "8.0 MiB")),
        ]
    );
    let l = log("ollama-ggml-mistral3-q8-two-gpus");
    let figures = figures(&l);
    assert_eq!(figures[0], Figure::Offloaded { layers: 40, of: 41 });
    assert_eq!(l.facts[1].scope.as_deref(), Some("CUDA1"));
    assert_eq!(figures[1], b(Buffer::Model, "11.0 GiB"));
    assert_eq!(figures.last(), Some(&Figure::Buffer { buffer: Buffer::Compute, bytes: 0 }));
    // Ollama's own estimate before loading: what it saw free and what it
    // expected the weights, KV cache and graph to take (1.0 GiB and 560 MiB,
    // as llama.cpp then allocated).
    let estimate = log("ollama-054-llama31-8b-q4km-rtx4090")
        .facts
        .iter()
        .find_map(|f| match f.figure {
            Figure::OllamaEstimate { .. } => Some(f.figure),
            _ => None,
        })
        .expect("the offload line");
    assert_eq!(
        estimate,
        Figure::OllamaEstimate {
            layers: 33,
            of: 33,
            available_bytes: gib("23.3 GiB"),
            required_bytes: gib("6.5 GiB"),
            weights_bytes: gib("4.9 GiB"),
            kv_bytes: gib("1.0 GiB"),
            graph_bytes: gib("560.0 MiB"),
        }
    );
    // The 0.5.4 log's command line and llama.cpp's own lines agree.
    let c = log("ollama-054-llama31-8b-q4km-rtx4090").config;
    assert_eq!((c.n_ctx, c.n_seq_max, c.n_batch), (Some(8192), Some(4), Some(2048)));
    // The new runner's request (ollama/ollama#12027, verbatim).
    let load = "time=2025-08-24T08:34:07.452Z level=INFO source=runner.go:925 msg=load request=\"{Operation:alloc LoraPath:[] Parallel:1 BatchSize:512 FlashAttention:true KvSize:26624 KvCacheType:q4_0 NumThreads:32 GPULayers:33[ID:GPU-620f3fa0-47a8-a31e-eff8-c87476f589db Layers:33(0..32)] MultiUserCache:false ProjectorPath: MainGPU:0 UseMmap:false}\"\n\
                time=2026-02-13T09:28:23.487Z level=DEBUG source=device.go:251 msg=\"kv cache\" device=CUDA0 size=\"912.2 MiB\"";
    let c = read(load).expect("an Ollama log").config;
    assert_eq!((c.n_ctx, c.n_seq_max, c.n_batch), (Some(26624), Some(1), Some(512)));
    assert_eq!((c.flash_attn.as_deref(), c.cache_type_k.as_deref()), (Some("1"), Some("q4_0")));
}

/// The model a llama.cpp log names: the GGUF header dump and
/// `llm_load_print_meta:` of Ollama 0.5.4's runner (Llama 3.1 8B Q4_K_M)
/// rebuild the Llama 3.1 8B preset's shape and its file type; an excerpt
/// without the heads (ollama/ollama#13552 kept kv 3–15 and 25–32 of Phi-4)
/// says what it lacks instead of guessing.
#[test]
fn llamacpp_metadata_names_the_model() {
    let l = log("ollama-054-llama31-8b-q4km-rtx4090");
    let m = l.model.as_ref().expect("metadata");
    assert_eq!((m.arch.as_deref(), m.name.as_deref()), (Some("llama"), Some("Meta Llama 3.1 8B Instruct")));
    assert_eq!(
        (m.layers, m.heads, m.kv_heads, m.embedding, m.ffn),
        (Some(32), Some(32), Some(8), Some(4096), Some(14336))
    );
    assert_eq!((m.vocab, m.context, m.head_k), (Some(128_256), Some(131_072), Some(128)));
    assert_eq!((m.file_type.as_deref(), m.size_bytes), (Some("Q4_K - Medium"), Some(gib("4.58 GiB"))));
    assert_eq!(m.params_millions, Some(8_030));
    let (model, format, notes) = shared::startup::logged_model(m).expect("a model");
    assert_eq!(format.map(|f| f.id()).as_deref(), Some("q4_k_m"));
    assert!(notes.is_empty(), "{notes:?}");
    let preset = shared::model::Model::preset("llama-3.1-8b").expect("preset");
    assert_eq!(model.arch.text, preset.arch.text);

    let phi = log("ollama-013-phi4-14b-q4km-gb10");
    let m = phi.model.as_ref().expect("metadata");
    assert_eq!((m.arch.as_deref(), m.layers, m.embedding), (Some("phi3"), Some(40), Some(5120)));
    assert_eq!(m.vocab, Some(100_352));
    let Err(why) = shared::startup::logged_model(m) else { panic!("no heads in the excerpt, yet a model") };
    assert!(why.contains("n_head"), "{why}");
}

/// SGLang's `Init torch distributed ends. mem usage=` is read per rank and
/// set against what the `0.5.23-init` rules count for the plan (issue 36):
/// 0.13 GB on each of four L4s over PCIe, 256 MiB predicted.
#[test]
fn sglangs_distributed_init_is_read_and_reconciled() {
    use shared::engines::{Engine, sglang};
    use shared::estimate::{GpuSlot, Scenario};
    let log = log("sglang-043-qwq-32b-l4-tp4");
    let inits: Vec<u64> = log
        .facts
        .iter()
        .filter_map(|f| match f.figure {
            Figure::DistInit { bytes } => Some(bytes),
            _ => None,
        })
        .collect();
    assert_eq!(inits, vec![(13 * (1u64 << 30) + 50) / 100; 4]);
    let m = shared::model::Model::preset("qwen2.5-32b").unwrap_or_else(|e| panic!("{e}"));
    let l4 = shared::catalog::gpu("l4").unwrap_or_else(|| panic!("l4"));
    let s = Scenario {
        gpus: vec![GpuSlot::from_catalog(l4); 4],
        tp: 4,
        engine: Engine::Sglang(sglang::Options { mem_fraction_static: Some(0.85), ..Default::default() }),
        ..Scenario::default()
    };
    let (rows, _) = shared::startup::reconcile(&log, &crate::estimate(&m, s));
    let init = rows.iter().find(|r| r.term == "distributed init").unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(init.predicted, Some(shared::startup::Amount::Bytes(sglang::DIST_INIT_PCIE)));
}

/// The 0.18.0 A/B pair (yuanjuju/vllm-lab@b71c05f): the same server with
/// and without n-gram drafting logged the same weights, KV and tokens; the
/// log's `speculative_config=SpeculativeConfig(method='ngram', …,
/// num_spec_tokens=4)` is read into the plan, and the plan's figures are the
/// same as the baseline's, as vLLM's were.
#[test]
fn an_ngram_drafter_plans_like_the_server_without_one() {
    use shared::engines::vllm::{SpecMethod, Speculative};
    use shared::estimate::{GpuSlot, Scenario};
    use shared::startup::logged_scenario;
    let base = log("vllm-v1-0180-qwen3-8b-4090-48gb-eager-baseline");
    let ngram = log("vllm-v1-0180-qwen3-8b-4090-48gb-eager-ngram");
    assert_eq!(base.config.speculative, None);
    assert_eq!(ngram.config.speculative, Some(Speculative { method: SpecMethod::Ngram, tokens: Some(4) }));
    let m = shared::model::Model::preset("qwen3-8b").expect("preset");
    let planned = Scenario {
        gpus: vec![GpuSlot::custom("RTX 4090 48GB", 48 * shared::units::GIB)],
        engine: shared::engines::EngineKind::Vllm.with_defaults(),
        ..Scenario::default()
    };
    let plan = |l: &StartupLog| {
        let (s, taken) = logged_scenario(l, &m, planned.clone());
        let e = crate::estimate(&m, s.clone());
        let Some(shared::engines::EngineReport::Vllm(r)) = e.engine_report else { panic!("vLLM") };
        (s, taken, r)
    };
    let (_, _, a) = plan(&base);
    let (s, taken, b) = plan(&ngram);
    assert!(taken.iter().any(|t| t == "speculative decoding ngram:4"), "{taken:?}");
    assert!(matches!(s.engine, shared::engines::Engine::Vllm(o) if o.speculative.is_some()));
    assert_eq!(
        (a.per_gpu[0].weight_bytes, a.per_gpu[0].available_kv_bytes, a.kv_cache_tokens),
        (b.per_gpu[0].weight_bytes, b.per_gpu[0].available_kv_bytes, b.kv_cache_tokens)
    );
}

/// The vision tower's profile (issue 36, the `-mm` rules): Gemma 3's three
/// 0.19.0 logs (llm-d-planner@d3121e0) say "a budget of 8192 tokens, and
/// profiled with 32 image items"; planned from the logs, the plan's own
/// vLLM lines say the same. `--limit-mm-per-prompt` then moves it: one
/// image per prompt is still 32 items over 1,024 sequences, none is no
/// encoder profile and a smaller peak.
#[test]
fn gemma3_logs_profile_the_encoder_as_the_plan_does() {
    use shared::engines::vllm::MmLimits;
    use shared::engines::{Engine, EngineKind, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    use shared::startup::logged_scenario;
    for (name, preset) in [
        ("vllm-v1-0190-gemma3-4b-it-h100-debug-vlm", "gemma-3-4b"),
        ("vllm-v1-0190-gemma3-12b-it-h100-debug-vlm", "gemma-3-12b"),
        ("vllm-v1-0190-gemma3-27b-it-h100-debug-vlm", "gemma-3-27b"),
    ] {
        let path = format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("fixture");
        let logged = "Encoder cache will be initialized with a budget of 8192 tokens, and profiled with 32 image items";
        assert!(text.contains(logged), "{name}");
        let m = shared::model::Model::preset(preset).unwrap_or_else(|e| panic!("{preset}: {e}"));
        let h100 = shared::catalog::gpu("h100-sxm").expect("catalog");
        let planned = Scenario {
            gpus: vec![GpuSlot::from_catalog(h100)],
            engine: EngineKind::Vllm.with_defaults(),
            ..Scenario::default()
        };
        let (s, _) = logged_scenario(&log(name), &m, planned);
        let report = |s: Scenario| match crate::estimate(&m, s).engine_report {
            Some(EngineReport::Vllm(r)) => r,
            other => panic!("{other:?}"),
        };
        let r = report(s.clone());
        assert!(r.log_lines.iter().any(|l| l.starts_with(logged)), "{name}: {:?}", r.log_lines);
        let with = |limits: MmLimits| {
            let Engine::Vllm(o) = s.engine else { panic!("vLLM") };
            report(Scenario {
                engine: Engine::Vllm(shared::engines::vllm::Options { mm_limits: limits, ..o }),
                ..s.clone()
            })
        };
        let one = with(MmLimits { image: Some(1), video: None });
        assert!(one.log_lines.iter().any(|l| l.starts_with(logged)), "{name}");
        let none = with(MmLimits { image: Some(0), video: Some(0) });
        assert!(!none.log_lines.iter().any(|l| l.contains("Encoder cache")), "{name}");
        assert!(none.per_gpu[0].activation_bytes < r.per_gpu[0].activation_bytes, "{name}");
    }
}

/// vLLM 0.11 and 0.12 profile Qwen3-VL with one video of 12,288 tokens
/// counted as 153,600 (its 12.5 × "formatted" tokens), pad its output to
/// 153,600 rows of the main and three deepstack embeddings, and keep the
/// unpadded output and the fp32 pixels beside it: 2.8125 GiB per rank
/// (0.11.0 `gpu_model_runner.py::profile_run`, `qwen3_vl.py`). The 0.11
/// log prints the profile's line (the 0.12 excerpts leave it out; their
/// source says "profiled with 1 video item"); each plan prints the same one
/// and holds exactly those bytes over the plan with every modality off.
#[test]
fn qwen3_vl_logs_profile_a_padded_video_on_0_11_and_0_12() {
    use shared::engines::vllm::MmLimits;
    use shared::engines::{Engine, EngineKind, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    use shared::startup::logged_scenario;
    let m = shared::model::Model::preset("qwen3-vl-30b-a3b").expect("preset");
    assert_eq!(m.parameters(), 31_070_754_032, "the checkpoint's 882 tensors");
    let v = m.arch.vision.as_ref().expect("a vision tower");
    assert_eq!((v.deepstack, v.video.tokens, v.video.patches), (3, 12_288, 49_152));
    // M-RoPE: four times the 262,144 positions.
    assert_eq!(m.arch.text.extra.rope_table_positions, 1_048_576);
    for (name, gpu, rules) in [
        ("vllm-v1-0110-qwen3-vl-30b-a3b-3090-tp4", "rtx-3090", "0.11-sort"),
        ("vllm-v1-012-qwen3-vl-30b-a3b-h100-tp2-seqs256", "h100-sxm", "0.12-sort"),
        ("vllm-v1-012-qwen3-vl-30b-a3b-h100-tp2-seqs64", "h100-sxm", "0.12-sort"),
    ] {
        let path = format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("fixture");
        let logged =
            "Encoder cache will be initialized with a budget of 153600 tokens, and profiled with 1 video items";
        assert!(text.contains(logged) || rules == "0.12-sort", "{name}");
        let gpu = shared::catalog::gpu(gpu).expect("catalog");
        let planned = Scenario {
            gpus: vec![GpuSlot::from_catalog(gpu)],
            engine: EngineKind::Vllm.with_defaults(),
            ..Scenario::default()
        };
        let (s, _) = logged_scenario(&log(name), &m, planned);
        let Engine::Vllm(o) = s.engine else { panic!("vLLM") };
        assert_eq!(o.version.id(), rules, "{name}");
        let report = |limits: MmLimits| match crate::estimate(
            &m,
            Scenario { engine: Engine::Vllm(shared::engines::vllm::Options { mm_limits: limits, ..o }), ..s.clone() },
        )
        .engine_report
        {
            Some(EngineReport::Vllm(r)) => r,
            other => panic!("{other:?}"),
        };
        let r = report(MmLimits::default());
        assert!(r.log_lines.iter().any(|l| l.starts_with(logged)), "{name}: {:?}", r.log_lines);
        let off = report(MmLimits { image: Some(0), video: Some(0) });
        let held = r.per_gpu[0].activation_bytes - off.per_gpu[0].activation_bytes;
        // 153,600 × 8,192 × 2 + 12,288 × 8,192 × 2 + 49,152 × 1,536 × 4.
        assert_eq!(held, 2_516_582_400 + 201_326_592 + 301_989_888, "{name}");
        // Without the video, one image of 16,384 tokens, unpadded.
        let image = report(MmLimits { image: None, video: Some(0) });
        assert!(image.log_lines.iter().any(|l| l.contains("budget of 16384 tokens, and profiled with 1 image")));
    }
}

/// vLLM 0.11's Qwen2.5-VL video: as many largest-image frames as
/// `max_model_len` holds, two to a temporal patch, at most 14 frames
/// (0.11.0 `qwen2_vl.py::get_num_frames_with_most_features`); a context of
/// twice the image's 16,384 tokens makes a 32,768-token video, which the
/// profile runs instead of the image.
#[test]
fn qwen25_vl_video_on_0_11_fills_the_context() {
    use shared::engines::vllm::{Options, Version};
    use shared::engines::{Engine, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    let m = shared::model::Model::preset("qwen2.5-vl-7b").expect("preset");
    let h100 = shared::catalog::gpu("h100-sxm").expect("catalog");
    let line = |version: Version, max_model_len: u64| {
        let s = Scenario {
            gpus: vec![GpuSlot::from_catalog(h100)],
            engine: Engine::Vllm(Options { version, max_model_len: Some(max_model_len), ..Options::default() }),
            ..Scenario::default()
        };
        match crate::estimate(&m, s).engine_report {
            Some(EngineReport::Vllm(r)) => {
                r.log_lines.into_iter().find(|l| l.starts_with("Encoder cache")).expect("an encoder profile")
            }
            other => panic!("{other:?}"),
        }
    };
    assert!(line(Version::V0_11Mm, 32_768).contains("budget of 32768 tokens, and profiled with 1 video"));
    assert!(line(Version::V0_11Mm, 8_192).contains("budget of 16384 tokens, and profiled with 1 video"));
    // 14 frames at most: 7 temporal patches.
    assert!(line(Version::V0_11Mm, 128_000).contains("budget of 114688 tokens"));
    // The 0.24 rules keep the image-sized item.
    assert!(line(Version::V0_24Mm, 32_768).contains("budget of 16384 tokens"));
}

/// vLLM 0.13 – 0.17 (`0.17-mm`): Qwen3-VL's video counts its own 12,288
/// tokens, fewer than its largest image's 16,384, so the profile runs one
/// image, kept unpadded at the main and three deepstack embeddings' width
/// with its fp32 pixels (0.13.0 `profile_run`, `qwen3_vl.py`).
#[test]
fn qwen3_vl_on_0_13_profiles_an_image_kept_unpadded() {
    use shared::engines::vllm::{MmLimits, Options, Version};
    use shared::engines::{Engine, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    let m = shared::model::Model::preset("qwen3-vl-30b-a3b").expect("preset");
    let h100 = shared::catalog::gpu("h100-sxm").expect("catalog");
    let report = |mm_limits: MmLimits| {
        let s = Scenario {
            gpus: vec![GpuSlot::from_catalog(h100)],
            engine: Engine::Vllm(Options {
                version: Version::V0_17Mm,
                max_model_len: Some(65_536),
                mm_limits,
                ..Options::default()
            }),
            ..Scenario::default()
        };
        match crate::estimate(&m, s).engine_report {
            Some(EngineReport::Vllm(r)) => r,
            other => panic!("{other:?}"),
        }
    };
    let r = report(MmLimits::default());
    let line = r.log_lines.iter().find(|l| l.starts_with("Encoder cache")).expect("an encoder profile");
    assert!(line.contains("budget of 16384 tokens, and profiled with 1 image"), "{line}");
    let text = report(MmLimits { image: Some(0), video: Some(0) }).per_gpu[0].activation_bytes;
    // Kept: 16,384 × 8,192 × 2 (outputs) + 65,536 patches × 1,536 values × 4
    // (pixels); the tower's pass: 65,536 patches × 2 × (1,152 + 4,304) × 2
    // with the pixels. The peak is the larger.
    let (outputs, pixels, tower) = (268_435_456, 402_653_184, 1_430_257_664);
    assert_eq!(r.per_gpu[0].activation_bytes, (tower + pixels).max(text + outputs + pixels));
}

/// LLaVA-NeXT's largest image (vLLM's `get_image_size_with_most_features`
/// over `image_grid_pinpoints`): granite-vision-3.3-2b's 0.19.0 log
/// (llm-d-planner@d3121e0) says "a budget of 8289 tokens, and profiled with 1
/// image items". Its shape, a SigLIP tower of 384-pixel images in 14-pixel
/// patches (27 × 27 = 729 features, all kept: strategy "full") and pinpoints
/// of up to ten 384-pixel tiles, gives 8,289 for the ten-tile column
/// 3840 × 384: 729 + 270 × 27 unpadded features + 270 newlines. One such
/// image is over the 8,192-token budget, so the budget grows to it and the
/// profile takes one.
#[test]
fn llava_next_profiles_its_largest_pinpoint_as_granite_vision_logs() {
    use shared::engines::{EngineKind, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    let name = "vllm-v1-0190-granite-vision-33-2b-h100-debug-vlm";
    let text = std::fs::read_to_string(format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let logged = "Encoder cache will be initialized with a budget of 8289 tokens, and profiled with 1 image items";
    assert!(text.contains(logged));
    let pinpoints: Vec<String> = (1..=10u32)
        .flat_map(|rows| (1..=10 / rows).map(move |cols| format!("[{}, {}]", 384 * rows, 384 * cols)))
        .collect();
    let config = format!(
        r#"{{"model_type": "llava_next", "vision_feature_select_strategy": "full",
            "vision_feature_layer": [-24, -20, -12, -1], "image_grid_pinpoints": [{}],
            "text_config": {{"model_type": "granite", "hidden_size": 2048, "intermediate_size": 8192,
                "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
                "vocab_size": 49156, "tie_word_embeddings": true}},
            "vision_config": {{"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
                "num_hidden_layers": 27, "image_size": 384, "patch_size": 14, "vision_use_head": false}}}}"#,
        pinpoints.join(", ")
    );
    let m = shared::model::Model::from_config_json("granite-vision-3.3-2b", &config).unwrap_or_else(|e| panic!("{e}"));
    let v = m.arch.vision.as_ref().unwrap_or_else(|| panic!("a tower"));
    // 1 + 10 tiles of 729 patches; 8,289 tokens; 11 crops of 3 × 384² values.
    assert_eq!((v.item.patches, v.item.tokens, v.item.values), (11 * 729, 8289, 11 * 3 * 384 * 384));
    let h100 = shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("catalog"));
    let planned = Scenario {
        gpus: vec![GpuSlot::from_catalog(h100)],
        engine: EngineKind::Vllm.with_defaults(),
        ..Scenario::default()
    };
    let (s, _) = shared::startup::logged_scenario(&log(name), &m, planned);
    let r = match crate::estimate(&m, s).engine_report {
        Some(EngineReport::Vllm(r)) => r,
        other => panic!("{other:?}"),
    };
    assert!(r.log_lines.iter().any(|l| l.starts_with(logged)), "{:?}", r.log_lines);
}

/// LLaVA 1.5's and PaliGemma's largest image is the tower's own size: CLIP's
/// 24 × 24 patches and its class token, less the class token under the
/// "default" strategy (576 tokens); SigLIP's 16 × 16, all of them (256).
#[test]
fn llava_and_paligemma_profile_the_towers_own_image() {
    let read = |config: &str| {
        let m = shared::model::Model::from_config_json("m", config).unwrap_or_else(|e| panic!("{e}"));
        m.arch.vision.map(|v| (v.item.patches, v.item.tokens, v.item.values))
    };
    let llava = r#"{"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32064},
        "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096,
            "num_hidden_layers": 24, "image_size": 336, "patch_size": 14}}"#;
    assert_eq!(read(llava), Some((577, 576, 3 * 336 * 336)));
    let full = llava
        .replace(r#""model_type": "llava","#, r#""model_type": "llava", "vision_feature_select_strategy": "full","#);
    assert_eq!(read(&full), Some((577, 577, 3 * 336 * 336)));
    let odd = llava
        .replace(r#""model_type": "llava","#, r#""model_type": "llava", "vision_feature_select_strategy": "cls","#);
    let err = shared::model::Model::from_config_json("m", &odd).map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("vision_feature_select_strategy"), "{err}");
    let paligemma = r#"{"model_type": "paligemma", "text_config": {"model_type": "gemma", "hidden_size": 2048,
        "intermediate_size": 16384, "num_hidden_layers": 18, "num_attention_heads": 8, "num_key_value_heads": 1,
        "head_dim": 256, "vocab_size": 257216},
        "vision_config": {"model_type": "siglip_vision_model", "image_size": 224, "patch_size": 14}}"#;
    assert_eq!(read(paligemma), Some((256, 256, 3 * 224 * 224)));
    // One image per prompt: with 16 sequences the profile takes 16 images,
    // not the 32 that 8,192 tokens hold.
    use shared::engines::vllm::{Options, Version};
    use shared::engines::{Engine, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    let m = shared::model::Model::from_config_json("m", paligemma).unwrap_or_else(|e| panic!("{e}"));
    let h100 = shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("catalog"));
    let line = |max_num_seqs: u64| {
        let s = Scenario {
            gpus: vec![GpuSlot::from_catalog(h100)],
            engine: Engine::Vllm(Options {
                version: Version::V0_19Mm,
                max_num_seqs: Some(max_num_seqs),
                max_num_batched_tokens: Some(8192),
                ..Options::default()
            }),
            ..Scenario::default()
        };
        match crate::estimate(&m, s).engine_report {
            Some(EngineReport::Vllm(r)) => r.log_lines.into_iter().find(|l| l.starts_with("Encoder cache")),
            other => panic!("{other:?}"),
        }
    };
    let line = line(16).unwrap_or_else(|| panic!("an encoder profile"));
    assert!(line.contains("budget of 8192 tokens, and profiled with 16 image items"), "{line}");
}

/// A llama.cpp log's metadata read as the family it names: Gemma, Gemma 2
/// and 3 (tied heads, 256-wide heads, their windows), gpt-oss (experts,
/// sinks, a window) and Mixtral (llama.cpp's `llama` with experts), each
/// with its preset's parameter count, and Llama 3.2 3B's tied head from its
/// printed count. The figures are the GGUF keys of
/// each model's conversion (`{arch}.block_count`, …), which are its
/// `config.json`'s; Gemma 3 1B's are its log's
/// (`llamacpp-b4879-gemma3-1b-q80-vulkan-igpu`, "model params = 999.89 M").
#[test]
fn logged_metadata_reads_gemma_gpt_oss_and_mixtral_as_their_families() {
    use shared::startup::{LoggedModel, logged_model};
    let cases = [
        (
            "gemma-3-1b",
            LoggedModel {
                arch: Some("gemma3".into()),
                layers: Some(26),
                embedding: Some(1152),
                ffn: Some(6912),
                heads: Some(4),
                kv_heads: Some(1),
                head_k: Some(256),
                sliding_window: Some(512),
                vocab: Some(262_144),
                context: Some(32_768),
                ..LoggedModel::default()
            },
        ),
        (
            "gemma-2-9b",
            LoggedModel {
                arch: Some("gemma2".into()),
                layers: Some(42),
                embedding: Some(3584),
                ffn: Some(14_336),
                heads: Some(16),
                kv_heads: Some(8),
                head_k: Some(256),
                sliding_window: Some(4096),
                vocab: Some(256_000),
                ..LoggedModel::default()
            },
        ),
        (
            "gpt-oss-20b",
            LoggedModel {
                arch: Some("gpt-oss".into()),
                layers: Some(24),
                embedding: Some(2880),
                ffn: Some(2880),
                heads: Some(64),
                kv_heads: Some(8),
                head_k: Some(64),
                sliding_window: Some(128),
                experts: Some(32),
                experts_used: Some(4),
                expert_ffn: Some(2880),
                vocab: Some(201_088),
                ..LoggedModel::default()
            },
        ),
        // Llama 3.2 3B is `llama` with a tied head, which only the printed
        // count tells ("model params = 3.21 B").
        (
            "llama-3.2-3b",
            LoggedModel {
                arch: Some("llama".into()),
                layers: Some(28),
                embedding: Some(3072),
                ffn: Some(8192),
                heads: Some(24),
                kv_heads: Some(8),
                head_k: Some(128),
                vocab: Some(128_256),
                params_millions: Some(3_210),
                ..LoggedModel::default()
            },
        ),
        (
            "mixtral-8x7b",
            LoggedModel {
                arch: Some("llama".into()),
                layers: Some(32),
                embedding: Some(4096),
                ffn: Some(14_336),
                heads: Some(32),
                kv_heads: Some(8),
                head_k: Some(128),
                experts: Some(8),
                experts_used: Some(2),
                vocab: Some(32_000),
                ..LoggedModel::default()
            },
        ),
    ];
    for (preset, logged) in cases {
        let (m, _, notes) = logged_model(&logged).unwrap_or_else(|e| panic!("{preset}: {e}"));
        let want = shared::model::Model::preset(preset).unwrap_or_else(|e| panic!("{preset}: {e}"));
        assert_eq!(m.parameters(), want.parameters(), "{preset}");
        assert_eq!(m.arch.text.tie_word_embeddings, want.arch.text.tie_word_embeddings, "{preset}");
        let kv = |m: &shared::model::Model| {
            m.arch.text.layers.iter().map(|l| format!("{:?}", l.attention)).collect::<Vec<_>>()
        };
        assert_eq!(kv(&m), kv(&want), "{preset}: each layer's attention");
        assert!(!notes.iter().any(|n| n.contains("Llama-style")), "{preset}: {notes:?}");
        let said = notes.iter().any(|n| n.contains("`model params` count says so"));
        assert_eq!(said, preset == "llama-3.2-3b", "{preset}: {notes:?}");
    }
    // Gemma 3 1B's own log prints its count.
    let log = log("llamacpp-b4879-gemma3-1b-q80-vulkan-igpu");
    let logged = log.model.unwrap_or_else(|| panic!("metadata"));
    let (m, ..) = logged_model(&logged).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((m.parameters() + 5_000) / 10_000, 99_989, "999.89 M");
}

/// Each architecture a log's metadata names, read back from the figures a
/// log prints of a `config.json` transformers counts (`fixtures/arch`, the
/// counted fixtures): the same text-model parameters and the same attention
/// on every layer. The printed figures are taken from the config's own
/// reading (`n_layer`, `n_embd`, `n_ff`, heads, head width, window,
/// vocabulary, `model params` in millions).
#[test]
fn logged_metadata_of_counted_configs_reads_back_as_counted() {
    use shared::startup::{LoggedModel, logged_model};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/arch");
    for (gguf_arch, fixture) in [
        ("qwen3vl", "defaults-qwen3_vl"),
        ("qwen3vlmoe", "defaults-qwen3_vl_moe"),
        ("olmo2", "defaults-olmo2"),
        ("granite", "defaults-granite"),
        ("smollm3", "defaults-smollm3"),
        ("ernie4_5", "defaults-ernie4_5"),
        ("seed_oss", "defaults-seed_oss"),
        ("arcee", "defaults-arcee"),
        ("apertus", "defaults-apertus"),
        ("exaone", "defaults-exaone"),
        ("cohere2", "defaults-cohere2"),
        ("gpt-oss", "gpt-oss-20b"),
    ] {
        let text =
            std::fs::read_to_string(format!("{dir}/{fixture}.json")).unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let want = shared::model::Model::from_config_json(fixture, &text).unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let text_params = |m: &shared::model::Model| m.parameters() - m.arch.vision.as_ref().map_or(0, |v| v.params());
        let t = &want.arch.text;
        let window = t.layers.iter().find_map(|l| match l.attention {
            shared::arch::LayerAttention::Sliding(w) => Some(w),
            _ => None,
        });
        let moe = t.moe.as_ref();
        let logged = LoggedModel {
            arch: Some(gguf_arch.into()),
            layers: Some(t.layers.len() as u64),
            embedding: Some(t.hidden_size),
            ffn: Some(t.intermediate_size),
            heads: Some(t.num_heads),
            kv_heads: Some(t.num_kv_heads),
            head_k: Some(t.head_dim),
            sliding_window: window,
            vocab: Some(t.vocab_size),
            experts: moe.map(|m| m.num_experts),
            experts_used: moe.map(|m| m.experts_per_token),
            expert_ffn: moe.map(|m| m.expert_intermediate_size),
            params_millions: Some((text_params(&want) + 500_000) / 1_000_000),
            ..LoggedModel::default()
        };
        let (m, _, notes) = logged_model(&logged).unwrap_or_else(|e| panic!("{fixture}: {e}"));
        assert_eq!(text_params(&m), text_params(&want), "{fixture}: {notes:?}");
        let kinds = |m: &shared::model::Model| {
            m.arch.text.layers.iter().map(|l| format!("{:?}", l.attention)).collect::<Vec<_>>()
        };
        assert_eq!(kinds(&m), kinds(&want), "{fixture}");
    }
}

/// InternVL's remote code around a Qwen model (InternVL3-1B) takes images of
/// up to `max_dynamic_patch` 448-pixel tiles and a thumbnail, and video of
/// one-tile frames, 256 tokens each (vLLM 0.34.0 `internvl.py`). The budget
/// counts the video that fits `max_model_len` beside one largest image; the
/// profile runs one video as long as `max_model_len` alone (its dummy is
/// built without images). With video off, the largest image: 13 tiles.
#[test]
fn internvl_chat_profiles_a_video_of_one_tile_frames() {
    use shared::engines::{Engine, EngineKind, EngineReport};
    use shared::estimate::{GpuSlot, Scenario};
    let text =
        std::fs::read_to_string(format!("{}/tests/fixtures/arch/remote/internvl3-1b.json", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("fixture: {e}"));
    let m = shared::model::Model::from_config_json("internvl3-1b", &text).unwrap_or_else(|e| panic!("{e}"));
    let v = m.arch.vision.as_ref().unwrap_or_else(|| panic!("a tower"));
    let frame_tokens = (448 / 14) * (448 / 14) / 4;
    let tile_patches = (448 / 14) * (448 / 14) + 1;
    assert_eq!((v.item.patches, v.item.tokens), (13 * tile_patches, 13 * frame_tokens), "12 tiles and the thumbnail");
    assert_eq!((v.video.patches, v.video.tokens), (tile_patches, frame_tokens), "one frame");
    let h100 = shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("catalog"));
    let plan = |video: Option<u64>| {
        let Engine::Vllm(mut o) = EngineKind::Vllm.with_defaults() else { unreachable!() };
        o.mm_limits.video = video;
        let s = Scenario { gpus: vec![GpuSlot::from_catalog(h100)], engine: Engine::Vllm(o), ..Scenario::default() };
        let e = crate::estimate(&m, s);
        match e.engine_report {
            Some(EngineReport::Vllm(r)) => (r, e.activation_bytes),
            other => panic!("{other:?}"),
        }
    };
    let max_model_len = 32_768;
    let counted = (max_model_len - 13 * frame_tokens) / frame_tokens * frame_tokens;
    let (with_video, video_peak) = plan(None);
    assert_eq!(with_video.max_model_len, max_model_len);
    let line =
        format!("Encoder cache will be initialized with a budget of {counted} tokens, and profiled with 1 video items");
    assert!(with_video.log_lines.iter().any(|l| l.starts_with(&line)), "{line}\n{:?}", with_video.log_lines);
    let (images, image_peak) = plan(Some(0));
    let budget = images.max_num_batched_tokens.max(13 * frame_tokens);
    let items = budget / (13 * frame_tokens);
    let line = format!("a budget of {budget} tokens, and profiled with {items} image items");
    assert!(images.log_lines.iter().any(|l| l.contains(&line)), "{line}\n{:?}", images.log_lines);
    assert!(video_peak > image_peak, "128 frames outweigh two images");
}

/// No fixture's figures come from its own `# source:` line, however much of
/// its thread that line quotes.
#[test]
fn a_fixture_header_is_never_read_as_its_log() {
    let dir = format!("{}/tests/fixtures/startup", env!("CARGO_MANIFEST_DIR"));
    let mut read_logs = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.starts_with("# source:"), "{}: no `# source:` line", path.display());
        if let Some(l) = read(&text) {
            read_logs += 1;
            let from_header: Vec<_> = l.facts.iter().filter(|f| f.line == 1).collect();
            assert!(from_header.is_empty(), "{}: {from_header:?}", path.display());
        }
    }
    assert!(read_logs > 100, "{read_logs} logs read");
}

/// `'enable_lora': True` in vLLM's non-default args puts LoRA in the plan,
/// at vLLM's defaults (`LoRAConfig`: one adapter, rank 16) where the args
/// name no `max_loras` or `max_lora_rank`; a value they name is kept.
#[test]
fn vllm_enable_lora_in_the_non_default_args() {
    use shared::engines::{Engine, EngineKind, vllm};
    let l = log("vllm-v1-0221-qwen3-8b-fp16-lora-t4-tp2-eager");
    assert_eq!((l.config.enable_lora, l.config.max_loras, l.config.max_lora_rank), (Some(true), None, None));
    let (engine, taken) = shared::startup::logged_engine(&l, EngineKind::Vllm.with_defaults());
    let Engine::Vllm(o) = engine else { panic!("{engine:?}") };
    assert_eq!((o.max_loras, o.max_lora_rank), (vllm::DEFAULT_MAX_LORAS, vllm::DEFAULT_MAX_LORA_RANK));
    assert!(taken.iter().any(|t| t == "max_loras 1"), "{taken:?}");

    let args = "INFO [utils.py:278] non-default args: {'model': 'm', 'enable_lora': True, 'max_loras': 4, \
                'max_lora_rank': 64}\nINFO [gpu_worker.py:466] Available KV cache memory: 4.37 GiB";
    let l = read(args).expect("a vLLM log");
    let (engine, _) = shared::startup::logged_engine(&l, EngineKind::Vllm.with_defaults());
    let Engine::Vllm(o) = engine else { panic!("{engine:?}") };
    assert_eq!((o.max_loras, o.max_lora_rank), (4, 64));
    // A command line's `--enable-lora` alone, likewise.
    let cmd =
        shared::startup::read_command_line(&["vllm", "serve", "org/model", "--enable-lora"]).expect("a command line");
    let (engine, _) =
        shared::startup::configured_engine(LogEngine::Vllm, &cmd.config, EngineKind::Vllm.with_defaults());
    let Engine::Vllm(o) = engine else { panic!("{engine:?}") };
    assert_eq!((o.max_loras, o.max_lora_rank), (1, 16));
}

/// vLLM 0.10 captures `[1, 2, 4]` and 8 to `min(2 × max_num_seqs, 512)` by
/// 8: a 0.10.2 log with `max_num_seqs` 1 prints its capture list in its
/// engine configuration, and its graphs took 0.14 GiB, not the 67 sizes'.
#[test]
fn vllm_0_10_graphs_follow_max_num_seqs() {
    use shared::engines::vllm::Version;
    let name = "vllm-v1-0102-qwen25-3b-fp16-rtx4090-seqs1";
    let path = format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let listed = text
        .split("\"cudagraph_capture_sizes\":[")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap_or_else(|| panic!("{name}: no capture list"));
    let logged = listed.split(',').count() as u64;
    let l = log(name);
    let (seqs, tokens) = (l.config.max_num_seqs.expect("max_num_seqs"), l.config.max_num_batched_tokens);
    let version = Version::for_release(l.config.version.as_deref().expect("a release")).expect("rules");
    assert_eq!((version, seqs, logged), (Version::V0_10, 1, 3));
    assert_eq!(version.cuda_graphs(seqs, tokens.unwrap_or(8192)), logged);
    // The defaults: 256 sequences, the whole 67-size list.
    assert_eq!(version.cuda_graphs(256, 8192), 67);
    assert_eq!(Version::V0_10.cuda_graphs(64, 8192), 3 + 16);
    assert_eq!(Version::V0_10.cuda_graphs(256, 256), 3 + 32);
}

/// SGLang's lines name no release, but its log lines are dated: a log dated
/// before 0.4.7.post1 sized `mem_fraction_static` from GPU memory ran the
/// 0.4.0 – 0.4.7 table by TP degree, which the plan then takes (a 0.4.4
/// log: 0.88 at TP 1, its pool within 1 %, where the newest default leaves
/// 6 % fewer tokens); a later log keeps the newest rules. Either way the
/// plan says which rules it used.
#[test]
fn sglang_rules_by_the_logs_date() {
    use shared::engines::{Engine, EngineKind, sglang};
    use shared::estimate::{GpuSlot, Scenario};
    use shared::model::Model;
    let m = Model::preset("llama-3.1-8b").expect("preset");
    let plan = |l: &StartupLog, gpu: &str| {
        let slot = GpuSlot::from_catalog(shared::catalog::gpu(gpu).expect("a GPU"));
        let planned = Scenario { engine: EngineKind::Sglang.with_defaults(), gpus: vec![slot], ..Scenario::default() };
        shared::startup::logged_scenario(l, &m, planned)
    };
    let old = log("sglang-044-llama31-8b-h100-tp1-fa3");
    assert_eq!(old.config.date, Some((2025, 3, 25)));
    let (s, taken) = plan(&old, "h100-sxm");
    let Engine::Sglang(o) = s.engine else { panic!("{:?}", s.engine) };
    assert_eq!((o.version, o.mem_fraction_static), (sglang::Version::LATEST, Some(0.88)));
    assert!(
        taken.iter().any(|t| t.starts_with("SGLang rules 0.5.23-alloc with mem_fraction_static 0.88")),
        "{taken:?}"
    );
    let e = shared::estimate::estimate(&m, s.validate_for(&m).expect("valid"));
    let (rows, _) = shared::startup::reconcile(&old, &e);
    let pool = rows.iter().find(|r| r.term == "KV pool tokens").expect("a pool row");
    assert!(pool.error_permille().is_some_and(|e| e.abs() <= 10), "{pool:?}");

    // 0.4.7.post1 – 0.5.2 reserved 2.9 GiB of a 24 GB GPU at TP 1.
    let mid = log("sglang-049-llama31-8b-24gb-docker-tp1");
    assert_eq!(mid.config.date, Some((2025, 7, 14)));
    let (s, taken) = plan(&mid, "rtx-4090");
    let Engine::Sglang(o) = s.engine else { panic!("{:?}", s.engine) };
    assert_eq!(o.mem_fraction_static, Some(0.879));
    assert!(
        taken
            .iter()
            .any(|t| t.starts_with("SGLang rules 0.5.23-alloc with mem_fraction_static 0.879, SGLang 0.4.7.post1")),
        "{taken:?}"
    );
    // After 0.5.3 (built 2025-10-06) the newest rules size it.
    let later = log("sglang-057-llama32-3b-48gb-mfs02-hicache");
    assert_eq!(later.config.date, Some((2026, 2, 9)));
    let (_, taken) = plan(&later, "l40s");
    assert!(taken.iter().any(|t| t == "SGLang rules 0.5.23-alloc (the log names no release)"), "{taken:?}");
    // The table itself, as 0.4.0 – 0.4.7's server_args.py gives it.
    let table: Vec<f64> = [1, 2, 3, 4, 7, 8, 15, 16].map(sglang::default_mem_fraction_0_4).to_vec();
    assert_eq!(table, [0.88, 0.87, 0.87, 0.85, 0.85, 0.81, 0.81, 0.79]);
}

/// SGLang 0.4.7.post1 – 0.5.2 kept (2.8 + TP × PP / 10) GiB of a GPU under
/// 35 GiB outside `mem_fraction_static` (`server_args.py::__post_init__`),
/// not the newest rules' chunk-and-graph reserve: Qwen3-0.6B on an RTX 5080
/// (16,303 MiB), logged 2025-08-08 with no fraction given, ran 0.818 and
/// pooled 104,273 tokens. Planned by its date, within 3 %; by the newest
/// default (0.751) the plan had 6.5 % fewer.
#[test]
fn sglang_mid_2025_logs_take_the_gpu_memory_reserve_of_their_release() {
    use shared::engines::{Engine, EngineKind, sglang};
    use shared::estimate::{GpuSlot, Scenario};
    use shared::model::Model;
    assert_eq!(sglang::default_mem_fraction_0_4_7_post1(16_303, 1, false), 0.818);
    // H100 at TP 8: (9.5 + 4) GiB of 81,559 MiB; data-parallel attention 4 GiB more.
    assert_eq!(sglang::default_mem_fraction_0_4_7_post1(81_559, 8, false), 0.831);
    assert_eq!(sglang::default_mem_fraction_0_4_7_post1(81_559, 8, true), 0.78);
    let m = Model::preset("qwen3-0.6b").expect("preset");
    let l = log("sglang-qwen3-06b-rtx5080-2508");
    assert_eq!(l.config.date, Some((2025, 8, 8)));
    let slot = GpuSlot::from_catalog(shared::catalog::gpu("rtx-5080").expect("a GPU"));
    let planned = Scenario { engine: EngineKind::Sglang.with_defaults(), gpus: vec![slot], ..Scenario::default() };
    let (s, _) = shared::startup::logged_scenario(&l, &m, planned);
    let Engine::Sglang(o) = s.engine else { panic!("{:?}", s.engine) };
    assert_eq!(o.mem_fraction_static, Some(0.818));
    let e = shared::estimate::estimate(&m, s.validate_for(&m).expect("valid"));
    let (rows, _) = shared::startup::reconcile(&l, &e);
    let pool = rows.iter().find(|r| r.term == "KV pool tokens").expect("a pool row");
    assert!(pool.error_permille().is_some_and(|e| e.abs() <= 30), "{pool:?}");
}

/// SGLang sizes its pool from the memory free when it starts. Over the log's
/// own figures (free after the weights and the weights, whose sum was free
/// before them) its rule gives the logged pool to the token on an idle H100
/// (0.4.4); on a 24 GB desktop card (0.4.9) the logged pool implies the
/// share the run kept back (0.879, where the newest rules take less) and the
/// plan's GPU has about a GiB more free than the card had: memory the desktop
/// held, which the note names.
#[test]
fn sglang_notes_the_pool_from_the_logs_own_memory() {
    use shared::engines::EngineKind;
    use shared::estimate::{GpuSlot, Scenario};
    use shared::model::Model;
    let m = Model::preset("llama-3.1-8b").expect("preset");
    let note = |name: &str, gpu: &str| {
        let l = log(name);
        let slot = GpuSlot::from_catalog(shared::catalog::gpu(gpu).expect("a GPU"));
        let planned = Scenario { engine: EngineKind::Sglang.with_defaults(), gpus: vec![slot], ..Scenario::default() };
        let (s, _) = shared::startup::logged_scenario(&l, &m, planned);
        let e = shared::estimate::estimate(&m, s.validate_for(&m).expect("valid"));
        let (_, notes) = shared::startup::reconcile(&l, &e);
        notes.into_iter().find(|n| n.starts_with("SGLang's rule over the log's own memory")).expect("the note")
    };
    let idle = note("sglang-044-llama31-8b-h100-tp1-fa3", "h100-sxm");
    assert!(idle.contains("gives a pool of 442,771 tokens against 442,750 logged (+0.0 %)"), "{idle}");
    let desktop = note("sglang-049-llama31-8b-24gb-docker-tp1", "rtx-4090");
    assert!(desktop.contains("a mem_fraction_static of 0.879"), "{desktop}");
    assert!(desktop.contains("more than this one had: memory the GPU held"), "{desktop}");
}

/// vLLM 0.11's wheel ships no `triton_kernels`, so gpt-oss's MXFP4 experts
/// run Marlin on Hopper and load Marlin's padding: the 0.11.2 log's
/// `Model loading took 65.9651 GiB` is planned the same with its `Using
/// Marlin backend` line taken out (the paste most people share starts at
/// the error). From 0.12 the wheel ships them and Hopper runs Triton.
#[test]
fn gpt_oss_on_hopper_loads_marlins_padding_before_vllm_0_12() {
    use shared::engines::{Engine, EngineKind, vllm};
    use shared::estimate::{GpuSlot, Scenario};
    use shared::model::Model;
    let name = "vllm-v1-0112-gpt-oss-120b-h100-u096";
    let path = format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let without_kernel: String = text.lines().filter(|l| !l.contains("Marlin")).map(|l| format!("{l}\n")).collect();
    let m = Model::preset("gpt-oss-120b").expect("preset");
    let weights = |text: &str| {
        let l = read(text).expect("a log");
        let slot = GpuSlot::from_catalog(shared::catalog::gpu("h100-sxm").expect("a GPU"));
        let planned = Scenario {
            engine: EngineKind::Vllm.with_defaults(),
            gpus: vec![slot],
            weights: m.default_format(),
            ..Scenario::default()
        };
        let (s, _) = shared::startup::logged_scenario(&l, &m, planned);
        let Engine::Vllm(o) = s.engine else { panic!("vLLM") };
        let e = shared::estimate::estimate(&m, s.validate_for(&m).expect("valid"));
        let (rows, _) = shared::startup::reconcile(&l, &e);
        let row = rows.into_iter().find(|r| r.term == "weights").expect("a weights row");
        (o.version, row.error_permille().expect("both"), e.per_gpu[0].budget.weight_bytes)
    };
    let (version, error, with_line) = weights(&text);
    let (_, _, without_line) = weights(&without_kernel);
    assert_eq!(version, vllm::Version::for_release("0.11.2").expect("a release"));
    assert!(error.abs() <= 2, "{error}‰");
    assert_eq!(without_line, with_line, "Marlin's padding without the line");
}

/// The vLLM rules a log is planned with, and what was taken from it.
fn vllm_rules(l: &StartupLog) -> (shared::engines::vllm::Version, Vec<String>) {
    use shared::engines::{Engine, EngineKind};
    use shared::estimate::Scenario;
    let Ok(m) = shared::model::Model::preset("llama-3.1-8b") else { panic!("the preset") };
    let planned = Scenario { engine: EngineKind::Vllm.with_defaults(), ..Scenario::default() };
    let (s, taken) = shared::startup::logged_scenario(l, &m, planned);
    let Engine::Vllm(o) = s.engine else { panic!("{:?}", s.engine) };
    (o.version, taken)
}

/// A log that prints no release is planned with the rules of the releases
/// whose logger calls sit where it says (`[gpu_worker.py:298]`): every V1
/// fixture whose banner names a release of the table keeps that release
/// among them with the banner cut, and where they narrow to one rule set it
/// is the banner's.
#[test]
fn vllm_call_sites_name_the_rules_of_a_log_without_its_banner() {
    use shared::engines::vllm::Version;
    let dir = format!("{}/tests/fixtures/startup", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("vllm-v1-"))
        .collect();
    names.sort();
    let (mut checked, mut narrowed) = (0, 0);
    for name in names {
        let text = std::fs::read_to_string(format!("{dir}/{name}")).expect("fixture");
        let Some(whole) = read(&text) else { continue };
        let Some(release) = whole.config.version.clone() else { continue };
        // Releases the table was read from (not 0.9, not a dev build).
        if !shared::startup::CallSites::READ_FROM.contains(&release.as_str()) {
            continue;
        }
        // The lines that print the release: the API server's, the engine
        // configuration's `LLM engine (v…)`, 0.18's banner.
        let cut: Vec<&str> = text
            .lines()
            .filter(|l| !(l.contains("API server version") || l.contains("LLM engine (v") || l.contains('█')))
            .collect();
        let cut = read(&cut.join("\n")).expect("the log without its banner");
        assert_eq!(cut.config.version, None, "{name}");
        let sites = cut.config.call_sites.unwrap_or_else(|| panic!("{name}: no call site read"));
        assert!(sites.releases().any(|r| r == release), "{name}: {release} not among {}", sites.shown());
        checked += 1;
        let (with, _) = vllm_rules(&whole);
        let (without, taken) = vllm_rules(&cut);
        assert_eq!(with, Version::for_release(&release).expect("a release"), "{name}");
        if let [one] = sites.rule_sets()[..] {
            narrowed += 1;
            assert_eq!((one, without), (with, with), "{name}: {taken:?}");
            // A log that fits the table's first release may be older.
            let older = if sites.releases().next() == Some("0.10.0") { " or an earlier release" } else { "" };
            let said = format!("vLLM rules {} ({}{older} by the log's call sites)", with.id(), sites.shown());
            assert!(taken.contains(&said), "{name}: {taken:?}");
        } else {
            // Several rule sets: the newest release's the sites leave, as the
            // plan's newest rules are among those ruled out.
            let newest = sites.releases().last().and_then(Version::for_release).expect("a release");
            assert_eq!(without, newest, "{name}: {taken:?}");
            assert!(taken.iter().any(|t| t.contains(&format!("its call sites fit {}", sites.shown()))), "{taken:?}");
        }
    }
    // 74 fixtures of 0.10.0 – 0.22.1; all but a one-line 0.19.0 paste
    // (0.11.0, 0.18.0 – 0.20.2) narrow to one rule set.
    assert!(checked >= 74 && narrowed >= 73, "{checked} checked, {narrowed} narrowed to one rule set");
}

/// The motivating paste (vllm#27508: gpt-oss-120b on one H100, the error and
/// the line before it, no banner): `gpu_worker.py:298` is where 0.10.2 –
/// 0.11.0 log the KV memory and `core.py:708` where only 0.11.0 logs the
/// failure, so 0.11's rules plan it; a few lines of the 0.12.0 fixture
/// name 0.12; lines of 0.10.0 and 0.19.0 together name no release and take
/// no rules.
#[test]
fn vllm_call_sites_of_a_paste() {
    use shared::engines::vllm::Version;
    let paste = log("vllm-v1-gpt-oss-120b-h100-kv-no-banner");
    let sites = paste.config.call_sites.expect("call sites");
    assert_eq!((sites.shown().as_str(), sites.lines()), ("0.11.0", 2));
    let (version, taken) = vllm_rules(&paste);
    assert_eq!(version, Version::V0_11Sort);
    assert!(taken.contains(&"vLLM rules 0.11-sort (0.11.0 by the log's call sites)".to_owned()), "{taken:?}");

    let lines = |name: &str, phrases: &[&str]| -> String {
        let path = format!("{}/tests/fixtures/startup/{name}.txt", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("fixture");
        // The first line of each phrase.
        let kept: Vec<&str> =
            phrases.iter().filter_map(|p| text.lines().find(|l| l.contains(p) && l.contains(".py:"))).collect();
        assert_eq!(kept.len(), phrases.len(), "{name}: {kept:?}");
        kept.join("\n")
    };
    let twelve = lines(
        "vllm-v1-012-qwen3-30b-a3b-rtxpro6000-eager",
        &["Model loading took", "Available KV cache memory", "GPU KV cache size"],
    );
    let twelve = read(&twelve).expect("a log");
    let sites = twelve.config.call_sites.expect("call sites");
    assert!(sites.releases().all(|r| r.starts_with("0.12.")) && sites.releases().count() >= 1, "{}", sites.shown());
    assert_eq!(vllm_rules(&twelve).0, Version::V0_12Sort);

    let old = lines("vllm-v1-0100-qwen3-32b-h100-tp4-u095", &["Available KV cache memory"]);
    let new = lines("vllm-v1-0190-qwen25-7b-h100-debug", &["Available KV cache memory"]);
    let mixed = read(&format!("{old}\n{new}")).expect("a log");
    let sites = mixed.config.call_sites.expect("call sites");
    assert_eq!((sites.shown().as_str(), sites.lines()), ("none", 2));
    let (version, taken) = vllm_rules(&mixed);
    assert_eq!(version, Version::LATEST);
    assert!(
        taken.contains(
            &"vLLM rules 0.34 (the log names no release, and its call sites fit none of 0.10.0 – 0.34.0)".to_owned()
        ),
        "{taken:?}"
    );
}

/// ik_llama.cpp's MLA summary names the latent cache's type, which `-ctk`
/// sets (ik_llama.cpp#437: `c^KV (q8_0)`); without it the plan kept f16.
#[test]
fn ik_mla_summary_names_the_latent_cache_type() {
    let text = "llama_new_context_with_model: mla_attn   = 3\n\
        llama_kv_cache_init:      CUDA0 KV buffer size =   592.89 MiB\n\
        llama_new_context_with_model: KV self size  = 1166.62 MiB, c^KV (q8_0): 1166.62 MiB, kv^T: not used\n";
    let log = shared::startup::read(text).expect("a llama.cpp log");
    assert_eq!((log.config.cache_type_k.as_deref(), log.config.cache_type_v.as_deref()), (Some("q8_0"), None));
    // A printed `type_k` wins; a summary alone names both.
    let text = "llama_kv_cache_unified: kv_size = 16384, type_k = 'q8_0', type_v = 'q4_0', n_layer = 94\n\
        llama_kv_cache_unified: KV self size  = 1598.00 MiB, K (q8_0):  799.00 MiB, V (q4_0):  799.00 MiB\n";
    let log = shared::startup::read(text).expect("a llama.cpp log");
    assert_eq!((log.config.cache_type_k.as_deref(), log.config.cache_type_v.as_deref()), (Some("q8_0"), Some("q4_0")));
    let text = "llama_context: KV self size  = 1598.00 MiB, K (q8_0):  799.00 MiB, V (q8_0):  799.00 MiB\n";
    let log = shared::startup::read(text).expect("a llama.cpp log");
    assert_eq!(log.config.cache_type_v.as_deref(), Some("q8_0"));
}

/// Vulkan names its devices in its own words (`ggml_vulkan: 0 = NAME (driver)
/// | …`, or `using device Vulkan0 (NAME)`), read against the catalog as
/// CUDA's are.
#[test]
fn vulkan_devices_are_named_from_the_catalog() {
    use shared::engines::EngineKind;
    use shared::estimate::Scenario;
    let text = "ggml_vulkan: Found 1 Vulkan devices:\n\
        ggml_vulkan: 0 = AMD Radeon RX 7900 XTX (RADV NAVI31) (radv) | uma: 0 | fp16: 1 | warp size: 64\n\
        llama_model_load_from_file_impl: using device Vulkan0 (AMD Radeon RX 7900 XTX (RADV NAVI31)) - 24000 MiB free\n\
        llama_kv_cache_unified:    Vulkan0 KV buffer size =   512.00 MiB\n";
    let log = shared::startup::read(text).expect("a llama.cpp log");
    assert_eq!(log.config.devices, ["AMD Radeon RX 7900 XTX"]);
    let m = shared::model::Model::preset("llama-3.1-8b").expect("preset");
    let planned = Scenario { engine: EngineKind::LlamaCpp.with_defaults(), ..Scenario::default() };
    let (s, taken) = shared::startup::logged_scenario(&log, &m, planned);
    assert_eq!(s.gpus[0].name, "Radeon RX 7900 XTX", "{taken:?}");
    // The loader's line alone names it too (Docker Model Runner prints no
    // `ggml_vulkan: N =` list).
    let log = shared::startup::read(&text.replace("ggml_vulkan: 0 =", "ggml_vulkan: x =")).expect("a log");
    assert_eq!(log.config.devices, ["AMD Radeon RX 7900 XTX (RADV NAVI31)"]);
}

/// The plan of a vLLM or SGLang log on `gpu` (the CLI's default GPU
/// unless a test names another) with `preset`, as `headroom diagnose`
/// reads it, and what was taken from the log.
fn planned_from(
    l: &StartupLog,
    preset: &str,
    gpu: &str,
) -> (shared::model::Model, shared::estimate::Scenario, Vec<String>) {
    use shared::estimate::{GpuSlot, Scenario};
    let m = shared::model::Model::preset(preset).unwrap_or_else(|e| panic!("{e}"));
    let g = shared::catalog::gpu(gpu).unwrap_or_else(|| panic!("no GPU {gpu}"));
    let planned = Scenario {
        gpus: vec![GpuSlot::from_catalog(g)],
        engine: l.engine.kind().with_defaults(),
        weights: m.default_format(),
        kv_dtype: l.engine.kind().default_kv_dtype(&m, m.default_format()),
        ..Scenario::default()
    };
    let (s, taken) = shared::startup::logged_scenario(l, &m, planned);
    (m, s, taken)
}

/// The logged figure of `term` on the first GPU beside the plan's, as
/// `headroom diagnose` sets them.
fn logged_and_predicted(
    l: &StartupLog,
    m: &shared::model::Model,
    s: shared::estimate::Scenario,
    term: &str,
) -> (shared::startup::Amount, shared::startup::Amount) {
    let (rows, _) = shared::startup::reconcile(l, &crate::estimate(m, s));
    let r = rows.iter().find(|r| r.term == term).unwrap_or_else(|| panic!("no {term} in {rows:?}"));
    (r.logged, r.predicted.unwrap_or_else(|| panic!("{term}: no prediction")))
}

/// Within `permille` of each other (bytes or tokens alike).
fn close(a: shared::startup::Amount, b: shared::startup::Amount, permille: u64) -> bool {
    use shared::startup::Amount;
    let n = |x: Amount| match x {
        Amount::Bytes(v) | Amount::Tokens(v) | Amount::Blocks(v) | Amount::Hundredths(v) | Amount::Permille(v) => v,
    };
    n(a).abs_diff(n(b)).saturating_mul(1000) <= n(a).saturating_mul(permille)
}

/// A vLLM log names its GPU where its fused-MoE kernel misses a config
/// file (`…/E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json`,
/// `fused_moe.py::get_config_file_name`): the plan runs on that catalog
/// GPU, on every rank, not on the plan's default RTX 4090.
#[test]
fn a_log_names_its_gpu_by_the_moe_kernels_config_file() {
    let h100 = log("vllm-v1-0221-qwen3-30b-a3b-fp8online-h100");
    assert_eq!(h100.config.device_name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    let (m, s, taken) = planned_from(&h100, "qwen3-30b-a3b", "rtx-4090");
    assert_eq!(s.gpus.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["H100 SXM"]);
    assert!(taken.iter().any(|t| t == "GPU H100 SXM (the log's NVIDIA H100 80GB HBM3)"), "{taken:?}");
    let (logged, predicted) = logged_and_predicted(&h100, &m, s, "available KV cache memory");
    assert!(close(logged, predicted, 10), "{logged:?} vs {predicted:?}");
    // The A100 40GB PCIe is the catalog's A100 40GB of the same memory, on
    // all four ranks of the TP-4 launch.
    let a100 = log("vllm-v1-0112-qwen3-next-80b-a100-40gb-tp4-negkv");
    assert_eq!(a100.config.device_name.as_deref(), Some("NVIDIA A100-PCIE-40GB"));
    let (_, s, _) = planned_from(&a100, "qwen2.5-7b", "rtx-4090");
    assert_eq!(s.gpus.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["A100 40GB SXM"; 4]);
}

/// A log that names no GPU (no device total, no device name) is set
/// against the plan's, and the diagnosis says so, and that the log's
/// rank held more than that GPU has (gpt-oss-20b on an A800 80GB beside
/// the default RTX 4090), rather than comparing in silence.
#[test]
fn a_log_that_names_no_gpu_says_which_gpu_it_is_set_against() {
    for name in ["vllm-v1-0110-gpt-oss-20b-a800", "sglang-054-gpt-oss-20b-a800"] {
        let l = log(name);
        assert_eq!(l.config.device_name, None, "{name}");
        // The log's rank held more than the RTX 4090 has: the plan takes a
        // GPU that holds it, and says so.
        let (_, s, taken) = planned_from(&l, "gpt-oss-20b", "rtx-4090");
        assert_ne!(s.gpus[0].name, "GeForce RTX 4090", "{name}");
        let note = taken
            .iter()
            .find(|t| t.contains("(the log names none, but one of its GPUs held at least"))
            .unwrap_or_else(|| panic!("{taken:?}"));
        assert!(note.contains("more than the plan's GeForce RTX 4090 has"), "{note}");
        // On a GPU of the log's size it says which, without the warning.
        let (_, _, taken) = planned_from(&l, "gpt-oss-20b", "a100-80gb-pcie");
        let note = taken.iter().find(|t| t.starts_with("no GPU")).unwrap_or_else(|| panic!("{taken:?}"));
        assert!(note.ends_with("the plan's A100 80GB PCIe"), "{note}");
    }
    // A log that names its total or its device says nothing of the kind.
    let (_, _, taken) = planned_from(&log("vllm-v1-0221-qwen3-30b-a3b-fp8online-h100"), "qwen3-30b-a3b", "rtx-4090");
    assert!(!taken.iter().any(|t| t.starts_with("no GPU")), "{taken:?}");
}

/// vLLM picks `max_num_batched_tokens` and `max_num_seqs` as one tier by
/// GPU (`arg_utils.py::_set_default_args`): the A800's logged 8192 is the
/// ≥ 70 GiB non-A100 tier, whose 1024 sequences the plan takes even on the
/// catalog's A100 (which vLLM gives 2048 and 256); the A5000's 2048 comes
/// with 256. A log whose args set either takes nothing.
#[test]
fn vllm_takes_max_num_seqs_from_the_tier_of_its_logged_batch() {
    use shared::engines::Engine;
    let a800 = log("vllm-v1-0110-gpt-oss-20b-a800");
    assert_eq!((a800.config.max_num_batched_tokens, a800.config.tier_max_num_seqs), (Some(8192), Some(1024)));
    let (m, s, taken) = planned_from(&a800, "gpt-oss-20b", "a100-80gb-pcie");
    assert!(matches!(s.engine, Engine::Vllm(o) if o.max_num_seqs == Some(1024)));
    assert!(
        taken.iter().any(|t| t == "max_num_seqs 1024 (vLLM's default beside max_num_batched_tokens 8192)"),
        "{taken:?}"
    );
    let (logged, predicted) = logged_and_predicted(&a800, &m, s, "available KV cache memory");
    assert!(close(logged, predicted, 10), "{logged:?} vs {predicted:?}");
    let a5000 = log("vllm-v1-0130-qwen25-14b-awq-a5000");
    assert_eq!((a5000.config.max_num_batched_tokens, a5000.config.tier_max_num_seqs), (Some(2048), Some(256)));
    let h100 = log("vllm-v1-0221-qwen3-30b-a3b-fp8online-h100");
    assert_eq!((h100.config.max_num_seqs, h100.config.tier_max_num_seqs), (Some(64), None));
}

/// The log's `quantization=` loads a 16-bit preset in that format (vLLM's
/// online FP8 of a bf16 checkpoint, an AWQ checkpoint of the preset's
/// shapes), as a launch's `--quantization` does; a checkpoint's own
/// quantisation is kept.
#[test]
fn a_logged_quantization_loads_the_preset_in_its_format() {
    use shared::formats::WeightFormat;
    use shared::startup::quantization_format;
    for (name, preset, gpu, format) in [
        ("vllm-v1-0221-qwen3-30b-a3b-fp8online-h100", "qwen3-30b-a3b", "h100-sxm", "fp8"),
        ("vllm-v1-0130-qwen25-14b-awq-a5000", "qwen2.5-14b", "rtx-a5000", "awq-int4"),
    ] {
        let l = log(name);
        let (m, s, taken) = planned_from(&l, preset, gpu);
        assert_eq!(s.weights.id(), format, "{name}");
        assert!(
            taken.iter().any(|t| t.starts_with(&format!("weights {format} (the log's quantization="))),
            "{taken:?}"
        );
        let (logged, predicted) = logged_and_predicted(&l, &m, s.clone(), "weights");
        assert!(close(logged, predicted, 15), "{name}: weights {logged:?} vs {predicted:?}");
        let (logged, predicted) = logged_and_predicted(&l, &m, s, "available KV cache memory");
        assert!(close(logged, predicted, 15), "{name}: KV {logged:?} vs {predicted:?}");
    }
    let id = |q: &str| quantization_format(q).map(WeightFormat::id);
    assert_eq!(id("gptq_marlin").as_deref(), Some("gptq-int4"));
    assert_eq!(id("awq_marlin").as_deref(), Some("awq-int4"));
    assert_eq!(id("bitsandbytes").as_deref(), Some("nf4-dq"));
    assert_eq!(id("compressed-tensors"), None);
}

/// Intel's AutoRound int4 (`'quantization': 'auto_round'`, club-3090's
/// Qwen3.6-27B recipes; vLLM loads it with `INCConfig`, GPTQ-packed) is a
/// 4-bit format: the 27B on two RTX 3090s was planned in fp16, which
/// leaves no KV cache at all (-100 %); as gptq-int4 the log's 11.05 GiB
/// of KV memory is +0.6 %.
#[test]
fn an_autoround_log_plans_its_int4_weights() {
    use shared::engines::{Engine, vllm::Speculative};
    use shared::estimate::{GpuSlot, Scenario};
    let l = log("vllm-v1-02x-qwen36-27b-autoround-int4-2x3090-tp2-mtp3");
    assert_eq!(l.config.quantization.as_deref(), Some("auto_round"));
    // Qwen3.6-27B is Qwen3.5-27B's shapes; the log names neither TP nor the drafter.
    let m = shared::model::Model::preset("qwen3.5-27b").unwrap_or_else(|e| panic!("{e}"));
    let g = shared::catalog::gpu("rtx-3090").unwrap_or_else(|| panic!("no rtx-3090"));
    // The report's setup, which the cut args line no longer shows: fp8_e5m2
    // cache, max_num_seqs 2, max_num_batched_tokens 8192, MTP 3, TP 2.
    let mut engine = l.engine.kind().with_defaults();
    if let Engine::Vllm(o) = &mut engine {
        o.speculative = Some(Speculative::parse("mtp:3").unwrap_or_else(|e| panic!("{e}")));
        o.max_num_seqs = Some(2);
        o.max_num_batched_tokens = Some(8192);
    }
    let planned = Scenario {
        gpus: vec![GpuSlot::from_catalog(g); 2],
        tp: 2,
        engine,
        weights: m.default_format(),
        kv_dtype: shared::kv::KvDtype::Fp8,
        ..Scenario::default()
    };
    let (s, taken) = shared::startup::logged_scenario(&l, &m, planned);
    assert_eq!(s.weights.id(), "gptq-int4", "{taken:?}");
    assert!(taken.iter().any(|t| t == "weights gptq-int4 (the log's quantization=auto_round)"), "{taken:?}");
    let (logged, predicted) = logged_and_predicted(&l, &m, s, "available KV cache memory");
    println!("auto_round: available KV logged {logged:?}, predicted {predicted:?}");
    assert!(close(logged, predicted, 10), "KV {logged:?} vs {predicted:?}");
    let id = |q: &str| shared::startup::quantization_format(q).map(shared::formats::WeightFormat::id);
    for method in ["auto_round", "auto-round", "inc", "INC"] {
        assert_eq!(id(method).as_deref(), Some("gptq-int4"), "{method}");
    }
}

/// A log whose `model=` is a variant of a preset's repo (a dated or tuned
/// release, a quantised copy) is planned with the preset of its base name:
/// the one 16-bit preset whose name, the variant words aside, is the same.
/// The exact repo stays the first choice, and a name no preset shares, or a
/// fine-tune under another name, is not guessed.
#[test]
fn a_logged_variant_of_a_preset_is_planned_by_its_base_name() {
    let preset = |model: &str, quantization: &str| {
        let text = format!(
            "INFO 12-01 10:00:00 [core.py:77] Initializing a V1 LLM engine (v0.22.1) with config: model='{model}', \
             speculative_config=None, tokenizer='{model}', dtype=torch.bfloat16, max_seq_len=8192, \
             tensor_parallel_size=1, quantization={quantization}\n\
             INFO 12-01 10:00:09 [kv_cache_utils.py:1087] GPU KV cache size: 464,656 tokens\n"
        );
        let log = shared::startup::read(&text).unwrap_or_else(|| panic!("not a log: {text}"));
        (shared::startup::logged_preset(&log).map(|p| p.id), shared::startup::logged_base_preset(&log).map(|p| p.id))
    };
    assert_eq!(preset("Qwen/Qwen3-30B-A3B-Instruct-2507", "None"), (None, Some("qwen3-30b-a3b")));
    assert_eq!(preset("/models/Qwen2.5-14B-Instruct-AWQ", "awq"), (None, Some("qwen2.5-14b")));
    // Not its GPTQ preset: the plain one, in the format the log names.
    assert_eq!(preset("Qwen/Qwen2.5-7B-Instruct-AWQ", "awq_marlin"), (None, Some("qwen2.5-7b")));
    assert_eq!(preset("Qwen/Qwen3-8B-FP8", "fp8").0, Some("qwen3-8b-fp8"));
    assert_eq!(preset("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "None"), (None, None));
    assert_eq!(preset("my-org/my-model", "None"), (None, None));
    // A quantised copy is planned only in a format the log names, of the
    // bits its name says: gptq's is 4-bit, and compressed-tensors is none.
    assert_eq!(preset("Qwen/Qwen2.5-14B-Instruct-GPTQ-Int8", "gptq"), (None, None));
    assert_eq!(preset("Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4", "gptq_marlin"), (None, Some("qwen2.5-14b")));
    assert_eq!(preset("RedHatAI/Qwen2.5-14B-Instruct-FP8-dynamic", "compressed-tensors"), (None, None));
    assert_eq!(preset("Qwen/Qwen2.5-14B-Instruct-AWQ", "None"), (None, None));
    // Intel's AutoRound copies name the method, and their bits.
    assert_eq!(preset("Intel/Qwen2.5-14B-Instruct-AutoRound-Int4", "inc"), (None, Some("qwen2.5-14b")));
    assert_eq!(preset("Intel/Qwen2.5-14B-Instruct-int4-AutoRound", "auto_round"), (None, Some("qwen2.5-14b")));
    assert_eq!(preset("Intel/Qwen2.5-14B-Instruct-int8-AutoRound", "auto_round"), (None, None));
}

/// What a llama.cpp log printed is what ran: a pasted command's `-ngl 99`
/// (a habit kept on a CPU-only build) does not move the layers the log says
/// stayed on the CPU (`offloaded 0/49`), nor does a `-ngl 20` shorten a log's
/// full offload.
#[test]
fn a_logs_offloaded_layers_win_over_a_pasted_ngl() {
    use shared::engines::{Engine, EngineKind};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/startup");
    let ngl = |file: &str, from: &str, to: &str| {
        let text = std::fs::read_to_string(format!("{dir}/{file}.txt")).unwrap_or_else(|e| panic!("{e}"));
        let text = text.replacen(from, to, 1);
        assert!(text.contains(to), "{file}: {to}");
        let log = shared::startup::read(&text).unwrap_or_else(|| panic!("{file}: not a log"));
        match shared::startup::logged_engine(&log, EngineKind::LlamaCpp.with_defaults()).0 {
            Engine::LlamaCpp(o) => o.n_gpu_layers,
            other => panic!("{other:?}"),
        }
    };
    let cpu = ngl("llamacpp-b5273-qwen3-30b-a3b-q5km-cpu-only-win", "-t 8 -c 4096", "-t 8 -ngl 99 -c 4096");
    assert_eq!(cpu, Some(0));
    let full = ngl("llamacpp-b5274-glm-z1-32b-iq4xs-3090ti-fa", "    -ngl 99 ", "    -ngl 20 ");
    assert_eq!(full, None);
}

/// A log that names its GPUs by names the catalog does not hold (an RX 580
/// and an RX 560 on Vulkan; an H800 in vLLM's fused-MoE config file) says
/// so and which GPU its figures are set against, instead of comparing
/// against the plan's in silence.
#[test]
fn a_logs_uncatalogued_gpu_is_said() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/startup");
    let taken = |file: &str, from: &str, to: &str| {
        let text = std::fs::read_to_string(format!("{dir}/{file}.txt")).unwrap_or_else(|e| panic!("{e}"));
        let log = shared::startup::read(&text.replace(from, to)).unwrap_or_else(|| panic!("{file}: not a log"));
        let model = shared::model::Model::preset("llama-3.1-8b").unwrap_or_else(|e| panic!("{e}"));
        let planned = shared::estimate::Scenario { engine: log.engine.kind().with_defaults(), ..Default::default() };
        shared::startup::logged_scenario(&log, &model, planned).1.join("; ")
    };
    let vulkan = taken("llamacpp-dmr-b1-phi4mini-q4km-vulkan-2gpu-rx580-rx560-oom", "", "");
    assert!(vulkan.contains("is not in the catalog") && vulkan.contains("RX 580"), "{vulkan}");
    let h800 = taken("vllm-v1-0221-qwen3-30b-a3b-fp8online-h100", "NVIDIA_H100_80GB_HBM3", "NVIDIA_H800");
    assert!(h800.contains("(NVIDIA H800) is not in the catalog"), "{h800}");
    let h100 = taken("vllm-v1-0221-qwen3-30b-a3b-fp8online-h100", "", "");
    assert!(!h100.contains("catalog"), "{h100}");
}

/// An engine configuration line cut off after `model='…'` (club-3090#652
/// quotes it so) keeps what the non-default args before it set: the
/// 131,072-token context, the fp8 cache and modelopt's quantisation, which
/// the cut line lacks. Read as defaults instead, the plan ran 32,768 tokens
/// of a bf16 cache and predicted 337,920 tokens against the logged 569,878.
#[test]
fn a_cut_off_engine_line_keeps_what_the_args_set() {
    use shared::estimate::Scenario;
    use shared::formats::WeightFormat;
    let l = log("vllm-v1-0240-qwen36-35b-a3b-nvfp4-5090-kvfp8");
    let c = &l.config;
    assert_eq!(c.version.as_deref(), Some("0.24.0"));
    assert_eq!(c.model.as_deref(), Some("~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4"));
    assert_eq!((c.max_model_len, c.kv_cache_dtype.as_deref()), (Some(131_072), Some("fp8")));
    assert_eq!((c.quantization.as_deref(), c.max_num_seqs), (Some("modelopt"), Some(1)));
    // The model is Qwen3.6, of Qwen3.5-35B-A3B's shapes; modelopt names no
    // scheme, so the NVFP4 checkpoint's format is given as `--weights` is.
    let (m, s, taken) = planned_from(&l, "qwen3.5-35b-a3b", "rtx-5090");
    let s = Scenario { weights: WeightFormat::Nvfp4, ..s };
    assert!(taken.iter().any(|t| t.contains("max_model_len 131072")), "{taken:?}");
    let (logged, predicted) = logged_and_predicted(&l, &m, s, "KV cache tokens");
    println!("KV cache tokens: logged {logged:?}, predicted {predicted:?}");
    assert!(close(logged, predicted, 250), "{logged:?} vs {predicted:?}");
}

/// A 0.18+ log's head names its model before any engine configuration
/// line: the banner's `model` row and the non-default args' `'model'` and
/// `'model_tag'` (`vllm serve openai/gpt-oss-20b`), read as `model=` is, so
/// the excerpt that stops there is planned with its preset. A drafter's
/// `'model'` inside `'speculative_config'` names no model of the log.
#[test]
fn a_vllm_logs_banner_and_args_name_its_model() {
    use shared::startup::logged_preset;
    let l = log("vllm-v1-019-gpt-oss-20b-a100-u065");
    assert_eq!(l.config.model.as_deref(), Some("openai/gpt-oss-20b"));
    assert_eq!(logged_preset(&l).map(|p| p.id), Some("gpt-oss-20b"));
    let kv = "(EngineCore pid=9) INFO 04-18 20:24:04 [gpu_worker.py:436] Available KV cache memory: 36.56 GiB\n";
    let named = |head: &str| {
        let l = read(&format!("{head}\n{kv}")).unwrap_or_else(|| panic!("not a log: {head}"));
        l.config.model
    };
    let banner = "(APIServer pid=1) INFO 04-18 20:22:57 [utils.py:299] █▄█▀ █ █ █ █  model openai/gpt-oss-20b";
    assert_eq!(named(banner).as_deref(), Some("openai/gpt-oss-20b"));
    let tag = "(APIServer pid=1) INFO [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-8B', 'port': 8000}";
    assert_eq!(named(tag).as_deref(), Some("Qwen/Qwen3-8B"));
    let drafter = "INFO [utils.py:233] non-default args: {'speculative_config': {'method': 'eagle3', 'model': \
                   'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B'}, 'model': 'meta-llama/Llama-3.1-8B-Instruct'}";
    assert_eq!(named(drafter).as_deref(), Some("meta-llama/Llama-3.1-8B-Instruct"));
    let only_drafter = "INFO [utils.py:233] non-default args: {'speculative_config': {'model': 'x/draft'}}";
    assert_eq!(named(only_drafter), None);
}

/// A log that runs on Metal (`using device Metal (Apple M2) - 10922 MiB
/// free`, a build before ggml-metal numbered its devices) names its chip,
/// and Metal's working set names the Mac (a 16 GB M2 keeps 10922 MiB, an
/// 8 GB one 5461): the plan runs on the catalog's 16 GB M2, not on the
/// default CUDA card. A chip the catalog lacks (an M5, an M4 Pro with
/// 24 GB) runs on an Apple GPU of the working set the log printed.
#[test]
fn a_metal_log_runs_on_its_mac() {
    let l = log("llamacpp-nogit-deepseek-coder-v2-lite-q4km-metal-m2-ngl24");
    assert_eq!(l.config.devices, ["Apple M2"]);
    assert_eq!(l.config.devices_free, [Some(10922 << 20)]);
    let m = shared::model::Model::preset("llama-3.1-8b").unwrap_or_else(|e| panic!("{e}"));
    let planned = || shared::estimate::Scenario { engine: l.engine.kind().with_defaults(), ..Default::default() };
    let (s, taken) = shared::startup::logged_scenario(&l, &m, planned());
    let taken = taken.join("; ");
    assert!(taken.contains("GPUs Mac (M2, 16 GB) by its 10.67 GiB working set (the devices the log names)"), "{taken}");
    assert!(!taken.contains("not in the catalog"), "{taken}");
    assert_eq!(s.gpus.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["Mac (M2, 16 GB)"]);
    for (file, chip, mib) in [
        ("llamacpp-b8164-gptoss20b-metal-m5-131k", "Apple M5", 18185),
        ("llamacpp-b8999-qwen35-9b-q4ks-metal-m4pro-262k-q8kv", "Apple M4 Pro", 16383),
    ] {
        let l = log(file);
        let (s, taken) = shared::startup::logged_scenario(&l, &m, planned());
        let g = &s.gpus[0];
        assert_eq!(
            (g.name.as_str(), g.capacity_bytes, g.vendor),
            (chip, mib << 20, Some(shared::catalog::GpuVendor::Apple))
        );
        assert!(taken.iter().any(|t| t.contains("working set, not a catalog Mac")), "{taken:?}");
    }
}

/// A ROCm log names its RX 6600 (`Device 0: AMD Radeon RX 6600, gfx1030`,
/// under HSA_OVERRIDE_GFX_VERSION): the plan runs on the catalog's RX 6600,
/// whose total is the one the log prints, not on the default CUDA card.
#[test]
fn a_rocm_log_of_an_rx_6600_runs_on_the_catalogs() {
    let l = log("ollama-rocm-gemma2-2b-q40-rx6600-np2-swa-full");
    assert_eq!(l.config.devices, ["AMD Radeon RX 6600"]);
    let m = shared::model::Model::preset("gemma-2-2b").unwrap_or_else(|e| panic!("{e}"));
    let planned = shared::estimate::Scenario { engine: l.engine.kind().with_defaults(), ..Default::default() };
    let (s, taken) = shared::startup::logged_scenario(&l, &m, planned);
    assert_eq!(s.gpus.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["Radeon RX 6600"]);
    assert!(taken.iter().any(|t| t == "GPUs Radeon RX 6600 (the devices the log names)"), "{taken:?}");
    assert!(!taken.iter().any(|t| t.contains("not in the catalog")), "{taken:?}");
}

/// SGLang prints `quantization=None` in its server args when it detects a
/// checkpoint's own quantisation; `Load weight end. … quant=awq, bits=4`
/// (0.5.23 `model_runner.py`) and the kernel it converts to say which. The
/// AWQ copy of Qwen2.5-7B is then planned alone, by its base name, in AWQ.
#[test]
fn sglang_reads_a_detected_quantisation_from_its_weights_line() {
    let l = log("sglang-qwen25-7b-awq-16gb-nograph");
    assert_eq!(l.config.quantization.as_deref(), Some("awq"));
    assert_eq!(shared::startup::logged_base_preset(&l).map(|p| p.id), Some("qwen2.5-7b"));
    let (m, s, taken) = planned_from(&l, "qwen2.5-7b", "rtx-4080");
    assert_eq!(s.weights.id(), "awq-int4", "{taken:?}");
    assert!(taken.iter().any(|t| t == "weights awq-int4 (the log's quantization=awq)"), "{taken:?}");
    let (logged, predicted) = logged_and_predicted(&l, &m, s, "weights");
    assert!(close(logged, predicted, 15), "{logged:?} vs {predicted:?}");
    // Bits beside the method: an 8-bit GPTQ is not the method's usual 4-bit;
    // without `quant=`, the kernel line names it; the server args win.
    let quant = |lines: &str| read(lines).and_then(|l| l.config.quantization);
    let end = "[2026-09-24 17:32:49] Load weight end. elapsed=0.80 s, type=Qwen2ForCausalLM";
    let tail = "avail mem=9.83 GB, mem usage=5.25 GB.";
    assert_eq!(quant(&format!("{end}, quant=gptq, bits=8, {tail}\n")).as_deref(), Some("gptq-int8"));
    assert_eq!(quant(&format!("{end}, quant=fp8, fmt=e4m3, {tail}\n")).as_deref(), Some("fp8"));
    let kernel =
        "[2026-09-24 17:32:41] The model is convertible to gptq_marlin during runtime. Using gptq_marlin kernel.";
    assert_eq!(quant(&format!("{kernel}\n{end}, {tail}\n")).as_deref(), Some("gptq_marlin"));
    let args = "[2026-09-24 17:32:41] server_args=ServerArgs(model_path='x', quantization=awq, tp_size=1)";
    assert_eq!(quant(&format!("{args}\n{end}, quant=gptq, bits=4, {tail}\n")).as_deref(), Some("awq"));
}

/// SGLang after 0.5.10 renamed its graph line (`Capture target decode CUDA
/// graph end. elapsed=…, mem usage=…`), prints its recurrent-state pool
/// (`Mamba Cache is allocated. … conv_state size: …, ssm_state size: …`)
/// and one `KV size:` for a pool not split in K and V: each is read, the
/// pool shown as one figure.
#[test]
fn sglang_reads_its_newer_graph_state_and_pool_lines() {
    let l = log("sglang-nightly-ling3-tiny-newformat");
    let pool = Figure::KvPool { tokens: 1_933_682, bytes: gib("12.45GiB"), k_bytes: None, v_bytes: None };
    let state = Figure::StatePool { sequences: 614, bytes: gib("0.38GiB") + gib("10.81GiB") };
    let graphs = Figure::CudaGraphs { bytes: gib("0.45GiB") };
    for f in [pool, state, graphs, Figure::Free { after: Stage::CudaGraphs, bytes: gib("72.65GiB") }] {
        assert!(figures(&l).contains(&f), "{f:?} not in {:?}", figures(&l));
    }
    assert_eq!(pool.describe(), "KV pool: 1,933,682 tokens, 12.45 GiB");
    assert_eq!(state.describe(), "recurrent-state pool: 614 requests, 11.19 GiB");
}

/// SGLang's rows set the CUDA graphs it captured beside the plan (which
/// keeps them inside what `mem_fraction_static` holds back, so predicts
/// none of its own) and the pool's bytes beside the plan's, not only its
/// tokens. Llama-3.2-3B at mem_fraction_static 0.2 on a 48 GB GPU.
#[test]
fn sglang_rows_compare_the_pools_bytes_and_show_its_graphs() {
    use shared::startup::Amount;
    let l = log("sglang-057-llama32-3b-48gb-mfs02-hicache");
    let (m, s, _) = planned_from(&l, "llama-3.2-3b", "l40s");
    let (rows, _) = shared::startup::reconcile(&l, &crate::estimate(&m, s.clone()));
    let graphs = rows.iter().find(|r| r.term == "CUDA graphs").unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!((graphs.logged, graphs.predicted), (Amount::Bytes(gib("0.33GiB")), None));
    let (logged, predicted) = logged_and_predicted(&l, &m, s, "KV pool");
    assert_eq!(logged, Amount::Bytes(2 * gib("1.34GiB")));
    assert!(close(logged, predicted, 80), "{logged:?} vs {predicted:?}");
}

/// vLLM's estimate of its CUDA graphs can be negative (`Estimated CUDA
/// graph memory: -0.81 GiB total`, a difference of free memory); from 0.21
/// it comes out of the KV budget as it is, so it added 0.81 GiB to this
/// pool. It is read signed, shown with its sign, and said beside the plan.
#[test]
fn vllm_reads_a_negative_cuda_graph_estimate() {
    let l = log("vllm-v1-0231-qwen36-27b-nvfp4-mtp2-spark");
    let estimate = Figure::CudaGraphEstimate { bytes: -signed(gib("0.81GiB")) };
    let fact = l.facts.iter().find(|f| f.figure == estimate).unwrap_or_else(|| panic!("{:?}", figures(&l)));
    assert_eq!(fact.line, 48);
    assert_eq!(estimate.describe(), "CUDA graphs (estimated before the KV cache): -829.44 MiB");
    let (m, s, _) = planned_from(&l, "qwen3.5-27b", "dgx-spark");
    let (rows, notes) = shared::startup::reconcile(&l, &crate::estimate(&m, s.clone()));
    assert!(!rows.iter().any(|r| r.line == 48), "{rows:?}");
    let note = notes.iter().find(|n| n.starts_with("line 48: ")).unwrap_or_else(|| panic!("{notes:?}"));
    assert!(note.contains("at -829.44 MiB before sizing the KV cache"), "{note}");
    assert!(note.contains("so the log's added 829.44 MiB to its KV cache where the plan's takes "), "{note}");
    // The figure named is the one the plan's KV budget takes (vLLM's
    // estimate as the 0.33-graphs rules model it), not the modelled capture.
    let e = crate::estimate(&m, s);
    let Some(shared::engines::EngineReport::Vllm(r)) = &e.engine_report else { panic!("no vLLM report") };
    let k = &r.per_gpu[0];
    assert!(k.subtracted_graph_bytes > 0 && k.subtracted_graph_bytes != k.cuda_graph_bytes, "{k:?}");
    let named = shared::units::format_bytes(k.subtracted_graph_bytes, shared::units::UnitSystem::Binary);
    assert!(note.contains(&format!("the plan at {named};")), "{note}");
    // A bare minus or a figure past i64 is no figure, and no panic.
    for line in ["Estimated CUDA graph memory: - GiB total", "Estimated CUDA graph memory: -99999999999999 GiB"] {
        let text = format!(
            "INFO 12-01 10:00:00 [gpu_worker.py:400] {line}\nINFO 12-01 10:00:01 [kv_cache_utils.py:1087] GPU KV cache size: 1,024 tokens\n"
        );
        let l = read(&text).unwrap_or_else(|| panic!("no log"));
        assert!(!figures(&l).iter().any(|f| matches!(f, Figure::CudaGraphEstimate { .. })), "{line}");
    }
}

/// From 0.21 vLLM's `Estimated CUDA graph memory` is what its KV budget
/// takes for the graphs: the row sets it against what the plan's budget
/// takes (vLLM's estimate as the 0.33-graphs rules model it), and the
/// capture's own line against the modelled capture. vLLM 0.22.1,
/// Qwen3-30B-A3B with FP8 applied at load on one H100, PIECEWISE=19
/// (largest=128), FULL=11 (largest=64): estimate 0.14 GiB, capture 0.22
/// GiB, KV cache 42.54 GiB. The estimate as modelled: the piecewise first
/// capture (92 MiB, 11.25 MiB of activations at 128 tokens, one graph of 48
/// layers × 176 KiB = 8.25 MiB) beats FULL's (32.25 MiB of FA3 splits at 64
/// and a graph), plus 18 + 10 graphs of 8.25 MiB: 342.5 MiB, where the
/// per-layer rule of the 0.24-mm rules took 256 KiB × 30 graphs × 48
/// layers = 360 MiB. Both run above the log: 0.22's second samples are
/// smaller than 0.19's (docs/measurements.md).
#[test]
fn vllm_sets_its_graph_estimate_against_what_the_budget_takes() {
    use shared::startup::Amount;
    let l = log("vllm-v1-0221-qwen3-30b-a3b-fp8online-h100");
    let (m, s, _) = planned_from(&l, "qwen3-30b-a3b", "h100-sxm");
    let e = crate::estimate(&m, s.clone());
    let Some(shared::engines::EngineReport::Vllm(r)) = &e.engine_report else { panic!("no vLLM report") };
    assert_eq!(r.version, shared::engines::vllm::Version::V0_33Graphs);
    let k = &r.per_gpu[0];
    let (rows, _) = shared::startup::reconcile(&l, &e);
    let row = |line| rows.iter().find(|r| r.line == line).unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(row(66).predicted, Some(Amount::Bytes(k.subtracted_graph_bytes)));
    assert_eq!(row(75).predicted, Some(Amount::Bytes(k.cuda_graph_bytes)));
    let mib = shared::units::MIB;
    assert_eq!(k.subtracted_graph_bytes, 342 * mib + mib / 2, "{k:?}");
    // The older rules' per-layer figure, for the same launch.
    let mut older = s;
    if let shared::engines::Engine::Vllm(o) = &mut older.engine {
        o.version = shared::engines::vllm::Version::V0_24Mm;
    }
    let e = crate::estimate(&m, older);
    let Some(shared::engines::EngineReport::Vllm(r)) = &e.engine_report else { panic!("no vLLM report") };
    assert_eq!(r.per_gpu[0].subtracted_graph_bytes, 360 * mib);
}

/// A log that names no GPU but whose own figures show it held more than the
/// plan's GPU has is not set against that GPU: the plan takes the smallest
/// catalog GPU that holds what the log held, and says it is a lower bound.
/// vLLM 0.16's bitsandbytes Qwen2.5-7B held 5.46 GiB of weights and 28.65
/// GiB of KV cache at utilization 0.9 (at least 37.9 GiB: an A100 40GB, not
/// the default RTX 4090's 23.64); SGLang's Llama-3.2-3B had 44.11 GiB free
/// as its weights began to load (a 48 GB GPU, where the RTX 4090 left its
/// 0.2 share no pool at all).
#[test]
fn a_log_that_held_more_than_the_plans_gpu_is_set_against_a_gpu_that_holds_it() {
    use shared::startup::Amount;
    let bnb = log("vllm-v1-0160-qwen25-7b-bnb4-colab");
    let (m, s, taken) = planned_from(&bnb, "qwen2.5-7b", "rtx-4090");
    assert_eq!(s.gpus.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["A100 40GB SXM"], "{taken:?}");
    let said = taken
        .iter()
        .find(|t| t.starts_with("GPU A100 40GB SXM (the log names none"))
        .unwrap_or_else(|| panic!("{taken:?}"));
    assert!(said.contains("at least 34.11 GiB (weights 5.46 GiB and KV cache 28.65 GiB)"), "{said}");
    assert!(said.contains("a lower bound rather than the log's GPU"), "{said}");
    assert!(!taken.iter().any(|t| t.starts_with("no GPU")), "{taken:?}");
    let (logged, predicted) = logged_and_predicted(&bnb, &m, s, "available KV cache memory");
    assert!(close(logged, predicted, 20), "{logged:?} vs {predicted:?}");

    let sglang = log("sglang-057-llama32-3b-48gb-mfs02-hicache");
    assert!(figures(&sglang).contains(&Figure::Free { after: Stage::Init, bytes: gib("44.11GiB") }));
    let (m, s, taken) = planned_from(&sglang, "llama-3.2-3b", "rtx-4090");
    // The L40S and the L40 report the same memory; the catalog lists the L40S first.
    assert_eq!(s.gpus[0].name, "L40S", "{taken:?}");
    assert!(taken.iter().any(|t| t.contains("at least 44.11 GiB (free as the weights began to load)")), "{taken:?}");
    let (logged, predicted) = logged_and_predicted(&sglang, &m, s, "KV pool tokens");
    assert!(matches!(predicted, Amount::Tokens(t) if t > 0), "{predicted:?}");
    assert!(close(logged, predicted, 80), "{logged:?} vs {predicted:?}");

    // A plan whose GPU holds what the log held keeps it; a log that held
    // less says only which GPU it is set against.
    let (_, s, _) = planned_from(&bnb, "qwen2.5-7b", "a100-80gb-sxm");
    assert_eq!(s.gpus[0].name, "A100 80GB SXM");
    let awq = log("sglang-qwen25-7b-awq-16gb-nograph");
    let (_, s, taken) = planned_from(&awq, "qwen2.5-7b", "rtx-4090");
    assert_eq!(s.gpus[0].name, "GeForce RTX 4090");
    assert!(
        taken
            .iter()
            .any(|t| t == "no GPU: the log names none, so its figures are set against the plan's GeForce RTX 4090"),
        "{taken:?}"
    );
}

/// Engines print the fractions they compute in full: SGLang 0.5.8 on ROCm
/// chose `mem_fraction_static=0.8260405859375` for Kimi-K2.5 on eight
/// MI355X. It is read (to the thousandth), not dropped for its digits,
/// which left the plan at the default and its pool +10.2 %.
#[test]
fn sglang_reads_a_computed_fraction_printed_in_full() {
    let l = log("sglang-058post1-kimi-k25-mi355x-tp8-rocm");
    assert_eq!(l.config.mem_fraction_static_permille, Some(826), "{:?}", l.config);
}

/// DeepSeek sparse attention in FP8 stores its MLA latent with scales: 512
/// fp8 values, 4 fp32 scales and the 64 RoPE values in bf16, 656 bytes
/// (SGLang `calculate_mla_kv_cache_dim`, vLLM `fp8_ds_mla`), plus the
/// indexer's 132-byte key. GLM-5-FP8 on SGLang 0.5.8.post1 (eight MI355X,
/// `--kv-cache-dtype fp8_e4m3`) allocated 186.77 GB for 3,262,823 tokens:
/// 61,464 bytes a token = 78 × (656 + 132); the plan said 78 × (576 + 132)
/// = 55,224 (-10.1 %).
#[test]
fn glm5_fp8_kv_keeps_flashmlas_scaled_latent_as_sglang_logs() {
    let l = log("sglang-058post1-glm5-fp8-mi355x-tp8-kvfp8");
    assert_eq!(l.config.kv_cache_dtype.as_deref(), Some("fp8_e4m3"));
    let (tokens, bytes) = l
        .first(|f| match f {
            Figure::KvPool { tokens, bytes, .. } => Some((*tokens, *bytes)),
            _ => None,
        })
        .map(|(_, pool)| pool)
        .unwrap_or_else(|| panic!("no KV pool line"));
    let path = format!("{}/tests/fixtures/arch/defaults-glm_moe_dsa.json", env!("CARGO_MANIFEST_DIR"));
    let config = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let m = shared::model::Model::from_config_json("glm-5", &config).unwrap_or_else(|e| panic!("{e}"));
    let kv = shared::kv::KvDtype::parse("fp8_e4m3").unwrap_or_else(|e| panic!("{e}"));
    let per_token = shared::kv::bytes_per_token(&shared::kv::layer_costs(&m.arch.text, kv, 8));
    let logged = bytes / tokens;
    println!("GLM-5 fp8 KV: {per_token} bytes a token, logged {logged}");
    assert_eq!(per_token, 78 * (656 + 132));
    // The log's GB are GiB to two decimals: within 0.1 %.
    assert!(per_token.abs_diff(logged) * 1000 <= logged, "{per_token} vs {logged}");
}

/// A vLLM log on ROCm (`[rocm.py:…]` lines, `Automatically detected platform
/// rocm.`) ran on an AMD GPU: where it names none, the plan's NVIDIA GPU is
/// said to be wrong, and where its figures bound one, the smallest AMD GPU
/// that holds them is taken. The real log (vLLM 0.19.1+rocm721 under
/// Unsloth on an MI300X) stops after its weights.
#[test]
fn vllm_on_rocm_is_not_set_against_an_nvidia_gpu() {
    let l = log("vllm-v1-0191-rocm-mi300x-lora-qwen25-7b-unsloth");
    assert!(l.config.rocm);
    let (_, s, taken) = planned_from(&l, "qwen2.5-7b", "rtx-4090");
    assert_eq!(s.gpus[0].name, "GeForce RTX 4090");
    assert!(taken.iter().any(|t| t.contains("the log ran on ROCm, an AMD GPU: set the GPU it ran on")), "{taken:?}");
    let text = "INFO 04-21 12:32:10 [__init__.py:235] Automatically detected platform rocm.\n\
                INFO 04-21 12:32:12 [rocm.py:496] Using ROCM_ATTN backend out of potential backends: ['ROCM_ATTN'].\n\
                INFO 04-21 12:32:20 [gpu_model_runner.py:2000] Model loading took 14.43 GiB memory and 5.1 seconds\n\
                INFO 04-21 12:32:40 [gpu_worker.py:300] Available KV cache memory: 150.00 GiB\n\
                INFO 04-21 12:32:41 [kv_cache_utils.py:1087] GPU KV cache size: 2,801,280 tokens\n";
    let l = shared::startup::read(text).unwrap_or_else(|| panic!("no log"));
    let (_, s, taken) = planned_from(&l, "qwen2.5-7b", "rtx-4090");
    let g = shared::catalog::gpu_named(&s.gpus[0].name)
        .or_else(|| shared::catalog::gpus().iter().find(|g| g.name == s.gpus[0].name));
    assert_eq!(g.map(|g| g.vendor), Some(shared::catalog::GpuVendor::Amd), "{:?} {taken:?}", s.gpus[0].name);
    assert!(taken.iter().any(|t| t.contains("it ran on ROCm, an AMD GPU")), "{taken:?}");
}

/// SGLang's benchmarks print no `server_args`: the command pasted above
/// the log names the model (`python -m sglang.bench_one_batch --model-path
/// ibm-granite/granite-4.0-h-micro --batch 4`, a pull request's output).
#[test]
fn sglang_takes_the_model_from_a_pasted_benchmark_command() {
    let l = log("sglang-bench-one-batch-granite4-h-micro");
    assert_eq!(l.config.model.as_deref(), Some("ibm-granite/granite-4.0-h-micro"), "{:?}", l.config);
}

/// Real vLLM logs of the two models that had no preset now name theirs:
/// Qwen3-Next 80B-A3B by a local path ending in the repo's name (vLLM
/// 0.11.2, four A100 40GB), whose rank then holds the weights the plan
/// gives it; Gemma 4 26B-A4B by its repo as vLLM 0.17's config line names
/// it (`core.py`, `Initializing a V1 LLM engine … with config:
/// model='google/gemma-4-26B-A4B-it'`, a TPU run that failed before any
/// memory line: stored-code index id 69444423577). The Thinking and base
/// releases share the shapes, by their base names.
#[test]
fn vllm_logs_of_qwen3_next_and_gemma_4_26b_name_their_presets() {
    let next = log("vllm-v1-0112-qwen3-next-80b-a100-40gb-tp4-negkv");
    assert_eq!(next.config.model.as_deref(), Some("/dockpath/Qwen3-Next-80B-A3B-Instruct"));
    assert_eq!(shared::startup::logged_preset(&next).map(|p| p.id), Some("qwen3-next-80b-a3b"));
    let (m, s, _) = planned_from(&next, "qwen3-next-80b-a3b", "a100-40gb-sxm");
    let (logged, predicted) = logged_and_predicted(&next, &m, s, "weights");
    assert!(close(logged, predicted, 10), "{logged:?} vs {predicted:?}");
    // The repo as vLLM 0.17's config line names it (`model='google/gemma-4-26B-A4B-it'`).
    let named = |repo: &str| shared::startup::StartupLog {
        engine: LogEngine::Vllm,
        config: shared::startup::LoggedConfig { model: Some(repo.into()), ..Default::default() },
        facts: Vec::new(),
        model: None,
    };
    assert_eq!(
        shared::startup::logged_preset(&named("google/gemma-4-26B-A4B-it")).map(|p| p.id),
        Some("gemma-4-26b-a4b")
    );
    for (repo, preset) in
        [("google/gemma-4-26B-A4B", "gemma-4-26b-a4b"), ("Qwen/Qwen3-Next-80B-A3B-Thinking", "qwen3-next-80b-a3b")]
    {
        assert!(shared::startup::logged_preset(&named(repo)).is_none(), "{repo}");
        assert_eq!(shared::startup::logged_base_preset(&named(repo)).map(|p| p.id), Some(preset), "{repo}");
    }
}

/// Kaggle mounts a model under a version folder
/// (`/kaggle/input/models/google/gemma-4/transformers/gemma-4-31b-it/1`):
/// the name is the folder above it, so vLLM 0.23.0's log on Kaggle is
/// Gemma 4 31B's, whose weights it then holds to 1.2 % (it was "not a
/// preset").
#[test]
fn a_kaggle_model_folder_names_its_preset_above_the_version() {
    let l = log("vllm-v1-0230-gemma4-31b-it-kaggle-u094");
    assert_eq!(l.config.model.as_deref(), Some("/kaggle/input/models/google/gemma-4/transformers/gemma-4-31b-it/1"));
    assert_eq!(shared::startup::logged_preset(&l).map(|p| p.id), Some("gemma-4-31b"));
    let (m, s, _) = planned_from(&l, "gemma-4-31b", "rtx-pro-6000-blackwell");
    let (logged, predicted) = logged_and_predicted(&l, &m, s, "weights");
    assert!(close(logged, predicted, 20), "{logged:?} vs {predicted:?}");
    let named = |path: &str| shared::startup::StartupLog {
        engine: LogEngine::Vllm,
        config: shared::startup::LoggedConfig { model: Some(path.into()), ..Default::default() },
        facts: Vec::new(),
        model: None,
    };
    // A variant's name under a version folder is read as its base name.
    let variant = named("/kaggle/input/qwen3-30b-a3b/transformers/qwen3-30b-a3b-instruct-2507/3/");
    assert_eq!(shared::startup::logged_base_preset(&variant).map(|p| p.id), Some("qwen3-30b-a3b"));
    // Only a number is a version: a name that ends in other words is kept.
    assert!(shared::startup::logged_preset(&named("/models/gemma-4-31b-it/v1")).is_none());
}

/// A paste whose vLLM lines print no release but whose words name it
/// ("vLLM 0.29.1rc1.dev17+gd2d649e67", eugr/spark-vllm-docker#396) is read
/// with that release's rules; words naming two releases name none.
#[test]
fn a_release_the_pastes_words_give_vllm_picks_its_rules() {
    let path =
        format!("{}/tests/fixtures/oom/130-vllm-0291-kv-too-small-quoted-bars-spark.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let l = read(&text).unwrap_or_else(|| panic!("not a log"));
    assert_eq!(l.config.version.as_deref(), Some("0.29.1rc1.dev17+gd2d649e67.d20260913"));
    let (engine, taken) = shared::startup::logged_engine(&l, shared::engines::EngineKind::Vllm.with_defaults());
    assert!(taken.iter().any(|t| t.starts_with("vLLM rules 0.33-graphs (the log's 0.29.1rc1")), "{taken:?}");
    assert!(matches!(engine, shared::engines::Engine::Vllm(o) if o.version.id() == "0.33-graphs"));
    let kv = "INFO 05-01 12:00:00 [gpu_worker.py:298] Available KV cache memory: 2.00 GiB";
    let two = format!("It worked on vLLM 0.10.1 and fails on vLLM 0.11.0:\n{kv}\n");
    assert_eq!(read(&two).unwrap_or_else(|| panic!("not a log")).config.version, None);
    let pinned = format!("pip install vllm==0.11.0\n{kv}\n");
    assert_eq!(read(&pinned).unwrap_or_else(|| panic!("not a log")).config.version.as_deref(), Some("0.11.0"));
}

/// Today's llama.cpp still names `llama_init_from_model` in its failures
/// (`failed to initialize the context`): only the context's own figures
/// under that name (`llama_init_from_model: n_ctx = …`, b4462 – b4880) date
/// a log.
#[test]
fn a_failure_under_an_old_function_name_dates_no_log() {
    let failed = "llama_model_loader: - kv   0: general.architecture str = llama\n\
                  llama_init_from_model: failed to initialize the context: failed to allocate buffer\n\
                  load_tensors: offloaded 33/33 layers to GPU\n";
    let l = read(failed).unwrap_or_else(|| panic!("no log"));
    assert_eq!(l.config.newest_build, None, "{:?}", l.config);
    let old = "llama_init_from_model: n_ctx         = 4096\nload_tensors: offloaded 33/33 layers to GPU\n";
    let l = read(old).unwrap_or_else(|| panic!("no log"));
    assert_eq!(l.config.newest_build, Some(4880), "{:?}", l.config);
}

/// A pasted llama-server command with `-ctk` alone keeps V at llama.cpp's
/// own default, f16 (common/common.h `cache_type_v = GGML_TYPE_F16`), not
/// the key's type (the plan's own default for an unset V): the V half of
/// the cache was planned at q8_0's bytes before.
#[test]
fn a_pasted_ctk_alone_leaves_v_at_llama_cpps_f16() {
    use shared::engines::llamacpp::{CacheType, Options};
    use shared::estimate::{GpuSlot, Scenario};
    let m = shared::model::Model::preset("llama-3.1-8b").expect("preset");
    let planned = Scenario {
        gpus: vec![GpuSlot::custom("gpu", 24 * shared::units::GIB)],
        engine: shared::engines::Engine::LlamaCpp(Options::default()),
        ..Scenario::default()
    };
    let types = |command: &str| {
        // The command above a real log of the model, its lines that name
        // the cache's types left out.
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/startup/llamacpp-b5781-llama31-8b-q40-vulkan-1gpu-fa-on.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let untyped: Vec<&str> = text.lines().filter(|l| !l.contains(" K (") && !l.contains("type_k")).collect();
        let text = format!("{command}\n{}", untyped.join("\n"));
        let l = read(&text).unwrap_or_else(|| panic!("{command}: not read"));
        let (s, taken) = shared::startup::logged_scenario(&l, &m, planned.clone());
        let shared::engines::Engine::LlamaCpp(o) = s.engine else { panic!("llama.cpp") };
        (o.cache_type_k, o.cache_type_v, taken)
    };
    let (k, v, taken) = types("llama-server -m llama-3.1-8b-q4_k_m.gguf -c 8192 -ctk q8_0");
    assert_eq!((k, v), (Some(CacheType::Q8_0), Some(CacheType::F16)), "{taken:?}");
    assert!(taken.iter().any(|t| t.contains("V cache f16")), "{taken:?}");
    let (k, v, _) = types("llama-server -m llama-3.1-8b-q4_k_m.gguf -c 8192 -ctk q8_0 -ctv q4_0");
    assert_eq!((k, v), (Some(CacheType::Q8_0), Some(CacheType::Q4_0)));
    let (k, v, _) = types("llama-server -m llama-3.1-8b-q4_k_m.gguf -c 8192");
    assert_eq!((k, v), (None, None));
}

/// A vLLM excerpt of the KV lines under the `vllm serve` command that made
/// them prints no non-default args: the command's `--gpu-memory-utilization
/// 0.95`, TP 2 and expert parallel are what ran (a 0.10.2 note of
/// Qwen3-30B-A3B-2507-FP8 on two L40S), not the defaults. Read as 0.9, the
/// plan left 1.4 GiB less to the cache than the log's 25.91 GiB.
#[test]
fn vllm_takes_the_launch_from_a_pasted_serve_command() {
    let l = log("vllm-v1-0102-qwen3-30b-a3b-fp8-l40s-tp2-ep");
    let utilization = l.first(|f| match f {
        Figure::Utilization { permille } => Some(*permille),
        _ => None,
    });
    // The command's own line (the fixture's eighth: its source line first).
    assert_eq!(utilization, Some((8, 950)), "{:?}", l.facts);
    assert_eq!(l.config.tensor_parallel, Some(2));
    assert_eq!(l.config.expert_parallel, Some(true));
    assert_eq!(l.config.model.as_deref(), Some("Qwen/Qwen3-30B-A3B-Instruct-2507-FP8"));
    assert_eq!(l.config.max_model_len, Some(32_768), "`--max-model-len 32K`");
    // A log's own non-default args win over a command pasted above it.
    let text = "vllm serve org/m --gpu-memory-utilization 0.5 -tp 4\n\
                INFO 10-23 15:10:10 [utils.py:328] non-default args: {'model': 'org/m', 'gpu_memory_utilization': 0.8, 'tensor_parallel_size': 2}\n\
                INFO 10-23 15:14:30 [gpu_worker.py:298] Available KV cache memory: 44.59 GiB\n";
    let l = shared::startup::read(text).unwrap_or_else(|| panic!("no log"));
    let all: Vec<u64> = l
        .facts
        .iter()
        .filter_map(|f| match f.figure {
            Figure::Utilization { permille } => Some(permille),
            _ => None,
        })
        .collect();
    assert_eq!(all, [800]);
    assert_eq!(l.config.tensor_parallel, Some(2));
}
