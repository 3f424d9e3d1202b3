//! Inference engines and the rules each applies to GPU memory. Users do not
//! run "a model"; they run it in an engine, and each engine spends memory its
//! own way:
//!
//! - [`transformers`]: weights, then a cache that grows token by token.
//! - [`vllm`]: pre-allocates `gpu_memory_utilization` × total and turns what
//!   is left after weights and a profiled activation peak into KV blocks.
//! - [`sglang`]: `mem_fraction_static` × total for weights and the KV pool.
//! - [`llamacpp`]: a context pre-allocated for `n_ctx`, partial offload.
//! - [`ollama`]: llama.cpp's `llama-server`, launched with Ollama's defaults.
//!
//! Each engine's module holds everything about it: its knobs and their
//! defaults, their checks, its placement of layers and state dtypes, its
//! budget, refusals and report (with the log lines it would print), the
//! terms and warnings that explain it, and its fixes' [`commands`]. This
//! module implements [`crate::plan::EngineRules`] for [`Engine`], and
//! [`EnginePlan`] answers every question about a plan in its engine, each
//! with one match that lists every engine: a new engine is a module and a
//! variant, and the compiler names each place it must answer.

pub mod commands;
pub mod knobs;
pub mod live;
pub mod llamacpp;
pub mod ollama;
pub mod parallel;
mod run;
pub mod sglang;
pub mod transformers;
pub mod vllm;

pub use run::{EnginePlan, EngineTerms, EngineWarnings};

use serde::{Deserialize, Serialize};

use crate::arch::TextModel;
use crate::catalog::GpuVendor;
use crate::explain::thousands;
use crate::formats::WeightFormat;
use crate::model::Model;
use crate::plan::{self, EngineRules, Placement};
use crate::state::StateRules;

/// What the user plans to run, in one of these engines.
pub type Scenario = plan::Scenario<Engine>;
/// A [`Scenario`] that passed its checks: what a plan takes.
pub type ValidScenario = plan::ValidScenario<Engine>;
/// Why a [`Scenario`] cannot be planned.
pub type ScenarioError = plan::ScenarioError<parallel::SplitError>;
/// The engine-free plan of a scenario in one of these engines.
pub type Plan<'m> = plan::Plan<'m, Engine>;

/// The engine and its knobs.
// llama.cpp's knobs carry its `-ot` rules inline (512 bytes) so that the
// knobs stay `Copy` plain data; boxing them would lose that for a few
// hundred bytes per copy.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum Engine {
    Transformers(transformers::Options),
    Vllm(vllm::Options),
    Sglang(sglang::Options),
    #[serde(rename = "llama.cpp")]
    LlamaCpp(llamacpp::Options),
    Ollama(ollama::Options),
}

impl Default for Engine {
    fn default() -> Self {
        Self::Transformers(transformers::Options::default())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    Transformers,
    Vllm,
    Sglang,
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    Ollama,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown engine `{0}` (transformers, vllm, sglang, llama.cpp, ollama)")]
pub struct UnknownEngine(pub String);

impl EngineKind {
    pub const ALL: &[EngineKind] = &[Self::Transformers, Self::Vllm, Self::Sglang, Self::LlamaCpp, Self::Ollama];

    pub fn id(self) -> &'static str {
        match self {
            Self::Transformers => "transformers",
            Self::Vllm => "vllm",
            Self::Sglang => "sglang",
            Self::LlamaCpp => "llama.cpp",
            Self::Ollama => "ollama",
        }
    }

    pub fn parse(text: &str) -> Result<Self, UnknownEngine> {
        match text.trim().to_ascii_lowercase().as_str() {
            "transformers" | "hf" | "huggingface" => Ok(Self::Transformers),
            "vllm" => Ok(Self::Vllm),
            "sglang" => Ok(Self::Sglang),
            "llama.cpp" | "llamacpp" | "llama-cpp" | "llama_cpp" => Ok(Self::LlamaCpp),
            "ollama" => Ok(Self::Ollama),
            _ => Err(UnknownEngine(text.trim().to_owned())),
        }
    }

    /// The name people write: `vLLM`, `SGLang`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Transformers => "transformers",
            Self::Vllm => "vLLM",
            Self::Sglang => "SGLang",
            Self::LlamaCpp => "llama.cpp",
            Self::Ollama => "Ollama",
        }
    }

    /// The engine as the page's engine choice names it.
    pub fn title(self) -> &'static str {
        match self {
            Self::Transformers => "transformers (generate)",
            Self::Vllm | Self::Sglang | Self::LlamaCpp | Self::Ollama => self.name(),
        }
    }

    /// Whether the engine allocates its whole KV cache when it starts (a
    /// pool or a context), rather than growing it token by token as
    /// transformers' `generate` does.
    pub fn allocates_kv_at_start(self) -> bool {
        match self {
            Self::Transformers => false,
            Self::Vllm | Self::Sglang | Self::LlamaCpp | Self::Ollama => true,
        }
    }

    /// Whether the engine's own terms (named after it: `vLLM KV budget`,
    /// `SGLang max_total_num_tokens`) are the accounting that sizes its KV
    /// pool, so that they explain the pool's figure: vLLM's and SGLang's.
    pub fn own_terms_size_the_pool(self) -> bool {
        match self {
            Self::Vllm | Self::Sglang => true,
            Self::Transformers | Self::LlamaCpp | Self::Ollama => false,
        }
    }

    /// The KV dtype the engine keeps when none is asked for: llama.cpp's
    /// f16 (`cache_type_k`/`cache_type_v`, common/common.h), which Ollama's
    /// llama-server keeps; the others the activation dtype's
    /// ([`Scenario::activation_kv_dtype`]), vLLM FP8 where the checkpoint
    /// names an FP8 KV cache.
    pub fn default_kv_dtype(self, model: &Model, weights: WeightFormat) -> crate::kv::KvDtype {
        match self {
            // vLLM's `auto` takes a checkpoint's FP8 KV scheme: compressed-
            // tensors' `kv_cache_scheme` from 0.15.0 (`Attention.__init__`,
            // absent from 0.14.0's attention/layer.py), ModelOpt's from
            // `resolve_kv_cache_dtype_string` (0.19.0 – 0.25.1).
            Self::Vllm if model.arch.kv_cache_fp8 => crate::kv::KvDtype::Fp8,
            // DeepSeek-V4's `auto` is `fp8_ds_mla` on the backends vLLM picks
            // by default, FlashMLA and SM120's FlashInfer (0.34
            // models/deepseek_v4/attention.py `_resolve_dsv4_kv_cache_dtype`,
            // nvidia/model.py `_select_dsv4_attn_cls`).
            Self::Vllm if model.arch.family == crate::arch::Family::DeepseekV4 => crate::kv::KvDtype::Fp8,
            Self::Transformers | Self::Vllm | Self::Sglang | Self::LlamaCpp | Self::Ollama => {
                match self.keeps_the_activation_dtype() {
                    true => Scenario::activation_kv_dtype(model, weights),
                    false => crate::kv::KvDtype::F16,
                }
            }
        }
    }

    /// Whether the engine's own KV cache is the activation dtype's.
    pub fn keeps_the_activation_dtype(self) -> bool {
        match self {
            Self::LlamaCpp | Self::Ollama => false,
            Self::Transformers | Self::Vllm | Self::Sglang => true,
        }
    }

    /// The commands and settings that apply each fix in this engine.
    pub fn commands(self) -> &'static commands::Commands {
        match self {
            Self::Transformers => &transformers::COMMANDS,
            Self::Vllm => &vllm::COMMANDS,
            Self::Sglang => &sglang::COMMANDS,
            Self::LlamaCpp => &llamacpp::COMMANDS,
            Self::Ollama => &ollama::COMMANDS,
        }
    }

    /// Whether the engine splits tensors over GPUs (`--tensor-parallel-size`,
    /// `--tp`, transformers' `tp_plan`). llama.cpp splits whole layers
    /// (`--split-mode layer`; `row` splits matrices on one main GPU, not
    /// ranks) and Ollama runs llama.cpp: a tensor-parallel degree means
    /// nothing there (`llamacpp::check_knobs`, `ollama::check_knobs` refuse it
    /// in their words, a link drops it with a notice).
    pub fn splits_tensors(self) -> bool {
        match self {
            Self::Transformers | Self::Vllm | Self::Sglang => true,
            Self::LlamaCpp | Self::Ollama => false,
        }
    }

    /// Whether the engine runs on this maker's GPUs: vLLM and SGLang need
    /// CUDA or ROCm (neither has a Metal backend: vllm/platforms/__init__.py
    /// resolves CUDA, ROCm, TPU, XPU, CPU; SGLang's is CUDA, ROCm, NPU, CPU),
    /// and the transformers model is PyTorch's CUDA caching allocator, not
    /// its MPS one. llama.cpp and Ollama run on Metal (ggml-metal).
    pub fn runs_on(self, vendor: GpuVendor) -> bool {
        match self {
            Self::Transformers | Self::Vllm | Self::Sglang => vendor.runs_cuda_or_rocm(),
            Self::LlamaCpp | Self::Ollama => true,
        }
    }

    /// Whether the engine loads weights in this format ([`Self::refuses`]).
    pub fn runs(self, format: WeightFormat) -> bool {
        self.refuses(format).is_none()
    }

    /// Why the engine does not hold weights in `format`, in its own terms;
    /// `None` when it loads them.
    ///
    /// llama.cpp (and Ollama, which runs it) loads every tensor type a GGUF
    /// file can hold: `enum ggml_type` in ggml/include/ggml.h (llama.cpp as
    /// vendored by llama-cpp-python 0.3.36) has F32, F16, BF16, the k- and
    /// i-quants, `GGML_TYPE_MXFP4 = 39` (gpt-oss's experts, since b6096) and
    /// `GGML_TYPE_NVFP4 = 40` (`crate::checkpoint::ggml` holds the same
    /// table). It has no FP8, bitsandbytes, GPTQ or AWQ type: such a
    /// checkpoint reaches llama.cpp only through convert_hf_to_gguf.py as
    /// another format. vLLM and SGLang serve 16-bit, FP8, GPTQ/AWQ,
    /// bitsandbytes 4-bit, MXFP4 and NVFP4 checkpoints (vLLM's
    /// `QUANTIZATION_METHODS`, model_executor/layers/quantization/__init__.py);
    /// transformers reads a GGUF file by dequantising it (`gguf_file=`,
    /// integrations/ggml.py), so its weights are never a GGUF mix in memory.
    pub fn refuses(self, format: WeightFormat) -> Option<&'static str> {
        use WeightFormat as F;
        match (self, format) {
            (Self::LlamaCpp | Self::Ollama, F::F32 | F::Bf16 | F::F16 | F::Gguf(_) | F::Mxfp4 { .. } | F::Nvfp4) => {
                None
            }
            (Self::LlamaCpp | Self::Ollama, F::Fp8 { .. }) => Some("GGUF has no FP8 type: convert it to BF16 or Q8_0"),
            (Self::LlamaCpp | Self::Ollama, F::Int8 | F::Bnb4 { .. } | F::Gptq { .. } | F::Awq { .. }) => {
                Some("GGUF has no bitsandbytes, GPTQ or AWQ type: use a GGUF quant (q8_0, q4_k_m)")
            }
            (Self::Transformers, F::Gguf(_)) => Some("it dequantises a GGUF file as it loads it"),
            // vLLM's GGUF loader is experimental (docs: quantization/gguf) and
            // SGLang's follows it: GGUF is planned where it is native.
            (Self::Vllm | Self::Sglang, F::Gguf(_)) => Some("GGUF is llama.cpp's format"),
            // The FlashAttention and FlashInfer backends take fp16/bf16 only
            // (`supported_dtypes`, v1/attention/backends/flash_attn.py).
            (Self::Vllm | Self::Sglang, F::F32) => Some("its attention kernels take 16-bit"),
            // `--quantization bitsandbytes` quantises in flight to 4 bits.
            (Self::Vllm | Self::Sglang, F::Int8) => Some("its bitsandbytes loading is 4-bit"),
            (Self::Vllm | Self::Sglang, _) | (Self::Transformers, _) => None,
        }
    }

    /// The first engine that loads `format` (llama.cpp for GGUF).
    pub fn runner_of(format: WeightFormat) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.runs(format))
    }

    /// The engine with its default knobs.
    pub fn with_defaults(self) -> Engine {
        match self {
            Self::Transformers => Engine::Transformers(Default::default()),
            Self::Vllm => Engine::Vllm(Default::default()),
            Self::Sglang => Engine::Sglang(Default::default()),
            Self::LlamaCpp => Engine::LlamaCpp(Default::default()),
            Self::Ollama => Engine::Ollama(Default::default()),
        }
    }
}

impl Engine {
    pub fn kind(&self) -> EngineKind {
        match self {
            Self::Transformers(_) => EngineKind::Transformers,
            Self::Vllm(_) => EngineKind::Vllm,
            Self::Sglang(_) => EngineKind::Sglang,
            Self::LlamaCpp(_) => EngineKind::LlamaCpp,
            Self::Ollama(_) => EngineKind::Ollama,
        }
    }

    /// Why the engine, by its rule set, does not hold weights in `format`:
    /// [`EngineKind::refuses`], then what a release removed (vLLM 0.28's
    /// bitsandbytes, [`vllm::Version::loads_bitsandbytes`]).
    pub fn refuses(&self, format: WeightFormat) -> Option<&'static str> {
        self.kind().refuses(format).or(match (self, format) {
            (Self::Vllm(o), WeightFormat::Bnb4 { .. }) if !o.version.loads_bitsandbytes() => {
                Some("vLLM 0.28 removed its bitsandbytes loading")
            }
            (Self::Transformers(_) | Self::Vllm(_) | Self::Sglang(_) | Self::LlamaCpp(_) | Self::Ollama(_), _) => None,
        })
    }

    /// The lowest compute capability (`GpuSlot::compute_capability`, 8.0 →
    /// 80) on which the engine loads `format`, by its rule set (vLLM's
    /// release moves its fp8 minimum; SGLang's is 80 in every release);
    /// `None` where it sets none of its own.
    pub fn min_capability(&self, format: WeightFormat) -> Option<u32> {
        match (self, format) {
            (Self::Vllm(o), WeightFormat::Fp8 { .. }) => Some(o.version.fp8_min_capability()),
            (Self::Sglang(_), WeightFormat::Fp8 { .. }) => Some(sglang::FP8_MIN_CAPABILITY),
            // transformers' and llama.cpp's own checks are not read here;
            // llama.cpp and Ollama refuse fp8 outright (`refuses`).
            (Self::Transformers(_) | Self::Vllm(_) | Self::Sglang(_) | Self::LlamaCpp(_) | Self::Ollama(_), _) => None,
        }
    }
}

impl Engine {
    /// The context the person gave the engine (`--max-model-len`,
    /// `--context-length`, `num_ctx`), not one it defaults to.
    pub fn asked_context(&self) -> Option<u64> {
        match self {
            Engine::Vllm(o) => o.max_model_len,
            Engine::Sglang(o) => o.context_length,
            Engine::Ollama(o) => o.num_ctx,
            Engine::LlamaCpp(_) | Engine::Transformers(_) => None,
        }
    }

    /// The knobs that store the KV cache as `kv`: llama.cpp's and Ollama's
    /// own cache types give way to the plan's dtype, and a quantised cache
    /// turns flash attention on, without which llama.cpp refuses a
    /// quantised V cache (llama-context.cpp, "quantized V cache requires
    /// flash_attn"; `llamacpp::warnings`).
    /// Whether flash attention is off where the engine has the switch
    /// (llama.cpp's `-fa`, Ollama's `OLLAMA_FLASH_ATTENTION`).
    pub fn flash_attention_off(&self) -> bool {
        match self {
            Engine::LlamaCpp(o) => o.flash_attention == llamacpp::FlashAttention::Off,
            Engine::Ollama(o) => o.flash_attention == Some(llamacpp::FlashAttention::Off),
            Engine::Vllm(_) | Engine::Sglang(_) | Engine::Transformers(_) => false,
        }
    }

    pub fn with_kv_cache(self, kv: crate::kv::KvDtype) -> Self {
        use crate::kv::KvDtype as K;
        let quantised = matches!(kv, K::Q8_0 | K::Q4_0);
        let mut e = self;
        match &mut e {
            Engine::LlamaCpp(o) => {
                (o.cache_type_k, o.cache_type_v) = (None, None);
                if quantised {
                    o.flash_attention = llamacpp::FlashAttention::On;
                }
            }
            Engine::Ollama(o) => {
                o.kv_cache_type = None;
                if quantised && o.flash_attention == Some(llamacpp::FlashAttention::Off) {
                    o.flash_attention = Some(llamacpp::FlashAttention::On);
                }
            }
            Engine::Vllm(_) | Engine::Sglang(_) | Engine::Transformers(_) => {}
        }
        e
    }

    /// The knobs that admit at most `n` sequences at once, where the plan
    /// models the engine's own cap, never above a lower one it has: vLLM's
    /// `--max-num-seqs` (per data-parallel replica, `vllm::mod` multiplies
    /// it by the replicas), Ollama's `OLLAMA_NUM_PARALLEL`, llama.cpp's
    /// `-np` where the plan sets it. SGLang's fix says its flag beside the
    /// launch; transformers' batches are the script's.
    pub fn capped_sequences(self, n: u64) -> Self {
        let n = n.max(1);
        let mut e = self;
        match &mut e {
            Engine::Vllm(o) => {
                let per_replica = n.div_ceil(o.data_parallel_size.max(1));
                o.max_num_seqs = Some(o.max_num_seqs.map_or(per_replica, |m| m.min(per_replica)));
            }
            Engine::Ollama(o) => o.num_parallel = o.num_parallel.min(n),
            Engine::LlamaCpp(o) => o.parallel = o.parallel.map(|p| p.min(n)),
            Engine::Sglang(_) | Engine::Transformers(_) => {}
        }
        e
    }

    /// The knobs for sequences of `len` tokens: engines with a configured
    /// context follow it.
    pub fn for_length(self, len: u64) -> Self {
        let mut e = self;
        match &mut e {
            Engine::Vllm(o) => o.max_model_len = Some(len.max(1)),
            Engine::Sglang(o) => o.context_length = Some(len.max(1)),
            Engine::LlamaCpp(o) => o.n_ctx = None,
            Engine::Ollama(o) => o.num_ctx = Some(len.max(1)),
            Engine::Transformers(_) => {}
        }
        e
    }

    /// A setting the plan's engine release does not have, in its words: the
    /// plan is estimated and launched as the release runs it, and its
    /// verdict says so first (vLLM's, `vllm::setting_refusal`).
    pub fn setting_refusal(&self) -> Option<String> {
        match self {
            Engine::Vllm(o) => vllm::setting_refusal(*o),
            Engine::Transformers(_) | Engine::Sglang(_) | Engine::LlamaCpp(_) | Engine::Ollama(_) => None,
        }
    }

    /// Why the engine keeps no KV cache of `kv` under `weights`, in its
    /// words; `None` when it keeps one. Like a weight format the engine does
    /// not load ([`Engine::refuses`]), the plan is then estimated as if it
    /// did (Ollama's, as the f16 llama-server runs instead) and its verdict says so
    /// first: a link made before this rule still opens as the plan it was.
    /// Each engine's cache types:
    /// - vLLM's `CacheDType` (0.34 config/cache.py): `auto` (the weights'
    ///   16- or 32-bit type), `float16`, `bfloat16`, `fp8`, and
    ///   `int8_per_token_head` from 0.20 (absent from the 0.19.0 wheel).
    /// - SGLang's `--kv-cache-dtype` choices (0.5.23, the fixture
    ///   `sglang-0.5.23-choices.txt`): `auto`, `bf16`, `fp8_e4m3`, `fp8_e5m2`
    ///   and 4-bit floats; fp16 only as `auto` under 16-bit weights.
    /// - llama.cpp's `-ctk`/`-ctv` (`kv_cache_type_from_str`, common/arg.cpp):
    ///   f32, f16, bf16, q8_0, q4_0 and more.
    /// - Ollama's `OLLAMA_KV_CACHE_TYPE`, passed to llama-server as it is
    ///   from v0.30.0 (llm/server.go, v0.33.0-rc2): llama.cpp's types; none
    ///   set, llama-server's f16.
    ///
    /// transformers is not checked here: its quantised caches (quanto, HQQ)
    /// are what the page's int8 and int4 stand for.
    pub fn kv_refusal(&self, kv: crate::kv::KvDtype, weights: WeightFormat) -> Option<String> {
        use crate::kv::KvDtype as K;
        // A 32-bit cache is the serving engines' `auto` under 32-bit weights.
        let f32_weights = weights == WeightFormat::F32;
        let kinds = match self {
            Engine::Transformers(_) => return None,
            Engine::Vllm(o) => match kv {
                K::Bf16 | K::F16 | K::Fp8 => return None,
                K::F32 if f32_weights => return None,
                K::Int8 if o.version.int8_kv_cache() => return None,
                K::F32 | K::Int8 | K::Int4 | K::Q8_0 | K::Q4_0 => "bf16, fp16, fp8, and int8 from 0.20",
            },
            Engine::Sglang(_) => match kv {
                K::Bf16 | K::F16 | K::Fp8 => return None,
                K::F32 if f32_weights => return None,
                K::F32 | K::Int8 | K::Int4 | K::Q8_0 | K::Q4_0 => "bf16 and fp8",
            },
            Engine::LlamaCpp(_) => match kv {
                K::F32 | K::F16 | K::Bf16 | K::Q8_0 | K::Q4_0 => return None,
                K::Fp8 | K::Int8 | K::Int4 => "fp32, fp16, bf16, q8_0 and q4_0",
            },
            // Passed to llama-server as `OLLAMA_KV_CACHE_TYPE` (`ollama::cache_type`).
            Engine::Ollama(_) => match kv {
                K::F32 | K::F16 | K::Bf16 | K::Q8_0 | K::Q4_0 => return None,
                K::Fp8 | K::Int8 | K::Int4 => {
                    return Some(format!(
                        "Ollama keeps no {} KV cache (llama-server's: fp32, fp16, bf16, q8_0 and q4_0): it runs fp16",
                        kv.id()
                    ));
                }
            },
        };
        Some(format!(
            "{} keeps no {} KV cache (its KV dtypes: {kinds}), estimated as if it did",
            self.kind().name(),
            kv.id()
        ))
    }
}

/// What an engine itself reports, in its own terms.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "engine", rename_all = "snake_case")]
pub enum EngineReport {
    Vllm(vllm::Report),
    Sglang(sglang::Report),
    #[serde(rename = "llama.cpp")]
    LlamaCpp(llamacpp::Report),
}

/// What an engine's own solver answers (llama.cpp's largest `-ngl`, its
/// smallest `--n-cpu-moe`), for `crate::solve` to report.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineAnswer {
    pub value: Option<u64>,
    /// A command or choice, when the answer is one.
    pub choice: Option<String>,
    pub found: bool,
    /// The answer in a sentence, in the engine's words.
    pub explanation: String,
}

impl EngineAnswer {
    pub(crate) fn none(explanation: &str) -> Self {
        Self { value: None, choice: None, found: false, explanation: explanation.into() }
    }
}

pub use llamacpp::{cpu_moe_answer, gpu_layers_answer};

/// One figure of an engine's own report, as the page and the CLI show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRow {
    /// A stable id (the page's `data-testid`).
    pub id: &'static str,
    /// The engine's own name for it (`# GPU blocks`, `max_total_num_tokens`).
    pub label: &'static str,
    pub text: String,
    /// The exact value (as the CLI's JSON prints it).
    pub raw: String,
}

impl ReportRow {
    pub(crate) fn new(id: &'static str, label: &'static str, text: String, raw: impl ToString) -> Self {
        Self { id, label, text, raw: raw.to_string() }
    }
}

impl EngineReport {
    /// The engine's own figures, in its words.
    pub fn rows(&self, units: crate::units::UnitSystem) -> Vec<ReportRow> {
        match self {
            Self::Vllm(r) => r.rows(),
            Self::Sglang(r) => r.rows(),
            Self::LlamaCpp(r) => r.rows(units),
        }
    }

    /// The lines the engine would log.
    pub fn log_lines(&self) -> &[String] {
        match self {
            Self::Vllm(r) => &r.log_lines,
            Self::Sglang(r) => &r.log_lines,
            Self::LlamaCpp(r) => &r.log_lines,
        }
    }

    /// What the engine would say is wrong: its start-up error, or llama.cpp
    /// leaving less than `--fit`'s margin free.
    pub fn problem(&self, units: crate::units::UnitSystem) -> Option<String> {
        match self {
            Self::Vllm(r) => r.startup_error.clone(),
            Self::Sglang(r) => r.startup_error.clone(),
            Self::LlamaCpp(r) => (!r.keeps_fit_margin).then(|| {
                format!(
                    "Less than the {} llama.cpp's --fit keeps free is left on some GPU.",
                    crate::units::format_bytes(r.fit_margin_bytes, units)
                )
            }),
        }
    }

    /// vLLM's three start-up figures (`# GPU blocks`, `GPU KV cache size`,
    /// `Maximum concurrency`), which the estimate also carries at its top.
    pub fn vllm_figures(&self) -> (Option<u64>, Option<u64>, Option<f64>) {
        match self {
            Self::Vllm(r) => (Some(r.num_gpu_blocks), Some(r.kv_cache_tokens), Some(r.max_concurrency)),
            Self::Sglang(_) | Self::LlamaCpp(_) => (None, None, None),
        }
    }

    /// Whether the engine reserves its memory up front as a pool, whatever
    /// the workload (so a verdict says "reserves", not "uses").
    pub fn reserves_a_pool(&self) -> bool {
        match self {
            Self::Vllm(_) | Self::Sglang(_) => true,
            Self::LlamaCpp(_) => false,
        }
    }

    /// Whether the engine's own defaults change the plan before it loads
    /// (llama.cpp's `--fit` moving layers or experts to host memory).
    pub fn fit_moves(&self) -> bool {
        match self {
            Self::LlamaCpp(r) => r.fit_moves,
            Self::Vllm(_) | Self::Sglang(_) => false,
        }
    }

    /// The context a longer request is cut to (Ollama's `num_ctx`).
    pub fn prompt_cut_to(&self) -> Option<u64> {
        match self {
            Self::LlamaCpp(r) => r.prompt_cut_to,
            Self::Vllm(_) | Self::Sglang(_) => None,
        }
    }

    /// The configured context a refusal is about, and whether it was given
    /// (`false`: the engine's default, the model's own length).
    pub fn configured_context(&self) -> Option<(u64, bool)> {
        match self {
            Self::Vllm(r) => Some((r.max_model_len, r.max_model_len_set)),
            Self::Sglang(_) | Self::LlamaCpp(_) => None,
        }
    }

    /// The engine's own start-up error, when it would refuse to start.
    pub fn startup_error(&self) -> Option<&str> {
        match self {
            Self::Vllm(r) => r.startup_error.as_deref(),
            Self::Sglang(r) => r.startup_error.as_deref(),
            Self::LlamaCpp(_) => None,
        }
    }

    /// The flag that sets the engine's context to `len` tokens.
    pub fn context_flag(&self, len: u64) -> Option<String> {
        match self {
            Self::Vllm(_) => Some(format!("--max-model-len {len}")),
            Self::Sglang(_) => Some(format!("--context-length {len}")),
            Self::LlamaCpp(_) => None,
        }
    }

    /// The engine's name and its reason for refusing to start, for requests
    /// of `sequence_tokens` tokens.
    pub fn refusal(&self, sequence_tokens: u64) -> (&'static str, String) {
        match self {
            Self::Vllm(r) => (
                "vLLM",
                r.startup_error.clone().unwrap_or_else(|| {
                    format!(
                        "requests of {} tokens exceed max_model_len {}",
                        thousands(sequence_tokens),
                        thousands(r.max_model_len)
                    )
                }),
            ),
            Self::Sglang(r) => (
                "SGLang",
                r.startup_error
                    .clone()
                    .unwrap_or_else(|| format!("its pool holds only {} tokens", thousands(r.max_total_num_tokens))),
            ),
            // llama.cpp fails at load instead (`DoesNotFitAtLoad`).
            Self::LlamaCpp(_) => ("The engine", String::new()),
        }
    }
}

/// The llama.cpp flags a plan of llama.cpp or Ollama runs with (the
/// defaults for another engine). Ollama is llama.cpp with a launch policy:
/// it depends on `llamacpp`, never the reverse, so the choice is made here.
pub(crate) fn llamacpp_flags(p: &Plan) -> llamacpp::Options {
    match p.scenario.engine {
        Engine::LlamaCpp(o) => o,
        Engine::Ollama(o) => ollama::launch(p, o),
        Engine::Transformers(_) | Engine::Vllm(_) | Engine::Sglang(_) => llamacpp::Options::default(),
    }
}

/// The warning for GGUF weights in an engine other than llama.cpp.
fn gguf_warning(p: &Plan) -> Option<String> {
    let s = &p.scenario;
    matches!(s.weights, WeightFormat::Gguf(_))
        .then(|| format!("GGUF weights are run by llama.cpp; this plan models {}", s.engine.kind().id()))
}

impl EngineRules for Engine {
    type Refusal = parallel::SplitError;

    fn check_knobs(s: &Scenario) -> Result<(), String> {
        let kind = s.engine.kind();
        if let Some(g) = s.gpus.iter().find(|g| g.vendor.is_some_and(|v| !kind.runs_on(v))) {
            // Short: the page's first load carries it (docs/measurements.md).
            return Err(format!(
                "{} needs CUDA or ROCm; the {} runs Metal: plan it in llama.cpp or Ollama",
                kind.name(),
                g.name
            ));
        }
        match s.engine {
            Engine::Transformers(_) => Ok(()),
            Engine::Vllm(o) => vllm::check_knobs(o),
            Engine::Sglang(o) => sglang::check_knobs(o, s.tp),
            Engine::LlamaCpp(o) => llamacpp::check_knobs(o, s.tp, s.gpus.len()),
            Engine::Ollama(o) => ollama::check_knobs(o, s.tp),
        }
    }

    fn check_split(s: &Scenario, text: &TextModel) -> Result<(), parallel::SplitError> {
        parallel::check(s, text)
    }

    fn state_rules(&self, model: &Model, bytes_per_element: u64) -> StateRules {
        match self {
            Engine::Transformers(_) => transformers::state_rules(model, bytes_per_element),
            Engine::Vllm(o) => vllm::state_rules(model, bytes_per_element, vllm::draft_tokens(model, *o)),
            // SGLang keeps the SSM state in float32 unless told otherwise
            // (0.5.23 configs/mamba_utils.py `mamba2_state_dtype`: default
            // "float32", then the config's `mamba_ssm_dtype`, then
            // SGLANG_MAMBA_SSM_DTYPE; server_args `mamba_ssm_dtype='float32'`
            // in the 0.5.4 and 0.5.7 logs). A real 0.5.x log of
            // granite-4.0-h-micro: `ssm_state size: 2.74GB` for 38 + 1 slots
            // of 36 Mamba-2 layers of 64 × 64 × 128 float32 (2 MiB each).
            Engine::Sglang(_) => StateRules { ssm_bytes: 4, ..vllm::state_rules(model, bytes_per_element, 0) },
            Engine::LlamaCpp(_) | Engine::Ollama(_) => llamacpp::STATE_RULES,
        }
    }

    fn place(p: &Plan) -> Placement {
        match p.scenario.engine {
            Engine::Transformers(_) => transformers::place(p),
            // Each one's `get_pp_indices`: even by count, the remainder placed its way.
            Engine::Vllm(_) => Placement::on_gpu(vllm::stage_ranges(p.kv_layers.len(), p.scenario.stages())),
            Engine::Sglang(_) => Placement::on_gpu(sglang::stage_ranges(p.kv_layers.len(), p.scenario.stages())),
            Engine::LlamaCpp(_) | Engine::Ollama(_) => llamacpp::place(p, llamacpp_flags(p)),
        }
    }

    fn replicas(&self) -> u64 {
        match self {
            Engine::Vllm(o) => o.data_parallel_size.max(1),
            Engine::Sglang(o) => o.replicas(),
            Engine::Transformers(_) | Engine::LlamaCpp(_) | Engine::Ollama(_) => 1,
        }
    }

    fn sharding(&self, tp: u64) -> plan::Sharding {
        let tensor_parallel = plan::Sharding::tensor_parallel(tp);
        match self {
            Engine::Vllm(o) => plan::Sharding { experts: o.expert_split(tp), ..tensor_parallel },
            Engine::Sglang(o) => o.sharding(tp),
            Engine::Transformers(_) | Engine::LlamaCpp(_) | Engine::Ollama(_) => tensor_parallel,
        }
    }
}

/// A fraction knob in `(0, 1]`.
fn fraction(name: &str, v: Option<f64>) -> Result<(), String> {
    match v {
        Some(f) if !(f > 0.0 && f <= 1.0) => {
            Err(format!("{name} must be in (0, 1], got {}", crate::units::shortest(f)))
        }
        _ => Ok(()),
    }
}
