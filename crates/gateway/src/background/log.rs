//! A background run's event log (issue 19 "Resume", issue 27): the run's events as typed
//! JSON, one value per event (the SSE `data:` payload, written by the run's own
//! [`WireSink`] in its JSON framing), numbered by their `sequence_number` from 0. The
//! worker's pump keeps them in memory for followers in this process ([`RunLog`]) and writes
//! them to the store's `response_events` in batches (at most [`BATCH`] events or
//! [`BATCH_WAIT`] apart), in order, so that followers on any replica, and resumes after the
//! run, read the same events. An SSE follower renders each one as the frame a foreground
//! stream sends (`events::wire_sink::sse_frame_of`), so a resume is byte-identical to the
//! live stream.
//!
//! [`WireSink`]: crate::events::wire_sink::WireSink

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use crate::store::Store;

/// Events per store write, at most.
pub const BATCH: usize = 256;
/// Longest an event waits in the pump before it is written to the store.
pub const BATCH_WAIT: Duration = Duration::from_millis(50);
/// How often a follower on another replica than the run's reads the store for new events:
/// the added latency of following a run from elsewhere is at most this plus [`BATCH_WAIT`].
pub const POLL: Duration = Duration::from_millis(100);

/// The events of a run executing in this process, shared with its followers.
#[derive(Debug)]
pub struct RunLog {
    events: Mutex<Vec<Bytes>>,
    /// How many events exist, and whether the log is open, complete or moved.
    len: watch::Sender<(usize, State)>,
}

impl RunLog {
    pub fn new() -> Arc<RunLog> {
        RunLog::with(Vec::new())
    }

    /// A log that starts with `events` (sequence numbers 0, 1, …).
    pub fn with(events: Vec<Bytes>) -> Arc<RunLog> {
        let n = events.len();
        Arc::new(RunLog { events: Mutex::new(events), len: watch::channel((n, State::Open)).0 })
    }

    pub(super) fn push(&self, event: Bytes) {
        let n = {
            let mut f = self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            f.push(event);
            f.len()
        };
        self.len.send_modify(|l| l.0 = n);
    }

    /// Every event is here (the run ended).
    pub(super) fn close(&self) {
        self.len.send_modify(|l| {
            if l.1 == State::Open {
                l.1 = State::Complete;
            }
        });
    }

    /// The run's next events will not come here (another replica claimed it): followers go
    /// on from the store.
    pub(super) fn moved(&self) {
        self.len.send_modify(|l| {
            if l.1 == State::Open {
                l.1 = State::Moved;
            }
        });
    }

    /// Frames from index `from` on (a clone of each `Bytes`: no copy).
    pub fn since(&self, from: usize) -> Vec<Bytes> {
        let f = self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f.get(from..).map(<[Bytes]>::to_vec).unwrap_or_default()
    }

    /// How many events exist now.
    pub fn len(&self) -> usize {
        self.len.borrow().0
    }

    /// True once the run's turn has ended and every event is here.
    pub fn is_complete(&self) -> bool {
        self.len.borrow().1 == State::Complete
    }

    /// True while no event exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sends every event after `after` to `tx`, then each new one, until the log is complete
    /// or the receiver is gone ([`Followed::Done`]), or, with `idle`, until no event came
    /// for that long ([`Followed::Idle`], with the last event sent).
    pub async fn follow(&self, after: Option<u64>, tx: &mpsc::UnboundedSender<Bytes>, idle: Option<Duration>) -> Followed {
        let mut next = after.map_or(0, |a| usize::try_from(a).unwrap_or(usize::MAX).saturating_add(1));
        let mut changes = self.len.subscribe();
        loop {
            let (len, state) = *changes.borrow_and_update();
            if len > next {
                // `since` may hold more than `len`: an event pushed after the count was read
                // (the count is updated after the push). Go on after what was sent.
                let events = self.since(next);
                next += events.len();
                for event in events {
                    if tx.send(event).is_err() {
                        return Followed::Done;
                    }
                }
            }
            if state != State::Open {
                // Frames pushed between the read and the close.
                let rest = self.since(next);
                next += rest.len();
                for event in rest {
                    let _ = tx.send(event);
                }
                return match state {
                    State::Moved => Followed::Moved(next.checked_sub(1).map(|n| n as u64)),
                    _ => Followed::Done,
                };
            }
            let changed = match idle {
                Some(idle) => match tokio::time::timeout(idle, changes.changed()).await {
                    Ok(changed) => changed,
                    Err(_) => return Followed::Idle(next.checked_sub(1).map(|n| n as u64)),
                },
                None => changes.changed().await,
            };
            if changed.is_err() {
                return Followed::Done;
            }
        }
    }
}

/// How [`RunLog::follow`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Followed {
    /// Every event was sent (or the receiver is gone).
    Done,
    /// Nothing new for the idle time: the sequence number of the last event sent, if any.
    Idle(Option<u64>),
    /// The run's next events are in the store: the last event sent, if any.
    Moved(Option<u64>),
}

/// Whether more events may come to a [`RunLog`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Complete,
    Moved,
}

/// The run's own sink: each event as JSON into the pump's channel.
pub fn sink(tx: mpsc::UnboundedSender<Bytes>) -> Box<dyn crate::events::EventSink> {
    Box::new(crate::events::wire_sink::WireSink::json(tx))
}

/// Reads the run's sink events from `rx` into `log` and the store, in order, until the sink
/// is dropped (the turn ended); then the log is complete. The store's log already holds
/// `written` events. Empty ones (the sink's flush marks) are skipped. A failed store write
/// is logged and retried with the next batch.
pub async fn pump(mut rx: mpsc::UnboundedReceiver<Bytes>, log: Arc<RunLog>, store: Arc<dyn Store>, id: String, mut written: u64) {
    let mut pending: Vec<String> = Vec::new();
    let mut open = true;
    while open {
        // Wait for an event; then take what else arrives within BATCH_WAIT, up to BATCH.
        match rx.recv().await {
            Some(f) => take(f, &log, &mut pending),
            None => open = false,
        }
        if open {
            let deadline = tokio::time::sleep(BATCH_WAIT);
            tokio::pin!(deadline);
            while pending.len() < BATCH {
                tokio::select! {
                    f = rx.recv() => match f {
                        Some(f) => take(f, &log, &mut pending),
                        None => { open = false; break; }
                    },
                    () = &mut deadline => break,
                }
            }
        }
        if !pending.is_empty() {
            let n = pending.len() as u64;
            // Kept until written: a failed write is retried with the next batch.
            match store.append_events(&id, written, pending.clone()).await {
                Ok(()) => {
                    written += n;
                    pending.clear();
                }
                Err(e) => tracing::warn!(response_id = %id, error = %e, "writing a background run's events failed"),
            }
        }
    }
    log.close();
}

fn take(event: Bytes, log: &RunLog, pending: &mut Vec<String>) {
    if event.is_empty() {
        return;
    }
    pending.push(String::from_utf8_lossy(&event).into_owned());
    log.push(event);
}

/// A stored row of the log as its JSON event: rows written before migration 0007 hold a
/// whole SSE frame (`event: …\ndata: {json}\n\n`), whose payload this is; any other row as it is.
pub fn event_of_row(row: String) -> String {
    if !row.starts_with("event: ") {
        return row;
    }
    match row.split_once("\ndata: ") {
        Some((_, data)) => data.trim_end_matches('\n').to_string(),
        None => row,
    }
}

/// True when `event` (JSON) is a terminal one (`response.completed`, `.incomplete`, `.failed`).
pub fn is_terminal(event: &str) -> bool {
    matches!(
        crate::events::wire_sink::event_type(event.as_bytes()),
        Some("response.completed" | "response.incomplete" | "response.failed")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn followers_get_every_frame_once_in_order() {
        let log = RunLog::new();
        log.push(Bytes::from_static(b"a"));
        log.push(Bytes::from_static(b"b"));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let follower = {
            let log = log.clone();
            tokio::spawn(async move { log.follow(Some(0), &tx, None).await })
        };
        log.push(Bytes::from_static(b"c"));
        log.close();
        assert_eq!(follower.await.unwrap(), Followed::Done);
        let got: Vec<Bytes> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(got, vec![Bytes::from_static(b"b"), Bytes::from_static(b"c")]);
        assert!(is_terminal(r#"{"type":"response.failed","response":{}}"#));
        assert!(!is_terminal(r#"{"type":"response.failed.x"}"#));
        assert!(!is_terminal("event: response.failed\ndata: {}\n\n"));
        let legacy = "event: response.failed\ndata: {\"type\":\"response.failed\"}\n\n".to_string();
        assert!(is_terminal(&event_of_row(legacy)), "a row of an SSE frame reads as its event");
        assert_eq!(event_of_row("{\"type\":\"x\"}".into()), "{\"type\":\"x\"}");
    }

    /// An event pushed between the follower's read of the count and its read of the events
    /// is sent once (it was sent twice: a background stream under load repeated a delta).
    #[tokio::test]
    async fn an_event_pushed_while_the_count_is_read_is_sent_once() {
        let log = RunLog::new();
        log.push(Bytes::from_static(b"a"));
        // The second push's event is in the vector, its count not yet announced.
        log.events.lock().unwrap().push(Bytes::from_static(b"b"));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let follower = {
            let log = log.clone();
            tokio::spawn(async move { log.follow(None, &tx, None).await })
        };
        tokio::task::yield_now().await;
        log.len.send_modify(|l| l.0 = 2);
        log.push(Bytes::from_static(b"c"));
        log.close();
        assert_eq!(follower.await.unwrap(), Followed::Done);
        let got: Vec<Bytes> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(got, vec![Bytes::from_static(b"a"), Bytes::from_static(b"b"), Bytes::from_static(b"c")]);
    }

    #[tokio::test]
    async fn an_idle_or_moved_log_says_where_its_follower_stopped() {
        let log = RunLog::with(vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")]);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let idle = Some(Duration::from_millis(10));
        assert_eq!(log.follow(None, &tx, idle).await, Followed::Idle(Some(1)));
        assert_eq!(log.follow(Some(1), &tx, idle).await, Followed::Idle(Some(1)));
        log.push(Bytes::from_static(b"c"));
        log.moved();
        assert_eq!(log.follow(Some(1), &tx, idle).await, Followed::Moved(Some(2)));
        // A moved log never becomes complete.
        log.close();
        assert!(!log.is_complete());
        let got: Vec<Bytes> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(got, vec![Bytes::from_static(b"a"), Bytes::from_static(b"b"), Bytes::from_static(b"c")]);
        let empty = RunLog::new();
        assert_eq!(empty.follow(None, &tx, idle).await, Followed::Idle(None));
    }
}
