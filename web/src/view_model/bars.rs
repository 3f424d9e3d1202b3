//! Per-GPU stacked bars (weights, KV cache, activations, overhead, free)
//! against capacity (the page's one [`StackedBar`]), and the rows of the
//! per-GPU table.

use shared::estimate::{Estimate, GpuPeak};
use shared::units::{UnitSystem, decimal, format_bytes};

use super::figures::exact_bytes;
use crate::html::bar::{CapacityLine, Segment, StackedBar};

/// One row of the per-GPU table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub gpu: String,
    pub layers: String,
    pub cells: Vec<(String, String)>,
    pub fits: bool,
}

fn pct(part: u64, whole: u64) -> String {
    format!("{}%", decimal(part as f64 * 100.0 / whole.max(1) as f64, 3))
}

fn layers_text(g: &GpuPeak) -> String {
    match g.layers {
        [a, b] if a == b => "no layers".into(),
        [a, b] => format!("layers {a}–{}", b.saturating_sub(1)),
    }
}

/// One GPU's bar: its parts as shares of the larger of capacity and total.
pub fn bar(g: &GpuPeak, units: UnitSystem) -> StackedBar {
    let scale = g.capacity_bytes.max(g.total_bytes);
    let parts: [(&'static str, &'static str, u64); 6] = [
        ("seg-weights", "Weights", g.budget.weight_bytes),
        ("seg-kv", "KV cache", g.budget.kv_cache_bytes),
        ("seg-state", "Recurrent state", g.budget.state_bytes),
        ("seg-act", "Activations", g.budget.activation_bytes),
        ("seg-overhead", "Overhead", g.budget.overhead_bytes),
        ("seg-free", "Free", g.free_bytes),
    ];
    let segments = parts
        .into_iter()
        .map(|(class, name, bytes)| Segment {
            class,
            bytes,
            width: pct(bytes, scale),
            title: format!("{name}: {} ({})", format_bytes(bytes, units), exact_bytes(bytes)),
        })
        .collect();
    let used = format_bytes(g.total_bytes, units);
    let cap = format_bytes(g.capacity_bytes, units);
    let summary = if g.fits {
        format!("{used} of {cap} ({} %)", decimal(g.total_bytes as f64 * 100.0 / g.capacity_bytes.max(1) as f64, 0))
    } else {
        format!("{used} of {cap}: {} over", format_bytes(g.shortfall_bytes, units))
    };
    StackedBar {
        label: format!("GPU {} · {} · {}", g.index, g.name, layers_text(g)),
        segments,
        capacity: Some(CapacityLine { at: pct(g.capacity_bytes, scale), title: "capacity" }),
        aria: format!(
            "GPU {}: weights {}, KV cache {}{}, activations {}, overhead {}; {summary}",
            g.index,
            format_bytes(g.budget.weight_bytes, units),
            format_bytes(g.budget.kv_cache_bytes, units),
            if g.budget.state_bytes > 0 {
                format!(", recurrent state {}", format_bytes(g.budget.state_bytes, units))
            } else {
                String::new()
            },
            format_bytes(g.budget.activation_bytes, units),
            format_bytes(g.budget.overhead_bytes, units),
        ),
        summary,
        fits: g.fits,
    }
}

pub fn bars(e: &Estimate, units: UnitSystem) -> Vec<StackedBar> {
    e.per_gpu.iter().map(|g| bar(g, units)).collect()
}

/// Table columns, in order.
pub const COLUMNS: [&str; 8] =
    ["Weights", "KV cache", "State", "Activations", "Overhead", "Total", "Capacity", "Free / short"];

pub fn rows(e: &Estimate, units: UnitSystem) -> Vec<Row> {
    e.per_gpu
        .iter()
        .map(|g| {
            let cell = |b: u64| (format_bytes(b, units), exact_bytes(b));
            let last = if g.fits {
                cell(g.free_bytes)
            } else {
                (format!("−{}", format_bytes(g.shortfall_bytes, units)), exact_bytes(g.shortfall_bytes))
            };
            Row {
                gpu: format!("{} · {}", g.index, g.name),
                layers: layers_text(g),
                cells: vec![
                    cell(g.budget.weight_bytes),
                    cell(g.budget.kv_cache_bytes),
                    cell(g.budget.state_bytes),
                    cell(g.budget.activation_bytes),
                    cell(g.budget.overhead_bytes),
                    cell(g.total_bytes),
                    cell(g.capacity_bytes),
                    last,
                ],
                fits: g.fits,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::estimate::{Scenario, estimate};
    use shared::model::Model;

    #[test]
    fn segments_add_up_to_the_capacity_when_it_fits() {
        let m = Model::preset("llama-3.1-8b").expect("preset");
        let e = estimate(&m, Scenario::default().validate().expect("a valid plan"));
        let b = &bars(&e, UnitSystem::Binary)[0];
        let sum: u64 = b.segments.iter().map(|s| s.bytes).sum();
        assert_eq!(sum, e.per_gpu[0].capacity_bytes);
        assert_eq!(b.capacity_at(), Some("100.000%"));
        assert!(b.segments[0].title.starts_with("Weights: "));
        assert_eq!(rows(&e, UnitSystem::Binary)[0].cells.len(), COLUMNS.len());
    }

    #[test]
    fn an_overflowing_gpu_moves_the_capacity_line_left() {
        let m = Model::preset("llama-3.1-70b").expect("preset");
        let e = estimate(&m, Scenario::default().validate().expect("a valid plan"));
        let b = &bars(&e, UnitSystem::Binary)[0];
        assert!(!b.fits);
        assert_ne!(b.capacity_at(), Some("100.000%"));
        assert!(b.summary.contains("over"));
    }

    #[test]
    fn a_hybrid_model_shows_its_recurrent_state() {
        let m = Model::preset("qwen3.5-35b-a3b").expect("preset");
        let s = Scenario {
            gpus: vec![shared::estimate::GpuSlot::custom("H200", 141 << 30)],
            concurrency: 4,
            ..Scenario::default()
        };
        let e = estimate(&m, s.validate().expect("a valid plan"));
        assert!(e.state_bytes > 0);
        let b = &bars(&e, UnitSystem::Binary)[0];
        let state = b.segments.iter().find(|s| s.class == "seg-state").expect("state segment");
        assert_eq!(state.bytes, e.per_gpu[0].budget.state_bytes);
        assert!(b.aria.contains("recurrent state"));
        let figures = super::super::figures::figures(&e, UnitSystem::Binary);
        assert!(figures.iter().any(|f| f.testid == "state-bytes" && f.raw == e.state_bytes));
    }
}
