//! Where `headroom watch` reads from: this host's GPUs through the agent's
//! own sampler (NVML, or the simulated backend), or a running agent over its
//! WebSocket. Either way each refresh is a [`Frame`]: the host, the latest
//! sample and the diagnosis the sampler made of it, the same one the page and
//! `/metrics` get.

use std::net::TcpStream;
use std::time::Duration;

use agent::telemetry::sampler::{Sampler, SamplerConfig};
use agent::telemetry::{self, BackendChoice};
use anyhow::{Context as _, bail};
use shared::protocol::{
    ClientMessage, Finding, Findings, Hello, HostInfo, PROTOCOL_VERSION, Sample, ServerMessage, Subscribe,
};
use tokio::sync::mpsc;
use tungstenite::stream::MaybeTlsStream;

/// One refresh.
#[derive(Debug, Clone)]
pub struct Frame {
    pub host: HostInfo,
    pub sample: Sample,
    pub findings: Vec<Finding>,
}

/// Samples this host's GPUs every `interval` until the receiver is dropped.
/// Runs on the current tokio runtime; the sampler thread does the reading.
pub fn local(choice: BackendChoice, interval: Duration) -> anyhow::Result<mpsc::Receiver<anyhow::Result<Frame>>> {
    let backend = telemetry::open(choice)?;
    let sampler = Sampler::start(backend, SamplerConfig::default()).context("starting the sampling thread")?;
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        let _subscription = sampler.subscribe(interval);
        let mut latest = sampler.watch();
        let host = (**sampler.host()).clone();
        while latest.changed().await.is_ok() {
            let Some(p) = latest.borrow_and_update().clone() else { continue };
            let findings = p.findings.iter().map(Finding::from).collect();
            let frame = Frame { host: host.clone(), sample: p.sample.clone(), findings };
            if tx.send(Ok(frame)).await.is_err() {
                break;
            }
        }
    });
    Ok(rx)
}

/// The agent's WebSocket URL for what a person types: `host:port`,
/// `http://host:port[/]` or `ws://host:port/ws`.
pub fn ws_url(agent: &str) -> anyhow::Result<String> {
    let agent = agent.trim().trim_end_matches('/');
    let (scheme, rest) = match agent.split_once("://") {
        Some((s, rest)) => (s.to_ascii_lowercase(), rest),
        None => ("http".into(), agent),
    };
    match scheme.as_str() {
        "http" | "ws" => {}
        "https" | "wss" => bail!(
            "--agent {agent}: watch speaks plain ws:// only; reach a TLS agent through an SSH tunnel (ssh -L 7878:localhost:7878 HOST) or run watch on the GPU host"
        ),
        other => bail!("--agent {agent}: `{other}://` is not an agent address (http://HOST:PORT)"),
    }
    let host = rest.strip_suffix("/ws").unwrap_or(rest);
    if host.is_empty() || host.contains(['/', '?', '#', ' ']) {
        bail!("--agent {agent}: expected HOST:PORT, e.g. http://127.0.0.1:7878");
    }
    Ok(format!("ws://{host}/ws"))
}

/// Reads a running agent: hello, subscribe, then samples and findings, on a
/// thread of its own (the WebSocket client is blocking).
pub fn remote(url: String, token: String, interval: Duration) -> mpsc::Receiver<anyhow::Result<Frame>> {
    let (tx, rx) = mpsc::channel(4);
    std::thread::Builder::new()
        .name("headroom-watch".into())
        .spawn(move || {
            if let Err(e) = read_agent(&url, token, interval, &tx) {
                let _ = tx.blocking_send(Err(e));
            }
        })
        .map(drop)
        .unwrap_or_else(|e| tracing::error!("starting the reader thread: {e}"));
    rx
}

type Socket = tungstenite::WebSocket<MaybeTlsStream<TcpStream>>;

fn read_agent(
    url: &str,
    token: String,
    interval: Duration,
    tx: &mpsc::Sender<anyhow::Result<Frame>>,
) -> anyhow::Result<()> {
    let (mut ws, _) = tungstenite::connect(url).with_context(|| format!("connecting to {url}"))?;
    let hello = Hello {
        token,
        protocol_version: PROTOCOL_VERSION,
        client: Some(format!("headroom-watch/{}", env!("CARGO_PKG_VERSION"))),
    };
    send(&mut ws, &ClientMessage::Hello(hello))?;
    let host = match next(&mut ws)? {
        ServerMessage::Welcome(w) => w.host,
        ServerMessage::Error(e) => bail!("the agent refused: {} ({:?})", e.message, e.code),
        other => bail!("the agent answered the hello with {other:?}"),
    };
    let interval_ms = u32::try_from(interval.as_millis()).unwrap_or(u32::MAX);
    send(&mut ws, &ClientMessage::Subscribe(Subscribe { interval_ms }))?;
    let mut sample: Option<Sample> = None;
    loop {
        match next(&mut ws)? {
            ServerMessage::Sample(s) => sample = Some(s),
            ServerMessage::Findings(Findings { seq, findings, .. }) => {
                // The diagnosis follows its sample; one without it waits.
                let Some(s) = sample.take().filter(|s| s.seq == seq) else { continue };
                if tx.blocking_send(Ok(Frame { host: host.clone(), sample: s, findings })).is_err() {
                    return Ok(());
                }
            }
            ServerMessage::Error(e) => bail!("the agent: {} ({:?})", e.message, e.code),
            _ => {}
        }
    }
}

fn send(ws: &mut Socket, message: &ClientMessage) -> anyhow::Result<()> {
    ws.send(tungstenite::Message::text(message.encode())).context("writing to the agent")
}

/// The next message the agent sends, skipping types this build does not know.
fn next(ws: &mut Socket) -> anyhow::Result<ServerMessage> {
    loop {
        match ws.read().context("reading from the agent")? {
            tungstenite::Message::Text(text) => match ServerMessage::decode(&text) {
                Ok(m) => return Ok(m),
                Err(shared::protocol::DecodeError::UnknownType(_)) => continue,
                Err(e) => bail!("the agent sent {e}"),
            },
            tungstenite::Message::Close(frame) => {
                bail!("the agent closed the connection{}", frame.map(|f| format!(": {}", f.reason)).unwrap_or_default())
            }
            _ => continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ws_url;

    #[test]
    fn agent_addresses_become_websocket_urls() {
        for (typed, url) in [
            ("127.0.0.1:7878", "ws://127.0.0.1:7878/ws"),
            ("http://gpu1:7878/", "ws://gpu1:7878/ws"),
            ("ws://gpu1:7878/ws", "ws://gpu1:7878/ws"),
            ("HTTP://[::1]:7878", "ws://[::1]:7878/ws"),
        ] {
            assert_eq!(ws_url(typed).unwrap(), url, "{typed}");
        }
        for bad in ["https://gpu1:7878", "ftp://x", "http://gpu1:7878/metrics", ""] {
            assert!(ws_url(bad).is_err(), "{bad}");
        }
    }
}
