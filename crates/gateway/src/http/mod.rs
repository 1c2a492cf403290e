//! HTTP routes (axum): `/v1/responses` (create, retrieve, delete, input items),
//! `/v1/conversations` (and their items), `/v1/files` and `/v1/vector_stores` (the embedded
//! index), `/v1/models[/{model}]`, `/healthz`, `/readyz`, `/metrics` (`[metrics]`),
//! `/openapi.json` (the document of the API, `openapi`); the edge checks (`body_read`,
//! `origin`, `content_type`, `body_budget`), the key
//! check of `[auth]`, the request count and the request's id, span and log line
//! (`request`) wrap them.

pub mod auth;
pub mod body_budget;
pub mod body_read;
pub mod content_type;
pub mod conversations;
pub mod error;
pub mod files;
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

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

use crate::store::Store;
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::RequestBodyTimeoutLayer;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::executors::file_search::VectorStoreBackend;
use crate::executors::local_index::LocalIndex;
use crate::executors::Registry;
use crate::turn::{Limits, Runner};
use crate::upstream::ModelClient;

/// Shared, read-only state of the server.
#[derive(Debug)]
pub struct AppState {
    /// The model server (`[upstream]`), behind its wire API's adapter.
    pub upstream: Arc<dyn ModelClient>,
    /// What turns run with: the same upstream, the loop's bounds (`[tools]`) and the turn
    /// observer (the per-turn log line, and `[metrics]` when enabled).
    pub runner: Runner,
    pub models: Option<BTreeMap<String, String>>,
    pub reject_unknown: bool,
    pub keepalive: Duration,
    pub registry: Arc<Registry>,
    /// Stored responses and conversations (`[store]`).
    pub store: Arc<dyn Store>,
    /// `store.lease_ttl_ms`: lifetime of a conversation lease.
    pub lease_ttl_ms: u64,
    /// The embedded Files + Vector Stores index (`[file_search.embedded]`), `None` when disabled.
    pub local_index: Option<Arc<LocalIndex>>,
    /// `server.playground`: serve the browser playground at `/` and `/playground`.
    pub playground: bool,
    /// Turns running in their own tasks (stored turns): shutdown waits for them.
    pub turns: tokio_util::task::TaskTracker,
    /// Cancelled when the shutdown grace period is over: running turns end `incomplete`.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// The API keys of `[auth]` (empty: the API is open).
    pub keys: Arc<crate::auth::ApiKeys>,
    /// `metrics.require_key`: `/metrics` needs a key too.
    pub metrics_need_key: bool,
    /// `[metrics]`: the recorder (`None` when disabled).
    pub metrics: Option<Arc<crate::telemetry::Metrics>>,
    /// `metrics.listen`: `/metrics` is served there, not on the main listener.
    pub metrics_elsewhere: bool,
    /// What the last `/readyz` found (true until a check fails): its changes are logged.
    pub ready: std::sync::atomic::AtomicBool,
    /// `[limits]`: per-key rate and streams, upstream slots.
    pub admission: Arc<crate::admission::Admission>,
    /// `[limits]`: the size ceilings of a request.
    pub sizes: crate::turn::Sizes,
    /// Background responses: the queue's workers (started with the state) and cancels.
    pub background: Arc<crate::background::Background>,
    /// Cancelled when shutdown starts: background workers stop claiming runs.
    pub stop_claiming: tokio_util::sync::CancellationToken,
    /// `[limits] body_memory_bytes`: the request bodies' shared memory (`None`: off).
    pub body_budget: Option<Arc<body_budget::BodyBudget>>,
}

impl AppState {
    /// Builds the state from a validated config: reads the upstream key from its env var,
    /// opens the store (connects and migrates; an unreachable database is an error here).
    pub async fn from_config(config: &Config) -> anyhow::Result<AppState> {
        let store = crate::store::open(&config.store, &config.data_dir()).await?;
        AppState::with_store(config, store)
    }

    /// As [`AppState::from_config`] with an already opened store (tests, embedding).
    /// With `[metrics] enabled`, the store is timed and the turns observed into the recorder.
    pub fn with_store(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<AppState> {
        let upstream = crate::upstream::connect(config)?;
        let metrics = if config.metrics.enabled { Some(crate::telemetry::Metrics::new()?) } else { None };
        let store: Arc<dyn Store> = match &metrics {
            Some(m) => Arc::new(crate::telemetry::store::TimedStore::new(store, m)),
            None => store,
        };
        let mut runner = Runner::new(upstream.clone(), limits_of(config));
        // Every finished turn is logged; with `[metrics]`, also recorded.
        let log: Arc<dyn crate::turn::observer::TurnObserver> = Arc::new(crate::telemetry::log::TurnLog);
        runner.observer = match &metrics {
            Some(m) => {
                let recorded = Arc::new(crate::telemetry::observer::MetricsObserver::new(m.clone()));
                Arc::new(crate::turn::observer::Fanout(vec![log, recorded]))
            }
            None => log,
        };
        let local_index = open_local_index(config)?;
        let keys = Arc::new(crate::auth::ApiKeys::load(&config.auth)?);
        let registry = Arc::new(Registry::from_config(config, local_index.clone().map(|i| i as Arc<dyn VectorStoreBackend>)));
        let sizes = crate::turn::Sizes {
            max_input_items: config.limits.max_input_items,
            max_tools: config.limits.max_tools,
            max_output_tokens: config.limits.max_output_tokens,
        };
        let (turns, shutdown, stop_claiming) = (TaskTracker::new(), CancellationToken::new(), CancellationToken::new());
        let admission = Arc::new(crate::admission::Admission::new(&config.limits));
        let background = crate::background::Background::new(
            crate::background::Deps {
                store: store.clone(),
                runner: runner.clone(),
                models: config.models.clone(),
                reject_unknown: config.server.reject_unknown_parameters,
                registry: registry.clone(),
                lease_ttl_ms: config.store.lease_ttl_ms,
                sizes,
                shutdown: shutdown.clone(),
                admission: admission.clone(),
            },
            config.background.clone(),
        );
        background.start(&turns, stop_claiming.clone());
        Ok(AppState {
            keys,
            metrics_need_key: config.metrics.require_key,
            metrics,
            metrics_elsewhere: config.metrics.listen.is_some(),
            upstream: upstream.clone(),
            models: config.models.clone(),
            reject_unknown: config.server.reject_unknown_parameters,
            keepalive: Duration::from_millis(config.server.keepalive_interval_ms),
            runner,
            registry,
            store,
            lease_ttl_ms: config.store.lease_ttl_ms,
            local_index,
            playground: config.server.playground,
            turns,
            shutdown,
            ready: std::sync::atomic::AtomicBool::new(true),
            admission,
            sizes,
            background,
            stop_claiming,
            body_budget: body_budget::BodyBudget::from_config(&config.limits),
        })
    }
}

impl AppState {
    /// The key check, when keys are configured.
    pub fn guard(&self) -> Option<Arc<auth::Guard>> {
        (!self.keys.is_empty()).then(|| Arc::new(auth::Guard { keys: self.keys.clone(), metrics_need_key: self.metrics_need_key }))
    }
}

/// The loop's bounds of `[tools]`.
fn limits_of(config: &Config) -> Limits {
    Limits {
        max_rounds: config.tools.max_rounds,
        max_parallel: config.tools.max_parallel,
        call_timeout: Duration::from_millis(config.tools.call_timeout_ms),
    }
}

/// Opens the embedded index of `[file_search.embedded]` (`None` when disabled) with its
/// embedder, and starts re-ingesting what a previous process left in progress. Warns when
/// the store is PostgreSQL (several replicas) while the vector store is embedded (local to one
/// process). Needs a tokio runtime.
fn open_local_index(config: &Config) -> anyhow::Result<Option<Arc<LocalIndex>>> {
    let embedded = &config.file_search.embedded;
    if !embedded.enabled {
        return Ok(None);
    }
    if config.store.backend == crate::store::BackendKind::Postgres {
        tracing::warn!(
            "[store] backend = \"postgres\" serves several replicas, but [file_search.embedded] is enabled: \
             the embedded vector store is local to this process; use a remote vector store for replicas"
        );
    }
    let embedder = crate::executors::embeddings::from_config(&embedded.embeddings)?;
    let index = LocalIndex::open(embedded, &config.data_dir(), embedder);
    index.start();
    Ok(Some(index))
}

/// The router with every route: request bodies at most `server.max_body_bytes` (413), each
/// piece of a body within `server.request_read_timeout_ms` of the last and the whole body
/// within `server.request_body_timeout_ms` (408), large bodies within `[limits]
/// body_memory_bytes` (503); a body left unread by an answer is drained or its connection
/// closed (`body_read`); `Host` and `Origin` checked (403, `origin`), CORS preflights of
/// `server.cors_origins` answered, `/v1/*` POST bodies of the right media type (415,
/// `content_type`); with keys in `[auth]`, `/v1/*` needs one (401, checked before the
/// body is read).
pub fn router(state: Arc<AppState>, server: &crate::config::ServerConfig) -> Router {
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
        .route("/v1/responses", post(responses::create))
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
        .route("/v1/models", get(models::list))
        // A model id may hold slashes (`Qwen/Qwen3-8B`): the rest of the path is the id.
        .route("/v1/models/{*model}", get(models::retrieve))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/openapi.json", get(openapi::document))
        .route("/", get(playground::index))
        .route("/playground", get(playground::index))
        .route("/playground/", get(playground::index))
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
    let app = match state.body_budget.clone() {
        Some(budget) => app.layer(body_budget::BodyBudgetLayer(budget)),
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
    // each before the key check, and the origin before anything runs.
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
