//! How many connections the agent holds, and who may hold them.
//!
//! - [`HttpSlots`]: open HTTP connections, in all and per address. Each
//!   accepted connection holds a slot until it closes or is upgraded; when
//!   full, the oldest connection without a request in flight is closed to
//!   make room (a slowloris cannot keep a real client out).
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

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
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
    /// Every slot is taken by a connection with a request in flight.
    Full,
    /// This address holds its share already, all of it busy.
    PerAddress,
}

/// Places in a pool, oldest first. When there is no room, the oldest idle
/// place is taken back (of the same address when that address holds its
/// share, else of all); only when none is idle is the newcomer refused.
#[derive(Debug)]
struct Places {
    max: usize,
    per_address: usize,
    state: Mutex<PlacesState>,
}

#[derive(Debug, Default)]
struct PlacesState {
    next_id: u64,
    entries: VecDeque<Entry>,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    key: Option<IpAddr>,
    evict: oneshot::Sender<()>,
    /// Work in flight; `None`: always idle (a WebSocket before its hello).
    busy: Option<Arc<AtomicUsize>>,
}

impl Entry {
    fn idle(&self) -> bool {
        self.busy.as_ref().is_none_or(|b| b.load(Ordering::Acquire) == 0)
    }
}

/// A place taken: its id, the signal that it was taken back, and whether
/// another was taken back to make room.
type Taken = (u64, oneshot::Receiver<()>, bool);

impl Places {
    fn new(max: u32, per_address: u32) -> Self {
        Self {
            max: max.max(1) as usize,
            per_address: per_address.max(1) as usize,
            state: Mutex::new(PlacesState::default()),
        }
    }

    fn take(&self, ip: IpAddr, busy: Option<Arc<AtomicUsize>>) -> Result<Taken, Refusal> {
        let key = address_key(ip);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let same = key.map_or(0, |k| state.entries.iter().filter(|e| e.key == Some(k)).count());
        let victim = if key.is_some() && same >= self.per_address {
            Some(state.entries.iter().position(|e| e.key == key && e.idle()).ok_or(Refusal::PerAddress)?)
        } else if state.entries.len() >= self.max {
            Some(state.entries.iter().position(Entry::idle).ok_or(Refusal::Full)?)
        } else {
            None
        };
        let pushed_out = match victim.and_then(|i| state.entries.remove(i)) {
            Some(entry) => {
                let _ = entry.evict.send(());
                true
            }
            None => false,
        };
        let id = state.next_id;
        state.next_id += 1;
        let (evict, evicted) = oneshot::channel();
        state.entries.push_back(Entry { id, key, evict, busy });
        Ok((id, evicted, pushed_out))
    }

    fn give_back(&self, id: u64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = state.entries.iter().position(|e| e.id == id) {
            state.entries.remove(i);
        }
    }

    fn len(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).entries.len()
    }
}

/// Open HTTP connections, in all and per address. When the pool is full, the
/// oldest connection *without a request in flight* (idle keep-alive, or
/// still sending its headers: a slowloris) is closed to make room, so that a
/// real client gets in while a slow one is pushed out; only when every
/// connection is busy is the newcomer refused.
#[derive(Debug)]
pub struct HttpSlots {
    places: Places,
    /// Slots alive (pushed-out ones until their task ends): for shutdown.
    live: watch::Sender<usize>,
}

/// One open HTTP connection; dropping it frees the slot.
#[derive(Debug)]
pub struct HttpSlot {
    id: u64,
    slots: Arc<HttpSlots>,
    /// Requests in flight on this connection.
    busy: Arc<AtomicUsize>,
    /// Completes when a newer connection needs this one's place.
    pub evicted: oneshot::Receiver<()>,
}

impl HttpSlot {
    /// A handle that marks requests from inside the connection's service.
    pub fn requests(&self) -> Requests {
        Requests(self.busy.clone())
    }
}

/// Marks requests on one connection (cloned into its service).
#[derive(Debug, Clone)]
pub struct Requests(Arc<AtomicUsize>);

impl Requests {
    pub fn start(&self) -> RequestGuard {
        self.0.fetch_add(1, Ordering::AcqRel);
        RequestGuard(self.0.clone())
    }
}

/// A request in flight; the connection cannot be pushed out meanwhile.
#[derive(Debug)]
pub struct RequestGuard(Arc<AtomicUsize>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl HttpSlots {
    pub fn new(max: u32, per_address: u32) -> Arc<Self> {
        Arc::new(Self { places: Places::new(max, per_address), live: watch::Sender::new(0) })
    }

    /// A slot for a connection from `ip`; whether an idle one was pushed out.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<(HttpSlot, bool), Refusal> {
        let busy = Arc::new(AtomicUsize::new(0));
        let (id, evicted, pushed_out) = self.places.take(ip, Some(busy.clone()))?;
        self.live.send_modify(|n| *n += 1);
        Ok((HttpSlot { id, slots: self.clone(), busy, evicted }, pushed_out))
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        *self.live.borrow()
    }

    /// Completes when every connection has closed.
    pub async fn all_closed(&self) {
        let _ = self.live.subscribe().wait_for(|n| *n == 0).await;
    }
}

impl Drop for HttpSlot {
    fn drop(&mut self) {
        self.slots.places.give_back(self.id);
        self.slots.live.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// WebSockets waiting for their `hello`: always idle, so a newcomer always
/// gets a place.
#[derive(Debug)]
pub struct PendingPool {
    places: Places,
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
        Arc::new(Self { places: Places::new(max, per_address) })
    }

    /// Takes a place, pushing out the oldest pending connection of the same
    /// address when that address holds its share, else the oldest of all
    /// when the pool is full. Returns whether one was pushed out.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> (PendingTicket, bool) {
        // Every entry is idle, so there is always one to push out; were there
        // none, the newcomer would be closed like a pushed-out connection.
        let (id, evicted, pushed_out) = match self.places.take(ip, None) {
            Ok(taken) => taken,
            Err(_) => {
                let (evict, evicted) = oneshot::channel();
                drop(evict);
                (u64::MAX, evicted, false)
            }
        };
        (PendingTicket { id, pool: self.clone(), evicted }, pushed_out)
    }

    /// Connections waiting for their hello now.
    pub fn len(&self) -> usize {
        self.places.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for PendingTicket {
    fn drop(&mut self) {
        self.pool.places.give_back(self.id);
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
    fn a_full_http_pool_pushes_out_its_oldest_idle_connection() {
        let slots = HttpSlots::new(3, 8);
        let (mut busy, _) = slots.admit(ip("127.0.0.1")).unwrap();
        let request = busy.requests().start();
        let (mut idle, _) = slots.admit(ip("127.0.0.1")).unwrap();
        let (_third, _) = slots.admit(ip("127.0.0.1")).unwrap();
        let (_fourth, pushed) = slots.admit(ip("127.0.0.1")).unwrap();
        assert!(pushed);
        assert!(busy.evicted.try_recv().is_err(), "a connection with a request in flight stays");
        assert!(idle.evicted.try_recv().is_ok(), "the oldest idle one goes");
        drop(idle);
        assert_eq!(slots.open(), 3);
        // Every one busy: the newcomer is refused.
        let all: Vec<_> = std::iter::repeat_with(|| slots.admit(ip("127.0.0.1")).unwrap().0).take(2).collect();
        let _requests: Vec<_> = all.iter().map(|slot| slot.requests().start()).collect();
        assert_eq!(slots.admit(ip("127.0.0.1")).unwrap_err(), Refusal::Full);
        drop(request);
    }

    #[test]
    fn remote_addresses_only_push_out_their_own() {
        let slots = HttpSlots::new(8, 2);
        let (mut other, _) = slots.admit(ip("10.0.0.9")).unwrap();
        let (mut a1, _) = slots.admit(ip("10.0.0.1")).unwrap();
        let (a2, _) = slots.admit(ip("10.0.0.1")).unwrap();
        let (a3, pushed) = slots.admit(ip("10.0.0.1")).unwrap();
        assert!(pushed);
        assert!(a1.evicted.try_recv().is_ok(), "its own oldest goes");
        assert!(other.evicted.try_recv().is_err(), "another address's stays");
        drop(a1);
        // Its share is busy: refused, while another address still gets in.
        let _busy = [a2.requests().start(), a3.requests().start()];
        assert_eq!(slots.admit(ip("10.0.0.1")).unwrap_err(), Refusal::PerAddress);
        assert!(slots.admit(ip("10.0.0.2")).is_ok());
        // IPv6 peers count per /64; mapped loopback is loopback.
        let v6 = HttpSlots::new(8, 1);
        let (b, _) = v6.admit(ip("2001:db8::1")).unwrap();
        let _rb = b.requests().start();
        assert_eq!(v6.admit(ip("2001:db8::2")).unwrap_err(), Refusal::PerAddress);
        assert!(v6.admit(ip("2001:db8:0:1::1")).is_ok());
        assert!(v6.admit(ip("::ffff:127.0.0.1")).is_ok() && v6.admit(ip("::ffff:127.0.0.1")).is_ok());
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
