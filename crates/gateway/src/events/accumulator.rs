//! Folds the event stream into the Response object. The non-streaming Response, the
//! `response.completed` payload and the stored Response are all this fold, so they cannot
//! disagree (DESIGN.md "Pipeline").

use protocol::events::EventKind;
use protocol::output::{OutputContent, OutputItem, ReasoningSummary};
use protocol::Response;

/// The Response as folded so far.
#[derive(Debug, Clone)]
pub struct Accumulator {
    pub response: Response,
}

impl Accumulator {
    /// Starts from the echo of the request (no output, `usage: null`).
    pub fn new(base: Response) -> Self {
        Accumulator { response: base }
    }

    /// The item at `output_index`, if added.
    pub fn item(&self, output_index: usize) -> Option<&OutputItem> {
        self.response.output.get(output_index)
    }

    /// Folds a `response.output_text.delta` for content part 0 without building the event
    /// (the emitter's hot path); equivalent to `fold(OutputTextDelta{..})`.
    pub fn append_text(&mut self, output_index: usize, delta: &str) {
        if let Some(OutputItem::Message { content, .. }) = self.response.output.get_mut(output_index) {
            if let Some(OutputContent::OutputText { text, .. }) = content.first_mut() {
                text.push_str(delta);
            }
        }
    }

    /// Folds a `response.reasoning_text.delta` for content part 0 without building the
    /// event; equivalent to `fold(ReasoningTextDelta{..})`.
    pub fn append_reasoning(&mut self, output_index: usize, delta: &str) {
        if let Some(OutputItem::Reasoning { content, .. }) = self.response.output.get_mut(output_index) {
            if let Some(OutputContent::ReasoningText { text }) = content.first_mut() {
                text.push_str(delta);
            }
        }
    }

    /// Sets a reasoning item's `encrypted_content` (it goes out with the item's done event).
    pub fn set_encrypted_content(&mut self, output_index: usize, encrypted: String) {
        if let Some(OutputItem::Reasoning { encrypted_content, .. }) = self.response.output.get_mut(output_index) {
            *encrypted_content = Some(encrypted);
        }
    }

    /// Applies one event.
    pub fn fold(&mut self, kind: EventKind) {
        let output = &mut self.response.output;
        match kind {
            EventKind::Created { response }
            | EventKind::InProgress { response }
            | EventKind::Queued { response }
            | EventKind::Completed { response }
            | EventKind::Incomplete { response }
            | EventKind::Failed { response } => self.response = *response,
            EventKind::OutputItemAdded { output_index, item } => {
                if output_index == output.len() {
                    output.push(item);
                }
            }
            EventKind::OutputItemDone { output_index, item } => {
                if let Some(slot) = output.get_mut(output_index) {
                    *slot = item;
                }
            }
            EventKind::ContentPartAdded { output_index, part, .. } => {
                if let Some(OutputItem::Message { content, .. } | OutputItem::Reasoning { content, .. }) =
                    output.get_mut(output_index)
                {
                    content.push(part);
                }
            }
            EventKind::ContentPartDone { output_index, content_index, part, .. } => {
                if let Some(OutputItem::Message { content, .. } | OutputItem::Reasoning { content, .. }) =
                    output.get_mut(output_index)
                {
                    if let Some(slot) = content.get_mut(content_index) {
                        *slot = part;
                    }
                }
            }
            EventKind::ReasoningTextDelta { output_index, content_index, delta, .. } => {
                if let Some(OutputItem::Reasoning { content, .. }) = output.get_mut(output_index) {
                    if let Some(OutputContent::ReasoningText { text }) = content.get_mut(content_index) {
                        text.push_str(&delta);
                    }
                }
            }
            EventKind::ReasoningTextDone { output_index, content_index, text: full, .. } => {
                if let Some(OutputItem::Reasoning { content, .. }) = output.get_mut(output_index) {
                    if let Some(OutputContent::ReasoningText { text }) = content.get_mut(content_index) {
                        *text = full;
                    }
                }
            }
            EventKind::ReasoningSummaryPartAdded { output_index, part, .. } => {
                if let Some(OutputItem::Reasoning { summary, .. }) = output.get_mut(output_index) {
                    summary.push(part);
                }
            }
            EventKind::ReasoningSummaryTextDelta { output_index, summary_index, delta, .. } => {
                if let Some(OutputItem::Reasoning { summary, .. }) = output.get_mut(output_index) {
                    if let Some(ReasoningSummary::SummaryText { text }) = summary.get_mut(summary_index) {
                        text.push_str(&delta);
                    }
                }
            }
            EventKind::ReasoningSummaryTextDone { output_index, summary_index, text: full, .. } => {
                if let Some(OutputItem::Reasoning { summary, .. }) = output.get_mut(output_index) {
                    if let Some(ReasoningSummary::SummaryText { text }) = summary.get_mut(summary_index) {
                        *text = full;
                    }
                }
            }
            EventKind::ReasoningSummaryPartDone { output_index, summary_index, part, .. } => {
                if let Some(OutputItem::Reasoning { summary, .. }) = output.get_mut(output_index) {
                    if let Some(slot) = summary.get_mut(summary_index) {
                        *slot = part;
                    }
                }
            }
            EventKind::OutputTextDelta { output_index, content_index, delta, .. } => {
                if let Some(OutputItem::Message { content, .. }) = output.get_mut(output_index) {
                    if let Some(OutputContent::OutputText { text, .. }) = content.get_mut(content_index) {
                        text.push_str(&delta);
                    }
                }
            }
            EventKind::OutputTextDone { output_index, content_index, text: full, .. } => {
                if let Some(OutputItem::Message { content, .. }) = output.get_mut(output_index) {
                    if let Some(OutputContent::OutputText { text, .. }) = content.get_mut(content_index) {
                        *text = full;
                    }
                }
            }
            EventKind::RefusalDelta { output_index, content_index, delta, .. } => {
                if let Some(OutputItem::Message { content, .. }) = output.get_mut(output_index) {
                    if let Some(OutputContent::Refusal { refusal }) = content.get_mut(content_index) {
                        refusal.push_str(&delta);
                    }
                }
            }
            EventKind::RefusalDone { output_index, content_index, refusal: full, .. } => {
                if let Some(OutputItem::Message { content, .. }) = output.get_mut(output_index) {
                    if let Some(OutputContent::Refusal { refusal }) = content.get_mut(content_index) {
                        *refusal = full;
                    }
                }
            }
            EventKind::AnnotationAdded { output_index, content_index, annotation, .. } => {
                if let Some(OutputItem::Message { content, .. }) = output.get_mut(output_index) {
                    if let Some(OutputContent::OutputText { annotations, .. }) =
                        content.get_mut(content_index)
                    {
                        annotations.push(annotation);
                    }
                }
            }
            EventKind::FunctionCallArgumentsDelta { output_index, delta, .. } => {
                if let Some(OutputItem::FunctionCall { arguments, .. }) = output.get_mut(output_index) {
                    arguments.push_str(&delta);
                }
            }
            EventKind::FunctionCallArgumentsDone { output_index, arguments: full, .. } => {
                if let Some(OutputItem::FunctionCall { arguments, .. }) = output.get_mut(output_index) {
                    *arguments = full;
                }
            }
            EventKind::CustomToolCallInputDelta { output_index, delta, .. } => {
                if let Some(OutputItem::CustomToolCall { input, .. }) = output.get_mut(output_index) {
                    input.push_str(&delta);
                }
            }
            EventKind::CustomToolCallInputDone { output_index, input: full, .. } => {
                if let Some(OutputItem::CustomToolCall { input, .. }) = output.get_mut(output_index) {
                    *input = full;
                }
            }
            EventKind::WebSearchInProgress { .. } | EventKind::WebSearchCompleted { .. } => {}
            EventKind::WebSearchSearching { output_index, .. } => {
                if let Some(OutputItem::WebSearchCall { status, .. }) = output.get_mut(output_index) {
                    *status = protocol::output::ItemStatus::Searching;
                }
            }
            EventKind::FileSearchInProgress { .. } | EventKind::FileSearchCompleted { .. } => {}
            EventKind::FileSearchSearching { output_index, .. } => {
                if let Some(OutputItem::FileSearchCall { status, .. }) = output.get_mut(output_index) {
                    *status = protocol::output::ItemStatus::Searching;
                }
            }
            EventKind::McpCallArgumentsDelta { output_index, delta, .. } => {
                if let Some(OutputItem::McpCall { arguments, .. }) = output.get_mut(output_index) {
                    arguments.push_str(&delta);
                }
            }
            EventKind::McpCallArgumentsDone { output_index, arguments: full, .. } => {
                if let Some(OutputItem::McpCall { arguments, .. }) = output.get_mut(output_index) {
                    *arguments = full;
                }
            }
            // The items' final state comes with `output_item.done`.
            EventKind::McpListToolsInProgress { .. }
            | EventKind::McpListToolsCompleted { .. }
            | EventKind::McpListToolsFailed { .. }
            | EventKind::McpCallInProgress { .. }
            | EventKind::McpCallCompleted { .. }
            | EventKind::McpCallFailed { .. } => {}
            EventKind::Error { .. } => {}
        }
    }
}
