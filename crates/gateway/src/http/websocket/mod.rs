//! WebSocket mode on `/v1/responses` (issue 27; 2026 supplement W1): a `GET` with
//! `Upgrade: websocket` opens a connection that carries `response.create` client events in
//! and each response's JSON events out (the SSE `data:` payloads, in the same order, with
//! `stream_id` on a named lane). A thin adapter over the turn service, as the HTTP handler.
//!
//! At the upgrade: the key check of `[auth]` (401, by the router's layer, before this
//! handler), then `websocket.max_connections_per_key` (429 `rate_limit_exceeded`). A `GET`
//! without the upgrade (or with `websocket.enabled = false`) is the 405 it was before. The
//! largest message is `server.max_body_bytes` (then close code 1009). A message of 64 KiB or
//! more takes room in `[limits] body_memory_bytes` as a request body does, from its arrival
//! until its turn has started; without room it is answered an `error` event (503
//! `server_busy`) and the connection stays usable.

pub mod connection;
pub mod lanes;
pub mod messages;

use std::sync::Arc;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::auth::Tenant;
use super::body_budget::BodyBudget;
use super::AppState;
use crate::admission::KeyId;
use connection::Connection;

/// `GET /v1/responses` with `Upgrade: websocket`.
pub async fn upgrade(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    key: Option<Extension<KeyId>>,
    budget: Option<Extension<Arc<BodyBudget>>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let upgrade = match upgrade {
        Ok(u) if state.websocket.enabled => u,
        _ => return super::health::method_not_allowed().await.into_response(),
    };
    let key = key.map_or(KeyId::ANONYMOUS, |Extension(k)| k);
    let permit = match state.admission.connection(key) {
        Ok(p) => p,
        Err(refused) => return super::limits::too_many(&refused),
    };
    let id = crate::events::ids::new_id("ws");
    tracing::info!(connection_id = %id, "websocket opened");
    let budget = budget.map(|Extension(b)| b);
    let connection = Connection { app: state.clone(), project: tenant.as_str().to_string(), key, permit, id, budget };
    // Each message at most the body limit: a larger one closes the connection (1009).
    upgrade.max_message_size(state.max_body_bytes).max_frame_size(state.max_body_bytes).on_upgrade(move |socket| connection.serve(socket))
}
