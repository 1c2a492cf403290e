//! The SSE response body. Events are written as soon as the gateway has nothing else to
//! run: the first events after a quiet spell go out at once (so the first delta is never
//! held), and events produced while a burst is still being processed (an upstream that
//! delivered many chunks in one read) share one write, issued when the runtime has run
//! every other ready task. Nothing waits on a timer, so no text is buffered in time; the
//! coalescing only saves one socket write per event. `: keep-alive` comments go out while
//! nothing else is sent. Dropping the body before the turn ended (client gone) drops the
//! turn's attachment, which stops the turn (it ends `incomplete` and is stored so). A
//! background run's followers get its logged events as JSON and render each as the frame
//! its live stream sent.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::task::AtomicWaker;
use futures_util::Stream;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, Sleep};

use crate::service::Attached;

const KEEPALIVE: &[u8] = b": keep-alive\n\n";

/// Held bytes that are written without waiting for the burst to end (bytes).
const MAX_HELD: usize = 32 * 1024;

/// A wake-up deferred until the runtime has run the other ready tasks: the waker that
/// `tokio::task::yield_now` hands to the scheduler's defer list (woken at its next idle
/// point). `fired` tells that wake-up apart from other polls of the connection.
struct Deferral {
    fired: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Deferral {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.task.wake();
    }
}

/// The body stream.
pub struct SseBody {
    rx: UnboundedReceiver<Bytes>,
    interval: Duration,
    timer: Pin<Box<Sleep>>,
    /// Events received but not yet handed to the connection.
    held: Held,
    /// True after a write until a deferred wake-up finds the channel quiet: events that
    /// arrive meanwhile belong to the same burst and wait for `deferred`.
    in_burst: bool,
    deferral: Option<Arc<Deferral>>,
    /// The emitter asked for the held events to be written at once.
    urgent: bool,
    /// `held` bytes when the current deferral started.
    held_at_defer: usize,
    closed: bool,
    /// Dropped with the body (a `store: false` turn is stopped when the client leaves).
    attached: Attached,
    /// The channel carries JSON events (a run's log), rendered here as SSE frames.
    render: bool,
}

/// Held event bytes: one event is kept as is (no copy), several are joined.
#[derive(Default)]
enum Held {
    #[default]
    Empty,
    One(Bytes),
    Many(BytesMut),
}

/// The smallest buffer a burst of several events is gathered in, in bytes.
const MIN_BURST_BYTES: usize = 8 * 1024;

impl Held {
    fn push(&mut self, b: Bytes) {
        *self = match std::mem::take(self) {
            Held::Empty => Held::One(b),
            Held::One(first) => {
                // Room for a burst's usual events: the last one (`response.completed` after
                // the `.done` events) holds the whole Response, and growing by reallocation
                // copied each burst again (~20k instructions per stream).
                let mut buf = BytesMut::with_capacity(((first.len() + b.len()) * 4).max(MIN_BURST_BYTES));
                buf.extend_from_slice(&first);
                buf.extend_from_slice(&b);
                Held::Many(buf)
            }
            Held::Many(mut buf) => {
                buf.extend_from_slice(&b);
                Held::Many(buf)
            }
        }
    }

    fn take(&mut self) -> Option<Bytes> {
        match std::mem::take(self) {
            Held::Empty => None,
            Held::One(b) => Some(b),
            Held::Many(buf) => Some(buf.freeze()),
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Held::Empty)
    }

    fn len(&self) -> usize {
        match self {
            Held::Empty => 0,
            Held::One(b) => b.len(),
            Held::Many(b) => b.len(),
        }
    }
}

impl SseBody {
    /// Reads SSE frames from `rx` (a turn's [`WireSink`](crate::events::wire_sink::WireSink));
    /// `interval` is the keep-alive period; `attached` is dropped with the body.
    pub fn new(rx: UnboundedReceiver<Bytes>, interval: Duration, attached: Attached) -> Self {
        SseBody::with(rx, interval, attached, false)
    }

    /// Reads JSON events from `rx` (a background run's log, `crate::background`) and sends
    /// each as its SSE frame.
    pub fn from_events(rx: UnboundedReceiver<Bytes>, interval: Duration) -> Self {
        SseBody::with(rx, interval, Attached::default(), true)
    }

    fn with(rx: UnboundedReceiver<Bytes>, interval: Duration, attached: Attached, render: bool) -> Self {
        SseBody {
            rx,
            interval,
            timer: Box::pin(tokio::time::sleep(interval)),
            held: Held::Empty,
            in_burst: false,
            deferral: None,
            urgent: false,
            held_at_defer: 0,
            closed: false,
            attached,
            render,
        }
    }

    /// The HTTP response: 200 `text/event-stream`, no caching, no proxy buffering.
    pub fn into_response(self) -> Response {
        let mut resp = Response::new(Body::from_stream(self));
        *resp.status_mut() = StatusCode::OK;
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        h.insert("x-accel-buffering", HeaderValue::from_static("no"));
        resp
    }

    /// Moves every queued event into `held`; notes the end of the channel. With
    /// `register`, a new event wakes the task; without, only the deferred wake-up does.
    fn drain(&mut self, cx: &mut Context<'_>, register: bool) {
        while !self.closed {
            if register {
                match self.rx.poll_recv(cx) {
                    Poll::Ready(Some(b)) => self.receive(b),
                    Poll::Ready(None) => self.closed = true,
                    Poll::Pending => break,
                }
            } else {
                match self.rx.try_recv() {
                    Ok(b) => self.receive(b),
                    Err(TryRecvError::Disconnected) => self.closed = true,
                    Err(TryRecvError::Empty) => break,
                }
            }
        }
    }

    /// An empty frame is the emitter's "write now" mark (after the first delta).
    fn receive(&mut self, b: Bytes) {
        if b.is_empty() {
            self.urgent = true;
        } else if self.render {
            self.held.push(crate::events::wire_sink::sse_frame_of(&b));
        } else {
            self.held.push(b);
        }
    }

    /// Asks to be polled again once the runtime has run the other ready tasks; true
    /// when that point has been reached (the deferred wake-up fired).
    fn deferred(&mut self, cx: &mut Context<'_>) -> bool {
        if let Some(d) = &self.deferral {
            if d.fired.load(Ordering::Acquire) {
                self.deferral = None;
                return true;
            }
            d.task.register(cx.waker());
            return false;
        }
        let d = Arc::new(Deferral { fired: AtomicBool::new(false), task: AtomicWaker::new() });
        d.task.register(cx.waker());
        let waker = Waker::from(d.clone());
        // Its first poll puts `waker` on the scheduler's defer list (or wakes it at once
        // outside a runtime); the future itself is not needed after that.
        let mut fut = std::pin::pin!(tokio::task::yield_now());
        let _ = fut.as_mut().poll(&mut Context::from_waker(&waker));
        self.held_at_defer = self.held.len();
        self.deferral = Some(d);
        false
    }

    /// Hands the held events to the connection and starts (or continues) a burst.
    fn write(&mut self) -> Poll<Option<Result<Bytes, std::convert::Infallible>>> {
        let deadline = Instant::now() + self.interval;
        self.timer.as_mut().reset(deadline);
        self.in_burst = true;
        self.deferral = None;
        Poll::Ready(self.held.take().map(Ok))
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.in_burst {
            // Events arriving meanwhile do not wake us; the deferred wake-up does.
            this.drain(cx, false);
            if this.closed || std::mem::take(&mut this.urgent) {
                if !this.held.is_empty() {
                    return this.write();
                }
            } else if !this.deferred(cx) {
                return Poll::Pending;
            } else if this.held.len() > this.held_at_defer && this.held.len() < MAX_HELD {
                // Events kept coming while everything else ran: the burst goes on.
                let _ = this.deferred(cx);
                return Poll::Pending;
            } else if !this.held.is_empty() {
                return this.write();
            }
            // Quiet: the burst is over.
            this.in_burst = false;
        }
        this.drain(cx, true);
        this.urgent = false;
        if this.closed {
            // The turn ended: nothing to cancel any more; write what is left, then end.
            this.attached.release();
            return if this.held.is_empty() { Poll::Ready(None) } else { this.write() };
        }
        if !this.held.is_empty() {
            return this.write();
        }
        match this.timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                let deadline = Instant::now() + this.interval;
                this.timer.as_mut().reset(deadline);
                Poll::Ready(Some(Ok(Bytes::from_static(KEEPALIVE))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
