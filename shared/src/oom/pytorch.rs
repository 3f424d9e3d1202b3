//! PyTorch's caching-allocator messages, `<backend> out of memory. Tried to
//! allocate …`, in the wording before 2.1 and from 2.1 on, on CUDA and on
//! ROCm (`HIP`); the MPS allocator's on Apple silicon (`MPS backend out of
//! memory (…)`); and the bare `CUDA error: out of memory` (or
//! `CUBLAS_STATUS_ALLOC_FAILED`) raised outside the allocator.
//!
//! The wording is fixed by `c10/cuda/CUDACachingAllocator.cpp`, so phrases
//! are matched literally; but each phrase is searched for within a short
//! window rather than required right after the previous one, so that junk a
//! copy inserted (an unrecognised per-line prefix) loses one figure, not all.

use super::scan::{self, Cur};
use super::{GpuBackend, MpsPool, Occurrence, OomKind, OomProcess, OomReport};

/// A message is a few hundred bytes plus about forty per process listed; this
/// bounds the work per message on hostile input.
const MAX_MESSAGE_BYTES: usize = 8_000;

/// How far a phrase may be from the previous one before it is not looked for.
const WINDOW: usize = 160;

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    let anchors = scan::find_all(t, "out of memory");
    for (i, &(start, end)) in anchors.iter().enumerate() {
        let next = anchors.get(i + 1).map_or(t.len(), |a| a.0);
        let limit = next.min(start.saturating_add(MAX_MESSAGE_BYTES));
        if let Some(o) = mps_message(t, start, end, limit) {
            out.push(o);
        } else if let Some(o) = allocator_message(t, start, end, limit) {
            out.push(o);
        } else if let Some(o) = runtime_error(t, start, end) {
            out.push(o);
        }
    }
    for (start, end) in scan::find_all(t, "would exceed allowed memory") {
        out.extend(async_message(t, start, end));
    }
    for (start, end) in scan::find_all(t, "Invalid buffer size:") {
        out.extend(mps_buffer_size(t, start, end));
    }
    for (pat, backend) in
        [("CUBLAS_STATUS_ALLOC_FAILED", GpuBackend::Cuda), ("HIPBLAS_STATUS_ALLOC_FAILED", GpuBackend::Hip)]
    {
        for (start, _) in scan::find_all(t, pat) {
            let report = OomReport { kind: Some(OomKind::CudaError), backend: Some(backend), ..OomReport::default() };
            out.push(Occurrence { start, report });
        }
    }
}

/// The MPS allocator's refusal of one buffer longer than Metal's
/// `maxBufferLength` (aten/src/ATen/mps/MPSAllocator.mm,
/// `alloc_buffer_block`: `TORCH_CHECK(size < m_max_buffer_size, "Invalid
/// buffer size: ", format_size(size))`, 2.0 and later), before any memory
/// is looked at: `RuntimeError: Invalid buffer size: 11.25 GB`, in powers
/// of 1024 as the MPS message's other figures. Only with a size and its
/// unit, which other programs' `Invalid buffer size: 0` lack.
fn mps_buffer_size(t: &[u8], start: usize, end: usize) -> Option<Occurrence> {
    let requested = Cur::new(t, end).binary_size()?;
    let r = OomReport {
        kind: Some(OomKind::PytorchMpsBufferSize),
        backend: Some(GpuBackend::Mps),
        requested_bytes: Some(requested),
        ..OomReport::default()
    };
    Some(Occurrence { start, report: r })
}

/// The backend word in front of "out of memory"; an unknown word (`NPU`)
/// gives `None` and a note, since the figures still read the same.
fn backend(word: &[u8], notes: &mut Vec<String>) -> Option<GpuBackend> {
    if word.eq_ignore_ascii_case(b"cuda") {
        Some(GpuBackend::Cuda)
    } else if word.eq_ignore_ascii_case(b"hip") {
        Some(GpuBackend::Hip)
    } else if word.eq_ignore_ascii_case(b"xpu") {
        Some(GpuBackend::Xpu)
    } else {
        if !word.is_empty() {
            notes.push(format!(
                "The message names the device type `{}`; its figures were read as PyTorch's CUDA ones.",
                String::from_utf8_lossy(word)
            ));
        }
        None
    }
}

/// `CUDA out of memory. Tried to allocate …`, either wording.
fn allocator_message(t: &[u8], start: usize, end: usize, limit: usize) -> Option<Occurrence> {
    let mut c = Cur::new(t, end);
    c.lit(".");
    if !c.lit("Tried to allocate") {
        return None;
    }
    let (word_start, word) = scan::word_before(t, start);
    let mut r = OomReport::default();
    r.backend = backend(word, &mut r.notes);
    r.requested_bytes = c.size();

    // Before 2.1 the figures follow in parentheses; a mangled requested size
    // can hide the parenthesis, so also look for the old field wording.
    let old_wording = scan::find(t, c.pos, limit.min(c.pos.saturating_add(300)), "total capacity;").is_some();
    let legacy = c.lit("(") || (old_wording && c.find("(", 40));
    if legacy {
        r.kind = Some(OomKind::PytorchLegacy);
        legacy_fields(&mut c, limit, &mut r);
    } else {
        r.kind = Some(OomKind::Pytorch);
        modern_fields(c, limit, &mut r);
    }
    Some(Occurrence { start: if word.is_empty() { start } else { word_start }, report: r })
}

/// `(GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.44 MiB
/// free; [10.00 GiB allowed;] 14.68 GiB reserved in total by PyTorch)`, or
/// before PyTorch 1.4 `…; 73.25 MiB cached)`.
fn legacy_fields(c: &mut Cur<'_>, limit: usize, r: &mut OomReport) {
    let mut reserved_total: Option<Option<u64>> = None;
    let mut cached: Option<Option<u64>> = None;
    // A real list has at most seven fields; the bound keeps hostile input cheap.
    for _ in 0..12 {
        if c.pos >= limit {
            break;
        }
        if c.lit("GPU") || c.lit("NPU") || c.lit("device") {
            r.gpu_index = index(c.uint_before(";").or_else(|| c.uint_before(")")));
        } else if let Some(value) = c.size_token() {
            let label = c.label(60);
            match label.as_slice() {
                b"totalcapacity" => r.total_bytes = value,
                b"alreadyallocated" => r.allocated_bytes = value,
                b"free" => r.free_bytes = value,
                b"allowed" => r.allowed_bytes = value,
                b"reservedintotalbypytorch" => reserved_total = Some(value),
                b"cached" => cached = Some(value),
                other => {
                    r.notes.push(format!("Unrecognised figure in the message: \"{}\".", String::from_utf8_lossy(other)))
                }
            }
        } else {
            break;
        }
        if !c.lit(";") {
            break;
        }
    }
    if let Some(reserved) = reserved_total {
        r.reserved_bytes = reserved;
        r.reserved_unallocated_bytes = reserved.zip(r.allocated_bytes).and_then(|(res, a)| res.checked_sub(a));
    } else if let Some(cached) = cached {
        // PyTorch 1.0-1.3 printed `cached` = held by the allocator but not
        // allocated (`amount_cached - amount_allocated`), i.e. what later
        // versions call reserved but unallocated.
        r.reserved_unallocated_bytes = cached;
        r.reserved_bytes = cached.zip(r.allocated_bytes).and_then(|(ca, a)| ca.checked_add(a));
        r.notes.push(
            "This PyTorch (before 1.4) printed `cached`, the memory reserved but unallocated; \
             reserved_bytes is already allocated + cached."
                .into(),
        );
    }
}

/// `. GPU 0 has a total capacity of T of which F is free. [Process P has M
/// memory in use.]… [Including non-PyTorch memory, this process has M memory
/// in use.] [X allowed;] Of the allocated memory A is allocated by PyTorch,
/// [with G allocated in private pools (e.g., CUDA Graphs),] and B is reserved
/// by PyTorch but unallocated.`
fn modern_fields(mut c: Cur<'_>, limit: usize, r: &mut OomReport) {
    let t = c.t;
    let window = |c: &Cur<'_>| WINDOW.min(limit.saturating_sub(c.pos));
    if c.find("GPU", window(&c)) {
        r.gpu_index = index(c.uint_before("has").or_else(|| c.uint_token()));
    }
    // PyTorch 2.1 printed the typo "capacty"; 2.2 fixed it.
    let w = window(&c);
    if c.find("has a total capacity of", w) || c.find("has a total capacty of", w) {
        r.total_bytes = c.size();
    }
    if c.find("of which", window(&c)) {
        r.free_bytes = c.size();
        c.lit("is free");
    }

    // The process list runs up to "Of the allocated memory".
    let list_start = c.pos;
    let summary = scan::find(t, c.pos, limit, "Of the allocated memory");
    let list_end = summary.map_or(limit.min(c.pos.saturating_add(4 * WINDOW)), |s| s.0);
    read_process_list(t, list_start, list_end, r);
    if !r.processes.is_empty() && r.process_in_use_bytes.is_none() {
        // PyTorch names itself "this process" by comparing its pid with
        // NVML's; inside a container the pids differ (NVML reports the host's
        // pid namespace), so its own entry shows up as a plain "Process P".
        r.notes.push(
            "No \"this process\" entry: in a container PyTorch cannot recognise its own pid, so one \
             of the listed processes may be this one."
                .into(),
        );
    }

    let Some((_, after)) = summary else { return };
    let mut c = Cur::new(t, after);
    r.allocated_bytes = c.size();
    c.lit("is allocated by PyTorch");
    c.lit(",");
    if c.lit("with") {
        r.private_pool_bytes = c.size();
        if c.find("private pools", WINDOW) {
            // "(e.g., CUDA Graphs),"
            if c.lit("(") {
                c.find(")", 40);
            }
            c.lit(",");
        }
    }
    if c.lit("and") || c.find("and ", window(&c)) {
        let mut v = c;
        if let Some(value) = v.size_token()
            && v.lit("is reserved by PyTorch but unallocated")
        {
            r.reserved_unallocated_bytes = value;
        }
    }
    r.reserved_bytes = r.allocated_bytes.zip(r.reserved_unallocated_bytes).and_then(|(a, b)| a.checked_add(b));
}

/// `Process P has M memory in use.`, `Including non-PyTorch memory, this
/// process has M memory in use.` and `X allowed;` in `from..to`.
fn read_process_list(t: &[u8], from: usize, to: usize, r: &mut OomReport) {
    let mut i = from;
    while let Some((_, end)) = scan::find(t, i, to, "Process ") {
        let mut c = Cur::new(t, end);
        // The pid tells a listed process from "this process has".
        if let Some(pid) = c.uint_before("has")
            && c.lit("has")
            && let Some(used) = c.size_token()
            && c.lit("memory in use")
        {
            r.processes.push(OomProcess { pid: pid.and_then(|p| u32::try_from(p).ok()), used_bytes: used });
        }
        i = c.pos.max(end);
    }
    if let Some((_, end)) = scan::find(t, from, to, "this process has") {
        let mut c = Cur::new(t, end);
        if let Some(used) = c.size_token()
            && c.lit("memory in use")
        {
            r.process_in_use_bytes = used;
        }
    }
    // `7.50 GiB allowed;` (set_per_process_memory_fraction) has no phrase in
    // front of the figure, so try every number in the list.
    for j in from..to.min(t.len()) {
        let starts_number = t.get(j).is_some_and(u8::is_ascii_digit)
            && !(j > 0 && t.get(j - 1).is_some_and(|b| b.is_ascii_digit() || *b == b'.'));
        if !starts_number {
            continue;
        }
        let mut c = Cur::new(t, j);
        if let Some(value) = c.size_token()
            && c.lit("allowed")
        {
            r.allowed_bytes = value;
            break;
        }
    }
}

/// The MPS allocator's message (aten/src/ATen/mps/MPSAllocator.mm,
/// `MPSHeapAllocatorImpl::alloc_buffer_block`, PyTorch 2.0 and later):
///
/// ```text
/// MPS backend out of memory (MPS allocated: 17.77 GB, other allocations: 40.50 MB,
/// max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool. Use
/// PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations
/// (may cause system failure).
/// ```
///
/// "MPS allocated" is what the allocator's heaps hold (`m_total_allocated_memory`,
/// cached buffers included), "other allocations" the rest of the process's
/// Metal memory (`currentAllocatedSize` less the heaps: MPSGraph's own
/// buffers and the like), "max allowed" the high-watermark limit; with
/// `PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0` the limit and the hint are left
/// out. Its `format_size` prints binary sizes, `GB` = 2^30 in earlier
/// releases (its own formatter) and `GiB` in later ones (c10's
/// `CachingAllocator::format_size`), so both read as powers of 1024. Each
/// label is looked for within a short window rather than in strict order,
/// so that a reworded or cut-off field loses one figure, not all.
fn mps_message(t: &[u8], start: usize, end: usize, limit: usize) -> Option<Occurrence> {
    let (backend_start, word) = scan::word_before(t, start);
    if !word.eq_ignore_ascii_case(b"backend") {
        return None;
    }
    let (mps_start, mps) = scan::word_before(t, backend_start);
    if !mps.eq_ignore_ascii_case(b"mps") {
        return None;
    }
    let mut r = OomReport { kind: Some(OomKind::PytorchMps), backend: Some(GpuBackend::Mps), ..OomReport::default() };
    let window = limit.min(end.saturating_add(600)).min(t.len());
    let figure = |label: &str| {
        let (_, after) = scan::find(t, end, window, label)?;
        let mut c = Cur::new(t, after);
        c.lit(":");
        c.binary_size()
    };
    r.reserved_bytes = figure("MPS allocated");
    let other = figure("other allocations");
    r.process_in_use_bytes = r.reserved_bytes.zip(other).and_then(|(a, o)| a.checked_add(o));
    r.allowed_bytes = figure("max allowed");
    if let Some((_, after)) = scan::find(t, end, window, "Tried to allocate") {
        let mut c = Cur::new(t, after);
        r.requested_bytes = c.binary_size();
        if c.lit("on") {
            r.mps_pool = if c.lit("private") {
                Some(MpsPool::Private)
            } else if c.lit("shared") {
                Some(MpsPool::Shared)
            } else {
                None
            };
        }
    }
    if r.allowed_bytes.is_none() && r.requested_bytes.is_some() {
        r.notes.push(
            "No \"max allowed\" in the message: PyTorch prints none when PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 turns \
             the limit off, so Metal itself found no more memory."
                .into(),
        );
    }
    Some(Occurrence { start: mps_start, report: r })
}

/// A GPU index as read, if it is one.
/// The `cudaMallocAsync` backend's message (c10/cuda/CUDAMallocAsyncAllocator.cpp,
/// `mallocAsync`, PyTorch 2.0 and later):
///
/// ```text
/// Allocation on device 0 would exceed allowed memory. (out of memory)
/// Currently allocated     : 16.08 GiB
/// Requested               : 4.83 GiB
/// Device limit            : 22.20 GiB
/// Free (according to CUDA): 11.12 MiB
/// PyTorch limit (set by user-supplied memory fraction)
///                         : 22.20 GiB
/// ```
///
/// "Device limit" is `cudaMemGetInfo`'s total, "Currently allocated" what
/// PyTorch holds (this allocator keeps no cache of its own), and the
/// fraction's limit is the device's total unless one was set.
fn async_message(t: &[u8], start: usize, end: usize) -> Option<Occurrence> {
    let head = start.saturating_sub(40);
    let (at, device_end) = scan::find(t, head, start, "Allocation on device")?;
    let mut r = OomReport {
        kind: Some(OomKind::PytorchAsync),
        backend: Some(GpuBackend::Cuda),
        gpu_index: index(Cur::new(t, device_end).uint_token()),
        ..OomReport::default()
    };
    let limit = end.saturating_add(MAX_MESSAGE_BYTES.min(600)).min(t.len());
    let mut c = Cur::new(t, end);
    for (label, field) in [
        ("Currently allocated", &mut r.allocated_bytes),
        ("Requested", &mut r.requested_bytes),
        ("Device limit", &mut r.total_bytes),
        ("Free (according to CUDA)", &mut r.free_bytes),
        ("PyTorch limit (set by user-supplied memory fraction)", &mut r.allowed_bytes),
    ] {
        let mut f = c;
        if f.find(label, WINDOW.min(limit.saturating_sub(f.pos))) && f.lit(":") {
            *field = f.size();
            c = f;
        }
    }
    // The limit is printed always, and is the device's total when no
    // fraction was set (as TGI's paste without one shows): only a lower one
    // is a cap.
    if r.allowed_bytes.zip(r.total_bytes).is_some_and(|(a, t)| a >= t) {
        r.allowed_bytes = None;
    }
    Some(Occurrence { start: at, report: r })
}

fn index(read: Option<Option<u64>>) -> Option<u32> {
    read.flatten().and_then(|i| u32::try_from(i).ok())
}

/// `CUDA error: out of memory` / `HIP error: out of memory`: the runtime's own
/// error, without figures. When ggml raised it (`current device: N, in
/// function ggml_…`) it is a llama.cpp failure on GPU N.
fn runtime_error(t: &[u8], start: usize, end: usize) -> Option<Occurrence> {
    let colon = {
        let mut p = start;
        while p > 0 && t.get(p - 1).is_some_and(|&b| scan::is_ws(b)) {
            p -= 1;
        }
        (p > 0 && t.get(p - 1) == Some(&b':')).then(|| p - 1)
    }?;
    let (error_start, error_word) = scan::word_before(t, colon);
    if !error_word.eq_ignore_ascii_case(b"error") {
        return None;
    }
    let (word_start, word) = scan::word_before(t, error_start);
    let backend = if word.eq_ignore_ascii_case(b"cuda") {
        GpuBackend::Cuda
    } else if word.eq_ignore_ascii_case(b"hip") {
        GpuBackend::Hip
    } else {
        return None;
    };
    let mut r = OomReport { kind: Some(OomKind::CudaError), backend: Some(backend), ..OomReport::default() };
    let mut c = Cur::new(t, end);
    if c.find("current device:", 200) {
        r.gpu_index = index(c.uint_before(",").or_else(|| c.uint_token()));
        if scan::find(t, c.pos, c.pos.saturating_add(120), "ggml").is_some() {
            r.kind = Some(OomKind::LlamaCpp);
        }
    }
    Some(Occurrence { start: word_start, report: r })
}
