//! Stable sorting with one sorter for every element type: a bottom-up merge
//! sort of indices behind a `dyn` comparison, then a move into that order.
//!
//! core's `sort_by_key` and `sort_unstable` are compiled again for every
//! element type and key closure (about 2.7 kB of wasm each): 27.6 kB of the
//! diagnose bundle and 14.4 kB of live mode's were sorts of a few dozen
//! findings, causes and fixes. Here the sorter is compiled once and each call
//! site adds a comparison and a move. The result is `slice::sort_by`'s
//! (stable) for every input, in O(n log n) comparisons, so a hostile paste
//! with thousands of matches stays cheap to sort.
//!
//! For the few dozen items a page sort meets (a checkpoint's dtypes and
//! shard names among them). The checkpoint readers keep core's sorts for
//! their tensors and index entries: tens of thousands, where speed counts.

use std::cmp::Ordering;

/// `0..len` in the stable order `cmp` gives of the items at those indices.
fn stable_order(len: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut from: Vec<usize> = (0..len).collect();
    let mut to = from.clone();
    let mut width = 1;
    while width < len {
        let mut start = 0;
        while start < len {
            let mid = (start + width).min(len);
            let end = (start + 2 * width).min(len);
            let (mut left, mut right) = (start, mid);
            for slot in &mut to[start..end] {
                // The left run wins ties: that keeps equal items in order.
                let take_left = left < mid && (right >= end || cmp(from[right], from[left]) != Ordering::Less);
                if take_left {
                    *slot = from[left];
                    left += 1;
                } else {
                    *slot = from[right];
                    right += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut from, &mut to);
        width *= 2;
    }
    from
}

/// Sorts `v` as `v.sort_by(cmp)` does (stable).
pub fn sort_by<T>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let order = stable_order(v.len(), &|i, j| cmp(&v[i], &v[j]));
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(order.into_iter().filter_map(|i| slots.get_mut(i).and_then(Option::take)));
}

/// Sorts `v` as `v.sort_by_key(key)` does (stable).
pub fn sort_by_key<T, K: Ord>(v: &mut Vec<T>, key: impl Fn(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `v` as `v.sort()` does (for a total order, as `sort_unstable`).
pub fn sort<T: Ord>(v: &mut Vec<T>) {
    sort_by(v, T::cmp);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// Pairs of (key, position): equal keys must keep their positions'
        /// order, as core's stable sort keeps them.
        #[test]
        fn sorts_as_core_stable_sort_does(keys in proptest::collection::vec(0u8..8, 0..200)) {
            let items: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let mut ours = items.clone();
            super::sort_by_key(&mut ours, |&(k, _)| k);
            let mut core = items.clone();
            core.sort_by_key(|&(k, _)| k);
            prop_assert_eq!(&ours, &core);
            let mut reversed = items.clone();
            super::sort_by(&mut reversed, |a, b| b.0.cmp(&a.0));
            core.sort_by_key(|p| std::cmp::Reverse(p.0));
            prop_assert_eq!(reversed, core);
            let mut whole = items;
            super::sort(&mut whole);
            let mut want = whole.clone();
            want.sort_unstable();
            prop_assert_eq!(whole, want);
        }
    }
}
