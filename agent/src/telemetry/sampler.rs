//! Sampling: one dedicated OS thread owns the backend and makes every
//! (blocking) backend call; a small async scheduler decides *when*. Readings
//! are published on a `watch` channel. Latest wins, so a slow client skips
//! readings instead of building a queue.
//!
//! The scheduler asks for a reading at the fastest interval any subscriber
//! wants, and one more on demand (`/metrics`, `/api/snapshot`) when the latest
//! is stale. With nobody listening nothing is read. Process lists, the
//! expensive call, are read at most every `process_interval`.
//!
//! Time is tokio's (`tokio::time::Instant`), so tests run it on paused time;
//! the thread itself never looks at a clock except for the process cadence.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::ws::Utf8Bytes;
use shared::protocol::{Field, GpuProcess, HostInfo, Sample, ServerMessage};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::{Backend, convert, procfs};

/// A published reading: the sample, its encoded `sample` frame (encoded once,
/// shared by every client) and the scheduler time it was asked for.
#[derive(Debug)]
pub struct Published {
    pub sample: Sample,
    pub frame: Utf8Bytes,
    pub taken: Instant,
}

#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// How often process lists are read at most.
    pub process_interval: Duration,
    /// Where process names are looked up (`/proc`; tests point elsewhere).
    pub proc_root: PathBuf,
    pub hostname: String,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self {
            // Process lists cost ~4.5 ms per call and take the driver lock
            // (MangoHud#2104); nvitop and nvtop read them every 1-2 s.
            process_interval: Duration::from_secs(2),
            proc_root: PathBuf::from("/proc"),
            hostname: convert::hostname(),
        }
    }
}

/// Requests from async code to the sampling thread.
#[derive(Debug, Default)]
struct Requests {
    state: Mutex<RequestState>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct RequestState {
    /// A reading is wanted, stamped with this scheduler time.
    pending: Option<Instant>,
    stopping: bool,
}

impl Requests {
    fn lock(&self) -> MutexGuard<'_, RequestState> {
        // The state stays consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn change(&self, f: impl FnOnce(&mut RequestState)) {
        f(&mut self.lock());
        self.wake.notify_all();
    }
}

/// Who is subscribed, at which intervals.
#[derive(Debug, Default)]
struct Subscribers {
    intervals: Mutex<BTreeMap<Duration, usize>>,
    changed: Notify,
}

impl Subscribers {
    fn fastest(&self) -> Option<Duration> {
        self.intervals.lock().unwrap_or_else(PoisonError::into_inner).keys().next().copied()
    }

    fn change(&self, f: impl FnOnce(&mut BTreeMap<Duration, usize>)) {
        f(&mut self.intervals.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed.notify_one();
    }
}

/// Keeps readings coming at (at least) `interval` while alive.
#[derive(Debug)]
pub struct Subscription {
    subscribers: Arc<Subscribers>,
    interval: Duration,
}

impl Subscription {
    pub fn interval(&self) -> Duration {
        self.interval
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.subscribers.change(|m| {
            if let Some(n) = m.get_mut(&self.interval) {
                *n -= 1;
                if *n == 0 {
                    m.remove(&self.interval);
                }
            }
        });
    }
}

/// The handle the server holds.
#[derive(Debug)]
pub struct Sampler {
    requests: Arc<Requests>,
    subscribers: Arc<Subscribers>,
    latest: watch::Receiver<Option<Arc<Published>>>,
    host: Arc<HostInfo>,
    thread: Mutex<Option<JoinHandle<()>>>,
    scheduler: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Starts the sampling thread and its scheduler (on the current tokio
    /// runtime). Nothing is read until the first subscriber or request.
    pub fn start(backend: Box<dyn Backend>, config: SamplerConfig) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        let host = Arc::new(convert::host_info(backend.host(), config.hostname.clone()));
        let requests = Arc::new(Requests::default());
        let subscribers = Arc::new(Subscribers::default());
        let (tx, latest) = watch::channel(None);
        let thread = std::thread::Builder::new().name("headroom-sampler".into()).spawn({
            let requests = requests.clone();
            move || run(backend, &requests, &tx, &config)
        })?;
        let scheduler = runtime.spawn(schedule(subscribers.clone(), requests.clone(), latest.clone()));
        Ok(Self { requests, subscribers, latest, host, thread: Mutex::new(Some(thread)), scheduler })
    }

    pub fn host(&self) -> &Arc<HostInfo> {
        &self.host
    }

    /// Asks for readings at least every `interval` until the subscription drops.
    pub fn subscribe(&self, interval: Duration) -> Subscription {
        self.subscribers.change(|m| *m.entry(interval).or_default() += 1);
        Subscription { subscribers: self.subscribers.clone(), interval }
    }

    /// The latest reading, as a channel that says when it changes.
    pub fn watch(&self) -> watch::Receiver<Option<Arc<Published>>> {
        self.latest.clone()
    }

    /// A reading no older than `max_age`: the latest, or a new one taken now.
    /// `None` if none arrives within `timeout`.
    pub async fn fresh(&self, max_age: Duration, timeout: Duration) -> Option<Arc<Published>> {
        let mut rx = self.latest.clone();
        if let Some(p) = rx.borrow_and_update().clone()
            && p.taken.elapsed() <= max_age
        {
            return Some(p);
        }
        let stamp = Instant::now();
        self.requests.change(|s| s.pending = Some(stamp));
        tokio::time::timeout(timeout, published_at_or_after(&mut rx, stamp)).await.ok().flatten()
    }

    /// Stops the thread after its current reading, and the scheduler. Does not wait.
    pub fn stop(&self) {
        self.scheduler.abort();
        self.requests.change(|s| s.stopping = true);
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
        let thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(thread) = thread {
            // A panic in the sampler was already reported by the panic hook.
            let _ = thread.join();
        }
    }
}

async fn published_at_or_after(
    rx: &mut watch::Receiver<Option<Arc<Published>>>,
    stamp: Instant,
) -> Option<Arc<Published>> {
    loop {
        if let Some(p) = rx.borrow_and_update().clone()
            && p.taken >= stamp
        {
            return Some(p);
        }
        rx.changed().await.ok()?;
    }
}

/// Asks for a reading every `fastest` interval while anyone is subscribed.
async fn schedule(
    subscribers: Arc<Subscribers>,
    requests: Arc<Requests>,
    mut latest: watch::Receiver<Option<Arc<Published>>>,
) {
    let mut last: Option<Instant> = None;
    loop {
        let changed = subscribers.changed.notified();
        let due = match (subscribers.fastest(), last) {
            (None, _) => {
                changed.await;
                continue;
            }
            (Some(_), None) => Instant::now(),
            (Some(tick), Some(last)) => last + tick,
        };
        tokio::select! {
            // A faster subscriber may make the next reading due sooner.
            () = changed => continue,
            () = tokio::time::sleep_until(due) => {}
        }
        let stamp = Instant::now();
        requests.change(|s| s.pending = Some(stamp));
        // Wait for this reading before timing the next, so a slow backend
        // stretches the tick instead of piling up requests.
        if published_at_or_after(&mut latest, stamp).await.is_none() {
            return;
        }
        // Keep the cadence from the request, but never schedule in the past:
        // after a late reading the next one waits a full tick, no burst.
        let now = Instant::now();
        last = Some(if subscribers.fastest().is_some_and(|tick| stamp + tick < now) { now } else { stamp });
    }
}

type ProcessLists = Vec<Field<Vec<GpuProcess>>>;

/// The sampling thread: waits for a request, reads, publishes.
fn run(
    mut backend: Box<dyn Backend>,
    requests: &Requests,
    tx: &watch::Sender<Option<Arc<Published>>>,
    config: &SamplerConfig,
) {
    let start = std::time::Instant::now();
    let mut seq = 0u64;
    // When the process lists were read (monotonic, unix ms) and what they held.
    let mut processes: Option<(std::time::Instant, u64, ProcessLists)> = None;
    while let Some(stamp) = next_request(requests) {
        let now = std::time::Instant::now();
        let elapsed = now - start;
        let devices = backend.read_devices(elapsed);
        let stale = processes.as_ref().is_none_or(|(at, _, _)| now.duration_since(*at) >= config.process_interval);
        if stale {
            let lists = backend.read_processes(elapsed).into_iter().map(|list| resolve(list, config)).collect();
            processes = Some((now, unix_ms(), lists));
        }
        let (processes_timestamp_ms, lists) = match &processes {
            Some((_, ms, lists)) => (*ms, lists.as_slice()),
            None => (0, &[][..]),
        };
        seq += 1;
        let sample = Sample {
            seq,
            timestamp_ms: unix_ms(),
            processes_timestamp_ms,
            simulated: backend.host().simulated,
            gpus: devices
                .iter()
                .zip(0u32..)
                .map(|(d, i)| {
                    let procs = lists.get(i as usize).cloned();
                    convert::gpu_sample(i, d, procs.unwrap_or(Field::Unavailable(super::Unavailable::NotSampled)))
                })
                .collect(),
        };
        let frame = Utf8Bytes::from(ServerMessage::Sample(sample.clone()).encode());
        tracing::trace!(seq, "sample published");
        tx.send_replace(Some(Arc::new(Published { sample, frame, taken: stamp })));
    }
}

/// Blocks until a reading is requested; `None` when the sampler must stop.
fn next_request(requests: &Requests) -> Option<Instant> {
    let mut state = requests.lock();
    loop {
        if state.stopping {
            return None;
        }
        if let Some(stamp) = state.pending.take() {
            return Some(stamp);
        }
        state = requests.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
}

/// Names and containers for one GPU's process list.
fn resolve(list: super::Reading<Vec<super::ProcessReading>>, config: &SamplerConfig) -> Field<Vec<GpuProcess>> {
    match list {
        Ok(list) => Field::Value(
            list.iter()
                .map(|p| match &p.name {
                    Some(name) => convert::process(p, Ok(name.clone()), None),
                    None => convert::process(
                        p,
                        procfs::name(&config.proc_root, p.pid),
                        procfs::container(&config.proc_root, p.pid),
                    ),
                })
                .collect(),
        ),
        Err(why) => Field::Unavailable(why),
    }
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::simulated::{SimSpec, SimulatedBackend};

    fn sampler() -> Sampler {
        let backend = SimulatedBackend::new(SimSpec::parse("2xh100-sxm").unwrap());
        Sampler::start(Box::new(backend), SamplerConfig::default()).unwrap()
    }

    #[tokio::test]
    async fn idle_until_asked_then_ticks_while_subscribed() {
        let s = sampler();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(s.watch().borrow().is_none(), "no reading without demand");
        let sub = s.subscribe(Duration::from_millis(100));
        let mut rx = s.watch();
        let mut seqs = Vec::new();
        while seqs.len() < 3 {
            rx.changed().await.unwrap();
            seqs.push(rx.borrow().as_ref().unwrap().sample.seq);
        }
        assert_eq!(seqs, [1, 2, 3]);
        drop(sub);
        tokio::time::sleep(Duration::from_millis(150)).await;
        let seq = rx.borrow().as_ref().unwrap().sample.seq;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(rx.borrow().as_ref().unwrap().sample.seq, seq, "stopped after the last subscriber left");
    }

    #[tokio::test]
    async fn on_demand_readings_reuse_fresh_ones() {
        let s = sampler();
        let a = s.fresh(Duration::from_secs(5), Duration::from_secs(5)).await.unwrap();
        let b = s.fresh(Duration::from_secs(5), Duration::from_secs(5)).await.unwrap();
        assert_eq!((a.sample.seq, b.sample.seq), (1, 1));
        let c = s.fresh(Duration::ZERO, Duration::from_secs(5)).await.unwrap();
        assert_eq!(c.sample.seq, 2);
        assert!(c.sample.simulated);
        assert_eq!(c.sample.gpus.len(), 2);
    }
}
