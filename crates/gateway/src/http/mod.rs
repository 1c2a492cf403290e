//! HTTP routes (axum): `/v1/responses` (create, retrieve, delete, input items),
//! `/v1/conversations` (and their items), `/v1/models`, `/healthz`, `/readyz`.

pub mod conversations;
pub mod health;
pub mod list;
pub mod models;
pub mod responses;
pub mod sse;
pub mod stored;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

use crate::store::Store;
use axum::Router;

use crate::config::Config;
use crate::executors::Registry;
use crate::turn::Limits;
use crate::upstream::ChatCompletions;

/// Shared, read-only state of the server.
#[derive(Debug)]
pub struct AppState {
    pub upstream: ChatCompletions,
    pub models: Option<BTreeMap<String, String>>,
    pub reject_unknown: bool,
    pub keepalive: Duration,
    pub limits: Limits,
    pub registry: Arc<Registry>,
    /// Stored responses and conversations (`[store]`).
    pub store: Arc<dyn Store>,
    /// `store.lease_ttl_ms`: lifetime of a conversation lease.
    pub lease_ttl_ms: u64,
}

impl AppState {
    /// Builds the state from a validated config: reads the upstream key from its env var,
    /// opens the store (connects and migrates; an unreachable database is an error here).
    pub async fn from_config(config: &Config) -> anyhow::Result<AppState> {
        let store = crate::store::open(&config.store, &config.data_dir()).await?;
        AppState::with_store(config, store)
    }

    /// As [`AppState::from_config`] with an already opened store (tests, embedding).
    pub fn with_store(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<AppState> {
        let url = config.upstream.url.clone().ok_or_else(|| anyhow::anyhow!("upstream.url is not set"))?;
        let upstream = ChatCompletions::new(
            &url,
            config.upstream_api_key()?,
            Duration::from_millis(config.upstream.idle_timeout_ms),
            Duration::from_millis(config.upstream.connect_timeout_ms),
            Duration::from_millis(config.upstream.pool_idle_timeout_ms),
        )?;
        Ok(AppState {
            upstream,
            models: config.models.clone(),
            reject_unknown: config.server.reject_unknown_parameters,
            keepalive: Duration::from_millis(config.server.keepalive_interval_ms),
            limits: Limits {
                max_rounds: config.tools.max_rounds,
                max_parallel: config.tools.max_parallel,
                call_timeout: Duration::from_millis(config.tools.call_timeout_ms),
            },
            registry: Arc::new(Registry::from_config(config)),
            store,
            lease_ttl_ms: config.store.lease_ttl_ms,
        })
    }
}

/// The router with every route.
pub fn router(state: Arc<AppState>, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/v1/responses", post(responses::create))
        .route("/v1/responses/{id}", get(stored::get).delete(stored::delete))
        .route("/v1/responses/{id}/input_items", get(stored::input_items))
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
        .route("/v1/models", get(models::list))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .fallback(health::not_found)
        .method_not_allowed_fallback(health::method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .with_state(state)
}
