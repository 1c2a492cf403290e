//! Following a background run (issue 19 "Resume"): its events (JSON) from this process's memory
//! while it is queued or runs here, else from the store's log; and what `GET` shows of a run
//! not stored yet.

use std::sync::Arc;

use bytes::Bytes;
use protocol::events::EventKind;
use protocol::Response;
use serde_json::Value;
use tokio::sync::mpsc;

use super::log::{self, RunLog};
use super::{fold_events, events_of, Background, EndAs, Runs};
use crate::admission::StreamPermit;
use crate::error::GatewayError;

/// Where a follower finds a run's events in this process.
enum Found {
    /// The run executes here, or a worker here has claimed it.
    Here(Arc<RunLog>),
    /// Queued by this process; it may yet be claimed by another replica.
    Queued(Arc<RunLog>),
    /// Only in the store.
    Elsewhere,
}

impl Background {
    /// Follows the events of response `id` of `project` after sequence number `after` (all:
    /// `None`): the events go to the returned channel until the terminal one. From this
    /// process's memory when the run executes here, else from the store's log, read every
    /// [`log::POLL`]. `None` for a stored response without an event log (not a background
    /// one) when `after` is `None`. Errors: 404 for an unknown id; 400 naming
    /// `starting_after` when `after` is past the log's end, or there is no log.
    pub async fn follow(
        self: &Arc<Self>,
        project: &str,
        id: &str,
        after: Option<u64>,
        hold: Option<StreamPermit>,
    ) -> Result<Option<mpsc::UnboundedReceiver<Bytes>>, GatewayError> {
        let store = &self.deps.store;
        let mut stored = store.response(project, id).await?;
        if stored.is_none() && store.run_response(project, id).await?.is_none() {
            // Its run may have been stored (and left the queue) between the two reads.
            stored = store.response(project, id).await?;
            if stored.is_none() {
                return Err(GatewayError::not_found(None, format!("No response found with id '{id}'."), "response_not_found"));
            }
        }
        let past_end = || {
            GatewayError::bad_request(
                Some("starting_after".to_string()),
                format!("Invalid 'starting_after': response '{id}' has no event with a sequence number after it (or no event log)."),
            )
            .with_code("invalid_value")
        };
        // Past the end only once the run has ended: a running run's followers wait for
        // event N (another replica's copy of the log may lag its worker by a batch).
        let local = self.local_log(id);
        match (after, &local) {
            (Some(n), Some(log)) if usize::try_from(n).unwrap_or(usize::MAX) >= log.len() && log.is_complete() => {
                return Err(past_end())
            }
            (Some(n), None) => {
                let at = store.events_after(id, n.checked_sub(1), 1).await?;
                if at.first().map(|(seq, _)| *seq) != Some(n) && !self.pending(project, id).await {
                    return Err(past_end());
                }
            }
            // A stored response without a log (not a background one) has nothing to follow.
            (None, None) if stored.is_some() && store.events_after(id, None, 1).await?.is_empty() => return Ok(None),
            _ => {}
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (me, project, id) = (self.clone(), project.to_string(), id.to_string());
        tokio::spawn(async move {
            me.follow_into(&project, &id, after, tx).await;
            drop(hold);
        });
        Ok(Some(rx))
    }

    /// Follows a run this request has just queued (it exists and its log starts at 0):
    /// [`Background::follow`] without the checks.
    pub fn follow_new(self: &Arc<Self>, project: &str, id: &str, hold: Option<StreamPermit>) -> mpsc::UnboundedReceiver<Bytes> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (me, project, id) = (self.clone(), project.to_string(), id.to_string());
        tokio::spawn(async move {
            me.follow_into(&project, &id, None, tx).await;
            drop(hold);
        });
        rx
    }

    /// True while the run of `id` waits in the queue.
    async fn is_queued(&self, project: &str, id: &str) -> bool {
        matches!(
            self.deps.store.run_response(project, id).await,
            Ok(Some(r)) if r.get("status").and_then(Value::as_str) == Some("queued")
        )
    }

    /// True while the run of `id` is queued or in progress.
    async fn pending(&self, project: &str, id: &str) -> bool {
        matches!(
            self.deps.store.run_response(project, id).await,
            Ok(Some(r)) if matches!(r.get("status").and_then(Value::as_str), Some("queued" | "in_progress"))
        )
    }

    /// What `GET /v1/responses/{id}` shows of a run not stored yet: its Response, and for one
    /// in progress the output so far, folded from its event log (this process's memory, or
    /// the store's). `None` when there is no such run.
    pub async fn current(&self, project: &str, id: &str) -> Result<Option<Value>, GatewayError> {
        let Some(snapshot) = self.deps.store.run_response(project, id).await? else { return Ok(None) };
        if snapshot.get("status").and_then(Value::as_str) != Some("in_progress") {
            return Ok(Some(snapshot));
        }
        let events: Vec<String> = match self.local_log(id) {
            Some(log) => log.since(0).iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect(),
            None => self.deps.store.events_after(id, None, usize::MAX).await?.into_iter().map(|(_, f)| log::event_of_row(f)).collect(),
        };
        Ok(Some(fold_events(snapshot, &events)))
    }

    /// A run that ended before it started (cancelled while queued, or its request no longer
    /// prepares) has only its first two events: its log gets the terminal event (2) —
    /// `response.incomplete` with status `cancelled`, or `response.failed` — so that a
    /// stream waiting for it ends with it. Nothing when the log has more (a repeated cancel).
    pub(super) async fn end_unstarted_log(&self, id: &str, ended: &Value, end: EndAs) {
        let store = &self.deps.store;
        let here = self.runs().queued.remove(id).map(|(log, _)| log);
        if !matches!(store.events_after(id, Some(1), 1).await, Ok(f) if f.is_empty()) {
            if let Some(log) = here {
                log.moved();
            }
            return;
        }
        let Ok(ended) = serde_json::from_value::<Response>(ended.clone()) else { return };
        let kind = match end {
            EndAs::Cancelled => EventKind::Incomplete { response: Box::new(ended) },
            EndAs::Failed => EventKind::Failed { response: Box::new(ended) },
        };
        let events = events_of(&[kind], 2);
        if let Err(e) = store.append_events(id, 2, events.clone()).await {
            tracing::warn!(response_id = %id, error = %e, "ending a background run's event log failed");
        }
        // This process's stream of the run ends with the same event.
        if let Some(log) = here {
            for f in events.into_iter().filter(|_| log.len() == 2) {
                log.push(Bytes::from(f));
            }
            log.close();
        }
    }

    pub(super) fn runs(&self) -> std::sync::MutexGuard<'_, Runs> {
        self.local.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops the in-memory log of a run queued here that runs elsewhere (or failed to
    /// start): its followers go on from the store.
    pub(super) fn forget_queued(&self, id: &str) {
        if let Some((log, _)) = self.runs().queued.remove(id) {
            log.moved();
        }
    }

    /// [`Background::forget_queued`] unless a worker here has claimed the run meanwhile.
    fn forget_unclaimed(&self, id: &str) {
        let mut runs = self.runs();
        if matches!(runs.queued.get(id), Some((_, false))) {
            if let Some((log, _)) = runs.queued.remove(id) {
                log.moved();
            }
        }
    }

    /// The in-memory log of run `id`, when this process has one.
    fn local_log(&self, id: &str) -> Option<Arc<RunLog>> {
        match self.find(id) {
            Found::Here(log) | Found::Queued(log) => Some(log),
            Found::Elsewhere => None,
        }
    }

    fn find(&self, id: &str) -> Found {
        let runs = self.runs();
        if let Some(l) = runs.running.get(id) {
            return Found::Here(l.log.clone());
        }
        match runs.queued.get(id) {
            Some((log, true)) => Found::Here(log.clone()),
            Some((log, false)) => Found::Queued(log.clone()),
            None => Found::Elsewhere,
        }
    }

    async fn follow_into(&self, project: &str, id: &str, mut last: Option<u64>, tx: mpsc::UnboundedSender<Bytes>) {
        let store = &self.deps.store;
        loop {
            // From memory while the run is (or may yet be) here; every POLL without a event,
            // a run queued here but not claimed here is looked up: once it is claimed
            // elsewhere (or ended unstarted), its events come from the store.
            let (log, queued) = match self.find(id) {
                Found::Here(log) => (Some(log), false),
                Found::Queued(log) => (Some(log), true),
                Found::Elsewhere => (None, false),
            };
            if let Some(log) = log {
                match log.follow(last, &tx, Some(log::POLL)).await {
                    log::Followed::Done => return,
                    log::Followed::Moved(l) => last = l,
                    log::Followed::Idle(l) => {
                        last = l;
                        if queued && !self.is_queued(project, id).await {
                            self.forget_unclaimed(id);
                        }
                        continue;
                    }
                }
            }
            let events = match store.events_after(id, last, 256).await {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!(response_id = %id, error = %e, "reading a background run's events failed");
                    Vec::new()
                }
            };
            let got = !events.is_empty();
            for (seq, event) in events {
                let event = log::event_of_row(event);
                let terminal = log::is_terminal(&event);
                if tx.send(Bytes::from(event)).is_err() {
                    return;
                }
                last = Some(seq);
                if terminal {
                    return;
                }
            }
            if !got {
                // Nothing new: a run that ended without a terminal event (cancelled before
                // it started) has nothing more to send.
                let pending = self.pending(project, id).await;
                if !pending && store.events_after(id, last, 1).await.map(|f| f.is_empty()).unwrap_or(true) {
                    return;
                }
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(log::POLL).await;
            }
        }
    }
}
