//! The NVML calls nvml-wrapper does not make the way we need (or at all),
//! made through its loaded library table.
//!
//! `unsafe` is allowed here and only here in the agent: calling C through a
//! function pointer cannot be safe Rust. Each call passes a live device handle
//! (the `Nvml` it borrows from is never dropped) and an out-buffer of exactly
//! the layout the symbol writes.

use std::os::raw::c_uint;

use nvml_wrapper::Device;
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper_sys::bindings::{
    nvmlGpuInstance_t, nvmlGpuInstanceInfo_t, nvmlGpuInstanceProfileInfo_v2_t, nvmlMemory_t,
    nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE, nvmlReturn_enum_NVML_SUCCESS,
};

use super::ProcessReading;
use super::Unavailable;

/// NVML's `NVML_VALUE_NOT_AVAILABLE` for a process's memory (WDDM).
const VALUE_NOT_AVAILABLE: u64 = u64::MAX;
/// NVML's "no MIG instance" id.
const NO_INSTANCE: u32 = u32::MAX;

/// `nvmlDeviceGetMemoryInfo` (v1): total, free and used, where `used`
/// includes the driver's reserve.
pub fn memory_v1(device: &Device<'static>) -> Result<nvmlMemory_t, NvmlError> {
    let sym = device
        .nvml()
        .lib()
        .nvmlDeviceGetMemoryInfo
        .as_ref()
        .map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
    let mut memory = nvmlMemory_t { total: 0, free: 0, used: 0 };
    // SAFETY: the handle comes from the same, still-loaded library; `memory`
    // is the v1 struct this symbol takes, valid for writes.
    nvml_try(unsafe { sym(device.handle(), &mut memory) })?;
    Ok(memory)
}

/// `nvmlProcessInfo_v3_t` as drivers 535.43–535.85 write it for
/// `nvmlDeviceGetComputeRunningProcesses_v3`: 32 bytes, where nvml-wrapper's
/// bindings (and later drivers) use 24 (`XuehaiPan/nvitop#79`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct ProcessInfoStruct32 {
    pid: c_uint,
    used_gpu_memory: u64,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
    used_gpu_cc_protected_memory: u64,
}

const _: () = assert!(std::mem::size_of::<ProcessInfoStruct32>() == 32);

/// The compute processes of `device`, read with the 32-byte struct.
pub fn compute_processes_struct32(device: &Device<'static>) -> Result<Vec<ProcessReading>, NvmlError> {
    let sym = device
        .nvml()
        .lib()
        .nvmlDeviceGetComputeRunningProcesses_v3
        .as_ref()
        .map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
    let mut count: c_uint = 0;
    // SAFETY: a null buffer with a zero count asks only for the count.
    let first = unsafe { sym(device.handle(), &mut count, std::ptr::null_mut()) };
    if first == nvmlReturn_enum_NVML_SUCCESS {
        return Ok(Vec::new());
    }
    if first != nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE {
        nvml_try(first)?;
    }
    // Room for processes that start between the two calls.
    count += 5;
    let mut buffer = vec![ProcessInfoStruct32::default(); count as usize];
    // SAFETY: `buffer` holds `count` structs of the layout these drivers write;
    // the driver writes at most `count` and updates it.
    nvml_try(unsafe { sym(device.handle(), &mut count, buffer.as_mut_ptr().cast()) })?;
    buffer.truncate((count as usize).min(buffer.len()));
    Ok(buffer
        .into_iter()
        .map(|p| ProcessReading {
            pid: p.pid,
            used_bytes: if p.used_gpu_memory == VALUE_NOT_AVAILABLE {
                Err(Unavailable::NotSupported)
            } else {
                Ok(p.used_gpu_memory)
            },
            mig: (p.gpu_instance_id != NO_INSTANCE && p.compute_instance_id != NO_INSTANCE)
                .then_some((p.gpu_instance_id, p.compute_instance_id)),
            name: None,
        })
        .collect())
}

/// A MIG device's GPU instance id (`nvmlDeviceGetGpuInstanceId`) and the
/// name of its GPU instance profile, e.g. `1g.10gb`
/// (`nvmlDeviceGetGpuInstanceById` → `nvmlGpuInstanceGetInfo` →
/// `nvmlDeviceGetGpuInstanceProfileInfoByIdV`, R525+), as DCGM labels them.
pub fn mig_identity(
    parent: &Device<'static>,
    mig: &Device<'static>,
) -> Result<(u32, Result<String, NvmlError>), NvmlError> {
    let lib = parent.nvml().lib();
    let sym = lib.nvmlDeviceGetGpuInstanceId.as_ref().map_err(missing)?;
    let mut id: c_uint = 0;
    // SAFETY: a live MIG device handle and a `c_uint` out-parameter.
    nvml_try(unsafe { sym(mig.handle(), &mut id) })?;
    let profile = (|| {
        let by_id = lib.nvmlDeviceGetGpuInstanceById.as_ref().map_err(missing)?;
        let get_info = lib.nvmlGpuInstanceGetInfo.as_ref().map_err(missing)?;
        let profile_info = lib.nvmlDeviceGetGpuInstanceProfileInfoByIdV.as_ref().map_err(missing)?;
        let mut instance: nvmlGpuInstance_t = std::ptr::null_mut();
        // SAFETY: the parent's live handle, an id the driver just gave, and a
        // handle-sized out-parameter.
        nvml_try(unsafe { by_id(parent.handle(), id, &mut instance) })?;
        // SAFETY: `nvmlGpuInstanceInfo_t` is plain data the call fills in.
        let mut info: nvmlGpuInstanceInfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: the instance handle from the call above; `info` is writable.
        nvml_try(unsafe { get_info(instance, &mut info) })?;
        // SAFETY: plain data; `version` is set below as nvml.h's
        // `nvmlGpuInstanceProfileInfo_v2` macro defines it (size | 2 << 24).
        let mut p: nvmlGpuInstanceProfileInfo_v2_t = unsafe { std::mem::zeroed() };
        p.version = (std::mem::size_of::<nvmlGpuInstanceProfileInfo_v2_t>() as c_uint) | (2 << 24);
        // SAFETY: the parent's handle and a v2 struct with its version set.
        nvml_try(unsafe { profile_info(parent.handle(), info.profileId, &mut p) })?;
        // SAFETY: the driver writes a NUL-terminated name into the 96-byte field.
        let name = unsafe { std::ffi::CStr::from_ptr(p.name.as_ptr()) };
        Ok(name.to_string_lossy().trim_start_matches("MIG ").to_owned())
    })();
    Ok((id, profile))
}

/// A symbol the loaded library lacks.
fn missing(e: &impl std::fmt::Display) -> NvmlError {
    NvmlError::FailedToLoadSymbol(e.to_string())
}
