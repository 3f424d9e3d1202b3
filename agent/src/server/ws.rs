//! The WebSocket at `/ws`: Origin check and connection limit before the
//! upgrade; then the handshake (`hello` → `welcome` or `error` + close), then
//! samples at the client's `subscribe` interval, and probes (`probe.rs`).
//!
//! A session ends with a close frame whenever the agent ends it: a refused
//! handshake (1008), an oversized frame (1009), idleness (1000), shutdown
//! (1001) or a newer connection needing the place of one that never said
//! hello (1013). Bad messages after the handshake get an `error` and the
//! session goes on.
//!
//! Before its hello a connection sits in the small pending pool
//! (`pool::PendingPool`), not in an authenticated slot. Every read is
//! rate limited (a flood of pings is read, and answered, no faster than
//! `client_frame_refill`), every write has a deadline (a client that does not
//! read is dropped) and tungstenite's write buffer has a cap.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use shared::protocol::{
    ClientMessage, ErrorCode, Hello, Limits, MAX_INTERVAL_MS, MIN_INTERVAL_MS, PROTOCOL_VERSION, ProbeCancel,
    ProbeStart, ServerMessage, Welcome,
};
use tokio::sync::{OwnedSemaphorePermit, watch};
use tokio::time::Instant;

use super::pool::PendingTicket;
use super::probe::ProbeSlot;
use super::{ApiError, AppState, PeerAddr, auth};
use crate::telemetry::sampler::{Published, Subscription};

pub async fn upgrade(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<PeerAddr>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let text = |name| headers.get(name).and_then(|v: &axum::http::HeaderValue| v.to_str().ok());
    let config = state.config();
    if !auth::origin_allowed(text(header::ORIGIN), text(header::HOST), config.tls, &config.allowed_origins) {
        tracing::info!(origin = text(header::ORIGIN), "refused a WebSocket from a foreign Origin");
        return Err(ApiError::ForbiddenOrigin);
    }
    if state.is_shutting_down() {
        return Err(ApiError::ShuttingDown);
    }
    // Refused at once when every authenticated slot is taken (the slot
    // itself is taken after the hello).
    let socket = match state.0.connections.available_permits() {
        0 => None,
        _ => state.0.sockets.clone().try_acquire_owned().ok(),
    };
    let Some(socket) = socket else {
        state.refusals().record(&format!("{} WebSocket connections already open", config.max_connections));
        return Err(ApiError::TooManyConnections);
    };
    let (pending, pushed_out) = state.0.pending.admit(peer.0.ip());
    if pushed_out {
        state.refusals().record("a WebSocket that had not said hello made room for a newer one");
    }
    // The transport reads whole messages up to a hard cap, so that one over
    // the protocol's limit can be answered with a clean 1009 close (a read
    // abandoned mid-frame would reset the connection instead).
    let cap = TRANSPORT_LIMIT_FACTOR * config.max_message_bytes;
    let write_cap = config.max_write_buffer_bytes.max(1);
    Ok(ws
        // Small buffers: an idle telemetry socket should cost kilobytes, not
        // tungstenite's default 128 KiB read buffer.
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        // Pongs to a client that never reads would otherwise pile up here
        // without limit (tungstenite's default is `usize::MAX`).
        .max_write_buffer_size(write_cap)
        .max_message_size(cap)
        .max_frame_size(cap)
        .on_upgrade(move |ws| Session::new(ws, state, peer.0.ip(), Held { socket, pending }).run()))
}

/// What a session holds in the agent's pools.
struct Held {
    /// Every WebSocket's permit: shutdown waits for them all.
    socket: OwnedSemaphorePermit,
    /// Until the hello: the place in the pending pool.
    pending: PendingTicket,
}

/// Reads at most `burst` frames at once, then one per `refill`: a flood is
/// read (and its pings answered) at this rate, the rest waits in the kernel.
#[derive(Debug)]
struct Throttle {
    tokens: f64,
    burst: f64,
    refill: Duration,
    at: Instant,
}

impl Throttle {
    fn new(burst: u32, refill: Duration) -> Self {
        let burst = f64::from(burst.max(1));
        Self { tokens: burst, burst, refill: refill.max(Duration::from_micros(1)), at: Instant::now() }
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let gained = now.duration_since(self.at).as_secs_f64() / self.refill.as_secs_f64();
        self.tokens = (self.tokens + gained).min(self.burst);
        self.at = now;
    }

    /// `None` when a frame may be read now, else when one may.
    fn wait(&mut self) -> Option<Instant> {
        self.refill();
        (self.tokens < 1.0).then(|| self.at + self.refill.mul_f64(1.0 - self.tokens))
    }

    fn take(&mut self) {
        self.tokens -= 1.0;
    }
}

/// Sleeps until `at`, or forever when there is nothing to wait for.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Messages up to this many times the protocol limit are read whole and
/// refused cleanly; beyond it the connection is simply dropped.
const TRANSPORT_LIMIT_FACTOR: usize = 16;

/// Why a session ends, and the close frame that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The client closed or vanished; nothing more to send.
    ClientGone,
    /// Send `error` (when there is a code) then close with `close_code`.
    Close { code: Option<ErrorCode>, close_code: u16, reason: &'static str },
}

impl End {
    fn refuse(code: ErrorCode, reason: &'static str) -> Self {
        End::Close { code: Some(code), close_code: close_code::POLICY, reason }
    }
}

struct Session {
    socket: WebSocket,
    state: AppState,
    ip: IpAddr,
    _socket_permit: OwnedSemaphorePermit,
    /// Until the hello.
    pending: Option<PendingTicket>,
    /// After the hello: the authenticated slot.
    _permit: Option<OwnedSemaphorePermit>,
    throttle: Throttle,
    shutdown: watch::Receiver<bool>,
    last_heard: Instant,
    /// The running probe; dropped with the session, which kills its worker.
    probe: ProbeSlot,
}

/// What woke the session up.
enum Event {
    Shutdown,
    Received(Option<Result<Message, axum::Error>>),
    /// The client may send another frame.
    Throttled,
    /// A new reading was published (`false`: the sampler is gone).
    Reading(bool),
    Ping,
    /// The running probe's progress or result.
    Probe(Option<ServerMessage>),
}

/// What a message after the handshake asks for.
enum Handled {
    /// A new subscription.
    Subscribed,
    ProbeStart(ProbeStart),
    ProbeCancel(ProbeCancel),
}

/// Sending to the client failed: it is gone.
struct Gone;

impl Session {
    fn new(socket: WebSocket, state: AppState, ip: IpAddr, held: Held) -> Self {
        let shutdown = state.shutdown_signal();
        let config = state.config();
        let throttle = Throttle::new(config.client_frame_burst, config.client_frame_refill);
        Self {
            socket,
            ip,
            _socket_permit: held.socket,
            pending: Some(held.pending),
            _permit: None,
            throttle,
            shutdown,
            last_heard: Instant::now(),
            probe: ProbeSlot::default(),
            state,
        }
    }

    async fn run(mut self) {
        let end = match self.handshake().await {
            Ok(()) => self.stream().await,
            Err(end) => end,
        };
        if let End::Close { code, close_code, reason } = end {
            // A client that does not read gets no more than this.
            let deadline = self.state.config().write_timeout.min(CLOSE_TIMEOUT);
            if let Some(code) = code {
                let _ = self.send_within(ServerMessage::error(code, reason), deadline).await;
            }
            let frame = CloseFrame { code: close_code, reason: Utf8Bytes::from_static(reason) };
            let sent = tokio::time::timeout(deadline, self.socket.send(Message::Close(Some(frame)))).await;
            // A connection closed to make room (1013) leaves at once: its
            // place is wanted now, not after the client's reply.
            if sent.is_err() || close_code == close_code::AGAIN {
                return;
            }
            // Let the client's close reply arrive before dropping the socket.
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, async {
                while let Some(Ok(msg)) = self.socket.recv().await {
                    if matches!(msg, Message::Close(_)) {
                        break;
                    }
                }
            })
            .await;
        }
    }

    async fn send(&mut self, message: ServerMessage) -> Result<(), Gone> {
        self.send_text(Utf8Bytes::from(message.encode())).await
    }

    async fn send_within(&mut self, message: ServerMessage, deadline: Duration) -> Result<(), Gone> {
        let text = Utf8Bytes::from(message.encode());
        match tokio::time::timeout(deadline, self.socket.send(Message::Text(text))).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) | Err(_) => Err(Gone),
        }
    }

    /// Sends one frame within the write deadline; a client that does not
    /// take it in time (or whose buffer is full) is gone.
    async fn send_text(&mut self, text: Utf8Bytes) -> Result<(), Gone> {
        let deadline = self.state.config().write_timeout;
        match tokio::time::timeout(deadline, self.socket.send(Message::Text(text))).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                tracing::debug!(ip = %self.ip, "WebSocket send failed: {e}");
                Err(Gone)
            }
            Err(_) => {
                tracing::info!(ip = %self.ip, "dropping a WebSocket that does not read");
                Err(Gone)
            }
        }
    }

    /// Waits for `hello` and answers it. The deadline holds whatever the
    /// client sends meanwhile.
    async fn handshake(&mut self) -> Result<(), End> {
        let config = self.state.config();
        let deadline = Instant::now() + config.handshake_timeout;
        let max_bytes = config.max_message_bytes;
        let text = loop {
            let wait = self.throttle.wait();
            let Some(pending) = self.pending.as_mut() else { return Err(End::ClientGone) };
            let message = tokio::select! {
                // First, so that a client sending without pause still meets it.
                biased;
                () = tokio::time::sleep_until(deadline) => {
                    return Err(End::refuse(ErrorCode::HandshakeTimeout, "no hello in time"));
                }
                _ = self.shutdown.wait_for(|s| *s) => return Err(shutting_down()),
                _ = &mut pending.evicted => return Err(pushed_out()),
                () = until(wait) => continue,
                m = self.socket.recv(), if wait.is_none() => m,
            };
            self.throttle.take();
            match message {
                None | Some(Ok(Message::Close(_))) => return Err(End::ClientGone),
                Some(Err(e)) => return Err(receive_failed(&e)),
                Some(Ok(Message::Text(text))) if text.len() > max_bytes => return Err(too_large()),
                Some(Ok(Message::Text(text))) => break text,
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(Message::Binary(_))) => {
                    return Err(End::refuse(ErrorCode::HandshakeRequired, "the first message must be a hello"));
                }
            }
        };
        let hello = match ClientMessage::decode(&text) {
            Ok(ClientMessage::Hello(hello)) => hello,
            Ok(_) | Err(_) => {
                return Err(End::refuse(ErrorCode::HandshakeRequired, "the first message must be a hello"));
            }
        };
        if let Err(refusal) = self.authenticate(&hello) {
            if refusal == auth::Refusal::RateLimited
                && let Some(pending) = self.pending.as_mut()
            {
                // Slow the guesser down: the refusal comes a refill later,
                // while the connection still sits in the pending pool (so
                // that guessers waiting here can be pushed out too).
                let left = deadline.saturating_duration_since(Instant::now());
                let delay = self.state.config().auth_refusal_delay.min(left);
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    _ = self.shutdown.wait_for(|s| *s) => return Err(shutting_down()),
                    _ = &mut pending.evicted => return Err(pushed_out()),
                }
            }
            return Err(match refusal {
                auth::Refusal::RateLimited => {
                    End::refuse(ErrorCode::RateLimited, "too many failed attempts; retry later")
                }
                auth::Refusal::WrongToken => End::refuse(ErrorCode::Unauthorized, "wrong or missing token"),
            });
        }
        if hello.protocol_version != PROTOCOL_VERSION {
            return Err(End::refuse(ErrorCode::UnsupportedVersion, "this agent speaks protocol version 1"));
        }
        // Out of the pending pool: this connection has proved itself.
        self.pending = None;
        let Ok(permit) = self.state.0.connections.clone().try_acquire_owned() else {
            self.state
                .refusals()
                .record(&format!("{} WebSocket connections already open", self.state.config().max_connections));
            return Err(End::Close {
                code: Some(ErrorCode::TooManyConnections),
                close_code: close_code::AGAIN,
                reason: "the agent serves its maximum number of connections",
            });
        };
        self._permit = Some(permit);
        let welcome = Welcome {
            protocol_version: PROTOCOL_VERSION,
            host: (**self.state.sampler().host()).clone(),
            limits: Limits { max_message_bytes: self.state.config().max_message_bytes as u32, ..Limits::default() },
            probes: self.state.probes().limits(),
        };
        self.send(ServerMessage::Welcome(welcome)).await.map_err(|_| End::ClientGone)?;
        tracing::info!(ip = %self.ip, client = hello.client.as_deref().unwrap_or("-"), "client connected");
        Ok(())
    }

    fn authenticate(&self, hello: &Hello) -> Result<(), auth::Refusal> {
        let checked = auth::check_token(&self.state.config().token, self.state.limiter(), self.ip, &hello.token);
        if checked.is_err() {
            tracing::info!(ip = %self.ip, "refused a WebSocket with a wrong token");
        }
        checked
    }

    /// After the handshake: answer messages, send samples, ping, until done.
    async fn stream(&mut self) -> End {
        let mut latest = self.state.sampler().watch();
        let mut subscription: Option<Subscription> = None;
        let mut last_sent: Option<Instant> = None;
        let idle = self.state.config().idle_timeout;
        let mut ping = idle.map(|idle| tokio::time::interval_at(Instant::now() + idle / 3, idle / 3));
        let mut shutdown = self.shutdown.clone();
        loop {
            let wait = self.throttle.wait();
            let event = tokio::select! {
                _ = shutdown.wait_for(|s| *s) => Event::Shutdown,
                () = until(wait) => Event::Throttled,
                message = self.socket.recv(), if wait.is_none() => Event::Received(message),
                changed = latest.changed(), if subscription.is_some() => Event::Reading(changed.is_ok()),
                () = tick(&mut ping) => Event::Ping,
                message = self.probe.next(), if self.probe.is_running() => Event::Probe(message),
            };
            match event {
                Event::Shutdown | Event::Reading(false) => return shutting_down(),
                Event::Throttled => continue,
                Event::Received(message) => {
                    self.throttle.take();
                    self.last_heard = Instant::now();
                    if let Some(Ok(Message::Text(t))) = &message
                        && t.len() > self.state.config().max_message_bytes
                    {
                        return too_large();
                    }
                    let outcome = match message {
                        None | Some(Ok(Message::Close(_))) => return End::ClientGone,
                        Some(Err(e)) => return receive_failed(&e),
                        Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                        Some(Ok(Message::Binary(_))) => {
                            Err(Box::new(ServerMessage::error(ErrorCode::Malformed, "binary frames are not supported")))
                        }
                        Some(Ok(Message::Text(text))) => self.on_message(&text, &mut subscription),
                    };
                    let reply = match outcome {
                        // A first subscription starts with the latest
                        // reading; a repeated one replaces the interval and
                        // never sends a reading twice (`due`).
                        Ok(Handled::Subscribed) => {
                            latest.mark_changed();
                            None
                        }
                        Ok(Handled::ProbeStart(start)) => Some(self.probe.start(&self.state, self.ip, start).await),
                        Ok(Handled::ProbeCancel(cancel)) => self.probe.cancel(cancel),
                        Err(reply) => Some(*reply),
                    };
                    if let Some(reply) = reply
                        && self.send(reply).await.is_err()
                    {
                        return End::ClientGone;
                    }
                }
                Event::Reading(true) => {
                    let due = due(latest.borrow_and_update().as_ref(), last_sent, subscription.as_ref());
                    if let Some((frame, findings, taken)) = due {
                        if self.send_text(frame).await.is_err() || self.send_text(findings).await.is_err() {
                            return End::ClientGone;
                        }
                        last_sent = Some(taken);
                    }
                }
                Event::Probe(message) => {
                    if let Some(message) = message
                        && self.send(message).await.is_err()
                    {
                        return End::ClientGone;
                    }
                }
                Event::Ping => {
                    if idle.is_some_and(|idle| self.last_heard.elapsed() >= idle) {
                        tracing::info!(ip = %self.ip, "closing an idle WebSocket");
                        return End::Close {
                            code: Some(ErrorCode::IdleTimeout),
                            close_code: close_code::NORMAL,
                            reason: "idle",
                        };
                    }
                    let ping = self.socket.send(Message::Ping(Default::default()));
                    if !matches!(tokio::time::timeout(self.state.config().write_timeout, ping).await, Ok(Ok(()))) {
                        return End::ClientGone;
                    }
                }
            }
        }
    }

    /// Handles one text message after the handshake; `Err`: the error to
    /// answer with. Probe messages go on to the session's [`ProbeSlot`].
    fn on_message(&self, text: &str, subscription: &mut Option<Subscription>) -> Result<Handled, Box<ServerMessage>> {
        match ClientMessage::decode(text) {
            Ok(ClientMessage::Subscribe(s)) => {
                if !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(&s.interval_ms) {
                    return Err(Box::new(ServerMessage::error(
                        ErrorCode::IntervalOutOfRange,
                        format!("interval_ms must be between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS}"),
                    )));
                }
                let interval = Duration::from_millis(u64::from(s.interval_ms));
                // Drop the old subscription first so its interval stops counting.
                *subscription = None;
                *subscription = Some(self.state.sampler().subscribe(interval));
                Ok(Handled::Subscribed)
            }
            Ok(ClientMessage::ProbeStart(start)) => Ok(Handled::ProbeStart(start)),
            Ok(ClientMessage::ProbeCancel(cancel)) => Ok(Handled::ProbeCancel(cancel)),
            Ok(ClientMessage::Hello(_)) => Err(Box::new(ServerMessage::error(
                ErrorCode::InvalidMessage,
                "already authenticated; hello is only sent once",
            ))),
            Err(e) => Err(Box::new(ServerMessage::error(e.code(), e.to_string()))),
        }
    }
}

/// The frame to send for the latest reading, if this client is due one: it
/// takes a reading when at least 90 % of its interval has passed since the
/// last it was sent (the sampler ticks at the fastest subscriber's interval).
fn due(
    latest: Option<&Arc<Published>>,
    last_sent: Option<Instant>,
    subscription: Option<&Subscription>,
) -> Option<(Utf8Bytes, Utf8Bytes, Instant)> {
    let (p, sub) = (latest?, subscription?);
    let wanted = sub.interval() - sub.interval() / 10;
    match last_sent {
        Some(last) if p.taken <= last || p.taken.duration_since(last) < wanted => None,
        _ => Some((p.frame.clone(), p.findings_frame.clone(), p.taken)),
    }
}

async fn tick(ping: &mut Option<tokio::time::Interval>) {
    match ping {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

fn too_large() -> End {
    End::Close { code: Some(ErrorCode::MessageTooLarge), close_code: close_code::SIZE, reason: "message too large" }
}

/// The close frame, and its error, never take longer than this.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

fn pushed_out() -> End {
    End::Close {
        code: Some(ErrorCode::TooManyConnections),
        close_code: close_code::AGAIN,
        reason: "too many connections waiting for their hello; this was the oldest",
    }
}

fn shutting_down() -> End {
    End::Close { code: Some(ErrorCode::ShuttingDown), close_code: close_code::AWAY, reason: "agent shutting down" }
}

/// A receive error: a frame over the limit gets a 1009 close; anything else
/// means the connection is broken.
fn receive_failed(e: &axum::Error) -> End {
    let too_large = std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<tungstenite::Error>())
        .is_some_and(|t| matches!(t, tungstenite::Error::Capacity(_)));
    if too_large {
        self::too_large()
    } else {
        tracing::debug!("WebSocket receive failed: {e}");
        End::ClientGone
    }
}
