//! The turn observer that records metrics: turns by status, TTFT, turn duration, rounds per
//! turn, upstream round latency and errors by kind, tool calls by type, executor and outcome
//! with their duration, active streams, the gateway's own share of a turn (its duration
//! minus its upstream and tool time), and the tokens turns spent by model and status. Handles without per-call labels are registered once.

use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram, Label};
use protocol::response::ResponseStatus;

use super::{names, Metrics};
use crate::turn::observer::{RoundReport, ToolReport, TurnInfo, TurnObserver, TurnReport};

/// Records what turns do into [`Metrics`].
#[derive(Debug)]
pub struct MetricsObserver {
    metrics: Arc<Metrics>,
    turns: [Counter; 6],
    ttft: Histogram,
    duration: Histogram,
    rounds: Histogram,
    round_latency: Histogram,
    overhead: Histogram,
    active_streams: Gauge,
}

const STATUSES: [&str; 6] = ["completed", "incomplete", "failed", "cancelled", "in_progress", "queued"];

fn status_index(s: ResponseStatus) -> usize {
    match s {
        ResponseStatus::Completed => 0,
        ResponseStatus::Incomplete => 1,
        ResponseStatus::Failed => 2,
        ResponseStatus::Cancelled => 3,
        ResponseStatus::InProgress => 4,
        ResponseStatus::Queued => 5,
    }
}

impl MetricsObserver {
    /// An observer recording into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> MetricsObserver {
        let turns = STATUSES.map(|s| metrics.counter(names::TURNS, vec![Label::from_static_parts("status", s)]));
        MetricsObserver {
            turns,
            ttft: metrics.histogram(names::TTFT, Vec::new()),
            duration: metrics.histogram(names::TURN_DURATION, Vec::new()),
            rounds: metrics.histogram(names::TURN_ROUNDS, Vec::new()),
            round_latency: metrics.histogram(names::ROUND_DURATION, Vec::new()),
            overhead: metrics.histogram(names::OVERHEAD, Vec::new()),
            active_streams: metrics.gauge(names::ACTIVE_STREAMS),
            metrics,
        }
    }
}

impl TurnObserver for MetricsObserver {
    fn turn_started(&self, turn: &TurnInfo) {
        if turn.streamed {
            self.active_streams.increment(1.0);
        }
    }

    fn first_token(&self, _turn: &TurnInfo, after: std::time::Duration) {
        self.ttft.record(after.as_secs_f64());
    }

    fn round_done(&self, _turn: &TurnInfo, report: &RoundReport) {
        self.round_latency.record(report.latency.as_secs_f64());
        if let Some(kind) = report.error {
            self.metrics.counter(names::UPSTREAM_ERRORS, vec![Label::from_static_parts("kind", kind)]).increment(1);
        }
    }

    fn tool_done(&self, _turn: &TurnInfo, report: &ToolReport) {
        let (ty, executor) = (Label::from_static_parts("type", report.tool_type), Label::new("executor", report.executor.clone()));
        let outcome = Label::from_static_parts("outcome", report.outcome.as_str());
        self.metrics.counter(names::TOOL_CALLS, vec![ty.clone(), executor.clone(), outcome]).increment(1);
        self.metrics.histogram(names::TOOL_DURATION, vec![ty, executor]).record(report.duration.as_secs_f64());
    }

    fn turn_done(&self, turn: &TurnInfo, report: &TurnReport) {
        if let Some(c) = self.turns.get(status_index(report.status)) {
            c.increment(1);
        }
        // Tokens by model and status only (no per-key label: bounded cardinality); a turn
        // that spent none (an unknown model, a refused request) adds no series.
        let u = &report.usage;
        if u.input_tokens > 0 || u.output_tokens > 0 {
            let status = STATUSES.get(status_index(report.status)).copied().unwrap_or("completed");
            let labels = || vec![Label::new("model", turn.model.clone()), Label::from_static_parts("status", status)];
            for (name, n) in [
                (names::INPUT_TOKENS, u.input_tokens),
                (names::OUTPUT_TOKENS, u.output_tokens),
                (names::CACHED_TOKENS, u.input_tokens_details.cached_tokens),
                (names::REASONING_TOKENS, u.output_tokens_details.reasoning_tokens),
            ] {
                self.metrics.counter(name, labels()).increment(n);
            }
        }
        self.duration.record(report.duration.as_secs_f64());
        self.rounds.record(report.rounds as f64);
        self.overhead.record(report.overhead().as_secs_f64());
        if turn.streamed {
            self.active_streams.decrement(1.0);
        }
    }
}
