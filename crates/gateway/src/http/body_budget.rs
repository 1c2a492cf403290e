//! The memory budget of request bodies (issue 28, point 3; `[limits] body_memory_bytes`):
//! the bodies being read and parsed at once share it. A body costs
//! [`BODY_COST_FACTOR`] times its size (its bytes, their parsed form, the turn built from
//! them), from its head until its answer starts. A declared size waits for room at most
//! `limits.body_memory_wait_ms` before any byte is read; a body of undeclared size
//! (chunked) takes room as it arrives and is refused at once when there is none. Refused:
//! 503 `server_busy` with `Retry-After`, and the connection closed (its body is unread).
//! Bodies under [`SMALL`] bytes are not counted. After larger ones, freed memory is given
//! back to the system (`crate::memory::Janitor`). WebSocket messages take from the same
//! budget ([`BodyBudget::take_now`]), from their arrival until their turn has started.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Layer, Service};

use crate::config::limits::{LimitsConfig, BODY_COST_FACTOR};

/// Bodies smaller than this many bytes are not counted.
pub const SMALL: u64 = 64 << 10;

/// The budget's unit, in bytes (a semaphore permit).
const UNIT: u64 = 1 << 10;

/// Room a body of undeclared size takes at a time, in units.
const STEP: u32 = 1 << 10;

/// The shared budget; `None` in the layer when it is off.
#[derive(Debug)]
pub struct BodyBudget {
    room: Arc<Semaphore>,
    /// The whole budget, in units.
    total: u32,
    wait: Duration,
    /// Gives memory back to the system after large bodies (`crate::memory`).
    janitor: crate::memory::Janitor,
}

impl BodyBudget {
    /// The budget of `[limits]`; `None` when `body_memory_bytes` is 0.
    pub fn from_config(limits: &LimitsConfig) -> Option<Arc<BodyBudget>> {
        let total = u32::try_from(limits.body_memory_bytes / UNIT).unwrap_or(u32::MAX).min(u32::MAX >> 4);
        (total > 0).then(|| {
            let room = Arc::new(Semaphore::new(total as usize));
            Arc::new(BodyBudget { room, total, wait: Duration::from_millis(limits.body_memory_wait_ms), janitor: Default::default() })
        })
    }

    /// What `bytes` of body cost, in units (at most the whole budget).
    fn cost(&self, bytes: u64) -> u32 {
        let units = bytes.saturating_mul(BODY_COST_FACTOR).div_ceil(UNIT);
        u32::try_from(units).unwrap_or(u32::MAX).clamp(1, self.total)
    }

    /// Room for a message of `bytes` already read whole (a WebSocket message), taken at once
    /// or not at all: `Ok(None)` for a message under [`SMALL`] bytes (not counted),
    /// `Err(NoRoom)` when there is no room (the message is refused `server_busy`). A message
    /// cannot wait as a declared body does: its bytes are in memory already, and its
    /// connection's other responses go on meanwhile.
    pub fn take_now(&self, bytes: u64) -> Result<Option<OwnedSemaphorePermit>, NoRoom> {
        if bytes < SMALL {
            return Ok(None);
        }
        self.janitor.large_body();
        match self.room.clone().try_acquire_many_owned(self.cost(bytes)) {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => {
                tracing::warn!(bytes, available = self.available_bytes(), "websocket message refused: the body budget is full");
                Err(NoRoom)
            }
        }
    }

    /// Room left, in bytes (tests, metrics).
    pub fn available_bytes(&self) -> u64 {
        self.room.available_permits() as u64 * UNIT
    }
}

/// 503 `server_busy` with `Retry-After: 1`, closing the connection.
pub fn busy() -> Response {
    let error = ApiError {
        kind: "server_error".into(),
        ..ApiError::invalid(None, "The gateway is reading too many large request bodies at once; retry shortly (limits.body_memory_bytes).")
            .with_code("server_busy")
    };
    let mut resp = super::error::respond(StatusCode::SERVICE_UNAVAILABLE, error);
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    super::body_read::close(resp)
}

/// The layer.
#[derive(Debug, Clone)]
pub struct BodyBudgetLayer(pub Arc<BodyBudget>);

impl<S> Layer<S> for BodyBudgetLayer {
    type Service = Budgeted<S>;
    fn layer(&self, inner: S) -> Budgeted<S> {
        Budgeted { inner, budget: self.0.clone() }
    }
}

/// [`BodyBudgetLayer`]'s service.
#[derive(Debug, Clone)]
pub struct Budgeted<S> {
    inner: S,
    budget: Arc<BodyBudget>,
}

impl<S> Service<Request> for Budgeted<S>
where
    S: Service<Request, Response = Response> + Clone + Send + 'static,
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
        let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n < SMALL) {
            return Either::Left(self.inner.call(req));
        }
        // The ready service answers; a fresh clone waits for the next request.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let budget = self.budget.clone();
        budget.janitor.large_body();
        Either::Right(Box::pin(async move {
            let Some(n) = declared else {
                let held = Arc::new(Mutex::new(None));
                let refused = Arc::new(AtomicBool::new(false));
                let (h, r, b) = (held.clone(), refused.clone(), budget.clone());
                let req = req.map(|inner| Body::new(Metered { inner, budget: b, held: h, reserved: 0, read: 0, refused: r }));
                let resp = inner.call(req).await?;
                drop(held);
                return Ok(if refused.load(Ordering::Acquire) { busy() } else { resp });
            };
            let cost = budget.cost(n);
            let room = budget.room.clone().acquire_many_owned(cost);
            let Ok(Ok(permit)) = tokio::time::timeout(budget.wait, room).await else {
                tracing::warn!(bytes = n, available = budget.available_bytes(), "request body refused: the body budget is full");
                return Ok(busy());
            };
            let resp = inner.call(req).await;
            drop(permit);
            resp
        }))
    }
}

/// A body of undeclared size: takes room in [`STEP`]s as it arrives; without room, fails
/// (and sets `refused`).
struct Metered {
    inner: Body,
    budget: Arc<BodyBudget>,
    /// The room taken, kept until the answer starts.
    held: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
    /// Room taken, in bytes of body.
    reserved: u64,
    read: u64,
    refused: Arc<AtomicBool>,
}

/// The error of a body refused for want of room (the answer becomes a 503 anyway).
#[derive(Debug)]
pub struct NoRoom;

impl std::fmt::Display for NoRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no room for the request body (limits.body_memory_bytes)")
    }
}

impl std::error::Error for NoRoom {}

impl Metered {
    /// Takes room for `self.read` bytes; false when there is none.
    fn reserve(&mut self) -> bool {
        while self.reserved < self.read {
            let Ok(permit) = self.budget.room.clone().try_acquire_many_owned(STEP) else { return false };
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            match held.as_mut() {
                Some(p) => p.merge(permit),
                None => *held = Some(permit),
            }
            self.reserved += u64::from(STEP) * UNIT / BODY_COST_FACTOR;
        }
        true
    }
}

impl HttpBody for Metered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let frame = std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if let Some(Ok(f)) = &frame {
            this.read += f.data_ref().map_or(0, |d| d.len() as u64);
            if !this.reserve() {
                this.refused.store(true, Ordering::Release);
                return Poll::Ready(Some(Err(axum::Error::new(NoRoom))));
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
