//! A GPU's compute buffer for a llama-style model (dense, or Qwen3-MoE,
//! GLM-4.5 and gpt-oss experts: [`Experts`]), as ggml-alloc
//! measures it: the peak of its best-fit allocator replayed over the graph
//! llama.cpp reserves for a prompt ubatch (`graph_reserve(n_ubatch, …,
//! n_outputs = n_ubatch)`, every row an output, F32 activations). The
//! closed form it replaces (Ollama's GraphSize) puts the logits at offset 0;
//! where they land depends on the holes the last layer's FFN leaves, so the
//! replay is the rule (`scripts/ggml-alloc-sim.py` is the same replay in
//! Python, with traces; /work/research-session5.md, issue 35).
//!
//! The allocator (ggml/src/ggml-alloc.c as vendored by llama-cpp-python
//! 0.3.10 and 0.3.12): sizes padded to the buffer's alignment; best fit among
//! the free blocks but the last, else the last (`ggml_dyn_tallocr_alloc`); a
//! node reuses its parent's memory in place when its op may
//! (`ggml_op_can_inplace`: ADD, MUL, RMS_NORM, UNARY, ROPE, SOFT_MAX, …; not
//! MUL_MAT, CONT, CPY, GET_ROWS, FLASH_ATTN_EXT or GLU), the parent is not a
//! view, has the same size, this one child and no views
//! (`ggml_gallocr_allocate_node`); a parent is freed once its children and
//! views are done. A split's inputs are copies allocated at its start, in the
//! order its nodes first use them (ggml-backend.cpp
//! `ggml_backend_sched_split_graph`); a weight in host memory opens a split
//! of its own ([`Staged`]). Views, the GPU's weights and the KV cache stores
//! take nothing here.

use super::{F16_MASK_BUILD, FlashAttention, Fork, Options, Plan};
use crate::arch::{AttentionKind, Family, LayerAttention};

/// The first build whose FFN computes the gated product with
/// `ggml_swiglu_split` / `ggml_swiglu` (a `GGML_OP_GLU` node, which ggml-alloc
/// never runs in place) instead of silu in place and the product in place
/// (ggml-org/llama.cpp#14158 and #14181, src/llama-graph.cpp `build_ffn`):
/// a0535ffa0 "ggml : implement REGLU/GEGLU/SWIGLU ops (#14158)", b5776 by
/// `git rev-list --count` in a fork with llama.cpp's full history (checked
/// against six logged build/commit pairs); its parent bd9c981d7 = b5775 (a
/// real log in ggml-org/llama.cpp#14448) builds silu × up. The b5781 log's
/// `graph nodes = 999` is 32 layers of 31 nodes + 7, where silu × up gives
/// 32 per layer.
pub const GLU_BUILD: u64 = 5776;

/// ggml-cuda's buffer alignment (ggml-cuda.cu
/// `ggml_backend_cuda_buffer_type_get_alignment`: 128). Vulkan's
/// `minStorageBufferOffsetAlignment` (16–256) gives the same peaks here.
const ALIGN: u64 = 128;

/// The layers replayed at most: the first, one in the steady state and the
/// last (with the output rows) give the peak of any depth. Checked with
/// `scripts/ggml-alloc-sim.py` against 4, 5, 12, 13 and 32 layers on 1,700
/// points (Llama 8B/70B, Mistral 7B, Qwen2.5 7B, GLM-4 32B, Phi-4 shapes;
/// ubatch 256–4096; 1 k–128 k cells; flash attention, GLU and the mask's
/// build on and off).
const MAX_LAYERS: u64 = 3;

/// How a layer's FFN is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ffn {
    /// Separate gate and up projections (Llama, Mistral, Qwen).
    GateUp,
    /// One `[2F]` up projection split in two (GLM-4, Phi-3): before GLU,
    /// two `ggml_cont` halves, silu and the product in place.
    FusedUp,
}

/// The widths of a layer (elements per token).
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub embd: u64,
    pub ffn_width: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub vocab: u64,
    pub ffn: Ffn,
    /// GLM-4's norms after attention and after the FFN.
    pub sandwich: bool,
    /// The routed experts of a mixture-of-experts layer (`build_moe_ffn`).
    pub experts: Option<Experts>,
    /// Which layers attend over the sliding-window cache, as llama.cpp's
    /// `set_swa_pattern(n)` says (src/llama-hparams.cpp: layer `il` slides
    /// when `il % n < n - 1`; gpt-oss's 2, src/llama-model.cpp
    /// `LLM_ARCH_OPENAI_MOE`): each kind of layer reads its own mask and
    /// store indices (`build_attn_inp_kv_unified_iswa`). 0: none slides.
    pub swa_pattern: u64,
    /// How a layer is built around its attention and FFN.
    pub block: Block,
    /// The cache's rotations ([`Rot`]).
    pub rot: Rot,
    /// Qwen3's per-head RMS norms of Q and K (their weights matter where a
    /// layer is left in host memory, [`Host`]).
    pub qk_norm: bool,
}

/// How a layer is built around its attention and FFN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Block {
    /// `llm_build_llama` and its kin: Q, K, V, RoPE, attention, `wo`, the
    /// residual add, the FFN (or [`Experts`]), the residual add.
    Llama,
    /// Gemma 4 ([`Global`]; src/models/gemma4.cpp).
    Gemma4(Global),
}

/// Gemma 4's layer as src/models/gemma4.cpp builds it (llama.cpp 0c1e57098,
/// vendored by llama-cpp-python 0.3.36), without per-layer inputs or layers
/// that reuse an earlier layer's cache (E2B/E4B keep the closed form):
/// Q, then K with their per-head norms (an RMS norm of a reshaped
/// `mul_mat`, a view, is a new tensor; the weight's `mul` and the RoPE run
/// in place), V normed without a weight (read from K's projection where
/// the keys are the values); the attention's output normed in place before
/// the residual add. A MoE layer runs the dense MLP beside the experts, both
/// from the attention's output: the router's own input (an RMS norm, scaled
/// in place) gives the logits `build_moe_ffn` takes as `probs_in`, whose
/// weights it expands into the graph at once ("call early so that topk-moe
/// can be used"), then the experts (`ffn_gate_up_exps`, one fused
/// `mul_mat_id` — src/llama-model.cpp's Gemma 4 tensors and gguf-py's
/// `FFN_GATE_UP_EXP` mapping "# gemma4" — its GEGLU product, `down`, and
/// `ffn_down_exps.scale`'s rows: a repeat and a `get_rows`, multiplied in
/// place, conversion/gemma.py `per_expert_scale`) and their sum; the dense
/// MLP is expanded only by the layer's output, after them. Its norms, the
/// sum of both, the residual add and the layer scale run in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Global {
    /// The global layers' head width (`global_head_dim`).
    pub head_dim: u64,
    /// The global layers' KV heads (`num_global_key_value_heads`).
    pub kv_heads: u64,
    /// The global layers' keys are their values (`attention_k_eq_v`).
    pub k_eq_v: bool,
}

/// A MoE layer as src/llama-graph.cpp `build_moe_ffn` builds it for
/// qwen3moe, glm4moe and gpt-oss (llama-cpp-python 0.3.16's vendored
/// llama.cpp, `llm_build_qwen3moe` / `llm_build_glm4_moe` /
/// `llm_build_openai_moe_iswa` in src/llama-model.cpp).
#[derive(Debug, Clone, Copy)]
pub(super) struct Experts {
    pub count: u64,
    pub used: u64,
    /// One expert's FFN width (`n_ff_exp`).
    pub width: u64,
    /// The shared expert's width (GLM-4.5's `ffn_*_shexp`; 0: none).
    pub shared_width: u64,
    /// Leading layers with a dense FFN of `Shape::ffn_width` (GLM-4.5's
    /// `leading_dense_block_count`).
    pub dense_lead: u64,
    /// How the router weighs the experts it selects.
    pub gating: Gating,
    /// gpt-oss's expert biases: `ggml_add_id` after each `mul_mat_id`,
    /// which ggml-alloc runs in place (ggml-alloc.c `ggml_op_can_inplace`
    /// lists `GGML_OP_ADD_ID`, 0.3.16): they take memory only as the copies
    /// of host biases ([`Staged`]).
    pub biases: bool,
}

/// The router's gating (`LLAMA_EXPERT_GATING_FUNC_TYPE_*`,
/// src/llama-graph.cpp `build_moe_ffn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gating {
    /// Qwen3: softmax over the experts in place, the selected weights
    /// normalised (`norm_w`: their sum and a division).
    Softmax,
    /// GLM-4.5: sigmoid in place, a selection bias (`exp_probs_b`), the
    /// weights normalised and scaled.
    Sigmoid,
    /// gpt-oss (`SOFTMAX_WEIGHT`): the biased logits select; a softmax over
    /// the selected rows only, not normalised.
    SoftmaxWeight,
}

/// The first build that stores K and V with `ggml_set_rows` by default, its
/// row indices (`k_idxs`/`v_idxs`) inputs of the graph: a4569c41 (b6071,
/// "llama : enable LLAMA_SET_ROWS=1 by default", #14959; from a70c8a0c,
/// b5817, only with `LLAMA_SET_ROWS=1`), src/llama-kv-cache.cpp
/// `build_input_k_idxs`, `build_input_v_idxs`. The replay gives each one I64
/// per token. GLM-4.5-Air at b6168: 3,584.09 MiB is 3,584 + the positions,
/// output ids and both indices at `-ub 4096` (96 KiB), 3,584.03 without.
pub const SET_ROWS_BUILD: u64 = 6071;

/// The first build known to rotate a quantized cache's keys and values:
/// 744c0c731 "llama : rotate activations for better quantization"
/// (ggml-org/llama.cpp#21038, merged 2026-04-01) came between b8611 and
/// b8645 (a binding's upgrade from b8611 to b8645 lists "KV cache attention
/// rotation"; the b8586 log of tests/fixtures/startup prints no `attn_rot_k`
/// line, the b8999 log `attn_rot_k = 1`); b8645 is the first build known to
/// carry it.
pub const ATTN_ROT_BUILD: u64 = 8645;

/// The Hadamard rotations of a quantized cache (src/llama-kv-cache.cpp, the
/// constructor's `attn_rot_k` / `attn_rot_v`: a quantized `type_k` /
/// `type_v`, every layer's head of one size, a multiple of 64, and no
/// `LLAMA_ATTN_ROT_DISABLE`; `build_input_k_rot`, `build_input_v_rot`;
/// src/llama-graph.cpp `build_attn`; llama.cpp 0c1e57098 as llama-cpp-python
/// 0.3.36 vendors it): each an F32 `n × n` input of the graph, K's `n` the
/// largest power of two from 64 that divides the head, V's 64. Q and K are
/// multiplied by K's after RoPE, V by V's, and the attention's output by
/// V's again: a new tensor each (`llama_mul_mat_hadamard`: a `mul_mat` over
/// a reshape). Bytes of each matrix; 0 where that side is not rotated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Rot {
    pub k: u64,
    pub v: u64,
}

impl Rot {
    /// The rotations of a cache of types `types` over heads of `head_dim`
    /// (K) and `v_head_dim` (V), by `o`'s fork and build (none named: the
    /// newest).
    pub(super) fn of(types: super::cache::Types, head_dim: u64, v_head_dim: u64, o: &Options) -> Rot {
        let on = o.fork == Fork::Mainline && o.build.is_none_or(|b| b >= ATTN_ROT_BUILD);
        let rotated = |t: Option<super::CacheType>, dim: u64| {
            on && t.is_some_and(super::CacheType::is_quantized) && dim > 0 && dim.is_multiple_of(64)
        };
        let k = if rotated(types.k, head_dim) {
            // The largest power of two from 64 that divides the head.
            let n = 64 << (head_dim / 64).trailing_zeros();
            n * n * 4
        } else {
            0
        };
        let v = if rotated(types.v, v_head_dim) { 64 * 64 * 4 } else { 0 };
        Rot { k, v }
    }
}

impl Shape {
    /// The model's layer when the replay knows its graph: mainline
    /// llama.cpp, standard attention over the whole cache in every layer,
    /// no experts, no recurrent state, and a family built by
    /// `llm_build_llama` / `llm_build_qwen2` / `llm_build_qwen3` (their
    /// q/k norms and biases run in place or as the rope does) or
    /// `llm_build_glm4` / `llm_build_phi3` (src/llama-model.cpp; Phi-3's
    /// fused QKV is taken as three projections: the Ollama Phi-4 log gives
    /// 368.00 MiB either way, 353.01 logged), or Granite's, Llama's with
    /// its scales run in place (src/models/granite.cpp; ggml-alloc.c
    /// `ggml_op_can_inplace` lists `GGML_OP_SCALE`, llama-cpp-python 0.3.36's
    /// copy: the b9106 log's 204.00 MiB); or the MoE layers of
    /// [`Experts::of`]. The rest keep the closed form
    /// (`compute::compute_buffer`).
    pub(super) fn of(p: &Plan, o: &Options) -> Option<Shape> {
        let t = &p.model.arch.text;
        let shape = |ffn, sandwich, experts, swa_pattern| Shape {
            embd: t.hidden_size,
            ffn_width: t.intermediate_size,
            heads: t.num_heads,
            kv_heads: t.num_kv_heads,
            head_dim: t.head_dim,
            vocab: t.vocab_size,
            ffn,
            sandwich,
            experts,
            swa_pattern,
            block: Block::Llama,
            rot: Rot::of(super::types(p, *o), t.head_dim, t.v_head_dim, o),
            qk_norm: matches!(p.model.arch.family, Family::Qwen3 | Family::Qwen3Moe),
        };
        if p.model.arch.family == Family::Gemma4 {
            return gemma4(p, o);
        }
        if let Some(experts) = Experts::of(p, o) {
            return Some(shape(Ffn::GateUp, false, Some(experts), swa_pattern(p)?));
        }
        let ffn = match p.model.arch.family {
            Family::Llama | Family::Mistral | Family::Qwen2 | Family::Qwen3 | Family::Granite => Ffn::GateUp,
            f if super::tensors::fuses_gate_up(f) => Ffn::FusedUp,
            _ => return None,
        };
        let plain = o.fork == Fork::Mainline
            && matches!(t.attention, AttentionKind::Standard { .. })
            && t.moe.is_none()
            && t.recurrent.is_none()
            && t.mlp_gated
            && swa_pattern(p) == Some(0);
        plain.then(|| shape(ffn, p.model.arch.family == Family::Glm4, None, 0))
    }

    /// Whether layer `il` of the model reads the sliding-window cache.
    fn slides(self, il: u64) -> bool {
        let n = self.swa_pattern;
        n > 0 && il % n < n - 1
    }
}

/// Gemma 4's layers ([`Global`]) on mainline llama.cpp: every sliding
/// layer alike and every global layer alike, in `set_swa_pattern`'s order,
/// each with a cache of its own and no per-layer input.
fn gemma4(p: &Plan, o: &Options) -> Option<Shape> {
    let t = &p.model.arch.text;
    let swa_pattern = swa_pattern(p).filter(|&n| n > 0)?;
    let widths = |l: &crate::arch::LayerSpec| {
        let head_dim = if l.shape.head_dim == 0 { t.head_dim } else { l.shape.head_dim };
        (head_dim, l.kv_heads(t.num_kv_heads), l.shape.k_eq_v)
    };
    let kinds = |sliding: bool| {
        let mut of_kind = t.layers.iter().filter(move |l| matches!(l.attention, LayerAttention::Sliding(_)) == sliding);
        let first = widths(of_kind.next()?);
        of_kind.all(|l| widths(l) == first).then_some(first)
    };
    let ((head_dim, kv_heads, false), (global_head_dim, global_kv_heads, k_eq_v)) = (kinds(true)?, kinds(false)?)
    else {
        return None;
    };
    let plain = o.fork == Fork::Mainline
        && matches!(t.attention, AttentionKind::Standard { .. })
        && t.recurrent.is_none()
        && t.extra.per_layer_input == 0
        && t.layers.iter().all(|l| !l.shape.kv_shared && l.shape.ffn_width == 0);
    let experts = t.moe.map(|m| Experts {
        count: m.num_experts,
        used: m.experts_per_token,
        width: m.expert_intermediate_size,
        // The dense MLP beside the experts is the block's own.
        shared_width: 0,
        dense_lead: 0,
        gating: Gating::Softmax,
        biases: false,
    });
    plain.then_some(Shape {
        embd: t.hidden_size,
        ffn_width: t.intermediate_size,
        heads: t.num_heads,
        kv_heads,
        head_dim,
        vocab: t.vocab_size,
        ffn: Ffn::GateUp,
        sandwich: false,
        experts,
        swa_pattern,
        block: Block::Gemma4(Global { head_dim: global_head_dim, kv_heads: global_kv_heads, k_eq_v }),
        // Heads of two sizes: `n_embd_head_k_all` is -1, nothing rotates.
        rot: Rot::default(),
        qk_norm: true,
    })
}

/// The `set_swa_pattern` the plan's cache layers follow (0: no window), or
/// `None` where their windows follow no such pattern (src/llama-hparams.cpp
/// `set_swa_pattern(n_pattern, dense_first = false)`).
fn swa_pattern(p: &Plan) -> Option<u64> {
    let kv = &p.kv_layers;
    let n = match kv.iter().position(|l| l.window.is_none()) {
        _ if kv.iter().all(|l| l.window.is_none()) => return Some(0),
        Some(full) => full as u64 + 1,
        None => return None,
    };
    let windows: Vec<u64> = kv.iter().filter_map(|l| l.window).collect();
    let one_window = windows.windows(2).all(|w| w[0] == w[1]);
    let follows = kv.iter().enumerate().all(|(il, l)| l.window.is_some() == (il as u64 % n < n - 1));
    (one_window && follows).then_some(n)
}

impl Experts {
    /// Qwen3-MoE, GLM-4.5 and gpt-oss on mainline builds with the gated FFN
    /// op ([`GLU_BUILD`]; gpt-oss came after it, ggml-org/llama.cpp#15091),
    /// replayed per GPU as the dense layers are. Qwen3-MoE and GLM-4.5 with
    /// full attention in every layer; gpt-oss with its sliding-window layers
    /// ([`Shape::swa_pattern`]), sinks (a source of `ggml_flash_attn_ext` /
    /// `ggml_soft_max_ext`, no memory) and q/k/v/o biases (`ggml_add` in
    /// place), from llama-cpp-python 0.3.16 (`llm_build_openai_moe_iswa`,
    /// `build_attn_with_sinks`) and 0.3.22, checked against the b6699 and
    /// b7217 logs of the tests below. Checked where one GPU holds every layer, the
    /// output and the experts, or stages the experts from host memory
    /// ([`Staged`]; `scripts/ggml-alloc-sim.py` `moe_model`); other layouts
    /// of host experts are staged beside it (`compute::staged_weight`).
    /// Other families and the builds before GLU keep the closed form.
    fn of(p: &Plan, o: &Options) -> Option<Experts> {
        let t = &p.model.arch.text;
        let m = t.moe?;
        let (gating, windows) = match p.model.arch.family {
            Family::Qwen3Moe => (Gating::Softmax, false),
            Family::Glm4Moe => (Gating::Sigmoid, false),
            Family::GptOss => (Gating::SoftmaxWeight, true),
            _ => return None,
        };
        let dense_lead = t.layers.iter().take_while(|l| l.ffn == crate::arch::Ffn::Dense).count() as u64;
        let plain = o.fork == Fork::Mainline
            && o.build.is_none_or(|b| b >= GLU_BUILD)
            && matches!(t.attention, AttentionKind::Standard { .. })
            && t.recurrent.is_none()
            && (windows || p.kv_layers.iter().all(|l| l.window.is_none()))
            && m.experts_per_token >= 2;
        plain.then_some(Experts {
            count: m.num_experts,
            used: m.experts_per_token,
            width: m.expert_intermediate_size,
            shared_width: m.shared_intermediate_size,
            dense_lead,
            gating,
            biases: m.expert_bias,
        })
    }
}

/// What one GPU holds of the graph.
#[derive(Debug, Clone, Copy)]
pub(super) struct Part {
    /// The model's index of the first layer on this GPU.
    pub start: u64,
    /// Repeating layers on this GPU.
    pub layers: u64,
    /// The first GPU: it casts the F32 mask to F16 with flash attention
    /// (builds before [`F16_MASK_BUILD`]); the others are given the F16 copy.
    pub first: bool,
    /// The output layer: `inp_out_ids`, `result_norm` and the logits.
    pub output: bool,
    /// The routed experts of the layers here that left them in host memory
    /// ([`Staged::from`], [`Staged::until`]), staged on this GPU one op at a time.
    pub staged: Option<Staged>,
    /// The layers before this GPU's left in host memory, run here ([`Host`]).
    pub host: Option<Host>,
}

/// Dense layers left in host memory (`-ngl` short of them) whose ops the
/// first GPU runs: CUDA takes every op with a host weight from
/// `GGML_OP_OFFLOAD_MIN_BATCH` rows (`compute::staged_weight`), each weight
/// copied in by a split of its own, and the attention between them (the
/// scheduler's `expand gpu up` gives `FLASH_ATTN_EXT`, which no weight
/// pins, the GPU of the output projection after it: ggml-backend.cpp
/// `ggml_backend_sched_split_graph`, pass 2). Its K and V are views of the
/// layer's cache in host memory, which CUDA cannot read: the split copies
/// both whole (`n_kv` cells) to the GPU at its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Host {
    pub layers: u64,
    /// The largest Q, K, V and output projections, and FFN gate or up and
    /// down matrices of those layers (bytes).
    pub q: u64,
    pub k: u64,
    pub v: u64,
    pub o: u64,
    pub up: u64,
    pub down: u64,
    /// One layer's K cache and V cache for `n_kv` cells (bytes), in their
    /// own types (`-ctk`, `-ctv`): flash attention reads a copy of each.
    pub k_cache: u64,
    pub v_cache: u64,
    /// Llama 3's `rope_freqs` (bytes; 0 where the model has none).
    pub rope_freqs: u64,
    /// A MoE layer's router (`ffn_gate_inp`, bytes) and its experts, each
    /// staged in a split of its own; `None` for a dense FFN.
    pub experts: Option<(u64, Staged)>,
}

/// One layer's routed experts in host memory (`--n-cpu-moe`, `-ot
/// exps=CPU`), run on this GPU: CUDA takes an op whose weight is in host
/// memory when its batch reaches `GGML_OP_OFFLOAD_MIN_BATCH`
/// (`compute::OP_OFFLOAD_MIN_BATCH`), and ggml-backend.cpp
/// `ggml_backend_sched_split_graph` opens a split for each such weight ("by
/// starting a new split, the memory of the previously offloaded weights can
/// be reused"): its copy is allocated at the split's start, with whatever
/// other inputs the split's nodes are the first to read, and freed once the
/// op is done. Expert biases come with their experts: the override patterns
/// (`blk\.%d\.ffn_(up|down|gate)_exps`, common/arg.cpp) are searched in the
/// tensor names (src/llama-model.cpp `std::regex_search`), `….bias` too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Staged {
    /// The larger of the gate and up expert tensors (bytes).
    pub gate_up: u64,
    /// The down expert tensor (bytes).
    pub down: u64,
    /// The model's layers whose experts are in host memory, `from` to one
    /// past the last (`devices::Weights::cpu_expert_layers`; `--n-cpu-moe
    /// N`: 0 to N).
    pub from: u64,
    pub until: u64,
}

/// The KQ mask's cells: `n_kv` by the micro-batch's `tokens`, its rows
/// padded to `GGML_KQ_MASK_PAD` (64).
pub(super) fn mask_cells(n_kv: u64, tokens: u64) -> u64 {
    n_kv.saturating_mul(tokens.div_ceil(64).saturating_mul(64))
}

/// The cells the reserved graph attends over: the whole cache's `n_kv`, and
/// the sliding-window cache's (`llama_kv_cache_iswa`; the same where no
/// layer slides).
#[derive(Debug, Clone, Copy)]
pub(super) struct Cells {
    pub full: u64,
    pub window: u64,
}

/// One kind of cache's inputs (src/llama-graph.cpp
/// `build_attn_inp_kv_unified_iswa`: a mask and store indices for each),
/// made when a node first reads them: the scheduler copies a split's inputs
/// in at its start in that order.
struct Kind {
    cells: u64,
    mask: u16,
    k_idxs: u16,
    v_idxs: u16,
    /// The cache's rotation matrices ([`Rot`]; `build_attn_inp_kv_iswa`
    /// makes a pair for each cache).
    k_rot: u16,
    v_rot: u16,
}

impl Kind {
    /// The KQ mask, made where first read: F32 from the host, cast to F16 on
    /// the first GPU with flash attention before [`F16_MASK_BUILD`]; F16 from
    /// it after.
    fn mask(&mut self, g: &mut Graph, tokens: u64, fa: bool, cast: bool) -> u16 {
        if self.mask == NONE {
            let cells = mask_cells(self.cells, tokens);
            self.mask = g.input(cells.saturating_mul(if fa && !cast { 2 } else { 4 }));
            if cast {
                self.mask = g.tensor(cells.saturating_mul(2), &[self.mask]);
            }
        }
        self.mask
    }

    /// `x` multiplied by a rotation matrix of `bytes` made where first
    /// read (`slot`: the kind's K or V matrix): a new tensor of `width`;
    /// `x` itself where that side is not rotated (`bytes` 0).
    fn rotate(g: &mut Graph, slot: &mut u16, bytes: u64, x: u16, width: u64) -> u16 {
        if bytes == 0 {
            return x;
        }
        if *slot == NONE {
            *slot = g.input(bytes);
        }
        g.tensor(width, &[x, *slot])
    }

    /// `x` rotated by the cache's K matrix ([`Rot::k`]), or as it is.
    fn rot_k(&mut self, g: &mut Graph, rot: Rot, x: u16, width: u64) -> u16 {
        Self::rotate(g, &mut self.k_rot, rot.k, x, width)
    }

    /// `x` rotated by the cache's V matrix ([`Rot::v`]), or as it is.
    fn rot_v(&mut self, g: &mut Graph, rot: Rot, x: u16, width: u64) -> u16 {
        Self::rotate(g, &mut self.v_rot, rot.v, x, width)
    }
}

/// The compute buffer of one GPU (bytes). `rows`: the rows the reserved
/// graph outputs (`compute::reserved_outputs`): the last layer keeps them
/// only, and the logits are theirs.
pub(super) fn compute_buffer(s: Shape, o: &Options, cells: Cells, part: Part, rows: u64) -> u64 {
    let t = o.ubatch();
    let f32s = |width: u64| width.saturating_mul(t).saturating_mul(4);
    let out = |width: u64| width.saturating_mul(rows.min(t)).saturating_mul(4);
    let fa = o.flash_attention == FlashAttention::On;
    let glu = o.build.is_none_or(|b| b >= GLU_BUILD);
    let cast = fa && part.first && o.build.is_some_and(|b| b < F16_MASK_BUILD);
    // With windows, the last two layers as well: where the last full
    // layer's mask lands depends on the window layer before it (gpt-oss at
    // `-ub 2048`: 1,663.08 MiB from the first two and the last, 1,672.08
    // from four, as from all 24). Gemma 4's five window layers to a global
    // one: a whole period, then the last two.
    let tail = if s.swa_pattern > 0 { 2 } else { 1 };
    let head = match s.block {
        Block::Gemma4(_) => s.swa_pattern.max(MAX_LAYERS - 1),
        Block::Llama => MAX_LAYERS - 1,
    };
    let layers = part.layers.min(head + tail);
    // The model's index of replayed layer `il`.
    let real = |il: u64| if il + tail < layers { part.start + il } else { part.start + part.layers - (layers - il) };

    let mut g = Graph { nodes: Vec::with_capacity(8 + 40 * layers as usize), order: Vec::new(), head: 0 };
    // The split's inputs: the layer input (the token embeddings, or the
    // previous device's residual stream) and the positions; the masks,
    // store indices and output rows where first read.
    let mut inp = g.input(f32s(s.embd));

    // The stores' row indices (`ggml_set_rows`), from their build; a plan
    // that names none is today's (the logs without a build are dated by
    // their lines, `startup::plan`).
    let idxs = o.build.is_none_or(|b| b >= SET_ROWS_BUILD);
    let mut kinds = [cells.full, cells.window].map(|cells| Kind {
        cells,
        mask: NONE,
        k_idxs: NONE,
        v_idxs: NONE,
        k_rot: NONE,
        v_rot: NONE,
    });
    // The host layers first, in the order the scheduler splits them
    // (ggml-backend.cpp `ggml_backend_sched_split_graph`: a split opens at
    // every op whose weight sits in host memory, its copies allocated at
    // its start): the attention norm's weight, Q, then RoPE on Q and V in
    // one split (the first layer's RoPE opens its own, taking the
    // positions and Llama 3's `rope_freqs` in), K, RoPE on K alone, the
    // stores on the CPU, the attention over the copies of the layer's K
    // and V, O, the FFN norm's weight, gate, up and down.
    let mut pos = NONE;
    if let Some(h) = part.host.filter(|h| {
        fa && glu
            && s.block == Block::Llama
            && s.ffn == Ffn::GateUp
            && s.experts.is_none() == h.experts.is_none()
            && s.swa_pattern == 0
    }) {
        let kind = &mut kinds[0];
        let (q_width, kv_width) = (f32s(s.heads * s.head_dim), f32s(s.kv_heads * s.head_dim));
        let norm = |g: &mut Graph, x: u16| {
            let n = g.tensor(f32s(s.embd), &[x]);
            let w = g.staged(4 * s.embd);
            g.in_place(f32s(s.embd), &[n, w])
        };
        for il in 0..h.layers.min(MAX_LAYERS) {
            let residual = inp;
            let cur = norm(&mut g, inp);
            let w = g.staged(h.q);
            let mut q = g.tensor(q_width, &[w, cur]);
            // Qwen3's per-head norm: an RMS norm of the reshaped Q (a new
            // tensor), its weight (F32, one head wide) staged by a split of
            // its own and multiplied in place; RoPE then runs in place too.
            let head_norm = |g: &mut Graph, x: u16, width: u64| {
                let n = g.tensor(width, &[x]);
                let w = g.staged(4 * s.head_dim);
                g.in_place(width, &[n, w])
            };
            if s.qk_norm {
                q = head_norm(&mut g, q, q_width);
            }
            let rope = |g: &mut Graph, x: u16, width: u64, pos: u16| {
                if s.qk_norm { g.in_place(width, &[x, pos]) } else { g.tensor(width, &[x, pos]) }
            };
            // Llama 3's RoPE reads `rope_freqs`, a host weight: a split opens
            // at it, and V's weight joins it; without it RoPE stays in Q's
            // split and V's weight opens its own. The first layer's RoPE
            // copies the positions (and the frequencies) in.
            let rope_splits = h.rope_freqs > 0;
            if il == 0 && rope_splits {
                pos = g.staged(4 * t);
                g.input(h.rope_freqs);
            } else if il == 0 {
                pos = g.input(4 * t);
            }
            // A rotated cache's Q, K and V are rotated in the split of
            // their RoPE (V's: of its projection), the matrices copied in
            // where first read.
            let rot = s.rot;
            let (wv, q) = if rope_splits && il > 0 {
                let wv = g.staged(h.v);
                let q = rope(&mut g, q, q_width, pos);
                (wv, kind.rot_k(&mut g, rot, q, q_width))
            } else {
                let q = rope(&mut g, q, q_width, pos);
                let q = kind.rot_k(&mut g, rot, q, q_width);
                (g.staged(h.v), q)
            };
            let v = g.tensor(kv_width, &[wv, cur]);
            let v = kind.rot_v(&mut g, rot, v, kv_width);
            let w = g.staged(h.k);
            let mut k = g.tensor(kv_width, &[w, cur]);
            if s.qk_norm {
                k = head_norm(&mut g, k, kv_width);
            } else {
                g.head = g.order.len();
            }
            let k = rope(&mut g, k, kv_width, pos);
            let k = kind.rot_k(&mut g, rot, k, kv_width);
            // The stores run on the CPU, which holds the cache.
            g.sink(k, NONE);
            g.sink(v, NONE);
            let kc = g.staged(h.k_cache);
            let vc = g.input(h.v_cache);
            let mask = kind.mask(&mut g, t, fa, cast);
            let attn = g.tensor(q_width, &[q, mask, kc, vc]);
            let attn = kind.rot_v(&mut g, rot, attn, q_width);
            let w = g.staged(h.o);
            let out = g.tensor(f32s(s.embd), &[w, attn]);
            let ffn_inp = g.in_place(f32s(s.embd), &[out, residual]);
            let cur = norm(&mut g, ffn_inp);
            if let (Some(e), Some((router, staged))) = (s.experts, h.experts) {
                let out = moe(&mut g, e, cur, s.embd, t, Some(staged), router);
                inp = g.in_place(f32s(s.embd), &[out, ffn_inp]);
                continue;
            }
            let f = f32s(s.ffn_width);
            let w = g.staged(h.up);
            let gate = g.tensor(f, &[w, cur]);
            let w = g.staged(h.up);
            let up = g.tensor(f, &[w, cur]);
            let product = g.tensor(f, &[gate, up]);
            let w = g.staged(h.down);
            let down = g.tensor(f32s(s.embd), &[w, product]);
            inp = g.in_place(f32s(s.embd), &[down, ffn_inp]);
        }
    }
    if pos == NONE && layers > 0 {
        pos = g.input(4 * t);
    }
    for il in 0..layers {
        let last = part.output && il + 1 == layers;
        let slides = s.slides(real(il));
        let kind = &mut kinds[usize::from(slides)];
        let (heads, head_dim) = match s.block {
            Block::Gemma4(global) if !slides => ((s.heads, global.kv_heads), global.head_dim),
            _ => ((s.heads, s.kv_heads), s.head_dim),
        };
        let (q_width, kv_width) = (f32s(heads.0 * head_dim), f32s(heads.1 * head_dim));
        let mut residual = inp;
        let cur = g.norm(f32s(s.embd), inp);
        // A view (reshape, permute, a half of the fused up) takes no memory
        // and ggml never reuses a view's memory in place: an op on one is a
        // new tensor reading the view's base, which lives until it is done.
        // Biases added in place (Qwen2's, GLM-4.5's and gpt-oss's q/k/v,
        // gpt-oss's o) and attention sinks change nothing here.
        let (q, k, v) = match s.block {
            // A rotated cache's builds take Q, then V, then K (`build_attn`
            // expands them in that order), each rotated where its side is.
            Block::Llama if s.rot != Rot::default() => {
                let q = g.tensor(q_width, &[cur]);
                let q = g.tensor(q_width, &[q, pos]);
                let q = kind.rot_k(&mut g, s.rot, q, q_width);
                let v = g.tensor(kv_width, &[cur]);
                let v = kind.rot_v(&mut g, s.rot, v, kv_width);
                let k = g.tensor(kv_width, &[cur]);
                let k = g.tensor(kv_width, &[k, pos]);
                (q, kind.rot_k(&mut g, s.rot, k, kv_width), v)
            }
            Block::Llama => {
                let q = g.tensor(q_width, &[cur]);
                let q = g.tensor(q_width, &[q, pos]); // RoPE on the reshaped Q
                let k = g.tensor(kv_width, &[cur]);
                let k = g.tensor(kv_width, &[k, pos]);
                (q, k, g.tensor(kv_width, &[cur]))
            }
            Block::Gemma4(global) => {
                let q = g.tensor(q_width, &[cur]);
                let q = g.tensor(q_width, &[q]); // the per-head norm of the reshaped Q
                let q = g.in_place(q_width, &[q, pos]);
                let projected = g.tensor(kv_width, &[cur]);
                let k = g.tensor(kv_width, &[projected]);
                let k = g.in_place(kv_width, &[k, pos]);
                let values = if global.k_eq_v && !slides { projected } else { g.tensor(kv_width, &[cur]) };
                (q, k, g.tensor(kv_width, &[values]))
            }
        };
        // The K and V stores into the cache.
        if idxs && kind.k_idxs == NONE {
            kind.k_idxs = g.input(8 * t);
        }
        g.sink(k, kind.k_idxs);
        if idxs && kind.v_idxs == NONE {
            kind.v_idxs = g.input(8 * t);
        }
        g.sink(v, kind.v_idxs);
        let mask = kind.mask(&mut g, t, fa, cast);
        let attn = if fa {
            g.tensor(q_width, &[q, mask])
        } else {
            let scores = f32s(kind.cells.saturating_mul(heads.0));
            let kq = g.tensor(scores, &[q]);
            let kq = g.in_place(scores, &[kq, mask]);
            let kqv = g.tensor(q_width, &[kq]);
            g.tensor(q_width, &[kqv]) // the merged heads' `ggml_cont`
        };
        // A rotated V's output rotated back.
        let attn = kind.rot_v(&mut g, s.rot, attn, q_width);
        let mut cur = g.tensor(f32s(s.embd), &[attn]);
        // The last layer keeps the output rows only (`inp_out_ids`, built
        // whatever n_outputs is in these builds, ggml-org/llama.cpp#14275).
        let mut out_ids = NONE;
        if last {
            out_ids = g.input(4 * rows.min(t));
            cur = g.tensor(out(s.embd), &[cur, out_ids]);
        }
        // From here the layer's rows: the output rows in the last layer.
        let tokens = if last { rows.min(t) } else { t };
        let f32s = |width: u64| width.saturating_mul(tokens).saturating_mul(4);
        if s.sandwich {
            cur = g.norm(f32s(s.embd), cur);
        }
        if last {
            residual = g.tensor(f32s(s.embd), &[residual, out_ids]);
        }
        let ffn_inp = g.in_place(f32s(s.embd), &[cur, residual]);
        if let Block::Gemma4(_) = s.block {
            inp = gemma4_ffn(&mut g, s, ffn_inp, tokens);
            continue;
        }
        let cur = g.norm(f32s(s.embd), ffn_inp);
        if let Some(e) = s.experts.filter(|e| il >= e.dense_lead) {
            // A replayed layer between the first and the tail stands for
            // every layer up to the tail: staged if any of them is. The
            // output rows' MoE (one row a slot) stays on the CPU, below the
            // scheduler's offload batch.
            let stands_for = if il > 0 && il + tail < layers { part.start + part.layers - tail } else { real(il) + 1 };
            let staged = part.staged.filter(|st| {
                st.from < stands_for && real(il) < st.until && tokens >= super::compute::OP_OFFLOAD_MIN_BATCH
            });
            let out = moe(&mut g, e, cur, s.embd, tokens, staged, 0);
            inp = g.in_place(f32s(s.embd), &[out, ffn_inp]);
            continue;
        }
        let f = f32s(s.ffn_width);
        let product = match (s.ffn, glu) {
            (Ffn::GateUp, true) => {
                let gate = g.tensor(f, &[cur]);
                let up = g.tensor(f, &[cur]);
                g.tensor(f, &[gate, up])
            }
            (Ffn::GateUp, false) => {
                let gate = g.tensor(f, &[cur]);
                let silu = g.in_place(f, &[gate]);
                let up = g.tensor(f, &[cur]);
                g.in_place(f, &[silu, up])
            }
            (Ffn::FusedUp, true) => {
                let up = g.tensor(f.saturating_mul(2), &[cur]);
                g.tensor(f, &[up])
            }
            (Ffn::FusedUp, false) => {
                let up = g.tensor(f.saturating_mul(2), &[cur]);
                let x0 = g.tensor(f, &[up]);
                let silu = g.in_place(f, &[x0]);
                let x1 = g.tensor(f, &[up]);
                g.in_place(f, &[silu, x1])
            }
        };
        let mut cur = g.tensor(f32s(s.embd), &[product]);
        if s.sandwich {
            cur = g.norm(f32s(s.embd), cur);
        }
        inp = g.in_place(f32s(s.embd), &[cur, ffn_inp]);
    }
    if part.output {
        let n = g.norm(out(s.embd), inp);
        g.tensor(out(s.vocab), &[n]);
    }
    g.peak()
}

/// Gemma 4's FFN block over `tokens` rows of the attention's output
/// ([`Global`]): the router and the experts (their weights first, as
/// `build_moe_ffn` expands them), then the dense MLP; or the dense MLP
/// alone. Returns the layer's output.
fn gemma4_ffn(g: &mut Graph, s: Shape, attn_out: u16, tokens: u64) -> u16 {
    let f32s = |width: u64| width.saturating_mul(tokens).saturating_mul(4);
    let moe = s.experts.map(|e| {
        let router = g.tensor(f32s(s.embd), &[attn_out]);
        let logits = g.tensor(f32s(e.count), &[router]);
        let probs = g.in_place(f32s(e.count), &[logits]);
        let argsort = g.tensor(f32s(e.count), &[probs]);
        let rows = g.tensor(f32s(e.used), &[probs, argsort]);
        let sum = g.tensor(f32s(1), &[rows]);
        let weights = g.tensor(f32s(e.used), &[rows, sum]);
        let cur = g.tensor(f32s(s.embd), &[attn_out]); // `ffn_pre_norm_2`
        let routed = f32s(e.used.saturating_mul(e.width));
        let gate_up = g.tensor(routed.saturating_mul(2), &[cur, argsort]);
        let product = g.tensor(routed, &[gate_up]);
        let down = g.tensor(f32s(s.embd.saturating_mul(e.used)), &[product, argsort]);
        let repeated = g.tensor(f32s(e.count), &[]);
        let scales = g.tensor(f32s(e.used), &[repeated, argsort]);
        let scaled = g.in_place(f32s(s.embd.saturating_mul(e.used)), &[down, scales]);
        let experts = g.in_place(f32s(s.embd.saturating_mul(e.used)), &[scaled, weights]);
        let mut out = g.tensor(f32s(s.embd), &[experts]);
        for _ in 2..e.used {
            out = g.in_place(f32s(s.embd), &[out, experts]);
        }
        out
    });
    let f = f32s(s.ffn_width);
    let cur = g.tensor(f32s(s.embd), &[attn_out]); // `ffn_norm`
    let gate = g.tensor(f, &[cur]);
    let up = g.tensor(f, &[cur]);
    let product = g.tensor(f, &[gate, up]);
    let mut cur = g.tensor(f32s(s.embd), &[product]);
    if let Some(moe) = moe {
        cur = g.in_place(f32s(s.embd), &[cur, moe]);
    }
    g.in_place(f32s(s.embd), &[cur, attn_out])
}

/// One MoE FFN (src/llama-graph.cpp `build_moe_ffn`, 0.3.16), in the order
/// ggml visits it from the experts' sum: the router's logits and
/// probabilities (softmax, or sigmoid in place; gpt-oss selects on the
/// biased logits), the selection bias, the `argsort` whose top-k view
/// selects, `mul_mat_id` for gate then up (the sources of
/// `ggml_swiglu_split` / `ggml_swiglu_oai`), each with its bias in place
/// (`ggml_add_id`), the GLU product, `mul_mat_id` down, the selected
/// weights (`get_rows`, their sum and the division, or gpt-oss's softmax:
/// new tensors, an op on a view is), the weighting in place on down, then
/// the sum over the used experts: views of it, a new tensor for the first
/// add, the rest in place. GLM-4.5's shared expert follows, added in place.
/// Staged experts and biases ([`Staged`]) each open a split before their op.
fn moe(g: &mut Graph, e: Experts, cur: u16, embd: u64, t: u64, staged: Option<Staged>, router: u64) -> u16 {
    let f32s = |width: u64| width.saturating_mul(t).saturating_mul(4);
    // A router in host memory (a layer `-ngl` left there) is staged too.
    let w = if router > 0 { g.staged(router) } else { NONE };
    let logits = g.tensor(f32s(e.count), &[cur, w]);
    let probs = match e.gating {
        Gating::Softmax | Gating::Sigmoid => g.in_place(f32s(e.count), &[logits]),
        Gating::SoftmaxWeight => logits,
    };
    // The selection bias reads the probabilities, which the weights' rows
    // read again: a tensor of its own.
    let select = if e.gating == Gating::Sigmoid { g.tensor(f32s(e.count), &[probs]) } else { probs };
    let argsort = g.tensor(f32s(e.count), &[select]);
    let (routed, width) = (e.used.saturating_mul(e.width), embd.saturating_mul(e.used));
    // A `mul_mat_id` and its bias, the experts' copies (F32 biases of one
    // row per expert) staged before each.
    let by_expert = |g: &mut Graph, bytes: u64, x: u16, rows: u64, weight: fn(Staged) -> u64| {
        let w = staged.map_or(NONE, |s| g.staged(weight(s)));
        let y = g.tensor(bytes, &[w, x, argsort]);
        if !e.biases {
            return y;
        }
        let b = staged.map_or(NONE, |_| g.staged(e.count.saturating_mul(rows).saturating_mul(4)));
        g.in_place(bytes, &[y, b, argsort])
    };
    let gate = by_expert(g, f32s(routed), cur, e.width, |s| s.gate_up);
    let up = by_expert(g, f32s(routed), cur, e.width, |s| s.gate_up);
    let product = g.tensor(f32s(routed), &[gate, up]);
    let down = by_expert(g, f32s(width), product, embd, |s| s.down);
    let rows = g.tensor(f32s(e.used), &[probs, argsort]);
    let mut weights = match e.gating {
        Gating::Softmax | Gating::Sigmoid => {
            let sum = g.tensor(f32s(1), &[rows]);
            g.tensor(f32s(e.used), &[rows, sum])
        }
        Gating::SoftmaxWeight => g.tensor(f32s(e.used), &[rows]),
    };
    if e.gating == Gating::Sigmoid {
        weights = g.tensor(f32s(e.used), &[weights]); // scaled, on a view
    }
    let experts = g.in_place(f32s(width), &[down, weights]);
    let mut out = g.tensor(f32s(embd), &[experts]);
    for _ in 2..e.used {
        out = g.in_place(f32s(embd), &[out, experts]);
    }
    if e.shared_width > 0 {
        let f = f32s(e.shared_width);
        let gate = g.tensor(f, &[cur]);
        let up = g.tensor(f, &[cur]);
        let product = g.tensor(f, &[gate, up]);
        let shared = g.tensor(f32s(embd), &[product]);
        out = g.in_place(f32s(embd), &[out, shared]);
    }
    out
}

const NONE: u16 = u16::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// A tensor of its own.
    Own,
    /// An op ggml may run in place on its parent.
    InPlace,
    /// A store into the KV cache: no memory, but a child of its source.
    Sink,
}

#[derive(Debug, Clone, Copy)]
struct Node {
    bytes: u64,
    offset: u64,
    src: [u16; 4],
    children: u16,
    op: Op,
    live: bool,
}

/// The nodes, and the order ggml-alloc meets them in: a split's inputs at
/// its start (`head`), then its nodes.
struct Graph {
    nodes: Vec<Node>,
    order: Vec<u16>,
    head: usize,
}

impl Graph {
    fn push(&mut self, bytes: u64, op: Op, src: &[u16]) -> u16 {
        let mut s = [NONE; 4];
        for (slot, &x) in s.iter_mut().zip(src.iter().filter(|&&x| x != NONE)) {
            *slot = x;
            self.nodes[usize::from(x)].children += 1;
        }
        // Padded to the buffer's alignment here: the same-size test of the
        // in-place rule compares tensors whose sizes are equal unpadded too.
        let bytes = bytes.div_ceil(ALIGN).saturating_mul(ALIGN);
        self.nodes.push(Node { bytes, offset: 0, src: s, children: 0, op, live: false });
        let id = (self.nodes.len() - 1) as u16;
        self.order.push(id);
        id
    }

    /// A copy of an input of the current split, allocated at its start
    /// after the inputs found before it.
    fn input(&mut self, bytes: u64) -> u16 {
        let id = self.push(bytes, Op::Own, &[]);
        self.order.pop();
        self.order.insert(self.head, id);
        self.head += 1;
        id
    }

    /// A weight in host memory, copied in by a split of its own.
    fn staged(&mut self, bytes: u64) -> u16 {
        self.head = self.order.len();
        self.input(bytes)
    }

    fn tensor(&mut self, bytes: u64, src: &[u16]) -> u16 {
        self.push(bytes, Op::Own, src)
    }

    fn in_place(&mut self, bytes: u64, src: &[u16]) -> u16 {
        self.push(bytes, Op::InPlace, src)
    }

    /// RMS_NORM and the MUL by its weight: the MUL always runs in place on
    /// the norm, so the pair lays out as one in-place node.
    fn norm(&mut self, bytes: u64, of: u16) -> u16 {
        self.in_place(bytes, &[of])
    }

    fn sink(&mut self, of: u16, rows: u16) {
        self.push(0, Op::Sink, &[of, rows]);
    }

    /// ggml-alloc over the nodes in order (`ggml_gallocr_alloc_graph_impl`):
    /// the peak offset its allocator reaches.
    fn peak(mut self) -> u64 {
        let mut arena = super::compute::Arena::new();
        for i in std::mem::take(&mut self.order).into_iter().map(usize::from) {
            let node = self.nodes[i];
            let srcs = node.src.into_iter().filter(|&s| s != NONE).map(usize::from);
            if node.op != Op::Sink {
                let parent = srcs.clone().find(|&s| {
                    let p = self.nodes[s];
                    node.op == Op::InPlace && p.live && p.bytes == node.bytes && p.children == 1
                });
                self.nodes[i].live = true;
                self.nodes[i].offset = match parent {
                    Some(p) => {
                        self.nodes[p].live = false;
                        self.nodes[p].offset
                    }
                    None => arena.alloc(node.bytes),
                };
            }
            for s in srcs {
                let p = &mut self.nodes[s];
                p.children -= 1;
                if p.children == 0 && p.live {
                    p.live = false;
                    arena.free(p.offset, p.bytes);
                }
            }
        }
        arena.max
    }
}

#[cfg(test)]
mod tests {
    use super::{
        Block, Cells, Experts, Ffn, GLU_BUILD, Gating, Global, Host, Part, Rot, SET_ROWS_BUILD, Shape, Staged,
        compute_buffer,
    };
    use crate::engines::llamacpp::{FlashAttention, Options};

    const MIB: u64 = 1 << 20;
    /// Every row of the ubatch an output (the builds before `compute::OUTPUTS_MAX_BUILD`).
    const EVERY: u64 = u64::MAX;
    const ONE_GPU: Part = Part { start: 0, layers: 32, first: true, output: true, staged: None, host: None };

    /// Every layer over the whole cache.
    fn full(n_kv: u64) -> Cells {
        Cells { full: n_kv, window: n_kv }
    }

    fn llama(vocab: u64) -> Shape {
        Shape {
            embd: 4096,
            ffn_width: 14_336,
            heads: 32,
            kv_heads: 8,
            head_dim: 128,
            vocab,
            ffn: Ffn::GateUp,
            sandwich: false,
            experts: None,
            swa_pattern: 0,
            block: Block::Llama,
            rot: Rot::default(),
            qk_norm: false,
        }
    }

    fn run(build: u64, fa: FlashAttention, ubatch: u64) -> Options {
        Options { build: Some(build), flash_attention: fa, n_ubatch: ubatch, ..Options::default() }
    }

    /// Llama 3.1 8B Q4_0 on b5781, Vulkan, `-ub 1024`, n_ctx 16384, flash
    /// attention (fixture `llamacpp-b5781-llama31-8b-q40-vulkan-1gpu-fa-on`):
    /// 613.01 MiB logged. The GLU product takes a block of its own, so the
    /// last `ffn_down` lands in the F16 mask's hole and the logits on top:
    /// embeddings, positions, the F32 mask, output ids, two `get_rows`, the
    /// FFN output and the logits. Before GLU (silu × up in place), 517.
    #[test]
    fn the_glu_build_puts_the_logits_above_the_mask_hole() {
        let fa = FlashAttention::On;
        let expected = 4 * 1024 * (3 * 4096 + 16_384 + 2 + 128_256);
        assert_eq!(expected, 642_785_280);
        assert_eq!(compute_buffer(llama(128_256), &run(5781, fa, 1024), full(16_384), ONE_GPU, EVERY), expected);
        assert_eq!(
            compute_buffer(llama(128_256), &run(GLU_BUILD - 1, fa, 1024), full(16_384), ONE_GPU, EVERY),
            517 * MIB
        );
    }

    /// GLM-Z1-32B on b5192, `-ub 512`, n_ctx 32768, flash attention (fixture
    /// `llamacpp-b5192-glm-z1-32b-iq4xs-1gpu-fa-on`): 353.00 MiB logged. The
    /// fused up's halves leave the last product at offset 0 and `ffn_down`
    /// above it: `(F + E + V) · T · 4`.
    #[test]
    fn glm4s_fused_up_leaves_the_product_under_the_logits() {
        let glm = Shape {
            embd: 6144,
            ffn_width: 23_040,
            heads: 48,
            kv_heads: 2,
            head_dim: 128,
            vocab: 151_552,
            ffn: Ffn::FusedUp,
            sandwich: true,
            experts: None,
            swa_pattern: 0,
            block: Block::Llama,
            rot: Rot::default(),
            qk_norm: false,
        };
        let o = run(5192, FlashAttention::On, 512);
        let part = Part { layers: 61, ..ONE_GPU };
        assert_eq!(compute_buffer(glm, &o, full(32_768), part, EVERY), (23_040 + 6144 + 151_552) * 512 * 4);
        assert_eq!(compute_buffer(glm, &o, full(32_768), part, EVERY), 353 * MIB);
    }

    /// Mistral 7B without flash attention, n_ctx 2048 (fixture
    /// `llamacpp-mistral-7b-2k`, 164.00 MiB logged): the layer's scores and
    /// softmax, `n_kv · T · heads` F32 beside the mask, set the peak, GLU or
    /// not; the two int32 inputs add 4 KiB.
    #[test]
    fn without_flash_attention_the_scores_set_the_peak() {
        let o = run(4500, FlashAttention::Off, 512);
        assert_eq!(compute_buffer(llama(32_768), &o, full(2048), ONE_GPU, EVERY), 164 * MIB + 4096);
        let glu = run(5781, FlashAttention::Off, 512);
        assert_eq!(compute_buffer(llama(32_768), &glu, full(2048), ONE_GPU, EVERY), 164 * MIB + 4096);
    }

    /// Qwen3-Coder-30B-A3B Q8_0 on b7342, `-ub 512`, 4 slots in one unified
    /// cache of 65,536 cells, flash attention (the fixture
    /// `llamacpp-b7342-qwen3-coder-30b-a3b-q80-1gpu-np4-fa-auto`): 300.75 MiB
    /// logged. The F16 mask is freed with the last layer and the logits go
    /// on top of `result_norm` at offset 0: `(E + V) · T · 4`. The closed
    /// form added the 64 MiB mask (364.75).
    #[test]
    fn qwen3_moe_logits_sit_on_the_last_norm_alone() {
        let experts = Experts {
            count: 128,
            used: 8,
            width: 768,
            shared_width: 0,
            dense_lead: 0,
            gating: Gating::Softmax,
            biases: false,
        };
        let shape = Shape {
            embd: 2048,
            ffn_width: 6144,
            heads: 32,
            kv_heads: 4,
            head_dim: 128,
            vocab: 151_936,
            ffn: Ffn::GateUp,
            sandwich: false,
            experts: Some(experts),
            swa_pattern: 0,
            block: Block::Llama,
            rot: Rot::default(),
            qk_norm: false,
        };
        let o = run(7342, FlashAttention::On, 512);
        let part = Part { layers: 48, ..ONE_GPU };
        assert_eq!(compute_buffer(shape, &o, full(65_536), part, EVERY), (2048 + 151_936) * 512 * 4);
        assert_eq!(compute_buffer(shape, &o, full(65_536), part, EVERY), 30_075 * MIB / 100);
    }

    /// GLM-4.5-Air on b6168, `-c 131072 -ub 4096`, flash attention (fixture
    /// `llamacpp-b6168-glm45-air-mix-1gpu-fa-on`): 3,584.09 MiB logged. The
    /// peak is the first (dense) layer's attention, before the F32 mask is
    /// cast: embeddings, the small inputs (positions, both store indices,
    /// output ids), the F32 mask, Q with its bias in place, the RoPE'd Q (a
    /// new tensor: ggml-alloc never reuses a view, here the reshaped Q) and
    /// the F16 mask. Without the indices (builds before [`super::SET_ROWS_BUILD`]), 64 KiB less.
    #[test]
    fn glm45_peaks_at_the_mask_cast_beside_two_queries() {
        let experts = Experts {
            count: 128,
            used: 8,
            width: 1408,
            shared_width: 1408,
            dense_lead: 1,
            gating: Gating::Sigmoid,
            biases: false,
        };
        let shape = Shape {
            embd: 4096,
            ffn_width: 10_944,
            heads: 96,
            kv_heads: 8,
            head_dim: 128,
            vocab: 151_552,
            ffn: Ffn::GateUp,
            sandwich: false,
            experts: Some(experts),
            swa_pattern: 0,
            block: Block::Llama,
            rot: Rot::default(),
            qk_norm: false,
        };
        let (t, cells) = (4096, 131_072);
        let (q, mask) = (96 * 128 * t * 4, cells * t * 4);
        let small = t * (4 + 8 + 8 + 4);
        // The embeddings, and the attention norm's block, freed but too
        // small for the RoPE'd Q.
        let embd = 4096 * t * 4;
        let expected = embd + small + mask + embd + 2 * q + mask / 2;
        let part = Part { layers: 46, ..ONE_GPU };
        let o = |build| Options { n_batch: t, ..run(build, FlashAttention::On, t) };
        assert_eq!(compute_buffer(shape, &o(6168), full(cells), part, EVERY), expected);
        // 3,584.09 MiB as the log prints it.
        assert_eq!(expected * 100 / MIB, 358_409);
        assert_eq!(compute_buffer(shape, &o(SET_ROWS_BUILD - 1), full(cells), part, EVERY), expected - 16 * t);
    }

    fn gpt_oss_20b() -> Shape {
        let experts = Experts {
            count: 32,
            used: 4,
            width: 2880,
            shared_width: 0,
            dense_lead: 0,
            gating: Gating::SoftmaxWeight,
            biases: true,
        };
        Shape {
            embd: 2880,
            ffn_width: 2880,
            heads: 64,
            kv_heads: 8,
            head_dim: 64,
            vocab: 201_088,
            ffn: Ffn::GateUp,
            sandwich: false,
            experts: Some(experts),
            swa_pattern: 2,
            block: Block::Llama,
            rot: Rot::default(),
            qk_norm: false,
        }
    }

    /// gpt-oss-20b on b7217, Metal, `-c 0 -ub 2048` (n_ctx 131,072; the
    /// window cache `GGML_PAD(128 + 2048, 256)` = 2,304 cells), flash
    /// attention (a llama-cli transcript in a public repository the search
    /// tools did not name, stored-code index id 59932672849): 1,672.08
    /// MiB logged. One split: every input first (embeddings, positions, each
    /// cache's two store indices and F32 mask, output ids), the window mask's
    /// F16 cast, then layer 1 — the first full layer — casts the full mask
    /// above its norm, Q and RoPE'd Q. The closed form gave about 2,109.
    #[test]
    fn gpt_oss_casts_the_full_mask_in_its_second_layer() {
        let (t, e, q) = (2048, 2880, 64 * 64);
        let (full, window) = (131_072, 2304);
        let o = Options { n_batch: t, ..run(7217, FlashAttention::On, t) };
        let part = Part { layers: 24, ..ONE_GPU };
        let inputs = 4 * t * e + 4 * t + 4 * 8 * t + 4 * window * t + 4 * full * t + 4 * t;
        let expected = inputs + 2 * window * t + 4 * t * e + 2 * 4 * t * q + 2 * full * t;
        assert_eq!(compute_buffer(gpt_oss_20b(), &o, Cells { full, window }, part, EVERY), expected);
        assert_eq!(expected * 100 / MIB, 167_207);
        // Every layer over the whole cache would cast the full mask in layer 0.
        assert_ne!(compute_buffer(gpt_oss_20b(), &o, Cells { full, window: full }, part, EVERY), expected);
    }

    /// gpt-oss-20b on b6699, CUDA, `-c 131072 --n-cpu-moe 99`, `-ub 512`
    /// (window cache 768 cells), flash attention (the mainline run of
    /// ikawrakow/ik_llama.cpp#822): 456.98 MiB logged. Each MXFP4 expert
    /// tensor (32 × 2880 × 2880, 17 bytes a block of 32) is copied in by its
    /// own split. The full cache's mask and indices are first read in layer
    /// 1, so they are inputs of the split layer 0's down bias opens, and the
    /// F32 mask lands above layer 0's staging: the first layer's inputs, its
    /// F16 window mask, attention and `wo`, the gate copy, gate and up (down
    /// in up's place). The closed form gave 526.38; staged beside an
    /// unstaged replay, 413.52.
    #[test]
    fn gpt_oss_stages_its_experts_below_the_full_mask() {
        let (t, e, q, routed) = (512, 2880, 64 * 64, 4 * 2880);
        let (full, window) = (131_072, 768);
        let mxfp4 = 32 * 2880 * 2880 / 32 * 17;
        let o = run(6699, FlashAttention::On, t);
        let staged = Some(Staged { gate_up: mxfp4, down: mxfp4, from: 0, until: u64::MAX });
        let part = Part { layers: 24, staged, ..ONE_GPU };
        let layer0 = 4 * t * e + 4 * t + 2 * 8 * t + 4 * window * t + 2 * window * t + 4 * t * q + 4 * t * e;
        let expected = layer0 + mxfp4 + 2 * 4 * t * routed + 4 * full * t;
        assert_eq!(compute_buffer(gpt_oss_20b(), &o, Cells { full, window }, part, EVERY), expected);
        assert_eq!(expected * 100 / MIB, 45_698);
        let unstaged = compute_buffer(gpt_oss_20b(), &o, Cells { full, window }, Part { staged: None, ..part }, EVERY);
        assert_eq!(unstaged * 100 / MIB, 41_351);
    }

    /// Dense Llama layers left in host memory run on the GPU, each
    /// attention over copies of its K and V (`Host`). The Ollama 0.30
    /// Hermes 3 Llama 3.1 8B Q4_0 log (RTX 2060, 15 of 33 layers, `-c 32768
    /// -ub 512`, flash attention, one output row: fixture
    /// `ollama-030x-hermes3-llama31-8b-q40-2060-fit`) logs 248.00 MiB; the
    /// same llama-server (llama-cpp-python 0.3.36's vendored llama.cpp) on
    /// Mesa's llvmpipe Vulkan device, which stages weights and copies the
    /// caches as CUDA does, logged 248.00 for a Q4_0 GGUF of those shapes
    /// and the rest below (`GGML_SCHED_DEBUG=2` listed its splits: 12 a
    /// host layer; the two smaller models have no `rope_freqs`), the last
    /// three with `-ctk q8_0` and `-ctv f16` or `q8_0` (39.63, 37.75 and
    /// 66.63 MiB; without the rotations, `Rot`, 34.56 for the first), and
    /// the 8B at Ollama's `-ub 1024` with a Q8_0 cache and an F16 one.
    #[test]
    fn hosts_copy_each_layers_cache_beside_the_mask() {
        let q4 = |r: u64, c: u64| r * c / 32 * 18;
        // A cell of K or V (two KV heads of 128): F16 512 bytes, Q8_0 272.
        let (f16, q8) = (512, 272);
        // (embd, ffn, heads, kv heads, vocab, layers, -ngl, n_ctx, -ub, rope_freqs bytes,
        // K and V bytes per cell, MiB×100 logged)
        let cases = [
            (4096, 14_336, 32, 8, 128_256, 32, 15, 32_768, 512, 256, (2048, 2048), 24_800),
            (4096, 14_336, 32, 8, 128_256, 32, 10, 16_384, 512, 256, (2048, 2048), 16_000),
            (1024, 3584, 8, 2, 32_000, 8, 3, 8192, 512, 0, (f16, f16), 3856),
            (1024, 3584, 8, 2, 32_000, 8, 5, 4096, 1024, 0, (f16, f16), 6657),
            // `-ctk q8_0 -ctv f16` and `-ctk q8_0 -ctv q8_0`: each copy in its
            // own type (K and V as halves of the cell gave 38.56 for the first).
            (1024, 3584, 8, 2, 32_000, 8, 3, 8192, 512, 0, (q8, f16), 3963),
            (1024, 3584, 8, 2, 32_000, 8, 3, 8192, 512, 0, (q8, q8), 3775),
            (1024, 3584, 8, 2, 32_000, 8, 5, 4096, 1024, 0, (q8, q8), 6663),
            // Ollama's launch of Llama 3.1 8B (`-ngl 30 -c 32768 -np 2 -ub
            // 1024`, one unified cache): Q8_0 cells of 1,088 bytes a side,
            // 350.33 MiB; F16, 329.00.
            (4096, 14_336, 32, 8, 128_256, 32, 30, 32_768, 1024, 256, (1088, 1088), 35_033),
            (4096, 14_336, 32, 8, 128_256, 32, 30, 32_768, 1024, 256, (2048, 2048), 32_900),
        ];
        for (e, f, h, kv, vocab, n, ngl, ctx, ub, rope_freqs, (k_cell, v_cell), logged) in cases {
            let o = run(9849, FlashAttention::On, ub);
            let hd = e / h;
            let (q, kvw) = (q4(e, e), q4(kv * hd, e));
            let host = Host {
                layers: n + 1 - ngl,
                q,
                k: kvw,
                v: kvw,
                o: q,
                up: q4(f, e),
                down: q4(f, e),
                k_cache: ctx * k_cell,
                v_cache: ctx * v_cell,
                rope_freqs,
                experts: None,
            };
            // A quantized side (not F16's two bytes a value) rotated (`Rot`):
            // K's matrix 128 × 128, V's 64 × 64.
            let f16_cell = kv * hd * 2;
            let rot = Rot {
                k: if k_cell == f16_cell { 0 } else { 128 * 128 * 4 },
                v: if v_cell == f16_cell { 0 } else { 64 * 64 * 4 },
            };
            let shape = Shape { embd: e, ffn_width: f, heads: h, kv_heads: kv, head_dim: hd, rot, ..llama(vocab) };
            let part = Part { start: n + 1 - ngl, layers: ngl - 1, host: Some(host), ..ONE_GPU };
            let b = compute_buffer(shape, &o, full(ctx), part, 1);
            assert_eq!((b * 100 + MIB / 2) / MIB, logged, "{e} × {n} at -ngl {ngl}");
        }
        // A dense `qwen3` GGUF of the small shapes (its per-head norms'
        // weights staged by splits of their own, RoPE in place): 38.56 at
        // `-ngl 3 -c 8192`, 66.56 at `-ngl 5 -c 4096 -ub 1024` (66.57 as
        // Llama's layers).
        for (ngl, ctx, ub, logged) in [(3, 8192, 512, 3856), (5, 4096, 1024, 6656)] {
            let host = Host {
                layers: 9 - ngl,
                q: q4(1024, 1024),
                k: q4(256, 1024),
                v: q4(256, 1024),
                o: q4(1024, 1024),
                up: q4(3584, 1024),
                down: q4(3584, 1024),
                k_cache: ctx * f16,
                v_cache: ctx * f16,
                rope_freqs: 0,
                experts: None,
            };
            let shape = Shape {
                embd: 1024,
                ffn_width: 3584,
                heads: 8,
                kv_heads: 2,
                head_dim: 128,
                qk_norm: true,
                ..llama(32_000)
            };
            let part = Part { start: 9 - ngl, layers: ngl - 1, host: Some(host), ..ONE_GPU };
            let b = compute_buffer(shape, &run(9849, FlashAttention::On, ub), full(ctx), part, 1);
            assert_eq!((b * 100 + MIB / 2) / MIB, logged, "qwen3 at -ngl {ngl}");
        }
    }

    /// A quantized cache rotated (`Rot`): llama-server (llama-cpp-python
    /// 0.3.36's vendored llama.cpp, Mesa's llvmpipe Vulkan device with its
    /// graph reordering off, as CUDA keeps the graph's order) reserved these
    /// for a Q4_0 GGUF of 8 layers (1,024 wide, 3,584 FFN, 8 heads of 128,
    /// 2 KV heads, 32,000 tokens) fully offloaded at `-c 8192 -fa on`, its
    /// four slots' unified cache: K's 128 × 128 matrix, V's 64 × 64, and
    /// the rotated Q, K, V and output moving the FFN's tensors between
    /// holes (−1.92 MiB at `-ub 512` with both sides quantized; q4_0 the
    /// same as q8_0).
    #[test]
    fn a_quantized_cache_rotates_q_k_v_and_the_output() {
        let small = Shape { embd: 1024, ffn_width: 3584, heads: 8, kv_heads: 2, head_dim: 128, ..llama(32_000) };
        let (k, v) = (128 * 128 * 4, 64 * 64 * 4);
        // (K rotated, V rotated, -ub, MiB×100 logged)
        let cases = [
            (false, false, 512, 3501),
            (true, true, 512, 3309),
            (true, false, 512, 3507),
            (false, true, 512, 3303),
            (true, true, 1024, 6610),
            (false, false, 1024, 7002),
        ];
        for (rk, rv, ub, logged) in cases {
            let rot = Rot { k: if rk { k } else { 0 }, v: if rv { v } else { 0 } };
            let o = run(9849, FlashAttention::On, ub);
            let part = Part { layers: 8, ..ONE_GPU };
            let b = compute_buffer(Shape { rot, ..small }, &o, full(8192), part, 1);
            assert_eq!((b * 100 + MIB / 2) / MIB, logged, "K {rk}, V {rv}, -ub {ub}");
        }
    }

    /// The rig's `qwen3moe` GGUF: 1,024 wide, 32 experts of 512, 4 used, 8
    /// heads of 128, 2 KV heads, 32,000 tokens, Qwen3's head norms.
    fn small_qwen3_moe() -> Shape {
        let experts = Experts {
            count: 32,
            used: 4,
            width: 512,
            shared_width: 0,
            dense_lead: 0,
            gating: Gating::Softmax,
            biases: false,
        };
        let heads = Shape { embd: 1024, heads: 8, kv_heads: 2, head_dim: 128, qk_norm: true, ..llama(32_000) };
        Shape { ffn_width: 1536, experts: Some(experts), ..heads }
    }

    /// Qwen3-MoE's experts left in host memory (`--n-cpu-moe`) are staged
    /// on the GPU as gpt-oss's are (`Staged`): llama-server (llama-cpp-python
    /// 0.3.36's llama.cpp, Mesa's llvmpipe Vulkan device, graph order kept)
    /// reserved these for a `qwen3moe` Q4_0 GGUF of 6 layers (1,024 wide,
    /// 32 experts of 512, 4 used, 8 heads of 128, 2 KV heads, 32,000
    /// tokens) at `-c 4096 -np 1 -fa on`: 22.01 MiB with every expert on the
    /// GPU, 31.01 with the first 3 or all 6 layers' experts on the CPU at
    /// `-ub 512` (a 9 MiB expert stack on top), 53.02 at `-ub 1024`.
    #[test]
    fn qwen3_moe_stages_its_host_experts() {
        let shape = small_qwen3_moe();
        let stack = 32 * 512 * 1024 / 32 * 18;
        // (-ub, layers whose experts are on the CPU, MiB×100 logged)
        for (ub, until, logged) in [(512, 0, 2201), (512, 3, 3101), (512, 6, 3101), (1024, 6, 5302)] {
            let o = run(9849, FlashAttention::On, ub);
            let staged = (until > 0).then_some(Staged { gate_up: stack, down: stack, from: 0, until });
            let part = Part { layers: 6, staged, ..ONE_GPU };
            let b = compute_buffer(shape, &o, full(4096), part, 1);
            assert_eq!((b * 100 + MIB / 2) / MIB, logged, "-ub {ub}, --n-cpu-moe {until}");
        }
    }

    /// Qwen3-MoE layers left in host memory (`-ngl` short) run on the GPU
    /// as the dense ones do, Qwen3's per-head norms' weights and the
    /// router staged by splits of their own, then each expert stack: the
    /// `qwen3moe` GGUF of `qwen3_moe_stages_its_host_experts` on
    /// llama-server (the same rig) reserved 33.56 MiB at `-ngl 4` and
    /// `-ngl 2` (`-c 4096 -ub 512`), 57.56 at `-ub 1024` and 32.56 at `-ngl
    /// 5 -c 8192`.
    #[test]
    fn qwen3_moe_host_layers_stage_router_and_experts() {
        let shape = small_qwen3_moe();
        let q4 = |r: u64, c: u64| r * c / 32 * 18;
        let stack = q4(32 * 512, 1024);
        let router = 32 * 1024 * 4;
        // (-ngl, n_ctx, -ub, MiB×100 logged)
        for (ngl, ctx, ub, logged) in
            [(4, 4096, 512, 3356), (2, 4096, 512, 3356), (4, 4096, 1024, 5756), (5, 8192, 512, 3256)]
        {
            let o = run(9849, FlashAttention::On, ub);
            let staged = Staged { gate_up: stack, down: stack, from: 0, until: u64::MAX };
            let host = Host {
                layers: 7 - ngl,
                q: q4(1024, 1024),
                k: q4(256, 1024),
                v: q4(256, 1024),
                o: q4(1024, 1024),
                up: 0,
                down: 0,
                k_cache: ctx * 512,
                v_cache: ctx * 512,
                rope_freqs: 0,
                experts: Some((router, staged)),
            };
            let part = Part { start: 7 - ngl, layers: ngl - 1, host: Some(host), ..ONE_GPU };
            let b = compute_buffer(shape, &o, full(ctx), part, 1);
            assert_eq!((b * 100 + MIB / 2) / MIB, logged, "-ngl {ngl} -c {ctx} -ub {ub}");
        }
    }

    /// Gemma 4 26B-A4B QAT Q4_0 on b9849, Vulkan, `-c 8192 -ub 2048`, one
    /// slot (the window cache 1,024 + 2,048 = 3,072 cells), flash attention
    /// auto (fixture `llamacpp-b9849-vulkan-3090-gemma4-26b-a4b-qat-q4-np1`):
    /// 428.07 MiB logged. The first layer's experts set the peak: the split's
    /// inputs (embeddings, positions, both caches' store indices and F16
    /// masks — the global cache's read first in layer 5, 66.07 MiB), the
    /// experts' input norm, a 32 MiB hole where the attention's Q was, then
    /// the fused gate-up (88 MiB), its product (44) and `down` (176) above.
    /// One output row (b9849 ≥ `compute::OUTPUTS_MAX_BUILD`). The closed form
    /// gave 120.01; without the global layers' mask, 396.04.
    #[test]
    fn gemma4_stacks_its_experts_above_both_masks() {
        let experts = Experts {
            count: 128,
            used: 8,
            width: 704,
            shared_width: 0,
            dense_lead: 0,
            gating: Gating::Softmax,
            biases: false,
        };
        let global = Global { head_dim: 512, kv_heads: 2, k_eq_v: true };
        let shape = Shape {
            embd: 2816,
            ffn_width: 2112,
            heads: 16,
            kv_heads: 8,
            head_dim: 256,
            vocab: 262_144,
            ffn: Ffn::GateUp,
            sandwich: false,
            experts: Some(experts),
            swa_pattern: 6,
            block: Block::Gemma4(global),
            rot: Rot::default(),
            qk_norm: false,
        };
        let (t, e) = (2048, 2816);
        let o = Options { n_batch: t, ..run(9849, FlashAttention::On, t) };
        let cells = Cells { full: 8192, window: 3072 };
        let part = Part { layers: 30, ..ONE_GPU };
        let inputs = 4 * t * e + 4 * t + 4 * 8 * t + 2 * 3072 * t + 2 * 8192 * t + 128;
        let routed = 4 * t * 8 * 704;
        let expected = inputs + 4 * t * e + 16 * 512 * t * 4 / 2 + 2 * routed + routed + 4 * t * e * 8;
        assert_eq!(compute_buffer(shape, &o, cells, part, 1), expected);
        assert_eq!(expected * 100 / MIB, 42_807);
        // The window layers alone read neither the global cache's mask nor
        // its store indices, nor the output rows.
        let window_only = Part { layers: 5, output: false, ..part };
        assert_eq!(compute_buffer(shape, &o, cells, window_only, 1), expected - 2 * 8192 * t - 2 * 8 * t - 128);
    }
}
