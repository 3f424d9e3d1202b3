//! llama.cpp's buffers against its own start-up logs and source: the KV
//! cache for every K/V type pair, routed experts on the CPU, KV on the host.

use crate::estimate;
use shared::engines::llamacpp::{CacheType, FlashAttention, Options};
use shared::engines::{Engine, EngineReport, llamacpp};
use shared::estimate::{GpuSlot, Scenario};
use shared::formats::WeightFormat;
use shared::model::Model;
use shared::units::{GIB, MIB};

pub(crate) fn model(id: &str) -> Model {
    Model::preset(id).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn scenario(o: Options, gpus: usize, gib: u64) -> Scenario {
    Scenario {
        weights: WeightFormat::parse("q4_k_m").unwrap_or_else(|e| panic!("{e}")),
        engine: Engine::LlamaCpp(o),
        gpus: (0..gpus).map(|i| GpuSlot::custom(format!("gpu{i}"), gib * GIB)).collect(),
        ..Scenario::default()
    }
}

pub(crate) fn report(m: &Model, s: Scenario) -> (llamacpp::Report, shared::estimate::Estimate) {
    let e = estimate(m, s);
    match e.engine_report.clone() {
        Some(EngineReport::LlamaCpp(r)) => (r, e),
        other => panic!("no llama.cpp report: {other:?}"),
    }
}

/// Bytes of one row of `n` values: ggml/src/ggml-common.h block sizes
/// (written out here, independent of the code under test).
fn row(t: CacheType, n: u64) -> u64 {
    let (block, bytes) = match t {
        CacheType::F32 => (1, 4),
        CacheType::F16 | CacheType::Bf16 => (1, 2),
        CacheType::Q8_0 => (32, 34),
        CacheType::Q4_0 | CacheType::Iq4Nl => (32, 18),
        CacheType::Q4_1 => (32, 20),
        CacheType::Q5_0 => (32, 22),
        CacheType::Q5_1 => (32, 24),
    };
    n / block * bytes
}

/// The log of ggml-org/llama.cpp#6122 (shared/tests/fixtures/startup/
/// llamacpp-old-two-gpus.txt): Command-R v01 (40 layers, 64 KV heads of
/// 128, n_ctx 4096, f16) prints "KV self size = 5120.00 MiB, K (f16):
/// 2560.00 MiB, V (f16): 2560.00 MiB" and 1536 + 3584 MiB on its two GPUs
/// (12 and 28 layers of 128 MiB).
#[test]
fn kv_buffers_equal_the_command_r_log() {
    let config = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
        "num_attention_heads": 64, "num_key_value_heads": 64, "num_hidden_layers": 40,
        "intermediate_size": 22528, "vocab_size": 256000, "max_position_embeddings": 131072}"#;
    let m = Model::from_config_json("command-r-like", config).unwrap_or_else(|e| panic!("{e}"));
    let o = Options { n_ctx: Some(4096), cache_type_k: Some(CacheType::F16), ..Default::default() };
    let (r, e) = report(&m, scenario(o, 2, 80));
    assert_eq!(e.kv_cache_bytes, 5120 * MIB);
    for g in &e.per_gpu {
        let layers = (g.layers[1] - g.layers[0]) as u64;
        assert_eq!(g.budget.kv_cache_bytes, layers * 128 * MIB);
    }
    assert_eq!((r.kv_cells, r.cache_type_k.as_str(), r.cache_type_v.as_str()), (4096, "f16", "f16"));
    assert!(r.log_lines.iter().any(|l| l.contains("size = 5120.00 MiB")), "{:?}", r.log_lines);
}

/// Every K/V type pair llama.cpp accepts (common/arg.cpp `kv_cache_types`):
/// Llama 3 8B keeps 8 × 128 = 1024 values of K and of V per layer and cell.
#[test]
fn kv_buffers_for_every_type_pair() {
    let m = model("llama-3-8b");
    for &k in CacheType::ALL {
        for &v in CacheType::ALL {
            let o = Options { n_ctx: Some(8192), cache_type_k: Some(k), cache_type_v: Some(v), ..Default::default() };
            let (r, e) = report(&m, scenario(o, 1, 80));
            assert_eq!(e.kv_cache_bytes, 32 * 8192 * (row(k, 1024) + row(v, 1024)), "{k:?}/{v:?}");
            assert_eq!((r.cache_type_k.as_str(), r.cache_type_v.as_str()), (k.id(), v.id()));
        }
    }
    // -ctv defaults to the key type.
    let o = Options { n_ctx: Some(8192), cache_type_k: Some(CacheType::Q5_1), ..Default::default() };
    assert_eq!(report(&m, scenario(o, 1, 80)).1.kv_cache_bytes, 32 * 8192 * 2 * row(CacheType::Q5_1, 1024));
}

#[test]
fn a_quantised_v_without_flash_attention_is_flagged() {
    let m = model("llama-3-8b");
    let o = Options { cache_type_v: Some(CacheType::Q8_0), flash_attention: FlashAttention::Off, ..Default::default() };
    let e = estimate(&m, scenario(o, 1, 80));
    assert!(
        e.warnings.iter().any(|w| w.contains("quantised V cache (q8_0) without flash attention")),
        "{:?}",
        e.warnings
    );
    // A quantised K alone is fine without it, and so is a quantised V with it.
    for (k, v, fa) in
        [(CacheType::Q8_0, CacheType::F16, FlashAttention::Off), (CacheType::F16, CacheType::Q4_0, FlashAttention::On)]
    {
        let o = Options { cache_type_k: Some(k), cache_type_v: Some(v), flash_attention: fa, ..Default::default() };
        let e = estimate(&m, scenario(o, 1, 80));
        assert!(!e.warnings.iter().any(|w| w.contains("flash attention")), "{:?}", e.warnings);
    }
}

/// src/llama-context.cpp pads n_ctx to 256 cells; without --kv-unified each
/// of the slots is a stream of `GGML_PAD(n_ctx / slots, 256)` cells.
#[test]
fn cells_are_padded_per_stream() {
    let m = model("llama-3-8b");
    let o = Options { n_ctx: Some(1000), ..Default::default() };
    let (r, e) = report(&m, scenario(o, 1, 80));
    assert_eq!(r.kv_cells, 1024);
    assert_eq!(e.kv_cache_bytes, 1024 * 32 * 4096);
    let o = Options { n_ctx: Some(10_000), parallel: Some(4), ..Default::default() };
    assert_eq!(report(&m, scenario(o, 1, 80)).0.kv_cells, 4 * 2560);
    let o = Options { n_ctx: Some(10_000), parallel: Some(4), kv_unified: true, ..Default::default() };
    assert_eq!(report(&m, scenario(o, 1, 80)).0.kv_cells, 10_240);
}

/// `--n-cpu-moe N` keeps the routed experts of layers 0..N on the CPU: the
/// GPUs lose exactly those bytes and the host gains them.
#[test]
fn routed_experts_of_the_first_layers_stay_on_the_cpu() {
    let m = model("qwen3-30b-a3b");
    let layers = m.layout.num_layers as u64;
    let base = Options { n_ctx: Some(4096), ..Default::default() };
    let (r0, e0) = report(&m, scenario(base, 1, 80));
    assert_eq!(r0.cpu_expert_bytes, 0);
    let (all, e_all) = report(&m, scenario(Options { n_cpu_moe: u64::from(u32::MAX), ..base }, 1, 80));
    let (half, e_half) = report(&m, scenario(Options { n_cpu_moe: layers / 2, ..base }, 1, 80));
    let gpu = |e: &shared::estimate::Estimate| e.per_gpu[0].budget.weight_bytes;
    // Experts are most of a MoE's weights; every layer has the same share.
    assert!(all.cpu_expert_bytes > gpu(&e0) * 8 / 10, "{} of {}", all.cpu_expert_bytes, gpu(&e0));
    assert_eq!(gpu(&e0) - gpu(&e_all), all.cpu_expert_bytes);
    assert_eq!(gpu(&e0) - gpu(&e_half), half.cpu_expert_bytes);
    assert!(half.cpu_expert_bytes.abs_diff(all.cpu_expert_bytes / 2) <= layers);
    // GPU plus host weights are the whole model, and the host needs them.
    assert_eq!(all.cpu_weight_bytes + gpu(&e_all), r0.cpu_weight_bytes + gpu(&e0));
    assert_eq!(
        all.host_ram_bytes,
        all.cpu_weight_bytes + all.cpu_kv_bytes + all.cpu_state_bytes + all.host_compute_bytes
    );
    // The KV cache stays on the GPU.
    assert_eq!(e_all.kv_cache_bytes, e0.kv_cache_bytes);
    assert!(all.log_lines.iter().any(|l| l.contains("cells")));
}

/// `--no-kv-offload`: every layer's cache in host memory, none on the GPU.
#[test]
fn no_kv_offload_keeps_the_cache_on_the_host() {
    let m = model("llama-3-8b");
    let base = Options { n_ctx: Some(8192), ..Default::default() };
    let (r0, e0) = report(&m, scenario(base, 1, 80));
    let (r, e) = report(&m, scenario(Options { no_kv_offload: true, ..base }, 1, 80));
    assert_eq!(e.per_gpu[0].budget.kv_cache_bytes, 0);
    assert_eq!(r.cpu_kv_bytes, e0.kv_cache_bytes);
    assert_eq!(r.host_ram_bytes, r0.host_ram_bytes + e0.kv_cache_bytes);
}

/// MLA's V cache by build: mainline kept V (`kv_lora_rank` per token and
/// layer, in type_v) beside the K latent (`kv_lora_rank + rope`) from b5137
/// to b7831 (the b5331 log's `K (f16): 1098.00 MiB, V (f16): 976.00 MiB`)
/// and none from b7832 (#19067); a plan without a build has the newest rules.
#[test]
fn mla_keeps_a_v_cache_before_b7832() {
    let m = model("deepseek-v3");
    let at = |build: Option<u64>| {
        let (_, e) = report(&m, scenario(Options { n_ctx: Some(16384), build, ..Default::default() }, 8, 141));
        e.kv_cache_bytes
    };
    let (old, new, newest) = (at(Some(llamacpp::VLESS_MLA_BUILD - 1)), at(Some(llamacpp::VLESS_MLA_BUILD)), at(None));
    assert_eq!(new, newest);
    // (512 + 64 + 512) / (512 + 64), f16 both.
    assert_eq!(old * 576, new * 1088, "{old} {new}");
}

/// A small `deepseek2` GGUF (2 layers, 4 heads; latent 64, rope 16, each
/// head's K 32 + 16 and V 32), converted for MLA (split `attn_k_b` and
/// `attn_v_b`, `key_length` the latent's, `key_length_mla` a head's) or
/// before it (one `attn_kv_b`, `key_length` a head's, convert_hf_to_gguf.py
/// before #12801).
fn deepseek2_gguf(converted_for_mla: bool) -> Model {
    mla_gguf("deepseek2", converted_for_mla)
}

/// [`deepseek2_gguf`]'s tensors and metadata under another architecture's name.
fn mla_gguf(arch: &'static str, converted_for_mla: bool) -> Model {
    use crate::checkpoint::writer::{self, Kv};
    use shared::checkpoint::{Checkpoint, gguf};
    const H: u64 = 256;
    const V: u64 = 1000;
    const HEADS: u64 = 4;
    let f32 = |shape: &[u64]| shape.iter().product::<u64>() * 4;
    let mut tensors: Vec<(String, Vec<u64>)> = vec![
        ("token_embd.weight".into(), vec![H, V]),
        ("output_norm.weight".into(), vec![H]),
        ("output.weight".into(), vec![H, V]),
    ];
    for l in 0..2 {
        let mut t = |name: &str, shape: Vec<u64>| tensors.push((format!("blk.{l}.{name}.weight"), shape));
        t("attn_norm", vec![H]);
        t("attn_q", vec![H, HEADS * 48]);
        t("attn_kv_a_mqa", vec![H, 64 + 16]);
        t("attn_kv_a_norm", vec![64]);
        if converted_for_mla {
            t("attn_k_b", vec![32, 64, HEADS]);
            t("attn_v_b", vec![64, 32, HEADS]);
        } else {
            t("attn_kv_b", vec![64, HEADS * (32 + 32)]);
        }
        t("attn_output", vec![HEADS * 32, H]);
        t("ffn_norm", vec![H]);
        t("ffn_gate", vec![H, 512]);
        t("ffn_up", vec![H, 512]);
        t("ffn_down", vec![512, H]);
    }
    let refs: Vec<(&str, &[u64], u32, u64)> =
        tensors.iter().map(|(n, s)| (n.as_str(), s.as_slice(), 0, f32(s))).collect();
    let (k, v, kv_heads) = if converted_for_mla { (64 + 16, 64, 1) } else { (48, 32, HEADS as u32) };
    let key = |k: &str| -> &'static str { Box::leak(format!("{arch}.{k}").into_boxed_str()) };
    let mut kvs = vec![
        ("general.architecture", Kv::Str(arch)),
        (key("block_count"), Kv::U32(2)),
        (key("embedding_length"), Kv::U32(H as u32)),
        (key("attention.head_count"), Kv::U32(HEADS as u32)),
        (key("attention.head_count_kv"), Kv::U32(kv_heads)),
        (key("attention.kv_lora_rank"), Kv::U32(64)),
        (key("rope.dimension_count"), Kv::U32(16)),
        (key("attention.key_length"), Kv::U32(k)),
        (key("attention.value_length"), Kv::U32(v)),
    ];
    if converted_for_mla {
        kvs.push((key("attention.key_length_mla"), Kv::U32(48)));
        kvs.push((key("attention.value_length_mla"), Kv::U32(32)));
    }
    let (bytes, size) = writer::gguf(3, &kvs, &refs);
    let file = gguf::parse(&bytes, Some(size)).unwrap_or_else(|e| panic!("{e}"));
    let c = Checkpoint::from_gguf(vec![("m.gguf".into(), file)]).unwrap_or_else(|e| panic!("{e}"));
    Model::from_checkpoint("m.gguf", None, &c).unwrap_or_else(|e| panic!("{e}"))
}

/// A DeepSeek GGUF converted before llama.cpp's MLA (no `key_length_mla`)
/// runs as multi-head attention on every mainline build: each head's K and
/// V cached (`llama_hparams::is_mla` false, src/llama-kv-cache.cpp), where
/// a GGUF converted for MLA caches the latent (and its V before b7832).
/// Other engines read the checkpoint's own latent.
#[test]
fn a_deepseek_gguf_converted_before_mla_caches_every_head() {
    let cells = 1024;
    let kv = |m: &Model, o: Options| report(m, scenario(Options { n_ctx: Some(cells), ..o }, 1, 80)).1.kv_cache_bytes;
    let (mla, legacy) = (deepseek2_gguf(true), deepseek2_gguf(false));
    assert!(!mla.legacy_mla_gguf && legacy.legacy_mla_gguf);
    // MiniCPM3's loader never reads `key_length_mla`: nothing to re-convert, nothing said.
    let minicpm3 = mla_gguf("minicpm3", false);
    assert!(!minicpm3.legacy_mla_gguf);
    assert!(!minicpm3.arch.warnings.iter().any(|w| w.contains("had MLA")));
    // Said, with the factor: 4 × (32 + 16 + 32) / (64 + 16).
    assert!(legacy.arch.warnings.iter().any(|w| w.contains("before llama.cpp had MLA") && w.contains(" 4×")));
    assert!(!mla.arch.warnings.iter().any(|w| w.contains("had MLA")));
    // f16: 2 layers × latent (64 + 16) × 2 bytes per cell.
    assert_eq!(kv(&mla, Options::default()), 2 * 80 * 2 * cells);
    // b5137 – b7831: the latent's V (64) beside it.
    let old = Options { build: Some(llamacpp::VLESS_MLA_BUILD - 1), ..Options::default() };
    assert_eq!(kv(&mla, old), 2 * (80 + 64) * 2 * cells);
    // Before MLA: 2 layers × 4 heads × (K 48 + V 32) × 2 bytes, on any build.
    for o in [Options::default(), old] {
        assert_eq!(kv(&legacy, o), 2 * 4 * (48 + 32) * 2 * cells);
    }
    // The same file on ik_llama.cpp, which splits `attn_kv_b` at load: its latent.
    let ik = Options { fork: llamacpp::Fork::Ik, ..Options::default() };
    assert!(kv(&legacy, ik) < kv(&legacy, Options::default()));
    // vLLM reads the checkpoint's latent whatever the conversion.
    let vllm = |m: &Model| {
        let s = Scenario { engine: Engine::Vllm(Default::default()), ..scenario(Options::default(), 1, 80) };
        estimate(m, s).kv_bytes_per_token
    };
    assert_eq!(vllm(&legacy), vllm(&mla));
}

/// A small `glm-dsa` GGUF as llama.cpp b8211's convert_hf_to_gguf.py
/// (`GlmMoeDsaModel`) writes GLM-5: 3 layers and one NextN layer in
/// `block_count` (4), the first layer dense, 8 routed experts and a shared
/// one, MLA (latent 64, rope 16, each head's K 32 + 16 and V 32) and the DSA
/// indexer (4 heads of 32) on every layer; tensor names and shapes of
/// src/llama-model.cpp `LLM_ARCH_GLM_DSA`.
fn glm_dsa_gguf() -> Model {
    glm_dsa_gguf_with(Vec::new())
}

/// [`glm_dsa_gguf`] with `extra` metadata.
fn glm_dsa_gguf_with(extra: Vec<(&'static str, crate::checkpoint::writer::Kv)>) -> Model {
    use crate::checkpoint::writer::{self, Kv};
    use shared::checkpoint::{Checkpoint, gguf};
    const H: u64 = 256;
    const V: u64 = 1000;
    const HEADS: u64 = 4;
    const QL: u64 = 96;
    const E: u64 = 8;
    const FFE: u64 = 64;
    let f32 = |shape: &[u64]| shape.iter().product::<u64>() * 4;
    let mut tensors: Vec<(String, Vec<u64>)> = vec![
        ("token_embd.weight".into(), vec![H, V]),
        ("output_norm.weight".into(), vec![H]),
        ("output.weight".into(), vec![H, V]),
    ];
    for l in 0..4 {
        let mut t = |name: &str, shape: Vec<u64>| tensors.push((format!("blk.{l}.{name}"), shape));
        t("attn_norm.weight", vec![H]);
        t("attn_q_a_norm.weight", vec![QL]);
        t("attn_kv_a_norm.weight", vec![64]);
        t("attn_q_a.weight", vec![H, QL]);
        t("attn_q_b.weight", vec![QL, HEADS * 48]);
        t("attn_kv_a_mqa.weight", vec![H, 64 + 16]);
        t("attn_k_b.weight", vec![32, 64, HEADS]);
        t("attn_v_b.weight", vec![64, 32, HEADS]);
        t("attn_output.weight", vec![HEADS * 32, H]);
        t("ffn_norm.weight", vec![H]);
        t("indexer.k_norm.weight", vec![32]);
        t("indexer.k_norm.bias", vec![32]);
        t("indexer.proj.weight", vec![H, 4]);
        t("indexer.attn_k.weight", vec![H, 32]);
        t("indexer.attn_q_b.weight", vec![QL, 4 * 32]);
        if l == 0 {
            t("ffn_gate.weight", vec![H, 512]);
            t("ffn_up.weight", vec![H, 512]);
            t("ffn_down.weight", vec![512, H]);
        } else {
            t("ffn_gate_inp.weight", vec![H, E]);
            t("exp_probs_b.bias", vec![E]);
            t("ffn_gate_exps.weight", vec![H, FFE, E]);
            t("ffn_up_exps.weight", vec![H, FFE, E]);
            t("ffn_down_exps.weight", vec![FFE, H, E]);
            t("ffn_gate_shexp.weight", vec![H, FFE]);
            t("ffn_up_shexp.weight", vec![H, FFE]);
            t("ffn_down_shexp.weight", vec![FFE, H]);
        }
        if l == 3 {
            t("nextn.eh_proj.weight", vec![2 * H, H]);
            t("nextn.enorm.weight", vec![H]);
            t("nextn.hnorm.weight", vec![H]);
            t("nextn.shared_head_norm.weight", vec![H]);
        }
    }
    let refs: Vec<(&str, &[u64], u32, u64)> =
        tensors.iter().map(|(n, s)| (n.as_str(), s.as_slice(), 0, f32(s))).collect();
    let mut kvs = vec![
        ("general.architecture", Kv::Str("glm-dsa")),
        ("glm-dsa.block_count", Kv::U32(4)),
        ("glm-dsa.embedding_length", Kv::U32(H as u32)),
        ("glm-dsa.feed_forward_length", Kv::U32(512)),
        ("glm-dsa.attention.head_count", Kv::U32(HEADS as u32)),
        ("glm-dsa.attention.head_count_kv", Kv::U32(1)),
        ("glm-dsa.attention.q_lora_rank", Kv::U32(QL as u32)),
        ("glm-dsa.attention.kv_lora_rank", Kv::U32(64)),
        ("glm-dsa.rope.dimension_count", Kv::U32(16)),
        ("glm-dsa.attention.key_length", Kv::U32(64 + 16)),
        ("glm-dsa.attention.value_length", Kv::U32(64)),
        ("glm-dsa.attention.key_length_mla", Kv::U32(48)),
        ("glm-dsa.attention.value_length_mla", Kv::U32(32)),
        ("glm-dsa.leading_dense_block_count", Kv::U32(1)),
        ("glm-dsa.expert_count", Kv::U32(E as u32)),
        ("glm-dsa.expert_used_count", Kv::U32(2)),
        ("glm-dsa.expert_shared_count", Kv::U32(1)),
        ("glm-dsa.expert_feed_forward_length", Kv::U32(FFE as u32)),
        ("glm-dsa.nextn_predict_layers", Kv::U32(1)),
        ("glm-dsa.attention.indexer.head_count", Kv::U32(4)),
        ("glm-dsa.attention.indexer.key_length", Kv::U32(32)),
        ("glm-dsa.attention.indexer.top_k", Kv::U32(64)),
    ];
    kvs.extend(extra);
    let (bytes, size) = writer::gguf(3, &kvs, &refs);
    let file = gguf::parse(&bytes, Some(size)).unwrap_or_else(|e| panic!("{e}"));
    let c = Checkpoint::from_gguf(vec![("glm-5.gguf".into(), file)]).unwrap_or_else(|e| panic!("{e}"));
    Model::from_checkpoint("glm-5.gguf", None, &c).unwrap_or_else(|e| panic!("{e}"))
}

/// A GLM-5 GGUF (`glm-dsa`) reads as llama.cpp loads it: the NextN layer
/// out of the decoder (no tensor loaded, no cache: `n_layer_kv_from_start`),
/// the indexer's tensors attention weights of their layers, MLA with the
/// indexer's widths, and on mainline the latent cached alone before b10243
/// (b8211 runs `llm_build_deepseek2` with the indexer unused), the
/// indexer's keys beside it from b10243 on the layers its
/// `attention.indexer.types` makes "full" (all of them without the key and
/// a GLM-5 `n_ctx_train`).
#[test]
fn a_glm_dsa_gguf_caches_the_latent_of_its_decoder_layers() {
    use shared::arch::{AttentionKind, Indexer, Role};
    let m = glm_dsa_gguf();
    let t = &m.arch.text;
    assert_eq!(t.num_layers(), 3);
    let AttentionKind::Mla(mla) = t.attention else { panic!("not MLA: {:?}", t.attention) };
    assert_eq!((mla.kv_lora_rank, mla.qk_rope_head_dim, mla.qk_nope_head_dim, mla.v_head_dim), (64, 16, 32, 32));
    assert_eq!(mla.indexer, Some(Indexer { heads: 4, head_dim: 32 }));
    assert!(!m.arch.warnings.iter().any(|w| w.contains("no rule classifies")), "{:?}", m.arch.warnings);
    let layout = &m.checkpoint.as_ref().unwrap_or_else(|| panic!("no checkpoint")).layout;
    // Layer 1's indexer: proj (256 × 4) and attn_q_b (96 × 128) query, attn_k (256 × 32) keys.
    let params = |role: Role| {
        layout.groups.iter().filter(|g| g.role == role && g.layer == Some(1)).map(|g| g.params).sum::<u64>()
    };
    assert_eq!(params(Role::AttnQ), 256 * 4 + 96 * 128);
    assert_eq!(params(Role::AttnK), 256 * 32);
    let moe: Vec<bool> = t.layers.iter().map(|l| l.ffn == shared::arch::Ffn::Moe).collect();
    assert_eq!(moe, [false, true, true]);
    // f16: 3 layers × latent (64 + 16) × 2 bytes per cell, and the
    // indexer's 32-wide keys from b10243.
    let cells = 1024;
    let kv = |m: &Model, build: Option<u64>| {
        report(m, scenario(Options { n_ctx: Some(cells), build, ..Default::default() }, 1, 80)).1.kv_cache_bytes
    };
    assert_eq!(kv(&m, Some(10_242)), 3 * 80 * 2 * cells);
    assert_eq!(kv(&m, Some(10_243)), 3 * (80 + 32) * 2 * cells);
    assert_eq!(kv(&m, None), 3 * (80 + 32) * 2 * cells);
    // Layer 1's indexer "shared" (GGUF bools, or 0/1 as here).
    let types = ("glm-dsa.attention.indexer.types", crate::checkpoint::writer::Kv::ArrU32(vec![1, 0, 1]));
    let shared_ix = glm_dsa_gguf_with(vec![types]);
    assert!(shared_ix.arch.text.layers[1].shape.indexer_shared);
    assert_eq!(kv(&shared_ix, None), (3 * 80 + 2 * 32) * 2 * cells);
    // gguf-py writes a Python int list as INT32.
    let types = ("glm-dsa.attention.indexer.types", crate::checkpoint::writer::Kv::ArrI32(vec![1, 0, 1]));
    assert!(glm_dsa_gguf_with(vec![types]).arch.text.layers[1].shape.indexer_shared);
}

/// GLM-5 from its config (`glm_moe_dsa`, 78 layers, latent 512 + rope 64,
/// the indexer's 128-wide keys, every layer's indexer "full"): llama.cpp
/// caches the latent alone before b10243 (b8211 runs it as dense MLA), and
/// from b10243 (`cache::GLM_DSA_INDEXER_BUILD`, the newest rules too) the
/// indexer's keys beside it in `type_k`, on every layer with a "full"
/// indexer: a config whose `indexer_types` makes some "shared" caches them
/// on the others only (GLM-5.2's IndexShare). vLLM and SGLang keep the
/// indexer's FP8 keys and their scales (132 B a layer) on every layer with
/// an indexer of its own: a "shared" layer has none in the checkpoint.
#[test]
fn glm5_from_its_config_caches_indexer_keys_on_its_full_layers_from_b10243() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/arch/defaults-glm_moe_dsa.json"))
            .unwrap_or_else(|e| panic!("{e}"));
    let m = Model::from_config_json("glm-5", &text).unwrap_or_else(|e| panic!("{e}"));
    let cells = 4096;
    let kv = |m: &Model, o: Options| report(m, scenario(Options { n_ctx: Some(cells), ..o }, 8, 141)).1.kv_cache_bytes;
    let build = |b: u64| Options { build: Some(b), ..Options::default() };
    assert_eq!(kv(&m, build(10_242)), 78 * 576 * 2 * cells);
    assert_eq!(kv(&m, build(10_243)), 78 * (576 + 128) * 2 * cells);
    assert_eq!(kv(&m, Options::default()), 78 * (576 + 128) * 2 * cells);
    // q8_0 keys: 34 bytes a block of 32, the indexer's in the same type.
    let q8 = Options { cache_type_k: Some(CacheType::Q8_0), ..Options::default() };
    assert_eq!(kv(&m, q8), 78 * (576 + 128) / 32 * 34 * cells);
    // ik_llama.cpp's `-mla 3` latent, its `--dsa` off (the default).
    assert_eq!(kv(&m, Options { fork: llamacpp::Fork::Ik, ..Options::default() }), 78 * 576 * 2 * cells);
    let vllm = Scenario {
        engine: Engine::Vllm(Default::default()),
        kv_dtype: shared::kv::KvDtype::Bf16,
        ..scenario(Options::default(), 8, 141)
    };
    assert_eq!(estimate(&m, vllm.clone()).kv_bytes_per_token, 78 * (576 * 2 + 128 + 4));
    // Every layer but the first two "shared".
    let mut config: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let types: Vec<&str> = (0..78).map(|i| if i < 2 { "full" } else { "shared" }).collect();
    config["indexer_types"] = types.into();
    let shared_ix = Model::from_config_json("glm-5.2-like", &config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kv(&shared_ix, Options::default()), (78 * 576 + 2 * 128) * 2 * cells);
    let sglang = Scenario { engine: Engine::Sglang(Default::default()), ..vllm.clone() };
    for engine in [vllm, sglang] {
        let name = engine.engine.kind().id();
        let e = estimate(&shared_ix, engine);
        assert_eq!(e.kv_bytes_per_token, 78 * 576 * 2 + 2 * (128 + 4), "{name}");
        let term = e.terms.iter().find(|t| t.name == "KV cache per token").unwrap_or_else(|| panic!("{name}"));
        assert!(term.formula.contains("key of 128 values on 2 of them"), "{name}: {}", term.formula);
        assert!(term.formula.contains("(1,284 or 1,152 bytes per layer-token)"), "{name}: {}", term.formula);
    }
    // What is neither, or a list of another length, is said.
    let sparse: Vec<&str> = (0..78).map(|i| if i == 5 { "sparse" } else { "full" }).collect();
    for bad in [serde_json::json!(vec!["full"; 77]), sparse.into()] {
        config["indexer_types"] = bad;
        let err = Model::from_config_json("bad", &config.to_string()).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("indexer_types"), "{err}");
    }
}

/// A small MoE GGUF header (qwen2moe, 4 layers, q8_0 attention and
/// shared experts, q4_K routed experts): the model, its checkpoint and its
/// tensors as (name, bytes).
pub(crate) fn small_moe_gguf() -> (Model, shared::checkpoint::Checkpoint, Vec<(String, u64)>) {
    use crate::checkpoint::writer::{self, Kv};
    use shared::checkpoint::{Checkpoint, gguf};
    const H: u64 = 256;
    const I: u64 = 512;
    const E: u64 = 8;
    const V: u64 = 1000;
    let q8 = |n: u64| n / 32 * 34;
    let q4k = |n: u64| n / 256 * 144;
    let mut tensors: Vec<(String, Vec<u64>, u32, u64)> = vec![
        ("token_embd.weight".into(), vec![H, V], 8, q8(H * V)),
        ("output_norm.weight".into(), vec![H], 0, H * 4),
        ("output.weight".into(), vec![H, V], 8, q8(H * V)),
    ];
    for l in 0..4 {
        tensors.push((format!("blk.{l}.attn_norm.weight"), vec![H], 0, H * 4));
        tensors.push((format!("blk.{l}.attn_q.weight"), vec![H, H], 8, q8(H * H)));
        tensors.push((format!("blk.{l}.attn_k.weight"), vec![H, 64], 8, q8(H * 64)));
        tensors.push((format!("blk.{l}.attn_v.weight"), vec![H, 64], 8, q8(H * 64)));
        tensors.push((format!("blk.{l}.attn_output.weight"), vec![H, H], 8, q8(H * H)));
        tensors.push((format!("blk.{l}.ffn_gate_inp.weight"), vec![H, E], 0, H * E * 4));
        tensors.push((format!("blk.{l}.ffn_gate_exps.weight"), vec![H, I, E], 12, q4k(H * I * E)));
        tensors.push((format!("blk.{l}.ffn_up_exps.weight"), vec![H, I, E], 12, q4k(H * I * E)));
        tensors.push((format!("blk.{l}.ffn_down_exps.weight"), vec![I, H, E], 12, q4k(H * I * E)));
        tensors.push((format!("blk.{l}.ffn_up_shexp.weight"), vec![H, I], 8, q8(H * I)));
        tensors.push((format!("blk.{l}.ffn_down_shexp.weight"), vec![I, H], 8, q8(H * I)));
    }
    let refs: Vec<(&str, &[u64], u32, u64)> =
        tensors.iter().map(|(n, s, t, b)| (n.as_str(), s.as_slice(), *t, *b)).collect();
    let (bytes, size) = writer::gguf(
        3,
        &[
            ("general.architecture", Kv::Str("qwen2moe")),
            ("general.file_type", Kv::U32(7)),
            ("qwen2moe.block_count", Kv::U32(4)),
            ("qwen2moe.embedding_length", Kv::U32(H as u32)),
            ("qwen2moe.context_length", Kv::U32(8192)),
            ("qwen2moe.attention.head_count", Kv::U32(8)),
            ("qwen2moe.attention.head_count_kv", Kv::U32(2)),
            ("qwen2moe.attention.key_length", Kv::U32(32)),
            ("qwen2moe.expert_count", Kv::U32(E as u32)),
            ("qwen2moe.expert_used_count", Kv::U32(2)),
        ],
        &refs,
    );
    let file = gguf::parse(&bytes, Some(size)).unwrap_or_else(|e| panic!("{e}"));
    let c = Checkpoint::from_gguf(vec![("m.gguf".into(), file)]).unwrap_or_else(|e| panic!("{e}"));
    let m = Model::from_checkpoint("m.gguf", None, &c).unwrap_or_else(|e| panic!("{e}"));
    (m, c, tensors.into_iter().map(|(n, _, _, b)| (n, b)).collect())
}

/// With a GGUF header the GPU model buffer is the sum of the tensors placed
/// there: `--n-cpu-moe 2` moves exactly the `blk.{0,1}.ffn_*_exps` tensors
/// to the host, shared experts and the router stay.
#[test]
fn a_gguf_header_gives_the_exact_buffers_with_experts_on_the_cpu() {
    let (m, c, tensors) = small_moe_gguf();
    let sum = |keep: &dyn Fn(&str) -> bool| tensors.iter().filter(|t| keep(&t.0)).map(|t| t.1).sum::<u64>();
    let o = Options { n_ctx: Some(4096), n_cpu_moe: 2, ..Default::default() };
    let s = Scenario { weights: m.default_format(), ..scenario(o, 1, 24) };
    let (r, e) = report(&m, s);
    let cpu_experts = sum(&|n| (n.starts_with("blk.0.") || n.starts_with("blk.1.")) && n.contains("_exps"));
    assert_eq!(r.cpu_expert_bytes, cpu_experts);
    // The GPU holds every tensor but the token embedding and those experts.
    let embd = sum(&|n| n == "token_embd.weight");
    assert_eq!(e.per_gpu[0].budget.weight_bytes, c.total_bytes() - embd - cpu_experts);
    assert_eq!(r.cpu_weight_bytes, embd + cpu_experts);
    // KV: 4 layers × 4096 cells × 2 KV heads × 32 × (K + V) × 2 bytes (bf16 by default).
    assert_eq!(e.kv_cache_bytes, 4 * 4096 * 2 * 32 * 2 * 2);
}

/// fedora-copr/logdetective#106 (shared/tests/fixtures/startup/
/// llamacpp-mistral-7b-{2k,32k}.txt): Mistral 7B, flash attention off,
/// n_ubatch 512. The KV buffers are exact; the compute buffers are too,
/// by the rules of the builds that print their `llama_new_context_with_model:`
/// lines (to b4462): before the KV stores' row indices, which today's
/// builds keep on the host (4 MiB more at n_ubatch 512 without flash
/// attention: one I64 per token and V element, and one per token for K),
/// and before the embeddings input beside the token rows (8 MiB more,
/// `llamacpp::EMBD_INPUT_BUILD`).
#[test]
fn mistral_7b_buffers_equal_the_logdetective_logs() {
    let m = model("mistral-7b-v0.3");
    for (ctx, kv_mib, gpu_compute, host_compute) in [(2048, 256, "164.00", "12.01"), (32768, 4096, "2144.00", "72.01")]
    {
        let o = Options {
            n_ctx: Some(ctx),
            cache_type_k: Some(CacheType::F16),
            flash_attention: FlashAttention::Off,
            build: Some(4462),
            ..Default::default()
        };
        let (r, e) = report(&m, scenario(o, 1, 80));
        assert_eq!(e.kv_cache_bytes, kv_mib * MIB);
        let newest = report(&m, scenario(Options { build: None, ..o }, 1, 80)).0;
        let embd_input = 4096 * 512 * 4;
        assert_eq!(newest.host_compute_bytes, r.host_compute_bytes + 512 * (1024 + 1) * 8 + embd_input, "n_ctx {ctx}");
        let mib = |b: u64| format!("{:.2}", b as f64 / MIB as f64);
        assert_eq!(mib(e.per_gpu[0].budget.activation_bytes), gpu_compute, "n_ctx {ctx}");
        assert_eq!(mib(r.host_compute_bytes), host_compute, "n_ctx {ctx}");
    }
}

/// The smallest `--n-cpu-moe` that loads is a boundary, and its fix is the
/// exact `llama-server` line.
#[test]
fn the_smallest_n_cpu_moe_that_loads() {
    use shared::solve::{self, Question};
    let m = model("qwen3-30b-a3b");
    let s = scenario(Options { n_ctx: Some(8192), ..Default::default() }, 1, 12);
    assert!(!estimate(&m, s.clone()).fits, "the test needs a plan that does not load");
    let a = solve::solve(&m, &s, Question::MinCpuMoe);
    let n = a.value.unwrap_or_else(|| panic!("{}", a.explanation));
    assert!(n > 0 && n < m.layout.num_layers as u64, "{n}");
    let with = |k: u64| Scenario {
        engine: Engine::LlamaCpp(Options { n_cpu_moe: k, n_ctx: Some(8192), ..Default::default() }),
        ..s.clone()
    };
    // The verdict at llama.cpp's n_ctx: N loads, N − 1 does not.
    assert!(estimate(&m, with(n)).fits);
    assert!(!estimate(&m, with(n - 1)).fits);
    assert_eq!(
        a.choice.as_deref(),
        Some(
            format!("llama-server -m model-Q4_K_M.gguf -c 8192 -np 1 -fa on -ctk bf16 -ctv bf16 --n-cpu-moe {n}")
                .as_str()
        )
    );
    let fixes = shared::fixes::fixes(&m, &s);
    assert!(
        fixes.iter().any(|f| f.code.ends_with(&format!("--n-cpu-moe {n}")) && f.fits),
        "{:?}",
        fixes.iter().map(|f| &f.code).collect::<Vec<_>>()
    );
    // A dense model has no experts to move.
    let dense = solve::solve(&model("llama-3-8b"), &scenario(Options::default(), 1, 12), Question::MinCpuMoe);
    assert!(!dense.found);
}

/// A llama.cpp plan `o` in a share link: it writes `keys` and reads back
/// as the same state, with no notice.
pub(crate) fn link_round_trip(o: Options, keys: &[&str]) {
    use shared::link::{LinkState, decode, encode};
    let state = LinkState { engine: Engine::LlamaCpp(o), ..LinkState::default() };
    let link = encode(&state);
    for key in keys {
        assert!(link.contains(key), "{link}");
    }
    let d = decode(&link);
    assert_eq!(d.state, state);
    assert!(d.notices.is_empty(), "{:?}", d.notices);
}

/// The new llama.cpp knobs travel in share links (new keys, frozen
/// defaults), and a link without them means what it meant before.
#[test]
fn share_links_carry_the_new_knobs() {
    use shared::link::decode;
    let o = Options {
        cache_type_k: Some(CacheType::Q8_0),
        cache_type_v: Some(CacheType::Iq4Nl),
        n_cpu_moe: 20,
        no_kv_offload: true,
        kv_unified: true,
        swa_full: true,
        ..Default::default()
    };
    link_round_trip(o, &["ctk=q8_0", "ctv=iq4_nl", "ncmoe=20", "nkvo=1", "kvu=1", "swafull=1"]);
    // A v1 link of llama.cpp: every new knob at its frozen default.
    assert_eq!(
        decode("?e=llama.cpp&ngl=20").state.engine,
        Engine::LlamaCpp(Options { n_gpu_layers: Some(20), ..Default::default() })
    );
    assert!(!decode("?e=llama.cpp&ctk=fp8").notices.is_empty());
}

/// The host RAM a plan leaves on the CPU, against the host's when given:
/// in the report, a warning past it, and in share links.
#[test]
fn host_ram_is_checked_against_the_hosts() {
    let m = model("qwen3-30b-a3b");
    let o = Options { n_ctx: Some(8192), n_cpu_moe: u64::from(u32::MAX), ..Default::default() };
    let warned = |ram: Option<u64>| {
        let (r, e) = report(&m, scenario(Options { host_ram_bytes: ram, ..o }, 1, 24));
        assert_eq!(r.host_ram_limit_bytes, ram);
        (r.host_ram_bytes, e.warnings.iter().any(|w| w.contains("of host RAM")))
    };
    let (need, none) = warned(None);
    assert!(need > 8 * GIB && !none, "{need}");
    assert!(warned(Some(8 * GIB)).1);
    assert!(!warned(Some(need)).1, "exactly enough RAM is enough");
    use shared::link::decode;
    let ram = |q: &str| match decode(q).state.engine {
        Engine::LlamaCpp(o) => o.host_ram_bytes,
        other => panic!("{other:?}"),
    };
    assert_eq!(ram("?e=llama.cpp&ram=64"), Some(64 * GIB));
    assert_eq!(ram("?e=llama.cpp&ram=64GiB"), Some(64 * GIB));
    assert!(!decode("?e=llama.cpp&ram=lots").notices.is_empty());
    let state = shared::link::LinkState {
        engine: Engine::LlamaCpp(Options { host_ram_bytes: Some(64 * GIB), ..Default::default() }),
        ..Default::default()
    };
    assert!(shared::link::encode(&state).contains("ram=64GiB"));
}

/// On unified memory (DGX Spark) the host's share is what the GPU side
/// leaves of the one pool: CPU-mapped experts and the GPU's buffers both
/// come out of it.
#[test]
fn unified_memory_is_one_budget_for_the_gpu_and_the_host() {
    let spark = shared::catalog::gpu("dgx-spark").unwrap_or_else(|| panic!("in the catalog"));
    let pool = spark.unified_bytes.unwrap_or_else(|| panic!("unified"));
    let on_spark = |o: Options| Scenario { gpus: vec![GpuSlot::from_catalog(spark)], ..scenario(o, 1, 1) };
    let m = model("gpt-oss-120b");
    let (r, e) = report(&m, on_spark(Options { n_cpu_moe: 12, ..Default::default() }));
    assert_eq!(r.host_ram_limit_bytes, Some(pool - e.per_gpu[0].total_bytes));
    assert!(r.cpu_expert_bytes > 0 && r.host_ram_bytes < pool - e.per_gpu[0].total_bytes);
    assert!(!e.warnings.iter().any(|w| w.contains("of host RAM")), "{:?}", e.warnings);
    // Qwen3 235B's experts on the CPU: more than the pool leaves.
    let big = model("qwen3-235b-a22b");
    let (r, e) = report(&big, on_spark(Options { n_cpu_moe: u64::from(u32::MAX), ..Default::default() }));
    assert!(r.host_ram_bytes > r.host_ram_limit_bytes.unwrap_or(u64::MAX));
    assert!(e.warnings.iter().any(|w| w.contains("the unified memory's")), "{:?}", e.warnings);
    // A host RAM given by hand wins over the pool.
    let (r, _) = report(&m, on_spark(Options { host_ram_bytes: Some(64 * GIB), ..Default::default() }));
    assert_eq!(r.host_ram_limit_bytes, Some(64 * GIB));
    // A discrete GPU has no such limit unless given.
    assert_eq!(report(&m, scenario(Options::default(), 1, 80)).0.host_ram_limit_bytes, None);
}

/// On a Mac, Metal's working-set limit is the GPU side and the rest of the
/// unified memory is the host's share, as on a DGX Spark; vLLM, SGLang and
/// the transformers model need CUDA or ROCm and are refused with a reason.
#[test]
fn a_mac_is_unified_memory_that_only_metal_engines_plan() {
    use shared::engines::{ollama, sglang, vllm};
    let mac = shared::catalog::gpu("m4-max-128gb").unwrap_or_else(|| panic!("in the catalog"));
    let pool = mac.unified_bytes.unwrap_or_else(|| panic!("unified"));
    let on_mac = |engine: Engine| Scenario {
        gpus: vec![GpuSlot::from_catalog(mac)],
        engine,
        ..scenario(Options::default(), 1, 1)
    };
    let m = model("gpt-oss-120b");
    let (r, e) = report(&m, on_mac(Engine::LlamaCpp(Options { n_cpu_moe: 12, ..Default::default() })));
    assert_eq!(r.host_ram_limit_bytes, Some(pool - e.per_gpu[0].total_bytes));
    assert!(e.per_gpu[0].total_bytes > 0 && r.cpu_expert_bytes > 0);
    // No CUDA context: Metal's free memory is the working set less this
    // process's buffers; a discrete GPU pays its context.
    assert_eq!(e.per_gpu[0].budget.overhead_bytes, 0);
    assert!(report(&m, scenario(Options::default(), 1, 80)).1.per_gpu[0].budget.overhead_bytes > 0);
    let o = estimate(&m, on_mac(Engine::Ollama(ollama::Options::default())));
    assert!(o.per_gpu[0].total_bytes > 0, "Ollama runs on Metal");
    for engine in [
        Engine::Vllm(vllm::Options::default()),
        Engine::Sglang(sglang::Options::default()),
        Engine::Transformers(Default::default()),
    ] {
        let name = engine.kind().name();
        let err = on_mac(engine).validate().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            err == format!("{name} needs CUDA or ROCm; the {} runs Metal: plan it in llama.cpp or Ollama", mac.name),
            "{name}: {err}"
        );
    }
    // Strix Halo runs ROCm: vLLM plans on it.
    let strix = shared::catalog::gpu("strix-halo-128gb").unwrap_or_else(|| panic!("in the catalog"));
    let s = Scenario {
        gpus: vec![GpuSlot::from_catalog(strix)],
        engine: Engine::Vllm(vllm::Options::default()),
        ..Scenario::default()
    };
    assert!(s.validate().is_ok());
}

/// `--cpu-moe` finds gpt-oss's expert biases as it finds their weights:
/// its pattern `\.ffn_(up|down|gate)_(ch|)exps` (common/common.h
/// `LLM_FFN_EXPS_REGEX`) is searched in each name, so
/// `blk.N.ffn_{gate,up,down}_exps.bias` go to the CPU too. gpt-oss-20b's
/// MXFP4 MoE GGUF: 24 layers of 32 experts, each with F32 biases of 2880
/// (gate), 2880 (up) and 2880 (down) values; the GPU keeps none of them.
#[test]
fn cpu_moe_moves_the_experts_biases_with_their_weights() {
    let m = model("gpt-oss-20b");
    let base = Options { n_ctx: Some(4096), ..Default::default() };
    let gguf = |o: Options| Scenario {
        weights: WeightFormat::parse("gguf-mxfp4-moe").unwrap_or_else(|e| panic!("{e}")),
        ..scenario(o, 1, 80)
    };
    let (r0, e0) = report(&m, gguf(base));
    let (all, e_all) = report(&m, gguf(Options { n_cpu_moe: u64::from(u32::MAX), ..base }));
    let gpu = |e: &shared::estimate::Estimate| e.per_gpu[0].budget.weight_bytes;
    // MXFP4: 17 bytes per 32 weights (ggml-common.h `block_mxfp4`), the
    // gate, up and down experts 32 × 2880 × 2880 each.
    let matrices = 24 * 3 * 32 * 2880 * 2880 / 32 * 17;
    let biases = 24 * 32 * (3 * 2880) * 4;
    assert_eq!(biases, 26_542_080);
    assert_eq!(r0.cpu_expert_bytes, 0);
    assert_eq!(all.cpu_expert_bytes, matrices + biases);
    assert_eq!(gpu(&e0) - gpu(&e_all), matrices + biases);
    assert_eq!(all.cpu_weight_bytes - r0.cpu_weight_bytes, matrices + biases);
}

/// Experts kept on the CPU are multiplied on the first GPU when the ubatch
/// reaches the scheduler's offload threshold (ggml-backend.cpp, 32 tokens
/// for CUDA): the largest expert tensor is staged in CUDA0's compute buffer
/// with the expert FFN's activations, or above the gate copy's hole when the
/// layer lives on another GPU; CUDA1 and a 16-token ubatch are not touched.
#[test]
fn experts_on_the_cpu_are_staged_in_the_first_gpus_compute_buffer() {
    // Qwen3-235B-A22B: an expert tensor (128 × 4096 × 1536) outweighs the
    // output layer's logits the buffer holds otherwise.
    let m = model("qwen3-235b-a22b");
    let layers = m.layout.num_layers as u64;
    let t = &m.arch.text;
    let moe = t.moe.expect("an MoE");
    let base = Options { n_ctx: Some(4096), ..Default::default() };
    let cpu_moe = Options { n_cpu_moe: u64::from(u32::MAX), ..base };
    let compute = |o: Options, gpus: usize| {
        let (r, e) = report(&m, scenario(o, gpus, 80));
        (r, e.per_gpu.iter().map(|g| g.budget.activation_bytes).collect::<Vec<_>>())
    };
    let (_, on_gpu) = compute(base, 1);
    let (r, staged) = compute(cpu_moe, 1);
    assert!(r.cpu_expert_bytes / (3 * layers) > on_gpu[0], "{} vs {}", r.cpu_expert_bytes / (3 * layers), on_gpu[0]);
    // One of the 3 × layers expert tensors (gate, up, down: the same
    // elements each), beside 4 bytes × ubatch × (used × (hidden + expert
    // FFN) + hidden) of activations.
    let tensor = r.cpu_expert_bytes / (3 * layers);
    let acts = 4 * 512 * (moe.experts_per_token * (t.hidden_size + moe.expert_intermediate_size) + t.hidden_size);
    // Q4_K_M keeps half of the ffn_down tensors in Q6_K (210 bytes per 256
    // weights, ggml-common.h): the largest one is staged.
    let down_q6k = moe.num_experts * t.hidden_size * moe.expert_intermediate_size / 256 * 210;
    assert!(down_q6k > tensor);
    // The replay stages each copy among the layer's live tensors (checked
    // against llama-server's own reservation for a smaller Qwen3-MoE,
    // `graph::tests::qwen3_moe_stages_its_host_experts`): above the copy and
    // its activations, three hidden-wide F32 tensors (the residual stream,
    // the FFN input and its norm), the F16 mask of 4,096 cells, and the
    // positions and both stores' row indices.
    let live = 3 * (t.hidden_size * 512 * 4) + 4096 * 512 * 2 + 512 * (4 + 8 + 8);
    assert_eq!(staged[0], down_q6k + acts + live);
    assert!(staged[0] > on_gpu[0]);
    let (_, small) = compute(Options { n_ubatch: 16, ..cpu_moe }, 1);
    let (_, small_gpu) = compute(Options { n_ubatch: 16, ..base }, 1);
    assert_eq!(small, small_gpu);
    let (_, two) = compute(cpu_moe, 2);
    let (_, two_gpu) = compute(base, 2);
    // All on the GPUs, the two run as a pipeline and keep four copies of
    // their inputs (hidden × ubatch F32 activations, F16 masks of 4,096
    // cells); experts on the CPU are tensor overrides: no pipeline.
    let copies = 4 * (t.hidden_size * 512 * 4) + 3 * (4096 * 512 * 2);
    assert_eq!(two[1] + copies, two_gpu[1]);
    // The second GPU's layers send their experts to an empty CUDA0: the gate
    // copy (Q4_K) takes the bottom, the up copy its place, and the larger
    // Q6_K down copy no longer fits the hole they leave with the input: it
    // goes above the selection (ggml-alloc, `staged_moe`). The plan names
    // no build, so today's: the GLU product, out of place, takes the
    // hole's bottom and gate and up are freed above the selection (before
    // GLU the product stayed there in place, and the down copy went above it).
    let gate_q4k = moe.num_experts * t.hidden_size * moe.expert_intermediate_size / 256 * 144;
    let on_top = gate_q4k + 4 * 512 * (t.hidden_size + moe.num_experts) + down_q6k;
    assert!(down_q6k > gate_q4k + 4 * 512 * t.hidden_size);
    assert_eq!(two[0], on_top.max(two_gpu[0] - copies));
    assert!(two[0] > staged[0]);
}

/// MLA's query side piles up in llama.cpp's compute buffer (issue 35): a
/// real mainline log (b5331, DeepSeek-V3-0324 on four GPUs, `-c 16384 -ub
/// 1024`, flash attention on; `llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on`)
/// logs 788 MiB on every GPU that stages no expert, where the dense formula
/// gave 112 MiB. Without flash attention the F32 scores of 128 heads join.
#[test]
fn an_mla_models_compute_buffer_holds_its_query_side() {
    let m = model("deepseek-v3");
    let log = crate::startup::log("llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on");
    let logged: Vec<u64> = log
        .facts
        .iter()
        .filter_map(|f| match (f.scope.as_deref(), &f.figure) {
            (Some(scope), shared::startup::Figure::Buffer { buffer: shared::startup::Buffer::Compute, bytes })
                if scope != "CUDA0" && scope.strip_prefix("CUDA").is_some_and(|n| n.parse::<u8>().is_ok()) =>
            {
                Some(*bytes)
            }
            _ => None,
        })
        .collect();
    assert_eq!(logged.len(), 3, "{:?}", log.facts);
    // Experts in host RAM, so the plan fits: CUDA0 stages them, the others do not.
    let o = Options { n_ctx: Some(16_384), n_ubatch: 1024, n_cpu_moe: u64::from(u32::MAX), ..Default::default() };
    let (_, e) = report(&m, scenario(o, 4, 80));
    let compute: Vec<u64> = e.per_gpu.iter().map(|g| g.budget.activation_bytes).collect();
    for (g, logged) in compute[1..].iter().zip(&logged) {
        let error = (*g as f64 - *logged as f64) / *logged as f64;
        assert!(error.abs() < 0.05, "{g} vs {logged}: {error}");
    }
    // 4 × 1024 × (2 × 7168 + 1536 + 128 × (128 + 3 × 64 + 2 × 512)) + the F16 mask 2 × 16384 × 1024.
    assert_eq!(compute[1], 4 * 1024 * (2 * 7168 + 1536 + 128 * (128 + 3 * 64 + 2 * 512)) + 2 * 16_384 * 1024);
    let off = Options { flash_attention: shared::engines::llamacpp::FlashAttention::Off, ..o };
    let (_, e) = report(&m, scenario(off, 4, 80));
    let scores = 4 * 16_384 * 1024 * 128;
    assert!(e.per_gpu[1].budget.activation_bytes > compute[1] + scores, "{}", e.per_gpu[1].budget.activation_bytes);
}

/// The `llama-server` line speaks the plan's build: before b6325 (#15434)
/// llama.cpp kept every layer on the CPU and flash attention off unless asked
/// and took `-fa` bare; before b7407 (#16653) it had no `--fit`.
#[test]
fn the_server_line_speaks_the_plans_build() {
    use shared::engines::llamacpp::{FitMode, server_command};
    let m = model("llama-3-8b");
    let line = |build: Option<u64>, fa: FlashAttention, fit: FitMode| {
        let o = Options { build, flash_attention: fa, fit, ..Default::default() };
        server_command(&m, &scenario(o, 1, 24))
    };
    let b5192 = line(Some(5192), FlashAttention::On, FitMode::On);
    assert!(b5192.contains(" -ngl 999") && b5192.contains(" -fa") && !b5192.contains("-fa on"), "{b5192}");
    assert!(!line(Some(5192), FlashAttention::Off, FitMode::On).contains("-fa"));
    let b6325 = line(Some(llamacpp::OFFLOAD_DEFAULT_BUILD), FlashAttention::On, FitMode::Off);
    assert!(b6325.contains("-fa on") && !b6325.contains("-ngl") && !b6325.contains("--fit"), "{b6325}");
    assert!(line(Some(llamacpp::FIT_BUILD), FlashAttention::On, FitMode::Off).contains("--fit off"));
    let newest = line(None, FlashAttention::Off, FitMode::Off);
    assert!(newest.contains("-fa off") && newest.contains("--fit off") && !newest.contains("-ngl"), "{newest}");
    // Read back, the old line is the same plan: every layer, flash attention on.
    let read = shared::startup::read_command_line(&b5192.split_whitespace().collect::<Vec<_>>()).expect("read");
    assert_eq!((read.config.n_gpu_layers, read.config.flash_attn.as_deref()), (Some(999), Some("1")));
}

/// `-ngl N` of a model with `n` repeating layers: from b7467 (#18148) the
/// output layer goes first, then `N − 1` repeating layers; before, and in
/// ik_llama.cpp, the last `N` repeating layers, the output only past `n`.
#[test]
fn ngl_takes_the_output_layer_first_from_its_build() {
    use shared::engines::llamacpp::{Fork, OUTPUT_FIRST_BUILD};
    let m = model("llama-3.1-8b");
    let n = m.arch.text.num_layers();
    let at = |ngl: u64, build: Option<u64>, fork: Fork| {
        let o = Options { n_gpu_layers: Some(ngl), build, fork, n_ctx: Some(4096), ..Default::default() };
        let (r, _) = report(&m, scenario(o, 1, 80));
        (r.layers_on_gpu, r.output_on_gpu)
    };
    for build in [None, Some(OUTPUT_FIRST_BUILD)] {
        assert_eq!(at(n, build, Fork::Mainline), (n - 1, true), "{build:?}");
        assert_eq!(at(1, build, Fork::Mainline), (0, true), "{build:?}");
        assert_eq!(at(n + 1, build, Fork::Mainline), (n, true), "{build:?}");
    }
    let old = Some(OUTPUT_FIRST_BUILD - 1);
    assert_eq!(at(n, old, Fork::Mainline), (n, false));
    assert_eq!(at(1, old, Fork::Mainline), (1, false));
    assert_eq!(at(n + 1, old, Fork::Mainline), (n, true));
    assert_eq!(at(n, None, Fork::Ik), (n, false), "ik_llama.cpp keeps the old rule");
}

/// An output head left in host memory is copied to the first GPU for the
/// logits' matmul on CUDA (ggml-backend.cpp `offload_op`, batch ≥ 32), which
/// the compute buffer holds; Metal before b6441 offloads no op (ggml-metal.m
/// `offload_op` returns false), and from it Apple's default BLAS keeps the
/// head's `MUL_MAT`: a Mac's buffer holds no such copy. Builds before
/// #18148 keep the output layer on the CPU until `-ngl` passes the
/// repeating layers (b5398 src/llama-model.cpp `i_gpu_start`).
#[test]
fn a_host_head_is_staged_on_cuda_and_never_on_metal() {
    let m = model("llama-3.1-8b");
    let layers = m.layout.num_layers as u64;
    let mac = GpuSlot::from_catalog(shared::catalog::gpu("m4-max-128gb").unwrap_or_else(|| panic!("in the catalog")));
    let compute = |gpu: &GpuSlot, ngl: u64| {
        let o = Options { n_gpu_layers: Some(ngl), build: Some(5398), ..Default::default() };
        let s = Scenario { gpus: vec![gpu.clone()], ..scenario(o, 1, 80) };
        report(&m, s).0.compute_buffer_bytes
    };
    let cuda = GpuSlot::custom("80 GiB", 80 * GIB);
    // The head on the CPU (`-ngl` = the repeating layers) against every layer on the GPU.
    assert!(compute(&cuda, layers) > compute(&cuda, layers + 1), "CUDA stages the head");
    assert!(compute(&mac, layers) <= compute(&mac, layers + 1), "Metal stages nothing");
}

/// Slots as streams (`kv_unified = false`, b6071 on): each of the reserved
/// ubatch's sequences attends over its own stream's cells
/// (src/llama-graph.cpp `build_kq_mask`: `[n_kv, n_tokens / n_stream, 1,
/// n_stream]`, `n_kv` one stream's size): the host's masks are one
/// stream's, so Mistral 7B at `-c 32768 -np 4` without flash attention
/// holds on the host what `-c 8192 -np 1` does (the GPU's graph keeps the
/// whole cache, the larger figure). Before b6071 the cache was one stream (it was
/// forced unified without `LLAMA_SET_ROWS`), as `--kv-unified` is today.
#[test]
fn slots_as_streams_attend_over_one_streams_cells() {
    let m = model("mistral-7b-v0.3");
    let plan = |ctx, np, unified, build| {
        let o = Options {
            n_ctx: Some(ctx),
            parallel: Some(np),
            kv_unified: unified,
            flash_attention: FlashAttention::Off,
            build,
            ..Default::default()
        };
        // The host's masks only: the GPU's graph keeps the whole cache
        // (`compute::compute_buffer`: a graph that shrinks with more slots
        // is not modelled).
        report(&m, scenario(o, 1, 80)).0.host_compute_bytes
    };
    assert_eq!(plan(32_768, 4, false, Some(8000)), plan(8192, 1, false, Some(8000)));
    assert_ne!(plan(32_768, 4, true, Some(8000)), plan(8192, 1, false, Some(8000)));
    assert_eq!(plan(32_768, 4, false, Some(6070)), plan(32_768, 1, false, Some(6070)));
}

/// The compute buffer's explanation names how it was computed: ggml-alloc's
/// peak replayed over the reserved graph where the replay knows the layer
/// (Llama, Gemma 4), Ollama's closed form where it does not (Qwen3.5's
/// gated delta-net layers).
#[test]
fn the_compute_buffers_term_says_whether_it_was_replayed() {
    let formula = |id: &str| {
        let e = estimate(&model(id), scenario(Options::default(), 1, 24));
        let term = e.terms.iter().find(|t| t.formula.starts_with("llama.cpp compute buffer"));
        term.unwrap_or_else(|| panic!("{id}: no compute buffer term")).formula.clone()
    };
    for id in ["llama-3.1-8b", "gemma-4-26b-a4b"] {
        assert!(formula(id).contains("ggml-alloc's peak"), "{id}: {}", formula(id));
    }
    assert!(formula("qwen3.5-27b").contains("GraphSize"), "{}", formula("qwen3.5-27b"));
}
