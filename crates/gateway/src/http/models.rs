//! `GET /v1/models`: the `[models]` table, or the upstream's list when there is none.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::AppState;
use crate::error::HttpError;

/// `{"object":"list","data":[{"id","object":"model","created","owned_by"}]}`.
/// Upstream failure → 502 in the OpenAI shape.
pub async fn list(State(state): State<Arc<AppState>>) -> Result<Json<Value>, HttpError> {
    if let Some(map) = &state.models {
        let data: Vec<Value> = map
            .keys()
            .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "responses-gateway"}))
            .collect();
        return Ok(Json(json!({"object": "list", "data": data})));
    }
    state
        .upstream
        .models(Duration::from_secs(10))
        .await
        .map(Json)
        .map_err(|e| HttpError::bad_gateway(e.to_string(), e.code()))
}
