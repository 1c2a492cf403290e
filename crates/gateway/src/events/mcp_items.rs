//! The emitter's events for MCP items (contract §8.4 f): `mcp_list_tools`, `mcp_call` and
//! `mcp_approval_request`.

use protocol::events::EventKind;
use protocol::output::{ItemStatus, McpToolInfo, OutputItem};
use serde_json::Value;

use super::ids::new_id;
use super::Emitter;

impl Emitter {
    /// Adds an `mcp_list_tools` of `server_label` with no tools yet, then its `in_progress`
    /// event. Returns its index.
    pub fn mcp_list_start(&mut self, server_label: &str) -> usize {
        let output_index = self.next_index();
        let id = new_id("mcpl");
        let item = OutputItem::McpListTools { id: id.clone(), server_label: server_label.to_string(), tools: Vec::new(), error: None };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        self.emit(EventKind::McpListToolsInProgress { item_id: id, output_index });
        output_index
    }

    /// Finishes an `mcp_list_tools`: `.completed` with its tools, or `.failed` with `error`
    /// (and no tools), then `output_item.done`.
    pub fn mcp_list_done(&mut self, output_index: usize, server_label: &str, listed: Result<Vec<McpToolInfo>, String>) {
        let id = self.item_id(output_index);
        let (tools, error) = match listed {
            Ok(tools) => {
                self.emit(EventKind::McpListToolsCompleted { item_id: id.clone(), output_index });
                (tools, None)
            }
            Err(e) => {
                self.emit(EventKind::McpListToolsFailed { item_id: id.clone(), output_index });
                (Vec::new(), Some(e))
            }
        };
        let item = OutputItem::McpListTools { id, server_label: server_label.to_string(), tools, error };
        self.emit(EventKind::OutputItemDone { output_index, item });
    }

    /// Adds an in-progress `mcp_call` (`arguments` empty), its `in_progress` event, then its
    /// `arguments` in one delta and their `.done`. Returns its index.
    pub fn mcp_call_start(&mut self, server_label: &str, name: &str, arguments: &str, approval_request_id: Option<String>) -> usize {
        let output_index = self.next_index();
        let id = new_id("mcp");
        let item = OutputItem::McpCall {
            id: id.clone(),
            server_label: server_label.to_string(),
            name: name.to_string(),
            arguments: String::new(),
            output: None,
            error: None,
            status: ItemStatus::InProgress,
            approval_request_id,
        };
        self.emit(EventKind::OutputItemAdded { output_index, item });
        self.emit(EventKind::McpCallInProgress { item_id: id.clone(), output_index });
        self.emit(EventKind::McpCallArgumentsDelta { item_id: id.clone(), output_index, delta: arguments.to_string() });
        self.emit(EventKind::McpCallArgumentsDone { item_id: id, output_index, arguments: arguments.to_string() });
        output_index
    }

    /// Finishes an `mcp_call`: `.completed` with its `output`, or `.failed` with `error`
    /// (the tagged object of contract §5), then `output_item.done`.
    pub fn mcp_call_done(&mut self, output_index: usize, outcome: Result<String, Value>) {
        let id = self.item_id(output_index);
        let Some(OutputItem::McpCall { server_label, name, arguments, approval_request_id, .. }) = self.response().output.get(output_index).cloned()
        else {
            return;
        };
        let (output, error, status) = match outcome {
            Ok(text) => {
                self.emit(EventKind::McpCallCompleted { item_id: id.clone(), output_index });
                (Some(text), None, ItemStatus::Completed)
            }
            Err(e) => {
                self.emit(EventKind::McpCallFailed { item_id: id.clone(), output_index });
                (None, Some(e), ItemStatus::Failed)
            }
        };
        let item = OutputItem::McpCall { id, server_label, name, arguments, output, error, status, approval_request_id };
        self.emit(EventKind::OutputItemDone { output_index, item });
    }

    /// Adds an `mcp_approval_request` (`output_item.added`, then `.done`: it has no
    /// sub-events, contract §8.4 f) for a call of `name` with `arguments` (JSON text).
    /// Returns its id (`mcpr_…`), which the client's `mcp_approval_response` names.
    pub fn mcp_approval_request(&mut self, server_label: &str, name: &str, arguments: &str) -> String {
        let output_index = self.next_index();
        let id = new_id("mcpr");
        let item = OutputItem::McpApprovalRequest { id: id.clone(), server_label: server_label.to_string(), name: name.to_string(), arguments: arguments.to_string() };
        self.emit(EventKind::OutputItemAdded { output_index, item: item.clone() });
        self.emit(EventKind::OutputItemDone { output_index, item });
        id
    }
}
