//! Steps 1–5 for MLX on a Mac (mlx, mlx-lm, LM Studio's MLX engine). The
//! GPU shares the Mac's memory and MLX's messages carry no capacity or free
//! figure, so the causes come from what MLX keeps there: the weights, the
//! KV caches of every sequence in flight, the arrays of the step being
//! computed, and the buffers its allocator keeps for reuse. The fixes are
//! mlx-lm's own flags (mlx_lm/generate.py, server.py at mlx-lm 0.32.0),
//! MLX's memory functions (python/src/memory.cpp at mlx 0.32.2) and macOS's
//! wired limit (mlx-lm's README, "Large Models"); never CUDA's or PyTorch's.

use crate::fixes::GivesUp;
use crate::oom::diagnose::board::{Board, fix};
use crate::oom::diagnose::facts::Facts;
use crate::oom::diagnose::text::gib;
use crate::oom::diagnose::{CauseId, FixId};

/// mlx-lm's prefill chunk: `--prefill-step-size` defaults to 2048 tokens
/// (mlx_lm/server.py, `generate_step`'s `prefill_step_size`, mlx-lm 0.32.0).
const PREFILL_STEP_DEFAULT: u32 = 2048;

/// `[metal::malloc] Attempting to allocate N bytes which is greater than
/// the maximum allowed buffer size of M bytes`: MLX checks one array against
/// Metal's `maxBufferLength` before it looks at any memory
/// (mlx/backend/metal/allocator.cpp, `MetalAllocator::malloc`), so free
/// memory and MLX's memory or wired limits do not bear on it; only a smaller
/// array does. In a language model the arrays that grow that large are a
/// layer's KV cache (mlx-lm's `KVCache` keeps one keys and one values array
/// per layer, batch × heads × tokens × head size) and a prefill chunk's
/// attention scores.
pub(super) fn mlx_buffer_size(f: &Facts, b: &mut Board) {
    let Some(q) = f.requested else { return };
    let limit = f.r.max_buffer_bytes.map_or_else(
        || "the largest single buffer Metal gives this Mac (maxBufferLength)".to_owned(),
        |m| format!("the {} Metal gives this Mac in one buffer (maxBufferLength)", gib(m)),
    );
    let times =
        f.r.max_buffer_bytes
            .filter(|&m| m > 0)
            .map_or(String::new(), |m| format!(" ({:.1} × the limit)", q as f64 / m as f64));
    b.add(
        CauseId::AllocationLimit,
        90,
        format!(
            "one MLX array of {}{times} is longer than {limit}, checked before any memory is: a limit on one array, \
             not on the memory in use, so memory freed elsewhere, mx.set_memory_limit or iogpu.wired_limit_mb do \
             not change it",
            gib(q)
        ),
    );
    b.add(
        CauseId::AllocationLimit,
        90,
        "in a language model the arrays that grow that long are one layer's KV cache (keys or values for every \
         sequence of the batch and its whole length, one array each) and a prefill chunk's attention scores"
            .into(),
    );
    b.fix(fix(
        FixId::Concurrency,
        CauseId::AllocationLimit,
        "Fewer sequences at once: a batch's KV cache is one array per layer for all of them".into(),
        GivesUp::Speed,
        None,
        "mlx_lm.server ... --decode-concurrency 4 --prompt-concurrency 1   # LM Studio: fewer parallel requests".into(),
    ));
    b.fix(fix(
        FixId::SmallerContext,
        CauseId::AllocationLimit,
        "A shorter context: each layer's cache array grows with it (a rotating cache of --max-kv-size tokens \
         stops it)"
            .into(),
        GivesUp::Length,
        None,
        "mlx_lm.generate ... --max-kv-size 8192   # LM Studio: a shorter context length when loading the model".into(),
    ));
    b.fix(fix(
        FixId::KvCacheDtype,
        CauseId::AllocationLimit,
        "Quantize the KV cache: 8 bits is about half of 16-bit keys and values".into(),
        GivesUp::CachePrecision,
        None,
        "mlx_lm.generate ... --kv-bits 8".into(),
    ));
    b.fix(fix(
        FixId::SmallerBatch,
        CauseId::AllocationLimit,
        format!(
            "Prefill in smaller steps: the attention scores of one step grow with its length \
             ({PREFILL_STEP_DEFAULT} tokens by default)"
        ),
        GivesUp::Speed,
        None,
        "mlx_lm.server ... --prefill-step-size 512".into(),
    ));
}

/// `[METAL] Command buffer execution failed: Insufficient Memory
/// (…kIOGPUCommandBufferCallbackErrorOutOfMemory)`, or `[malloc] Unable to
/// allocate N bytes`: Metal could not have all the memory a step needed at
/// once. Without figures, the parts MLX keeps are the causes to check, the
/// cache of every sequence in flight first: a batched generator decodes many
/// at once (mlx-lm's `BatchGenerator`, `completion_batch_size` 32 by default,
/// mlx_lm/generate.py at 0.32.0).
pub(super) fn mlx_out_of_memory(f: &Facts, b: &mut Board) {
    let what = match f.requested {
        Some(q) => format!("Metal gave no buffer for {} more", gib(q)),
        None => "Metal could not run a command buffer for lack of memory (kIOGPUCommandBufferCallbackErrorOutOfMemory)"
            .into(),
    };
    b.add(
        CauseId::KvCacheGrowth,
        55,
        format!(
            "{what}: the weights, the KV cache of every sequence in flight and the step's arrays together passed \
             what macOS lets the GPU hold; the cache grows with every token of every sequence, and a batched \
             generator decodes many at once (mlx-lm's BatchGenerator: up to 32)"
        ),
    );
    b.add(
        CauseId::WeightsTooLarge,
        40,
        "the weights stay resident for the whole run: a model near the Mac's GPU share (Metal's recommended working \
         set) leaves little for the cache"
            .into(),
    );
    b.add(
        CauseId::OtherProcesses,
        30,
        "the GPU shares the Mac's memory: other apps, other loaded models and the buffers MLX keeps for reuse (its \
         cache) hold part of it"
            .into(),
    );
    b.add(
        CauseId::MemoryCap,
        20,
        "macOS caps what the GPU may wire below the Mac's memory; sysctl iogpu.wired_limit_mb raises the cap, at the \
         cost of what the system keeps for itself"
            .into(),
    );
    b.fix(fix(
        FixId::Concurrency,
        CauseId::KvCacheGrowth,
        "Fewer sequences at once: each carries its own KV cache".into(),
        GivesUp::Speed,
        None,
        "mlx_lm.server ... --decode-concurrency 4 --prompt-concurrency 1\n\
         # in Python: batch_generate(model, tokenizer, prompts, completion_batch_size=4, prefill_batch_size=1)"
            .into(),
    ));
    b.fix(fix(
        FixId::SmallerContext,
        CauseId::KvCacheGrowth,
        "Bound the cache: a rotating cache of --max-kv-size tokens, and fewer new tokens".into(),
        GivesUp::Length,
        None,
        "mlx_lm.generate ... --max-kv-size 4096 --max-tokens 512".into(),
    ));
    b.fix(fix(
        FixId::KvCacheDtype,
        CauseId::KvCacheGrowth,
        "Quantize the KV cache to 8 bits".into(),
        GivesUp::CachePrecision,
        None,
        "mlx_lm.generate ... --kv-bits 8".into(),
    ));
    b.fix(fix(
        FixId::SmallerModel,
        CauseId::WeightsTooLarge,
        "A smaller model, or the same one in fewer bits".into(),
        GivesUp::Quality,
        None,
        "mlx_lm.convert --hf-path <model> -q --q-bits 4   # or an mlx-community/<model>-4bit build".into(),
    ));
    b.fix(fix(
        FixId::EmptyCache,
        CauseId::OtherProcesses,
        "Cap the buffers MLX keeps for reuse, and quit other apps and models".into(),
        GivesUp::Speed,
        None,
        "import mlx.core as mx; mx.set_cache_limit(2 * 1024**3)   # or mx.clear_cache() between requests".into(),
    ));
    b.fix(fix(
        FixId::MemoryFraction,
        CauseId::MemoryCap,
        "Last resort: let the GPU wire more of the Mac's memory (macOS 15+); past what the system needs it swaps or \
         freezes"
            .into(),
        GivesUp::Speed,
        None,
        "sudo sysctl iogpu.wired_limit_mb=<MB, below the Mac's memory>".into(),
    ));
}
