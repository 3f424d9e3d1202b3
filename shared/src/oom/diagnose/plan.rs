//! Rules from the plan.

use super::board::{Board, fix};
use super::facts::Facts;
use super::text::{gib, pct, times};
use super::{CauseId, DiagnosisFix, FixId, Plan, PlanCheck, PresetModel};
use crate::catalog;
use crate::engines::commands::Shorten;
use crate::estimate::{Estimate, GpuPeak, Scenario, Verdict};
use crate::explain::thousands;
use crate::fixes::{self, FixKind, GivesUp};
use crate::model::Model;
use crate::solve;

/// The plan checked against the error's facts; none for a plan that does
/// not pass its checks.
pub(super) fn from_the_plan(plan: Plan, presets: PresetModel, f: &Facts, b: &mut Board) -> Option<PlanCheck> {
    let model = plan.model;
    let mut s = plan.scenario.clone();
    // Check the plan on the GPU that failed: its capacity is a fact.
    if let Some(t) = f.total {
        let same = s.gpus.windows(2).all(|w| w[0].capacity_bytes == w[1].capacity_bytes);
        let slots: Vec<usize> = if same {
            (0..s.gpus.len()).collect()
        } else {
            f.r.gpu_index.map(|i| i as usize).filter(|&i| i < s.gpus.len()).into_iter().collect()
        };
        let differs = slots.iter().any(|&i| s.gpus[i].capacity_bytes.abs_diff(t) > t / 100);
        if differs {
            b.notes.push(format!(
                "The plan is checked on the failing GPU's {} rather than the plan's {}.",
                gib(t),
                gib(s.gpus[slots[0]].capacity_bytes)
            ));
            // PyTorch's "total capacity" is CUDA's total, which vLLM and SGLang budget from.
            for i in slots {
                s.gpus[i].capacity_bytes = t;
                s.gpus[i].cuda_total_bytes = t;
            }
        }
    }
    let e = crate::estimate::estimate(model, s.clone().validate().ok()?);
    let g = fullest(&e);
    let cap = g.map_or(0, |g| g.capacity_bytes);
    let weights = g.map_or(0, |g| g.budget.weight_bytes);
    let need = g.map_or(0, |g| g.total_bytes);
    let fmt = s.weights.id();
    let name = &model.name;
    let check = PlanCheck {
        checked_against: checked_against(model, &s),
        model: name.clone(),
        weight_format: fmt.clone(),
        engine: s.engine.kind(),
        capacity_bytes: cap,
        weight_bytes: weights,
        need_bytes: need,
        fits: e.fits,
        verdict: e.verdict,
    };
    let gpu_word = if s.gpus.len() > 1 { format!("{} × {}", s.gpus.len(), gib(cap)) } else { gib(cap) };

    match e.verdict {
        Verdict::DoesNotFitAtLoad { gpu, shortfall_bytes } => {
            // What the engine allocates at load beside the weights (llama.cpp
            // its KV cache and compute buffers): when that is the larger
            // part, no weight format is the answer.
            let rest = g.map_or(0, |g| {
                g.budget.kv_cache_bytes.saturating_add(g.budget.state_bytes).saturating_add(g.budget.activation_bytes)
            });
            // Only llama.cpp (and Ollama's runner of it) allocates those at
            // load; transformers' and the servers' load is the weights.
            let at_load =
                matches!(s.engine.kind(), crate::engines::EngineKind::LlamaCpp | crate::engines::EngineKind::Ollama);
            if at_load && weights <= cap && rest > weights {
                b.add(
                    CauseId::KvCacheGrowth,
                    90,
                    format!(
                        "the weights of {name} in {fmt} take {} of the {} GPU {gpu}, but the KV cache and the \
                         compute buffers the {} engine allocates at load add {}: the plan is {} short",
                        gib(weights),
                        gib(cap),
                        s.engine.kind().id(),
                        gib(rest),
                        gib(shortfall_bytes)
                    ),
                );
                if let Some(better) = solve::least_aggressive_format(model, &s) {
                    b.add(
                        CauseId::WeightsTooLarge,
                        60,
                        format!("in {} the whole plan fits ({})", better.id(), better.describe()),
                    );
                }
            } else {
                let text = if weights > cap {
                    format!(
                        "the weights of {name} in {fmt} need {}{}, {} the {gpu_word} GPU",
                        gib(weights),
                        if s.gpus.len() > 1 { format!(" on GPU {gpu}") } else { String::new() },
                        times(weights, cap)
                    )
                } else {
                    format!(
                        "the weights of {name} in {fmt} ({}) and the CUDA context are {} more than the {} GPU {gpu} has",
                        gib(weights),
                        gib(shortfall_bytes),
                        gib(cap)
                    )
                };
                b.add(CauseId::WeightsTooLarge, 90, text);
                match solve::least_aggressive_format(model, &s) {
                    Some(better) => b.add(
                        CauseId::WeightsTooLarge,
                        90,
                        format!("in {} the whole plan fits ({})", better.id(), better.describe()),
                    ),
                    None => {
                        let lightest = crate::formats::WeightFormat::CHOICES
                            .iter()
                            .copied()
                            .filter(|&w| solve::runs_on_gpus(w, &s.engine, &s.gpus))
                            .filter_map(|w| {
                                let mut t = s.clone();
                                t.weights = w;
                                let e = crate::estimate::estimate(model, t.validate().ok()?);
                                Some((w, fullest(&e).map_or(0, |g| g.budget.weight_bytes)))
                            })
                            .min_by_key(|(_, bytes)| *bytes);
                        let even = lightest.map_or(String::new(), |(w, bytes)| {
                            format!(": even in {} the weights need {} per GPU", w.id(), gib(bytes))
                        });
                        b.add(
                            CauseId::TooLargeOverall,
                            95,
                            format!(
                                "no weight format the {} engine runs fits {name} on {gpu_word}{even}",
                                s.engine.kind().id()
                            ),
                        );
                    }
                }
            }
        }
        Verdict::RunsOutAtToken { gpu, token, generated } => {
            b.add(
                CauseId::KvCacheGrowth,
                90,
                format!(
                    "the plan runs out on GPU {gpu} at token {} ({} generated) of the planned {}: the KV cache grows {} \
                     per token per sequence ({} for the whole run)",
                    thousands(token),
                    thousands(generated),
                    thousands(s.sequence_tokens()),
                    gib(e.kv_bytes_per_token),
                    gib(e.kv_demand_bytes)
                ),
            );
            heavy_weights(b, name, &fmt, weights, cap);
        }
        Verdict::RunsOutInPrefill { gpu, shortfall_bytes } => {
            b.add(
                CauseId::KvCacheGrowth,
                85,
                format!(
                    "processing the {}-token prompt × {} needs {} more than GPU {gpu} has: the cache and activations \
                     of the prompt do not fit",
                    thousands(s.prompt_tokens),
                    s.concurrency,
                    gib(shortfall_bytes)
                ),
            );
            heavy_weights(b, name, &fmt, weights, cap);
        }
        Verdict::EngineRefuses { gpu, largest_context } => {
            if largest_context == 0 {
                b.add(
                    CauseId::WeightsTooLarge,
                    85,
                    format!(
                        "after the weights of {name} in {fmt} ({}) the engine has no memory left for its cache on GPU {gpu}",
                        gib(weights)
                    ),
                );
            } else {
                b.add(
                    CauseId::KvCacheGrowth,
                    90,
                    format!(
                        "the engine's cache on GPU {gpu} holds at most {} tokens, less than the context it is configured for",
                        thousands(largest_context)
                    ),
                );
                b.limits
                    .push(format!("the plan starts with a context of at most {} tokens", thousands(largest_context)));
            }
        }
        Verdict::Fits { .. } => plan_fits(f, b, &e, &s, need, cap),
    }
    if !e.fits {
        limits(model, &s, b);
    }
    imbalance(f, b, &e, model, &s);
    for x in fixes::fixes(model, &s) {
        // An engine that does not load the format is the plan's mistake, not
        // a cause of the error: the estimate's verdict says so.
        let Some((id, cause)) = map_fix(x.kind) else { continue };
        b.fix(DiagnosisFix {
            id,
            cause,
            title: x.title,
            gives_up: x.gives_up,
            saves_bytes: Some(x.saves_bytes).filter(|&v| v > 0 || x.kind != FixKind::BiggerGpu),
            fits: Some(x.fits),
            code: x.code,
        });
    }
    if !e.fits
        && let Some(x) = smaller_model(model, &s, need, presets)
    {
        b.fix(x);
    }
    Some(check)
}

/// Which plan the error was checked against, as a question.
fn checked_against(model: &Model, s: &Scenario) -> String {
    format!(
        "Checked against the plan: {} in {} with {}, {} + {} tokens × {}. Is this the model and workload that ran? \
         If not, set them in the plan and diagnose again.",
        model.name,
        s.weights.id(),
        s.engine.kind().id(),
        thousands(s.prompt_tokens),
        thousands(s.max_new_tokens),
        s.concurrency
    )
}

/// The GPU that is fullest relative to its capacity.
fn fullest(e: &Estimate) -> Option<&GpuPeak> {
    e.per_gpu.iter().max_by(|a, b| {
        let ra = a.total_bytes as f64 / a.capacity_bytes.max(1) as f64;
        let rb = b.total_bytes as f64 / b.capacity_bytes.max(1) as f64;
        ra.total_cmp(&rb)
    })
}

fn heavy_weights(b: &mut Board, name: &str, fmt: &str, weights: u64, cap: u64) {
    if cap > 0 && weights >= cap / 10 * 8 {
        b.add(
            CauseId::WeightsTooLarge,
            55,
            format!(
                "the weights of {name} in {fmt} take {} = {} of the GPU, leaving little for the cache",
                gib(weights),
                pct(weights, cap)
            ),
        );
    }
}

/// The plan fits an empty GPU: then leftovers decide.
fn plan_fits(f: &Facts, b: &mut Board, e: &Estimate, s: &Scenario, need: u64, cap: u64) {
    let spare = cap.saturating_sub(need);
    let others = f.others_total();
    if others > spare && others > 0 {
        b.add(
            CauseId::OtherProcesses,
            90,
            format!(
                "the plan needs {} of {} and fits an empty GPU, but the {} other processes hold leaves only {}",
                gib(need),
                gib(cap),
                gib(others),
                gib(cap.saturating_sub(others))
            ),
        );
    }
    if let Some(u) = f.r.reserved_unallocated_bytes
        && u > spare
    {
        b.add(
            CauseId::Fragmentation,
            80,
            format!(
                "the plan needs {} of {}, so it has {} to spare: the {} reserved but unallocated is more than that",
                gib(need),
                gib(cap),
                gib(spare),
                gib(u)
            ),
        );
    }
    // What the failing process held, best figure first: PyTorch 2.1+ gives
    // the whole process, older messages only what PyTorch reserved or allocated.
    let held = [(f.this_process, "held"), (f.r.reserved_bytes, "had reserved"), (f.r.allocated_bytes, "had allocated")]
        .into_iter()
        .find_map(|(bytes, verb)| bytes.map(|b| (b, verb)));
    if let Some((me, verb)) = held
        && me > need.saturating_add(need / 10)
    {
        b.add(
            CauseId::KvCacheGrowth,
            70,
            format!(
                "the failing process {verb} {}, {} more than the {} the plan needs at its peak (which fits with {} to \
                 spare): it ran more than the plan — longer inputs, more sequences, another model or format, or in a \
                 notebook an earlier model still referenced",
                gib(me),
                gib(me - need),
                gib(need),
                gib(spare)
            ),
        );
        // A 7B fp16 plan with 7 GiB more held looks exactly like a second
        // copy of the model left referenced in the session (a script's or
        // notebook's: a serving engine holds no earlier model).
        if f.serving.is_none() {
            b.fix(fix(
            FixId::EmptyCache,
            CauseId::KvCacheGrowth,
            format!(
                "Free an earlier model still referenced in the notebook ({} held beyond the plan), or restart the kernel",
                gib(me - need)
            ),
            GivesUp::Nothing,
            Some(me - need),
            format!("del model; import gc; gc.collect(); {}.empty_cache()", f.torch_module()),
        ));
        }
        if let Verdict::Fits { max_concurrency } = e.verdict {
            b.limits.push(format!(
                "the plan's sequences of {} tokens fit up to {max_concurrency} at once",
                thousands(s.sequence_tokens())
            ));
        }
    } else {
        // The paste ran out all the same: said, so "fits" never reads as a
        // verdict on the run that failed.
        let yet = match (f.r.kind, f.requested) {
            (Some(k), _) if k.is_pool_full() => " The run in the paste filled its KV cache all the same: more or \
                                                 longer requests ran at once than the plan has."
                .to_owned(),
            // A spare smaller than the one request that failed: the plan is
            // within that request of the GPU's edge, where its own error lies.
            (Some(_), Some(q)) if q > spare => format!(
                " The run in the paste asked for {} at once, more than that: the plan sits at the GPU's edge, \
                 within its own error.",
                gib(q)
            ),
            (Some(_), _) => " The run in the paste ran out all the same: it differed from the plan (settings, \
                             model, other processes on the GPU), or the engine used more than the plan counts."
                .to_owned(),
            (None, _) => String::new(),
        };
        b.notes.push(format!("The plan fits this GPU with {} to spare ({}).{yet}", gib(spare), verdict_word(e)));
    }
}

fn verdict_word(e: &Estimate) -> String {
    match e.verdict {
        Verdict::Fits { max_concurrency } => format!("up to {max_concurrency} sequences of this length"),
        _ => "it does not fit".into(),
    }
}

/// Step 3: the limits that fit.
fn limits(model: &Model, s: &Scenario, b: &mut Board) {
    match s.engine.kind().commands().shorten {
        Shorten::NewTokens(_) => match solve::max_new_tokens(model, s) {
            Some(n) => b.limits.push(format!(
                "after the {}-token prompt, at most {} new tokens fit (not {})",
                thousands(s.prompt_tokens),
                thousands(n),
                thousands(s.max_new_tokens)
            )),
            None => b.limits.push(format!("even the {}-token prompt alone does not fit", thousands(s.prompt_tokens))),
        },
        Shorten::Context(_) => {
            let n = solve::max_context(model, &solve::with_length(s, s.sequence_tokens()));
            b.limits.push(format!("sequences of at most {} tokens fit at concurrency {}", thousands(n), s.concurrency));
        }
    }
}

/// Step 4 from the plan: the failing GPU held more than a balanced split puts there.
fn imbalance(f: &Facts, b: &mut Board, e: &Estimate, model: &Model, s: &Scenario) {
    if e.per_gpu.len() < 2 || e.pipeline_stages < 2 {
        return;
    }
    let Some(i) = f.r.gpu_index.map(|i| i as usize) else { return };
    let Some(g) = e.per_gpu.get(i) else { return };
    let Some(held) = f.this_process.or(f.r.reserved_bytes) else { return };
    // More than its share, but no more than the whole plan: the plan's own
    // memory piled up unevenly, rather than a different, bigger workload.
    let whole = e.per_gpu.iter().map(|g| g.total_bytes).fold(0, u64::saturating_add);
    if !g.fits || held <= g.total_bytes.saturating_add(g.total_bytes / 10) || held > whole.saturating_add(whole / 10) {
        return;
    }
    b.add(
        CauseId::GpuImbalance,
        75,
        format!(
            "GPU {i} held {}, more than the {} a balanced split of the plan puts there: the split was uneven",
            gib(held),
            gib(g.total_bytes)
        ),
    );
    let repo = model.repo.clone().unwrap_or_else(|| "MODEL_ID".into());
    let code = match &e.device_map {
        Some(m) => m.snippet(&repo, e.weight_format),
        None => {
            let layers: Vec<usize> = e.per_gpu.iter().map(|g| g.layers[1] - g.layers[0]).collect();
            // An engine that splits so already has no split to offer.
            let Some(code) = crate::engines::commands::rebalance(model, s, &repo, &layers) else { return };
            code
        }
    };
    b.fix(fix(
        FixId::DeviceMap,
        CauseId::GpuImbalance,
        "Split the layers in proportion to each GPU's memory".into(),
        GivesUp::Nothing,
        Some(held.saturating_sub(g.total_bytes)),
        code,
    ));
}

fn map_fix(kind: FixKind) -> Option<(FixId, CauseId)> {
    Some(match kind {
        FixKind::Engine => return None,
        FixKind::SdpaAttention => (FixId::SdpaAttention, CauseId::KvCacheGrowth),
        FixKind::HigherUtilization => (FixId::GpuMemoryUtilization, CauseId::KvCacheGrowth),
        FixKind::KvCacheDtype => (FixId::KvCacheDtype, CauseId::KvCacheGrowth),
        FixKind::MaxNewTokens => (FixId::MaxNewTokens, CauseId::KvCacheGrowth),
        FixKind::MaxModelLen => (FixId::MaxModelLen, CauseId::KvCacheGrowth),
        FixKind::Concurrency => (FixId::Concurrency, CauseId::KvCacheGrowth),
        FixKind::WeightFormat => (FixId::WeightFormat, CauseId::WeightsTooLarge),
        FixKind::OffloadLayers | FixKind::Fit => (FixId::OffloadLayers, CauseId::WeightsTooLarge),
        FixKind::SplitLayers => (FixId::DeviceMap, CauseId::GpuImbalance),
        FixKind::MoreGpus => (FixId::MoreGpus, CauseId::TooLargeOverall),
        FixKind::BiggerGpu => (FixId::BiggerGpu, CauseId::TooLargeOverall),
    })
}

/// The largest preset of the same family, smaller than the model, that fits the plan.
fn smaller_model(model: &Model, s: &Scenario, need: u64, presets: PresetModel) -> Option<DiagnosisFix> {
    let params = model.parameters();
    let mut candidates: Vec<Model> = catalog::MODEL_PRESETS
        .iter()
        .filter_map(presets)
        // The same family is the same architecture and tokenizer (a reader
        // family holds generations apart: Llama 2's 32,000-token vocabulary
        // is not Llama 3's 128,256).
        .filter(|m| {
            m.arch.family == model.arch.family
                && m.arch.text.vocab_size == model.arch.text.vocab_size
                && m.parameters() < params
                && m.name != model.name
                // A model trained shorter than the requests would refuse them.
                && m.arch.text.max_position_embeddings.is_none_or(|t| t >= s.sequence_tokens())
        })
        .collect();
    crate::order::sort_by_key(&mut candidates, |m| std::cmp::Reverse(m.parameters()));
    let m = candidates.into_iter().find(|m| solve::fits(m, s))?;
    let e = crate::estimate::estimate(&m, s.clone().validate().ok()?);
    let after = fullest(&e).map_or(0, |g| g.total_bytes);
    let repo = m.repo.clone().unwrap_or_else(|| m.name.clone());
    // The plan's whole set-up with the model swapped: its parallelism,
    // context, utilisation, flags and formats are what was checked to fit.
    let code = match s.engine {
        crate::engines::Engine::Vllm(_) | crate::engines::Engine::Sglang(_) => {
            s.engine.kind().commands().launch.map_or_else(String::new, |launch| launch(&m, s, &repo))
        }
        crate::engines::Engine::LlamaCpp(_) => crate::engines::llamacpp::server_command(&m, s),
        crate::engines::Engine::Ollama(_) => crate::engines::ollama::ollama_command(&m, s),
        crate::engines::Engine::Transformers(_) => crate::engines::transformers::weight_code(&m, s.weights, &repo),
    };
    Some(DiagnosisFix {
        id: FixId::SmallerModel,
        cause: CauseId::TooLargeOverall,
        title: format!(
            "Run {} instead: a smaller model of the same family ({} parameters), giving up model size",
            m.name,
            thousands(m.parameters())
        ),
        gives_up: GivesUp::Quality,
        saves_bytes: Some(need.saturating_sub(after)).filter(|&v| v > 0),
        fits: Some(true),
        code,
    })
}
