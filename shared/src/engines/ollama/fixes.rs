//! Ollama's fixes in its own words: `PARAMETER` lines of a Modelfile (or
//! `/set parameter` in `ollama run`), and the `ollama serve` environment.
//! Each is measured as the llama.cpp plan Ollama would launch; a llama.cpp
//! fix Ollama cannot ask for (`-ot` rules, `--tensor-split`) is left out.

use super::super::commands::{Commands, Setting, SettingKind, Shorten};
use super::super::{Engine, EnginePlan, Scenario, llamacpp};
use super::{Options, launch};
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;

/// The llama.cpp plan Ollama launches for `s` (`None`: not Ollama, or a
/// plan that fails its checks).
pub(crate) fn launched(model: &Model, s: &Scenario) -> Option<(Options, Scenario)> {
    let Engine::Ollama(o) = s.engine else { return None };
    let p = EnginePlan::new(model, s.clone().validate().ok()?);
    Some((o, Scenario { engine: Engine::LlamaCpp(launch(&p, o)), ..s.clone() }))
}

/// The model as Ollama loads it. A model read from a GGUF repository of the
/// Hub is pulled from it by its quantisation tag (`hf.co/ORG/NAME:Q4_K_M`:
/// Ollama's pull from the Hub takes GGUF repositories only); any other needs
/// the GGUF file the plan runs, which a Modelfile's `FROM` imports by its
/// path (Ollama's docs/import.md, "Importing a GGUF based model"), named as
/// llama.cpp's `-m` names it. Never a safetensors repository or a model's
/// display name as if it were an Ollama tag.
fn model_ref(model: &Model, weights: WeightFormat) -> String {
    match hub_gguf(model, weights) {
        Some(tag) => tag,
        None => match weights {
            WeightFormat::Gguf(_) => format!("./{}", llamacpp::gguf_file(model, weights)),
            _ => llamacpp::gguf_file(model, weights),
        },
    }
}

/// `hf.co/REPO:TAG` when `model` was read from a GGUF repository and
/// `weights` is a GGUF quantisation (a GGUF repository holds its quants as
/// files named by tag, which `ollama pull` picks); `None` otherwise.
fn hub_gguf(model: &Model, weights: WeightFormat) -> Option<String> {
    let (WeightFormat::Gguf(_), WeightFormat::Gguf(t)) = (model.default_format(), weights) else { return None };
    let repo = model.repo.as_deref()?;
    Some(format!("hf.co/{repo}:{}", t.id().to_ascii_uppercase()))
}

/// The Ollama set-up of a plan: the `ollama serve` environment that
/// differs from Ollama's defaults, then a Modelfile with every parameter
/// the plan sets.
pub fn ollama_command(model: &Model, s: &Scenario) -> String {
    serve_with(model, s, "")
}

/// [`ollama_command`] with `extra` (`NAME=value `…) before the plan's own
/// environment. The environment is `ollama serve`'s, read once for every
/// model it runs (envconfig/config.go, v0.33.0-rc2): a restart with one
/// variable changed must carry the plan's others, or it runs another plan.
pub(crate) fn serve_with(model: &Model, s: &Scenario, extra: &str) -> String {
    let Engine::Ollama(o) = s.engine else { return String::new() };
    let mut env = extra.to_owned();
    if o.num_parallel != 1 {
        env.push_str(&format!("OLLAMA_NUM_PARALLEL={} ", o.num_parallel));
    }
    if let Some(fa) = o.flash_attention {
        env.push_str(match fa {
            llamacpp::FlashAttention::On => "OLLAMA_FLASH_ATTENTION=1 ",
            llamacpp::FlashAttention::Off => "OLLAMA_FLASH_ATTENTION=0 ",
        });
    }
    let kv = super::cache_type(o, s.kv_dtype);
    if kv != llamacpp::CacheType::F16 {
        let t = kv;
        env.push_str(&format!("OLLAMA_KV_CACHE_TYPE={} ", t.id()));
    }
    // llama-server reads an int variable with `std::stoi`, which throws
    // past 2^31 - 1 (common/arg.cpp `common_params_parse_ex`, llama.cpp as
    // vendored by llama-cpp-python 0.3.36): every layer is `--cpu-moe`'s
    // switch, `LLAMA_ARG_CPU_MOE=1` ("1" or "true" runs a switch).
    if o.n_cpu_moe >= model.layout.num_layers as u64 && o.n_cpu_moe > 0 {
        env.push_str("LLAMA_ARG_CPU_MOE=1 ");
    } else if o.n_cpu_moe > 0 {
        env.push_str(&format!("LLAMA_ARG_N_CPU_MOE={} ", o.n_cpu_moe));
    }
    let mut out = String::new();
    if !env.is_empty() {
        out.push_str(&env);
        out.push_str("ollama serve\n");
    }
    out.push_str(&format!("# Modelfile\nFROM {}", model_ref(model, s.weights)));
    if let Some(n) = o.num_ctx {
        out.push_str(&format!("\nPARAMETER num_ctx {n}"));
    }
    if let Some(n) = o.num_gpu {
        out.push_str(&format!("\nPARAMETER num_gpu {n}"));
    }
    if let Some(n) = o.num_batch {
        out.push_str(&format!("\nPARAMETER num_batch {n}"));
    }
    out
}

/// Ollama's settings for the llama.cpp flags `l` stands for: `-ngl` as
/// `num_gpu`, `--n-cpu-moe` through the environment; `None` when `l`
/// needs a flag Ollama does not pass (`-ot`, `--tensor-split`, …).
fn from_flags(o: Options, was: &llamacpp::Options, l: &llamacpp::Options) -> Option<Options> {
    let same = l.tensor_overrides == was.tensor_overrides
        && l.tensor_split == was.tensor_split
        && l.split_mode == was.split_mode
        && l.main_gpu == was.main_gpu;
    same.then_some(Options { num_gpu: l.n_gpu_layers, n_cpu_moe: l.n_cpu_moe, ..o })
}

/// llama.cpp's settings for the plan Ollama launches, as Ollama's.
fn settings(model: &Model, s: &Scenario, repo: &str) -> Vec<Setting> {
    let Some((o, l)) = launched(model, s) else { return Vec::new() };
    let Engine::LlamaCpp(was) = l.engine else { return Vec::new() };
    (llamacpp::COMMANDS.settings)(model, &l, repo)
        .into_iter()
        .filter_map(|set| ollama_setting(model, s, o, &was, set))
        .collect()
}

/// A llama.cpp setting as Ollama's: its plan with Ollama's settings, its
/// command Ollama's set-up.
fn ollama_setting(model: &Model, s: &Scenario, o: Options, was: &llamacpp::Options, set: Setting) -> Option<Setting> {
    let Engine::LlamaCpp(l) = set.scenario.engine else { return None };
    let t = Scenario { engine: Engine::Ollama(from_flags(o, was, &l)?), ..s.clone() };
    let (title, code) = if set.kind == SettingKind::Fit {
        // What `--fit` runs on: the set-up without the settings that make
        // it give up (`num_gpu` is passed as `-ngl`, `LLAMA_ARG_N_CPU_MOE`
        // read as `--n-cpu-moe`); the fix's plan is what it then loads.
        let runs = Scenario { engine: Engine::Ollama(Options { num_gpu: None, n_cpu_moe: 0, ..o }), ..s.clone() };
        let title = set
            .title
            .replace("llama.cpp's --fit (on by default)", "Ollama's llama-server (--fit on)")
            .replace("Drop -ngl and let llama.cpp's --fit", "Drop num_gpu and let llama-server's --fit")
            .replace(
                "Drop --n-cpu-moe and let llama.cpp's --fit",
                "Drop LLAMA_ARG_N_CPU_MOE and let llama-server's --fit",
            );
        (title, format!("{}\n# Ollama starts llama-server with --fit on", ollama_command(model, &runs)))
    } else {
        (set.title, ollama_command(model, &t))
    };
    Some(Setting { kind: set.kind, title, code, scenario: t })
}

/// What llama-server's `--fit` changes by itself in the plan Ollama launches.
fn adjusts(model: &Model, s: &Scenario) -> Option<Setting> {
    let (o, l) = launched(model, s)?;
    let Engine::LlamaCpp(was) = l.engine else { return None };
    ollama_setting(model, s, o, &was, (llamacpp::COMMANDS.adjusts)(model, &l)?)
}

/// Ollama's settings; q8_0 is the cheapest KV cache its docs recommend
/// (docs/faq.md "How can I set the quantization type for the K/V cache?").
pub const COMMANDS: Commands = Commands {
    cheaper_kv_dtype: KvDtype::Q8_0,
    kv_dtype: |model, t, _| ollama_command(model, t),
    // `num_ctx` in the Modelfile, with the rest of the set-up.
    shorten: Shorten::Context(|model, t, _| ollama_command(model, t)),
    // Ollama serves `OLLAMA_NUM_PARALLEL` requests at once.
    // The fix's plan carries the cap (`Engine::capped_sequences`).
    concurrency: |model, t, _, _| ollama_command(model, t),
    more_gpus_are_tensor_parallel: false,
    more_gpus: |model, t, _, n| {
        let gpus = (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        serve_with(model, t, &format!("CUDA_VISIBLE_DEVICES={gpus} OLLAMA_SCHED_SPREAD=1 "))
    },
    weights: |model, t, repo| match t.weights {
        WeightFormat::Gguf(_) => ollama_command(model, t),
        f => format!("ollama runs GGUF weights: a {} checkpoint of {repo} needs converting first", f.id()),
    },
    settings,
    adjusts,
    launch: None,
};
