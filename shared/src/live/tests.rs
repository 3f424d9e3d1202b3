//! The rules on recorded series: each pattern of the checklist, built the
//! way the agent samples (memory every 500 ms, process lists every 2 s),
//! yields its cause and no other; steady and idle GPUs yield none.

use super::*;
use crate::protocol::{Field, GpuProcess, GpuSample, MemoryReading, MemorySource, Sample, Unavailable, Utilization};
use crate::units::{GIB, MIB};

const T0: u64 = 1_700_000_000_000;
const GPU_24: u64 = 24 * GIB;

/// What one GPU holds at a moment: `(pid, name, bytes)` and how busy it is.
struct At {
    procs: Vec<(u32, &'static str, u64)>,
    busy: u32,
    /// Memory no listed process holds.
    hidden: u64,
}

fn at(procs: Vec<(u32, &'static str, u64)>, busy: u32) -> At {
    At { procs, busy, hidden: 0 }
}

fn gpu_sample(index: u32, total: u64, a: &At, with_list: bool) -> GpuSample {
    let reserved = total / 160;
    let used = (a.procs.iter().map(|p| p.2).sum::<u64>() + a.hidden).min(total - reserved);
    let na = || Field::Unavailable(Unavailable::NotSupported);
    GpuSample {
        index,
        memory: Field::Value(MemoryReading {
            total_bytes: total,
            used_bytes: used,
            free_bytes: total - reserved - used,
            reserved_bytes: Field::Value(reserved),
            source: MemorySource::Simulated,
        }),
        utilization: Field::Value(Utilization { gpu_pct: a.busy, memory_pct: a.busy / 2 }),
        temperature_c: na(),
        power_draw_mw: na(),
        power_limit_mw: na(),
        sm_clock_mhz: na(),
        memory_clock_mhz: na(),
        mig_instances: Field::Value(Vec::new()),
        processes: if with_list {
            Field::Value(
                a.procs
                    .iter()
                    .map(|&(pid, name, b)| GpuProcess {
                        pid,
                        name: Field::Value(name.into()),
                        container: None,
                        pod: None,
                        used_bytes: Field::Value(b),
                        mig: None,
                        launch: None,
                    })
                    .collect(),
            )
        } else {
            Field::Unavailable(Unavailable::NotSampled)
        },
    }
}

/// Replays `scene` (GPU totals, and what each GPU holds at `t` seconds) from
/// 0 to `until_s` as the agent samples it; returns each moment's findings.
fn replay(totals: &[u64], until_s: f64, scene: impl Fn(f64) -> Vec<At>) -> Vec<(f64, Vec<Finding>)> {
    let mut w = Watcher::new();
    let mut out = Vec::new();
    let mut list_ms = 0;
    for step in 0..=((until_s * 2.0) as u64) {
        let t = step as f64 / 2.0;
        let ms = T0 + step * 500;
        let with_list = step % 4 == 0;
        if with_list {
            list_ms = ms;
        }
        let now = scene(t);
        let sample = Sample {
            seq: step + 1,
            timestamp_ms: ms,
            processes_timestamp_ms: list_ms,
            simulated: true,
            gpus: totals.iter().zip(0u32..).map(|(&tot, i)| gpu_sample(i, tot, &now[i as usize], with_list)).collect(),
        };
        out.push((t, w.update(&sample).to_vec()));
    }
    out
}

/// When `cause` was first found, and every cause ever found.
fn first(run: &[(f64, Vec<Finding>)], cause: Cause) -> (Option<f64>, Vec<Cause>) {
    let mut causes: Vec<Cause> = run.iter().flat_map(|(_, fs)| fs.iter().map(|f| f.cause)).collect();
    causes.sort();
    causes.dedup();
    (run.iter().find(|(_, fs)| fs.iter().any(|f| f.cause == cause)).map(|(t, _)| *t), causes)
}

fn ramp(t: f64, from_s: f64, to_s: f64, bytes: u64) -> u64 {
    let x = ((t - from_s) / (to_s - from_s)).clamp(0.0, 1.0);
    (bytes as f64 * x) as u64 / MIB * MIB
}

#[test]
fn a_burst_to_capacity_is_cause_one() {
    // A 7B in fp32 on a 24 GiB card: 22.8 GiB in 4 s, then nothing moves.
    let run = replay(&[GPU_24], 30.0, |t| vec![at(vec![(4100, "python3", ramp(t, 2.0, 6.0, 22_800 * MIB))], 3)]);
    let (when, causes) = first(&run, Cause::NearCapacity);
    assert_eq!(causes, [Cause::NearCapacity]);
    let when = when.unwrap();
    assert!(when <= 6.0 + 10.0, "found at {when} s");
    let f = &run.last().unwrap().1[0];
    assert_eq!((f.pid, f.process.as_deref(), f.certainty), (Some(4100), Some("python3"), Certainty::Likely));
    assert_eq!(f.found_ms, T0 + (when * 1000.0) as u64, "the moment it was first made stays");
    assert!(f.evidence.contains("rose by 22.27 GiB"), "{}", f.evidence);
    assert!(f.fix.contains("load_in_4bit=True"), "{}", f.fix);
}

#[test]
fn a_server_that_takes_its_pool_at_start_is_not_a_finding() {
    // vLLM's engine core allocates 90 % at start on purpose.
    let run = replay(&[GPU_24], 30.0, |t| vec![at(vec![(7, "VLLM::EngineCore", ramp(t, 2.0, 8.0, 21 * GIB))], 2)]);
    assert_eq!(first(&run, Cause::NearCapacity).1, []);
}

#[test]
fn a_climb_while_computing_is_cause_two_and_its_projection_holds() {
    // 13 GiB loaded, then 384 MiB every 1.5 s while generating, until the
    // card is full (the process dies with an OOM and its memory is gone).
    let usable = GPU_24 - GPU_24 / 160;
    let load = 13 * GIB;
    let step = 384 * MIB;
    let held = move |t: f64| -> Option<u64> {
        if t < 6.0 {
            return Some(ramp(t, 1.0, 4.0, load));
        }
        let b = load + step * (((t - 6.0) / 1.5).floor() as u64 + 1);
        (b <= usable).then_some(b)
    };
    // The first step that would not fit: when it would have been taken.
    let crash_s = (6.0..200.0).step_by_half().find(|&t| held(t).is_none()).unwrap();
    let run = replay(&[GPU_24], crash_s + 8.0, |t| {
        let busy = if t >= 6.0 { 85 } else { 3 };
        vec![at(held(t).map(|b| vec![(4100, "python3", b)]).unwrap_or_default(), busy)]
    });
    let (when, causes) = first(&run, Cause::Growing);
    assert_eq!(causes, [Cause::Growing]);
    let when = when.unwrap();
    assert!(when <= 6.0 + 10.0, "found at {when} s");
    for (t, fs) in run.iter().filter(|(t, _)| *t >= when && *t < crash_s) {
        let g = fs[0].growth.unwrap();
        let projected = t + g.seconds_to_capacity as f64;
        assert!((projected - crash_s).abs() <= 0.1 * (crash_s - t) + 1.0, "at {t} s: {projected} vs {crash_s}");
    }
    let f = &run.iter().find(|(t, _)| *t == when).unwrap().1[0];
    assert_eq!(f.pid, Some(4100));
    assert_eq!(f.growth.unwrap().bytes_per_s, step * 1000 / 1500);
    assert!(run.last().unwrap().1.is_empty(), "gone with the process");
}

#[test]
fn one_process_full_on_one_gpu_and_nearly_empty_on_another_is_cause_three() {
    let run = replay(&[GPU_24, GPU_24], 20.0, |t| {
        vec![
            at(vec![(900, "python3", ramp(t, 1.0, 4.0, 22_600 * MIB))], 2),
            at(vec![(900, "python3", ramp(t, 4.0, 5.0, 4 * GIB))], 2),
        ]
    });
    let (when, causes) = first(&run, Cause::Unbalanced);
    assert_eq!(causes, [Cause::Unbalanced], "the split, not the precision");
    assert!(when.unwrap() <= 5.0 + 10.0);
    let f = &run.last().unwrap().1[0];
    assert_eq!((f.gpu, f.pid), (0, Some(900)));
    assert_eq!(f.spread, [(0, 22_600 * MIB), (1, 4 * GIB)]);
    assert!(f.fix.contains("max_memory={0: \"15GiB\", 1: \"15GiB\"}"), "{}", f.fix);
}

#[test]
fn an_idle_process_beside_a_loading_one_is_cause_four() {
    let run = replay(&[GPU_24], 20.0, |t| {
        vec![at(vec![(3810, "python3", 9 * GIB), (4100, "python3", ramp(t, 3.0, 6.0, 12 * GIB))], 4)]
    });
    let (when, causes) = first(&run, Cause::Leftover);
    assert_eq!(causes, [Cause::Leftover]);
    assert!(when.unwrap() <= 6.0 + 10.0);
    let f = &run.last().unwrap().1[0];
    assert_eq!((f.pid, f.bytes, f.certainty), (Some(3810), 9 * GIB, Certainty::Possible));
    assert!(f.fix.contains("kill 3810"), "{}", f.fix);
}

#[test]
fn memory_no_process_holds_is_cause_four() {
    let run =
        replay(&[GPU_24], 12.0, |_| vec![At { procs: vec![(4100, "python3", 2 * GIB)], busy: 0, hidden: 6 * GIB }]);
    let f = &run.last().unwrap().1;
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].cause, f[0].pid, f[0].bytes), (Cause::Leftover, None, 6 * GIB));
}

#[test]
fn steady_and_idle_gpus_yield_nothing() {
    // A server loaded before the agent looked, busy at a constant 92 %.
    let steady = replay(&[GPU_24, GPU_24], 60.0, |_| {
        vec![at(vec![(7, "VLLM::EngineCore", 22 * GIB)], 80), at(vec![(8, "python3", 22 * GIB)], 75)]
    });
    assert!(steady.iter().all(|(_, f)| f.is_empty()));
    let idle = replay(&[GPU_24], 30.0, |_| vec![at(vec![], 0)]);
    assert!(idle.iter().all(|(_, f)| f.is_empty()));
    // A desktop's small allocations wobbling are noise.
    let desktop = replay(&[GPU_24], 30.0, |t| vec![at(vec![(5, "Xorg", (200 + (t as u64 % 3) * 20) * MIB)], 30)]);
    assert!(desktop.iter().all(|(_, f)| f.is_empty()));
}

#[test]
fn the_window_is_bounded_and_starts_over_when_time_goes_back() {
    let mut w = Window::default();
    let sample = |ms: u64| Sample {
        seq: 1,
        timestamp_ms: ms,
        processes_timestamp_ms: ms,
        simulated: true,
        gpus: vec![gpu_sample(0, GPU_24, &at(vec![], 0), true)],
    };
    for i in 0..5_000 {
        w.push(&sample(T0 + i * 100));
    }
    let g = w.gpu(0).unwrap();
    assert!(g.memory.len() <= 2_048 && g.lists.len() <= 2_048);
    assert!(g.memory.back().unwrap().t_ms - g.memory.front().unwrap().t_ms <= SPAN_MS);
    w.push(&sample(T0));
    assert_eq!(w.gpu(0).unwrap().memory.len(), 1);
}

#[test]
fn a_plan_names_the_precision_that_was_loaded() {
    let model = crate::model::Model::preset("llama-2-7b").unwrap();
    let run = replay(&[GPU_24], 16.0, |t| vec![at(vec![(4100, "python3", ramp(t, 1.0, 4.0, 13_500 * MIB))], 2)]);
    // 13.5 GiB is 56 % of a 24 GiB card: no finding; the same load on a 16 GiB card is one.
    assert!(run.iter().all(|(_, f)| f.is_empty()));
    let run = replay(&[16 * GIB], 16.0, |t| vec![at(vec![(4100, "python3", ramp(t, 1.0, 4.0, 15_000 * MIB))], 2)]);
    let f = &run.last().unwrap().1[0];
    let scenario = crate::plan::Scenario::default().validate().unwrap();
    let estimate = crate::estimate::estimate(&model, scenario);
    let notes = plan_notes(f, &PlanFacts::of(&model, &estimate));
    assert!(notes[0].contains("in 16-bit (12.55 GiB of weights)"), "{notes:?}");
    assert!(notes[0].contains("in 4-bit ≈"), "{notes:?}");
}

/// `(a..b).step_by_half()`: every half second from `a` below `b`.
trait HalfSteps {
    fn step_by_half(self) -> impl Iterator<Item = f64>;
}

impl HalfSteps for std::ops::Range<f64> {
    fn step_by_half(self) -> impl Iterator<Item = f64> {
        let n = ((self.end - self.start) * 2.0) as u64;
        (0..n).map(move |i| self.start + i as f64 / 2.0)
    }
}
