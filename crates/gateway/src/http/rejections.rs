//! Answers that axum's extractors produce on their own (a body over the size limit, a
//! broken chunked body, a bad multipart form, a path or query that does not parse) are
//! plain text; this layer rewrites every such 4xx into the OpenAI error shape (contract §9)
//! on every endpoint, keeping the status and the extractor's message.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use protocol::ApiError;

use crate::error::GatewayError;

/// Extractor messages are short; anything longer is cut (bytes).
const MAX_MESSAGE_BYTES: usize = 4096;

/// What tower-http's body timeout says, inside the extractor's message (a test pins it).
const BODY_TIMEOUT_TEXT: &str = "data was not received within the designated timeout";

/// The 408 for a request body that stopped arriving (`server.request_read_timeout_ms`), if
/// `text` (an extractor's message) says so.
pub fn body_timeout(text: &str) -> Option<GatewayError> {
    text.contains(BODY_TIMEOUT_TEXT).then(|| GatewayError {
        kind: crate::error::ErrorKind::RequestTimeout,
        error: ApiError::invalid(None, "The request body stopped arriving (server.request_read_timeout_ms).")
            .with_code("request_timeout"),
    })
}

/// `map_response` layer: a 4xx whose body is not JSON becomes `{"error":{…}}`.
pub async fn openai_shaped(resp: Response) -> Response {
    let status = resp.status();
    let plain = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/plain"));
    if !status.is_client_error() || !plain {
        return resp;
    }
    let bytes = axum::body::to_bytes(resp.into_body(), MAX_MESSAGE_BYTES).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).trim().to_string();
    if let Some(timeout) = body_timeout(&text) {
        return timeout.into_response();
    }
    let (message, code) = match status {
        StatusCode::PAYLOAD_TOO_LARGE => {
            ("The request body is larger than this gateway accepts (server.max_body_bytes).".to_string(), "request_too_large")
        }
        _ if text.is_empty() => (status.canonical_reason().unwrap_or("Bad request").to_string(), "invalid_request"),
        _ => (format!("The request could not be read: {text}"), "invalid_request"),
    };
    super::error::respond(status, ApiError::invalid(None, message).with_code(code))
}
