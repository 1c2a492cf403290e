//! `GET /v1/models` and `GET /v1/models/{model}`: the `[models]` table, or the upstream's
//! list when there is none.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};

use super::AppState;
use crate::error::GatewayError;

/// `{"object":"list","data":[{"id","object":"model","created","owned_by"}]}`.
/// Upstream failure → 502 in the OpenAI shape.
pub async fn list(State(state): State<Arc<AppState>>) -> Result<Json<Value>, GatewayError> {
    models(&state).await.map(Json)
}

/// One model of [`list`] (`client.models.retrieve`): `{"id","object":"model",…}`; a model
/// the list does not have → 404 `model_not_found` (param `model`); upstream failure → 502.
pub async fn retrieve(State(state): State<Arc<AppState>>, Path(model): Path<String>) -> Result<Json<Value>, GatewayError> {
    let list = models(&state).await?;
    list.get("data")
        .and_then(Value::as_array)
        .and_then(|data| data.iter().find(|m| m.get("id").and_then(Value::as_str) == Some(model.as_str())))
        .map(|m| Json(m.clone()))
        .ok_or_else(|| {
            GatewayError::not_found(
                Some("model"),
                format!("The model '{model}' does not exist or you do not have access to it."),
                "model_not_found",
            )
        })
}

async fn models(state: &AppState) -> Result<Value, GatewayError> {
    if let Some(map) = &state.models {
        let data: Vec<Value> = map
            .keys()
            .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "responses-gateway"}))
            .collect();
        return Ok(json!({"object": "list", "data": data}));
    }
    state
        .upstream
        .models(Duration::from_secs(10))
        .await
        .map_err(|e| {
            // Messages never hold the URL's credentials or the key (`UpstreamError`).
            // Debug-quoted: an upstream message with line breaks cannot forge log lines.
            tracing::warn!(code = e.code(), error = ?e.to_string(), "listing the upstream's models failed");
            e.to_error()
        })
}
