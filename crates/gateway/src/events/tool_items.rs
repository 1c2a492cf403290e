//! The emitter's events for gateway search items: `web_search_call` (contract §8.4 d) and
//! `file_search_call` (§8.4 e), and the `file_citation` annotations of file searches.

use protocol::events::EventKind;
use protocol::output::{FileSearchResult, ItemStatus, OutputContent, OutputItem, WebSearchAction};
use protocol::Annotation;

use super::file_citations::FileSource;
use super::ids::new_id;
use super::Emitter;

impl Emitter {
    /// Adds an in-progress `web_search_call` (no `action` yet), then its `in_progress` and
    /// `searching` events. Returns its index.
    pub fn web_search_start(&mut self) -> usize {
        let output_index = self.next_index();
        let id = new_id("ws");
        let item = OutputItem::WebSearchCall { id: id.clone(), status: ItemStatus::InProgress, action: None };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        self.emit(EventKind::WebSearchInProgress { item_id: id.clone(), output_index });
        self.emit(EventKind::WebSearchSearching { item_id: id, output_index });
        output_index
    }

    /// Finishes a `web_search_call`: `.completed` then `output_item.done` with `action` when
    /// it succeeded; a failed search has no `.completed` event and `status: "failed"`.
    pub fn web_search_done(&mut self, output_index: usize, action: WebSearchAction, ok: bool) {
        let id = self.item_id(output_index);
        if ok {
            self.emit(EventKind::WebSearchCompleted { item_id: id.clone(), output_index });
        }
        let status = if ok { ItemStatus::Completed } else { ItemStatus::Failed };
        let item = OutputItem::WebSearchCall { id, status, action: Some(action) };
        self.emit(EventKind::OutputItemDone { output_index, item });
    }

    /// Adds an in-progress `file_search_call` (`queries: []`, `results: null`), then its
    /// `in_progress` and `searching` events. Returns its index.
    pub fn file_search_start(&mut self) -> usize {
        let output_index = self.next_index();
        let id = new_id("fs");
        let item = OutputItem::FileSearchCall { id: id.clone(), status: ItemStatus::InProgress, queries: Vec::new(), results: None };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        self.emit(EventKind::FileSearchInProgress { item_id: id.clone(), output_index });
        self.emit(EventKind::FileSearchSearching { item_id: id, output_index });
        output_index
    }

    /// Finishes a `file_search_call`: `.completed` (only when it succeeded; the contract
    /// has no `.failed` event), then `output_item.done` with the queries, `results` (set
    /// only when `include`d) and `status` `completed` or `failed`.
    pub fn file_search_done(&mut self, output_index: usize, queries: Vec<String>, results: Option<Vec<FileSearchResult>>, ok: bool) {
        let id = self.item_id(output_index);
        if ok {
            self.emit(EventKind::FileSearchCompleted { item_id: id.clone(), output_index });
        }
        let status = if ok { ItemStatus::Completed } else { ItemStatus::Failed };
        let item = OutputItem::FileSearchCall { id, status, queries, results };
        self.emit(EventKind::OutputItemDone { output_index, item });
    }

    /// `response.output_text.annotation.added` with a `file_citation` at code-point `index`
    /// of the message's text (sent right after the delta that held the marker).
    pub fn file_citation(&mut self, output_index: usize, index: usize, source: &FileSource) {
        let Some(OutputItem::Message { id, content, .. }) = self.acc.item(output_index) else { return };
        let Some(OutputContent::OutputText { annotations, .. }) = content.first() else { return };
        let (item_id, annotation_index) = (id.clone(), annotations.len());
        let annotation = Annotation::FileCitation { file_id: source.file_id.clone(), filename: source.filename.clone(), index };
        self.emit(EventKind::AnnotationAdded { item_id, output_index, content_index: 0, annotation_index, annotation });
    }
}
