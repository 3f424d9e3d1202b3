//! One agent as the page knows it: its connection state, what `welcome`
//! said, the latest sample, and per GPU the last ten minutes of memory and
//! when each process was first seen. Updated in place by [`HostModel::apply`].

use std::collections::VecDeque;

use shared::protocol::{Field, Findings, GpuInfo, GpuSample, Sample, ServerMessage, Unavailable, Welcome};

use super::probe::{ProbeRun, is_probe_error};
use super::status::{LinkStatus, url_host};

/// How much history a timeline keeps.
pub const WINDOW_MS: u64 = 10 * 60 * 1_000;

/// One memory reading of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub t_ms: u64,
    pub used_bytes: u64,
    pub total_bytes: u64,
}

/// What the page remembers about one GPU between samples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuHistory {
    pub points: VecDeque<Point>,
    /// Since when the GPU has run no kernel (utilisation 0), if it is idle.
    pub idle_since_ms: Option<u64>,
    /// `(pid, first seen)` of the processes on it now.
    pub first_seen: Vec<(u32, u64)>,
}

impl GpuHistory {
    pub fn first_seen(&self, pid: u32) -> Option<u64> {
        self.first_seen.iter().find(|(p, _)| *p == pid).map(|(_, t)| *t)
    }
}

/// One agent.
#[derive(Debug, Clone, PartialEq)]
pub struct HostModel {
    /// `ws(s)://host:port/ws`.
    pub url: String,
    pub status: LinkStatus,
    pub welcome: Option<Welcome>,
    pub latest: Option<Sample>,
    /// Parallel to the latest sample's `gpus`.
    pub history: Vec<GpuHistory>,
    /// This page's latest probe on this host.
    pub probe: Option<ProbeRun>,
    /// The agent's diagnosis of its readings, as of its latest sample.
    pub findings: Option<Findings>,
}

impl HostModel {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            status: LinkStatus::Connecting,
            welcome: None,
            latest: None,
            history: Vec::new(),
            probe: None,
            findings: None,
        }
    }

    /// The hostname from `welcome`, else the address.
    pub fn name(&self) -> String {
        self.welcome.as_ref().map_or_else(|| url_host(&self.url).to_owned(), |w| w.host.hostname.clone())
    }

    pub fn simulated(&self) -> bool {
        self.welcome.as_ref().is_some_and(|w| w.host.simulated)
    }

    pub fn gpu_count(&self) -> usize {
        self.welcome.as_ref().map_or(0, |w| w.host.gpus.len())
    }

    pub fn info(&self, index: u32) -> Option<&GpuInfo> {
        self.welcome.as_ref()?.host.gpus.iter().find(|g| g.index == index)
    }

    pub fn reading(&self, index: u32) -> Option<&GpuSample> {
        self.latest.as_ref()?.gpus.iter().find(|g| g.index == index)
    }

    pub fn history(&self, index: u32) -> Option<&GpuHistory> {
        let pos = self.latest.as_ref()?.gpus.iter().position(|g| g.index == index)?;
        self.history.get(pos)
    }

    /// Unix ms of the latest sample (0 before the first).
    pub fn now_ms(&self) -> u64 {
        self.latest.as_ref().map_or(0, |s| s.timestamp_ms)
    }

    /// Takes one message from the agent. Errors are the connection's
    /// business ([`crate::live::socket`]); only data lands here.
    pub fn apply(&mut self, message: ServerMessage) {
        match message {
            ServerMessage::Welcome(w) => {
                // Another set of GPUs (the agent restarted elsewhere): start over.
                let same = self.welcome.as_ref().is_some_and(|old| old.host.gpus == w.host.gpus);
                if !same {
                    self.history.clear();
                    self.latest = None;
                    self.findings = None;
                }
                self.welcome = Some(w);
                self.status = LinkStatus::Live;
            }
            ServerMessage::Sample(s) => self.sample(s),
            ServerMessage::Findings(f) => self.findings = Some(f),
            ServerMessage::ProbeStarted(s) => {
                if let Some(run) = self.probe.as_mut().filter(|r| r.gpu == s.gpu) {
                    run.steps = run.steps.max(s.steps);
                    run.started = Some(s);
                }
            }
            ServerMessage::ProbeProgress(p) => {
                if let Some(run) =
                    self.probe.as_mut().filter(|r| r.started.as_ref().is_some_and(|s| s.probe_id == p.probe_id))
                {
                    run.progress = Some(p);
                }
            }
            ServerMessage::ProbeResult(r) => {
                if let Some(run) = self.probe.as_mut().filter(|run| run.gpu == r.gpu) {
                    run.result = Some(r);
                }
            }
            ServerMessage::Error(e) => {
                // A refusal of the probe just asked for lands on it.
                if let Some(run) = self.probe.as_mut().filter(|r| r.running() && r.started.is_none())
                    && is_probe_error(e.code)
                {
                    run.error = Some(e);
                }
            }
        }
    }

    fn sample(&mut self, s: Sample) {
        let t = s.timestamp_ms;
        if self.history.len() != s.gpus.len() {
            self.history = vec![GpuHistory::default(); s.gpus.len()];
        }
        for (g, h) in s.gpus.iter().zip(self.history.iter_mut()) {
            if let Field::Value(m) = &g.memory {
                // A reading older than the last one (clock change) restarts the line.
                if h.points.back().is_some_and(|p| p.t_ms >= t) {
                    h.points.clear();
                }
                h.points.push_back(Point { t_ms: t, used_bytes: m.used_bytes, total_bytes: m.total_bytes });
            }
            while h.points.front().is_some_and(|p| p.t_ms + WINDOW_MS < t) {
                h.points.pop_front();
            }
            match g.utilization.value().map(|u| u.gpu_pct) {
                Some(0) => h.idle_since_ms = h.idle_since_ms.or(Some(t)),
                Some(_) => h.idle_since_ms = None,
                None => {}
            }
            match &g.processes {
                Field::Value(list) => {
                    let seen = s.processes_timestamp_ms;
                    h.first_seen.retain(|(pid, _)| list.iter().any(|p| p.pid == *pid));
                    for p in list {
                        if h.first_seen(p.pid).is_none() {
                            h.first_seen.push((p.pid, seen));
                        }
                    }
                }
                Field::Unavailable(Unavailable::NotSampled) => {}
                Field::Unavailable(_) => h.first_seen.clear(),
            }
        }
        self.latest = Some(s);
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use shared::protocol::*;
    use shared::units::{GIB, MIB};

    pub fn welcome(totals: &[u64]) -> Welcome {
        Welcome {
            protocol_version: PROTOCOL_VERSION,
            host: HostInfo {
                agent_version: "0.1.0".into(),
                hostname: "lab1".into(),
                driver_version: Field::Value("simulated".into()),
                cuda_driver_version: Field::Unavailable(Unavailable::NotSupported),
                simulated: true,
                memory_total_bytes: Field::Value(270_582_939_648),
                gpus: totals
                    .iter()
                    .zip(0u32..)
                    .map(|(&t, index)| GpuInfo {
                        index,
                        uuid: Field::Value(format!("GPU-sim-{index}")),
                        name: Field::Value("NVIDIA GeForce RTX 4090 (simulated)".into()),
                        pci_bus_id: Field::Unavailable(Unavailable::NotSupported),
                        memory_total_bytes: Field::Value(t),
                        compute_mode: Field::Value(ComputeMode::Default),
                        mig_mode: Field::Unavailable(Unavailable::NotSupported),
                        catalog_id: Some("rtx-4090".into()),
                    })
                    .collect(),
            },
            limits: Limits::default(),
            probes: ProbeLimits::default(),
        }
    }

    /// `(pid, name, bytes)`.
    pub type Proc<'a> = (u32, &'a str, u64);
    /// `(total, used, util %, processes)`.
    pub type Gpu<'a> = (u64, u64, u32, &'a [Proc<'a>]);

    /// A sample at `t_s` seconds.
    pub fn sample(t_s: u64, gpus: &[Gpu]) -> Sample {
        Sample {
            seq: t_s,
            timestamp_ms: t_s * 1_000,
            processes_timestamp_ms: t_s * 1_000,
            simulated: true,
            gpus: gpus
                .iter()
                .zip(0u32..)
                .map(|(&(total, used, util, procs), index)| GpuSample {
                    index,
                    memory: Field::Value(MemoryReading {
                        total_bytes: total,
                        used_bytes: used,
                        free_bytes: total - used - 256 * MIB,
                        reserved_bytes: Field::Value(256 * MIB),
                        source: MemorySource::Simulated,
                    }),
                    utilization: Field::Value(Utilization { gpu_pct: util, memory_pct: util / 2 }),
                    temperature_c: Field::Value(60),
                    power_draw_mw: Field::Value(300_000),
                    power_limit_mw: Field::Value(450_000),
                    sm_clock_mhz: Field::Unavailable(Unavailable::NotSupported),
                    memory_clock_mhz: Field::Unavailable(Unavailable::NotSupported),
                    mig_instances: Field::Unavailable(Unavailable::NotSupported),
                    processes: Field::Value(
                        procs
                            .iter()
                            .map(|&(pid, name, bytes)| GpuProcess {
                                pid,
                                name: Field::Value(name.into()),
                                container: None,
                                pod: None,
                                used_bytes: Field::Value(bytes),
                                mig: None,
                                launch: None,
                            })
                            .collect(),
                    ),
                })
                .collect(),
        }
    }

    pub const G24: u64 = 24 * GIB;
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use shared::units::GIB;

    #[test]
    fn history_keeps_ten_minutes_and_first_sightings() {
        let mut h = HostModel::new("ws://127.0.0.1:7878/ws");
        assert_eq!(h.name(), "127.0.0.1:7878");
        h.apply(ServerMessage::Welcome(welcome(&[G24])));
        assert_eq!((h.name(), h.status.key(), h.simulated()), ("lab1".to_owned(), "live", true));
        for t in 0..=700 {
            let procs: &[(u32, &str, u64)] = if t >= 100 { &[(7, "vllm", GIB)] } else { &[] };
            h.apply(ServerMessage::Sample(sample(t, &[(G24, GIB, 0, procs)])));
        }
        let hist = h.history(0).expect("history");
        assert_eq!(hist.points.len(), 601, "10 minutes at 1 Hz, both ends included");
        assert_eq!(hist.points.front().map(|p| p.t_ms), Some(100_000));
        assert_eq!(hist.first_seen(7), Some(100_000));
        assert_eq!(hist.idle_since_ms, Some(0));
        // The process leaves and comes back: seen anew.
        h.apply(ServerMessage::Sample(sample(701, &[(G24, GIB, 50, &[])])));
        h.apply(ServerMessage::Sample(sample(702, &[(G24, GIB, 50, &[(7, "vllm", GIB)])])));
        let hist = h.history(0).expect("history");
        assert_eq!((hist.first_seen(7), hist.idle_since_ms), (Some(702_000), None));
    }

    #[test]
    fn a_different_machine_starts_over() {
        let mut h = HostModel::new("ws://a/ws");
        h.apply(ServerMessage::Welcome(welcome(&[G24])));
        h.apply(ServerMessage::Sample(sample(1, &[(G24, GIB, 0, &[])])));
        h.apply(ServerMessage::Welcome(welcome(&[G24])));
        assert!(h.latest.is_some(), "the same GPUs after a reconnect keep their history");
        h.apply(ServerMessage::Welcome(welcome(&[G24, G24])));
        assert!(h.latest.is_none() && h.history.is_empty());
    }
}
