//! `GET /metrics` (Prometheus text format) and the layer that counts answered requests by
//! route template and status (`gateway_http_requests_total`).

use std::sync::Arc;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};
use axum::routing::get;
use axum::Router;

use crate::telemetry::Metrics;

/// The layer that counts each request once its answer's head is ready: a plain tower
/// service (no boxed future or cloned inner service per request, as `from_fn` would make).
#[derive(Clone)]
pub struct CountLayer(pub Arc<Metrics>);

impl<S> Layer<S> for CountLayer {
    type Service = Count<S>;
    fn layer(&self, inner: S) -> Count<S> {
        Count { inner, metrics: self.0.clone() }
    }
}

/// [`CountLayer`]'s service.
#[derive(Clone)]
pub struct Count<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S> Service<Request> for Count<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = CountFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let route = req.extensions().get::<MatchedPath>().cloned();
        CountFuture { inner: self.inner.call(req), route, metrics: self.metrics.clone() }
    }
}

pin_project_lite::pin_project! {
    /// [`Count`]'s future: the inner answer, counted when its head is ready.
    pub struct CountFuture<F> {
        #[pin]
        inner: F,
        route: Option<MatchedPath>,
        metrics: Arc<Metrics>,
    }
}

impl<F, E> Future for CountFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let out = std::task::ready!(this.inner.poll(cx));
        if let Ok(resp) = &out {
            this.metrics.request(this.route.as_ref().map_or("unmatched", MatchedPath::as_str), resp.status().as_u16());
        }
        Poll::Ready(out)
    }
}

/// `GET /metrics`.
pub async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], metrics.render()).into_response()
}

/// The router of a separate metrics listener (`metrics.listen`): `/metrics` only, behind the
/// key check when `guard` is given; its answers carry `x-request-id` and are logged as the
/// main listener's are (`http::request`).
pub fn router(metrics: Arc<Metrics>, guard: Option<Arc<super::auth::Guard>>) -> Router {
    let app = Router::new().route("/metrics", get(scrape)).with_state(metrics).fallback(super::health::not_found);
    let app = match guard {
        Some(g) => app.layer(axum::middleware::from_fn_with_state(g, super::auth::require_key)),
        None => app,
    };
    app.layer(super::request::RequestLayer)
}
