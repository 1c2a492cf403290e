//! Background responses (`background: true`, issue 19; contract §1 `background`): the
//! request is checked and queued in the store (`runs`) and answered at once with the
//! Response in status `queued`; a worker of any replica claims it, prepares and runs the
//! turn like a foreground one, and stores it. The worker is a thin adapter: the turn
//! service prepares the run's request as it prepares any create ([`PrepareRun`]), and the
//! run's events go to its log. `GET /v1/responses/{id}`
//! shows `queued` → `in_progress` → the terminal status. `POST …/cancel` cancels a queued
//! run at once and an in-progress one through its worker: in this process at once, on
//! another replica at that worker's next heartbeat.
//!
//! The worker holds a lease on its run, renewed every third of `background.lease_ms`; a run
//! whose lease expired (its process died) is marked `failed` by any replica's idle worker,
//! within `lease_ms` plus `poll_ms`. Its events go to the run's log ([`log`]), which a
//! streamed background request, and any resume (`starting_after`), follow.

mod follow;
pub mod log;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::{Response, ResponseStatus};
use serde_json::Value;
use bytes::Bytes;
use protocol::events::EventKind;
use tokio::sync::{mpsc, watch, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::background::BackgroundConfig;
use crate::error::GatewayError;
use crate::events::ids::new_id;
use futures_util::future::BoxFuture;
use log::RunLog;
use crate::store::{ClaimedRun, RunCancel, Store, StoreError};
use crate::turn::{driver, Prepared, Runner};

/// What a worker runs a turn with (its request is prepared by a [`PrepareRun`]).
#[derive(Debug, Clone)]
pub struct Deps {
    pub store: Arc<dyn Store>,
    pub runner: Runner,
    /// Cancelled at the end of the shutdown grace period: running turns end `incomplete`.
    pub shutdown: CancellationToken,
    /// `[limits]`: a running background turn holds one of the upstream's slots.
    pub admission: Arc<crate::admission::Admission>,
}

/// How a worker prepares the request of the run it claimed: as a create request of the
/// run's `project` is prepared (validated, its continuation loaded, its tools bound), by the
/// turn service, which implements it. Errors: the request no longer prepares (its previous
/// response was deleted…), or its conversation is busy (`ErrorKind::Conflict`).
pub trait PrepareRun: Send + Sync {
    fn prepare_run<'a>(&'a self, project: &'a str, body: &'a [u8]) -> BoxFuture<'a, Result<Prepared, GatewayError>>;
}

/// A run executing in this process: how to cancel it, when it is stored, and its events.
struct Local {
    cancel: CancellationToken,
    by_client: Arc<AtomicBool>,
    done: watch::Receiver<bool>,
    log: Arc<RunLog>,
}

/// The runs this process knows in memory.
#[derive(Default)]
struct Runs {
    /// Runs executing here.
    running: HashMap<String, Local>,
    /// Streamed runs queued by this process and not running here yet: their log so far (the
    /// events written when queued), which the request's stream follows at once; `true` once
    /// a worker here has claimed the run (it takes the log over).
    queued: HashMap<String, (Arc<RunLog>, bool)>,
}

/// The background runs of this process: submitting, cancelling, and the workers.
pub struct Background {
    deps: Deps,
    config: BackgroundConfig,
    wake: Notify,
    local: Mutex<Runs>,
    /// This process's worker id prefix (a lease owner is `{prefix}-{n}`).
    owner: String,
    /// When this process last looked for expired leases (unix ms): at most every quarter
    /// lease, whatever the number of idle workers.
    last_reap: std::sync::atomic::AtomicI64,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background").field("owner", &self.owner).field("workers", &self.config.workers).finish()
    }
}

/// How long a run whose conversation is busy waits before it is claimed again, milliseconds.
const REQUEUE_DELAY_MS: u64 = 500;

/// How a run that never started ends its log.
#[derive(Debug, Clone, Copy)]
enum EndAs {
    Cancelled,
    Failed,
}

/// How long a cancel waits for a run in progress to be stored as `cancelled`.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

impl Background {
    pub fn new(deps: Deps, config: BackgroundConfig) -> Arc<Background> {
        Arc::new(Background {
            deps,
            config,
            wake: Notify::new(),
            local: Mutex::new(Runs::default()),
            owner: new_id("worker"),
            last_reap: std::sync::atomic::AtomicI64::new(0),
        })
    }

    /// Starts `background.workers` workers on `tracker` (shutdown waits for them), which
    /// prepare their runs with `preparer`; they stop claiming when `stop` is cancelled.
    /// Outside a tokio runtime nothing starts.
    pub fn start(self: &Arc<Self>, tracker: &TaskTracker, stop: CancellationToken, preparer: Arc<dyn PrepareRun>) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        for n in 0..self.config.workers {
            let me = self.clone();
            let stop = stop.clone();
            let preparer = preparer.clone();
            tracker.spawn(async move { me.worker(n, stop, preparer).await });
        }
    }

    /// Queues a prepared (so validated) request as a background run of `project`; `body` is
    /// the request as sent, prepared again by the worker. Answers the `queued` Response. A
    /// `streamed` run's log is kept in memory from the start, for [`Background::follow_new`].
    /// Errors: 429 when `background.max_queued` runs wait; the store's errors.
    pub async fn submit(&self, project: &str, body: &[u8], prepared: Prepared, streamed: bool) -> Result<Response, GatewayError> {
        // The queued request is stored for the worker: an MCP server's credentials would be.
        if let Some(i) = mcp_credentials_at(body) {
            return Err(GatewayError::bad_request(
                Some(format!("tools[{i}]")),
                "An MCP tool with 'headers' or 'authorization' cannot run in the background: its request would be stored with them.".to_string(),
            )
            .with_code("unsupported_value"));
        }
        let mut response = prepared.base.clone();
        // The check is done: a conversation lease taken by it is released now.
        drop(prepared);
        response.status = ResponseStatus::Queued;
        let request = String::from_utf8_lossy(body).into_owned();
        let snapshot = serde_json::to_string(&response).map_err(|e| GatewayError::from(StoreError::Other(e.to_string())))?;
        // Its stream starts now: `response.created` and `response.queued` (0 and 1); the
        // worker's emitter goes on from `response.in_progress` (2).
        let kinds = [EventKind::Created { response: Box::new(response.clone()) }, EventKind::Queued { response: Box::new(response.clone()) }];
        let events = events_of(&kinds, 0);
        if streamed {
            let log = RunLog::with(events.iter().map(|f| Bytes::from(f.clone())).collect());
            self.runs().queued.insert(response.id.clone(), (log, false));
        }
        let queued = self.deps.store.enqueue_run(project, &response.id, request, snapshot, self.config.max_queued, events).await;
        if !matches!(queued, Ok(true)) {
            self.runs().queued.remove(&response.id);
        }
        if !queued? {
            return Err(GatewayError::rate_limited(format!(
                "The background queue is full ({} runs wait; background.max_queued). Please retry later.",
                self.config.max_queued
            )));
        }
        self.wake.notify_one();
        Ok(response)
    }

    /// `POST /v1/responses/{id}/cancel` for a run of `project`: `Some(Response)` (status
    /// `cancelled`, or the run's current one when its worker did not stop within 10 s);
    /// `None` when there is no such run (the caller looks for a stored response).
    pub async fn cancel(&self, project: &str, id: &str) -> Result<Option<Value>, GatewayError> {
        match self.deps.store.cancel_run(project, id).await? {
            RunCancel::NotFound => Ok(None),
            RunCancel::Cancelled(response) => {
                self.end_unstarted_log(id, &response, EndAs::Cancelled).await;
                Ok(Some(response))
            }
            RunCancel::Requested => {
                let done = self.runs().running.get(id).map(|l| {
                    l.by_client.store(true, Ordering::Release);
                    l.cancel.cancel();
                    l.done.clone()
                });
                let wait = async {
                    match done {
                        Some(mut done) => {
                            let _ = done.wait_for(|d| *d).await;
                        }
                        // Another replica runs it: its heartbeat sees the request.
                        None => loop {
                            if self.deps.store.response(project, id).await.ok().flatten().is_some() {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        },
                    }
                };
                let _ = tokio::time::timeout(CANCEL_WAIT, wait).await;
                if let Some(stored) = self.deps.store.response(project, id).await? {
                    return Ok(Some(stored));
                }
                Ok(self.deps.store.run_response(project, id).await?)
            }
        }
    }

    async fn worker(self: Arc<Self>, n: usize, stop: CancellationToken, preparer: Arc<dyn PrepareRun>) {
        let owner = format!("{}-{n}", self.owner);
        let poll = Duration::from_millis(self.config.poll_ms.max(10));
        while !stop.is_cancelled() {
            match self.deps.store.claim_run(&owner, self.config.lease_ms).await {
                Ok(Some(run)) => Box::pin(self.execute(run, &owner, &*preparer)).await,
                Ok(None) => {
                    self.reap().await;
                    tokio::select! {
                        () = self.wake.notified() => {}
                        () = tokio::time::sleep(poll) => {}
                        () = stop.cancelled() => {}
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "background worker: claiming a run failed");
                    tokio::select! {
                        () = tokio::time::sleep(poll) => {}
                        () = stop.cancelled() => {}
                    }
                }
            }
        }
    }

    /// Prepares and runs one claimed run under its lease, then removes it from the queue.
    async fn execute(&self, run: ClaimedRun, owner: &str, preparer: &dyn PrepareRun) {
        let id = run.response_id.clone();
        // Queued by this process and streamed: its log is here already.
        let queued_here = self.runs().queued.get_mut(&id).map(|(log, claimed)| {
            *claimed = true;
            log.clone()
        });
        let prepared = match self.prepare(&run, preparer).await {
            Ok(p) => p,
            // Its conversation is busy (another turn on it, maybe an earlier background
            // run): it waits in the queue until that one is done.
            Err(e) if e.kind == crate::error::ErrorKind::Conflict => {
                if let Some((_, claimed)) = self.runs().queued.get_mut(&id) {
                    *claimed = false;
                }
                if let Err(e) = self.deps.store.requeue_run(&id, owner, REQUEUE_DELAY_MS).await {
                    tracing::warn!(response_id = %id, error = %e, "requeueing a background run failed");
                }
                return;
            }
            Err(e) => {
                tracing::warn!(response_id = %id, error = %e.error.message, "a background run could not start");
                self.fail(&run, owner, e).await;
                return;
            }
        };
        let (done_tx, done_rx) = watch::channel(false);
        let (cancel, by_client) = (prepared.cancel.clone(), prepared.cancelled_by_client.clone());
        // The log so far: the two events written when the run was queued.
        let run_log = match queued_here {
            Some(log) => log,
            None => match self.deps.store.events_after(&id, None, 2).await {
                Ok(f) => RunLog::with(f.into_iter().map(|(_, f)| Bytes::from(log::event_of_row(f))).collect()),
                Err(e) => {
                    tracing::warn!(response_id = %id, error = %e, "reading a background run's first events failed");
                    RunLog::new()
                }
            },
        };
        let written = run_log.len() as u64;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let pump = tokio::spawn(log::pump(events_rx, run_log.clone(), self.deps.store.clone(), id.clone(), written));
        {
            let mut runs = self.runs();
            runs.queued.remove(&id);
            runs.running.insert(id.clone(), Local { cancel: cancel.clone(), by_client: by_client.clone(), done: done_rx, log: run_log });
        }
        // The claim made the row `in_progress` (GET shows that status); the lease is renewed
        // from a third of it on.
        let beating = CancellationToken::new();
        let heartbeat = tokio::spawn(heartbeat(self.deps.store.clone(), id.clone(), owner.to_string(), self.config.lease_ms, cancel, by_client, beating.clone()));
        // One of the upstream's slots (`limits.upstream_max_in_flight`), as a foreground turn.
        let slot = self.deps.admission.upstream_unbounded().await;
        // The log's own sink: one JSON event per event, from which followers render frames.
        let turn = driver::start_dequeued(prepared, Some(log::sink(events_tx)));
        if let Err(e) = Box::pin(turn.run(&self.deps.runner)).await {
            tracing::error!(response_id = %id, error = %e, "a background run could not be stored");
        }
        drop(slot);
        // The turn (and so its sink) is gone: the pump writes the last events and ends.
        let _ = pump.await;
        beating.cancel();
        let _ = heartbeat.await;
        if let Err(e) = self.deps.store.finish_run(&id).await {
            tracing::warn!(response_id = %id, error = %e, "removing a finished background run failed");
        }
        let _ = done_tx.send(true);
        self.runs().running.remove(&id);
    }

    /// The run's request, prepared as `POST /v1/responses` prepares it, under the run's id.
    async fn prepare(&self, run: &ClaimedRun, preparer: &dyn PrepareRun) -> Result<Prepared, GatewayError> {
        let mut prepared = preparer.prepare_run(&run.project, run.request.as_bytes()).await?;
        prepared.base.id = run.response_id.clone();
        if let Some(created_at) = run.created_at {
            prepared.base.created_at = created_at;
        }
        prepared.cancel = self.deps.shutdown.child_token();
        Ok(prepared)
    }

    /// A run whose request no longer prepares (its previous response was deleted…) ends
    /// `failed` with the error; its log ends with `response.failed`.
    async fn fail(&self, run: &ClaimedRun, owner: &str, e: GatewayError) {
        let id = &run.response_id;
        let response = match self.deps.store.run_response(&run.project, id).await {
            Ok(Some(mut response)) => {
                if let Some(o) = response.as_object_mut() {
                    o.insert("status".into(), Value::String("failed".into()));
                    o.insert("error".into(), serde_json::json!({"code": "server_error", "message": e.error.message}));
                }
                if let Err(e) = self.deps.store.fail_run(id, owner, response.to_string()).await {
                    tracing::warn!(response_id = %id, error = %e, "marking a background run failed");
                }
                Some(response)
            }
            _ => None,
        };
        match response {
            Some(response) => self.end_unstarted_log(id, &response, EndAs::Failed).await,
            None => self.forget_queued(id),
        }
    }
}

impl Background {
    /// Marks runs whose worker stopped renewing their lease (its process died) `failed`,
    /// and ends their log with `response.failed`, so followers end too.
    async fn reap(&self) {
        let now = crate::store::now_ms();
        let every = i64::try_from(self.config.lease_ms / 4).unwrap_or(i64::MAX);
        let last = self.last_reap.load(Ordering::Acquire);
        if now - last < every || self.last_reap.compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return;
        }
        let store = &self.deps.store;
        let Ok(expired) = store.expired_runs(16).await else { return };
        for (id, snapshot) in expired {
            // With the output it had streamed.
            let events: Vec<String> = store.events_after(&id, None, usize::MAX).await.map(|f| f.into_iter().map(|(_, f)| log::event_of_row(f)).collect()).unwrap_or_default();
            let mut response = fold_events(snapshot, &events);
            if let Some(o) = response.as_object_mut() {
                o.insert("status".into(), Value::String("failed".into()));
                o.insert(
                    "error".into(),
                    serde_json::json!({"code": "server_error", "message": "The gateway process running this response stopped before it finished."}),
                );
            }
            match store.reap_run(&id, response.to_string()).await {
                Ok(true) => {}
                _ => continue,
            }
            tracing::warn!(response_id = %id, "a background run's worker stopped renewing its lease: marked failed");
            let seq = store.events_after(&id, None, usize::MAX).await.map(|f| f.last().map_or(0, |(s, _)| s + 1)).unwrap_or(0);
            let Ok(parsed) = serde_json::from_value::<Response>(response) else { continue };
            let _ = store.append_events(&id, seq, events_of(&[EventKind::Failed { response: Box::new(parsed) }], seq)).await;
        }
    }
}

/// The index of the first `mcp` tool of the request `body` that carries credentials.
fn mcp_credentials_at(body: &[u8]) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Tools {
        #[serde(default)]
        tools: Vec<Value>,
    }
    let tools = serde_json::from_slice::<Tools>(body).ok()?.tools;
    tools.iter().position(|t| {
        t.get("type").and_then(Value::as_str) == Some("mcp")
            && ["headers", "authorization"].iter().any(|k| t.get(*k).is_some_and(|v| !v.is_null()))
    })
}

/// `snapshot` (a run's Response) with the output its logged `events` (JSON) hold, status kept.
fn fold_events(snapshot: Value, events: &[String]) -> Value {
    let Ok(base) = serde_json::from_value::<Response>(snapshot.clone()) else { return snapshot };
    let status = base.status;
    let mut acc = crate::events::accumulator::Accumulator::new(base);
    for event in events {
        if let Ok(event) = serde_json::from_str::<protocol::events::StreamEvent>(event) {
            acc.fold(event.kind);
        }
    }
    let mut current = acc.response;
    current.status = status;
    serde_json::to_value(&current).unwrap_or(snapshot)
}

/// The JSON events of `kinds`, numbered from `first_seq`, as the log stores them.
fn events_of(kinds: &[EventKind], first_seq: u64) -> Vec<String> {
    (first_seq..)
        .zip(kinds)
        .filter_map(|(seq, k)| crate::events::wire_sink::payload(k, seq))
        .map(|f| String::from_utf8_lossy(&f).into_owned())
        .collect()
}

/// Renews the run's lease every third of `lease_ms` until `stop`; a cancel asked through
/// another replica (or a lost lease) cancels the turn.
async fn heartbeat(
    store: Arc<dyn Store>,
    id: String,
    owner: String,
    lease_ms: u64,
    cancel: CancellationToken,
    by_client: Arc<AtomicBool>,
    stop: CancellationToken,
) {
    let every = Duration::from_millis((lease_ms / 3).max(10));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        match store.beat_run(&id, &owner, lease_ms, None).await {
            Ok(Some(true)) => {
                by_client.store(true, Ordering::Release);
                cancel.cancel();
            }
            Ok(Some(false)) => {}
            Ok(None) => {
                tracing::warn!(response_id = %id, "a background run's lease was lost; stopping it");
                cancel.cancel();
            }
            Err(e) => tracing::warn!(response_id = %id, error = %e, "renewing a background run's lease failed"),
        }
    }
}
