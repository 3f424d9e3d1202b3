//! The explicit `device_map` (module → GPU) of a layer-wise split, ready to
//! paste into `from_pretrained(..., device_map=...)`, with the module names
//! transformers uses for each family, and the `max_memory` caps under which
//! `device_map="sequential"` places the same modules by itself.

use serde::{Serialize, Serializer, ser::SerializeMap};

use crate::arch::{Architecture, Family};
use crate::engines::Plan;
use crate::formats::WeightFormat;

/// Module names in order with their GPU, and each GPU's `max_memory` cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceMap {
    /// The auto class that loads the checkpoint ([`super::auto_class`]).
    pub auto_class: &'static str,
    pub modules: Vec<(String, usize)>,
    /// Bytes per GPU (index = GPU) for `max_memory`: see [`max_memory`].
    pub max_memory: Vec<u64>,
}

/// The JSON contract's `device_map` is the module → GPU map alone.
impl Serialize for DeviceMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.modules.len()))?;
        for (k, v) in &self.modules {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl DeviceMap {
    /// The map as a Python dict literal.
    pub fn python(&self) -> String {
        let items: Vec<String> = self.modules.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        format!("{{{}}}", items.join(", "))
    }

    /// `max_memory` as a Python dict, in MiB rounded up (accelerate reads
    /// "…MiB" as `int(…) * 2**20`: `convert_file_size_to_int`, accelerate
    /// 1.15.0 `utils/modeling.py`). Rounding up adds less than 1 MiB, less
    /// than any layer, so no extra module fits under a cap.
    pub fn max_memory_python(&self) -> String {
        let items: Vec<String> =
            self.max_memory.iter().enumerate().map(|(g, b)| format!("{g}: \"{}MiB\"", b.div_ceil(1 << 20))).collect();
        format!("{{{}}}", items.join(", "))
    }

    /// The loading code of weights in `format`: its quantisation config and
    /// dtype, accelerate placing the modules under the plan's caps, the
    /// explicit map after it as a comment (the page folds the map behind a
    /// toggle).
    pub fn snippet(&self, repo: &str, format: WeightFormat) -> String {
        let class = self.auto_class;
        let load = super::fixes::Load::of(class, format, repo);
        let bnb = matches!(format, WeightFormat::Int8 | WeightFormat::Bnb4 { .. });
        format!(
            "{}# max_memory: the plan's bytes per GPU; GPU 0's cap adds its largest layer, which accelerate keeps free \
             there{}, so a cap may exceed the card\n\
             model = {class}.from_pretrained({}, device_map=\"sequential\", max_memory={})\n\
             # or each module placed by hand:\n\
             # model = {class}.from_pretrained({}, device_map={})",
            load.prelude,
            if bnb { "; bitsandbytes caps each GPU at 90 % of it, so every cap is raised by 10/9" } else { "" },
            load.args,
            self.max_memory_python(),
            load.args,
            self.python()
        )
    }
}

/// The caps under which accelerate's sequential placement puts on each GPU
/// the modules the plan gives it (transformers 5.24.0
/// `integrations/accelerate.py`, accelerate 1.15.0 `utils/modeling.py`):
/// - `"sequential"`, not `"auto"`: `"auto"` first lowers every cap but the
///   last GPU's to an even share of the model plus 1.25 × its largest
///   layer (`get_balanced_memory`), so a plan's uneven split would not hold;
/// - `infer_auto_device_map` fills GPU 0, then GPU 1, …, each up to its cap,
///   and on GPU 0 (its "main device") keeps the largest leaf module or
///   decoder layer free (`max_layer_size`), so GPU 0's cap adds it: the
///   largest of the embedding, one layer and the head as the plan counts
///   them (with a vision tower beside the embedding this is an upper bound);
/// - the bitsandbytes quantizers lower every cap to 90 %
///   (`adjust_max_memory`, `quantizer_bnb_4bit.py`, `quantizer_bnb_8bit.py`),
///   so the caps are raised by 10/9 for those formats.
fn max_memory(p: &Plan) -> Vec<u64> {
    let w = &p.weights;
    let largest = w.per_layer.iter().copied().max().unwrap_or(0).max(w.first).max(w.last);
    let bnb = matches!(p.scenario.weights, WeightFormat::Int8 | WeightFormat::Bnb4 { .. });
    (0..p.scenario.stages())
        .map(|stage| {
            let held = p.stage_weights(stage).saturating_add(if stage == 0 { largest } else { 0 });
            if bnb { held.saturating_mul(10).div_ceil(9) } else { held }
        })
        .collect()
}

/// The module names of a layer-wise split, relative to the language model
/// `lm`: its embeddings (placed with the first layer after any `tower`
/// modules, which are whole names), the decoder layers' `layers`, the final
/// `norm`, and the `head` (a whole name). transformers ≥ 4.52 nests a
/// multimodal model's language model under `model.language_model` beside its
/// tower (Llama 4's under `language_model.model`); the tower's modules are by
/// kind (transformers 5.25 `modeling_*.py`, checked against every fixture the
/// oracle builds: `shared/tests/it/arch.rs`).
struct Names {
    tower: &'static [&'static str],
    lm: &'static str,
    embeddings: &'static [&'static str],
    layers: &'static str,
    norm: &'static str,
    head: &'static str,
}

fn names(arch: &Architecture) -> Names {
    use Family::*;
    let plain = |lm, embeddings, layers, norm, head| Names { tower: &[], lm, embeddings, layers, norm, head };
    match arch.family {
        Gpt2 => return plain("transformer", &["wte", "wpe"], "h", "ln_f", "lm_head"),
        GptNeox => return plain("gpt_neox", &["embed_in"], "layers", "final_layer_norm", "embed_out"),
        Falcon => return plain("transformer", &["word_embeddings"], "h", "ln_f", "lm_head"),
        Bloom => {
            return plain("transformer", &["word_embeddings", "word_embeddings_layernorm"], "h", "ln_f", "lm_head");
        }
        // transformers 4.37 `PhiModel`.
        Phi => return plain("model", &["embed_tokens"], "layers", "final_layernorm", "lm_head"),
        Opt => {
            return plain(
                "model.decoder",
                &["embed_tokens", "embed_positions"],
                "layers",
                "final_layer_norm",
                "lm_head",
            );
        }
        _ => {}
    }
    let kind = arch.vision.as_ref().map(|v| v.kind.as_str());
    let (lm, head) = match (arch.multimodal, arch.family, kind) {
        (false, _, _) => ("model", "lm_head"),
        (true, Llama4, _) => ("language_model.model", "language_model.lm_head"),
        (true, _, Some("idefics3" | "smolvlm")) => ("model.text_model", "lm_head"),
        (true, _, _) => ("model.language_model", "lm_head"),
    };
    let tower: &'static [&'static str] = match kind {
        None => &[],
        Some("llama4") => &["vision_model", "multi_modal_projector"],
        Some("mllama") => &["model.vision_model", "model.multi_modal_projector"],
        Some("qwen2_vl" | "qwen2_5_vl" | "qwen3_vl" | "qwen3_5" | "glm4v") => &["model.visual"],
        Some("moonvit") => &["model.vision_tower", "model.mm_projector"],
        Some("gemma4") => &["model.vision_tower", "model.embed_vision"],
        Some("idefics3" | "smolvlm") => &["model.vision_model", "model.connector"],
        Some("llava_next" | "llava_onevision") => {
            &["model.vision_tower", "model.multi_modal_projector", "model.image_newline"]
        }
        // SigLIP (Gemma 3), Pixtral (Mistral 3), InternViT, LLaVA's and PaliGemma's.
        Some(_) => &["model.vision_tower", "model.multi_modal_projector"],
    };
    // The families whose embedding or final norm is named otherwise
    // (`modeling_falcon_h1.py`, `modeling_jamba.py`: `final_layernorm`;
    // `modeling_lfm2*.py`: `embedding_norm`, applied last;
    // `modeling_nemotron_h.py`: `embeddings`, `norm_f`); Gemma 4's and Gemma
    // 3n's per-layer inputs are computed before the first layer.
    let extra = &arch.text.extra;
    let (embeddings, norm): (&'static [&'static str], _) = match arch.family {
        FalconH1 | Jamba => (&["embed_tokens"], "final_layernorm"),
        Lfm2 | Lfm2Moe => (&["embed_tokens"], "embedding_norm"),
        NemotronH => (&["embeddings"], "norm_f"),
        _ if extra.per_layer_input > 0 => (
            &["embed_tokens", "embed_tokens_per_layer", "per_layer_model_projection", "per_layer_projection_norm"],
            "norm",
        ),
        _ => (&["embed_tokens"], "norm"),
    };
    Names { tower, lm, embeddings, layers: "layers", norm, head }
}

/// `{parent}.{name}`, pushed piece by piece (no formatter: the page's first
/// load carries this code).
fn at(parent: &str, name: &str) -> String {
    let mut s = String::with_capacity(parent.len() + 1 + name.len());
    s.push_str(parent);
    s.push('.');
    s.push_str(name);
    s
}

/// `{prefix}.{i}`, written digit by digit: one `format!` per layer was a
/// third of a 61-layer model's whole estimate (issue 39).
fn layer_name(prefix: &str, i: usize) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = i;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut name = String::with_capacity(prefix.len() + 1 + digits.len() - at);
    name.push_str(prefix);
    name.push('.');
    name.extend(digits[at..].iter().map(|&d| char::from(d)));
    name
}

/// A device map for plans that split layers over several GPUs (transformers
/// plans: `crate::engines::EnginePlan::device_map` asks only for those).
/// None where a tower's module names are not known (`towers_unread`): a
/// map that leaves modules out does not load.
pub fn for_plan(p: &Plan) -> Option<DeviceMap> {
    if p.scenario.stages() < 2 || p.tp() > 1 || p.model.arch.towers_unread {
        return None;
    }
    let n = names(&p.model.arch);
    let last = p.scenario.stages() - 1;
    // Gemma 3n's AltUp streams: projected out before the first layer, back after the last.
    let altup = p.model.arch.text.extra.altup_inputs > 0;
    let mut map: Vec<(String, usize)> = n.tower.iter().map(|t| ((*t).to_owned(), 0)).collect();
    map.extend(n.embeddings.iter().map(|e| (at(n.lm, e), 0)));
    if altup {
        map.push((at(n.lm, "altup_projections"), 0));
    }
    let layers = at(n.lm, n.layers);
    for (stage, range) in p.ranges.iter().enumerate() {
        map.extend(range.clone().map(|i| (layer_name(&layers, i), stage)));
    }
    map.push((at(n.lm, n.norm), last));
    if altup {
        map.push((at(n.lm, "altup_unembed_projections"), last));
    }
    map.push((n.head.to_owned(), last));
    Some(DeviceMap { auto_class: super::auto_class(p.model), modules: map, max_memory: max_memory(p) })
}
