//! llama.cpp's compute buffers: what a GPU's `compute buffer size` holds
//! for the reserved worst-case graph — the layer's activations (Ollama's
//! GraphSize for llama-style graphs, MLA's query side), the weight staged
//! for host-resident experts, and the copies a pipeline of GPUs keeps.

use super::{Devices, FlashAttention, Options, Plan, SplitMode, cache, gpu_layers, host};
use crate::kv::LayerKv;

/// The compute buffer of one GPU (Ollama `fs/ggml/ggml.go` `GraphSize` for
/// llama-style graphs: `4 · ubatch · max(1 + 4·embd + attention, embd + vocab)`,
/// where attention is `ctx · (1 + heads)` without flash attention).
pub(super) fn compute_buffer(p: &Plan, o: Options, ctx: u64, with_output: bool) -> u64 {
    let t = &p.model.arch.text;
    if let crate::arch::AttentionKind::Mla(m) = t.attention {
        return mla_compute_buffer(t, m, o, ctx, with_output);
    }
    let attention = match o.flash_attention {
        FlashAttention::On => 0,
        FlashAttention::Off => ctx.saturating_mul(t.num_heads.saturating_add(1)),
    };
    let layer = t.hidden_size.saturating_mul(4).saturating_add(1).saturating_add(attention);
    let output = if with_output { t.hidden_size.saturating_add(t.vocab_size) } else { 0 };
    o.ubatch().saturating_mul(4).saturating_mul(layer.max(output))
}

/// The compute buffer of one GPU for an MLA model (`deepseek2` graphs whose
/// GGUF carries `wk_b`/`wv_b`: DeepSeek V2/V3, Kimi K2), as llama.cpp
/// reserves it (vendored by llama-cpp-python 0.3.36, llama.cpp 0c1e57098):
/// the worst-case graph of `T = min(n_ctx, n_ubatch)` tokens over the whole
/// cache (`K`, n_ctx padded to 256, src/llama-context.cpp). ggml-alloc puts a
/// tensor in a freed gap only when one is large enough, and `mul_mat`,
/// `concat` and `flash_attn_ext` never reuse their inputs
/// (ggml/src/ggml-alloc.c), so the query side of an MLA layer piles up
/// (src/models/deepseek2.cpp, F32): the layer input and its norm (2·E), the
/// query's low rank `Lq` (`q_a`), the query `H·(N + P)`, its rotated part
/// `H·P`, the absorbed `q_nope × wk_b` `H·R` and their concatenation
/// `H·(R + P)`. The mask beside it, F16 with flash attention (`2·K·T`) or
/// F32 without (`4·K·T`); without flash attention the scores
/// `4·K·T·H` too (src/llama-graph.cpp `build_attn_mha`), and the transposed
/// latent V (`2·K·R`) when the gap the query leaves cannot hold them. A
/// real mainline log (b5331, DeepSeek-V3-0324, `-ub 1024 -c 16384 -fa`,
/// fixture `llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on`) logs 788 MiB on
/// each GPU without staged experts, 766 MiB from this.
fn mla_compute_buffer(t: &crate::arch::TextModel, m: crate::arch::Mla, o: Options, ctx: u64, with_output: bool) -> u64 {
    let tokens = o.ubatch().min(ctx);
    let kv = ctx.div_ceil(256).saturating_mul(256);
    let (e, h, lq, r, rope, nope) = (
        t.hidden_size,
        t.num_heads,
        m.q_lora_rank.unwrap_or(0),
        m.kv_lora_rank,
        m.qk_rope_head_dim,
        m.qk_nope_head_dim,
    );
    let f32s = |width: u64| tokens.saturating_mul(4).saturating_mul(width);
    let query = f32s(e.saturating_mul(2).saturating_add(lq).saturating_add(
        h.saturating_mul(nope.saturating_add(rope.saturating_mul(3)).saturating_add(r.saturating_mul(2))),
    ));
    // What the query's inputs free once it is built.
    let gap =
        f32s(e.saturating_add(lq).saturating_add(h.saturating_mul(nope.saturating_add(rope * 2).saturating_add(r))));
    let (mask, scores) = match o.flash_attention {
        FlashAttention::On => (kv.saturating_mul(tokens).saturating_mul(2), 0),
        FlashAttention::Off => {
            let scores = f32s(kv.saturating_mul(h));
            let v = kv.saturating_mul(r).saturating_mul(2);
            (
                kv.saturating_mul(tokens).saturating_mul(4),
                (if scores > gap { scores } else { 0 }).saturating_add(if v > gap { v } else { 0 }),
            )
        }
    };
    let layer = query.saturating_add(scores);
    let output = if with_output { f32s(e.saturating_add(t.vocab_size)) } else { 0 };
    layer.max(output).saturating_add(mask)
}

/// ggml's scheduler runs an op whose weight sits in host memory on the first
/// GPU backend that wants it (`ggml_backend_sched_backend_id_from_cur`,
/// ggml/src/ggml-backend.cpp: "check if a backend with higher prio wants to
/// offload the op"); CUDA wants it when the op's batch — `ne[1]` of a
/// `MUL_MAT`, `ne[2]` of a `MUL_MAT_ID`, the ubatch's tokens in the reserved
/// prompt graph — is at least `GGML_OP_OFFLOAD_MIN_BATCH`, 32 by default
/// (ggml/src/ggml-cuda/ggml-cuda.cu `ggml_backend_cuda_device_offload_op`;
/// `get_rows`, the token embedding's op, never). The weight is then an input
/// of its own split, copied into that GPU's compute buffer
/// (`ggml_dup_tensor_layout`, "#…#0" tensors; a new split per such weight
/// lets the next copy reuse the memory). So the first GPU's compute buffer
/// holds the largest such weight beside the activations live at its matmul:
/// the expert FFN's input and output for the ubatch's chosen experts and the
/// residual stream (F32), or a dense FFN's. llama.cpp as vendored by
/// llama-cpp-python 0.3.36.
pub const OP_OFFLOAD_MIN_BATCH: u64 = 32;

pub(super) fn staged_weight(p: &Plan, o: Options, d: &Devices, g: usize) -> Option<u64> {
    let first = d.used.iter().position(|&u| u)?;
    let staged = d.weights.largest_cpu_matrix;
    if g != first || staged == 0 || o.ubatch() < OP_OFFLOAD_MIN_BATCH {
        return None;
    }
    let t = &p.model.arch.text;
    let per_token = match t.moe {
        Some(m) => m
            .experts_per_token
            .saturating_mul(t.hidden_size.saturating_add(m.expert_intermediate_size))
            .saturating_add(t.hidden_size),
        None => t.hidden_size.saturating_mul(2).saturating_add(t.intermediate_size),
    };
    Some(staged.saturating_add(per_token.saturating_mul(o.ubatch()).saturating_mul(4)))
}

/// `GGML_SCHED_MAX_COPIES` (ggml/src/ggml-backend.cpp): the copies of each
/// split's inputs the scheduler keeps when it runs the GPUs as a pipeline.
pub const SCHED_COPIES: u64 = 4;

/// Whether llama.cpp runs the GPUs as a pipeline (src/llama-context.cpp,
/// "pipeline parallelism enabled (n_copies=4)"): several devices, every
/// layer and the output on them (`n_gpu_layers > n_layer`), split by layer,
/// the KV cache offloaded and no tensor overrides (`--n-cpu-moe` is one);
/// CUDA and ROCm devices have the async compute and events it needs.
pub(super) fn pipelined(p: &Plan, o: Options) -> bool {
    let (layers, output) = gpu_layers(p, o);
    p.scenario.gpus.len() > 1
        && output
        && layers >= p.kv_layers.len() as u64
        && o.split_mode == SplitMode::Layer
        && !o.no_kv_offload
        && o.tensor_overrides.is_empty()
        && o.n_cpu_moe == 0
        && p.scenario.gpus.iter().all(|g| g.context_bytes() > 0)
}

/// What a pipeline adds to a GPU's compute buffer: its split's inputs are
/// copied in `SCHED_COPIES` times and marked as outputs, so none is freed or
/// reused (ggml-backend.cpp `ggml_backend_sched_split_graph`, pass 5): the
/// activations it receives (the token embeddings on the first GPU, the
/// previous GPU's residual stream on the others, F32 hidden × n_ubatch),
/// every copy, and the KQ masks, all but the one the graph holds anyway.
/// A real two-GPU Command-R log (`llamacpp-old-two-gpus`, "n_copies=4") logs
/// 672.01 MiB on CUDA0: 584 MiB without the copies, 672 with them.
pub(super) fn pipeline_copies(p: &Plan, o: Options, kv: &[LayerKv], cells: cache::Cells) -> u64 {
    if !pipelined(p, o) {
        return 0;
    }
    let activations = p.model.arch.text.hidden_size.saturating_mul(o.ubatch()).saturating_mul(4);
    let masks = host::masks(o, kv, cells);
    activations.saturating_mul(SCHED_COPIES).saturating_add(masks.saturating_mul(SCHED_COPIES - 1))
}
