//! `headroom diagnose`: a pasted out-of-memory error (and, optionally, the
//! plan that was run) → ranked causes and fixes, as text or JSON. A pasted
//! engine start-up log (vLLM, SGLang, llama.cpp) is read too: its memory
//! lines are listed with the line each came from.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use shared::estimate::estimate;
use shared::oom::{
    self, Cause, ChecklistItem, DiagnoseContext, Diagnosis, DiagnosisFix, GpuBackend, LlamaCppStage, MpsPool, OomKind,
    OomProcess, OomReport, PlanCheck,
};
use shared::startup::{self, Amount, BufferCheck, Row, StartupLog, WhatIfs};
use shared::units::{UnitSystem, format_bytes};

use super::plan::{self, ModelSource, PlanArgs};

/// Version of the `--json` object; bumped only on incompatible changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// The error or log: a file, or `-` (the default) for standard input.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// The model that was run (optional): with it and the plan flags below,
    /// the diagnosis checks the error against the estimate.
    #[arg(long, conflicts_with = "config")]
    model: Option<String>,
    /// A Hugging Face config.json of the model that was run; with
    /// --checkpoint or --hf, it replaces the checkpoint's own.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The checkpoint that was run, as `estimate --checkpoint` reads it (a
    /// folder, an HF cache entry, a .safetensors or .gguf file): its
    /// headers' exact bytes, so a log is checked against the exact file.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["model", "hf"])]
    checkpoint: Option<PathBuf>,
    /// The Hub repo that was run, ORG/NAME[@REVISION][:PICK], as `estimate
    /// --hf` reads it (HF_ENDPOINT, HF_TOKEN).
    #[arg(long, value_name = "REPO", conflicts_with = "model")]
    hf: Option<String>,
    /// With --hf: the .gguf file of the repo to read.
    #[arg(long = "file", value_name = "FILE", requires = "hf")]
    hf_file: Option<String>,
    #[command(flatten)]
    plan: PlanArgs,
    /// Print one JSON object (documented in docs/cli.md).
    #[arg(long)]
    json: bool,
}

pub fn run(mut args: DiagnoseArgs) -> anyhow::Result<()> {
    let (text, source) = read_error(args.file.as_ref())?;
    let report = oom::parse(&text);
    let startup = startup::read(&text);
    // The checkpoint that was run (`--checkpoint`, `--hf`), else a preset or config.
    let checkpoint = super::checkpoint::from_flags(
        args.checkpoint.as_deref(),
        args.hf.as_deref(),
        args.hf_file.as_deref(),
        args.config.as_ref(),
    )?;
    let model_source = match checkpoint {
        Some(_) => None,
        None => ModelSource::from_flags(args.model.as_ref(), args.config.as_ref()),
    };
    let given = checkpoint.is_some() || model_source.is_some();
    // Without a model, a llama.cpp log that prints its metadata names one.
    let logged = match (&startup, given) {
        (Some(log), false) => log.model.as_ref().map(startup::logged_model),
        _ => None,
    };
    // Else a vLLM or SGLang log's `model=` may name a preset, or a variant
    // of one (`-Instruct-2507`, `-AWQ`) by its base name.
    let named = match (&startup, given, &logged) {
        (Some(log), false, None) => startup::logged_preset(log)
            .map(|p| (p, None))
            .or_else(|| startup::logged_base_preset(log).map(|p| (p, log.config.model.clone()))),
        _ => None,
    };
    // A start-up log says which engine ran: the engine flags given apply to it.
    let mut taken = Vec::new();
    if let Some(log) = &startup
        && args.plan.engine == "transformers"
    {
        args.plan.engine = log.engine.kind().id().into();
        taken.push(format!("engine {}", log.engine.kind().name()));
    }
    // Without a log, an error from a vLLM or SGLang process says which
    // engine ran: the plan checked against it is that engine's.
    if startup.is_none()
        && args.plan.engine == "transformers"
        && let Some(kind) = report.serving_engine()
    {
        args.plan.engine = kind.id().into();
    }
    // Why a log's metadata gives no plan, said when nothing else does.
    let mut refusal: Option<String> = None;
    let model = match (checkpoint, model_source, logged) {
        (Some(model), ..) => Some(model),
        (None, Some(source), _) => Some(plan::load_model(source, &args.plan)?),
        (None, None, Some(Ok((model, format, notes)))) => {
            taken.push(format!("the model from the log's metadata ({})", model.name));
            if let Some(f) = format.filter(|_| args.plan.weights.is_none()) {
                args.plan.weights = Some(f.id());
                taken.push(format!("weights {} (the log's file type)", f.id()));
            }
            taken.extend(notes);
            Some(model)
        }
        (None, None, Some(Err(why))) => {
            refusal = Some(why.to_string());
            None
        }
        (None, None, None) => match named {
            Some((p, base)) => {
                taken.push(match base {
                    None => format!("the model the log names ({}: the preset {})", p.hf_repo, p.id),
                    Some(named) => format!(
                        "the preset {} for the model the log names ({named}): {}'s shapes, by its base name",
                        p.id, p.hf_repo
                    ),
                });
                Some(plan::load_model(ModelSource::Preset(p.id), &args.plan)?)
            }
            None => None,
        },
    };
    let planned = if let Some(model) = model {
        let scenario = plan::scenario(&args.plan, &model)?;
        // The flags left at their defaults take what the log ran with, as
        // the page does (`startup::logged_scenario`).
        let scenario = match &startup {
            Some(log) => {
                let (run, from_log) = startup::logged_scenario(log, &model, scenario.into_inner());
                taken.extend(from_log);
                run.validate_for(&model).context("the plan as the log ran it")?
            }
            None => scenario,
        };
        Some((model, scenario))
    } else {
        None
    };
    let ctx = match &planned {
        Some((model, scenario)) => DiagnoseContext::error_only().with_plan(model, scenario),
        None => DiagnoseContext::error_only(),
    };
    let diagnosis = oom::diagnose(&report, &ctx);
    let reconciled = match (&startup, &planned) {
        (Some(log), Some((model, scenario))) => Some(startup::reconcile(log, &estimate(model, scenario.clone()))),
        _ => None,
    };
    // A vLLM log and a plan: what-ifs with the logged figures as facts.
    let what_ifs = match (&startup, &planned) {
        (Some(log), Some((model, scenario))) => startup::what_ifs(log, model, scenario),
        _ => None,
    };
    // A llama.cpp log and a plan: each logged buffer beside its prediction.
    let checks: Vec<BufferCheck> = match (&startup, &planned) {
        (Some(log), Some((model, scenario))) => startup::llamacpp_buffers(log, &estimate(model, scenario.clone())),
        _ => Vec::new(),
    };
    if args.json {
        let out = JsonOut {
            startup: startup.as_ref(),
            reconciled: reconciled.as_ref().map(|(rows, _)| rows.as_slice()),
            buffers: &checks,
            what_ifs: what_ifs.as_ref(),
            ..JsonOut::new(&report, &diagnosis)
        };
        super::emit(&(serde_json::to_string_pretty(&out)? + "\n"))?;
    } else {
        let mut out = String::new();
        if diagnosis.recognised || startup.is_none() {
            out.push_str(&text_report(&report, &diagnosis));
        } else {
            // A start-up log with no error: the reader's notes on what it saw
            // instead (ggml's pinned-memory warning), not its "paste the error".
            for n in report.notes.iter().filter(|n| !n.starts_with("No out-of-memory message found")) {
                out.push_str(&format!("note: {n}\n"));
            }
        }
        if let Some(log) = &startup {
            out.push_str(&startup_report(log));
        }
        if let Some((rows, notes)) = &reconciled {
            out.push_str(&reconciled_report(rows, notes, &taken));
        }
        if let (Some(log), None) = (&startup, &planned) {
            out.push_str(&unplanned_report(log, refusal.as_deref()));
        }
        if let Some(w) = &what_ifs {
            out.push_str(&what_ifs_report(w));
        }
        if !checks.is_empty() {
            out.push_str(&buffers_report(&checks));
        }
        super::emit(&out)?;
    }
    if !diagnosis.recognised && startup.is_none() {
        bail!("no out-of-memory message or engine start-up log found in {source}");
    }
    Ok(())
}

/// A start-up log with no plan beside it says why and what would give one:
/// its figures are read, but nothing predicts them.
fn unplanned_report(log: &startup::StartupLog, refusal: Option<&str>) -> String {
    let why = refusal
        .map(str::to_owned)
        .or_else(|| log.config.model.as_ref().map(|m| format!("the log names the model {m}, which is not a preset")))
        .unwrap_or_else(|| "the log names no model".into());
    format!(
        "\nNot set against a plan: {why}. Give the model that ran (--model PRESET, --config config.json, --checkpoint \
         or --hf) and, where the log does not name it, --gpu, to set each figure beside its prediction.\n"
    )
}

/// The text and a name for messages. Bytes that are not UTF-8 (a log with a
/// stray binary line) are replaced rather than refused.
fn read_error(file: Option<&PathBuf>) -> anyhow::Result<(String, String)> {
    let stdin = std::path::Path::new("-");
    let path = file.map_or(stdin, PathBuf::as_path);
    let bytes = super::input::read_bytes(path, super::input::MAX_INPUT_BYTES)?;
    let source = if path == stdin { "standard input".to_owned() } else { path.display().to_string() };
    Ok((String::from_utf8_lossy(&bytes).into_owned(), source))
}

/// The `--json` object: the error's figures, then the diagnosis, and the
/// notes of both in one list (documented in docs/cli.md).
#[derive(Debug, Serialize)]
struct JsonOut<'a> {
    schema_version: u32,
    recognised: bool,
    kind: Option<OomKind>,
    backend: Option<GpuBackend>,
    requested_bytes: Option<u64>,
    gpu_index: Option<u32>,
    total_bytes: Option<u64>,
    free_bytes: Option<u64>,
    allocated_bytes: Option<u64>,
    reserved_bytes: Option<u64>,
    reserved_unallocated_bytes: Option<u64>,
    private_pool_bytes: Option<u64>,
    process_in_use_bytes: Option<u64>,
    allocation_limit: bool,
    allowed_bytes: Option<u64>,
    mps_pool: Option<MpsPool>,
    max_buffer_bytes: Option<u64>,
    failed_in: Option<&'a str>,
    processes: &'a [OomProcess],
    max_seq_len: Option<u64>,
    kv_cache_tokens: Option<u64>,
    kv_needed_bytes: Option<u64>,
    kv_available_bytes: Option<u64>,
    estimated_max_model_len: Option<u64>,
    kv_deficit_bytes: Option<u64>,
    weights_bytes: Option<u64>,
    gpu_memory_utilization_permille: Option<u64>,
    kv_cache_dtype: Option<&'a str>,
    max_num_batched_tokens: Option<u64>,
    llama_cpp_stage: Option<LlamaCppStage>,
    warmup_requests: Option<u64>,
    mem_fraction_static_permille: Option<u64>,
    preempted_requests: Option<u64>,
    new_token_ratio_permille: Option<u64>,
    kv_cache_usage_permille: Option<u64>,
    available_gpu_mem_bytes: Option<u64>,
    host_required_bytes: Option<u64>,
    host_available_bytes: Option<u64>,
    via_ollama: bool,
    ik_mla: bool,
    fit_gave_up: Option<&'a str>,
    fit_shortfall_bytes: Option<u64>,
    clip_warmup: bool,
    clip_projector: Option<&'a str>,
    clip_model_bytes: Option<u64>,
    devices_in_log: &'a [u32],
    pipeline_copies: Option<u64>,
    worker_ranks: u32,
    vllm_process: bool,
    sglang_process: bool,
    tgi_process: bool,
    prefill_tokens: Option<u64>,
    trtllm_component: Option<shared::oom::TrtllmComponent>,
    workload: Option<shared::oom::Workload>,
    distributed_ranks: u32,
    graph_capture: bool,
    serving: bool,
    serving_phase: Option<shared::oom::ServingPhase>,
    pipeline_parallel_size: Option<u64>,
    pp_layer_partition: &'a [u64],
    same_on_every_gpu: bool,
    occurrences: u32,
    gpus_seen: &'a [u32],
    summary: &'a str,
    causes: &'a [Cause],
    fixes: &'a [DiagnosisFix],
    checklist: &'a [ChecklistItem],
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<&'a PlanCheck>,
    needs: &'a [String],
    notes: Vec<&'a str>,
    /// The memory lines of an engine start-up log in the text, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    startup: Option<&'a StartupLog>,
    /// With a plan: each logged figure beside the estimate's.
    #[serde(skip_serializing_if = "Option::is_none")]
    reconciled: Option<&'a [Row]>,
    /// llama.cpp's logged buffers beside the plan's prediction (with a plan).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    buffers: &'a [BufferCheck],
    /// A vLLM log with a plan: changed launches answered with the log's residual.
    #[serde(skip_serializing_if = "Option::is_none")]
    what_ifs: Option<&'a WhatIfs>,
}

impl<'a> JsonOut<'a> {
    fn new(r: &'a OomReport, d: &'a Diagnosis) -> Self {
        Self {
            schema_version: JSON_SCHEMA_VERSION,
            recognised: d.recognised,
            kind: r.kind,
            backend: r.backend,
            requested_bytes: r.requested_bytes,
            gpu_index: r.gpu_index,
            total_bytes: r.total_bytes,
            free_bytes: r.free_bytes,
            allocated_bytes: r.allocated_bytes,
            reserved_bytes: r.reserved_bytes,
            reserved_unallocated_bytes: r.reserved_unallocated_bytes,
            private_pool_bytes: r.private_pool_bytes,
            process_in_use_bytes: r.process_in_use_bytes,
            allocation_limit: r.allocation_limit,
            allowed_bytes: r.allowed_bytes,
            mps_pool: r.mps_pool,
            max_buffer_bytes: r.max_buffer_bytes,
            failed_in: r.failed_in.as_deref(),
            processes: &r.processes,
            max_seq_len: r.max_seq_len,
            kv_cache_tokens: r.kv_cache_tokens,
            kv_needed_bytes: r.kv_needed_bytes,
            kv_available_bytes: r.kv_available_bytes,
            estimated_max_model_len: r.estimated_max_model_len,
            kv_deficit_bytes: r.kv_deficit_bytes,
            weights_bytes: r.weights_bytes,
            gpu_memory_utilization_permille: r.gpu_memory_utilization_permille,
            kv_cache_dtype: r.kv_cache_dtype.as_deref(),
            max_num_batched_tokens: r.max_num_batched_tokens,
            llama_cpp_stage: r.llama_cpp_stage,
            warmup_requests: r.warmup_requests,
            mem_fraction_static_permille: r.mem_fraction_static_permille,
            preempted_requests: r.preempted_requests,
            new_token_ratio_permille: r.new_token_ratio_permille,
            kv_cache_usage_permille: r.kv_cache_usage_permille,
            available_gpu_mem_bytes: r.available_gpu_mem_bytes,
            host_required_bytes: r.host_required_bytes,
            host_available_bytes: r.host_available_bytes,
            via_ollama: r.via_ollama,
            ik_mla: r.ik_mla,
            fit_gave_up: r.fit_gave_up.as_deref(),
            fit_shortfall_bytes: r.fit_shortfall_bytes,
            clip_warmup: r.clip_warmup,
            clip_projector: r.clip_projector.as_deref(),
            clip_model_bytes: r.clip_model_bytes,
            devices_in_log: &r.devices_in_log,
            pipeline_copies: r.pipeline_copies,
            worker_ranks: r.worker_ranks,
            vllm_process: r.vllm_process,
            sglang_process: r.sglang_process,
            tgi_process: r.tgi_process,
            prefill_tokens: r.prefill_tokens,
            trtllm_component: r.trtllm_component,
            workload: r.workload,
            distributed_ranks: r.distributed_ranks,
            graph_capture: r.graph_capture,
            serving: r.serving,
            serving_phase: r.serving_phase,
            pipeline_parallel_size: r.pipeline_parallel_size,
            pp_layer_partition: &r.pp_layer_partition,
            same_on_every_gpu: r.same_on_every_gpu,
            occurrences: r.occurrences,
            gpus_seen: &r.gpus_seen,
            summary: &d.summary,
            causes: &d.causes,
            fixes: &d.fixes,
            checklist: &d.checklist,
            plan: d.plan.as_ref(),
            needs: &d.needs,
            notes: r.notes.iter().chain(&d.notes).map(String::as_str).collect(),
            startup: None,
            reconciled: None,
            buffers: &[],
            what_ifs: None,
        }
    }
}

fn b(bytes: u64) -> String {
    format_bytes(bytes, UnitSystem::Binary)
}

fn text_report(r: &OomReport, d: &Diagnosis) -> String {
    let mut out = String::new();
    let Some(kind) = r.kind else {
        for n in &r.notes {
            let _ = writeln!(out, "{n}");
        }
        return out;
    };
    let gpu = r.gpu_index.map_or(String::new(), |i| format!(" on GPU {i}"));
    // llama.cpp names its backend; the other messages are CUDA's or say theirs.
    let backend = match r.backend.filter(|_| kind == OomKind::LlamaCpp) {
        Some(GpuBackend::Vulkan) => " (Vulkan)",
        Some(GpuBackend::Metal) => " (Metal)",
        Some(GpuBackend::Hip) => " (ROCm)",
        Some(GpuBackend::Xpu) => " (XPU)",
        Some(GpuBackend::Mps) => " (MPS)",
        Some(GpuBackend::Sycl) => " (SYCL)",
        Some(GpuBackend::Cuda) | None => "",
    };
    let stage = match r.llama_cpp_stage {
        Some(LlamaCppStage::ModelWeights) => ", loading the weights",
        Some(LlamaCppStage::KvCache) => ", allocating the KV cache",
        Some(LlamaCppStage::ComputeBuffers) => ", allocating the compute buffers",
        Some(LlamaCppStage::GraphCompute) => ", running the graph",
        None => "",
    };
    let _ = writeln!(out, "{}{backend}{gpu}{stage}", kind.label());
    let figures: Vec<String> = [
        ("requested", r.requested_bytes),
        ("total", r.total_bytes),
        ("free", r.free_bytes),
        ("allocated", r.allocated_bytes),
        ("reserved", r.reserved_bytes),
        ("reserved but unallocated", r.reserved_unallocated_bytes),
        ("this process", r.process_in_use_bytes),
        ("allowed", r.allowed_bytes),
        ("largest buffer", r.max_buffer_bytes),
        ("KV cache needed", r.kv_needed_bytes),
        ("KV cache available", r.kv_available_bytes),
        ("KV cache short by", r.kv_deficit_bytes),
        ("system memory needed", r.host_required_bytes),
        ("system memory available", r.host_available_bytes),
    ]
    .iter()
    .filter_map(|(name, v)| v.map(|v| format!("{name} {}", b(v))))
    .collect();
    if !figures.is_empty() {
        let _ = writeln!(out, "  {}", figures.join(" · "));
    }
    for p in &r.processes {
        let pid = p.pid.map_or("?".to_owned(), |p| p.to_string());
        let _ = writeln!(out, "  process {pid}: {}", p.used_bytes.map_or("?".to_owned(), b));
    }
    let _ = writeln!(out, "\n{}\n", d.summary);
    if let Some(plan) = &d.plan {
        let _ = writeln!(out, "{}\n", plan.checked_against);
    }
    if !d.causes.is_empty() {
        let _ = writeln!(out, "Causes, most likely first:");
        for c in &d.causes {
            let _ = writeln!(out, "  {}. {} [{}, score {}]", c.rank, c.title, c.id.id(), c.score);
            for e in &c.evidence {
                let _ = writeln!(out, "     - {e}");
            }
        }
        let _ = writeln!(out);
    }
    if !d.fixes.is_empty() {
        let _ = writeln!(out, "Fixes:");
        for f in &d.fixes {
            let mut tags = Vec::new();
            if let Some(s) = f.saves_bytes.filter(|&s| s > 0) {
                tags.push(format!("saves {}", b(s)));
            }
            match f.fits {
                Some(true) => tags.push("fits".into()),
                Some(false) => tags.push("not enough alone".into()),
                None => {}
            }
            let tags = if tags.is_empty() { String::new() } else { format!(" ({})", tags.join(", ")) };
            let _ = writeln!(out, "  - {}{tags}", f.title);
            for line in f.code.lines() {
                let _ = writeln!(out, "      {line}");
            }
        }
        let _ = writeln!(out);
    }
    if !d.needs.is_empty() {
        let _ = writeln!(out, "To tell more, give:");
        for n in &d.needs {
            let _ = writeln!(out, "  - {n}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "Checklist:");
    for item in &d.checklist {
        let mark = if item.flagged { "!" } else { " " };
        let _ = writeln!(out, "  {mark} {}. {} {}", item.number, item.question, item.finding);
    }
    for n in r.notes.iter().chain(&d.notes) {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// The start-up log's configuration and memory lines, each with its line.
fn startup_report(log: &StartupLog) -> String {
    let c = &log.config;
    let mut head = format!("{} start-up log", log.engine.name());
    let said: Vec<String> = [
        c.version.as_ref().map(|v| format!("version {v}")),
        c.model.as_ref().map(|m| format!("model {m}")),
        c.tensor_parallel.map(|n| format!("tensor parallel {n}")),
        c.max_model_len.map(|n| format!("max model length {}", shared::explain::thousands(n))),
        c.n_ctx.map(|n| format!("n_ctx {}", shared::explain::thousands(n))),
        c.kv_cache_dtype.as_ref().map(|d| format!("KV cache dtype {d}")),
        c.cache_type_k.as_ref().map(|k| format!("cache types K {k} / V {}", c.cache_type_v.as_deref().unwrap_or("?"))),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !said.is_empty() {
        let _ = write!(head, " ({})", said.join(", "));
    }
    let mut out = format!("\n{head}\n");
    if let Some(m) = &log.model {
        let n = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
        let _ = writeln!(
            out,
            "  model from its metadata: {} ({}), {} layers, {} heads ({} KV), embedding {}, FFN {}, {} experts ({} used, FFN {}), vocab {}, trained context {}, file type {}{}",
            m.name.as_deref().unwrap_or("unnamed"),
            m.arch.as_deref().unwrap_or("?"),
            n(m.layers),
            n(m.heads),
            n(m.kv_heads),
            n(m.embedding),
            n(m.ffn),
            n(m.experts),
            n(m.experts_used),
            n(m.expert_ffn),
            n(m.vocab),
            n(m.context),
            m.file_type.as_deref().unwrap_or("?"),
            m.size_bytes.map(|s| format!(", {}", b(s))).unwrap_or_default()
        );
    }
    for f in &log.facts {
        let scope = f.scope.as_ref().map(|s| format!(" [{s}]")).unwrap_or_default();
        let _ = writeln!(out, "  line {:>5}{scope}: {}", f.line, f.figure.describe());
    }
    out
}

/// Logged against predicted, term by term, with what the plan took from the log.
fn reconciled_report(rows: &[Row], notes: &[String], taken: &[String]) -> String {
    let mut out = String::from("\nThe log against the plan");
    if !taken.is_empty() {
        let _ = write!(out, " (taken from the log: {})", taken.join(", "));
    }
    out.push('\n');
    for r in rows {
        let predicted = r.predicted.map_or_else(|| "—".to_owned(), amount);
        let error = r.error_permille().map_or_else(String::new, |e| {
            let sign = if e < 0 { "-" } else { "+" };
            format!("  ({sign}{}.{}%)", e.unsigned_abs() / 10, e.unsigned_abs() % 10)
        });
        let _ = writeln!(
            out,
            "  line {:>5} GPU {}: {:<26} logged {:>14}, predicted {:>14}{error}",
            r.line,
            r.gpu,
            r.term,
            amount(r.logged),
            predicted
        );
    }
    for n in notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}

/// The what-ifs, one line each, after the residual they carry.
fn what_ifs_report(w: &WhatIfs) -> String {
    let residual = format_bytes(w.residual_bytes.unsigned_abs(), UnitSystem::Binary);
    let sign = if w.residual_bytes < 0 { "-" } else { "+" };
    let mut out = format!(
        "\nWhat-ifs with the logged figures as facts (each: the plan's prediction {sign}{residual}, the log's residual)\n"
    );
    for r in &w.rows {
        let _ = writeln!(
            out,
            "  {:<32} max_model_len {:>9}, utilization {:<5} {:<15} KV {:>12}, {:>14}, {}.{:02}x concurrency",
            r.change,
            shared::explain::thousands(r.max_model_len),
            r.gpu_memory_utilization,
            if r.starts { "starts" } else { "does not start" },
            format_bytes(r.available_kv_bytes, UnitSystem::Binary),
            format!("{} tokens", shared::explain::thousands(r.kv_cache_tokens)),
            r.max_concurrency_hundredths / 100,
            r.max_concurrency_hundredths % 100
        );
    }
    out
}

fn amount(a: Amount) -> String {
    match a {
        Amount::Bytes(b) => format_bytes(b, UnitSystem::Binary),
        Amount::Tokens(t) => format!("{} tokens", shared::explain::thousands(t)),
        Amount::Blocks(n) => format!("{} blocks", shared::explain::thousands(n)),
        Amount::Hundredths(h) => format!("{}.{:02}x", h / 100, h % 100),
        Amount::Permille(p) => format!("{}.{:03}", p / 1000, p % 1000),
    }
}

/// Each llama.cpp buffer: predicted vs logged, with the error.
fn buffers_report(checks: &[BufferCheck]) -> String {
    let mut out = String::from("\nllama.cpp buffers, predicted vs logged\n");
    for c in checks {
        let predicted = c.predicted_bytes.map_or_else(|| "—".to_owned(), b);
        let error = c.error_percent().map(|e| format!(" ({e:+.1} %)")).unwrap_or_default();
        let note = c.note.map(|n| format!(" — {n}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  line {:>5} {:<11} {:<8} predicted {predicted:>10}, logged {:>10}{error}{note}",
            c.line,
            c.device,
            c.buffer,
            b(c.logged_bytes)
        );
    }
    out
}
