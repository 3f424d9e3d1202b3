//! DeepSeek-V4's KV cache groups as vLLM 0.34 packs them
//! (v1/core/kv_cache_planning.py `_get_packed_kv_cache_groups`).
//!
//! Its layers' caches ([`kv::vllm_v4_caches`]) have pages of several sizes
//! and blocks of 256, 64, 8 and 4 tokens. The DeepSeek-V4 indexer's backend
//! declares only block-outermost layouts (`DeepseekV4IndexerBackend.
//! supported_kv_cache_layouts`: BLHNC, BLNHC), so `get_kv_cache_groups`
//! packs the pages side by side within each block instead of unifying them:
//! 1. the caches are bucketed greedily by type (`UniformTypeKVCacheSpecs.
//!    is_uniform_type`: the same block size, and full attention, or sliding
//!    windows of one width);
//! 2. a bucket is balanced when each of its page sizes has as many layers;
//!    the balanced buckets' layer counts are split into groups of
//!    `_approximate_gcd` repeats (the least padding, at least the largest
//!    count of a balanced bucket of several page sizes); an unbalanced
//!    bucket stays one group; sliding-window buckets without that split are
//!    split to the states a block already holds;
//! 3. one block of the pool holds one page of every layer of the widest
//!    group (`_get_kv_cache_bytes_per_block`, block-outermost: the largest
//!    group's page sum, the strides' alignment 1 here), so
//!    `num_blocks = available // bytes_per_block`.
//!
//! A request then takes, from the one pool, each group's blocks
//! (`get_max_concurrency_for_kv_cache_config`): `⌈len / 256⌉` for the full
//! group, `⌈min(window − 1 + in-flight tokens, len) / block⌉ + 1` for each
//! window's and state's (`SlidingWindowSpec.max_admission_blocks_per_request`).

use super::Group;
use crate::arch::AttentionKind;
use crate::engines::Plan;
use crate::kv::{self, KvDtype};

/// One packed group: its block table's kind, and the page bytes of each of
/// its layers' caches by the layer that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Packed {
    pub group: Group,
    /// (layer index, page bytes) of every cache in the group.
    pub pages: Vec<(usize, u64)>,
}

/// One cache of the model: the layer it belongs to and its spec.
#[derive(Debug, Clone, Copy)]
struct Cache {
    layer: usize,
    spec: kv::VllmV4Cache,
}

/// A bucket of caches of one type, its layers by page size in first-seen
/// order (`page_size_layers`).
struct Bucket {
    block: u64,
    window: Option<u64>,
    by_page: Vec<(u64, Vec<Cache>)>,
}

impl Bucket {
    fn balanced(&self) -> bool {
        self.by_page.windows(2).all(|w| w[0].1.len() == w[1].1.len())
    }

    /// `get_max_layers_per_page_size`: the most caches of one page size.
    fn max_per_page(&self) -> u64 {
        self.by_page.iter().map(|(_, c)| c.len() as u64).max().unwrap_or(0)
    }

    fn len(&self) -> u64 {
        self.by_page.iter().map(|(_, c)| c.len() as u64).sum()
    }

    /// `widest_group_bytes`: the page bytes of the largest of `n` groups.
    fn widest_group_bytes(&self, n: u64) -> u64 {
        self.by_page.iter().map(|(page, c)| (c.len() as u64).div_ceil(n.max(1)) * page).sum()
    }

    fn group(&self) -> Group {
        Group { window: self.window, state: false, block: self.block }
    }
}

/// DeepSeek-V4's groups over the whole model (vLLM groups the model's
/// layers, then each rank's share of them, `_project_kv_cache_groups_to_
/// worker`); `None` for any other model.
pub(super) fn groups(p: &Plan) -> Option<Vec<Packed>> {
    let AttentionKind::Compressed(c) = p.model.arch.text.attention else { return None };
    let dtype: KvDtype = p.scenario.kv_dtype;
    let caches = p.model.arch.text.layers.iter().enumerate().flat_map(|(layer, l)| {
        kv::vllm_v4_caches(c, l.shape.compress_ratio, dtype).into_iter().map(move |spec| Cache { layer, spec })
    });
    // 1. Greedy buckets of one type.
    let mut buckets: Vec<Bucket> = Vec::new();
    for cache in caches {
        let (block, window, page) = (cache.spec.block, cache.spec.window, cache.spec.page_bytes);
        let bucket = match buckets.iter().position(|b| b.block == block && b.window == window) {
            Some(i) => &mut buckets[i],
            None => {
                buckets.push(Bucket { block, window, by_page: Vec::new() });
                buckets.last_mut()?
            }
        };
        match bucket.by_page.iter_mut().find(|(p, _)| *p == page) {
            Some((_, list)) => list.push(cache),
            None => bucket.by_page.push((page, vec![cache])),
        }
    }
    // 2. Repeats per group, from the balanced buckets.
    let min_repeats =
        buckets.iter().filter(|b| b.balanced() && b.by_page.len() > 1).map(Bucket::max_per_page).max().unwrap_or(0);
    let repeats = (min_repeats > 0).then(|| {
        let counts: Vec<u64> = buckets.iter().filter(|b| b.balanced()).map(Bucket::max_per_page).collect();
        approximate_gcd(&counts, min_repeats)
    });
    let num_groups_for = |b: &Bucket| match repeats {
        Some(r) if b.balanced() => b.max_per_page().div_ceil(r.max(1)),
        _ => 1,
    };
    // Sliding-window buckets left unsplit can go down to one state a group.
    let is_state = |b: &Bucket| repeats.is_none() && b.window.is_some();
    let anchor = buckets
        .iter()
        .map(|b| b.widest_group_bytes(if is_state(b) { b.len() } else { num_groups_for(b) }))
        .max()
        .unwrap_or(0);
    let mut groups = Vec::new();
    for b in &buckets {
        let mut n = num_groups_for(b);
        if anchor > 0 && is_state(b) {
            let first = b.by_page.first().map_or(1, |(page, _)| *page).max(1);
            n = n.max(b.len().div_ceil((anchor / first).max(1)));
        }
        if n == 1 {
            let pages = b.by_page.iter().flat_map(|(page, c)| c.iter().map(|x| (x.layer, *page))).collect();
            groups.push(Packed { group: b.group(), pages });
            continue;
        }
        // `pattern_repeats = zip(*page_size_layers.values())`: one cache of
        // each page size a repeat (zip stops at the shortest), group i
        // taking repeats i, i + n, …
        let repeats = b.by_page.iter().map(|(_, c)| c.len()).min().unwrap_or(0);
        for i in 0..n as usize {
            let pages = (i..repeats)
                .step_by(n as usize)
                .flat_map(|r| b.by_page.iter().map(move |(page, c)| (c[r].layer, *page)))
                .collect();
            groups.push(Packed { group: b.group(), pages });
        }
    }
    Some(groups)
}

/// The bytes of one block on a rank holding `layers`: the widest group's
/// pages (`_get_kv_cache_bytes_per_block`, block-outermost layout).
pub(super) fn bytes_per_block(groups: &[Packed], layers: std::ops::Range<usize>) -> u64 {
    groups
        .iter()
        .map(|g| g.pages.iter().filter(|(l, _)| layers.contains(l)).map(|(_, page)| page).sum::<u64>())
        .max()
        .unwrap_or(0)
}

/// `_approximate_gcd`: the chunk `d` in `[lower, max(values)]` that pads
/// the values least when each is rounded up to a multiple of it, the larger
/// on a tie.
fn approximate_gcd(values: &[u64], lower: u64) -> u64 {
    let lower = lower.max(1);
    let most = values.iter().copied().max().unwrap_or(0);
    if lower > most {
        return lower;
    }
    let pad = |d: u64| values.iter().map(|x| (d - x % d) % d).sum::<u64>();
    // Ties prefer the larger `d`: the last minimum.
    (lower..=most)
        .fold((u64::MAX, lower), |(least, best), d| {
            let padded = pad(d);
            if padded <= least { (padded, d) } else { (least, best) }
        })
        .1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approximate_gcd_pads_least_and_prefers_the_larger() {
        // 43, 21, 20 from 21: 22 pads 1 + 1 + 2.
        assert_eq!(approximate_gcd(&[43, 21, 20], 21), 22);
        // 8 and 12 from 1: 4 pads nothing and is the largest that does not.
        assert_eq!(approximate_gcd(&[8, 12], 1), 4);
        assert_eq!(approximate_gcd(&[3], 5), 5);
    }
}
