//! The wire, through `shared::protocol`'s own types and serde derives: what
//! the agent sends decoded with [`ServerMessage::decode`], the client's four
//! messages encoded from [`ClientMessage`], the fleet relay's answer read as
//! a [`FleetSnapshot`]. The page and the agent cannot disagree on a field.
//!
//! (Until live mode became an on-demand bundle, a hand-written mirror of the
//! protocol over `serde_json::Value` kept the derives out of the first load;
//! the figures that retired it are in `docs/measurements.md`.)
//!
//! A frame that is not a message this page understands is an error with a
//! clear text for the console, and nothing else: the connection, the host's
//! model and every panel go on as before. A message type from a newer agent
//! is skipped (`docs/protocol.md`).

use shared::protocol::{
    ClientMessage, DEFAULT_INTERVAL_MS, DecodeError, FleetSnapshot, Hello, PROTOCOL_VERSION, ProbeCancel, ProbeMode,
    ProbeStart, ProbeStep, ServerMessage, Subscribe,
};

/// Decodes one text frame. `Ok(None)`: a message type this page does not
/// know (a newer agent's), to skip; `Err`: why it is not a message, in words.
pub fn read(frame: &str) -> Result<Option<ServerMessage>, String> {
    match ServerMessage::decode(frame) {
        Ok(m) => Ok(Some(m)),
        Err(DecodeError::UnknownType(_)) => Ok(None),
        Err(e) => Err(format!("ignored a message from the agent: {e}")),
    }
}

/// `hello` with the token.
pub fn hello(token: &str) -> String {
    ClientMessage::Hello(Hello {
        token: token.to_owned(),
        protocol_version: PROTOCOL_VERSION,
        client: Some(concat!("headroom-web/", env!("CARGO_PKG_VERSION")).to_owned()),
    })
    .encode()
}

/// `subscribe` at the agent's default interval.
pub fn subscribe() -> String {
    ClientMessage::Subscribe(Subscribe { interval_ms: DEFAULT_INTERVAL_MS }).encode()
}

/// A plan probe on live GPU `gpu`: the allocations in order, with
/// `confirm_bytes` echoing their total as the agent demands.
pub fn probe_start(gpu: u32, steps: Vec<ProbeStep>) -> ProbeStart {
    let total = steps.iter().fold(0u64, |a, s| a.saturating_add(s.bytes));
    ProbeStart {
        gpu,
        mode: ProbeMode::Plan,
        bytes: None,
        steps,
        chunk_bytes: None,
        hold_ms: None,
        confirm_bytes: Some(total),
    }
}

/// `probe_start`, encoded.
pub fn encode_probe_start(request: &ProbeStart) -> String {
    ClientMessage::ProbeStart(request.clone()).encode()
}

/// `probe_cancel`, for `probe_id` when known.
pub fn probe_cancel(probe_id: Option<u64>) -> String {
    ClientMessage::ProbeCancel(ProbeCancel { probe_id }).encode()
}

/// The body of `GET /api/fleet`.
pub fn fleet(body: &str) -> Result<FleetSnapshot, String> {
    serde_json::from_str(body).map_err(|e| format!("not a fleet answer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::protocol::{ErrorCode, Field, Unavailable};

    /// The JSON block after the example marker named `name` in docs/protocol.md
    /// (locked to the agent's real output by agent/tests/it/protocol_doc.rs).
    fn example(name: &str) -> String {
        let doc = include_str!("../../../docs/protocol.md");
        let marker = ["<!-- example: ", name, " -->\n```json\n"].concat();
        let start = doc.find(&marker).unwrap_or_else(|| panic!("no `{name}` example")) + marker.len();
        doc[start..start + doc[start..].find("```").expect("closed block")].to_owned()
    }

    fn read_example(name: &str) -> ServerMessage {
        read(&example(name)).expect("an envelope").expect("a known type")
    }

    #[test]
    fn every_documented_agent_message_reads() {
        let ServerMessage::Welcome(w) = read_example("welcome") else { panic!("welcome") };
        assert!(w.probes.enabled && w.probes.margin_bytes == 1 << 30, "{:?}", w.probes);
        assert!(!w.host.hostname.is_empty() && !w.host.gpus.is_empty());
        let ServerMessage::Sample(s) = read_example("sample") else { panic!("sample") };
        let procs = s.gpus[0].processes.value().expect("procs");
        assert_eq!(procs[0].pod.as_ref().and_then(|p| p.name.as_deref()), Some("vllm-llama-0"));
        assert_eq!(procs[1].name, Field::Unavailable(Unavailable::NotVisible));
        let ServerMessage::Error(e) = read_example("error") else { panic!("error") };
        assert_eq!(e.code, ErrorCode::Unauthorized);
        let ServerMessage::Error(e) = read_example("probe_error") else { panic!("probe_error") };
        assert_eq!(e.code, ErrorCode::ProbeOverMargin);
        assert!(matches!(read_example("probe_started"), ServerMessage::ProbeStarted(_)));
        assert!(matches!(read_example("probe_progress"), ServerMessage::ProbeProgress(_)));
        for name in ["probe_result", "probe_result_stopped"] {
            assert!(matches!(read_example(name), ServerMessage::ProbeResult(_)), "{name}");
        }
    }

    #[test]
    fn newer_agents_are_skipped_and_hostile_frames_are_errors_in_words() {
        assert_eq!(read(r#"{"type":"from_the_future","data":{}}"#), Ok(None));
        // Newer reasons and codes read as unknown, not as an error.
        let frame = r#"{"type":"error","data":{"code":"from_the_future","message":"m"}}"#;
        assert!(matches!(read(frame), Ok(Some(ServerMessage::Error(e))) if e.code == ErrorCode::Unknown));
        for hostile in [
            "{",
            "",
            "null",
            "[1,2]",
            r#"{"data":{}}"#,
            r#"{"type":"sample","data":{"gpus":"<img src=x onerror=alert(1)>"}}"#,
            r#"{"type":"welcome","data":{"hostname":7}}"#,
            r#"{"type":"sample","data":{"seq":-1,"timestamp_ms":1e400}}"#,
            r#"{"type":"probe_progress","data":{"probe_id":18446744073709551616}}"#,
            &["{\"type\":\"welcome\",\"data\":", &"[".repeat(10_000)].concat(),
        ] {
            let e = read(hostile).expect_err(hostile);
            assert!(e.starts_with("ignored a message from the agent: "), "{e}");
        }
    }

    #[test]
    fn client_messages_are_the_agents_own() {
        let Ok(ClientMessage::Hello(h)) = ClientMessage::decode(&hello("t\"ok\\")) else { panic!("hello") };
        assert_eq!((h.token.as_str(), h.protocol_version), ("t\"ok\\", PROTOCOL_VERSION));
        assert!(h.client.is_some_and(|c| c.starts_with("headroom-web/")));
        assert_eq!(
            ClientMessage::decode(&subscribe()),
            Ok(ClientMessage::Subscribe(Subscribe { interval_ms: DEFAULT_INTERVAL_MS }))
        );
        let steps =
            vec![ProbeStep { label: "layer 0 weights".into(), bytes: 10 }, ProbeStep { label: "KV".into(), bytes: 5 }];
        let req = probe_start(1, steps);
        let Ok(ClientMessage::ProbeStart(s)) = ClientMessage::decode(&encode_probe_start(&req)) else {
            panic!("start")
        };
        assert_eq!((s.gpu, s.mode, s.steps.len(), s.confirm_bytes), (1, ProbeMode::Plan, 2, Some(15)));
        assert_eq!(s.requested_bytes(), Some(15));
        for id in [Some(7), None] {
            assert_eq!(
                ClientMessage::decode(&probe_cancel(id)),
                Ok(ClientMessage::ProbeCancel(ProbeCancel { probe_id: id }))
            );
        }
    }

    #[test]
    fn fleet_answers_read_or_say_why_not() {
        let body = r#"{"queried_at_ms":1,"lookback_s":600,"gpus":[{"host":"gpu1","instance":"gpu1:7878","gpu":"0",
            "uuid":"GPU-1","model":"NVIDIA L4","total_bytes":100,"free_bytes":60,"used_bytes":40,"stale":true,"x":1}]}"#;
        let f = fleet(body).expect("a fleet answer");
        assert_eq!((f.gpus[0].host.as_str(), f.gpus[0].free_bytes, f.gpus[0].stale), ("gpu1", 60, true));
        let doc = fleet(&example("fleet")).expect("the documented answer");
        assert_eq!(doc.gpus.iter().map(|g| g.stale).collect::<Vec<_>>(), [false, true]);
        assert_eq!(doc.gpus[0].reserved_bytes, Some(512 << 20));
        for bad in ["{}", "<html>", r#"{"gpus":[{"host":1}]}"#] {
            assert!(fleet(bad).is_err_and(|e| e.starts_with("not a fleet answer")), "{bad}");
        }
    }
}
