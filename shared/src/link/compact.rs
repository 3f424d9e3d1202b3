//! Compact forms of pasted text a link carries: `config.json` (`cfg=`) and an error (`oom=`).

use serde_json::{Map, Value};

use super::MAX_OOM;
use crate::arch::{Architecture, ConfigError};

/// The text `oom=` carries for a pasted error: trailing spaces and blank
/// lines dropped, when that reads the same ([`crate::oom::parse`]); `None`
/// when even that is longer than [`MAX_OOM`].
pub fn compact_oom(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
    let trimmed = lines.join("\n");
    let candidate = if crate::oom::parse(&trimmed) == crate::oom::parse(text) { trimmed } else { text.to_owned() };
    (candidate.chars().count() <= MAX_OOM).then_some(candidate)
}
/// Keys of a `config.json` that the memory model reads (at any depth).
const CONFIG_KEYS: &[&str] = &[
    "_remove_final_layer_norm",
    "architectures",
    "attention_bias",
    "bias",
    "cross_attention_layers",
    "decoder_sparse_step",
    "depth",
    "do_layer_norm_before",
    "downsample_ratio",
    "dtype",
    "dynamic_image_size",
    "embed_dim",
    "enable_bias",
    "ffn_dim",
    "ffn_hidden_size",
    "first_k_dense_replace",
    "head_dim",
    "hidden_size",
    "image_size",
    "in_channels",
    "in_chans",
    "intermediate_size",
    "kv_lora_rank",
    "layer_types",
    "max_dynamic_patch",
    "max_num_tiles",
    "max_position_embeddings",
    "max_window_layers",
    "mlp_bias",
    "mlp_only_layers",
    "mlp_ratio",
    "model_type",
    "moe_intermediate_size",
    "moe_layer_freq",
    "multi_query",
    "n_embd",
    "n_embed",
    "n_head",
    "n_head_kv",
    "n_inner",
    "n_layer",
    "n_positions",
    "n_routed_experts",
    "n_shared_experts",
    "new_decoder_architecture",
    "norm_type",
    "num_attention_heads",
    "num_channels",
    "num_experts",
    "num_experts_per_tok",
    "num_global_layers",
    "num_hidden_layers",
    "num_key_value_heads",
    "num_kv_heads",
    "num_ln_in_parallel_attn",
    "num_local_experts",
    "num_nextn_predict_layers",
    "out_hidden_size",
    "parallel_attn",
    "patch_size",
    "q_lora_rank",
    "qk_nope_head_dim",
    "qk_normalization",
    "qk_rope_head_dim",
    "qkv_bias",
    "shared_expert_intermediate_size",
    "sliding_window",
    "sliding_window_pattern",
    "spatial_merge_size",
    "supported_aspect_ratios",
    "temporal_patch_size",
    "tie_word_embeddings",
    "topk_method",
    "torch_dtype",
    "use_sliding_window",
    "use_thumbnail",
    "v_head_dim",
    "vision_output_dim",
    "vision_use_head",
    "vocab_size",
    "word_embed_proj_dim",
];

/// Nested objects kept (trimmed with the same list), and the quantisation
/// config, kept whole but for its module lists.
const CONFIG_OBJECTS: &[&str] = &["text_config", "llm_config", "vision_config"];
const QUANT_DROP: &[&str] = &["modules_to_not_convert", "ignore", "ignored_layers", "modules_in_block_to_quantize"];

/// The compact JSON of a `config.json` for `cfg=`: minified and trimmed to
/// the fields the memory model reads. If trimming changed what the model
/// reads (a field this list does not know yet), the whole minified config is
/// returned instead, so a link never changes a figure.
pub fn compact_config(text: &str) -> Result<String, ConfigError> {
    let arch = Architecture::from_config_json(text)?;
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
    let Value::Object(map) = &value else { return Err(ConfigError::NotAnObject) };
    let trimmed = Value::Object(trim(map)).to_string();
    match Architecture::from_config_json(&trimmed) {
        Ok(a) if a == arch => Ok(trimmed),
        _ => Ok(value.to_string()),
    }
}

fn trim(map: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in map {
        if CONFIG_KEYS.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        } else if let (true, Value::Object(inner)) = (CONFIG_OBJECTS.contains(&k.as_str()), v) {
            out.insert(k.clone(), Value::Object(trim(inner)));
        } else if let ("quantization_config", Value::Object(inner)) = (k.as_str(), v) {
            let kept = inner.iter().filter(|(k, _)| !QUANT_DROP.contains(&k.as_str()));
            out.insert(k.clone(), Value::Object(kept.map(|(k, v)| (k.clone(), v.clone())).collect()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::MODEL_PRESETS;

    #[test]
    fn compacts_pasted_errors_without_changing_their_reading() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oom");
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let text = std::fs::read_to_string(entry.expect("entry").path()).expect("text");
            if let Some(c) = compact_oom(&text) {
                assert_eq!(crate::oom::parse(&c), crate::oom::parse(&text));
                assert!(c.len() <= text.len());
            }
        }
        assert_eq!(compact_oom(&"x".repeat(MAX_OOM + 1)), None);
    }
    #[test]
    fn compact_configs_read_the_same_for_every_preset() {
        for p in MODEL_PRESETS {
            let compact = compact_config(p.config_json()).expect(p.id);
            assert_eq!(
                Architecture::from_config_json(&compact),
                Architecture::from_config_json(p.config_json()),
                "{}",
                p.id
            );
            assert!(compact.len() <= p.config_json().len(), "{}", p.id);
        }
        // Unknown bulky fields are dropped.
        let big = r#"{"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_attention_heads":4,
            "num_hidden_layers":2,"vocab_size":100,"id2label":{"0":"a","1":"b"},"rope_scaling":null}"#;
        assert!(!compact_config(big).expect("reads").contains("id2label"));
        assert!(compact_config("{").is_err());
    }
}
