//! The changes each engine offers when a plan does not fit, and the code or
//! flags that apply them, in the engine's own words. `crate::fixes` measures
//! and ranks them; it never names an engine. Each engine module holds its
//! [`Commands`]; [`super::EngineKind::commands`] is the one match.

use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;

use super::Scenario;

/// How an engine shortens sequences.
#[derive(Debug, Clone, Copy)]
pub enum Shorten {
    /// A configured context (`--max-model-len`, `--context-length`,
    /// `num_ctx`): the command for the changed plan `target`, whose engine
    /// carries the context.
    Context(fn(model: &Model, target: &Scenario, repo: &str) -> String),
    /// Fewer new tokens: the command for the changed plan `target` (its
    /// `max_new_tokens` after its prompt).
    NewTokens(fn(model: &Model, target: &Scenario) -> String),
}

/// An engine's own setting that makes a plan fit for free (or for speed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// transformers: SDPA instead of eager attention.
    SdpaAttention,
    /// vLLM: a larger `gpu_memory_utilization`.
    HigherUtilization,
    /// llama.cpp: fewer layers on the GPU.
    OffloadLayers,
    /// llama.cpp: the layers split over the GPUs by their memory (`--tensor-split`).
    SplitLayers,
    /// llama.cpp: what its own `--fit` loads (fewer layers or experts on the GPU).
    Fit,
}

/// A changed plan from an engine setting, with its title and command.
#[derive(Debug, Clone)]
pub struct Setting {
    pub kind: SettingKind,
    pub title: String,
    pub scenario: Scenario,
    pub code: String,
}

/// One engine's commands.
#[derive(Debug, Clone, Copy)]
pub struct Commands {
    /// The cheapest KV cache dtype the engine stores, and how to ask for it:
    /// the command for the changed plan `target` (stored so).
    pub cheaper_kv_dtype: KvDtype,
    pub kv_dtype: fn(model: &Model, target: &Scenario, repo: &str) -> String,
    pub shorten: Shorten,
    /// At most `n` sequences at once: the changed plan `target` and the model.
    /// The plan's other settings (a context shared by the sequences, an
    /// engine's environment) are the command's too.
    pub concurrency: fn(model: &Model, target: &Scenario, repo: &str, n: u64) -> String,
    /// Whether more GPUs grow the tensor-parallel degree (else they split layers).
    pub more_gpus_are_tensor_parallel: bool,
    /// Running on `n` GPUs: the changed plan `target` and the model.
    pub more_gpus: fn(model: &Model, target: &Scenario, repo: &str, n: u64) -> String,
    /// Loading the weights in another format: the changed plan `target`
    /// (its `weights`).
    pub weights: fn(model: &Model, target: &Scenario, repo: &str) -> String,
    /// The engine's own settings worth trying on this plan.
    pub settings: fn(model: &Model, s: &Scenario, repo: &str) -> Vec<Setting>,
    /// What the engine itself changes before loading a plan that fits with
    /// too little memory left (llama.cpp's `--fit` and its margin).
    pub adjusts: fn(model: &Model, s: &Scenario) -> Option<Setting>,
    /// The whole launch of a plan (`vllm serve …`), for engines whose fixes
    /// are one command line: each fix's code is the launch of its plan, so
    /// it carries every setting the plan depends on, not only the changed one.
    pub launch: Option<fn(model: &Model, s: &Scenario, repo: &str) -> String>,
}

/// The model argument for weights in `format`: the checkpoint itself when
/// it is stored so, or quantised in flight with `flag`; else a placeholder
/// naming the checkpoint it needs (never an invented repository name).
pub fn checkpoint_for(model: &Model, format: WeightFormat, repo: &str) -> (String, Option<&'static str>) {
    let own = model.default_format();
    let placeholder = |kind: &str| format!("<a {kind} checkpoint of {repo}>");
    // `--dtype` and in-flight quantisation start from 16- or 32-bit weights;
    // a quantised checkpoint keeps its own quantisation (vLLM 0.34
    // `ModelConfig._verify_quantization` takes it from the checkpoint's
    // `quantization_config` and refuses another `--quantization`), so its
    // weights in any other format are another checkpoint.
    let unquantised = matches!(own, WeightFormat::Bf16 | WeightFormat::F16 | WeightFormat::F32);
    match format {
        f if f == own => (repo.to_owned(), None),
        WeightFormat::Bf16
        | WeightFormat::F16
        | WeightFormat::F32
        | WeightFormat::Fp8 { .. }
        | WeightFormat::Bnb4 { .. }
            if !unquantised =>
        {
            (placeholder(&format.id()), None)
        }
        WeightFormat::Bf16 => (repo.to_owned(), Some("--dtype bfloat16")),
        WeightFormat::F16 => (repo.to_owned(), Some("--dtype float16")),
        WeightFormat::F32 => (repo.to_owned(), Some("--dtype float32")),
        // FP8 and bitsandbytes 4-bit are quantised as the weights load.
        WeightFormat::Fp8 { .. } => (repo.to_owned(), Some("--quantization fp8")),
        WeightFormat::Bnb4 { .. } => (repo.to_owned(), Some("--quantization bitsandbytes")),
        WeightFormat::Int8 => (placeholder("bitsandbytes 8-bit"), None),
        WeightFormat::Gptq { .. } => (placeholder("GPTQ"), Some("--quantization gptq")),
        WeightFormat::Awq { .. } => (placeholder("AWQ"), Some("--quantization awq")),
        WeightFormat::Mxfp4 { .. } => (placeholder("MXFP4"), Some("--quantization mxfp4")),
        WeightFormat::Nvfp4 => (placeholder("NVFP4"), Some("--quantization modelopt_fp4")),
        WeightFormat::Gguf(t) => (format!("<a {} GGUF of {repo}>", t.id()), None),
    }
}

/// Whether a context asked of the engine is longer than the model's own
/// (`max_position_embeddings`), which vLLM and SGLang refuse without an
/// environment variable that allows it.
pub fn past_model_length(model: &Model, asked: Option<u64>) -> bool {
    asked.zip(model.arch.text.max_position_embeddings).is_some_and(|(asked, own)| asked > own)
}

/// Splitting the layers of plan `s` over its GPUs by memory (`layers`: how
/// many each GPU holds in the plan), when the plan has no explicit device
/// map, in the engine's words; `None` when the engine has no other split to
/// offer (vLLM's and SGLang's even split where the stages' memory is equal,
/// llama.cpp past its device count). Only the OOM diagnosis asks, so it is no [`Commands`] field:
/// each field is linked into every program that holds the table, the
/// page's first load included.
pub fn rebalance(model: &Model, s: &Scenario, repo: &str, layers: &[usize]) -> Option<String> {
    use crate::engines::{Engine, llamacpp, ollama, sglang, transformers, vllm};
    match s.engine {
        // accelerate's balanced split.
        Engine::Transformers(_) => {
            Some(format!("{}.from_pretrained(\"{repo}\", device_map=\"balanced\")", transformers::auto_class(model)))
        }
        // Each stage's count in `PP_LAYER_PARTITION` (else an even split).
        Engine::Vllm(_) => Some(format!(
            "VLLM_PP_LAYER_PARTITION={} {}",
            proportional_partition(s, layers)?,
            vllm::launch(model, s, repo)
        )),
        Engine::Sglang(_) => Some(format!(
            "SGLANG_PP_LAYER_PARTITION={} {}",
            proportional_partition(s, layers)?,
            sglang::launch(model, s, repo)
        )),
        // The plan's split by memory, pinned (`--tensor-split`).
        Engine::LlamaCpp(_) => llamacpp::pinned_split(model, s, layers),
        // Spread over every GPU (server/sched.go), with the plan's environment.
        Engine::Ollama(_) => Some(ollama::serve_with(model, s, "OLLAMA_SCHED_SPREAD=1 ")),
    }
}

/// The pipeline stages' layer counts in proportion to their GPUs' memory
/// (a stage's memory is its smallest GPU's, in every data-parallel
/// replica; at least one layer each, the rest by largest remainder), as the
/// `PP_LAYER_PARTITION` variables of vLLM and SGLang take them (`a,b,…`,
/// one count per stage, summing to the model's layers: vLLM 0.10.0
/// distributed/utils.py and SGLang 0.5.23 srt/distributed/utils.py
/// `get_pp_indices`); `None` when the engine's own even split is that
/// already. `layers`: each GPU's, replica by replica, stage by stage, TP
/// ranks within.
fn proportional_partition(s: &Scenario, layers: &[usize]) -> Option<String> {
    let tp = (s.tp as usize).max(1);
    let stages = s.stages();
    let replica = tp.saturating_mul(stages);
    // MiB, so that the products below stay within u64 (and no 128-bit
    // division is linked).
    let memory: Vec<u64> = (0..stages)
        .map(|st| {
            s.gpus
                .iter()
                .enumerate()
                .filter(|(i, _)| (i % replica) / tp == st)
                .map(|(_, g)| g.capacity_bytes / crate::units::MIB)
                .min()
                .unwrap_or(0)
        })
        .collect();
    let now: Vec<usize> = (0..stages).map(|st| layers.get(st * tp).copied().unwrap_or(0)).collect();
    let total: usize = now.iter().sum();
    let sum: u64 = memory.iter().sum();
    if stages < 2 || sum == 0 || total < stages || memory.iter().all(|&m| m == memory[0]) {
        return None;
    }
    // One layer each, the others in proportion.
    let spread = (total - stages) as u64;
    let exact: Vec<u64> = memory.iter().map(|m| m.saturating_mul(spread)).collect();
    let mut counts: Vec<usize> = exact.iter().map(|e| (e / sum) as usize + 1).collect();
    // The largest remainders take the layers left, the earlier stage on a
    // tie (fewer than one per stage are left).
    let mut remainders: Vec<u64> = exact.iter().map(|e| e % sum).collect();
    for _ in 0..total.saturating_sub(counts.iter().sum()) {
        let largest = remainders.iter().copied().max().unwrap_or(0);
        let Some(i) = remainders.iter().position(|&r| r == largest) else { break };
        counts[i] += 1;
        remainders[i] = 0;
    }
    (counts != now).then(|| counts.iter().map(usize::to_string).collect::<Vec<_>>().join(","))
}

/// No settings of the engine's own help this plan.
/// For engines that change nothing by themselves before loading.
pub fn no_adjustment(_: &Model, _: &Scenario) -> Option<Setting> {
    None
}

pub fn no_settings(_: &Model, _: &Scenario, _: &str) -> Vec<Setting> {
    Vec::new()
}
