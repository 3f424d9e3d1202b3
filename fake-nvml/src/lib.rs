//! A fake `libnvidia-ml.so`: the NVML C symbols the agent calls, answering
//! with canned readings, so tests drive the agent's real NVML path (loading,
//! nvml-wrapper, our raw v1 calls, our struct-layout guard) without a GPU.
//! The agent loads it with `headroom serve --nvml-lib <path>`.
//!
//! The machine it pretends to be: two "H100 80GB HBM3 (fake)" GPUs. GPU 0 runs
//! one process, whose PID is the caller's own (so `/proc` resolves its name);
//! GPU 1 runs one whose PID does not exist (a process in another container).
//! GPU 1 does not report power (`NOT_SUPPORTED`). `nvmlDeviceGetPciInfo_v3` is
//! deliberately not exported (a symbol missing from an old driver).
//!
//! Scenarios, chosen by environment variables read at each call:
//! - `FAKE_NVML_DRIVER=535.54.03`: a driver whose `_v3` process list uses the
//!   32-byte struct (535.43–535.85).
//! - `FAKE_NVML_NO_MEMORY_V2=1`: `nvmlDeviceGetMemoryInfo_v2` answers
//!   `FUNCTION_NOT_FOUND`, as pre-R510 drivers do.
//! - `FAKE_NVML_MIG=1`: GPU 1 runs in MIG mode with one MIG device, GPU
//!   instance 7 of the `1g.10gb` profile (id 19), as an H100 reports it.

// Why unsafe is allowed here: this crate *is* a C ABI. Every export takes raw
// pointers from the caller and writes through them after a null check; the
// caller's contract is NVML's own (nvml.h), which these functions document by
// name. Nothing else in the workspace may use unsafe (see the workspace lints).
#![allow(unsafe_code)]
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void};

type Ret = c_int;
type Device = *mut c_void;

const SUCCESS: Ret = 0;
const INVALID_ARG: Ret = 2;
const NOT_SUPPORTED: Ret = 3;
const INSUFFICIENT_SIZE: Ret = 7;
const NOT_FOUND: Ret = 6;
const FUNCTION_NOT_FOUND: Ret = 13;

const GPUS: u32 = 2;
const TOTAL: u64 = 85_520_809_984;
const RESERVED: u64 = 512 << 20;
/// Memory held by each GPU's process.
const PROCESS_BYTES: [u64; 2] = [30 << 30, 12 << 30];
/// A PID no Linux system hands out (above the 2^22 maximum).
const INVISIBLE_PID: u32 = 4_194_400;
/// NVML's "not a MIG instance".
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

/// The one MIG device's handle (GPU handles are 1 and 2) and its GPU instance's.
const MIG_HANDLE: usize = 0x1000;
const GPU_INSTANCE_HANDLE: usize = 0x2000;
const MIG_GPU_INSTANCE_ID: c_uint = 7;
/// NVML's id of the 1g.10gb profile on H100 (`NVML_GPU_INSTANCE_PROFILE_1_SLICE`'s id there).
const MIG_PROFILE_ID: c_uint = 19;
/// The 1g.10gb profile's memory on H100 80GB, as `nvidia-smi mig -lgip` lists it.
const MIG_TOTAL: u64 = 9856 << 20;
const MIG_USED: u64 = 2 << 30;

fn mig_on() -> bool {
    std::env::var_os("FAKE_NVML_MIG").is_some()
}

fn is_mig(device: Device) -> bool {
    mig_on() && device as usize == MIG_HANDLE
}

fn driver() -> String {
    std::env::var("FAKE_NVML_DRIVER").unwrap_or_else(|_| "570.86.15".to_owned())
}

fn index(device: Device) -> Option<usize> {
    let i = (device as usize).checked_sub(1)?;
    (i < GPUS as usize).then_some(i)
}

fn used(i: usize) -> u64 {
    PROCESS_BYTES[i]
}

unsafe fn put<T>(ptr: *mut T, value: T) -> Ret {
    if ptr.is_null() {
        return INVALID_ARG;
    }
    // SAFETY: non-null, and the caller passes a pointer valid for a `T`.
    unsafe { ptr.write(value) };
    SUCCESS
}

unsafe fn put_str(buf: *mut c_char, len: c_uint, text: &str) -> Ret {
    if buf.is_null() || text.len() + 1 > len as usize {
        return if buf.is_null() { INVALID_ARG } else { INSUFFICIENT_SIZE };
    }
    // SAFETY: `buf` holds `len` bytes, more than `text` and its NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        buf.add(text.len()).write(0);
    }
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> Ret {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> Ret {
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> Ret {
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(buf: *mut c_char, len: c_uint) -> Ret {
    unsafe { put_str(buf, len, &driver()) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(version: *mut c_int) -> Ret {
    unsafe { put(version, 12080) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> Ret {
    unsafe { put(count, GPUS) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(i: c_uint, device: *mut Device) -> Ret {
    if i >= GPUS {
        return INVALID_ARG;
    }
    // Handles are opaque to callers: index + 1, never dereferenced.
    unsafe { put(device, (i as usize + 1) as Device) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(device: Device, buf: *mut c_char, len: c_uint) -> Ret {
    if index(device).is_none() {
        return INVALID_ARG;
    }
    unsafe { put_str(buf, len, "NVIDIA H100 80GB HBM3 (fake)") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(device: Device, buf: *mut c_char, len: c_uint) -> Ret {
    if is_mig(device) {
        return unsafe { put_str(buf, len, "MIG-fa4e0000-0000-0000-0000-000000000107") };
    }
    let Some(i) = index(device) else { return INVALID_ARG };
    unsafe { put_str(buf, len, &format!("GPU-fa4e0000-0000-0000-0000-00000000000{i}")) }
}

#[repr(C)]
#[derive(Debug)]
pub struct MemoryV1 {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

#[repr(C)]
#[derive(Debug)]
pub struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(device: Device, memory: *mut MemoryV1) -> Ret {
    let Some(i) = index(device) else { return INVALID_ARG };
    // v1 `used` includes the reserve.
    let used = used(i) + RESERVED;
    unsafe { put(memory, MemoryV1 { total: TOTAL, free: TOTAL - used, used }) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(device: Device, memory: *mut MemoryV2) -> Ret {
    let mig = is_mig(device);
    let Some(i) = index(device).or(mig.then_some(1)) else { return INVALID_ARG };
    if std::env::var_os("FAKE_NVML_NO_MEMORY_V2").is_some() {
        return FUNCTION_NOT_FOUND;
    }
    if memory.is_null() {
        return INVALID_ARG;
    }
    // NVML_STRUCT_VERSION(Memory, 2): the size in the low bits, 2 << 24.
    let expected = (std::mem::size_of::<MemoryV2>() | (2 << 24)) as c_uint;
    // SAFETY: non-null and valid for a `MemoryV2`, as the caller's contract says.
    if unsafe { (*memory).version } != expected {
        return FUNCTION_NOT_FOUND;
    }
    let (total, used) = if mig { (MIG_TOTAL, MIG_USED) } else { (TOTAL, used(i)) };
    unsafe {
        put(memory, MemoryV2 { version: expected, total, reserved: RESERVED, free: total - RESERVED - used, used })
    }
}

#[repr(C)]
#[derive(Debug)]
pub struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(device: Device, util: *mut Utilization) -> Ret {
    let Some(i) = index(device) else { return INVALID_ARG };
    unsafe { put(util, Utilization { gpu: [87, 0][i], memory: [52, 0][i] }) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(device: Device, _sensor: c_int, temp: *mut c_uint) -> Ret {
    let Some(i) = index(device) else { return INVALID_ARG };
    unsafe { put(temp, [71, 38][i]) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(device: Device, mw: *mut c_uint) -> Ret {
    match index(device) {
        Some(0) => unsafe { put(mw, 612_000) },
        Some(_) => NOT_SUPPORTED,
        None => INVALID_ARG,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(device: Device, mw: *mut c_uint) -> Ret {
    if index(device).is_none() {
        return INVALID_ARG;
    }
    unsafe { put(mw, 700_000) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(device: Device, clock: c_int, mhz: *mut c_uint) -> Ret {
    if index(device).is_none() {
        return INVALID_ARG;
    }
    // NVML_CLOCK_GRAPHICS 0, SM 1, MEM 2.
    unsafe { put(mhz, if clock == 2 { 2619 } else { 1980 }) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeMode(device: Device, mode: *mut c_int) -> Ret {
    if index(device).is_none() {
        return INVALID_ARG;
    }
    unsafe { put(mode, 0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(device: Device, current: *mut c_uint, pending: *mut c_uint) -> Ret {
    if index(device).is_none() {
        return INVALID_ARG;
    }
    let on = c_uint::from(mig_on() && index(device) == Some(1));
    unsafe {
        let r = put(current, on);
        if r != SUCCESS {
            return r;
        }
        put(pending, on)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(device: Device, count: *mut c_uint) -> Ret {
    if index(device).is_none() {
        return INVALID_ARG;
    }
    unsafe { put(count, c_uint::from(mig_on() && index(device) == Some(1))) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(device: Device, i: c_uint, mig: *mut Device) -> Ret {
    if !(mig_on() && index(device) == Some(1)) {
        return NOT_SUPPORTED;
    }
    if i != 0 {
        return NOT_FOUND;
    }
    unsafe { put(mig, MIG_HANDLE as Device) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceId(device: Device, id: *mut c_uint) -> Ret {
    if !is_mig(device) {
        return INVALID_ARG;
    }
    unsafe { put(id, MIG_GPU_INSTANCE_ID) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceById(device: Device, id: c_uint, instance: *mut Device) -> Ret {
    if !(mig_on() && index(device) == Some(1)) {
        return NOT_SUPPORTED;
    }
    if id != MIG_GPU_INSTANCE_ID {
        return NOT_FOUND;
    }
    unsafe { put(instance, GPU_INSTANCE_HANDLE as Device) }
}

/// `nvmlGpuInstanceInfo_t`.
#[repr(C)]
#[derive(Debug)]
pub struct GpuInstanceInfo {
    device: Device,
    id: c_uint,
    profile_id: c_uint,
    placement_start: c_uint,
    placement_size: c_uint,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetInfo(instance: Device, info: *mut GpuInstanceInfo) -> Ret {
    if !(mig_on() && instance as usize == GPU_INSTANCE_HANDLE) {
        return INVALID_ARG;
    }
    let value = GpuInstanceInfo {
        device: 2 as Device,
        id: MIG_GPU_INSTANCE_ID,
        profile_id: MIG_PROFILE_ID,
        placement_start: 0,
        placement_size: 1,
    };
    unsafe { put(info, value) }
}

/// `nvmlGpuInstanceProfileInfo_v2_t`.
#[repr(C)]
#[derive(Debug)]
pub struct GpuInstanceProfileInfoV2 {
    version: c_uint,
    id: c_uint,
    is_p2p_supported: c_uint,
    slice_count: c_uint,
    instance_count: c_uint,
    multiprocessor_count: c_uint,
    copy_engine_count: c_uint,
    decoder_count: c_uint,
    encoder_count: c_uint,
    jpeg_count: c_uint,
    ofa_count: c_uint,
    memory_size_mb: c_ulonglong,
    name: [c_char; 96],
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceProfileInfoByIdV(
    device: Device,
    profile_id: c_uint,
    info: *mut GpuInstanceProfileInfoV2,
) -> Ret {
    if !(mig_on() && index(device) == Some(1)) || profile_id != MIG_PROFILE_ID || info.is_null() {
        return INVALID_ARG;
    }
    // nvml.h's nvmlGpuInstanceProfileInfo_v2: the size in the low bits, 2 << 24.
    let expected = (std::mem::size_of::<GpuInstanceProfileInfoV2>() | (2 << 24)) as c_uint;
    // SAFETY: non-null and valid for the struct, as the caller's contract says.
    if unsafe { (*info).version } != expected {
        return INVALID_ARG;
    }
    let mut name = [0 as c_char; 96];
    for (d, s) in name.iter_mut().zip(b"MIG 1g.10gb") {
        *d = *s as c_char;
    }
    let value = GpuInstanceProfileInfoV2 {
        version: expected,
        id: MIG_PROFILE_ID,
        is_p2p_supported: 0,
        slice_count: 1,
        instance_count: 7,
        multiprocessor_count: 16,
        copy_engine_count: 1,
        decoder_count: 1,
        encoder_count: 0,
        jpeg_count: 1,
        ofa_count: 0,
        memory_size_mb: MIG_TOTAL >> 20,
        name,
    };
    unsafe { put(info, value) }
}

/// The 24-byte `nvmlProcessInfo_t` of current drivers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProcessInfo24 {
    pid: c_uint,
    used: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// The 32-byte struct drivers 535.43–535.85 write.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ProcessInfo32 {
    pid: c_uint,
    used: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
    used_cc_protected: c_ulonglong,
}

fn struct32() -> bool {
    let d = driver();
    let mut parts = d.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let v = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    ((535, 43)..(535, 86)).contains(&v)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: Device,
    count: *mut c_uint,
    infos: *mut c_void,
) -> Ret {
    let Some(i) = index(device) else { return INVALID_ARG };
    if count.is_null() {
        return INVALID_ARG;
    }
    let pid = if i == 0 { std::process::id() } else { INVISIBLE_PID };
    // SAFETY: `count` is non-null and valid for reads and writes.
    let room = unsafe { *count };
    if room < 1 || infos.is_null() {
        // The two-call protocol: say how many there are.
        unsafe { count.write(1) };
        return INSUFFICIENT_SIZE;
    }
    unsafe {
        if struct32() {
            infos.cast::<ProcessInfo32>().write(ProcessInfo32 {
                pid,
                used: used(i),
                gpu_instance_id: NO_INSTANCE,
                compute_instance_id: NO_INSTANCE,
                used_cc_protected: 0,
            });
        } else {
            infos.cast::<ProcessInfo24>().write(ProcessInfo24 {
                pid,
                used: used(i),
                gpu_instance_id: NO_INSTANCE,
                compute_instance_id: NO_INSTANCE,
            });
        }
        put(count, 1)
    }
}
