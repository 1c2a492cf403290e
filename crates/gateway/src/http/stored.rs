//! Stored responses (contract §10): `GET /v1/responses/{id}` (the stored Response),
//! `DELETE /v1/responses/{id}` (`{id, object:"response", deleted:true}`) and
//! `GET /v1/responses/{id}/input_items` (a §10 list). Unknown ids → 404 in the OpenAI shape.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::auth::Tenant;
use super::list;
use super::AppState;
use crate::error::GatewayError;
use crate::events;
use crate::store::StoreError;

fn not_found(id: &str) -> GatewayError {
    GatewayError::not_found(None, format!("No response found with id '{id}'."), "response_not_found")
}

/// `GET /v1/responses/{id}`: the stored Response, whole (query `include[]` takes the values
/// `POST /v1/responses` takes, else 400 `include[i]`; `stream` is `true` or `false`, else 400), or
/// a background response's current state (queued, in progress, cancelled, failed).
/// `stream=true`: a background response's events from its durable log (all, or those after
/// `starting_after`), then its live ones until the terminal event: the bytes its first stream
/// sent (`crate::background`). A foreground stored response has no log: it is replayed as
/// an event stream numbered anew (`events::replay`), and `starting_after` is a 400.
pub async fn get(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    key: Option<axum::Extension<crate::admission::KeyId>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let mut stream = false;
    let mut after = None;
    let mut includes = 0;
    for (k, v) in url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "stream" if v.eq_ignore_ascii_case("true") => stream = true,
            "stream" if v.eq_ignore_ascii_case("false") => stream = false,
            "stream" => {
                return GatewayError::bad_request(
                    Some("stream".to_string()),
                    format!("Invalid 'stream': expected a boolean (true or false), got '{v}'."),
                )
                .with_code("invalid_value")
                .into_response()
            }
            // Checked as `POST /v1/responses` checks its `include` (`turn::validate`).
            "include" | "include[]" => {
                if let Err(e) = crate::turn::validate::check_include(includes, &v) {
                    return e.into_response();
                }
                includes += 1;
            }
            "starting_after" => match v.parse::<u64>() {
                Ok(n) => after = Some(n),
                Err(_) => {
                    return GatewayError::bad_request(
                        Some("starting_after".to_string()),
                        format!("Invalid 'starting_after': expected a sequence number (a non-negative integer), got '{v}'."),
                    )
                    .with_code("invalid_value")
                    .into_response()
                }
            },
            _ => {}
        }
    }
    if stream {
        // A follower is a stream of the key (`limits.concurrent_streams`).
        let key = key.map_or(crate::admission::KeyId::ANONYMOUS, |axum::Extension(k)| k);
        let permit = match state.admission.stream(key) {
            Ok(p) => p,
            Err(refused) => return super::limits::too_many(&refused),
        };
        return match state.background.follow(tenant.as_str(), &id, after, permit).await {
            Ok(Some(rx)) => super::sse::SseBody::from_events(rx, state.keepalive).into_response(),
            Ok(None) => match state.store.response(tenant.as_str(), &id).await {
                Ok(Some(r)) => replay(&id, r),
                Ok(None) => not_found(&id).into_response(),
                Err(e) => GatewayError::from(e).into_response(),
            },
            Err(e) => e.into_response(),
        };
    }
    match state.store.response(tenant.as_str(), &id).await {
        Ok(Some(r)) => Json(r).into_response(),
        // A background response not stored yet: queued, in progress (with its output so
        // far), or ended early.
        Ok(None) => match state.background.current(tenant.as_str(), &id).await {
            Ok(Some(r)) => Json(r).into_response(),
            // Its run may have been stored (and left the queue) between the two reads.
            Ok(None) => match state.store.response(tenant.as_str(), &id).await {
                Ok(Some(r)) => Json(r).into_response(),
                Ok(None) => not_found(&id).into_response(),
                Err(e) => GatewayError::from(e).into_response(),
            },
            Err(e) => e.into_response(),
        },
        Err(e) => GatewayError::from(e).into_response(),
    }
}

/// `POST /v1/responses/{id}/cancel` (contract §10): a background response ends
/// `cancelled` and is answered (a queued one at once; a running one once its worker has
/// stored it). Cancelling it again, or one that already finished, answers it unchanged; a
/// response created without `background: true` is a 400; an unknown id a 404.
pub async fn cancel(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let r = async {
        if let Some(r) = state.background.cancel(tenant.as_str(), &id).await? {
            return Ok(r);
        }
        match state.store.response(tenant.as_str(), &id).await? {
            Some(r) if r.get("background").and_then(serde_json::Value::as_bool) == Some(true) => Ok(r),
            Some(_) => Err(GatewayError::bad_request(
                None,
                "Responses can only be cancelled if they were created with background=true.",
            )
            .with_code("invalid_request")),
            None => match state.store.run_response(tenant.as_str(), &id).await? {
                // Failed before it started, or its process died.
                Some(r) => Ok(r),
                None => Err(not_found(&id)),
            },
        }
    }
    .await;
    match r {
        Ok(r) => Json(r).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The stored Response's events as one SSE body (the response is finished: nothing to wait for).
fn replay(id: &str, stored: serde_json::Value) -> Response {
    let Ok(stored) = serde_json::from_value::<protocol::Response>(stored) else {
        tracing::error!(id, "a stored response does not parse as a Response");
        return GatewayError::from(StoreError::Corrupt { what: "response", id: id.to_string() }).into_response();
    };
    let mut body = Vec::new();
    for (seq, kind) in (0u64..).zip(events::replay::events(&stored)) {
        if let Some(frame) = crate::events::wire_sink::frame(&kind, seq) {
            body.extend_from_slice(&frame);
        }
    }
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

/// `DELETE /v1/responses/{id}`: the response can no longer be retrieved or continued.
/// A background response not stored yet is deleted when its run ended (cancelled while
/// queued, failed); while it is queued or in progress it is a 400 (cancel it first).
pub async fn delete(State(state): State<Arc<AppState>>, tenant: Tenant, Path(id): Path<String>) -> Response {
    let deleted = async {
        if state.store.delete_response(tenant.as_str(), &id).await? {
            return Ok(true);
        }
        match state.store.delete_run(tenant.as_str(), &id).await? {
            Some(true) => Ok(true),
            Some(false) => Err(GatewayError::bad_request(
                None,
                format!("Response '{id}' is a background response still queued or in progress: cancel it before deleting it."),
            )
            .with_code("response_in_progress")),
            None => Ok(false),
        }
    }
    .await;
    match deleted {
        Ok(true) => Json(json!({"id": id, "object": "response", "deleted": true})).into_response(),
        Ok(false) => not_found(&id).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/responses/{id}/input_items`: this request's input items, with ids.
pub async fn input_items(
    State(state): State<Arc<AppState>>,
    tenant: Tenant,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let q = match list::parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    match state.store.input_items(tenant.as_str(), &id, &q).await {
        Ok(Some(page)) => Json(list::render(page)).into_response(),
        // A background response not stored yet: the input items of its request.
        Ok(None) => match state.store.run_request(tenant.as_str(), &id).await {
            Ok(Some(body)) => {
                let items = crate::store::items::input_resources(body.as_bytes());
                match crate::store::sql::paginate(items, &q) {
                    Ok(page) => Json(list::render(page)).into_response(),
                    Err(e) => GatewayError::from(e).into_response(),
                }
            }
            Ok(None) => not_found(&id).into_response(),
            Err(e) => GatewayError::from(e).into_response(),
        },
        Err(e) => GatewayError::from(e).into_response(),
    }
}
