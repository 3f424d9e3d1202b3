//! `headroom estimate`: flags → `Model` + `Scenario` → breakdown or JSON.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use shared::engines::llamacpp;
use shared::estimate::{self, Estimate, verdict_text};
use shared::solve::{self, Question, Solution};
use shared::units::UnitSystem;

use super::checkpoint;
use super::plan::{self, ModelSource, PlanArgs};
use super::render;

/// Version of the `--json` object; bumped only on incompatible changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// A model preset id (see `headroom models`).
    #[arg(long, conflicts_with_all = ["config", "checkpoint", "hf", "ollama"], required_unless_present_any = ["config", "checkpoint", "hf", "ollama"])]
    model: Option<String>,
    /// A Hugging Face config.json (`-` reads standard input); with
    /// --checkpoint or --hf, it replaces the checkpoint's own.
    #[arg(long)]
    config: Option<PathBuf>,
    /// A local checkpoint: a folder with config.json and safetensors (or a
    /// Hugging Face cache entry), a .safetensors file, or a .gguf file (the
    /// first part of a split GGUF). Only headers are read: exact weights.
    #[arg(long, value_name = "PATH", conflicts_with = "hf")]
    checkpoint: Option<PathBuf>,
    /// A Hub repo, ORG/NAME[@REVISION][:PICK]: config.json, the index and
    /// each shard's header over HTTP Range requests (HF_ENDPOINT, HF_TOKEN);
    /// PICK is a .gguf file of the repo or a quantisation tag (`:Q4_K_M`)
    /// naming one, whose header is read instead.
    #[arg(long, value_name = "REPO")]
    hf: Option<String>,
    /// With --hf: the .gguf file of the repo to read (first part of a split
    /// GGUF), as `--hf ORG/NAME:FILE` names it.
    #[arg(long, value_name = "FILE", requires = "hf")]
    file: Option<String>,
    /// A model Ollama has pulled, [HOST/][NAMESPACE/]MODEL[:TAG]: its GGUF
    /// blob's header from Ollama's storage (OLLAMA_MODELS, else
    /// ~/.ollama/models). Plans it in Ollama unless --engine says otherwise.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["checkpoint", "hf"])]
    ollama: Option<String>,
    #[command(flatten)]
    plan: PlanArgs,
    /// Answer a question: fits, oom-token, max-concurrency, max-context,
    /// max-new-tokens, weights, min-gpus, smallest-gpu, max-gpu-layers.
    #[arg(long, value_name = "WHAT")]
    solve: Option<String>,
    /// Print one JSON object (documented in docs/cli.md).
    #[arg(long)]
    json: bool,
    /// Also print the terms behind every figure.
    #[arg(long)]
    explain: bool,
    /// Print sizes in GB instead of GiB.
    #[arg(long)]
    decimal: bool,
}

#[derive(Serialize)]
struct JsonOut<'a> {
    schema_version: u32,
    #[serde(flatten)]
    estimate: &'a Estimate,
    verdict_text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    solution: Option<Solution>,
}

pub fn run(mut args: EstimateArgs) -> anyhow::Result<()> {
    if let Some(name) = &args.ollama {
        let config = args.config.as_deref().map(plan::read_input).transpose()?;
        let pulled = checkpoint::ollama::resolve(&checkpoint::ollama::models_dir()?, name)?;
        if pulled.projector {
            eprintln!(
                "note: {} has a projector layer (a separate GGUF); its bytes are not in the model's header and are not counted",
                pulled.name
            );
        }
        let model = checkpoint::model(pulled.name.clone(), &pulled.files, Some(&pulled.gguf), config)?;
        // The engine left at its default: the one that pulled it.
        if args.plan.engine == "transformers" {
            args.plan.engine = "ollama".into();
        }
        return finish(args, model);
    }
    let given = checkpoint::from_flags(
        args.checkpoint.as_deref(),
        args.hf.as_deref(),
        args.file.as_deref(),
        args.config.as_ref(),
    )?;
    let model = match given {
        Some(model) => model,
        None => {
            let source = ModelSource::from_flags(args.model.as_ref(), args.config.as_ref())
                .context("give --model PRESET, --config PATH, --checkpoint PATH or --hf ORG/NAME")?;
            plan::load_model(source, &args.plan)?
        }
    };
    finish(args, model)
}

/// The estimate (or answer) of `model` with the plan flags.
fn finish(args: EstimateArgs, model: shared::model::Model) -> anyhow::Result<()> {
    let scenario = plan::scenario(&args.plan, &model)?;
    let question = match &args.solve {
        Some(q) => Some(Question::parse(q).with_context(|| {
            let all: Vec<&str> = Question::ALL.iter().map(|q| q.id()).collect();
            format!("unknown --solve `{q}` (one of {})", all.join(", "))
        })?),
        None => None,
    };
    let solution = question.map(|q| solve::solve(&model, &scenario, q));
    // What llama.cpp's `--fit` loads instead: not part of the estimate
    // (whose figures are the flags as given), printed beside its report.
    let free = args.plan.fit_free.as_deref().map(plan::free_memory).transpose()?;
    let fit = llamacpp::predict_fit(&model, &scenario, free.as_deref());
    // One plan: its estimate, and the command it starts (Ollama's llama-server).
    let planned = shared::engines::EnginePlan::new(&model, scenario);
    let launched = planned.launched();
    let estimate = estimate::of(&planned);
    let units = if args.decimal { UnitSystem::Decimal } else { UnitSystem::Binary };
    if args.json {
        let out = JsonOut {
            schema_version: JSON_SCHEMA_VERSION,
            estimate: &estimate,
            verdict_text: verdict_text(&estimate, units),
            solution,
        };
        let mut value = serde_json::to_value(&out)?;
        if let (Some(fit), Some(report)) = (&fit, value.get_mut("engine_report").and_then(|r| r.as_object_mut())) {
            report.insert("fit".into(), serde_json::to_value(fit)?);
        }
        super::emit(&(serde_json::to_string_pretty(&value)? + "\n"))?;
    } else {
        super::emit(&render::breakdown(&estimate, fit.as_ref(), launched.as_deref(), units, args.explain))?;
        if let Some(s) = solution {
            super::emit(&format!("\n{}: {}\n", s.question.id(), s.explanation))?;
        }
    }
    Ok(())
}
