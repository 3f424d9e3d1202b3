//! llama.cpp / ggml allocation failures. One failure prints several lines
//! (`ggml-cuda.cu`, `ggml-alloc.c`, `llama.cpp`), for example:
//!
//! ```text
//! ggml_backend_cuda_buffer_type_alloc_buffer: allocating 7605.33 MiB on device 0: cudaMalloc failed: out of memory
//! alloc_tensor_range: failed to allocate CUDA0 buffer of size 7974961152
//! llama_model_load: error loading model: unable to allocate CUDA0 buffer
//! ```
//!
//! so the lines are read as events and adjacent events are grouped into one
//! occurrence. The exact byte count of `buffer of size N` wins over the
//! rounded MiB figure of `allocating X MiB`.
//!
//! The Vulkan backend prints its own pair (`ggml-vulkan.cpp`,
//! `ggml_vk_create_buffer`'s `catch (const vk::SystemError& e)`):
//!
//! ```text
//! ggml_vulkan: Device memory allocation of size 118497280 failed.
//! ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory
//! ```
//!
//! The SYCL backend (Intel GPUs on Level Zero) prints the Unified Runtime's
//! code when the runtime ran out, then where ggml-sycl caught it
//! (`CHECK_TRY_ERROR` and `ggml_sycl_error`, ggml/src/ggml-sycl/common.hpp at
//! b8211), or its own line when `sycl::malloc_device` gave nothing
//! (`ggml_backend_sycl_buffer_type_alloc_buffer`, ggml-sycl.cpp):
//!
//! ```text
//! level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
//! SYCL error: CHECK_TRY_ERROR((stream)->memcpy(…)): Exception caught in this line of code.
//!   in function ggml_backend_sycl_get_tensor_async at …/ggml-sycl.cpp:5534
//! ggml_backend_sycl_buffer_type_alloc_buffer: can't allocate 5000000000 Bytes of memory on device
//! ```
//!
//! and the Metal backend of mid-2023 one line (`ggml-metal.m`,
//! `ggml_metal_add_buffer`, which printed `size / 1024.0 / 1024.0` as `MB`,
//! later `MiB`), after `ggml_metal_init`'s `recommendedMaxWorkingSetSize`:
//!
//! ```text
//! ggml_metal_add_buffer: error: failed to allocate 'data            ' buffer, size = 19283.21 MiB
//! ```
//!
//! Later Metal builds allocate their buffers without a word and learn that
//! memory ran out only when a command buffer of the graph fails to run
//! (ggml/src/ggml-metal/ggml-metal-context.m @a0ed91a:
//! `ggml_metal_graph_compute` and `ggml_metal_synchronize` check each
//! command buffer's status, 5 being `MTLCommandBufferStatusError`, and print
//! Metal's reason, `localizedDescription`, since llama.cpp PR #7010, April
//! 2024; `ggml_metal_synchronize` then aborts):
//!
//! ```text
//! ggml_metal_graph_compute: command buffer 0 failed with status 5
//! error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)
//! ggml_metal_synchronize: error: command buffer 1 failed with status 5
//! ```

use super::gib;
use super::scan::{self, Cur};
use super::{GpuBackend, LlamaCppStage, Occurrence, OomKind, OomReport};

/// Lines that may separate two events of one failure.
const MAX_GAP_LINES: usize = 4;

/// The most Level Zero gives in one device allocation unless its relaxed
/// limits are on: 4 GB (docs/backend/SYCL.md at b8211, "Support malloc
/// device memory more than 4GB" for `UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS`;
/// Level Zero's `maxMemAllocSize`), taken as 4 GiB, the larger reading.
pub(crate) const SYCL_ONE_ALLOCATION_BYTES: u64 = 4 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKind {
    /// `allocating X MiB on device N: cudaMalloc failed: out of memory`
    Malloc,
    /// `failed to allocate CUDA0 buffer of size N`
    SizedBuffer,
    /// `unable to allocate CUDA0 buffer`
    NamedBuffer,
    /// `failed to allocate buffer for kv cache`
    KvCache,
    /// `failed to allocate compute [pp] buffers`
    Compute,
    /// `ggml_vulkan: Device memory allocation of size N failed.`
    VulkanAlloc,
    /// `vk::Device::allocateMemory: ErrorOutOfDeviceMemory`
    VulkanError,
    /// `ggml_metal_add_buffer: error: failed to allocate 'data' buffer, size = X MiB`
    MetalBuffer,
    /// `UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY` (`Native API returns: 39 (…)`,
    /// `level_zero backend failed with error: 39 (…)`)
    SyclError,
    /// `can't allocate N Bytes of memory on device`
    SyclAlloc,
    /// `ggml_metal_graph_compute: command buffer 0 failed with status 5`
    /// followed by Metal's out-of-memory reason.
    MetalCommandBuffer,
}

#[derive(Debug, Clone, Copy)]
struct Event<'a> {
    start: usize,
    end: usize,
    kind: EventKind,
    bytes: Option<u64>,
    gpu: Option<u32>,
    /// The ggml buffer type name: `CUDA0`, `ROCm1`, `CUDA_Host`; `Vulkan`
    /// and `Metal` for those backends' own lines.
    buffer: Option<&'a [u8]>,
    /// What the line itself says was being allocated (Metal names its buffers).
    stage: Option<LlamaCppStage>,
}

impl Event<'_> {
    fn new(start: usize, end: usize, kind: EventKind) -> Self {
        Event { start, end, kind, bytes: None, gpu: None, buffer: None, stage: None }
    }
}

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    let mut events = Vec::new();
    malloc_events(t, &mut events);
    buffer_events(t, &mut events);
    vulkan_events(t, &mut events);
    sycl_events(t, &mut events);
    metal_command_buffer_events(t, &mut events);
    crate::order::sort_by_key(&mut events, |e| e.start);

    let mut group: Vec<Event<'_>> = Vec::new();
    for e in events {
        // A line with no size or device of its own says the failure above it
        // again, one caller up: llama.cpp's `failed to initialize the
        // context: failed to allocate compute pp buffers` after `graph_reserve:
        // failed to allocate compute buffers`, Ollama's closing `llama runner
        // process has terminated: cudaMalloc failed: out of memory`. It joins
        // that failure even where its kind repeats, so the failure keeps its
        // figures.
        let echo = e.bytes.is_none() && e.gpu.is_none();
        let joins = group.last().is_some_and(|last| {
            (echo || (e.kind != EventKind::Malloc && group.iter().all(|g| g.kind != e.kind)))
                && scan::lines_between(t, last.end, e.start) <= MAX_GAP_LINES
        });
        if !joins && !group.is_empty() {
            out.push(occurrence(t, &group));
            group.clear();
        }
        group.push(e);
    }
    if !group.is_empty() {
        out.push(occurrence(t, &group));
    }
}

/// Folds a failure without a size or device into the sized one before it:
/// the same failure said again further down than [`MAX_GAP_LINES`], as
/// Ollama's closing `error="llama runner process has terminated: cudaMalloc
/// failed: out of memory"` comes after the runner's stack trace. A new
/// failure of llama.cpp prints ggml's sized line first, so one without
/// figures is that echo (or a paste cut before its figures); it lends the
/// earlier one its stage when that had none. `found` is in text order.
pub(super) fn fold_echoes(found: &mut Vec<Occurrence>) {
    let mut kept: Vec<Occurrence> = Vec::with_capacity(found.len());
    for o in found.drain(..) {
        let llama = |r: &OomReport| r.kind == Some(OomKind::LlamaCpp);
        let echo = llama(&o.report) && o.report.requested_bytes.is_none() && o.report.gpu_index.is_none();
        match kept.last_mut() {
            Some(prev) if echo && llama(&prev.report) && prev.report.requested_bytes.is_some() => {
                if prev.report.llama_cpp_stage.is_none() {
                    prev.report.llama_cpp_stage = o.report.llama_cpp_stage;
                }
            }
            Some(_) | None => kept.push(o),
        }
    }
    *found = kept;
}

/// `ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1234.56 MiB on
/// device 0: cudaMalloc failed: out of memory`. The size and device are read
/// from the same line, when it has them.
fn malloc_events(t: &[u8], events: &mut Vec<Event<'_>>) {
    for (start, end) in scan::find_all(t, "cudaMalloc failed") {
        let mut c = Cur::new(t, end);
        c.lit(":");
        if !c.lit("out of memory") {
            // A paste cut inside the words at its very end (`cudaMalloc
            // failed: ou`, as an issue's excerpt was): the words begun are
            // these and no other error's.
            let rest = t.get(c.pos..).unwrap_or_default().trim_ascii();
            if rest.len() < 2 || !b"out of memory".starts_with(rest) {
                continue;
            }
            c.pos = t.len();
        }
        let line = scan::line_start(t, start);
        let mut e = Event::new(line, c.pos, EventKind::Malloc);
        if let Some((_, after)) = scan::find(t, line, start, "allocating ") {
            let mut a = Cur::new(t, after);
            e.bytes = a.size();
            if a.lit("on device") {
                e.gpu = a.uint_before(":").flatten().and_then(|g| u32::try_from(g).ok());
            }
        }
        events.push(e);
    }
}

/// `failed to allocate CUDA0 buffer of size N`, `failed to allocate buffer for
/// kv cache`, `failed to allocate compute buffers`, `unable to allocate CUDA0
/// buffer`.
fn buffer_events<'a>(t: &'a [u8], events: &mut Vec<Event<'a>>) {
    for (start, end) in scan::find_all(t, "failed to allocate") {
        let mut c = Cur::new(t, end);
        let event = if c.lit("buffer for kv cache") {
            Event::new(start, c.pos, EventKind::KvCache)
        } else if c.lit("compute") {
            Event::new(start, c.pos, EventKind::Compute)
        } else if let Some(e) = named_buffer(c, start) {
            e
        } else if let Some(e) = metal_buffer(c, start) {
            e
        } else {
            continue;
        };
        events.push(event);
    }
    for (start, end) in scan::find_all(t, "unable to allocate") {
        if let Some(e) = named_buffer(Cur::new(t, end), start) {
            events.push(e);
        }
    }
}

/// `Device memory allocation of size N failed.` and `ErrorOutOfDeviceMemory`.
fn vulkan_events(t: &[u8], events: &mut Vec<Event<'_>>) {
    for (start, end) in scan::find_all(t, "Device memory allocation of size") {
        let mut c = Cur::new(t, end);
        let bytes = c.uint_token();
        if !c.lit("failed") {
            continue;
        }
        let mut e = Event::new(start, c.pos, EventKind::VulkanAlloc);
        e.bytes = bytes.flatten();
        e.buffer = Some(b"Vulkan");
        events.push(e);
    }
    for (start, end) in scan::find_all(t, "ErrorOutOfDeviceMemory") {
        let mut e = Event::new(start, end, EventKind::VulkanError);
        e.buffer = Some(b"Vulkan");
        events.push(e);
    }
}

/// The Unified Runtime's out-of-device-memory code, and ggml-sycl's own
/// line for a device allocation that returned nothing. Only the device's
/// code: `UR_RESULT_ERROR_OUT_OF_HOST_MEMORY` is the host's RAM.
fn sycl_events(t: &[u8], events: &mut Vec<Event<'_>>) {
    for (start, end) in scan::find_all(t, "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY") {
        let mut e = Event::new(scan::line_start(t, start).max(start.saturating_sub(120)), end, EventKind::SyclError);
        e.buffer = Some(b"SYCL");
        events.push(e);
    }
    for (start, end) in scan::find_all(t, "can't allocate") {
        let mut c = Cur::new(t, end);
        let Some(bytes) = c.uint_before("Bytes of memory on device") else { continue };
        c.find("on device", 40);
        let mut e = Event::new(start, c.pos, EventKind::SyclAlloc);
        e.bytes = bytes;
        e.buffer = Some(b"SYCL");
        events.push(e);
    }
}

/// A Metal command buffer of the graph that failed for want of memory:
/// `… command buffer N failed with status 5` and, on the next line, Metal's
/// reason (`Insufficient Memory (00000008:kIOGPUCommandBufferCallback
/// ErrorOutOfMemory)`; PR #6987's brief `out of memory` before #7010).
/// Metal's other reasons (`kIOGPUCommandBufferCallbackErrorTimeout`,
/// `…SubmissionsIgnored`, a page fault) are not memory, and a build that
/// printed no reason says nothing either way.
fn metal_command_buffer_events(t: &[u8], events: &mut Vec<Event<'_>>) {
    for (start, end) in scan::find_all(t, "failed with status") {
        let line = scan::line_start(t, start).max(start.saturating_sub(160));
        let Some((name_at, _)) = scan::find(t, line, start, "ggml_metal_") else { continue };
        if scan::find(t, name_at, start, "command buffer").is_none() {
            continue;
        }
        let reason_end = scan::line_end(t, end, 1);
        let oom = ["Insufficient Memory", "ErrorOutOfMemory", "out of memory"]
            .into_iter()
            .any(|m| scan::find(t, end, reason_end, m).is_some());
        if !oom {
            continue;
        }
        let mut e = Event::new(name_at, reason_end, EventKind::MetalCommandBuffer);
        e.buffer = Some(b"Metal");
        e.stage = Some(LlamaCppStage::GraphCompute);
        events.push(e);
    }
}

/// What the log's Metal buffers add up to before a command buffer ran out
/// (`Metal_Mapped model buffer size`, `Metal KV buffer size`, `Metal
/// compute buffer size`, src/llama-model.cpp and llama-context.cpp; the
/// older `Metal buffer size` of llm_load_tensors), against Metal's
/// recommended working set where ggml_metal_init printed it: allocated
/// without complaint, they ran out together when the graph used them.
fn metal_buffers_note(t: &[u8], first: usize, r: &mut OomReport) {
    let mut parts: Vec<(&str, u64)> = Vec::new();
    for (what, pat) in [
        ("weights", "model buffer size ="),
        ("weights", "Metal buffer size ="),
        ("KV cache", "Metal KV buffer size ="),
        ("compute", "Metal compute buffer size ="),
    ] {
        // The last of each before the failure: a reload prints them again.
        let Some((at, end)) = scan::find_last(t, first, pat) else { continue };
        if what == "weights" && scan::find(t, scan::line_start(t, at), at, "Metal").is_none() {
            continue;
        }
        if let Some(bytes) = Cur::new(t, end).binary_size() {
            parts.push((what, bytes));
        }
    }
    parts.dedup_by_key(|p| p.0);
    if parts.is_empty() {
        return;
    }
    let sum: u64 = parts.iter().map(|p| p.1).sum();
    let list: Vec<String> = parts.iter().map(|(w, b)| format!("{w} {}", gib(*b))).collect();
    let over = match r.total_bytes {
        Some(t) if sum > t => {
            format!(", over the {} Metal recommends as the GPU's working set (recommendedMaxWorkingSetSize)", gib(t))
        }
        Some(t) => format!(" of the {} Metal recommends as the GPU's working set", gib(t)),
        None => String::new(),
    };
    r.notes.push(format!(
        "The log's Metal buffers come to {} ({}){over}: allocated at load without complaint, they ran out when the \
         graph ran.",
        gib(sum),
        list.join(", ")
    ));
}

/// The ggml-metal function that names the failed command buffer
/// (`ggml_metal_graph_compute`, `ggml_metal_synchronize`).
fn metal_function(t: &[u8], at: usize) -> Option<String> {
    let tail = t.get(at..)?;
    let len = tail.iter().take(64).take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
    tail.get(..len).map(|n| String::from_utf8_lossy(n).into_owned())
}

/// The function ggml-sycl names as where its SYCL error was caught
/// (`ggml_sycl_error`'s `  in function X at file:line`), within a few lines
/// of the failure.
fn sycl_function(t: &[u8], from: usize) -> Option<String> {
    let to = scan::line_end(t, from, 6);
    let (_, end) = scan::find(t, from, to, "in function ")?;
    // Longer than `Cur::name` reads: `ggml_backend_sycl_get_tensor_async`.
    let tail = t.get(end..)?;
    let len = tail.iter().take(96).take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
    let name = tail.get(..len).filter(|n| n.first().is_some_and(u8::is_ascii_alphabetic))?;
    Cur::new(t, end + len).lit("at").then(|| String::from_utf8_lossy(name).into_owned())
}

/// `'data            ' buffer, size = 19283.21 MiB` after "failed to
/// allocate": the old Metal backend's buffers, named by what they hold
/// (`llama.cpp`'s `llama_init_from_file`, mid-2023: `data` the weights,
/// `kv` the cache, `eval`, `scr0`, `scr1` the compute scratch).
fn metal_buffer(mut c: Cur<'_>, start: usize) -> Option<Event<'_>> {
    if !c.lit("'") {
        return None;
    }
    let name = c.name()?;
    if !(c.lit("'") && c.lit("buffer")) {
        return None;
    }
    let mut e = Event::new(start, c.pos, EventKind::MetalBuffer);
    e.stage = match name.to_ascii_lowercase().as_slice() {
        b"data" => Some(LlamaCppStage::ModelWeights),
        b"kv" => Some(LlamaCppStage::KvCache),
        b"eval" | b"scr0" | b"scr1" => Some(LlamaCppStage::ComputeBuffers),
        _ => None,
    };
    c.lit(",");
    if c.lit("size") && c.lit("=") {
        // `size / 1024.0 / 1024.0` whether the label says MB or MiB.
        e.bytes = c.binary_size();
        e.end = c.pos;
    }
    e.buffer = Some(b"Metal");
    Some(e)
}

/// `CUDA0 buffer [of size N]` after "failed/unable to allocate".
fn named_buffer(mut c: Cur<'_>, start: usize) -> Option<Event<'_>> {
    let name = c.name()?;
    let name = if name.eq_ignore_ascii_case(b"buffer") {
        None
    } else if c.lit("buffer") {
        // `unable to allocate backend buffer` (llama.cpp of early 2024, which
        // did not name the buffer type there) names no device or backend.
        Some(name).filter(|n| !n.eq_ignore_ascii_case(b"backend"))
    } else {
        return None;
    };
    let mut e = Event::new(start, c.pos, EventKind::NamedBuffer);
    if c.lit("of size")
        && let Some(bytes) = c.uint_token()
    {
        e.kind = EventKind::SizedBuffer;
        e.bytes = bytes;
        e.end = c.pos;
    }
    e.buffer = name;
    e.gpu = name.and_then(device_index);
    Some(e)
}

/// `CUDA0` → 0, `ROCm1` → 1; `CUDA_Host` → none.
fn device_index(name: &[u8]) -> Option<u32> {
    let digits = name.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let (prefix, number) = name.split_at(name.len() - digits);
    if digits == 0 || !prefix.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    std::str::from_utf8(number).ok()?.parse().ok()
}

/// Where ggml's pinned-memory warning is: `ggml_cuda_host_malloc: failed to
/// allocate X MiB of pinned memory: out of memory` (ggml/src/ggml-cuda/
/// ggml-cuda.cu, b8211; `WARNING: failed to allocate X MB of pinned memory`
/// in 2023's ggml-cuda.cu and in ggml-vulkan.cpp's `ggml_vk_host_malloc`):
/// `cudaMallocHost` refused to page-lock host RAM, and the caller falls back
/// to an ordinary CPU buffer (`ggml_backend_cuda_host_buffer_type_alloc_buffer`).
/// The line's span, for the first such line.
pub(super) fn pinned_warning(t: &[u8]) -> Option<(usize, usize)> {
    scan::find_all(t, "of pinned memory").into_iter().find_map(|(start, end)| {
        // The warning's own prefix is short: looking back a bounded way
        // keeps a hostile line of many matches linear.
        let from = scan::line_start(t, start).max(start.saturating_sub(256));
        scan::find(t, from, start, "failed to allocate").map(|_| (from, scan::line_end(t, end, 0)))
    })
}

fn occurrence(t: &[u8], group: &[Event<'_>]) -> Occurrence {
    let first = group.first().map_or(0, |e| e.start);
    let last_end = group.last().map_or(first, |e| e.end);
    let of = |kind| group.iter().find(|e| e.kind == kind);
    let sized = of(EventKind::SizedBuffer)
        .or(of(EventKind::VulkanAlloc))
        .or(of(EventKind::MetalBuffer))
        .or(of(EventKind::SyclAlloc));
    let malloc = of(EventKind::Malloc);
    let buffer = group.iter().find_map(|e| e.buffer);

    let mut r = OomReport { kind: Some(OomKind::LlamaCpp), ..OomReport::default() };
    r.requested_bytes = sized.and_then(|e| e.bytes).or(malloc.and_then(|e| e.bytes));
    r.gpu_index = malloc.and_then(|e| e.gpu).or_else(|| group.iter().find_map(|e| e.gpu));
    r.backend = match buffer {
        Some(b) if starts_with_ci(b, b"rocm") || starts_with_ci(b, b"hip") => Some(GpuBackend::Hip),
        Some(b) if starts_with_ci(b, b"cuda") => Some(GpuBackend::Cuda),
        Some(b) if starts_with_ci(b, b"vulkan") => Some(GpuBackend::Vulkan),
        Some(b) if starts_with_ci(b, b"metal") => Some(GpuBackend::Metal),
        Some(b) if starts_with_ci(b, b"sycl") => Some(GpuBackend::Sycl),
        Some(_) => None,
        None => malloc.map(|_| GpuBackend::Cuda),
    };
    if buffer.is_some_and(|b| b.eq_ignore_ascii_case(b"CUDA_Host")) {
        r.notes.push("The buffer that failed is pinned host memory (CUDA_Host), not GPU memory.".into());
    }
    r.llama_cpp_stage = group.iter().find_map(|e| e.stage).or_else(|| stage(t, group, first, last_end));
    if r.backend == Some(GpuBackend::Sycl) {
        r.failed_in = sycl_function(t, first);
        // Over 4 GB in one allocation needs Level Zero's relaxed limits
        // (docs/backend/SYCL.md, b8211: "can't allocate 5000000000 Bytes of
        // memory on device" → UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1).
        // A paste that shows them set asked past the GPU's memory instead.
        let relaxed = scan::find(t, 0, t.len(), "UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1").is_some();
        r.allocation_limit = !relaxed && r.requested_bytes.is_some_and(|q| q > SYCL_ONE_ALLOCATION_BYTES);
    }
    if let Some(e) = of(EventKind::MetalCommandBuffer) {
        r.failed_in = metal_function(t, e.start);
    }
    if r.backend == Some(GpuBackend::Metal)
        && let Some((_, end)) = scan::find_last(t, first, "recommendedMaxWorkingSetSize")
    {
        let mut c = Cur::new(t, end);
        c.lit("=");
        if let Some(bytes) = c.binary_size() {
            r.total_bytes = Some(bytes);
            r.notes.push(
                "The GPU's capacity is Metal's recommendedMaxWorkingSetSize, as ggml_metal_init printed it.".into(),
            );
        }
    }
    if r.llama_cpp_stage == Some(LlamaCppStage::GraphCompute) {
        metal_buffers_note(t, first, &mut r);
    }
    // ik_llama.cpp's MLA cache line (src/llama.cpp@18b0375:21243-21250),
    // anywhere before the failure: the log is ik's, with MLA on.
    r.ik_mla = scan::find(t, 0, first, "c^KV (").is_some();
    r.devices_in_log = devices_in_log(t);
    fit_gave_up(t, first, &mut r);
    clip_warmup(t, first, &mut r);
    // `llama runner process no longer running: …` is 0.1.x's (0.1.32,
    // llm/server.go), `… has terminated: …` later's; from 0.30 Ollama runs
    // llama.cpp's own server and says `llama-server process has
    // terminated` / `… no longer running` (llm/llama_server.go at
    // fb3076099), words llama-server itself never prints.
    r.via_ollama = [
        "llama runner process has terminated",
        "llama runner terminated",
        "llama runner process no longer running",
        "llama-server process has terminated",
        "llama-server process no longer running",
    ]
    .into_iter()
    .any(|m| scan::find(t, 0, t.len(), m).is_some());
    if let Some((_, end)) = scan::find_last(t, last_end, "pipeline parallelism enabled (n_copies=") {
        r.pipeline_copies = Cur::new(t, end).uint();
    }
    Occurrence { start: first, report: r }
}

/// Why `--fit` gave up before the failure, and what it projected over its
/// target: `llama_params_fit` logs `failed to fit params to free device
/// memory: model_params::tensor_buft_overrides already set by user, abort`
/// as a warning and the load goes on unfitted (src/llama.cpp:349 and :751
/// @a0ed91a; `common_fit_params` once it moved to common/), after
/// `cannot meet free memory target of 1024 MiB, need to reduce device
/// memory by 3523 MiB` (`llama_params_fit_impl`).
fn fit_gave_up(t: &[u8], first: usize, r: &mut OomReport) {
    if let Some((_, end)) = scan::find_last(t, first, "failed to fit params to free device memory:") {
        let line = t.get(end..scan::line_end(t, end, 0)).unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let reason = line.trim();
        let reason = reason.strip_suffix(", abort").unwrap_or(reason).trim();
        if !reason.is_empty() {
            r.fit_gave_up = Some(reason.chars().take(160).collect());
        }
    }
    // One device's line, or on several llama.cpp's sum over them (`cannot
    // meet free memory targets on all devices, need to use N MiB less in
    // total`, src/llama.cpp:264 / :268 @a0ed91a).
    if let Some((_, end)) = scan::find_last(t, first, "need to reduce device memory by")
        .or_else(|| scan::find_last(t, first, "need to use "))
    {
        r.fit_shortfall_bytes = Cur::new(t, end).size();
    }
}

/// The multimodal projector's warm-up as the step that failed: clip.cpp
/// logs `warmup: warmup with image size = 1472 x 1472` (or `warmup with
/// audio size`, tools/mtmd/clip.cpp:1954 @a0ed91a) and then reserves its
/// compute buffer on the GPU it chose (`clip_ctx: CLIP using CUDA0
/// backend`); no text-model step may lie between that line and the failure.
/// The projector's name (`load_hparams: projector: qwen3vl_merger`) where
/// the paste prints it.
fn clip_warmup(t: &[u8], first: usize, r: &mut OomReport) {
    let warmup = scan::find_last(t, first, "warmup with image size")
        .or_else(|| scan::find_last(t, first, "warmup with audio size"));
    if let Some((w, _)) = warmup {
        let text_model_step =
            ["sched_reserve", "llama_context:", "llama_init_from_model", "_with_model:", "load_tensors"];
        r.clip_warmup = text_model_step.into_iter().all(|m| scan::find(t, w, first, m).is_none());
    }
    if r.clip_warmup
        && let Some((_, end)) = scan::find_last(t, first, "load_hparams: projector:")
    {
        r.clip_projector =
            Cur::new(t, end).name().map(|n| String::from_utf8_lossy(n).into_owned()).filter(|n| !n.is_empty());
    }
    if r.clip_warmup
        && let Some((_, end)) = scan::find_last(t, first, "load_hparams: model size:")
    {
        r.clip_model_bytes = Cur::new(t, end).size();
    }
}

/// Every GPU the log names: ggml's buffer type names (`CUDA3`, `ROCm1`,
/// `Vulkan0`, `SYCL2`; not `CUDA_Host` nor `cudaMalloc`) and `on device N`.
fn devices_in_log(t: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    for prefix in ["CUDA", "ROCm", "Vulkan", "SYCL"] {
        for (start, end) in scan::find_all(t, prefix) {
            let word_start = start == 0 || t.get(start - 1).is_some_and(|b| !b.is_ascii_alphanumeric());
            let digits = t.get(end..).unwrap_or_default().iter().take_while(|b| b.is_ascii_digit()).count();
            // A version (`ROCm6.2`, `CUDA12.4`) is not a device: no `.` after the digits.
            let word_end = t.get(end + digits).is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'_' && *b != b'.');
            if word_start && digits > 0 && word_end {
                out.extend(t.get(start..end + digits).and_then(device_index));
            }
        }
    }
    for (_, end) in scan::find_all(t, "on device ") {
        out.extend(Cur::new(t, end).uint().and_then(|d| u32::try_from(d).ok()));
    }
    crate::order::sort(&mut out);
    out.dedup();
    out
}

fn starts_with_ci(name: &[u8], prefix: &[u8]) -> bool {
    name.get(..prefix.len()).is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

/// What was being allocated, from the events and the lines around them
/// (llama.cpp names the step that failed on the line after the ggml one).
fn stage(t: &[u8], group: &[Event<'_>], first: usize, last_end: usize) -> Option<LlamaCppStage> {
    if group.iter().any(|e| e.kind == EventKind::KvCache) {
        return Some(LlamaCppStage::KvCache);
    }
    if group.iter().any(|e| e.kind == EventKind::Compute) {
        return Some(LlamaCppStage::ComputeBuffers);
    }
    let from = scan::line_start(t, first);
    let to = scan::line_end(t, last_end, 2);
    let has = |pat: &str| scan::find(t, from, to, pat).is_some();
    if ["error loading model", "llama_model_load", "alloc_tensor_range", "load_tensors", "unable to allocate"]
        .into_iter()
        .any(has)
    {
        Some(LlamaCppStage::ModelWeights)
    } else if ["kv cache", "kv_cache", "kv self"].into_iter().any(has) {
        Some(LlamaCppStage::KvCache)
    } else if ["compute", "gallocr", "sched_reserve", "graph_reserve"].into_iter().any(has) {
        Some(LlamaCppStage::ComputeBuffers)
    } else if let Some((_, end)) = scan::find_last(t, first, "sched_reserve: reserving")
        && scan::find(t, end, first, "compute buffer size").is_none()
    {
        // `sched_reserve: reserving ...` opens the reservation of the
        // compute buffers (src/llama-context.cpp:389 @a0ed91a), which print
        // their `compute buffer size` lines once allocated: a failure after
        // it and before them is theirs, whatever the lines between say.
        Some(LlamaCppStage::ComputeBuffers)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::{GpuBackend, LlamaCppStage, parse};

    /// Ollama's journal: the runner's ggml lines, then the server's closing
    /// error, which names `cudaMalloc failed` again without a size.
    const OLLAMA: &str = "ollama[1654667]: ggml_backend_cuda_buffer_type_alloc_buffer: allocating 6476.00 MiB on device 0: cudaMalloc failed: out of memory
ollama[1654667]: llama_model_load: error loading model: unable to allocate CUDA0 buffer
ollama[1654667]: llama_load_model_from_file: failed to load model
";
    const CLOSING: &str = "ollama[1654667]: level=ERROR source=sched.go:457 msg=\"error loading llama server\" \
                           error=\"llama runner process has terminated: cudaMalloc failed: out of memory\"\n";

    /// `--fit`'s shortfall on one device, and its sum on several (src/llama.cpp:264 / :268).
    #[test]
    fn fits_shortfall_is_read_on_one_device_and_on_several() {
        let tail = "llama_params_fit: failed to fit params to free device memory: model_params::tensor_buft_overrides already set by user, abort
                    ggml_backend_cuda_buffer_type_alloc_buffer: allocating 15368.06 MiB on device 0: cudaMalloc failed: out of memory
                    llama_init_from_model: failed to initialize the context
";
        for (line, mib) in [
            ("llama_params_fit_impl: cannot meet free memory target of 1024 MiB, need to reduce device memory by 3523 MiB
", 3523),
            ("llama_params_fit_impl: cannot meet free memory targets on all devices, need to use 7040 MiB less in total
", 7040),
        ] {
            let r = parse(&format!("{line}{tail}"));
            assert_eq!(r.fit_shortfall_bytes, Some(mib << 20), "{line}");
            assert!(r.fit_gave_up.is_some());
        }
    }

    #[test]
    fn a_closing_line_without_figures_keeps_the_failures_figures() {
        // Right below the failure, and past a goroutine trace longer than
        // the gap that groups lines.
        let trace = "ollama[1654667]: goroutine 1 [running]:\n".repeat(12);
        for text in [format!("{OLLAMA}{CLOSING}"), format!("{OLLAMA}{trace}{CLOSING}")] {
            let r = parse(&text);
            assert_eq!(r.requested_bytes, Some(6476 << 20), "{text}");
            assert_eq!(r.gpu_index, Some(0));
            assert_eq!(r.llama_cpp_stage, Some(LlamaCppStage::ModelWeights));
            assert_eq!(r.backend, Some(GpuBackend::Cuda));
            assert!(r.via_ollama);
            assert_eq!(r.occurrences, 1, "{:?}", r.notes);
        }
    }

    #[test]
    fn the_contexts_repeat_of_a_compute_failure_keeps_its_figures() {
        let r = parse(
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 14136.04 MiB on device 0: cudaMalloc failed: out of memory
ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 14822711296
graph_reserve: failed to allocate compute buffers
llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers
",
        );
        assert_eq!(r.requested_bytes, Some(14_822_711_296));
        assert_eq!(r.llama_cpp_stage, Some(LlamaCppStage::ComputeBuffers));
        assert_eq!(r.occurrences, 1);
    }

    /// Metal's other command-buffer errors are not memory (llama.cpp #8886's
    /// `kIOAccelCommandBufferCallbackErrorSubmissionsIgnored`); its
    /// out-of-memory reason is, in either function's wording.
    #[test]
    fn only_metals_out_of_memory_reason_is_read() {
        let ignored = "ggml_metal_graph_compute: command buffer 0 failed with status 5\n\
                       error: Ignored (for causing prior/excessive GPU errors) \
                       (00000004:kIOAccelCommandBufferCallbackErrorSubmissionsIgnored)\n";
        assert_eq!(parse(ignored).kind, None);
        let oom = "ggml_metal_synchronize: error: command buffer 1 failed with status 5\n\
                   error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n";
        let r = parse(oom);
        assert_eq!((r.backend, r.llama_cpp_stage), (Some(GpuBackend::Metal), Some(LlamaCppStage::GraphCompute)));
        assert_eq!(r.failed_in.as_deref(), Some("ggml_metal_synchronize"));
    }

    #[test]
    fn two_sized_failures_stay_two() {
        let one = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 100.00 MiB on device 0: cudaMalloc failed: out of memory\n";
        let r = parse(&format!("{one}{}", one.replace("100.00", "200.00")));
        assert_eq!(r.occurrences, 2);
        assert_eq!(r.requested_bytes, Some(200 << 20));
    }
}
