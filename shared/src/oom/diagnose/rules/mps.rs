//! Steps 1–5 for PyTorch's MPS allocator on a Mac: the GPU shares the Mac's
//! memory, so the error has no capacity or free figure, only what this
//! process holds against the high-watermark limit. Its fixes are a Mac's:
//! 16-bit weights (MPS runs float32 unless told), a smaller or 4-bit model
//! in an engine built for Metal, shorter generations, `torch.mps`, and the
//! watermark explained with its risk; never CUDA's tools or settings.

use super::inspect_fix;
use super::workload::{growth, large_allocation, workload_fixes};
use crate::catalog;
use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::{gib, pct};
use crate::oom::diagnose::{CauseId, FixId};
use crate::units::MIB;

/// PyTorch's default `PYTORCH_MPS_HIGH_WATERMARK_RATIO` on Apple silicon, in
/// tenths: the limit is this × Metal's `recommendedMaxWorkingSetSize`
/// (aten/src/ATen/mps/MPSAllocator.h, `default_high_watermark_ratio = 1.7`,
/// PyTorch 2.0 and later).
const DEFAULT_RATIO_TENTHS: u64 = 17;

/// The highest ratio PyTorch accepts (MPSAllocator.h,
/// `default_high_watermark_upper_bound = 2.0`: `setHighWatermarkRatio`
/// refuses more).
const MAX_RATIO_TENTHS: u64 = 20;

/// What the three printed figures' rounding can hide (each to 0.01 of its
/// unit) on top of the limit: below it, the process was not at its limit.
fn rounding(limit: u64) -> u64 {
    (limit / 100).max(64 * MIB)
}

/// The catalog's Mac whose recommended working set × the default ratio is
/// the printed limit (to its rounding): the Mac that ran, if the ratio was
/// left alone.
fn mac_of(limit: u64) -> Option<&'static catalog::Gpu> {
    catalog::gpus().iter().filter(|g| g.vendor == catalog::GpuVendor::Apple).find(|g| {
        let at_default = u128::from(g.memory_bytes) * u128::from(DEFAULT_RATIO_TENTHS) / 10;
        at_default.abs_diff(u128::from(limit)) <= u128::from(limit / 200)
    })
}

pub(super) fn mps(f: &Facts, b: &mut Board) {
    let (Some(q), Some(heaps)) = (f.requested, f.r.reserved_bytes) else { return };
    let held = f.r.process_in_use_bytes.unwrap_or(heaps).max(heaps);
    let other = held - heaps;
    match f.r.allowed_bytes {
        Some(limit) => at_the_limit(f, b, q, heaps, other, limit),
        None => {
            b.add(
                CauseId::WeightsTooLarge,
                50,
                format!(
                    "with the high watermark off, Metal itself refused {} while this process held {}: the model, \
                     its cache and what else runs filled the Mac's memory",
                    gib(q),
                    gib(held)
                ),
            );
            b.add(
                CauseId::OtherProcesses,
                30,
                "the GPU shares the Mac's memory: other apps and macOS hold part of it".into(),
            );
            inspect_fix(f, b, None);
        }
    }
    mac_fixes(f, b);
}

/// `Invalid buffer size: X`: one tensor longer than the largest buffer Metal
/// gives this Mac (`maxBufferLength`, which PyTorch checks before it looks
/// at any memory: MPSAllocator.mm, `alloc_buffer_block`). Free memory and
/// the watermark do not bear on it; only smaller tensors do.
pub(super) fn mps_buffer_size(f: &Facts, b: &mut Board) {
    let Some(q) = f.requested else { return };
    b.add(
        CauseId::AllocationLimit,
        90,
        format!(
            "one tensor of {} is longer than the largest single buffer Metal gives this Mac (maxBufferLength), \
             checked before any memory is: one operation's input or output (attention over a long sequence, a large \
             image or video, a whole batch at once), not the memory in use; PYTORCH_MPS_HIGH_WATERMARK_RATIO does \
             not change it",
            gib(q)
        ),
    );
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::AllocationLimit,
        "Fewer images, frames or sequences at once, a lower resolution, or the work in chunks".into(),
        GivesUp::Speed,
        None,
        "for chunk in torch.split(inputs, chunk_size):  # each chunk's tensors under the limit\n    ...".into(),
    ));
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::AllocationLimit,
        "In a diffusers pipeline: attention in slices and the VAE in tiles, so no tensor holds the whole image".into(),
        GivesUp::Speed,
        None,
        "pipe.enable_attention_slicing()\npipe.vae.enable_tiling()".into(),
    ));
}

/// The usual case: this process's Metal memory and the request reach the
/// limit, which sits above the working set Metal recommends.
fn at_the_limit(f: &Facts, b: &mut Board, q: u64, heaps: u64, other: u64, limit: u64) {
    let held = heaps + other;
    let mac = mac_of(limit);
    let limit_text = match mac {
        Some(m) => format!(
            "the {} limit is PyTorch's default 1.7 × the {} Metal recommends on a {} Mac, more than the Mac's \
             memory: past it macOS swaps",
            gib(limit),
            gib(m.memory_bytes),
            m.memory_label
        ),
        None => format!(
            "the {} limit is PYTORCH_MPS_HIGH_WATERMARK_RATIO × the working set Metal recommends for this Mac \
             (with the default ratio, 1.7, that is {})",
            gib(limit),
            gib(limit / DEFAULT_RATIO_TENTHS * 10)
        ),
    };
    if q > limit {
        b.add(
            CauseId::TooLargeOverall,
            95,
            format!("a single allocation of {} is more than the whole {} this process may use", gib(q), gib(limit)),
        );
        b.add(CauseId::TooLargeOverall, 95, limit_text);
        b.fix(fix(
            FixId::SmallerBatch,
            CauseId::TooLargeOverall,
            "Compute it in chunks that each fit".into(),
            GivesUp::Speed,
            None,
            "for chunk in torch.split(inputs, chunk_size):  # each chunk's result well under the limit\n    ...".into(),
        ));
        return;
    }
    if held.saturating_add(q).saturating_add(rounding(limit)) < limit {
        b.add(
            CauseId::OtherProcesses,
            50,
            format!(
                "this process held {} and asked for {}, under its {} limit: Metal itself found no more memory, so \
                 other apps and macOS held the rest of the Mac's",
                gib(held),
                gib(q),
                gib(limit)
            ),
        );
        inspect_fix(f, b, None);
        return;
    }
    let share = q as f64 / limit as f64;
    let full = format!(
        "this process's Metal memory, {} ({} of the {} limit), and the {} it asked for reach the limit",
        gib(held),
        pct(held, limit),
        gib(limit),
        gib(q)
    );
    let small =
        format!("this process's Metal memory was {} ({} of the {} limit)", gib(held), pct(held, limit), gib(limit));
    let g = growth(f);
    if share >= 0.10 {
        b.add(
            g,
            45 + (50.0 * share).min(30.0) as u32,
            format!("a single allocation of {} = {} of the limit: {}", gib(q), pct(q, limit), large_allocation(f)),
        );
        b.add(CauseId::WeightsTooLarge, 40, format!("{full}; the model's weights take most of the rest"));
        if f.r.workload.is_none() {
            b.fix(fix(
                FixId::SmallerBatch,
                g,
                "Send fewer or shorter sequences at once (or a smaller image or batch)".into(),
                GivesUp::Length,
                None,
                "# split the batch: for chunk in batches_of(n): model.generate(**chunk, ...)".into(),
            ));
        }
    } else if other > heaps {
        b.add(
            g,
            55,
            format!(
                "{small} when {} more was asked for, and {} of it is outside PyTorch's heaps (\"other allocations\": MPSGraph's own buffers for \
                 the operations it runs, which grow with the inputs' shapes)",
                gib(q),
                gib(other)
            ),
        );
        b.add(CauseId::WeightsTooLarge, 40, format!("PyTorch's heaps held {}: the weights and tensors", gib(heaps)));
    } else {
        b.add(
            CauseId::WeightsTooLarge,
            60,
            format!(
                "{small} when only {} more was asked for: the model's weights at their dtype (float32 unless loaded \
                 with a dtype) and what it computes filled the Mac's memory",
                gib(q)
            ),
        );
        let how = if f.r.workload.is_none() { ", as a KV cache does token by token" } else { "" };
        b.add(g, 50, format!("the failing request is only {}: memory filled step by step{how}", gib(q)));
    }
    b.add(CauseId::WeightsTooLarge, 40, limit_text.clone());
    b.add(
        CauseId::MemoryCap,
        20,
        format!(
            "{limit_text}; raising it lets the process swap further rather than fit (the message's \
             PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 removes it and can freeze the Mac)"
        ),
    );
    let headroom = if mac.is_some() {
        Some((limit / DEFAULT_RATIO_TENTHS).saturating_mul(MAX_RATIO_TENTHS).saturating_sub(limit))
    } else {
        None
    };
    b.fix(fix(
        FixId::MemoryFraction,
        CauseId::MemoryCap,
        "Last resort: raise the watermark to PyTorch's most, 2.0; past the Mac's memory it swaps, so it runs slowly \
         or freezes the system (never 0.0, which removes the limit)"
            .into(),
        GivesUp::Speed,
        headroom,
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO=2.0 python your_script.py".into(),
    ));
}

/// The Mac's levers in the OOM checklist's order: the weights' dtype, a
/// smaller or 4-bit model where Macs run it natively, the length, and what
/// the session still holds.
fn mac_fixes(f: &Facts, b: &mut Board) {
    if f.r.workload.is_some() {
        workload_fixes(f, b, growth(f));
        mps_empty_cache(b, growth(f));
        return;
    }
    b.fix(fix(
        FixId::WeightFormat,
        CauseId::WeightsTooLarge,
        "Load the weights in 16 bits: a model loaded without a dtype runs float32 on MPS, twice the memory \
         (transformers before 5 loads float32 unless told)"
            .into(),
        GivesUp::Nothing,
        None,
        format!(
            "model = {}.from_pretrained(\"{}\", dtype=torch.float16).to(\"mps\")   # bfloat16 from macOS 14; \
             torch_dtype= before transformers 4.56",
            f.auto_class, f.repo
        ),
    ));
    b.fix(fix(
        FixId::SmallerModel,
        CauseId::WeightsTooLarge,
        "A 4-bit build of the model (or a smaller model) in an engine made for Macs: llama.cpp or Ollama (GGUF, \
         Metal) or MLX; bitsandbytes' 4-bit needs CUDA"
            .into(),
        GivesUp::Quality,
        None,
        "ollama run <model>:<size>-q4_K_M   # or: mlx_lm.generate --model mlx-community/<model>-4bit --prompt \"...\""
            .into(),
    ));
    b.fix(fix(
        FixId::MaxNewTokens,
        CauseId::KvCacheGrowth,
        "Bound the new tokens and truncate long inputs (the cache grows with every token)".into(),
        GivesUp::Length,
        None,
        "inputs = tokenizer(text, truncation=True, max_length=4096, return_tensors=\"pt\").to(\"mps\")\n\
         model.generate(**inputs, max_new_tokens=512)"
            .into(),
    ));
    mps_empty_cache(b, CauseId::KvCacheGrowth);
}

fn mps_empty_cache(b: &mut Board, cause: CauseId) {
    b.fix(fix(
        FixId::EmptyCache,
        cause,
        "Free what the session still holds (an earlier model in a notebook), and watch what MPS holds".into(),
        GivesUp::Nothing,
        None,
        "del model; import gc; gc.collect(); torch.mps.empty_cache()\n\
         print(torch.mps.current_allocated_memory(), torch.mps.driver_allocated_memory())"
            .into(),
    ));
}
