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
    /// Largest first.
    pub processes: Vec<ProcessRow>,
    /// Used memory as a share of the total, per mille, oldest first.
    pub timeline: Vec<u64>,
}

/// One process on a GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRow {
    pub pid: u32,
    pub name: String,
    pub used_bytes: Option<u64>,
    /// The engine launch the agent recognised, with its plan's prediction.
    pub launch: Option<shared::protocol::Launch>,
}

impl ProcessRow {
    /// `vLLM · TP 2 · util 0.9 · org/model · predicted 71.3 GiB`, empty without a launch.
    pub fn launch_text(&self) -> String {
        self.launch.as_ref().map(|l| l.summary(shared::units::UnitSystem::Binary)).unwrap_or_default()
    }
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
            let mut processes: Vec<ProcessRow> = g
                .processes
                .value()
                .into_iter()
                .flatten()
                .map(|p| ProcessRow {
                    pid: p.pid,
                    name: p.name.value().cloned().unwrap_or_else(|| "?".into()),
                    used_bytes: p.used_bytes.value().copied(),
                    launch: p.launch.clone(),
                })
                .collect();
            processes.sort_by_key(|p| std::cmp::Reverse(p.used_bytes));
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
        for p in &g.processes {
            let held = p.used_bytes.map(bytes).unwrap_or_else(|| "?".into());
            let launch = p.launch_text();
            let launch = if launch.is_empty() { String::new() } else { format!("  {launch}") };
            out.push_str(&format!("      {:>7} {:<18} {held}{launch}\n", p.pid, p.name));
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
                "processes": g.processes.iter().map(|p| serde_json::json!({
                    "pid": p.pid, "name": p.name, "used_bytes": p.used_bytes, "launch": p.launch,
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

#[cfg(test)]
mod tests {
    use shared::protocol::{Launch, LaunchEngine, LaunchFlag};

    use super::*;

    #[test]
    fn a_recognised_launch_is_shown_beside_its_process_in_text_and_json() {
        let launch = Launch {
            engine: LaunchEngine::Vllm,
            model: Some("meta-llama/Llama-3.1-70B-Instruct".into()),
            flags: vec![
                LaunchFlag { flag: "--tensor-parallel-size".into(), value: "2".into() },
                LaunchFlag { flag: "--gpu-memory-utilization".into(), value: "0.90".into() },
            ],
            plan_query: Some("v=2&hf=meta-llama/Llama-3.1-70B-Instruct&tp=2".into()),
            predicted_bytes: Some(76_557_000_000),
        };
        let row = |pid, launch| ProcessRow { pid, name: "python3".into(), used_bytes: Some(76_350_000_000), launch };
        let view = View {
            hostname: "gpu1".into(),
            simulated: false,
            timestamp_ms: 0,
            gpus: vec![GpuRow {
                index: 0,
                name: "NVIDIA H100 80GB HBM3".into(),
                total_bytes: 85_520_809_984,
                used_bytes: 77_000_000_000,
                free_bytes: 8_520_809_984,
                busy_pct: None,
                processes: vec![row(4242, Some(launch)), row(77, None)],
                timeline: vec![],
            }],
            findings: vec![],
        };
        let text = text(&view);
        assert!(
            text.contains(
                "71.11 GiB  vLLM · TP 2 · util 0.90 · meta-llama/Llama-3.1-70B-Instruct · predicted 71.30 GiB\n"
            ),
            "{text}"
        );
        let line: serde_json::Value = serde_json::from_str(&json(&view)).unwrap();
        let procs = &line["gpus"][0]["processes"];
        assert_eq!(procs[0]["launch"]["engine"], "vllm");
        assert_eq!(procs[0]["launch"]["predicted_bytes"], 76_557_000_000u64);
        assert!(procs[1]["launch"].is_null());
    }
}
