//! transformers' commands for the changes `crate::fixes` offers, and the
//! code that loads weights in each format (which the other engines fall
//! back on for formats they do not load themselves).

use crate::engines::commands::{Commands, Setting, SettingKind, Shorten};
use crate::engines::{Engine, EnginePlan, Scenario};
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;

use super::{AttentionImpl, Options};

/// transformers' commands; its quantized cache (quanto, 4 bits) is its cheapest KV cache.
pub const COMMANDS: Commands = Commands {
    cheaper_kv_dtype: KvDtype::Int4,
    kv_dtype: |_, _, _| {
        "model.generate(**inputs, cache_implementation=\"quantized\", cache_config={\"backend\": \"quanto\", \"nbits\": 4})"
            .into()
    },
    shorten: Shorten::NewTokens(|_, t| format!("model.generate(**inputs, max_new_tokens={})", t.max_new_tokens)),
    concurrency: |_, _, _, n| format!("# generate in batches of {n} sequences"),
    more_gpus_are_tensor_parallel: false,
    more_gpus,
    weights: |model, t, repo| weight_code(model, t.weights, repo),
    settings,
    adjusts: crate::engines::commands::no_adjustment,
    launch: None,
};

fn more_gpus(model: &Model, target: &Scenario, repo: &str, _: u64) -> String {
    let map = target.clone().validate().ok().and_then(|v| EnginePlan::new(model, v).device_map());
    match map {
        Some(m) => m.snippet(repo, target.weights),
        None => format!("{}.from_pretrained(\"{repo}\", device_map=\"auto\")", super::auto_class(model)),
    }
}

fn settings(model: &Model, s: &Scenario, repo: &str) -> Vec<Setting> {
    let Engine::Transformers(o) = s.engine else { return Vec::new() };
    if o.attention != AttentionImpl::Eager {
        return Vec::new();
    }
    let mut t = s.clone();
    t.engine = Engine::Transformers(Options { attention: AttentionImpl::Sdpa, ..o });
    vec![Setting {
        kind: SettingKind::SdpaAttention,
        title: "Use SDPA attention instead of eager".into(),
        scenario: t,
        // The whole load: the plan's weights (its quantisation config, its
        // dtype) on the GPUs, as `weight_code` loads them, with SDPA.
        code: {
            let class = super::auto_class(model);
            let load = Load::of(class, s.weights, repo);
            format!(
                "{}model = {class}.from_pretrained({}, device_map=\"auto\", attn_implementation=\"sdpa\")",
                load.prelude, load.args
            )
        },
    }]
}

/// How transformers loads weights in a format: the lines before the call
/// (imports, the quantisation config) and the call's first arguments (the
/// checkpoint, `quantization_config=`, `dtype=`), keywords as transformers
/// 5.24.0 `from_pretrained` and `BitsAndBytesConfig` take them; `class` is
/// the auto class that loads the checkpoint ([`super::auto_class`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Load {
    pub prelude: String,
    pub args: String,
}

impl Load {
    pub fn of(class: &str, f: WeightFormat, repo: &str) -> Self {
        let imports = format!("import torch\nfrom transformers import {class}");
        let plain =
            |dtype: &str| Load { prelude: format!("{imports}\n"), args: format!("\"{repo}\", dtype=torch.{dtype}") };
        // A checkpoint stored in the format carries its quantization_config.
        let checkpoint = |kind: &str| Load {
            prelude: format!(
                "{imports}\n# a {kind} checkpoint of this model: its config.json carries the quantization_config\n"
            ),
            args: format!("\"<a {kind} checkpoint of {repo}>\""),
        };
        match f {
            WeightFormat::F32 => plain("float32"),
            WeightFormat::Bf16 => plain("bfloat16"),
            WeightFormat::F16 => plain("float16"),
            WeightFormat::Bnb4 { nf4, double_quant } => Load {
                prelude: format!(
                    "{imports}, BitsAndBytesConfig\nquant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"{}\", \
                     bnb_4bit_use_double_quant={}, bnb_4bit_compute_dtype=torch.bfloat16)\n",
                    if nf4 { "nf4" } else { "fp4" },
                    if double_quant { "True" } else { "False" }
                ),
                args: format!("\"{repo}\", quantization_config=quant, dtype=torch.bfloat16"),
            },
            WeightFormat::Int8 => Load {
                prelude: format!("{imports}, BitsAndBytesConfig\nquant = BitsAndBytesConfig(load_in_8bit=True)\n"),
                args: format!("\"{repo}\", quantization_config=quant, dtype=torch.float16"),
            },
            WeightFormat::Fp8 { .. } => Load {
                prelude: format!("{imports}, FineGrainedFP8Config\nquant = FineGrainedFP8Config()\n"),
                args: format!("\"{repo}\", quantization_config=quant, dtype=torch.bfloat16"),
            },
            WeightFormat::Gptq { .. } => checkpoint("GPTQ"),
            WeightFormat::Awq { .. } => checkpoint("AWQ"),
            WeightFormat::Mxfp4 { .. } => checkpoint("MXFP4"),
            WeightFormat::Nvfp4 => checkpoint("NVFP4"),
            WeightFormat::Gguf(t) => Load {
                // transformers dequantises GGUF as it loads it.
                prelude: format!("{imports}\n"),
                args: format!("\"{repo}\", gguf_file=\"<the {} GGUF file>\", dtype=torch.bfloat16", t.id()),
            },
        }
    }
}

/// Loading the weights of `repo` in format `f` with transformers (the
/// other engines fall back on it for formats they do not load themselves):
/// [`Load::of`]'s imports, quantisation config and dtype, accelerate placing
/// the modules.
pub fn weight_code(model: &Model, f: WeightFormat, repo: &str) -> String {
    let class = super::auto_class(model);
    let load = Load::of(class, f, repo);
    format!("{}model = {class}.from_pretrained({}, device_map=\"auto\")", load.prelude, load.args)
}
