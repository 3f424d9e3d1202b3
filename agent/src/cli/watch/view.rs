//! What a refresh shows, independent of how it is drawn: each GPU's memory,
//! its processes and its recent timeline, then the findings with the plan's
//! notes. The plain-text and JSON outputs are built here; the full-screen
//! view (`tui.rs`) draws the same [`View`].

use std::collections::{BTreeMap, VecDeque};

use shared::live::{PlanFacts, plan_notes};
use shared::protocol::{Field, Finding, FindingCertainty};
use shared::units::{UnitSystem, format_bytes};

use super::source::Frame;

/// How many readings a timeline keeps (a minute at the default 500 ms).
pub const TIMELINE: usize = 120;

/// One GPU as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuRow {
    pub index: u32,
    pub name: String,
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    pub busy_pct: Option<u32>,
    /// `(pid, name, bytes)`, largest first.
    pub processes: Vec<(u32, String, Option<u64>)>,
    /// Used memory as a share of the total, per mille, oldest first.
    pub timeline: Vec<u64>,
}

/// A finding with what the plan adds.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub finding: Finding,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub hostname: String,
    pub simulated: bool,
    pub timestamp_ms: u64,
    pub gpus: Vec<GpuRow>,
    pub findings: Vec<Shown>,
}

/// The refreshes so far: each GPU's timeline.
#[derive(Debug, Default)]
pub struct Watch {
    timelines: BTreeMap<u32, VecDeque<u64>>,
    plan: Option<PlanFacts>,
}

impl Watch {
    pub fn new(plan: Option<PlanFacts>) -> Self {
        Self { timelines: BTreeMap::new(), plan }
    }

    pub fn view(&mut self, frame: &Frame) -> View {
        let mut gpus = Vec::new();
        for g in &frame.sample.gpus {
            let info = frame.host.gpus.iter().find(|i| i.index == g.index);
            let name = info.and_then(|i| i.name.value().cloned()).unwrap_or_else(|| format!("GPU {}", g.index));
            let Field::Value(m) = &g.memory else { continue };
            let timeline = self.timelines.entry(g.index).or_default();
            timeline.push_back(m.used_bytes.saturating_mul(1000) / m.total_bytes.max(1));
            while timeline.len() > TIMELINE {
                timeline.pop_front();
            }
            let mut processes: Vec<(u32, String, Option<u64>)> = g
                .processes
                .value()
                .into_iter()
                .flatten()
                .map(|p| (p.pid, p.name.value().cloned().unwrap_or_else(|| "?".into()), p.used_bytes.value().copied()))
                .collect();
            processes.sort_by_key(|p| std::cmp::Reverse(p.2));
            gpus.push(GpuRow {
                index: g.index,
                name,
                total_bytes: m.total_bytes,
                used_bytes: m.used_bytes,
                free_bytes: m.free_bytes,
                busy_pct: g.utilization.value().map(|u| u.gpu_pct),
                processes,
                timeline: timeline.iter().copied().collect(),
            });
        }
        let findings = frame
            .findings
            .iter()
            .map(|f| Shown {
                finding: f.clone(),
                notes: match (&self.plan, f.to_live()) {
                    (Some(plan), Some(live)) => plan_notes(&live, plan),
                    _ => Vec::new(),
                },
            })
            .collect();
        View {
            hostname: frame.host.hostname.clone(),
            simulated: frame.host.simulated,
            timestamp_ms: frame.sample.timestamp_ms,
            gpus,
            findings,
        }
    }
}

pub fn bytes(b: u64) -> String {
    format_bytes(b, UnitSystem::Binary)
}

/// `hh:mm:ss` (UTC) of a unix time in ms.
pub fn clock(ms: u64) -> String {
    let s = ms / 1000 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// A bar of `width` cells, `per_mille` full.
pub fn bar(per_mille: u64, width: usize) -> String {
    let full = (per_mille.min(1000) as usize * width).div_ceil(1000);
    format!("{}{}", "█".repeat(full), "░".repeat(width - full))
}

/// The timeline as block characters, one per reading.
pub fn sparkline(values: &[u64], width: usize) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let start = values.len().saturating_sub(width);
    values[start..].iter().map(|v| BLOCKS[(*v.min(&999) as usize * BLOCKS.len()) / 1000]).collect()
}

pub fn headline(f: &Finding) -> String {
    let certainty = match f.certainty {
        FindingCertainty::Likely => "likely",
        _ => "possible",
    };
    let title = f.to_live().map_or("A cause this build does not know", |l| l.cause.title());
    format!("GPU {} · {}. {} ({certainty})", f.gpu, f.number, title)
}

/// The plain-text refresh: what `--once` prints, and what a pipe gets.
pub fn text(v: &View) -> String {
    let mut out =
        format!("{}{} · {}\n", v.hostname, if v.simulated { " · simulated" } else { "" }, clock(v.timestamp_ms));
    for g in &v.gpus {
        let per_mille = g.used_bytes.saturating_mul(1000) / g.total_bytes.max(1);
        out.push_str(&format!(
            "GPU {} {}  {} {} / {} ({} %){}\n",
            g.index,
            g.name,
            bar(per_mille, 20),
            bytes(g.used_bytes),
            bytes(g.total_bytes),
            per_mille / 10,
            g.busy_pct.map(|b| format!(" · busy {b} %")).unwrap_or_default(),
        ));
        if g.timeline.len() > 1 {
            out.push_str(&format!("      {}\n", sparkline(&g.timeline, 60)));
        }
        for (pid, name, held) in &g.processes {
            out.push_str(&format!("      {pid:>7} {name:<18} {}\n", held.map(bytes).unwrap_or_else(|| "?".into())));
        }
    }
    if v.findings.is_empty() {
        out.push_str("No finding: the readings show none of the OOM checklist's causes.\n");
    }
    for s in &v.findings {
        out.push_str(&format!("! {}\n  {}\n  Fix: {}\n", headline(&s.finding), s.finding.evidence, s.finding.fix));
        for note in &s.notes {
            out.push_str(&format!("  Plan: {note}\n"));
        }
    }
    out
}

/// The JSON refresh (`--json`): one object per line.
pub fn json(v: &View) -> String {
    let gpus: Vec<serde_json::Value> = v
        .gpus
        .iter()
        .map(|g| {
            serde_json::json!({
                "index": g.index,
                "name": g.name,
                "total_bytes": g.total_bytes,
                "used_bytes": g.used_bytes,
                "free_bytes": g.free_bytes,
                "busy_pct": g.busy_pct,
                "processes": g.processes.iter().map(|(pid, name, used)| serde_json::json!({
                    "pid": pid, "name": name, "used_bytes": used,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let findings: Vec<serde_json::Value> = v
        .findings
        .iter()
        .map(|s| {
            let mut f = serde_json::to_value(&s.finding).unwrap_or_default();
            if let Some(o) = f.as_object_mut() {
                o.insert("title".into(), s.finding.to_live().map(|l| l.cause.title()).into());
                o.insert("seconds_to_capacity".into(), s.finding.growth.map(|g| g.seconds_to_capacity).into());
                o.insert("plan_notes".into(), s.notes.clone().into());
            }
            f
        })
        .collect();
    let line = serde_json::json!({
        "hostname": v.hostname,
        "simulated": v.simulated,
        "timestamp_ms": v.timestamp_ms,
        "gpus": gpus,
        "findings": findings,
    });
    format!("{line}\n")
}
