//! What every request gets, outermost: its id, its span and its log line.
//!
//! * `x-request-id`: the client's, when it sent one of 1 to [`MAX_ID_LEN`] visible ASCII
//!   characters (`!` to `~`); else a generated UUID (v4). The request's handlers see that id
//!   in the header, and every answer carries it.
//! * The span `request` (INFO): `request_id`, `method`, `path`, `route` (the route's template,
//!   `unmatched` when none matched), and at the answer `status`; its OpenTelemetry name is
//!   `{method} {route}`, its kind `server`. With the `otel` feature, a valid W3C `traceparent`
//!   (with its `tracestate`) is its parent (`http::trace_context`); a malformed one is ignored.
//!   The turn's span is its child, also when the turn runs in its own task.
//! * One log line when the answer's head is ready (for a stream: when it starts): message
//!   `request`, `method`, `route`, `path`, `status`, `duration_ms` (fractional), `request_id`;
//!   INFO, DEBUG for `/healthz`, `/readyz` and `/metrics`. Written outside the request's span
//!   (its fields are the span's): in JSON its `request_id` is a top-level field.
//!
//! A plain tower service (no boxed future per request).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method, Uri};
use axum::response::Response;
use tower::{Layer, Service};
use tracing::instrument::{Instrument, Instrumented};

/// The request id's header.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest client request id kept, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// True for a client id the gateway keeps: 1 to [`MAX_ID_LEN`] bytes, each visible ASCII.
pub fn valid_id(v: &HeaderValue) -> bool {
    let b = v.as_bytes();
    !b.is_empty() && b.len() <= MAX_ID_LEN && b.iter().all(|c| (0x21..=0x7e).contains(c))
}

/// A fresh id: a random UUID (version 4), e.g. `0b5c0e0e-3c1a-4f0e-9d2b-6f3a9e1c2d4b`.
pub fn new_id() -> HeaderValue {
    // The version nibble (hex digit 13) is 4; the variant's two bits (digit 17) are `10`.
    const VERSION: (u128, u128) = (0xf << 76, 0x4 << 76);
    const VARIANT: (u128, u128) = (0xc << 60, 0x8 << 60);
    let bits = (rand::random::<u128>() & !VERSION.0 & !VARIANT.0) | VERSION.1 | VARIANT.1;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = [b'-'; 36];
    let mut digits = (0..32).map(|i| HEX[((bits >> (124 - 4 * i)) & 0xf) as usize]);
    for (i, c) in id.iter_mut().enumerate() {
        if ![8, 13, 18, 23].contains(&i) {
            *c = digits.next().unwrap_or(b'0');
        }
    }
    // Hex digits and dashes: always a valid header value.
    HeaderValue::from_bytes(&id).unwrap_or(HeaderValue::from_static("-"))
}

/// The layer (see the module's text).
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestLayer;

impl<S> Layer<S> for RequestLayer {
    type Service = RequestService<S>;
    fn layer(&self, inner: S) -> RequestService<S> {
        RequestService { inner }
    }
}

/// [`RequestLayer`]'s service.
#[derive(Debug, Clone)]
pub struct RequestService<S> {
    inner: S,
}

impl<S> Service<Request> for RequestService<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = RequestFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let started = Instant::now();
        let id = match req.headers().get(&REQUEST_ID) {
            Some(v) if valid_id(v) => v.clone(),
            _ => {
                let v = new_id();
                req.headers_mut().insert(REQUEST_ID.clone(), v.clone());
                v
            }
        };
        let route = req.extensions().get::<MatchedPath>().cloned();
        let (method, uri) = (req.method().clone(), req.uri().clone());
        let route_name = route.as_ref().map_or("unmatched", MatchedPath::as_str);
        // The id is visible ASCII (checked or generated): shown as is.
        let id_text = id.to_str().unwrap_or("-");
        #[cfg(not(feature = "otel"))]
        let span = tracing::info_span!(
            "request",
            request_id = id_text,
            method = %method,
            path = uri.path(),
            route = route_name,
            status = tracing::field::Empty,
        );
        // The same, with the OpenTelemetry span's name, kind and (on a 5xx) status.
        #[cfg(feature = "otel")]
        let span = tracing::info_span!(
            "request",
            request_id = id_text,
            method = %method,
            path = uri.path(),
            route = route_name,
            status = tracing::field::Empty,
            otel.name = format!("{method} {route_name}"),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
        );
        #[cfg(feature = "otel")]
        super::trace_context::adopt(&span, req.headers());
        let inner = span.in_scope(|| self.inner.call(req)).instrument(span);
        RequestFuture { inner, started, id, method, uri, route }
    }
}

pin_project_lite::pin_project! {
    /// [`RequestService`]'s future: the inner answer, with its id header and log line.
    pub struct RequestFuture<F> {
        #[pin]
        inner: Instrumented<F>,
        started: Instant,
        id: HeaderValue,
        method: Method,
        uri: Uri,
        route: Option<MatchedPath>,
    }
}

impl<F, E> Future for RequestFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let mut out = std::task::ready!(this.inner.as_mut().poll(cx));
        if let Ok(resp) = &mut out {
            resp.headers_mut().insert(REQUEST_ID.clone(), this.id.clone());
            let status = resp.status().as_u16();
            let span = this.inner.span();
            span.record("status", status);
            if status >= 500 {
                span.record("otel.status_code", "error");
            }
            let route = this.route.as_ref().map_or("unmatched", MatchedPath::as_str);
            let duration_ms = crate::telemetry::log::millis(this.started.elapsed());
            let (request_id, path) = (this.id.to_str().unwrap_or("-"), this.uri.path());
            let method = &*this.method;
            if matches!(route, "/healthz" | "/readyz" | "/metrics") {
                tracing::debug!(%method, route, path, status, duration_ms, request_id, "request");
            } else {
                tracing::info!(%method, route, path, status, duration_ms, request_id, "request");
            }
        }
        Poll::Ready(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for ok in ["a", "req-123_abc.DEF:9", "!~", &"x".repeat(MAX_ID_LEN)] {
            assert!(valid_id(&HeaderValue::from_str(ok).unwrap()), "{ok}");
        }
        for bad in ["", "a b", "tab\there", &"x".repeat(MAX_ID_LEN + 1)] {
            assert!(!valid_id(&HeaderValue::from_str(bad).unwrap()), "{bad:?}");
        }
        assert!(!valid_id(&HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap()));
        let (a, b) = (new_id(), new_id());
        assert_ne!(a, b);
        let a = a.to_str().unwrap();
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4', "version 4: {a}");
        assert!(matches!(a.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "variant: {a}");
        assert!(valid_id(&HeaderValue::from_str(a).unwrap()));
    }
}
