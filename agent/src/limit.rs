//! A token bucket per client address: `burst` at once, then one more per
//! `refill`. Used for failed authentications (`server::auth`) and for probes
//! (`probe::guard`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

// tokio's clock, so tests with paused time can move it.
use tokio::time::Instant;

#[derive(Debug)]
pub struct AddressBuckets {
    burst: f64,
    refill: Duration,
    /// Past this many addresses, full buckets are forgotten.
    max_tracked: usize,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl AddressBuckets {
    pub fn new(burst: u32, refill: Duration, max_tracked: usize) -> Self {
        Self { burst: f64::from(burst.max(1)), refill, max_tracked, buckets: Mutex::new(HashMap::new()) }
    }

    fn level(&self, tokens: f64, since: Instant, now: Instant) -> f64 {
        let refilled = now.duration_since(since).as_secs_f64() / self.refill.as_secs_f64().max(1e-3);
        (tokens + refilled).min(self.burst)
    }

    /// Whether `ip` has a token now.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        buckets.get(&ip).is_none_or(|&(tokens, since)| self.level(tokens, since, Instant::now()) >= 1.0)
    }

    /// Takes one of `ip`'s tokens; whether there was one. With `always`, an
    /// empty bucket is touched anyway (a failure is recorded, it stays empty).
    fn take(&self, ip: IpAddr, always: bool) -> bool {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= self.max_tracked {
            buckets.retain(|_, &mut (tokens, since)| self.level(tokens, since, now) < self.burst);
        }
        let (tokens, since) = buckets.get(&ip).copied().unwrap_or((self.burst, now));
        let level = self.level(tokens, since, now);
        if level < 1.0 && !always {
            return false;
        }
        buckets.insert(ip, ((level - 1.0).max(0.0), now));
        level >= 1.0
    }

    /// Takes a token if `ip` has one (a probe may start).
    pub fn try_take(&self, ip: IpAddr) -> bool {
        self.take(ip, false)
    }

    /// Records a failed attempt from `ip`, whatever its bucket holds.
    pub fn fail(&self, ip: IpAddr) {
        self.take(ip, true);
    }
}
