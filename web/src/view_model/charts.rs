//! Chart series computed from the estimator: memory against tokens
//! generated, max concurrency against prompt length, and the what-if grid of
//! weight formats × prompt lengths. Each returns ready-to-draw SVG geometry.

use shared::estimate::{EnginePlan, Estimate, MAX_TOKENS, ValidScenario, Verdict};
use shared::formats::WeightFormat;
use shared::kv::KvDtype;
use shared::model::Model;
use shared::units::{GB, GIB, UnitSystem, decimal, decimal_short};

use super::svg::{self, Scale, n, polyline, short_tokens, ticks};

/// A tick: position and label.
pub type Tick = (String, String);

/// Memory on the tightest GPU as the generation grows.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryChart {
    pub path: String,
    /// The area under the curve (closed path).
    pub area: String,
    pub capacity_y: String,
    pub capacity_label: String,
    /// The out-of-memory point: x, y, its label and the label's `text-anchor`.
    pub oom: Option<(String, String, String, &'static str)>,
    /// Where the plan's own `max_new_tokens` sits.
    pub current_x: String,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    pub x_label: String,
    pub y_label: String,
    pub summary: String,
}

fn unit_base(units: UnitSystem) -> (f64, &'static str) {
    match units {
        UnitSystem::Binary => (GIB as f64, "GiB"),
        UnitSystem::Decimal => (GB as f64, "GB"),
    }
}

fn tightest(e: &Estimate) -> usize {
    e.per_gpu
        .iter()
        .max_by(|a, b| {
            let ra = a.total_bytes as f64 / a.capacity_bytes.max(1) as f64;
            let rb = b.total_bytes as f64 / b.capacity_bytes.max(1) as f64;
            ra.total_cmp(&rb)
        })
        .map_or(0, |g| g.index)
}

/// Samples along the x axis.
const MEMORY_SAMPLES: u64 = 32;

pub fn memory_chart(model: &Model, base: &ValidScenario, current: &Estimate, units: UnitSystem) -> MemoryChart {
    let gpu = tightest(current);
    // `EnginePlan` answers without building the explanation: sweeps stay within a frame.
    let at = |new: u64| EnginePlan::new(model, base.with_workload(base.prompt_tokens, new, base.concurrency));
    // Up to the model's context limit (or 8× the plan), so growth and the
    // OOM point show; zoomed in on the OOM point when it comes early.
    let room = MAX_TOKENS.saturating_sub(base.prompt_tokens).max(1);
    let plan = base.max_new_tokens.saturating_mul(2).max(1024).min(room);
    let limit = match model.arch.text.max_position_embeddings {
        Some(max) if max > base.prompt_tokens => max - base.prompt_tokens,
        _ => base.max_new_tokens.max(1024).saturating_mul(8),
    }
    .min(room);
    let mut x_max = plan.max(limit);
    let mut far = at(x_max).verdict_without_searches();
    // An engine whose requests stop short of the model's context (vLLM's
    // `--max-model-len`) refuses the far end: the axis ends where its
    // requests do, which is no out-of-memory.
    if let Verdict::EngineRefuses { largest_context, .. } = far
        && largest_context > base.prompt_tokens
        && largest_context - base.prompt_tokens < x_max
    {
        x_max = largest_context - base.prompt_tokens;
        far = at(x_max).verdict_without_searches();
    }
    if let Verdict::RunsOutAtToken { generated, .. } = far {
        let zoom = generated.saturating_mul(5) / 4;
        if zoom > plan && zoom < x_max {
            x_max = zoom;
            far = at(x_max).verdict_without_searches();
        }
    }
    let oom_token = match far {
        Verdict::RunsOutAtToken { generated, .. } => Some(generated),
        Verdict::Fits { .. } => None,
        _ => Some(0),
    };
    let points: Vec<(f64, u64)> = (0..=MEMORY_SAMPLES)
        .map(|i| {
            let t = x_max * i / MEMORY_SAMPLES;
            (t as f64, at(t).peak(gpu, base.concurrency).total_bytes())
        })
        .collect();
    let cap = current.per_gpu.get(gpu).map_or(0, |g| g.capacity_bytes);
    let (div, unit) = unit_base(units);
    let y_hi = points.iter().map(|p| p.1).max().unwrap_or(0).max(cap) as f64 / div * 1.08;
    let xs = Scale::x(0.0, x_max as f64);
    let ys = Scale::y(0.0, y_hi);
    let pts: Vec<(f64, f64)> = points.iter().map(|(t, b)| (xs.at(*t), ys.at(*b as f64 / div))).collect();
    let mut area = polyline(&pts);
    area.push_str(&format!(" L{} {} L{} {} Z", n(xs.at(x_max as f64)), n(ys.at(0.0)), n(xs.at(0.0)), n(ys.at(0.0))));
    let cap_v = cap as f64 / div;
    let oom = oom_token.map(|t| {
        (
            n(xs.at(t as f64)),
            n(ys.at(cap_v)),
            if t == 0 { "out of memory before generating".to_owned() } else { format!("OOM at +{}", short_tokens(t)) },
            match t as f64 / x_max as f64 {
                f if f < 0.2 => "start",
                f if f > 0.8 => "end",
                _ => "middle",
            },
        )
    });
    let x_ticks = ticks(x_max as f64, 6).into_iter().map(|v| (n(xs.at(v)), short_tokens(v as u64))).collect();
    let y_ticks = ticks(y_hi, 5).into_iter().map(|v| (n(ys.at(v)), decimal_short(v, 3))).collect();
    let summary = match oom_token {
        Some(0) => format!("GPU {gpu} runs out of memory before the first generated token."),
        Some(t) => format!(
            "Memory on GPU {gpu} grows with every generated token and reaches its {} {unit} at {} new tokens.",
            decimal(cap_v, 1),
            short_tokens(t)
        ),
        None => {
            format!(
                "Memory on GPU {gpu} stays under its {} {unit} up to {} new tokens.",
                decimal(cap_v, 1),
                short_tokens(x_max)
            )
        }
    };
    MemoryChart {
        path: polyline(&pts),
        area,
        capacity_y: n(ys.at(cap_v)),
        capacity_label: format!("capacity {} {unit}", decimal(cap_v, 1)),
        oom,
        current_x: n(xs.at(base.max_new_tokens.min(x_max) as f64)),
        x_ticks,
        y_ticks,
        x_label: format!("new tokens generated (prompt {})", short_tokens(base.prompt_tokens)),
        y_label: format!("{unit} on GPU {gpu}"),
        summary,
    }
}

/// Prompt lengths the concurrency chart and the what-if grid sweep.
pub const LENGTHS: [u64; 8] = [1024, 2048, 4096, 8192, 16_384, 32_768, 65_536, 131_072];

/// One bar of the concurrency chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcurrencyBar {
    pub x: String,
    pub y: String,
    pub width: String,
    pub height: String,
    pub label: String,
    pub value: String,
    pub title: String,
    pub current: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConcurrencyChart {
    pub bars: Vec<ConcurrencyBar>,
    pub baseline: String,
    pub summary: String,
}

/// Max concurrent sequences for each prompt length (with the plan's new tokens).
pub fn concurrency_chart(model: &Model, base: &ValidScenario) -> ConcurrencyChart {
    let counts: Vec<(u64, u64)> = LENGTHS
        .iter()
        .map(|&len| {
            let p = EnginePlan::new(model, base.with_workload(len, base.max_new_tokens, 1));
            (len, if matches!(p.verdict_without_searches(), Verdict::Fits { .. }) { p.max_concurrency() } else { 0 })
        })
        .collect();
    // sqrt scale: keeps 1 visible next to 500.
    let hi = counts.iter().map(|c| (c.1 as f64).sqrt()).fold(1.0, f64::max);
    let ys = Scale::y(0.0, hi * 1.1);
    let slot = (svg::WIDTH - svg::LEFT - svg::RIGHT) / LENGTHS.len() as f64;
    let bars = counts
        .iter()
        .enumerate()
        .map(|(i, &(len, c))| {
            let top = ys.at((c as f64).sqrt());
            ConcurrencyBar {
                x: n(svg::LEFT + slot * i as f64 + slot * 0.15),
                y: n(top),
                width: n(slot * 0.7),
                height: n(ys.at(0.0) - top),
                label: short_tokens(len),
                value: c.to_string(),
                title: format!("{} prompt + {} new tokens: {c} concurrent sequences fit", len, base.max_new_tokens),
                current: len == base.prompt_tokens,
            }
        })
        .collect();
    let longest = counts.iter().rev().find(|c| c.1 > 0).map(|c| c.0);
    ConcurrencyChart {
        bars,
        baseline: n(ys.at(0.0)),
        summary: match longest {
            Some(l) => {
                format!("At least one sequence fits up to a {} token prompt among the lengths tried.", short_tokens(l))
            }
            None => "No prompt length tried fits a single sequence.".into(),
        },
    }
}

/// Prompt lengths of the what-if grid's columns.
pub const GRID_LENGTHS: [u64; 5] = [2048, 8192, 32_768, 65_536, 131_072];

/// One cell of the what-if grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub class: &'static str,
    pub text: String,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridRow {
    pub format: String,
    pub describe: String,
    pub current: bool,
    pub cells: Vec<Cell>,
}

/// Weight formats × prompt lengths, each coloured by whether the plan fits.
/// The KV dtype follows each format's default unless the person chose one.
pub fn what_if(model: &Model, base: &ValidScenario, chosen_kv: Option<KvDtype>) -> Vec<GridRow> {
    WeightFormat::CHOICES
        .iter()
        .map(|&w| {
            let kv = chosen_kv.unwrap_or_else(|| base.engine.kind().default_kv_dtype(model, w));
            let cells = GRID_LENGTHS
                .iter()
                .map(|&len| {
                    let sc = base.with_dtypes(w, kv).with_workload(len, base.max_new_tokens, base.concurrency);
                    let p = EnginePlan::new(model, sc);
                    let used = (0..base.gpus.len())
                        .map(|g| {
                            p.peak(g, base.concurrency).total_bytes() as f64 / base.gpus[g].capacity_bytes.max(1) as f64
                        })
                        .fold(0.0, f64::max);
                    let (class, text, why) = match p.verdict_without_searches() {
                        Verdict::Fits { .. } => (
                            "cell-fits",
                            format!("{}%", decimal(used * 100.0, 0)),
                            format!("fits, peak {}% of the tightest GPU", decimal(used * 100.0, 0)),
                        ),
                        Verdict::RunsOutAtToken { generated, .. } => (
                            "cell-grows",
                            format!("+{}", short_tokens(generated)),
                            format!("runs out after {generated} generated tokens"),
                        ),
                        Verdict::DoesNotFitAtLoad { .. } => {
                            ("cell-no", "✕".to_owned(), "does not fit at load".to_owned())
                        }
                        Verdict::RunsOutInPrefill { .. } => {
                            ("cell-no", "✕".to_owned(), "runs out processing the prompt".to_owned())
                        }
                        _ => ("cell-no", "✕".to_owned(), "does not fit".to_owned()),
                    };
                    Cell { class, text, title: format!("{} at {} prompt tokens: {why}", w.id(), short_tokens(len)) }
                })
                .collect();
            GridRow { format: w.id(), describe: w.describe(), current: w == base.weights, cells }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::estimate::{Scenario, estimate};

    fn llama() -> Model {
        Model::preset("llama-3.1-8b").expect("preset")
    }

    #[test]
    fn memory_grows_and_finds_the_oom_point() {
        let m = llama();
        let s = Scenario { max_new_tokens: 200_000, ..Scenario::default() }.validate().expect("a valid plan");
        let e = estimate(&m, s.clone());
        let c = memory_chart(&m, &s, &e, UnitSystem::Binary);
        assert!(c.oom.is_some(), "200k new tokens of Llama 3.1 8B do not fit 24 GiB");
        assert!(c.path.starts_with('M'));
        assert!(c.summary.contains("reaches"));
        // The default plan fits, but the chart runs on to the 128k context and shows where it stops.
        let fits = Scenario::default().validate().expect("a valid plan");
        let c = memory_chart(&m, &fits, &estimate(&m, fits.clone()), UnitSystem::Binary);
        assert!(c.oom.is_some());
        let small = Model::preset("gpt2").expect("preset");
        let s = Scenario { prompt_tokens: 512, ..Scenario::default() }.validate().expect("a valid plan");
        let c = memory_chart(&small, &s, &estimate(&small, s.clone()), UnitSystem::Binary);
        assert!(c.oom.is_none(), "GPT-2's whole context fits");
        assert!(c.summary.contains("stays under"));
    }

    /// vLLM with `--max-model-len` below the model's context: the axis ends
    /// at the engine's limit, where the plan still fits, not at an
    /// "out of memory before the first token" (the refusal of longer requests).
    #[test]
    fn the_axis_ends_at_the_engines_own_context_limit() {
        use shared::engines::{Engine, vllm};
        let m = llama();
        let h100 = shared::catalog::gpu("h100-sxm").expect("catalog");
        let s = Scenario {
            gpus: vec![shared::estimate::GpuSlot::from_catalog(h100)],
            engine: Engine::Vllm(vllm::Options { max_model_len: Some(32_768), ..vllm::Options::default() }),
            ..Scenario::default()
        }
        .validate()
        .expect("a valid plan");
        let c = memory_chart(&m, &s, &estimate(&m, s.clone()), UnitSystem::Binary);
        assert!(c.oom.is_none(), "{}", c.summary);
        assert!(c.summary.contains("stays under") && c.summary.contains("30k new tokens"), "{}", c.summary);
    }

    #[test]
    fn concurrency_falls_with_length() {
        let m = llama();
        let c = concurrency_chart(&m, &Scenario::default().validate().expect("a valid plan"));
        let v: Vec<u64> = c.bars.iter().map(|b| b.value.parse().expect("number")).collect();
        assert!(v.windows(2).all(|w| w[0] >= w[1]), "{v:?}");
        assert!(v[0] > 1);
        assert!(c.bars.iter().any(|b| b.current));
    }

    #[test]
    fn what_if_grid_colours_by_fit() {
        let m = Model::preset("llama-3.1-70b").expect("preset");
        let two = Scenario::default();
        let two = Scenario { gpus: vec![two.gpus[0].clone(); 2], ..two }.validate().expect("a valid plan");
        let grid = what_if(&m, &two, None);
        assert_eq!(grid.len(), WeightFormat::CHOICES.len());
        let row = |id: &str| grid.iter().find(|r| r.format == id).expect(id);
        assert_eq!(row("bf16").cells[0].class, "cell-no");
        assert_eq!(row("q4_k_m").cells[0].class, "cell-fits");
        assert!(row("bf16").current);
    }
}
