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
