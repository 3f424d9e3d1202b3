//! What a llama.cpp plan keeps in host memory besides the weights: the KV
//! cache and state of the layers left on the CPU, and the host compute
//! buffer; with the CPU weights, the host RAM the plan needs.

use super::graph::SET_ROWS_BUILD;
use super::{Devices, Options, Plan, cache, cells, kv_layers, n_ctx, slots};
use crate::kv::LayerKv;

/// The host compute buffer: the graph's inputs, which live on the host —
/// the token embeddings `get_rows` reads from the CPU copy of `token_embd`
/// (F32, hidden × n_ubatch), the KQ mask of each cache (n_kv × n_ubatch;
/// F16 with flash attention, else F32: src/llama-graph.cpp
/// `build_attn_inp_kq_mask`), the token ids, positions and output ids (4
/// bytes × n_ubatch each). Measured: 12.01 and 72.01 MiB for Mistral 7B at
/// n_ctx 2048 and 32768 (fedora-copr/logdetective#106) are 8 MiB of
/// embeddings plus 4 and 64 MiB of mask. Without a GPU backend
/// ([`Options::no_gpu_backend`]) the CPU's buffer holds the whole graph,
/// inputs and all, as one GPU holding every layer and the output does.
fn host_compute(p: &Plan, o: Options, kv: &[LayerKv], cells: cache::Cells, d: &Devices) -> u64 {
    let all_offloaded = d.assignment.layers.iter().all(Option::is_some) && d.assignment.output.is_some();
    if o.ollama_engine && all_offloaded {
        return own_engine_host_compute(p, o);
    }
    if o.no_gpu_backend {
        let layers = p.model.arch.text.num_layers();
        let part = super::graph::Part { start: 0, layers, first: true, output: true, staged: None, host: None };
        return super::compute_buffer(p, o, n_ctx(p, o), cells, part, super::slots(p, o));
    }
    let ub = o.ubatch();
    let rows = p.model.arch.text.hidden_size.saturating_mul(ub).saturating_mul(4);
    // With the embeddings input beside the token rows ([`EMBD_INPUT_BUILD`]).
    let embd = if embeddings_input(o) { rows.saturating_mul(2) } else { rows };
    // With GPUs run as a pipeline, the scheduler keeps `GGML_SCHED_MAX_COPIES`
    // copies of every graph input where it lives (ggml-backend.cpp, pass 6).
    let leaves = masks(p, o, kv, cells).saturating_add(3 * 4 * ub).saturating_add(store_indices(p, o, kv));
    embd.saturating_add(leaves.saturating_mul(if super::pipelined(p, o) { super::SCHED_COPIES } else { 1 }))
}

/// The first build whose graph holds the embeddings input (`inp->embd`,
/// F32, hidden × n_ubatch) beside the token rows in every reserve:
/// ggml-org/llama.cpp#18898 builds both paths with
/// `ggml_build_forward_select` (src/llama-graph.cpp `build_inp_embd`), and a
/// graph input lives on the CPU backend (ggml-backend.cpp, `1.inp`), so in
/// the host compute buffer; llama-cpp-python 0.3.36's copy. Its build is not
/// in hand: after b7467 (#18148, merged before #18898 was opened on
/// 2026-01-17), and logs of b8164 – b11151 carry it (E × ubatch × 4 more:
/// gpt-oss-20b 5.62, Granite 8.00, Qwen3.5-27B 10.01 and 40.02, Gemma 4
/// 21.99 MiB); b7342's log does not. Builds 7468 – 8163 take it, the
/// larger figure.
pub const EMBD_INPUT_BUILD: u64 = 7468;

/// Whether the graph holds the embeddings input ([`EMBD_INPUT_BUILD`]).
/// Not Ollama's own Go engine, whose graph is its own.
pub(super) fn embeddings_input(o: Options) -> bool {
    o.fork == super::Fork::Mainline && !o.ollama_engine && o.build.is_none_or(|b| b >= EMBD_INPUT_BUILD)
}

/// The CPU backend's compute buffer of Ollama's own Go engine
/// ([`Options::ollama_engine`]) when the GPUs hold every layer and the
/// output: the token embeddings alone, `hidden × BatchSize` F32. The Go
/// backend keeps `token_embd` in the input (CPU) buffer type
/// (ml/backend/ggml/ggml.go `createTensor(tensor{source: t}, input.bts,
/// -1)`), so its `GET_ROWS` is the CPU's one node; the graph's inputs (mask,
/// positions, output rows) are tensors of the input context, each allocated
/// in a buffer of its own when made (`Context.newTensor`,
/// `ggml_backend_buft_alloc_buffer`), and counted in no `compute graph`
/// figure (only `Cache[layer]` for a layer's context), v0.11.10 – v0.24.0.
/// gpt-oss-120b on ROCm (v0.11.x, `BatchSize:512`, hidden 2,880): 5.625 MiB,
/// logged `compute graph device=CPU size="5.6 MiB"`. With layers on the
/// CPU, its buffer is those layers' graph, which is not modelled.
fn own_engine_host_compute(p: &Plan, o: Options) -> u64 {
    p.model.arch.text.hidden_size.saturating_mul(o.ubatch()).saturating_mul(4)
}

/// The KQ masks of a ubatch: one per kind of cache (full, sliding window),
/// n_kv × n_ubatch, F16 with flash attention, else F32
/// (src/llama-graph.cpp `build_attn_inp_kq_mask`; F32 either way before
/// b9410: [`Options::mask_bytes`]); with DeepSeek sparse attention
/// ([`cache::dsa_indexer`]) the indexer's too, of the full cache's cells
/// ([`super::compute::indexer_mask`]). The b10505 GLM-5.2 log's
/// `CUDA_Host compute buffer size = 1524.07 MiB`: 750 MiB for each mask at
/// 768,000 cells, 24.07 of embeddings, inputs and ids (24.01 planned).
pub(super) fn masks(p: &Plan, o: Options, kv: &[LayerKv], cells: cache::Cells) -> u64 {
    let ub = o.ubatch();
    let mask = o.mask_bytes();
    let per_stream = |w: Option<u64>| cells.of(w) / cells.streams.max(1);
    let full = kv.iter().any(|l| l.bytes_per_token > 0 && l.window.is_none());
    let window = kv.iter().find_map(|l| l.window.filter(|_| l.bytes_per_token > 0));
    let kv_cells =
        u64::from(full).saturating_mul(per_stream(None)).saturating_add(window.map_or(0, |w| per_stream(Some(w))));
    let per_ubatch = |cells_per_stream: u64| {
        cells_per_stream.saturating_mul(cells.streams).saturating_mul(ub / cells.streams.max(1))
    };
    let indexer = if super::sparse_attention(p, o) && full {
        super::compute::indexer_mask(per_ubatch(per_stream(None)))
    } else {
        0
    };
    per_ubatch(kv_cells).saturating_mul(mask).saturating_add(indexer)
}

/// The KV stores' row indices, inputs like the masks, one pair per kind of
/// cache (full, sliding window) from [`SET_ROWS_BUILD`] (src/llama-graph.cpp
/// `build_attn_inp_kv_impl` / `_iswa`; src/llama-kv-cache.cpp
/// `build_input_k_idxs`, `build_input_v_idxs`, llama.cpp 7407 – 8211): K's
/// one I64 per token; V's one per token with flash attention, else one per
/// token and value element (`n_tokens × n_embd_v_gqa_max()`: without flash
/// attention V is stored transposed, `v_trans = !flash_attn` in
/// src/llama-model.cpp `create_memory`, a row per element, since #14363,
/// b5913). An MLA cache without V (from [`super::VLESS_MLA_BUILD`]) stores
/// none, and its indices are read by no node. ik_llama.cpp stores with
/// `ggml_cpy` into views (no indices). Measured: Ollama's Phi-4 14B at
/// `-ub 512` without flash attention (1,280 value elements), 23.01 MiB
/// logged: 18.01 of embeddings, mask and ids, and 5 MiB of V indices; its
/// Gemma 2 2B at `-ub 256`, 22.26 MiB: two caches' V indices of 1,024
/// elements, 4 MiB.
pub(super) fn store_indices(p: &Plan, o: Options, kv: &[LayerKv]) -> u64 {
    if o.fork != super::Fork::Mainline || o.build.is_some_and(|b| b < SET_ROWS_BUILD) {
        return 0;
    }
    let v = match (value_width(p, o), o.flash_attention) {
        (0, _) => 0,
        (_, super::FlashAttention::On) => 1,
        (width, super::FlashAttention::Off) => width,
    };
    let full = kv.iter().any(|l| l.bytes_per_token > 0 && l.window.is_none());
    let window = kv.iter().any(|l| l.bytes_per_token > 0 && l.window.is_some());
    let kinds = u64::from(full) + u64::from(window);
    kinds.saturating_mul(8).saturating_mul(o.ubatch()).saturating_mul(v.saturating_add(1))
}

/// `hparams.n_embd_v_gqa_max()`: the widest layer's V per token (elements),
/// as the mainline cache holds it: each KV head's values; an MLA latent's
/// `kv_lora_rank` before [`super::VLESS_MLA_BUILD`] and none after; every
/// head's values for a GGUF run as multi-head attention
/// ([`super::heads_cached`]).
fn value_width(p: &Plan, o: Options) -> u64 {
    let text = &p.model.arch.text;
    if let crate::arch::AttentionKind::Mla(m) = text.attention {
        return if super::heads_cached(p, o) {
            text.num_heads.saturating_mul(m.v_head_dim)
        } else if o.build.is_some_and(|b| b < super::VLESS_MLA_BUILD) {
            m.kv_lora_rank
        } else {
            0
        };
    }
    let values = |part, _, elements| if part == crate::kv::CachePart::Value { elements } else { 0 };
    crate::kv::layer_costs_by(text, 1, values).iter().map(|l| l.bytes_per_token).max().unwrap_or(0)
}

/// What stays in host memory besides the weights.
pub(super) struct Host {
    pub kv: u64,
    pub state: u64,
    pub compute: u64,
}

/// The KV cache and state of the layers kept on the CPU (every layer with
/// `--no-kv-offload`) and the host compute buffer.
pub(super) fn host(p: &Plan, o: Options, d: &Devices) -> Host {
    let s = slots(p, o);
    let cells = cells(p, o, n_ctx(p, o), s);
    let kv = kv_layers(p, o);
    let on_host = |i: usize| o.no_kv_offload || d.assignment.layers.get(i).copied().flatten().is_none();
    let n = p.kv_layers.len();
    let host_kv: Vec<LayerKv> = (0..n).filter(|&i| on_host(i)).map(|i| kv[i]).collect();
    let host_state: Vec<_> = (0..n).filter(|&i| on_host(i)).filter_map(|i| p.state_layers.get(i).copied()).collect();
    Host {
        kv: cells.bytes(&host_kv),
        state: crate::state::sequence_bytes(&host_state).saturating_mul(s),
        compute: host_compute(p, o, &kv, cells, d),
    }
}

/// The host RAM a plan needs: CPU weights, host KV cache and state, the
/// host compute buffer (`Report::host_ram_bytes`); `d`: the plan's devices.
pub(crate) fn host_ram_need(p: &Plan, o: Options, d: &Devices) -> u64 {
    let h = host(p, o, d);
    d.cpu_weights().saturating_add(h.kv).saturating_add(h.state).saturating_add(h.compute)
}

/// The host memory a plan may use: the host's RAM when given; on unified
/// memory (`GpuSlot::unified_bytes`), what each unified GPU's memory leaves
/// once its GPU side (`gpu_totals`: model, KV and compute buffers, context)
/// is allocated, since both come out of the same memory. Before the
/// operating system's own share, which the plan cannot know.
pub(crate) fn host_ram_limit(p: &Plan, o: Options, gpu_totals: &[u64]) -> Option<u64> {
    o.host_ram_bytes.or_else(|| {
        let mut unified =
            p.scenario.gpus.iter().zip(gpu_totals).filter_map(|(g, &t)| Some(g.unified_bytes?.saturating_sub(t)));
        let first = unified.next()?;
        Some(unified.fold(first, u64::saturating_add))
    })
}
