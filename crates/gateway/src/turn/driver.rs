//! The run driver: a prepared turn runs against an [`EventSink`] (or none), apart from any
//! transport (DESIGN.md "The three seams"). A stored turn is committed before its terminal
//! event, so a failed commit still ends a stream with `response.failed`.

use tracing::Instrument;

use crate::events::{Emitter, EventSink};
use crate::store::StoreError;
use crate::turn::run::Runner;
use crate::turn::{persist, run, Outcome, Prepared};

/// The message of a failed end-of-turn write (the `response.failed` of a stream, the 5xx of
/// a non-streamed turn).
pub const COMMIT_FAILED: &str = "The response could not be stored; it was not saved and cannot be continued.";

/// A turn whose first events (`response.created`, `response.in_progress`) have gone to its
/// sink: the caller can answer (send the response head) before the turn runs.
/// Both parts are boxed: the turn moves into its task and its run, and two pointers move
/// cheaper than kilobytes of state.
#[derive(Debug)]
pub struct Started {
    prepared: Box<Prepared>,
    emitter: Box<Emitter>,
    /// The turn's span ([`turn_span`]), made by [`start`] as a child of the caller's span.
    span: tracing::Span,
}

/// Starts a turn: its emitter sends `response.created` and `response.in_progress` to
/// `sink` now (none: a non-streamed turn). Its span is made here, a child of the current
/// span (the request's), so it keeps that parent when it runs in a task of its own.
pub fn start(prepared: Prepared, sink: Option<Box<dyn EventSink>>) -> Started {
    begin(prepared, sink, false)
}

/// Starts a background run taken from the queue: its stream already holds
/// `response.created` and `response.queued` (sequence numbers 0 and 1), so its emitter
/// sends `response.in_progress` (2) and goes on from there.
pub fn start_dequeued(prepared: Prepared, sink: Option<Box<dyn EventSink>>) -> Started {
    begin(prepared, sink, true)
}

fn begin(prepared: Prepared, sink: Option<Box<dyn EventSink>>, dequeued: bool) -> Started {
    let has_sink = sink.is_some();
    let mut prepared = Box::new(prepared);
    let mut emitter = Box::new(Emitter::new(std::mem::take(&mut prepared.base), sink));
    if dequeued {
        emitter.start_dequeued();
    } else {
        emitter.start();
    }
    if has_sink && prepared.persist.is_some() {
        // Commit first, then send the terminal event (or response.failed).
        emitter.hold_terminal();
    }
    let span = turn_span(&prepared, &emitter);
    Started { prepared, emitter, span }
}

impl Started {
    /// True when the turn is stored at its end (`store: true` or a conversation): a client
    /// that leaves does not cancel it.
    pub fn is_stored(&self) -> bool {
        self.prepared.persist.is_some()
    }

    /// Runs the turn to its terminal event, committing it first when it is stored. Errors:
    /// the commit failed (nothing was stored; a stream has ended with `response.failed`).
    /// Runs in the turn's span ([`turn_span`]).
    pub async fn run(self, runner: &Runner) -> Result<Outcome, StoreError> {
        let span = self.span.clone();
        self.run_here(runner).instrument(span).await
    }

    async fn run_here(self, runner: &Runner) -> Result<Outcome, StoreError> {
        let Started { mut prepared, mut emitter, .. } = self;
        let plan = prepared.persist.take();
        let keep = prepared.keep_transcript;
        let mut outcome = Box::pin(run(*prepared, runner, &mut emitter)).await;
        let Some(plan) = plan else { return Ok(outcome) };
        let transcript = if keep { outcome.transcript.clone() } else { std::mem::take(&mut outcome.transcript) };
        match Box::pin(persist::commit(plan, &outcome.response, transcript)).await {
            Ok(()) => {
                emitter.release_terminal();
                Ok(outcome)
            }
            Err(e) => {
                tracing::error!(error = %e, "storing the turn failed");
                let span = tracing::Span::current();
                span.record("status", "failed");
                span.record("error", "store_error");
                span.record("otel.status_code", "error");
                emitter.fail_terminal("server_error", COMMIT_FAILED);
                Err(e)
            }
        }
    }
}

/// The turn's span, `turn` (INFO): `response_id`, `model` (the Response's), `upstream_model`,
/// `previous_response_id` and `conversation` when set, `stream`, `store`; at its end
/// `status` (the Response's), `rounds`, and on a failed turn `error` (its code) and
/// `otel.status_code = "error"`. Its rounds' spans (`round`, DEBUG) and their gateway tool
/// calls' spans (`tool_call`, DEBUG) are its children (`turn::run`, `turn::execute`); the
/// tokens are on the turn's log line (`telemetry::log::TurnLog`).
fn turn_span(prepared: &Prepared, emitter: &Emitter) -> tracing::Span {
    let r = emitter.response();
    tracing::info_span!(
        "turn",
        response_id = %r.id,
        model = %r.model,
        upstream_model = %prepared.upstream_model,
        previous_response_id = r.previous_response_id.as_deref(),
        conversation = r.conversation.as_ref().map(|c| c.id.as_str()),
        stream = prepared.stream,
        store = prepared.persist.is_some(),
        status = tracing::field::Empty,
        rounds = tracing::field::Empty,
        error = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}
