//! Exact weights from checkpoints in the estimate: header sums, tensor-by-
//! tensor sharding, unknown architectures, quantised storage, GGUF.

use crate::estimate;
use shared::arch::ConfigError;
use shared::checkpoint::{Checkpoint, gguf, safetensors};
use shared::estimate::{GpuSlot, Scenario, WeightSource};
use shared::model::Model;
use shared::units::GIB;

use super::writer::{self, Kv};

fn checkpoint(tensors: &[(&str, &str, &[u64])]) -> Checkpoint {
    let (prefix, size) = writer::safetensors(tensors);
    let n = safetensors::header_len(&prefix, Some(size)).unwrap_or_else(|e| panic!("{e}"));
    let header = safetensors::parse_header(&prefix[8..8 + n as usize], Some(size)).unwrap_or_else(|e| panic!("{e}"));
    Checkpoint::from_safetensors(vec![("model.safetensors".into(), header)]).unwrap_or_else(|e| panic!("{e}"))
}

const H: u64 = 256;
const V: u64 = 1000;
const I: u64 = 512;
const KV: u64 = 2 * 32; // 2 KV heads of 32

fn llama_tensors() -> Vec<(String, &'static str, Vec<u64>)> {
    let mut t = vec![
        ("model.embed_tokens.weight".to_owned(), "BF16", vec![V, H]),
        ("model.norm.weight".to_owned(), "BF16", vec![H]),
        ("lm_head.weight".to_owned(), "BF16", vec![V, H]),
    ];
    for l in 0..2 {
        let p = format!("model.layers.{l}");
        t.push((format!("{p}.input_layernorm.weight"), "BF16", vec![H]));
        t.push((format!("{p}.post_attention_layernorm.weight"), "BF16", vec![H]));
        t.push((format!("{p}.self_attn.q_proj.weight"), "BF16", vec![H, H]));
        t.push((format!("{p}.self_attn.k_proj.weight"), "BF16", vec![KV, H]));
        t.push((format!("{p}.self_attn.v_proj.weight"), "BF16", vec![KV, H]));
        t.push((format!("{p}.self_attn.o_proj.weight"), "BF16", vec![H, H]));
        t.push((format!("{p}.mlp.gate_proj.weight"), "BF16", vec![I, H]));
        t.push((format!("{p}.mlp.up_proj.weight"), "BF16", vec![I, H]));
        t.push((format!("{p}.mlp.down_proj.weight"), "BF16", vec![H, I]));
    }
    t
}

fn as_refs<'a>(t: &'a [(String, &'static str, Vec<u64>)]) -> Vec<(&'a str, &'a str, &'a [u64])> {
    t.iter().map(|(n, d, s)| (n.as_str(), *d, s.as_slice())).collect()
}

const LLAMA: &str = r#"{"model_type":"llama","hidden_size":256,"num_hidden_layers":2,"num_attention_heads":8,
    "num_key_value_heads":2,"intermediate_size":512,"vocab_size":1000,"torch_dtype":"bfloat16"}"#;

fn scenario(tp: u64, gpus: usize) -> Scenario {
    Scenario { gpus: vec![GpuSlot::custom("test", 80 * GIB); gpus], tp, ..Scenario::default() }
}

#[test]
fn weights_and_parameters_equal_the_header_sums() {
    let tensors = llama_tensors();
    let c = checkpoint(&as_refs(&tensors));
    let m = Model::from_checkpoint("llama-test", Some(LLAMA), &c).unwrap_or_else(|e| panic!("{e}"));
    let elements: u64 = tensors.iter().map(|(_, _, s)| s.iter().product::<u64>()).sum();
    let e = estimate(&m, scenario(1, 1));
    assert_eq!(e.parameters, elements);
    assert_eq!(e.weight_bytes, elements * 2);
    assert_eq!(e.weight_bytes, c.total_bytes());
    assert_eq!(e.weights_source, WeightSource::Checkpoint);
    assert!(e.architecture_known);
    assert_eq!(e.checkpoint.as_ref().map(|s| s.tensors), Some(tensors.len()));
}

#[test]
fn tensor_parallel_shards_follow_the_rules_tensor_by_tensor() {
    let tensors = llama_tensors();
    let c = checkpoint(&as_refs(&tensors));
    let m = Model::from_checkpoint("llama-test", Some(LLAMA), &c).unwrap_or_else(|e| panic!("{e}"));
    // tp=2: every projection, the embedding and lm_head split in two; the
    // 2 KV heads split one per rank; norms replicated.
    let share = |name: &str, bytes: u64| if name.contains("norm") { bytes } else { bytes.div_ceil(2) };
    let mut expected_first = 0;
    let mut expected_layers = 0;
    let mut expected_last = 0;
    for (name, _, shape) in &tensors {
        let b = share(name, shape.iter().product::<u64>() * 2);
        if name.starts_with("model.layers") {
            expected_layers += b;
        } else if name.contains("embed") {
            expected_first += b;
        } else {
            expected_last += b;
        }
    }
    let e = estimate(&m, scenario(2, 2));
    assert_eq!(e.per_gpu[0].budget.weight_bytes, expected_first + expected_layers + expected_last);
    // Pipeline: 2 stages of one GPU, a layer each.
    let e = estimate(&m, scenario(1, 2));
    let layer = |l: u32| -> u64 {
        tensors
            .iter()
            .filter(|(n, _, _)| n.starts_with(&format!("model.layers.{l}.")))
            .map(|(_, _, s)| s.iter().product::<u64>() * 2)
            .sum()
    };
    assert_eq!(e.per_gpu[0].budget.weight_bytes, V * H * 2 + layer(0));
    assert_eq!(e.per_gpu[1].budget.weight_bytes, layer(1) + H * 2 + V * H * 2);
}

const UNKNOWN_MOE: &str = r#"{"model_type":"brand_new_moe","hidden_size":256,"num_hidden_layers":2,
    "num_attention_heads":8,"head_dim":32,"intermediate_size":512,"vocab_size":1000,
    "num_local_experts":4,"num_experts_per_tok":2,"torch_dtype":"bfloat16"}"#;

#[test]
fn an_unknown_moe_config_alone_gets_no_verdict() {
    match Model::from_config_json("x", UNKNOWN_MOE) {
        Err(ConfigError::UnknownArchitecture { model_type, what }) => {
            assert_eq!(model_type, "brand_new_moe");
            assert!(what.contains("num_local_experts"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    let message = Model::from_config_json("x", UNKNOWN_MOE).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("brand_new_moe") && message.contains("--checkpoint") && message.contains("--hf"),
        "{message}"
    );
    for (key, value) in
        [("layer_types", r#"["full_attention","linear_attention"]"#), ("text_config", "{}"), ("mamba_d_state", "16")]
    {
        let config = format!(
            r#"{{"model_type":"hybrid_x","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":8,"vocab_size":10,"{key}":{value}}}"#
        );
        assert!(matches!(Model::from_config_json("x", &config), Err(ConfigError::UnknownArchitecture { .. })), "{key}");
    }
}

#[test]
fn an_unknown_moe_checkpoint_is_exact_and_its_cache_comes_from_the_tensors() {
    let mut tensors = vec![
        ("model.embed_tokens.weight".to_owned(), "BF16", vec![V, H]),
        ("model.norm.weight".to_owned(), "BF16", vec![H]),
        ("lm_head.weight".to_owned(), "BF16", vec![V, H]),
    ];
    // Layer 0 has 2 KV heads, layer 1 has 4: the cache differs per layer.
    for (l, kv_heads) in [(0, 2u64), (1, 4)] {
        let p = format!("model.layers.{l}");
        tensors.push((format!("{p}.self_attn.q_proj.weight"), "BF16", vec![H, H]));
        tensors.push((format!("{p}.self_attn.k_proj.weight"), "BF16", vec![kv_heads * 32, H]));
        tensors.push((format!("{p}.self_attn.v_proj.weight"), "BF16", vec![kv_heads * 32, H]));
        tensors.push((format!("{p}.self_attn.o_proj.weight"), "BF16", vec![H, H]));
        tensors.push((format!("{p}.mlp.gate.weight"), "BF16", vec![4, H]));
        tensors.push((format!("{p}.mlp.experts.gate_up_proj"), "BF16", vec![4, H, 2 * I]));
        tensors.push((format!("{p}.mlp.experts.down_proj"), "BF16", vec![4, I, H]));
        tensors.push((format!("{p}.weird_new_thing.weight"), "F32", vec![7]));
    }
    let c = checkpoint(&as_refs(&tensors));
    let m = Model::from_checkpoint("moe", Some(UNKNOWN_MOE), &c).unwrap_or_else(|e| panic!("{e}"));
    let e = estimate(&m, scenario(1, 1));
    assert!(!e.architecture_known);
    assert_eq!(e.weights_source, WeightSource::Checkpoint);
    assert_eq!(e.weight_bytes, c.total_bytes());
    assert_eq!(e.parameters, tensors.iter().map(|(_, _, s)| s.iter().product::<u64>()).sum::<u64>());
    assert_eq!(e.parameter_breakdown.other, 14);
    // bf16 cache: (2 + 4 heads) × 32 × (K + V) × 2 bytes per token.
    assert_eq!(e.kv_bytes_per_token, (2 + 4) * 32 * 2 * 2);
    // Routed experts: 2 of 4 active.
    let experts = 2 * 4 * (H * 2 * I + I * H);
    assert_eq!(e.active_parameters, e.parameters - experts / 2);
    assert!(e.warnings.iter().any(|w| w.contains("brand_new_moe")));
    assert!(e.warnings.iter().any(|w| w.contains("weird_new_thing")));
}

#[test]
fn quantised_checkpoints_unpack_their_parameters() {
    // GPTQ 4-bit: int32 qweight [in/8, out], fp16 scales, packed zeros.
    let gptq = checkpoint(&[
        ("model.layers.0.mlp.down_proj.qweight", "I32", &[I / 8, H]),
        ("model.layers.0.mlp.down_proj.qzeros", "I32", &[I / 128, H / 8]),
        ("model.layers.0.mlp.down_proj.scales", "F16", &[I / 128, H]),
        ("model.layers.0.mlp.down_proj.g_idx", "I32", &[I]),
    ]);
    let layout = shared::checkpoint::layout::ExactLayout::of(&gptq, Default::default());
    assert_eq!(layout.total_params(), I * H);
    assert_eq!(layout.total_bytes(), gptq.total_bytes());
    assert_eq!(layout.groups[0].in_features, I);
    // MXFP4 (gpt-oss): U8 blocks of 16 bytes = 32 values, E8M0 scales per block.
    let mx = checkpoint(&[
        ("model.layers.0.mlp.experts.down_proj_blocks", "U8", &[4, H, I / 32, 16]),
        ("model.layers.0.mlp.experts.down_proj_scales", "U8", &[4, H, I / 32]),
    ]);
    let layout = shared::checkpoint::layout::ExactLayout::of(&mx, Default::default());
    assert_eq!(layout.total_params(), 4 * H * I);
    // FP8 with 128×128 block scales; NVFP4 U8 weights beside their scales.
    let fp8 = checkpoint(&[
        ("model.layers.0.mlp.up_proj.weight", "F8_E4M3", &[I, H]),
        ("model.layers.0.mlp.up_proj.weight_scale_inv", "F32", &[I / 128, H / 128]),
        ("model.layers.0.mlp.down_proj.weight", "U8", &[H, I / 2]),
        ("model.layers.0.mlp.down_proj.weight_scale", "F8_E4M3", &[H, I / 16]),
        ("model.layers.0.mlp.down_proj.weight_scale_2", "F32", &[]),
    ]);
    let layout = shared::checkpoint::layout::ExactLayout::of(&fp8, Default::default());
    assert_eq!(layout.total_params(), I * H + H * I);
    let scales: u64 = layout.groups.iter().map(|g| g.quant_bytes).sum();
    assert_eq!(scales, (I / 128) * (H / 128) * 4 + H * (I / 16) + 4);
}

#[test]
fn a_gguf_file_alone_gives_exact_weights_and_its_cache() {
    let q8 = |n: u64| n / 32 * 34;
    let mut tensors: Vec<(String, Vec<u64>, u32, u64)> =
        vec![("token_embd.weight".into(), vec![H, V], 8, q8(H * V)), ("output_norm.weight".into(), vec![H], 0, H * 4)];
    for l in 0..3 {
        tensors.push((format!("blk.{l}.attn_q.weight"), vec![H, H], 8, q8(H * H)));
        tensors.push((format!("blk.{l}.attn_k.weight"), vec![H, 64], 8, q8(H * 64)));
        tensors.push((format!("blk.{l}.attn_v.weight"), vec![H, 64], 8, q8(H * 64)));
        tensors.push((format!("blk.{l}.ffn_down.weight"), vec![I, H], 12, H * I / 256 * 144));
    }
    // The last block is a next-token-prediction layer (GLM-4.5 style).
    tensors.push(("blk.2.nextn.eh_proj.weight".into(), vec![H, H], 8, q8(H * H)));
    let refs: Vec<(&str, &[u64], u32, u64)> =
        tensors.iter().map(|(n, s, t, b)| (n.as_str(), s.as_slice(), *t, *b)).collect();
    let kvs = [
        ("general.architecture", Kv::Str("newarch")),
        ("general.file_type", Kv::U32(7)),
        ("newarch.block_count", Kv::U32(3)),
        ("newarch.nextn_predict_layers", Kv::U32(1)),
        ("newarch.embedding_length", Kv::U32(256)),
        ("newarch.attention.head_count", Kv::U32(8)),
        ("newarch.attention.key_length", Kv::U32(32)),
    ];
    let (bytes, size) = writer::gguf(3, &kvs, &refs);
    let file = gguf::parse(&bytes, Some(size)).unwrap_or_else(|e| panic!("{e}"));
    let c = Checkpoint::from_gguf(vec![("m.gguf".into(), file)]).unwrap_or_else(|e| panic!("{e}"));
    let m = Model::from_checkpoint("m.gguf", None, &c).unwrap_or_else(|e| panic!("{e}"));
    let e = estimate(&m, Scenario { weights: m.default_format(), ..scenario(1, 1) });
    assert_eq!(e.weights_source, WeightSource::Checkpoint);
    let nextn: u64 = tensors.iter().filter(|t| t.0.starts_with("blk.2.")).map(|t| t.3).sum();
    assert_eq!(e.weight_bytes, c.total_bytes() - nextn);
    assert_eq!(m.layout.num_layers, 2);
    // 2 layers × 2 KV heads × 32 × (K + V) × 2 bytes.
    assert_eq!(e.kv_bytes_per_token, 2 * 2 * 32 * 2 * 2);
    assert!(e.warnings.iter().any(|w| w.contains("multi-token-prediction")));
    assert!(!m.arch.text.extra.rope_freqs, "no `rope_freqs` tensor");
    // Llama 3's RoPE scaling is a tensor of the file (llama.cpp's host
    // layers' splits depend on it).
    let with_freqs: Vec<(&str, &[u64], u32, u64)> =
        refs.iter().copied().chain([("rope_freqs.weight", &[16u64][..], 0, 64)]).collect();
    let (bytes, size) = writer::gguf(3, &kvs, &with_freqs);
    let file = gguf::parse(&bytes, Some(size)).unwrap_or_else(|e| panic!("{e}"));
    let c = Checkpoint::from_gguf(vec![("m.gguf".into(), file)]).unwrap_or_else(|e| panic!("{e}"));
    let m = Model::from_checkpoint("m.gguf", None, &c).unwrap_or_else(|e| panic!("{e}"));
    assert!(m.arch.text.extra.rope_freqs);
}

#[test]
fn fused_qkv_and_mla_down_projections_shard_by_their_own_rules() {
    // An unknown dense decoder with a fused q/k/v (8 query heads, 2 KV heads
    // of 32) and MLA-style down-projections, which vLLM replicates.
    let config = r#"{"model_type":"fused_dense","hidden_size":256,"num_hidden_layers":1,
        "num_attention_heads":8,"num_key_value_heads":2,"head_dim":32,"intermediate_size":512,"vocab_size":1000}"#;
    let qkv_rows = (8 + 2 * 2) * 32;
    let c = checkpoint(&[
        ("model.embed_tokens.weight", "BF16", &[V, H]),
        ("model.layers.0.self_attn.qkv_proj.weight", "BF16", &[qkv_rows, H]),
        ("model.layers.0.self_attn.q_a_proj.weight", "BF16", &[64, H]),
    ]);
    let m = Model::from_checkpoint("fused", Some(config), &c).unwrap_or_else(|e| panic!("{e}"));
    let e = estimate(&m, scenario(4, 4));
    // tp=4: a quarter of the embedding; 2 of 8 query heads, and the 2 KV heads
    // replicated to 1 per rank: (8/4 + 2·1)/(8 + 2·2) = 1/3 of the fused
    // rows; q_a_proj whole.
    let embed = V * H * 2 / 4;
    let qkv = qkv_rows * H * 2 / 3;
    assert_eq!(e.per_gpu[0].budget.weight_bytes, embed + qkv + 64 * H * 2);
    // The cache from the fused width: (rows − 8·32) / 2 = 2 KV heads, one per
    // rank when replicated over 4 ranks: 4 × 32 × (K + V) × 2 bytes in all.
    assert_eq!(e.kv_bytes_per_token, 4 * 32 * 2 * 2);
    let one = estimate(&m, scenario(1, 1));
    assert_eq!(one.kv_bytes_per_token, 2 * 32 * 2 * 2);
}

/// A GGUF's sliding layers as llama.cpp assigns them: the architecture's
/// period (gemma3: 5 sliding, 1 full) unless the file names its own
/// `sliding_window_pattern`, a period or one flag per layer.
#[test]
fn gguf_sliding_layers_follow_llama_cpp() {
    use shared::arch::LayerAttention;
    let layers = 12u64;
    let read = |arch: &'static str, pattern: Option<Kv>| {
        let mut tensors: Vec<(String, Vec<u64>, u32, u64)> =
            vec![("token_embd.weight".into(), vec![H, V], 0, H * V * 4)];
        for l in 0..layers {
            tensors.push((format!("blk.{l}.attn_q.weight"), vec![H, H], 0, H * H * 4));
            tensors.push((format!("blk.{l}.attn_k.weight"), vec![H, 64], 0, H * 64 * 4));
            tensors.push((format!("blk.{l}.attn_v.weight"), vec![H, 64], 0, H * 64 * 4));
        }
        let refs: Vec<(&str, &[u64], u32, u64)> =
            tensors.iter().map(|(n, s, t, b)| (n.as_str(), s.as_slice(), *t, *b)).collect();
        let key = |k: &str| -> &'static str { Box::leak(format!("{arch}.{k}").into_boxed_str()) };
        let mut kvs = vec![
            ("general.architecture", Kv::Str(arch)),
            (key("block_count"), Kv::U32(layers as u32)),
            (key("embedding_length"), Kv::U32(H as u32)),
            (key("attention.head_count"), Kv::U32(8)),
            (key("attention.key_length"), Kv::U32(32)),
            (key("attention.sliding_window"), Kv::U32(512)),
        ];
        if let Some(p) = pattern {
            kvs.push((key("attention.sliding_window_pattern"), p));
        }
        let (bytes, size) = writer::gguf(3, &kvs, &refs);
        let file = gguf::parse(&bytes, Some(size)).unwrap_or_else(|e| panic!("{e}"));
        let c = Checkpoint::from_gguf(vec![("m.gguf".into(), file)]).unwrap_or_else(|e| panic!("{e}"));
        let m = Model::from_checkpoint("m.gguf", None, &c).unwrap_or_else(|e| panic!("{e}"));
        m.arch.text.layers.iter().map(|l| l.attention).collect::<Vec<_>>()
    };
    let full = |pattern: &[LayerAttention]| {
        pattern.iter().enumerate().filter(|(_, a)| **a == LayerAttention::Full).map(|(i, _)| i).collect::<Vec<_>>()
    };
    // gemma3: `load_swa_pattern(ml, 6)`: layers 5 and 11 full.
    assert_eq!(full(&read("gemma3", None)), [5, 11]);
    assert!(read("gemma3", None).contains(&LayerAttention::Sliding(512)));
    // cohere2moe: `load_swa_pattern(ml, 4, true)`: the full layer first.
    assert_eq!(full(&read("cohere2moe", None)), [0, 4, 8]);
    // The file's own period wins.
    assert_eq!(full(&read("gemma3", Some(Kv::U32(3)))), [2, 5, 8, 11]);
    // … and so does its own flag per layer.
    let flags: Vec<u32> = (0..layers as u32).map(|i| u32::from(i % 2 == 0)).collect();
    assert_eq!(full(&read("gemma3", Some(Kv::ArrU32(flags)))), [1, 3, 5, 7, 9, 11]);
    // Llama 4's window is its attention chunk.
    assert!(read("llama4", None).contains(&LayerAttention::Chunked(512)));
    // An unknown architecture with a window but no pattern: all full, warned.
    assert!(full(&read("newarch", None)).len() == layers as usize);
}
