//! The SSE response body: events are written as soon as the emitter produced them
//! (events already queued share one write), with `: keep-alive` comments while nothing
//! else is sent. Dropping the body (client gone) can cancel the turn's task.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::AbortHandle;
use tokio::time::{Instant, Sleep};

const KEEPALIVE: &[u8] = b": keep-alive\n\n";

/// The body stream.
pub struct SseBody {
    rx: UnboundedReceiver<Bytes>,
    interval: Duration,
    timer: Pin<Box<Sleep>>,
    /// Aborted on drop (a `store: false` turn is cancelled when the client leaves).
    cancel_on_drop: Option<AbortHandle>,
}

impl SseBody {
    /// Reads event bytes from `rx`.
    pub fn new(rx: UnboundedReceiver<Bytes>, interval: Duration, cancel_on_drop: Option<AbortHandle>) -> Self {
        SseBody { rx, interval, timer: Box::pin(tokio::time::sleep(interval)), cancel_on_drop }
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
}

impl Drop for SseBody {
    fn drop(&mut self) {
        if let Some(h) = self.cancel_on_drop.take() {
            h.abort();
        }
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(first)) => {
                let mut out: Option<BytesMut> = None;
                while let Ok(more) = this.rx.try_recv() {
                    let buf = out.get_or_insert_with(|| BytesMut::from(&first[..]));
                    buf.extend_from_slice(&more);
                }
                let deadline = Instant::now() + this.interval;
                this.timer.as_mut().reset(deadline);
                Poll::Ready(Some(Ok(out.map(BytesMut::freeze).unwrap_or(first))))
            }
            Poll::Ready(None) => {
                // The turn ended; nothing to cancel any more.
                this.cancel_on_drop = None;
                Poll::Ready(None)
            }
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let deadline = Instant::now() + this.interval;
                    this.timer.as_mut().reset(deadline);
                    Poll::Ready(Some(Ok(Bytes::from_static(KEEPALIVE))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}
