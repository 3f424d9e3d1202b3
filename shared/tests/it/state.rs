//! Recurrent state of the hybrid models as each engine holds it: constant in
//! the context length, its own part beside the KV cache, and the engines'
//! rules (vLLM's page-size unification, SGLang's mamba pool, llama.cpp's
//! one cell per slot, transformers' per-batch cache).

use crate::estimate;
use shared::arch::{Architecture, LayerAttention, Recurrent};
use shared::engines::{Engine, EngineReport, llamacpp, sglang, vllm};
use shared::estimate::{GpuSlot, Scenario};
use shared::model::Model;
use shared::units::GIB;

fn fixture(name: &str) -> Model {
    let path = format!("{}/tests/fixtures/arch/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Model::from_config_json(name, &text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn scenario(engine: Engine, prompt: u64, concurrency: u64) -> Scenario {
    Scenario {
        gpus: vec![GpuSlot::custom("H200", 141 * GIB)],
        engine,
        prompt_tokens: prompt,
        max_new_tokens: 256,
        concurrency,
        ..Scenario::default()
    }
}

/// One DeltaNet layer's state in vLLM's shapes, from the config's own fields.
fn deltanet_layer_bytes(arch: &Architecture, conv_columns: u64, ssm_bytes: u64) -> u64 {
    let Some(Recurrent::GatedDeltaNet { key_heads, value_heads, key_head_dim, value_head_dim, .. }) =
        arch.text.recurrent
    else {
        panic!("not a DeltaNet model")
    };
    let conv_dim = 2 * key_heads * key_head_dim + value_heads * value_head_dim;
    conv_dim * conv_columns * 2 + value_heads * key_head_dim * value_head_dim * ssm_bytes
}

#[test]
fn transformers_holds_one_state_per_sequence_whatever_the_length() {
    let m = fixture("defaults-qwen3_next");
    let linear = m.arch.text.layers.iter().filter(|l| l.state).count() as u64;
    assert_eq!(linear, 36, "three of every four layers are gated DeltaNet");
    assert!(m.arch.text.layers.iter().filter(|l| l.attention == LayerAttention::Full).count() == 12);
    let engine = Engine::Transformers(Default::default());
    let short = estimate(&m, scenario(engine, 1_000, 4));
    let long = estimate(&m, scenario(engine, 30_000, 4));
    // transformers: 4 conv columns in bf16, the state in float32.
    let per_seq = linear * deltanet_layer_bytes(&m.arch, 4, 4);
    assert_eq!(short.state_bytes_per_sequence, per_seq);
    assert_eq!(short.state_bytes, 4 * per_seq);
    assert_eq!(long.state_bytes, short.state_bytes, "state does not grow with the context");
    assert!(long.kv_cache_bytes > short.kv_cache_bytes);
    assert_eq!(short.per_gpu[0].budget.state_bytes, short.state_bytes);
    assert!(short.terms.iter().any(|t| t.name == "recurrent state" && t.value == short.state_bytes));
    // The part counts in the total.
    let g = &short.per_gpu[0];
    assert_eq!(g.total_bytes, g.budget.total_bytes());
}

#[test]
fn vllm_unifies_the_attention_page_with_the_state_page() {
    let m = fixture("defaults-qwen3_5_text");
    // The 0.24 rules' 16-token default block (0.34's 64 below).
    let rules = vllm::Options { version: vllm::Version::V0_24Mm, ..Default::default() };
    let e = estimate(&m, scenario(Engine::Vllm(rules), 4_000, 8));
    let Some(EngineReport::Vllm(r)) = &e.engine_report else { panic!("no vLLM report") };
    // vLLM: state page = conv (kernel − 1 columns) + state, both bf16; the
    // attention block grows to 16 × ⌈page / (16 × bytes per token)⌉ tokens.
    let page = deltanet_layer_bytes(&m.arch, 3, 2);
    let t = &m.arch.text;
    let per_token = 2 * t.num_kv_heads * t.head_dim * 2;
    assert_eq!(r.block_size, 16 * page.div_ceil(16 * per_token));
    assert!(r.block_size > 16);
    // Eight running requests hold one padded page per state layer each.
    let states = t.layers.iter().filter(|l| l.state).count() as u64;
    let attn = t.layers.len() as u64 - states;
    let group = states.min(attn);
    let state_groups = states.div_ceil(group);
    assert_eq!(e.state_bytes, 8 * state_groups * group * r.block_size * per_token);
    assert_eq!(e.state_bytes_per_sequence, states * page);
    // 0.34: the alignment is the larger of the kernel's 16 and the 64-token
    // default block (`platforms/interface.py::_align_hybrid_block_size`).
    let e = estimate(&m, scenario(Engine::Vllm(vllm::Options::default()), 4_000, 8));
    let Some(EngineReport::Vllm(r)) = &e.engine_report else { panic!("no vLLM report") };
    assert_eq!(r.block_size, 64 * page.div_ceil(64 * per_token));
}

#[test]
fn sglang_sets_aside_a_mamba_pool() {
    let m = fixture("defaults-qwen3_5_moe_text");
    let e = estimate(&m, scenario(Engine::Sglang(sglang::Options::default()), 4_000, 8));
    let Some(EngineReport::Sglang(r)) = &e.engine_report else { panic!("no SGLang report") };
    let slots = r
        .log_lines
        .iter()
        .find_map(|l| l.strip_prefix("max_mamba_cache_size=")?.split(':').next()?.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no mamba pool line in {:?}", r.log_lines));
    assert_eq!(e.state_bytes, (slots + 1) * e.state_bytes_per_sequence);
    assert!(e.max_concurrency.is_none());
    let valid = scenario(Engine::Sglang(sglang::Options::default()), 4_000, 8).validate().unwrap();
    let p = shared::estimate::EnginePlan::new(&m, valid);
    assert!(p.max_concurrency() <= slots);
}

/// SGLang keeps the SSM state in float32 where the config names no dtype
/// (0.5.23 `mamba2_state_dtype`'s default; a real log of
/// granite-4.0-h-micro: `ssm_state size: 2.74GB`, 39 slots of 36 layers of
/// 64 × 64 × 128 float32); vLLM keeps it in the model's dtype there.
/// Granite 4.0-H Tiny: 36 Mamba-2 layers of 48 heads of 64 × 128, conv
/// channels 3,072 + 2 × 128 over 3 columns in bf16.
#[test]
fn sglang_keeps_the_ssm_state_in_f32_by_default() {
    let m = Model::preset("granite-4.0-h-tiny").unwrap_or_else(|e| panic!("{e}"));
    assert!(!m.arch.text.extra.ssm_state_f32, "the config names no SSM dtype");
    let conv = 3 * (3072 + 2 * 128) * 2;
    let ssm = 48 * 64 * 128;
    let sglang = estimate(&m, scenario(Engine::Sglang(sglang::Options::default()), 2_000, 1));
    assert_eq!(sglang.state_bytes_per_sequence, 36 * (conv + ssm * 4));
    let vllm = estimate(&m, scenario(Engine::Vllm(vllm::Options::default()), 2_000, 1));
    assert_eq!(vllm.state_bytes_per_sequence, 36 * (conv + ssm * 2));
}

#[test]
fn llamacpp_keeps_one_f32_state_per_slot() {
    let m = fixture("defaults-nemotron_h");
    let o = llamacpp::Options { parallel: Some(3), ..Default::default() };
    let e = estimate(&m, scenario(Engine::LlamaCpp(o), 2_000, 1));
    let Some(Recurrent::Mamba2 { heads, head_dim, d_state, groups, conv_kernel, .. }) = m.arch.text.recurrent else {
        panic!("not Mamba-2")
    };
    let mamba = m.arch.text.layers.iter().filter(|l| l.state).count() as u64;
    let per_layer = ((heads * head_dim + 2 * groups * d_state) * (conv_kernel - 1) + heads * head_dim * d_state) * 4;
    assert_eq!(e.state_bytes_per_sequence, mamba * per_layer);
    assert_eq!(e.state_bytes, 3 * mamba * per_layer);
}

#[test]
fn vllm_keeps_nemotron_h_ssm_state_in_f32() {
    let m = fixture("defaults-nemotron_h");
    assert!(m.arch.text.extra.ssm_state_f32, "the config names mamba_ssm_cache_dtype float32");
    let e = estimate(&m, scenario(Engine::Vllm(vllm::Options::default()), 2_000, 1));
    let Some(Recurrent::Mamba2 { heads, head_dim, d_state, groups, conv_kernel, .. }) = m.arch.text.recurrent else {
        panic!("not Mamba-2")
    };
    let mamba = m.arch.text.layers.iter().filter(|l| l.state).count() as u64;
    let conv = (heads * head_dim + 2 * groups * d_state) * (conv_kernel - 1) * 2;
    assert_eq!(e.state_bytes_per_sequence, mamba * (conv + heads * head_dim * d_state * 4));
}

#[test]
fn models_without_recurrent_layers_have_no_state() {
    let m = fixture("gpt-oss-20b");
    for engine in [
        Engine::Transformers(Default::default()),
        Engine::Vllm(vllm::Options::default()),
        Engine::Sglang(sglang::Options::default()),
        Engine::LlamaCpp(llamacpp::Options::default()),
    ] {
        let e = estimate(&m, scenario(engine, 2_000, 2));
        assert_eq!((e.state_bytes, e.state_bytes_per_sequence), (0, 0));
        assert!(!e.terms.iter().any(|t| t.name == "recurrent state"));
    }
}

/// A running launch's link (the agent's): a method that quantizes at load
/// is the plan's format (`--quantization bitsandbytes` on a 16-bit model:
/// vLLM's in-flight NF4 with double quantization), while AWQ and GPTQ load
/// only a checkpoint in their own format, whose bits and group size the
/// link leaves to the checkpoint.
#[test]
fn a_launchs_link_keeps_the_checkpoints_own_awq_and_takes_load_time_quantization() {
    use shared::link::{GpuChoice, LinkState, ModelSource};
    let weights = |method: &str| {
        let argv = ["vllm", "serve", "org/model", "--quantization", method];
        let launch = shared::startup::read_command_line(&argv).unwrap_or_else(|| panic!("{argv:?}"));
        let model = ModelSource::Preset("llama-3.1-8b".into());
        LinkState::of_launch(&launch, model, GpuChoice::Catalog("h100-sxm".into()), 1).weights
    };
    assert_eq!(weights("awq"), None);
    assert_eq!(weights("gptq_marlin"), None);
    assert_eq!(weights("bitsandbytes"), Some(shared::formats::WeightFormat::Bnb4 { nf4: true, double_quant: true }));
    assert_eq!(weights("fp8"), Some(shared::formats::WeightFormat::Fp8 { block: None }));
    // A checkpoint whose name says it is quantised keeps its own format
    // (`Qwen3-8B-FP8`'s 128 × 128 blocks, not per-tensor fp8).
    let argv = ["vllm", "serve", "Qwen/Qwen3-8B-FP8", "--quantization", "fp8"];
    let launch = shared::startup::read_command_line(&argv).unwrap_or_else(|| panic!("{argv:?}"));
    let hub = ModelSource::Hub("Qwen/Qwen3-8B-FP8".into());
    assert_eq!(LinkState::of_launch(&launch, hub, GpuChoice::Catalog("h100-sxm".into()), 1).weights, None);
}

/// Kimi-Linear in vLLM 0.34: each KDA layer's state is
/// `MambaStateShapeCalculator.kda_state_shape` — a conv state of (3 × 32 ×
/// 128 / tp) × (4 − 1) in the model dtype and 32 / tp states of 128 × 128
/// in float32 (`kda_state_dtype`, which the layer asks without the SSM
/// dtype) — and each MLA layer caches one 512 + 64 latent per token
/// (`MLAAttentionSpec`, `head_size = kv_lora_rank + qk_rope_head_dim`).
/// The attention block grows until its page holds a state page:
/// 64 × ⌈2,170,880 / (64 × 1,152)⌉ = 1,920 tokens. llama.cpp keeps the
/// same shapes in f32 (`llama_hparams::n_embd_r`/`n_embd_s`, KDA).
#[test]
fn vllm_keeps_kimi_linear_kda_state_in_f32_beside_mla_latents() {
    let m = fixture("remote/kimi-linear-48b-a3b");
    let kda_layers = 20;
    let conv = 3 * 32 * 128 * 3 * 2;
    let state = 32 * 128 * 128 * 4;
    assert_eq!(conv + state, 2_170_880);
    let e = estimate(&m, scenario(Engine::Vllm(vllm::Options::default()), 4_000, 8));
    assert_eq!(e.state_bytes_per_sequence, kda_layers * (conv + state));
    assert_eq!(e.kv_bytes_per_token, 7 * (512 + 64) * 2, "seven MLA layers, one latent each");
    let Some(EngineReport::Vllm(r)) = &e.engine_report else { panic!("no vLLM report") };
    assert_eq!(r.block_size, 1_920);
    assert!(
        e.warnings.iter().any(|w| w.starts_with("Kimi-Linear: each KDA layer's recurrent state is float32")),
        "{:?}",
        e.warnings
    );
    // Two ranks split the heads and the conv channels; the latent is replicated.
    let two = Scenario {
        gpus: vec![GpuSlot::custom("H200", 141 * GIB); 2],
        tp: 2,
        ..scenario(Engine::Vllm(vllm::Options::default()), 4_000, 8)
    };
    let e2 = estimate(&m, two);
    assert_eq!(e2.state_bytes_per_sequence, 2 * kda_layers * (conv / 2 + state / 2));
    let cpp = estimate(&m, scenario(Engine::LlamaCpp(llamacpp::Options::default()), 2_000, 1));
    assert_eq!(cpp.state_bytes_per_sequence, kda_layers * (3 * 3 * 32 * 128 + 32 * 128 * 128) * 4);
}
