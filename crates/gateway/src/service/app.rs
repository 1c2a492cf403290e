//! The composition root (issue 27): [`App`], everything a request is served with, built once
//! from the configuration: the upstream's client, the store, the executors, the turn runner
//! and its observers, the keys, the limits, the background queue. Transports (HTTP, the
//! WebSocket, the background worker) reach turns only through the service's
//! [`App::create`](super::App::create) and [`PrepareRun`](crate::background::PrepareRun).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::executors::file_search::VectorStoreBackend;
use crate::executors::local_index::LocalIndex;
use crate::executors::Registry;
use crate::store::Store;
use crate::turn::{Limits, Runner};
use crate::upstream::ModelClient;

/// Shared, read-only state of the server.
#[derive(Debug)]
pub struct App {
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
    /// `[limits]` as configured (the HTTP side's body memory budget is made from it).
    pub limits: crate::config::limits::LimitsConfig,
    /// `server.max_body_bytes`: also the largest WebSocket message.
    pub max_body_bytes: usize,
    /// `[websocket]`: the WebSocket mode's bounds.
    pub websocket: crate::config::websocket::WebSocketConfig,
    /// `[seal]`: seals and opens the gateway's own `encrypted_content` (reasoning items).
    pub sealer: Arc<crate::seal::Sealer>,
    /// Set once the background workers run ([`App::start`]).
    started: AtomicBool,
}

impl App {
    /// Builds the state from a validated config: reads the upstream key from its env var,
    /// opens the store (connects and migrates; an unreachable database is an error here).
    pub async fn from_config(config: &Config) -> anyhow::Result<App> {
        let store = crate::store::open(&config.store, &config.data_dir()).await?;
        App::with_store(config, store)
    }

    /// As [`App::from_config`] with an already opened store (tests, embedding).
    /// With `[metrics] enabled`, the store is timed and the turns observed into the recorder.
    /// The seal key is read (or generated in the data dir) here: errors name its setting.
    pub fn with_store(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<App> {
        let upstream = crate::upstream::connect(config)?;
        let sealer = Arc::new(crate::seal::Sealer::load(&config.seal, &config.data_dir())?);
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
        let sizes = crate::turn::Sizes::of(&config.limits);
        let (turns, shutdown, stop_claiming) = (TaskTracker::new(), CancellationToken::new(), CancellationToken::new());
        let admission = Arc::new(crate::admission::Admission::new(&config.limits).with_connections(config.websocket.max_connections_per_key));
        let background = crate::background::Background::new(
            crate::background::Deps { store: store.clone(), runner: runner.clone(), shutdown: shutdown.clone(), admission: admission.clone() },
            config.background.clone(),
        );
        Ok(App {
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
            max_body_bytes: config.server.max_body_bytes,
            limits: config.limits.clone(),
            websocket: config.websocket.clone(),
            sealer,
            started: AtomicBool::new(false),
        })
    }
}

impl App {
    /// Starts the background workers (once; later calls do nothing): they prepare their runs
    /// through this app ([`crate::background::PrepareRun`]), so they hold it until shutdown
    /// stops their claiming. Called by the router that serves the app.
    pub fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let preparer: Arc<dyn crate::background::PrepareRun> = self.clone();
        self.background.start(&self.turns, self.stop_claiming.clone(), preparer);
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

