//! Who may probe now: one probe per GPU at a time ([`GpuLocks`]) and a rate
//! limit per client address ([`RateLimiter`]).

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

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
#[derive(Debug)]
pub struct RateLimiter {
    burst: f64,
    refill: Duration,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

/// Past this many addresses, full buckets are forgotten.
const MAX_TRACKED: usize = 1024;

impl RateLimiter {
    pub fn new(burst: u32, refill: Duration) -> Self {
        Self { burst: f64::from(burst.max(1)), refill, buckets: Mutex::new(HashMap::new()) }
    }

    fn level(&self, tokens: f64, since: Instant, now: Instant) -> f64 {
        let refilled = now.duration_since(since).as_secs_f64() / self.refill.as_secs_f64().max(1e-3);
        (tokens + refilled).min(self.burst)
    }

    /// Would a probe from `ip` be allowed now?
    pub fn allows(&self, ip: IpAddr) -> bool {
        let buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        buckets.get(&ip).is_none_or(|&(tokens, since)| self.level(tokens, since, Instant::now()) >= 1.0)
    }

    /// Takes one probe from `ip`'s bucket, if there is one.
    pub fn try_take(&self, ip: IpAddr) -> bool {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= MAX_TRACKED {
            buckets.retain(|_, &mut (tokens, since)| self.level(tokens, since, now) < self.burst);
        }
        let (tokens, since) = buckets.get(&ip).copied().unwrap_or((self.burst, now));
        let level = self.level(tokens, since, now);
        if level < 1.0 {
            return false;
        }
        buckets.insert(ip, (level - 1.0, now));
        true
    }
}

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

    #[test]
    fn bursts_then_refills() {
        let limiter = RateLimiter::new(2, Duration::from_secs(3600));
        let ip = IpAddr::from([127, 0, 0, 1]);
        assert!(limiter.try_take(ip) && limiter.try_take(ip));
        assert!(!limiter.allows(ip) && !limiter.try_take(ip));
        assert!(limiter.try_take(IpAddr::from([127, 0, 0, 2])));
    }
}
