//! `POST /v1/responses` (contract §1, §7, §8): parses the body, prepares the turn and hands
//! it to the run driver (`turn::driver`); non-streaming answers the folded Response,
//! `stream: true` answers SSE from the same events (`events::sse_sink`).

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
use crate::events::sse_sink::SseSink;
use super::AppState;
use crate::admission::{KeyId, StreamPermit, UpstreamPermit};
use crate::error::{ErrorKind, GatewayError};
use crate::store::StoreError;
use crate::turn::driver::{self, COMMIT_FAILED};
use crate::turn::{self, Prepared};

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
    // `[limits]`: a stream slot of the key (a background stream holds it while it is
    // followed), then, for a foreground turn, an upstream slot (waiting in its bounded
    // queue; a background run's worker takes one when it runs); both are held until the
    // turn ends, and a refusal happens before anything is stored or sent upstream.
    let key = key.map_or(KeyId::ANONYMOUS, |Extension(k)| k);
    let stream_permit = match req.stream.unwrap_or(false).then(|| state.admission.stream(key)) {
        Some(Err(refused)) => return super::limits::too_many(&refused),
        Some(Ok(p)) => p,
        None => None,
    };
    let upstream_permit = if req.background == Some(true) {
        UpstreamPermit::none()
    } else {
        match state.admission.upstream().await {
            Ok(p) => p,
            Err(refused) => return super::limits::too_many(&refused),
        }
    };
    let permits = (stream_permit, upstream_permit);
    let ctx = turn::Context {
        models: state.models.as_ref(),
        reject_unknown: state.reject_unknown,
        registry: &state.registry,
        caps: state.upstream.caps(),
        store: &state.store,
        project: tenant.as_str(),
        lease_ttl_ms: state.lease_ttl_ms,
        sizes: state.sizes,
        ping_store: true,
            worker: false,
    };
    // The turn's futures are boxed (prepare's state is ~8 KB, the run's ~6 KB): the
    // handler's own future stays small, and axum and tower move it several times.
    let mut prepared = match Box::pin(turn::prepare(req, &body, &ctx)).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if prepared.base.background {
        // Queued and answered at once; a worker runs it (`crate::background`). Streamed, the
        // answer follows the run's event log, as a resume would: a client that leaves does
        // not stop the run.
        let (stream_permit, _) = permits;
        let stream = prepared.stream;
        let queued = match state.background.submit(tenant.as_str(), &body, prepared, stream).await {
            Ok(queued) => queued,
            Err(e) => return e.into_response(),
        };
        if !stream {
            return axum::Json(queued).into_response();
        }
        let rx = state.background.follow_new(tenant.as_str(), &queued.id, stream_permit);
        return SseBody::new(rx, state.keepalive, None).into_response();
    }
    // What the turn needs of the body is in `prepared`: it is not held while the turn runs.
    drop(body);
    prepared.cancel = state.shutdown.child_token();
    if prepared.stream {
        return stream(state, prepared, permits);
    }
    // A foreground turn stops when its client leaves (issue 28): its token is cancelled.
    let cancel = prepared.cancel.clone();
    let turn = driver::start(prepared, None);
    if !turn.is_stored() {
        let outcome = Box::pin(turn.run(&state.runner)).await;
        drop(permits);
        return match outcome {
            Ok(outcome) => answer(outcome),
            Err(e) => commit_failed(&e).into_response(),
        };
    }
    // A stored turn runs in its own task, so that it is stored whatever happens; a client
    // that goes away stops it (it ends `incomplete`). Boxed before spawning: the task moves
    // a pointer, not the turn's state. (The turn's span, made by `driver::start`, is the
    // request span's child.)
    let gone = cancel.drop_guard();
    let task = state.turns.clone().spawn(Box::pin(async move {
        let outcome = turn.run(&state.runner).await;
        drop(permits);
        outcome
    }));
    let joined = task.await;
    gone.disarm();
    match joined {
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

/// The streamed answer: the turn runs in its own task, its events go to the SSE body as
/// they are produced; the body dropped before the turn's end (client gone) stops the turn.
fn stream(state: Arc<AppState>, prepared: Prepared, permits: (Option<StreamPermit>, UpstreamPermit)) -> Response {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let keepalive = state.keepalive;
    // A disconnect cancels the turn (its upstream request and gateway calls stop); a stored
    // one is then committed `incomplete` with its output so far.
    let cancel = prepared.cancel.clone();
    // The first events are queued before the turn runs, so the response head and them
    // leave in one write.
    let turn = driver::start(prepared, Some(Box::new(SseSink::new(tx))));
    state.turns.clone().spawn(Box::pin(async move {
        // A failed commit has ended the stream with `response.failed` (and was logged).
        let _ = turn.run(&state.runner).await;
        drop(permits);
    }));
    SseBody::new(rx, keepalive, Some(cancel)).into_response()
}
