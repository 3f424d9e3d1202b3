//! vLLM's KV cache layouts against real 0.25.1 start-up logs of a DGX
//! Spark (`tests/fixtures/startup/vllm-v1-0251-*`): which layers hold what
//! and how many blocks a request takes, held to the log's own concurrency
//! with its logged KV memory taken as fact (the what-if "as logged"), so
//! that the weights' and the profile's errors do not blur the layout's.

use shared::estimate::{GpuSlot, Scenario};
use shared::model::Model;
use shared::startup::{Figure, StartupLog, WhatIf, logged_scenario, what_ifs};

use crate::startup::log;

/// The launch as logged, planned with `m` on a DGX Spark, with the log's
/// available KV memory as fact.
fn as_logged(l: &StartupLog, m: &Model) -> (WhatIf, Vec<String>) {
    let g = shared::catalog::gpu("dgx-spark").unwrap_or_else(|| panic!("no dgx-spark"));
    let planned = Scenario {
        gpus: vec![GpuSlot::from_catalog(g)],
        engine: l.engine.kind().with_defaults(),
        weights: m.default_format(),
        kv_dtype: l.engine.kind().default_kv_dtype(m, m.default_format()),
        ..Scenario::default()
    };
    let (s, taken) = logged_scenario(l, m, planned);
    let valid = s.validate_for(m).unwrap_or_else(|e| panic!("{e}"));
    let w = what_ifs(l, m, &valid).unwrap_or_else(|| panic!("no what-ifs"));
    let row = w.rows.into_iter().find(|r| r.change == "as logged").unwrap_or_else(|| panic!("no `as logged`"));
    (row, taken)
}

/// The log's "Maximum concurrency" in hundredths and "GPU KV cache size".
fn logged_concurrency_and_tokens(l: &StartupLog) -> (u64, u64) {
    let hundredths = l
        .first(|f| match f {
            Figure::Concurrency { hundredths, .. } => Some(*hundredths),
            _ => None,
        })
        .map(|(_, h)| h)
        .unwrap_or_else(|| panic!("no concurrency line"));
    let tokens = l
        .first(|f| match f {
            Figure::KvTokens { tokens } => Some(*tokens),
            _ => None,
        })
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("no KV tokens line"));
    (hundredths, tokens)
}

/// Within `permille` of each other.
fn close(a: u64, b: u64, permille: u64) -> bool {
    a.abs_diff(b).saturating_mul(1000) <= a.saturating_mul(permille)
}

/// Gemma 4 26B-A4B's text config (google/gemma-4-26B-A4B-it, as the
/// 31B preset's with the 26B's geometry; several public transcriptions
/// agree on these figures): 25 sliding layers of 8 KV heads × 256, five
/// global layers of 2 KV heads × 512 whose keys are also the values.
const GEMMA4_26B_A4B: &str = r#"{
  "architectures": ["Gemma4ForConditionalGeneration"],
  "model_type": "gemma4",
  "text_config": {
    "model_type": "gemma4_text",
    "attention_k_eq_v": true, "enable_moe_block": true,
    "global_head_dim": 512, "head_dim": 256, "hidden_size": 2816,
    "hidden_size_per_layer_input": 0, "intermediate_size": 2112,
    "max_position_embeddings": 262144, "moe_intermediate_size": 704,
    "num_attention_heads": 16, "num_experts": 128, "num_global_key_value_heads": 2,
    "num_hidden_layers": 30, "num_key_value_heads": 8, "num_kv_shared_layers": 0,
    "sliding_window": 1024, "top_k_experts": 8, "vocab_size": 262144,
    "tie_word_embeddings": true, "dtype": "bfloat16"
  }
}"#;

/// Gemma 4's global layers (2 KV heads × 512 = 4 KiB a token in bf16)
/// have half the page of its sliding ones (8 × 256 = 8 KiB), and vLLM
/// 0.12+ brings them up to it by holding 32 tokens a block where the
/// sliding layers hold 16 (`unify_kv_cache_spec_page_size`). Keys and
/// values are both cached on the global layers although the keys serve as
/// values (vLLM 0.25.1 gemma4.py: the K weights load into both the K and V
/// slots of `qkv_proj`, V gets its own norm, and both go to `Attention`).
/// The two 0.25.1 logs, with their own KV memory as fact: 14.78x and
/// 14.92x; the plan with one block size for all said 7.85x.
#[test]
fn gemma4_global_layers_hold_more_tokens_a_block_as_vllm_logs() {
    let m = Model::from_config_json("gemma-4-26b-a4b", GEMMA4_26B_A4B).unwrap_or_else(|e| panic!("{e}"));
    for name in ["vllm-v1-0251-gemma4-26b-a4b-awq-int4-spark", "vllm-v1-0251-gemma4-26b-a4b-nvfp4-spark"] {
        let l = log(name);
        let (hundredths, tokens) = logged_concurrency_and_tokens(&l);
        let (w, taken) = as_logged(&l, &m);
        println!(
            "{name}: concurrency {}.{:02}x (logged {}.{:02}x), tokens {} (logged {tokens})",
            w.max_concurrency_hundredths / 100,
            w.max_concurrency_hundredths % 100,
            hundredths / 100,
            hundredths % 100,
            w.kv_cache_tokens
        );
        assert!(taken.iter().any(|t| t.contains("max_model_len 262144")), "{taken:?}");
        assert!(close(hundredths, w.max_concurrency_hundredths, 2), "{name}: {w:?}");
        assert!(close(tokens, w.kv_cache_tokens, 2), "{name}: {w:?}");
    }
}

/// Qwen3.6-35B-A3B is Qwen3.5-35B-A3B's architecture, and the preset now
/// has the Hub config's MTP layer (`mtp_num_hidden_layers`: 1), so the
/// 0.25.1 log of RedHatAI's Qwen3.6 NVFP4 with `mtp:3` is planned with it
/// instead of refused ("needs … num_nextn_predict_layers: use ngram or
/// suffix"): the drafter's layer joins the ten full-attention layers.
#[test]
fn qwen35_35b_a3b_plans_its_mtp_drafter() {
    let m = Model::preset("qwen3.5-35b-a3b").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.arch.text.extra.mtp_layers, 1);
    let l = log("vllm-v1-0251-qwen36-35b-a3b-nvfp4-mtp3-spark");
    let (hundredths, tokens) = logged_concurrency_and_tokens(&l);
    let (w, taken) = as_logged(&l, &m);
    println!(
        "qwen3.6-35b-a3b mtp:3: concurrency {}.{:02}x (logged {}.{:02}x), tokens {} (logged {tokens})",
        w.max_concurrency_hundredths / 100,
        w.max_concurrency_hundredths % 100,
        hundredths / 100,
        hundredths % 100,
        w.kv_cache_tokens
    );
    assert!(taken.iter().any(|t| t == "speculative decoding mtp:3"), "{taken:?}");
    assert!(close(hundredths, w.max_concurrency_hundredths, 50), "{w:?}");
}

/// Qwen3.5 with an MTP drafter on vLLM 0.25.1: the drafter's layer joins
/// the full-attention layers, so the group size is 17 (27B) or 11
/// (35B-A3B) and the gated-DeltaNet layers are padded up to a multiple of
/// it ("Add 3 padding layers", held in every block); each request holds
/// `1 + num_speculative_tokens` blocks per DeltaNet group
/// (`MambaSpec.max_memory_usage_bytes`), its conv state keeps `kernel − 1 +
/// num_spec` columns and its SSM state is FP32 (`mamba_ssm_dtype`), so the
/// attention block is 800 and 1,072 tokens as logged. With the logs' own KV
/// memory as fact: 4.54x and 12.84x logged, 4.68x and 13.40x before.
#[test]
fn qwen35_mtp_state_takes_its_draft_tokens_blocks_and_columns() {
    for (name, preset) in [
        ("vllm-v1-0251-qwen38-27b-int4-mtp3-spark", "qwen3.5-27b"),
        ("vllm-v1-0251-qwen36-35b-a3b-nvfp4-mtp3-spark", "qwen3.5-35b-a3b"),
    ] {
        let m = Model::preset(preset).unwrap_or_else(|e| panic!("{e}"));
        let l = log(name);
        let block = l
            .first(|f| match f {
                Figure::AttentionBlock { tokens } => Some(*tokens),
                _ => None,
            })
            .map(|(_, t)| t);
        let (hundredths, tokens) = logged_concurrency_and_tokens(&l);
        let (w, taken) = as_logged(&l, &m);
        println!(
            "{name}: block {block:?}, concurrency {}.{:02}x (logged {}.{:02}x), tokens {} (logged {tokens})",
            w.max_concurrency_hundredths / 100,
            w.max_concurrency_hundredths % 100,
            hundredths / 100,
            hundredths % 100,
            w.kv_cache_tokens
        );
        assert!(taken.iter().any(|t| t == "speculative decoding mtp:3"), "{taken:?}");
        assert!(close(hundredths, w.max_concurrency_hundredths, 3), "{name}: {w:?}");
        assert!(close(tokens, w.kv_cache_tokens, 3), "{name}: {w:?}");
    }
}

/// vLLM 0.18+ takes the larger layer count as the group size where it is
/// under 1.5 × the smaller ("gpt-oss-20b + eagle, with 12 sw + 13 full. We
/// pad it to (13 sw, 13 full)"): a Qwen3.5-shaped model with every other
/// layer full attention (16 full, 16 DeltaNet) and its MTP layer groups
/// 17 + 17, one group of each kind, where 0.17 split the 17 full-attention
/// layers into two groups of 16 (the second padded with 15).
#[test]
fn vllm_groups_close_layer_counts_by_the_larger() {
    use shared::engines::vllm::{Options, SpecMethod, Speculative, Version};
    use shared::engines::{Engine, EngineReport};
    let config = r#"{"model_type": "qwen3_5_text", "architectures": ["Qwen3_5ForCausalLM"],
        "hidden_size": 2048, "num_hidden_layers": 32, "full_attention_interval": 2,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
        "intermediate_size": 6144, "vocab_size": 248320, "max_position_embeddings": 32768,
        "mtp_num_hidden_layers": 1}"#;
    let m = Model::from_config_json("test", config).unwrap_or_else(|e| panic!("{e}"));
    let g = shared::catalog::gpu("h100-sxm").unwrap_or_else(|| panic!("no h100-sxm"));
    let blocks = |version: Version| {
        let o = Options {
            version,
            max_model_len: Some(16_384),
            speculative: Some(Speculative { method: SpecMethod::Mtp, tokens: Some(1) }),
            ..Options::default()
        };
        let s = Scenario {
            gpus: vec![GpuSlot::from_catalog(g)],
            engine: Engine::Vllm(o),
            weights: m.default_format(),
            kv_dtype: shared::kv::KvDtype::Bf16,
            ..Scenario::default()
        };
        let e = crate::estimate(&m, s);
        let Some(EngineReport::Vllm(r)) = e.engine_report else { panic!("vLLM") };
        (r.blocks_per_request, r.block_size)
    };
    // 0.18 rules: one full group (⌈16,384 / block⌉) and one state group (1 + 1 draft block).
    let (newer, block) = blocks(Version::V0_18);
    assert_eq!(newer, 16_384u64.div_ceil(block) + 2);
    // 0.17 rules: two full groups of 16, one state group.
    let (older, block) = blocks(Version::V0_17Triton);
    assert_eq!(older, 2 * 16_384u64.div_ceil(block) + 2);
}

/// A checkpoint's FP8 KV scheme under `kv_cache_dtype=auto` (vLLM 0.25.1:
/// the attention layer sets an `auto` cache to `fp8` for compressed-tensors'
/// `kv_cache_scheme`): the engine line still says `auto`, the FlashInfer
/// line says `kv_cache_dtype=torch.float8_e4m3fn`, and the log is planned
/// with an FP8 cache. RedHatAI's Qwen3.8-27B NVFP4 with `mtp:3`, its KV
/// memory as fact: 8.36x / 2,192,477 tokens logged, 4.32x / 1,134,929 read
/// as a 16-bit cache (−48 %).
#[test]
fn a_logged_fp8_cache_under_auto_is_read_as_fp8() {
    let l = log("vllm-v1-0251-qwen38-27b-nvfp4-mtp3-spark");
    assert_eq!(l.config.quantization.as_deref(), Some("compressed-tensors"));
    assert_eq!(l.config.kv_cache_dtype.as_deref(), Some("fp8_e4m3"));
    let m = Model::preset("qwen3.5-27b").unwrap_or_else(|e| panic!("{e}"));
    let (hundredths, tokens) = logged_concurrency_and_tokens(&l);
    let (w, taken) = as_logged(&l, &m);
    println!(
        "qwen3.8-27b nvfp4: concurrency {}.{:02}x (logged {}.{:02}x), tokens {} (logged {tokens}); {taken:?}",
        w.max_concurrency_hundredths / 100,
        w.max_concurrency_hundredths % 100,
        hundredths / 100,
        hundredths % 100,
        w.kv_cache_tokens
    );
    assert!(taken.iter().any(|t| t == "KV cache dtype fp8"), "{taken:?}");
    assert!(close(hundredths, w.max_concurrency_hundredths, 3), "{w:?}");
    assert!(close(tokens, w.kv_cache_tokens, 3), "{w:?}");
    // A line of another dtype, or one after an explicit choice, changes nothing.
    let head = "INFO 08-21 09:46:00 [core.py:114] Initializing a V1 LLM engine (v0.25.1) with config: model='x', kv_cache_dtype=";
    let flashinfer = "INFO 08-21 09:50:59 [flashinfer.py:780] FlashInfer resolved query dtypes: prefill=torch.bfloat16, \
                      decode=torch.bfloat16, decode_backend=flashinfer-native, kv_cache_dtype=torch.";
    let kv = "INFO 08-21 09:51:00 [gpu_worker.py:538] Available KV cache memory: 80.17 GiB";
    for (asked, resolved, read) in
        [("auto", "bfloat16", "auto"), ("bfloat16", "float8_e4m3fn", "bfloat16"), ("auto", "float8_e5m2", "fp8_e5m2")]
    {
        let text = format!("{head}{asked}, dtype=auto\n{flashinfer}{resolved}, arch=sm90\n{kv}\n");
        let l = shared::startup::read(&text).unwrap_or_else(|| panic!("a log"));
        assert_eq!(l.config.kv_cache_dtype.as_deref(), Some(read), "{asked} / {resolved}");
    }
}

/// The same from a config: a compressed-tensors checkpoint with a
/// `kv_cache_scheme`, or a ModelOpt one with `kv_cache_quant_algo: FP8`, is
/// planned in vLLM with an FP8 cache when none is asked for; transformers
/// and SGLang keep the activation dtype's.
#[test]
fn a_checkpoints_fp8_kv_scheme_is_vllms_auto_cache() {
    use shared::engines::EngineKind;
    use shared::kv::KvDtype;
    let base = r#""model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16""#;
    let with = |quant: &str| {
        let m = Model::from_config_json("test", &format!("{{{base}, \"quantization_config\": {quant}}}"))
            .unwrap_or_else(|e| panic!("{e}"));
        let w = m.default_format();
        (
            m.arch.kv_cache_fp8,
            EngineKind::Vllm.default_kv_dtype(&m, w),
            EngineKind::Transformers.default_kv_dtype(&m, w),
            EngineKind::Sglang.default_kv_dtype(&m, w),
        )
    };
    let scheme = r#"{"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": false, "symmetric": true}"#;
    let ct = format!(
        r#"{{"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {{"group_0": {{"targets": ["Linear"], "weights": {{"num_bits": 8, "type": "float", "strategy": "channel"}}}}}}, "kv_cache_scheme": {scheme}}}"#
    );
    assert_eq!(with(&ct), (true, KvDtype::Fp8, KvDtype::Bf16, KvDtype::Bf16));
    let without = ct.replace(&format!(", \"kv_cache_scheme\": {scheme}"), ", \"kv_cache_scheme\": null");
    assert_eq!(with(&without), (false, KvDtype::Bf16, KvDtype::Bf16, KvDtype::Bf16));
    let modelopt =
        r#"{"quant_method": "modelopt", "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}"#;
    assert!(with(modelopt).0);
    let no_kv = r#"{"quant_method": "modelopt", "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": null}}"#;
    assert!(!with(no_kv).0);
}
