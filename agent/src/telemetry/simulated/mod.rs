//! The simulated backend: GPUs from the catalog running an inference server
//! whose memory rises and falls like a real one (context, weights load, KV
//! cache grows step by step, plateau, exit). Deterministic: every reading is a
//! pure function of the time since sampling began, so tests can ask for any
//! moment. Everything it produces is labelled `simulated`.
//!
//! It also answers probes ([`probe_memory`]): a simulated GPU has a CUDA
//! context cost and fragmented free memory (its largest block is smaller than
//! what is free), both pure functions of its free and total memory.

mod scenario;

use std::fmt;
use std::time::Duration;

pub use scenario::{Scenario, ScenarioError, kv_growth_capacity_s};

use shared::catalog::{self, Gpu};
use shared::units::MIB;

use super::{
    Backend, ComputeMode, DeviceReading, DeviceStatic, HostStatic, Memory, MemoryApi, MigMode, ProcessReading, Reading,
    Utilization,
};

/// One simulated machine: catalog GPUs with counts, e.g. `2xh100-sxm,rtx-4090`.
/// What they do is the [`Scenario`] (the default cycle unless one is chosen).
#[derive(Debug, Clone)]
pub struct SimSpec {
    groups: Vec<(u32, &'static Gpu)>,
    scenario: Scenario,
}

impl PartialEq for SimSpec {
    fn eq(&self, other: &Self) -> bool {
        let ids = |s: &Self| s.groups.iter().map(|(n, g)| (*n, g.id.as_str())).collect::<Vec<_>>();
        ids(self) == ids(other) && self.scenario == other.scenario
    }
}

impl Eq for SimSpec {}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimSpecError {
    #[error("empty --simulate spec (example: 2xh100-sxm or rtx-4090)")]
    Empty,
    #[error("`{0}` is not a GPU count (use e.g. 2xh100-sxm, 1 to 16 GPUs per entry)")]
    BadCount(String),
    #[error("unknown GPU `{0}` (see `headroom gpus` for the ids)")]
    UnknownGpu(String),
    #[error("at most 64 simulated GPUs")]
    TooMany,
}

impl SimSpec {
    /// What the agent simulates when no NVIDIA driver is present: the
    /// product's running example, two 24 GB cards.
    pub fn default_spec() -> Self {
        Self::parse("2xrtx-4090").unwrap_or(Self { groups: Vec::new(), scenario: Scenario::Cycle })
    }

    pub fn parse(text: &str) -> Result<Self, SimSpecError> {
        let mut groups = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (count, id) = match part.split_once(['x', 'X']) {
                Some((n, id)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    let count: u32 = n.parse().map_err(|_| SimSpecError::BadCount(part.to_owned()))?;
                    if !(1..=16).contains(&count) {
                        return Err(SimSpecError::BadCount(part.to_owned()));
                    }
                    (count, id)
                }
                _ => (1, part),
            };
            let gpu = catalog::gpu(id).ok_or_else(|| SimSpecError::UnknownGpu(id.to_owned()))?;
            groups.push((count, gpu));
        }
        if groups.is_empty() {
            return Err(SimSpecError::Empty);
        }
        if groups.iter().map(|(n, _)| n).sum::<u32>() > 64 {
            return Err(SimSpecError::TooMany);
        }
        Ok(Self { groups, scenario: Scenario::Cycle })
    }

    /// The same GPUs playing `scenario`, if they can.
    pub fn with_scenario(self, scenario: Scenario) -> Result<Self, ScenarioError> {
        scenario.check(self.gpus().count())?;
        Ok(Self { scenario, ..self })
    }

    pub fn scenario(&self) -> Scenario {
        self.scenario
    }

    fn gpus(&self) -> impl Iterator<Item = &'static Gpu> + '_ {
        self.groups.iter().flat_map(|&(n, gpu)| std::iter::repeat_n(gpu, n as usize))
    }
}

impl fmt::Display for SimSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (n, gpu)) in self.groups.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            if *n == 1 { write!(f, "{sep}{}", gpu.id)? } else { write!(f, "{sep}{n}x{}", gpu.id)? }
        }
        Ok(())
    }
}

/// One cycle of the simulated inference server, in seconds.
const CYCLE_S: f64 = 120.0;
/// Each GPU's cycle starts this much later than the previous GPU's.
const PHASE_S: f64 = 37.0;
const CONTEXT_BYTES: u64 = 500 * MIB;
const DESKTOP_BYTES: u64 = 220 * MIB;
const SERVER_NAMES: [&str; 4] = ["vllm", "python3", "llama-server", "sglang"];

#[derive(Debug)]
pub struct SimulatedBackend {
    gpus: Vec<&'static Gpu>,
    scenario: Scenario,
    host: HostStatic,
}

impl SimulatedBackend {
    pub fn new(spec: SimSpec) -> Self {
        let gpus: Vec<&'static Gpu> = spec.gpus().collect();
        let scenario = spec.scenario;
        let devices = gpus
            .iter()
            .zip(0u32..)
            .map(|(gpu, index)| DeviceStatic {
                index,
                uuid: Ok(format!("GPU-00000000-0000-4000-8000-{index:012}")),
                name: Ok(format!("{} (simulated)", gpu.name)),
                pci_bus_id: Ok(format!("00000000:{:02X}:00.0", 0x18 + index)),
                memory_total_bytes: Ok(gpu.memory_bytes),
                compute_mode: Ok(ComputeMode::Default),
                mig_mode: Ok(MigMode { enabled: false, pending_enabled: false }),
                catalog_id: Some(gpu.id.clone()),
            })
            .collect();
        let host = HostStatic {
            driver_version: Ok("simulated".to_owned()),
            cuda_driver_version: Ok(12080),
            // A simulated host's RAM: 256 GiB, as on the GPU servers it imitates.
            memory_total_bytes: Ok(256 << 30),
            simulated: true,
            devices,
        };
        Self { gpus, scenario, host }
    }

    /// The processes of GPU `index` at `elapsed`.
    pub fn processes_at(&self, index: usize, elapsed: Duration) -> Vec<ProcessReading> {
        self.state_at(index, elapsed).0
    }

    /// The processes of GPU `index` at `elapsed` and how busy it is.
    fn state_at(&self, index: usize, elapsed: Duration) -> (Vec<ProcessReading>, u32) {
        let Some(gpu) = self.gpus.get(index) else { return (Vec::new(), 0) };
        let mut out = Vec::new();
        let desktop = index == 0 && gpu.id.starts_with("rtx");
        if desktop {
            out.push(ProcessReading { pid: 1312, used_bytes: Ok(DESKTOP_BYTES), mig: None, name: Some("Xorg".into()) });
        }
        if self.scenario != Scenario::Cycle {
            let room = gpu.memory_bytes - reserve(gpu) - if desktop { DESKTOP_BYTES } else { 0 };
            let (procs, busy) = scenario::at(self.scenario, index, gpu, room, elapsed.as_secs_f64());
            out.extend(procs.into_iter().map(|(pid, name, bytes)| ProcessReading {
                pid,
                used_bytes: Ok(bytes),
                mig: None,
                name: Some(name.to_owned()),
            }));
            return (out, busy);
        }
        let phase = cycle_position(index, elapsed);
        if let Some(bytes) = server_bytes(gpu, phase) {
            out.push(ProcessReading {
                pid: 41_000 + 10 * index as u32,
                used_bytes: Ok(bytes),
                mig: None,
                name: Some(SERVER_NAMES[index % SERVER_NAMES.len()].to_owned()),
            });
        }
        (out, utilization(phase))
    }

    fn device_at(&self, index: usize, gpu: &Gpu, elapsed: Duration) -> DeviceReading {
        let total = gpu.memory_bytes;
        let reserved = reserve(gpu);
        let (procs, gpu_pct) = self.state_at(index, elapsed);
        let used: u64 = procs.iter().filter_map(|p| p.used_bytes.ok()).sum();
        let used = used.min(total - reserved);
        let limit_mw = power_limit_w(&gpu.id) * 1000;
        let busy = f64::from(gpu_pct) / 100.0;
        DeviceReading {
            memory: Ok(Memory {
                total_bytes: total,
                used_bytes: used,
                free_bytes: total - reserved - used,
                reserved_bytes: Some(reserved),
                api: MemoryApi::Simulated,
            }),
            utilization: Ok(Utilization { gpu_pct, memory_pct: gpu_pct * 3 / 5 }),
            temperature_c: Ok(34 + gpu_pct * 45 / 100),
            power_draw_mw: Ok((f64::from(limit_mw) * (0.12 + 0.78 * busy)) as u32),
            power_limit_mw: Ok(limit_mw),
            sm_clock_mhz: Ok(if gpu_pct > 0 { 1755 } else { 345 }),
            memory_clock_mhz: Ok(if gpu.id.starts_with("rtx") { 10_501 } else { 2_619 }),
            mig_instances: Ok(Vec::new()),
        }
    }
}

impl Backend for SimulatedBackend {
    fn host(&self) -> &HostStatic {
        &self.host
    }

    fn read_devices(&mut self, elapsed: Duration) -> Vec<DeviceReading> {
        self.gpus.iter().enumerate().map(|(i, gpu)| self.device_at(i, gpu, elapsed)).collect()
    }

    fn read_processes(&mut self, elapsed: Duration) -> Vec<Reading<Vec<ProcessReading>>> {
        (0..self.gpus.len()).map(|i| Ok(self.processes_at(i, elapsed))).collect()
    }
}

/// Seconds into the current cycle of GPU `index`.
fn cycle_position(index: usize, elapsed: Duration) -> f64 {
    (elapsed.as_secs_f64() + PHASE_S * index as f64).rem_euclid(CYCLE_S)
}

/// The driver's reserve. Real cards report a few hundred MiB (v2 `reserved`);
/// 1/160 of the total lands there for the catalog's sizes.
fn reserve(gpu: &Gpu) -> u64 {
    (gpu.memory_bytes / 160) / MIB * MIB
}

/// The inference server's memory at `t` seconds into its cycle, or `None`
/// while it is not running: context, weights (55 % of the card over 20 s), KV
/// cache growing in 16 steps to 30 % more, a plateau, then exit.
fn server_bytes(gpu: &Gpu, t: f64) -> Option<u64> {
    let usable = (gpu.memory_bytes - reserve(gpu)) as f64;
    let weights = usable * 0.55;
    let kv = usable * 0.30;
    let bytes = match t {
        t if t < 3.0 => return None,
        t if t < 8.0 => 0.0,
        t if t < 28.0 => weights * (t - 8.0) / 20.0,
        t if t < 100.0 => weights + kv * ((t - 28.0) / 72.0 * 16.0).ceil() / 16.0,
        t if t < 110.0 => weights + kv,
        _ => return None,
    };
    Some(CONTEXT_BYTES + (bytes as u64) / MIB * MIB)
}

/// GPU busy percentage at `t`: idle while loading, busy while serving.
fn utilization(t: f64) -> u32 {
    match t {
        t if (8.0..28.0).contains(&t) => 4,
        t if (28.0..110.0).contains(&t) => 68 + ((t * 7.0) as u32 % 27),
        _ => 0,
    }
}

/// Board power limits (W) for the simulation, from the vendors' spec sheets;
/// 250 W for GPUs not listed.
fn power_limit_w(id: &str) -> u32 {
    match id {
        "b200" => 1000,
        "gh200" => 900,
        "h100-sxm" | "h200" => 700,
        "rtx-pro-6000-blackwell" | "mi300x" => 600,
        "rtx-5090" => 575,
        "rtx-4090" | "rtx-3090-ti" => 450,
        "h100-nvl" | "a100-40gb-sxm" | "a100-80gb-sxm" => 400,
        "h100-pcie" | "l40s" | "rtx-3090" | "rtx-5080" => 350,
        "a100-80gb-pcie" | "l40" | "a10g" | "rtx-6000-ada" | "rtx-a6000" | "v100-16gb" | "v100-32gb" => 300,
        "a10" => 150,
        "l4" => 72,
        "t4" => 70,
        _ => 250,
    }
}

/// What a probe finds on a simulated GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimProbeMemory {
    /// What the probe's own CUDA context costs.
    pub context_bytes: u64,
    /// The free memory left after the context, as separate blocks, largest
    /// first: one big block and [`FRAGMENTS`] smaller ones.
    pub blocks: Vec<u64>,
}

impl SimProbeMemory {
    pub fn free_bytes(&self) -> u64 {
        self.blocks.iter().sum()
    }
}

/// How many small blocks the simulated free memory is split off into.
pub const FRAGMENTS: u64 = 4;

/// The simulated GPU's answer to a probe, given its free and total memory.
///
/// Context cost: a linear fit through two measurements, 107 MiB on a 16 GiB
/// RTX 4060 Ti and 555 MiB on a 96 GiB RTX PRO 6000 (ggml-org/llama.cpp#23604;
/// the cost really scales with SM count, for which memory is a proxy here).
/// Fragmentation: a tenth of what is free sits in [`FRAGMENTS`] blocks of
/// 2.5 % each, so the largest block is about 90 % of free.
pub fn probe_memory(free_bytes: u64, total_bytes: u64) -> SimProbeMemory {
    let round = |b: u64| b / (2 * MIB) * (2 * MIB);
    let context_bytes = round(16 * MIB + total_bytes / 1024 * 56 / 10);
    let free = free_bytes.saturating_sub(context_bytes);
    let piece = round(free / 40);
    let mut blocks = vec![free - piece * FRAGMENTS];
    blocks.extend(std::iter::repeat_n(piece, FRAGMENTS as usize).filter(|&b| b > 0));
    SimProbeMemory { context_bytes, blocks }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        let spec = SimSpec::parse("2xh100-sxm, rtx-4090").unwrap();
        assert_eq!(spec.to_string(), "2xh100-sxm,rtx-4090");
        assert_eq!(spec.gpus().count(), 3);
        assert_eq!(SimSpec::parse(""), Err(SimSpecError::Empty));
        assert_eq!(SimSpec::parse("0xh100-sxm"), Err(SimSpecError::BadCount("0xh100-sxm".into())));
        assert_eq!(SimSpec::parse("2xnope"), Err(SimSpecError::UnknownGpu("nope".into())));
        assert_eq!(SimSpec::default_spec().to_string(), "2xrtx-4090");
    }

    #[test]
    fn memory_rises_and_falls_and_always_adds_up() {
        let mut sim = SimulatedBackend::new(SimSpec::parse("h100-sxm").unwrap());
        let used_at = |sim: &mut SimulatedBackend, s: u64| {
            let m = sim.read_devices(Duration::from_secs(s))[0].memory.unwrap();
            assert_eq!(m.total_bytes, m.used_bytes + m.free_bytes + m.reserved_bytes.unwrap());
            m.used_bytes
        };
        let (idle, loading, serving, peak, gone) = (
            used_at(&mut sim, 1),
            used_at(&mut sim, 18),
            used_at(&mut sim, 60),
            used_at(&mut sim, 105),
            used_at(&mut sim, 115),
        );
        assert_eq!(idle, 0);
        assert!(idle < loading && loading < serving && serving < peak, "{loading} {serving} {peak}");
        assert_eq!(gone, 0);
        // Deterministic: the same moment reads the same.
        assert_eq!(sim.read_devices(Duration::from_secs(60)), sim.read_devices(Duration::from_secs(60)));
    }

    #[test]
    fn probes_see_a_context_cost_and_fragmented_memory() {
        let gib = 1u64 << 30;
        let small = probe_memory(15 * gib, 16 * gib);
        assert!((100 * MIB..120 * MIB).contains(&small.context_bytes), "{}", small.context_bytes / MIB);
        let big = probe_memory(70 * gib, 80 * gib);
        assert!((440 * MIB..480 * MIB).contains(&big.context_bytes), "{}", big.context_bytes / MIB);
        assert_eq!(big.free_bytes(), 70 * gib - big.context_bytes);
        let largest = big.blocks[0];
        assert!(largest < big.free_bytes() && largest > big.free_bytes() * 85 / 100);
        assert_eq!(probe_memory(0, 80 * gib).free_bytes(), 0);
    }
}
