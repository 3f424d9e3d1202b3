//! The model a llama.cpp start-up log names, from the metadata it prints
//! while loading: `print_info: n_layer = 32` (src/llama-model.cpp
//! `llama_model::print_info`, and `file type` / `file size` from
//! src/llama-model-loader.cpp), the same lines as `llm_load_print_meta:` in
//! older builds (`model ftype`, `model size`), and the GGUF header itself as
//! `llama_model_loader: - kv  9: llama.block_count u32 = 32`. Each figure is
//! kept with where it was read, and [`model`] rebuilds an architecture from
//! them the way a `config.json` would give it, so a pasted log plans alone.

use serde::Serialize;

use super::{after, count, size};
use crate::formats::{GgufType, WeightFormat};
use crate::model::Model;

/// The metadata a llama.cpp log states; each only when it does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoggedModel {
    /// `general.name`.
    pub name: Option<String>,
    /// llama.cpp's architecture name (`arch`, `general.architecture`).
    pub arch: Option<String>,
    pub layers: Option<u64>,
    pub heads: Option<u64>,
    /// The most KV heads of any layer (`n_head_kv` may list them per layer).
    pub kv_heads: Option<u64>,
    pub embedding: Option<u64>,
    /// The dense FFN width (the largest of a per-layer list).
    pub ffn: Option<u64>,
    pub experts: Option<u64>,
    pub experts_used: Option<u64>,
    /// One routed expert's FFN width (`n_ff_exp`).
    pub expert_ffn: Option<u64>,
    pub shared_experts: Option<u64>,
    pub shared_expert_ffn: Option<u64>,
    /// Leading dense layers of an MoE (`n_layer_dense_lead`).
    pub dense_lead: Option<u64>,
    /// Multi-token-prediction layers counted in `n_layer`
    /// (`{arch}.nextn_predict_layers` of the header: GLM-4.5's one), which
    /// llama.cpp loads no tensor and no cache for.
    pub nextn_layers: Option<u64>,
    pub vocab: Option<u64>,
    /// `n_ctx_train`.
    pub context: Option<u64>,
    pub head_k: Option<u64>,
    pub head_v: Option<u64>,
    /// MLA: `n_lora_q`, `n_lora_kv`, `n_rot`, `n_embd_head_k_mla`, `n_embd_head_v_mla`.
    pub lora_q: Option<u64>,
    pub lora_kv: Option<u64>,
    pub rope_dim: Option<u64>,
    pub head_k_mla: Option<u64>,
    pub head_v_mla: Option<u64>,
    /// DSA's lightning indexer (`{arch}.attention.indexer.head_count`,
    /// `.key_length` of the header; `print_info` does not print them).
    pub indexer_heads: Option<u64>,
    pub indexer_head_dim: Option<u64>,
    pub sliding_window: Option<u64>,
    /// A recurrent mixer's sizes (`{arch}.ssm.*`, `print_info: ssm_d_*`):
    /// `conv_kernel` (`ssm_d_conv`), `state_size` (`ssm_d_state`),
    /// `group_count` (`ssm_n_group`), `time_step_rank` (`ssm_dt_rank`),
    /// `inner_size` (`ssm_d_inner`).
    pub ssm_conv_kernel: Option<u64>,
    pub ssm_state_size: Option<u64>,
    pub ssm_group_count: Option<u64>,
    pub ssm_time_step_rank: Option<u64>,
    pub ssm_inner_size: Option<u64>,
    /// `{arch}.full_attention_interval`: one layer in this many attends, the
    /// others are recurrent (Qwen3-Next, Qwen3.5).
    pub full_attention_interval: Option<u64>,
    /// `file type = Q4_K - Medium` (or `model ftype`), or the name of
    /// `general.file_type`'s number.
    pub file_type: Option<String>,
    /// `file size = 4.58 GiB (4.89 BPW)` (or `model size`).
    pub size_bytes: Option<u64>,
    /// Half the last printed digit of the size (`4.58 GiB`: 0.005 GiB): a
    /// format whose estimate is this close is the file, to what the log says.
    #[serde(skip)]
    pub size_tolerance_bytes: u64,
    /// `model params = 8.03 B`, in millions (the log prints two decimals).
    pub params_millions: Option<u64>,
    /// `llama_model_loader: - type  f32: N tensors`: a Llama GGUF's 1-D
    /// tensors (two norms a layer, the output norm) and, one more, Llama 3's
    /// `rope_freqs`.
    pub f32_tensors: Option<u64>,
}

impl LoggedModel {
    fn is_empty(&self) -> bool {
        self == &LoggedModel::default()
    }
}

/// The metadata lines of a log, `None` when it has none.
pub(super) fn read(lines: &[(usize, String)]) -> Option<LoggedModel> {
    let mut m = LoggedModel::default();
    for (_, line) in lines {
        if let Some(rest) = after(line, "print_info:").or_else(|| after(line, "llm_load_print_meta:")) {
            if let Some((key, value)) = rest.split_once('=') {
                printed(&mut m, key.trim(), value.trim());
            }
        } else if let Some(rest) = after(line, "llama_model_loader: - kv ") {
            header(&mut m, rest);
        } else if let Some(rest) = after(line, "llama_model_loader: - type ")
            && let Some(("f32", n)) = rest.split_once(':').map(|(t, n)| (t.trim(), n))
        {
            m.f32_tensors = n.split_whitespace().next().and_then(|n| n.parse().ok());
        }
    }
    (!m.is_empty()).then_some(m)
}

/// One number, or the largest of a per-layer list `[32, 32, 0, …]`.
fn number(value: &str) -> Option<u64> {
    let v = value.trim();
    match v.strip_prefix('[') {
        Some(list) => list.split([',', ']']).filter_map(|x| count(x.trim())).max(),
        None => count(v),
    }
}

fn set(slot: &mut Option<u64>, value: Option<u64>) {
    if slot.is_none() {
        *slot = value.filter(|&v| v > 0);
    }
}

/// `print_info: key = value` (the names of `llama_model::print_info`, old
/// and new).
fn printed(m: &mut LoggedModel, key: &str, value: &str) {
    let n = || number(value);
    match key {
        "arch" => m.arch = m.arch.take().or_else(|| Some(value.to_owned())),
        "general.name" => m.name = m.name.take().or_else(|| Some(value.to_owned())),
        "n_layer" => set(&mut m.layers, n()),
        "n_head" => set(&mut m.heads, n()),
        "n_head_kv" => set(&mut m.kv_heads, n()),
        "n_embd" => set(&mut m.embedding, n()),
        "n_ff" => set(&mut m.ffn, n()),
        "n_expert" => set(&mut m.experts, n()),
        "n_expert_used" => set(&mut m.experts_used, n()),
        "n_ff_exp" => set(&mut m.expert_ffn, n()),
        "n_expert_shared" => set(&mut m.shared_experts, n()),
        "n_ff_shexp" => set(&mut m.shared_expert_ffn, n()),
        "n_layer_dense_lead" => set(&mut m.dense_lead, n()),
        "n_vocab" => set(&mut m.vocab, n()),
        "n_ctx_train" => set(&mut m.context, n()),
        "n_embd_head_k" => set(&mut m.head_k, n()),
        "n_embd_head_v" => set(&mut m.head_v, n()),
        "n_lora_q" => set(&mut m.lora_q, n()),
        "n_lora_kv" => set(&mut m.lora_kv, n()),
        "n_rot" => set(&mut m.rope_dim, n()),
        "n_embd_head_k_mla" => set(&mut m.head_k_mla, n()),
        "n_embd_head_v_mla" => set(&mut m.head_v_mla, n()),
        "n_swa" => set(&mut m.sliding_window, n()),
        "ssm_d_conv" => set(&mut m.ssm_conv_kernel, n()),
        "ssm_d_state" => set(&mut m.ssm_state_size, n()),
        "ssm_n_group" => set(&mut m.ssm_group_count, n()),
        "ssm_dt_rank" => set(&mut m.ssm_time_step_rank, n()),
        "ssm_d_inner" => set(&mut m.ssm_inner_size, n()),
        "file type" | "model ftype" => m.file_type = m.file_type.take().or_else(|| Some(value.to_owned())),
        "file size" | "model size" => {
            if m.size_bytes.is_none() {
                m.size_tolerance_bytes = tolerance(value);
            }
            set(&mut m.size_bytes, size(value, false));
        }
        "model params" => set(&mut m.params_millions, millions(value)),
        _ => {}
    }
}

/// Half a unit of the last digit of a printed size (`16.493 GiB`: 0.0005
/// GiB), in bytes.
fn tolerance(value: &str) -> u64 {
    let mut words = value.split_whitespace();
    let (Some(number), Some(unit)) = (words.next(), words.next()) else { return 0 };
    let per: u64 = match unit {
        "GiB" => 1 << 30,
        "MiB" => 1 << 20,
        "KiB" => 1 << 10,
        "TiB" => 1 << 40,
        _ => return 0,
    };
    let decimals = number.split_once('.').map_or(0, |(_, f)| f.len() as u32).min(9);
    per / 10u64.pow(decimals) / 2
}

/// `8.03 B` / `30.53 B` / `1.02 T` / `494.03 M` in millions.
fn millions(value: &str) -> Option<u64> {
    let (digits, unit) = value.trim().split_once(' ')?;
    let per = match unit.trim() {
        "T" => 1_000_000,
        "B" => 1_000,
        "M" => 1,
        _ => return None,
    };
    super::fixed(digits, per)
}

/// `N: key type = value` of the GGUF header dump (src/llama-model-loader.cpp).
fn header(m: &mut LoggedModel, rest: &str) {
    let Some((_, entry)) = rest.split_once(':') else { return };
    let Some((left, value)) = entry.split_once(" = ") else { return };
    let mut words = left.split_whitespace();
    let (Some(key), Some(kind)) = (words.next(), words.next()) else { return };
    let value = value.trim();
    if key == "general.architecture" {
        m.arch = m.arch.take().or_else(|| Some(value.to_owned()));
        return;
    }
    if key == "general.name" {
        m.name = m.name.take().or_else(|| Some(value.to_owned()));
        return;
    }
    if key == "general.file_type" {
        if m.file_type.is_none() {
            m.file_type = count(value).and_then(ftype_name).map(str::to_owned);
        }
        return;
    }
    // `tokenizer.ggml.tokens arr[str,128256]`: the vocabulary's length.
    if key == "tokenizer.ggml.tokens" {
        let len = kind.strip_prefix("arr[str,").and_then(count);
        set(&mut m.vocab, len);
        return;
    }
    // `{arch}.block_count`: the key without the architecture's prefix (an
    // excerpt that lost `general.architecture` still names it here).
    if m.arch.is_none()
        && let Some((prefix, _)) = key.split_once('.')
        && !matches!(prefix, "general" | "tokenizer" | "split" | "quantize")
    {
        m.arch = Some(prefix.to_owned());
    }
    let Some(field) = m.arch.as_deref().and_then(|a| key.strip_prefix(a)).and_then(|k| k.strip_prefix('.')) else {
        return;
    };
    let n = || number(value);
    match field {
        "block_count" => set(&mut m.layers, n()),
        "context_length" => set(&mut m.context, n()),
        "embedding_length" => set(&mut m.embedding, n()),
        "feed_forward_length" => set(&mut m.ffn, n()),
        "attention.head_count" => set(&mut m.heads, n()),
        "attention.head_count_kv" => set(&mut m.kv_heads, n()),
        "attention.key_length" => set(&mut m.head_k, n()),
        "attention.value_length" => set(&mut m.head_v, n()),
        "attention.sliding_window" => set(&mut m.sliding_window, n()),
        "attention.q_lora_rank" => set(&mut m.lora_q, n()),
        "attention.kv_lora_rank" => set(&mut m.lora_kv, n()),
        "attention.key_length_mla" => set(&mut m.head_k_mla, n()),
        "attention.value_length_mla" => set(&mut m.head_v_mla, n()),
        "attention.indexer.head_count" => set(&mut m.indexer_heads, n()),
        "attention.indexer.key_length" => set(&mut m.indexer_head_dim, n()),
        "rope.dimension_count" => set(&mut m.rope_dim, n()),
        "expert_count" => set(&mut m.experts, n()),
        "expert_used_count" => set(&mut m.experts_used, n()),
        "expert_feed_forward_length" => set(&mut m.expert_ffn, n()),
        "expert_shared_count" => set(&mut m.shared_experts, n()),
        "expert_shared_feed_forward_length" => set(&mut m.shared_expert_ffn, n()),
        "leading_dense_block_count" => set(&mut m.dense_lead, n()),
        "nextn_predict_layers" => set(&mut m.nextn_layers, n()),
        "vocab_size" => set(&mut m.vocab, n()),
        "ssm.conv_kernel" => set(&mut m.ssm_conv_kernel, n()),
        "ssm.state_size" => set(&mut m.ssm_state_size, n()),
        "ssm.group_count" => set(&mut m.ssm_group_count, n()),
        "ssm.time_step_rank" => set(&mut m.ssm_time_step_rank, n()),
        "ssm.inner_size" => set(&mut m.ssm_inner_size, n()),
        "full_attention_interval" => set(&mut m.full_attention_interval, n()),
        _ => {}
    }
}

/// `llama_ftype` numbers (include/llama.h) as `llama_model_ftype_name`
/// prints them, for the types Headroom models ([`GgufType`]).
fn ftype_name(n: u64) -> Option<&'static str> {
    match n {
        0 => Some("all F32"),
        32 => Some("BF16"),
        n => GgufType::from_ftype(n).map(GgufType::printed),
    }
}

/// The weight format of a printed file type (`Q4_K - Medium` → `q4_k_m`).
pub fn file_type_format(file_type: &str) -> Option<WeightFormat> {
    match file_type.trim().trim_start_matches("MOSTLY ").trim_start_matches("mostly ") {
        "all F32" => Some(WeightFormat::F32),
        "BF16" => Some(WeightFormat::Bf16),
        t => GgufType::from_printed(t).map(WeightFormat::Gguf),
    }
}

/// The Hugging Face `model_type` and architecture class of a llama.cpp
/// architecture (src/llama-arch.cpp names; the classes convert_hf_to_gguf.py
/// maps to them), for the families whose hyperparameters the log states in
/// full. Anything else is read as a plain dense decoder, and says so.
fn hf_names(arch: &str) -> Option<(&'static str, &'static str)> {
    Some(match arch {
        "llama" => ("llama", "LlamaForCausalLM"),
        "mistral3" => ("mistral", "MistralForCausalLM"),
        "qwen2" => ("qwen2", "Qwen2ForCausalLM"),
        "qwen3" => ("qwen3", "Qwen3ForCausalLM"),
        "qwen2moe" => ("qwen2_moe", "Qwen2MoeForCausalLM"),
        "qwen3moe" => ("qwen3_moe", "Qwen3MoeForCausalLM"),
        "phi3" => ("phi3", "Phi3ForCausalLM"),
        "glm4" => ("glm4", "Glm4ForCausalLM"),
        "command-r" => ("cohere", "CohereForCausalLM"),
        "deepseek2" => ("deepseek_v3", "DeepseekV3ForCausalLM"),
        // GLM-5 / GLM-5.1: DeepSeek's MLA and experts with DSA's indexer
        // and the multi-token-prediction layer counted in `n_layer`
        // (src/llama-model.cpp `LLM_ARCH_GLM_DSA` at b8211).
        "glm-dsa" => ("glm_moe_dsa", "GlmMoeDsaForCausalLM"),
        // Tied embeddings and 256-wide heads by default; Gemma 2 slides on
        // every other layer and Gemma 3 on five of six, as llama.cpp's
        // `set_swa_pattern(2)` / `(6)` (src/llama-model.cpp) and the
        // families' configs agree, so the window (`n_swa`) is all they need.
        "gemma" => ("gemma", "GemmaForCausalLM"),
        "gemma2" => ("gemma2", "Gemma2ForCausalLM"),
        "gemma3" => ("gemma3_text", "Gemma3ForCausalLM"),
        // 32 or 128 experts of `n_ff_exp`, attention sinks and biases, a
        // 128-token window on even layers (`set_swa_pattern(2)`).
        "gpt-oss" => ("gpt_oss", "GptOssForCausalLM"),
        // GLM-4.5 / 4.6 / 4.7: a leading dense layer, routed and shared
        // experts, the multi-token-prediction layer counted in `n_layer`.
        "glm4moe" => ("glm4_moe", "Glm4MoeForCausalLM"),
        // The VL models' GGUFs hold their text models (the towers are in
        // the `--mmproj` file).
        "qwen2vl" => ("qwen2", "Qwen2ForCausalLM"),
        "qwen3vl" => ("qwen3", "Qwen3ForCausalLM"),
        "qwen3vlmoe" => ("qwen3_moe", "Qwen3MoeForCausalLM"),
        // Dense families whose layers a Llama-style reading gets wrong:
        // q/k norms, post-norms, biases, ungated MLPs (Arcee's ReLU²,
        // Apertus's xIELU), Cohere 2's window on three layers of four.
        "olmo2" => ("olmo2", "Olmo2ForCausalLM"),
        "granite" => ("granite", "GraniteForCausalLM"),
        "smollm3" => ("smollm3", "SmolLM3ForCausalLM"),
        "ernie4_5" => ("ernie4_5", "Ernie4_5ForCausalLM"),
        "seed_oss" => ("seed_oss", "SeedOssForCausalLM"),
        "arcee" => ("arcee", "ArceeForCausalLM"),
        "apertus" => ("apertus", "ApertusForCausalLM"),
        "exaone" => ("exaone", "ExaoneForCausalLM"),
        "cohere2" => ("cohere2", "Cohere2ForCausalLM"),
        // Gated DeltaNet with full attention on one layer in
        // `full_attention_interval`: the text models of Qwen3.5 and
        // Qwen3.5-MoE (the VL checkpoints' towers are in the `--mmproj`
        // file), and Qwen3-Next. Their `ssm.*` keys are read back into the
        // `linear_*` ones by [`linear_attention`].
        "qwen35" => ("qwen3_5_text", "Qwen3_5ForCausalLM"),
        "qwen35moe" => ("qwen3_5_moe_text", "Qwen3_5MoeForCausalLM"),
        "qwen3next" => ("qwen3_next", "Qwen3NextForCausalLM"),
        _ => return None,
    })
}

/// llama.cpp's `llama` architecture also holds Mixtral (convert_hf_to_gguf.py
/// writes `MixtralForCausalLM` as `llama` with `llama.expert_count`).
fn hf_names_with_experts(arch: &str, experts: u64) -> Option<(&'static str, &'static str)> {
    match arch {
        "llama" if experts > 0 => Some(("mixtral", "MixtralForCausalLM")),
        _ => hf_names(arch),
    }
}

/// A model rebuilt from a log's metadata, its weight format (from the file
/// type) and what was read or assumed, in words. `Err` says what is missing.
pub fn model(m: &LoggedModel) -> Result<(Model, Option<WeightFormat>, Vec<String>), String> {
    let (text, mut notes) = config(m)?;
    let arch = m.arch.as_deref().unwrap_or_default();
    let name = m.name.clone().unwrap_or_else(|| format!("{arch} from a llama.cpp log"));
    let model = Model::from_config_json(name, &text).map_err(|e| e.to_string())?;
    let format = m.file_type.as_deref().and_then(file_type_format);
    match (&m.file_type, format) {
        (Some(t), None) => notes.push(format!("file type `{t}` is not a format Headroom models: its default is used")),
        (None, _) => notes.push("the log names no file type: the model's default format is used".into()),
        _ => {}
    }
    // Where the file type's own estimate is within the printed size's last
    // digit, the estimate stands (it is the file, as far as the log says);
    // else the logged size is of a mix the type does not name (Unsloth's
    // UD, a custom recipe), spread over the layout in the type's
    // proportions (`WeightPlan::rescale`).
    let mix = format.filter(|&f| {
        m.size_bytes.is_some_and(|logged| {
            let estimate = crate::plan::WeightPlan::new(&model, f, 1).total;
            estimate.abs_diff(logged) > m.size_tolerance_bytes
        })
    });
    if let Some(f) = mix {
        notes.push(format!(
            "the file's logged size differs from a plain {} file's: a mix it does not name, spread in its proportions",
            f.id()
        ));
    }
    let mut model = model.with_checkpoint_bytes(m.size_bytes).stored_as(mix);
    model.legacy_mla_gguf = legacy_mla(m);
    if model.legacy_mla_gguf {
        notes.push(
            "the GGUF was converted before llama.cpp's MLA (its K width is a head's, not the latent's): llama.cpp \
             caches every head's K and V"
                .into(),
        );
    }
    Ok((model, format, notes))
}

/// An MLA model's GGUF converted before llama.cpp's MLA (#12801): its K
/// width (`n_embd_head_k`, the GGUF's `key_length`) is a head's, where a
/// GGUF converted for MLA states the latent's, `kv_lora_rank + n_rot`
/// (convert_hf_to_gguf.py `DeepseekV2Model`: "deepseek2 using MLA converts
/// into MQA with larger heads").
fn legacy_mla(m: &LoggedModel) -> bool {
    if m.arch.as_deref() != Some("deepseek2") {
        return false;
    }
    match (m.lora_kv, m.head_k, m.rope_dim) {
        (Some(latent), Some(k), Some(rope)) => k != latent.saturating_add(rope),
        _ => false,
    }
}

/// The `indexer_types` of a `glm-dsa` log's `layers`: llama.cpp's loader's
/// default for a header without `{arch}.attention.indexer.types`
/// ([`crate::checkpoint::infer::glm_dsa_indexer_full`]). A header that has
/// the key overrides it, but a log prints such an array cut short, so the
/// default stands for it.
fn glm_dsa_indexer_types(n_ctx_train: Option<u64>, layers: u64) -> Option<Vec<&'static str>> {
    let full = crate::checkpoint::infer::glm_dsa_indexer_full(n_ctx_train, layers)?;
    Some(full.into_iter().map(|f| if f { "full" } else { "shared" }).collect())
}

/// The `config.json` a log's metadata stands for (the one [`model`]
/// reads), with what was assumed, in words; a GGUF header read beside the
/// log gives the bytes (`Model::from_checkpoint`).
pub fn config_json(m: &LoggedModel) -> Result<String, String> {
    config(m).map(|(text, _)| text)
}

fn config(m: &LoggedModel) -> Result<(String, Vec<String>), String> {
    let arch = m.arch.as_deref().ok_or("the log names no architecture (`arch` / `general.architecture`)")?;
    let need = |v: Option<u64>, what: &str| v.ok_or_else(|| format!("the log does not state {what}"));
    let layers = need(m.layers, "the layer count (`n_layer`)")?;
    let hidden = need(m.embedding, "the embedding width (`n_embd`)")?;
    let heads = need(m.heads, "the attention heads (`n_head`)")?;
    let vocab = need(m.vocab, "the vocabulary (`n_vocab`)")?;
    let mut notes = Vec::new();
    let (model_type, class) = match hf_names_with_experts(arch, m.experts.unwrap_or(0)) {
        Some(names) => names,
        None if m.experts.unwrap_or(0) == 0 => {
            notes.push(format!("architecture `{arch}` read as a Llama-style dense decoder"));
            ("llama", "LlamaForCausalLM")
        }
        None => return Err(format!("architecture `{arch}` (a mixture of experts) has no reader from log metadata")),
    };
    let mut c = serde_json::Map::new();
    let mut put = |k: &str, v: serde_json::Value| {
        c.insert(k.to_owned(), v);
    };
    put("architectures", serde_json::json!([class]));
    put("model_type", model_type.into());
    // GLM-4.5's and GLM-5's `num_hidden_layers` leave their MTP layer out,
    // which the GGUF's `block_count` holds (convert_hf_to_gguf.py adds
    // `num_nextn_predict_layers`).
    let with_mtp = matches!(model_type, "glm4_moe" | "glm_moe_dsa");
    let nextn = m.nextn_layers.filter(|_| with_mtp).unwrap_or(0).min(layers.saturating_sub(1));
    put("num_hidden_layers", (layers - nextn).into());
    put("hidden_size", hidden.into());
    put("num_attention_heads", heads.into());
    put("num_key_value_heads", m.kv_heads.unwrap_or(heads).into());
    put("vocab_size", vocab.into());
    if let Some(ffn) = m.ffn {
        put("intermediate_size", ffn.into());
    }
    if let Some(n) = m.context {
        put("max_position_embeddings", n.into());
    }
    // Llama 3's RoPE scaling is a `rope_freqs` tensor in the GGUF, one F32
    // vector beside the norms (`Extras::rope_freqs`).
    if model_type == "llama" && m.f32_tensors == Some(layers.saturating_mul(2).saturating_add(2)) {
        put("rope_scaling", serde_json::json!({"rope_type": "llama3"}));
    }
    let own_head_dim = matches!(
        model_type,
        "qwen3"
            | "qwen3_moe"
            | "gemma"
            | "gemma2"
            | "gemma3_text"
            | "gpt_oss"
            | "qwen3_next"
            | "qwen3_5_text"
            | "qwen3_5_moe_text"
    );
    if let Some(d) = m.head_k.filter(|&d| d * heads != hidden || own_head_dim) {
        put("head_dim", d.into());
    }
    if let Some(e) = m.experts.filter(|&e| e > 0) {
        put("num_experts", e.into());
        put("n_routed_experts", e.into());
        put("num_local_experts", e.into());
        put("num_experts_per_tok", m.experts_used.unwrap_or(1).into());
        if let Some(f) = m.expert_ffn {
            put("moe_intermediate_size", f.into());
        }
        // Mixtral's and gpt-oss's experts are `intermediate_size` wide.
        if let Some(f) = m.expert_ffn.or(m.ffn).filter(|_| matches!(model_type, "mixtral" | "gpt_oss")) {
            put("intermediate_size", f.into());
        }
        if let Some(s) = m.shared_experts {
            put("n_shared_experts", s.into());
        }
        if let Some(f) = m.shared_expert_ffn {
            put("shared_expert_intermediate_size", f.into());
        }
        if let Some(d) = m.dense_lead {
            put("first_k_dense_replace", d.into());
        }
    }
    if matches!(model_type, "deepseek_v3" | "glm_moe_dsa") {
        let rope = need(m.rope_dim, "MLA's rope width (`n_rot`)")?;
        put("kv_lora_rank", need(m.lora_kv, "MLA's latent width (`n_lora_kv`)")?.into());
        put("q_lora_rank", m.lora_q.map_or(serde_json::Value::Null, Into::into));
        put("qk_rope_head_dim", rope.into());
        let k = m.head_k_mla.or(m.head_k).unwrap_or(rope);
        put("qk_nope_head_dim", k.saturating_sub(rope).into());
        put("v_head_dim", m.head_v_mla.or(m.head_v).unwrap_or(k).into());
    }
    if model_type == "glm_moe_dsa" {
        put("num_nextn_predict_layers", nextn.into());
        if let Some(h) = m.indexer_heads {
            put("index_n_heads", h.into());
        }
        if let Some(d) = m.indexer_head_dim {
            put("index_head_dim", d.into());
        }
        if let Some(types) = glm_dsa_indexer_types(m.context, layers - nextn) {
            put("indexer_types", types.into());
        }
    }
    // GLM-4-0414's sandwich norms and fused up are read from the family;
    // its q/k/v biases are optional in llama.cpp (src/llama-model.cpp
    // `LLM_ARCH_GLM4`, `TENSOR_NOT_REQUIRED`) and the 32B GGUF of the b5192
    // log has none (613 tensors: 61 × 10 + 3, 245 F32 ones = 4 norms a
    // layer + the output norm), which the log's metadata does not say.
    if model_type == "glm4" {
        put("attention_bias", false.into());
    }
    if model_type == "glm4_moe" {
        put("num_nextn_predict_layers", nextn.into());
        // Every GLM-4.5 / 4.6 / 4.7 config sets it (Glm4MoeConfig's
        // default is false); the Air log's unused `blk.46.attn_q.bias` shows it.
        put("attention_bias", true.into());
        if let (Some(r), Some(k)) = (m.rope_dim, m.head_k.filter(|&k| k > 0)) {
            put("partial_rotary_factor", (r as f64 / k as f64).into());
        }
    }
    if matches!(model_type, "qwen3_next" | "qwen3_5_text" | "qwen3_5_moe_text") {
        linear_attention(m, &mut put)?;
    }
    // The families whose config class slides by default: no window printed
    // (an old build) is none, not the class's default.
    let slides = matches!(model_type, "gemma2" | "gemma3_text" | "gpt_oss" | "cohere2");
    match m.sliding_window.filter(|&w| w > 0) {
        Some(w) if slides || matches!(model_type, "mistral" | "mixtral") => put("sliding_window", w.into()),
        None if slides => put("sliding_window", serde_json::Value::Null),
        _ => {}
    }
    tie_as_counted(m, &mut c, &mut notes);
    Ok((serde_json::Value::Object(c).to_string(), notes))
}

/// The gated-DeltaNet keys of Qwen3-Next and Qwen3.5, back from the GGUF's
/// `ssm.*` ones as convert_hf_to_gguf.py writes them (`Qwen3NextModel.
/// set_gguf_parameters`, which `Qwen3_5TextModel` / `Qwen3_5MoeTextModel`
/// inherit):
///
/// ```text
/// add_ssm_conv_kernel(linear_conv_kernel_dim)
/// add_ssm_state_size(linear_key_head_dim)
/// add_ssm_group_count(linear_num_key_heads)
/// add_ssm_time_step_rank(linear_num_value_heads)
/// add_ssm_inner_size(linear_value_head_dim * linear_num_value_heads)
/// add_full_attention_interval(full_attention_interval, default 4)
/// ```
///
/// llama.cpp builds both head widths from `ssm_d_state` (src/llama-model.cpp
/// `LLM_ARCH_QWEN35`: `head_k_dim = head_v_dim = hparams.ssm_d_state`); the
/// value head's own width is `inner_size / time_step_rank` where both are
/// stated. The four sizes are required keys of the loader (`ml.get_key`
/// without `false`), so a log that lacks them is not of these families.
fn linear_attention(m: &LoggedModel, put: &mut impl FnMut(&str, serde_json::Value)) -> Result<(), String> {
    // The GGUFs of the mirror's convert_hf_to_gguf.py drop the MTP layers
    // ("ignore MTP layers for now") and its loader reads no
    // `nextn_predict_layers` for these architectures; a file that counts
    // one in `block_count` is of a later llama.cpp whose layout this
    // reading does not know.
    if m.nextn_layers.is_some_and(|n| n > 0) {
        return Err("the GGUF counts multi-token-prediction layers (`nextn_predict_layers`) in `block_count`, \
                    which llama.cpp builds of this reading do not load"
            .into());
    }
    let need = |v: Option<u64>, what: &str| v.ok_or_else(|| format!("the log does not state {what}"));
    let state = need(m.ssm_state_size, "the DeltaNet head width (`ssm.state_size` / `ssm_d_state`)")?;
    let value_heads = need(m.ssm_time_step_rank, "the DeltaNet value heads (`ssm.time_step_rank` / `ssm_dt_rank`)")?;
    let key_heads = need(m.ssm_group_count, "the DeltaNet key heads (`ssm.group_count` / `ssm_n_group`)")?;
    let value_dim = m.ssm_inner_size.map_or(state, |inner| inner / value_heads);
    put("linear_num_key_heads", key_heads.into());
    put("linear_num_value_heads", value_heads.into());
    put("linear_key_head_dim", state.into());
    put("linear_value_head_dim", value_dim.into());
    if let Some(k) = m.ssm_conv_kernel {
        put("linear_conv_kernel_dim", k.into());
    }
    // llama.cpp's default where the key is absent (`full_attn_interval = 4`).
    put("full_attention_interval", m.full_attention_interval.unwrap_or(4).into());
    Ok(())
}

/// Whether the head is tied to the embedding is not printed, but `model
/// params` counts the file's tensors, and a head of its own adds `n_vocab ×
/// n_embd` to them (Llama 3.2 1B and 3B are `llama` with a tied head; a
/// `llama`-style reading of another architecture would guess): the reading
/// whose count is nearer the logged one is taken.
fn tie_as_counted(m: &LoggedModel, c: &mut serde_json::Map<String, serde_json::Value>, notes: &mut Vec<String>) {
    let Some(logged) = m.params_millions else { return };
    let millions = |c: &serde_json::Map<String, serde_json::Value>| {
        crate::arch::Architecture::from_config_json(&serde_json::Value::Object(c.clone()).to_string())
            .ok()
            .map(|a| (a.text.tie_word_embeddings, (a.parameters() + 500_000) / 1_000_000))
    };
    let Some((tied, as_read)) = millions(c) else { return };
    let mut other = c.clone();
    other.insert("tie_word_embeddings".into(), (!tied).into());
    let Some((_, flipped)) = millions(&other) else { return };
    if flipped.abs_diff(logged) < as_read.abs_diff(logged) {
        c.insert("tie_word_embeddings".into(), (!tied).into());
        let how = if tied { "has a head of its own" } else { "is tied to the embedding" };
        notes.push(format!("the output head {how}: the log's `model params` count says so"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_layer_lists_and_headers() {
        assert_eq!(number("[8, 8, 0, 8]"), Some(8));
        assert_eq!(number("4096"), Some(4096));
        assert_eq!(millions("30.53 B"), Some(30_530));
        let mut m = LoggedModel { arch: Some("llama".into()), ..Default::default() };
        header(&mut m, " 9:                          llama.block_count u32              = 32");
        header(&mut m, "22:                      tokenizer.ggml.tokens arr[str,128256]  = [\"!\", \"\\\"\", ...");
        header(&mut m, "17:                          general.file_type u32              = 15");
        assert_eq!((m.layers, m.vocab, m.file_type.as_deref()), (Some(32), Some(128_256), Some("Q4_K - Medium")));
        assert_eq!(file_type_format("Q4_K - Medium").map(WeightFormat::id), Some("q4_k_m".into()));
    }

    /// A GLM-5.2 log's header (b10505, tests/fixtures/startup/llamacpp-
    /// b10505-glm52-…): `glm-dsa` reads as `glm_moe_dsa`, its NextN layer
    /// out of `block_count`, MLA from the `_mla` widths, the indexer's
    /// heads; from `print_info:` alone (no indexer keys) the config class's
    /// 32 heads.
    #[test]
    fn a_glm_dsa_header_is_read_as_glm5() {
        use crate::arch::{AttentionKind, Family, Indexer};
        let mut m = LoggedModel::default();
        for line in [
            "0: general.architecture str = glm-dsa",
            "18: glm-dsa.block_count u32 = 79",
            "20: glm-dsa.embedding_length u32 = 6144",
            "21: glm-dsa.feed_forward_length u32 = 12288",
            "22: glm-dsa.attention.head_count u32 = 64",
            "23: glm-dsa.attention.head_count_kv u32 = 1",
            "26: glm-dsa.expert_count u32 = 256",
            "27: glm-dsa.expert_used_count u32 = 8",
            "31: glm-dsa.attention.key_length u32 = 576",
            "32: glm-dsa.attention.value_length u32 = 512",
            "33: glm-dsa.leading_dense_block_count u32 = 3",
            "34: glm-dsa.vocab_size u32 = 154880",
            "35: glm-dsa.attention.q_lora_rank u32 = 2048",
            "36: glm-dsa.attention.kv_lora_rank u32 = 512",
            "37: glm-dsa.attention.key_length_mla u32 = 256",
            "38: glm-dsa.attention.value_length_mla u32 = 256",
            "39: glm-dsa.expert_feed_forward_length u32 = 2048",
            "40: glm-dsa.expert_shared_count u32 = 1",
            "43: glm-dsa.rope.dimension_count u32 = 64",
            "44: glm-dsa.nextn_predict_layers u32 = 1",
            "45: glm-dsa.attention.indexer.head_count u32 = 32",
            "46: glm-dsa.attention.indexer.key_length u32 = 128",
        ] {
            header(&mut m, line);
        }
        let read = |m: &LoggedModel| {
            let (model, _, _) = model(m).unwrap_or_else(|e| panic!("{e}"));
            let t = model.arch.text;
            let AttentionKind::Mla(mla) = t.attention else { panic!("not MLA") };
            let dense = t.layers.iter().filter(|l| l.ffn == crate::arch::Ffn::Dense).count();
            (
                model.arch.family,
                t.layers.len(),
                dense,
                mla.kv_lora_rank,
                mla.qk_nope_head_dim,
                mla.v_head_dim,
                mla.indexer,
            )
        };
        let glm5 = |heads| (Family::GlmMoeDsa, 78, 3, 512, 192, 256, Some(Indexer { heads, head_dim: 128 }));
        assert_eq!(read(&m), glm5(32));
        // `print_info:` alone, as b10505 prints it: `n_layer` without the
        // NextN layer (`n_layer_all` counts it; b8211's `n_layer` did, and
        // only its header says how many of them are NextN).
        let mut printed_only = LoggedModel::default();
        for (k, v) in [
            ("arch", "glm-dsa"),
            ("n_layer", "78"),
            ("n_layer_all", "79"),
            ("n_embd", "6144"),
            ("n_head", "64"),
            ("n_head_kv", "1"),
            ("n_rot", "64"),
            ("n_embd_head_k", "576"),
            ("n_embd_head_v", "512"),
            ("n_ff", "12288"),
            ("n_expert", "256"),
            ("n_expert_used", "8"),
            ("n_vocab", "154880"),
            ("n_layer_dense_lead", "3"),
            ("n_lora_q", "2048"),
            ("n_lora_kv", "512"),
            ("n_embd_head_k_mla", "256"),
            ("n_embd_head_v_mla", "256"),
            ("n_ff_exp", "2048"),
            ("n_expert_shared", "1"),
        ] {
            printed(&mut printed_only, k, v);
        }
        assert_eq!(read(&printed_only), glm5(32));
    }

    /// llama.cpp's loader without the header's `indexer.types`: GLM-5.1's
    /// `n_ctx_train` (202,752) keeps every indexer full, GLM-5.2's
    /// (1,048,576) takes its 21 full layers of 78, and the array's zeros
    /// past them make any further layer "shared".
    #[test]
    fn a_glm_dsa_header_without_indexer_types_takes_llama_cpps_defaults() {
        assert_eq!(glm_dsa_indexer_types(Some(202_752), 78), None);
        assert_eq!(glm_dsa_indexer_types(None, 78), None);
        let types = glm_dsa_indexer_types(Some(1_048_576), 80).unwrap_or_default();
        let full: Vec<usize> = (0..80).filter(|&i| types[i] == "full").collect();
        let every_fourth: Vec<usize> = (2..78).step_by(4).collect();
        assert_eq!(full, [&[0, 1][..], &every_fourth].concat());
        assert_eq!(full.len(), 21);
    }

    /// Qwen3.5-9B's `ssm.*` keys become Qwen3_5TextConfig's `linear_*` ones
    /// (convert_hf_to_gguf.py `Qwen3NextModel`, inverted); a log without
    /// them, or with an MTP layer in `block_count`, is refused, not guessed.
    #[test]
    fn a_qwen35_header_is_read_back_into_linear_attention_keys() {
        let mut m = LoggedModel { arch: Some("qwen35".into()), ..Default::default() };
        for line in [
            "14: qwen35.block_count u32 = 32",
            "16: qwen35.embedding_length u32 = 4096",
            "18: qwen35.attention.head_count u32 = 16",
            "19: qwen35.attention.head_count_kv u32 = 4",
            "23: qwen35.attention.key_length u32 = 256",
            "34: tokenizer.ggml.tokens arr[str,248320] = [\"!\", ...",
        ] {
            header(&mut m, line);
        }
        let missing = config_json(&m);
        assert!(missing.as_ref().is_err_and(|e| e.contains("ssm.state_size")), "{missing:?}");
        for line in [
            "25: qwen35.ssm.conv_kernel u32 = 4",
            "26: qwen35.ssm.state_size u32 = 128",
            "27: qwen35.ssm.group_count u32 = 16",
            "28: qwen35.ssm.time_step_rank u32 = 32",
            "29: qwen35.ssm.inner_size u32 = 4096",
            "30: qwen35.full_attention_interval u32 = 4",
        ] {
            header(&mut m, line);
        }
        let c: serde_json::Value = serde_json::from_str(&config_json(&m).unwrap_or_default()).unwrap_or_default();
        let keys = [
            "model_type",
            "head_dim",
            "linear_num_key_heads",
            "linear_num_value_heads",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "linear_conv_kernel_dim",
            "full_attention_interval",
        ];
        let read: Vec<String> = keys.iter().map(|k| c[k].to_string()).collect();
        assert_eq!(read, ["\"qwen3_5_text\"", "256", "16", "32", "128", "128", "4", "4"]);
        let (model, _, _) = model(&m).unwrap_or_else(|e| panic!("{e}"));
        let attending = model.arch.text.layers.iter().filter(|l| !l.state).count();
        assert_eq!(attending, 8);
        // The same from `print_info:` alone.
        let mut printed_only = LoggedModel::default();
        for (k, v) in [
            ("arch", "qwen35"),
            ("n_layer", "32"),
            ("n_embd", "4096"),
            ("n_head", "16"),
            ("n_vocab", "248320"),
            ("n_embd_head_k", "256"),
            ("ssm_d_conv", "4"),
            ("ssm_d_inner", "4096"),
            ("ssm_d_state", "128"),
            ("ssm_dt_rank", "32"),
            ("ssm_n_group", "16"),
        ] {
            printed(&mut printed_only, k, v);
        }
        assert_eq!(config(&printed_only).map(|(t, _)| t.contains("\"linear_num_value_heads\":32")), Ok(true));
        header(&mut m, "35: qwen35.nextn_predict_layers u32 = 1");
        assert!(config_json(&m).is_err_and(|e| e.contains("nextn_predict_layers")));
    }
}
