//! The emitter's events for assistant messages (contract §8.4 a): the message item, its
//! `output_text` and `refusal` parts, their annotations and the closing events with `phase`.
//! Text deltas, the hot path, stay in the emitter module.

use protocol::events::EventKind;
use protocol::output::{ItemStatus, OutputContent, OutputItem, Phase};

use super::citations::{annotate, Source};
use super::ids::new_id;
use super::Emitter;

impl Emitter {
    /// Adds an in-progress assistant message with an empty `output_text` part
    /// (`output_item.added` without `phase`, then `content_part.added`). Returns its index.
    pub fn message_start(&mut self) -> usize {
        self.message_start_with_id(new_id("msg"))
    }

    /// As [`Emitter::message_start`] with a given id (progress messages use a marked id).
    pub fn message_start_with_id(&mut self, id: String) -> usize {
        self.open_message(id, OutputContent::OutputText { annotations: Vec::new(), logprobs: Vec::new(), text: String::new() })
    }

    /// Adds an in-progress assistant message whose first part is an empty `refusal` (the
    /// model refused before writing any text). Returns its index.
    pub fn refusal_message_start(&mut self) -> usize {
        self.open_message(new_id("msg"), OutputContent::Refusal { refusal: String::new() })
    }

    fn open_message(&mut self, id: String, part: OutputContent) -> usize {
        let output_index = self.next_index();
        let item = OutputItem::Message {
            id: id.clone(),
            role: "assistant".into(),
            status: ItemStatus::InProgress,
            content: Vec::new(),
            phase: None,
        };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        self.emit(EventKind::ContentPartAdded { item_id: id, output_index, content_index: 0, part });
        output_index
    }

    /// True when the message at `output_index` ends in a `refusal` part.
    pub fn message_refuses(&self, output_index: usize) -> bool {
        matches!(self.acc.item(output_index), Some(OutputItem::Message { content, .. }) if matches!(content.last(), Some(OutputContent::Refusal { .. })))
    }

    /// `response.refusal.delta` into the message's last part, a `refusal` (see
    /// [`Emitter::refusal_message_start`]); nothing when the item is not such a message.
    pub fn refusal_delta(&mut self, output_index: usize, delta: String) {
        let Some(OutputItem::Message { id, content, .. }) = self.acc.item(output_index) else { return };
        if !matches!(content.last(), Some(OutputContent::Refusal { .. })) {
            return;
        }
        let (item_id, content_index) = (id.clone(), content.len() - 1);
        self.emit(EventKind::RefusalDelta { item_id, output_index, content_index, delta });
    }

    /// The message's text so far.
    pub fn message_text(&self, output_index: usize) -> String {
        match self.acc.item(output_index) {
            Some(OutputItem::Message { content, .. }) => content
                .iter()
                .map(|c| match c {
                    OutputContent::OutputText { text, .. } | OutputContent::ReasoningText { text } => text.as_str(),
                    OutputContent::Refusal { refusal } => refusal.as_str(),
                })
                .collect(),
            _ => String::new(),
        }
    }

    /// Emits `response.output_text.annotation.added` for every occurrence of a source URL
    /// in the message's text (after its last delta, before `output_text.done`).
    pub fn annotate_message(&mut self, output_index: usize, sources: &[Source]) {
        if sources.is_empty() {
            return;
        }
        let Some(OutputItem::Message { id, content, .. }) = self.acc.item(output_index) else { return };
        let Some(OutputContent::OutputText { text, annotations, .. }) = content.first() else { return };
        let (id, first) = (id.clone(), annotations.len());
        let found = annotate(text, sources);
        for (i, annotation) in found.into_iter().enumerate() {
            self.emit(EventKind::AnnotationAdded {
                item_id: id.clone(),
                output_index,
                content_index: 0,
                annotation_index: first + i,
                annotation,
            });
        }
    }

    /// Closes a message: per part `output_text.done` (or `refusal.done`) and
    /// `content_part.done`, then `output_item.done` carrying `phase` and `status`.
    pub fn message_done(&mut self, output_index: usize, phase: Phase, status: ItemStatus) {
        let Some(OutputItem::Message { id, role, content, .. }) = self.acc.item(output_index).cloned() else {
            return;
        };
        for (content_index, part) in content.iter().enumerate() {
            match part {
                OutputContent::OutputText { text, .. } => self.emit(EventKind::OutputTextDone {
                    item_id: id.clone(),
                    output_index,
                    content_index,
                    text: text.clone(),
                    logprobs: Vec::new(),
                }),
                OutputContent::Refusal { refusal } => self.emit(EventKind::RefusalDone {
                    item_id: id.clone(),
                    output_index,
                    content_index,
                    refusal: refusal.clone(),
                }),
                OutputContent::ReasoningText { .. } => {}
            }
            self.emit(EventKind::ContentPartDone { item_id: id.clone(), output_index, content_index, part: part.clone() });
        }
        let item = OutputItem::Message { id, role, status, content, phase: Some(phase) };
        self.emit(EventKind::OutputItemDone { output_index, item });
    }
}
