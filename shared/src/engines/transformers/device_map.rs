//! The explicit `device_map` (module → GPU) of a layer-wise split, ready to
//! paste into `from_pretrained(..., device_map=...)`, with the module names
//! transformers uses for each family.

use serde::{Serialize, Serializer, ser::SerializeMap};

use crate::arch::Family;
use crate::engines::Plan;

/// Module names in order with their GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceMap(pub Vec<(String, usize)>);

impl Serialize for DeviceMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl DeviceMap {
    /// The map as a Python dict literal.
    pub fn python(&self) -> String {
        let items: Vec<String> = self.0.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        format!("{{{}}}", items.join(", "))
    }
}

/// `(embeddings…, layer prefix, final norm, head)` module names.
fn names(family: Family, multimodal: bool) -> (Vec<&'static str>, &'static str, &'static str, &'static str) {
    use Family::*;
    match family {
        Gpt2 => (vec!["transformer.wte", "transformer.wpe"], "transformer.h", "transformer.ln_f", "lm_head"),
        GptNeox => (vec!["gpt_neox.embed_in"], "gpt_neox.layers", "gpt_neox.final_layer_norm", "embed_out"),
        Falcon => (vec!["transformer.word_embeddings"], "transformer.h", "transformer.ln_f", "lm_head"),
        Opt => (
            vec!["model.decoder.embed_tokens", "model.decoder.embed_positions"],
            "model.decoder.layers",
            "model.decoder.final_layer_norm",
            "lm_head",
        ),
        // transformers ≥ 4.52 names multimodal models `model.language_model` + `model.visual`/`vision_tower`.
        Qwen2Vl if multimodal => (
            vec!["model.visual", "model.language_model.embed_tokens"],
            "model.language_model.layers",
            "model.language_model.norm",
            "lm_head",
        ),
        Gemma3 | Mllama if multimodal => (
            vec!["model.vision_tower", "model.multi_modal_projector", "model.language_model.embed_tokens"],
            "model.language_model.layers",
            "model.language_model.norm",
            "lm_head",
        ),
        _ => (vec!["model.embed_tokens"], "model.layers", "model.norm", "lm_head"),
    }
}

/// A device map for plans that split layers over several GPUs (transformers
/// plans: `crate::engines::EnginePlan::device_map` asks only for those).
pub fn for_plan(p: &Plan) -> Option<DeviceMap> {
    if p.scenario.stages() < 2 || p.tp() > 1 {
        return None;
    }
    let (embeddings, prefix, norm, head) = names(p.model.arch.family, p.model.arch.vision.is_some());
    let last = p.scenario.stages() - 1;
    let mut map: Vec<(String, usize)> = embeddings.into_iter().map(|n| (n.to_owned(), 0)).collect();
    for (stage, range) in p.ranges.iter().enumerate() {
        map.extend(range.clone().map(|i| (format!("{prefix}.{i}"), stage)));
    }
    map.push((norm.to_owned(), last));
    map.push((head.to_owned(), last));
    Some(DeviceMap(map))
}
