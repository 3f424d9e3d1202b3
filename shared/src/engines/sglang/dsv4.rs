//! DeepSeek-V4's pools as SGLang 0.5.23 sizes them: `DSV4PoolConfigurator`
//! (srt/model_executor/pool_configurator.py), which `create_memory_pool_
//! configurator` picks for a DeepSeek-V4 config, in place of the one cell
//! per token of other models.
//!
//! The byte budget left after the weights and the reserve (the same
//! `available_bytes` as any model's) pays first for pools sized by requests
//! (`calculate_pool_sizes`' fixed bytes: the ratio-128 compressor state), and
//! the rest buys whole pages of `full` tokens at `bytes_per_full_token`:
//! - the sliding window's pool is `swa_full_tokens_ratio` (0.1, which
//!   arg_groups/model_overrides/deepseek_v4.py sets for DeepSeek-V4) of the
//!   full pool, each token `page_bytes(256) / 256` of every layer plus the
//!   ratio-4 compressor state that follows the window's pages (its ring of 8
//!   rows per page of 256, fp32 kv and score of the attention's and the
//!   indexer's `2 × 2 × head_dim`);
//! - a ratio-4 layer stores a quarter of a token's compressed entry and of
//!   its fp8 indexer key (`head_dim + head_dim / 128 × 4`), a ratio-128 layer
//!   1/128 of an entry.
//!
//! Rows are FlashMLA's paged layouts (sglang/kernels/ops/attention/dsv4/
//! kv_layout.py `KVLayout`, `select_dsv4_kv_layout`), whatever
//! `--kv-cache-dtype` says: `V4` (448 fp8 + 64 bf16 rotary values + 8 scale
//! bytes, pages padded to 576 B) on a GPU below SM100, `V41` (512 fp8 + 16
//! scale bytes, padded to 512) on SM100 / SM103. Modelled: CUDA without
//! speculative decoding, HiSparse, context parallelism or the ROCm unified
//! pool, `--page-size` 256 and `--max-running-requests` 256
//! (arg_groups/deepseek_v4_hook.py `apply_deepseek_v4_defaults`), which the
//! plan does not take as settings.

use super::Options;
use crate::arch::{AttentionKind, CompressedAttention};
use crate::engines::Plan;

/// `page_size = 256` (model_overrides/deepseek_v4.py, CUDA).
pub(super) const PAGE: u64 = 256;

/// `max_running_requests = 256` when none is given
/// (deepseek_v4_hook.py `apply_deepseek_v4_defaults`).
pub(super) const MAX_RUNNING_REQUESTS: u64 = 256;

/// `swa_full_tokens_ratio = 0.1` (model_overrides/deepseek_v4.py, and
/// `DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO`).
const SWA_FULL_TOKENS_RATIO: f64 = 0.1;

/// `get_compress_state_ring_size` without speculative decoding: 8 rows at
/// ratio 4, 128 at ratio 128 (mem_cache/deepseek_v4_memory_pool.py).
const RING_4: u64 = 8;
const RING_128: u64 = 128;

/// `SGLANG_DSV4_COMPRESS_STATE_DTYPE` = float32 (environ.py).
const STATE_DTYPE_BYTES: u64 = 4;

/// A paged FlashMLA layout (`KVLayout`): bytes of a token, and the unit a
/// page's bytes are padded to (`page_align`).
#[derive(Debug, Clone, Copy)]
struct Layout {
    bytes_per_token: u64,
    page_align: u64,
}

impl Layout {
    /// `KVLayout.V4`: 576 data + 8 scale bytes, pages to 576.
    const V4: Self = Self { bytes_per_token: 584, page_align: 576 };
    /// `KVLayout.V41`: 512 data + 16 scale bytes, pages to 512.
    const V41: Self = Self { bytes_per_token: 528, page_align: 512 };

    /// `page_bytes(page_size) / page_size`
    /// (`DSV4PoolConfigurator._get_paged_kv_bytes_per_token`).
    fn per_token(self, page_size: u64) -> f64 {
        let page = page_size.max(1);
        (page * self.bytes_per_token).div_ceil(self.page_align) as f64 * self.page_align as f64 / page as f64
    }
}

/// One GPU's DeepSeek-V4 pool sizing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Sizing {
    /// `bytes_per_full_token`: what one token of the full pool costs, its
    /// share of the window's pool and compressed caches included.
    pub bytes_per_full_token: f64,
    /// The pools sized by requests, paid first (`c128_state_fixed_bytes`).
    pub fixed_bytes: u64,
    /// `max_running_requests` of one data-parallel worker.
    pub max_running_requests: u64,
}

impl Sizing {
    /// `full_token`: whole pages of what `available` bytes buy
    /// (`calculate_pool_sizes`).
    pub fn tokens(self, available: u64) -> u64 {
        let rest = available.saturating_sub(self.fixed_bytes);
        if self.bytes_per_full_token <= 0.0 {
            return 0;
        }
        let full = (rest as f64 / self.bytes_per_full_token) as u64;
        full / PAGE * PAGE
    }

    /// The bytes `tokens` of the full pool hold, with the fixed pools.
    pub fn bytes(self, tokens: u64) -> u64 {
        ((tokens as f64 * self.bytes_per_full_token) as u64).saturating_add(self.fixed_bytes)
    }
}

/// The window's pool beside a full pool of `full` tokens, whole pages
/// (`_get_swa_tokens`, ratio mode).
pub(super) fn swa_tokens(full: u64) -> u64 {
    (full as f64 * SWA_FULL_TOKENS_RATIO) as u64 / PAGE * PAGE
}

/// The sizing of stage `stage` on GPU `g`, or `None` for a model that is not
/// DeepSeek-V4.
pub(super) fn sizing(p: &Plan, o: Options, g: usize, stage: usize) -> Option<Sizing> {
    let AttentionKind::Compressed(c) = p.model.arch.text.attention else { return None };
    // `select_dsv4_kv_layout`, `auto`: V41 only where
    // `torch.cuda.get_device_capability()[0] == 10`.
    let sm100 = p.scenario.gpus.get(g).and_then(|s| s.compute_capability).is_some_and(|c| c / 10 == 10);
    let layout = if sm100 { Layout::V41 } else { Layout::V4 };
    let layers = p.model.arch.text.layers.get(p.stage_range(stage)).unwrap_or(&[]);
    let count = |ratio: u64| layers.iter().filter(|l| l.shape.compress_ratio == ratio).count() as u64;
    // `collect_sources_by_ratio`: every layer of ratio 4 and of 128 owns
    // compressed storage (it refuses any other ratio but 0, 1 and 2).
    let (csa, hca) = (count(4), count(128));
    let attn_dp = if o.enable_dp_attention { o.dp_size.max(1) } else { 1 };
    let max_running_requests = (MAX_RUNNING_REQUESTS / attn_dp).max(1);
    Some(Sizing {
        bytes_per_full_token: bytes_per_full_token(c, layout, layers.len() as u64, csa, hca),
        fixed_bytes: c128_state_bytes(c, hca, max_running_requests),
        max_running_requests,
    })
}

/// `_get_bytes_per_full_token` in ratio mode: the window's pool's share
/// (`_get_bytes_per_swa_token`) and each compressed layer's
/// (`_compressed_bytes_per_full_token`).
fn bytes_per_full_token(c: CompressedAttention, layout: Layout, layers: u64, csa: u64, hca: u64) -> f64 {
    let ix = c.indexer.head_dim;
    // `get_dsv4_indexer_bytes_per_token(..., use_fp4_indexer=False)`.
    let indexer = (ix + ix / 128 * 4) as f64;
    // `c4_state_bytes + c4_indexer_state_bytes`: kv and score, overlapping.
    let c4_state = (2 * 2 * c.head_dim * STATE_DTYPE_BYTES + 2 * 2 * ix * STATE_DTYPE_BYTES) as f64;
    let per_swa_token = layout.per_token(PAGE) * layers as f64 + RING_4 as f64 / PAGE as f64 * c4_state * csa as f64;
    let c4 = layout.per_token(PAGE / 4) / 4.0 + indexer / 4.0;
    let c128 = layout.per_token(PAGE / 128) / 128.0;
    SWA_FULL_TOKENS_RATIO * per_swa_token + c4 * csa as f64 + c128 * hca as f64
}

/// `_get_c128_state_fixed_bytes`: a ring of 128 rows per request slot
/// (`max_running_requests + 1`) and `ring + 1` more, padded to 128, of fp32
/// kv and score, on every ratio-128 layer.
fn c128_state_bytes(c: CompressedAttention, hca: u64, max_running_requests: u64) -> u64 {
    let slots = max_running_requests.saturating_add(1);
    let rows = slots.saturating_mul(RING_128).saturating_add(RING_128 + 1).div_ceil(128).saturating_mul(128);
    rows.saturating_mul(2 * c.head_dim * STATE_DTYPE_BYTES).saturating_mul(hca)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layouts' bytes per token at each page of the pool:
    /// `KVLayout.V4.page_bytes(256) = ⌈256 × 584 / 576⌉ × 576 = 149,760`.
    #[test]
    fn pages_pad_to_the_layouts_alignment() {
        assert_eq!(Layout::V4.per_token(256), 585.0);
        assert_eq!(Layout::V4.per_token(64), 585.0);
        assert_eq!(Layout::V4.per_token(2), 864.0);
        assert_eq!(Layout::V41.per_token(256), 528.0);
        assert_eq!(Layout::V41.per_token(2), 768.0);
    }
}
