//! ik_llama.cpp as a rule set of its own (`shared::engines::llamacpp::ik`):
//! its flags on a command line, in links and from its logs; the refusal on
//! mainline; each flag's effect, in its direction and as a figure worked
//! out by hand from ik's source (the commit named beside each).

use crate::llamacpp::{link_round_trip, model, report, scenario};
use shared::engines::llamacpp::{self, CacheType, FlashAttention, Fork, Options, ik};
use shared::engines::{Engine, EngineKind};
use shared::link::{LinkState, decode, encode};
use shared::startup::{self, configured_engine, read_command_line};
use shared::units::MIB;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/startup");

fn ik(o: Options) -> Options {
    Options { fork: Fork::Ik, ..o }
}

fn gpu0_compute(m: &shared::model::Model, o: Options, gpus: usize) -> u64 {
    let (_, e) = report(m, scenario(o, gpus, 2048));
    e.per_gpu[0].budget.activation_bytes
}

/// ik's spelling on a `llama-server` line (common/common.cpp@18b0375:934-1090)
/// reads back as an ik plan, and the line an ik plan prints is that plan.
#[test]
fn ik_flags_on_a_command_line_read_back_as_the_plan() {
    let read = |line: &str| {
        let argv: Vec<&str> = line.split_whitespace().collect();
        let launch = read_command_line(&argv).unwrap_or_else(|| panic!("not read: {line}"));
        match configured_engine(launch.launcher.engine(), &launch.config, EngineKind::LlamaCpp.with_defaults()).0 {
            Engine::LlamaCpp(o) => o,
            other => panic!("{other:?}"),
        }
    };
    let o = read("llama-server -m x.gguf -mla 2 -amb 512 -fmoe -rtr -fa on");
    assert_eq!(
        (o.fork, o.mla, o.attn_max_batch_mib, o.fused_moe, o.run_time_repack),
        (Fork::Ik, Some(2), Some(512), Some(true), true)
    );
    let o = read("llama-server -m x.gguf --mla-use 3 --attention-max-batch 256 --no-fused-moe");
    assert_eq!((o.fork, o.mla, o.attn_max_batch_mib, o.fused_moe), (Fork::Ik, Some(3), Some(256), Some(false)));
    // From build 3928 they are the defaults, turned off by `-no-fa`, `-no-fmoe`.
    let o = read("llama-server -m x.gguf -no-fa -no-fmoe -mla 3");
    assert_eq!((o.fork, o.flash_attention, o.fused_moe), (Fork::Ik, FlashAttention::Off, Some(false)));
    let newest = ik(Options { flash_attention: FlashAttention::Off, fused_moe: Some(false), ..Default::default() });
    let valid = scenario(newest, 1, 2048).validate_for(&model("qwen3-30b-a3b")).unwrap_or_else(|e| panic!("{e}"));
    let line = llamacpp::server_command(&model("qwen3-30b-a3b"), &valid);
    assert!(line.contains(" -no-fa") && line.ends_with(" -no-fmoe") && !line.contains("-fa off"), "{line}");
    // A mainline line stays mainline.
    assert_eq!(read("llama-server -m x.gguf -fa on -ngl 99").fork, Fork::Mainline);

    let m = model("deepseek-v3");
    // Build 3912 (18b0375's era): `-fa` and `-fmoe` are switches that turn
    // them on (41d6c42b9 made both the default and removed them).
    let plan = ik(Options {
        build: Some(3912),
        n_ctx: Some(8192),
        mla: Some(3),
        attn_max_batch_mib: Some(1024),
        fused_moe: Some(true),
        run_time_repack: true,
        ..Default::default()
    });
    let valid = scenario(plan, 1, 2048).validate_for(&m).unwrap_or_else(|e| panic!("{e}"));
    let line = llamacpp::server_command(&m, &valid);
    assert!(line.contains(" -fa ") && line.ends_with(" -mla 3 -amb 1024 -fmoe -rtr"), "{line}");
    assert!(!line.contains("-fa on"), "{line}");
    let back = read(&line);
    assert_eq!(
        (back.fork, back.mla, back.attn_max_batch_mib, back.fused_moe, back.run_time_repack),
        (Fork::Ik, Some(3), Some(1024), Some(true), true),
        "{line}"
    );
}

/// Links: the fork and ik's flags round-trip; a link without `fork=` (every
/// link made before it) is mainline with none of them.
#[test]
fn ik_settings_round_trip_through_links() {
    let o = ik(Options {
        build: Some(3912),
        mla: Some(3),
        attn_max_batch_mib: Some(1024),
        fused_moe: Some(true),
        run_time_repack: true,
        ..Default::default()
    });
    link_round_trip(o, &["fork=ik", "lcb=3912", "mla=3", "amb=1024", "fmoe=1", "rtr=1"]);
    assert_eq!(
        decode("?e=llama.cpp&ngl=20").state.engine,
        Engine::LlamaCpp(Options { n_gpu_layers: Some(20), ..Default::default() })
    );
    assert!(
        !encode(&LinkState { engine: Engine::LlamaCpp(Options::default()), ..LinkState::default() }).contains("fork=")
    );
    assert!(!decode("?e=llama.cpp&fork=mine").notices.is_empty());
    assert!(!decode("?e=llama.cpp&fork=ik&mla=4").notices.is_empty());
}

/// Mainline llama.cpp has none of ik's flags: a mainline plan with one is
/// refused in words that say whose flag it is.
#[test]
fn ik_flags_on_a_mainline_plan_are_refused() {
    let m = model("qwen3-30b-a3b");
    for o in [
        Options { fused_moe: Some(true), ..Default::default() },
        Options { mla: Some(3), ..Default::default() },
        Options { attn_max_batch_mib: Some(512), ..Default::default() },
        Options { run_time_repack: true, ..Default::default() },
    ] {
        let err = scenario(o, 1, 80).validate_for(&m).expect_err("refused on mainline").to_string();
        assert!(err.contains("ik_llama.cpp") && err.contains("mainline"), "{err}");
        assert!(scenario(ik(o), 1, 80).validate_for(&m).is_ok(), "{o:?}");
    }
    let err = scenario(Options { fused_moe: Some(true), ..Default::default() }, 1, 80)
        .validate_for(&m)
        .expect_err("refused")
        .to_string();
    assert!(err.contains("-fmoe/--fused-moe"), "{err}");
}

/// The defaults moved by build (common/common.h at each commit): before
/// 41d6c42b9 (build 3928) -fmoe off, before ddc88bac1 (3983) -mla 0, before
/// 37d82c231 (4832) -amb 0; a plan without a build runs the newest.
#[test]
fn ik_defaults_follow_the_build() {
    let at = |build: Option<u64>| {
        let o = ik(Options { build, ..Default::default() });
        (ik::mla(o), ik::fused_moe(o), ik::attn_max_batch_mib(o))
    };
    assert_eq!(at(Some(3673)), (Some(0), false, 0));
    assert_eq!(at(Some(3928)), (Some(0), true, 0));
    assert_eq!(at(Some(3983)), (Some(3), true, 0));
    assert_eq!(at(None), (Some(3), true, 256));
    // Mainline: no mode at all.
    assert_eq!(ik::mla(Options::default()), None);
    assert!(!ik::fused_moe(Options::default()));
}

/// `-mla N` decides which caches an MLA layer allocates
/// (`llama_kv_cache_init`, src/llama.cpp@18b0375:3465ff). DeepSeek-V3, 61
/// layers, n_ctx 4096, per token and layer: mla 0 keeps K (128 heads × 192)
/// and V (128 × 128), 81,920 bytes in f16; mla 3 with flash attention the
/// latent 512 + 64, 1,152; mla 1 without it the latent and kv^T (512),
/// 2,176; mla 3 without it the latent in the V type, q8_0: 18 blocks of
/// 34 bytes, 612.
#[test]
fn mla_mode_lays_out_the_cache_as_ik_allocates_it() {
    let m = model("deepseek-v3");
    let kv = |mla: u8, fa: FlashAttention, t: CacheType| {
        let o = ik(Options {
            n_ctx: Some(4096),
            mla: Some(mla),
            flash_attention: fa,
            cache_type_k: Some(t),
            cache_type_v: Some(t),
            ..Default::default()
        });
        report(&m, scenario(o, 1, 2048)).1.kv_cache_bytes
    };
    let cells = 4096 * 61;
    assert_eq!(kv(0, FlashAttention::On, CacheType::F16), cells * 81_920);
    assert_eq!(kv(3, FlashAttention::On, CacheType::F16), cells * 1152);
    assert_eq!(kv(1, FlashAttention::On, CacheType::F16), cells * 1152);
    assert_eq!(kv(1, FlashAttention::Off, CacheType::F16), cells * 2176);
    assert_eq!(kv(3, FlashAttention::Off, CacheType::Q8_0), cells * 612);
    // Mainline's latent cache is ik's with -mla 3 and flash attention.
    let mainline = report(&m, scenario(Options { n_ctx: Some(4096), ..Default::default() }, 1, 2048)).1;
    assert_eq!(mainline.kv_cache_bytes, kv(3, FlashAttention::On, CacheType::F16));
}

/// `-amb` caps the K/V ik decompresses for `-mla 3` with flash attention on
/// a prompt batch (src/llama.cpp@18b0375:15623-15715): DeepSeek-V3, `-ub
/// 4096 -c 16384`, amb 1024: `kv_f32` would be 128 × 256 × 16384 × 4 B =
/// 2048 MiB, so 64 heads at a time. By hand, MiB: kv_f32 1024, V 256,
/// K-nope 256 (F16), K-rope repeated 128 and its cast 2, K 384, the
/// output 128; the query 384 and the output 256 across groups; the layer's
/// input and norm 2 × 7168 × 4096 × 4 B = 224; the F16 mask 16384 × 4096 ×
/// 2 B = 128: 3170 MiB (the ik DeepSeek-R1 log's CUDA1 logs 3152.02).
#[test]
fn attention_max_batch_caps_the_decompressed_attention() {
    let m = model("deepseek-v3");
    let at = |amb: u64| {
        let o = ik(Options {
            n_ctx: Some(16_384),
            n_ubatch: 4096,
            n_batch: 4096,
            mla: Some(3),
            attn_max_batch_mib: Some(amb),
            ..Default::default()
        });
        gpu0_compute(&m, o, 1)
    };
    assert_eq!(at(1024), 3170 * MIB);
    // No cap: all 128 heads at once (kv_f32 2048 MiB, …): 5346 MiB.
    assert_eq!(at(0), 5346 * MIB);
    assert!(at(512) < at(1024));
    // -mla 1 computes in the latent space: no decompression to cap.
    let mla1 = |amb| {
        let o = ik(Options {
            n_ctx: Some(16_384),
            n_ubatch: 4096,
            n_batch: 4096,
            mla: Some(1),
            attn_max_batch_mib: Some(amb),
            ..Default::default()
        });
        gpu0_compute(&m, o, 1)
    };
    assert_eq!(mla1(0), mla1(1024));
}

/// `-fmoe` writes one up-gate product where the unfused pair writes two
/// (`llm_build_moe_ffn`, src/llama.cpp@4084ca73:9438): on the first of two
/// GPUs (no output layer) the widest point of Qwen3-30B-A3B's MoE layer at
/// `-ub 512` loses 8 experts × 768 × 512 tokens × 4 B = 12 MiB.
#[test]
fn fused_moe_writes_one_product() {
    let m = model("qwen3-30b-a3b");
    let at = |fmoe: bool| {
        gpu0_compute(&m, ik(Options { n_ctx: Some(8192), fused_moe: Some(fmoe), ..Default::default() }), 2)
    };
    assert_eq!(at(false) - at(true), 8 * 768 * 512 * 4);
}

/// With routed experts in host memory, ik's first GPU stages them for a
/// prompt batch only when its tokens per expert reach the threshold
/// (ggml-cuda.cu@18b0375:3717: batch × used ≥ 32 × experts), takes gate and
/// up together with `-fmoe`, and never takes what `-rtr` repacked
/// (README.md@HEAD). `-rtr` turns mmap off: the host buffer is `CPU`, of the
/// same bytes. Two GPUs: the first holds no output layer, whose logits
/// would hide the staged copy.
#[test]
fn staging_host_experts_follows_ik_and_run_time_repack() {
    let m = model("qwen3-30b-a3b");
    let on_cpu = |o: Options| ik(Options { n_ctx: Some(8192), n_cpu_moe: u64::from(u32::MAX), ..o });
    let unfused = Options { fused_moe: Some(false), ..Default::default() };
    let (r, e) = report(&m, scenario(on_cpu(unfused), 2, 80));
    let staged = e.per_gpu[0].budget.activation_bytes;
    let (rr, er) = report(&m, scenario(on_cpu(Options { run_time_repack: true, ..unfused }), 2, 80));
    assert!(er.per_gpu[0].budget.activation_bytes < staged);
    assert_eq!(rr.cpu_weight_bytes, r.cpu_weight_bytes);
    assert!(rr.log_lines.iter().any(|l| l.starts_with("CPU model buffer size")), "{:?}", rr.log_lines);
    assert!(r.log_lines.iter().any(|l| l.starts_with("CPU_Mapped model buffer size")));
    // 128 experts, 8 used: -ub 256 gives 256 × 8 < 32 × 128 tokens per expert.
    let small = report(&m, scenario(on_cpu(Options { n_ubatch: 256, ..unfused }), 2, 80)).1;
    let mainline = Options { n_ubatch: 256, fork: Fork::Mainline, fused_moe: None, ..on_cpu(unfused) };
    let mainline = report(&m, scenario(mainline, 2, 80)).1;
    assert!(small.per_gpu[0].budget.activation_bytes < mainline.per_gpu[0].budget.activation_bytes);
    // -fmoe stages gate and up at once, then the down copy in the hole they
    // leave: the first GPU's compute changes (the ik DeepSeek-R1 log's
    // CUDA0, 4496.02 logged: 2 × 1906 MiB of iq4_ks gate and up, the 112 MiB
    // input, 4 of selection and the 256 MiB product, 4184 MiB predicted).
    let fused = report(&m, scenario(on_cpu(Options { fused_moe: Some(true), ..Default::default() }), 2, 80)).1;
    assert_ne!(fused.per_gpu[0].budget.activation_bytes, staged);
}

/// The two ik logs read as ik plans, from the settings they print
/// (`mla_attn`, `attn_max_b`, `fused_moe`) and the build they name.
#[test]
fn ik_logs_plan_as_ik() {
    for (file, build, mla, amb) in [
        ("llamacpp-ik-18b0375-deepseek-r1-0528-3gpu-mla3-ot", 1, 3, 1024),
        ("llamacpp-ik-b3673-qwen3-30b-a3b-udq4kxl-2gpu-t4-fmoe", 3673, 0, 0),
    ] {
        let text = std::fs::read_to_string(format!("{DIR}/{file}.txt")).unwrap_or_else(|e| panic!("{e}"));
        let log = startup::read(&text).unwrap_or_else(|| panic!("{file}"));
        let (engine, taken) = startup::logged_engine(&log, EngineKind::LlamaCpp.with_defaults());
        let Engine::LlamaCpp(o) = engine else { panic!("{engine:?}") };
        assert_eq!(
            (o.fork, o.build, o.mla, o.attn_max_batch_mib, o.fused_moe),
            (Fork::Ik, Some(build), Some(mla), Some(amb), Some(true)),
            "{file}: {taken:?}"
        );
        assert!(taken.iter().any(|t| t == "ik_llama.cpp"), "{taken:?}");
    }
    // ik's MLA summary line (src/llama.cpp@18b0375:21243): `KV self size =
    // 1098.00 MiB, c^KV (f16): 1098.00 MiB, kv^T: not used`.
    let text = std::fs::read_to_string(format!("{DIR}/llamacpp-ik-18b0375-deepseek-r1-0528-3gpu-mla3-ot.txt"))
        .unwrap_or_else(|e| panic!("{e}"));
    let log = startup::read(&text).unwrap_or_else(|| panic!("not a log"));
    let summary = log.facts.iter().find_map(|f| match f.figure {
        startup::Figure::KvSummary { bytes, k_bytes, v_bytes, .. } => Some((bytes, k_bytes, v_bytes)),
        _ => None,
    });
    assert_eq!(summary, Some((1098 * MIB, 1098 * MIB, 0)));
}

/// Without flash attention `-amb` splits the scores of a model without GQA
/// by head (`llm_build_kqv`, src/llama.cpp@18b0375:10201-10260): a
/// Command-R-like model (64 heads, 64 KV heads, hidden 8192), `-c 4096 -ub
/// 512`, KQ is 4096 × 512 × 64 × 4 B = 512 MiB, over `-amb 256`: one head
/// of scores instead of 64, 4096 × 512 × 63 × 4 B = 504 MiB less on the
/// first of two GPUs (no output layer there).
#[test]
fn attention_max_batch_splits_the_scores_by_head_without_flash_attention() {
    let config = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "num_attention_heads": 64, "num_key_value_heads": 64, "num_hidden_layers": 40,
        "intermediate_size": 22528, "vocab_size": 256000, "max_position_embeddings": 131072}"#;
    let m = shared::model::Model::from_config_json("command-r-like", config).unwrap_or_else(|e| panic!("{e}"));
    let at = |amb: u64| {
        let o = ik(Options {
            n_ctx: Some(4096),
            flash_attention: FlashAttention::Off,
            attn_max_batch_mib: Some(amb),
            ..Default::default()
        });
        gpu0_compute(&m, o, 2)
    };
    assert_eq!(at(0) - at(256), 4096 * 512 * 63 * 4);
    // Under the cap nothing is split.
    assert_eq!(at(0), at(512));
}
