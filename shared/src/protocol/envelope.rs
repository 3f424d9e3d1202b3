//! The envelope `{"type": ..., "data": ...}`: the two message enums, their
//! encoding, and tolerant decoding that names what is wrong.

use serde::{Deserialize, Serialize};

use super::{
    ErrorCode, ErrorMessage, Findings, Hello, ProbeCancel, ProbeProgress, ProbeResult, ProbeStart, ProbeStarted,
    Sample, Subscribe, Welcome,
};

// ---------------------------------------------------------------------------
// Envelopes

/// What a client sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum ClientMessage {
    Hello(Hello),
    Subscribe(Subscribe),
    ProbeStart(ProbeStart),
    ProbeCancel(ProbeCancel),
}

/// What the agent sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum ServerMessage {
    Welcome(Welcome),
    Sample(Sample),
    Error(ErrorMessage),
    ProbeStarted(ProbeStarted),
    ProbeProgress(ProbeProgress),
    ProbeResult(ProbeResult),
    Findings(Findings),
}

// ---------------------------------------------------------------------------
// Encoding and tolerant decoding

/// Why a text frame is not a message this side understands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a message envelope: {0}")]
    Malformed(String),
    #[error("unknown message type `{0}`")]
    UnknownType(String),
    #[error("bad `{kind}` message: {reason}")]
    InvalidData { kind: String, reason: String },
}

impl DecodeError {
    /// The error code to answer with.
    pub fn code(&self) -> ErrorCode {
        match self {
            DecodeError::Malformed(_) => ErrorCode::Malformed,
            DecodeError::UnknownType(_) => ErrorCode::UnknownType,
            DecodeError::InvalidData { .. } => ErrorCode::InvalidMessage,
        }
    }
}

#[derive(Deserialize)]
struct RawEnvelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    data: serde_json::Value,
}

fn envelope(text: &str) -> Result<RawEnvelope, DecodeError> {
    serde_json::from_str(text).map_err(|e| DecodeError::Malformed(e.to_string()))
}

fn data<T: serde::de::DeserializeOwned>(kind: &str, data: serde_json::Value) -> Result<T, DecodeError> {
    // A message without `data` (or with `null`) reads as `{}`, so
    // `{"type": "subscribe"}` takes every default.
    let data = if data.is_null() { serde_json::Value::Object(Default::default()) } else { data };
    serde_json::from_value(data).map_err(|e| DecodeError::InvalidData { kind: kind.to_owned(), reason: e.to_string() })
}

impl ClientMessage {
    /// Decodes one text frame; unknown types are an error the caller answers.
    pub fn decode(text: &str) -> Result<Self, DecodeError> {
        let raw = envelope(text)?;
        match raw.kind.as_str() {
            "hello" => data(&raw.kind, raw.data).map(ClientMessage::Hello),
            "subscribe" => data(&raw.kind, raw.data).map(ClientMessage::Subscribe),
            "probe_start" => data(&raw.kind, raw.data).map(ClientMessage::ProbeStart),
            "probe_cancel" => data(&raw.kind, raw.data).map(ClientMessage::ProbeCancel),
            _ => Err(DecodeError::UnknownType(raw.kind)),
        }
    }

    pub fn encode(&self) -> String {
        encode(self)
    }
}

impl ServerMessage {
    /// Decodes one text frame; a client skips unknown types (newer agents).
    pub fn decode(text: &str) -> Result<Self, DecodeError> {
        let raw = envelope(text)?;
        match raw.kind.as_str() {
            "welcome" => data(&raw.kind, raw.data).map(ServerMessage::Welcome),
            "sample" => data(&raw.kind, raw.data).map(ServerMessage::Sample),
            "error" => data(&raw.kind, raw.data).map(ServerMessage::Error),
            "probe_started" => data(&raw.kind, raw.data).map(ServerMessage::ProbeStarted),
            "probe_progress" => data(&raw.kind, raw.data).map(ServerMessage::ProbeProgress),
            "probe_result" => data(&raw.kind, raw.data).map(ServerMessage::ProbeResult),
            "findings" => data(&raw.kind, raw.data).map(ServerMessage::Findings),
            _ => Err(DecodeError::UnknownType(raw.kind)),
        }
    }

    pub fn encode(&self) -> String {
        encode(self)
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMessage::Error(ErrorMessage::new(code, message))
    }
}

fn encode<T: Serialize>(message: &T) -> String {
    // These types hold only strings, numbers and string-keyed structs, which
    // serde_json always serializes; the fallback is unreachable in practice.
    serde_json::to_string(message)
        .unwrap_or_else(|_| r#"{"type":"error","data":{"code":"internal","message":"encoding failed"}}"#.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{DEFAULT_INTERVAL_MS, Field, FindingCause, FindingCertainty, Unavailable};

    #[test]
    fn client_messages_round_trip_and_default() {
        let hello = ClientMessage::Hello(Hello { token: "t".into(), protocol_version: 1, client: None });
        assert_eq!(ClientMessage::decode(&hello.encode()), Ok(hello));
        assert_eq!(
            ClientMessage::decode(r#"{"type":"subscribe"}"#),
            Ok(ClientMessage::Subscribe(Subscribe { interval_ms: DEFAULT_INTERVAL_MS }))
        );
    }

    #[test]
    fn decoding_names_what_is_wrong() {
        assert!(matches!(ClientMessage::decode("{"), Err(DecodeError::Malformed(_))));
        assert!(matches!(ClientMessage::decode(r#"{"data":{}}"#), Err(DecodeError::Malformed(_))));
        assert_eq!(ClientMessage::decode(r#"{"type":"probe"}"#), Err(DecodeError::UnknownType("probe".into())));
        // A probe without its confirm field still decodes: the agent refuses it with a probe code.
        let start = ClientMessage::decode(r#"{"type":"probe_start","data":{"gpu":0,"bytes":1024}}"#);
        assert!(matches!(start, Ok(ClientMessage::ProbeStart(ProbeStart { confirm_bytes: None, .. }))));
        let bad = ClientMessage::decode(r#"{"type":"subscribe","data":{"interval_ms":"fast"}}"#);
        assert_eq!(bad.map_err(|e| e.code()), Err(ErrorCode::InvalidMessage));
    }

    #[test]
    fn newer_codes_and_reasons_decode_as_unknown() {
        let e: ErrorMessage = serde_json::from_str(r#"{"code":"from_the_future","message":"m"}"#).unwrap();
        assert_eq!(e.code, ErrorCode::Unknown);
        let f: Field<u32> = serde_json::from_str(r#"{"unavailable":"from_the_future"}"#).unwrap();
        assert_eq!(f, Field::Unavailable(Unavailable::Unknown));
        let finding = r#"{"type":"findings","data":{"seq":3,"timestamp_ms":9,"findings":[{"cause":"from_the_future",
            "number":5,"gpu":0,"certainty":"certain","since_ms":1,"found_ms":2,"bytes":3,"gpu_total_bytes":4,
            "evidence":"e","fix":"f","new_field":true}]}}"#;
        let Ok(ServerMessage::Findings(f)) = ServerMessage::decode(finding) else { panic!("a findings message") };
        assert_eq!((f.findings[0].cause, f.findings[0].certainty), (FindingCause::Unknown, FindingCertainty::Unknown));
        assert_eq!(f.findings[0].to_live(), None, "a client skips a cause it does not know");
    }
}
