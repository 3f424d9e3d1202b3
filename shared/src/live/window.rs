//! The readings a diagnosis looks at: the last [`SPAN_MS`] of one host's
//! samples, per GPU — its memory at every sample and its process lists each
//! time the agent read them (less often: they are the expensive NVML call).

use std::collections::{BTreeMap, VecDeque};

use crate::protocol::{Field, Sample};

/// How far back a diagnosis looks: three minutes covers a model load and the
/// first minutes of generation, the moments the checklist asks about.
pub const SPAN_MS: u64 = 180_000;
/// At most this many readings per GPU (three minutes at the fastest interval
/// a client may ask for, 100 ms, is 1,800).
const MAX_POINTS: usize = 2_048;

/// One reading of one GPU's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryPoint {
    pub t_ms: u64,
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    /// The share of the last period a kernel ran, when read.
    pub gpu_pct: Option<u32>,
}

/// One process list of one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPoint {
    pub t_ms: u64,
    /// The GPU's `used` at the sample that carried the list.
    pub gpu_used_bytes: u64,
    pub processes: Vec<ProcessPoint>,
}

impl ListPoint {
    /// What the listed processes hold together; `None` when any of them
    /// could not be read (then nothing can be said to be unaccounted for).
    pub fn listed_bytes(&self) -> Option<u64> {
        self.processes.iter().try_fold(0u64, |sum, p| Some(sum.saturating_add(p.used_bytes?)))
    }

    pub fn process(&self, pid: u32) -> Option<&ProcessPoint> {
        self.processes.iter().find(|p| p.pid == pid)
    }

    /// What `pid` held: 0 when the list does not name it.
    pub fn held_by(&self, pid: u32) -> u64 {
        self.process(pid).and_then(|p| p.used_bytes).unwrap_or(0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessPoint {
    pub pid: u32,
    pub name: Option<String>,
    pub used_bytes: Option<u64>,
}

/// One GPU's readings, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuSeries {
    pub memory: VecDeque<MemoryPoint>,
    pub lists: VecDeque<ListPoint>,
}

impl GpuSeries {
    pub fn latest(&self) -> Option<&MemoryPoint> {
        self.memory.back()
    }
}

/// The last [`SPAN_MS`] of readings of every GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    gpus: BTreeMap<u32, GpuSeries>,
    last_ms: u64,
    last_list_ms: u64,
}

impl Window {
    pub fn gpus(&self) -> impl Iterator<Item = (u32, &GpuSeries)> {
        self.gpus.iter().map(|(i, s)| (*i, s))
    }

    pub fn gpu(&self, index: u32) -> Option<&GpuSeries> {
        self.gpus.get(&index)
    }

    /// Adds a sample. A sample older than the last (a restarted agent, a
    /// clock set back) starts the window over; a repeated one is skipped.
    pub fn push(&mut self, sample: &Sample) {
        let t = sample.timestamp_ms;
        if t < self.last_ms {
            *self = Self::default();
        } else if t == self.last_ms && !self.gpus.is_empty() {
            return;
        }
        self.last_ms = t;
        let new_list = sample.processes_timestamp_ms > self.last_list_ms;
        for g in &sample.gpus {
            let Field::Value(m) = &g.memory else { continue };
            let series = self.gpus.entry(g.index).or_default();
            series.memory.push_back(MemoryPoint {
                t_ms: t,
                total_bytes: m.total_bytes,
                used_bytes: m.used_bytes,
                free_bytes: m.free_bytes,
                gpu_pct: g.utilization.value().map(|u| u.gpu_pct),
            });
            if let (true, Field::Value(list)) = (new_list, &g.processes) {
                let processes = list
                    .iter()
                    .map(|p| ProcessPoint {
                        pid: p.pid,
                        name: p.name.value().cloned(),
                        used_bytes: p.used_bytes.value().copied(),
                    })
                    .collect();
                series.lists.push_back(ListPoint {
                    t_ms: sample.processes_timestamp_ms,
                    gpu_used_bytes: m.used_bytes,
                    processes,
                });
            }
        }
        if new_list {
            self.last_list_ms = sample.processes_timestamp_ms;
        }
        let since = t.saturating_sub(SPAN_MS);
        self.gpus.retain(|_, s| {
            while s.memory.front().is_some_and(|m| m.t_ms < since) || s.memory.len() > MAX_POINTS {
                s.memory.pop_front();
            }
            while s.lists.front().is_some_and(|l| l.t_ms < since) || s.lists.len() > MAX_POINTS {
                s.lists.pop_front();
            }
            !s.memory.is_empty()
        });
    }
}
