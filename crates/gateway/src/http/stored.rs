//! Stored responses (contract §10): `GET /v1/responses/{id}` (the stored Response),
//! `DELETE /v1/responses/{id}` (`{id, object:"response", deleted:true}`) and
//! `GET /v1/responses/{id}/input_items` (a §10 list). Unknown ids → 404 in the OpenAI shape.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::list;
use super::AppState;
use crate::error::HttpError;

fn not_found(id: &str) -> HttpError {
    HttpError::not_found(None, format!("No response found with id '{id}'."), "response_not_found")
}

/// `GET /v1/responses/{id}`: the stored Response, whole (query `include[]` is accepted).
/// `stream=true` (a replay of the events) → 400 `unsupported_parameter`, param `stream`:
/// without it, a client asking for a stream would read an empty one.
pub async fn get(State(state): State<Arc<AppState>>, Path(id): Path<String>, RawQuery(query): RawQuery) -> Response {
    let wants_stream = url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
        .any(|(k, v)| k == "stream" && v.eq_ignore_ascii_case("true"));
    if wants_stream {
        return HttpError::bad_request(
            Some("stream".to_string()),
            "Replaying a stored response as a stream is not supported by this gateway; retrieve it without 'stream'.",
        )
        .with_code("unsupported_parameter")
        .into_response();
    }
    match state.store.response(&id).await {
        Ok(Some(r)) => Json(r).into_response(),
        Ok(None) => not_found(&id).into_response(),
        Err(e) => HttpError::from(e).into_response(),
    }
}

/// `DELETE /v1/responses/{id}`: the response can no longer be retrieved or continued.
pub async fn delete(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Response {
    match state.store.delete_response(&id).await {
        Ok(true) => Json(json!({"id": id, "object": "response", "deleted": true})).into_response(),
        Ok(false) => not_found(&id).into_response(),
        Err(e) => HttpError::from(e).into_response(),
    }
}

/// `GET /v1/responses/{id}/input_items`: this request's input items, with ids.
pub async fn input_items(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let q = match list::parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    match state.store.input_items(&id, &q).await {
        Ok(Some(page)) => Json(list::render(page)).into_response(),
        Ok(None) => not_found(&id).into_response(),
        Err(e) => HttpError::from(e).into_response(),
    }
}
