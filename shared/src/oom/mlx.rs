//! MLX's out-of-memory errors on a Mac (mlx, and what runs on it: mlx-lm,
//! mlx-vlm, LM Studio's MLX engine). MLX raises them as a C++
//! `std::runtime_error`, which Python shows as `RuntimeError: …` and an
//! uncaught one as `libc++abi: terminating due to uncaught exception of type
//! std::runtime_error: …`:
//!
//! ```text
//! [metal::malloc] Attempting to allocate 48736917632 bytes which is greater than the maximum allowed buffer size of 30150672384 bytes.
//! [METAL] Command buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)
//! [malloc] Unable to allocate 1073741824 bytes.
//! ```
//!
//! The first is `MetalAllocator::malloc`'s check of one array against the
//! device's `maxBufferLength` before any memory is looked at; the third is
//! the same function when Metal gave no buffer (mlx/backend/metal/
//! allocator.cpp, mlx 0.32.2); the second is a command buffer's completion
//! handler reporting Metal's error (mlx/backend/metal/device.cpp, from mlx
//! #479, January 2024).

use super::scan::{self, Cur};
use super::{GpuBackend, Occurrence, OomKind, OomReport};

pub(super) fn scan(t: &[u8], out: &mut Vec<Occurrence>) {
    // What the whole paste shows, read once however many messages it holds.
    let has = |m: &str| scan::find(t, 0, t.len(), m).is_some();
    let context = Context {
        evaluate: has("mlx_lm.evaluate") || has("mlx_lm/evaluate.py"),
        prompt_cache: has("prompt_cache") && has(".state"),
        engine: has("mlx_engine"),
        // MLX's CUDA allocator prints the same words (mlx/backend/cuda/allocator.cpp).
        metal: has("metal") && !has("cuda"),
        mlx: has("mlx"),
    };
    // The `[metal::malloc]`, `[METAL]` and `[malloc]` tags are left out of
    // the phrases: at the start of a line the normaliser drops them as a prefix.
    for (start, end) in scan::find_all(t, "Attempting to allocate") {
        let mut c = Cur::new(t, end);
        let mut probe = c;
        if !probe.find("bytes which is greater than the maximum allowed buffer size", 40) {
            continue;
        }
        let mut r = OomReport {
            kind: Some(OomKind::MlxBufferSize),
            backend: Some(GpuBackend::Metal),
            allocation_limit: true,
            ..OomReport::default()
        };
        r.requested_bytes = c.uint_before("bytes").flatten();
        if c.find("maximum allowed buffer size of", 160) {
            r.max_buffer_bytes = c.uint_before("bytes").flatten();
        }
        context.notes(&mut r);
        out.push(Occurrence { start, report: r });
    }
    for (start, end) in scan::find_all(t, "Command buffer execution failed:") {
        // Metal's other errors (a GPU timeout, a page fault) come the same way.
        let line_end = scan::line_end(t, end, 1);
        let oom = ["Insufficient Memory", "kIOGPUCommandBufferCallbackErrorOutOfMemory"]
            .into_iter()
            .any(|m| scan::find(t, end, line_end, m).is_some_and(|(at, _)| at < end + 120));
        if !oom {
            continue;
        }
        let mut r =
            OomReport { kind: Some(OomKind::MlxOutOfMemory), backend: Some(GpuBackend::Metal), ..OomReport::default() };
        context.notes(&mut r);
        out.push(Occurrence { start, report: r });
    }
    // `[malloc] Unable to allocate N bytes.`: a paste of MLX's (numpy's own
    // `Unable to allocate 3.73 GiB for an array` names no bytes count).
    if !context.mlx {
        return;
    }
    for (start, end) in scan::find_all(t, "Unable to allocate") {
        let mut c = Cur::new(t, end);
        let Some(bytes) = c.uint_before("bytes") else { continue };
        let mut r = OomReport {
            kind: Some(OomKind::MlxOutOfMemory),
            backend: context.metal.then_some(GpuBackend::Metal),
            requested_bytes: bytes,
            ..OomReport::default()
        };
        context.notes(&mut r);
        out.push(Occurrence { start, report: r });
    }
}

/// What the paste shows of the program that ran out.
struct Context {
    evaluate: bool,
    prompt_cache: bool,
    engine: bool,
    metal: bool,
    mlx: bool,
}

impl Context {
    /// The program that ran out, as notes.
    fn notes(&self, r: &mut OomReport) {
        // mlx_lm/evaluate.py (mlx-lm 0.31 – 0.32): `generate_until` hands every
        // request to `batch_generate` at once, whose BatchGenerator decodes up
        // to `completion_batch_size` (32) sequences together; `--batch-size`
        // batches only the log-likelihood scoring.
        if self.evaluate {
            r.notes.push(
                "mlx_lm.evaluate generates with batch_generate over all of a task's requests at once (up to 32 \
                 sequences decoding together, BatchGenerator's completion_batch_size); its --batch-size applies to \
                 log-likelihood scoring only (mlx_lm/evaluate.py, mlx-lm 0.31 – 0.32)."
                    .into(),
            );
        }
        if r.kind == Some(OomKind::MlxBufferSize) && self.prompt_cache {
            r.notes.push(
                "The traceback was evaluating a prompt cache's state (`c.state for c in … prompt_cache`): the array is \
                 a KV cache's, one per layer for every sequence of the batch and its whole length."
                    .into(),
            );
        }
        if self.engine {
            r.notes.push(
                "The paths are LM Studio's MLX engine (mlx_engine): its context length and parallel requests are set \
                 when the model is loaded."
                    .into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{GpuBackend, OomKind, parse};

    #[test]
    fn metals_other_command_buffer_errors_are_not_out_of_memory() {
        let timeout = "RuntimeError: [METAL] Command buffer execution failed: Caused GPU Timeout Error \
                       (00000002:kIOGPUCommandBufferCallbackErrorTimeout)";
        assert_eq!(parse(timeout).kind, None);
        let oom = "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command \
                   buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)";
        let r = parse(oom);
        assert_eq!((r.kind, r.backend), (Some(OomKind::MlxOutOfMemory), Some(GpuBackend::Metal)));
    }

    /// The `[malloc]` tag at a line's start is a prefix the normaliser drops:
    /// the message is read without it, in an MLX paste only.
    #[test]
    fn a_malloc_line_of_its_own_is_read() {
        let r = parse("[malloc] Unable to allocate 1073741824 bytes.\n  File \"mlx_lm/generate.py\"");
        assert_eq!((r.kind, r.requested_bytes), (Some(OomKind::MlxOutOfMemory), Some(1 << 30)));
        assert_eq!(parse("numpy.core._exceptions.MemoryError: Unable to allocate 3.73 GiB for an array").kind, None);
    }

    #[test]
    fn an_allocation_metal_refused_carries_its_size() {
        let r = parse("RuntimeError: [malloc] Unable to allocate 17179869184 bytes.\n  File \"mlx/core/metal.py\"");
        assert_eq!(r.kind, Some(OomKind::MlxOutOfMemory));
        assert_eq!(r.requested_bytes, Some(17_179_869_184));
        assert_eq!(r.backend, Some(GpuBackend::Metal));
    }
}
