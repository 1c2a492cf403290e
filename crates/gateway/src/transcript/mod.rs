//! The transcript: what the model sees, neutral to the upstream kind. Built from the
//! request's `instructions` and `input` items (contract §4), extended by each round.

mod build;
mod call_log;
pub mod compaction;
mod content;
pub mod custom;
mod order;
mod recorded;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::events::file_citations::FileSource;

pub use crate::events::ids::PROGRESS_ID_PREFIX;
pub use build::{build, ToolReplay};
pub use content::check as check_item_content;
pub use recorded::Recorded;

/// A user content part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UserPart {
    Text(String),
    /// An image URL or `data:` URL, with `detail`.
    Image { url: String, detail: Option<String> },
}

/// A tool call in the transcript, under its model-visible name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub call_id: String,
    pub name: String,
    /// JSON arguments text.
    pub arguments: String,
}

/// A tool call item of the input as the model saw it: the call under its model-visible
/// name, and for a gateway tool's item (`web_search_call`, `file_search_call`) the result
/// the model read (a client call's output is an item of its own).
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    pub call: Call,
    pub result: Option<String>,
    /// What the call asked (web search: its query): a private result stored with the item
    /// (`restored`) replaces `result` only when the stored call asked the same.
    pub private_key: Option<String>,
}

/// The chat field a server wrote its reasoning in, and reads it back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningField {
    /// `reasoning_content` (DeepSeek, Kimi, llama.cpp, SGLang, older vLLM).
    ReasoningContent,
    /// `reasoning` (vLLM since 0.11, OpenRouter, Ollama's OpenAI API).
    Reasoning,
}

impl ReasoningField {
    /// The field's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            ReasoningField::ReasoningContent => "reasoning_content",
            ReasoningField::Reasoning => "reasoning",
        }
    }
}

/// A chat upstream's reasoning of one assistant turn, as the model wrote it, in the field
/// the server used: it goes back to that server on the assistant message (issue 30).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thought {
    pub field: ReasoningField,
    pub text: String,
}

impl Thought {
    /// Appends `more` (reasoning of the same assistant turn) to this one.
    pub fn join(&mut self, more: Thought) {
        if !self.text.is_empty() && !more.text.is_empty() {
            self.text.push_str("\n\n");
        }
        self.text.push_str(&more.text);
    }
}

/// One transcript entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Entry {
    User(Vec<UserPart>),
    /// The model's turn: its text, its calls and (from a chat upstream) its reasoning.
    Assistant {
        text: String,
        calls: Vec<Call>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<Thought>,
    },
    /// A call's result: the text the model reads and, for a call of a natively declared
    /// hosted tool, the typed item that goes back to a Responses upstream instead
    /// (`file_search_call` with `results`; see `tools::Finished::continuation`).
    ToolResult {
        call_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        continuation: Option<serde_json::Value>,
    },
    /// An upstream's own item (a Responses upstream's reasoning), sent back only to an
    /// upstream of that API, as it came.
    Upstream(serde_json::Value),
}

/// Joins `more` into `slot`.
fn join_thought(slot: &mut Option<Thought>, more: Option<Thought>) {
    match (slot.as_mut(), more) {
        (Some(t), Some(m)) => t.join(m),
        (None, m @ Some(_)) => *slot = m,
        (_, None) => {}
    }
}

/// What the model sees: `instructions` (this request's only; never carried over), the
/// system/developer messages of the input (carried over), and the entries in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    #[serde(skip)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub system_messages: Vec<String>,
    pub entries: Vec<Entry>,
    /// The file-search chunks shown so far, in marker order (`【N】` names the N-th): a
    /// continuation cites earlier turns' chunks and numbers new ones after them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_sources: Vec<FileSource>,
    /// `(item id, call id, key)` of this turn's gateway tool items whose results are private
    /// (web search: keyed by the query). Not stored in the transcript: the store keeps each
    /// result by item id, for a client that replays the items.
    #[serde(skip)]
    pub private_results: Vec<(String, String, String)>,
    /// Tools listed so far, by label (an MCP server's `mcp_list_tools` tools, as the item
    /// has them): a continuation reuses a label's listing instead of listing again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub listings: BTreeMap<String, serde_json::Value>,
    /// Declarations loaded by tool searches so far (each a `tool_search_output`'s tools,
    /// or a deferred tool called without a search; issue 31): a continuation loads them
    /// again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded: Vec<serde_json::Value>,
    /// The ids of the approval requests issued (issue 18 "Approvals"); each is the
    /// `call_id` of its call, which an approval response answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<String>,
    /// This request's approved calls, as `(request id, the answer's input param)`: the turn
    /// runs them first and puts their results in place of the placeholder the build left.
    #[serde(skip)]
    pub approved: Vec<(String, String)>,
    /// This request's denials, as `(request id, the answer's input param)`: recorded, so that
    /// a later approval of one (from an earlier response) is refused.
    #[serde(skip)]
    pub denied: Vec<(String, String)>,
}

impl Transcript {
    /// The one leading system message: instructions plus every system/developer message,
    /// because many chat templates reject a second system message.
    pub fn system(&self) -> Option<String> {
        let parts: Vec<&str> = self
            .instructions
            .iter()
            .map(String::as_str)
            .chain(self.system_messages.iter().map(String::as_str))
            .filter(|s| !s.is_empty())
            .collect();
        if parts.is_empty() {
            None
        } else {
            Some(parts.join("\n\n"))
        }
    }

    /// The model-visible names of the calls in the history, in order.
    pub fn call_names(&self) -> Vec<String> {
        self.entries
            .iter()
            .flat_map(|e| match e {
                Entry::Assistant { calls, .. } => calls.iter().map(|c| c.name.clone()).collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// Calls in the transcript as `(call_id, answered)`.
    /// Every call's id and whether an output answered it, in order.
    pub fn calls(&self) -> Vec<(String, bool)> {
        let answered: HashSet<&str> = self
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::ToolResult { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        self.entries
            .iter()
            .flat_map(|e| match e {
                Entry::Assistant { calls, .. } => calls.iter().map(|c| (c.call_id.clone(), answered.contains(c.call_id.as_str()))).collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// Appends an assistant turn, or continues the last one when it is text only.
    pub fn push_assistant(&mut self, text: String, calls: Vec<Call>) {
        self.push_assistant_with(text, calls, None);
    }

    /// As [`Transcript::push_assistant`], with the turn's reasoning (a chat upstream's).
    pub fn push_assistant_with(&mut self, text: String, mut calls: Vec<Call>, thought: Option<Thought>) {
        // Right after assistant text (an input that ended with assistant messages), the
        // model's turn continues it: one assistant turn, as chat templates want.
        if let Some(Entry::Assistant { text: earlier, calls: none, reasoning }) = self.entries.last_mut() {
            if none.is_empty() {
                if !earlier.is_empty() && !text.is_empty() {
                    earlier.push_str("\n\n");
                }
                earlier.push_str(&text);
                none.append(&mut calls);
                join_thought(reasoning, thought);
                return;
            }
        }
        self.entries.push(Entry::Assistant { text, calls, reasoning: thought });
    }

    /// Adds `thought` to the last assistant turn (none: it is dropped).
    pub(crate) fn attach_thought(&mut self, thought: Thought) {
        if let Some(Entry::Assistant { reasoning, .. }) = self.entries.iter_mut().rev().find(|e| matches!(e, Entry::Assistant { .. })) {
            join_thought(reasoning, Some(thought));
        }
    }

    /// Adds the upstream's own items of a round (before its assistant entry).
    pub fn push_upstream_items(&mut self, items: Vec<serde_json::Value>) {
        self.entries.extend(items.into_iter().map(Entry::Upstream));
    }

    /// The content of the tool result answering `call_id`, if any.
    pub fn tool_result(&self, call_id: &str) -> Option<&str> {
        self.entries.iter().rev().find_map(|e| match e {
            Entry::ToolResult { call_id: id, content, .. } if id == call_id => Some(content.as_str()),
            _ => None,
        })
    }

    /// The call whose `call_id` is `call_id`, if any.
    pub fn call(&self, call_id: &str) -> Option<&Call> {
        self.entries.iter().find_map(|e| match e {
            Entry::Assistant { calls, .. } => calls.iter().find(|c| c.call_id == call_id),
            _ => None,
        })
    }

    /// Replaces the content of the tool result answering `call_id` (an approved call's
    /// placeholder); false when there is none.
    pub fn set_tool_result(&mut self, call_id: &str, text: String) -> bool {
        for e in self.entries.iter_mut().rev() {
            if let Entry::ToolResult { call_id: id, content, .. } = e {
                if id == call_id {
                    *content = text;
                    return true;
                }
            }
        }
        false
    }

    /// Appends a tool result.
    pub fn push_tool_result(&mut self, call_id: String, content: String) {
        self.entries.push(Entry::ToolResult { call_id, content, continuation: None });
    }

    /// Appends a tool result with its typed continuation item, if any.
    pub fn push_tool_result_with(&mut self, call_id: String, content: String, continuation: Option<serde_json::Value>) {
        self.entries.push(Entry::ToolResult { call_id, content, continuation });
    }

    /// Removes the unanswered calls `unanswered` (ids, in call order) when they all belong to
    /// server tools; otherwise removes nothing and returns the first that does not. One pass
    /// over the entries.
    fn drop_server_calls<'a>(&mut self, unanswered: &[&'a str], is_server_tool: &dyn Fn(&str) -> bool) -> Option<&'a str> {
        let wanted: HashSet<&str> = unanswered.iter().copied().collect();
        let names: HashMap<&str, &str> = self
            .entries
            .iter()
            .flat_map(|e| match e {
                Entry::Assistant { calls, .. } => calls.as_slice(),
                _ => &[],
            })
            .filter(|c| wanted.contains(c.call_id.as_str()))
            .map(|c| (c.call_id.as_str(), c.name.as_str()))
            .collect();
        if let Some(first) = unanswered.iter().find(|id| !names.get(*id).is_some_and(|name| is_server_tool(name))) {
            return Some(first);
        }
        self.remove_calls(&wanted);
        None
    }

    /// Removes the calls whose ids are in `ids`; an assistant turn left with neither text nor
    /// calls goes too.
    fn remove_calls(&mut self, wanted: &HashSet<&str>) {
        self.entries.retain_mut(|e| match e {
            Entry::Assistant { text, calls, .. } => {
                let before = calls.len();
                calls.retain(|c| !wanted.contains(c.call_id.as_str()));
                !(calls.len() < before && calls.is_empty() && text.is_empty())
            }
            _ => true,
        });
    }

    /// Adds a replayed call to the assistant turn it belongs to. A call that follows a tool
    /// output (`after_output`) starts a new turn: `[call 1, output 1, call 2, output 2]` is two
    /// rounds, the second made knowing the first's result. Otherwise it joins the last
    /// assistant turn, past the results a replayed gateway search carries inline
    /// (`[search 1, search 2]` is one round of parallel calls, as the model made it).
    fn push_call(&mut self, call: Call, after_output: bool) {
        if after_output {
            self.entries.push(Entry::Assistant { text: String::new(), calls: vec![call], reasoning: None });
            return;
        }
        let last_assistant = self.entries.iter().rposition(|e| !matches!(e, Entry::ToolResult { .. } | Entry::Upstream(_)));
        match last_assistant.map(|i| &mut self.entries[i]) {
            Some(Entry::Assistant { calls, .. }) => calls.push(call),
            _ => self.entries.push(Entry::Assistant { text: String::new(), calls: vec![call], reasoning: None }),
        }
    }
}
