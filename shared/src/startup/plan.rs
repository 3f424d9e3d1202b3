//! The plan as a start-up log (or a launch's command line) ran it: the one
//! reading the page and `headroom diagnose` both use, so a log is always
//! reconciled against the same plan.

use super::{Figure, LogEngine, LoggedConfig, StartupLog};
use crate::catalog::{MODEL_PRESETS, ModelPreset};
use crate::engines::llamacpp::{CacheType, DEFAULT_N_BATCH, DEFAULT_N_UBATCH, FlashAttention, TensorSplit};
use crate::engines::{Engine, EngineKind, sglang};
use crate::formats::WeightFormat;
use crate::kv::KvDtype;
use crate::model::Model;
use crate::plan::{GpuSlot, Scenario};

/// The preset a vLLM or SGLang log names (`model=` / `model_path=` in its
/// configuration line): its Hugging Face repo, or a local path ending in
/// that repo or in the repo's name, case aside (below it, only a Kaggle
/// mount's version number, [`model_folder`]). `None` when none or several
/// match: a renamed repo (the Hub redirects `meta-llama/Meta-Llama-3.1-8B`)
/// or a fine-tune under another name is not guessed.
pub fn logged_preset(log: &StartupLog) -> Option<&'static ModelPreset> {
    let named = model_folder(log.config.model.as_deref()?);
    // `named` is `tail`, or ends in `/tail`.
    let ends_in = |tail: &str| {
        let Some(cut) = named.len().checked_sub(tail.len()) else { return false };
        named.get(cut..).is_some_and(|t| t.eq_ignore_ascii_case(tail))
            && (cut == 0 || named.get(..cut).is_some_and(|head| head.ends_with('/')))
    };
    let names =
        |p: &&ModelPreset| ends_in(p.hf_repo) || p.hf_repo.rsplit_once('/').is_some_and(|(_, name)| ends_in(name));
    let mut found = MODEL_PRESETS.iter().filter(names);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The words a repo's name may end in for a variant of the same weights'
/// shapes: the tuned and dated releases (`-Instruct`, `-Instruct-2507`,
/// `-it`, `-Chat`, `-Base`, `-hf`) and the quantised copies
/// ([`quantised_word`]: `-AWQ`, `-GPTQ-Int4`, `-FP8-Dynamic`, `-W4A16`,
/// `-bnb-4bit`, Intel's `-AutoRound-Int4`), whose format the log's
/// `quantization=` says.
fn variant_word(word: &str) -> bool {
    matches!(word, "instruct" | "chat" | "it" | "base" | "hf" | "2507" | "thinking" | "dynamic") || quantised_word(word)
}

/// Whether a repo's name says it is a quantised copy (`-AWQ`, `-FP8`,
/// `-GPTQ-Int4`, `-bnb-4bit` …).
pub fn names_a_quantised_copy(repo: &str) -> bool {
    name_words(repo).iter().any(|w| quantised_word(w))
}

/// A logged model path without a trailing `/` or a version folder: Kaggle
/// mounts a model's files under `/kaggle/input/…/<variation>/<version>`, the
/// version a number (`…/gemma-4-31b-it/1`), so the name is the folder above.
fn model_folder(path: &str) -> &str {
    let path = path.trim().trim_end_matches('/');
    match path.rsplit_once('/') {
        Some((folder, version)) if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) => {
            folder.trim_end_matches('/')
        }
        _ => path,
    }
}

/// A repo's name (after its last `/`), lower case, in its `-`/`_` words.
fn name_words(repo: &str) -> Vec<String> {
    let name = model_folder(repo).rsplit('/').next().unwrap_or_default().to_ascii_lowercase();
    name.split(['-', '_']).map(str::to_owned).collect()
}

/// Whether a word of a repo's name says it is a quantised copy.
fn quantised_word(word: &str) -> bool {
    matches!(
        word,
        "awq" | "gptq" | "autoround" | "int4" | "int8" | "fp8" | "w4a16" | "w8a16" | "w8a8" | "bnb" | "4bit" | "8bit"
    )
}

/// A repo's name (after its last `/`), lower case, without its trailing
/// [`variant_word`]s.
fn base_name(repo: &str) -> String {
    let mut words = name_words(repo);
    while words.len() > 1 && words.last().is_some_and(|w| variant_word(w)) {
        words.pop();
    }
    words.join("-")
}

/// When no preset is the repo a vLLM or SGLang log names
/// ([`logged_preset`]): the one preset of the same base name whose repo is
/// no quantised copy (its own format, 16-bit or DeepSeek's fp8), the
/// variant words aside (`Qwen/Qwen3-30B-A3B-Instruct-2507` is
/// `Qwen/Qwen3-30B-A3B`'s shapes; `Qwen2.5-7B-Instruct-AWQ`,
/// `Qwen2.5-7B-Instruct`'s, in the format the log's `quantization=`
/// gives). `None` when none or several match. Said as an assumption where
/// it is used.
pub fn logged_base_preset(log: &StartupLog) -> Option<&'static ModelPreset> {
    let repo = log.config.model.as_deref()?;
    // A quantised copy is planned only in a format the log names, of the
    // bits its name says (`-GPTQ-Int8` is no `quantization=gptq`'s 4-bit,
    // `-FP8-dynamic` under compressed-tensors no format read here).
    let words = name_words(repo);
    if words.iter().any(|w| quantised_word(w)) {
        let format = log.config.quantization.as_deref().and_then(super::quantization_format)?;
        let eight = words.iter().any(|w| matches!(w.as_str(), "int8" | "8bit" | "w8a16" | "w8a8" | "fp8"));
        let four = words.iter().any(|w| matches!(w.as_str(), "int4" | "4bit" | "w4a16" | "awq"));
        let bits = match format {
            WeightFormat::Fp8 { .. } | WeightFormat::Int8 => Some(8),
            WeightFormat::Gptq { bits, .. } | WeightFormat::Awq { bits, .. } => Some(bits),
            WeightFormat::Bnb4 { .. } | WeightFormat::Mxfp4 { .. } | WeightFormat::Nvfp4 => Some(4),
            WeightFormat::F32 | WeightFormat::Bf16 | WeightFormat::F16 | WeightFormat::Gguf(_) => None,
        };
        if (eight && bits != Some(8)) || (four && bits != Some(4)) {
            return None;
        }
    }
    let named = base_name(repo);
    let mut found =
        MODEL_PRESETS.iter().filter(|p| !names_a_quantised_copy(p.hf_repo)).filter(|p| base_name(p.hf_repo) == named);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The plan `planned` as the log says it ran, what the plan leaves at its
/// defaults taken from the log: the engine and its knobs
/// ([`logged_engine`]); the TP degree and pipeline stages (vLLM's and
/// SGLang's config line) when the plan has one of each, on as many GPUs
/// like the plan's first when it plans one; the KV cache dtype the log
/// names (`kv_cache_dtype=fp8`) when the plan keeps the model's; llama.cpp's
/// layer split from its per-GPU KV buffers (on as many GPUs) when the plan
/// gives none; the GPU the log names by its memory (vLLM) or its devices'
/// names (llama.cpp) when the plan's differ; where a vLLM or SGLang log
/// names none but its own figures show it held more than the plan's GPU
/// has, the smallest catalog GPU that holds that ([`capacity_floor`]),
/// said as a lower bound.
/// Also what was taken, in words. The caller validates the
/// result against the model as it validates any plan.
pub fn logged_scenario(log: &StartupLog, model: &Model, planned: Scenario<Engine>) -> (Scenario<Engine>, Vec<String>) {
    let (mut engine, mut taken) = logged_engine(log, planned.engine);
    // The experts vLLM placed (`Local/global number of experts`) beyond the
    // model's: EPLB's redundant copies.
    if let (Engine::Vllm(o), Some(global), Some(m)) = (&mut engine, log.config.global_experts, model.arch.text.moe)
        && o.enable_expert_parallel
        && o.num_redundant_experts == 0
        && global > m.num_experts
    {
        o.num_redundant_experts = global - m.num_experts;
        taken.push(format!("num_redundant_experts {}", o.num_redundant_experts));
    }
    let mut s = Scenario { engine, ..planned };
    let total = log.first(|f| match f {
        Figure::DeviceTotal { bytes } => Some(*bytes),
        _ => None,
    });
    // The catalog GPU a vLLM or SGLang log names (its fused-MoE kernel's
    // config file) when the plan's is another, holding the logged total.
    let named = log.config.device_name.as_deref().and_then(|d| crate::catalog::gpu_named(d).map(|g| (d, g)));
    // A log on ROCm ran on an AMD GPU: a plan's GPU of another vendor is
    // known to be wrong.
    let vendor = log.config.rocm.then_some(crate::catalog::GpuVendor::Amd);
    let wrong_vendor = |g: &GpuSlot| vendor.is_some_and(|v| g.vendor != Some(v));
    if let Some((device, g)) = named {
        if s.gpus.first().is_some_and(|slot| slot.name != g.name) {
            taken.push(format!("GPU {} (the log's {device})", g.name));
            let mut slot = GpuSlot::from_catalog(g);
            if let Some((_, total)) = total {
                slot.cuda_total_bytes = total;
            }
            s.gpus = vec![slot; s.gpus.len()];
        }
    }
    // The GPU the log ran on when the plan's is not of its size (by more
    // than 2 %): the catalog's nearest by what CUDA reports, holding the
    // logged total (vLLM's `Free memory on device (…/T GiB)`,
    // `total_gpu_memory`), which vLLM and SGLang size their budgets from.
    else if let Some((_, total)) = total
        && s.gpus.first().is_some_and(|g| g.cuda_total_bytes.abs_diff(total) > total / 50 || wrong_vendor(g))
        && let Some(g) = crate::catalog::gpus()
            .iter()
            .filter(|g| vendor.is_none_or(|v| g.vendor == v))
            .min_by_key(|g| g.cuda_total_bytes().abs_diff(total))
    {
        taken.push(format!(
            "GPU {} ({} as CUDA reported it)",
            g.name,
            crate::units::format_bytes(total, crate::units::UnitSystem::Binary)
        ));
        let slot = GpuSlot { cuda_total_bytes: total, ..GpuSlot::from_catalog(g) };
        s.gpus = vec![slot; s.gpus.len()];
    }
    // A log that names no GPU but whose own figures show its GPU held more
    // than the plan's has: the plan's is known to be wrong, so the smallest
    // catalog GPU that holds what the log held (a lower bound, said as one).
    let floor = capacity_floor(log);
    let mut bounded = false;
    if total.is_none()
        && named.is_none()
        && log.config.device_name.is_none()
        && let Some(slot) = s.gpus.first()
        && let Some(floor) = floor.as_ref().filter(|f| f.bytes > slot.cuda_total_bytes || wrong_vendor(slot))
    {
        let kind = s.engine.kind();
        let fits = |g: &&crate::catalog::Gpu| {
            g.cuda_total_bytes() >= floor.bytes
                && g.unified_bytes.is_none()
                && kind.runs_on(g.vendor)
                && vendor.or(slot.vendor).is_none_or(|v| v == g.vendor)
        };
        // `gpus()` is smallest first.
        if let Some(g) = crate::catalog::gpus().iter().find(fits) {
            let b = |n: u64| crate::units::format_bytes(n, crate::units::UnitSystem::Binary);
            let why = if wrong_vendor(slot) {
                format!("it ran on ROCm, an AMD GPU, where the plan's is {}", slot.name)
            } else {
                format!("more than the plan's {} has", slot.name)
            };
            taken.push(format!(
                "GPU {} (the log names none, but one of its GPUs held at least {} ({}), {why}; {} is the smallest \
                 GPU in the catalog that holds it, a lower bound rather than the log's GPU: set the GPU it ran on)",
                g.name,
                b(floor.bytes),
                floor.from,
                g.name
            ));
            s.gpus = vec![GpuSlot::from_catalog(g); s.gpus.len()];
            bounded = true;
        }
    }
    let c = &log.config;
    let one_gpu = s.gpus.len() == 1;
    // vLLM's data-parallel replicas (the engine's, now the log's) each hold
    // the TP × PP GPUs.
    let replicas = crate::plan::EngineRules::replicas(&s.engine).max(1);
    let mut gpus = s.gpus.len() as u64;
    if one_gpu {
        gpus = replicas;
    }
    let stages = (gpus / s.tp.max(1).saturating_mul(replicas)).max(1);
    if let Some(tp) = c.tensor_parallel.filter(|&tp| tp > 1 && s.tp == 1 && (one_gpu || gpus.is_multiple_of(tp))) {
        s.tp = tp;
        taken.push(format!("tensor parallel {tp}"));
        gpus = tp.saturating_mul(stages).saturating_mul(replicas);
    }
    if let Some(pp) = c.pipeline_parallel.filter(|&pp| pp > 1 && stages == 1) {
        taken.push(format!("pipeline stages {pp}"));
        gpus = s.tp.max(1).saturating_mul(pp).saturating_mul(replicas);
    }
    // The logged `quantization=` where the plan keeps a 16-bit checkpoint's
    // own weights (a checkpoint's own quantisation is more exact), and the
    // KV cache the engine's own for them.
    if let Some(q) = c.quantization.as_deref()
        && let Some(w) = super::quantization_format(q)
        && s.weights == model.default_format()
        && matches!(s.weights, WeightFormat::Bf16 | WeightFormat::F16 | WeightFormat::F32)
        && w != s.weights
    {
        let kind = s.engine.kind();
        if s.kv_dtype == kind.default_kv_dtype(model, s.weights) {
            s.kv_dtype = kind.default_kv_dtype(model, w);
        }
        s.weights = w;
        taken.push(format!("weights {} (the log's quantization={q})", w.id()));
    }
    // vLLM's `kv_cache_dtype=auto` is the model dtype: the plan's default too.
    if let Some(kv) = c.kv_cache_dtype.as_deref().filter(|k| *k != "auto").and_then(|k| KvDtype::parse(k).ok())
        && s.kv_dtype == s.engine.kind().default_kv_dtype(model, s.weights)
        && kv != s.kv_dtype
    {
        s.kv_dtype = kv;
        taken.push(format!("KV cache dtype {}", kv.id()));
    }
    let (parallel, gpu_bytes) = ((s.tp, s.stages() as u64), s.gpus.first().map_or(0, |g| g.capacity_bytes));
    if let Engine::Sglang(o) = &mut s.engine {
        taken.push(sglang_rules(log, o, parallel, gpu_bytes));
    }
    if let Engine::LlamaCpp(o) = &mut s.engine
        && !o.tensor_split.is_set()
        && let Some(split) = super::llamacpp_layer_split(log, model.layout.num_layers as u64)
        && let Ok(parsed) = TensorSplit::parse(&split)
    {
        let n = split.split(',').count() as u64;
        if one_gpu || n == gpus {
            o.tensor_split = parsed;
            gpus = n;
            taken.push(format!("{n} GPUs split --tensor-split {split}"));
        }
    }
    // A `CPU` compute buffer beside a `_Host` one: the CPU backend's is the
    // first GPU's host type, so the other is an ACCEL backend's (BLAS).
    let computes = |host: bool| {
        log.facts.iter().any(|f| {
            matches!(f.figure, Figure::Buffer { buffer: super::Buffer::Compute, .. })
                && f.scope.as_deref().is_some_and(|d| if host { d.ends_with("_Host") } else { d == "CPU" })
        })
    };
    if let Engine::LlamaCpp(o) = &mut s.engine
        && computes(false)
        && computes(true)
    {
        o.blas = true;
        taken.push("a BLAS backend".into());
    }
    if let Engine::LlamaCpp(o) = &mut s.engine
        && cpu_only(log)
    {
        o.no_gpu_backend = true;
        taken.push("a build without a GPU backend".into());
    }
    // The devices llama.cpp's memory breakdown or `--fit` projection lists
    // are the model's (`model->devices`, src/llama-context.cpp
    // `llama_memory_breakdown_print`): as many GPUs, where nothing above
    // said how many.
    if log.engine == LogEngine::LlamaCpp && one_gpu && gpus == 1 {
        let mut listed: Vec<&str> = log
            .facts
            .iter()
            .filter(|f| matches!(f.figure, Figure::MemoryBreakdown { .. } | Figure::FitProjection { .. }))
            .filter_map(|f| f.scope.as_deref())
            .filter(|d| {
                matches!(crate::engines::llamacpp::Buffer::parse(d), Ok(crate::engines::llamacpp::Buffer::Gpu(_)))
            })
            .collect();
        crate::order::sort(&mut listed);
        listed.dedup();
        if listed.len() > 1 {
            gpus = listed.len() as u64;
            taken.push(format!("{gpus} GPUs (the devices its memory breakdown lists)"));
        }
    }
    // A plan of one GPU runs on as many like it as the log used; a plan
    // that names its GPUs keeps them.
    if one_gpu && gpus > 1 {
        let first = s.gpus[0].clone();
        s.gpus = vec![first; usize::try_from(gpus).unwrap_or(usize::MAX).min(crate::plan::MAX_GPUS + 1)];
    }
    // The GPUs a llama.cpp log names, when each is a catalog GPU (or a Mac
    // known by its working set), the log used as many as it names, and the
    // plan's are not those.
    let named: Option<Vec<_>> = (0..c.devices.len()).map(|i| logged_device(c, i)).collect();
    if let Some(named) = named.filter(|n| !n.is_empty() && n.len() == s.gpus.len())
        && named.iter().zip(&s.gpus).any(|((g, _), slot)| g.name != slot.name)
    {
        let names: Vec<String> = named.iter().map(|(g, how)| format!("{}{how}", g.name)).collect();
        taken.push(format!("GPUs {} (the devices the log names)", names.join(", ")));
        s.gpus = named.into_iter().map(|(g, _)| g).collect();
    }
    if let Some(note) = unnamed_gpu(log, &s, total.is_some() || bounded, floor) {
        taken.push(note);
    }
    if log.config.ollama_engine == Some(true) {
        // gpt-oss's window is the one rule of its own a log showed (its
        // sliding layers keep sequences × 4,096 + batch cells at v0.11.10,
        // kvcache/causal.go): said for gpt-oss only, not for every model.
        let gpt_oss = model.arch.family == crate::arch::Family::GptOss;
        taken.push(format!(
            "Ollama's own engine ran, not llama.cpp: its KV cache is its own (kvcache/causal.go{}), so the KV \
             figures are llama.cpp's rules and its GPU compute graph is not predicted (its batch runs as one graph \
             of BatchSize tokens)",
            if gpt_oss {
                "; gpt-oss's sliding layers keep sequences × 4,096 + batch cells, as read at v0.11.10"
            } else {
                ""
            }
        ));
        // A hybrid's `kv cache` holds its recurrent state and checkpoints of it (`ollama::own`).
        let version = log.config.ollama_version;
        let checkpoints = crate::engines::ollama::own::recurrent_checkpoints(version, model.arch.family);
        if checkpoints > 0 && model.arch.text.layers.iter().any(|l| l.state) {
            let release = version.map_or_else(
                || "the log names no release: v0.17.1 – v0.24's".to_owned(),
                |v| format!("v{}.{}.{}", v.0, v.1, v.2),
            );
            taken.push(format!(
                "its kv cache of a hybrid also holds the recurrent state and {checkpoints} checkpoints of it per \
                 sequence ({release}, kvcache/recurrent.go), F32, on each layer's device"
            ));
        }
    }
    (s, taken)
}

/// Where a vLLM or SGLang log names no GPU (no device total, no device
/// name), which GPU its figures are set against, in words: the plan's, and
/// whether the log's first rank held more than it has (the weights with
/// what was free after them, SGLang, or the KV cache, vLLM). Where any log
/// names a GPU the catalog does not hold, that it does.
fn unnamed_gpu(log: &StartupLog, s: &Scenario<Engine>, total: bool, floor: Option<Floor>) -> Option<String> {
    let slot = s.gpus.first()?;
    // The names the log gives that the catalog does not hold.
    let c = &log.config;
    let unknown: Vec<&str> = match log.engine {
        LogEngine::LlamaCpp => {
            (0..c.devices.len()).filter(|&i| logged_device(c, i).is_none()).map(|i| c.devices[i].as_str()).collect()
        }
        LogEngine::Vllm | LogEngine::Sglang => {
            c.device_name.as_deref().into_iter().filter(|d| crate::catalog::gpu_named(d).is_none()).collect()
        }
    };
    if !unknown.is_empty() {
        return Some(format!(
            "the GPU the log names ({}) is not in the catalog, so its figures are set against the plan's {}",
            unknown.join(", "),
            slot.name
        ));
    }
    let named = log.config.device_name.is_some();
    if total || named || log.engine == LogEngine::LlamaCpp {
        return None;
    }
    let b = |n: u64| crate::units::format_bytes(n, crate::units::UnitSystem::Binary);
    let over = match floor.filter(|f| f.bytes > slot.cuda_total_bytes) {
        Some(f) => format!(
            ", though one GPU of the log held at least {} ({}) of its {}, more than any GPU in the catalog the \
             plan could take instead: set the GPU it ran on",
            b(f.bytes),
            f.from,
            b(slot.cuda_total_bytes)
        ),
        None => String::new(),
    };
    // A ROCm log left on a GPU of another vendor (no figure to bound one by).
    let rocm = if log.config.rocm && slot.vendor != Some(crate::catalog::GpuVendor::Amd) {
        ", though the log ran on ROCm, an AMD GPU: set the GPU it ran on"
    } else {
        ""
    };
    Some(format!("no GPU: the log names none, so its figures are set against the plan's {}{over}{rocm}", slot.name))
}

/// The GPU a llama.cpp log's device `i` is, and how it was told where not
/// by its name alone: a catalog GPU by its driver's name; a Mac by its chip
/// and Metal's working set ([`crate::catalog::mac_named`]); else an Apple
/// chip the catalog lacks, known by the working set the log printed
/// (Metal's free memory before anything loaded), which is all a plan of its
/// buffers needs and what Metal lets a process use.
fn logged_device(c: &LoggedConfig, i: usize) -> Option<(GpuSlot, String)> {
    let name = c.devices.get(i)?;
    if let Some(g) = crate::catalog::gpu_named(name) {
        return Some((GpuSlot::from_catalog(g), String::new()));
    }
    let free = c.devices_free.get(i).copied().flatten()?;
    let b = crate::units::format_bytes(free, crate::units::UnitSystem::Binary);
    if let Some(g) = crate::catalog::mac_named(name, free) {
        return Some((GpuSlot::from_catalog(g), format!(" by its {b} working set")));
    }
    name.starts_with("Apple M").then(|| {
        let slot = GpuSlot { vendor: Some(crate::catalog::GpuVendor::Apple), ..GpuSlot::custom(name.clone(), free) };
        (slot, format!(" with its {b} working set, not a catalog Mac"))
    })
}

/// What a log's own figures say its GPU held at least, and from which.
struct Floor {
    bytes: u64,
    from: String,
}

/// The least memory the first rank of a vLLM or SGLang log held, from its
/// own figures: SGLang's free memory as the weights began to load (`Load
/// weight begin. avail mem=`), or its weights with what was free after
/// them; vLLM's weights with the KV cache after them, which together are
/// at most the share `gpu_memory_utilization` requests of CUDA's total
/// (`v1/worker/gpu_worker.py::determine_available_memory`), so divided by
/// the share where the log states it. `None` where the log says neither.
fn capacity_floor(log: &StartupLog) -> Option<Floor> {
    let b = |n: u64| crate::units::format_bytes(n, crate::units::UnitSystem::Binary);
    let first = |want: fn(&Figure) -> Option<u64>| log.first(want).map(|(_, v)| v);
    let weights = first(|f| match f {
        Figure::Weights { bytes } => Some(*bytes),
        _ => None,
    });
    match log.engine {
        LogEngine::Sglang => {
            let before = first(|f| match f {
                Figure::Free { after: super::Stage::Init, bytes } => Some(*bytes),
                _ => None,
            });
            let after = first(|f| match f {
                Figure::Free { after: super::Stage::Weights, bytes } => Some(*bytes),
                _ => None,
            });
            let loaded = weights.zip(after).map(|(w, a)| w.saturating_add(a));
            let by_before = |f: u64| Floor { bytes: f, from: "free as the weights began to load".into() };
            let by_loaded = |l: u64| Floor {
                bytes: l,
                from: format!(
                    "weights {} with {} free after them",
                    b(weights.unwrap_or_default()),
                    b(after.unwrap_or_default())
                ),
            };
            match (before, loaded) {
                (Some(f), Some(l)) if l > f => Some(by_loaded(l)),
                (Some(f), _) => Some(by_before(f)),
                (None, Some(l)) => Some(by_loaded(l)),
                (None, None) => None,
            }
        }
        LogEngine::Vllm => {
            let kv = first(|f| match f {
                Figure::AvailableKv { bytes, negative: false } => Some(*bytes),
                _ => None,
            });
            let (w, kv) = (weights?, kv?);
            let held = w.saturating_add(kv);
            let parts = format!("weights {} and KV cache {}", b(w), b(kv));
            let share = log.config.gpu_memory_utilization_permille.or_else(|| {
                first(|f| match f {
                    Figure::Utilization { permille } => Some(*permille),
                    _ => None,
                })
            });
            match share.filter(|p| (1..=1000).contains(p)) {
                Some(p) => {
                    let bytes = u64::try_from(u128::from(held) * 1000 / u128::from(p)).unwrap_or(u64::MAX);
                    Some(Floor {
                        bytes,
                        from: format!("{parts} at the log's gpu_memory_utilization {}", p as f64 / 1000.0),
                    })
                }
                None => Some(Floor { bytes: held, from: parts }),
            }
        }
        LogEngine::LlamaCpp => None,
    }
}

/// The SGLang rules a log is planned with, in words. SGLang's start-up
/// lines name no release, but they are dated: a log dated before a change
/// to the default `mem_fraction_static` could not have run the later code,
/// so where neither the log nor the plan gives one, the default of its span
/// holds ([`sglang::dated_default_mem_fraction`]: 0.4.0 – 0.4.7's table by
/// TP, on a GPU that 0.4.6 – 0.4.7 left to it, or 0.4.7.post1 – 0.5.2's
/// reserve by GPU memory). The rest of the newest rules hold (`0.5.23-alloc`
/// was read from 0.4.3's pool).
fn sglang_rules(log: &StartupLog, o: &mut sglang::Options, (tp, pp): (u64, u64), gpu_bytes: u64) -> String {
    let rules = format!("SGLang rules {}", o.version.id());
    let span = |(from, before): (sglang::Date, sglang::Date)| move |d: &sglang::Date| (from..before).contains(d);
    let (in_table, in_reserve) = (span(sglang::TP_TABLE_DATES), span(sglang::GPU_RESERVE_DATES));
    let Some((y, m, d)) = log.config.date.filter(|d| in_table(d) || in_reserve(d)) else {
        return format!("{rules} (the log names no release)");
    };
    let shown = format!("{y}-{m:02}-{d:02}");
    let dated = sglang::dated_default_mem_fraction((y, m, d), gpu_bytes >> 20, tp, pp, o.enable_dp_attention);
    let Some(fraction) = dated.filter(|_| o.mem_fraction_static.is_none()) else {
        return format!("{rules} (the log, dated {shown}, names no release)");
    };
    o.mem_fraction_static = Some(fraction);
    let (default, before) = if in_table(&(y, m, d)) {
        ("0.4.0 – 0.4.7's default by TP", "0.4.7.post1")
    } else {
        ("0.4.7.post1 – 0.5.2's default by GPU memory", "0.5.3")
    };
    format!("{rules} with mem_fraction_static {fraction}, SGLang {default} (the log is dated {shown}, before {before})")
}

/// The vLLM rules a log that names no release is planned with, in words:
/// those of the releases its call sites leave ([`super::CallSites`]) when
/// they all map to one rule set; the plan's otherwise, with the releases
/// that remain.
fn rules_by_call_sites(sites: super::CallSites, o: &mut crate::engines::vllm::Options) -> String {
    let shown = sites.shown();
    match sites.rule_sets()[..] {
        [v] => {
            o.version = v;
            // The table starts at 0.10.0, and V1 logs name their call sites
            // from 0.8: a log that fits 0.10.0 may be older.
            let older = if sites.releases().next() == super::CallSites::READ_FROM.first().copied() {
                " or an earlier release"
            } else {
                ""
            };
            format!("vLLM rules {} ({shown}{older} by the log's call sites)", v.id())
        }
        [] => {
            let read = super::CallSites::READ_FROM;
            let (first, last) = (read.first().copied().unwrap_or_default(), read.last().copied().unwrap_or_default());
            format!(
                "vLLM rules {} (the log names no release, and its call sites fit none of {first} – {last})",
                o.version.id()
            )
        }
        ref several => {
            let ids: Vec<&str> = several.iter().map(|v| v.id()).collect();
            // The plan's rules where the call sites allow them, else the newest
            // release's they leave (the plan's newest rules are then ruled out).
            if !several.contains(&o.version)
                && let Some(v) = sites.releases().last().and_then(crate::engines::vllm::Version::for_release)
            {
                o.version = v;
            }
            format!(
                "vLLM rules {} (the log names no release; its call sites fit {shown}, which rule sets {} split)",
                o.version.id(),
                ids.join(", ")
            )
        }
    }
}

/// The engine of `planned` as the log says it ran: the log's engine (with
/// its newest rules) when the plan runs another, the rules of the release
/// the log names, and the knobs the plan leaves at their defaults set to
/// the logged ones (`gpu_memory_utilization`, `max_model_len`,
/// `max_num_batched_tokens`, `max_num_seqs`; SGLang's
/// `mem_fraction_static` and context length). Also what was taken, in
/// words, for the reader. TP, PP and the GPUs stay the plan's.
pub fn logged_engine(log: &StartupLog, planned: Engine) -> (Engine, Vec<String>) {
    let mut config = log.config.clone();
    config.gpu_memory_utilization_permille = config.gpu_memory_utilization_permille.or_else(|| {
        log.first(|f| match f {
            Figure::Utilization { permille } => Some(*permille),
            _ => None,
        })
        .map(|(_, p)| p)
    });
    // `offloaded N/M layers to GPU` (src/llama-model.cpp `load_tensors`) is
    // the `-ngl` a partial offload ran with; a full one is the default.
    // What the log printed is what ran, over a pasted command's `-ngl`.
    if let Some((_, (layers, of))) = log.first(|f| match f {
        Figure::Offloaded { layers, of } => Some((*layers, *of)),
        _ => None,
    }) {
        if layers < of {
            config.n_gpu_layers = Some(layers);
        } else if config.n_gpu_layers.is_some_and(|n| n < of) {
            config.n_gpu_layers = None;
        }
    }
    // A build without a GPU backend prints no `offloaded` line, and every
    // buffer it prints is the CPU backend's (`CPU`, `CPU_Mapped`, `AMX`: no
    // `CUDA_Host`, which a GPU backend's build prints even at `-ngl 0`):
    // every layer stayed on the CPU, whatever `-ngl` a command gave.
    if cpu_only(log) {
        config.n_gpu_layers = Some(0);
    }
    configured_engine(log.engine, &config, planned)
}

/// Whether a llama.cpp log is of a build without a GPU backend: it names
/// no device, and it prints buffers, all of them the CPU backend's.
fn cpu_only(log: &StartupLog) -> bool {
    let mut scopes = log
        .facts
        .iter()
        .filter(|f| matches!(f.figure, Figure::Buffer { .. }))
        .map(|f| f.scope.as_deref().unwrap_or_default())
        .peekable();
    log.engine == LogEngine::LlamaCpp
        && log.config.devices.is_empty()
        && scopes.peek().is_some()
        && scopes.all(super::buffers::cpu_backend)
}

/// The engine of `planned` as a launch configuration (a start-up log's or a
/// command line's) says it runs: [`logged_engine`] without the log.
pub fn configured_engine(ran: LogEngine, c: &LoggedConfig, planned: Engine) -> (Engine, Vec<String>) {
    let mut taken = Vec::new();
    let kind = ran.kind();
    let mut engine = planned;
    if planned.kind() != kind {
        engine = kind.with_defaults();
        // Ollama runs its models on llama.cpp's runner (or its own engine,
        // which prints llama.cpp's lines): the log's settings are the runner's.
        let runner = planned.kind() == EngineKind::Ollama && ran == LogEngine::LlamaCpp;
        taken.push(format!(
            "engine {}{}",
            kind.name(),
            if runner { " (Ollama's runner, as the log printed it)" } else { "" }
        ));
    }
    let utilization = c.gpu_memory_utilization_permille.map(|p| p as f64 / 1000.0);
    match &mut engine {
        Engine::Vllm(o) => {
            if let Some(v) =
                c.version.as_deref().and_then(crate::engines::vllm::Version::for_release).filter(|v| *v != o.version)
            {
                o.version = v;
                taken.push(format!("vLLM rules {} (the log's {})", v.id(), c.version.as_deref().unwrap_or("")));
            }
            if let Some(sites) = c.call_sites.filter(|_| c.version.is_none()) {
                taken.push(rules_by_call_sites(sites, o));
            }
            if let Some(u) = utilization.filter(|_| o.gpu_memory_utilization.is_none()) {
                o.gpu_memory_utilization = Some(u);
                taken.push(format!("gpu_memory_utilization {u}"));
            }
            let mut fill = |slot: &mut Option<u64>, logged: Option<u64>, name: &str| {
                if let Some(v) = logged.filter(|_| slot.is_none()) {
                    *slot = Some(v);
                    taken.push(format!("{name} {v}"));
                }
            };
            fill(&mut o.max_model_len, c.max_model_len, "max_model_len");
            fill(&mut o.max_num_batched_tokens, c.max_num_batched_tokens, "max_num_batched_tokens");
            fill(&mut o.max_num_seqs, c.max_num_seqs, "max_num_seqs");
            fill(&mut o.block_size, c.block_size, "block_size");
            if o.version.kv_memory_tools() {
                fill(&mut o.kv_cache_memory_bytes, c.kv_cache_memory_bytes, "kv_cache_memory_bytes");
            }
            // vLLM picked max_num_seqs by GPU with the batched tokens it logs.
            if let Some(n) = c
                .tier_max_num_seqs
                .filter(|_| o.max_num_seqs.is_none() && o.version != crate::engines::vllm::Version::V0)
            {
                o.max_num_seqs = Some(n);
                taken.push(format!(
                    "max_num_seqs {n} (vLLM's default beside max_num_batched_tokens {})",
                    c.max_num_batched_tokens.unwrap_or_default()
                ));
            }
            // What only a command line names: kept where the plan has vLLM's defaults.
            let mut given = |slot: &mut u64, default: u64, v: Option<u64>, name: &str| {
                if let Some(v) = v.filter(|&v| *slot == default && v != default) {
                    *slot = v;
                    taken.push(format!("{name} {v}"));
                }
            };
            // LoRA is on with `enable_lora` (vLLM builds a `LoRAConfig` only
            // then, `arg_utils.py::create_engine_config`), at vLLM's defaults
            // for what is not given; a command line's `--max-loras` alone is
            // read as on, as before.
            let loras = match c.enable_lora {
                Some(true) => Some(c.max_loras.unwrap_or(crate::engines::vllm::DEFAULT_MAX_LORAS)),
                Some(false) => None,
                None => c.max_loras,
            };
            given(&mut o.max_loras, 0, loras, "max_loras");
            if o.max_loras > 0 {
                given(
                    &mut o.max_lora_rank,
                    crate::engines::vllm::DEFAULT_MAX_LORA_RANK,
                    c.max_lora_rank,
                    "max_lora_rank",
                );
            }
            given(&mut o.data_parallel_size, 1, c.data_parallel, "data_parallel_size");
            given(&mut o.num_redundant_experts, 0, c.redundant_experts, "num_redundant_experts");
            if c.extensible_kv_cache == Some(false) && o.version.extensible_kv_cache() && !o.no_extensible_kv_cache {
                o.no_extensible_kv_cache = true;
                taken.push("no extensible KV cache".into());
            }
            if c.enforce_eager == Some(true) && !o.enforce_eager {
                o.enforce_eager = true;
                taken.push("enforce_eager".into());
            }
            let given = c.cpu_offload_gb.as_deref().and_then(|g| crate::engines::knobs::gibibytes(g).ok());
            if let Some(gb) = given.filter(|&g| g > 0.0 && o.cpu_offload_gb.is_none()) {
                o.cpu_offload_gb = Some(gb);
                taken.push(format!("cpu_offload_gb {}", crate::units::shortest(gb)));
            }
            if let Some(b) = c.all2all_backend.filter(|_| o.all2all_backend.is_none()) {
                o.all2all_backend = Some(b);
                taken.push(format!("all2all_backend {}", b.id()));
            }
            if c.expert_parallel == Some(true) && !o.enable_expert_parallel {
                o.enable_expert_parallel = true;
                taken.push("enable_expert_parallel".into());
            }
            if let Some(spec) =
                c.speculative.filter(|_| o.speculative.is_none() && o.version != crate::engines::vllm::Version::V0)
            {
                o.speculative = Some(spec);
                taken.push(format!("speculative decoding {}", spec.text()));
            }
            if let Some(sampler) = c.sampler.filter(|_| o.sampler.is_none()) {
                o.sampler = Some(sampler);
                taken.push(format!("the {} sampler", sampler.id()));
            }
            if let Some(kernel) = c.mxfp4_kernel.filter(|_| o.mxfp4_kernel.is_none()) {
                o.mxfp4_kernel = Some(kernel);
                taken.push(format!("the {} MXFP4 kernel", kernel.id()));
            }
        }
        Engine::Sglang(o) => {
            if let Some(f) = c.mem_fraction_static_permille.filter(|_| o.mem_fraction_static.is_none()) {
                o.mem_fraction_static = Some(f as f64 / 1000.0);
                taken.push(format!("mem_fraction_static {}", f as f64 / 1000.0));
            }
            if let Some(len) = c.max_model_len.filter(|_| o.context_length.is_none()) {
                o.context_length = Some(len);
                taken.push(format!("context length {len}"));
            }
            if let Some(n) = c.chunked_prefill_size.filter(|_| o.chunked_prefill_size.is_none()) {
                o.chunked_prefill_size = Some(n);
                taken.push(format!("chunked_prefill_size {n}"));
            }
            if let Some(n) = c.data_parallel.filter(|&n| n > 1 && o.dp_size == 1) {
                o.dp_size = n;
                taken.push(format!("dp_size {n}"));
            }
            if c.dp_attention == Some(true) && !o.enable_dp_attention {
                o.enable_dp_attention = true;
                taken.push("enable_dp_attention".into());
            }
            if let Some(n) = c.ep_size.filter(|&n| n > 1 && o.ep_size == 1) {
                o.ep_size = n;
                taken.push(format!("ep_size {n}"));
            }
            if let Some(n) = c.redundant_experts.filter(|&n| n > 0 && o.ep_num_redundant_experts == 0) {
                o.ep_num_redundant_experts = n;
                taken.push(format!("ep_num_redundant_experts {n}"));
            }
            if c.deepep == Some(true) && !o.moe_a2a_deepep {
                o.moe_a2a_deepep = true;
                taken.push("moe_a2a_backend deepep".into());
            }
            let planned_auto = o.deepep_mode == Default::default();
            if let Some(m) = c.deepep_mode.filter(|&m| planned_auto && m != Default::default()) {
                o.deepep_mode = m;
                taken.push(format!("deepep_mode {}", m.id()));
            }
        }
        Engine::LlamaCpp(o) => {
            if let Some(n) = c.n_ctx.filter(|_| o.n_ctx.is_none()) {
                o.n_ctx = Some(n);
                taken.push(format!("n_ctx {n}"));
            }
            // The plan's defaults (flash attention on, `-ub 512`, the
            // model's cache type) give way to what the log ran with.
            if c.flash_attention() == Some(FlashAttention::Off) && o.flash_attention == FlashAttention::On {
                o.flash_attention = FlashAttention::Off;
                taken.push("flash attention off".into());
            }
            if let Some(b) = c.build.filter(|_| o.build.is_none()) {
                o.build = Some(b);
                taken.push(format!("llama.cpp build {b}'s rules"));
            }
            // A build without git is planned by the newest rules of the
            // builds that print the log's lines (ik_llama.cpp counts its own).
            if c.unknown_build && o.build.is_none() {
                match c.newest_build.filter(|_| !c.is_ik()) {
                    Some(b) => {
                        o.build = Some(b);
                        taken.push(format!(
                            "llama.cpp build {b}'s rules (the log's `build: 0 (unknown)` is a build without git; \
                             its lines are printed up to b{b})"
                        ));
                    }
                    None => taken.push(
                        "the newest llama.cpp rules (the log's `build: 0 (unknown)` is a build without git)".into(),
                    ),
                }
            }
            // A log that names no build (Ollama's runner, an excerpt) is
            // planned by the newest rules of the builds that print its lines.
            if c.build.is_none()
                && !c.unknown_build
                && o.build.is_none()
                && let Some(b) = c.newest_build.filter(|_| !c.is_ik())
            {
                o.build = Some(b);
                taken.push(format!(
                    "llama.cpp build {b}'s rules (the log names no build; its lines are printed up to b{b})"
                ));
            }
            // `-b` bounds the physical batch (`Options::ubatch`): a logged
            // `n_ubatch` is already that minimum, so `-b` is at least it.
            let batch = c.n_batch.or(c.n_ubatch.filter(|&n| n > DEFAULT_N_BATCH));
            if let Some(n) = batch.filter(|&n| n != o.n_batch && o.n_batch == DEFAULT_N_BATCH) {
                o.n_batch = n;
                taken.push(format!("n_batch {n}"));
            }
            if let Some(n) = c.n_ubatch.filter(|&n| n != o.n_ubatch && o.n_ubatch == DEFAULT_N_UBATCH) {
                o.n_ubatch = n;
                taken.push(format!("n_ubatch {n}"));
            }
            // Ollama's Go engine runs and reserves its whole batch as one
            // graph, no micro-batches (runner/ollamarunner/runner.go
            // `reserveWorstCaseGraph`: `inputs := make([]*input.Input,
            // s.batchSize)`, v0.11.10 – v0.24.0).
            if c.ollama_engine == Some(true) && !o.ollama_engine {
                o.ollama_engine = true;
                let batch = c.n_batch.unwrap_or(crate::engines::ollama::own::DEFAULT_NUM_BATCH);
                (o.n_ubatch, o.n_batch) = (batch, batch);
            }
            if let Some(k) =
                c.cache_type_k.as_deref().and_then(|t| CacheType::parse(t).ok()).filter(|_| o.cache_type_k.is_none())
            {
                o.cache_type_k = Some(k);
                taken.push(format!("K cache {}", k.id()));
            }
            if let Some(v) =
                c.cache_type_v.as_deref().and_then(|t| CacheType::parse(t).ok()).filter(|_| o.cache_type_v.is_none())
            {
                o.cache_type_v = Some(v);
                taken.push(format!("V cache {}", v.id()));
            } else if c.cache_type_k.is_some() && c.cache_type_v.is_none() && o.cache_type_v.is_none() {
                // `-ctk` alone leaves V at llama.cpp's own default, f16
                // (common/common.h `cache_type_v = GGML_TYPE_F16`), where a
                // plan's unset V follows its K.
                o.cache_type_v = Some(CacheType::F16);
                taken.push("V cache f16 (llama.cpp's default beside -ctk)".into());
            }
            launched_placement(c, o, &mut taken);
            launched_ik(c, o, &mut taken);
        }
        // A log is llama.cpp's (Ollama's runner prints llama-server's
        // lines), so a plan of Ollama is rebuilt as the llama.cpp it ran.
        Engine::Transformers(_) | Engine::Ollama(_) => {}
    }
    (engine, taken)
}

/// The llama.cpp flags only a command line names: slots, layers on the GPU,
/// the split and the tensors kept on the CPU. A value the engine's own
/// parser refuses is left out.
fn launched_placement(c: &LoggedConfig, o: &mut crate::engines::llamacpp::Options, taken: &mut Vec<String>) {
    use crate::engines::llamacpp::{FitMode, SplitMode, TensorOverrides, TensorSplit};
    let mut fill = |slot: &mut Option<u64>, given: Option<u64>, name: &str| {
        if let Some(v) = given.filter(|_| slot.is_none()) {
            *slot = Some(v);
            taken.push(format!("{name} {v}"));
        }
    };
    // Without a command line, the slots the context was made with: llama.cpp
    // prints `n_seq_max` (src/llama-context.cpp), llama-server's `-np` and
    // Ollama's runner's `Parallel` (read there as `n_seq_max` too).
    fill(&mut o.parallel, c.parallel.or(c.n_seq_max.filter(|&n| n > 1)), "-np");
    fill(&mut o.n_gpu_layers, c.n_gpu_layers, "-ngl");
    if let Some(n) = c.n_cpu_moe.filter(|_| o.n_cpu_moe == 0) {
        o.n_cpu_moe = n;
        taken.push(format!("--n-cpu-moe {n}"));
    }
    if let Some(split) = c.tensor_split.as_deref().and_then(|t| TensorSplit::parse(t).ok()) {
        o.tensor_split = split;
        taken.push(format!("-ts {}", o.tensor_split.text()));
    }
    if let Some(rules) = c.override_tensor.as_deref().and_then(|t| TensorOverrides::parse(t).ok()) {
        o.tensor_overrides = rules;
        taken.push(format!("-ot {}", o.tensor_overrides.as_str()));
    }
    if let Some(mode) = c.split_mode.as_deref().and_then(|m| SplitMode::parse(m).ok()) {
        o.split_mode = mode;
        taken.push(format!("-sm {}", mode.id()));
    }
    if let Some(g) = c.main_gpu.and_then(|g| u16::try_from(g).ok()) {
        o.main_gpu = g;
        taken.push(format!("-mg {g}"));
    }
    if c.fit == Some(false) && o.fit == FitMode::On {
        o.fit = FitMode::Off;
        taken.push("--fit off".into());
    }
    if let Some(mib) = c.fit_target_mib.filter(|&m| m != o.fit_target_mib) {
        o.fit_target_mib = mib;
        taken.push(format!("--fit-target {mib}"));
    }
    for (on, slot, name) in [
        (c.no_kv_offload, &mut o.no_kv_offload, "-nkvo"),
        (c.kv_unified, &mut o.kv_unified, "--kv-unified"),
        (c.swa_full, &mut o.swa_full, "--swa-full"),
        (c.mmproj, &mut o.mmproj, "--mmproj"),
        (c.no_mmproj_offload.filter(|_| c.mmproj == Some(true)), &mut o.no_mmproj_offload, "--no-mmproj-offload"),
    ] {
        if on == Some(true) && !*slot {
            *slot = true;
            taken.push(name.into());
        }
    }
}

/// ik_llama.cpp: a log or command line that prints or takes ik's own
/// settings ran ik (its build number, when named, is ik's), with those
/// settings where the plan leaves them at their defaults.
fn launched_ik(c: &LoggedConfig, o: &mut crate::engines::llamacpp::Options, taken: &mut Vec<String>) {
    use crate::engines::llamacpp::Fork;
    if !c.is_ik() {
        return;
    }
    if o.fork != Fork::Ik {
        o.fork = Fork::Ik;
        taken.push("ik_llama.cpp".into());
    }
    if let Some(m) = c.ik_mla.and_then(|m| u8::try_from(m).ok()).filter(|&m| m <= 3 && o.mla.is_none()) {
        o.mla = Some(m);
        taken.push(format!("-mla {m}"));
    }
    if let Some(n) = c.ik_attn_max_batch.filter(|_| o.attn_max_batch_mib.is_none()) {
        o.attn_max_batch_mib = Some(n);
        taken.push(format!("-amb {n}"));
    }
    if let Some(on) = c.ik_fused_moe.filter(|_| o.fused_moe.is_none()) {
        o.fused_moe = Some(on);
        taken.push(if on { "-fmoe" } else { "-no-fmoe" }.into());
    }
    if c.ik_run_time_repack == Some(true) && !o.run_time_repack {
        o.run_time_repack = true;
        taken.push("-rtr".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_names_its_preset_by_repo_or_local_path() {
        let named = |model: &str| {
            let log = StartupLog {
                engine: LogEngine::Vllm,
                config: LoggedConfig { model: Some(model.into()), ..LoggedConfig::default() },
                facts: Vec::new(),
                model: None,
            };
            logged_preset(&log).map(|p| p.id)
        };
        assert_eq!(named("Qwen/Qwen2.5-7B-Instruct"), Some("qwen2.5-7b"));
        assert_eq!(named("qwen/qwen2.5-7b-instruct"), Some("qwen2.5-7b"));
        assert_eq!(named("/public_hw/home/x/HF/models/Qwen/Qwen3-VL-30B-A3B-Instruct"), Some("qwen3-vl-30b-a3b"));
        assert_eq!(named("/models/Qwen2.5-7B-Instruct/"), Some("qwen2.5-7b"));
        // Only whole path parts, and no fine-tune or renamed repo.
        assert_eq!(named("/models/MyQwen2.5-7B-Instruct"), None);
        assert_eq!(named("Qwen/Qwen2.5-7B-Instruct-abliterated"), None);
        assert_eq!(named("None"), None);
        assert_eq!(named(""), None);
    }

    #[test]
    fn a_llamacpp_log_names_its_gpus() {
        let text = "ggml_cuda_init: found 2 CUDA devices:\n  \
                    Device 0: NVIDIA GeForce RTX 5090, compute capability 12.0, VMM: yes\n  \
                    Device 1: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n\
                    llama_kv_cache_unified:      CUDA0 KV buffer size =   512.00 MiB\n\
                    llama_kv_cache_unified:      CUDA1 KV buffer size =   512.00 MiB\n";
        let log = super::super::read(text).expect("a llama.cpp log");
        assert_eq!(log.config.devices, ["NVIDIA GeForce RTX 5090", "NVIDIA GeForce RTX 4090"]);
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let planned = Scenario { engine: crate::engines::EngineKind::LlamaCpp.with_defaults(), ..Scenario::default() };
        let (s, taken) = logged_scenario(&log, &m, planned);
        let names: Vec<&str> = s.gpus.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["GeForce RTX 5090", "GeForce RTX 4090"], "{taken:?}");
        assert!(taken.iter().any(|t| t.starts_with("GPUs GeForce RTX 5090, GeForce RTX 4090")), "{taken:?}");
        // A plan on Ollama runs as its llama.cpp runner printed it, and says so.
        let ollama = Scenario { engine: EngineKind::Ollama.with_defaults(), ..Scenario::default() };
        let (s, taken) = logged_scenario(&log, &m, ollama);
        assert_eq!(s.engine.kind(), EngineKind::LlamaCpp);
        assert!(taken.iter().any(|t| t == "engine llama.cpp (Ollama's runner, as the log printed it)"), "{taken:?}");
    }
}
