//! A plan as one engine runs it ([`EnginePlan`]): the engine-free
//! [`Plan`] plus what the engine computes once (vLLM's budget), and every
//! question about the plan answered by the engine's own module — one
//! exhaustive match per question, so a new engine is listed by the compiler
//! wherever it needs an answer.

use crate::explain::{Basis, Term};

use crate::model::Model;
use crate::plan::{GpuBudget, GpuPeak, MAX_CONCURRENCY, Search, Verdict, largest};

use super::{Engine, EngineReport, Plan, Scenario, ValidScenario, llamacpp, ollama, sglang, transformers, vllm};

/// What the engine computed once for the plan, with its knobs.
// llama.cpp's knobs are large (its `-ot` rules inline): see `Engine`.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
enum Ready {
    Transformers(transformers::Options),
    Vllm(vllm::Options, vllm::Budget),
    Sglang(sglang::Options),
    LlamaCpp(llamacpp::Options, llamacpp::Devices),
}

/// A plan in its engine: the question every front end, solver and sweep asks.
#[derive(Debug, Clone)]
pub struct EnginePlan<'m> {
    pub plan: Plan<'m>,
    ready: Ready,
}

impl<'m> std::ops::Deref for EnginePlan<'m> {
    type Target = Plan<'m>;

    fn deref(&self) -> &Plan<'m> {
        &self.plan
    }
}

/// What an engine says about the figures it decides, for the estimate's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineTerms {
    /// How the KV cache in GPU memory is sized, and on what basis.
    pub kv_cache: (String, Basis),
    /// How the engine holds recurrent state.
    pub state: &'static str,
    pub activations: String,
    /// What the overhead holds beyond the CUDA context.
    pub overhead: String,
    /// The engine's own figures (vLLM's blocks, SGLang's pool, …).
    pub own: Vec<Term>,
}

/// What an engine warns about, before and after the warnings every engine shares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineWarnings {
    /// About the set-up (formats it does not run, how it splits layers).
    pub setup: Vec<String>,
    /// About the verdict (requests it queues, margins it keeps).
    pub fit: Vec<String>,
}

impl<'m> EnginePlan<'m> {
    pub fn new(model: &'m Model, scenario: ValidScenario) -> Self {
        Self::build(model, scenario, None)
    }

    /// [`EnginePlan::new`] with llama.cpp's tensors built once for the
    /// many plans of one model and format a solver tries (issue 39); a plan
    /// of another model or format builds its own.
    pub(crate) fn with_tensors(scenario: ValidScenario, tensors: &llamacpp::Tensors<'m>) -> Self {
        Self::build(tensors.model(), scenario, Some(tensors))
    }

    fn build(model: &'m Model, scenario: ValidScenario, tensors: Option<&llamacpp::Tensors<'m>>) -> Self {
        let plan = match tensors.and_then(|t| t.weights_for(&scenario)) {
            Some(weights) => Plan::with_weights(model, scenario, weights),
            None => Plan::new(model, scenario),
        };
        let ready = match plan.scenario.engine {
            Engine::Transformers(o) => Ready::Transformers(o),
            Engine::Vllm(o) => Ready::Vllm(o, vllm::budget_for(&plan, o)),
            Engine::Sglang(o) => Ready::Sglang(o),
            // Ollama runs llama.cpp with the flags it launches.
            Engine::LlamaCpp(_) | Engine::Ollama(_) => {
                let o = super::llamacpp_flags(&plan);
                let d = llamacpp::devices(&plan, o, tensors);
                Ready::LlamaCpp(o, d)
            }
        };
        Self { plan, ready }
    }

    /// The llama.cpp settings the plan runs with: its own, or those Ollama
    /// launches `llama-server` with (`None` for the other engines).
    pub fn llamacpp_options(&self) -> Option<llamacpp::Options> {
        match &self.ready {
            Ready::LlamaCpp(o, _) => Some(*o),
            Ready::Transformers(_) | Ready::Vllm(..) | Ready::Sglang(_) => None,
        }
    }

    /// The command an engine that launches another starts for this plan:
    /// Ollama's `llama-server` line, every flag it passes (`None` for an
    /// engine that is its own server).
    pub fn launched(&self) -> Option<String> {
        match self.plan.scenario.engine {
            Engine::Ollama(_) => {
                let o = self.llamacpp_options()?;
                let s = Scenario { engine: Engine::LlamaCpp(o), ..(*self.plan.scenario).clone() };
                Some(llamacpp::server_command(self.plan.model, &s))
            }
            Engine::Transformers(_) | Engine::Vllm(_) | Engine::Sglang(_) | Engine::LlamaCpp(_) => None,
        }
    }

    /// Peak budget of GPU `g` with `batch` sequences of the scenario's length.
    pub fn peak(&self, g: usize, batch: u64) -> GpuBudget {
        let p = &self.plan;
        match &self.ready {
            Ready::Transformers(o) => transformers::peak(p, *o, g, batch),
            Ready::Vllm(_, b) => vllm::parts(p, b, g, batch),
            Ready::Sglang(o) => sglang::parts(p, *o, g),
            Ready::LlamaCpp(o, d) => llamacpp::parts(p, *o, d, g, batch),
        }
    }

    /// Every GPU at its peak with the scenario's concurrency.
    pub fn peaks(&self) -> Vec<GpuPeak> {
        let s = &self.plan.scenario;
        (0..s.gpus.len())
            .map(|g| GpuPeak::new(g, &s.gpus[g], self.stage_range(self.stage(g)), self.peak(g, s.concurrency)))
            .collect()
    }

    /// Whether `batch` sequences of `prompt` + `new` tokens fit.
    pub fn fits_sequences(&self, prompt: u64, new: u64, batch: u64) -> bool {
        let p = &self.plan;
        let seq = prompt.saturating_add(new);
        match &self.ready {
            Ready::Transformers(o) => transformers::fits(p, *o, prompt, new, batch),
            Ready::Vllm(_, b) => vllm::fits(p, b, seq, batch),
            Ready::Sglang(o) => sglang::fits(p, *o, seq, batch),
            Ready::LlamaCpp(o, d) => llamacpp::fits(p, *o, d, self.request_context().unwrap_or(seq), batch),
        }
    }

    /// Whether `batch` sequences of the scenario's length fit.
    pub fn fits_with(&self, batch: u64) -> bool {
        self.fits_sequences(self.scenario.prompt_tokens, self.scenario.max_new_tokens, batch)
    }

    fn verdict_with(&self, search: Search) -> Verdict {
        let p = &self.plan;
        match &self.ready {
            Ready::Transformers(o) => transformers::verdict(p, *o, search),
            Ready::Vllm(o, b) => vllm::verdict(p, *o, b, search),
            Ready::Sglang(o) => sglang::verdict(p, *o),
            Ready::LlamaCpp(o, d) => llamacpp::verdict(p, *o, d, search),
        }
    }

    /// Whether llama.cpp (Ollama's too) loads the plan, on the devices
    /// computed once in [`EnginePlan::new`]; `None` in another engine.
    pub(crate) fn llamacpp_loads(&self) -> Option<bool> {
        match &self.ready {
            Ready::LlamaCpp(o, d) => Some(llamacpp::loads(&self.plan, *o, d)),
            Ready::Transformers(_) | Ready::Vllm(..) | Ready::Sglang(_) => None,
        }
    }

    /// The verdict for the scenario's own concurrency.
    pub fn verdict(&self) -> Verdict {
        self.verdict_with(Search::Run)
    }

    /// The verdict without its searches: `Fits { max_concurrency }` carries
    /// the scenario's own concurrency (a lower bound) and vLLM's refusal a
    /// `largest_context` of 0. For sweeps that only need "fits, and if not
    /// where": a chart cell costs one check instead of a search.
    pub fn verdict_without_searches(&self) -> Verdict {
        self.verdict_with(Search::Skip)
    }

    /// The context the engine is configured for, when it reserves for one
    /// (vLLM's `max_model_len`, SGLang's `context_length`, given or defaulted).
    pub fn configured_context(&self) -> Option<u64> {
        let p = &self.plan;
        match &self.ready {
            Ready::Vllm(o, _) => Some(vllm::default_max_model_len(p, *o)),
            Ready::Sglang(o) => Some(sglang::context_length(p, *o)),
            Ready::LlamaCpp(..) => self.request_context(),
            Ready::Transformers(_) => None,
        }
    }

    /// The context every request gets whatever its length: Ollama's
    /// `num_ctx` (its `-c` over its slots); `None` for the other engines.
    fn request_context(&self) -> Option<u64> {
        let p = &self.plan;
        match (&self.ready, p.scenario.engine) {
            (Ready::LlamaCpp(o, _), Engine::Ollama(_)) => Some(llamacpp::n_ctx(p, *o) / llamacpp::slots(p, *o)),
            (
                _,
                Engine::Transformers(_) | Engine::Vllm(_) | Engine::Sglang(_) | Engine::LlamaCpp(_) | Engine::Ollama(_),
            ) => None,
        }
    }

    /// The most sequences of the scenario's length that fit.
    pub fn max_concurrency(&self) -> u64 {
        self.max_concurrency_at(self.scenario.prompt_tokens, self.scenario.max_new_tokens)
    }

    /// The most sequences of `prompt` + `new` tokens that fit.
    pub fn max_concurrency_at(&self, prompt: u64, new: u64) -> u64 {
        let p = &self.plan;
        let seq = prompt.saturating_add(new);
        let search = || largest(MAX_CONCURRENCY, |b| self.fits_sequences(prompt, new, b));
        match &self.ready {
            // Pre-allocated pools answer directly.
            Ready::Vllm(_, b) => vllm::max_concurrency(p, b, seq),
            Ready::Sglang(o) => sglang::max_concurrency(p, *o, seq),
            Ready::Transformers(_) | Ready::LlamaCpp(..) => search(),
        }
    }

    /// The engine's own figures and its words about them; `verdict` is the
    /// plan's, already computed.
    pub fn explain(&self, verdict: Verdict) -> (Option<EngineReport>, EngineTerms) {
        let p = &self.plan;
        let demand = p.kv_demand_bytes();
        match &self.ready {
            Ready::Transformers(_) => (None, transformers::terms(p)),
            Ready::Vllm(o, b) => {
                let r = vllm::report(p, *o, b, verdict);
                let terms = vllm::terms(p, &r, demand);
                (Some(EngineReport::Vllm(r)), terms)
            }
            Ready::Sglang(o) => {
                let r = sglang::report(p, *o);
                let terms = sglang::terms(p, &r, demand);
                (Some(EngineReport::Sglang(r)), terms)
            }
            Ready::LlamaCpp(o, d) => {
                let mut r = llamacpp::report(p, *o, d);
                // Ollama cuts a request longer than its `num_ctx` (the default by the GPUs' memory).
                if let Engine::Ollama(_) = p.scenario.engine {
                    r.prompt_cut_to = Some(r.n_ctx_per_slot).filter(|&n| p.scenario.sequence_tokens() > n);
                }
                let terms = llamacpp::terms(p, *o, &r);
                (Some(EngineReport::LlamaCpp(r)), terms)
            }
        }
    }

    /// Layer-wise splits as a module → GPU map, where the engine takes one.
    pub fn device_map(&self) -> Option<transformers::DeviceMap> {
        match &self.ready {
            Ready::Transformers(_) => transformers::device_map::for_plan(&self.plan),
            Ready::Vllm(..) | Ready::Sglang(_) | Ready::LlamaCpp(..) => None,
        }
    }

    /// How far the plan is from fitting on its tightest GPU: the bytes it
    /// needs minus the bytes the engine may use there (signed: negative when
    /// it fits).
    ///
    /// "Needs" is what the engine allocates (transformers, llama.cpp), or for
    /// engines that pre-allocate a fixed share (vLLM, SGLang) what the
    /// requested work needs: weights, activations, overhead and the KV cache
    /// of the sequences at their length. "May use" is the capacity, or the
    /// share the engine takes of it (`gpu_memory_utilization`,
    /// `mem_fraction_static`) plus the overhead it keeps outside that share.
    pub fn gap_bytes(&self) -> i128 {
        let p = &self.plan;
        let s = &p.scenario;
        (0..s.gpus.len())
            .map(|g| {
                let parts = self.peak(g, s.concurrency);
                let cap = s.gpus[g].capacity_bytes as f64;
                let per_token = crate::kv::bytes_per_token(p.stage_kv(p.stage(g)));
                let fixed =
                    parts.weight_bytes.saturating_add(parts.activation_bytes).saturating_add(parts.overhead_bytes);
                let (need, usable) = match &self.ready {
                    Ready::Vllm(o, _) => vllm::need_and_usable(
                        p,
                        *o,
                        fixed,
                        per_token,
                        (parts.overhead_bytes, parts.activation_bytes),
                        cap,
                    ),
                    Ready::Sglang(o) => {
                        sglang::need_and_usable(p, *o, g, fixed, per_token, parts.activation_bytes, cap)
                    }
                    Ready::Transformers(_) | Ready::LlamaCpp(..) => (parts.total_bytes(), cap),
                };
                i128::from(need) - usable as i128
            })
            .max()
            .unwrap_or(0)
    }

    /// The engine's warnings about this plan.
    pub fn warnings(&self, per_gpu: &[GpuPeak], verdict: Verdict) -> EngineWarnings {
        let p = &self.plan;
        let mut w = match &self.ready {
            Ready::Transformers(_) => transformers::warnings(p),
            Ready::Vllm(..) => vllm::warnings(p, verdict, self.max_concurrency()),
            Ready::Sglang(_) => sglang::warnings(p),
            Ready::LlamaCpp(o, d) => {
                let mut w = llamacpp::warnings(p, *o, d, per_gpu);
                if let Engine::Ollama(given) = p.scenario.engine {
                    w.fit.extend(ollama::warnings(p, given));
                }
                w
            }
        };
        if p.model.arch.family == crate::arch::Family::DeepseekV4 {
            w.setup.push(deepseek_v4_caveat(p.scenario.engine).into());
        }
        if p.model.arch.family == crate::arch::Family::KimiLinear {
            w.setup.push(kimi_linear_caveat(p.scenario.engine).into());
        }
        w
    }
}

/// What a Kimi-Linear plan reads of each engine. Every engine named runs
/// it: vLLM 0.34 (`models/kimi_k3`), SGLang 0.5.23 (`models/kimi_linear.py`),
/// llama.cpp as llama-cpp-python 0.3.36 vendors it (`LLM_ARCH_KIMI_LINEAR`),
/// transformers 5.25 (`models/kimi_linear`).
fn kimi_linear_caveat(engine: Engine) -> &'static str {
    match engine {
        Engine::Vllm(_) => {
            "Kimi-Linear: each KDA layer's recurrent state is float32 whatever \
                             --mamba-ssm-cache-dtype says (vLLM 0.34's `kda_state_dtype`)"
        }
        Engine::Sglang(_) => "Kimi-Linear: SGLANG_MAMBA_*_DTYPE overrides of its float32 KDA state are not read",
        Engine::LlamaCpp(_) => "Kimi-Linear: its llama.cpp compute buffer is the closed form, not a replay",
        Engine::Ollama(_) => "Kimi-Linear: whether this Ollama release's llama.cpp runs `kimi-linear` is not read",
        Engine::Transformers(_) => {
            "Kimi-Linear: transformers' own cache class is not read; planned as its gated-DeltaNet cache"
        }
    }
}

/// What a DeepSeek-V4 plan does not yet read of each engine: vLLM's,
/// SGLang's and llama.cpp's caches are their own (`kv::layer_costs`, vLLM
/// 0.34; `sglang::dsv4`, SGLang 0.5.23; `llamacpp::cache`, llama.cpp
/// 0c1e57098), transformers' carries vLLM's.
fn deepseek_v4_caveat(engine: Engine) -> &'static str {
    match engine {
        Engine::Vllm(_) => {
            "DeepSeek-V4 on vLLM, not modelled: a --block-size other than 256, speculative decoding, HiSparse, \
             V4.1's specs"
        }
        Engine::Sglang(_) => {
            "DeepSeek-V4 on SGLang, not modelled: speculative decoding, HiSparse, context parallelism, ROCm's \
             unified pool, the window pool's limit on running requests"
        }
        Engine::LlamaCpp(o) if o.fork == llamacpp::Fork::Ik => {
            "DeepSeek-V4: ik_llama.cpp's own cache is not read (planned as mainline's); nor an MTP draft's cache"
        }
        Engine::LlamaCpp(_) | Engine::Ollama(_) => {
            "DeepSeek-V4 on llama.cpp, not modelled: an MTP draft's cache and rollback states, the graph (the \
             compute buffer is the closed form)"
        }
        Engine::Transformers(_) => {
            "DeepSeek-V4: transformers 5.25's caches are not read; its KV cache is estimated with vLLM 0.34's layout"
        }
    }
}
