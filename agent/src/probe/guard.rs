//! Who may probe now: one probe per GPU at a time ([`GpuLocks`]) and a rate
//! limit per client address ([`RateLimiter`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The GPUs a probe runs on.
#[derive(Debug, Default)]
pub struct GpuLocks {
    busy: Mutex<HashSet<u32>>,
}

/// Holds a GPU for one probe; dropping it frees the GPU.
#[derive(Debug)]
pub struct GpuLease {
    locks: Arc<GpuLocks>,
    gpu: u32,
}

impl GpuLocks {
    /// The GPU, unless a probe already holds it.
    pub fn try_lock(self: &Arc<Self>, gpu: u32) -> Option<GpuLease> {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        busy.insert(gpu).then(|| GpuLease { locks: self.clone(), gpu })
    }
}

impl Drop for GpuLease {
    fn drop(&mut self) {
        self.locks.busy.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.gpu);
    }
}

/// Probes per client address, as a token bucket: `burst` at once, then one
/// more per `refill`.
pub type RateLimiter = crate::limit::AddressBuckets;

/// Past this many addresses, full buckets are forgotten.
pub const MAX_TRACKED: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_probe_per_gpu() {
        let locks = Arc::new(GpuLocks::default());
        let lease = locks.try_lock(0).unwrap();
        assert!(locks.try_lock(0).is_none());
        assert!(locks.try_lock(1).is_some());
        drop(lease);
        assert!(locks.try_lock(0).is_some());
    }

    use std::net::IpAddr;
    use std::time::Duration;

    #[test]
    fn bursts_then_refills() {
        let limiter = RateLimiter::new(2, Duration::from_secs(3600), MAX_TRACKED);
        let ip = IpAddr::from([127, 0, 0, 1]);
        assert!(limiter.try_take(ip) && limiter.try_take(ip));
        assert!(!limiter.allows(ip) && !limiter.try_take(ip));
        assert!(limiter.try_take(IpAddr::from([127, 0, 0, 2])));
    }
}
