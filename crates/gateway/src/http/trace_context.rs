//! The W3C trace context of a request (the `otel` feature): a valid `traceparent` header
//! (with its `tracestate`) becomes the parent of the request's span, so the turn's spans
//! join the caller's trace. A missing or malformed one (wrong length, version `ff`, an
//! all-zero trace or span id, non-hex digits) is ignored: the request starts a new trace.

use axum::http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::HeaderExtractor;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Makes the trace context of `headers`, when there is a valid one, the parent of `span`
/// (before the span is entered). No-op without the OpenTelemetry layer.
pub fn adopt(span: &tracing::Span, headers: &HeaderMap) {
    if span.is_disabled() || !headers.contains_key("traceparent") {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    if cx.span().span_context().is_valid() {
        // Errors: no OpenTelemetry layer (traces are not exported), nothing to do.
        let _ = span.set_parent(cx);
    }
}
