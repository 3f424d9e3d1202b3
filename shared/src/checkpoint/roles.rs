//! A role and a layer for every tensor, from its name alone: Hugging Face
//! names (`model.layers.3.self_attn.q_proj.weight`, with the GPTQ/AWQ,
//! FP8, MXFP4, NVFP4 and bitsandbytes side tensors) and llama.cpp's GGUF
//! names (`blk.3.attn_q.weight`, from `src/llama-arch.cpp` `LLM_TENSOR_NAMES`).
//! A name no rule knows is still counted, as [`Role::Other`].

use serde::Serialize;

use crate::arch::Role;

/// A tensor that is not a weight itself but what a quantisation method
/// stores beside one (it takes the role of its weight for placement and
/// sharding, and counts no parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuantPart {
    /// Scales: GPTQ/AWQ `scales`, FP8 `weight_scale(_inv)`, MXFP4 `_scales`,
    /// bitsandbytes `absmax`/`SCB`, NVFP4 `weight_scale_2`, activation scales.
    Scale,
    /// Zero points (`qzeros`, `weight_zero_point`).
    Zero,
    /// GPTQ's act-order `g_idx`, compressed-tensors' `weight_shape`.
    Index,
}

/// How a weight's values are packed into its stored elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// One value per element.
    Plain,
    /// GPTQ/AWQ `qweight`, compressed-tensors `weight_packed`: `32 / bits` per int32.
    Int32,
    /// Two 4-bit values per byte (MXFP4 `_blocks`, NVFP4 and bitsandbytes 4-bit `U8` weights).
    TwoPerByte,
}

/// What a name says about its tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    pub role: Role,
    /// The decoder layer, when the tensor belongs to one.
    pub layer: Option<u32>,
    pub quant: Option<QuantPart>,
    pub packing: Packing,
}

/// Prefixes of multimodal towers: vision, audio and their projectors.
const VISION: &[&str] = &["vision_tower", "vision_model", "visual", "vision", "vit", "image_encoder", "v"];
const AUDIO: &[&str] = &["audio_tower", "audio_model", "audio_encoder", "audio", "a"];
const PROJECTOR: &[&str] = &[
    "multi_modal_projector",
    "mm_projector",
    "mm",
    "connector",
    "vision_projection",
    "audio_projection",
    "embed_vision",
];
/// Segments that precede a layer index.
const LAYER_LISTS: &[&str] = &["layers", "h", "blocks", "block", "blk", "layer"];

/// Classifies one tensor name. `num_layers` (the decoder's, when known)
/// marks layers past the last as multi-token-prediction heads (DeepSeek-V3,
/// GLM-4.5 store them as extra layers).
pub fn classify(name: &str, num_layers: Option<u32>) -> Classified {
    let (stem, quant, packing) = split_quant(name);
    // Names are nearly always lower case already: allocate only when not.
    let lower: std::borrow::Cow<str> =
        if stem.bytes().any(|b| b.is_ascii_uppercase()) { stem.to_ascii_lowercase().into() } else { stem.into() };
    let lower = lower.as_ref();
    let is_in = |list: &[&str]| {
        name.split('.').take(3).enumerate().any(|(i, s)| {
            // One-letter GGUF mmproj prefixes (`v.`, `a.`, `mm.`) only count first.
            (i == 0 || s.len() > 2) && list.contains(&s)
        })
    };
    let layer = layer_index(name);
    let plain = |role| Classified { role, layer: None, quant, packing };
    if is_in(PROJECTOR) {
        return plain(Role::Projector);
    }
    if is_in(AUDIO) {
        return plain(Role::Audio);
    }
    if is_in(VISION) {
        let linear =
            quant.is_none() && lower.ends_with("weight") && !lower.contains("norm") && !lower.contains("embed");
        return plain(if linear { Role::VisionLinear } else { Role::VisionOther });
    }
    let past_last = matches!((layer, num_layers), (Some(l), Some(n)) if l >= n);
    if name.starts_with("mtp.") || lower.contains("nextn") || past_last {
        return plain(Role::Mtp);
    }
    let role = role_of(lower, layer.is_some());
    Classified { role, layer: if role_is_global(role) { None } else { layer }, quant, packing }
}

fn role_is_global(role: Role) -> bool {
    matches!(role, Role::Embedding | Role::PositionEmbedding | Role::LmHead)
}

/// The layer index: the number after `layers`, `h`, `blk`, … .
fn layer_index(name: &str) -> Option<u32> {
    let mut previous = "";
    for s in name.split('.') {
        if LAYER_LISTS.contains(&previous)
            && let Ok(l) = s.parse()
        {
            return Some(l);
        }
        previous = s;
    }
    None
}

/// Strips a quantisation suffix: the stem names the weight it belongs to.
fn split_quant(name: &str) -> (&str, Option<QuantPart>, Packing) {
    const SUFFIXES: &[(&str, Option<QuantPart>, Packing)] = &[
        (".qweight", None, Packing::Int32),
        (".weight_packed", None, Packing::Int32),
        ("_blocks", None, Packing::TwoPerByte),
        (".qzeros", Some(QuantPart::Zero), Packing::Plain),
        (".weight_zero_point", Some(QuantPart::Zero), Packing::Plain),
        (".scales", Some(QuantPart::Scale), Packing::Plain),
        ("_scales", Some(QuantPart::Scale), Packing::Plain),
        (".g_idx", Some(QuantPart::Index), Packing::Plain),
        (".weight_shape", Some(QuantPart::Index), Packing::Plain),
        (".weight_scale_inv", Some(QuantPart::Scale), Packing::Plain),
        (".weight_scale_2", Some(QuantPart::Scale), Packing::Plain),
        (".weight_scale", Some(QuantPart::Scale), Packing::Plain),
        (".weight_global_scale", Some(QuantPart::Scale), Packing::Plain),
        (".input_global_scale", Some(QuantPart::Scale), Packing::Plain),
        (".input_scale", Some(QuantPart::Scale), Packing::Plain),
        (".k_scale", Some(QuantPart::Scale), Packing::Plain),
        (".v_scale", Some(QuantPart::Scale), Packing::Plain),
        (".weight.absmax", Some(QuantPart::Scale), Packing::Plain),
        (".weight.nested_absmax", Some(QuantPart::Scale), Packing::Plain),
        (".weight.quant_map", Some(QuantPart::Scale), Packing::Plain),
        (".weight.nested_quant_map", Some(QuantPart::Scale), Packing::Plain),
        (".SCB", Some(QuantPart::Scale), Packing::Plain),
        (".weight_format", Some(QuantPart::Index), Packing::Plain),
    ];
    for &(suffix, part, packing) in SUFFIXES {
        if let Some(stem) = name.strip_suffix(suffix) {
            return (stem, part, packing);
        }
    }
    // bitsandbytes: `….weight.quant_state.bitsandbytes__nf4`.
    if let Some((stem, _)) = name.split_once(".weight.quant_state") {
        return (stem, Some(QuantPart::Scale), Packing::Plain);
    }
    (name, None, Packing::Plain)
}

fn has(lower: &str, words: &[&str]) -> bool {
    words.iter().any(|w| lower.contains(w))
}

/// The segment that names the tensor's module (`q_proj` in `….q_proj.weight`).
fn module(lower: &str) -> &str {
    let trimmed = lower.strip_suffix(".weight").or_else(|| lower.strip_suffix(".bias")).unwrap_or(lower);
    trimmed.rsplit('.').next().unwrap_or(trimmed)
}

fn role_of(lower: &str, in_layer: bool) -> Role {
    let m = module(lower);
    if !in_layer {
        if has(lower, &["embed_tokens", "wte", "word_embeddings", "tok_embeddings", "token_embd", "embed_in"]) {
            return Role::Embedding;
        }
        if has(lower, &["wpe", "embed_positions", "position_embeddings", "pos_embd"]) {
            return Role::PositionEmbedding;
        }
        if has(lower, &["lm_head", "embed_out"]) || m == "output" {
            return Role::LmHead;
        }
        if has(lower, &["project_in", "project_out"]) {
            return Role::EmbedProjection;
        }
    }
    if has(lower, &["norm", "ln_", "ln1", "ln2", "ln_f"]) {
        return Role::Norm;
    }
    let bias = lower.ends_with(".bias") || lower.ends_with("_bias") || m == "sinks" || m == "attn_sinks";
    // Routers: `mlp.gate`, `router`, `ffn_gate_inp`, DeepSeek's `e_score_correction_bias`.
    if m == "gate" || has(lower, &["router", "ffn_gate_inp", "shared_expert_gate", "e_score_correction", "exp_probs_b"])
    {
        return Role::Router;
    }
    let shared_expert = has(lower, &["shared_expert", "shexp"]);
    let routed_expert = !shared_expert && has(lower, &["experts", "_exps"]);
    if bias {
        // gpt-oss's `mlp.experts.gate_up_proj_bias`, llama.cpp's
        // `blk.N.ffn_gate_exps.bias`: placed and sharded with the experts.
        return if routed_expert { Role::ExpertBias } else { Role::Bias };
    }
    let down = has(m, &["down", "w2", "fc2", "4h_to_h"]);
    if shared_expert {
        return if down { Role::SharedExpertDown } else { Role::SharedExpertUp };
    }
    if routed_expert {
        return if down { Role::ExpertDown } else { Role::ExpertUp };
    }
    if has(
        lower,
        &["mamba", "ssm", "linear_attn", "a_log", "dt_proj", "dt_bias", "conv1d", "x_proj", "time_mix", "short_conv"],
    ) {
        return Role::Recurrent;
    }
    // The DSA lightning indexer of a `glm-dsa` GGUF (`blk.N.indexer.proj`,
    // `.attn_k`, `.attn_q_b`; its `k_norm` is a norm above): the roles
    // `params.rs` gives `DeepseekV32Indexer`'s `weights_proj`, `wk`, `wq_b`
    // (src/llama-arch.cpp `LLM_TENSOR_INDEXER_*` at b8211).
    if lower.contains(".indexer.") {
        match m {
            "proj" | "attn_q_b" => return Role::AttnQ,
            "attn_k" => return Role::AttnK,
            _ => {}
        }
    }
    match m {
        "q_a_proj" | "kv_a_proj_with_mqa" | "attn_q_a" | "attn_kv_a_mqa" => return Role::MlaDown,
        "q_b_proj" | "kv_b_proj" | "attn_q_b" | "attn_kv_b" | "attn_k_b" | "attn_v_b" => return Role::MlaUp,
        "qkv_proj" | "c_attn" | "query_key_value" | "attn_qkv" | "wqkv" | "w_pack" => return Role::AttnQkv,
        "q_proj" | "wq" | "attn_q" | "query" => return Role::AttnQ,
        "k_proj" | "wk" | "attn_k" | "key" => return Role::AttnK,
        "v_proj" | "wv" | "attn_v" | "value" => return Role::AttnV,
        "o_proj" | "wo" | "attn_output" | "out_proj" => return Role::AttnO,
        _ => {}
    }
    let in_attention = has(lower, &["attn", "attention"]);
    if in_attention && (m == "dense" || m == "c_proj") {
        return Role::AttnO;
    }
    let mlp = has(lower, &["mlp", "feed_forward", "ffn"]);
    if mlp || has(m, &["gate_proj", "up_proj", "down_proj", "gate_up_proj", "fc1", "fc2", "c_fc"]) {
        return if down || m == "c_proj" { Role::MlpDown } else { Role::MlpUp };
    }
    if has(lower, &["mixer"]) {
        return Role::Recurrent;
    }
    Role::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, role: Role, layer: Option<u32>) {
        let c = classify(name, Some(61));
        assert_eq!((c.role, c.layer), (role, layer), "{name}");
    }

    #[test]
    fn hugging_face_names() {
        check("model.embed_tokens.weight", Role::Embedding, None);
        check("lm_head.weight", Role::LmHead, None);
        check("model.norm.weight", Role::Norm, None);
        check("model.layers.3.input_layernorm.weight", Role::Norm, Some(3));
        check("model.layers.3.self_attn.q_proj.weight", Role::AttnQ, Some(3));
        check("model.layers.3.self_attn.q_proj.bias", Role::Bias, Some(3));
        check("model.layers.3.self_attn.k_proj.weight", Role::AttnK, Some(3));
        check("model.layers.3.self_attn.v_proj.weight", Role::AttnV, Some(3));
        check("model.layers.3.self_attn.o_proj.weight", Role::AttnO, Some(3));
        check("model.layers.3.self_attn.q_norm.weight", Role::Norm, Some(3));
        check("model.layers.3.self_attn.kv_a_proj_with_mqa.weight", Role::MlaDown, Some(3));
        check("model.layers.3.self_attn.kv_b_proj.weight", Role::MlaUp, Some(3));
        check("model.layers.3.self_attn.kv_a_layernorm.weight", Role::Norm, Some(3));
        check("model.layers.3.mlp.gate_proj.weight", Role::MlpUp, Some(3));
        check("model.layers.3.mlp.down_proj.weight", Role::MlpDown, Some(3));
        check("model.layers.3.mlp.gate.weight", Role::Router, Some(3));
        check("model.layers.3.mlp.gate.e_score_correction_bias", Role::Router, Some(3));
        check("model.layers.3.mlp.experts.17.up_proj.weight", Role::ExpertUp, Some(3));
        check("model.layers.3.mlp.experts.17.down_proj.weight", Role::ExpertDown, Some(3));
        check("model.layers.3.mlp.shared_experts.down_proj.weight", Role::SharedExpertDown, Some(3));
        check("model.layers.3.block_sparse_moe.experts.0.w1.weight", Role::ExpertUp, Some(3));
        check("model.layers.3.block_sparse_moe.experts.0.w2.weight", Role::ExpertDown, Some(3));
        // gpt-oss: the experts' biases go with the experts, the router's is the router's.
        check("model.layers.3.mlp.experts.gate_up_proj_bias", Role::ExpertBias, Some(3));
        check("model.layers.3.mlp.experts.down_proj_bias", Role::ExpertBias, Some(3));
        check("model.layers.3.mlp.router.bias", Role::Router, Some(3));
        check("model.layers.3.mlp.shared_experts.down_proj.bias", Role::Bias, Some(3));
        check("model.layers.61.eh_proj.weight", Role::Mtp, None);
        check("mtp.layers.0.mlp.up_proj.weight", Role::Mtp, None);
        check("model.layers.2.linear_attn.in_proj_qkvz.weight", Role::Recurrent, Some(2));
        check("backbone.layers.2.mixer.in_proj.weight", Role::Recurrent, Some(2));
        check("transformer.h.0.attn.c_attn.weight", Role::AttnQkv, Some(0));
        check("transformer.h.0.attn.c_proj.weight", Role::AttnO, Some(0));
        check("transformer.h.0.mlp.c_proj.weight", Role::MlpDown, Some(0));
        check("transformer.wte.weight", Role::Embedding, None);
        check("gpt_neox.layers.1.attention.query_key_value.weight", Role::AttnQkv, Some(1));
        check("gpt_neox.layers.1.attention.dense.weight", Role::AttnO, Some(1));
        check("embed_out.weight", Role::LmHead, None);
        check("model.vision_tower.blocks.0.attn.qkv.weight", Role::VisionLinear, None);
        check("visual.blocks.0.norm1.weight", Role::VisionOther, None);
        check("model.multi_modal_projector.linear_1.weight", Role::Projector, None);
        check("audio_tower.layers.0.fc1.weight", Role::Audio, None);
        check("model.language_model.layers.5.self_attn.q_proj.weight", Role::AttnQ, Some(5));
        check("model.layers.0.self_attn.sinks", Role::Bias, Some(0));
        check("something.completely.new", Role::Other, None);
    }

    #[test]
    fn quantisation_side_tensors_take_their_weights_role() {
        let c = classify("model.layers.0.self_attn.q_proj.qweight", None);
        assert_eq!((c.role, c.quant, c.packing), (Role::AttnQ, None, Packing::Int32));
        let c = classify("model.layers.0.self_attn.q_proj.qzeros", None);
        assert_eq!((c.role, c.quant), (Role::AttnQ, Some(QuantPart::Zero)));
        let c = classify("model.layers.0.mlp.down_proj.weight_scale_inv", None);
        assert_eq!((c.role, c.quant), (Role::MlpDown, Some(QuantPart::Scale)));
        let c = classify("model.layers.0.mlp.experts.gate_up_proj_blocks", None);
        assert_eq!((c.role, c.quant, c.packing), (Role::ExpertUp, None, Packing::TwoPerByte));
        let c = classify("model.layers.0.mlp.experts.down_proj_scales", None);
        assert_eq!((c.role, c.quant), (Role::ExpertDown, Some(QuantPart::Scale)));
        let c = classify("model.layers.0.mlp.up_proj.weight.absmax", None);
        assert_eq!((c.role, c.quant), (Role::MlpUp, Some(QuantPart::Scale)));
        let c = classify("model.layers.0.mlp.up_proj.weight.quant_state.bitsandbytes__nf4", None);
        assert_eq!((c.role, c.quant), (Role::MlpUp, Some(QuantPart::Scale)));
        let c = classify("model.layers.0.self_attn.q_proj.g_idx", None);
        assert_eq!((c.role, c.quant), (Role::AttnQ, Some(QuantPart::Index)));
    }

    #[test]
    fn gguf_names() {
        check("token_embd.weight", Role::Embedding, None);
        check("output.weight", Role::LmHead, None);
        check("output_norm.weight", Role::Norm, None);
        check("blk.7.attn_q.weight", Role::AttnQ, Some(7));
        check("blk.7.attn_k.weight", Role::AttnK, Some(7));
        check("blk.7.attn_v.weight", Role::AttnV, Some(7));
        check("blk.7.attn_qkv.weight", Role::AttnQkv, Some(7));
        check("blk.7.attn_output.weight", Role::AttnO, Some(7));
        check("blk.7.attn_norm.weight", Role::Norm, Some(7));
        check("blk.7.attn_kv_a_mqa.weight", Role::MlaDown, Some(7));
        check("blk.7.attn_k_b.weight", Role::MlaUp, Some(7));
        check("blk.7.ffn_gate.weight", Role::MlpUp, Some(7));
        check("blk.7.ffn_down.weight", Role::MlpDown, Some(7));
        check("blk.7.ffn_gate_inp.weight", Role::Router, Some(7));
        check("blk.7.ffn_gate_exps.weight", Role::ExpertUp, Some(7));
        check("blk.7.ffn_down_exps.weight", Role::ExpertDown, Some(7));
        check("blk.7.ffn_gate_exps.bias", Role::ExpertBias, Some(7));
        check("blk.7.ffn_up_exps.bias", Role::ExpertBias, Some(7));
        check("blk.7.ffn_down_exps.bias", Role::ExpertBias, Some(7));
        check("blk.7.ffn_gate_inp.bias", Role::Router, Some(7));
        check("blk.7.attn_q.bias", Role::Bias, Some(7));
        check("blk.7.ffn_up_shexp.weight", Role::SharedExpertUp, Some(7));
        check("blk.7.ssm_in.weight", Role::Recurrent, Some(7));
        check("blk.7.nextn.eh_proj.weight", Role::Mtp, None);
        // GLM-5 (`glm-dsa`): the indexer, shared experts and the NextN layer
        // past `block_count - nextn_predict_layers`.
        check("blk.7.indexer.proj.weight", Role::AttnQ, Some(7));
        check("blk.7.indexer.attn_q_b.weight", Role::AttnQ, Some(7));
        check("blk.7.indexer.attn_k.weight", Role::AttnK, Some(7));
        check("blk.7.indexer.k_norm.weight", Role::Norm, Some(7));
        check("blk.7.indexer.k_norm.bias", Role::Norm, Some(7));
        check("blk.7.attn_q_b.weight", Role::MlaUp, Some(7));
        check("blk.7.exp_probs_b.bias", Role::Router, Some(7));
        check("blk.7.ffn_down_shexp.weight", Role::SharedExpertDown, Some(7));
        check("blk.61.attn_q_a.weight", Role::Mtp, None);
        check("v.blk.0.attn_q.weight", Role::VisionLinear, None);
        check("mm.0.weight", Role::Projector, None);
    }
}
