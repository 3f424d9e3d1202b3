//! Scenarios: simulated GPUs that reproduce each cause of the OOM checklist,
//! so every finding of `shared::live` is tested end to end without a GPU
//! (`--simulate SPEC --scenario NAME`). Like the default cycle, each is a
//! pure function of the time since sampling began.

use std::fmt;

use shared::catalog::Gpu;
use shared::units::MIB;

/// What the simulated GPUs do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scenario {
    /// An inference server that starts, loads, grows its cache, serves and
    /// exits, over and over (the demo).
    #[default]
    Cycle,
    /// A server loaded before the agent looked, busy, its memory still: no finding.
    Steady,
    /// A notebook loads a model too big for the card in one burst (a 7B in
    /// fp32 on 24 GB): cause 1.
    Fp32Load,
    /// A notebook loads, then generates while its KV cache grows step by step
    /// until the card is full and it dies with an OOM: cause 2.
    KvGrowth,
    /// One process on two GPUs, `device_map="sequential"`: GPU 0 full, GPU 1
    /// nearly empty: cause 3. Needs two GPUs.
    Unbalanced,
    /// An earlier notebook kernel holds a model while a new one loads beside
    /// it: cause 4.
    Leftover,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    #[error("unknown scenario `{0}` (cycle, steady, fp32-load, kv-growth, unbalanced, leftover)")]
    Unknown(String),
    #[error("the `unbalanced` scenario needs two or more GPUs (e.g. --simulate 2xrtx-4090)")]
    NeedsTwoGpus,
}

impl Scenario {
    pub const ALL: [Scenario; 6] = [
        Scenario::Cycle,
        Scenario::Steady,
        Scenario::Fp32Load,
        Scenario::KvGrowth,
        Scenario::Unbalanced,
        Scenario::Leftover,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Scenario::Cycle => "cycle",
            Scenario::Steady => "steady",
            Scenario::Fp32Load => "fp32-load",
            Scenario::KvGrowth => "kv-growth",
            Scenario::Unbalanced => "unbalanced",
            Scenario::Leftover => "leftover",
        }
    }

    pub fn parse(text: &str) -> Result<Self, ScenarioError> {
        let text = text.trim();
        Self::ALL.into_iter().find(|s| s.id() == text).ok_or_else(|| ScenarioError::Unknown(text.to_owned()))
    }

    /// Whether `gpus` GPUs can play it.
    pub fn check(self, gpus: usize) -> Result<(), ScenarioError> {
        match self {
            Scenario::Unbalanced if gpus < 2 => Err(ScenarioError::NeedsTwoGpus),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One simulated process: `(pid, name, bytes)`.
pub type Proc = (u32, &'static str, u64);

/// What GPU `index` runs at `t` seconds: its processes (beyond the desktop)
/// and how busy it is, for every scenario but the cycle.
pub fn at(scenario: Scenario, index: usize, gpu: &Gpu, usable: u64, t: f64) -> (Vec<Proc>, u32) {
    let share = |f: f64| (usable as f64 * f) as u64 / MIB * MIB;
    let pid = 41_000 + 10 * index as u32;
    match (scenario, index) {
        (Scenario::Steady, _) => {
            // vLLM's default --gpu-memory-utilization 0.9 of the card.
            let pool = (gpu.memory_bytes as f64 * 0.9) as u64 / MIB * MIB;
            (vec![(pid, "VLLM::EngineCore", pool.min(usable))], 72 + (t * 7.0) as u32 % 17)
        }
        (Scenario::Fp32Load, 0) => (held(pid, ramp(t, 2.0, 6.0, share(0.93))), if t < 6.0 { 3 } else { 1 }),
        (Scenario::KvGrowth, 0) => match kv_growth(usable, t) {
            Some(bytes) => (vec![(pid, "python3", bytes)], if t >= KV_START_S { 86 } else { 3 }),
            None => (Vec::new(), 0),
        },
        (Scenario::Unbalanced, 0) => (held(41_000, ramp(t, 1.0, 4.0, share(0.95))), 2),
        (Scenario::Unbalanced, 1) => (held(41_000, ramp(t, 4.0, 5.0, share(0.17))), 2),
        (Scenario::Leftover, 0) => {
            (vec![(38_100, "python3", share(0.37)), (pid, "python3", ramp(t, 3.0, 6.0, share(0.5)))], 4)
        }
        _ => (Vec::new(), 0),
    }
}

fn held(pid: u32, bytes: u64) -> Vec<Proc> {
    if bytes == 0 { Vec::new() } else { vec![(pid, "python3", bytes)] }
}

/// `bytes × (t − from) / (to − from)`, clamped, in whole MiB.
fn ramp(t: f64, from_s: f64, to_s: f64, bytes: u64) -> u64 {
    let x = ((t - from_s) / (to_s - from_s)).clamp(0.0, 1.0);
    (bytes as f64 * x) as u64 / MIB * MIB
}

/// Generation starts here, after the load (1 – 4 s) and a pause.
const KV_START_S: f64 = 6.0;
/// A step of the cache every 1.5 s: 1/64 of the card.
const KV_STEP_S: f64 = 1.5;

/// The growing notebook's memory at `t`, or `None` once it has died: 55 % of
/// the card loaded, then a step every 1.5 s until the next would not fit.
fn kv_growth(usable: u64, t: f64) -> Option<u64> {
    let load = (usable as f64 * 0.55) as u64 / MIB * MIB;
    if t < KV_START_S {
        return Some(ramp(t, 1.0, 4.0, load));
    }
    let steps = ((t - KV_START_S) / KV_STEP_S).floor() as u64 + 1;
    let bytes = load + steps * (usable / 64 / MIB * MIB);
    (bytes <= usable).then_some(bytes)
}

/// When the growing notebook dies: the moment its next step would not fit
/// in `room` (the card less what others hold). For tests of the projection.
pub fn kv_growth_capacity_s(room: u64) -> f64 {
    let load = (room as f64 * 0.55) as u64 / MIB * MIB;
    let step = room / 64 / MIB * MIB;
    let steps_that_fit = (room - load) / step;
    KV_START_S + steps_that_fit as f64 * KV_STEP_S
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use shared::live::{Cause, Watcher};
    use shared::protocol::{Field, GpuProcess, Sample};

    use super::super::{SimSpec, SimulatedBackend};
    use super::*;
    use crate::telemetry::{Backend, convert};

    /// Plays `spec` for `seconds` as the sampler reads it (memory every
    /// 500 ms, processes every 2 s); each moment's causes.
    fn play(spec: &str, scenario: Scenario, seconds: u64) -> Vec<(f64, Vec<shared::live::Finding>)> {
        let spec = SimSpec::parse(spec).unwrap().with_scenario(scenario).unwrap();
        let mut sim = SimulatedBackend::new(spec);
        let mut watcher = Watcher::new();
        let mut lists = Vec::new();
        let mut out = Vec::new();
        for step in 0..seconds * 2 {
            let elapsed = Duration::from_millis(step * 500);
            let ms = 1_700_000_000_000 + step * 500;
            let devices = sim.read_devices(elapsed);
            if step % 4 == 0 {
                lists = sim
                    .read_processes(elapsed)
                    .into_iter()
                    .map(|list| {
                        Field::Value(
                            list.unwrap()
                                .into_iter()
                                .map(|p| GpuProcess {
                                    pid: p.pid,
                                    name: Field::Value(p.name.unwrap()),
                                    container: None,
                                    pod: None,
                                    used_bytes: Field::Value(p.used_bytes.unwrap()),
                                    mig: None,
                                    launch: None,
                                })
                                .collect(),
                        )
                    })
                    .collect();
            }
            let sample = Sample {
                seq: step + 1,
                timestamp_ms: ms,
                processes_timestamp_ms: 1_700_000_000_000 + step / 4 * 2_000,
                simulated: true,
                gpus: devices
                    .iter()
                    .zip(0u32..)
                    .map(|(d, i)| convert::gpu_sample(i, d, lists[i as usize].clone()))
                    .collect(),
            };
            out.push((step as f64 / 2.0, watcher.update(&sample).to_vec()));
        }
        out
    }

    fn causes(run: &[(f64, Vec<shared::live::Finding>)]) -> Vec<Cause> {
        let mut c: Vec<Cause> = run.iter().flat_map(|(_, f)| f.iter().map(|f| f.cause)).collect();
        c.sort();
        c.dedup();
        c
    }

    fn first(run: &[(f64, Vec<shared::live::Finding>)], cause: Cause) -> f64 {
        run.iter().find(|(_, f)| f.iter().any(|f| f.cause == cause)).map(|(t, _)| *t).expect("found")
    }

    #[test]
    fn each_scenario_yields_its_cause_within_ten_seconds_and_no_other() {
        // (scenario, cause, when the cause is there to see: the load's end)
        let cases = [
            (Scenario::Fp32Load, Cause::NearCapacity, 6.0),
            (Scenario::KvGrowth, Cause::Growing, KV_START_S),
            (Scenario::Unbalanced, Cause::Unbalanced, 5.0),
            (Scenario::Leftover, Cause::Leftover, 6.0),
        ];
        for (scenario, cause, from) in cases {
            for spec in ["2xrtx-4090", "2xh100-sxm"] {
                let run = play(spec, scenario, 90);
                assert_eq!(causes(&run), [cause], "{scenario} on {spec}");
                let at = first(&run, cause);
                assert!(at <= from + 10.0, "{scenario} on {spec}: found at {at} s");
            }
        }
    }

    #[test]
    fn steady_and_idle_yield_nothing() {
        for spec in ["2xrtx-4090", "h100-sxm,l4"] {
            assert_eq!(causes(&play(spec, Scenario::Steady, 60)), [], "{spec}");
        }
        // The fp32 load happens on GPU 0 only: GPU 1 stays idle and clean.
        let run = play("2xl4", Scenario::Fp32Load, 30);
        assert!(run.iter().all(|(_, f)| f.iter().all(|f| f.gpu == 0)));
    }

    #[test]
    fn the_projection_to_capacity_is_within_ten_percent() {
        for spec in ["rtx-4090", "h100-sxm", "l4"] {
            let sim = SimulatedBackend::new(SimSpec::parse(spec).unwrap());
            let gpu = sim.gpus[0];
            let desktop = if gpu.id.starts_with("rtx") { super::super::DESKTOP_BYTES } else { 0 };
            let dies = kv_growth_capacity_s(gpu.memory_bytes - super::super::reserve(gpu) - desktop);
            let run = play(spec, Scenario::KvGrowth, dies as u64 + 5);
            let mut checked = 0;
            for (t, findings) in run.iter().filter(|(t, _)| *t < dies) {
                let Some(g) = findings.iter().find_map(|f| f.growth) else { continue };
                let projected = t + g.seconds_to_capacity as f64;
                let error = (projected - dies).abs() / (dies - t);
                assert!(error <= 0.10 || (projected - dies).abs() <= 1.0, "{spec} at {t} s: {projected} vs {dies}");
                checked += 1;
            }
            assert!(checked > 5, "{spec}: {checked} projections");
            assert!(run.last().unwrap().1.is_empty(), "{spec}: gone with the process");
        }
    }

    #[test]
    fn scenarios_parse_and_check_their_gpus() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.id()), Ok(s));
        }
        assert_eq!(Scenario::parse("oom"), Err(ScenarioError::Unknown("oom".into())));
        let one = SimSpec::parse("rtx-4090").unwrap();
        assert_eq!(one.with_scenario(Scenario::Unbalanced), Err(ScenarioError::NeedsTwoGpus));
    }
}
