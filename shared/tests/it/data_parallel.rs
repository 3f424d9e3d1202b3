//! vLLM's data and expert parallelism (issue 36): `--data-parallel-size`
//! replicas of the TP × PP group, each with its own KV pool and its share
//! of the requests; `--enable-expert-parallel` spreading a MoE model's
//! experts whole over the DP × TP ranks (vLLM 0.19.0
//! `fused_moe/config.py::FusedMoEParallelConfig.make`,
//! `fused_moe/layer.py::determine_expert_map`).

use crate::estimate;
use shared::engines::{Engine, EngineReport, sglang, vllm};
use shared::estimate::{Estimate, GpuSlot, Scenario, ScenarioError, Verdict};
use shared::model::Model;

fn model(id: &str) -> Model {
    Model::preset(id).unwrap_or_else(|e| panic!("{e}"))
}

fn h100s(n: usize) -> Vec<GpuSlot> {
    vec![GpuSlot::from_catalog(shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("the catalog's H100"))); n]
}

/// vLLM's newest rules at `max_model_len` 8,192 on `gpus`, with `o`'s
/// parallelism (and whatever else `o` sets).
fn vllm_on(gpus: Vec<GpuSlot>, tp: u64, o: vllm::Options) -> Scenario {
    let o = vllm::Options { version: vllm::Version::LATEST, max_model_len: Some(8192), ..o };
    Scenario { gpus, tp, engine: Engine::Vllm(o), ..Scenario::default() }
}

fn dp_ep(dp: u64, ep: bool) -> vllm::Options {
    vllm::Options { data_parallel_size: dp, enable_expert_parallel: ep, ..Default::default() }
}

/// The estimate of a scenario that must pass every check, the model's included.
fn checked(m: &Model, s: Scenario) -> Estimate {
    if let Err(e) = s.clone().validate_for(m) {
        panic!("{e}")
    }
    estimate(m, s)
}

/// The launch line the plan's engine prints for it.
fn launch(m: &Model, s: Scenario) -> String {
    let launch = s.engine.kind().commands().launch.unwrap_or_else(|| panic!("a launch"));
    launch(m, &s.validate_for(m).unwrap_or_else(|e| panic!("{e}")), "org/m")
}

/// The scenario the start-up log `text` describes for `m`, planned in
/// `engine`'s defaults, and what was taken from the log.
fn logged(text: &str, m: &Model, engine: Engine) -> (Scenario, Vec<String>) {
    let log = shared::startup::read(text).unwrap_or_else(|| panic!("a start-up log"));
    shared::startup::logged_scenario(&log, m, Scenario { engine, ..Default::default() })
}

fn plan(m: &Model, gpus: usize, tp: u64, dp: u64, ep: bool, concurrency: u64) -> Estimate {
    checked(m, Scenario { concurrency, ..vllm_on(h100s(gpus), tp, dp_ep(dp, ep)) })
}

fn report(e: &Estimate) -> &vllm::Report {
    match &e.engine_report {
        Some(EngineReport::Vllm(r)) => r,
        other => panic!("no vLLM report: {other:?}"),
    }
}

fn weights(e: &Estimate, gpu: usize) -> u64 {
    report(e).per_gpu[gpu].weight_bytes
}

#[test]
fn each_data_parallel_replica_holds_what_one_engine_does() {
    let m = model("llama-3.1-8b");
    let one = plan(&m, 1, 1, 1, false, 64);
    let two = plan(&m, 2, 1, 2, false, 64);
    let (r1, r2) = (report(&one), report(&two));
    // Two engine cores, each the one-GPU plan: no pipeline stage, no NCCL
    // between them for a dense model's weights.
    assert_eq!(two.pipeline_stages, 1);
    assert_eq!(r2.per_gpu.len(), 2);
    for g in &r2.per_gpu {
        assert_eq!(g.weight_bytes, r1.per_gpu[0].weight_bytes);
        assert_eq!(g.available_kv_bytes, r1.per_gpu[0].available_kv_bytes);
    }
    // Each replica logs its own pool; the requests the deployment holds at
    // once are both replicas'.
    assert_eq!(r2.num_gpu_blocks, r1.num_gpu_blocks);
    let (Verdict::Fits { max_concurrency: c1 }, Verdict::Fits { max_concurrency: c2 }) = (one.verdict, two.verdict)
    else {
        panic!("{:?} {:?}", one.verdict, two.verdict)
    };
    assert_eq!(c2, 2 * c1, "{c1} per replica");
    // The command launches it as vLLM would be asked to.
    let line = launch(&m, vllm_on(h100s(2), 1, dp_ep(2, false)));
    assert!(line.contains("--data-parallel-size 2") && !line.contains("--pipeline-parallel-size"), "{line}");
}

#[test]
fn data_parallel_replicas_of_pipeline_stages() {
    // 8 GPUs at TP 2 and DP 2: two replicas of two pipeline stages.
    let m = model("llama-3.1-8b");
    let e = plan(&m, 8, 2, 2, false, 1);
    assert_eq!(e.pipeline_stages, 2);
    // Replica 2's stages hold what replica 1's do.
    for g in 0..4 {
        assert_eq!(weights(&e, g), weights(&e, g + 4), "GPU {g}");
    }
    assert_ne!(weights(&e, 0), weights(&e, 2), "the stages hold different layers");
}

#[test]
fn gpus_that_are_no_whole_number_of_replicas_are_refused() {
    let m = model("llama-3.1-8b");
    let s = Scenario {
        gpus: h100s(6),
        tp: 2,
        engine: Engine::Vllm(vllm::Options { data_parallel_size: 2, ..Default::default() }),
        ..Scenario::default()
    };
    let err = s.validate_for(&m).err().unwrap_or_else(|| panic!("6 GPUs are no 2 replicas of TP 2 groups"));
    assert!(matches!(err, ScenarioError::DpDoesNotDivide { gpus: 6, tp: 2, replicas: 2 }), "{err}");
    assert_eq!(
        err.to_string(),
        "6 GPU(s) cannot be split into 2 data-parallel replicas of tensor-parallel groups of 2: use a multiple of 4 GPUs"
    );
}

#[test]
fn the_moe_layers_span_every_replica() {
    let m = model("qwen3-30b-a3b");
    let moe = m.arch.text.moe.unwrap_or_else(|| panic!("a MoE model"));
    assert_eq!(moe.num_experts, 128);
    let one = plan(&m, 1, 1, 1, false, 1);
    // DP 2: attention is each replica's whole, the experts are sharded over
    // both GPUs (`flatten_tp_across_dp_and_pcp`), with or without EP.
    let sharded = plan(&m, 2, 1, 2, false, 1);
    let spread = plan(&m, 2, 1, 2, true, 1);
    let (whole, half) = (weights(&one, 0), weights(&sharded, 0));
    assert!(half < whole * 6 / 10, "{half} of {whole}");
    let (a, b) = (weights(&sharded, 0) as i64, weights(&spread, 0) as i64);
    assert!((a - b).abs() < a / 1000, "sharded {a} vs whole {b}");
    assert_eq!(spread.weight_bytes, one.weight_bytes, "the same model");
    // The experts' buffers take both replicas' tokens, at their full width
    // under EP: the profile's peak grows with DP.
    let act = |e: &Estimate| report(e).per_gpu[0].activation_bytes;
    assert!(act(&spread) > act(&one), "{} vs {}", act(&spread), act(&one));
    // At TP 2 without DP, 128 experts whole over 2 ranks weigh what each
    // sharded in two does.
    let (tp, ep) = (plan(&m, 2, 2, 1, false, 1), plan(&m, 2, 2, 1, true, 1));
    let (a, b) = (weights(&tp, 0) as i64, weights(&ep, 0) as i64);
    assert!((a - b).abs() < a / 1000, "TP 2 {a} vs TP 2 + EP {b}");
    let line = launch(&m, vllm_on(h100s(2), 1, dp_ep(2, true)));
    assert!(line.contains("--data-parallel-size 2 ") && line.ends_with("--enable-expert-parallel"), "{line}");
}

#[test]
fn a_dense_models_replicas_do_not_gather() {
    // No MoE layer: the replicas share nothing, the profile is one replica's.
    let m = model("llama-3.1-8b");
    let (one, two) = (plan(&m, 1, 1, 1, false, 1), plan(&m, 2, 1, 2, false, 1));
    assert_eq!(report(&one).per_gpu[0].activation_bytes, report(&two).per_gpu[0].activation_bytes);
    assert_eq!(report(&one).per_gpu[0].non_torch_bytes, report(&two).per_gpu[0].non_torch_bytes);
}

#[test]
fn experts_that_do_not_divide_give_the_first_ranks_one_more() {
    // Mixtral's 8 experts over 3 ranks (DP 3): 3, 3 and 2; the plan budgets
    // the fullest rank on every GPU (`determine_expert_map`).
    let m = model("mixtral-8x7b");
    let three = plan(&m, 3, 1, 3, true, 1);
    let four = plan(&m, 4, 1, 4, true, 1);
    let replicated = plan(&m, 1, 1, 1, false, 1);
    let experts = |e: &Estimate| weights(&replicated, 0) - weights(e, 0);
    // 8 − 3 = 5 experts' bytes fewer at DP 3; 8 − 2 = 6 at DP 4.
    let (five, six) = (experts(&three), experts(&four));
    assert_eq!(five / 5, six / 6, "{five} for five experts, {six} for six");
}

#[test]
fn a_logged_data_parallel_run_plans_its_replicas() {
    let m = model("qwen3-30b-a3b");
    let (s, taken) = logged(
        "INFO 08-16 02:01:57 [api_server.py:1755] vLLM API server version 0.19.0\n\
         INFO 08-16 02:01:57 [utils.py:261] non-default args: {'model': 'Qwen/Qwen3-30B-A3B', \
         'tensor_parallel_size': 2, 'data_parallel_size': 2, 'enable_expert_parallel': True}\n\
         (EngineCore_DP0 pid=1) INFO 08-16 02:06:31 [gpu_model_runner.py:1892] Model loading took 14.3 GiB\n",
        &m,
        Engine::Vllm(Default::default()),
    );
    let Engine::Vllm(o) = s.engine else { panic!("{:?}", s.engine) };
    assert_eq!((s.tp, s.gpus.len(), o.data_parallel_size, o.enable_expert_parallel), (2, 4, 2, true), "{taken:?}");
    assert_eq!(s.stages(), 1);
}

#[test]
fn more_gpus_for_a_replicated_plan_keeps_its_replicas() {
    use shared::fixes::{FixKind, fixes};
    // Llama 3.1 70B in bf16 is 131 GiB: one H100 per replica does not hold it.
    let m = model("llama-3.1-70b");
    let s = Scenario {
        gpus: h100s(2),
        engine: Engine::Vllm(vllm::Options { data_parallel_size: 2, ..Default::default() }),
        ..Scenario::default()
    };
    let more = fixes(&m, &s).into_iter().find(|f| f.kind == FixKind::MoreGpus);
    let more = more.unwrap_or_else(|| panic!("a more-GPUs fix"));
    let Engine::Vllm(o) = more.scenario.engine else { panic!("{:?}", more.scenario.engine) };
    assert_eq!(o.data_parallel_size, 2);
    assert_eq!(more.scenario.gpus.len() as u64, 2 * more.scenario.tp, "{}", more.title);
    assert!(more.fits, "{}", more.title);
    let flags = format!("--tensor-parallel-size {} --data-parallel-size 2", more.scenario.tp);
    assert!(more.code.contains(&flags), "{}", more.code);
}

/// SGLang with data-parallel attention and expert parallelism: Qwen3-30B-A3B's
/// shapes at `--tp 4 --dp 4 --enable-dp-attention --ep-size 4`
/// (`sglang-qwen3moe-dp4-dpattn-ep4`, sglang#17392, its DP/TP/EP prefixes).
fn sglang_dpa(m: &Model, tp: u64, dp: u64, ep: u64) -> Estimate {
    checked(m, sglang_scenario(tp, dp, ep))
}

fn sglang_report(e: &Estimate) -> &sglang::Report {
    match &e.engine_report {
        Some(EngineReport::Sglang(r)) => r,
        other => panic!("no SGLang report: {other:?}"),
    }
}

#[test]
fn sglang_data_parallel_attention_keeps_every_kv_head() {
    use shared::startup::{Figure, read};
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/startup/sglang-qwen3moe-dp4-dpattn-ep4.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let log = read(&text).unwrap_or_else(|| panic!("an SGLang log"));
    let pool = log.first(|f| match f {
        Figure::KvPool { tokens, k_bytes: Some(k_bytes), .. } => Some((*tokens, *k_bytes)),
        _ => None,
    });
    let (_, (tokens, k_bytes)) = pool.unwrap_or_else(|| panic!("the pool's line"));
    let m = model("qwen3-30b-a3b");
    let e = sglang_dpa(&m, 4, 4, 4);
    // Attention over 4 / 4 = 1 rank: each GPU caches all 4 KV heads of its
    // group's tokens: "K size: 47.12 GB" (GiB) for 1,029,388 tokens.
    let cell = sglang_report(&e).cell_size_bytes;
    assert_eq!(cell, 48 * 4 * 128 * 2 * 2);
    let gib = |b: u64| format!("{:.2}", b as f64 / (1u64 << 30) as f64);
    assert_eq!(gib(tokens * cell / 2), gib(k_bytes), "K of {tokens} tokens");
    // Without it, TP 4 splits the 4 KV heads: one per GPU.
    let plain = Scenario {
        gpus: vec![GpuSlot::custom("138 GiB", 138 << 30); 4],
        tp: 4,
        engine: Engine::Sglang(sglang::Options::default()),
        ..Scenario::default()
    };
    assert_eq!(sglang_report(&estimate(&m, plain)).cell_size_bytes, cell / 4);
    // The weights: attention and the embedding whole on every GPU, the
    // experts a quarter each, the head split in four: "mem usage=16.39 GB".
    let w = e.per_gpu[0].budget.weight_bytes as f64 / (1u64 << 30) as f64;
    assert!((w - 16.39).abs() / 16.39 < 0.03, "{w:.2} GiB against the logged 16.39");
    // Each of the 4 attention groups takes its own requests.
    let Verdict::Fits { max_concurrency } = e.verdict else { panic!("{:?}", e.verdict) };
    assert_eq!(max_concurrency % 4, 0, "{max_concurrency}");
    let line = launch(&m, sglang_scenario(4, 4, 4));
    assert!(line.ends_with("--tp-size 4 --dp-size 4 --enable-dp-attention --ep-size 4"), "{line}");
}

fn sglang_scenario(tp: u64, dp: u64, ep: u64) -> Scenario {
    Scenario {
        gpus: vec![GpuSlot::custom("138 GiB", 138 << 30); tp as usize],
        tp,
        engine: Engine::Sglang(sglang::Options {
            dp_size: dp,
            enable_dp_attention: true,
            ep_size: ep,
            ..Default::default()
        }),
        ..Scenario::default()
    }
}

#[test]
fn sglang_data_parallel_attention_reserves_its_padding() {
    // SGLang 0.5.23 `arg_groups/memory_hook.py::reserve_for_graph_mb`: DP
    // attention pads its decode batches, 3 MiB per batch entry per attention
    // group and 1.5 more above 300 entries, kept outside mem_fraction_static.
    let m = model("qwen3-30b-a3b");
    let fraction = |dp: u64, dpa: bool| {
        let mut s = sglang_scenario(4, dp, 4);
        if let Engine::Sglang(o) = &mut s.engine {
            o.enable_dp_attention = dpa;
        }
        sglang_report(&checked(&m, s)).mem_fraction_static
    };
    let (off, on) = (fraction(1, false), fraction(4, true));
    // 138 GiB GPUs at TP 4: decode graphs up to 512 (`_handle_gpu_memory_settings`).
    let padding_mib = 512.0 * 4.0 * (3.0 + 1.5);
    let gpu_mib = 138.0 * 1024.0;
    assert!(((off - on) - padding_mib / gpu_mib).abs() <= 0.001 + 1e-9, "{off} → {on}");
    // One attention group is no data parallelism: nothing padded.
    assert_eq!(fraction(1, true), off);
}

#[test]
fn sglang_mla_under_data_parallel_attention() {
    // DeepSeek-V3/R1 at --tp 8 --dp 8 --enable-dp-attention
    // (`sglang-dsr1-fp8-dp8-dpattn-ep-141gb`, sglang#6017): the latent is one
    // per layer whatever the split, "KV size: 10.57 GB" for 161,488 tokens.
    let m = model("deepseek-v3");
    let e = sglang_dpa(&m, 8, 8, 8);
    let cell = sglang_report(&e).cell_size_bytes;
    assert_eq!(cell, 61 * (512 + 64) * 2);
    assert_eq!(format!("{:.2}", (161_488 * cell) as f64 / (1u64 << 30) as f64), "10.57");
}

#[test]
fn sglang_refuses_experts_that_do_not_divide() {
    // Mixtral's 8 experts over --ep-size 4 divide; over 3 they would not
    // (and TP 3 is no split of its heads), so: 6 GPUs, EP 6.
    let m = model("mixtral-8x7b");
    let s = Scenario { gpus: h100s(2), tp: 2, ..sglang_scenario(2, 1, 2) };
    assert!(s.validate_for(&m).is_ok());
    let err = Scenario {
        engine: Engine::Sglang(sglang::Options { ep_size: 3, ..Default::default() }),
        ..Scenario::default()
    }
    .validate_for(&m)
    .err()
    .unwrap_or_else(|| panic!("EP 3 on one GPU"));
    assert!(err.to_string().contains("divisible by --ep-size (3)"), "{err}");
    // Under DeepEP the EP size is the TP size: Mixtral's 8 experts over 16.
    let o = sglang::Options { moe_a2a_deepep: true, ..Default::default() };
    let err = Scenario { gpus: h100s(16), tp: 16, engine: Engine::Sglang(o), ..Scenario::default() }
        .validate_for(&m)
        .err()
        .unwrap_or_else(|| panic!("EP 16 for 8 experts"));
    assert!(err.to_string().starts_with("SGLang fails loading with EP size 16 (DeepEP sets it to --tp-size)"), "{err}");
}

#[test]
fn deepep_buffers_come_out_of_the_kv_budget() {
    // DeepSeek-V3 over 8 replicas with expert parallelism: DeepEP's
    // low-latency kernels hold 1 GiB of NVLink buffer and 3.55 GiB of RDMA
    // buffer (256 tokens per rank to each of 256 experts and back).
    let m = model("deepseek-v3");
    let h200s = vec![GpuSlot::from_catalog(shared::catalog::gpu("h200").unwrap_or_else(|| panic!("an H200"))); 8];
    let deepep = |a2a: Option<vllm::All2All>| {
        let s = vllm_on(h200s.clone(), 1, vllm::Options { all2all_backend: a2a, ..dp_ep(8, true) });
        Scenario { weights: shared::formats::WeightFormat::parse("fp8").unwrap_or_else(|e| panic!("{e}")), ..s }
    };
    let run = |a2a| estimate(&m, deepep(a2a));
    let (gather, low_latency) = (run(None), run(Some(vllm::All2All::DeepepLowLatency)));
    let buffers = report(&low_latency).per_gpu[0].all2all_bytes;
    assert_eq!(buffers, vllm::DEEPEP_BUFFER_BYTES + vllm::low_latency_rdma_bytes(256, 7168, 256));
    assert_eq!(report(&gather).per_gpu[0].all2all_bytes, 0);
    // The KV budget loses the buffers, and gains what the smaller chunks
    // of the low-latency dispatch leave of the profile's MoE buffers (and,
    // with 0.34's extensible cache, of the margin kept beside that peak).
    let kv = |e: &Estimate| report(e).per_gpu[0].available_kv_bytes as i64;
    let act = |e: &Estimate| report(e).per_gpu[0].activation_bytes as i64;
    let margin = |e: &Estimate| report(e).per_gpu[0].margin_bytes as i64;
    let freed = (act(&gather) - act(&low_latency)) + (margin(&gather) - margin(&low_latency));
    assert_eq!(kv(&gather) - kv(&low_latency), buffers as i64 - freed);
    let line = launch(&m, deepep(Some(vllm::All2All::DeepepLowLatency)));
    assert!(line.ends_with("--enable-expert-parallel --all2all-backend deepep_low_latency"), "{line}");
}

#[test]
fn redundant_experts_are_placed_beside_the_models() {
    // vLLM's EPLB with 16 redundant experts: 144 experts over 2 ranks, 72 a GPU.
    let m = model("qwen3-30b-a3b");
    let eplb_on = |ner: u64| vllm_on(h100s(2), 1, vllm::Options { num_redundant_experts: ner, ..dp_ep(2, true) });
    let eplb = |ner: u64| weights(&checked(&m, eplb_on(ner)), 0);
    let (plain, balanced) = (eplb(0), eplb(16));
    let expert = m
        .layout
        .groups
        .iter()
        .filter(|g| matches!(g.role, shared::arch::Role::ExpertUp | shared::arch::Role::ExpertDown))
        .map(|g| g.params * 2)
        .sum::<u64>()
        / 128;
    assert_eq!(balanced - plain, 8 * expert, "8 more experts' bytes a GPU");
    // 128 + 15 do not spread evenly: vLLM refuses.
    let err = eplb_on(15).validate_for(&m).err().unwrap_or_else(|| panic!("143 experts over 2 ranks"));
    assert!(err.to_string().contains("143 experts"), "{err}");
    let line = launch(&m, eplb_on(16));
    assert!(line.ends_with("--enable-eplb --eplb-config '{\"num_redundant_experts\": 16}'"), "{line}");
}

#[test]
fn replicas_serve_their_share_of_the_sequences() {
    // Two replicas of one H100 with 64 sequences: each decodes 32 as one
    // H100 alone would, and together twice its tokens per second.
    let m = model("llama-3.1-8b");
    let (one, two) = (plan(&m, 1, 1, 1, false, 32), plan(&m, 2, 1, 2, false, 64));
    let (a, b) = (one.speed.unwrap_or_else(|| panic!("speed")), two.speed.unwrap_or_else(|| panic!("speed")));
    assert_eq!(a.decode_tokens_per_s_per_sequence, b.decode_tokens_per_s_per_sequence);
    assert_eq!(2.0 * a.decode_tokens_per_s_total, b.decode_tokens_per_s_total);
    assert_eq!(a.prefill_ms, b.prefill_ms);
}

#[test]
fn a_logged_expert_map_names_ep_and_its_redundant_experts() {
    // vllm#37505's line, with EPLB's 16 copies over 4 ranks: 144 placed.
    let m = model("qwen3-30b-a3b");
    let (s, taken) = logged(
        "INFO 03-18 04:59:50 [api_server.py:1755] vLLM API server version 0.19.0\n\
         INFO 03-18 04:59:50 [utils.py:261] non-default args: {'model': 'Qwen/Qwen3-30B-A3B', \
         'tensor_parallel_size': 2, 'data_parallel_size': 2}\n\
         (Worker_TP0_EP0 pid=352531) INFO 03-18 04:59:53 [layer.py:456] [EP Rank 0/4] Expert parallelism is \
         enabled. Expert placement strategy: linear. Local/global number of experts: 36/144. Experts local to \
         global index map: 0->0, 1->1.\n\
         (Worker_TP0_EP0 pid=352531) INFO 03-18 05:00:31 [gpu_model_runner.py:1892] Model loading took 16.1 GiB\n",
        &m,
        Engine::Vllm(Default::default()),
    );
    let Engine::Vllm(o) = s.engine else { panic!("{:?}", s.engine) };
    assert!(o.enable_expert_parallel, "{taken:?}");
    assert_eq!((o.num_redundant_experts, s.gpus.len()), (16, 4), "{taken:?}");
    assert!(s.validate_for(&m).is_ok());
}

/// SGLang with `--moe-a2a-backend deepep` on 138 GiB GPUs at TP 4: the
/// model and the automatic `mem_fraction_static` as 0.5.23 resolves them.
fn sglang_deepep(mode: Option<sglang::DeepepMode>) -> Scenario {
    let mut s = sglang_scenario(4, 1, 1);
    if let Engine::Sglang(o) = &mut s.engine {
        o.enable_dp_attention = false;
        o.moe_a2a_deepep = mode.is_some();
        o.deepep_mode = mode.unwrap_or_default();
    }
    s
}

#[test]
fn sglang_deepep_spans_the_experts_and_keeps_room_for_its_buffers() {
    // SGLang 0.5.23 `arg_groups/memory_hook.py`: 2 GiB for DeepEP's buffers
    // on top of the reserve's floor (`reserve_for_deepep_a2a_mb`) and 1 GiB
    // for the breakable prefill graphs' bridge pool (`reserve_for_graph_mb`);
    // the reserve here is above the 10 GiB floor (8,192-token chunks:
    // 512 + 12,288 + 512 MiB before the graphs).
    let m = model("qwen3-30b-a3b");
    let (off, auto) = (checked(&m, sglang_deepep(None)), checked(&m, sglang_deepep(Some(sglang::DeepepMode::Auto))));
    let gpu_mib = 138.0 * 1024.0;
    let fraction = |e: &Estimate| sglang_report(e).mem_fraction_static;
    assert!(((fraction(&off) - fraction(&auto)) - 3072.0 / gpu_mib).abs() <= 0.001 + 1e-9, "{off:?}");
    // `overrides.py::_a2a_ep_size`: the experts over every TP rank, 128 ÷ 4
    // whole experts per GPU (TP alone shards each expert over the four).
    let experts = |e: &Estimate| e.terms.iter().find(|t| t.name == "SGLang experts per GPU").map(|t| t.value);
    assert_eq!(experts(&auto), Some(32));
    assert_eq!(experts(&off), None, "TP shards each expert; no expert parallelism");
    let reserve = auto.terms.iter().find(|t| t.name == "SGLang DeepEP reserve").map(|t| t.value);
    assert_eq!(reserve, Some(3 << 30));
    // Normal mode turns CUDA graphs off (`moe_hook.py::handle_a2a_moe`):
    // no graph reserve and nothing for DeepEP's decode graphs, the floor's
    // 13,312 MiB alone.
    let normal = checked(&m, sglang_deepep(Some(sglang::DeepepMode::Normal)));
    assert!((fraction(&normal) - (gpu_mib - 13312.0) / gpu_mib).abs() <= 0.0005 + 1e-9, "{}", fraction(&normal));
    assert!(fraction(&normal) > fraction(&off));
    let line = launch(&m, sglang_deepep(Some(sglang::DeepepMode::Normal)));
    assert!(line.ends_with("--tp-size 4 --moe-a2a-backend deepep --deepep-mode normal"), "{line}");
    let line = launch(&m, sglang_deepep(Some(sglang::DeepepMode::Auto)));
    assert!(line.ends_with("--tp-size 4 --moe-a2a-backend deepep"), "{line}");
}

#[test]
fn a_logged_sglang_deepep_run_plans_it() {
    let m = model("qwen3-30b-a3b");
    let (s, taken) = logged(
        "[2026-11-20 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-30B-A3B', tp_size=4, dp_size=1, \
         ep_size=4, moe_a2a_backend='deepep', deepep_mode='low_latency', mem_fraction_static=None)\n\
         [2026-11-20 10:01:00 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, \
         avail mem=120.51 GB, mem usage=14.31 GB.\n",
        &m,
        Engine::Sglang(Default::default()),
    );
    let Engine::Sglang(o) = s.engine else { panic!("{:?}", s.engine) };
    assert!(o.moe_a2a_deepep, "{taken:?}");
    assert_eq!((o.deepep_mode, o.ep_size, s.tp), (sglang::DeepepMode::LowLatency, 4, 4), "{taken:?}");
}
