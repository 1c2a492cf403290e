//! Prometheus metrics (`[metrics]`): one recorder per gateway (not the process-wide one, so
//! that several gateways in a process, as in tests, keep apart), fed by the turn observer
//! ([`observer::MetricsObserver`]), the store decorator ([`store::TimedStore`]) and the HTTP
//! layer's request count ([`Metrics::request`]). Rendered in Prometheus' text format.
//! Also the log ([`log`]: the subscriber, the per-turn line) and, with the `otel` feature,
//! the OpenTelemetry trace exporter ([`otel`]).

pub mod log;
pub mod observer;
#[cfg(feature = "otel")]
pub mod otel;
pub mod store;
pub mod text;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

/// Metric names (documented in `docs/configuration.md#metrics`).
pub mod names {
    pub const HTTP_REQUESTS: &str = "gateway_http_requests_total";
    pub const TURNS: &str = "gateway_turns_total";
    pub const TURN_DURATION: &str = "gateway_turn_duration_seconds";
    pub const TTFT: &str = "gateway_ttft_seconds";
    pub const TURN_ROUNDS: &str = "gateway_turn_rounds";
    pub const ROUND_DURATION: &str = "gateway_upstream_round_duration_seconds";
    pub const UPSTREAM_ERRORS: &str = "gateway_upstream_errors_total";
    pub const TOOL_CALLS: &str = "gateway_tool_calls_total";
    pub const TOOL_DURATION: &str = "gateway_tool_call_duration_seconds";
    pub const OVERHEAD: &str = "gateway_overhead_seconds";
    pub const ACTIVE_STREAMS: &str = "gateway_active_streams";
    pub const WEBSOCKET_CONNECTIONS: &str = "gateway_websocket_connections";
    pub const WEBSOCKET_MESSAGES: &str = "gateway_websocket_messages_total";
    pub const WEBSOCKET_EVENTS: &str = "gateway_websocket_events_total";
    pub const STORE_DURATION: &str = "gateway_store_operation_duration_seconds";
    pub const INPUT_TOKENS: &str = "gateway_input_tokens_total";
    pub const OUTPUT_TOKENS: &str = "gateway_output_tokens_total";
    pub const CACHED_TOKENS: &str = "gateway_cached_tokens_total";
    pub const REASONING_TOKENS: &str = "gateway_reasoning_tokens_total";
}

/// Latency buckets, seconds: 1 ms to 2 min.
const SECONDS: [f64; 16] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];
/// Gateway overhead and store buckets, seconds: 50 µs to 1 s.
const SMALL_SECONDS: [f64; 12] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 1.0];
/// Rounds per turn.
const ROUNDS: [f64; 8] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 16.0];

static METADATA: Metadata<'static> = Metadata::new("responses_gateway", Level::INFO, None);

/// The gateway's metrics: its recorder and what renders it.
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    /// `gateway_http_requests_total` by route template, then status: registered once each
    /// (a request then costs a map lookup, not a key built and hashed by the registry).
    /// Bounded: routes are the router's templates (and `unmatched`), statuses are few.
    requests: RwLock<HashMap<String, Vec<(u16, Counter)>>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// A fresh recorder with the gateway's histogram buckets. Errors: a bucket list the
    /// exporter refuses (a bug).
    pub fn new() -> anyhow::Result<Arc<Metrics>> {
        let small = Matcher::Full(names::OVERHEAD.into());
        let recorder = PrometheusBuilder::new()
            .set_buckets(&SECONDS)?
            .set_buckets_for_metric(small, &SMALL_SECONDS)?
            .set_buckets_for_metric(Matcher::Full(names::STORE_DURATION.into()), &SMALL_SECONDS)?
            .set_buckets_for_metric(Matcher::Full(names::TURN_ROUNDS.into()), &ROUNDS)?
            .build_recorder();
        let handle = recorder.handle();
        Ok(Arc::new(Metrics { recorder, handle, requests: RwLock::default() }))
    }

    /// Starts the periodic upkeep (every 5 s) that folds recorded histogram samples, so that
    /// an unscraped gateway does not keep them all. Needs a tokio runtime; stops with the
    /// last reference to `self`.
    pub fn start_upkeep(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(5));
            loop {
                tick.tick().await;
                match weak.upgrade() {
                    Some(m) => m.handle.run_upkeep(),
                    None => break,
                }
            }
        });
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        self.handle.render()
    }

    /// A counter named `name` with `labels`.
    pub fn counter(&self, name: &'static str, labels: Vec<Label>) -> Counter {
        self.recorder.register_counter(&Key::from_parts(name, labels), &METADATA)
    }

    /// A histogram named `name` with `labels`.
    pub fn histogram(&self, name: &'static str, labels: Vec<Label>) -> Histogram {
        self.recorder.register_histogram(&Key::from_parts(name, labels), &METADATA)
    }

    /// A gauge named `name` without labels.
    pub fn gauge(&self, name: &'static str) -> Gauge {
        self.recorder.register_gauge(&Key::from_static_name(name), &METADATA)
    }

    /// Counts one answered HTTP request: its route template (`unmatched` when none matched)
    /// and status.
    pub fn request(&self, route: &str, status: u16) {
        if let Ok(map) = self.requests.read() {
            if let Some((_, c)) = map.get(route).and_then(|v| v.iter().find(|(s, _)| *s == status)) {
                c.increment(1);
                return;
            }
        }
        let labels = vec![Label::new("route", route.to_string()), Label::new("status", status_label(status))];
        let counter = self.counter(names::HTTP_REQUESTS, labels);
        counter.increment(1);
        if let Ok(mut map) = self.requests.write() {
            let statuses = map.entry(route.to_string()).or_default();
            if !statuses.iter().any(|(s, _)| *s == status) {
                statuses.push((status, counter));
            }
        }
    }
}

/// A status code as a label value, without allocating for the usual ones.
fn status_label(status: u16) -> metrics::SharedString {
    match status {
        200 => "200".into(),
        400 => "400".into(),
        401 => "401".into(),
        404 => "404".into(),
        429 => "429".into(),
        500 => "500".into(),
        502 => "502".into(),
        503 => "503".into(),
        s => s.to_string().into(),
    }
}
