//! `headroom serve`'s server: the page, the WebSocket stream, the JSON API and
//! Prometheus metrics, on one port.
//!
//! [`router`] builds the whole app from an [`AppState`]; [`serve`] runs it on
//! any listener (plain TCP or [`tls::TlsListener`]) until `shutdown`, then
//! closes every WebSocket with a close frame. Tests build the real thing on
//! port 0.
//!
//! **Architecture Invariant:** handlers never call a backend; they read the
//! sampler's latest published sample. Every request passes the `Host` check;
//! every WebSocket passes the `Origin` check and the token handshake.
//!
//! **Architecture Invariant:** nothing a client sends or withholds grows the
//! agent without bound: connections are counted (`pool.rs`), every read and
//! write has a deadline, buffers have caps, and a client that will not read
//! is disconnected.

pub mod auth;
mod conn;
mod error;
mod fleet;
mod http;
pub mod limits;
mod metrics;
pub mod pool;
mod probe;
pub mod tls;
pub mod web;
mod ws;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::get;
use axum::serve::Listener;
use shared::protocol::MAX_CLIENT_MESSAGE_BYTES;
use tokio::sync::{Semaphore, watch};

use crate::probe::ProbeConfig;
use crate::telemetry::sampler::Sampler;
pub use auth::Token;
pub use conn::LoggingTcpListener;
pub use error::ApiError;
pub use metrics::{DCGM_NAMES, Dcgm};

/// Everything an operator can tune, with safe defaults.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub token: Token,
    /// Extra origins allowed to open the WebSocket (`--allow-origin`),
    /// normalized (`https://host[:port]`). The agent's own origin always is.
    pub allowed_origins: Vec<String>,
    /// Extra host names allowed in `Host` (`--allow-host`). IP literals,
    /// `localhost` and this machine's name always are.
    pub allowed_hosts: Vec<String>,
    /// Served over TLS (the page's own origin is then `https://`).
    pub tls: bool,
    /// Authenticated WebSockets at once (`--max-connections`).
    pub max_connections: u32,
    /// WebSockets that have not said hello yet, at once; when full, the
    /// oldest is closed to make room (`pool::PendingPool`).
    pub max_pending: u32,
    /// Of those, from one (non-loopback) address.
    pub max_pending_per_address: u32,
    pub max_message_bytes: usize,
    /// A client must say hello within this (pings and all).
    pub handshake_timeout: Duration,
    /// A frame to a client must be written within this, else the client is
    /// not reading and is disconnected. The close frame gets the shorter of
    /// this and one second.
    pub write_timeout: Duration,
    /// Bytes tungstenite may hold for one WebSocket that has not been written
    /// out yet (a frame, pongs, the close frame). Must exceed the largest frame.
    pub max_write_buffer_bytes: usize,
    /// Frames (pings included) a client may send at once, then one per
    /// `client_frame_refill`; faster senders are read no faster.
    pub client_frame_burst: u32,
    pub client_frame_refill: Duration,
    /// Open HTTP connections at once, in all and per (non-loopback) address.
    pub max_http_connections: u32,
    pub max_http_connections_per_address: u32,
    /// A client must send a request's headers within this (slowloris).
    pub header_read_timeout: Duration,
    /// Request bodies over this are refused (413).
    pub max_request_body_bytes: usize,
    /// Close a WebSocket that sent nothing (not even a pong to our pings) for
    /// this long. `None` disables pings and the timeout.
    pub idle_timeout: Option<Duration>,
    /// How long shutdown waits for WebSockets to close.
    pub shutdown_grace: Duration,
    /// Failed token attempts allowed at once per address, then one per refill.
    pub auth_failure_burst: u32,
    pub auth_failure_refill: Duration,
    /// A wrong token from an address past its failures is answered this much
    /// later (within the handshake deadline): guessing slows to the pace of
    /// the refill, while the right token is never delayed.
    pub auth_refusal_delay: Duration,
    /// Serve `/metrics` without the token (for scrapers on a trusted network).
    pub public_metrics: bool,
    pub web: web::WebRoot,
    /// Probe allocations: on, plan-only, 1 GiB margin by default.
    pub probes: ProbeConfig,
    /// `/metrics` also carries the dcgm-exporter-compatible series.
    pub dcgm_metrics: Dcgm,
    /// The fleet's Prometheus, relayed on `/api/fleet` (`--prometheus`).
    pub prometheus: Option<crate::fleet::PrometheusUrl>,
}

impl ServerConfig {
    pub fn new(token: Token) -> Self {
        Self {
            token,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            tls: false,
            max_connections: 256,
            // As many as authenticated ones, so that a burst of real clients
            // connecting at once (all 127.0.0.1 behind a tunnel) never pushes
            // one of its own out; each costs a few KiB until its hello.
            max_pending: 256,
            max_pending_per_address: 16,
            max_message_bytes: MAX_CLIENT_MESSAGE_BYTES as usize,
            // Browsers send hello as soon as the socket opens.
            handshake_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            // A sample of 8 GPUs with 64 processes each is ~40 KiB of JSON;
            // a frame never needs more than this.
            max_write_buffer_bytes: 1024 * 1024,
            // Browsers cannot send pings at all; the page sends a few
            // messages per minute. 20 frames a second is far beyond either.
            client_frame_burst: 64,
            client_frame_refill: Duration::from_millis(50),
            // With every WebSocket slot taken too, ~1,300 open files: the
            // agent raises its soft limit to the hard one at start, and
            // lowers these caps where even that is too low
            // (`limits::fit_to_open_files`).
            max_http_connections: 256,
            max_http_connections_per_address: 64,
            header_read_timeout: Duration::from_secs(10),
            // Every route is a GET; 64 KiB leaves room for the query-driven
            // ones and nothing else.
            max_request_body_bytes: 64 * 1024,
            idle_timeout: Some(Duration::from_secs(90)),
            shutdown_grace: Duration::from_secs(5),
            auth_failure_burst: 10,
            auth_failure_refill: Duration::from_secs(2),
            auth_refusal_delay: Duration::from_secs(2),
            public_metrics: false,
            web: web::WebRoot::detect(None),
            probes: ProbeConfig::default(),
            dcgm_metrics: Dcgm::On,
            prometheus: None,
        }
    }
}

/// Shared by every handler; cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    config: ServerConfig,
    sampler: Sampler,
    limiter: auth::FailureLimiter,
    probes: probe::ProbeService,
    fleet: Option<crate::fleet::Relay>,
    /// One permit per authenticated WebSocket.
    connections: Arc<Semaphore>,
    /// WebSockets before their hello.
    pending: Arc<pool::PendingPool>,
    /// One permit per WebSocket of either kind, held for its whole life: how
    /// shutdown knows they are all gone. Room for every authenticated one
    /// and twice the pending pool (pushed-out ones take a moment to close).
    sockets: Arc<Semaphore>,
    http: Arc<pool::HttpSlots>,
    refusals: pool::RefusalLog,
    shutdown: watch::Sender<bool>,
}

impl AppState {
    pub fn new(mut config: ServerConfig, sampler: Sampler) -> Self {
        config.allowed_hosts.push(sampler.host().hostname.clone());
        let limiter =
            auth::FailureLimiter::new(config.auth_failure_burst, config.auth_failure_refill, auth::MAX_TRACKED);
        let connections = Arc::new(Semaphore::new(config.max_connections as usize));
        let pending = pool::PendingPool::new(config.max_pending, config.max_pending_per_address);
        let sockets = Arc::new(Semaphore::new(socket_permits(&config) as usize));
        let http = pool::HttpSlots::new(config.max_http_connections, config.max_http_connections_per_address);
        let (shutdown, _) = watch::channel(false);
        let probes = probe::ProbeService::new(config.probes.clone());
        let refusals = pool::RefusalLog::default();
        let fleet = config.prometheus.clone().map(crate::fleet::Relay::new);
        Self(Arc::new(Inner {
            config,
            sampler,
            limiter,
            probes,
            fleet,
            connections,
            pending,
            sockets,
            http,
            refusals,
            shutdown,
        }))
    }

    pub fn config(&self) -> &ServerConfig {
        &self.0.config
    }

    pub fn sampler(&self) -> &Sampler {
        &self.0.sampler
    }

    fn limiter(&self) -> &auth::FailureLimiter {
        &self.0.limiter
    }

    fn probes(&self) -> &probe::ProbeService {
        &self.0.probes
    }

    fn http_slots(&self) -> &Arc<pool::HttpSlots> {
        &self.0.http
    }

    fn refusals(&self) -> &pool::RefusalLog {
        &self.0.refusals
    }

    fn fleet(&self) -> Option<&crate::fleet::Relay> {
        self.0.fleet.as_ref()
    }

    fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.0.shutdown.subscribe()
    }

    fn is_shutting_down(&self) -> bool {
        *self.0.shutdown.borrow()
    }

    /// Tells every WebSocket to close.
    pub fn begin_shutdown(&self) {
        self.0.shutdown.send_replace(true);
    }

    /// Waits (up to the grace period) for every WebSocket and HTTP
    /// connection to close, then stops the sampler.
    async fn drain(&self) {
        let max = socket_permits(&self.0.config);
        let grace = self.0.config.shutdown_grace;
        let all = async {
            let _ = self.0.sockets.acquire_many(max).await;
            self.0.http.all_closed().await;
        };
        match tokio::time::timeout(grace, all).await {
            Ok(()) => tracing::info!("all connections closed"),
            Err(_) => {
                let open = max as usize - self.0.sockets.available_permits();
                let http = self.0.http.open();
                tracing::warn!(
                    "{open} WebSocket(s), {http} HTTP connection(s) still open after {grace:?}; dropping them"
                );
            }
        }
        self.0.sampler.stop();
    }
}

fn socket_permits(config: &ServerConfig) -> u32 {
    config.max_connections.max(1).saturating_add(config.max_pending.max(1).saturating_mul(2))
}

/// The peer's address, for rate limiting, from any listener we serve on.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

/// A listener [`serve`] accepts: plain TCP ([`LoggingTcpListener`] in the
/// binary), [`tls::TlsListener`], or a test's in-memory listener.
pub trait PeerListener: Listener<Addr = SocketAddr> {}

impl PeerListener for tokio::net::TcpListener {}
impl PeerListener for tls::TlsListener {}

/// The whole app.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(web::index))
        .route("/ws", get(ws::upgrade))
        .route("/api/health", get(http::health))
        .route("/api/snapshot", get(http::snapshot))
        .route("/metrics", get(metrics::metrics))
        .route("/api/fleet", get(fleet::fleet).options(fleet::preflight))
        .fallback(web::asset)
        .layer(middleware::from_fn_with_state(state.clone(), http::guard))
        .layer(DefaultBodyLimit::max(state.config().max_request_body_bytes))
        .with_state(state)
}

/// Serves `state` on `listener` until `shutdown` completes, then closes every
/// WebSocket with a close frame (waiting up to the grace period) and stops
/// sampling.
pub async fn serve<L>(
    listener: L,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L: PeerListener,
{
    conn::accept_loop(listener, state.clone(), shutdown).await;
    tracing::info!("shutting down: closing connections");
    state.begin_shutdown();
    state.drain().await;
    Ok(())
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed
/// when this is called, not when the future is first polled: the server
/// polls it beside its accept loop, so a signal that came after the first
/// connection was served but before that poll killed the process instead of
/// draining it (seen under load in `sigterm_stops_the_agent_cleanly`).
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let listen = |kind: tokio::signal::unix::SignalKind, name: &'static str| {
        let signal = tokio::signal::unix::signal(kind);
        async move {
            match signal {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(e) => {
                    tracing::warn!("cannot listen for {name}: {e}");
                    std::future::pending::<()>().await;
                }
            }
        }
    };
    #[cfg(unix)]
    let (interrupt, term) = (
        listen(tokio::signal::unix::SignalKind::interrupt(), "Ctrl-C"),
        listen(tokio::signal::unix::SignalKind::terminate(), "SIGTERM"),
    );
    #[cfg(not(unix))]
    let (interrupt, term) = (
        async {
            if let Err(e) = tokio::signal::ctrl_c().await {
                tracing::warn!("cannot listen for Ctrl-C: {e}");
                std::future::pending::<()>().await;
            }
        },
        std::future::pending::<()>(),
    );
    async move {
        tokio::select! {
            () = interrupt => {}
            () = term => {}
        }
    }
}
