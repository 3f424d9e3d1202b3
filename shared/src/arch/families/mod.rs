//! Reading each family's `config.json` into a [`TextModel`], with the defaults
//! of the matching transformers config class where the published configs leave
//! keys out (e.g. `GemmaConfig` ties embeddings, `MistralConfig` slides over
//! 4096 tokens unless `sliding_window` is present).

mod checkpoint;
mod classic;
mod decoder;
mod deepseek;
mod deepseek_v4;
mod dense;
mod gemma3n;
mod gemma4;
mod hybrid;
mod kimi_linear;
mod mamba;
mod moe;

use serde_json::{Map, Value};

use super::fields::{ConfigError, Fields, MAX_CONTEXT};
use super::{Architecture, AttentionKind, Family, LayerSpec, NormKind, TextModel, vision};
use checkpoint::{dtype, kept_modules, kv_cache_fp8, quantization};
use classic::{bloom, falcon, gpt_neox, gpt2, opt, phi};
use decoder::decoder;
use deepseek::deepseek;

pub(super) fn read(map: &Map<String, Value>) -> Result<Architecture, ConfigError> {
    let root = Fields::new(map, "");
    let model_type = root.opt_str("model_type").unwrap_or_default().to_owned();
    let architectures = root.str_list("architectures")?;
    let mut warnings = Vec::new();
    let text_map = text_config(map);
    let text_type = text_map.and_then(|(m, _)| m.get("model_type")).and_then(Value::as_str);
    let text_architectures = match text_map {
        Some((m, key)) => Fields::new(m, key).str_list("architectures")?,
        None => Vec::new(),
    };
    let detected = detect(&model_type, text_type.unwrap_or_default(), &architectures, &text_architectures);
    // A known wrapper around a language model no reader knows: name that model.
    if detected.is_none()
        && let Some((_, key)) = text_map
        && let Some((_, default)) = ANY_TEXT_WRAPPERS.iter().find(|(wrapper, _)| *wrapper == model_type)
    {
        let text_type = text_type.filter(|t| !t.is_empty()).unwrap_or(default).to_owned();
        return Err(ConfigError::UnknownArchitecture {
            model_type: text_type,
            what: format!("its `{model_type}` wrapper (`{key}`)"),
        });
    }
    if detected.is_none()
        && let Some(what) = not_plain_dense(root)
    {
        let model_type = if model_type.is_empty() { "(no model_type)".to_owned() } else { model_type };
        return Err(ConfigError::UnknownArchitecture { model_type, what });
    }
    let family = detected.unwrap_or_else(|| {
        warnings.push(format!(
            "unknown architecture `{}`: read through the generic fields (hidden_size, \
             num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size, \
             vocab_size) as a Llama-style decoder; the count may be off",
            if model_type.is_empty() { "(no model_type)" } else { &model_type }
        ));
        Family::Generic
    });
    let text_fields = text_map.map_or(root, |(m, key)| Fields::new(m, key));
    let mut text = read_text(family, text_fields, &mut warnings)?;
    // The multi-token-prediction layers an engine builds for speculative
    // decoding (`num_nextn_predict_layers`: DeepSeek-V3, GLM-4.5, Qwen3-Next,
    // Qwen3.5, MiMo; `mtp_num_hidden_layers`: Qwen3.5 text configs), as vLLM
    // reads `n_predict` (0.24.0 `config/speculative.py`).
    text.extra.mtp_layers = text_fields
        .count_or("num_nextn_predict_layers", 0)?
        .max(text_fields.count_or("mtp_num_hidden_layers", 0)?)
        .max(root.count_or("num_nextn_predict_layers", 0)?)
        .min(64);
    // Multimodal wrappers: transformers 5 ties the head by the wrapper's own
    // `tie_word_embeddings` (`PreTrainedModel.tie_weights` reads `self.config`),
    // which may differ from the text config's (Mistral 3, Qwen3-VL-MoE).
    if text_map.is_some()
        && let Some(tie) = root.opt_bool("tie_word_embeddings")?
    {
        text.tie_word_embeddings = tie;
    }
    // Multimodal RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL: `mrope_section` in the
    // scaling object): vLLM's `MRotaryEmbedding` builds its table for four
    // times the positions, "the maximum index value is related to the
    // duration of the input video" (0.11.0 `rotary_embedding/mrope.py`,
    // `cache_max_position_num = max_position_embeddings * 4`).
    let mrope = ["rope_scaling", "rope_parameters"]
        .iter()
        .filter_map(|key| text_fields.object(key))
        .any(|o| o.contains_key("mrope_section"));
    text.extra.rope_freqs =
        ["rope_scaling", "rope_parameters"].iter().filter_map(|key| text_fields.object(key)).any(|o| {
            o.get("rope_type")
                .or_else(|| o.get("type"))
                .and_then(|v| v.as_str())
                .is_some_and(|t| t.eq_ignore_ascii_case("llama3"))
        });
    if mrope && text.extra.rope_table_positions == 0 {
        let positions = text_fields.dim_or("max_position_embeddings", 0)?;
        text.extra.rope_table_positions = positions.saturating_mul(4).min(4 * MAX_CONTEXT);
    }
    let vision = vision::read(family, root, &text)?;
    if root.has("vision_config") && vision.is_none() {
        warnings.push("`vision_config` of an unsupported kind: the vision tower is not counted".into());
    }
    // Audio towers (Gemma 3n, Gemma 4) are not read.
    let audio = root.has("audio_config");
    if audio {
        warnings.push("`audio_config`: the audio tower is not counted".into());
    }
    let towers_unread = audio || (root.has("vision_config") && vision.is_none());
    let checkpoint_dtype = dtype(root).or_else(|| dtype(text_fields));
    let quantization = quantization(root, &mut warnings)?;
    let quant_kept = if quantization.is_some() { kept_modules(root, &mut warnings) } else { Default::default() };
    let kv_cache_fp8 = kv_cache_fp8(root);
    // DeepSeek's, GLM-5's, MiMo-7B's (read as Qwen2; its one layer: 2.7 %
    // of its checkpoint's bytes) and an unknown architecture's read as a
    // plain decoder.
    if matches!(
        family,
        Family::DeepseekV3
            | Family::DeepseekV32
            | Family::GlmMoeDsa
            | Family::DeepseekV4
            | Family::Qwen2
            | Family::Generic
    ) && text.extra.mtp_layers > 0
    {
        warnings.push(
            "the checkpoint also ships a multi-token-prediction layer (`num_nextn_predict_layers`), \
             which transformers and vLLM do not load by default; not counted unless vLLM's \
             `--speculative-config mtp` builds it"
                .into(),
        );
    }
    let multimodal = text_map.is_some() || root.has("vision_config");
    Ok(Architecture {
        family,
        model_type,
        text,
        vision,
        multimodal,
        towers_unread,
        checkpoint_dtype,
        quantization,
        quant_kept,
        kv_cache_fp8,
        warnings,
    })
}

/// What makes an unknown config more than a plain dense decoder, whose
/// generic read would be a guess: experts, hybrid or recurrent layers,
/// per-layer type lists, a sub-config holding the language model, or a
/// vision tower declared without a `vision_config` (LLaVA-style `mm_*` keys,
/// MiniCPM-V's `query_num`, an architecture named for images or generation
/// from another modality: `*ForConditionalGeneration`, Molmo, MiniCPM-V),
/// which a plain read would leave out (MiniCPM-V-2's checkpoint 12.4 % and a
/// LLaVA-style one 13.5 % above such a read; Molmo's fused `intermediate_size`
/// read as three matrices, 36 % above).
fn not_plain_dense(root: Fields) -> Option<String> {
    const EXPERTS: &[&str] = &[
        "num_experts",
        "num_local_experts",
        "n_routed_experts",
        "moe_num_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "n_shared_experts",
    ];
    const RECURRENT: &[&str] = &[
        "ssm_cfg",
        "mamba_d_state",
        "state_size",
        "ssm_state_size",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "conv_kernel",
        "mamba_expand",
        "attn_layer_indices",
        "hybrid_override_pattern",
    ];
    const LAYER_LISTS: &[&str] = &["layer_types", "layers_block_type", "block_types", "layer_pattern"];
    const SUB_CONFIGS: &[&str] = &["text_config", "language_config", "llm_config", "thinker_config"];
    const VISION: &[&str] = &[
        "mm_vision_tower",
        "mm_hidden_size",
        "mm_projector_type",
        "vision_tower",
        "vision_encoder",
        "vision_backbone",
        "siglip_config",
        "vit_config",
        "query_num",
        // Phi-3-vision and Phi-3.5-vision (`phi3_v`), Phi-4-multimodal.
        "img_processor",
        "embd_layer",
        "vision_lora",
    ];
    const VISION_ARCHITECTURES: &[&str] = &["ForConditionalGeneration", "Molmo", "MiniCPMV", "Llava"];
    let found = |keys: &[&'static str]| -> Option<&'static str> {
        keys.iter().copied().find(|k| root.value(k).is_some_and(|v| !v.is_null() && v != &Value::from(0)))
    };
    if let Some(k) = found(EXPERTS) {
        return Some(format!("mixture-of-experts layers (`{k}`)"));
    }
    if let Some(k) = found(RECURRENT) {
        return Some(format!("recurrent or hybrid layers (`{k}`)"));
    }
    if let Some(k) = found(LAYER_LISTS) {
        return Some(format!("per-layer types (`{k}`)"));
    }
    if let Some(k) = found(SUB_CONFIGS) {
        return Some(format!("a sub-config (`{k}`)"));
    }
    if let Some(k) = found(VISION) {
        return Some(format!("a vision tower (`{k}`)"));
    }
    let architectures = root.value("architectures").and_then(Value::as_array);
    let named = architectures.into_iter().flatten().filter_map(Value::as_str);
    named
        .filter(|a| VISION_ARCHITECTURES.iter().any(|v| a.contains(v)))
        .map(|a| format!("a vision tower or an encoder (`{a}`)"))
        .next()
}

/// Multimodal wrappers whose config class holds any text config
/// (`AutoConfig`), with the text `model_type` it defaults to (transformers
/// 5.25 `configuration_*.py`): Mistral Small 3.1+, Ministral 3 and Mistral 4
/// checkpoints all ship as `mistral3`.
const ANY_TEXT_WRAPPERS: &[(&str, &str)] = &[
    ("mistral3", "mistral"),
    ("internvl", "qwen2"),
    ("llava", "llama"),
    ("llava_next", "llama"),
    ("llava_onevision", "qwen2"),
    ("paligemma", "gemma"),
    ("idefics3", "llama"),
    ("smolvlm", "llama"),
    // InternVL 1.5 – 3.5 as their own repositories ship them (remote code,
    // `configuration_internvl_chat.py`): the language model's config is
    // `llm_config`, its class named by `architectures` (InternLM2 without one).
    ("internvl_chat", "internlm2"),
];

/// The object holding a wrapper's language model and its key: `text_config`,
/// or `llm_config` for InternVL's remote-code wrapper (`InternVLChatConfig`).
pub(crate) fn text_config(map: &Map<String, Value>) -> Option<(&Map<String, Value>, &'static str)> {
    let key = match map.get("model_type").and_then(Value::as_str) {
        Some("internvl_chat") => "llm_config",
        _ => "text_config",
    };
    map.get(key).and_then(Value::as_object).map(|m| (m, key))
}

/// The family of a config's `model_type`; a wrapper of
/// [`ANY_TEXT_WRAPPERS`] is its text model's, told by its `text_config`'s
/// `model_type` (`text_type`, empty when there is none).
fn detect(model_type: &str, text_type: &str, architectures: &[&str], text_architectures: &[&str]) -> Option<Family> {
    if let Some((_, default)) = ANY_TEXT_WRAPPERS.iter().find(|(wrapper, _)| *wrapper == model_type) {
        return detect(if text_type.is_empty() { default } else { text_type }, "", text_architectures, &[]);
    }
    let by_type = match model_type {
        "llama" => Some(Family::Llama),
        "mllama" => Some(Family::Mllama),
        "mistral" => Some(Family::Mistral),
        "ministral3" => Some(Family::Ministral3),
        "mistral4" => Some(Family::Mistral4),
        "mixtral" => Some(Family::Mixtral),
        // MiMo-7B (`mimo`, remote code): vLLM 0.34 builds it as Qwen2
        // (`models/mimo.py`: `MiMoForCausalLM(Qwen2ForCausalLM)`, its
        // `model.mtp_layers.` left unloaded).
        "qwen2" | "mimo" => Some(Family::Qwen2),
        "qwen2_moe" => Some(Family::Qwen2Moe),
        "qwen2_vl" | "qwen2_5_vl" => Some(Family::Qwen2Vl),
        // Qwen3-VL: Qwen3 / Qwen3-MoE text models (interleaved MRoPE changes no shapes).
        "qwen3" | "qwen3_vl" | "qwen3_vl_text" => Some(Family::Qwen3),
        "qwen3_moe" | "qwen3_vl_moe" | "qwen3_vl_moe_text" => Some(Family::Qwen3Moe),
        "gemma" => Some(Family::Gemma),
        "gemma2" => Some(Family::Gemma2),
        "gemma3" | "gemma3_text" => Some(Family::Gemma3),
        "phi" => Some(Family::Phi),
        "phi3" => Some(Family::Phi3),
        "deepseek_v2" => Some(Family::DeepseekV2),
        // Kimi K2.5 (`kimi_k25`): a DeepSeek-V3 text config beside a MoonViT
        // tower (transformers 5.25 `configuration_kimi_k25.py`).
        "deepseek_v3" | "kimi_k2" | "kimi_k25" => Some(Family::DeepseekV3),
        "deepseek_v32" => Some(Family::DeepseekV32),
        "glm_moe_dsa" => Some(Family::GlmMoeDsa),
        "deepseek_v4" => Some(Family::DeepseekV4),
        "gpt2" => Some(Family::Gpt2),
        "gpt_neox" => Some(Family::GptNeox),
        "falcon" | "RefinedWeb" | "RefinedWebModel" => Some(Family::Falcon),
        "opt" => Some(Family::Opt),
        "gpt_oss" => Some(Family::GptOss),
        "llama4" | "llama4_text" => Some(Family::Llama4),
        // GLM-4.5V / 4.6V (`glm4v_moe`) and GLM-4.1V (`glm4v`): GLM-4.5's and
        // GLM-4's text models beside GLM's ViT (transformers 5.25).
        "glm4_moe" | "glm4v_moe" => Some(Family::Glm4Moe),
        "glm4_moe_lite" => Some(Family::Glm4MoeLite),
        "minimax_m2" => Some(Family::MinimaxM2),
        "phimoe" => Some(Family::Phimoe),
        "granitemoe" => Some(Family::GraniteMoe),
        "smollm3" => Some(Family::Smollm3),
        "olmo2" => Some(Family::Olmo2),
        "olmo3" => Some(Family::Olmo3),
        "olmoe" => Some(Family::Olmoe),
        "ernie4_5" => Some(Family::Ernie45),
        "ernie4_5_moe" => Some(Family::Ernie45Moe),
        "dots1" => Some(Family::Dots1),
        "seed_oss" => Some(Family::SeedOss),
        "arcee" => Some(Family::Arcee),
        "exaone_moe" => Some(Family::ExaoneMoe),
        "hunyuan_v1_dense" => Some(Family::HunyuanDense),
        "hunyuan_v1_moe" => Some(Family::HunyuanMoe),
        "lfm2_moe" => Some(Family::Lfm2Moe),
        "apertus" => Some(Family::Apertus),
        "cohere" => Some(Family::Cohere),
        "nemotron" => Some(Family::Nemotron),
        "minicpm3" => Some(Family::MiniCpm3),
        "exaone" => Some(Family::Exaone),
        "internlm2" => Some(Family::InternLm2),
        // Kimi-Linear (remote code): vLLM 0.34 `registry.py` maps
        // `KimiLinearForCausalLM` to `vllm.models.kimi_k3`.
        "kimi_linear" => Some(Family::KimiLinear),
        "glm4" | "glm4v" => Some(Family::Glm4),
        "cohere2" => Some(Family::Cohere2),
        "starcoder2" => Some(Family::Starcoder2),
        "granite" => Some(Family::Granite),
        "exaone4" => Some(Family::Exaone4),
        "bloom" => Some(Family::Bloom),
        "qwen3_next" => Some(Family::Qwen3Next),
        "qwen3_5" | "qwen3_5_text" => Some(Family::Qwen35),
        "qwen3_5_moe" | "qwen3_5_moe_text" => Some(Family::Qwen35Moe),
        "lfm2" => Some(Family::Lfm2),
        "nemotron_h" => Some(Family::NemotronH),
        "granitemoehybrid" => Some(Family::GraniteMoeHybrid),
        // MiMo-V2.5 and V2.5-Pro (`mimo_v2`, `MiMoV2ForCausalLM`): vLLM 0.34
        // builds them as MiMo-V2-Flash (`models/registry.py` maps both to
        // `mimo_v2`, whose `MiMoV2ForCausalLM` subclasses
        // `MiMoV2FlashForCausalLM`); V2.5's vision and audio towers are not read.
        "mimo_v2_flash" | "mimo_v2" => Some(Family::MimoV2Flash),
        "falcon_h1" => Some(Family::FalconH1),
        "gemma4" | "gemma4_text" => Some(Family::Gemma4),
        "jamba" => Some(Family::Jamba),
        "gemma3n" | "gemma3n_text" => Some(Family::Gemma3n),
        _ => None,
    };
    // Some repos leave `model_type` out or use a custom one; the class name
    // in `architectures` still tells the family.
    by_type.or_else(|| {
        architectures.iter().find_map(|a| match *a {
            "LlamaForCausalLM" => Some(Family::Llama),
            "MistralForCausalLM" => Some(Family::Mistral),
            "MixtralForCausalLM" => Some(Family::Mixtral),
            "Qwen2ForCausalLM" => Some(Family::Qwen2),
            "Qwen3ForCausalLM" => Some(Family::Qwen3),
            "DeepseekV3ForCausalLM" => Some(Family::DeepseekV3),
            "DeepseekV4ForCausalLM" => Some(Family::DeepseekV4),
            "FalconForCausalLM" => Some(Family::Falcon),
            "InternLM2ForCausalLM" => Some(Family::InternLm2),
            "KimiLinearForCausalLM" => Some(Family::KimiLinear),
            _ => None,
        })
    })
}

fn read_text(family: Family, f: Fields, warnings: &mut Vec<String>) -> Result<TextModel, ConfigError> {
    use Family::*;
    match family {
        Gpt2 => gpt2(f),
        GptNeox => gpt_neox(f),
        Falcon => falcon(f),
        Opt => opt(f),
        Phi => phi(f),
        DeepseekV2 | DeepseekV3 | DeepseekV32 | GlmMoeDsa | Mistral4 | Glm4MoeLite | MiniCpm3 => deepseek(family, f),
        DeepseekV4 => deepseek_v4::deepseek_v4(f),
        GptOss => moe::gpt_oss(f, warnings),
        Llama4 => moe::llama4(f, warnings),
        Glm4Moe => moe::glm4_moe(f, warnings),
        MinimaxM2 => moe::minimax_m2(f, warnings),
        MimoV2Flash => moe::mimo_v2_flash(f, warnings),
        Phimoe => moe::phimoe(f, warnings),
        GraniteMoe => moe::granitemoe(f, warnings),
        Smollm3 => dense::smollm3(f, warnings),
        Olmo2 => dense::olmo2(f, warnings),
        Olmo3 => dense::olmo3(f, warnings),
        Ministral3 => dense::ministral3(f, warnings),
        Ernie45 => dense::ernie4_5(f, warnings),
        SeedOss => dense::seed_oss(f, warnings),
        Olmoe => moe::olmoe(f, warnings),
        Ernie45Moe => moe::ernie4_5_moe(f, warnings),
        Dots1 => moe::dots1(f, warnings),
        Arcee => dense::arcee(f, warnings),
        InternLm2 => dense::internlm2(f, warnings),
        Apertus => dense::apertus(f, warnings),
        Cohere => dense::cohere(f, warnings),
        Nemotron => dense::nemotron(f, warnings),
        Exaone => dense::exaone(f, warnings),
        HunyuanDense => dense::hunyuan_dense(f, warnings),
        ExaoneMoe => moe::exaone_moe(f, warnings),
        HunyuanMoe => moe::hunyuan_moe(f, warnings),
        Lfm2Moe => hybrid::lfm2_moe(f, warnings),
        Glm4 => dense::glm4(f, warnings),
        Cohere2 => dense::cohere2(f, warnings),
        Starcoder2 => dense::starcoder2(f, warnings),
        Granite => dense::granite(f, warnings),
        Exaone4 => dense::exaone4(f, warnings),
        Bloom => bloom(f),
        Qwen3Next | Qwen35 | Qwen35Moe => hybrid::qwen3_next(family, f, warnings),
        Lfm2 => hybrid::lfm2(f, warnings),
        NemotronH => mamba::nemotron_h(f, warnings),
        GraniteMoeHybrid => mamba::granitemoehybrid(f, warnings),
        FalconH1 => mamba::falcon_h1(f, warnings),
        Gemma4 => gemma4::gemma4(f, warnings),
        Jamba => mamba::jamba(f, warnings),
        Gemma3n => gemma3n::gemma3n(f, warnings),
        KimiLinear => kimi_linear::kimi_linear(f),
        _ => decoder(family, f, warnings),
    }
}

/// A pre-norm RMSNorm decoder with a gated MLP and no biases, its attention
/// and MLP shapes left for the family reader to set: the fields the newer
/// families share. `tie` is the config class's `tie_word_embeddings` default.
pub(super) fn rms_text(
    f: Fields,
    hidden: u64,
    vocab: u64,
    layers: Vec<LayerSpec>,
    tie: bool,
) -> Result<TextModel, ConfigError> {
    Ok(TextModel {
        hidden_size: hidden,
        vocab_size: vocab,
        embedding_rows: vocab,
        num_heads: 1,
        num_kv_heads: 1,
        head_dim: 1,
        v_head_dim: 1,
        intermediate_size: 0,
        attention: AttentionKind::Standard { qkv_bias: false, o_bias: false },
        mlp_gated: true,
        mlp_bias: false,
        norm: NormKind::Rms,
        norms_per_layer: 2,
        qk_norm: false,
        final_norm: true,
        moe: None,
        tie_word_embeddings: f.bool_or("tie_word_embeddings", tie)?,
        learned_positions: 0,
        embed_proj_dim: None,
        max_position_embeddings: f.opt_u64("max_position_embeddings")?,
        layers,
        cache_from_tensors: None,
        recurrent: None,
        extra: Default::default(),
    })
}

pub(super) fn per_head(f: Fields, hidden: u64, heads: u64) -> Result<u64, ConfigError> {
    if !hidden.is_multiple_of(heads) {
        return Err(invalid(f, "num_attention_heads", format!("{heads} heads do not divide hidden size {hidden}")));
    }
    Ok(hidden / heads)
}

pub(super) fn check_heads(f: Fields, heads: u64, kv_heads: u64) -> Result<(), ConfigError> {
    if kv_heads > heads || !heads.is_multiple_of(kv_heads) {
        return Err(invalid(
            f,
            "num_key_value_heads",
            format!("{kv_heads} key/value heads cannot be shared by {heads} query heads"),
        ));
    }
    Ok(())
}

pub(super) fn invalid(f: Fields, key: &str, reason: String) -> ConfigError {
    ConfigError::Invalid { field: f.path(key), reason }
}

/// Positions of one rotary table built at `positions`
/// ([`super::Extras::rope_table_positions`]): the scaling object's factor
/// stretches a `linear` or `dynamic` table (vLLM 0.19.1
/// `rotary_embedding/linear_scaling_rope.py`, `dynamic_ntk_scaling_rope.py`:
/// `max_position_embeddings * scaling_factor` rows) and a `yarn` one from its
/// original length (`yarn_scaling_rope.py`); `llama3` and the default keep
/// `positions` (`base.py::_compute_cos_sin_cache`). A transformers 5
/// `rope_parameters` keyed by layer type is read at `layer_type`.
pub(super) fn rope_table_positions(f: Fields, positions: u64, layer_type: &str) -> u64 {
    let Some(obj) = f.object("rope_scaling").or_else(|| f.object("rope_parameters")) else {
        return positions;
    };
    let obj = match obj.get(layer_type).and_then(|v| v.as_object()) {
        Some(inner) => inner,
        None => obj,
    };
    let kind = obj.get("rope_type").or_else(|| obj.get("type")).and_then(|v| v.as_str()).unwrap_or("default");
    let factor = obj.get("factor").and_then(|v| v.as_f64()).filter(|x| x.is_finite() && *x >= 1.0).unwrap_or(1.0);
    let base = match kind {
        "linear" | "dynamic" => positions,
        "yarn" => obj.get("original_max_position_embeddings").and_then(|v| v.as_u64()).unwrap_or(positions),
        _ => return positions,
    };
    // `as` saturates; the caller's products saturate too.
    (base as f64 * factor).ceil().min(MAX_CONTEXT as f64) as u64
}
