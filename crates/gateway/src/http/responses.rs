//! `POST /v1/responses` (contract §1, §7, §8): non-streaming answers the folded Response;
//! `stream: true` answers SSE from the same emitter.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use protocol::ApiError;
use axum::response::{IntoResponse, Response};

use super::sse::SseBody;
use super::AppState;
use crate::error::HttpError;
use crate::events::emitter::{Emitter, Sink};
use crate::store::StoreError;
use crate::turn::{self, persist, state, Prepared};

/// Handles one create request.
pub async fn create(State(state): State<Arc<AppState>>, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(rejection) => return body_rejected(&rejection).into_response(),
    };
    let req = match turn::parse_request(&body) {
        Ok(req) => req,
        Err(e) => return HttpError::from(e).into_response(),
    };
    let ctx = state::Context {
        models: state.models.as_ref(),
        reject_unknown: state.reject_unknown,
        registry: &state.registry,
        store: &state.store,
        lease_ttl_ms: state.lease_ttl_ms,
    };
    // The turn's futures are boxed (prepare's state is ~8 KB, the run's ~6 KB): the
    // handler's own future stays small, and axum and tower move it several times.
    let mut prepared = match Box::pin(state::prepare(req, &body, &ctx)).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    prepared.cancel = state.shutdown.child_token();
    if prepared.stream {
        return stream(state, prepared);
    }
    let Some(plan) = prepared.persist.take() else {
        let mut emitter = Emitter::new(std::mem::take(&mut prepared.base), None);
        return answer(Box::pin(turn::run(prepared, &state.upstream, &mut emitter, state.limits)).await);
    };
    // A stored turn runs in its own task: a client that goes away does not cancel it.
    // Boxed before spawning: the task moves a pointer, not the turn's state.
    let task = state.turns.clone().spawn(Box::pin(async move {
        let mut emitter = Emitter::new(std::mem::take(&mut prepared.base), None);
        let mut outcome = Box::pin(turn::run(prepared, &state.upstream, &mut emitter, state.limits)).await;
        let transcript = std::mem::take(&mut outcome.transcript);
        Box::pin(persist::commit(plan, &outcome.response, transcript)).await.map(|()| outcome)
    }));
    match task.await {
        Ok(Ok(outcome)) => answer(outcome),
        Ok(Err(e)) => commit_failed(&e).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a stored turn's task failed");
            commit_failed(&StoreError::Other("the turn's task failed".into())).into_response()
        }
    }
}

/// A body that could not be read (too large, broken chunked encoding, stopped arriving) in
/// the OpenAI shape.
pub fn body_rejected(rejection: &BytesRejection) -> HttpError {
    if let Some(timeout) = super::rejections::body_timeout(&rejection.body_text()) {
        return timeout;
    }
    let status = rejection.status();
    let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "The request body is larger than this gateway accepts (server.max_body_bytes).".to_string()
    } else {
        format!("The request body could not be read: {}", rejection.body_text())
    };
    let code = if status == StatusCode::PAYLOAD_TOO_LARGE { "request_too_large" } else { "invalid_body" };
    HttpError { status, error: ApiError::invalid(None, message).with_code(code) }
}

/// The non-streaming answer: the folded Response, or 502 when the upstream failed. The body
/// is encoded into a buffer sized for a typical Response (axum's `Json` starts at 128 bytes
/// and grows by copying).
fn answer(outcome: turn::Outcome) -> Response {
    if let Some(e) = outcome.upstream_error {
        return e.to_http().into_response();
    }
    let mut body = Vec::with_capacity(4096);
    match serde_json::to_writer(&mut body, &outcome.response) {
        Ok(()) => ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "encoding a Response failed");
            HttpError {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                error: ApiError { message: "The response could not be encoded.".into(), kind: "server_error".into(), param: None, code: None },
            }
            .into_response()
        }
    }
}

/// A failed end-of-turn write: 503 when the store is unreachable, else 500; nothing was stored.
fn commit_failed(e: &StoreError) -> HttpError {
    tracing::error!(error = %e, "storing the turn failed");
    let (status, code) = match e {
        StoreError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "store_error"),
    };
    HttpError {
        status,
        error: ApiError {
            message: COMMIT_FAILED.into(),
            kind: "server_error".into(),
            param: None,
            code: Some(code.into()),
        },
    }
}

const COMMIT_FAILED: &str = "The response could not be stored; it was not saved and cannot be continued.";

fn stream(state: Arc<AppState>, mut prepared: Prepared) -> Response {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let plan = prepared.persist.take();
    let persisted = plan.is_some();
    let keepalive = state.keepalive;
    // The first events are queued before the turn runs, so the response head and them
    // leave in one write.
    let mut emitter = Emitter::new(std::mem::take(&mut prepared.base), Some(Sink::new(tx)));
    emitter.start();
    let task = state.turns.clone().spawn(Box::pin(async move {
        if plan.is_some() {
            // Commit first, then send the terminal event (or response.failed).
            emitter.hold_terminal();
        }
        let outcome = Box::pin(turn::run(prepared, &state.upstream, &mut emitter, state.limits)).await;
        if let Some(plan) = plan {
            match Box::pin(persist::commit(plan, &outcome.response, outcome.transcript)).await {
                Ok(()) => emitter.release_terminal(),
                Err(e) => {
                    tracing::error!(error = %e, "storing the streamed turn failed");
                    emitter.fail_terminal("server_error", COMMIT_FAILED);
                }
            }
        }
    }));
    // Nothing to store → a disconnect cancels the turn (and so the upstream request);
    // a stored turn (store:true or a conversation) runs to its end and is committed.
    let cancel = if persisted { None } else { Some(task.abort_handle()) };
    SseBody::new(rx, keepalive, cancel).into_response()
}
