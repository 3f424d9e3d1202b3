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
use shared::live;
use shared::protocol::{Field, Findings, GpuProcess, HostInfo, Sample, ServerMessage};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::cgroup::{self, Placement};
use super::launch::{self, GpuKind, Launches};
use super::pods::PodDirectory;
use super::{Backend, convert, procfs};

/// A published reading: the sample, its encoded `sample` frame (encoded once,
/// shared by every client), the diagnosis of the readings so far with its
/// `findings` frame, and the scheduler time it was asked for.
#[derive(Debug)]
pub struct Published {
    pub sample: Sample,
    pub frame: Utf8Bytes,
    pub findings: Vec<live::Finding>,
    pub findings_frame: Utf8Bytes,
    pub taken: Instant,
}

#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// How often process lists are read at most.
    pub process_interval: Duration,
    /// Where process names and cgroups are looked up (`/proc`; tests point elsewhere).
    pub proc_root: PathBuf,
    /// Where the kubelet's `pods/` and `containers/` log directories are
    /// (`/var/log`), for pod names.
    pub pod_log_root: PathBuf,
    /// The host's Hugging Face cache, where a recognised launch's model
    /// config is looked up (`launch::hf_hub_cache`).
    pub hf_cache: Option<PathBuf>,
    pub hostname: String,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self {
            // Process lists cost ~4.5 ms per call and take the driver lock
            // (MangoHud#2104); nvitop and nvtop read them every 1-2 s.
            process_interval: Duration::from_secs(2),
            proc_root: PathBuf::from("/proc"),
            pod_log_root: PathBuf::from("/var/log"),
            hf_cache: launch::hf_hub_cache(),
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
    // The diagnosis runs here, once per reading for every client: a few
    // passes over three minutes of readings (docs/measurements.md).
    let mut watcher = live::Watcher::new();
    // Which engine launch each process is, read once per process.
    let mut launches = Launches::default();
    let gpus: Vec<GpuKind> = backend
        .host()
        .devices
        .iter()
        .map(|d| GpuKind { catalog_id: d.catalog_id.clone(), total_bytes: d.memory_total_bytes.as_ref().ok().copied() })
        .collect();
    while let Some(stamp) = next_request(requests) {
        let now = std::time::Instant::now();
        let elapsed = now - start;
        let devices = backend.read_devices(elapsed);
        let stale = processes.as_ref().is_none_or(|(at, _, _)| now.duration_since(*at) >= config.process_interval);
        if stale {
            let mut lists: ProcessLists =
                backend.read_processes(elapsed).into_iter().map(|list| resolve(list, config)).collect();
            // A simulated backend's PIDs are made up: /proc would name another process.
            if !backend.host().simulated {
                launches.annotate(&config.proc_root, config.hf_cache.as_deref(), &gpus, &mut lists);
            }
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
        let findings = watcher.update(&sample).to_vec();
        let findings_frame =
            Utf8Bytes::from(ServerMessage::Findings(Findings::of(seq, sample.timestamp_ms, &findings)).encode());
        tracing::trace!(seq, findings = findings.len(), "sample published");
        tx.send_replace(Some(Arc::new(Published { sample, frame, findings, findings_frame, taken: stamp })));
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

/// Names, containers and pods for one GPU's process list. The kubelet's log
/// directories are read only when some process runs in a pod.
fn resolve(list: super::Reading<Vec<super::ProcessReading>>, config: &SamplerConfig) -> Field<Vec<GpuProcess>> {
    let list = match list {
        Ok(list) => list,
        Err(why) => return Field::Unavailable(why),
    };
    let placed: Vec<_> = list
        .iter()
        .map(|p| match &p.name {
            Some(name) => (p, Ok(name.clone()), Placement::default()),
            None => (p, procfs::name(&config.proc_root, p.pid), cgroup::read(&config.proc_root, p.pid)),
        })
        .collect();
    let pods = if placed.iter().any(|(_, _, at)| at.pod_uid.is_some()) {
        PodDirectory::read(&config.pod_log_root)
    } else {
        PodDirectory::default()
    };
    Field::Value(placed.into_iter().map(|(p, name, at)| convert::process(p, name, &at, &pods)).collect())
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

    /// A fake `/proc` and `/var/log`: a vLLM in a containerd pod (cgroup v2,
    /// systemd driver), a Docker container (cgroup v1), a CRI-O pod whose
    /// names the agent cannot see, a host process, and one already gone.
    #[test]
    fn processes_are_placed_from_a_fake_proc_tree() {
        use shared::protocol::PodRef;

        use crate::telemetry::ProcessReading;
        let root = std::env::temp_dir().join(format!("headroom-fakeproc-{}", std::process::id()));
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let (uid, other) = ("6b1e2f3a-4c5d-4e6f-8a9b-0c1d2e3f4a5b", "0a1b2c3d-0000-4111-8222-333344445555");
        let proc = |pid: u32, comm: &str, cgroup: &str| {
            let dir = root.join(format!("proc/{pid}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("comm"), format!("{comm}\n")).unwrap();
            std::fs::write(dir.join("cgroup"), cgroup).unwrap();
        };
        let sys = uid.replace('-', "_");
        proc(4242, "vllm", &format!("0::/kubepods.slice/kubepods-pod{sys}.slice/cri-containerd-{a}.scope\n"));
        proc(77, "python3", &format!("12:memory:/docker/{b}\n11:pids:/docker/{b}\n"));
        proc(
            88,
            "sglang",
            &format!(
                "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/crio-{}.scope\n",
                other.replace('-', "_"),
                "c".repeat(64)
            ),
        );
        proc(5, "Xorg", "0::/system.slice/display-manager.service\n");
        std::fs::create_dir_all(root.join(format!("log/pods/serving_vllm-0_{uid}/vllm"))).unwrap();
        std::fs::create_dir_all(root.join("log/containers")).unwrap();
        std::fs::write(root.join(format!("log/containers/vllm-0_serving_vllm-{a}.log")), "").unwrap();
        let config =
            SamplerConfig { proc_root: root.join("proc"), pod_log_root: root.join("log"), ..SamplerConfig::default() };
        let p = |pid| ProcessReading { pid, used_bytes: Ok(1 << 30), mig: None, name: None };
        let Field::Value(out) = resolve(Ok(vec![p(4242), p(77), p(88), p(5), p(999_999)]), &config) else {
            panic!("a process list");
        };
        let pod = |uid: &str, names: Option<(&str, &str, &str)>| PodRef {
            uid: uid.into(),
            namespace: names.map(|n| n.0.into()),
            name: names.map(|n| n.1.into()),
            container: names.map(|n| n.2.into()),
        };
        assert_eq!(out[0].name, Field::Value("vllm".into()));
        assert_eq!(out[0].container.as_deref(), Some(&a[..12]));
        assert_eq!(out[0].pod, Some(pod(uid, Some(("serving", "vllm-0", "vllm")))));
        assert_eq!((out[1].container.as_deref(), &out[1].pod), (Some(&b[..12]), &None));
        assert_eq!(out[2].pod, Some(pod(other, None)), "a pod whose names are not visible keeps its uid");
        assert_eq!((out[3].container.as_deref(), &out[3].pod), (None, &None));
        assert_eq!(out[4].name, Field::Unavailable(crate::telemetry::Unavailable::NotVisible));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
