//! Summary and checklist.

use super::facts::Facts;
use super::text::{capitalise, gib, lower_first};
use super::{Cause, ChecklistItem, ChecklistStep, LIKELY_SCORE, PlanCheck};

pub(super) fn summary(causes: &[Cause], f: &Facts) -> String {
    let Some(top) = causes.first() else {
        return format!(
            "An out-of-memory error on {}; its figures alone do not tell the cause (what would tell it is listed below).",
            f.gpu_label()
        );
    };
    let because = top.evidence.first().map_or(String::new(), |e| format!(": {e}"));
    let on =
        if f.r.gpu_index.is_some() || f.total.is_some() { format!(" on {}", f.gpu_label()) } else { String::new() };
    format!("Most likely{on}: {}{because}.", lower_first(top.title.as_str()))
}

pub(super) fn checklist(
    causes: &[Cause],
    f: &Facts,
    plan: Option<&PlanCheck>,
    limits: &[String],
) -> Vec<ChecklistItem> {
    ChecklistStep::ALL
        .iter()
        .map(|&step| {
            let here: Vec<&Cause> = causes.iter().filter(|c| c.step == step).collect();
            let flagged = here.iter().any(|c| c.score >= LIKELY_SCORE);
            let finding = match here.first().and_then(|c| c.evidence.first()) {
                Some(e) if step != ChecklistStep::Limits => capitalise(e),
                _ => default_finding(step, f, plan, limits),
            };
            ChecklistItem { step, number: step.number(), question: step.question().into(), finding, flagged }
        })
        .collect()
}

fn default_finding(step: ChecklistStep, f: &Facts, plan: Option<&PlanCheck>, limits: &[String]) -> String {
    match step {
        ChecklistStep::Precision => match plan {
            Some(p) => format!(
                "The weights of {} in {} take {} of the {} GPU: they fit.",
                p.model,
                p.weight_format,
                gib(p.weight_bytes),
                gib(p.capacity_bytes)
            ),
            None if f.r.workload.is_some() => "Unknown: the paste does not say how large the models are.".into(),
            None => "Unknown without the model: give the plan (--model or --config) to check the weights.".into(),
        },
        ChecklistStep::Growth => match plan {
            Some(p) if p.fits => "The plan's cache and activations fit at its full length.".into(),
            _ => "No sign that memory ran out while growing.".into(),
        },
        ChecklistStep::Limits => match limits.first() {
            Some(l) => capitalise(l),
            None if plan.is_some() => "The plan's length and concurrency fit.".into(),
            None if f.r.workload.is_some() => {
                "Not computed for this workload: lower the batch (for images, the resolution or frames) until it fits."
                    .into()
            }
            None => "Unknown without the plan: give --model or --config with the workload flags.".into(),
        },
        ChecklistStep::Balance => {
            if f.r.same_on_every_gpu {
                "Every GPU ran out alike, asking for the same memory: a symmetric split, not an uneven one.".into()
            } else if f.r.gpus_seen.len() > 1 {
                "Several GPUs ran out; no sign that one carries more than its share.".into()
            } else if f.r.distributed_ranks > 1 && f.r.workload == Some(crate::oom::Workload::Training) {
                format!(
                    "{} distributed ranks ran, one GPU each: unless sharded (FSDP, ZeRO-3), each holds a whole copy \
                     of the model.",
                    f.r.distributed_ranks
                )
            } else if f.split() {
                "The work is split over several GPUs; the paste does not show one carrying more than its share.".into()
            } else {
                "One GPU is involved: nothing to balance.".into()
            }
        }
        ChecklistStep::Leftovers => {
            match (f.r.reserved_unallocated_bytes, f.share(f.r.reserved_unallocated_bytes.unwrap_or(0))) {
                (Some(u), Some(share)) => format!(
                    "Reserved but unallocated is only {} = {share} of capacity, and no other process holds much.",
                    gib(u)
                ),
                _ => format!(
                    "The error does not say; {} or connect the agent to see who holds the GPU.",
                    f.process_tool().0
                ),
            }
        }
    }
}
