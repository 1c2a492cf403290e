//! What a turn continues from (contract §1.1): the stored transcript of
//! `previous_response_id`, or a conversation's transcript or items, and how an error in a
//! stored conversation item is named.

use std::collections::HashMap;

use protocol::input::InputItem;
use protocol::ApiError;

use crate::transcript::{self, ToolReplay, Transcript};

/// Responses a connection keeps in its memory (WebSocket mode, 2026 supplement W1.4): what
/// `previous_response_id` continues from before the store is asked.
pub trait KeptResponses: Send + Sync {
    /// The transcript of response `id` (what its model saw, with its output), if kept.
    fn transcript(&self, id: &str) -> Option<Transcript>;
}

/// Where `previous_response_id` is loaded from: the store, or first a connection's kept
/// responses (then the store, for a stored one no longer kept).
#[derive(Clone, Copy, Default)]
pub enum Previous<'a> {
    #[default]
    Store,
    Kept(&'a dyn KeptResponses),
}

impl std::fmt::Debug for Previous<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Previous::Store => "Store",
            Previous::Kept(_) => "Kept",
        })
    }
}

/// Where a turn's transcript starts.
#[derive(Debug, Clone, Default)]
pub struct Continuation {
    /// A stored transcript (instructions never carried over).
    pub base: Option<Transcript>,
    /// Conversation items that go before this request's input (when the conversation's
    /// stored transcript is not current).
    pub prefix: Vec<InputItem>,
    /// The stored ids of `prefix`'s items, in the same order.
    pub prefix_ids: Vec<String>,
    /// Echoed as `previous_response_id`.
    pub previous_response_id: Option<String>,
    /// Echoed as `conversation: {id}`.
    pub conversation_id: Option<String>,
    /// Stored private `(key, result)` of the gateway tool items the input replays, by item id.
    pub restored: HashMap<String, (String, String)>,
}

impl Continuation {
    /// Builds the transcript: `base`, then `prefix`, then this request's `items`. An error
    /// naming `input[i]` counts only this request's items; one in a stored conversation
    /// item names that item (param `conversation`) and how to repair it.
    /// Takes `base` and `prefix` out (a long conversation is not copied). `sealer` opens
    /// the reasoning items this gateway sealed ([`transcript::build`]).
    pub fn transcript(
        &mut self,
        instructions: Option<&str>,
        items: Vec<InputItem>,
        tools: &dyn ToolReplay,
        sealer: Option<&crate::seal::Sealer>,
    ) -> Result<Transcript, ApiError> {
        let n = self.prefix.len();
        let all: Vec<InputItem> = if n == 0 {
            items
        } else {
            let mut all = std::mem::take(&mut self.prefix);
            all.extend(items);
            all
        };
        transcript::build(self.base.take(), instructions, &all, tools, &self.restored, sealer).map_err(|mut e| {
            let conv = self.conversation_id.as_deref().unwrap_or_default();
            let item_id = |i: usize| self.prefix_ids.get(i).map(String::as_str).unwrap_or_default();
            match e.param.as_deref().and_then(input_index) {
                Some(i) if i < n => {
                    let id = item_id(i);
                    e.message = format!(
                        "Conversation item '{id}' cannot be sent to the model: {} Delete it (DELETE /v1/conversations/{conv}/items/{id}).",
                        e.message
                    );
                    e.param = Some("conversation".to_string());
                }
                None if n > 0 => {
                    // A call stored in the conversation that nothing answers.
                    if let Some(i) = unanswered_call(&e.message).and_then(|id| call_position(&all[..n], id)) {
                        let id = item_id(i);
                        e.message = format!(
                            "{} It is conversation item '{id}': give its output in this request's input, add it (POST /v1/conversations/{conv}/items), or delete the call (DELETE /v1/conversations/{conv}/items/{id}).",
                            e.message
                        );
                        e.param = Some("conversation".to_string());
                    }
                }
                _ => e.param = e.param.map(|p| shift_index(&p, n)),
            }
            e
        })
    }
}

/// The call id in `transcript::build`'s "No tool output found for function call {id}.".
fn unanswered_call(message: &str) -> Option<&str> {
    message.strip_prefix("No tool output found for function call ")?.strip_suffix('.')
}

/// Where the call with `call_id` is among `items`.
fn call_position(items: &[InputItem], call_id: &str) -> Option<usize> {
    items.iter().position(|i| match i {
        InputItem::FunctionCall(c) => c.call_id == call_id,
        InputItem::CustomToolCall(c) => c.call_id == call_id,
        _ => false,
    })
}

/// `input[7].call_id` → 7.
fn input_index(param: &str) -> Option<usize> {
    param.strip_prefix("input[")?.split_once(']')?.0.parse().ok()
}

/// `input[7].call_id` with 5 prefix items → `input[2].call_id`.
fn shift_index(param: &str, n: usize) -> String {
    let Some(rest) = param.strip_prefix("input[") else { return param.to_string() };
    let Some((num, tail)) = rest.split_once(']') else { return param.to_string() };
    match num.parse::<usize>() {
        Ok(i) if i >= n => format!("input[{}]{tail}", i - n),
        _ => param.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_counted_from_this_requests_input() {
        assert_eq!(shift_index("input[7].call_id", 5), "input[2].call_id");
        assert_eq!(shift_index("input[1]", 5), "input[1]");
        assert_eq!(shift_index("input", 5), "input");
        assert_eq!(shift_index("tools[0]", 5), "tools[0]");
    }
}

