//! How a request body is read at the edge (issue 28, points 1 and 4), outside every other
//! layer but the request's id and log line:
//!
//! * A deadline for the whole body, `server.request_body_timeout_ms` from the request's head
//!   (default 60 s; the per-piece `server.request_read_timeout_ms` still applies): past it,
//!   the answer is 408 `request_timeout` and the connection is closed.
//! * An answer sent before its body was read (a 401, 404, 405, 413, 429, a refused origin…)
//!   leaves the connection usable, or says it closes it. hyper drops a connection whose
//!   unread body is not already in its buffer, without `Connection: close`, so a client that
//!   reuses it fails. Here the unread rest is read and dropped after the answer: a declared
//!   rest of at most [`DRAIN_MAX`] bytes keeps the connection alive; anything else (more,
//!   an undeclared length, `Expect: 100-continue`, a 408) answers `Connection: close`, and
//!   the rest is still read (at most [`LINGER_MAX`] bytes, [`LINGER_TIME`]) so that a client
//!   still sending gets the answer rather than a reset.
//!
//! A plain tower service: a request without a body costs nothing more.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures_util::future::{BoxFuture, Either};
use http_body::{Frame, SizeHint};
use protocol::ApiError;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// The most unread body bytes read after an answer on a connection kept alive.
pub const DRAIN_MAX: u64 = 1 << 20;

/// The most unread body bytes read after an answer that closes its connection.
pub const LINGER_MAX: u64 = 64 << 20;

/// How long the unread rest of a body is read after the answer, at most.
pub const LINGER_TIME: Duration = Duration::from_secs(5);

/// The 408 of a body that did not arrive whole in time.
pub fn too_slow() -> Response {
    let error = ApiError::invalid(None, "The request body did not arrive in time (server.request_body_timeout_ms).")
        .with_code("request_timeout");
    close(super::error::respond(StatusCode::REQUEST_TIMEOUT, error))
}

/// Marks `resp` as the connection's last answer.
pub fn close(mut resp: Response) -> Response {
    resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// The layer; `deadline` is the whole body's (`server.request_body_timeout_ms`).
#[derive(Debug, Clone, Copy)]
pub struct BodyReadLayer {
    pub deadline: Duration,
}

impl<S> Layer<S> for BodyReadLayer {
    type Service = BodyRead<S>;
    fn layer(&self, inner: S) -> BodyRead<S> {
        BodyRead { inner, deadline: self.deadline }
    }
}

/// [`BodyReadLayer`]'s service.
#[derive(Debug, Clone)]
pub struct BodyRead<S> {
    inner: S,
    deadline: Duration,
}

impl<S> Service<Request> for BodyRead<S>
where
    S: Service<Request, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.body().is_end_stream() {
            return Either::Left(self.inner.call(req));
        }
        let headers = req.headers();
        let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        let expects_continue = headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        let (back, mut returned) = oneshot::channel();
        let late = Arc::new(AtomicBool::new(false));
        let deadline = Box::pin(tokio::time::sleep_until(Instant::now() + self.deadline));
        let watched = late.clone();
        let req = req.map(|inner| Body::new(Watched { inner: Some(inner), read: 0, deadline, late: watched, back: Some(back) }));
        let answer = self.inner.call(req);
        Either::Right(Box::pin(async move {
            let resp = answer.await?;
            if late.load(Ordering::Acquire) {
                return Ok(too_slow());
            }
            // The body, if the answer left it unread (one read to its end is not sent back;
            // one still held, e.g. by the answer's body, is not there yet).
            let Ok(Unread { body, read }) = returned.try_recv() else { return Ok(resp) };
            let keep = declared.is_some_and(|n| n.saturating_sub(read) <= DRAIN_MAX);
            if resp.status() == StatusCode::REQUEST_TIMEOUT || expects_continue {
                // Nothing more is coming, or the client waits to be asked for it.
                return Ok(close(resp));
            }
            tokio::spawn(drain(body, if keep { DRAIN_MAX } else { LINGER_MAX }));
            Ok(if keep { resp } else { close(resp) })
        }))
    }
}

/// Reads and drops at most `max` bytes of `body` for at most [`LINGER_TIME`]; stopping
/// earlier drops it (hyper then closes the connection).
async fn drain(mut body: Body, max: u64) {
    let mut read = 0u64;
    let _ = tokio::time::timeout(LINGER_TIME, async {
        while let Some(Ok(frame)) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            read += frame.data_ref().map_or(0, |d| d.len() as u64);
            if read > max {
                break;
            }
        }
    })
    .await;
}

/// A body left unread by the answer, and how much of it was read.
struct Unread {
    body: Body,
    read: u64,
}

/// The request body as the handlers see it: past the deadline it fails (and `late` is
/// set); dropped before its end, it goes back to [`BodyRead`]'s answer.
struct Watched {
    inner: Option<Body>,
    read: u64,
    deadline: Pin<Box<Sleep>>,
    late: Arc<AtomicBool>,
    back: Option<oneshot::Sender<Unread>>,
}

/// The error of a body past its deadline (the answer becomes a 408 anyway).
#[derive(Debug)]
struct TooSlow;

impl std::fmt::Display for TooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for TooSlow {}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else { return Poll::Ready(None) };
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                this.read += frame.data_ref().map_or(0, |d| d.len() as u64);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(end) => {
                // Read to its end (or broken: hyper closes the connection itself).
                this.inner = None;
                Poll::Ready(end)
            }
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.late.store(true, Ordering::Release);
                    Poll::Ready(Some(Err(axum::Error::new(TooSlow))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.as_ref().map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let (Some(body), Some(back)) = (self.inner.take(), self.back.take()) {
            if !body.is_end_stream() {
                let _ = back.send(Unread { body, read: self.read });
            }
        }
    }
}
