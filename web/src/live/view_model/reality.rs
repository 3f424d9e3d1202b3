//! The plan against the real GPUs: does it fit *now*, with what is actually
//! free; the plan's bar over the real memory; and the balance between a
//! host's GPUs next to the plan's split.

use shared::estimate::CUDA_CONTEXT_BYTES;
use shared::link::GpuChoice;
use shared::live::PlanGpu;
use shared::protocol::{Field, GpuInfo};
use shared::units::{UnitSystem, format_bytes};

use super::cards::segments;
use super::host::HostModel;
use crate::html::bar::{CapacityLine, StackedBar};

/// The live GPU the plan targets: plan GPU `k` runs on the host's GPU `gpu + k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub host: u32,
    pub gpu: u32,
}

/// What the GPU input becomes for a live GPU: its catalog entry when the
/// agent simulates one of exactly that size, else its real capacity.
pub fn gpu_choice(info: &GpuInfo) -> Option<GpuChoice> {
    let total = *info.memory_total_bytes.value()?;
    Some(GpuChoice::of_device(info.catalog_id.as_deref(), total))
}

/// "Does it fit now?"
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NowVerdict {
    /// `None` while there is no reading to judge by.
    pub fits: Option<bool>,
    pub text: String,
    /// One plan GPU laid over its real GPU each: what others hold, the
    /// plan's parts, what would stay free.
    pub bars: Vec<StackedBar>,
}

impl NowVerdict {
    pub fn key(&self) -> &'static str {
        match self.fits {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        }
    }
}

use super::fmt::pct;

/// One plan GPU against one real reading `(total, free)`.
fn now_bar(
    plan: &PlanGpu,
    gpu: u32,
    host: &str,
    reading: (u64, u64),
    context: Option<u64>,
    units: UnitSystem,
) -> StackedBar {
    let b = |x: u64| format_bytes(x, units);
    let (total, free) = reading;
    let taken = total.saturating_sub(free);
    let overhead = adjusted(plan.budget.overhead_bytes, context);
    let need = plan.total_bytes - plan.budget.overhead_bytes + overhead;
    let scale = total.max(taken + need);
    let fits = need <= free;
    let parts = [
        ("live-used", "In use now (other processes and the driver)", taken),
        ("seg-weights", "Plan: weights", plan.budget.weight_bytes),
        ("seg-kv", "Plan: KV cache", plan.budget.kv_cache_bytes),
        ("seg-act", "Plan: activations", plan.budget.activation_bytes),
        ("seg-overhead", "Plan: overhead", overhead),
        ("live-free", "Free after loading", free.saturating_sub(need)),
    ];
    let segments = segments(parts.into_iter().filter(|p| p.2 > 0), scale, units);
    let summary = if fits {
        format!("needs {} of {} free: {} to spare", b(need), b(free), b(free - need))
    } else {
        format!("needs {} but {} is free: {} short", b(need), b(free), b(need - free))
    };
    StackedBar {
        label: format!("plan GPU {} → GPU {gpu} on {host}", plan.index),
        segments,
        capacity: Some(CapacityLine { at: pct(total, scale), title: "real capacity" }),
        aria: summary.clone(),
        summary,
        fits,
    }
}

/// The plan's overhead with a measured CUDA context instead of the assumed one.
pub fn adjusted(overhead: u64, context: Option<u64>) -> u64 {
    match context {
        Some(c) => overhead.saturating_sub(CUDA_CONTEXT_BYTES.min(overhead)) + c,
        None => overhead,
    }
}

/// The plan's GPUs `plan` on `host` from GPU `target` on; `context` is a
/// measured CUDA context cost to use instead of the calculator's assumption.
pub fn verdict_now(
    plan: &[PlanGpu],
    host: &HostModel,
    target: u32,
    context: Option<u64>,
    units: UnitSystem,
) -> NowVerdict {
    let name = host.name();
    let b = |x: u64| format_bytes(x, units);
    let unknown = |text: String| NowVerdict { fits: None, text, bars: Vec::new() };
    let Some(sample) = &host.latest else { return unknown(format!("Fits now? Waiting for a reading from {name}.")) };
    let have = sample.gpus.iter().filter(|g| g.index >= target).count();
    if have < plan.len() {
        return NowVerdict {
            fits: Some(false),
            text: format!(
                "Does not fit now: the plan uses {} GPUs, {name} has {have} from GPU {target} on.",
                plan.len()
            ),
            bars: Vec::new(),
        };
    }
    let mut bars = Vec::new();
    for (k, gpu) in plan.iter().enumerate() {
        let index = target + k as u32;
        let reading = host.reading(index).map(|g| &g.memory);
        let Some(Field::Value(m)) = reading else {
            return unknown(format!("Fits now? GPU {index} on {name} reports no memory reading."));
        };
        bars.push(now_bar(gpu, index, &name, (m.total_bytes, m.free_bytes), context, units));
    }
    let short: Vec<&StackedBar> = bars.iter().filter(|b| !b.fits).collect();
    let gpus = match bars.len() {
        1 => format!("GPU {target} on {name}"),
        n => format!("GPUs {target}–{} on {name}", target + n as u32 - 1),
    };
    let text = if short.is_empty() {
        let spare = plan
            .iter()
            .zip(target..)
            .filter_map(|(p, i)| {
                let need = p.total_bytes - p.budget.overhead_bytes + adjusted(p.budget.overhead_bytes, context);
                host.reading(i)?.memory.value().map(|m| m.free_bytes.saturating_sub(need))
            })
            .min()
            .unwrap_or(0);
        format!("Fits now on {gpus}, with what is free at this moment: {} to spare.", b(spare))
    } else {
        let worst = &short[0];
        let held = host.latest.as_ref().map(|_| others(host, target, plan.len())).unwrap_or_default();
        format!(
            "Does not fit now on {gpus}: {}.{held} Free that memory, or pick a GPU with more free.",
            worst.summary.replacen("needs", "the plan needs", 1)
        )
    };
    NowVerdict { fits: Some(short.is_empty()), text, bars }
}

/// ` vllm (pid 41000) holds 13.2 GiB.` — who holds the most on the target GPUs.
fn others(host: &HostModel, target: u32, n: usize) -> String {
    let Some(s) = &host.latest else { return String::new() };
    let top = s
        .gpus
        .iter()
        .filter(|g| g.index >= target && g.index < target + n as u32)
        .filter_map(|g| g.processes.value())
        .flatten()
        .filter_map(|p| Some((p, *p.used_bytes.value()?)))
        .max_by_key(|(_, bytes)| *bytes);
    match top {
        Some((p, bytes)) => format!(
            " {} (pid {}) holds {}.",
            p.name.value().map_or("A process", String::as_str),
            p.pid,
            format_bytes(bytes, UnitSystem::Binary)
        ),
        None => String::new(),
    }
}

/// The overhead term with a measured context, for the "fits now" card.
pub fn context_term(measured: u64, units: UnitSystem) -> String {
    let b = |x: u64| format_bytes(x, units);
    let delta = if measured >= CUDA_CONTEXT_BYTES {
        format!("+{} per GPU", b(measured - CUDA_CONTEXT_BYTES))
    } else {
        format!("−{} per GPU", b(CUDA_CONTEXT_BYTES - measured))
    };
    format!(
        "Overhead term: CUDA context {} as measured by the probe, instead of the calculator's {} ({delta}); “fits now” uses it. The plan's figures above keep the assumption, so the share link stays reproducible.",
        b(measured),
        b(CUDA_CONTEXT_BYTES)
    )
}

/// A host's GPUs side by side with the plan's split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Balance {
    /// `(gpu, real used, plan)` per GPU.
    pub rows: Vec<(String, String, String)>,
    pub text: String,
}

/// `(max - min) / max` in percent.
pub fn imbalance_pct(values: &[u64]) -> u32 {
    let (Some(max), Some(min)) = (values.iter().max(), values.iter().min()) else { return 0 };
    if *max == 0 { 0 } else { ((max - min) as f64 * 100.0 / *max as f64).round() as u32 }
}

/// `None` for a host with fewer than two GPUs.
pub fn balance(host: &HostModel, plan: Option<&[PlanGpu]>, units: UnitSystem) -> Option<Balance> {
    let s = host.latest.as_ref()?;
    if s.gpus.len() < 2 {
        return None;
    }
    let used: Vec<u64> = s.gpus.iter().map(|g| g.memory.value().map_or(0, |m| m.used_bytes)).collect();
    let plan_split: Vec<u64> = plan.map(|p| p.iter().map(|g| g.total_bytes).collect()).unwrap_or_default();
    let rows = s
        .gpus
        .iter()
        .zip(&used)
        .enumerate()
        .map(|(k, (g, u))| {
            let p = plan_split.get(k).map_or("—".into(), |b| format_bytes(*b, units));
            (format!("GPU {}", g.index), format_bytes(*u, units), p)
        })
        .collect();
    let (hi, lo) = (
        used.iter().enumerate().max_by_key(|(_, v)| **v).map_or(0, |(i, _)| i),
        used.iter().enumerate().min_by_key(|(_, v)| **v).map_or(0, |(i, _)| i),
    );
    let real = if used[hi] == used[lo] {
        "Now: the GPUs hold the same.".to_owned()
    } else {
        format!(
            "Now: GPU {} holds {} more than GPU {} ({} % imbalance).",
            s.gpus[hi].index,
            format_bytes(used[hi] - used[lo], units),
            s.gpus[lo].index,
            imbalance_pct(&used)
        )
    };
    let planned = match plan_split.len() {
        0 => String::new(),
        1 => " The plan uses one GPU.".into(),
        _ => format!(" The plan's split: {} % imbalance.", imbalance_pct(&plan_split)),
    };
    Some(Balance { rows, text: format!("{real}{planned}") })
}

#[cfg(test)]
mod tests {
    use super::super::host::fixtures::*;
    use super::*;
    use shared::estimate::{GpuSlot, Scenario, estimate};
    use shared::model::Model;
    use shared::protocol::ServerMessage;
    use shared::units::GIB;

    /// Llama 3.1 8B's plan on `gpus` 24 GiB cards, and whether it fits.
    fn plan(gpus: usize) -> (Vec<PlanGpu>, bool) {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let s = Scenario { gpus: vec![GpuSlot::custom("RTX 4090", G24); gpus], ..Scenario::default() };
        let e = estimate(&m, s.validate().expect("a valid plan"));
        (e.per_gpu.iter().map(PlanGpu::from).collect(), e.fits)
    }

    fn host(used: &[u64]) -> HostModel {
        let mut h = HostModel::new("ws://lab1:7878/ws");
        h.apply(ServerMessage::Welcome(welcome(&vec![G24; used.len()])));
        let procs: Vec<[(u32, &str, u64); 1]> = used.iter().map(|&u| [(41_000, "vllm", u)]).collect();
        let gpus: Vec<Gpu> = used.iter().zip(&procs).map(|(&u, p)| (G24, u, 50, &p[..])).collect();
        h.apply(ServerMessage::Sample(sample(1, &gpus)));
        h
    }

    #[test]
    fn fits_now_only_with_what_is_free() {
        let (e, fits) = plan(1);
        assert!(fits, "the plan fits an empty 24 GiB card");
        let idle = verdict_now(&e, &host(&[0]), 0, None, UnitSystem::Binary);
        assert_eq!(idle.key(), "yes");
        assert!(idle.text.starts_with("Fits now on GPU 0 on lab1"), "{}", idle.text);
        assert!(idle.bars[0].fits && idle.bars[0].capacity_at() == Some("100.000%"));
        let busy = verdict_now(&e, &host(&[20 * GIB]), 0, None, UnitSystem::Binary);
        assert_eq!(busy.key(), "no");
        assert!(busy.text.contains("short") && busy.text.contains("vllm (pid 41000) holds 20.00 GiB"), "{}", busy.text);
        assert_ne!(busy.bars[0].capacity_at(), Some("100.000%"), "the plan overflows the real card");
        // A measured context of 1 GiB instead of 300 MiB takes 724 MiB of the spare room.
        let measured = verdict_now(&e, &host(&[0]), 0, Some(GIB), UnitSystem::Binary);
        assert!(measured.bars[0].summary != idle.bars[0].summary);
        assert_eq!(adjusted(300 << 20, Some(GIB)), GIB);
        assert_eq!(verdict_now(&plan(2).0, &host(&[0]), 0, None, UnitSystem::Binary).key(), "no");
        assert_eq!(verdict_now(&e, &HostModel::new("ws://x/ws"), 0, None, UnitSystem::Binary).key(), "unknown");
    }

    #[test]
    fn balance_compares_the_gpus_with_the_plan() {
        assert!(balance(&host(&[GIB]), None, UnitSystem::Binary).is_none());
        let b = balance(&host(&[10 * GIB, 5 * GIB]), Some(&plan(2).0), UnitSystem::Binary).expect("two GPUs");
        assert_eq!(b.rows.len(), 2);
        assert!(b.text.starts_with("Now: GPU 0 holds 5.00 GiB more than GPU 1 (50 % imbalance)."), "{}", b.text);
        assert!(b.text.contains("The plan's split"), "{}", b.text);
        assert_eq!(imbalance_pct(&[4, 4]), 0);
    }

    #[test]
    fn a_simulated_gpu_maps_to_its_catalog_entry() {
        let w = welcome(&[G24, 20 * GIB]);
        let rtx = shared::catalog::gpu("rtx-4090").expect("catalog").memory_bytes;
        let w2 = welcome(&[rtx]);
        assert_eq!(gpu_choice(&w2.host.gpus[0]), Some(GpuChoice::Catalog("rtx-4090".into())));
        assert_eq!(gpu_choice(&w.host.gpus[1]), Some(GpuChoice::Custom(20 * GIB)));
    }
}
