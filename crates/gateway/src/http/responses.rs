//! `POST /v1/responses` (contract §1, §7, §8): non-streaming answers the folded Response;
//! `stream: true` answers SSE from the same emitter.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::sse::SseBody;
use super::AppState;
use crate::error::HttpError;
use crate::events::emitter::{Emitter, Sink};
use crate::turn::{self, Prepared};

/// Handles one create request.
pub async fn create(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let prepared = match turn::parse_request(&body)
        .map_err(HttpError::from)
        .and_then(|req| turn::prepare(req, state.models.as_ref(), state.reject_unknown, &state.registry))
    {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if prepared.stream {
        stream(state, prepared)
    } else {
        let mut emitter = Emitter::new(prepared.base.clone(), None);
        let outcome = turn::run(prepared, &state.upstream, &mut emitter, state.limits).await;
        match outcome.upstream_error {
            Some(e) => HttpError::bad_gateway(e.to_string(), e.code()).into_response(),
            None => Json(outcome.response).into_response(),
        }
    }
}

fn stream(state: Arc<AppState>, prepared: Prepared) -> Response {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let store = prepared.store;
    let keepalive = state.keepalive;
    let task = tokio::spawn(async move {
        let mut emitter = Emitter::new(prepared.base.clone(), Some(Sink::new(tx)));
        turn::run(prepared, &state.upstream, &mut emitter, state.limits).await
    });
    // store:false → a disconnect cancels the turn (and so the upstream request);
    // store:true → the turn runs to its end.
    let cancel = if store { None } else { Some(task.abort_handle()) };
    SseBody::new(rx, keepalive, cancel).into_response()
}
