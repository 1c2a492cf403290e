//! The response body of a streamed answer: pre-rendered events sent one body frame
//! each, with the script's pacing and fault applied.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use tokio::time::{Instant, Sleep};

use crate::render::MALFORMED_EVENT;
use crate::script::Fault;

/// How the body ends once its events are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// A clean end of the body.
    Clean,
    /// An I/O error, which makes the server abort the connection.
    Abort,
}

/// Yields one pre-rendered event per poll that is ready, sleeping `delay` between
/// events. After each event it returns `Pending` once (waking itself at once), so the
/// HTTP layer flushes every event to the socket on its own, like a model server that
/// flushes per token. No lock is held and nothing is allocated while it runs.
pub(crate) struct PacedEvents {
    events: std::vec::IntoIter<Bytes>,
    sent: usize,
    delay: Duration,
    /// Pause before event number `.0` (0-based) for `.1`.
    stall: Option<(usize, Duration)>,
    end: End,
    sleep: Pin<Box<Sleep>>,
    sleeping: bool,
    /// The pause before the next event has been decided (and possibly slept).
    paused: bool,
    /// An event was just returned; yield once before the next one.
    flush_pending: bool,
    /// Counted when the body is dropped before its end (the client left).
    cut: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

impl PacedEvents {
    /// `events` (the last one `data: [DONE]`) paced by `delay`, with `fault` applied.
    pub(crate) fn new(mut events: Vec<Bytes>, delay: Duration, fault: Option<Fault>) -> Self {
        let mut end = End::Clean;
        let mut stall = None;
        // Chunks that carry JSON: every event but the final [DONE].
        let json_chunks = events.len().saturating_sub(1);
        match fault {
            None => {}
            Some(Fault::Disconnect { after_chunks }) => {
                events.truncate(after_chunks.min(json_chunks));
                end = End::Abort;
            }
            Some(Fault::Malformed { after_chunks }) => {
                events.truncate(after_chunks.min(json_chunks));
                events.push(Bytes::from_static(MALFORMED_EVENT));
            }
            Some(Fault::Stall { after_chunks, stall_ms }) => {
                stall = Some((after_chunks.min(events.len()), Duration::from_millis(stall_ms)));
            }
        }
        PacedEvents {
            events: events.into_iter(),
            sent: 0,
            delay,
            stall,
            end,
            sleep: Box::pin(tokio::time::sleep(Duration::ZERO)),
            sleeping: false,
            paused: false,
            flush_pending: false,
            cut: None,
        }
    }

    /// The same body, counting into `cut` when it is dropped before its end.
    pub(crate) fn counting_cuts(mut self, cut: std::sync::Arc<std::sync::atomic::AtomicUsize>) -> Self {
        self.cut = Some(cut);
        self
    }

    /// The pause due before the next event.
    fn pause_before_next(&mut self) -> Duration {
        let mut wait = Duration::ZERO;
        if self.sent > 0 && self.events.len() > 0 {
            wait += self.delay;
        }
        if let Some((at, len)) = self.stall {
            if at == self.sent {
                wait += len;
                self.stall = None;
            }
        }
        wait
    }
}

impl Drop for PacedEvents {
    fn drop(&mut self) {
        if let Some(cut) = &self.cut {
            if self.events.len() > 0 {
                cut.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }
}

impl Stream for PacedEvents {
    type Item = io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.sleeping {
            if this.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleeping = false;
            this.flush_pending = false;
        }
        if !this.paused {
            this.paused = true;
            let wait = this.pause_before_next();
            if !wait.is_zero() {
                this.sleep.as_mut().reset(Instant::now() + wait);
                if this.sleep.as_mut().poll(cx).is_pending() {
                    this.sleeping = true;
                    return Poll::Pending;
                }
                this.flush_pending = false;
            }
        }
        let last_clean = this.events.len() == 0 && this.end == End::Clean;
        if this.flush_pending && !last_clean {
            // Let the HTTP layer write out the event it just got before the next one
            // (or before the abort).
            this.flush_pending = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        match this.events.next() {
            Some(event) => {
                this.sent += 1;
                this.paused = false;
                this.flush_pending = true;
                Poll::Ready(Some(Ok(event)))
            }
            None if this.end == End::Abort => {
                this.end = End::Clean;
                Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "scripted disconnect",
                ))))
            }
            None => Poll::Ready(None),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.events.len();
        (n, Some(n + usize::from(self.end == End::Abort)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn events(n: usize) -> Vec<Bytes> {
        (0..n).map(|i| Bytes::from(format!("e{i}"))).collect()
    }

    async fn collect(s: PacedEvents) -> (Vec<String>, bool) {
        let items: Vec<_> = s.collect().await;
        let aborted = items.last().is_some_and(|r| r.is_err());
        let ok = items
            .into_iter()
            .filter_map(Result::ok)
            .map(|b| String::from_utf8(b.to_vec()).unwrap())
            .collect();
        (ok, aborted)
    }

    #[tokio::test]
    async fn faults_cut_the_stream() {
        assert_eq!(collect(PacedEvents::new(events(4), Duration::ZERO, None)).await.0.len(), 4);
        let (ok, aborted) = collect(PacedEvents::new(
            events(4),
            Duration::ZERO,
            Some(Fault::Disconnect { after_chunks: 2 }),
        ))
        .await;
        assert_eq!((ok, aborted), (vec!["e0".to_owned(), "e1".to_owned()], true));
        // [DONE] (the last event) is never sent before a disconnect.
        let (ok, aborted) = collect(PacedEvents::new(
            events(3),
            Duration::ZERO,
            Some(Fault::Disconnect { after_chunks: 99 }),
        ))
        .await;
        assert_eq!((ok.len(), aborted), (2, true));
        let (ok, aborted) = collect(PacedEvents::new(
            events(4),
            Duration::ZERO,
            Some(Fault::Malformed { after_chunks: 1 }),
        ))
        .await;
        assert!(!aborted);
        assert_eq!(ok, vec!["e0".to_owned(), String::from_utf8(MALFORMED_EVENT.to_vec()).unwrap()]);
    }

    #[tokio::test]
    async fn delay_and_stall_pace_events() {
        let start = Instant::now();
        let mut s = PacedEvents::new(
            events(4),
            Duration::from_millis(20),
            Some(Fault::Stall { after_chunks: 2, stall_ms: 400 }),
        );
        let mut at = Vec::new();
        while let Some(item) = s.next().await {
            item.unwrap();
            at.push((Instant::now() - start).as_millis());
        }
        assert_eq!(at.len(), 4);
        assert!(at[0] < 20, "{at:?}");
        assert!(at[1] - at[0] >= 20, "{at:?}");
        assert!(at[2] - at[1] >= 420, "{at:?}");
        assert!(at[3] - at[2] >= 20 && at[3] - at[2] < 350, "{at:?}");
    }
}
