//! The real GPU as an [`Allocator`]: the CUDA driver API through cudarc,
//! loaded at run time. cudarc panics when the library or a symbol is missing
//! (research/agent.md §3.1), so [`CudaDevice::open`] first opens the library
//! cudarc would pick, with libloading, and checks every symbol the worker
//! calls: a machine without CUDA gets an error message, never a panic.
//!
//! Plain `cuMemAlloc_v2`/`cuMemFree_v2`, never the stream-ordered pool, so
//! memory is committed and returned at once. The worker only ever sees CUDA
//! ordinal 0: the parent sets `CUDA_VISIBLE_DEVICES=<uuid>`.

use std::ffi::c_void;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use shared::protocol::ErrorCode;

use super::modes::{AllocError, Allocator};
use super::worker::Failure;

/// Every driver symbol the worker (and cudarc on its behalf) calls.
const SYMBOLS: [&str; 11] = [
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuGetErrorString",
    "cuGetErrorName",
];

/// Opens the driver library cudarc would open (the first candidate that
/// loads, in cudarc's order) and checks that it has every symbol we call.
fn check_library() -> Result<(), Failure> {
    let candidates: Vec<String> =
        ["cuda", "nvcuda"].iter().flat_map(|name| cudarc::get_lib_name_candidates(name)).collect();
    for name in &candidates {
        // SAFETY: loading the driver library runs its initialisers, exactly
        // as cudarc's own loader would a moment later.
        let Ok(lib) = (unsafe { libloading::Library::new(name) }) else { continue };
        for symbol in SYMBOLS {
            // SAFETY: only the symbol's presence is checked; it is not called.
            if let Err(e) = unsafe { lib.get::<*const c_void>(symbol.as_bytes()) } {
                return Err(unavailable(format!(
                    "the CUDA driver library {name} lacks {symbol} ({e}); update the driver"
                )));
            }
        }
        return Ok(());
    }
    let usual = candidates.iter().find(|c| c.ends_with(".so.1")).map_or("libcuda", String::as_str);
    Err(unavailable(format!(
        "no CUDA driver library could be loaded ({usual} and {} other names tried); is the NVIDIA driver installed?",
        candidates.len().saturating_sub(1)
    )))
}

fn unavailable(message: String) -> Failure {
    Failure { code: ErrorCode::ProbeCudaUnavailable, message }
}

fn describe(call: &str, e: DriverError) -> String {
    let name = e.error_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{call} failed: {name} ({text})")
}

/// CUDA ordinal 0 with its primary context current on this thread.
#[derive(Debug)]
pub struct CudaDevice {
    device: sys::CUdevice,
}

impl CudaDevice {
    /// Checks the library, initialises the driver and creates the context.
    pub fn open() -> Result<Self, Failure> {
        check_library()?;
        result::init().map_err(|e| unavailable(describe("cuInit", e)))?;
        let count = result::device::get_count().map_err(|e| unavailable(describe("cuDeviceGetCount", e)))?;
        if count < 1 {
            return Err(unavailable("CUDA sees no device (check CUDA_VISIBLE_DEVICES)".into()));
        }
        let device = result::device::get(0).map_err(|e| unavailable(describe("cuDeviceGet", e)))?;
        // SAFETY: `device` came from cuDeviceGet; the context is released in Drop.
        let context = unsafe { result::primary_ctx::retain(device) }
            .map_err(|e| unavailable(describe("cuDevicePrimaryCtxRetain", e)))?;
        let opened = Self { device };
        // SAFETY: `context` is the live primary context retained above.
        unsafe { result::ctx::set_current(context) }.map_err(|e| cuda_error(describe("cuCtxSetCurrent", e)))?;
        Ok(opened)
    }

    /// `(free, total)` by CUDA's count (`cuMemGetInfo_v2`).
    pub fn memory(&self) -> Result<(u64, u64), Failure> {
        let (free, total) = result::mem_get_info().map_err(|e| cuda_error(describe("cuMemGetInfo", e)))?;
        Ok((free as u64, total as u64))
    }
}

fn cuda_error(message: String) -> Failure {
    Failure { code: ErrorCode::ProbeCudaError, message }
}

impl Allocator for CudaDevice {
    fn alloc(&mut self, bytes: u64) -> Result<Option<u64>, AllocError> {
        let size = usize::try_from(bytes).map_err(|_| AllocError(format!("{bytes} bytes do not fit in usize")))?;
        // SAFETY: a plain device allocation; the memory is never read.
        match unsafe { result::malloc_sync(size) } {
            Ok(pointer) => Ok(Some(pointer)),
            Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => Ok(None),
            Err(e) => Err(AllocError(describe("cuMemAlloc", e))),
        }
    }

    fn free(&mut self, handle: u64) -> Result<(), AllocError> {
        // SAFETY: `handle` came from `alloc` and is freed once (modes.rs
        // removes it from its list before freeing).
        unsafe { result::free_sync(handle) }.map_err(|e| AllocError(describe("cuMemFree", e)))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // SAFETY: releases the reference `open` retained. Process exit would
        // free it anyway; this keeps the free-after reading honest.
        let _ = unsafe { result::primary_ctx::release(self.device) };
    }
}
