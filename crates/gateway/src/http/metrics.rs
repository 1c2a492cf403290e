//! `GET /metrics` (Prometheus text format) and the layer that counts answered requests by
//! route template and status (`gateway_http_requests_total`).

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::telemetry::Metrics;

/// Counts the request once its answer's head is ready.
pub async fn count(State(metrics): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string());
    let resp = next.run(req).await;
    metrics.request(route.as_deref().unwrap_or("unmatched"), resp.status().as_u16());
    resp
}

/// `GET /metrics`.
pub async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], metrics.render()).into_response()
}

/// The router of a separate metrics listener (`metrics.listen`): `/metrics` only, behind the
/// key check when `guard` is given.
pub fn router(metrics: Arc<Metrics>, guard: Option<Arc<super::auth::Guard>>) -> Router {
    let app = Router::new().route("/metrics", get(scrape)).with_state(metrics).fallback(super::health::not_found);
    match guard {
        Some(g) => app.layer(axum::middleware::from_fn_with_state(g, super::auth::require_key)),
        None => app,
    }
}
