//! Model presets. Each preset is the model's own `config.json` (trimmed to the
//! fields the memory model reads is fine, renamed never), embedded at build time
//! and parsed by [`crate::arch`] exactly like a user's pasted config. Parameter
//! counts are *derived* from these configs; nothing here states an answer.

/// One entry of the preset list.
#[derive(Debug, Clone, Copy)]
pub struct ModelPreset {
    /// Short, stable, URL-safe id used on the command line and in share links.
    pub id: &'static str,
    /// Human name shown in lists.
    pub name: &'static str,
    /// The Hugging Face repository the config was taken from.
    pub hf_repo: &'static str,
}

impl ModelPreset {
    /// The `config.json` text. Kept in a table of its own (`CONFIGS`) so
    /// that code listing the presets (the page's first load) does not carry
    /// every config: the page reads presets from their build-time reading
    /// (`web/build.rs`).
    pub fn config_json(&self) -> &'static str {
        MODEL_PRESETS.iter().position(|p| p.id == self.id).and_then(|i| CONFIGS.get(i)).copied().unwrap_or_default()
    }
}

/// Looks a preset up by id (case-insensitive).
pub fn model_preset(id: &str) -> Option<&'static ModelPreset> {
    MODEL_PRESETS.iter().find(|p| p.id.eq_ignore_ascii_case(id))
}

/// Both tables from one list: `preset!(id, name, repo)` entries give
/// [`MODEL_PRESETS`] and, in the same order, [`CONFIGS`] (the config of each
/// is `catalog/models/<id>.json`).
macro_rules! presets {
    ($(#[$doc:meta])* pub const MODEL_PRESETS = [$(preset!($id:literal, $name:literal, $repo:literal $(,)?)),* $(,)?];) => {
        $(#[$doc])*
        pub const MODEL_PRESETS: &[ModelPreset] = &[$(ModelPreset { id: $id, name: $name, hf_repo: $repo }),*];
        /// The presets' `config.json` texts, in the order of [`MODEL_PRESETS`].
        const CONFIGS: &[&str] = &[$(include_str!(concat!("../../catalog/models/", $id, ".json"))),*];
    };
}

presets! {
/// All presets, smallest families first within each family.
pub const MODEL_PRESETS = [
    preset!("llama-2-7b", "Llama 2 7B", "meta-llama/Llama-2-7b-hf"),
    preset!("llama-2-13b", "Llama 2 13B", "meta-llama/Llama-2-13b-hf"),
    preset!("llama-2-70b", "Llama 2 70B", "meta-llama/Llama-2-70b-hf"),
    preset!("llama-3.2-1b", "Llama 3.2 1B Instruct", "meta-llama/Llama-3.2-1B-Instruct"),
    preset!("llama-3.2-3b", "Llama 3.2 3B Instruct", "meta-llama/Llama-3.2-3B-Instruct"),
    preset!("llama-3-8b", "Llama 3 8B", "meta-llama/Meta-Llama-3-8B"),
    preset!("llama-3.1-8b", "Llama 3.1 8B Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
    preset!(
        "llama-3.1-8b-awq-int4",
        "Llama 3.1 8B Instruct AWQ INT4",
        "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"
    ),
    preset!("llama-3.2-11b-vision", "Llama 3.2 11B Vision Instruct", "meta-llama/Llama-3.2-11B-Vision-Instruct"),
    preset!("llama-3.1-70b", "Llama 3.1 70B Instruct", "meta-llama/Llama-3.1-70B-Instruct"),
    preset!("llama-3.3-70b", "Llama 3.3 70B Instruct", "meta-llama/Llama-3.3-70B-Instruct"),
    preset!("llama-3.1-405b", "Llama 3.1 405B Instruct", "meta-llama/Llama-3.1-405B-Instruct"),
    // transformers 5.24 `Llama4Config()` defaults: the Scout shape (16 experts, 48 layers).
    preset!("llama-4-scout", "Llama 4 Scout 17B-16E", "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
    preset!("mistral-7b-v0.1", "Mistral 7B v0.1", "mistralai/Mistral-7B-v0.1"),
    preset!("mistral-7b-v0.3", "Mistral 7B v0.3", "mistralai/Mistral-7B-v0.3"),
    preset!("mistral-nemo-12b", "Mistral Nemo 12B", "mistralai/Mistral-Nemo-Base-2407"),
    preset!("mixtral-8x7b", "Mixtral 8x7B", "mistralai/Mixtral-8x7B-v0.1"),
    preset!("mixtral-8x22b", "Mixtral 8x22B", "mistralai/Mixtral-8x22B-v0.1"),
    preset!("qwen2-7b", "Qwen2 7B Instruct", "Qwen/Qwen2-7B-Instruct"),
    preset!("qwen2.5-0.5b", "Qwen2.5 0.5B Instruct", "Qwen/Qwen2.5-0.5B-Instruct"),
    preset!("qwen2.5-1.5b", "Qwen2.5 1.5B Instruct", "Qwen/Qwen2.5-1.5B-Instruct"),
    preset!("qwen2.5-7b", "Qwen2.5 7B Instruct", "Qwen/Qwen2.5-7B-Instruct"),
    preset!("qwen2.5-7b-gptq-int4", "Qwen2.5 7B Instruct GPTQ Int4", "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"),
    preset!("qwen2.5-vl-7b", "Qwen2.5-VL 7B Instruct", "Qwen/Qwen2.5-VL-7B-Instruct"),
    preset!("qwen2.5-14b", "Qwen2.5 14B Instruct", "Qwen/Qwen2.5-14B-Instruct"),
    preset!("qwen2.5-32b", "Qwen2.5 32B Instruct", "Qwen/Qwen2.5-32B-Instruct"),
    preset!("qwen2.5-72b", "Qwen2.5 72B Instruct", "Qwen/Qwen2.5-72B-Instruct"),
    preset!("qwen3-0.6b", "Qwen3 0.6B", "Qwen/Qwen3-0.6B"),
    preset!("qwen3-8b", "Qwen3 8B", "Qwen/Qwen3-8B"),
    preset!("qwen3-8b-fp8", "Qwen3 8B FP8", "Qwen/Qwen3-8B-FP8"),
    preset!("qwen3-32b", "Qwen3 32B", "Qwen/Qwen3-32B"),
    preset!("qwen1.5-moe-a2.7b", "Qwen1.5-MoE A2.7B Chat", "Qwen/Qwen1.5-MoE-A2.7B-Chat"),
    preset!("qwen3-30b-a3b", "Qwen3 30B-A3B", "Qwen/Qwen3-30B-A3B"),
    // Its config.json verbatim as a public model-information report of the
    // checkpoint prints it (transformers 4.57.0.dev0; stored-code id
    // 62501178117, with the checkpoint's 882 tensors, 31,070,754,032
    // parameters); a second transcription (id 62478544309) agrees on every shape.
    preset!("qwen3-vl-30b-a3b", "Qwen3-VL 30B-A3B Instruct", "Qwen/Qwen3-VL-30B-A3B-Instruct"),
    preset!("qwen3-235b-a22b", "Qwen3 235B-A22B", "Qwen/Qwen3-235B-A22B"),
    // The Hub config as a public model report printed it, its shapes agreeing
    // with a second transcription and transformers 5.25 `Qwen3NextConfig()`
    // (see shared/tests/fixtures/arch/sources.json).
    preset!("qwen3-next-80b-a3b", "Qwen3-Next 80B-A3B Instruct", "Qwen/Qwen3-Next-80B-A3B-Instruct"),
    // The Hub config's shapes (vendored transcriptions, see shared/tests/fixtures/arch/sources.json).
    preset!("qwen3.5-27b", "Qwen3.5 27B", "Qwen/Qwen3.5-27B"),
    // transformers 5.24 `Qwen3_5MoeConfig()` defaults, documented as Qwen/Qwen3.5-35B-A3B,
    // with the Hub config's MTP keys, which the class lacks (`mtp_num_hidden_layers` 1,
    // `mtp_use_dedicated_embeddings` false): a note tabulating `hf download
    // Qwen/Qwen3.5-35B-A3B config.json` (stored-code id 53168988717) and one citing its
    // "one native MTP layer" (id 59230351379) agree, as do two transcriptions of the
    // Qwen3.6-35B-A3B release's text config, the same architecture (ids 56590618153, 70254044795).
    // Those two also carry `mamba_ssm_dtype` float32, as the 27B's does, and the 0.25.1
    // Qwen3.6 log's attention block of 1,072 tokens is an FP32 SSM state's page.
    preset!("qwen3.5-35b-a3b", "Qwen3.5 35B-A3B", "Qwen/Qwen3.5-35B-A3B"),
    // The Hub config (vendored copy, see shared/tests/fixtures/arch/sources.json).
    preset!("glm-4.5-air", "GLM-4.5-Air", "zai-org/GLM-4.5-Air"),
    preset!("nemotron-nano-9b-v2", "NVIDIA Nemotron Nano 9B v2", "nvidia/NVIDIA-Nemotron-Nano-9B-v2"),
    preset!("lfm2-1.2b", "LFM2 1.2B", "LiquidAI/LFM2-1.2B"),
    preset!("granite-4.0-h-tiny", "Granite 4.0 H Tiny", "ibm-granite/granite-4.0-h-tiny"),
    preset!("gemma-7b", "Gemma 7B", "google/gemma-7b"),
    preset!("gemma-2-2b", "Gemma 2 2B IT", "google/gemma-2-2b-it"),
    preset!("gemma-2-9b", "Gemma 2 9B", "google/gemma-2-9b"),
    preset!("gemma-2-27b", "Gemma 2 27B", "google/gemma-2-27b"),
    preset!("gemma-3-1b", "Gemma 3 1B IT", "google/gemma-3-1b-it"),
    preset!("gemma-3-4b", "Gemma 3 4B IT", "google/gemma-3-4b-it"),
    preset!("gemma-3-12b", "Gemma 3 12B IT", "google/gemma-3-12b-it"),
    preset!("gemma-3-27b", "Gemma 3 27B IT", "google/gemma-3-27b-it"),
    // The Hub config's shapes (vendored transcriptions that agree, see
    // shared/tests/fixtures/arch/sources.json) in gemma-4-31b's layout.
    preset!("gemma-4-26b-a4b", "Gemma 4 26B-A4B IT", "google/gemma-4-26B-A4B-it"),
    // The Hub config as transformers printed it (vendored copy, see shared/tests/fixtures/arch/sources.json).
    preset!("gemma-4-31b", "Gemma 4 31B IT", "google/gemma-4-31B-it"),
    preset!("phi-3-mini-4k", "Phi-3 Mini 4K Instruct", "microsoft/Phi-3-mini-4k-instruct"),
    preset!("phi-3-medium-4k", "Phi-3 Medium 4K Instruct", "microsoft/Phi-3-medium-4k-instruct"),
    preset!("phi-4", "Phi-4", "microsoft/phi-4"),
    preset!("deepseek-v2-lite", "DeepSeek-V2-Lite", "deepseek-ai/DeepSeek-V2-Lite"),
    preset!("deepseek-v2", "DeepSeek-V2", "deepseek-ai/DeepSeek-V2"),
    preset!("deepseek-v3", "DeepSeek-V3", "deepseek-ai/DeepSeek-V3"),
    preset!("kimi-k2", "Kimi K2 Instruct", "moonshotai/Kimi-K2-Instruct"),
    // The Hub config (vendored copy, see shared/tests/fixtures/arch/sources.json)
    // with the Hub's MXFP4 `quantization_config`.
    preset!("gpt-oss-20b", "gpt-oss-20b", "openai/gpt-oss-20b"),
    // transformers 5.24 `GptOssConfig()` defaults: the 120b shape (36 layers,
    // 128 experts), with the Hub's MXFP4 `quantization_config`.
    preset!("gpt-oss-120b", "gpt-oss-120b", "openai/gpt-oss-120b"),
    // transformers 5.24 `MiniMaxM2Config()` defaults: 62 layers of 256 experts.
    preset!("minimax-m2", "MiniMax-M2", "MiniMaxAI/MiniMax-M2"),
    preset!("gpt2", "GPT-2 (124M)", "openai-community/gpt2"),
    preset!("gpt2-xl", "GPT-2 XL (1.5B)", "openai-community/gpt2-xl"),
    preset!("pythia-160m", "Pythia 160M", "EleutherAI/pythia-160m"),
    preset!("pythia-1.4b", "Pythia 1.4B", "EleutherAI/pythia-1.4b"),
    preset!("pythia-12b", "Pythia 12B", "EleutherAI/pythia-12b"),
    preset!("falcon-7b", "Falcon 7B Instruct", "tiiuae/falcon-7b-instruct"),
    preset!("falcon-40b", "Falcon 40B Instruct", "tiiuae/falcon-40b-instruct"),
    preset!("opt-125m", "OPT 125M", "facebook/opt-125m"),
    preset!("opt-1.3b", "OPT 1.3B", "facebook/opt-1.3b"),
    preset!("opt-30b", "OPT 30B", "facebook/opt-30b"),
];
}
