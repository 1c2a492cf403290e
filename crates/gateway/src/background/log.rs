//! A background run's event log (issue 19 "Resume"): the run's events as SSE frames, exactly
//! the bytes a foreground stream sends (its sink is the same [`SseSink`]), numbered by their
//! `sequence_number` from 0. The worker's pump keeps them in memory for followers in this
//! process ([`RunLog`]) and writes them to the store's `response_events` in batches (at most
//! [`BATCH`] frames or [`BATCH_WAIT`] apart), in order, so that followers on any replica,
//! and resumes after the run, read the same bytes.
//!
//! [`SseSink`]: crate::events::sse_sink::SseSink

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use crate::store::Store;

/// Frames per store write, at most.
pub const BATCH: usize = 256;
/// Longest a frame waits in the pump before it is written to the store.
pub const BATCH_WAIT: Duration = Duration::from_millis(50);
/// How often a follower on another replica than the run's reads the store for new frames:
/// the added latency of following a run from elsewhere is at most this plus [`BATCH_WAIT`].
pub const POLL: Duration = Duration::from_millis(100);

/// The frames of a run executing in this process, shared with its followers.
#[derive(Debug)]
pub struct RunLog {
    frames: Mutex<Vec<Bytes>>,
    /// How many frames exist, and whether the log is open, complete or moved.
    len: watch::Sender<(usize, State)>,
}

impl RunLog {
    pub fn new() -> Arc<RunLog> {
        RunLog::with(Vec::new())
    }

    /// A log that starts with `frames` (sequence numbers 0, 1, …).
    pub fn with(frames: Vec<Bytes>) -> Arc<RunLog> {
        let n = frames.len();
        Arc::new(RunLog { frames: Mutex::new(frames), len: watch::channel((n, State::Open)).0 })
    }

    pub(super) fn push(&self, frame: Bytes) {
        let n = {
            let mut f = self.frames.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            f.push(frame);
            f.len()
        };
        self.len.send_modify(|l| l.0 = n);
    }

    /// Every frame is here (the run ended).
    pub(super) fn close(&self) {
        self.len.send_modify(|l| {
            if l.1 == State::Open {
                l.1 = State::Complete;
            }
        });
    }

    /// The run's next frames will not come here (another replica claimed it): followers go
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
        let f = self.frames.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f.get(from..).map(<[Bytes]>::to_vec).unwrap_or_default()
    }

    /// How many frames exist now.
    pub fn len(&self) -> usize {
        self.len.borrow().0
    }

    /// True once the run's turn has ended and every frame is here.
    pub fn is_complete(&self) -> bool {
        self.len.borrow().1 == State::Complete
    }

    /// True while no frame exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sends every frame after `after` to `tx`, then each new one, until the log is complete
    /// or the receiver is gone ([`Followed::Done`]), or, with `idle`, until no frame came
    /// for that long ([`Followed::Idle`], with the last frame sent).
    pub async fn follow(&self, after: Option<u64>, tx: &mpsc::UnboundedSender<Bytes>, idle: Option<Duration>) -> Followed {
        let mut next = after.map_or(0, |a| usize::try_from(a).unwrap_or(usize::MAX).saturating_add(1));
        let mut changes = self.len.subscribe();
        loop {
            let (len, state) = *changes.borrow_and_update();
            if len > next {
                for frame in self.since(next) {
                    if tx.send(frame).is_err() {
                        return Followed::Done;
                    }
                }
                next = len;
            }
            if state != State::Open {
                // Frames pushed between the read and the close.
                let rest = self.since(next);
                next += rest.len();
                for frame in rest {
                    let _ = tx.send(frame);
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
    /// Every frame was sent (or the receiver is gone).
    Done,
    /// Nothing new for the idle time: the sequence number of the last frame sent, if any.
    Idle(Option<u64>),
    /// The run's next frames are in the store: the last frame sent, if any.
    Moved(Option<u64>),
}

/// Whether more frames may come to a [`RunLog`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Complete,
    Moved,
}

/// Reads the run's sink frames from `rx` into `log` and the store, in order, until the sink
/// is dropped (the turn ended); then the log is complete. The store's log already holds
/// `written` frames. Empty frames (the sink's flush marks) are skipped. A failed store write
/// is logged and retried with the next batch.
pub async fn pump(mut rx: mpsc::UnboundedReceiver<Bytes>, log: Arc<RunLog>, store: Arc<dyn Store>, id: String, mut written: u64) {
    let mut pending: Vec<String> = Vec::new();
    let mut open = true;
    while open {
        // Wait for a frame; then take what else arrives within BATCH_WAIT, up to BATCH.
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

fn take(frame: Bytes, log: &RunLog, pending: &mut Vec<String>) {
    if frame.is_empty() {
        return;
    }
    pending.push(String::from_utf8_lossy(&frame).into_owned());
    log.push(frame);
}

/// True when `frame` is a terminal event's (`response.completed`, `.incomplete`, `.failed`).
pub fn is_terminal(frame: &str) -> bool {
    ["event: response.completed\n", "event: response.incomplete\n", "event: response.failed\n"].iter().any(|p| frame.starts_with(p))
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
        assert!(is_terminal("event: response.failed\ndata: {}\n\n"));
        assert!(!is_terminal("event: response.failed.x\ndata: {}\n\n"));
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
