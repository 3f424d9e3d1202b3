//! The NVML backend: nvml-wrapper, loaded at run time (the binary builds and
//! runs without a driver), behind our [`Backend`] trait.
//!
//! Guards for the known hazards (research/agent.md §2.4):
//! - `memory_info()` calls only `nvmlDeviceGetMemoryInfo_v2`; where the driver
//!   lacks it (pre-R510, some WSL builds) we fall back to v1 through the raw
//!   symbol and say so in every reading (`source: nvml_v1`).
//! - On drivers 535.43–535.85, `_v3` process lists use a 32-byte struct that
//!   nvml-wrapper's 24-byte one misreads; there we read them with the right
//!   layout ourselves. Every list is sanity-checked, and a list that still looks
//!   like garbage is reported as `unreliable`, never shown.
//! - Every field fails alone, with its reason: one unsupported call never
//!   spoils the sample.

use std::path::Path;
use std::time::Duration;

use nvml_wrapper::enum_wrappers::device::{Clock, ComputeMode as NvComputeMode, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

use super::nvml_raw;
use super::{
    Backend, ComputeMode, DeviceReading, DeviceStatic, HostStatic, Memory, MemoryApi, MigMode, MigReading,
    ProcessReading, Reading, Unavailable, Utilization,
};

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot load the NVML library: {0}")]
    Load(NvmlError),
    #[error("NVML did not start: {0}")]
    Init(NvmlError),
    #[error("NVML cannot count the GPUs: {0}")]
    Count(NvmlError),
}

/// Which memory call a device answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemoryCall {
    V2,
    /// The driver has no `_v2` symbol; sticky once found.
    V1,
}

/// How process lists are read on this driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProcessCall {
    /// nvml-wrapper's `running_compute_processes()` (24-byte struct).
    Wrapper,
    /// Our own read with the 32-byte struct, for drivers 535.43–535.85.
    Struct32,
}

struct NvmlDevice {
    handle: Device<'static>,
    memory_call: MemoryCall,
}

pub struct NvmlBackend {
    devices: Vec<NvmlDevice>,
    host: HostStatic,
    process_call: ProcessCall,
}

impl std::fmt::Debug for NvmlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlBackend").field("host", &self.host).field("process_call", &self.process_call).finish()
    }
}

impl NvmlBackend {
    /// Loads NVML (`libnvidia-ml.so.1`, or `lib` when given) and reads the
    /// static facts once.
    pub fn open(lib: Option<&Path>) -> Result<Self, OpenError> {
        let nvml = match lib {
            Some(path) => Nvml::builder().lib_path(path.as_os_str()).init(),
            None => Nvml::init(),
        }
        .map_err(|e| match e {
            NvmlError::LibloadingError(_) | NvmlError::FailedToLoadSymbol(_) => OpenError::Load(e),
            other => OpenError::Init(other),
        })?;
        // Device handles borrow the library; the agent keeps one NVML session
        // for its whole life (re-initialising is slow without persistence
        // mode), so the library lives as long as the process.
        let nvml: &'static Nvml = Box::leak(Box::new(nvml));
        let count = nvml.device_count().map_err(OpenError::Count)?;
        let driver_version = nvml.sys_driver_version().map_err(why);
        let process_call = match driver_version.as_deref().ok().and_then(parse_driver_version) {
            Some(v) if ((535, 43)..(535, 86)).contains(&v) => {
                tracing::info!("driver {v:?}: reading process lists with the 535.43–535.85 struct layout");
                ProcessCall::Struct32
            }
            _ => ProcessCall::Wrapper,
        };
        let mut devices = Vec::new();
        let mut statics = Vec::new();
        for index in 0..count {
            match nvml.device_by_index(index) {
                Ok(handle) => {
                    let mut device = NvmlDevice { handle, memory_call: MemoryCall::V2 };
                    statics.push(device_static(index, &mut device));
                    devices.push(device);
                }
                // Skip a GPU NVML cannot open (e.g. no permission) but say so.
                Err(e) => tracing::warn!("GPU {index}: NVML cannot open it ({e}); not watching it"),
            }
        }
        let host = HostStatic {
            driver_version,
            cuda_driver_version: nvml.sys_cuda_driver_version().map_err(why),
            memory_total_bytes: super::host_memory(),
            simulated: false,
            devices: statics,
        };
        tracing::info!(
            "NVML: {} GPU(s), driver {}",
            host.devices.len(),
            host.driver_version.as_deref().unwrap_or("(unknown)")
        );
        Ok(Self { devices, host, process_call })
    }
}

impl Backend for NvmlBackend {
    fn host(&self) -> &HostStatic {
        &self.host
    }

    fn read_devices(&mut self, _elapsed: Duration) -> Vec<DeviceReading> {
        self.devices.iter_mut().zip(0u32..).map(|(d, index)| read_device(index, d)).collect()
    }

    fn read_processes(&mut self, _elapsed: Duration) -> Vec<Reading<Vec<ProcessReading>>> {
        let call = self.process_call;
        self.devices.iter().zip(&self.host.devices).map(|(d, s)| processes(d, s, call)).collect()
    }
}

fn device_static(index: u32, device: &mut NvmlDevice) -> DeviceStatic {
    let h = &device.handle;
    DeviceStatic {
        index,
        uuid: h.uuid().map_err(why),
        name: h.name().map_err(why),
        pci_bus_id: h.pci_info().map(|p| p.bus_id).map_err(why),
        memory_total_bytes: memory(index, device).map(|m| m.total_bytes),
        compute_mode: device.handle.compute_mode().map(compute_mode).map_err(why),
        mig_mode: device
            .handle
            .mig_mode()
            .map(|m| MigMode { enabled: m.current == 1, pending_enabled: m.pending == 1 })
            .map_err(why),
        catalog_id: None,
    }
}

fn read_device(index: u32, device: &mut NvmlDevice) -> DeviceReading {
    let memory = memory(index, device);
    if memory == Err(Unavailable::GpuLost) {
        return DeviceReading::unavailable(Unavailable::GpuLost);
    }
    let h = &device.handle;
    DeviceReading {
        memory,
        utilization: h.utilization_rates().map(|u| Utilization { gpu_pct: u.gpu, memory_pct: u.memory }).map_err(why),
        temperature_c: h.temperature(TemperatureSensor::Gpu).map_err(why),
        power_draw_mw: h.power_usage().map_err(why),
        power_limit_mw: h.enforced_power_limit().map_err(why),
        sm_clock_mhz: h.clock_info(Clock::SM).map_err(why),
        memory_clock_mhz: h.clock_info(Clock::Memory).map_err(why),
        mig_instances: mig_instances(h),
    }
}

/// Memory through `_v2`, falling back to v1 where the driver lacks `_v2` or
/// refuses it; the reading says which call produced it.
fn memory(index: u32, device: &mut NvmlDevice) -> Reading<Memory> {
    if device.memory_call == MemoryCall::V2 {
        match device.handle.memory_info() {
            Ok(m) => {
                return Ok(Memory {
                    total_bytes: m.total,
                    used_bytes: m.used,
                    free_bytes: m.free,
                    reserved_bytes: Some(m.reserved),
                    api: MemoryApi::NvmlV2,
                });
            }
            // v2 missing (pre-R510), refused (GB10) or broken (WSL): try v1.
            Err(NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound) => {
                tracing::info!(
                    "GPU {index}: the driver has no nvmlDeviceGetMemoryInfo_v2; using v1 (no reserve figure)"
                );
                device.memory_call = MemoryCall::V1;
            }
            Err(NvmlError::NotSupported | NvmlError::Unknown) => {}
            Err(e) => return Err(why(e)),
        }
    }
    memory_v1(&device.handle)
}

fn memory_v1(handle: &Device<'static>) -> Reading<Memory> {
    let m = nvml_raw::memory_v1(handle).map_err(why)?;
    Ok(Memory {
        total_bytes: m.total,
        used_bytes: m.used,
        free_bytes: m.free,
        reserved_bytes: None,
        api: MemoryApi::NvmlV1,
    })
}

fn mig_instances(h: &Device<'static>) -> Reading<Vec<MigReading>> {
    let mode = h.mig_mode().map_err(why)?;
    if mode.current != 1 {
        return Ok(Vec::new());
    }
    let slots = h.mig_device_count().map_err(why)?;
    let mut out = Vec::new();
    for index in 0..slots {
        let mig = match h.mig_device_by_index(index) {
            Ok(mig) => mig,
            Err(NvmlError::NotFound) => continue,
            Err(e) => return Err(why(e)),
        };
        let memory = match mig.memory_info() {
            Ok(m) => Ok(Memory {
                total_bytes: m.total,
                used_bytes: m.used,
                free_bytes: m.free,
                reserved_bytes: Some(m.reserved),
                api: MemoryApi::NvmlV2,
            }),
            Err(_) => memory_v1(&mig),
        };
        let (gpu_instance_id, profile) = match nvml_raw::mig_identity(h, &mig) {
            Ok((id, profile)) => (Ok(id), profile.map_err(why)),
            Err(e) => {
                let e = why(e);
                (Err(e), Err(e))
            }
        };
        out.push(MigReading { index, uuid: mig.uuid().map_err(why), gpu_instance_id, profile, memory });
    }
    Ok(out)
}

fn processes(device: &NvmlDevice, info: &DeviceStatic, call: ProcessCall) -> Reading<Vec<ProcessReading>> {
    let list: Vec<ProcessReading> = match call {
        ProcessCall::Wrapper => device
            .handle
            .running_compute_processes()
            .map_err(why)?
            .into_iter()
            .map(|p| ProcessReading {
                pid: p.pid,
                used_bytes: match p.used_gpu_memory {
                    UsedGpuMemory::Used(bytes) => Ok(bytes),
                    UsedGpuMemory::Unavailable => Err(Unavailable::NotSupported),
                },
                mig: p.gpu_instance_id.zip(p.compute_instance_id),
                name: None,
            })
            .collect(),
        ProcessCall::Struct32 => nvml_raw::compute_processes_struct32(&device.handle).map_err(why)?,
    };
    let total = info.memory_total_bytes.as_ref().ok().copied().unwrap_or(u64::MAX);
    if !plausible(&list, total) {
        tracing::debug!("GPU {}: implausible process list {list:?}; reported as unreliable", info.index);
        return Err(Unavailable::Unreliable);
    }
    Ok(list)
}

/// A list read with the wrong struct shows PIDs of 0 or `u32::MAX` and sizes
/// beyond the card (`XuehaiPan/nvitop#75`).
pub(crate) fn plausible(list: &[ProcessReading], total_bytes: u64) -> bool {
    list.iter().all(|p| p.pid != 0 && p.pid != u32::MAX && p.used_bytes.as_ref().map_or(true, |&b| b <= total_bytes))
}

/// `535.54.03` → `(535, 54)`.
pub(crate) fn parse_driver_version(v: &str) -> Option<(u32, u32)> {
    let mut parts = v.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn compute_mode(mode: NvComputeMode) -> ComputeMode {
    match mode {
        NvComputeMode::Default => ComputeMode::Default,
        NvComputeMode::ExclusiveThread => ComputeMode::ExclusiveThread,
        NvComputeMode::ExclusiveProcess => ComputeMode::ExclusiveProcess,
        NvComputeMode::Prohibited => ComputeMode::Prohibited,
    }
}

/// The reason we show for an NVML error. Details go to the DEBUG log.
fn why(e: NvmlError) -> Unavailable {
    match e {
        NvmlError::NotSupported => Unavailable::NotSupported,
        NvmlError::NoPermission => Unavailable::NoPermission,
        NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound => Unavailable::MissingInDriver,
        NvmlError::GpuLost => Unavailable::GpuLost,
        other => {
            tracing::debug!("NVML call failed: {other}");
            Unavailable::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_parse() {
        assert_eq!(parse_driver_version("535.54.03"), Some((535, 54)));
        assert_eq!(parse_driver_version("570.86"), Some((570, 86)));
        assert_eq!(parse_driver_version("simulated"), None);
    }

    #[test]
    fn garbage_process_lists_are_caught() {
        let p = |pid, bytes| ProcessReading { pid, used_bytes: Ok(bytes), mig: None, name: None };
        assert!(plausible(&[p(1184, 1 << 30)], 80 << 30));
        assert!(!plausible(&[p(1184, 1 << 30), p(0, 0)], 80 << 30));
        assert!(!plausible(&[p(u32::MAX, 0)], 80 << 30));
        assert!(!plausible(&[p(7, 90 << 30)], 80 << 30));
    }
}
