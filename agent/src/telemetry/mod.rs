//! GPU telemetry: a small backend trait of our own, its two implementations
//! (NVML, simulated), and the sampling thread that reads a backend and
//! publishes the latest [`shared::protocol::Sample`].
//!
//! **Architecture Invariant:** backends are blocking and run only on the
//! sampler's own thread, never on an async worker. Nothing here creates a CUDA
//! context: NVML alone costs no GPU memory.
//!
//! Backend types are ours and deliberately plain; `convert` turns them into
//! wire types. No nvml-wrapper type leaves `nvml.rs`.

pub mod cgroup;
mod convert;
pub mod launch;
pub mod nvml;
#[allow(unsafe_code)]
mod nvml_raw;
pub mod pods;
mod procfs;
pub mod sampler;
pub mod simulated;

use std::time::Duration;

pub use shared::protocol::{ComputeMode, MigMode, Unavailable, Utilization};

/// A reading, or why there is none.
pub type Reading<T> = Result<T, Unavailable>;

/// A source of GPU readings. Every call may block (NVML takes a driver lock).
pub trait Backend: Send + 'static {
    /// Facts read once at start.
    fn host(&self) -> &HostStatic;
    /// The fast-changing fields of every GPU, in index order. `elapsed` is the
    /// time since sampling began (the simulated backend is a function of it).
    fn read_devices(&mut self, elapsed: Duration) -> Vec<DeviceReading>;
    /// The compute processes of every GPU, in index order. The expensive call:
    /// the sampler makes it less often than [`Backend::read_devices`].
    fn read_processes(&mut self, elapsed: Duration) -> Vec<Reading<Vec<ProcessReading>>>;
}

/// Host-wide facts.
#[derive(Debug, Clone, PartialEq)]
pub struct HostStatic {
    pub driver_version: Reading<String>,
    /// CUDA driver API version as NVML encodes it (`12080` = 12.8).
    pub cuda_driver_version: Reading<i32>,
    /// The host's RAM.
    pub memory_total_bytes: Reading<u64>,
    pub simulated: bool,
    pub devices: Vec<DeviceStatic>,
}

/// Per-GPU facts that do not change while the agent runs.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceStatic {
    pub index: u32,
    pub uuid: Reading<String>,
    pub name: Reading<String>,
    pub pci_bus_id: Reading<String>,
    pub memory_total_bytes: Reading<u64>,
    pub compute_mode: Reading<ComputeMode>,
    pub mig_mode: Reading<MigMode>,
    /// The catalog GPU a simulated device stands for.
    pub catalog_id: Option<String>,
}

/// One reading of one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceReading {
    pub memory: Reading<Memory>,
    pub utilization: Reading<Utilization>,
    pub temperature_c: Reading<u32>,
    pub power_draw_mw: Reading<u32>,
    pub power_limit_mw: Reading<u32>,
    pub sm_clock_mhz: Reading<u32>,
    pub memory_clock_mhz: Reading<u32>,
    pub mig_instances: Reading<Vec<MigReading>>,
}

impl DeviceReading {
    /// A GPU that could not be read at all (e.g. it fell off the bus).
    pub fn unavailable(why: Unavailable) -> Self {
        Self {
            memory: Err(why),
            utilization: Err(why),
            temperature_c: Err(why),
            power_draw_mw: Err(why),
            power_limit_mw: Err(why),
            sm_clock_mhz: Err(why),
            memory_clock_mhz: Err(why),
            mig_instances: Err(why),
        }
    }
}

/// Framebuffer memory as one API call reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    pub total_bytes: u64,
    pub used_bytes: u64,
    pub free_bytes: u64,
    /// Only the v2 call reports the driver's reserve.
    pub reserved_bytes: Option<u64>,
    pub api: MemoryApi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryApi {
    NvmlV2,
    NvmlV1,
    Simulated,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigReading {
    pub index: u32,
    pub uuid: Reading<String>,
    /// The GPU instance id and its profile name (`1g.10gb`), as DCGM labels them.
    pub gpu_instance_id: Reading<u32>,
    pub profile: Reading<String>,
    pub memory: Reading<Memory>,
}

/// A process holding a compute context on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessReading {
    pub pid: u32,
    pub used_bytes: Reading<u64>,
    /// `(gpu_instance_id, compute_instance_id)` under MIG.
    pub mig: Option<(u32, u32)>,
    /// Set by backends that know it (simulated); otherwise read from `/proc`.
    pub name: Option<String>,
}

/// How the agent chooses its backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendChoice {
    /// NVML if it loads, else the simulated default.
    Auto,
    /// NVML from a given library path (tests use the fake library).
    NvmlAt(std::path::PathBuf),
    /// The simulated backend with this spec.
    Simulate(simulated::SimSpec),
}

/// Opens the backend the operator asked for. `Auto` falls back to the
/// simulated default when NVML is absent and says so at INFO.
pub fn open(choice: BackendChoice) -> Result<Box<dyn Backend>, nvml::OpenError> {
    match choice {
        BackendChoice::Simulate(spec) => Ok(Box::new(simulated::SimulatedBackend::new(spec))),
        BackendChoice::NvmlAt(path) => Ok(Box::new(nvml::NvmlBackend::open(Some(&path))?)),
        BackendChoice::Auto => match nvml::NvmlBackend::open(None) {
            Ok(backend) => Ok(Box::new(backend)),
            Err(e) => {
                let spec = simulated::SimSpec::default_spec();
                tracing::info!("NVML not available ({e}); using the simulated backend `{spec}`");
                Ok(Box::new(simulated::SimulatedBackend::new(spec)))
            }
        },
    }
}

/// This host's RAM: `MemTotal` of /proc/meminfo (kB), where there is one.
pub fn host_memory() -> Reading<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").map_err(|_| Unavailable::NotSupported)?;
    info.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or(Unavailable::NotSupported)
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_hosts_memory_is_read_where_linux_has_it() {
        match super::host_memory() {
            Ok(bytes) => assert!(bytes > 1 << 20, "{bytes}"),
            Err(why) => assert!(!std::path::Path::new("/proc/meminfo").exists(), "{why:?}"),
        }
    }
}
