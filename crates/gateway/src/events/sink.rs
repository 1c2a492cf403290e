//! Where a turn's events go, as soon as each exists: the [`EventSink`] seam (DESIGN.md "The
//! three seams"). The wire writer (`events::wire_sink`: SSE frames, the run log's JSON
//! events, WebSocket messages) is one sink; a non-streamed turn has none (its answer is the
//! emitter's own fold, which every turn keeps because the terminal events carry the whole
//! Response); [`Recorder`] keeps the events (tests).

use std::sync::{Arc, Mutex};

use protocol::events::EventKind;
use protocol::Response;

/// The delta events with a fast path of their own (content part 0 of a message or a
/// reasoning item): a sink may write them from a fixed layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaKind {
    /// `response.output_text.delta` (contract §8.4 a).
    OutputText,
    /// `response.reasoning_text.delta` (contract §8.4 h).
    ReasoningText,
}

/// A consumer of one response's canonical events, in order; `seq` is each event's
/// `sequence_number` (contiguous from 0). Called on the turn's task: it must not block.
pub trait EventSink: Send + std::fmt::Debug {
    /// One event.
    fn event(&mut self, kind: &EventKind, seq: u64);
    /// The delta event `kind` of part 0 of the item `item_id` at `output_index`: the same
    /// event as [`EventSink::event`] would get (`logprobs: []` for text).
    fn content_delta(&mut self, kind: DeltaKind, item_id: &str, output_index: usize, delta: &str, seq: u64);
    /// `response.created` (`seq`) and `response.in_progress` (`seq + 1`), both carrying `response`.
    fn started(&mut self, response: &Response, seq: u64);
    /// The terminal event `name` (`response.completed` | `.incomplete` | `.failed`) carrying
    /// the final `response`.
    fn terminal(&mut self, name: &'static str, response: &Response, seq: u64);
    /// Called after the response's first delta of any kind (text, reasoning, arguments): a
    /// sink that batches writes sends what it holds now, so the first token is never held.
    fn first_delta(&mut self) {}
    /// True once nothing reads the events any more (the client left).
    fn is_closed(&self) -> bool {
        false
    }
}

/// The event [`EventSink::content_delta`] stands for.
pub fn delta_event(kind: DeltaKind, item_id: &str, output_index: usize, delta: &str) -> EventKind {
    let (item_id, delta) = (item_id.to_string(), delta.to_string());
    match kind {
        DeltaKind::OutputText => EventKind::OutputTextDelta { item_id, output_index, content_index: 0, delta, logprobs: Vec::new() },
        DeltaKind::ReasoningText => EventKind::ReasoningTextDelta { item_id, output_index, content_index: 0, delta },
    }
}

/// The event [`EventSink::terminal`] stands for; `None` for a name that is not terminal.
pub fn terminal_event(name: &str, response: &Response) -> Option<EventKind> {
    let response = Box::new(response.clone());
    match name {
        "response.completed" => Some(EventKind::Completed { response }),
        "response.incomplete" => Some(EventKind::Incomplete { response }),
        "response.failed" => Some(EventKind::Failed { response }),
        _ => None,
    }
}

/// Keeps every event with its sequence number; clones share the list.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<(u64, EventKind)>>>,
}

impl Recorder {
    /// The events so far, in order.
    pub fn events(&self) -> Vec<(u64, EventKind)> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }

    fn push(&self, seq: u64, kind: EventKind) {
        if let Ok(mut e) = self.events.lock() {
            e.push((seq, kind));
        }
    }
}

impl EventSink for Recorder {
    fn event(&mut self, kind: &EventKind, seq: u64) {
        self.push(seq, kind.clone());
    }

    fn content_delta(&mut self, kind: DeltaKind, item_id: &str, output_index: usize, delta: &str, seq: u64) {
        self.push(seq, delta_event(kind, item_id, output_index, delta));
    }

    fn started(&mut self, response: &Response, seq: u64) {
        self.push(seq, EventKind::Created { response: Box::new(response.clone()) });
        self.push(seq + 1, EventKind::InProgress { response: Box::new(response.clone()) });
    }

    fn terminal(&mut self, name: &'static str, response: &Response, seq: u64) {
        if let Some(kind) = terminal_event(name, response) {
            self.push(seq, kind);
        }
    }
}
