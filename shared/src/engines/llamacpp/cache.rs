//! llama.cpp's KV cache: the types `--cache-type-k` / `--cache-type-v`
//! accept, the cells it allocates (padding, slots as streams, the
//! sliding-window cache) and the bytes of every layer's K and V.
//!
//! Source: llama.cpp as vendored by llama-cpp-python 0.3.36 —
//! common/arg.cpp (`kv_cache_types`), src/llama-context.cpp (the 256-cell
//! padding of `n_ctx` and `n_ctx_seq`), src/llama-kv-cache.cpp (one K and
//! one V tensor of `ggml_row_size(type, n_embd_gqa) × kv_size × n_stream`
//! per layer, none for V under MLA) and src/llama-kv-cache-iswa.cpp (the
//! sliding-window cache size).

use serde::{Deserialize, Serialize};

use super::Fork;
use crate::checkpoint::ggml::GgmlType;
use crate::kv::{self, CachePart, KvDtype, LayerKv};

/// The cache types llama.cpp accepts (common/arg.cpp `kv_cache_types`, in
/// its order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheType {
    F32,
    F16,
    Bf16,
    Q8_0,
    Q4_0,
    Q4_1,
    Iq4Nl,
    Q5_0,
    Q5_1,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported cache type `{0}` (llama.cpp accepts f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)")]
pub struct UnknownCacheType(pub String);

impl CacheType {
    pub const ALL: &[CacheType] =
        &[Self::F32, Self::F16, Self::Bf16, Self::Q8_0, Self::Q4_0, Self::Q4_1, Self::Iq4Nl, Self::Q5_0, Self::Q5_1];

    fn ggml(self) -> GgmlType {
        match self {
            Self::F32 => GgmlType::F32,
            Self::F16 => GgmlType::F16,
            Self::Bf16 => GgmlType::Bf16,
            Self::Q8_0 => GgmlType::Q8_0,
            Self::Q4_0 => GgmlType::Q4_0,
            Self::Q4_1 => GgmlType::Q4_1,
            Self::Iq4Nl => GgmlType::Iq4Nl,
            Self::Q5_0 => GgmlType::Q5_0,
            Self::Q5_1 => GgmlType::Q5_1,
        }
    }

    /// The name llama.cpp takes and prints (`ggml_type_name`: `q8_0`, `iq4_nl`).
    pub fn id(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
            Self::Q8_0 => "q8_0",
            Self::Q4_0 => "q4_0",
            Self::Q4_1 => "q4_1",
            Self::Iq4Nl => "iq4_nl",
            Self::Q5_0 => "q5_0",
            Self::Q5_1 => "q5_1",
        }
    }

    /// llama.cpp compares names exactly (`kv_cache_type_from_str`); case is
    /// forgiven here.
    pub fn parse(text: &str) -> Result<Self, UnknownCacheType> {
        let s = text.trim().to_ascii_lowercase();
        Self::ALL.iter().copied().find(|t| t.id() == s).ok_or_else(|| UnknownCacheType(text.trim().to_owned()))
    }

    /// The llama.cpp type of a scenario's KV dtype, where it has one.
    pub fn of(d: KvDtype) -> Option<Self> {
        match d {
            KvDtype::F32 => Some(Self::F32),
            KvDtype::F16 => Some(Self::F16),
            KvDtype::Bf16 => Some(Self::Bf16),
            KvDtype::Q8_0 => Some(Self::Q8_0),
            KvDtype::Q4_0 => Some(Self::Q4_0),
            KvDtype::Fp8 | KvDtype::Int8 | KvDtype::Int4 => None,
        }
    }

    pub fn is_quantized(self) -> bool {
        self.ggml().is_quantized()
    }

    /// `ggml_row_size(type, n)`: whole blocks (a row that is not a whole
    /// number of blocks is rounded up; ggml would refuse it).
    pub fn row_bytes(self, n: u64) -> u64 {
        let t = self.ggml();
        n.div_ceil(t.block()).saturating_mul(t.block_bytes())
    }
}

/// The key and value storage of a plan: llama.cpp's types, or the
/// scenario's dtype where llama.cpp has no such type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Types {
    pub k: Option<CacheType>,
    pub v: Option<CacheType>,
    pub fallback: KvDtype,
}

impl Types {
    pub fn bytes(self, part: CachePart, width: u64, elements: u64) -> u64 {
        let t = match part {
            // ggml-org/llama.cpp src/llama-kv-cache-dsa.cpp: the indexer's
            // keys are a second `llama_kv_cache` of the same `type_k`.
            CachePart::Key | CachePart::IndexerKey => self.k,
            CachePart::Value => self.v,
        };
        t.map_or_else(|| self.fallback.bpw(width).bytes(elements), |t| t.row_bytes(elements))
    }
}

/// The first build whose `glm-dsa` caches the DSA indexer's keys:
/// 563dec8 "llama : allocate indexer cache only in \"full\" indexer layers"
/// (ggml-org/llama.cpp#26474), release b10243. Build numbers are llama.cpp's
/// release tags (`b<N>`, N = `git rev-list --count`), from the release page
/// of that tag.
pub(crate) const GLM_DSA_INDEXER_BUILD: u64 = 10_243;

/// Bytes per cell of every layer with these types (tp is always 1).
///
/// `glm-dsa` (GLM-5, GLM-5.1, GLM-5.2) from [`GLM_DSA_INDEXER_BUILD`]
/// (`build` `None`: the newest rules) keeps two caches of the same cells,
/// `llama_kv_cache_dsa` (src/llama-kv-cache-dsa.cpp, its constructor, and
/// src/llama-model.cpp `llama_model::create_memory`, `LLM_ARCH_GLM_DSA`, as
/// vendored by llama-cpp-python 0.3.36, llama.cpp 0c1e57098): the latent's
/// (`kv_mla`) and the lightning indexer's keys (`kv_lid`), a second
/// `llama_kv_cache` of the same `type_k`, `kv_size`, streams and padding,
/// one key head of `indexer_head_size` a cell, on the layers
/// `filter_lid` keeps: `il < n_layer() && is_indexer_full(il)`, the layers
/// with a "full" indexer ([`crate::arch::LayerShape::indexer_shared`]
/// false; every layer of GLM-5 and GLM-5.1, 21 of GLM-5.2's 78). Each layer's
/// indexer keys sit with its latent, on its device. The b10505 GLM-5.2 log
/// of tests/fixtures/startup prints both: 65,812.50 MiB of latent on 78
/// layers and 3,937.50 MiB of indexer keys on 21, at 768,000 cells.
///
/// Before: none. b8211 (a0ed91a4) runs `glm-dsa` through
/// `llm_build_deepseek2`'s dense MLA with the indexer's tensors loaded and
/// unused, and its memory is the plain `llama_kv_cache` of the latent
/// (`create_memory`'s default branch; ggml-org/llama.cpp#19460 "indexer is
/// not yet supported"). ggml-org/llama.cpp#25407 (88bfee1, merged
/// 2026-07-24; between b10075 and b10133, after the changelog of a binding
/// that bumped its llama.cpp across that range) gave `glm-dsa` the DSA
/// cache with one filter for both caches, the indexer's keys on every
/// layer, which #26474 narrowed: that source and its first build are not in
/// hand, so builds before b10243 are planned with none. `deepseek32`
/// (DeepSeek-V3.2, ggml-org/llama.cpp#23346), which caches them on every
/// layer, is not read from a GGUF here and keeps none too.
pub(crate) fn layers(arch: &crate::arch::Architecture, types: Types, fork: Fork, build: Option<u64>) -> Vec<LayerKv> {
    let text = &arch.text;
    // ik_llama.cpp's own `deepseek4` cache is not read: it is planned as
    // mainline's (`EnginePlan`'s DeepSeek-V4 warning says so).
    if let crate::arch::AttentionKind::Compressed(c) = text.attention {
        return dsv4_layers(text, c, types);
    }
    let mut layers = kv::layer_costs_by(text, 1, |part, width, elements| match part {
        CachePart::IndexerKey => 0,
        CachePart::Key | CachePart::Value => types.bytes(part, width, elements),
    });
    let Some(ix) = dsa_indexer(arch, fork, build) else {
        return layers;
    };
    // `hparams_lid`: one KV head (`n_head_kv_arr` filled with 1) of
    // `n_embd_head_k_full = indexer_head_size`.
    let keys = types.bytes(CachePart::IndexerKey, ix.head_dim, ix.head_dim);
    for (l, spec) in layers.iter_mut().zip(&text.layers) {
        if l.bytes_per_token > 0 && !spec.shape.indexer_shared {
            l.bytes_per_token = l.bytes_per_token.saturating_add(keys);
        }
    }
    layers
}

/// `DSV4_CSA_RATIO`, `DSV4_HCA_RATIO` (src/llama-kv-cache-dsv4.cpp,
/// llama.cpp 0c1e57098 as llama-cpp-python 0.3.36 vendors it): the only
/// ratios its caches are made for; its loader refuses any other
/// (src/models/deepseek4.cpp `load_arch_tensors`: "only supports compression
/// ratios 0, 4, and 128").
pub(crate) const DSV4_CSA_RATIO: u64 = 4;
const DSV4_HCA_RATIO: u64 = 128;

/// DeepSeek-V4 (`deepseek4`) as mainline llama.cpp caches it: the
/// `llama_kv_cache_dsv4` that `llama_model::create_memory` makes for
/// `LLM_ARCH_DEEPSEEK4` (src/llama-model.cpp; src/llama-kv-cache-dsv4.cpp,
/// its constructor; llama.cpp 0c1e57098, llama-cpp-python 0.3.36). Every
/// cache there is K-only (`dsv4_make_k_only`: `is_mla()`, so no V tensor),
/// of `type_k`, on its layer's device:
/// - `kv_raw`, a `llama_kv_cache_iswa` of every layer (the loader's
///   `set_swa_pattern(0)` makes each one sliding): rows of `head_dim` over
///   the window's cells ([`Cells::of`] with the window), its base cache
///   empty;
/// - `kv_csa` / `kv_hca`, the ratio-4 and ratio-128 layers' compressed
///   entries, rows of `head_dim`;
/// - `kv_lid`, the lightning indexer's keys on the ratio-4 layers, rows of
///   `indexer_head_size` (one head: `n_head_kv_arr` filled with 1);
/// - `llama_dsv4_comp_state` of each (`csa`, `hca`, `lid`): two F32 tensors
///   (`kv`, `score`) of `n_embd_state × state_size` per plane, CSA's
///   `2 × head_dim × 8` (overlapping windows of 2 × 4 tokens), HCA's
///   `head_dim × 128`, the indexer's `2 × indexer_head_size × 8`.
///
/// Here a compressed layer's [`CompressedKv`](crate::kv::CompressedKv)
/// holds llama.cpp's figures: one cell per `page_tokens` (= ratio) tokens
/// of `page_bytes` (its entry, and its indexer key on a ratio-4 layer), and
/// `state_window` rows of `state_bytes_per_token` (kv and score, F32);
/// [`Cells::bytes`] gives them their cells.
fn dsv4_layers(text: &crate::arch::TextModel, c: crate::arch::CompressedAttention, types: Types) -> Vec<LayerKv> {
    /// `kv` and `score`, F32 (`ggml_new_tensor_3d(ctx, GGML_TYPE_F32, …)`).
    const STATE_ROW: u64 = 2 * 4;
    let row = types.bytes(CachePart::Key, c.head_dim, c.head_dim);
    let ix = c.indexer.head_dim;
    let index_key = types.bytes(CachePart::IndexerKey, ix, ix);
    text.layers
        .iter()
        .map(|l| {
            let ratio = l.shape.compress_ratio;
            let mut layer = LayerKv::new(row, Some(c.window));
            // The filters: `dsv4_compress_ratios[il] == DSV4_CSA_RATIO`
            // (kv_csa, kv_lid and their states), `== DSV4_HCA_RATIO`
            // (kv_hca and its state).
            let (index_key, coff, state_width) = match ratio {
                DSV4_CSA_RATIO => (index_key, 2, c.head_dim.saturating_add(ix)),
                DSV4_HCA_RATIO => (0, 1, c.head_dim),
                _ => return layer,
            };
            layer.compressed = Some(crate::kv::CompressedKv {
                page_tokens: ratio,
                page_bytes: row.saturating_add(index_key),
                state_bytes_per_token: state_width.saturating_mul(coff * STATE_ROW),
                state_window: coff * ratio,
            });
            layer
        })
        .collect()
}

/// The lightning indexer of a model mainline llama.cpp runs with DeepSeek
/// sparse attention (`llama_kv_cache_dsa` and the graph's top-k mask):
/// `glm-dsa` (GLM-5 from its config, or a GGUF read from its header) from
/// [`GLM_DSA_INDEXER_BUILD`] (`build` `None`: the newest rules). See
/// [`layers`] for the builds before; ik_llama.cpp's `--dsa` is not modelled.
pub(crate) fn dsa_indexer(
    arch: &crate::arch::Architecture,
    fork: Fork,
    build: Option<u64>,
) -> Option<crate::arch::Indexer> {
    let crate::arch::AttentionKind::Mla(crate::arch::Mla { indexer: Some(ix), .. }) = arch.text.attention else {
        return None;
    };
    if fork != Fork::Mainline {
        return None;
    }
    let glm_dsa = arch.family == crate::arch::Family::GlmMoeDsa || arch.model_type == "gguf:glm-dsa";
    (glm_dsa && build.is_none_or(|b| b >= GLM_DSA_INDEXER_BUILD)).then_some(ix)
}

/// `GGML_PAD(x, 256)` (src/llama-context.cpp, src/llama-kv-cache-iswa.cpp).
pub(crate) fn pad(x: u64) -> u64 {
    pad_to(x, 256)
}

fn pad_to(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit.max(1)).saturating_mul(unit.max(1))
}

/// How a mainline build sizes its cache, where it changed (build numbers by
/// `git rev-list --count`, each change read in its commit):
/// - streams: one per sequence slot unless `--kv-unified` from b6071
///   (#14363, b5913, made them; until a4569c41, b6071, "llama : enable
///   LLAMA_SET_ROWS=1 by default" #14959, src/llama-context.cpp forced a
///   unified cache unless `LLAMA_SET_ROWS` was set: "non-unified KV cache
///   requires ggml_set_rows()"); before, one cache every slot shares;
/// - the padding of `n_ctx`: 256 with flash attention, else 32, before b6868
///   (#16812 removed it); none from b6868; 256 always from b6975 (#17046);
/// - sliding-window layers: a cache of their own from b5429 (#13194), of
///   `n_swa × seqs + n_batch` cells, `+ n_ubatch` from b5554 (#13833).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    pub streams: bool,
    pub pad: u64,
    /// The window's extra cells (`n_batch` or `n_ubatch`); `None`: no
    /// window cache, every layer gets the whole context.
    pub swa_extra: Option<u64>,
}

impl Rules {
    /// The rules of `build` (`None`: the newest). ik_llama.cpp keeps today's
    /// streams and padding, but gives a sliding-window layer the whole
    /// context: it has no window cache but `--swa-compress`'s, opt-in and for
    /// a few other architectures (src/llama.cpp `llama_kv_cache_init` at
    /// 8337e4cd; its gemma-3-27b log: 62 layers × 32,768 cells, 15,872 MiB).
    pub fn of(fork: Fork, build: Option<u64>, flash_attention: bool, n_batch: u64, n_ubatch: u64) -> Self {
        if fork == Fork::Ik {
            return Self { streams: true, pad: 256, swa_extra: None };
        }
        let Some(b) = build else { return Self { streams: true, pad: 256, swa_extra: Some(n_ubatch) } };
        Self {
            streams: b >= super::graph::SET_ROWS_BUILD,
            pad: match b {
                6975.. => 256,
                6868.. => 1,
                _ if flash_attention => 256,
                _ => 32,
            },
            swa_extra: match b {
                5554.. => Some(n_ubatch),
                5429.. => Some(n_batch),
                _ => None,
            },
        }
    }
}

/// The cells llama.cpp allocates for one context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cells {
    /// `n_ctx` after padding.
    pub n_ctx: u64,
    /// Streams: 1 with `--kv-unified`, else one per slot.
    pub streams: u64,
    /// Cells of each stream of a full-attention layer (`n_ctx_seq`).
    pub per_stream: u64,
    /// Cells of each stream of a sliding-window layer, by window.
    swa: SwaRule,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SwaRule {
    full: bool,
    unified: bool,
    slots: u64,
    ubatch: u64,
    /// The build's padding unit.
    pad: u64,
}

impl Cells {
    /// src/llama-context.cpp: `n_ctx = GGML_PAD(n_ctx, 256)`; unified:
    /// `n_ctx_seq = n_ctx`, else `GGML_PAD(n_ctx / n_seq_max, 256)` in each
    /// of `n_seq_max` streams (src/llama-kv-cache.cpp `n_stream`).
    #[cfg(test)]
    pub fn new(ctx: u64, slots: u64, unified: bool, swa_full: bool, ubatch: u64) -> Self {
        Self::by(ctx, slots, unified, swa_full, Rules::of(Fork::Mainline, None, true, ubatch, ubatch))
    }

    /// [`Cells::new`] under a build's [`Rules`].
    pub fn by(ctx: u64, slots: u64, unified: bool, swa_full: bool, r: Rules) -> Self {
        let slots = slots.max(1);
        let n_ctx = pad_to(ctx.max(1), r.pad);
        let unified = unified || !r.streams;
        let (streams, per_stream) =
            if unified { (1, n_ctx) } else { (slots, pad_to(n_ctx / slots, r.pad).max(r.pad.min(256))) };
        let (full, ubatch) = match r.swa_extra {
            Some(extra) => (swa_full, extra),
            None => (true, 0),
        };
        Self { n_ctx, streams, per_stream, swa: SwaRule { full, unified, slots, ubatch, pad: r.pad } }
    }

    /// Cells of a layer with this window, over all streams
    /// (src/llama-kv-cache-iswa.cpp: `size_swa = GGML_PAD(min(size_base,
    /// n_swa × (unified ? n_seq_max : 1) + n_ubatch), 256)`, `size_base`
    /// with `--swa-full`).
    pub fn of(self, window: Option<u64>) -> u64 {
        let per_stream = match window {
            Some(w) if !self.swa.full => {
                let seqs = if self.swa.unified { self.swa.slots } else { 1 };
                let cells = self.per_stream.min(w.saturating_mul(seqs).saturating_add(self.swa.ubatch));
                pad_to(cells, self.swa.pad).min(self.per_stream)
            }
            _ => self.per_stream,
        };
        per_stream.saturating_mul(self.streams)
    }

    /// These cells as `llama_kv_cache_dsv4` keeps them: one stream per
    /// sequence slot whatever `--kv-unified` says ("Keep DSV4 KV/state
    /// streams per sequence even when public KV mode is unified":
    /// `unified_raw` and `unified_compressed` false), each of `kv_size =
    /// n_ctx_seq` cells, which `--kv-unified` leaves at the whole `n_ctx`
    /// (src/llama-context.cpp); the window's cells per stream,
    /// `n_swa + n_ubatch` padded.
    pub fn per_sequence_streams(self) -> Self {
        Self { streams: self.swa.slots, swa: SwaRule { unified: false, ..self.swa }, ..self }
    }

    /// Bytes of these layers' caches.
    pub fn bytes(self, layers: &[LayerKv]) -> u64 {
        layers.iter().fold(0u64, |acc, l| {
            acc.saturating_add(self.of(l.window).saturating_mul(l.bytes_per_token)).saturating_add(self.compressed(l))
        })
    }

    /// A DeepSeek-V4 layer's compressed caches and compressor state
    /// ([`dsv4_layers`]), in every stream: `GGML_PAD(max(1, ⌈kv_size /
    /// ratio⌉), 256)` cells of the entries (`dsv4_comp_size`, padded where
    /// `kv_csa`, `kv_hca` and `kv_lid` are made) and the state's planes,
    /// `n_stream × (1 + n_rs_seq)` (`llama_dsv4_comp_state`), `n_rs_seq`
    /// taken as 0: it is the rollback depth of speculative drafts
    /// (common/common.h `need_n_rs_seq`), not planned here.
    fn compressed(self, l: &LayerKv) -> u64 {
        let Some(c) = l.compressed else { return 0 };
        let cells = pad(self.per_stream.div_ceil(c.page_tokens.max(1)).max(1));
        let state = c.state_window.saturating_mul(c.state_bytes_per_token);
        cells.saturating_mul(c.page_bytes).saturating_add(state).saturating_mul(self.streams)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_parses_by_its_name_and_rows_are_whole_blocks() {
        for &t in CacheType::ALL {
            assert_eq!(CacheType::parse(t.id()), Ok(t));
        }
        assert!(CacheType::parse("fp8").is_err());
        // ggml-common.h: block_q4_1 = 2 halves + 16 bytes per 32, block_q5_1 = 24, iq4_nl = 18.
        assert_eq!(CacheType::Q4_1.row_bytes(128), 4 * 20);
        assert_eq!(CacheType::Q5_1.row_bytes(128), 4 * 24);
        assert_eq!(CacheType::Iq4Nl.row_bytes(128), 4 * 18);
        assert_eq!(CacheType::Q8_0.row_bytes(128), 4 * 34);
        assert_eq!(CacheType::F32.row_bytes(128), 512);
    }

    /// The cache's sizing by build: the padding (256 with flash attention,
    /// else 32, before b6868; none to b6974; 256 from b6975), one shared
    /// stream before b5913, and the window cache's `+ n_batch` before b5554
    /// (none at all before b5429).
    #[test]
    fn cells_follow_the_build() {
        let at = |build, fa| Cells::by(10_000, 4, false, false, Rules::of(Fork::Mainline, Some(build), fa, 2048, 512));
        assert_eq!((at(5000, true).n_ctx, at(5000, true).streams), (10_240, 1));
        // b5913 – b6070 forced one stream without `LLAMA_SET_ROWS`.
        assert_eq!((at(6070, true).streams, at(6071, true).streams), (1, 4));
        assert_eq!(at(5000, false).n_ctx, 10_016);
        assert_eq!((at(6900, true).n_ctx, at(6900, true).streams, at(6900, true).per_stream), (10_000, 4, 2500));
        assert_eq!(at(7000, false).n_ctx, 10_240);
        // A 1024 window, one stream of all four slots: 4 × 1024 + n_batch, then + n_ubatch.
        assert_eq!(at(5500, true).of(Some(1024)), 6144);
        assert_eq!(at(5600, true).of(Some(1024)), 4608);
        assert_eq!(at(5400, true).of(Some(1024)), 10_240);
    }

    #[test]
    fn cells_pad_to_256_per_stream_and_the_window_cache_is_padded_too() {
        // 4 slots, non-unified: n_ctx 10000 → 10240, 2560 per stream.
        let c = Cells::new(10_000, 4, false, false, 512);
        assert_eq!((c.n_ctx, c.streams, c.per_stream), (10_240, 4, 2560));
        assert_eq!(c.of(None), 10_240);
        // A 1024 window: min(2560, 1024 + 512) = 1536 per stream.
        assert_eq!(c.of(Some(1024)), 4 * 1536);
        // Unified: one stream of 10240; window × slots + ubatch = 4608.
        let u = Cells::new(10_000, 4, true, false, 512);
        assert_eq!(u.of(Some(1024)), 4608);
        assert_eq!(Cells::new(10_000, 4, true, true, 512).of(Some(1024)), 10_240);
    }
}
