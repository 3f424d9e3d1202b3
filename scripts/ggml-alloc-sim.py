#!/usr/bin/env python3
# The GLU builds' FFN (ggml_swiglu_split / ggml_swiglu, GGML_OP_GLU, never in place) is as in
# llama-cpp-python==0.3.12:vendor/llama.cpp/src/llama-graph.cpp build_ffn (llama.cpp a0374a67) and, by the log's
# "graph nodes = 999", in build b5781 (ba3ef86c5); absent from b5763 (8846aace, llama-cpp-python==0.3.10).
"""ggml-alloc over the GPU split of a llama.cpp graph (developer tool, not CI; issue 35).

Models `ggml_gallocr_alloc_graph_impl` and `ggml_dyn_tallocr_alloc/free` of
ggml/src/ggml-alloc.c (single chunk; best fit among the free blocks but the
last, else the last; in-place reuse of an own, non-view parent with one child
for the ops `ggml_op_can_inplace` lists; a parent freed when its children and
views are done; graph leaves never freed) over the graph llama.cpp reserves for
a prompt ubatch, as llama-cpp-python 0.3.9 vendors it (mainline of May 2025,
the rules of build b5192 in the fixtures; `glu=True` for builds from b5776, a0535ffa0).
shared/src/engines/llamacpp/graph.rs is the same replay in Rust (what Headroom
predicts with); this is the tool to trace it:

- the GPU split's inputs first, in the order the scheduler finds them
  (ggml-backend.cpp `ggml_backend_sched_split_graph`: copies of `inp_embd`,
  `inp_pos`, the F32 `KQ_mask` and `inp_out_ids`);
- with flash attention, the mask's `ggml_cast` to F16 on the GPU
  (src/llama-graph.cpp `build_attn_inp_kv_unified`; its `src[1]` is itself, so
  it lives until the last layer's `ggml_flash_attn_ext`); ggml-org/llama.cpp#23764
  (2026-05-27) reserves the mask in F16 on the host instead (`mask_on_host_f16=True`);
- each layer as `llm_build_llama` / `llm_build_glm4` build it (Q, K, V
  projections, RoPE, the KV stores, flash attention or KQ / soft_max / KQV,
  `wo`, the rows of `inp_out_ids` on the last layer, the FFN: gate and up, or
  GLM4's fused up split by two `ggml_cont` (`build_ffn`, LLM_FFN_SWIGLU)),
  then `result_norm` and the logits.

Prints the compute buffer each case would log. On the fixtures under
shared/tests/fixtures/startup/: GLM-Z1-32B (b5192, FA on) 353.00 MiB logged,
353.00 here; Mistral 7B at n_ctx 2048 / 32768 (FA off) 164.00 / 2144.00
logged, 164.00 / 2144.00 here; Llama 3.1 8B via Ollama (FA off) 560.00 logged,
560.00 here. The Vulkan Llama 3.1 8B (b5781, FA on) logs 613.01: with `glu=True` (b5781
builds the FFN with ggml_swiglu_split, an out-of-place GLU node) this gives
613.0078 from 3 layers on (517.00 with the pre-GLU in-place silu*up).

The first GPU's share of a MoE layer whose experts stay in host memory while
the layer lives on another GPU (`moe_host_experts`): DeepSeek-V3-0324
UD-Q2_K_XL on b5331 logs 3285.00 MiB on CUDA0, 3285.00 here with the q4_K
down experts its CPU model buffer implies (2809.00 with q3_K ones); the GLU
builds' out-of-place `ggml_swiglu_split` gives 3221.00.

    python3 scripts/ggml-alloc-sim.py            # the cases above
    python3 scripts/ggml-alloc-sim.py glm        # and the allocation trace of one
    python3 scripts/ggml-alloc-sim.py deepseek   # the trace of the expert layout
"""
import sys
MiB = 1 << 20
INPLACE = {"SCALE", "ADD", "MUL", "UNARY", "ROPE", "RMS_NORM", "SOFT_MAX", "DIV", "SUB"}
VIEWS = {"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"}


class T:
    def __init__(s, name, size, op="NONE", srcs=(), ext=False, view_src=None, view_off=0):
        s.name, s.size, s.op, s.srcs, s.ext = name, size, op, list(srcs), ext
        s.view_src, s.view_off = view_src, view_off


class Graph:
    def __init__(s):
        s.nodes, s.leafs, s.seen = [], [], set()

    def expand(s, t):
        if id(t) in s.seen:
            return
        s.seen.add(id(t))
        for p in t.srcs:
            if p is not t:
                s.expand(p)
        if t.op == "NONE":
            s.leafs.append(t)
        else:
            s.nodes.append(t)


class Alloc:
    def __init__(s, align=128):
        s.align, s.blocks, s.max = align, [[0, 1 << 60]], 0

    def alloc(s, size):
        size = -(-size // s.align) * s.align
        best, bsize = -1, None
        for i, (o, z) in enumerate(s.blocks[:-1]):
            if z >= size and (bsize is None or z <= bsize):
                best, bsize = i, z
        if best == -1:
            best = len(s.blocks) - 1
        o, z = s.blocks[best]
        s.blocks[best] = [o + size, z - size]
        if z - size == 0:
            del s.blocks[best]
        s.max = max(s.max, o + size)
        return o

    def free(s, off, size):
        size = -(-size // s.align) * s.align
        b = s.blocks
        for i in range(len(b)):
            if b[i][0] + b[i][1] == off:
                b[i][1] += size
                if i < len(b) - 1 and b[i][0] + b[i][1] == b[i + 1][0]:
                    b[i][1] += b[i + 1][1]
                    del b[i + 1]
                return
            if off + size == b[i][0]:
                b[i][0] = off
                b[i][1] += size
                if i > 0 and b[i - 1][0] + b[i - 1][1] == b[i][0]:
                    b[i - 1][1] += b[i][1]
                    del b[i]
                return
        j = 0
        while j < len(b) and b[j][0] < off:
            j += 1
        b.insert(j, [off, size])


def gallocr(seq, srcs_of, view_root, is_ext, reusable, inplace_ops, align=128, trace=False):
    """ggml_gallocr_alloc_graph_impl over `seq` (ggml/src/ggml-alloc.c): each node's sources, then
    the node, allocated; a node whose op may run in place (`inplace_ops`) takes the memory of an
    own, allocated parent (`reusable`) with this one child and no views; a parent is freed when its
    children and views are done, a view's source when its last view is. `srcs_of(n)` are the
    sources as this graph sees them (None for an absent one), `view_root(n)` a view's source,
    `is_ext(t)` whether `t` lives outside this allocator. Returns the buffer's peak."""
    a = Alloc(align)
    st = {}

    def h(t):
        return st.setdefault(id(t), dict(children=0, views=0, allocated=False, off=None))

    def allocate(t):
        hn = h(t)
        if is_ext(t) or hn["allocated"] or t.view_src is not None:
            return
        hn["allocated"] = True
        if t.op in inplace_ops:
            for p in srcs_of(t):
                if p is None or p is t or not reusable(p, t):
                    continue
                ph = h(p)
                # ggml_gallocr_is_own(parent) is its hash node's `allocated`, which a view never
                # sets (ggml_gallocr_allocate_node skips views): an op on a view is a new tensor
                if p.view_src is not None or not ph["allocated"]:
                    continue
                if ph["children"] == 1 and ph["views"] == 0:
                    hn["off"] = ph["off"]
                    ph["allocated"] = False
                    if trace:
                        print(f"  reuse {p.name} for {t.name}")
                    return
        hn["off"] = a.alloc(t.size)
        if trace:
            print(f"  alloc {t.name} {t.size / MiB:.3f} @ {hn['off'] / MiB:.3f} max {a.max / MiB:.3f}")

    def free(t):
        hn = h(t)
        a.free(hn["off"], t.size)
        hn["allocated"] = False
        if trace:
            print(f"  free {t.name} {t.size / MiB:.3f} @ {hn['off'] / MiB:.3f}")

    for n in seq:
        if n.view_src is not None:
            h(view_root(n))["views"] += 1
        for p in srcs_of(n):
            if p is not None:
                h(p)["children"] += 1
    for n in seq:
        for p in srcs_of(n):
            if p is not None:
                allocate(p)
        allocate(n)
        for p in srcs_of(n):
            if p is None:
                continue
            ph = h(p)
            ph["children"] -= 1
            if ph["children"] == 0 and ph["views"] == 0:
                if p.view_src is not None:
                    vs = view_root(p)
                    vh = h(vs)
                    vh["views"] -= 1
                    if vh["views"] == 0 and vh["children"] == 0 and vh["allocated"]:
                        free(vs)
                elif ph["allocated"]:
                    free(p)
    return a.max


def run(nodes, align=128, trace=False):
    """The dense graphs: every tensor here but the weights and caches (`ext`)."""
    return gallocr(
        nodes,
        srcs_of=lambda n: n.srcs,
        view_root=lambda n: n.view_src,
        is_ext=lambda t: t.ext,
        reusable=lambda p, t: not p.ext and p.size == t.size,
        inplace_ops=INPLACE,
        align=align,
        trace=trace,
    )


def llama(E, F, H, Hkv, D, V, T_, n_kv, L, fa=True, mask_on_host_f16=False, glm=False, ffn_fused=False, out=True,
          trace=False, layers=None, glu=False):
    f32 = lambda *d: 4 * __import__("math").prod(d)
    Tp = -(-T_ // 64) * 64
    W = lambda n: T(n, 0, ext=True)
    # split inputs, allocated at the start of the GPU split in discovery order
    embd = T("CUDA0#inp_embd#0", f32(E, T_))
    pos = T("CUDA0#inp_pos#0", 4 * T_)
    if fa and not mask_on_host_f16:
        maskf = T("CUDA0#KQ_mask#0", f32(n_kv, Tp))
        mask = T("KQ_mask (copy)", 2 * n_kv * Tp, "CPY", [maskf])
        mask.srcs.append(mask)
        inputs = [embd, pos, maskf]
    else:
        mask = T("CUDA0#KQ_mask#0", (2 if fa else 4) * n_kv * Tp)
        inputs = [embd, pos, mask]
    outids = T("CUDA0#inp_out_ids#0", 4 * T_)
    inputs.append(outids)
    g = Graph()
    for i in inputs:
        g.nodes.append(i)
        g.seen.add(id(i))
        i.op = "INPUTCPY"  # a node with no sources
    inpL = embd
    kcache, vcache = W("k_l"), W("v_l")
    for il in range(L):
        inpSA = inpL
        norm = T(f"norm-{il}", f32(E, T_), "RMS_NORM", [inpL])
        cur = T(f"attn_norm-{il}", f32(E, T_), "MUL", [norm, W("w")])
        q = T(f"Qcur-{il}", f32(H * D, T_), "MUL_MAT", [W("wq"), cur])
        k = T(f"Kcur-{il}", f32(Hkv * D, T_), "MUL_MAT", [W("wk"), cur])
        v = T(f"Vcur-{il}", f32(Hkv * D, T_), "MUL_MAT", [W("wv"), cur])
        qr = T(f"Qcur-{il} (reshaped)", q.size, "RESHAPE", [q], view_src=q)
        kr = T(f"Kcur-{il} (reshaped)", k.size, "RESHAPE", [k], view_src=k)
        vr = T(f"Vcur-{il} (reshaped)", v.size, "RESHAPE", [v], view_src=v)
        qrope = T(f"Qrope-{il}", q.size, "ROPE", [qr, pos])
        krope = T(f"Krope-{il}", k.size, "ROPE", [kr, pos])
        g.expand(qrope); g.expand(krope); g.expand(vr)
        kv = T("kview", 0, "VIEW", [kcache], ext=True)
        g.expand(T("cpyk", 0, "CPY", [krope, kv], ext=True))
        v2 = T(f"Vcur2d-{il}", v.size, "RESHAPE", [vr], view_src=v)
        vv = T("vview", 0, "VIEW", [vcache], ext=True)
        g.expand(T("cpyv", 0, "CPY", [v2, vv], ext=True))
        qp = T(f"q-{il}", q.size, "PERMUTE", [qrope], view_src=qrope)
        kk = T("k", 0, "VIEW", [kcache], ext=True)
        vvv = T("v", 0, "VIEW", [vcache], ext=True)
        if fa:
            o = T(f"fa-{il}", f32(D, H, T_), "FLASH_ATTN_EXT", [qp, kk, vvv, mask])
            o2 = T(f"kqv_out-{il}", o.size, "RESHAPE", [o], view_src=o)
        else:
            kq = T(f"kq-{il}", f32(n_kv, T_, H), "MUL_MAT", [kk, qp])
            sm = T(f"kq_soft_max-{il}", kq.size, "SOFT_MAX", [kq, mask])
            kqv = T(f"kqv-{il}", f32(D, T_, H), "MUL_MAT", [vvv, sm])
            mrg = T(f"kqv_merged-{il}", kqv.size, "PERMUTE", [kqv], view_src=kqv)
            o2 = T(f"kqv_merged_cont-{il}", kqv.size, "CONT", [mrg])
        cur = T(f"wo-{il}", f32(E, T_), "MUL_MAT", [W("wo"), o2])
        if il == L - 1 and out:
            cur = T("get_rows cur", cur.size, "GET_ROWS", [cur, outids])
            inpSA = T("get_rows inpSA", inpSA.size, "GET_ROWS", [inpSA, outids])
        if glm:
            n2 = T(f"pnorm-{il}", f32(E, T_), "RMS_NORM", [cur])
            cur = T(f"post_attn_norm-{il}", f32(E, T_), "MUL", [n2, W("w")])
        ffn_inp = T(f"ffn_inp-{il}", f32(E, T_), "ADD", [cur, inpSA])
        n3 = T(f"fnorm-{il}", f32(E, T_), "RMS_NORM", [ffn_inp])
        cur = T(f"ffn_norm-{il}", f32(E, T_), "MUL", [n3, W("w")])
        if ffn_fused and glu:  # GLU builds: ggml_swiglu(up) on the fused [2F] up, out of place
            up = T(f"ffn_up-{il}", f32(2 * F, T_), "MUL_MAT", [W("up"), cur])
            m = T(f"swiglu-{il}", f32(F, T_), "GLU", [up])
        elif ffn_fused:  # GLM4: up is [2F], swiglu via two conts (0.3.9 build_ffn LLM_FFN_SWIGLU)
            up = T(f"ffn_up-{il}", f32(2 * F, T_), "MUL_MAT", [W("up"), cur])
            x0v = T("x0v", f32(F, T_), "VIEW", [up], view_src=up)
            x0 = T(f"x0-{il}", f32(F, T_), "CONT", [x0v])
            x1v = T("x1v", f32(F, T_), "VIEW", [up], view_src=up, view_off=1)
            x1 = T(f"x1-{il}", f32(F, T_), "CONT", [x1v])
            s = T(f"silu-{il}", f32(F, T_), "UNARY", [x0])
            m = T(f"mul-{il}", f32(F, T_), "MUL", [s, x1])
        else:
            up = T(f"ffn_up-{il}", f32(F, T_), "MUL_MAT", [W("up"), cur])
            gate = T(f"ffn_gate-{il}", f32(F, T_), "MUL_MAT", [W("gate"), cur])
            if glu:  # GLU builds (b5781): ggml_swiglu_split(gate, up), a new tensor
                m = T(f"swiglu-{il}", f32(F, T_), "GLU", [gate, up])
            else:  # silu in place on gate, the product in place on silu
                s = T(f"silu-{il}", f32(F, T_), "UNARY", [gate])
                m = T(f"par-{il}", f32(F, T_), "MUL", [s, up])
        cur = T(f"ffn_down-{il}", f32(E, T_), "MUL_MAT", [W("down"), m])
        if glm:
            n4 = T(f"pfnorm-{il}", f32(E, T_), "RMS_NORM", [cur])
            cur = T(f"post_ffn_norm-{il}", f32(E, T_), "MUL", [n4, W("w")])
        cur = T(f"l_out-{il}", f32(E, T_), "ADD", [cur, ffn_inp])
        inpL = cur
    n = T("norm", f32(E, T_), "RMS_NORM", [inpL])
    rn = T("result_norm", f32(E, T_), "MUL", [n, W("w")])
    logits = T("result_output", f32(V, T_), "MUL_MAT", [W("out"), rn])
    g.expand(logits)
    return run(g.nodes, trace=trace)


def moe_host_experts(E, F, k, n_expert, T_, G, U, D, glu=False, trace=False):
    """The first GPU's share of one MoE layer whose routed experts stay in
    host memory while its attention (and router) run on another GPU: what
    ggml-backend.cpp `ggml_backend_sched_split_graph` puts on CUDA0 (op
    offload, batch >= 32). Each `MUL_MAT_ID` with a host weight opens a split
    of its own ("by starting a new split, the memory of the previously
    offloaded weights can be reused"), whose inputs (`ggml_dup_tensor_layout`
    copies) are allocated at its start in the order of the op's sources:
    the weight, the FFN input `cur` (from the layer's GPU), the top-k view of
    the router's argsort. Node order is the DFS of build_moe_ffn
    (src/llama-graph.cpp): gate first (src[0] of silu / swiglu), then up,
    then down; the weighting, the views and the adds run on CUDA0 too.
    `glu`: builds with `ggml_swiglu_split` (0.3.16, 0.3.36), which ggml-alloc
    cannot compute in place; 0.3.9 (b5331) does silu in place on gate and the
    product in place on silu."""
    f32 = lambda *d: 4 * __import__("math").prod(d)
    W = lambda n, size: T(n, size, "INPUTCPY")
    wg = W("CUDA0#blk.ffn_gate_exps.weight#0", G)
    cur = W("CUDA0#ffn_norm (reshaped)#0", f32(E, T_))
    # a view of argsort [n_expert, T]: its copy keeps the view's strides
    sel = W("CUDA0#ffn_moe_topk#0", 4 * k + (T_ - 1) * 4 * n_expert)
    gate = T("ffn_moe_gate", f32(F, k, T_), "MUL_MAT_ID", [wg, cur, sel])
    wu = W("CUDA0#blk.ffn_up_exps.weight#0", U)
    up = T("ffn_moe_up", f32(F, k, T_), "MUL_MAT_ID", [wu, cur, sel])
    if glu:
        par = T("ffn_moe_swiglu", f32(F, k, T_), "GLU", [gate, up])
        order = [wg, cur, sel, gate, wu, up, par]
    else:
        silu = T("ffn_moe_silu", f32(F, k, T_), "UNARY", [gate])
        par = T("ffn_moe_gate_par", f32(F, k, T_), "MUL", [silu, up])
        order = [wg, cur, sel, gate, silu, wu, up, par]
    wd = W("CUDA0#blk.ffn_down_exps.weight#0", D)
    down = T("ffn_moe_down", f32(E, k, T_), "MUL_MAT_ID", [wd, par, sel])
    probs = W("CUDA0#ffn_moe_probs#0", f32(n_expert, T_))
    weights = T("ffn_moe_weights", f32(1, k, T_), "GET_ROWS", [probs, sel])
    wsum = T("ffn_moe_weights_sum", f32(1, T_), "SUM_ROWS", [weights])
    wnorm = T("ffn_moe_weights_norm", weights.size, "DIV", [weights, wsum])
    wscaled = T("ffn_moe_weights_scaled", weights.size, "SCALE", [wnorm])
    experts = T("ffn_moe_weighted", down.size, "MUL", [down, wscaled])
    order += [wd, down, probs, weights, wsum, wnorm, wscaled, experts]
    views = [T(f"view{i}", f32(E, T_), "VIEW", [experts], view_src=experts) for i in range(k)]
    order += views
    moe = T("add0", f32(E, T_), "ADD", [views[0], views[1]])
    order.append(moe)
    for i in range(2, k):
        moe = T(f"add{i - 1}", f32(E, T_), "ADD", [moe, views[i]])
        order.append(moe)
    order.append(T("ffn_moe_out (copied to the layer's GPU)", 0, "NONE_DEP", [moe], ext=True))
    return run(order, trace=trace)


if __name__ == "__main__":
    cases = {
        # GLM-Z1-32B b5192: logged 353.00
        "glm": dict(E=6144, F=23040, H=48, Hkv=2, D=128, V=151552, T_=512, n_kv=32768, glm=True, ffn_fused=True),
        # Llama 3.1 8B b5781 Vulkan: logged 613.01 (a GLU build: graph nodes 999 = 32 x 31 + 7)
        "llama8b-vk": dict(E=4096, F=14336, H=32, Hkv=8, D=128, V=128256, T_=1024, n_kv=16384, glu=True),
        "llama8b-vk-preGLU": dict(E=4096, F=14336, H=32, Hkv=8, D=128, V=128256, T_=1024, n_kv=16384),
        # Ollama Llama 3.1 8B FA off: logged 560.00
        "llama8b-ollama-faoff": dict(E=4096, F=14336, H=32, Hkv=8, D=128, V=128256, T_=512, n_kv=8192, fa=False),
        # Mistral 7B 2k / 32k FA off: 164 / 2144
        "mistral-2k": dict(E=4096, F=14336, H=32, Hkv=8, D=128, V=32768, T_=512, n_kv=2048, fa=False),
        "mistral-32k": dict(E=4096, F=14336, H=32, Hkv=8, D=128, V=32768, T_=512, n_kv=32768, fa=False),
    }
    for k, c in cases.items():
        for L in (2, 4, 32):
            print(f"{k}: {L} layers, {llama(L=L, **c) / MiB:.4f} MiB")
    # DeepSeek-V3-0324 UD-Q2_K_XL on b5331 (fixture llamacpp-b5331-deepseek-v3-0324-4gpu-fa-on):
    # CUDA0 logs 3285.00. 256 experts of 2048 x 7168: q2_K 84 B / 256 weights (gate, up),
    # q3_K 110 B, q4_K 144 B (down; the log's CPU model buffer, 134253.11 MiB, is exactly
    # 34 x 2 x q2_K + 31 x q3_K + 3 x q4_K down experts + the q4_K token embedding).
    exps = 256 * 2048 * 7168 // 256
    q2k, q3k, q4k = 84 * exps, 110 * exps, 144 * exps
    moe = dict(E=7168, F=2048, k=8, n_expert=256, T_=1024)
    for name, d in (("q4_K", q4k), ("q3_K", q3k)):
        for glu in (False, True):
            v = moe_host_experts(G=q2k, U=q2k, D=d, glu=glu, **moe) / MiB
            print(f"deepseek-v3 b5331 CUDA0, host experts q2_K/q2_K/{name}, {'swiglu' if glu else 'silu*up'}: {v:.2f} MiB")
    if len(sys.argv) > 1 and sys.argv[1] == "deepseek":
        moe_host_experts(G=q2k, U=q2k, D=q4k, trace=True, **moe)
    elif len(sys.argv) > 1:
        llama(L=2, trace=True, **cases[sys.argv[1]])


# ---------------------------------------------------------------------------------------------
# MoE layers (qwen3moe, openai-moe / gpt-oss, glm4moe) on one GPU, as the builds of the logs
# build them. Sources read: llama-cpp-python 0.3.9 (vendor of May 2025: pre-GLU, b5271/b5622 rules),
# 0.3.16 (Aug 2025: GLU, ADD_ID, sinks, iswa, set_rows k/v idxs; b6168/b6699 rules) and
# 0.3.22 (gate_up fusion, ggml_top_k op, weights expanded before up; b7217/b7342 rules),
# src/llama-graph.cpp build_moe_ffn / build_attn_mha / build_attn_inp_kv_unified(_iswa),
# src/llama-model.cpp llm_build_qwen3moe / llm_build_openai_moe_iswa / llm_build_glm4_moe,
# ggml/src/ggml-alloc.c ggml_gallocr_allocate_node (view-parent reuse), ggml-backend.cpp
# ggml_backend_sched_split_graph (host weights open a split; inputs copied at split start).


class N:
    """A ggml tensor: bytes, op, sources, view_src, and whether its layout is contiguous
    (ggml_are_same_layout: a strided view is never reused in place)."""

    def __init__(s, name, size, op="NONE", srcs=(), view_src=None, contig=True, host=False, dev=True):
        s.name, s.size, s.op, s.srcs = name, size, op, list(srcs)
        s.view_src, s.contig, s.host, s.dev = view_src, contig, host, dev


INPLACE2 = INPLACE | {"ADD_ID"}


class G2:
    def __init__(s):
        s.nodes, s.seen = [], set()

    def expand(s, t):
        if t is None or id(t) in s.seen:
            return
        s.seen.add(id(t))
        for p in t.srcs:
            s.expand(p)
        if t.op != "NONE":
            s.nodes.append(t)


def alloc_run(g, inputs, align=128, trace=False):
    """ggml_gallocr_alloc_graph_impl over the GPU's graph copy. `inputs`: the split inputs
    (tensors on the host) -- each gets a device copy allocated at the start of the split that
    first uses it. A node reading a host weight (`host=True`) opens a split of its own when the
    running split already has inputs (ggml_backend_sched_split_graph), so its weight copy is
    allocated right before it."""
    nodes = [n for n in g.nodes if n.dev]
    # the graph copy: each split's input copies first (ggml_backend_sched_split_graph)
    copies = {id(p): N(f"{p.name}#copy", p.size, "INPUTCPY") for n in nodes for p in n.srcs
              if p is not None and (p.host or id(p) in inputs)}
    seq = []
    splits = [[]]
    have_inputs = False
    placed = set()
    for n in nodes:
        srcs = [p for p in n.srcs if p is not None and id(p) in copies]
        new = [p for p in srcs if id(p) not in placed]
        if any(p.host for p in new) and have_inputs:
            splits.append([])
            have_inputs = False
        for p in new:
            placed.add(id(p))
            splits[-1].insert(sum(1 for x in splits[-1] if x.op == "INPUTCPY"), copies[id(p)])
            have_inputs = True
        splits[-1].append(n)
    for sp in splits:
        seq.extend(sp)
    # sources as the device sees them
    def srcs_of(n):
        return [copies.get(id(p), p) if p is not None else None for p in n.srcs]

    def ext(t):
        return t.op == "NONE" or t.size == 0 and t.view_src is None

    return gallocr(
        seq,
        srcs_of=srcs_of,
        view_root=lambda n: copies.get(id(n.view_src), n.view_src),
        is_ext=ext,
        # a contiguous, own parent of the same size (not a view of a weight or cache)
        reusable=lambda p, t: not ext(p)
        and not (p.view_src is not None and ext(p.view_src))
        and p.size == t.size
        and p.contig,
        inplace_ops=INPLACE2,
        align=align,
        trace=trace,
    )


def moe_model(E, H, Hkv, D, V, T_, n_kv, L, n_expert, k, F, fa=True, glu=True, kidx=True, weights_first=False,
              qk_norm=False, qkv_bias=False, attn_out_bias=False, gating="softmax", norm_w=True, scale_w=False,
              gate_inp_b=False, exps_b=False, probs_b=False, oai=False, sinks=False, swa=None, n_kv_swa=0,
              dense_lead=0, F_dense=0, F_shexp=0, host_exps=None, topk_op=False, trace=False):
    """One GPU holding every layer and the output; experts on the GPU, or in host memory
    (`host_exps` = (gate, up, down, bias) bytes: staged copies, --n-cpu-moe / -ot exps=CPU).
    `swa`: the layers that use the sliding-window cache (gpt-oss: even layers,
    llama-hparams set_swa_pattern(2))."""
    f32 = lambda *d: 4 * __import__("math").prod(d)
    Tp = -(-T_ // 64) * 64
    W = lambda n: N(n, 0)
    HW = lambda n, size: N(n, size, host=True, dev=False)
    g = G2()
    inputs = set()

    def inp(name, size):
        t = N(name, size, "NONE", dev=False)
        t.op = "INPUT"
        inputs.add(id(t))
        return t

    def op(name, size, o, srcs, **kw):
        return N(name, size, o, srcs, **kw)

    def view(name, t, size=None, contig=True, off=0):
        # ggml_view_impl: a view of a view has the first one's base as view_src
        v = N(name, t.size if size is None else size, "VIEW", [t], view_src=t.view_src or t, contig=contig)
        v.view_off = off
        return v

    # the host-side inputs (llama-graph.cpp build_inp_embd / build_inp_pos / build_attn_inp_*)
    embd = inp("inp_embd", f32(E, T_))  # get_rows on the host's token_embd
    pos = inp("inp_pos", 4 * T_)
    kcache, vcache = W("cache_k"), W("cache_v")

    def mask_input(name, cells):
        m = inp(name, f32(cells, Tp))
        if fa:
            return op(name + " (f16)", 2 * cells * Tp, "CPY", [m])
        return m

    masks = {"full": mask_input("KQ_mask", n_kv)}
    if swa is not None:
        masks["swa"] = mask_input("KQ_mask_swa", n_kv_swa)
    idx = {}
    for kind in masks:
        idx[kind] = (inp(f"k_idxs_{kind}", 8 * T_), inp(f"v_idxs_{kind}", 8 * T_)) if kidx else (None, None)
    out_ids = inp("inp_out_ids", 4 * T_)

    def norm(x, name):
        n = op(name, x.size, "RMS_NORM", [x])
        return op(name + "_w", x.size, "MUL", [n, W("w")])

    def ffn_dense(cur, Fw, il, tag):
        up = op(f"{tag}_up-{il}", f32(Fw, T_), "MUL_MAT", [W("up"), cur])
        gate = op(f"{tag}_gate-{il}", f32(Fw, T_), "MUL_MAT", [W("gate"), cur])
        if glu:
            par = op(f"{tag}_swiglu-{il}", f32(Fw, T_), "GLU", [gate, up])
        else:
            s = op(f"{tag}_silu-{il}", f32(Fw, T_), "UNARY", [gate])
            par = op(f"{tag}_par-{il}", f32(Fw, T_), "MUL", [s, up])
        return op(f"{tag}_down-{il}", f32(E, T_), "MUL_MAT", [W("down"), par])

    def moe(cur, il):
        if host_exps:
            wg, wu, wd, wb = (HW(f"gate_exps-{il}", host_exps[0]), HW(f"up_exps-{il}", host_exps[1]),
                              HW(f"down_exps-{il}", host_exps[2]), host_exps[3])
        else:
            wg, wu, wd, wb = W("gate_exps"), W("up_exps"), W("down_exps"), 0
        bias = lambda n: HW(n + f"-{il}", wb) if (host_exps and wb) else W(n)
        logits = op(f"ffn_moe_logits-{il}", f32(n_expert, T_), "MUL_MAT", [W("gate_inp"), cur])
        if gate_inp_b:
            logits = op(f"ffn_moe_logits_biased-{il}", logits.size, "ADD", [logits, W("gate_inp_b")])
        if gating == "softmax":
            probs = op(f"ffn_moe_probs-{il}", logits.size, "SOFT_MAX", [logits])
        elif gating == "sigmoid":
            probs = op(f"ffn_moe_probs-{il}", logits.size, "UNARY", [logits])
        else:
            probs = logits
        sel_p = op(f"ffn_moe_probs_biased-{il}", probs.size, "ADD", [probs, W("probs_b")]) if probs_b else probs
        if topk_op:
            sel = op(f"ffn_moe_topk-{il}", 4 * k * T_, "TOP_K", [sel_p])
        else:
            arg = op(f"ffn_moe_argsort-{il}", 4 * n_expert * T_, "ARGSORT", [sel_p])
            sel = view(f"ffn_moe_topk-{il}", arg, 4 * k * T_, contig=False)
        w = op(f"ffn_moe_weights-{il}", f32(k, T_), "GET_ROWS", [view(f"probs3d-{il}", probs), sel])
        if gating == "softmax_weight":
            w = op(f"ffn_moe_weights_softmax-{il}", w.size, "SOFT_MAX", [view(f"w2d-{il}", w)])
            w = view(f"w3d-{il}", w)
        if norm_w:
            w2 = view(f"w2d-{il}", w)
            s = op(f"ffn_moe_weights_sum-{il}", f32(T_), "SUM_ROWS", [w2])
            if topk_op:  # the clamp of the sum (0.3.22)
                s = op(f"ffn_moe_weights_sum_clamped-{il}", s.size, "CLAMP", [s])
            w = op(f"ffn_moe_weights_norm-{il}", w.size, "DIV", [w2, s])
            w = view(f"w3d-{il}", w)
        if scale_w:
            w = op(f"ffn_moe_weights_scaled-{il}", w.size, "SCALE", [w])
        if weights_first:
            g.expand(w)
        cur3 = view(f"cur3d-{il}", cur)
        up = op(f"ffn_moe_up-{il}", f32(F, k, T_), "MUL_MAT_ID", [wu, cur3, sel])
        if exps_b:
            up = op(f"ffn_moe_up_biased-{il}", up.size, "ADD_ID", [up, bias("up_b"), sel])
        gate = op(f"ffn_moe_gate-{il}", f32(F, k, T_), "MUL_MAT_ID", [wg, cur3, sel])
        if exps_b:
            gate = op(f"ffn_moe_gate_biased-{il}", gate.size, "ADD_ID", [gate, bias("gate_b"), sel])
        if glu or oai:
            par = op(f"ffn_moe_swiglu-{il}", f32(F, k, T_), "GLU", [gate, up])
        else:
            s_ = op(f"ffn_moe_silu-{il}", gate.size, "UNARY", [gate])
            par = op(f"ffn_moe_gate_par-{il}", gate.size, "MUL", [s_, up])
        ex = op(f"ffn_moe_down-{il}", f32(E, k, T_), "MUL_MAT_ID", [wd, par, sel])
        if exps_b:
            ex = op(f"ffn_moe_down_biased-{il}", ex.size, "ADD_ID", [ex, bias("down_b"), sel])
        ex = op(f"ffn_moe_weighted-{il}", ex.size, "MUL", [ex, w])
        g.expand(ex)
        views = [view(f"expert{i}-{il}", ex, f32(E, T_), contig=False, off=i) for i in range(k)]
        for v_ in views:
            g.expand(v_)
        out = views[0]
        for i in range(1, k):
            out = op(f"ffn_moe_add{i}-{il}", f32(E, T_), "ADD", [out, views[i]])
            g.expand(out)
        return out

    inpL = embd
    for il in range(L):
        last = il == L - 1
        kind = "swa" if (swa is not None and swa(il)) else "full"
        cells = n_kv_swa if kind == "swa" else n_kv
        inpSA = inpL
        cur = norm(inpL, f"attn_norm-{il}")
        q = op(f"Qcur-{il}", f32(H * D, T_), "MUL_MAT", [W("wq"), cur])
        if qkv_bias:
            q = op(f"Qcur_b-{il}", q.size, "ADD", [q, W("bq")])
        kk = op(f"Kcur-{il}", f32(Hkv * D, T_), "MUL_MAT", [W("wk"), cur])
        if qkv_bias:
            kk = op(f"Kcur_b-{il}", kk.size, "ADD", [kk, W("bk")])
        v = op(f"Vcur-{il}", f32(Hkv * D, T_), "MUL_MAT", [W("wv"), cur])
        if qkv_bias:
            v = op(f"Vcur_b-{il}", v.size, "ADD", [v, W("bv")])
        q = view(f"Qr-{il}", q); kk = view(f"Kr-{il}", kk); v = view(f"Vr-{il}", v)
        if qk_norm:
            q = norm(q, f"Qnorm-{il}")
            kk = norm(kk, f"Knorm-{il}")
        q = op(f"Qrope-{il}", q.size, "ROPE", [q, pos])
        kk = op(f"Krope-{il}", kk.size, "ROPE", [kk, pos])
        g.expand(q); g.expand(kk); g.expand(v)
        ki, vi = idx[kind]
        g.expand(N(f"cpy_k-{il}", 0, "SET_ROWS" if kidx else "CPY", [kcache, view("k2d", kk), ki] if kidx else [kk, kcache], view_src=kcache))
        g.expand(N(f"cpy_v-{il}", 0, "SET_ROWS" if kidx else "CPY", [vcache, view("v2d", v), vi] if kidx else [v, vcache], view_src=vcache))
        qp = view(f"q-{il}", q, contig=False)
        kv_k, kv_v = N("k", 0, "VIEW", [kcache], view_src=kcache), N("v", 0, "VIEW", [vcache], view_src=vcache)
        fa_ok = fa and cells % 256 == 0
        if fa_ok:
            o = op(f"fa-{il}", f32(D, H, T_), "FLASH_ATTN_EXT", [qp, kv_k, kv_v, masks[kind]] + ([W("sinks")] if sinks else []))
            o = view(f"kqv_out-{il}", o)
        else:
            kq = op(f"kq-{il}", f32(cells, T_, H), "MUL_MAT", [kv_k, qp])
            kq = op(f"kq_soft_max-{il}", kq.size, "SOFT_MAX", [kq, masks[kind]] + ([W("sinks")] if sinks else []))
            kqv = op(f"kqv-{il}", f32(D, T_, H), "MUL_MAT", [kv_v, kq])
            o = op(f"kqv_merged_cont-{il}", kqv.size, "CONT", [view(f"kqv_merged-{il}", kqv, contig=False)])
        cur = op(f"wo-{il}", f32(E, T_), "MUL_MAT", [W("wo"), o])
        if attn_out_bias:
            cur = op(f"wo_b-{il}", cur.size, "ADD", [cur, W("bo")])
        if last:
            cur = op("get_rows cur", cur.size, "GET_ROWS", [cur, out_ids])
            inpSA = op("get_rows inpSA", inpSA.size, "GET_ROWS", [inpSA, out_ids])
        ffn_inp = op(f"ffn_inp-{il}", f32(E, T_), "ADD", [cur, inpSA])
        cur = norm(ffn_inp, f"ffn_norm-{il}")
        if il < dense_lead:
            out = ffn_dense(cur, F_dense, il, "ffn")
        else:
            out = moe(cur, il)
            if F_shexp:
                sh = ffn_dense(cur, F_shexp, il, "shexp")
                out = op(f"ffn_out-{il}", f32(E, T_), "ADD", [out, sh])
        cur = op(f"l_out-{il}", f32(E, T_), "ADD", [out, ffn_inp])
        g.expand(cur)
        inpL = cur
    rn = norm(inpL, "result_norm")
    g.expand(op("result_output", f32(V, T_), "MUL_MAT", [W("output"), rn]))
    return alloc_run(g, inputs, trace=trace)


if __name__ == "__main__":
    # The MoE logs (one GPU, every layer and the output on it), MiB logged:
    # Qwen3-Coder-30B-A3B b7342 300.75; GLM-4.5-Air b6168 3584.09; gpt-oss-20b b7217 Metal 1672.08;
    # gpt-oss-20b b6699 --n-cpu-moe 99 456.98 (MXFP4 experts staged: 32 x 2880 x 2880 x 17/32 B).
    q3 = dict(E=2048, H=32, Hkv=4, D=128, V=151936, T_=512, n_kv=65536, L=48, n_expert=128, k=8, F=768, qk_norm=True)
    glm = dict(E=4096, H=96, Hkv=8, D=128, V=151552, T_=4096, n_kv=131072, L=46, n_expert=128, k=8, F=1408,
               qkv_bias=True, gating="sigmoid", probs_b=True, scale_w=True, dense_lead=1, F_dense=10944, F_shexp=1408)
    oss = dict(E=2880, H=64, Hkv=8, D=64, V=201088, L=24, n_expert=32, k=4, F=2880, qkv_bias=True, attn_out_bias=True,
               gating="softmax_weight", norm_w=False, gate_inp_b=True, exps_b=True, oai=True, sinks=True,
               swa=lambda il: il % 2 == 0, n_kv=131072)
    mx = 32 * 2880 * 2880 * 17 // 32
    print(f"qwen3-coder b7342: {moe_model(**q3) / MiB:.2f} MiB (300.75 logged)")
    print(f"glm-4.5-air b6168: {moe_model(**glm) / MiB:.2f} MiB (3584.09 logged)")
    print(f"gpt-oss-20b b7217 metal: {moe_model(T_=2048, n_kv_swa=2304, **oss) / MiB:.2f} MiB (1672.08 logged)")
    print(f"gpt-oss-20b b6699 n-cpu-moe: {moe_model(T_=512, n_kv_swa=768, host_exps=(mx, mx, mx, 32 * 2880 * 4), **oss) / MiB:.2f} MiB (456.98 logged)")
