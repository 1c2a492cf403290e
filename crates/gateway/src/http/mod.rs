//! HTTP routes (axum): `/v1/responses`, `/v1/models`, `/healthz`, `/readyz`.

pub mod health;
pub mod models;
pub mod responses;
pub mod sse;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
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
    pub registry: Registry,
}

impl AppState {
    /// Builds the state from a validated config (reads the upstream key from its env var).
    pub fn from_config(config: &Config) -> anyhow::Result<AppState> {
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
            registry: Registry::from_config(config),
        })
    }
}

/// The router with every route.
pub fn router(state: Arc<AppState>, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/v1/responses", post(responses::create))
        .route("/v1/models", get(models::list))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .fallback(health::not_found)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .with_state(state)
}
