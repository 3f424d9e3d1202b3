//! How many connections the agent holds, and who may hold them.
//!
//! - [`HttpSlots`]: open HTTP connections, in all and per address. Each
//!   accepted connection holds a slot until it closes or is upgraded.
//! - [`PendingPool`]: WebSockets that have not said `hello` yet. They are kept
//!   apart from authenticated sessions (whose cap is a semaphore in
//!   `AppState`), so a client without the token can never hold an
//!   authenticated user's slot. When the pool is full, the *oldest* pending
//!   connection is closed to make room: a real client, which says hello at
//!   once, always gets in, while one that never does is pushed out by the next.
//!
//! Per-address caps do not apply to loopback peers: behind the recommended
//! SSH tunnel every user is 127.0.0.1, so a cap there would only be a second
//! global cap. IPv6 peers are counted per /64, the block one host is given.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tokio::time::Instant;

/// The key per-address caps count by, or `None` when they do not apply.
fn address_key(ip: IpAddr) -> Option<IpAddr> {
    let ip = ip.to_canonical();
    if ip.is_loopback() {
        return None;
    }
    Some(match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let mut segments = v6.segments();
            segments[4..].fill(0);
            IpAddr::from(segments)
        }
    })
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Every slot is taken.
    Full,
    /// This address holds its share already.
    PerAddress,
}

/// Open HTTP connections, in all and per address.
#[derive(Debug)]
pub struct HttpSlots {
    total: Arc<Semaphore>,
    max: u32,
    per_address: u32,
    open: Mutex<HashMap<IpAddr, u32>>,
}

/// One open HTTP connection; dropping it frees the slot.
#[derive(Debug)]
pub struct HttpSlot {
    _permit: OwnedSemaphorePermit,
    key: Option<IpAddr>,
    slots: Arc<HttpSlots>,
}

impl HttpSlots {
    pub fn new(max: u32, per_address: u32) -> Arc<Self> {
        let max = max.max(1);
        Arc::new(Self {
            total: Arc::new(Semaphore::new(max as usize)),
            max,
            per_address: per_address.max(1),
            open: Mutex::new(HashMap::new()),
        })
    }

    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<HttpSlot, Refusal> {
        let key = address_key(ip);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = key
            && open.get(&key).copied().unwrap_or(0) >= self.per_address
        {
            return Err(Refusal::PerAddress);
        }
        let permit = self.total.clone().try_acquire_owned().map_err(|_| Refusal::Full)?;
        if let Some(key) = key {
            *open.entry(key).or_insert(0) += 1;
        }
        Ok(HttpSlot { _permit: permit, key, slots: self.clone() })
    }

    /// Connections open now.
    pub fn open(&self) -> u32 {
        self.max - self.total.available_permits() as u32
    }

    /// Completes when every connection has closed.
    pub async fn all_closed(&self) {
        let _ = self.total.acquire_many(self.max).await;
    }
}

impl Drop for HttpSlot {
    fn drop(&mut self) {
        let Some(key) = self.key else { return };
        let mut open = self.slots.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&key);
            }
        }
    }
}

/// WebSockets waiting for their `hello`.
#[derive(Debug)]
pub struct PendingPool {
    max: usize,
    per_address: usize,
    state: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    next_id: u64,
    /// Oldest first.
    entries: VecDeque<Entry>,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    key: Option<IpAddr>,
    evict: oneshot::Sender<()>,
}

/// A place in the pending pool; dropping it (after `hello`, or when the
/// connection ends) leaves the pool.
#[derive(Debug)]
pub struct PendingTicket {
    id: u64,
    pool: Arc<PendingPool>,
    /// Completes when a newer connection pushed this one out.
    pub evicted: oneshot::Receiver<()>,
}

impl PendingPool {
    pub fn new(max: u32, per_address: u32) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1) as usize,
            per_address: per_address.max(1) as usize,
            state: Mutex::new(Pending::default()),
        })
    }

    /// Takes a place, pushing out the oldest pending connection of the same
    /// address when that address holds its share, else the oldest of all
    /// when the pool is full. Returns whether one was pushed out.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> (PendingTicket, bool) {
        let key = address_key(ip);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let same = key.map_or(0, |k| state.entries.iter().filter(|e| e.key == Some(k)).count());
        let victim = if key.is_some() && same >= self.per_address {
            state.entries.iter().position(|e| e.key == key)
        } else if state.entries.len() >= self.max {
            Some(0)
        } else {
            None
        };
        let evicted_one = match victim.and_then(|i| state.entries.remove(i)) {
            Some(entry) => {
                let _ = entry.evict.send(());
                true
            }
            None => false,
        };
        let id = state.next_id;
        state.next_id += 1;
        let (evict, evicted) = oneshot::channel();
        state.entries.push_back(Entry { id, key, evict });
        (PendingTicket { id, pool: self.clone(), evicted }, evicted_one)
    }

    /// Connections waiting for their hello now.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for PendingTicket {
    fn drop(&mut self) {
        let mut state = self.pool.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = state.entries.iter().position(|e| e.id == self.id) {
            state.entries.remove(i);
        }
    }
}

/// Refusals are logged at most once per this, with a count: a flood must not
/// flood the log too.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// Counts refused connections and logs them, throttled.
#[derive(Debug, Default)]
pub struct RefusalLog {
    state: Mutex<(Option<Instant>, u64)>,
}

impl RefusalLog {
    /// Records one refusal; logs a warning with `what` when one is due.
    pub fn record(&self, what: &str) {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.1 += 1;
        let due = state.0.is_none_or(|last| now.duration_since(last) >= REFUSAL_LOG_EVERY);
        if due {
            let count = state.1;
            *state = (Some(now), 0);
            drop(state);
            tracing::warn!("refused {count} connection(s) since the last report: {what}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn http_slots_cap_remote_addresses_but_not_loopback() {
        let slots = HttpSlots::new(4, 2);
        let a = [slots.admit(ip("10.0.0.1")).unwrap(), slots.admit(ip("10.0.0.1")).unwrap()];
        assert_eq!(slots.admit(ip("10.0.0.1")).unwrap_err(), Refusal::PerAddress);
        let l = [slots.admit(ip("127.0.0.1")).unwrap(), slots.admit(ip("127.0.0.1")).unwrap()];
        assert_eq!(slots.admit(ip("10.0.0.2")).unwrap_err(), Refusal::Full);
        assert_eq!(slots.open(), 4);
        drop(a);
        assert!(slots.admit(ip("10.0.0.1")).is_ok());
        drop(l);
    }

    #[test]
    fn ipv6_peers_count_per_64() {
        let slots = HttpSlots::new(8, 1);
        let _a = slots.admit(ip("2001:db8::1")).unwrap();
        assert_eq!(slots.admit(ip("2001:db8::2")).unwrap_err(), Refusal::PerAddress);
        assert!(slots.admit(ip("2001:db8:0:1::1")).is_ok());
        // IPv4-mapped loopback is loopback.
        assert!(slots.admit(ip("::ffff:127.0.0.1")).is_ok());
        assert!(slots.admit(ip("::ffff:127.0.0.1")).is_ok());
    }

    #[test]
    fn a_full_pending_pool_pushes_out_its_oldest() {
        let pool = PendingPool::new(2, 8);
        let (mut first, pushed) = pool.admit(ip("127.0.0.1"));
        assert!(!pushed);
        let (mut second, _) = pool.admit(ip("127.0.0.1"));
        let (_third, pushed) = pool.admit(ip("127.0.0.1"));
        assert!(pushed);
        assert!(first.evicted.try_recv().is_ok(), "the oldest goes");
        assert!(second.evicted.try_recv().is_err(), "the others stay");
        assert_eq!(pool.len(), 2);
        drop(second);
        assert_eq!(pool.len(), 1);
    }

    #[test]
    fn one_address_only_pushes_out_its_own() {
        let pool = PendingPool::new(8, 2);
        let (mut other, _) = pool.admit(ip("10.0.0.9"));
        let (mut a1, _) = pool.admit(ip("10.0.0.1"));
        let (_a2, _) = pool.admit(ip("10.0.0.1"));
        let (_a3, pushed) = pool.admit(ip("10.0.0.1"));
        assert!(pushed);
        assert!(a1.evicted.try_recv().is_ok());
        assert!(other.evicted.try_recv().is_err());
        assert_eq!(pool.len(), 3);
    }
}
