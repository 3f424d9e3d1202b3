//! Test harness: the real server on port 0 with the simulated backend, a
//! WebSocket client, a minimal HTTP client, and the agent binary as a child.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agent::server::{self, AppState, ServerConfig, Token};
use agent::telemetry::sampler::{Sampler, SamplerConfig};
use agent::telemetry::simulated::{SimSpec, SimulatedBackend};
use futures_util::{SinkExt, StreamExt};
use shared::protocol::{ClientMessage, Hello, PROTOCOL_VERSION, ServerMessage, Subscribe};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const TOKEN: &str = "test-token-0123456789abcdef";

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub task: JoinHandle<std::io::Result<()>>,
}

pub fn config() -> ServerConfig {
    let mut config = ServerConfig::new(Token::parse(TOKEN).unwrap());
    config.web = server::web::WebRoot::Missing;
    config
}

pub async fn start() -> TestServer {
    start_with(config()).await
}

pub async fn start_with(config: ServerConfig) -> TestServer {
    start_simulating(config, SimSpec::parse("2xh100-sxm").unwrap()).await
}

/// The server over simulated GPUs of `spec` (and its scenario).
pub async fn start_simulating(config: ServerConfig, spec: SimSpec) -> TestServer {
    let backend = SimulatedBackend::new(spec);
    let sampler = Sampler::start(Box::new(backend), SamplerConfig::default()).unwrap();
    let state = AppState::new(config, sampler);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, state, async {
        let _ = stopped.await;
    }));
    TestServer { addr, stop: Some(stop), task }
}

impl TestServer {
    /// Asks for a graceful shutdown.
    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub async fn ws(&self) -> Ws {
        self.ws_with(&[]).await.unwrap()
    }

    /// Opens `/ws` with extra headers; `Err` carries the HTTP refusal.
    pub async fn ws_with(&self, headers: &[(&str, &str)]) -> Result<Ws, tungstenite::Error> {
        let mut request = format!("ws://{}/ws", self.addr).into_client_request().unwrap();
        for (name, value) in headers {
            request
                .headers_mut()
                .insert(tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        }
        tokio_tungstenite::connect_async(request).await.map(|(ws, _)| ws)
    }

    /// Connects and completes the handshake; returns the welcome too.
    pub async fn authed(&self) -> (Ws, ServerMessage) {
        let mut ws = self.ws().await;
        send(&mut ws, &hello(TOKEN)).await;
        let welcome = recv(&mut ws).await;
        assert!(matches!(welcome, ServerMessage::Welcome(_)), "{welcome:?}");
        (ws, welcome)
    }

    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
        http_get(self.addr, path, headers).await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

pub fn hello(token: &str) -> ClientMessage {
    ClientMessage::Hello(Hello { token: token.into(), protocol_version: PROTOCOL_VERSION, client: Some("it".into()) })
}

pub fn subscribe(interval_ms: u32) -> ClientMessage {
    ClientMessage::Subscribe(Subscribe { interval_ms })
}

pub async fn send(ws: &mut Ws, message: &ClientMessage) {
    send_text(ws, &message.encode()).await;
}

pub async fn send_text(ws: &mut Ws, text: &str) {
    ws.send(Message::text(text)).await.unwrap();
}

/// The next protocol message (pings skipped); panics on close or after 10 s.
pub async fn recv(ws: &mut Ws) -> ServerMessage {
    loop {
        match recv_any(ws).await {
            // The diagnosis after each sample; `findings.rs` reads it.
            ServerMessage::Findings(_) => continue,
            other => return other,
        }
    }
}

/// The next message of any type, `findings` included.
pub async fn recv_any(ws: &mut Ws) -> ServerMessage {
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), ws.next()).await.expect("no message within 10 s");
        match next {
            Some(Ok(Message::Text(text))) => return ServerMessage::decode(&text).unwrap(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a message, got {other:?}"),
        }
    }
}

/// Reads until the server's close frame; returns its code.
pub async fn closed(ws: &mut Ws) -> Option<u16> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await.expect("no close within 10 s") {
            Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return None,
        }
    }
}

/// An in-memory listener: connections are `tokio::io::duplex` pairs, so a
/// test on paused time never waits on the kernel (auto-advance would race a
/// real socket's delivery).
pub struct DuplexListener {
    incoming: tokio::sync::mpsc::Receiver<tokio::io::DuplexStream>,
}

impl axum::serve::Listener for DuplexListener {
    type Io = tokio::io::DuplexStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(io) => (io, SocketAddr::from(([127, 0, 0, 1], 1))),
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(SocketAddr::from(([127, 0, 0, 1], 0)))
    }
}

impl server::PeerListener for DuplexListener {}

/// The real server on an in-memory listener; returns a connector for clients.
pub fn start_in_memory(config: ServerConfig) -> tokio::sync::mpsc::Sender<tokio::io::DuplexStream> {
    let backend = SimulatedBackend::new(SimSpec::parse("2xh100-sxm").unwrap());
    let sampler = Sampler::start(Box::new(backend), SamplerConfig::default()).unwrap();
    let (connect, incoming) = tokio::sync::mpsc::channel(8);
    tokio::spawn(server::serve(DuplexListener { incoming }, AppState::new(config, sampler), std::future::pending()));
    connect
}

/// A WebSocket client over an in-memory connection.
pub async fn ws_in_memory(
    connect: &tokio::sync::mpsc::Sender<tokio::io::DuplexStream>,
) -> WebSocketStream<tokio::io::DuplexStream> {
    let (client, server) = tokio::io::duplex(64 * 1024);
    connect.send(server).await.unwrap();
    tokio_tungstenite::client_async("ws://127.0.0.1/ws", client).await.unwrap().0
}

/// A bare HTTP/1.0 GET: status and body.
pub async fn http_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("host") {
            request = request.replace(&format!("Host: {addr}"), &format!("Host: {value}"));
        } else {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// The `headroom` binary as a child process, listening on a free port.
pub struct Agent {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Agent {
    pub fn spawn(args: &[&str], env: &[(&str, &str)]) -> Agent {
        let mut command = Command::new(env!("CARGO_BIN_EXE_headroom"));
        command
            .args(["serve", "--bind", "127.0.0.1:0", "--token", TOKEN])
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
        let url = lines.find_map(|l| l.ok().filter(|l| l.contains("#token="))).expect("the agent printed no URL");
        let addr = url.trim().trim_start_matches("http://").split('/').next().unwrap().parse().unwrap();
        Agent { child, addr }
    }

    pub fn signal(&self, signal: &str) {
        Command::new("kill").args([&format!("-{signal}"), &self.child.id().to_string()]).status().unwrap();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
