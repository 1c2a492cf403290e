//! `GET /healthz` (liveness) and `GET /readyz` (ready only when the upstream answers).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;

use super::AppState;
use crate::error::GatewayError;

/// Liveness: 200 `{"status":"ok"}` while the process serves.
pub async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// Readiness: 200 when `GET {upstream}/models` answers within 5 s, else 503 with the
/// (redacted) reason. A change of state is logged once: `warn` when the upstream stops
/// answering, `info` when it answers again (probes every few seconds would flood the log).
pub async fn readyz(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let result = state.upstream.models(Duration::from_secs(5)).await;
    let was_ready = state.ready.swap(result.is_ok(), Ordering::Relaxed);
    match result {
        Ok(_) => {
            if !was_ready {
                tracing::info!("readyz: the upstream answers again");
            }
            (StatusCode::OK, Json(json!({"status": "ready"})))
        }
        Err(e) => {
            let reason = e.to_string();
            if was_ready {
                tracing::warn!(%reason, "readyz: not ready, the upstream does not answer GET /models");
            }
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "not_ready", "reason": reason})))
        }
    }
}

/// 404 in the OpenAI shape for unknown routes.
pub async fn not_found() -> GatewayError {
    GatewayError::not_found(None, "Unknown request URL. Please check the URL and method.", "unknown_url")
}

/// 405 in the OpenAI shape for a known route with the wrong method.
pub async fn method_not_allowed() -> GatewayError {
    GatewayError {
        kind: crate::error::ErrorKind::MethodNotAllowed,
        error: protocol::ApiError::invalid(None, "This method is not allowed on this URL.").with_code("method_not_allowed"),
    }
}
