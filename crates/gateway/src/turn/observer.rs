//! The turn-observer seam (DESIGN.md "The three seams"): what a turn tells metrics and
//! traces. Every method has a no-op default; [`NoObserver`] is the default observer. Calls
//! come from the turn's own task, in order, and must not block.

use std::time::Duration;

use protocol::response::{ResponseStatus, Usage};

/// Which turn a report is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInfo {
    /// The Response id (`resp_…`).
    pub response_id: String,
    /// The model the upstream serves (after `[models]` mapping).
    pub model: String,
    /// The turn streams its events to a client (`stream: true`).
    pub streamed: bool,
}

/// One upstream round, when it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundReport {
    /// 0 for the turn's first round.
    pub round: usize,
    /// From sending the round to its end (or failure).
    pub latency: Duration,
    /// What the upstream reported for this round (zero when it sent none).
    pub usage: Usage,
    /// The failure's `code` (e.g. `upstream_timeout`, `rate_limit_exceeded`), `None` when the
    /// round streamed to its end.
    pub error: Option<&'static str>,
}

/// How a gateway tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolOutcome {
    /// The executor answered.
    Ok,
    /// The executor failed (the model reads the error).
    Error,
    /// The call's timeout (`tools.call_timeout_ms`) ran out.
    Timeout,
}

impl ToolOutcome {
    /// `ok`, `error` or `timeout` (the metrics' `outcome` label, the spans' `outcome`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolOutcome::Ok => "ok",
            ToolOutcome::Error => "error",
            ToolOutcome::Timeout => "timeout",
        }
    }
}

/// One gateway tool call, when it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReport {
    /// The Responses tool type, e.g. `web_search`, `file_search`, `custom`.
    pub tool_type: &'static str,
    /// Where it ran, e.g. `http`, `openai`, `embedded`, `package_version`.
    pub executor: String,
    pub outcome: ToolOutcome,
    pub duration: Duration,
}

/// A turn, when its terminal status is known.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    pub status: ResponseStatus,
    /// Summed over the turn's rounds and executors' private calls.
    pub usage: Usage,
    /// Upstream rounds made.
    pub rounds: usize,
    /// From the turn's start to its terminal event.
    pub duration: Duration,
    /// Summed over the turn's upstream rounds (each from its sending to its end).
    pub upstream_time: Duration,
    /// Summed over the turn's tool phases (each round's gateway calls, from the first one's
    /// start to the last one's end: parallel calls count once).
    pub tool_time: Duration,
}

impl TurnReport {
    /// What the gateway itself took: `duration` minus `upstream_time` and `tool_time`.
    pub fn overhead(&self) -> Duration {
        self.duration.saturating_sub(self.upstream_time).saturating_sub(self.tool_time)
    }
}

/// Told what a turn does (no-op by default): the seam for metrics and traces.
pub trait TurnObserver: Send + Sync + std::fmt::Debug {
    /// The turn starts (before its first round); every started turn is told `turn_done`.
    fn turn_started(&self, _turn: &TurnInfo) {}
    /// Round `round` (0-based) is about to go upstream.
    fn round_started(&self, _turn: &TurnInfo, _round: usize) {}
    /// The turn's first model output (text, reasoning, refusal or a call) arrived `after`
    /// the turn started.
    fn first_token(&self, _turn: &TurnInfo, _after: Duration) {}
    /// An upstream round ended.
    fn round_done(&self, _turn: &TurnInfo, _report: &RoundReport) {}
    /// A gateway tool call ended.
    fn tool_done(&self, _turn: &TurnInfo, _report: &ToolReport) {}
    /// The turn ended (before its store commit).
    fn turn_done(&self, _turn: &TurnInfo, _report: &TurnReport) {}
}

/// The default observer: does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl TurnObserver for NoObserver {}

/// Several observers, each told everything, in order.
#[derive(Debug, Default)]
pub struct Fanout(pub Vec<std::sync::Arc<dyn TurnObserver>>);

impl TurnObserver for Fanout {
    fn turn_started(&self, turn: &TurnInfo) {
        self.0.iter().for_each(|o| o.turn_started(turn));
    }
    fn round_started(&self, turn: &TurnInfo, round: usize) {
        self.0.iter().for_each(|o| o.round_started(turn, round));
    }
    fn first_token(&self, turn: &TurnInfo, after: Duration) {
        self.0.iter().for_each(|o| o.first_token(turn, after));
    }
    fn round_done(&self, turn: &TurnInfo, report: &RoundReport) {
        self.0.iter().for_each(|o| o.round_done(turn, report));
    }
    fn tool_done(&self, turn: &TurnInfo, report: &ToolReport) {
        self.0.iter().for_each(|o| o.tool_done(turn, report));
    }
    fn turn_done(&self, turn: &TurnInfo, report: &TurnReport) {
        self.0.iter().for_each(|o| o.turn_done(turn, report));
    }
}
