//! The KV cache: bytes per token for every layer, chosen independently of the
//! weights, with sliding-window layers that stop at their window, MLA's single
//! latent, block rounding for paged engines and per-rank sharding under
//! tensor parallelism.

use serde::{Deserialize, Serialize};

use crate::arch::{AttentionKind, CompressedAttention, LayerAttention, TextModel};
use crate::formats::Bpw;

/// Storage type of the KV cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum KvDtype {
    F32,
    F16,
    Bf16,
    /// FP8 (vLLM `--kv-cache-dtype fp8`): 1 byte, per-tensor scales only.
    Fp8,
    /// int8 with an fp32 scale per token and head (vLLM `int8_per_token_head`).
    Int8,
    /// int4 with an fp16 scale and zero per 64 values (transformers'
    /// quantized cache with quanto/HQQ, `q_group_size=64`).
    Int4,
    /// llama.cpp `-ctk q8_0`: 34 bytes per 32 values.
    Q8_0,
    /// llama.cpp `-ctk q4_0`: 18 bytes per 32 values.
    Q4_0,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown KV cache dtype `{0}` (try bf16, fp16, fp32, fp8, int8, int4, q8_0, q4_0)")]
pub struct UnknownKvDtype(pub String);

impl KvDtype {
    pub const CHOICES: &[KvDtype] =
        &[Self::F32, Self::Bf16, Self::F16, Self::Fp8, Self::Int8, Self::Q8_0, Self::Int4, Self::Q4_0];

    pub fn id(self) -> &'static str {
        match self {
            Self::F32 => "fp32",
            Self::F16 => "fp16",
            Self::Bf16 => "bf16",
            Self::Fp8 => "fp8",
            Self::Int8 => "int8",
            Self::Int4 => "int4",
            Self::Q8_0 => "q8_0",
            Self::Q4_0 => "q4_0",
        }
    }

    pub fn parse(text: &str) -> Result<Self, UnknownKvDtype> {
        let s = text.trim().to_ascii_lowercase();
        Self::CHOICES
            .iter()
            .copied()
            .find(|d| d.id() == s)
            .or(match s.as_str() {
                "f32" | "float32" => Some(Self::F32),
                "f16" | "float16" => Some(Self::F16),
                "bfloat16" => Some(Self::Bf16),
                // vLLM's DeepSeek layout of an fp8 MLA cache (0.13 –
                // 0.34 `config/cache.py`): fp8 with scales, which
                // `layer_costs` gives a DSA model's fp8 cache.
                "fp8_e4m3" | "fp8_e5m2" | "fp8_ds_mla" => Some(Self::Fp8),
                // vLLM's int8 cache, from 0.20 (config/cache.py `CacheDType`).
                "int8_per_token_head" => Some(Self::Int8),
                _ => None,
            })
            .ok_or_else(|| UnknownKvDtype(text.trim().to_owned()))
    }

    /// Storage of one cached vector of `width` values (one head, or one MLA latent).
    pub fn bpw(self, width: u64) -> Bpw {
        let w = width.max(1);
        match self {
            Self::F32 => Bpw::whole(32),
            Self::F16 | Self::Bf16 => Bpw::whole(16),
            Self::Fp8 => Bpw::whole(8),
            Self::Int8 => Bpw::new(w.saturating_mul(8).saturating_add(32), w),
            Self::Int4 => Bpw::new(64 * 4 + 32, 64),
            Self::Q8_0 => Bpw::new(34 * 8, 32),
            Self::Q4_0 => Bpw::new(18 * 8, 32),
        }
    }
}

impl From<KvDtype> for String {
    fn from(d: KvDtype) -> String {
        d.id().into()
    }
}

impl TryFrom<String> for KvDtype {
    type Error = UnknownKvDtype;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

/// The cache cost of one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LayerKv {
    /// Bytes for one token in this layer (on one tensor-parallel rank).
    pub bytes_per_token: u64,
    /// Tokens after which the layer stops growing (`None`: never).
    pub window: Option<u64>,
    /// A DeepSeek-V4 layer's caches beside its sliding window (which the
    /// two fields above hold): compressed entries stored by the page, and
    /// the compressor's running state.
    pub compressed: Option<CompressedKv>,
}

/// DeepSeek-V4's compressed caches of one layer, as vLLM 0.34 pages them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompressedKv {
    /// Tokens one page covers (vLLM's block of the compressed caches).
    pub page_tokens: u64,
    /// Bytes of one page: the compressed entries of `page_tokens` tokens
    /// and the indexer's keys over them, each padded as the engine pads it.
    pub page_bytes: u64,
    /// The compressor's state per token of its own window (fp32).
    pub state_bytes_per_token: u64,
    /// Tokens the compressor's state spans.
    pub state_window: u64,
}

impl LayerKv {
    /// A layer of `bytes_per_token` that holds at most `window` tokens.
    pub fn new(bytes_per_token: u64, window: Option<u64>) -> Self {
        Self { bytes_per_token, window, compressed: None }
    }

    /// Tokens this layer holds for a sequence of `seq_len` tokens.
    pub fn tokens_held(self, seq_len: u64) -> u64 {
        self.window.map_or(seq_len, |w| seq_len.min(w))
    }

    /// Bytes of a compressed layer's caches beyond its window for a
    /// sequence of `seq_len` tokens (whole pages, and the compressor state).
    pub fn compressed_bytes(self, seq_len: u64) -> u64 {
        self.compressed.map_or(0, |c| {
            let pages = seq_len.div_ceil(c.page_tokens.max(1)).saturating_mul(c.page_bytes);
            pages.saturating_add(seq_len.min(c.state_window).saturating_mul(c.state_bytes_per_token))
        })
    }

    /// Bytes per token while the layer is still growing: its own, the
    /// compressed pages' share (rounded up) and the compressor state's.
    pub fn growing_bytes_per_token(self) -> u64 {
        self.bytes_per_token.saturating_add(
            self.compressed
                .map_or(0, |c| c.page_bytes.div_ceil(c.page_tokens.max(1)).saturating_add(c.state_bytes_per_token)),
        )
    }
}

/// Per-layer KV costs for a dtype on one of `tp` tensor-parallel ranks.
///
/// Under TP each rank holds `max(1, kv_heads / tp)` KV heads: heads are
/// replicated, not split, when `tp` exceeds them (vLLM and SGLang
/// `get_num_kv_heads`). MLA's latent is not split by heads: every rank keeps
/// the whole latent.
pub fn layer_costs(text: &TextModel, dtype: KvDtype, tp: u64) -> Vec<LayerKv> {
    if let AttentionKind::Compressed(c) = text.attention {
        return text.layers.iter().map(|l| compressed_layer(c, l.shape.compress_ratio, dtype)).collect();
    }
    let scaled = scaled_fp8_latent(text, dtype);
    layer_costs_by(text, tp, |part, width, elements| match (part, scaled) {
        // DSA's indexer keys: vLLM 0.33 keeps them in FP8 with an fp32
        // scale per 128 values whatever the KV dtype (deepseek_v2.py,
        // `Indexer.k_cache`: head_dim + head_dim / 128 × 4 bytes).
        (CachePart::IndexerKey, _) => elements.saturating_add(elements / 128 * 4),
        (CachePart::Key, Some(latent)) if width == latent.width => latent.bytes,
        (CachePart::Key | CachePart::Value, _) => dtype.bpw(width).bytes(elements),
    })
}

/// A DSA model's MLA latent in FP8, as the sparse-attention kernels store
/// it: FlashMLA's "FP8 with scale" row of the latent in fp8, one fp32 scale
/// per 128 of its values and the RoPE part left in bf16, 656 bytes for the
/// 512 + 64 of DeepSeek-V3.2 and GLM-5 where a plain fp8 cache would take
/// 576.
/// - vLLM 0.11 – 0.34 `v1/attention/backends/mla/flashmla_sparse.py`
///   (`fp8_ds_mla`: "each token's KV cache is 656 Bytes", its
///   `get_kv_cache_shape` `(num_blocks, block_size, 656)`); from 0.19
///   `layers/attention/mla_attention.py` turns any fp8 cache into
///   `fp8_ds_mla` on the FLASHMLA_SPARSE backend (0.34
///   `_canonicalize_sparse_mla_kv_cache_dtype`).
/// - SGLang 0.5.23 `mem_cache/kv_cache_configurator.py`
///   `calculate_mla_kv_cache_dim`: `kv_lora_rank + kv_lora_rank //
///   quant_block_size * 4 + qk_rope_head_dim * rope_storage_dtype.itemsize`
///   for `float8_e4m3fn` (`DSATokenToKVPool.quant_block_size` 128, rope in
///   bf16); 0.5.8.post1 on ROCm logs the same (GLM-5-FP8 at TP8: 186.77 GB
///   for 3,262,823 tokens = 78 layers × (656 + the indexer's 132) bytes).
///
/// Left at the plain 576: the backends that keep the raw layout (vLLM's
/// FLASHINFER_MLA_SPARSE, SGLang 0.5.23's `trtllm` DSA backend, which it
/// picks on Blackwell), which depend on the GPU this cost does not see.
/// SGLang's ROCm backends are not among them: the 0.5.8.post1 MI355X log
/// above stores 656.
fn scaled_fp8_latent(text: &TextModel, dtype: KvDtype) -> Option<ScaledLatent> {
    /// `DSATokenToKVPool.quant_block_size` (SGLang 0.5.23 `memory_pool.py`),
    /// FlashMLA's tile of 128 values per fp32 scale.
    const TILE: u64 = 128;
    let AttentionKind::Mla(m) = text.attention else { return None };
    if dtype != KvDtype::Fp8 || m.indexer.is_none() || text.cache_from_tensors.is_some() {
        return None;
    }
    let scales = m.kv_lora_rank.div_ceil(TILE).saturating_mul(4);
    Some(ScaledLatent {
        width: m.kv_lora_rank.saturating_add(m.qk_rope_head_dim),
        bytes: m.kv_lora_rank.saturating_add(scales).saturating_add(m.qk_rope_head_dim.saturating_mul(2)),
    })
}

/// One DeepSeek-V4 layer's caches as vLLM 0.34 specifies them (its
/// `get_kv_cache_spec`s; one KV head, `max_tp_shards=1`: whole on every
/// rank). Every page is rounded up to `alignment` bytes
/// (`kv_cache_interface.py::_apply_alignment_padding`):
/// - the sliding window, every layer: `DeepseekV4SWACache`
///   (v1/attention/backends/mla/sparse_swa.py), `sliding_window` tokens in
///   blocks of 64;
/// - the compressed entries, a layer with a ratio: `DeepseekV4Attention.
///   get_kv_cache_spec` (models/deepseek_v4/attention.py), one entry per
///   `ratio` tokens (`tokens_per_state`) in blocks of 256 tokens (the sparse
///   MLA backend's only kernel block, sparse_mla.py
///   `get_supported_kernel_block_sizes`);
/// - the indexer's keys, a compressed sparse layer: `DeepseekV4IndexerCache`
///   (attention.py), fp8 with an fp32 scale per 128 values (132 bytes for
///   128), one per entry, in the same blocks;
/// - the compressors' state: `CompressorStateCache` (compressor.py), fp32 of
///   `2 × coff × head_dim` per token (`coff` 2 where windows overlap, the
///   indexed ratio) over `coff × ratio` tokens, in blocks of 4 (ratio 4) or
///   8 tokens; the indexer's own compressor too, at its head width.
///
/// The row: with an fp8 cache (`auto` on the FlashMLA and SM120 backends,
/// `_resolve_dsv4_kv_cache_dtype`) the `fp8_ds_mla` layout, 584 bytes (448
/// fp8 values, 64 rotary values in bf16, 8 scale bytes) with pages padded to
/// 576; otherwise plain rows of `head_dim` values with pages padded to 512
/// (`FLASHINFER_MLA_SPARSE_DSV4`).
fn compressed_layer(c: CompressedAttention, ratio: u64, dtype: KvDtype) -> LayerKv {
    let caches = vllm_v4_caches(c, ratio, dtype);
    let per_token = |cache: &VllmV4Cache| cache.page_bytes.div_ceil(cache.block.max(1));
    let pages_of =
        |role: &[V4CacheRole]| -> u64 { caches.iter().filter(|x| role.contains(&x.role)).map(|x| x.page_bytes).sum() };
    let window = caches.iter().find(|x| x.role == V4CacheRole::Window).map_or(0, per_token);
    let Some(compressed) = caches.iter().find(|x| x.role == V4CacheRole::Compressed) else {
        return LayerKv::new(window, Some(c.window));
    };
    let states = caches.iter().filter(|x| matches!(x.role, V4CacheRole::State | V4CacheRole::IndexerState));
    LayerKv {
        bytes_per_token: window,
        window: Some(c.window),
        compressed: Some(CompressedKv {
            page_tokens: compressed.block,
            page_bytes: pages_of(&[V4CacheRole::Compressed, V4CacheRole::Indexer]),
            state_bytes_per_token: states.clone().map(per_token).sum(),
            state_window: states.map(|x| x.window.unwrap_or(0)).max().unwrap_or(0),
        }),
    }
}

/// Which of a DeepSeek-V4 layer's caches a [`VllmV4Cache`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V4CacheRole {
    /// `DeepseekV4SWACache`, every layer.
    Window,
    /// The compressed entries (`DeepseekV4Attention.get_kv_cache_spec`).
    Compressed,
    /// The indexer's keys (`DeepseekV4IndexerCache`).
    Indexer,
    /// The attention compressor's state (`CompressorStateCache`).
    State,
    /// The indexer compressor's state (`CompressorStateCache`).
    IndexerState,
}

/// One cache of a DeepSeek-V4 layer as vLLM 0.34 specifies it: what its
/// `get_kv_cache_spec` returns, which vLLM's KV cache groups pack
/// (`engines::vllm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VllmV4Cache {
    pub role: V4CacheRole,
    /// Tokens one block covers (the spec's `block_size`).
    pub block: u64,
    /// A `SlidingWindowMLASpec`'s `sliding_window`; `None` for an
    /// `MLAAttentionSpec` (a full-attention cache).
    pub window: Option<u64>,
    /// `page_size_bytes`: one block, padded to the spec's `alignment`
    /// (`kv_cache_interface.py::_apply_alignment_padding`).
    pub page_bytes: u64,
}

/// The caches of one DeepSeek-V4 layer compressing by `ratio` (0: the
/// window alone), in the order the layer builds them; see
/// [`compressed_layer`] for their sources.
pub fn vllm_v4_caches(c: CompressedAttention, ratio: u64, dtype: KvDtype) -> Vec<VllmV4Cache> {
    /// `DeepseekV4SWACache`'s `block_size` default (sparse_swa.py).
    const SWA_BLOCK: u64 = 64;
    /// The sparse MLA backend's kernel block (sparse_mla.py), the cache
    /// config's block for the compressed caches.
    const COMPRESSED_BLOCK: u64 = 256;
    /// `packed_bytes_per_token` (sparse_swa.py) and `state_content_bytes`
    /// (attention.py): "448B NoPE + 128B RoPE + 8B fp8 scale = 584B".
    const DS_MLA_ROW: u64 = 584;
    /// The indexer's fp8 keys carry an fp32 scale per this many values
    /// (attention.py `DeepseekV4Indexer.quant_block_size`).
    const INDEXER_SCALE_BLOCK: u64 = 128;
    let ds_mla = dtype == KvDtype::Fp8;
    let (row, alignment) = if ds_mla { (DS_MLA_ROW, 576) } else { (dtype.bpw(c.head_dim).bytes(c.head_dim), 512) };
    let page = |states: u64, state_bytes: u64| states.saturating_mul(state_bytes).next_multiple_of(alignment);
    let cache = |role, block, window, page_bytes| VllmV4Cache { role, block, window, page_bytes };
    let mut caches = vec![cache(V4CacheRole::Window, SWA_BLOCK, Some(c.window), page(SWA_BLOCK, row))];
    if ratio == 0 {
        return caches;
    }
    let entries = COMPRESSED_BLOCK / ratio.max(1);
    let indexed = c.indexed(ratio);
    let ix = c.indexer.head_dim;
    // `CompressorStateCache`: blocks of 4 tokens at ratio 4, 8 at 128, over
    // `coff × ratio` tokens, fp32 of `2 × coff × head_dim` a token.
    let coff = if indexed { 2 } else { 1 };
    let state_block = if ratio == 4 { 4 } else { 8 };
    let state_window = Some(coff * ratio);
    let state = |width: u64| page(state_block, width.saturating_mul(2 * coff * 4));
    caches.push(cache(V4CacheRole::Compressed, COMPRESSED_BLOCK, None, page(entries, row)));
    caches.push(cache(V4CacheRole::State, state_block, state_window, state(c.head_dim)));
    if indexed {
        let indexer_row = ix.saturating_add(ix / INDEXER_SCALE_BLOCK * 4);
        caches.push(cache(V4CacheRole::Indexer, COMPRESSED_BLOCK, None, page(entries, indexer_row)));
        caches.push(cache(V4CacheRole::IndexerState, state_block, state_window, state(ix)));
    }
    caches
}

/// [`scaled_fp8_latent`]: the latent's values and the bytes they take.
#[derive(Debug, Clone, Copy)]
struct ScaledLatent {
    width: u64,
    bytes: u64,
}

/// Which of a layer's caches a vector belongs to (MLA's latent is a key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachePart {
    Key,
    Value,
    /// DSA's lightning-indexer key (DeepSeek-V3.2, GLM-5): one vector of
    /// the indexer's head width per token, stored as each engine keeps it
    /// (or not at all).
    IndexerKey,
}

/// [`layer_costs`] with each cache's storage given by `cost(part, width,
/// elements)`: the bytes of `elements` values cached per token in vectors of
/// `width` (an engine with separate key and value types, llama.cpp's
/// `--cache-type-k` / `--cache-type-v`).
pub fn layer_costs_by(text: &TextModel, tp: u64, cost: impl Fn(CachePart, u64, u64) -> u64) -> Vec<LayerKv> {
    if let Some(cache) = &text.cache_from_tensors {
        return cache
            .iter()
            .zip(&text.layers)
            .map(|(c, l)| {
                let heads = if c.kv_heads == 0 { 0 } else { kv_heads_per_rank(c.kv_heads, tp) };
                let k = cost(CachePart::Key, c.key_dim, heads.saturating_mul(c.key_dim));
                let v = if c.value_dim == 0 {
                    0
                } else {
                    cost(CachePart::Value, c.value_dim, heads.saturating_mul(c.value_dim))
                };
                let window = match l.attention {
                    LayerAttention::Sliding(w) | LayerAttention::Chunked(w) => Some(w),
                    LayerAttention::Full | LayerAttention::Cross | LayerAttention::None => None,
                };
                LayerKv::new(k.saturating_add(v), window)
            })
            .collect();
    }
    // Standard attention: keys and values of this layer's KV heads (a layer
    // may have its own count, `LayerSpec::heads`).
    let standard = |kv_heads: u64, (key, value): (u64, u64)| {
        let heads = kv_heads_per_rank(kv_heads, tp);
        let k = cost(CachePart::Key, key, heads.saturating_mul(key));
        let v = cost(CachePart::Value, value, heads.saturating_mul(value));
        k.saturating_add(v)
    };
    let (per_token, indexer) = match text.attention {
        AttentionKind::Standard { .. } => (standard(text.num_kv_heads, (text.head_dim, text.v_head_dim)), 0),
        AttentionKind::Mla(m) => {
            let latent = m.kv_lora_rank.saturating_add(m.qk_rope_head_dim);
            let indexer = m.indexer.map_or(0, |ix| cost(CachePart::IndexerKey, ix.head_dim, ix.head_dim));
            (cost(CachePart::Key, latent, latent), indexer)
        }
        // DeepSeek-V4's sliding window (one key that is also the value);
        // its compressed caches are vLLM's layout, `layer_costs`.
        AttentionKind::Compressed(c) => (cost(CachePart::Key, c.head_dim, c.head_dim), 0),
    };
    text.layers
        .iter()
        .map(|l| {
            // A layer reading an earlier layer's cache keeps none (Gemma 4's
            // KV-shared layers). Keys that also serve as values are still
            // cached twice: the keys get k_norm and RoPE, the values v_norm,
            // and both go to the cache (transformers 5.24
            // `Gemma4TextAttention.forward`; vLLM 0.25.1 gemma4.py loads the
            // K weights into both halves of `qkv_proj` and hands K and V to
            // `Attention`; SGLang 0.5.23 gemma4_causal.py the same into
            // `RadixAttention`; ik_llama.cpp build_gemma4.cpp sets
            // `Vcur = Kcur`, then normalises and stores each).
            if l.shape.kv_shared {
                return LayerKv::new(0, None);
            }
            // A DSA layer that reuses an earlier layer's top k (GLM-5.2's
            // "shared" `indexer_types`) has no indexer in the checkpoint, so
            // it caches no indexer keys: vLLM 0.34 builds none
            // (models/deepseek_v32/attention.py, `compute_skip_topk_layers`),
            // SGLang 0.5.23 gives it 0 rows and sizes its pool without them
            // (model_executor/pool_configurator.py
            // `_compute_dsa_indexer_cell_size`, `dsa_layer_skips_topk`),
            // llama.cpp keeps its indexer cache on "full" layers alone.
            let per_token = match text.attention {
                AttentionKind::Standard { .. } if l.shape.kv_heads != 0 || l.shape.head_dim != 0 => {
                    standard(l.kv_heads(text.num_kv_heads), l.head_dims(text.head_dim, text.v_head_dim))
                }
                AttentionKind::Mla(_) if !l.shape.indexer_shared => per_token.saturating_add(indexer),
                _ => per_token,
            };
            layer_kv(l.attention, per_token)
        })
        .collect()
}

pub(crate) fn layer_kv(attention: LayerAttention, per_token: u64) -> LayerKv {
    match attention {
        LayerAttention::Full => LayerKv::new(per_token, None),
        LayerAttention::Sliding(w) => LayerKv::new(per_token, Some(w)),
        // Llama 4's chunked layers attend within their chunk of
        // `attention_chunk_size` tokens: the cache holds at most one chunk
        // (transformers' `ChunkedSlidingLayer`, vLLM's
        // `ChunkedLocalAttentionSpec`).
        LayerAttention::Chunked(c) => LayerKv::new(per_token, Some(c)),
        // Cross-attention caches the image once; recurrent and FFN-only
        // layers keep no per-token cache (their state is in `crate::state`).
        LayerAttention::Cross | LayerAttention::None => LayerKv::new(0, None),
    }
}

/// KV heads one rank holds.
pub fn kv_heads_per_rank(kv_heads: u64, tp: u64) -> u64 {
    let tp = tp.max(1);
    if tp >= kv_heads { 1 } else { kv_heads.div_ceil(tp) }
}

/// Bytes per token while every layer is still growing (the steepest slope).
pub fn bytes_per_token(layers: &[LayerKv]) -> u64 {
    layers.iter().fold(0u64, |acc, l| acc.saturating_add(l.growing_bytes_per_token()))
}

/// Bytes for one sequence of `seq_len` tokens; with `block` (paged engines),
/// each layer's tokens are rounded up to whole blocks.
pub fn sequence_bytes(layers: &[LayerKv], seq_len: u64, block: Option<u64>) -> u64 {
    layers.iter().fold(0u64, |acc, l| {
        let mut tokens = l.tokens_held(seq_len);
        if let Some(b) = block.filter(|&b| b > 0) {
            tokens = tokens.div_ceil(b).saturating_mul(b);
        }
        acc.saturating_add(tokens.saturating_mul(l.bytes_per_token)).saturating_add(l.compressed_bytes(seq_len))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicates_heads_when_tp_exceeds_them() {
        assert_eq!(kv_heads_per_rank(8, 1), 8);
        assert_eq!(kv_heads_per_rank(8, 2), 4);
        assert_eq!(kv_heads_per_rank(8, 16), 1);
        assert_eq!(kv_heads_per_rank(1, 8), 1);
    }

    #[test]
    fn sliding_layers_stop_at_their_window() {
        let layers = [LayerKv::new(10, None), LayerKv::new(10, Some(4))];
        assert_eq!(sequence_bytes(&layers, 3, None), 60);
        assert_eq!(sequence_bytes(&layers, 100, None), 1000 + 40);
        assert_eq!(sequence_bytes(&layers, 17, Some(16)), 320 + 160);
    }

    #[test]
    fn quantised_kv_carries_its_scales() {
        // int8 per token-head: 128 bytes + a 4-byte scale per head of 128.
        assert_eq!(KvDtype::Int8.bpw(128).bytes(128), 132);
        assert_eq!(KvDtype::Q8_0.bpw(128).bytes(128), 136);
        assert_eq!(KvDtype::Fp8.bpw(576).bytes(576), 576);
        for d in KvDtype::CHOICES {
            assert_eq!(KvDtype::parse(d.id()), Ok(*d));
        }
    }
}
