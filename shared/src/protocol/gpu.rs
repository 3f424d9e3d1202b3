//! The host, its GPUs and one sample of them: memory, utilization, processes, MIG.

use serde::{Deserialize, Serialize};

use super::Field;

/// The agent and its host, sent once per connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub agent_version: String,
    pub hostname: String,
    pub driver_version: Field<String>,
    /// `major.minor` of the CUDA driver API, e.g. `12.8`.
    pub cuda_driver_version: Field<String>,
    /// True when the readings come from the simulated backend, not a GPU.
    pub simulated: bool,
    /// The host's RAM (`MemTotal` of /proc/meminfo): what a llama.cpp plan
    /// leaves on the CPU is checked against it. Agents before it sent none.
    #[serde(default = "not_sent")]
    pub memory_total_bytes: Field<u64>,
    pub gpus: Vec<GpuInfo>,
}

fn not_sent() -> Field<u64> {
    Field::Unavailable(super::Unavailable::MissingInDriver)
}

/// What does not change while the agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML's index. Not stable across reboots: key on `uuid` where you can.
    pub index: u32,
    pub uuid: Field<String>,
    pub name: Field<String>,
    /// `domain:bus:device.function`, e.g. `00000000:18:00.0`.
    pub pci_bus_id: Field<String>,
    pub memory_total_bytes: Field<u64>,
    pub compute_mode: Field<ComputeMode>,
    pub mig_mode: Field<MigMode>,
    /// The catalog id of the simulated GPU (`h100-sxm`); `None` for real GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeMode {
    Default,
    ExclusiveThread,
    ExclusiveProcess,
    Prohibited,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigMode {
    pub enabled: bool,
    /// The mode after the next GPU reset.
    pub pending_enabled: bool,
}

/// One reading of every GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Increases by one per reading; a repeated `seq` is the same reading.
    pub seq: u64,
    /// Unix time of the reading, in milliseconds.
    pub timestamp_ms: u64,
    /// Unix time at which the process lists were read (they are read less
    /// often than memory).
    pub processes_timestamp_ms: u64,
    pub simulated: bool,
    pub gpus: Vec<GpuSample>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    pub index: u32,
    pub memory: Field<MemoryReading>,
    pub utilization: Field<Utilization>,
    pub temperature_c: Field<u32>,
    pub power_draw_mw: Field<u32>,
    pub power_limit_mw: Field<u32>,
    pub sm_clock_mhz: Field<u32>,
    pub memory_clock_mhz: Field<u32>,
    /// MIG instances with their memory; empty when MIG is off.
    pub mig_instances: Field<Vec<MigInstance>>,
    /// Processes holding a compute context on this GPU.
    pub processes: Field<Vec<GpuProcess>>,
}

/// Framebuffer memory. The four numbers are sent as read: budget from
/// `free_bytes`, never from `total - used` (v1 `used` includes the reserve, v2
/// does not; research/agent.md §2.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryReading {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    /// The driver's reserve; only the v2 call reports it.
    pub reserved_bytes: Field<u64>,
    pub source: MemorySource,
}

/// Which call produced a [`MemoryReading`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemorySource {
    /// `nvmlDeviceGetMemoryInfo_v2` (R510+): `used` excludes `reserved`.
    NvmlV2,
    /// `nvmlDeviceGetMemoryInfo`: `used` includes the reserve.
    NvmlV1,
    /// The simulated backend (v2 semantics).
    Simulated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Utilization {
    /// Share of the last sample period with a kernel running, 0–100.
    pub gpu_pct: u32,
    /// Share of the last sample period with memory being read or written, 0–100.
    pub memory_pct: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigInstance {
    pub index: u32,
    pub uuid: Field<String>,
    /// The GPU instance id (DCGM's `GPU_I_ID`).
    #[serde(default = "not_sampled")]
    pub gpu_instance_id: Field<u32>,
    /// The GPU instance profile, e.g. `1g.10gb` (DCGM's `GPU_I_PROFILE`).
    #[serde(default = "not_sampled")]
    pub profile: Field<String>,
    pub memory: Field<MemoryReading>,
}

/// What an older agent, which did not send a field, is read as.
fn not_sampled<T>() -> Field<T> {
    Field::Unavailable(super::Unavailable::NotSampled)
}

/// A process holding GPU memory. PIDs are host PIDs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuProcess {
    pub pid: u32,
    /// The process name from `/proc/<pid>/comm`.
    pub name: Field<String>,
    /// The short container id, when the process runs in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The Kubernetes pod it runs in, when its cgroup says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodRef>,
    pub used_bytes: Field<u64>,
    /// The MIG instance it runs on, when MIG is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<MigPlacement>,
    /// The engine launch its command line names, when the agent recognises
    /// one. Agents before it sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
}

/// An engine launch read from a process's command line: only the flags
/// Headroom models, never the command line itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    pub engine: LaunchEngine,
    /// A Hugging Face id (`org/name`), or the last component of a local path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The flags read, as the engine spells them, in command-line order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<LaunchFlag>,
    /// The plan those flags describe, as a share-link query (`v=…&hf=…`):
    /// the page opens exactly that plan. Absent when the launch names no model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_query: Option<String>,
    /// What that plan predicts this process holds on this GPU, when the
    /// agent could read the model (its config.json in the host's Hugging
    /// Face cache, or its GGUF header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_bytes: Option<u64>,
}

/// The program a launch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchEngine {
    Vllm,
    Sglang,
    LlamaServer,
    OllamaRunner,
    /// One a newer agent knows.
    #[serde(other)]
    Other,
}

impl LaunchEngine {
    pub fn name(self) -> &'static str {
        match self {
            LaunchEngine::Vllm => "vLLM",
            LaunchEngine::Sglang => "SGLang",
            LaunchEngine::LlamaServer => "llama.cpp",
            LaunchEngine::OllamaRunner => "Ollama",
            LaunchEngine::Other => "an engine",
        }
    }
}

/// One flag of a launch; `value` is empty for a switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchFlag {
    pub flag: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

impl Launch {
    /// The wire form of a launch read by `startup::launch`.
    pub fn of(launch: &crate::startup::Launch, plan_query: Option<String>, predicted_bytes: Option<u64>) -> Launch {
        use crate::startup::Launcher;
        Launch {
            engine: match launch.launcher {
                Launcher::Vllm => LaunchEngine::Vllm,
                Launcher::Sglang => LaunchEngine::Sglang,
                Launcher::LlamaServer => LaunchEngine::LlamaServer,
                Launcher::OllamaRunner => LaunchEngine::OllamaRunner,
            },
            model: launch.model.as_ref().map(|m| m.name().to_owned()),
            flags: launch.flags.iter().map(|f| LaunchFlag { flag: f.flag.into(), value: f.value.clone() }).collect(),
            plan_query,
            predicted_bytes,
        }
    }

    /// One line for a person: `vLLM · TP 2 · util 0.90 · meta-llama/Llama-3.1-70B
    /// · predicted 71.3 GiB` (the page's process table, `headroom watch`).
    pub fn summary(&self, units: crate::units::UnitSystem) -> String {
        let mut parts = vec![self.engine.name().to_owned()];
        for f in &self.flags {
            // The three every launch is told by get short names.
            let short = match f.flag.as_str() {
                "--tensor-parallel-size" | "--tp-size" => Some("TP"),
                "--pipeline-parallel-size" | "--pp-size" => Some("PP"),
                "--gpu-memory-utilization" => Some("util"),
                "--mem-fraction-static" => Some("mem-fraction"),
                _ => None,
            };
            parts.push(match (short, f.value.is_empty()) {
                (Some(s), _) => format!("{s} {}", f.value),
                (None, true) => f.flag.clone(),
                (None, false) => format!("{} {}", f.flag, f.value),
            });
        }
        parts.extend(self.model.clone());
        if let Some(b) = self.predicted_bytes {
            parts.push(format!("predicted {}", crate::units::format_bytes(b, units)));
        }
        parts.join(" · ")
    }
}

/// A Kubernetes pod: its UID from the process's cgroup; names when the
/// agent can read the kubelet's log directories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodRef {
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The container's name in the pod spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigPlacement {
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
}
