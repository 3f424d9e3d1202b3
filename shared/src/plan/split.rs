//! Layer-wise splits over several GPUs: contiguous runs of layers, as
//! accelerate's `device_map="auto"` and pipeline parallelism place them,
//! balanced so that no GPU is fuller (relative to its capacity) than needed.

/// Where each GPU's run of layers starts and ends (`start..end`).
pub type Ranges = Vec<std::ops::Range<usize>>;

/// Where an engine puts the model: the layers each pipeline stage holds on
/// GPU, and whether the pieces before the first layer and after the last do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub ranges: Ranges,
    pub first_on_gpu: bool,
    pub last_on_gpu: bool,
}

impl Placement {
    /// Every layer, the embeddings and the head on GPU.
    pub fn on_gpu(ranges: Ranges) -> Self {
        Self { ranges, first_on_gpu: true, last_on_gpu: true }
    }
}

/// Splits `layer_costs` into `capacities.len()` contiguous runs minimising the
/// largest ratio of load to capacity. `fixed[g]` is load GPU `g` carries
/// whatever layers it gets (embeddings on the first, the head on the last,
/// its CUDA context). Every GPU gets at least one layer while layers remain.
pub fn balance(layer_costs: &[u64], fixed: &[u64], capacities: &[u64]) -> Ranges {
    let n = capacities.len();
    if n <= 1 {
        return std::iter::once(0..layer_costs.len()).collect();
    }
    // Binary search the smallest utilisation (in millionths) at which a
    // greedy left-to-right fill places every layer.
    // At `hi` the smallest GPU alone could hold everything: always feasible.
    let all: u128 = costs_sum(layer_costs) + fixed.iter().map(|&f| u128::from(f)).sum::<u128>();
    let min_cap = u128::from(capacities.iter().copied().min().unwrap_or(1).max(1));
    let bound = (all * 1_000_000 / min_cap + 1).min(1 << 40);
    let (mut lo, mut hi) = (0u64, bound as u64);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fill(layer_costs, fixed, capacities, mid, |_| ()) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    greedy(layer_costs, fixed, capacities, lo).unwrap_or_else(|| even(layer_costs.len(), n))
}

fn costs_sum(costs: &[u64]) -> u128 {
    costs.iter().map(|&c| u128::from(c)).sum()
}

fn limit(capacity: u64, ppm: u64) -> u128 {
    // In u64 when the product fits: the same quotient without a call to the
    // u128 division routine, which the search made 8 times a probe (issue 39).
    match capacity.checked_mul(ppm) {
        Some(product) => u128::from(product / 1_000_000),
        None => u128::from(capacity) * u128::from(ppm) / 1_000_000,
    }
}

fn greedy(costs: &[u64], fixed: &[u64], caps: &[u64], ppm: u64) -> Option<Ranges> {
    let mut ranges = Vec::with_capacity(caps.len());
    fill(costs, fixed, caps, ppm, |r| ranges.push(r)).then_some(ranges)
}

/// Whether the greedy fill at `ppm` places every layer, handing each GPU's
/// run to `run` as it goes: the binary search's probes keep no runs, so they
/// allocate nothing (issue 39).
fn fill(costs: &[u64], fixed: &[u64], caps: &[u64], ppm: u64, mut run: impl FnMut(std::ops::Range<usize>)) -> bool {
    let n = caps.len();
    let mut start = 0usize;
    for (g, &capacity) in caps.iter().enumerate() {
        let cap = limit(capacity, ppm);
        let mut load = u128::from(fixed.get(g).copied().unwrap_or(0));
        if load > cap {
            return false;
        }
        let remaining_gpus = n - g - 1;
        let mut end = start;
        while end < costs.len() {
            // Leave at least one layer for each later GPU when possible.
            if costs.len() - end <= remaining_gpus && end > start {
                break;
            }
            let next = load + u128::from(costs[end]);
            if next > cap {
                break;
            }
            load = next;
            end += 1;
        }
        run(start..end);
        start = end;
    }
    start == costs.len()
}

/// Splits `layers` into `n` runs of (nearly) equal length.
/// Consecutive ranges of the given lengths, from layer 0.
pub fn consecutive(counts: impl IntoIterator<Item = usize>) -> Ranges {
    let mut start = 0;
    counts
        .into_iter()
        .map(|n| {
            start += n;
            start - n..start
        })
        .collect()
}

pub fn even(layers: usize, n: usize) -> Ranges {
    (0..n).map(|g| g * layers / n..(g + 1) * layers / n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balances_equal_gpus() {
        let r = balance(&[10; 8], &[0, 0], &[100, 100]);
        assert_eq!(r, vec![0..4, 4..8]);
    }

    #[test]
    fn gives_the_bigger_gpu_more_layers() {
        let r = balance(&[10; 10], &[0, 0], &[240, 160]);
        assert_eq!(r, vec![0..6, 6..10]);
    }

    #[test]
    fn accounts_for_fixed_load() {
        // The first GPU carries embeddings worth three layers.
        let r = balance(&[10; 9], &[30, 0], &[100, 100]);
        assert_eq!(r, vec![0..3, 3..9]);
    }

    #[test]
    fn covers_every_layer_even_when_overfull() {
        let r = balance(&[u64::MAX / 4; 5], &[0, 0, 0], &[1, 1, 1]);
        assert_eq!(r.last().map(|r| r.end), Some(5));
    }
}
