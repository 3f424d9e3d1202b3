//! vLLM 0.34's extensible KV cache, on by default on CUDA and ROCm
//! (`config/vllm.py::_resolve_extensible_kv_cache`; off when
//! `--kv-cache-memory-bytes` gives the pool). The profile still runs, but its
//! estimate only reserves the cache's address range: the pool is sized from
//! the memory CUDA reports free after warmup and CUDA-graph capture
//! (`v1/worker/extensible_kv_cache.py::measure_kv_cache_bytes`, 0.34.0):
//!
//! ```text
//! used      = init_free − free − committed      (weights, non-torch, graphs)
//! headroom  = free + committed                  (= init_free − used)
//! margin    = max(1 GiB | 3 GiB on ROCm, ¾ × transient peak)
//! available = min(requested − used, headroom − margin) − transient peak
//! ```
//!
//! `init_free` is what CUDA reports free when the worker's snapshot is taken
//! (`gpu_worker.py::init_device`, after the CUDA context, the process groups
//! and the cuBLAS handles exist: the plan counts the context and, at TP ≥ 2,
//! `plan::TP_COMM_BYTES`), `requested` is `gpu_memory_utilization` of
//! the total (1.0 by default with this cache), and the transient peak is the
//! larger of the profile's and the warmup steps' allocated peak
//! (`record_transient_peak`), the profile's here. The profile's CUDA-graph
//! estimate is skipped (`gpu/model_runner.py::profile_cudagraph_memory`
//! returns 0): the captured graphs are in `used` instead. Not modelled: the
//! growth of PyTorch's reservation in the sizing steps (fragmentation,
//! `torch_reserve_growth_bytes`), kept free only where it exceeds the peak;
//! the sizing warmup's own peak (`gpu/warmup.py::run_kv_cache_sizing_warmup`:
//! attention, prompt logprobs, drafts), taken as the profile's; the null
//! block the post-warmup check holds back (`shrink_kv_cache_configs`).

use crate::units::GIB;

/// `KV_CACHE_MARGIN_FLOOR_BYTES` on CUDA (0.34.0 `extensible_kv_cache.py`).
const MARGIN_FLOOR_CUDA: u64 = GIB;
/// `KV_CACHE_MARGIN_FLOOR_BYTES` on ROCm, where kernels map scratch space
/// outside the allocator the first time they need it.
const MARGIN_FLOOR_ROCM: u64 = 3 * GIB;
/// `KV_CACHE_MARGIN_FRACTION`: the margin's share of the transient peak, as
/// a ratio of integers (¾).
const MARGIN_FRACTION: (u64, u64) = (3, 4);

/// The smallest margin the measurement keeps (`KV_CACHE_MARGIN_FLOOR_BYTES`).
pub(crate) fn margin_floor(rocm: bool) -> u64 {
    if rocm { MARGIN_FLOOR_ROCM } else { MARGIN_FLOOR_CUDA }
}

/// The margin kept free beyond a transient peak of `peak` bytes.
pub(crate) fn margin(peak: u64, rocm: bool) -> u64 {
    margin_floor(rocm).max(peak / MARGIN_FRACTION.1 * MARGIN_FRACTION.0)
}

/// What one GPU's worker measures after warmup, in bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    /// `init_snapshot.free_memory`: CUDA's total less what the process (and
    /// any other) holds when the snapshot is taken.
    pub init_free: u64,
    /// `gpu_memory_utilization` × total (`request_memory` rounds it up, the
    /// plan down: a byte at most).
    pub requested: u64,
    /// Everything resident but the KV cache: weights, memory outside
    /// PyTorch, the captured CUDA graphs.
    pub used: u64,
    /// The allocated transient peak (`reserved_headroom_bytes`).
    pub transient_peak: u64,
    pub rocm: bool,
}

impl Measured {
    /// The margin kept free beyond the transient peak.
    pub(crate) fn margin(self) -> u64 {
        margin(self.transient_peak, self.rocm)
    }

    /// The bytes the KV cache may take (`measure_kv_cache_bytes`).
    pub(crate) fn kv_bytes(self) -> u64 {
        let headroom = self.init_free.saturating_sub(self.used);
        let within_request = self.requested.saturating_sub(self.used);
        within_request.min(headroom.saturating_sub(self.margin())).saturating_sub(self.transient_peak)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

    fn h100(used: u64, peak: u64) -> Measured {
        // CUDA's total of an H100 80GB (79.19 GiB), 0.5 GiB held at the snapshot.
        let total = 81_090 * MIB;
        Measured { init_free: total - 512 * MIB, requested: total, used, transient_peak: peak, rocm: false }
    }

    #[test]
    fn a_small_peak_keeps_the_one_gib_floor() {
        // 2 GiB of peak: ¾ of it is 1.5 GiB, above the floor.
        let m = h100(20 * GIB, 2 * GIB);
        assert_eq!(m.margin(), 1536 * MIB);
        // 0.5 GiB of peak: the floor.
        let m = h100(20 * GIB, 512 * MIB);
        assert_eq!(m.margin(), GIB);
        // At utilization 1.0 the device bounds it: free after warmup less the margin and the peak.
        assert_eq!(m.kv_bytes(), 81_090 * MIB - 512 * MIB - 20 * GIB - GIB - 512 * MIB);
    }

    #[test]
    fn a_lower_utilization_caps_the_pool_below_the_device() {
        let mut m = h100(20 * GIB, 2 * GIB);
        m.requested = (81_090 * MIB) * 9 / 10;
        assert_eq!(m.kv_bytes(), m.requested - 20 * GIB - 2 * GIB);
    }

    #[test]
    fn rocm_keeps_three_gib() {
        let m = Measured { rocm: true, ..h100(20 * GIB, 2 * GIB) };
        assert_eq!(m.margin(), 3 * GIB);
    }

    #[test]
    fn nothing_left_is_zero() {
        assert_eq!(h100(79 * GIB, 2 * GIB).kv_bytes(), 0);
    }
}
