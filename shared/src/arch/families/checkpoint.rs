//! The checkpoint's own storage: `torch_dtype`/`dtype` and `quantization_config`.

use crate::arch::fields::{ConfigError, Fields};
use crate::arch::{CheckpointDtype, CheckpointQuant};
use crate::arch::{KeptRoles, Role};

use super::invalid;

pub(super) fn dtype(f: Fields) -> Option<CheckpointDtype> {
    match f.opt_str("torch_dtype").or_else(|| f.opt_str("dtype"))? {
        "float32" => Some(CheckpointDtype::F32),
        "float16" => Some(CheckpointDtype::F16),
        "bfloat16" => Some(CheckpointDtype::Bf16),
        s if s.starts_with("float8") => Some(CheckpointDtype::Fp8),
        _ => None,
    }
}

pub(super) fn quantization(root: Fields, warnings: &mut Vec<String>) -> Result<Option<CheckpointQuant>, ConfigError> {
    let Some(q) = root.object("quantization_config") else { return Ok(None) };
    let q = Fields::new(q, "quantization_config");
    let bits = |keys: &[&str]| -> Result<u8, ConfigError> {
        for k in keys {
            if let Some(b) = q.opt_u64(k)? {
                return u8::try_from(b)
                    .ok()
                    .filter(|b| (2..=8).contains(b))
                    .ok_or_else(|| invalid(q, k, format!("{b} bits is not supported")));
            }
        }
        Ok(4)
    };
    let group = |keys: &[&str]| -> Result<u32, ConfigError> {
        for k in keys {
            // GPTQ writes -1 for one group per column; count it as a very large group.
            if let Some(serde_json::Value::Number(n)) = q.value(k) {
                return Ok(match n.as_i64() {
                    Some(g) if g > 0 => u32::try_from(g).unwrap_or(u32::MAX),
                    _ => u32::MAX,
                });
            }
        }
        Ok(128)
    };
    let method = q.opt_str("quant_method").unwrap_or_default();
    Ok(match method {
        "gptq" => Some(CheckpointQuant::Gptq { bits: bits(&["bits"])?, group_size: group(&["group_size"])? }),
        "awq" => Some(CheckpointQuant::Awq {
            bits: bits(&["bits", "w_bit"])?,
            group_size: group(&["group_size", "q_group_size"])?,
        }),
        "fp8" | "fbgemm_fp8" => {
            let block = q
                .index_list("weight_block_size")
                .ok()
                .and_then(|b| b.first().copied())
                .and_then(|b| u32::try_from(b).ok());
            Some(CheckpointQuant::Fp8 { block })
        }
        "bitsandbytes" if q.bool_or("load_in_4bit", false)? => Some(CheckpointQuant::BitsAndBytes4 {
            double_quant: q.bool_or("bnb_4bit_use_double_quant", false)?,
            nf4: q.opt_str("bnb_4bit_quant_type") != Some("fp4"),
        }),
        "bitsandbytes" if q.bool_or("load_in_8bit", false)? => Some(CheckpointQuant::BitsAndBytes8),
        "compressed-tensors" => compressed_tensors(q, warnings),
        // gpt-oss: `modules_to_not_convert` keeps attention (and router,
        // embeddings, head) in bf16; only the experts are MXFP4.
        "mxfp4" => {
            let kept = q.str_list("modules_to_not_convert").unwrap_or_default();
            Some(CheckpointQuant::Mxfp4 { experts_only: kept.iter().any(|m| m.contains("attn")) })
        }
        // NVIDIA ModelOpt (`hf_quant_config.json` folded into config.json).
        "modelopt" => match q.opt_str("quant_algo").unwrap_or_default().to_ascii_uppercase().as_str() {
            "NVFP4" => Some(CheckpointQuant::Nvfp4),
            "FP8" => Some(CheckpointQuant::Fp8 { block: None }),
            other => {
                warnings.push(format!("ModelOpt quant_algo `{other}` is not modelled"));
                None
            }
        },
        other => {
            warnings.push(format!("quantization method `{other}` is not modelled: the weight format defaults to the checkpoint dtype; choose a format explicitly"));
            None
        }
    })
}

/// llm-compressor's `compressed-tensors`: read the first weight scheme.
fn compressed_tensors(q: Fields, warnings: &mut Vec<String>) -> Option<CheckpointQuant> {
    let weights = q
        .object("config_groups")
        .and_then(|groups| groups.values().next())
        .and_then(|g| g.get("weights"))
        .and_then(|w| w.as_object());
    let Some(w) = weights else {
        warnings.push("compressed-tensors config without weight scheme: not modelled".into());
        return None;
    };
    let bits = w.get("num_bits").and_then(|b| b.as_u64()).unwrap_or(8);
    let kind = w.get("type").and_then(|t| t.as_str()).unwrap_or("int");
    let group = w.get("group_size").and_then(|g| g.as_u64()).and_then(|g| u32::try_from(g).ok());
    match (kind, bits) {
        ("float", 8) => Some(CheckpointQuant::Fp8 {
            // `strategy: block` with `block_structure: [128, 128]`.
            block: w
                .get("block_structure")
                .and_then(|b| b.as_array())
                .and_then(|b| b.first())
                .and_then(|b| b.as_u64())
                .and_then(|b| u32::try_from(b).ok()),
        }),
        // compressed-tensors `nvfp4`: float, 4 bits, tensor_group of 16.
        ("float", 4) if group.is_none_or(|g| g == 16) => Some(CheckpointQuant::Nvfp4),
        ("int", 4 | 8) => Some(CheckpointQuant::Gptq { bits: bits as u8, group_size: group.unwrap_or(u32::MAX) }),
        _ => {
            warnings.push(format!("compressed-tensors {kind}{bits} is not modelled"));
            None
        }
    }
}

/// The modules a `quantization_config` leaves unconverted
/// (`modules_to_not_convert`: transformers' GPTQ, AWQ, FP8, bitsandbytes,
/// MXFP4 and ModelOpt configs; `ignore`: compressed-tensors, where `re:`
/// marks a regular expression), as the roles they name. Entries that name
/// what every format keeps anyway (the head, embeddings, norms, routers,
/// vision) change nothing; an entry naming one layer's module cannot be
/// kept by role and is reported.
pub(super) fn kept_modules(root: Fields, warnings: &mut Vec<String>) -> KeptRoles {
    let Some(q) = root.object("quantization_config") else { return KeptRoles::default() };
    let q = Fields::new(q, "quantization_config");
    let mut entries = q.str_list("modules_to_not_convert").unwrap_or_default();
    entries.extend(q.str_list("ignore").unwrap_or_default());
    entries.extend(q.str_list("exclude_modules").unwrap_or_default());
    let mut kept = KeptRoles::default();
    let mut per_layer = Vec::new();
    for entry in entries {
        let pattern = entry.strip_prefix("re:").unwrap_or(entry);
        let roles = roles_named(pattern);
        // `model.layers.3.mlp` names one layer's module; a role would keep all.
        let one_layer = !entry.starts_with("re:")
            && pattern.split('.').any(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if one_layer && !roles.is_empty() {
            per_layer.push(entry);
            continue;
        }
        for role in roles {
            kept = kept.with(*role);
        }
    }
    if !per_layer.is_empty() {
        warnings.push(format!(
            "the quantisation leaves {} single-layer module(s) unconverted ({}{}): counted as quantised",
            per_layer.len(),
            per_layer.iter().take(3).copied().collect::<Vec<_>>().join(", "),
            if per_layer.len() > 3 { ", …" } else { "" }
        ));
    }
    kept
}

/// The roles a module name or pattern names, by the words the checkpoints use
/// (`self_attn`, `attn`, `attention`; `shared_expert(s)`; `experts`; `mlp`,
/// `feed_forward`; projection names).
fn roles_named(pattern: &str) -> &'static [Role] {
    use Role::*;
    let has = |w: &str| pattern.contains(w);
    if has("vision") || has("visual") || has("lm_head") || has("embed") || has("norm") {
        &[]
    } else if has("shared_expert") {
        &[SharedExpertUp, SharedExpertDown]
    } else if has("experts") {
        &[ExpertUp, ExpertDown]
    } else if has("attn") || has("attention") {
        &[AttnQ, AttnK, AttnV, AttnO, AttnQkv, MlaDown, MlaUp]
    } else if has("router") || pattern.trim_end_matches('$').ends_with("mlp.gate") {
        &[]
    } else if has("mlp") || has("feed_forward") {
        &[MlpUp, MlpDown]
    } else {
        &[]
    }
}

/// Whether the `quantization_config` names an FP8 KV cache, as vLLM 0.25.1
/// reads it: compressed-tensors' `kv_cache_scheme` (any scheme: the
/// attention layer sets an `auto` cache to `fp8` and validates it as 8-bit
/// float, `attention.py`, `compressed_tensors.py::validate_kv_cache_scheme`)
/// and ModelOpt's `kv_cache_quant_algo` / `kv_cache_scheme`, top level or
/// under `quantization` (`torch_utils.py::get_kv_cache_quant_algo_string`).
pub(super) fn kv_cache_fp8(root: Fields) -> bool {
    use serde_json::Value;
    let Some(q) = root.object("quantization_config") else { return false };
    let method = q.get("quant_method").and_then(Value::as_str).unwrap_or_default();
    if method == "compressed-tensors" {
        return q.get("kv_cache_scheme").is_some_and(Value::is_object);
    }
    if !method.starts_with("modelopt") {
        return false;
    }
    let inner = q.get("quantization").and_then(Value::as_object).unwrap_or(q);
    let algo = ["kv_cache_scheme", "kv_cache_quant_algo"]
        .iter()
        .find_map(|k| inner.get(*k).or_else(|| q.get(*k)).filter(|v| !v.is_null()));
    match algo {
        Some(Value::String(s)) => s.eq_ignore_ascii_case("fp8"),
        Some(Value::Object(o)) => {
            o.get("dynamic") == Some(&Value::Bool(false))
                && o.get("num_bits").and_then(Value::as_u64) == Some(8)
                && o.get("type").and_then(Value::as_str) == Some("float")
        }
        _ => false,
    }
}
