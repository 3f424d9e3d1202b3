//! llama.cpp's compute buffers: what a GPU's `compute buffer size` holds
//! for the reserved worst-case graph — the layer's activations (Ollama's
//! GraphSize for llama-style graphs, MLA's query side), the weight staged
//! for host-resident experts, and the copies a pipeline of GPUs keeps.

use super::graph::{self, Part, Shape};
use super::{Devices, FlashAttention, Options, Plan, SplitMode, cache, gpu_layers, host};
use crate::kv::LayerKv;

/// The compute buffer of one GPU holding `part` of the graph: ggml-alloc
/// replayed over llama-style layers (`graph.rs`), MLA's query side, else
/// Ollama's closed form (`fs/ggml/ggml.go` `GraphSize` for llama-style
/// graphs: `4 · ubatch · max(1 + 4·embd + attention, embd + vocab)`, where
/// attention is `ctx · (1 + heads)` without flash attention).
pub(super) fn compute_buffer(
    p: &Plan,
    o: Options,
    ctx: u64,
    cache_cells: super::cache::Cells,
    part: Part,
    slots: u64,
) -> u64 {
    let t = &p.model.arch.text;
    let with_output = part.output;
    // With one stream per slot (`kv_unified = false`) llama.cpp reserves one
    // sequence per stream, each attending over its own stream's cells
    // (src/llama-graph.cpp `build_kq_mask`, b7407 – b8211): a smaller graph
    // than one over the whole cache. Not modelled: no log has tested it
    // (Gemma 2's GPU buffer peaks at its logits), and a graph that shrinks
    // with more slots makes the solver's concurrency boundary depend on the
    // slots it would set (`properties::solver_answers_are_boundaries`); the
    // whole cache is the larger, safe figure.
    let streams = 1;
    if let crate::arch::AttentionKind::Mla(m) = t.attention
        && !super::heads_cached(p, o)
    {
        return mla_compute_buffer(p, m, o, ctx, part, slots);
    }
    if let Some(shape) = Shape::of(p, &o) {
        let window = p.kv_layers.iter().find_map(|l| l.window);
        let full = cache::pad(ctx);
        let cells = graph::Cells { full, window: window.map_or(full, |w| cache_cells.of(Some(w)) / streams) };
        return graph::compute_buffer(shape, &o, cells, part, reserved_outputs(o, slots));
    }
    // ik's `-amb` computes the scores a head at a time (`ik::score_heads`).
    let scored = super::ik::score_heads(o, t.num_heads, t.num_kv_heads, ctx, o.ubatch(), false);
    let attention = match o.flash_attention {
        FlashAttention::On => 0,
        FlashAttention::Off => ctx.saturating_mul(scored.saturating_add(1)),
    };
    let layer = t.hidden_size.saturating_mul(4).saturating_add(1).saturating_add(attention);
    let layer = layer.max(super::ik::moe_ffn_width(t, o).unwrap_or(0));
    let layer = layer.max(gated_ffn_width(&p.model.arch, o).unwrap_or(0));
    let output = if with_output { t.hidden_size.saturating_add(t.vocab_size) } else { 0 };
    let activations = o
        .ubatch()
        .saturating_mul(4)
        .saturating_mul(layer)
        .max(reserved_outputs(o, slots).saturating_mul(4).saturating_mul(output));
    // With flash attention the closed form leaves out the KQ mask, an input
    // alive through the whole graph, the logits' too: F16 on the GPU
    // ([`graph::mask_cells`], as the replayed models lay it); without flash
    // attention `attention` counts it. Whether the mask sits beside the
    // logits is ggml-alloc's placement, which only a replay knows: GLM-4.5,
    // Qwen3-MoE and gpt-oss replay (`graph::Experts`) from the GLU builds
    // on. ik_llama.cpp's figures keep the closed form they were checked
    // with.
    let mask = match o.flash_attention {
        FlashAttention::On if part.layers > 0 && o.fork == super::Fork::Mainline => {
            graph::mask_cells(cache::pad(ctx), o.ubatch()).saturating_mul(2)
        }
        _ => 0,
    };
    activations.saturating_add(mask)
}

/// The first build whose server reserves the prompt graph for the outputs
/// it will ask for, not one per token: ggml-org/llama.cpp#23861 ("llama:
/// limit max outputs of `llama_context`") gives the context
/// `n_outputs_max` and `sched_reserve` builds the worst-case ubatch with
/// `n_outputs_pp = min(n_tokens, n_outputs_max)` (src/llama-context.cpp);
/// llama-server sets it to `min(n_batch, n_parallel · (1 + n_draft))`
/// (tools/server/server-context.cpp `server_output_limits`,
/// common/speculative.cpp `common_speculative_get_output_limits`), so the
/// logits and the last rows of the residual stream shrink from the ubatch
/// to a few rows. Read in llama-cpp-python 0.3.36's vendored llama.cpp. The
/// pull request is listed among the changes from b9442 to b9500 (an
/// AutoTuner release review, code index id 71258345050); its exact build is
/// not in hand, so b9500, the first build known to carry it, is the bound:
/// builds 9443–9499 are planned with every token an output, the larger
/// figure. A plan that names no build is today's llama-server, as every
/// other build-dated rule takes it: one output per slot. Ollama from 0.30
/// starts llama-server with the limit too (its Gemma 4 log prints
/// `n_outputs_max = 1`, fixture
/// `ollama-030-llamaserver-vulkan-gemma4-26b-a4b-kv-on-cpu`). A log without
/// a build is planned by the newest build that prints its lines
/// (`startup::plan`). llama-cli and the other tools keep an output per
/// token; the plan is the server's.
pub const OUTPUTS_MAX_BUILD: u64 = 9500;

/// The output rows of the reserved prompt graph ([`OUTPUTS_MAX_BUILD`]):
/// one per slot from that build (a speculative drafter's extra rows per
/// slot are not modelled: they are a few rows of `E + V` beside a layer of
/// `T` rows), else one per token. `slots`: the context's, as checked (a
/// plan asked whether more sequences fit is checked with their slots).
pub(super) fn reserved_outputs(o: Options, slots: u64) -> u64 {
    let tokens = o.ubatch();
    if o.fork == super::Fork::Mainline && o.build.is_none_or(|b| b >= OUTPUTS_MAX_BUILD) {
        return slots.max(1).min(o.n_batch.max(1)).min(tokens);
    }
    tokens
}

/// The widest point of a dense gated FFN layer (elements per token), for
/// the models the replay does not build (Gemma 2 and 3, Phi-3, Cohere,
/// Qwen3.5's gated delta-net hybrids …): src/llama-graph.cpp `build_ffn`
/// with `LLM_FFN_PAR` (SiLU or GELU) from the GLU builds
/// ([`graph::GLU_BUILD`]) makes gate and up (`MUL_MAT`) and their
/// `ggml_swiglu_split` / `ggml_geglu_split` product, none of which
/// ggml-alloc runs in place (ggml-alloc.c `ggml_op_can_inplace`), while the
/// FFN's input (kept for the residual add: src/models/qwen35.cpp
/// `ffn_residual`, gemma3.cpp `sa_out`) and its norm are alive: `2·E + 3·F`.
/// Where the reserved graph outputs a row per token the logits are wider;
/// with one per slot (from [`OUTPUTS_MAX_BUILD`]) this is the layer's peak,
/// which Ollama's closed form (`4·E` wide) leaves out. A b11151 ROCm log of
/// Qwen3.5-27B (`-ub 512`, 262,144 cells, flash attention, one output) logs
/// 378.02 MiB: 122.00 for this layer and 256 for the F16 mask; the replayed
/// Llama-style layers peak at the same three tensors. MoE layers keep the
/// closed form (their experts' widths are `ik::moe_ffn_width`'s).
fn gated_ffn_width(arch: &crate::arch::Architecture, o: Options) -> Option<u64> {
    let t = &arch.text;
    let dense = t.moe.is_none() && t.mlp_gated;
    let glu = o.build.is_none_or(|b| b >= graph::GLU_BUILD);
    (dense && glu && o.fork == super::Fork::Mainline)
        .then(|| t.hidden_size.saturating_mul(2).saturating_add(t.intermediate_size.saturating_mul(3)))
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
/// latent V (`2·K·R`) when the gap the query leaves cannot hold them. The
/// output layer's normed rows and logits, `E + V` for each row the reserved
/// graph outputs ([`reserved_outputs`]). A real mainline log (b5331,
/// DeepSeek-V3-0324, `-ub 1024 -c 16384 -fa`, fixture
/// `llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on`) logs 788 MiB on each GPU
/// without staged experts, 766 MiB from this. DeepSeek sparse attention
/// adds [`dsa_buffer`].
fn mla_compute_buffer(p: &Plan, m: crate::arch::Mla, o: Options, ctx: u64, part: Part, slots: u64) -> u64 {
    let t = &p.model.arch.text;
    let tokens = o.ubatch().min(ctx);
    let kv = cache::pad(ctx);
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
            // ik's `-amb`: the latent attention's scores by head groups.
            let scored = super::ik::score_heads(o, h, h, kv, tokens, true);
            let scores = f32s(kv.saturating_mul(scored));
            let v = kv.saturating_mul(r).saturating_mul(2);
            (
                kv.saturating_mul(tokens).saturating_mul(4),
                (if scores > gap { scores } else { 0 }).saturating_add(if v > gap { v } else { 0 }),
            )
        }
    };
    // ik_llama.cpp's `-mla 2/3` with flash attention decompresses K and V
    // on a prompt batch instead (`ik.rs`), beside the layer's input and its
    // norm.
    let layer = match super::ik::mla_decompressed(t, o, ctx) {
        Some(attention) => attention.saturating_add(f32s(e.saturating_mul(2))),
        None => query.saturating_add(scores),
    };
    let (dsa_layer, dsa_mask) = dsa_buffer(p, o, kv, tokens, mask, part);
    let rows = reserved_outputs(o, slots).min(tokens);
    let output = if part.output { rows.saturating_mul(4).saturating_mul(e.saturating_add(t.vocab_size)) } else { 0 };
    layer.saturating_add(dsa_layer).max(output).saturating_add(mask).saturating_add(dsa_mask)
}

/// The lightning indexer's KQ mask, F16, of `cells` (`K × T`).
pub(super) fn indexer_mask(cells: u64) -> u64 {
    cells.saturating_mul(2)
}

/// What DeepSeek sparse attention adds to an MLA layer's compute buffer
/// ([`cache::dsa_indexer`]; src/models/glm-dsa.cpp and src/llama-graph.cpp
/// `build_attn` with `top_k`, `build_attn_inp_k_dsa_impl`, llama.cpp
/// 0c1e57098): the layer's work and the indexer's mask. The indexer's KQ
/// mask is a second graph input, alive through the graph, `K × T` in F16
/// (`GGML_OP_LIGHTNING_INDEXER` takes only an F16 mask, ggml/src/ggml.c).
/// A layer with a "full" indexer scores every cell for every token,
/// `ggml_lightning_indexer`'s F32 `K × T`, then keeps the top k of each
/// row; the sparse mask is then `ggml_fill` of the latent's mask (its size,
/// `mask`), which `set_rows` and `add` rewrite in place. `ggml_set_rows`
/// lists the row indices before the tensor it writes (ggml.c, "order is
/// weird due to legacy reasons"), so the graph scores before it fills, and
/// the fill takes the freed score's place; a layer that shares an earlier
/// layer's top k (GLM-5.2's) fills alone, without the indexer's mask, which
/// only the scoring reads. The b10505 GLM-5.2 log (4 × RTX
/// PRO 6000, 768,000 cells, `-ub 512`, flash attention) logs 3,252.07 MiB
/// on CUDA1 (9 layers, 2 of them full): 750 MiB of latent mask, 750 of
/// indexer mask, 1,500 of scores, 204 of the query side, 48 not accounted
/// for (the top-k indices and their zeros, 4 MiB a layer, placed by
/// ggml-alloc); 954 MiB before this. Returns `(layer, mask)`.
fn dsa_buffer(p: &Plan, o: Options, kv: u64, tokens: u64, mask: u64, part: Part) -> (u64, u64) {
    if !super::sparse_attention(p, o) || part.layers == 0 {
        return (0, 0);
    }
    let cells = kv.saturating_mul(tokens);
    let (start, n) = (usize::try_from(part.start).unwrap_or(usize::MAX), usize::try_from(part.layers).unwrap_or(0));
    let scored = p.model.arch.text.layers.iter().skip(start).take(n).any(|l| !l.shape.indexer_shared);
    if scored { (cells.saturating_mul(4).max(mask), indexer_mask(cells)) } else { (mask, 0) }
}

/// What lies beneath the copies [`staged_weight`] stages on a GPU of a
/// model with DeepSeek sparse attention ([`cache::dsa_indexer`]): the
/// graph's inputs, alive through every layer (the latent's KQ mask and the
/// indexer's), and the hole the filled mask leaves (the mask's size) under
/// the attention output and residual still alive when the layer's experts
/// come: ggml-alloc's best fit puts a copy larger than the hole above them
/// (ggml/src/ggml-alloc.c `ggml_dyn_tallocr_alloc`). The b10505 GLM-5.2
/// log's CUDA0 (`--n-cpu-moe 54`): 5,124.07 MiB, the staged expert copy and
/// its activations (2,829 MiB) on 750 of latent mask, 750 of indexer mask
/// and the 750 MiB hole. Other graphs keep the staged figure alone (their
/// masks are small beside it, and no log has shown them beneath it), as
/// does a GPU that holds no layer (no attention reads a mask there).
pub(super) fn beneath_staged(p: &Plan, o: Options, ctx: u64, part: Part, staged: u64) -> u64 {
    if !super::sparse_attention(p, o) || super::heads_cached(p, o) || part.layers == 0 {
        return 0;
    }
    let tokens = o.ubatch().min(ctx);
    let kv = cache::pad(ctx);
    let mask = kv.saturating_mul(tokens).saturating_mul(o.mask_bytes());
    let (_, indexer) = dsa_buffer(p, o, kv, tokens, mask, part);
    let hole = if staged > mask { mask } else { 0 };
    mask.saturating_add(indexer).saturating_add(hole)
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
/// for routed experts, where ggml-alloc puts each expert copy (`staged_moe`);
/// for a dense FFN, its input and output. llama.cpp as vendored by
/// llama-cpp-python 0.3.9 (32 fixed, ggml-cuda.cu `min_batch_size`) and
/// 0.3.36 (32 unless the `GGML_OP_OFFLOAD_MIN_BATCH` variable says otherwise).
pub const OP_OFFLOAD_MIN_BATCH: u64 = 32;

/// The first build whose Metal backend offloads host weights' matmuls
/// (ggml-org/llama.cpp#15906, 0f0a3c28, b6441: "metal : make the backend
/// async", `offload_op` as CUDA's).
pub const METAL_OFFLOAD_BUILD: u64 = 6441;

/// The copy staged on the first GPU (`OP_OFFLOAD_MIN_BATCH`) for a host
/// weight, beside the activations its op reads and writes. The output head
/// in host memory is staged too: the reserved graph has an output per token
/// (src/llama-context.cpp@c531edfa:285, `n_outputs = ubatch_pp.n_tokens`),
/// so the logits' `MUL_MAT` batch is the ubatch, and the head's copy sits
/// beside `result_norm` and the logits (`E·T` and `V·T`, F32). A real b5398
/// Vulkan log, Qwen3-235B-A22B Q3_K_S at `-ngl 93` (the output layer on the
/// CPU; ggml-vulkan.cpp@c531edfa:9926 `offload_op`, `ne[1] >= 32`), logs
/// 791.61 MiB: the Q6_K head's 486.86 + 8 + 296.75. Not with an ACCEL
/// backend ([`Options::blas`]): ggml-backend.cpp@c531edfa:697 gives a weight
/// the first backend that supports its buffer, the BLAS one, and offloads
/// only from the last (the CPU, :771), so BLAS keeps its `MUL_MAT`s; the experts'
/// `MUL_MAT_ID`, which BLAS does not run, still come to the GPU.
pub(super) fn staged_weight(p: &Plan, o: Options, d: &Devices, g: usize) -> Option<u64> {
    let first = d.used.iter().position(|&u| u)?;
    let metal = p.scenario.gpus.get(g).is_some_and(|s| s.vendor == Some(crate::catalog::GpuVendor::Apple));
    // Metal offloads `MUL_MAT` and `MUL_MAT_ID` of a batch ≥ 32 from b6441
    // (#15906, ggml-metal.m `offload_op`), nothing before (c531edfa: `false`)
    // nor in ik_llama.cpp (its Metal has no `offload_op`).
    let metal_keeps = metal && (o.fork == super::Fork::Ik || o.build.is_some_and(|b| b < METAL_OFFLOAD_BUILD));
    if g != first || metal_keeps || o.no_gpu_backend {
        return None;
    }
    // Under BLAS only the experts' `MUL_MAT_ID`, which BLAS does not run,
    // come to the GPU: it keeps every host `MUL_MAT` (ggml-blas.cpp@c531edfa
    // `supports_op`), the head's among them. Apple builds link Accelerate's
    // BLAS by default (ggml/CMakeLists.txt `GGML_BLAS_DEFAULT`). Without an
    // `-ot` rule's tensor list a MoE layer's largest matrix stands for its
    // experts (their stacks dwarf attention's).
    let blas = o.blas || metal;
    let t = &p.model.arch.text;
    let experts = d.weights.largest_cpu_experts.iter().map(|&(gate_up, down)| gate_up.max(down)).max();
    let staged = match (blas, experts) {
        (false, _) => d.weights.largest_cpu_matrix,
        (true, Some(e)) => e,
        (true, None) if t.moe.is_some() => d.weights.largest_cpu_matrix,
        (true, None) => 0,
    };
    let head = if blas { 0 } else { d.weights.cpu_head };
    if staged.max(head) == 0 || o.ubatch() < OP_OFFLOAD_MIN_BATCH {
        return None;
    }
    let f32s = |width: u64| width.saturating_mul(o.ubatch()).saturating_mul(4);
    let logits = if head == 0 { 0 } else { head.saturating_add(f32s(t.hidden_size.saturating_add(t.vocab_size))) };
    // ik_llama.cpp takes an expert op to the GPU only for a batch whose
    // tokens per expert reach the threshold, and never a repacked weight.
    let ik_keeps = o.fork == super::Fork::Ik
        && !super::ik::stages_experts(
            o,
            o.ubatch(),
            t.moe.map_or(1, |m| m.num_experts),
            t.moe.map_or(1, |m| m.experts_per_token),
        );
    if staged == 0 || ik_keeps {
        return (logits > 0).then_some(logits);
    }
    let layer = match t.moe {
        Some(m) => {
            let k = m.experts_per_token;
            let (input, ffn, out) = (
                f32s(t.hidden_size),
                f32s(k.saturating_mul(m.expert_intermediate_size)),
                f32s(k.saturating_mul(t.hidden_size)),
            );
            // A layer the first GPU also holds (or one on the CPU, whose
            // matmuls all come to it): the copies land above the layer's
            // activations and each frees back to the end, so the largest one
            // sits beside the input, gate·up and the down output.
            let beside = |w: u64| w.saturating_add(input).saturating_add(ffn).saturating_add(out);
            let mut peak = beside(staged);
            // A layer on another GPU: the first GPU is empty when its experts
            // come, and the gate copy takes the bottom.
            for (home, &(gate_up, down)) in d.weights.largest_cpu_experts.iter().enumerate() {
                if home == first || home + 1 == d.weights.largest_cpu_experts.len() || gate_up == 0 || down == 0 {
                    continue;
                }
                let glu = o.fork == super::Fork::Mainline && o.build.is_none_or(|b| b >= super::graph::GLU_BUILD);
                let stage = MoeStage { gate_up, down, input, selected: f32s(m.num_experts), ffn, out, glu };
                peak = peak.max(staged_moe(stage));
            }
            // ik's `-fmoe`: one op takes the gate and up copies at once, in
            // every layer whose gate and up share a type; where every layer
            // does, the unfused staging above never happens.
            let pair = d.weights.largest_cpu_gate_up;
            if super::ik::fused_moe(o) && pair > 0 {
                let down = d.weights.largest_cpu_experts.iter().map(|&(_, down)| down).max().unwrap_or(0);
                let stage =
                    MoeStage { gate_up: pair, down, input, selected: f32s(m.num_experts), ffn, out, glu: false };
                let fused = staged_fused_moe(stage);
                peak = if d.weights.cpu_gate_up_differ { peak.max(fused) } else { fused };
            }
            peak
        }
        None => staged.saturating_add(f32s(t.hidden_size.saturating_mul(2).saturating_add(t.intermediate_size))),
    };
    Some(layer.max(logits))
}

/// The tensors of one MoE layer the first GPU holds when its routed experts
/// stay in host memory (bytes): the largest gate or up expert tensor, the
/// largest down one, the FFN input `E·T` (F32), the router's argsort
/// `n_expert·T` (int32; the top-k view and its copy span it), the gate, up
/// and their product `k·F·T`, and the down output `k·E·T`.
pub(super) struct MoeStage {
    pub gate_up: u64,
    pub down: u64,
    pub input: u64,
    pub selected: u64,
    pub ffn: u64,
    pub out: u64,
    /// The gated product is its own `GGML_OP_GLU` node, which ggml-alloc
    /// never runs in place (mainline from [`super::graph::GLU_BUILD`]).
    pub glu: bool,
}

/// The first GPU's compute buffer for a MoE layer whose experts stay in host
/// memory while the layer lives on another GPU (the first GPU holds nothing
/// else when its experts come), as ggml-alloc lays it out (ggml/src/ggml-alloc.c
/// `ggml_gallocr_alloc_graph_impl`, `ggml_dyn_tallocr_alloc`: best fit among
/// the free blocks but the last, else the end; a freed block merges with its
/// neighbours). Each `MUL_MAT_ID` with a host weight opens a split whose
/// inputs are copied in at its start in the order of the op's sources
/// (ggml-backend.cpp `ggml_backend_sched_split_graph`, pass 5, and the
/// `graph_copy` it builds): the gate experts, the FFN input, the top-k
/// selection. The graph visits gate, then up, then down (src/llama-graph.cpp
/// `build_moe_ffn`, `ggml_mul(ggml_silu(gate), up)`: silu in place on gate,
/// the product in place on silu). So the up copy takes the gate copy's
/// place, and once up has run its copy and the input are freed: a hole of
/// `gate_up + input` below the selection and the product. The down copy
/// goes there if it fits; a larger one goes above them all. The down output
/// then takes the hole or the end. Reproduces the real b5331 log exactly
/// (`scripts/ggml-alloc-sim.py`, `moe_host_experts`): DeepSeek-V3-0324
/// UD-Q2_K_XL, `-ub 1024`, q2_K gate/up experts of 1,176 MiB and a q4_K down
/// of 2,016 MiB: 1176 + 28 + 1 + 64 + 2016 = 3285 MiB on CUDA0, 3285.00
/// logged. llama.cpp since the GLU ops ([`MoeStage::glu`]: `ggml_swiglu_split`,
/// ggml-org/llama.cpp#14158, src/llama-graph.cpp@a0ed91a `build_moe_ffn`;
/// `GGML_OP_GLU` is not among ggml-alloc.c's `ggml_op_can_inplace`)
/// computes the product out of place: once up has run, its copy and the
/// input are freed, the product takes the bottom of that hole, and gate and
/// up are freed above it, so the hole left (`gate_up + input − ffn`) no
/// longer holds a down copy as large as the gate's, which goes on top of
/// the selection. A real `--fit`-era log (MiniMax-M2.1 IQ4_NL on four RTX
/// 3090s, experts of blk 17–25 and 33–41 on the CPU, `-ub 512`; fixture
/// `llamacpp-fit-minimax-m21-iq4nl-4x3090-ot-ts1111`) prints 1,302 MiB on
/// CUDA0 in its memory breakdown: 648 + 6 + 0.5 + 648 = 1,302.5, rounded
/// down (726.5 in place).
pub(super) fn staged_moe(s: MoeStage) -> u64 {
    let mut a = Arena::new();
    let gate_w = a.alloc(s.gate_up);
    let input = a.alloc(s.input);
    a.alloc(s.selected);
    // The gate's output; before GLU silu and the product in place on it.
    let gate = a.alloc(s.ffn);
    a.free(gate_w, s.gate_up);
    let up_w = a.alloc(s.gate_up);
    let up = a.alloc(s.ffn);
    a.free(up_w, s.gate_up);
    a.free(input, s.input);
    if s.glu {
        a.alloc(s.ffn);
        a.free(gate, s.ffn);
    }
    a.free(up, s.ffn);
    a.alloc(s.down);
    a.alloc(s.out);
    a.max
}

/// [`staged_moe`] for ik_llama.cpp's fused up/gate op (`-fmoe`,
/// `GGML_OP_MOE_FUSED_UP_GATE`, ggml.c@18b0375 `ggml_moe_up_gate`): its
/// sources — the up and gate experts (`gate_up`: both), the FFN input and
/// the selection — are copied in at its split's start, and it writes one
/// `k·F·T` product where the unfused pair wrote two (src/llama.cpp@18b0375
/// `llm_build_moe_ffn`, when up and gate share a type). The down copy and
/// its output follow once the pair and the input are freed.
pub(super) fn staged_fused_moe(s: MoeStage) -> u64 {
    let mut a = Arena::new();
    let pair = a.alloc(s.gate_up);
    let input = a.alloc(s.input);
    a.alloc(s.selected);
    a.alloc(s.ffn);
    a.free(pair, s.gate_up);
    a.free(input, s.input);
    a.alloc(s.down);
    a.alloc(s.out);
    a.max
}

/// ggml-alloc's dynamic allocator (ggml/src/ggml-alloc.c
/// `ggml_dyn_tallocr_alloc`, `ggml_dyn_tallocr_free_tensor`) for a handful of
/// tensors (sizes already aligned): free blocks by offset, the last one open.
pub(super) struct Arena {
    free: Vec<(u64, u64)>,
    pub max: u64,
}

impl Arena {
    pub(super) fn new() -> Self {
        let mut free = Vec::with_capacity(16);
        free.push((0, u64::MAX));
        Arena { free, max: 0 }
    }

    pub(super) fn alloc(&mut self, size: u64) -> u64 {
        let last = self.free.len() - 1;
        let (mut best, mut best_size) = (last, u64::MAX);
        for (i, &(_, z)) in self.free[..last].iter().enumerate() {
            if z >= size && z <= best_size {
                (best, best_size) = (i, z);
            }
        }
        let (off, z) = self.free[best];
        if z == size {
            self.free.remove(best);
        } else {
            self.free[best] = (off.saturating_add(size), z.saturating_sub(size));
        }
        self.max = self.max.max(off.saturating_add(size));
        off
    }

    pub(super) fn free(&mut self, off: u64, size: u64) {
        let end = off.saturating_add(size);
        for i in 0..self.free.len() {
            let (o, z) = self.free[i];
            if o.saturating_add(z) == off {
                self.free[i].1 = z.saturating_add(size);
                if let Some(&(no, nz)) = self.free.get(i + 1)
                    && end == no
                {
                    self.free[i].1 = self.free[i].1.saturating_add(nz);
                    self.free.remove(i + 1);
                }
                return;
            }
            if end == o {
                self.free[i] = (off, z.saturating_add(size));
                if i > 0 && self.free[i - 1].0.saturating_add(self.free[i - 1].1) == off {
                    self.free[i - 1].1 = self.free[i - 1].1.saturating_add(self.free[i].1);
                    self.free.remove(i);
                }
                return;
            }
        }
        let at = self.free.iter().position(|&(o, _)| o > off).unwrap_or(self.free.len());
        self.free.insert(at, (off, size));
    }
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
pub(super) fn pipeline_copies(p: &Plan, o: Options, kv: &[LayerKv], cells: cache::Cells, first: bool) -> u64 {
    if !pipelined(p, o) {
        return 0;
    }
    let activations = p.model.arch.text.hidden_size.saturating_mul(o.ubatch()).saturating_mul(4);
    let masks = host::masks(p, o, kv, cells);
    if o.fork == super::Fork::Ik && o.flash_attention == FlashAttention::On {
        return activations.saturating_mul(SCHED_COPIES).saturating_add(super::ik::pipelined_masks(o, masks, first));
    }
    activations.saturating_mul(SCHED_COPIES).saturating_add(masks.saturating_mul(SCHED_COPIES - 1))
}

#[cfg(test)]
mod tests {
    use super::{MoeStage, staged_moe};

    const MIB: u64 = 1 << 20;

    /// DeepSeek-V3-0324 UD-Q2_K_XL on b5331, `-ub 1024`, experts of blk 27–60
    /// on the CPU: 256 experts of 2048 × 7168, gate and up q2_K (84 B per
    /// 256), the largest down q4_K (144 B per 256). CUDA0 logs 3285.00 MiB
    /// (fixture `llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on`).
    #[test]
    fn the_down_copy_that_does_not_fit_the_gate_hole_goes_on_top() {
        let experts = 256 * 2048 * 7168 / 256;
        let (t, e, f, k) = (1024, 7168, 2048, 8);
        let stage = |down| MoeStage {
            gate_up: 84 * experts,
            down,
            input: 4 * e * t,
            selected: 4 * 256 * t,
            ffn: 4 * k * f * t,
            out: 4 * k * e * t,
            glu: false,
        };
        assert_eq!(staged_moe(stage(144 * experts)), 3285 * MIB);
        // A q3_K down (1,540 MiB) does not fit the 1,204 MiB hole either.
        assert_eq!(staged_moe(stage(110 * experts)), 2809 * MIB);
    }

    /// MiniMax-M2.1 IQ4_NL at `-ub 512` (256 experts of 1536 × 3072, 18 B per
    /// 32 weights: 648 MiB a stack, top 8) on a GLU build: the product takes
    /// the bottom of the up copy's hole, so the down copy goes on top of the
    /// selection, 648 + 6 + 0.5 + 648 MiB; CUDA0's memory breakdown prints
    /// 1,302 (fixture `llamacpp-fit-minimax-m21-iq4nl-4x3090-ot-ts1111`).
    /// Silu and the product in place (before GLU) leave the hole whole.
    #[test]
    fn the_glu_product_pushes_the_down_copy_on_top() {
        let (t, e, f, k) = (512, 3072, 1536, 8);
        let w = 256 * e * f / 32 * 18;
        let stage = |glu| MoeStage {
            gate_up: w,
            down: w,
            input: 4 * e * t,
            selected: 4 * 256 * t,
            ffn: 4 * k * f * t,
            out: 4 * k * e * t,
            glu,
        };
        assert_eq!(staged_moe(stage(true)), 2 * w + 4 * t * (e + 256));
        assert_eq!(staged_moe(stage(true)) * 2 / MIB, 2605);
        assert_eq!(staged_moe(stage(false)) * 2 / MIB, 1453);
    }

    /// Equal gate, up and down copies (Qwen3-235B-A22B Q6_K, `-ub 512`): the
    /// down copy takes the gate's place and its output goes on top, as the
    /// rule before had it (weight + input + k·F + k·E), plus the selection.
    #[test]
    fn equal_experts_reuse_the_gate_hole() {
        let (t, e, f, k) = (512, 4096, 1536, 8);
        let w = 128 * e * f / 256 * 210;
        let stage = MoeStage {
            gate_up: w,
            down: w,
            input: 4 * e * t,
            selected: 4 * 128 * t,
            ffn: 4 * k * f * t,
            out: 4 * k * e * t,
            glu: false,
        };
        assert_eq!(staged_moe(stage), w + 4 * t * (e + 128 + k * f + k * e));
    }
}
