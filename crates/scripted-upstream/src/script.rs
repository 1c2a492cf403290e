//! What one chat-completions request is answered with.

use serde::{Deserialize, Serialize};

/// Words the default script cycles through, so a default answer reads as text.
const SENTENCE: &[&str] = &[
    "The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog.",
];

/// One scripted answer to one `/v1/chat/completions` request.
///
/// Every field is optional; an empty script answers an empty `stop` completion.
/// The JSON form (used by `POST /_control/scripts`) has the same field names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Script {
    /// Reasoning chunks sent before the text: `delta.reasoning_content` (DeepSeek /
    /// llama.cpp style) or, with `reasoning_field: "reasoning"`, `delta.reasoning` (vLLM);
    /// on `/v1/responses`, `reasoning_text` deltas.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasoning_content: Vec<String>,
    /// The chat field the reasoning is sent in: `reasoning_content` (default) or `reasoning`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_field: Option<String>,
    /// On `/v1/responses`: the reasoning item's summary, one `summary_text` part per entry
    /// (with the `response.reasoning_summary_*` events), beside its raw `reasoning_text`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
    /// On `/v1/responses`: end with `response.failed` (with the usage so far) carrying this
    /// message; with `failed_beside`, the Response's `error` is null and the message is on
    /// the event's own `error` object instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// See `failed`.
    #[serde(skip_serializing_if = "is_false")]
    pub failed_beside: bool,
    /// Content deltas, one chunk each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<String>,
    /// `delta.refusal` chunks sent after the text (OpenAI's form of a model's refusal).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refusal: Vec<String>,
    /// Tool calls streamed after the text, in order (`index` 0, 1, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallScript>,
    /// Raw chat `delta` objects, each sent as it is in a chunk of its own after the tool
    /// calls: shapes the fields above cannot make (calls interleaved, two calls under one
    /// `index`, arguments as an object). Streamed answers (`/v1/chat/completions`) only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deltas: Vec<serde_json::Value>,
    /// Defaults to `tool_calls` when there are tool calls (in `tool_calls` or `deltas`), else `stop`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Pause between two consecutive stream chunks; a non-streaming answer waits
    /// this long per chunk it would have streamed.
    #[serde(skip_serializing_if = "is_zero")]
    pub token_delay_ms: u64,
    /// Reported usage; unset fields take their defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageScript>,
    /// Answer with this HTTP status (and `error_body`) instead of a completion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Body of the error answer; defaults to an OpenAI-shaped error JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_body: Option<String>,
    /// Break the answer on purpose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallScript {
    /// Call id; by default 32 random alphanumerics with no `call_` prefix (like llama.cpp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Function name.
    pub name: String,
    /// Raw arguments string, sent as is (it need not be valid JSON).
    #[serde(default)]
    pub arguments: String,
    /// Stream the arguments in pieces of this many characters (0: one piece).
    #[serde(default = "default_fragment_chars")]
    pub fragment_chars: usize,
    /// Re-serialize valid JSON arguments pretty-printed with newlines (like llama.cpp).
    #[serde(default)]
    pub pretty: bool,
    /// Send a native custom tool call (`{"type":"custom","custom":{name,input}}`, OpenAI's
    /// Chat Completions form) with `arguments` as the raw `input`.
    #[serde(default)]
    pub custom: bool,
    /// On `/v1/responses`: the arguments come only in `function_call_arguments.done` (no
    /// deltas, and none on the finished item).
    #[serde(default, skip_serializing_if = "is_false")]
    pub arguments_in_done_only: bool,
    /// On `/v1/responses`: send a typed call of a hosted tool instead of a function call:
    /// `file_search` (a `file_search_call` whose `queries` come from `arguments`'
    /// `{"queries": […]}`) or `web_search` (a `web_search_call` whose `action.query` comes
    /// from `{"query": …}`). Chat Completions answers send the function call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosted: Option<String>,
}

fn default_fragment_chars() -> usize {
    8
}

/// Usage figures to report; unset ones default to prompt 10 and
/// completion = number of reasoning, content and argument chunks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UsageScript {
    /// `usage.prompt_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens` (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens` (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// A deliberate failure. `after_chunks` counts `data:` chunks already sent,
/// the first (role) chunk included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Abort the connection after `after_chunks` chunks: no `[DONE]`, no clean end
    /// of the body. A non-streaming answer (or `after_chunks: 0`) closes the
    /// connection without a complete answer.
    Disconnect {
        /// Chunks sent before the abort.
        #[serde(default)]
        after_chunks: usize,
    },
    /// After `after_chunks` chunks send `data: {"choices":[{"delta":` (cut-off JSON),
    /// then end the body without `[DONE]`. A non-streaming answer sends half its JSON.
    Malformed {
        /// Chunks sent before the malformed one.
        #[serde(default)]
        after_chunks: usize,
    },
    /// After `after_chunks` chunks send nothing for `stall_ms`, then go on normally.
    /// A non-streaming answer is delayed by `stall_ms`.
    Stall {
        /// Chunks sent before the stall.
        #[serde(default)]
        after_chunks: usize,
        /// Length of the stall.
        #[serde(default)]
        stall_ms: u64,
    },
}

impl ToolCallScript {
    /// A call to `name` with raw `arguments`, default id and fragmenting.
    pub fn new(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ToolCallScript {
            id: None,
            name: name.into(),
            arguments: arguments.into(),
            fragment_chars: default_fragment_chars(),
            pretty: false,
            custom: false,
            arguments_in_done_only: false,
            hosted: None,
        }
    }

    /// A typed call of the hosted tool `kind` (`file_search` or `web_search`) on
    /// `/v1/responses`, with its function-form `arguments`; a function call on chat.
    pub fn hosted(kind: &str, arguments: impl Into<String>) -> Self {
        ToolCallScript { hosted: Some(kind.to_string()), ..ToolCallScript::new(kind, arguments) }
    }

    /// A native custom tool call: `input` is sent raw in `custom.input`.
    pub fn custom(name: impl Into<String>, input: impl Into<String>) -> Self {
        ToolCallScript { custom: true, ..ToolCallScript::new(name, input) }
    }

    /// Use this call id instead of a random one.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Stream the arguments in pieces of `n` characters (0: one piece).
    pub fn fragment_chars(mut self, n: usize) -> Self {
        self.fragment_chars = n;
        self
    }

    /// Pretty-print the arguments (when they are valid JSON).
    pub fn pretty(mut self, pretty: bool) -> Self {
        self.pretty = pretty;
        self
    }
}

impl Script {
    /// A text answer, one content chunk per piece.
    pub fn text(pieces: &[&str]) -> Self {
        Script { text: to_strings(pieces), ..Script::default() }
    }

    /// `n` text chunks cycling through a fixed sentence ("The quick brown fox …").
    pub fn sentence(n: usize) -> Self {
        let text = SENTENCE.iter().cycle().take(n).enumerate().map(|(i, w)| {
            // Every repetition after the first starts with a space.
            if i > 0 && i % SENTENCE.len() == 0 {
                format!(" {w}")
            } else {
                (*w).to_owned()
            }
        });
        Script { text: text.collect(), ..Script::default() }
    }

    /// An answer with one tool call (default id, 8-character fragments).
    pub fn tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Script::default().with_tool_call(name, arguments)
    }

    /// An error answer with this status and body.
    pub fn http_error(status: u16, body: impl Into<String>) -> Self {
        Script { http_status: Some(status), error_body: Some(body.into()), ..Script::default() }
    }

    /// An error answer with this status and the default OpenAI-shaped error body.
    pub fn status(status: u16) -> Self {
        Script { http_status: Some(status), ..Script::default() }
    }

    /// Append text chunks.
    pub fn with_text(mut self, pieces: &[&str]) -> Self {
        self.text.extend(to_strings(pieces));
        self
    }

    /// Append `reasoning_content` chunks (sent before the text).
    pub fn reasoning(mut self, pieces: &[&str]) -> Self {
        self.reasoning_content.extend(to_strings(pieces));
        self
    }

    /// Append `delta.refusal` chunks (sent after the text).
    pub fn refusal(mut self, pieces: &[&str]) -> Self {
        self.refusal.extend(to_strings(pieces));
        self
    }

    /// Append a tool call with default id and fragmenting.
    pub fn with_tool_call(self, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        self.with_tool(ToolCallScript::new(name, arguments))
    }

    /// Append a fully specified tool call.
    pub fn with_tool(mut self, call: ToolCallScript) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// Append raw `delta` objects, one chunk each (see [`Script::deltas`]).
    pub fn with_deltas(mut self, deltas: impl IntoIterator<Item = serde_json::Value>) -> Self {
        self.deltas.extend(deltas);
        self
    }

    /// Set `finish_reason` (e.g. `length` for a truncated call, `content_filter`).
    pub fn finish(mut self, reason: impl Into<String>) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// Pause `ms` milliseconds between chunks.
    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.token_delay_ms = ms;
        self
    }

    /// Break the answer with this fault.
    pub fn fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// Report these usage figures.
    pub fn usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some(UsageScript {
            prompt_tokens: Some(prompt_tokens),
            completion_tokens: Some(completion_tokens),
            ..UsageScript::default()
        });
        self
    }

    /// Report these usage figures, with `cached` prompt tokens and `reasoning` completion
    /// tokens.
    pub fn usage_detailed(mut self, prompt_tokens: u64, completion_tokens: u64, cached: u64, reasoning: u64) -> Self {
        self.usage = Some(UsageScript {
            prompt_tokens: Some(prompt_tokens),
            completion_tokens: Some(completion_tokens),
            cached_tokens: Some(cached),
            reasoning_tokens: Some(reasoning),
        });
        self
    }

    /// True when the reasoning goes in the chat field `reasoning` (vLLM) instead of
    /// `reasoning_content`.
    pub fn reasoning_in_reasoning(&self) -> bool {
        self.reasoning_field.as_deref() == Some("reasoning")
    }

    /// The same script sending its reasoning in the chat field `field` (`reasoning` or
    /// `reasoning_content`).
    pub fn reasoning_field(mut self, field: &str) -> Self {
        self.reasoning_field = Some(field.to_string());
        self
    }

    /// The finish reason this script reports.
    pub fn effective_finish_reason(&self) -> &str {
        match &self.finish_reason {
            Some(r) => r,
            None if self.tool_calls.is_empty() && !self.deltas.iter().any(|d| d.get("tool_calls").is_some()) => "stop",
            None => "tool_calls",
        }
    }
}

fn to_strings(pieces: &[&str]) -> Vec<String> {
    pieces.iter().map(|s| (*s).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentence_is_readable_and_sized() {
        let s = Script::sentence(12);
        assert_eq!(s.text.len(), 12);
        assert_eq!(
            s.text.concat(),
            "The quick brown fox jumps over the lazy dog. The quick brown"
        );
    }

    #[test]
    fn json_defaults_and_unknown_fields() {
        let s: Script = serde_json::from_str(
            r#"{"tool_calls":[{"name":"f","arguments":"{}"}],"fault":{"kind":"stall","after_chunks":2,"stall_ms":5}}"#,
        )
        .unwrap();
        assert_eq!(s.tool_calls[0].fragment_chars, 8);
        assert_eq!(s.tool_calls[0].id, None);
        assert_eq!(s.fault, Some(Fault::Stall { after_chunks: 2, stall_ms: 5 }));
        assert_eq!(s.effective_finish_reason(), "tool_calls");

        let err = serde_json::from_str::<Script>(r#"{"txt":["a"]}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `txt`"), "{err}");
        let err = serde_json::from_str::<Script>(r#"{"fault":{"kind":"disconnect","after":1}}"#)
            .unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        assert!(serde_json::from_str::<Script>(r#"{"fault":{"kind":"explode"}}"#).is_err());
    }

    #[test]
    fn serde_round_trip() {
        let s = Script::text(&["a"])
            .with_tool(ToolCallScript::new("f", "{\"x\":1}").id("abc").fragment_chars(3).pretty(true))
            .finish("length")
            .delay_ms(4)
            .usage(1, 2)
            .fault(Fault::Disconnect { after_chunks: 3 });
        let back: Script = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        assert_eq!(Script::default().effective_finish_reason(), "stop");
    }
}
