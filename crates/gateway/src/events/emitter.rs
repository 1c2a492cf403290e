//! The ONE place that assigns `sequence_number`, `output_index` and item ids, and the
//! only producer of canonical events (contract §8.4). Each event is written to the SSE
//! sink (if streaming) as soon as it exists, then folded into the [`Accumulator`].

use protocol::events::{ErrorEventDetail, EventKind};
use protocol::output::{ItemStatus, OutputContent, OutputItem, Phase, ReasoningSummary};
use protocol::response::{IncompleteDetails, ResponseError, ResponseStatus, Usage};
use protocol::Response;

use super::ids::new_id;
use super::sink::{DeltaKind, EventSink};
use super::ids::PROGRESS_ID_PREFIX;
use super::Accumulator;

/// `incomplete_details.reason` of a foreground turn stopped because its client left (the
/// gateway's value: the SDK's `IncompleteDetails.reason` names `max_output_tokens` and
/// `content_filter` only, and neither says this; docs/behaviour.md).
pub const CLIENT_DISCONNECTED: &str = "client_disconnected";

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Terminal {
    Completed,
    /// `incomplete_details.reason`: `max_output_tokens` | `content_filter`, or the
    /// gateway's own [`CLIENT_DISCONNECTED`].
    Incomplete(String),
    /// Cut short by the gateway's shutdown: `incomplete` without `incomplete_details` (the
    /// contract's reasons are `max_output_tokens` and `content_filter` only).
    Interrupted,
    /// A background response cancelled by `POST /v1/responses/{id}/cancel`: status
    /// `cancelled`. The stream event is `response.incomplete` (the Responses stream has no
    /// `response.cancelled` event; its Response carries the status).
    Cancelled,
    /// `{code, message}` for `response.error`.
    Failed { code: String, message: String },
}


/// `response.error.code` of a failed Response for a failure's `code` (the one on the `error`
/// event), one of the codes the SDK's `ResponseError` allows: `invalid_prompt` for the
/// upstream's refusal of the request (clients such as Codex CLI do not retry it),
/// `rate_limit_exceeded`, else `server_error`.
pub fn response_error_code(code: &str) -> &'static str {
    match code {
        "upstream_rejected_request" | "context_length_exceeded" | "model_not_found" | "unsupported_input" => "invalid_prompt",
        "rate_limit_exceeded" => "rate_limit_exceeded",
        _ => "server_error",
    }
}

/// Emits events for one response.
#[derive(Debug)]
pub struct Emitter {
    seq: u64,
    sink: Option<Box<dyn EventSink>>,
    pub(super) acc: Accumulator,
    /// Set by [`Emitter::hold_terminal`]: the terminal event waits for the store's commit.
    hold: bool,
    /// The held terminal event's name; its Response is the folded one.
    held: Option<&'static str>,
    /// The sink was told of the first delta.
    first_delta_sent: bool,
}

impl Emitter {
    /// `base` is the echo of the request (status `in_progress`, empty output); `sink` gets
    /// each event as it is produced (none: the fold alone, for a non-streamed answer).
    pub fn new(base: Response, sink: Option<Box<dyn EventSink>>) -> Self {
        Emitter { seq: 0, sink, acc: Accumulator::new(base), hold: false, held: None, first_delta_sent: false }
    }

    /// Holds the terminal event back: [`Emitter::finish`] folds it (and returns the final
    /// Response) without sending it, until [`Emitter::release_terminal`] sends it or
    /// [`Emitter::fail_terminal`] replaces it. A stored turn is committed before its
    /// terminal event, so a failed commit can still end the stream with `response.failed`.
    pub fn hold_terminal(&mut self) {
        self.hold = true;
    }

    /// Sends the held terminal event (no-op when nothing is held).
    pub fn release_terminal(&mut self) {
        self.hold = false;
        if let Some(name) = self.held.take() {
            self.terminal_frame(name);
        }
    }

    /// Drops the held terminal event and ends the stream with an `error` event and
    /// `response.failed` (`server_error`, `message`) instead. Returns the failed Response.
    pub fn fail_terminal(&mut self, code: &str, message: &str) -> Response {
        self.hold = false;
        self.held = None;
        let r = &mut self.acc.response;
        r.completed_at = None;
        r.incomplete_details = None;
        self.error_event(code, message);
        let usage = r_usage(&self.acc.response);
        self.finish(Terminal::Failed { code: code.to_string(), message: message.to_string() }, usage)
    }

    /// The Response folded so far (after [`Emitter::finish`], only while the terminal
    /// event is held: otherwise the Response has moved out).
    pub fn response(&self) -> &Response {
        &self.acc.response
    }

    /// True when the events go to a sink (a streamed turn).
    pub fn has_sink(&self) -> bool {
        self.sink.is_some()
    }

    /// True when streaming to a client that has disconnected.
    pub fn client_gone(&self) -> bool {
        self.sink.as_ref().is_some_and(|s| s.is_closed())
    }

    pub(super) fn emit(&mut self, kind: EventKind) {
        if let Some(sink) = &mut self.sink {
            sink.event(&kind, self.seq);
        }
        self.seq += 1;
        self.acc.fold(kind);
    }

    /// `response.created` then `response.in_progress`, once (a second call does nothing:
    /// the streaming handler sends them before the turn task runs).
    pub fn start(&mut self) {
        if self.seq > 0 {
            return;
        }
        if self.sink.is_none() {
            // Nothing to send: the fold of these two events is the base Response itself.
            self.seq += 2;
            return;
        }
        // Both events carry the same Response, and their fold is a no-op (the Response is
        // unchanged).
        if let Some(sink) = &mut self.sink {
            sink.started(&self.acc.response, self.seq);
        }
        self.seq += 2;
    }

    /// Starts a background run whose stream already holds `response.created` (0) and
    /// `response.queued` (1), written when it was queued: sends `response.in_progress` (2).
    pub fn start_dequeued(&mut self) {
        if self.seq > 0 {
            return;
        }
        self.seq = 2;
        if let Some(sink) = &mut self.sink {
            sink.event(&EventKind::InProgress { response: Box::new(self.acc.response.clone()) }, self.seq);
        }
        self.seq += 1;
    }

    pub(super) fn next_index(&self) -> usize {
        self.acc.response.output.len()
    }

    /// The id of the item at `output_index` (empty if there is none).
    pub(crate) fn item_id(&self, output_index: usize) -> String {
        self.acc.item(output_index).map(|i| i.id().to_string()).unwrap_or_default()
    }

    /// The id of the last output item (empty if there is none): after a gateway call's
    /// `start`, its call item's.
    pub fn last_item_id(&self) -> String {
        self.next_index().checked_sub(1).map(|i| self.item_id(i)).unwrap_or_default()
    }

    /// `response.output_text.delta` for the message at `output_index`. The hot path: the
    /// frame is written straight from a fixed layout (the same JSON the generic encoder
    /// gives), then folded like any event.
    pub fn text_delta(&mut self, output_index: usize, delta: String) {
        self.content_delta(DeltaKind::OutputText, output_index, delta);
    }

    /// A delta of content part 0 of the message (`OutputText`) or reasoning item
    /// (`ReasoningText`) at `output_index`; nothing when the item is not of that kind.
    fn content_delta(&mut self, kind: DeltaKind, output_index: usize, delta: String) {
        let id = match (kind, self.acc.item(output_index)) {
            // Once a message refuses, what follows in it belongs to the refusal.
            (DeltaKind::OutputText, Some(OutputItem::Message { content, .. }))
                if matches!(content.last(), Some(OutputContent::Refusal { .. })) =>
            {
                return self.refusal_delta(output_index, delta);
            }
            (DeltaKind::OutputText, Some(OutputItem::Message { id, .. }))
            | (DeltaKind::ReasoningText, Some(OutputItem::Reasoning { id, .. })) => Some(id),
            _ => None,
        };
        match (id, &mut self.sink) {
            (Some(id), Some(sink)) => {
                sink.content_delta(kind, id, output_index, &delta, self.seq);
                if !self.first_delta_sent {
                    self.first_delta_sent = true;
                    sink.first_delta();
                }
            }
            (None, Some(_)) => return,
            _ => {}
        }
        self.seq += 1;
        match kind {
            DeltaKind::OutputText => self.acc.append_text(output_index, &delta),
            DeltaKind::ReasoningText => self.acc.append_reasoning(output_index, &delta),
        }
    }

    /// Adds an in-progress `reasoning` item (`summary: []`, no content yet: its
    /// `reasoning_text` part is added with the first raw delta, its `summary_text` parts by
    /// [`Emitter::reasoning_summary_start`]; contract §8.4 h, 2026 §W5.3). Returns its index.
    pub fn reasoning_start(&mut self) -> usize {
        let output_index = self.next_index();
        let id = new_id("rs");
        let item = OutputItem::Reasoning { id, summary: Vec::new(), content: Vec::new(), encrypted_content: None, status: ItemStatus::InProgress };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        output_index
    }

    /// `response.reasoning_text.delta` for the reasoning item at `output_index` (after its
    /// `content_part.added`, for the first): the same fixed-layout hot path as
    /// [`Emitter::text_delta`] (reasoning runs to thousands of tokens).
    pub fn reasoning_delta(&mut self, output_index: usize, delta: String) {
        if let Some(OutputItem::Reasoning { id, content, .. }) = self.acc.item(output_index) {
            if content.is_empty() {
                let item_id = id.clone();
                self.emit(EventKind::ContentPartAdded {
                    item_id,
                    output_index,
                    content_index: 0,
                    part: OutputContent::ReasoningText { text: String::new() },
                });
            }
        }
        self.content_delta(DeltaKind::ReasoningText, output_index, delta);
    }

    /// Starts a new `summary_text` part of the reasoning item at `output_index`
    /// (`response.reasoning_summary_part.added`). Returns its `summary_index`.
    pub fn reasoning_summary_start(&mut self, output_index: usize) -> usize {
        let Some(OutputItem::Reasoning { id, summary, .. }) = self.acc.item(output_index) else { return 0 };
        let (item_id, summary_index) = (id.clone(), summary.len());
        let part = ReasoningSummary::SummaryText { text: String::new() };
        self.emit(EventKind::ReasoningSummaryPartAdded { item_id, output_index, summary_index, part });
        summary_index
    }

    /// `response.reasoning_summary_text.delta` for that summary part.
    pub fn reasoning_summary_delta(&mut self, output_index: usize, summary_index: usize, delta: String) {
        if delta.is_empty() {
            return;
        }
        let item_id = self.item_id(output_index);
        self.emit(EventKind::ReasoningSummaryTextDelta { item_id, output_index, summary_index, delta });
        if let Some(sink) = self.sink.as_mut().filter(|_| !self.first_delta_sent) {
            self.first_delta_sent = true;
            sink.first_delta();
        }
    }

    /// Closes a summary part: `reasoning_summary_text.done`, `reasoning_summary_part.done`.
    pub fn reasoning_summary_done(&mut self, output_index: usize, summary_index: usize) {
        let Some(OutputItem::Reasoning { id, summary, .. }) = self.acc.item(output_index) else { return };
        let Some(part) = summary.get(summary_index).cloned() else { return };
        let item_id = id.clone();
        let ReasoningSummary::SummaryText { text } = &part;
        self.emit(EventKind::ReasoningSummaryTextDone { item_id: item_id.clone(), output_index, summary_index, text: text.clone() });
        self.emit(EventKind::ReasoningSummaryPartDone { item_id, output_index, summary_index, part });
    }

    /// The raw reasoning text of the reasoning item at `output_index` (empty if none).
    pub fn reasoning_text(&self, output_index: usize) -> String {
        match self.acc.item(output_index) {
            Some(OutputItem::Reasoning { content, .. }) => content
                .iter()
                .filter_map(|p| match p {
                    OutputContent::ReasoningText { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
            _ => String::new(),
        }
    }

    /// Closes a reasoning item: `reasoning_text.done`, `content_part.done`,
    /// `output_item.done` with `status`. Open summary parts are closed by the caller first
    /// ([`Emitter::reasoning_summary_done`]).
    pub fn reasoning_done(&mut self, output_index: usize, status: ItemStatus) {
        let Some(OutputItem::Reasoning { id, summary, content, encrypted_content, .. }) = self.acc.item(output_index).cloned() else {
            return;
        };
        for (content_index, part) in content.iter().enumerate() {
            if let OutputContent::ReasoningText { text } = part {
                self.emit(EventKind::ReasoningTextDone { item_id: id.clone(), output_index, content_index, text: text.clone() });
            }
            self.emit(EventKind::ContentPartDone { item_id: id.clone(), output_index, content_index, part: part.clone() });
        }
        self.emit(EventKind::OutputItemDone { output_index, item: OutputItem::Reasoning { id, summary, content, encrypted_content, status } });
    }

    /// Sets the open reasoning item's `encrypted_content` (shown when it is done).
    pub fn reasoning_encrypted(&mut self, output_index: usize, encrypted: String) {
        self.acc.set_encrypted_content(output_index, encrypted);
    }

    /// Adds an in-progress `function_call` (empty `arguments`). Returns its index.
    pub fn function_call_start(&mut self, call_id: String, name: String, namespace: Option<String>) -> usize {
        let output_index = self.next_index();
        let item = OutputItem::FunctionCall {
            id: new_id("fc"),
            call_id,
            name,
            arguments: String::new(),
            status: ItemStatus::InProgress,
            namespace,
        };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        output_index
    }

    /// Adds an in-progress `custom_tool_call` (empty `input`). Returns its index.
    pub fn custom_call_start(&mut self, call_id: String, name: String, namespace: Option<String>) -> usize {
        let output_index = self.next_index();
        let item = OutputItem::CustomToolCall {
            id: new_id("ctc"),
            call_id,
            name,
            input: String::new(),
            status: ItemStatus::InProgress,
            namespace,
        };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        output_index
    }

    /// `response.function_call_arguments.delta` or `response.custom_tool_call_input.delta`,
    /// by the item's type.
    pub fn call_delta(&mut self, output_index: usize, delta: String) {
        if delta.is_empty() {
            return;
        }
        let kind = match self.acc.item(output_index) {
            Some(OutputItem::FunctionCall { id, .. }) => {
                EventKind::FunctionCallArgumentsDelta { item_id: id.clone(), output_index, delta }
            }
            Some(OutputItem::CustomToolCall { id, .. }) => {
                EventKind::CustomToolCallInputDelta { item_id: id.clone(), output_index, delta }
            }
            _ => return,
        };
        self.emit(kind);
        if let Some(sink) = self.sink.as_mut().filter(|_| !self.first_delta_sent) {
            self.first_delta_sent = true;
            sink.first_delta();
        }
    }

    /// Closes a call item: `…arguments.done` / `…input.done` with the final text, then
    /// `output_item.done` with `status`.
    pub fn call_done(&mut self, output_index: usize, final_text: String, status: ItemStatus) {
        let Some(item) = self.acc.item(output_index).cloned() else { return };
        let done_item = match item {
            OutputItem::FunctionCall { id, call_id, name, namespace, .. } => {
                self.emit(EventKind::FunctionCallArgumentsDone {
                    item_id: id.clone(),
                    output_index,
                    name: name.clone(),
                    arguments: final_text.clone(),
                });
                OutputItem::FunctionCall { id, call_id, name, arguments: final_text, status, namespace }
            }
            OutputItem::CustomToolCall { id, call_id, name, namespace, .. } => {
                self.emit(EventKind::CustomToolCallInputDone {
                    item_id: id.clone(),
                    output_index,
                    input: final_text.clone(),
                });
                OutputItem::CustomToolCall { id, call_id, name, input: final_text, status, namespace }
            }
            // A client-executed tool search (contract W3.4): no events of its own, its
            // arguments an object.
            OutputItem::ToolSearchCall { id, call_id, execution, .. } => {
                let arguments = serde_json::from_str::<serde_json::Value>(&final_text).ok().filter(serde_json::Value::is_object).unwrap_or_else(|| serde_json::json!({}));
                OutputItem::ToolSearchCall { id, arguments, call_id, execution, status }
            }
            _ => return,
        };
        self.emit(EventKind::OutputItemDone { output_index, item: done_item });
    }

    /// Adds and completes an item in one step (`output_item.added` + `output_item.done`),
    /// e.g. a gateway tool's output. Returns its index.
    pub fn add_done_item(&mut self, added: OutputItem, done: OutputItem) -> usize {
        let output_index = self.next_index();
        self.emit(EventKind::OutputItemAdded { output_index, item: added });
        self.emit(EventKind::OutputItemDone { output_index, item: done });
        output_index
    }

    /// The `error` event: flat fields plus the nested object (contract §8.3 #7), whose
    /// `type` is the one a non-streamed body with the same code has.
    pub fn error_event(&mut self, code: &str, message: &str) {
        let kind = match code {
            "upstream_rejected_request" | "context_length_exceeded" | "model_not_found" | "unsupported_input" => "invalid_request_error",
            "rate_limit_exceeded" => "rate_limit_error",
            _ => "server_error",
        };
        let param = match code {
            "model_not_found" => Some("model".to_string()),
            "unsupported_input" => Some("input".to_string()),
            _ => None,
        };
        self.emit(EventKind::Error {
            code: Some(code.to_string()),
            message: message.to_string(),
            param: param.clone(),
            error: ErrorEventDetail {
                kind: kind.into(),
                code: Some(code.to_string()),
                message: message.to_string(),
                param,
            },
        });
    }

    /// Emits the one terminal event and returns the final Response.
    pub fn finish(&mut self, terminal: Terminal, usage: Usage) -> Response {
        // The terminal events carry the whole Response: it is completed in place and
        // encoded once (the fold of the event would be the same Response).
        let r = &mut self.acc.response;
        r.usage = Some(usage);
        let name = match terminal {
            Terminal::Completed => {
                r.status = ResponseStatus::Completed;
                r.completed_at = Some(now_secs());
                "response.completed"
            }
            Terminal::Interrupted => {
                r.status = ResponseStatus::Incomplete;
                "response.incomplete"
            }
            Terminal::Cancelled => {
                r.status = ResponseStatus::Cancelled;
                "response.incomplete"
            }
            Terminal::Incomplete(reason) => {
                r.status = ResponseStatus::Incomplete;
                r.incomplete_details = Some(IncompleteDetails { reason });
                "response.incomplete"
            }
            Terminal::Failed { code, message } => {
                // The specific code is on the `error` event; `response.error.code` must be
                // one of the SDK's fixed codes ([`response_error_code`]). The usage of the
                // rounds that ran stays (issue 30): those tokens were spent.
                r.status = ResponseStatus::Failed;
                let code = response_error_code(&code).to_string();
                r.error = Some(ResponseError { code, message });
                "response.failed"
            }
        };
        if self.hold {
            self.held = Some(name);
            // Kept: the held frame and a failed commit's `response.failed` still need it.
            return self.acc.response.clone();
        }
        self.terminal_frame(name);
        // Nothing is emitted after the terminal event: the folded Response moves out.
        std::mem::take(&mut self.acc.response)
    }

    /// Sends the terminal event `name` with the folded Response.
    fn terminal_frame(&mut self, name: &'static str) {
        if let Some(sink) = &mut self.sink {
            sink.terminal(name, &self.acc.response, self.seq);
        }
        self.seq += 1;
    }

    /// The current `arguments` / `input` of the call item at `output_index`.
    pub fn call_text(&self, output_index: usize) -> String {
        match self.acc.item(output_index) {
            Some(OutputItem::FunctionCall { arguments, .. }) => arguments.clone(),
            Some(OutputItem::CustomToolCall { input, .. }) => input.clone(),
            _ => String::new(),
        }
    }

    /// A progress message (streams only): a completed assistant message with
    /// `phase: "commentary"` and an id marked with [`PROGRESS_ID_PREFIX`], so a replayed copy
    /// is dropped. Not emitted without a sink: non-streaming and stored responses never
    /// carry progress.
    pub fn progress(&mut self, text: &str) {
        if self.sink.is_none() || text.is_empty() {
            return;
        }
        let idx = self.message_start_with_id(new_id(PROGRESS_ID_PREFIX.trim_end_matches('_')));
        self.text_delta(idx, text.to_string());
        self.message_done(idx, Phase::Commentary, ItemStatus::Completed);
    }

    /// Adds a gateway tool's `custom_tool_call_output` (added and done at once).
    pub fn custom_call_output(&mut self, call_id: String, output: String, status: ItemStatus) -> usize {
        let item = OutputItem::CustomToolCallOutput { id: new_id("ctco"), call_id, output, status };
        self.add_done_item(item.clone(), item)
    }
}

/// The usage a Response carries so far (zero when none).
fn r_usage(r: &Response) -> Usage {
    r.usage.unwrap_or_default()
}

/// Unix time in seconds.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
