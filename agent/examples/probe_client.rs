//! A minimal WebSocket client for one probe through a running agent, as the
//! page would ask for it: `hello`, `probe_start` (with its confirm field),
//! then every message until `probe_result`. Used by `scripts/gpu-check.sh`.
//!
//! `cargo run --release -p agent --example probe_client -- <ws://host:port/ws> <token> <gpu> <mode> <bytes> [hold_ms]`
//!
//! Prints the `probe_result` as one JSON line on stdout (progress on stderr);
//! exits 1 on a refusal or when no result arrives within 60 s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use shared::protocol::{ClientMessage, Hello, PROTOCOL_VERSION, ProbeMode, ProbeStart, ServerMessage};
use tokio_tungstenite::tungstenite::Message;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!("usage: probe_client <ws-url> <token> <gpu> <plan|largest-block|max-total> <bytes> [hold_ms]");
        std::process::exit(2);
    }
    let mode = ProbeMode::parse(&args[4]).expect("mode");
    let bytes: u64 = args[5].parse().expect("bytes");
    let hold_ms = args.get(6).map(|h| h.parse().expect("hold_ms"));
    let (mut ws, _) = tokio_tungstenite::connect_async(args[1].as_str()).await.expect("connect");
    let send = |m: ClientMessage| Message::text(m.encode());
    let hello =
        Hello { token: args[2].clone(), protocol_version: PROTOCOL_VERSION, client: Some("probe_client".into()) };
    ws.send(send(ClientMessage::Hello(hello))).await.unwrap();
    let start = ProbeStart {
        gpu: args[3].parse().expect("gpu"),
        mode,
        bytes: Some(bytes),
        steps: Vec::new(),
        chunk_bytes: None,
        hold_ms,
        confirm_bytes: Some(bytes),
    };
    let result = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(Ok(message)) = ws.next().await {
            let Message::Text(text) = message else { continue };
            match ServerMessage::decode(&text) {
                Ok(ServerMessage::Welcome(_)) => ws.send(send(ClientMessage::ProbeStart(start.clone()))).await.unwrap(),
                Ok(ServerMessage::ProbeResult(r)) => return Some(serde_json::to_string(&r).unwrap()),
                Ok(ServerMessage::Error(e)) => {
                    eprintln!("refused: {:?}: {}", e.code, e.message);
                    return None;
                }
                Ok(other) => eprintln!("{}", other.encode()),
                Err(_) => {}
            }
        }
        None
    })
    .await;
    match result {
        Ok(Some(line)) => println!("{line}"),
        _ => std::process::exit(1),
    }
}
