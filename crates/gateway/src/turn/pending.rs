//! A call of the current round as it streams ([`PendingCall`]): its arguments so far, and
//! its client item (`function_call` or `custom_tool_call`) while it streams, is completed,
//! and carries the arguments as finally decided (repaired, see `upstream::arguments`).

use protocol::output::ItemStatus;

use crate::events::emitter::Emitter;
use crate::events::ids::new_id;
use crate::tools::custom::{arguments_from_input, input_from_arguments, InputDecoder};
use crate::tools::{CallItem, ToolEntry};
use crate::upstream::arguments;

/// A call received in the current round, under its model-visible name.
#[derive(Debug, Default)]
pub struct PendingCall {
    pub index: usize,
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    /// Set once a client-owned call has been added to the output (its deltas stream).
    pub output_index: Option<usize>,
    /// Set once that item is done (the model went on to something else, or the round ended).
    pub closed: bool,
    decoder: Option<InputDecoder>,
    /// A function call's arguments stopped being the beginning of a JSON object: the rest
    /// of its deltas waits for the end of the call (and its repair).
    held: bool,
}

impl PendingCall {
    /// A call that began at `index` (its number in the round), with nothing of it yet.
    pub fn new(index: usize) -> Self {
        PendingCall { index, ..PendingCall::default() }
    }

    /// Gives the call an id when the upstream sent none.
    pub fn ensure_id(&mut self) {
        if self.call_id.is_empty() {
            self.call_id = new_id("call");
        }
    }

    /// Adds the client-owned call's item (`function_call` or `custom_tool_call`, as the
    /// tool's calls appear) under the tool's public name and namespace. A deferred top-level
    /// function's calls carry its own name as `namespace` (contract W3.4: OpenAI loads such a
    /// function as a namespace of that name).
    pub fn start_client_item(&mut self, entry: &ToolEntry, emitter: &mut Emitter) -> usize {
        self.ensure_id();
        let own_namespace = entry.deferred.is_some() && entry.call_item() == CallItem::Function;
        let namespace = entry.namespace.clone().or_else(|| own_namespace.then(|| entry.name.clone()));
        let name = entry.name.clone();
        let idx = match entry.call_item() {
            CallItem::Custom => {
                self.decoder = Some(InputDecoder::default());
                emitter.custom_call_start(self.call_id.clone(), name, namespace)
            }
            CallItem::ToolSearch => emitter.tool_search_call_start(Some(self.call_id.clone()), "client"),
            CallItem::Function | CallItem::Hosted => emitter.function_call_start(self.call_id.clone(), name, namespace),
        };
        self.output_index = Some(idx);
        idx
    }

    /// Completes the call's item (`status: completed`), adding it first if it did not
    /// stream. A function's empty or whitespace arguments get `{}`; a custom call's input
    /// is the `input` string of its arguments (see [`input_from_arguments`]). Deltas add up
    /// to the final text: what was not streamed follows as one delta, and a custom input
    /// whose JSON never closed is what was decoded of it.
    pub fn finish_item(&mut self, custom: bool, emitter: &mut Emitter) {
        let Some(idx) = self.output_index else { return };
        if self.closed {
            return;
        }
        if !custom && self.arguments.trim().is_empty() {
            self.arguments.push_str("{}");
        }
        let streamed = emitter.call_text(idx);
        let mut final_text = self.final_text(custom, emitter);
        match final_text.strip_prefix(&streamed) {
            Some("") => {}
            Some(rest) => emitter.call_delta(idx, rest.to_string()),
            None => final_text = streamed,
        }
        // The history holds what the client got: a custom call's arguments are re-encoded
        // from its input (as a replayed `custom_tool_call` is), so they are JSON even when
        // the model's were not, or were not closed yet.
        if custom {
            self.arguments = arguments_from_input(&final_text);
        } else {
            self.arguments.clone_from(&final_text);
        }
        emitter.call_done(idx, final_text, ItemStatus::Completed);
        self.closed = true;
    }

    /// What the call's item ends with: a function's arguments; a custom call's `input`
    /// (see [`input_from_arguments`]), or, while still inside the `input` string (its closing
    /// comes later, or never), what was decoded of it.
    pub fn final_text(&self, custom: bool, emitter: &Emitter) -> String {
        match &self.decoder {
            Some(d) if custom && d.inside() => self.output_index.map(|i| emitter.call_text(i)).unwrap_or_default(),
            _ if custom => input_from_arguments(&self.arguments),
            _ => arguments::repair(&self.arguments).unwrap_or_else(|| self.arguments.clone()),
        }
    }

    /// Streams a piece of the arguments: a custom call's decoded input; a function's
    /// arguments only while they are the beginning of a JSON object (see
    /// [`arguments::streamable_len`]), so that what streamed is a prefix of the repaired text.
    pub(super) fn stream_piece(&mut self, idx: usize, piece: String, emitter: &mut Emitter) {
        let delta = match &mut self.decoder {
            Some(d) => d.feed(&piece),
            None if self.held => return,
            None => {
                let streamed = emitter.call_text(idx).len();
                match arguments::streamable_len(&self.arguments) {
                    Some(n) if n > streamed => self.arguments.get(streamed..n).unwrap_or_default().to_string(),
                    Some(_) => return,
                    None => {
                        self.held = true;
                        return;
                    }
                }
            }
        };
        emitter.call_delta(idx, delta);
    }
}
