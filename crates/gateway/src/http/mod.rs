//! HTTP routes (axum): `/v1/responses` (create, retrieve, delete, input items),
//! WebSocket mode on `/v1/responses` (`websocket`), `/v1/conversations` (and their items),
//! `/v1/files` and `/v1/vector_stores` (the embedded index), `/v1/models[/{model}]`,
//! `/v1/gateway/tools` (the tools this deployment can execute), `/healthz`, `/readyz`,
//! `/metrics` (`[metrics]`), `/openapi.json` (the document of the API, `openapi`), the
//! playground; the edge checks (`body_read`, `origin`, `content_type`, `body_budget`), the key
//! check of `[auth]`, the request count and the request's id, span and log line
//! (`request`) wrap them.

pub mod auth;
pub mod body_budget;
pub mod body_read;
pub mod content_type;
pub mod conversations;
pub mod error;
pub mod files;
pub mod gateway_tools;
pub mod health;
pub mod json_body;
pub mod limits;
pub mod list;
pub mod metrics;
pub mod models;
pub mod openapi;
pub mod origin;
pub mod playground;
pub mod rejections;
pub mod request;
pub mod responses;
pub mod serve;
pub mod sse;
pub mod stored;
#[cfg(feature = "otel")]
pub mod trace_context;
pub mod vector_stores;
pub mod websocket;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;

/// The HTTP side's state: the composed app (`crate::service`).
pub use crate::service::App as AppState;

impl AppState {
    /// The key check, when keys are configured.
    pub fn guard(&self) -> Option<Arc<auth::Guard>> {
        (!self.keys.is_empty()).then(|| Arc::new(auth::Guard { keys: self.keys.clone(), metrics_need_key: self.metrics_need_key }))
    }
}

/// The router with every route: request bodies at most `server.max_body_bytes` (413), each
/// piece of a body within `server.request_read_timeout_ms` of the last and the whole body
/// within `server.request_body_timeout_ms` (408), large bodies within `[limits]
/// body_memory_bytes` (503); a body left unread by an answer is drained or its connection
/// closed (`body_read`); `Host` and `Origin` checked (403, `origin`), CORS preflights of
/// `server.cors_origins` answered, `/v1/*` POST bodies of the right media type (415,
/// `content_type`); with keys in `[auth]`, `/v1/*` needs one (401, checked before the
/// body is read). Starts the app's background workers.
pub fn router(state: Arc<AppState>, server: &crate::config::ServerConfig) -> Router {
    // The app's background workers run while it is served.
    state.start();
    let guard = state.guard();
    let max_body_bytes = server.max_body_bytes;
    // Uploads may be as large as `max_upload_bytes` plus the multipart framing; the handler
    // answers 413 past the limit itself.
    let upload_limit = state.local_index.as_ref().map_or(max_body_bytes, |i| i.max_upload_bytes().saturating_add(1 << 20));
    // A body whose Content-Length is over the limit is refused (413) before any of it is
    // read, instead of waiting for bytes that may never come.
    let uploads = Router::new()
        .route("/v1/files", post(files::upload).get(files::list).layer(DefaultBodyLimit::max(upload_limit)))
        .layer(RequestBodyLimitLayer::new(upload_limit));
    let app = Router::new()
        // POST creates; a GET with `Upgrade: websocket` opens WebSocket mode.
        .route("/v1/responses", post(responses::create).get(websocket::upgrade))
        .route("/v1/responses/compact", post(responses::compact))
        .route("/v1/responses/{id}", get(stored::get).delete(stored::delete))
        .route("/v1/responses/{id}/input_items", get(stored::input_items))
        .route("/v1/responses/{id}/cancel", post(stored::cancel))
        .route("/v1/conversations", post(conversations::create))
        .route(
            "/v1/conversations/{id}",
            get(conversations::get).post(conversations::update).delete(conversations::delete),
        )
        .route("/v1/conversations/{id}/items", get(conversations::list_items).post(conversations::add_items))
        .route(
            "/v1/conversations/{id}/items/{item_id}",
            get(conversations::get_item).delete(conversations::delete_item),
        )
        .route("/v1/files/{id}", get(files::get).delete(files::delete))
        .route("/v1/files/{id}/content", get(files::content))
        .route("/v1/vector_stores", post(vector_stores::create).get(vector_stores::list))
        .route("/v1/vector_stores/{id}", get(vector_stores::get).post(vector_stores::update).delete(vector_stores::delete))
        .route("/v1/vector_stores/{id}/files", post(vector_stores::attach).get(vector_stores::list_files))
        .route(
            "/v1/vector_stores/{id}/files/{file_id}",
            get(vector_stores::get_file).post(vector_stores::update_file).delete(vector_stores::delete_file),
        )
        .route("/v1/vector_stores/{id}/files/{file_id}/content", get(vector_stores::file_content))
        .route("/v1/vector_stores/{id}/search", post(vector_stores::search))
        .route("/v1/gateway/tools", get(gateway_tools::list))
        .route("/v1/models", get(models::list))
        // A model id may hold slashes (`Qwen/Qwen3-8B`): the rest of the path is the id.
        .route("/v1/models/{*model}", get(models::retrieve))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/openapi.json", get(openapi::document))
        .route("/", get(playground::index))
        .route("/favicon.ico", get(playground::favicon))
        .route("/playground", get(playground::index))
        .route("/playground/", get(playground::index_slash))
        .route("/playground/{file}", get(playground::file))
        .route("/playground/vendor/{file}", get(playground::vendor_file))
        .layer(RequestBodyLimitLayer::new(max_body_bytes))
        .merge(uploads)
        .fallback(health::not_found)
        .method_not_allowed_fallback(health::method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(RequestBodyTimeoutLayer::new(Duration::from_millis(server.request_read_timeout_ms)));
    // `/metrics` on this listener (before the key check, which guards it when asked).
    let app = match &state.metrics {
        Some(m) if !state.metrics_elsewhere => app.route("/metrics", get(metrics::scrape).with_state(m.clone())),
        _ => app,
    };
    // Large bodies wait for room in the memory budget once they may be read (keys, rate).
    // WebSocket messages take from the same budget (`websocket::upgrade` finds it here).
    let app = match body_budget::BodyBudget::from_config(&state.limits) {
        Some(budget) => app.layer(body_budget::BodyBudgetLayer(budget.clone())).layer(axum::Extension(budget)),
        None => app,
    };
    // The per-key rate, inside the key check (it counts by the key the check found).
    let app = if state.admission.is_off() {
        app
    } else {
        app.layer(axum::middleware::from_fn_with_state(state.admission.clone(), limits::rate))
    };
    let app = match guard {
        Some(guard) => app.layer(axum::middleware::from_fn_with_state(guard, auth::require_key)),
        None => app,
    };
    // The body's media type, then CORS preflights, then the page's origin and the host name:
    // each before the key check, and the origin before anything runs (a WebSocket upgrade
    // from another site's page too).
    let app = app.layer(axum::middleware::from_fn(content_type::check));
    let app = match origin::cors(server) {
        Some(cors) => app.layer(cors),
        None => app,
    };
    let app = app.layer(axum::middleware::from_fn_with_state(origin::SitePolicy::new(server), origin::check));
    // Every request counted by route and status (outside the key check: refused ones too).
    let app = match state.metrics.clone() {
        Some(m) => app.layer(metrics::CountLayer(m)),
        None => app,
    };
    // Outermost: the request's id, span and log line (`request`); inside it, the whole body's
    // deadline and bodies left unread by an answer (`body_read`: around every other answer).
    let body_deadline = Duration::from_millis(server.request_body_timeout_ms);
    app.layer(axum::middleware::map_response(rejections::openai_shaped))
        .layer(body_read::BodyReadLayer { deadline: body_deadline })
        .layer(request::RequestLayer)
        .with_state(state)
}
