//! The WebSocket protocol against the real server and a real client.

use std::time::Duration;

use futures_util::SinkExt;
use shared::protocol::{ErrorCode, PROTOCOL_VERSION, ServerMessage};
use tokio_tungstenite::tungstenite::{self, Message};

use futures_util::StreamExt;

use crate::support::{self, TOKEN, closed, hello, recv, send, send_text, subscribe};

fn error_code(message: &ServerMessage) -> ErrorCode {
    match message {
        ServerMessage::Error(e) => e.code,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn handshake_welcomes_with_host_facts() {
    let server = support::start().await;
    let (_ws, welcome) = server.authed().await;
    let ServerMessage::Welcome(w) = welcome else { unreachable!() };
    assert_eq!(w.protocol_version, PROTOCOL_VERSION);
    assert!(w.host.simulated);
    assert_eq!(w.host.gpus.len(), 2);
    assert_eq!(w.host.gpus[0].catalog_id.as_deref(), Some("h100-sxm"));
    assert_eq!(w.limits.min_interval_ms, 100);
}

#[tokio::test]
async fn samples_flow_after_subscribe() {
    let server = support::start().await;
    let (mut ws, _) = server.authed().await;
    send(&mut ws, &subscribe(100)).await;
    let mut seqs = Vec::new();
    for _ in 0..3 {
        match recv(&mut ws).await {
            ServerMessage::Sample(s) => {
                assert!(s.simulated);
                assert_eq!(s.gpus.len(), 2);
                seqs.push(s.seq);
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[tokio::test]
async fn missing_or_wrong_tokens_are_refused_and_closed() {
    let server = support::start().await;
    for token in ["", "wrong-token-0123456789abcdef"] {
        let mut ws = server.ws().await;
        send(&mut ws, &hello(token)).await;
        assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::Unauthorized);
        assert_eq!(closed(&mut ws).await, Some(1008));
    }
    // A first message that is not a hello.
    let mut ws = server.ws().await;
    send(&mut ws, &subscribe(1000)).await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::HandshakeRequired);
    assert_eq!(closed(&mut ws).await, Some(1008));
    // The server still serves others.
    server.authed().await;
}

#[tokio::test]
async fn failed_attempts_are_rate_limited() {
    let mut config = support::config();
    config.auth_failure_burst = 3;
    config.auth_failure_refill = Duration::from_secs(3600);
    config.auth_refusal_delay = Duration::from_millis(10);
    let server = support::start_with(config).await;
    for _ in 0..3 {
        let mut ws = server.ws().await;
        send(&mut ws, &hello("wrong-token-0123456789abcdef")).await;
        assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::Unauthorized);
    }
    // While the bucket is empty, wrong tokens are rate limited...
    let mut ws = server.ws().await;
    send(&mut ws, &hello("wrong-token-0123456789abcdef")).await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::RateLimited);
    let (status, _) = server.get("/api/snapshot", &[("Authorization", "Bearer wrong-token-0123456789")]).await;
    assert_eq!(status, 429);
    // ...but the right one is never locked out (issue 18).
    server.authed().await;
    let (status, _) = server.get("/api/snapshot", &[("Authorization", &format!("Bearer {TOKEN}"))]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn foreign_origins_are_refused_before_the_upgrade() {
    let server = support::start().await;
    let err = server.ws_with(&[("Origin", "https://evil.example")]).await.unwrap_err();
    let tungstenite::Error::Http(response) = err else { panic!("{err:?}") };
    assert_eq!(response.status(), 403);
    // The agent's own page, and scripts without an Origin, may connect.
    let own = format!("http://{}", server.addr);
    let mut ws = server.ws_with(&[("Origin", &own)]).await.unwrap();
    send(&mut ws, &hello(TOKEN)).await;
    assert!(matches!(recv(&mut ws).await, ServerMessage::Welcome(_)));
    // An allow-listed origin may too.
    let mut config = support::config();
    config.allowed_origins = vec!["https://headroom.example".into()];
    let other = support::start_with(config).await;
    assert!(other.ws_with(&[("Origin", "https://headroom.example")]).await.is_ok());
    assert!(other.ws_with(&[("Origin", "https://headroom.example.evil.com")]).await.is_err());
}

#[tokio::test]
async fn dns_rebinding_hosts_are_refused() {
    let server = support::start().await;
    let err = server.ws_with(&[("Host", "evil.example:7878")]).await.unwrap_err();
    let tungstenite::Error::Http(response) = err else { panic!("{err:?}") };
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn bad_messages_get_errors_and_the_connection_survives() {
    let server = support::start().await;
    let (mut ws, _) = server.authed().await;
    send_text(&mut ws, "{not json").await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::Malformed);
    send_text(&mut ws, r#"{"type":"gpu_reset","data":{}}"#).await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::UnknownType);
    send_text(&mut ws, r#"{"type":"subscribe","data":{"interval_ms":"soon"}}"#).await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::InvalidMessage);
    send(&mut ws, &subscribe(10)).await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::IntervalOutOfRange);
    send(&mut ws, &hello(TOKEN)).await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::InvalidMessage);
    ws.send(Message::binary(vec![1, 2, 3])).await.unwrap();
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::Malformed);
    // Still alive: it subscribes and gets samples.
    send(&mut ws, &subscribe(100)).await;
    assert!(matches!(recv(&mut ws).await, ServerMessage::Sample(_)));
}

#[tokio::test]
async fn oversized_frames_close_with_1009_and_others_keep_going() {
    let server = support::start().await;
    let (mut ws, _) = server.authed().await;
    let huge = format!(r#"{{"type":"subscribe","data":{{"pad":"{}"}}}}"#, "x".repeat(64 * 1024));
    send_text(&mut ws, &huge).await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::MessageTooLarge);
    assert_eq!(closed(&mut ws).await, Some(1009));
    server.authed().await;
}

#[tokio::test]
async fn silent_clients_time_out_of_the_handshake() {
    let mut config = support::config();
    config.handshake_timeout = Duration::from_millis(200);
    let server = support::start_with(config).await;
    let mut ws = server.ws().await;
    assert_eq!(error_code(&recv(&mut ws).await), ErrorCode::HandshakeTimeout);
    assert_eq!(closed(&mut ws).await, Some(1008));
}

/// Samples arrive at the requested interval, measured on tokio's paused
/// clock (over an in-memory connection, so the clock only moves to timers).
#[tokio::test(start_paused = true)]
async fn samples_arrive_at_the_requested_interval() {
    let mut config = support::config();
    config.idle_timeout = None;
    let connect = support::start_in_memory(config);
    let mut ws = support::ws_in_memory(&connect).await;
    let next = async |ws: &mut tokio_tungstenite::WebSocketStream<tokio::io::DuplexStream>| loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => match ServerMessage::decode(&text).unwrap() {
                ServerMessage::Findings(_) => continue,
                message => return message,
            },
            Some(Ok(_)) => continue,
            other => panic!("{other:?}"),
        }
    };
    ws.send(Message::text(hello(TOKEN).encode())).await.unwrap();
    assert!(matches!(next(&mut ws).await, ServerMessage::Welcome(_)));
    ws.send(Message::text(subscribe(250).encode())).await.unwrap();
    let mut arrivals = Vec::new();
    let mut seqs = Vec::new();
    for _ in 0..8 {
        let ServerMessage::Sample(s) = next(&mut ws).await else { panic!() };
        arrivals.push(tokio::time::Instant::now());
        seqs.push(s.seq);
    }
    let gaps: Vec<u128> = arrivals.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
    // The reading itself happens on the sampler's real thread while tokio's
    // clock is paused: on a loaded machine (the hostile-client tests run in
    // the same binary) the clock can auto-advance past a tick before that
    // reading lands, so a gap may be 500 ms followed by one of 0 (seen:
    // [250, 500, 0, 250, …]) and a late reading stretches the next tick. What
    // holds whatever the load (seen under 6 busy loops: [500, 0, 500, 0, 500,
    // 250, 0], still 1,750 ms in all): readings on the 250 ms grid, never
    // further apart than two slipped ticks, one per tick on average, none
    // sent twice.
    assert!(gaps.iter().all(|g| g % 250 == 0 && *g <= 750), "samples on the 250 ms grid: {gaps:?}");
    let span: u128 = gaps.iter().sum();
    assert!((6 * 250..=14 * 250).contains(&span), "about one sample per 250 ms over the run: {gaps:?}");
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "readings in order, none repeated: {seqs:?}");

    // A second, slower client gets one sample per its own interval while the
    // sampler keeps ticking for the faster one.
    let mut slow = support::ws_in_memory(&connect).await;
    slow.send(Message::text(hello(TOKEN).encode())).await.unwrap();
    assert!(matches!(next(&mut slow).await, ServerMessage::Welcome(_)));
    slow.send(Message::text(subscribe(1_000).encode())).await.unwrap();
    let ServerMessage::Sample(first) = next(&mut slow).await else { panic!() };
    let start = tokio::time::Instant::now();
    let ServerMessage::Sample(second) = next(&mut slow).await else { panic!() };
    // 1,000 ms, or a tick or two later when readings raced the paused clock (above).
    let elapsed = start.elapsed().as_millis();
    assert!((1_000..=1_500).contains(&elapsed), "one sample per second for the slow client: {elapsed} ms");
    assert!((3..=6).contains(&(second.seq - first.seq)), "the sampler kept ticking at 250 ms between them");
    drop(ws);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_clients_at_once() {
    let server = support::start().await;
    // Spawn all first (collect), then wait: every client is connected at once.
    let clients: Vec<_> = (0..200)
        .map(|_| {
            let addr = server.addr;
            tokio::spawn(async move {
                let url = format!("ws://{addr}/ws");
                let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
                send(&mut ws, &hello(TOKEN)).await;
                assert!(matches!(recv(&mut ws).await, ServerMessage::Welcome(_)));
                send(&mut ws, &subscribe(200)).await;
                for _ in 0..2 {
                    assert!(matches!(recv(&mut ws).await, ServerMessage::Sample(_)));
                }
                ws
            })
        })
        .collect();
    let mut sockets = Vec::new();
    for client in clients {
        sockets.push(client.await.unwrap());
    }
    assert_eq!(sockets.len(), 200);
}

#[tokio::test]
async fn connections_are_bounded() {
    let mut config = support::config();
    config.max_connections = 2;
    let server = support::start_with(config).await;
    let _a = server.authed().await;
    let _b = server.authed().await;
    let err = server.ws_with(&[]).await.unwrap_err();
    let tungstenite::Error::Http(response) = err else { panic!("{err:?}") };
    assert_eq!(response.status(), 503);
}

#[tokio::test]
async fn graceful_shutdown_closes_every_socket_with_a_close_frame() {
    let mut server = support::start().await;
    let (mut subscribed, _) = server.authed().await;
    send(&mut subscribed, &subscribe(100)).await;
    assert!(matches!(recv(&mut subscribed).await, ServerMessage::Sample(_)));
    let (mut idle, _) = server.authed().await;
    let mut unauthenticated = server.ws().await;
    server.shutdown();
    for ws in [&mut subscribed, &mut idle, &mut unauthenticated] {
        // An error (`shutting_down`) then a 1001 close.
        assert_eq!(closed(ws).await, Some(1001));
    }
    let result = tokio::time::timeout(Duration::from_secs(10), &mut server.task).await.unwrap();
    assert!(result.unwrap().is_ok());
}
