//! The verdict in words.

use crate::engines::{EngineKind, EngineReport};
use crate::explain::thousands;
use crate::units::{UnitSystem, format_bytes};

use super::{Estimate, Verdict};

/// The verdict as a sentence. A plan whose engine does not load its weight
/// format, or keeps no KV cache of its dtype, says so first, with the
/// engine's reason: its figures are only what that format would take.
pub fn verdict_text(e: &Estimate, units: UnitSystem) -> String {
    let mut text = verdict_sentence(e, units);
    for why in [&e.kv_refused, &e.setting_refused].into_iter().flatten() {
        text = format!("{why} — {text}");
    }
    let Some(why) = e.engine_refuses else { return text };
    let by = EngineKind::runner_of(e.weight_format).map_or("another engine", EngineKind::name);
    format!(
        "{} does not load {} weights ({why}; {by} does) — as if it did: {text}",
        e.engine.name(),
        e.weight_format.id()
    )
}

fn verdict_sentence(e: &Estimate, units: UnitSystem) -> String {
    let gpu_name = |g: usize| {
        if e.per_gpu.len() > 1 { format!(" on GPU {g}") } else { String::new() }
    };
    let report = e.engine_report.as_ref();
    // The engine's defaults change a plan that does not fit as written: the
    // headline is what the engine does, the plan as written its reason.
    let fit_moves = report.is_some_and(EngineReport::fit_moves);
    let by_fit = || {
        format!(
            "Loads with {}'s default --fit, which keeps layers or experts in host memory (slower); with every layer on the GPU",
            e.engine.name()
        )
    };
    match e.verdict {
        Verdict::Fits { max_concurrency } => {
            let workload = e.prompt_tokens.saturating_add(e.max_new_tokens);
            if let Some(n) = report.and_then(EngineReport::prompt_cut_to) {
                return format!(
                    "Runs with each prompt cut: {}'s context (num_ctx) is {} tokens, your requests {} (PARAMETER num_ctx {workload} to keep them)",
                    e.engine.name(),
                    thousands(n),
                    thousands(workload)
                );
            }
            // Memory is not the limit past the trained context (issue 34:
            // SGLang with a 200k prompt said "Fits").
            if let Some(trained) = e.beyond_training() {
                return format!(
                    "Past the model's training: it was trained to {} tokens, your requests are {} (the memory fits)",
                    thousands(trained),
                    thousands(workload)
                );
            }
            // A pool engine reserves its share whatever the workload; the others use what they need.
            let reserves = report.is_some_and(EngineReport::reserves_a_pool);
            format!(
                "Fits: {} tokens × {} sequence{}{} {} of {}; up to {} concurrent sequences of this length fit",
                thousands(workload),
                e.concurrency,
                if e.concurrency == 1 { "" } else { "s" },
                if reserves { " — the engine reserves" } else { " use" },
                format_bytes(e.total_bytes, units),
                format_bytes(e.capacity_bytes, units),
                thousands(max_concurrency)
            )
        }
        Verdict::DoesNotFitAtLoad { gpu, shortfall_bytes } if fit_moves => format!(
            "{}{} the weights alone would need {} more",
            by_fit(),
            gpu_name(gpu),
            format_bytes(shortfall_bytes, units)
        ),
        Verdict::DoesNotFitAtLoad { gpu, shortfall_bytes } => format!(
            "Does not fit at load{}: the weights alone need {} more",
            gpu_name(gpu),
            format_bytes(shortfall_bytes, units)
        ),
        Verdict::RunsOutInPrefill { gpu, shortfall_bytes } if fit_moves => format!(
            "{}{} it would run out processing the prompt: {} short",
            by_fit(),
            gpu_name(gpu),
            format_bytes(shortfall_bytes, units)
        ),
        Verdict::RunsOutInPrefill { gpu, shortfall_bytes } => format!(
            "Loads, but runs out while processing the prompt{}: {} short",
            gpu_name(gpu),
            format_bytes(shortfall_bytes, units)
        ),
        Verdict::EngineRefuses { largest_context, .. } => {
            let workload = e.prompt_tokens.saturating_add(e.max_new_tokens);
            let (engine, why) = match report {
                Some(r) => r.refusal(workload),
                None => ("The engine", String::new()),
            };
            let flag = report.and_then(|r| r.context_flag(workload)).filter(|_| workload > 0);
            // As launched, the engine refuses its configured context: say
            // which (given, or its default) and what fits; its own error is
            // the engine report's.
            match report.and_then(EngineReport::configured_context) {
                Some((context, set)) if largest_context > 0 && largest_context < context => {
                    let launched = match report.and_then(|r| r.context_flag(context)) {
                        Some(given) if set => format!("{engine} refuses to start with {given}"),
                        _ => format!(
                            "{engine} refuses to start as launched: its context defaults to the model's {} tokens",
                            thousands(context)
                        ),
                    };
                    let yours = match flag {
                        Some(flag) if largest_context >= workload && !set => {
                            format!("; your {} run with {flag}", thousands(workload))
                        }
                        _ => String::new(),
                    };
                    format!("{launched}: only {} tokens fit{yours}", thousands(largest_context))
                }
                _ => {
                    if let Some(flag) = flag.filter(|_| largest_context >= workload) {
                        format!(
                            "Fits your {} tokens with {flag}; as configured, {engine} refuses to start: {why}",
                            thousands(workload)
                        )
                    } else if largest_context > 0 {
                        format!(
                            "{engine} refuses: {why} — the largest context that works is {} tokens",
                            thousands(largest_context)
                        )
                    } else {
                        format!("{engine} refuses to start: {why}")
                    }
                }
            }
        }
        Verdict::RunsOutAtToken { gpu, token, generated } => format!(
            "Runs out at token {}{} (after {} generated tokens)",
            thousands(token),
            gpu_name(gpu),
            thousands(generated)
        ),
    }
}
