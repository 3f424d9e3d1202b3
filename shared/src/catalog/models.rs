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
    /// The `config.json` text.
    pub config_json: &'static str,
}

/// Looks a preset up by id (case-insensitive).
pub fn model_preset(id: &str) -> Option<&'static ModelPreset> {
    MODEL_PRESETS.iter().find(|p| p.id.eq_ignore_ascii_case(id))
}

macro_rules! preset {
    ($id:literal, $name:literal, $repo:literal) => {
        ModelPreset {
            id: $id,
            name: $name,
            hf_repo: $repo,
            config_json: include_str!(concat!("../../catalog/models/", $id, ".json")),
        }
    };
}

/// All presets, smallest families first within each family.
pub const MODEL_PRESETS: &[ModelPreset] = &[
    preset!("llama-3.1-8b", "Llama 3.1 8B Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
];
