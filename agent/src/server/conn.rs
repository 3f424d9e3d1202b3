//! The accept loop: every connection gets an HTTP slot ([`pool::HttpSlots`])
//! or a 503, then hyper's HTTP/1 connection with a header read timeout (a
//! slowloris client is dropped when it runs out), a bounded read buffer and a
//! request body limit (`http_body_util::Limited`, what tower-http's
//! `RequestBodyLimit` uses). axum's own `serve` offers none of these knobs.
//!
//! A connection's slot is freed when it closes or is upgraded: WebSockets are
//! counted by their own pools from then on. A connection without a request
//! in flight may be closed to make room for a newer one (`pool::HttpSlots`).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::StatusCode;
use axum::serve::Listener;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use shared::protocol::{ErrorCode, ErrorMessage};
use tokio::io::AsyncWriteExt;
use tower::ServiceExt as _;

use super::pool::{HttpSlot, Refusal};
use super::{ApiError, AppState, PeerAddr, PeerListener};

/// hyper's read buffer for one connection: request line and headers must fit.
/// Browsers send 1–3 KiB; 16 KiB is what nginx allows by default
/// (`large_client_header_buffers 4 8k`, two of them). Over it: 431.
const MAX_HEADER_BUFFER_BYTES: usize = 16 * 1024;

/// Refusals (503s) being written at once; past this a refused connection is
/// simply closed, so that a flood cannot pile up writer tasks.
const MAX_REFUSALS_IN_FLIGHT: usize = 64;

/// How long a refused client gets to take its 503.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// The answer for a connection refused before hyper sees it: the same 503
/// and JSON body as a refused WebSocket upgrade.
static REFUSAL_RESPONSE: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let error = ApiError::TooManyConnections;
    let body =
        serde_json::to_string(&ErrorMessage::new(ErrorCode::TooManyConnections, error.to_string())).unwrap_or_default();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n\
         Retry-After: 2\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
});

static REFUSALS_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Accepts until `shutdown` completes.
pub(super) async fn accept_loop<L: PeerListener>(
    mut listener: L,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let app = super::router(state.clone());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (io, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return,
        };
        match state.http_slots().admit(peer.ip()) {
            Ok((slot, pushed_out)) => {
                if pushed_out {
                    state.refusals().record("an idle or half-sent HTTP connection made room for a newer one");
                }
                tokio::spawn(serve_connection(io, peer, slot, app.clone(), state.clone()));
            }
            Err(refusal) => {
                state.refusals().record(match refusal {
                    Refusal::Full => "every HTTP connection slot is taken by a request in flight",
                    Refusal::PerAddress => "one address holds its share of HTTP connections",
                });
                refuse(io);
            }
        }
    }
}

/// Writes the 503 (bounded in time and in how many at once) and closes.
fn refuse<I>(mut io: I)
where
    I: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    if REFUSALS_IN_FLIGHT.fetch_add(1, Ordering::Relaxed) >= MAX_REFUSALS_IN_FLIGHT {
        REFUSALS_IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    tokio::spawn(async move {
        let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, async {
            io.write_all(&REFUSAL_RESPONSE).await?;
            io.shutdown().await
        })
        .await;
        REFUSALS_IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    });
}

async fn serve_connection<I>(io: I, peer: SocketAddr, mut slot: HttpSlot, app: Router, state: AppState)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let config = state.config();
    let body_limit = config.max_request_body_bytes;
    let requests = slot.requests();
    let held_back = config.auth_refusal_delay;
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        // In flight from here until the response is ready: not pushed out.
        let in_flight = requests.start();
        request.extensions_mut().insert(ConnectInfo(PeerAddr(peer)));
        let request = request.map(|body| Body::new(http_body_util::Limited::new(body, body_limit)));
        let response = app.clone().oneshot(request);
        async move {
            let response = response.await?;
            if response.status() == StatusCode::TOO_MANY_REQUESTS {
                // A guesser past its failure budget hears back later, and
                // meanwhile its connection counts as idle: it can be pushed
                // out, so that guessers cannot hold every slot.
                drop(in_flight);
                tokio::time::sleep(held_back).await;
                return Ok(response);
            }
            // ...and until its body is sent (the page's assets are large).
            Ok::<_, Infallible>(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _in_flight = &in_flight;
                    frame
                }))
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .max_buf_size(MAX_HEADER_BUFFER_BYTES);
    let connection = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    let mut connection = std::pin::pin!(connection);
    let mut shutdown = state.shutdown_signal();
    let finished = tokio::select! {
        result = connection.as_mut() => Some(result),
        _ = shutdown.wait_for(|s| *s) => None,
        // Idle or still sending its headers, and its place is wanted.
        _ = &mut slot.evicted => return,
    };
    let result = match finished {
        Some(result) => result,
        None => {
            // Finish the request in flight, then close; idle ones close now.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = result {
        // Timeouts, resets and malformed requests: the client's business.
        tracing::debug!(%peer, "HTTP connection ended: {e}");
    }
    drop(slot);
}

/// A TCP listener that logs accept errors (axum's own swallows them without
/// its `tracing` feature): at the open-file limit the operator must hear why
/// the agent stopped answering.
#[derive(Debug)]
pub struct LoggingTcpListener {
    inner: tokio::net::TcpListener,
    errors: Arc<super::pool::RefusalLog>,
}

impl LoggingTcpListener {
    pub fn new(inner: tokio::net::TcpListener) -> Self {
        Self { inner, errors: Arc::default() }
    }
}

impl Listener for LoggingTcpListener {
    type Io = tokio::net::TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok(accepted) => return accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // EMFILE/ENFILE: wait for some connections to close.
                    self.errors.record(&format!("accept failed: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

impl PeerListener for LoggingTcpListener {}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}
