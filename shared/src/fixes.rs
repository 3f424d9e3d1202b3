//! Fixes: the cheapest changes that make a plan fit, ranked by what they give
//! up, each with the memory it saves and the code or flags that apply it.

use serde::Serialize;

use crate::engines::{Engine, EngineKind, transformers::AttentionImpl};
use crate::estimate::{GpuSlot, Prepared, Scenario, Verdict};
use crate::explain::thousands;
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;
use crate::solve;

/// What a fix costs, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GivesUp {
    /// A setting: nothing is lost.
    Nothing,
    /// A little numerical precision in the KV cache.
    CachePrecision,
    /// Shorter sequences or fewer at once.
    Length,
    /// Weight precision (model quality).
    Quality,
    /// Speed (layers on the CPU).
    Speed,
    /// More or bigger hardware.
    Money,
}

/// Stable ids of the kinds of fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FixKind {
    SdpaAttention,
    HigherUtilization,
    KvCacheDtype,
    MaxNewTokens,
    MaxModelLen,
    Concurrency,
    WeightFormat,
    OffloadLayers,
    MoreGpus,
    BiggerGpu,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    pub kind: FixKind,
    pub title: String,
    pub gives_up: GivesUp,
    /// How much closer to fitting the change brings the tightest GPU: memory
    /// freed, or capacity added (a bigger GPU, a larger utilization share).
    pub saves_bytes: u64,
    /// Whether the plan fits with this change alone.
    pub fits: bool,
    /// The code, flags or settings that apply it.
    pub code: String,
    /// The changed plan (for "apply" buttons).
    #[serde(skip)]
    pub scenario: Scenario,
}

/// How far the plan is from fitting on its tightest GPU: the bytes it needs
/// minus the bytes the engine may use there (signed: negative when it fits).
///
/// "Needs" is what the engine allocates (transformers, llama.cpp), or for
/// engines that pre-allocate a fixed share (vLLM, SGLang) what the requested
/// work needs: weights, activations, overhead and the KV cache of the
/// sequences at their length. "May use" is the capacity, or the share the
/// engine takes of it (`gpu_memory_utilization`, `mem_fraction_static`) plus
/// the overhead it keeps outside that share.
fn gap(model: &Model, s: &Scenario) -> i128 {
    let p = Prepared::new(model, s.clone());
    (0..s.gpus.len())
        .map(|g| {
            let parts = p.peak(g, s.concurrency);
            let cap = s.gpus[g].capacity_bytes as f64;
            let per_token = crate::kv::bytes_per_token(p.stage_kv(p.stage(g)));
            let work = |len: u64| per_token.saturating_mul(len).saturating_mul(s.concurrency);
            let fixed = parts.weights.saturating_add(parts.activations).saturating_add(parts.overhead);
            let (need, usable) = match s.engine {
                Engine::Vllm(o) => {
                    let len =
                        o.max_model_len.or(model.arch.text.max_position_embeddings).unwrap_or(s.sequence_tokens());
                    let util = o.gpu_memory_utilization.unwrap_or_else(|| o.version.default_utilization());
                    (fixed.saturating_add(work(len.max(s.sequence_tokens()))), cap * util + parts.overhead as f64)
                }
                Engine::Sglang(o) => {
                    let fraction =
                        o.mem_fraction_static.unwrap_or_else(|| crate::engines::sglang::default_mem_fraction(p.tp()));
                    (fixed.saturating_add(work(s.sequence_tokens())), cap * fraction + parts.activations as f64)
                }
                _ => (parts.total(), cap),
            };
            i128::from(need) - usable as i128
        })
        .max()
        .unwrap_or(0)
}

fn repo(model: &Model) -> String {
    model.repo.clone().unwrap_or_else(|| "MODEL_ID".into())
}

/// The ranked fixes for a plan that does not fit (empty when it fits).
pub fn fixes(model: &Model, s: &Scenario) -> Vec<Fix> {
    let verdict = Prepared::new(model, s.clone()).verdict();
    if matches!(verdict, Verdict::Fits { max_concurrency } if max_concurrency >= s.concurrency) {
        return Vec::new();
    }
    let before = gap(model, s);
    let mut out: Vec<Fix> = Vec::new();
    let mut push = |kind, title: String, gives_up, scenario: Scenario, code: String| {
        let fits = solve::fits(model, &scenario);
        let after = gap(model, &scenario);
        let saves_bytes = u64::try_from((before - after).max(0)).unwrap_or(u64::MAX);
        out.push(Fix { kind, title, gives_up, saves_bytes, fits, code, scenario });
    };
    let engine = s.engine.kind();
    let repo = repo(model);

    if let Engine::Transformers(o) = s.engine
        && o.attention == AttentionImpl::Eager
    {
        let mut t = s.clone();
        t.engine = Engine::Transformers(crate::engines::transformers::Options { attention: AttentionImpl::Sdpa, ..o });
        push(
            FixKind::SdpaAttention,
            "Use SDPA attention instead of eager".into(),
            GivesUp::Nothing,
            t,
            format!("AutoModelForCausalLM.from_pretrained(\"{repo}\", attn_implementation=\"sdpa\")"),
        );
    }
    if let Engine::Vllm(o) = s.engine {
        let current = o.gpu_memory_utilization.unwrap_or_else(|| o.version.default_utilization());
        if current < 0.95 {
            let mut t = s.clone();
            t.engine = Engine::Vllm(crate::engines::vllm::Options { gpu_memory_utilization: Some(0.95), ..o });
            push(
                FixKind::HigherUtilization,
                format!("Let vLLM use 95 % of the GPU instead of {} %", crate::units::decimal(current * 100.0, 0)),
                GivesUp::Nothing,
                t,
                "vllm serve ... --gpu-memory-utilization 0.95   # only if nothing else uses the GPU".into(),
            );
        }
    }
    // A cheaper KV cache.
    let cheaper_kv = match engine {
        EngineKind::LlamaCpp => KvDtype::Q8_0,
        EngineKind::Transformers => KvDtype::Int4,
        _ => KvDtype::Fp8,
    };
    if s.kv_dtype.bpw(128).as_f64() > cheaper_kv.bpw(128).as_f64() {
        let mut t = s.clone();
        t.kv_dtype = cheaper_kv;
        let code = match engine {
            EngineKind::Vllm => "vllm serve ... --kv-cache-dtype fp8".into(),
            EngineKind::Sglang => "python -m sglang.launch_server ... --kv-cache-dtype fp8_e4m3".into(),
            EngineKind::LlamaCpp => "llama-server ... -fa on -ctk q8_0 -ctv q8_0".into(),
            EngineKind::Transformers => "model.generate(**inputs, cache_implementation=\"quantized\", cache_config={\"backend\": \"quanto\", \"nbits\": 4})".into(),
        };
        push(
            FixKind::KvCacheDtype,
            format!("Store the KV cache in {}", cheaper_kv.id()),
            GivesUp::CachePrecision,
            t,
            code,
        );
    }
    // Shorter sequences.
    match engine {
        EngineKind::Vllm | EngineKind::Sglang => {
            let len = solve::max_context(model, &solve::with_length(s, s.sequence_tokens()));
            if len > 0 {
                let t = solve::with_length(s, len.min(s.sequence_tokens().max(len)));
                let code = match engine {
                    EngineKind::Vllm => format!("vllm serve {repo} --max-model-len {len}"),
                    _ => format!("python -m sglang.launch_server --model-path {repo} --context-length {len}"),
                };
                push(
                    FixKind::MaxModelLen,
                    format!("Limit the context to {} tokens", thousands(len)),
                    GivesUp::Length,
                    t,
                    code,
                );
            }
        }
        _ => {
            if let Some(n) = solve::max_new_tokens(model, s).filter(|&n| n > 0 && n < s.max_new_tokens) {
                let mut t = s.clone();
                t.max_new_tokens = n;
                let code = match engine {
                    EngineKind::LlamaCpp => format!("llama-server ... -c {} -n {n}", s.prompt_tokens.saturating_add(n)),
                    _ => format!("model.generate(**inputs, max_new_tokens={n})"),
                };
                push(
                    FixKind::MaxNewTokens,
                    format!("Generate at most {} new tokens", thousands(n)),
                    GivesUp::Length,
                    t,
                    code,
                );
            }
        }
    }
    // Fewer sequences at once.
    if s.concurrency > 1 {
        let n = Prepared::new(model, s.clone()).max_concurrency();
        if n >= 1 && n < s.concurrency {
            let mut t = s.clone();
            t.concurrency = n;
            let code = match engine {
                EngineKind::Vllm => format!("vllm serve {repo} --max-num-seqs {n}"),
                EngineKind::Sglang => {
                    format!("python -m sglang.launch_server --model-path {repo} --max-running-requests {n}")
                }
                EngineKind::LlamaCpp => format!("llama-server ... -np {n}"),
                EngineKind::Transformers => format!("# generate in batches of {n} sequences"),
            };
            push(
                FixKind::Concurrency,
                format!("Run {n} sequences at once instead of {}", s.concurrency),
                GivesUp::Length,
                t,
                code,
            );
        }
    }
    // A lighter weight format.
    if let Some(f) = solve::least_aggressive_format(model, s).filter(|&f| f != s.weights) {
        let mut t = s.clone();
        t.weights = f;
        if t.kv_dtype == KvDtype::F32 {
            t.kv_dtype = KvDtype::Bf16;
        }
        let gives_up =
            if matches!(f, WeightFormat::Bf16 | WeightFormat::F16) { GivesUp::Nothing } else { GivesUp::Quality };
        push(
            FixKind::WeightFormat,
            format!("Load the weights as {}", f.id()),
            gives_up,
            t,
            weight_code(f, engine, &repo),
        );
    }
    // llama.cpp: keep some layers on the CPU.
    if engine == EngineKind::LlamaCpp
        && let Some(ngl) = crate::engines::llamacpp::max_gpu_layers(model, s).filter(|&n| n > 0)
    {
        let mut t = s.clone();
        if let Engine::LlamaCpp(o) = &mut t.engine {
            o.n_gpu_layers = Some(ngl);
        }
        push(
            FixKind::OffloadLayers,
            format!("Offload {ngl} layers to the GPU and keep the rest on the CPU"),
            GivesUp::Speed,
            t,
            format!("llama-server ... -ngl {ngl}"),
        );
    }
    // More GPUs of the same kind.
    if let Some(n) = solve::min_gpus(model, s).filter(|&n| n as usize > s.gpus.len()) {
        let mut t = s.clone();
        t.gpus = vec![s.gpus[0].clone(); n as usize];
        t.tp = if matches!(engine, EngineKind::Vllm | EngineKind::Sglang) { n } else { 1 };
        let code = match engine {
            EngineKind::Vllm => format!("vllm serve {repo} --tensor-parallel-size {n}"),
            EngineKind::Sglang => format!("python -m sglang.launch_server --model-path {repo} --tp {n}"),
            EngineKind::LlamaCpp => format!(
                "CUDA_VISIBLE_DEVICES={} llama-server ...",
                (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
            ),
            EngineKind::Transformers => {
                let map = crate::estimate::device_map::for_estimate(&Prepared::new(model, t.clone()));
                match map {
                    Some(m) => format!("AutoModelForCausalLM.from_pretrained(\"{repo}\", device_map={})", m.python()),
                    None => format!("AutoModelForCausalLM.from_pretrained(\"{repo}\", device_map=\"auto\")"),
                }
            }
        };
        push(FixKind::MoreGpus, format!("Use {n} × {}", s.gpus[0].name), GivesUp::Money, t, code);
    }
    // A bigger GPU.
    if let Some(g) = solve::smallest_gpu(model, s).filter(|g| g.memory_bytes > s.gpus[0].capacity_bytes) {
        let mut t = s.clone();
        t.gpus = vec![GpuSlot::from_catalog(g); s.gpus.len()];
        push(
            FixKind::BiggerGpu,
            format!("Run on {} × {} ({})", s.gpus.len(), g.name, g.memory_label),
            GivesUp::Money,
            t,
            format!(
                "# rent or use a {} ({} as the driver reports it)",
                g.name,
                crate::units::format_bytes(g.memory_bytes, crate::units::UnitSystem::Binary)
            ),
        );
    }
    let any_fits = out.iter().any(|f| f.fits);
    if any_fits {
        out.retain(|f| f.fits);
    }
    out.sort_by(|a, b| b.fits.cmp(&a.fits).then(a.gives_up.cmp(&b.gives_up)).then(b.saves_bytes.cmp(&a.saves_bytes)));
    out
}

fn weight_code(f: WeightFormat, engine: EngineKind, repo: &str) -> String {
    match (engine, f) {
        (EngineKind::LlamaCpp, WeightFormat::Gguf(t)) => {
            format!("llama-server -m model-{}.gguf ...", t.id().to_uppercase())
        }
        (EngineKind::Vllm, WeightFormat::Fp8 { .. }) => format!("vllm serve {repo} --quantization fp8"),
        (EngineKind::Sglang, WeightFormat::Fp8 { .. }) => {
            format!("python -m sglang.launch_server --model-path {repo} --quantization fp8")
        }
        (EngineKind::Vllm | EngineKind::Sglang, WeightFormat::Bnb4 { .. }) => {
            format!("vllm serve {repo} --quantization bitsandbytes")
        }
        (EngineKind::Vllm | EngineKind::Sglang, WeightFormat::Gptq { .. } | WeightFormat::Awq { .. }) => {
            format!(
                "# serve a {} checkpoint of the model, e.g. vllm serve {repo}-{}",
                f.id(),
                if matches!(f, WeightFormat::Awq { .. }) { "AWQ" } else { "GPTQ-Int4" }
            )
        }
        (_, WeightFormat::Bnb4 { nf4, double_quant }) => format!(
            "from transformers import BitsAndBytesConfig\nquant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"{}\", bnb_4bit_use_double_quant={}, bnb_4bit_compute_dtype=torch.bfloat16)\nmodel = AutoModelForCausalLM.from_pretrained(\"{repo}\", quantization_config=quant, device_map=\"auto\")",
            if nf4 { "nf4" } else { "fp4" },
            if double_quant { "True" } else { "False" }
        ),
        (_, WeightFormat::Int8) => format!(
            "from transformers import BitsAndBytesConfig\nmodel = AutoModelForCausalLM.from_pretrained(\"{repo}\", quantization_config=BitsAndBytesConfig(load_in_8bit=True), device_map=\"auto\")"
        ),
        (_, WeightFormat::Bf16) => {
            format!("model = AutoModelForCausalLM.from_pretrained(\"{repo}\", torch_dtype=torch.bfloat16)")
        }
        (_, WeightFormat::F16) => {
            format!("model = AutoModelForCausalLM.from_pretrained(\"{repo}\", torch_dtype=torch.float16)")
        }
        (_, WeightFormat::Fp8 { .. }) => format!(
            "from transformers import FineGrainedFP8Config\nmodel = AutoModelForCausalLM.from_pretrained(\"{repo}\", quantization_config=FineGrainedFP8Config())"
        ),
        (_, f) => format!("# load a {} checkpoint of {repo}", f.id()),
    }
}
