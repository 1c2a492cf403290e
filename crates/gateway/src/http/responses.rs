//! `POST /v1/responses` (contract §1, §7, §8): a thin adapter over the turn service
//! (`crate::service`): it reads and parses the body, hands the request to
//! [`App::create`](crate::service::App::create) with an SSE sink for `stream: true`, and
//! answers the folded Response, the SSE body, or the queued Response of a background run.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::Extension;
use axum::http::StatusCode;
use protocol::ApiError;
use axum::response::{IntoResponse, Response};

use super::auth::Tenant;
use super::sse::SseBody;
use super::AppState;
use crate::admission::KeyId;
use crate::error::{ErrorKind, GatewayError};
use crate::events::wire_sink::WireSink;
use crate::service::{Admitted, Caller, CreateRequest, Refusal};
use crate::store::StoreError;
use crate::turn::driver::COMMIT_FAILED;
use crate::turn;

/// Handles one create request.
pub async fn create(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    key: Option<Extension<KeyId>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(rejection) => return body_rejected(&rejection),
    };
    let req = match turn::parse_request(&body) {
        Ok(req) => req,
        Err(e) => return GatewayError::from(e).into_response(),
    };
    // The key's rate was counted by the `[limits]` layer.
    let caller = Caller { project: tenant.as_str(), key: key.map_or(KeyId::ANONYMOUS, |Extension(k)| k), rate_counted: true };
    let (sink, rx) = if req.stream == Some(true) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (Some(Box::new(WireSink::sse(tx)) as Box<dyn crate::events::EventSink>), Some(rx))
    } else {
        (None, None)
    };
    match state.create(caller, CreateRequest::new(&body, req), sink).await {
        Err(Refusal::Limited(refused)) => super::limits::too_many(&refused),
        Err(Refusal::Invalid(e)) => e.into_response(),
        Ok(Admitted::Queued { response, events: None }) => axum::Json(response).into_response(),
        // The run's events (JSON) rendered as the frames a foreground stream sends.
        Ok(Admitted::Queued { events: Some(events), .. }) => SseBody::from_events(events, state.keepalive).into_response(),
        Ok(Admitted::Started(turn)) => match rx {
            // The turn runs on; the stream's body holds its attachment while the client reads.
            Some(rx) => SseBody::new(rx, state.keepalive, turn.into_attached()).into_response(),
            None => {
                // What the turn needs of the body is in the turn: it is not held while it runs.
                drop(body);
                match turn.outcome().await {
                    Ok(outcome) => answer(outcome),
                    Err(e) => commit_failed(&e).into_response(),
                }
            }
        },
    }
}

/// `POST /v1/responses/compact` (contract 2026 §W2): a thin adapter over
/// [`App::compact`](crate::service::App::compact); answers its `response.compaction`
/// object, or its error in the OpenAI shape.
pub async fn compact(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    key: Option<Extension<KeyId>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(rejection) => return body_rejected(&rejection),
    };
    let caller = Caller { project: tenant.as_str(), key: key.map_or(KeyId::ANONYMOUS, |Extension(k)| k), rate_counted: true };
    match state.compact(caller, &body).await {
        Ok(compacted) => axum::Json(compacted).into_response(),
        Err(Refusal::Limited(refused)) => super::limits::too_many(&refused),
        Err(Refusal::Invalid(e)) => e.into_response(),
    }
}

/// A body that could not be read (too large, broken chunked encoding, stopped arriving) in
/// the OpenAI shape.
pub fn body_rejected(rejection: &BytesRejection) -> Response {
    if let Some(timeout) = super::rejections::body_timeout(&rejection.body_text()) {
        return timeout.into_response();
    }
    let status = rejection.status();
    let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "The request body is larger than this gateway accepts (server.max_body_bytes).".to_string()
    } else {
        format!("The request body could not be read: {}", rejection.body_text())
    };
    let code = if status == StatusCode::PAYLOAD_TOO_LARGE { "request_too_large" } else { "invalid_body" };
    super::error::respond(status, ApiError::invalid(None, message).with_code(code))
}

/// The non-streaming answer: the folded Response, or 502 when the upstream failed. The body
/// is encoded into a buffer sized for a typical Response (axum's `Json` starts at 128 bytes
/// and grows by copying).
fn answer(outcome: turn::Outcome) -> Response {
    if let Some(e) = outcome.upstream_error {
        return e.to_error().into_response();
    }
    let mut body = Vec::with_capacity(4096);
    match serde_json::to_writer(&mut body, &outcome.response) {
        Ok(()) => ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "encoding a Response failed");
            GatewayError::server(ErrorKind::Internal, "The response could not be encoded.", None).into_response()
        }
    }
}

/// A failed end-of-turn write: 503 when the store is unreachable, else 500; nothing was stored.
fn commit_failed(e: &StoreError) -> GatewayError {
    let (kind, code) = match e {
        StoreError::Unavailable(_) => (ErrorKind::Unavailable, "store_unavailable"),
        _ => (ErrorKind::Internal, "store_error"),
    };
    GatewayError::server(kind, COMMIT_FAILED, Some(code))
}
