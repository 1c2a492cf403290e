//! The emitter's events for tool search items (contract W3.4): `tool_search_call` and
//! `tool_search_output` have no events of their own, only `output_item.added` (in
//! progress) and `output_item.done`.

use protocol::events::EventKind;
use protocol::output::{ItemStatus, OutputItem};
use serde_json::{json, Value};

use super::ids::new_id;
use super::Emitter;

impl Emitter {
    /// Adds a `tool_search_call` in progress with `{}` arguments. `call_id` is `None` for
    /// the gateway's own search (`execution: "server"`), the model's call id for a client's
    /// (`"client"`). Returns its index.
    pub fn tool_search_call_start(&mut self, call_id: Option<String>, execution: &str) -> usize {
        let output_index = self.next_index();
        let item = OutputItem::ToolSearchCall { id: new_id("tsc"), arguments: json!({}), call_id, execution: execution.to_string(), status: ItemStatus::InProgress };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        output_index
    }

    /// Completes a `tool_search_call` with its `arguments` (a JSON object) and `status`.
    pub fn tool_search_call_done(&mut self, output_index: usize, arguments: Value, status: ItemStatus) {
        let Some(OutputItem::ToolSearchCall { id, call_id, execution, .. }) = self.acc.item(output_index).cloned() else { return };
        let item = OutputItem::ToolSearchCall { id, arguments, call_id, execution, status };
        self.emit(EventKind::OutputItemDone { output_index, item });
    }

    /// Adds a `tool_search_output` with the loaded `tools` (full declarations), in progress
    /// then done with `status`.
    pub fn tool_search_output(&mut self, call_id: Option<String>, execution: &str, tools: Vec<Value>, status: ItemStatus) {
        let output_index = self.next_index();
        let id = new_id("tso");
        let execution = execution.to_string();
        let added = OutputItem::ToolSearchOutput { id: id.clone(), call_id: call_id.clone(), execution: execution.clone(), status: ItemStatus::InProgress, tools: tools.clone() };
        self.emit(EventKind::OutputItemAdded { output_index, item: added });
        let item = OutputItem::ToolSearchOutput { id, call_id, execution, status, tools };
        self.emit(EventKind::OutputItemDone { output_index, item });
    }
}
