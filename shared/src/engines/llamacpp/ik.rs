//! ik_llama.cpp (github.com/ikawrakow/ik_llama.cpp), ikawrakow's fork of
//! llama.cpp, as a rule set of its own: the flags that change its memory
//! (`-mla`, `-amb`, `-fmoe`, `-rtr`), their defaults by build, and what
//! each does to the KV cache, the compute buffers and host memory. A plan
//! runs it with `Options::fork` = [`Fork::Ik`](super::Fork); its build
//! (`Options::build`) is then ik's own number: `git rev-list --count` of
//! ikawrakow/ik_llama.cpp, what its `build = N` prints. Forks of ik count
//! their own commits (Thireus' release b3912 is commit 18b0375 of
//! 2025-07-11, upstream's 3795).
//!
//! Sources, each at the commit named beside it: `common/common.{h,cpp}`
//! (flags, defaults), `src/llama.cpp` (`llama_kv_cache_init`, the
//! DeepSeek-2 graph, `llm_build_moe_ffn`, the model loader),
//! `ggml/src/ggml-cuda.cu` (`ggml_backend_cuda_offload_op`) and
//! `ggml/src/iqk/iqk_quantize.cpp` (repacking). The graph is 18b0375's
//! (the MoE FFN also 4084ca73's); later builds are followed where they
//! moved a default, a flag or the mask's type, each at its commit.

use super::{FlashAttention, Fork, Options, cache};
use crate::arch::{Mla, TextModel};
use crate::kv::{CachePart, LayerKv};

/// From 41d6c42b9 (#863, 2025-10-25, build 3928) flash attention and
/// `-fmoe` are on unless turned off (common/common.h `flash_attn = true`,
/// `fused_moe_up_gate = true`; `-no-fmoe` turns it off).
pub const FMOE_ON_BUILD: u64 = 3928;
/// From ddc88bac1 (#943, 2025-11-12, build 3983) `mla_attn = 3` by default
/// (common/common.h); 0 before.
pub const MLA3_BUILD: u64 = 3983;
/// From 37d82c231 (#2312, 2026-08-13, build 4832) `attn_max_batch = 256` by
/// default (common/common.h); 0 (no cap) before.
pub const AMB256_BUILD: u64 = 4832;
/// The `-amb` default from [`AMB256_BUILD`], MiB (common/common.h
/// `attn_max_batch = 256`).
pub const AMB_DEFAULT_MIB: u64 = 256;
/// From 4e24d48e6 (#825, 2025-10-13, build 3907) the KQ mask is made F16
/// directly with flash attention (src/llama-build-context.cpp
/// `build_inp_KQ_mask`); before it is F32 on the host and cast for the GPU
/// (src/llama.cpp@18b0375:10654).
pub const F16_MASK_BUILD: u64 = 3907;
/// `-amb` below this is raised to it from 8960c5ba5 (#1899, 2026-05-29,
/// build 4550: common/common.cpp "amb = %d is too low. Changing to 128");
/// builds before take any value.
pub const AMB_FLOOR_MIB: u64 = 128;
/// The build of that floor (8960c5ba5).
pub const AMB_FLOOR_BUILD: u64 = 4550;
/// From b2d0b7c8c (#2209, 2026-07-30, build 4761) `-ngl` left at -1 offloads
/// every layer when a GPU is found (src/llama.cpp `n_gpu_layers = n_gpu > 0 ?
/// 999 : 0`); builds before keep `llama_model_default_params`'
/// `n_gpu_layers = 0`, every layer on the CPU unless `-ngl` asks.
pub const NGL_AUTO_BUILD: u64 = 4761;
/// Prompt batches of at least this many tokens take the decompressing
/// path of `-mla 2/3` with flash attention (src/llama.cpp@18b0375:15506,
/// `pp_opt = n_tokens >= 128`).
pub const PP_OPT_TOKENS: u64 = 128;

/// `-fa` as the plan's ik build spells it (common/common.cpp at each
/// commit): a switch before [`FMOE_ON_BUILD`] (flash attention off by
/// default), then on by default with `-no-fa` to turn it off (874926800,
/// #944, build 3985, brought back `-fa on|off|auto` beside it).
pub(super) fn flash_attention_flag(o: Options) -> &'static str {
    match (since(o, FMOE_ON_BUILD), o.flash_attention) {
        (false, FlashAttention::On) => " -fa",
        (false, FlashAttention::Off) | (true, FlashAttention::On) => "",
        (true, FlashAttention::Off) => " -no-fa",
    }
}

/// ik's flags of a `llama-server` line for the plan, as its build spells
/// them: `-mla N`, `-amb N`, `-rtr` as set; `-fmoe` before
/// [`FMOE_ON_BUILD`] (which removed it for `-no-fmoe`, 41d6c42b9), `-no-fmoe`
/// from it.
pub(super) fn flags(o: Options) -> String {
    let mut out = String::new();
    if let Some(m) = o.mla {
        out.push_str(&format!(" -mla {m}"));
    }
    if let Some(n) = o.attn_max_batch_mib {
        out.push_str(&format!(" -amb {n}"));
    }
    match (o.fused_moe, since(o, FMOE_ON_BUILD)) {
        (Some(true), false) => out.push_str(" -fmoe"),
        (Some(false), true) => out.push_str(" -no-fmoe"),
        (Some(true), true) | (Some(false), false) | (None, _) => {}
    }
    if o.run_time_repack {
        out.push_str(" -rtr");
    }
    out
}

/// The ik flags a plan set, by name, for the refusal on mainline.
fn ik_flags(o: Options) -> Vec<&'static str> {
    [
        (o.mla.is_some(), "-mla/--mla-use"),
        (o.attn_max_batch_mib.is_some(), "-amb/--attention-max-batch"),
        (o.fused_moe.is_some(), "-fmoe/--fused-moe"),
        (o.run_time_repack, "-rtr/--run-time-repack"),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
    .collect()
}

/// Mainline llama.cpp has none of ik's flags (common/arg.cpp refuses them
/// as unknown arguments); ik takes `-mla` 0 to 3.
pub(super) fn check(o: Options) -> Result<(), String> {
    let set = ik_flags(o);
    if o.fork == Fork::Mainline && !set.is_empty() {
        return Err(format!(
            "{} {} ik_llama.cpp's: this plan runs mainline llama.cpp (--llamacpp-fork ik runs ik_llama.cpp)",
            set.join(", "),
            if set.len() == 1 { "is" } else { "are" }
        ));
    }
    if o.mla.is_some_and(|m| m > 3) {
        return Err("-mla takes 0, 1, 2 or 3".into());
    }
    Ok(())
}

/// Whether build `b` (`None`: the newest) is at least `from`.
fn since(o: Options, from: u64) -> bool {
    o.build.is_none_or(|b| b >= from)
}

/// The `-mla` mode ik runs: the plan's, else its build's default; `None`
/// on mainline.
pub fn mla(o: Options) -> Option<u8> {
    (o.fork == Fork::Ik).then(|| o.mla.unwrap_or(if since(o, MLA3_BUILD) { 3 } else { 0 }))
}

/// The `-amb` cap ik runs, MiB (0: none); 0 on mainline.
pub fn attn_max_batch_mib(o: Options) -> u64 {
    if o.fork != Fork::Ik {
        return 0;
    }
    let amb = o.attn_max_batch_mib.unwrap_or(if since(o, AMB256_BUILD) { AMB_DEFAULT_MIB } else { 0 });
    if amb > 0 && since(o, AMB_FLOOR_BUILD) { amb.max(AMB_FLOOR_MIB) } else { amb }
}

/// Whether ik fuses the experts' up and gate (`-fmoe`); never on mainline.
pub fn fused_moe(o: Options) -> bool {
    o.fork == Fork::Ik && o.fused_moe.unwrap_or(since(o, FMOE_ON_BUILD))
}

/// Whether the host's weights are repacked at load (`-rtr`), on ik only.
pub fn repacks(o: Options) -> bool {
    o.fork == Fork::Ik && o.run_time_repack
}

/// Each layer's cache of an MLA model on ik (`llama_kv_cache_init`,
/// src/llama.cpp@18b0375:3465ff), per token: with `-mla 0` the standard
/// K (`n_head × (nope + rope)`, type_k) and V (`n_head × v`, type_v); with
/// `-mla ≥ 1` the latent `c^KV` (`kv_lora_rank + rope`) only, in type_k
/// with flash attention, else in type_k for mode 1 (beside the transposed
/// latent `kv^T`, `kv_lora_rank` of type_v) and type_v for modes 2 and 3
/// (`kv_type = mla_attn == 1 ? type_k : type_v`; the transpose is made in
/// the graph). `None` when the model has no MLA or the plan is mainline.
pub(super) fn kv_layers(text: &TextModel, types: cache::Types, o: Options) -> Option<Vec<LayerKv>> {
    let crate::arch::AttentionKind::Mla(m) = text.attention else { return None };
    let mode = mla(o)?;
    let per_token = mla_bytes_per_token(text.num_heads, m, types, mode, o.flash_attention);
    Some(text.layers.iter().map(|l| crate::kv::layer_kv(l.attention, per_token)).collect())
}

/// [`kv_layers`]' bytes of one token of one layer.
pub(super) fn mla_bytes_per_token(heads: u64, m: Mla, types: cache::Types, mode: u8, fa: FlashAttention) -> u64 {
    let latent = m.kv_lora_rank.saturating_add(m.qk_rope_head_dim);
    match (mode, fa) {
        (0, _) => {
            let k = m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim);
            types.bytes(CachePart::Key, k, heads.saturating_mul(k)).saturating_add(types.bytes(
                CachePart::Value,
                m.v_head_dim,
                heads.saturating_mul(m.v_head_dim),
            ))
        }
        (_, FlashAttention::On) => types.bytes(CachePart::Key, latent, latent),
        (1, FlashAttention::Off) => types.bytes(CachePart::Key, latent, latent).saturating_add(types.bytes(
            CachePart::Value,
            m.kv_lora_rank,
            m.kv_lora_rank,
        )),
        (_, FlashAttention::Off) => types.bytes(CachePart::Value, latent, latent),
    }
}

/// The largest tensors of one MLA layer's attention for `-mla 2/3` with
/// flash attention on a prompt batch (`T ≥ 128` tokens): K and V
/// decompressed from the latent cache through `wkv_b`, `h` heads at a time
/// (src/llama.cpp@18b0375:15623-15715). `-amb` caps `kv_f32`: while it is
/// above the cap and the head count even, halve the heads
/// (`n_max_head /= 2`; later builds take the smallest divisor of the head
/// count that fits, build_deepseek2.cpp@HEAD:929, the same for DeepSeek's
/// 128 heads). For one group of heads the graph holds, over the
/// whole cache `K` (n_ctx padded to 256): `kv_f32 = h·(nope + v)·K` F32;
/// its V and K-nope parts cast to F16 (`h·v·K`, `h·nope·K`); the rope part
/// repeated to `h` heads, F16 (`h·rope·K`, with its F16 cast `rope·K`);
/// their concatenation K (`h·(nope + rope)·K`, F16); the attention output
/// `h·v·T` F32. Across the groups: the concatenated query
/// `H·(nope + rope)·T` F32 and the concatenated output `H·v·T` F32. Each is
/// the output of a `mul_mat`, a cast, a `repeat`, a `concat` or
/// `flash_attn_ext`, which ggml-alloc never computes in place, and each
/// group's `kv_f32` is the largest tensor of the graph, so it finds no gap
/// a group before freed (ggml/src/ggml-alloc.c `ggml_dyn_tallocr_alloc`):
/// the buffer holds their sum. `None` where ik takes another path.
pub(super) fn mla_decompressed(text: &TextModel, o: Options, ctx: u64) -> Option<u64> {
    let crate::arch::AttentionKind::Mla(m) = text.attention else { return None };
    let tokens = o.ubatch().min(ctx);
    if mla(o)? < 2 || o.flash_attention == FlashAttention::Off || tokens < PP_OPT_TOKENS {
        return None;
    }
    let kv = cache::pad(ctx);
    let heads = text.num_heads.max(1);
    let (nope, rope, v) = (m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim);
    let mib = 1u64 << 20;
    let amb = attn_max_batch_mib(o);
    // `kv_f32_size` in whole MiB, as the source divides it.
    let mut size = heads.saturating_mul(nope.saturating_add(v)).saturating_mul(kv).saturating_mul(4) / mib;
    let mut h = heads;
    while amb > 0 && h.is_multiple_of(2) && size > amb {
        h /= 2;
        size /= 2;
    }
    let f32s = |w: u64| w.saturating_mul(4);
    let f16s = |w: u64| w.saturating_mul(2);
    let group = f32s(h.saturating_mul(nope.saturating_add(v)).saturating_mul(kv))
        .saturating_add(f16s(h.saturating_mul(v).saturating_mul(kv)))
        .saturating_add(f16s(h.saturating_mul(nope).saturating_mul(kv)))
        .saturating_add(f16s(h.saturating_mul(rope).saturating_mul(kv)))
        .saturating_add(f16s(rope.saturating_mul(kv)))
        .saturating_add(f16s(h.saturating_mul(nope.saturating_add(rope)).saturating_mul(kv)))
        .saturating_add(f32s(h.saturating_mul(v).saturating_mul(tokens)));
    let across = f32s(heads.saturating_mul(nope.saturating_add(rope)).saturating_mul(tokens))
        .saturating_add(f32s(heads.saturating_mul(v).saturating_mul(tokens)));
    Some(group.saturating_add(across))
}

/// The heads whose scores one step of ik's attention holds without flash
/// attention, when `-amb` splits it: `kq_size = n_kv · T · H · 4` bytes in
/// whole MiB above the cap. Standard attention without GQA (K, V and Q of
/// the same head count) runs one head at a time (`llm_build_kqv`,
/// src/llama.cpp@18b0375:10201-10260: `n_per_step = 1`); MLA's latent
/// attention `ceil(H / n_step)` heads, `n_step = min(ceil(kq_size / amb),
/// H)` (src/llama.cpp@18b0375:15761-15800). Else all `heads`.
pub(super) fn score_heads(o: Options, heads: u64, kv_heads: u64, n_kv: u64, tokens: u64, latent: bool) -> u64 {
    let amb = attn_max_batch_mib(o);
    let kq_mib = n_kv.saturating_mul(tokens).saturating_mul(heads).saturating_mul(4) >> 20;
    if amb == 0 || amb >= kq_mib || heads == 0 {
        return heads;
    }
    if latent {
        let steps = kq_mib.div_ceil(amb).min(heads);
        heads.div_ceil(steps)
    } else if kv_heads == heads {
        1
    } else {
        heads
    }
}

/// Whether the CUDA backend takes an expert op whose weights stay in host
/// memory (ggml/src/ggml-cuda.cu@18b0375:3717, `ggml_backend_cuda_offload_op`):
/// only when `batch × experts used ≥ GGML_CUDA_MIN_BATCH_OFFLOAD (32) ×
/// experts`, the tokens each expert sees on average against mainline's
/// threshold. Host weights `-rtr` repacked are never taken: the repacked
/// types have no CUDA kernels (README.md@HEAD, "run-time repacking").
pub(super) fn stages_experts(o: Options, batch: u64, experts: u64, used: u64) -> bool {
    !repacks(o) && batch.saturating_mul(used) >= super::OP_OFFLOAD_MIN_BATCH.saturating_mul(experts)
}

/// The KQ masks a pipeline of GPUs holds with flash attention (ggml's
/// scheduler keeps `GGML_SCHED_MAX_COPIES` copies of each split's inputs,
/// ggml-backend.cpp pass 5; `masks`: the mask as the host builds it). Before
/// [`F16_MASK_BUILD`] the host builds it F32 and the graph casts it to F16
/// (`build_inp_KQ_mask`, src/llama.cpp@18b0375:10654); the cast is the
/// first GPU's first op on it, so that GPU receives the F32 copies and holds
/// the cast, and every later GPU receives the cast's F16 output as its own
/// input copies. From that build the host builds it F16 and every GPU
/// receives F16 copies.
pub(super) fn pipelined_masks(o: Options, masks: u64, first: bool) -> u64 {
    let copies = super::SCHED_COPIES;
    if o.mask_bytes() == 2 {
        return masks.saturating_mul(copies);
    }
    let f16 = masks / 2;
    if first { masks.saturating_mul(copies).saturating_add(f16) } else { f16.saturating_mul(copies) }
}

/// The widest point of an MoE layer's FFN in ik's graph, F32 elements per
/// token × 4 bytes (`llm_build_moe_ffn`, src/llama.cpp@4084ca73:9438 and
/// @18b0375): at the down projection the residual `ffn_inp` (E), the
/// up-gate product (`k·F`; with `-fmoe` one `ggml_moe_up_gate` output,
/// else the `up` and `gate` matmuls' two, which `ggml_fused_mul_unary`
/// reads), the experts' outputs (`k·E`) and their sum (`ggml_multi_add`, E).
/// `None` for a dense model or a mainline plan (Ollama's `GraphSize` rule
/// stands there).
pub(super) fn moe_ffn_width(t: &TextModel, o: Options) -> Option<u64> {
    let m = t.moe.filter(|_| o.fork == Fork::Ik)?;
    let products = if fused_moe(o) { 1 } else { 2 };
    let k = m.experts_per_token;
    let width = t
        .hidden_size
        .saturating_mul(2)
        .saturating_add(k.saturating_mul(m.expert_intermediate_size).saturating_mul(products))
        .saturating_add(k.saturating_mul(t.hidden_size));
    Some(width)
}
