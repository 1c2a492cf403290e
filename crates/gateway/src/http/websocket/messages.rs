//! WebSocket mode's client events and the gateway's `error` events (2026 supplement W1.2,
//! W1.3): a text frame holds one JSON client event, `response.create` (the create body's
//! fields at the top level, plus `stream_id` and `generate`) or `response.steer`.

use bytes::Bytes;
use protocol::{ApiError, CreateResponse};
use serde_json::Value;

use crate::error::{ErrorKind, GatewayError};
use crate::turn;

/// The longest `stream_id`, in bytes (W1.2: `[A-Za-z0-9_.-]{1,256}`).
pub const MAX_STREAM_ID: usize = 256;

/// One client message, read.
#[derive(Debug)]
pub enum ClientEvent {
    /// `response.create`: its lane (`None`: the default one), `generate` (default true),
    /// the message as sent and its create body parsed (`stream` implied, the WebSocket-only
    /// fields removed).
    Create { stream_id: Option<String>, generate: bool, body: Bytes, parsed: Box<CreateResponse> },
    /// `response.steer` (not supported: answered `response.steer.failed`).
    Steer { input: Value, previous_response_id: Value },
}

/// A message that is not a client event the gateway takes: the error to answer, and the
/// lane it named when it could be read.
#[derive(Debug)]
pub struct Rejected {
    pub error: GatewayError,
    pub stream_id: Option<String>,
}

/// Reads one text message. Errors: invalid JSON, not an object, a repeated key (400 naming
/// it, as over HTTP), an unknown or missing `type`, an invalid `stream_id` (`invalid_stream_id`), `generate` not a boolean, or an
/// invalid create body (the error POST `/v1/responses` gives it).
pub fn read(text: Bytes) -> Result<ClientEvent, Box<Rejected>> {
    let rejected = |error: GatewayError| Box::new(Rejected { error, stream_id: None });
    let head: Head = serde_json::from_slice(&text).map_err(|e| {
        let error = if let Some(dup) = e.is_data().then(|| protocol::dupkeys::find(&text)).flatten() {
            // A repeated `type` (or `stream_id`, `generate`) is named as POST names one.
            GatewayError::from(crate::turn::validate::duplicate_key(&dup))
        } else if e.is_data() {
            GatewayError::bad_request(None, "A WebSocket message must be a JSON object with a 'type'.").with_code("invalid_type")
        } else {
            GatewayError::bad_request(None, format!("The message is not valid JSON: {e}.")).with_code("invalid_json")
        };
        rejected(error)
    })?;
    match head.kind.as_deref() {
        Some("response.create") => {}
        Some("response.steer") => {
            let value: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
            return Ok(ClientEvent::Steer {
                input: value.get("input").cloned().unwrap_or(Value::Null),
                previous_response_id: value.get("previous_response_id").cloned().unwrap_or(Value::Null),
            });
        }
        Some(other) => {
            let shown: String = other.chars().take(64).collect();
            return Err(rejected(
                GatewayError::bad_request(Some("type".to_string()), format!("Unknown client event type '{shown}'. This gateway takes 'response.create'."))
                    .with_code("unknown_event_type"),
            ));
        }
        None => {
            return Err(rejected(
                GatewayError::bad_request(Some("type".to_string()), "Missing required parameter: 'type'.").with_code("missing_required_parameter"),
            ))
        }
    }
    let stream_id = match head.stream_id {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if valid_stream_id(&id) => Some(id),
        Some(_) => {
            return Err(rejected(
                GatewayError::bad_request(
                    Some("stream_id".to_string()),
                    format!("Invalid 'stream_id': 1 to {MAX_STREAM_ID} ASCII letters, digits, '_', '-' or '.'."),
                )
                .with_code("invalid_stream_id"),
            ))
        }
    };
    let with_lane = |error: GatewayError| Box::new(Rejected { error, stream_id: stream_id.clone() });
    let generate = match head.generate {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => b,
        Some(_) => {
            return Err(with_lane(
                GatewayError::bad_request(Some("generate".to_string()), "Invalid type for 'generate': expected a boolean.").with_code("invalid_type"),
            ))
        }
    };
    let mut parsed = turn::parse_request(&text).map_err(|e| with_lane(GatewayError::from(e)))?;
    for field in ["type", "stream_id", "generate"] {
        parsed.unknown.remove(field);
    }
    if parsed.background == Some(true) {
        return Err(with_lane(
            GatewayError::bad_request(Some("background".to_string()), "Background responses are not supported over WebSocket; use POST /v1/responses.")
                .with_code("unsupported_parameter"),
        ));
    }
    // Every response on the socket streams its events.
    parsed.stream = Some(true);
    Ok(ClientEvent::Create { stream_id, generate, body: text, parsed: Box::new(parsed) })
}

/// The valid `stream_id` of a message not read further (one refused before it is parsed),
/// if it has one.
pub fn stream_id_of(text: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Head>(text).ok()?.stream_id? {
        Value::String(id) if valid_stream_id(&id) => Some(id),
        _ => None,
    }
}

/// The fields read before the body.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: Option<String>,
    stream_id: Option<Value>,
    generate: Option<Value>,
}

/// W1.2's lane name: 1 to 256 of `[A-Za-z0-9_.-]`.
pub fn valid_stream_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_STREAM_ID && id.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
}

/// The `error` event (W1.3): `{type:"error", status, error:{type, code, message, param},
/// stream_id?}`, with the HTTP status the same error gets over HTTP.
pub fn error_event(error: &GatewayError, stream_id: Option<&str>) -> Bytes {
    error_event_with(error.kind, &error.error, stream_id)
}

/// [`error_event`] from a kind and an error object.
pub fn error_event_with(kind: ErrorKind, error: &ApiError, stream_id: Option<&str>) -> Bytes {
    let mut event = serde_json::json!({
        "type": "error",
        "status": super::super::error::status(kind).as_u16(),
        "error": error,
    });
    if let (Some(id), Some(o)) = (stream_id, event.as_object_mut()) {
        o.insert("stream_id".into(), Value::String(id.to_string()));
    }
    Bytes::from(event.to_string())
}

/// `response.steer.failed` (W1.3) with code `steering_not_supported`: the gateway does not
/// steer running responses.
pub fn steer_failed(input: Value, previous_response_id: Value) -> Bytes {
    let event = serde_json::json!({
        "type": "response.steer.failed",
        "sequence_number": 0,
        "error": {
            "type": "invalid_request_error",
            "code": "steering_not_supported",
            "message": "This gateway does not steer running responses: send a response.create with previous_response_id once the response has ended.",
        },
        "steer": {"input": input, "previous_response_id": previous_response_id},
    });
    Bytes::from(event.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<ClientEvent, Box<Rejected>>) -> String {
        match r {
            Err(r) => r.error.error.code.unwrap_or_default(),
            Ok(e) => panic!("accepted: {e:?}"),
        }
    }

    #[test]
    fn a_create_loses_its_websocket_fields_and_streams() {
        let msg = r#"{"type":"response.create","stream_id":"lane-1","generate":false,"model":"m","input":"hi","store":false}"#;
        let Ok(ClientEvent::Create { stream_id, generate, parsed, .. }) = read(Bytes::from(msg)) else { panic!("create") };
        assert_eq!(stream_id.as_deref(), Some("lane-1"));
        assert!(!generate);
        assert!(parsed.unknown.is_empty(), "{:?}", parsed.unknown);
        assert_eq!(parsed.stream, Some(true));
    }

    #[test]
    fn bad_messages_are_named() {
        assert_eq!(code(read(Bytes::from("{not json"))), "invalid_json");
        assert_eq!(code(read(Bytes::from("[1]"))), "invalid_type");
        assert_eq!(code(read(Bytes::from(r#"{"type":"response.cancel"}"#))), "unknown_event_type");
        assert_eq!(code(read(Bytes::from(r#"{"model":"m"}"#))), "missing_required_parameter");
        assert_eq!(code(read(Bytes::from(r#"{"type":"response.create","stream_id":"a b"}"#))), "invalid_stream_id");
        assert_eq!(code(read(Bytes::from(r#"{"type":"response.create","stream_id":""}"#))), "invalid_stream_id");
        assert_eq!(code(read(Bytes::from(r#"{"type":"response.create","model":"m","background":true}"#))), "unsupported_parameter");
        let e = read(Bytes::from(r#"{"type":"response.create","type":"response.create","model":"m"}"#)).expect_err("rejected");
        assert_eq!(e.error.error.param.as_deref(), Some("type"), "{:?}", e.error);
        assert!(e.error.error.message.contains("duplicate field `type`"), "{:?}", e.error);
        let long = "x".repeat(257);
        assert!(!valid_stream_id(&long) && valid_stream_id("a.b_c-9"));
        let e = read(Bytes::from(r#"{"type":"response.create","stream_id":"s","generate":1}"#)).expect_err("rejected");
        assert_eq!(e.stream_id.as_deref(), Some("s"), "the lane is echoed");
    }

    #[test]
    fn an_error_event_has_the_nested_shape_and_the_lane() {
        let e = GatewayError::bad_request(Some("model".to_string()), "Missing 'model'.").with_code("missing_required_parameter");
        let v: Value = serde_json::from_slice(&error_event(&e, Some("a"))).expect("json");
        assert_eq!(v["type"], "error");
        assert_eq!(v["status"], 400);
        assert_eq!(v["error"]["code"], "missing_required_parameter");
        assert_eq!(v["error"]["param"], "model");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["stream_id"], "a");
        let v: Value = serde_json::from_slice(&error_event(&e, None)).expect("json");
        assert!(v.get("stream_id").is_none());
    }
}
