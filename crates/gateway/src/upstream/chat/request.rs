//! The Chat Completions request body (contract §11), serialized straight from the
//! transcript and the round's tools: nothing is copied into an intermediate JSON tree, so a
//! long conversation or a large tool schema costs one pass of encoding per round.
//!
//! Shape: `{model, messages, stream: true, stream_options: {include_usage: true},
//! temperature?, top_p?, max_tokens?, response_format?, user?, reasoning_effort?, tools?,
//! tool_choice?, parallel_tool_calls?}`; `messages` is one leading system message (instructions and
//! system/developer messages, joined) then the transcript's entries.

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

use protocol::request::TextFormat;

use crate::upstream::{NativeTool, ReasoningHandback, RoundRequest, ToolChoice, UpstreamTool};
use crate::transcript::{Call, Entry, ReasoningField, Transcript, UserPart};

/// The encoded body of one round (UTF-8 JSON bytes); `handback` says which assistant
/// messages carry their reasoning. Errors only if a value cannot be encoded as JSON (a map
/// with non-string keys), which the gateway never builds.
pub fn encode(req: &RoundRequest<'_>, handback: ReasoningHandback) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Body(req, handback))
}

/// The body as a JSON value (for diagnostics and tests).
pub fn body_value(req: &RoundRequest<'_>, handback: ReasoningHandback) -> serde_json::Result<Value> {
    serde_json::to_value(Body(req, handback))
}

/// What `detail: "original"` (full resolution, newer Codex) becomes for a chat server,
/// which accepts only `low`, `high` and `auto`: `high`, the closest.
pub const ORIGINAL_DETAIL: &str = "high";

/// The reasoning each transcript entry carries back (`None` for most), by `handback`:
///
/// - `tool_rounds`: every assistant message of a user turn (the entries between two user
///   messages; the images a tool returned, which follow its results as a user message, do
///   not start one) in which the model called a tool, each in the field the server wrote
///   it in. A message of that turn that came without reasoning gets an empty one in the
///   turn's field, since servers that want it back (DeepSeek) refuse a message without.
/// - `always`: every assistant message that has reasoning.
/// - `never`: none.
fn handed_back(entries: &[Entry], handback: ReasoningHandback) -> Vec<Option<(ReasoningField, &str)>> {
    fn own(e: &Entry) -> Option<(ReasoningField, &str)> {
        match e {
            Entry::Assistant { reasoning: Some(t), .. } => Some((t.field, t.text.as_str())),
            _ => None,
        }
    }
    match handback {
        ReasoningHandback::Never => vec![None; entries.len()],
        ReasoningHandback::Always => entries.iter().map(own).collect(),
        ReasoningHandback::ToolRounds => {
            let mut out = vec![None; entries.len()];
            let mut start = 0;
            while start < entries.len() {
                // The turn runs to the next user message that does not follow a tool result.
                let end = (start + 1..entries.len())
                    .find(|&i| matches!(entries[i], Entry::User(_)) && !matches!(entries[i - 1], Entry::ToolResult { .. }))
                    .unwrap_or(entries.len());
                let turn = &entries[start..end];
                let called = turn.iter().any(|e| matches!(e, Entry::Assistant { calls, .. } if !calls.is_empty()));
                if let (true, Some((field, _))) = (called, turn.iter().find_map(own)) {
                    for (i, e) in turn.iter().enumerate() {
                        if matches!(e, Entry::Assistant { .. }) {
                            out[start + i] = Some(own(e).unwrap_or((field, "")));
                        }
                    }
                }
                start = end;
            }
            out
        }
    }
}

/// Names of the tools declared in their native form this round: their replayed calls are
/// written natively too.
fn native_names<'a>(req: &RoundRequest<'a>) -> Vec<&'a str> {
    req.tools.iter().filter(|t| t.is_native()).map(|t| t.name.as_str()).collect()
}

struct Body<'a, 'r>(&'r RoundRequest<'a>, ReasoningHandback);

impl Serialize for Body<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let req = self.0;
        let native = native_names(req);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("model", req.model)?;
        m.serialize_entry("messages", &Messages { t: req.transcript, native: &native, handback: self.1 })?;
        m.serialize_entry("stream", &true)?;
        m.serialize_entry("stream_options", &json!({"include_usage": true}))?;
        let sp = req.sampling;
        if let Some(t) = sp.temperature {
            m.serialize_entry("temperature", &t)?;
        }
        if let Some(p) = sp.top_p {
            m.serialize_entry("top_p", &p)?;
        }
        if let Some(n) = sp.max_tokens {
            m.serialize_entry("max_tokens", &n)?;
        }
        if let Some(f) = sp.text_format.as_ref().and_then(response_format) {
            m.serialize_entry("response_format", &f)?;
        }
        if let Some(u) = &sp.user {
            m.serialize_entry("user", u)?;
        }
        if let Some(e) = &sp.reasoning_effort {
            m.serialize_entry("reasoning_effort", e)?;
        }
        if !req.tools.is_empty() && *req.tool_choice != ToolChoice::None {
            m.serialize_entry("tools", &Tools(req.tools))?;
            m.serialize_entry("tool_choice", &tool_choice(req.tool_choice, &native))?;
            if let Some(p) = sp.parallel_tool_calls {
                m.serialize_entry("parallel_tool_calls", &p)?;
            }
        }
        m.end()
    }
}

/// `tool_choice`: a named tool in its declared form (native custom or function).
fn tool_choice(choice: &ToolChoice, native: &[&str]) -> Value {
    let named = |n: &str| {
        if native.contains(&n) {
            json!({"type": "custom", "custom": {"name": n}})
        } else {
            json!({"type": "function", "function": {"name": n}})
        }
    };
    match choice {
        ToolChoice::Auto | ToolChoice::None => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named(n) => named(n),
        ToolChoice::Allowed { required, names } => match (required, names.as_slice()) {
            (true, [one]) => named(one),
            (true, _) => json!("required"),
            (false, _) => json!("auto"),
        },
    }
}

/// `text.format` as Chat Completions `response_format`: `{type:"json_schema",
/// json_schema:{name, schema, description?, strict?}}` or `{type:"json_object"}`; plain text
/// sends none.
fn response_format(format: &TextFormat) -> Option<Value> {
    match format {
        TextFormat::JsonSchema { name, schema, description, strict } => {
            let mut js = json!({"name": name, "schema": schema});
            if let Some(d) = description {
                js["description"] = json!(d);
            }
            if let Some(s) = strict {
                js["strict"] = json!(s);
            }
            Some(json!({"type": "json_schema", "json_schema": js}))
        }
        TextFormat::JsonObject => Some(json!({"type": "json_object"})),
        TextFormat::Text => None,
    }
}

/// A native declaration in Chat Completions' shape. `custom`: OpenAI's `{type:"custom",
/// custom:{name, description?, format}}` with `format` `{type:"text"}` or `{type:"grammar",
/// grammar:{syntax, definition}}` (the Responses `format` of contract §2 rewritten); any
/// other type as declared.
fn native_declaration(native: &NativeTool) -> Value {
    let d = &native.declaration;
    if native.tool_type != "custom" {
        return d.clone();
    }
    let mut custom = json!({"name": d.get("name").cloned().unwrap_or(Value::Null)});
    if let Some(format) = d.get("format") {
        custom["format"] = match format.get("type").and_then(Value::as_str) {
            Some("grammar") => json!({"type": "grammar", "grammar": {
                "syntax": format.get("syntax").cloned().unwrap_or(Value::Null),
                "definition": format.get("definition").cloned().unwrap_or(Value::Null),
            }}),
            _ => json!({"type": "text"}),
        };
    }
    if let Some(desc) = d.get("description").filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
        custom["description"] = desc.clone();
    }
    json!({"type": "custom", "custom": custom})
}

struct Tools<'a>(&'a [&'a UpstreamTool]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for t in self.0 {
            seq.serialize_element(&Tool(t))?;
        }
        seq.end()
    }
}

/// `{type:"function", function:{name, parameters, description?, strict?}}`, or the tool's
/// native declaration.
struct Tool<'a>(&'a UpstreamTool);

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Some(native) = &self.0.native {
            return native_declaration(native).serialize(s);
        }
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("type", "function")?;
        m.serialize_entry("function", &Function(self.0))?;
        m.end()
    }
}

struct Function<'a>(&'a UpstreamTool);

impl Serialize for Function<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", &f.name)?;
        m.serialize_entry("parameters", &f.parameters)?;
        if let Some(d) = &f.description {
            m.serialize_entry("description", d)?;
        }
        if let Some(strict) = f.strict {
            m.serialize_entry("strict", &strict)?;
        }
        m.end()
    }
}

/// The chat `messages`: the leading system message, then one per transcript entry.
pub struct Messages<'a> {
    pub t: &'a Transcript,
    /// Tools declared natively: their calls are written as `{type:"custom", custom:{…}}`.
    pub native: &'a [&'a str],
    /// Which assistant messages carry their reasoning.
    pub handback: ReasoningHandback,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let system = self.t.system();
        let mut seq = s.serialize_seq(Some(self.t.entries.len() + usize::from(system.is_some())))?;
        if let Some(sys) = &system {
            seq.serialize_element(&json!({"role": "system", "content": sys}))?;
        }
        let reasoning = handed_back(&self.t.entries, self.handback);
        // A Responses upstream's own items (its reasoning) are never shown to a chat upstream.
        for (e, reasoning) in self.t.entries.iter().zip(reasoning).filter(|(e, _)| !matches!(e, Entry::Upstream(_))) {
            seq.serialize_element(&Message { e, native: self.native, reasoning })?;
        }
        seq.end()
    }
}

struct Message<'a> {
    e: &'a Entry,
    native: &'a [&'a str],
    /// The reasoning this assistant message carries back, in its field.
    reasoning: Option<(ReasoningField, &'a str)>,
}

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self.e {
            Entry::Upstream(_) => {}
            Entry::User(parts) => {
                m.serialize_entry("role", "user")?;
                if parts.iter().all(|p| matches!(p, UserPart::Text(_))) {
                    let texts: Vec<&str> = parts
                        .iter()
                        .filter_map(|p| match p {
                            UserPart::Text(t) => Some(t.as_str()),
                            UserPart::Image { .. } => None,
                        })
                        .collect();
                    m.serialize_entry("content", &texts.join("\n"))?;
                } else {
                    m.serialize_entry("content", &Parts(parts))?;
                }
            }
            Entry::Assistant { text, calls, .. } => {
                m.serialize_entry("role", "assistant")?;
                m.serialize_entry("content", text)?;
                if let Some((field, thought)) = self.reasoning {
                    m.serialize_entry(field.name(), thought)?;
                }
                if !calls.is_empty() {
                    m.serialize_entry("tool_calls", &Calls { calls, native: self.native })?;
                }
            }
            Entry::ToolResult { call_id, content, .. } => {
                m.serialize_entry("role", "tool")?;
                m.serialize_entry("tool_call_id", call_id)?;
                m.serialize_entry("content", content)?;
            }
        }
        m.end()
    }
}

/// User content with images: `[{type:"text", text} | {type:"image_url", image_url:{url, detail?}}]`.
struct Parts<'a>(&'a [UserPart]);

impl Serialize for Parts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for p in self.0 {
            match p {
                UserPart::Text(text) => seq.serialize_element(&json!({"type": "text", "text": text}))?,
                UserPart::Image { url, detail } => {
                    let mut img = json!({"url": url});
                    if let Some(d) = detail {
                        img["detail"] = json!(if d == "original" { ORIGINAL_DETAIL } else { d });
                    }
                    seq.serialize_element(&json!({"type": "image_url", "image_url": img}))?;
                }
            }
        }
        seq.end()
    }
}

/// An assistant turn's `tool_calls`.
struct Calls<'a> {
    calls: &'a [Call],
    native: &'a [&'a str],
}

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.calls.len()))?;
        for c in self.calls {
            if self.native.contains(&c.name.as_str()) {
                let input = crate::transcript::custom::input_from_arguments(&c.arguments);
                seq.serialize_element(&json!({"id": c.call_id, "type": "custom", "custom": {"name": c.name, "input": input}}))?;
            } else {
                seq.serialize_element(&FunctionCall(c))?;
            }
        }
        seq.end()
    }
}

/// `{id, type:"function", function:{name, arguments}}`, borrowing the call.
struct FunctionCall<'a>(&'a Call);

impl Serialize for FunctionCall<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct F<'a> {
            name: &'a str,
            arguments: &'a str,
        }
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("id", &self.0.call_id)?;
        m.serialize_entry("type", "function")?;
        m.serialize_entry("function", &F { name: &self.0.name, arguments: &self.0.arguments })?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::Sampling;

    /// The whole body, key order included (the encoder writes what the JSON tree did).
    #[test]
    fn body_has_the_chat_completions_shape() {
        let t = Transcript {
            instructions: Some("Be brief.".into()),
            system_messages: vec!["Use metric.".into()],
            entries: vec![
                Entry::User(vec![UserPart::Text("a".into()), UserPart::Text("b".into())]),
                Entry::User(vec![UserPart::Text("see".into()), UserPart::Image { url: "data:image/png;base64,AA".into(), detail: Some("low".into()) }]),
                Entry::Assistant {
                    reasoning: None,
                    text: String::new(),
                    calls: vec![
                        Call { call_id: "c1".into(), name: "get_weather".into(), arguments: "{\"city\":\"Paris\"}".into() },
                        Call { call_id: "c2".into(), name: "sql".into(), arguments: "{\"input\":\"SELECT 1\"}".into() },
                    ],
                },
                Entry::ToolResult { call_id: "c1".into(), content: "sunny".into(), continuation: None },
                Entry::ToolResult { call_id: "c2".into(), content: "1".into(), continuation: None },
            ],
            file_sources: Vec::new(),
            private_results: Vec::new(),
            ..Transcript::default()
        };
        let weather = UpstreamTool {
            name: "get_weather".into(),
            description: Some("Weather".into()),
            parameters: json!({"type": "object"}),
            strict: Some(true),
            native: None,
        };
        let sql = UpstreamTool {
            name: "sql".into(),
            description: None,
            parameters: json!({}),
            strict: None,
            native: Some(NativeTool { tool_type: "custom".into(), declaration: json!({"type": "custom", "name": "sql"}) }),
        };
        let tools = [&weather, &sql];
        let sampling = Sampling { temperature: Some(0.5), max_tokens: Some(7), parallel_tool_calls: Some(false), ..Sampling::default() };
        let choice = ToolChoice::Named("sql".into());
        let req = RoundRequest { model: "m", transcript: &t, tools: &tools, tool_choice: &choice, sampling: &sampling };
        let want = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "Be brief.\n\nUse metric."},
                {"role": "user", "content": "a\nb"},
                {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "low"}}]},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "c2", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "tool", "tool_call_id": "c2", "content": "1"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.5,
            "max_tokens": 7,
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}, "description": "Weather", "strict": true}},
                {"type": "custom", "custom": {"name": "sql"}}
            ],
            "tool_choice": {"type": "custom", "custom": {"name": "sql"}},
            "parallel_tool_calls": false
        });
        let bytes = encode(&req, ReasoningHandback::ToolRounds).expect("encode");
        assert_eq!(String::from_utf8(bytes).expect("utf-8"), serde_json::to_string(&want).expect("json"));
        assert_eq!(body_value(&req, ReasoningHandback::ToolRounds).expect("value"), want);
        // No tools offered (tool_choice none): neither tools nor tool_choice are sent.
        let none = RoundRequest { tool_choice: &ToolChoice::None, ..req };
        let v = body_value(&none, ReasoningHandback::ToolRounds).expect("value");
        assert!(v.get("tools").is_none() && v.get("tool_choice").is_none() && v.get("parallel_tool_calls").is_none());
    }

    /// `tool_rounds` hands reasoning back on every assistant message of a user turn with
    /// calls (an empty one where a message had none), not on a plain chat turn; the images
    /// of a tool output (a user message right after the results) do not start a turn.
    #[test]
    fn reasoning_goes_back_by_the_setting() {
        use crate::transcript::Thought;
        let thought = |t: &str| Some(Thought { field: ReasoningField::Reasoning, text: t.into() });
        let call = Call { call_id: "c1".into(), name: "f".into(), arguments: "{}".into() };
        let entries = vec![
            Entry::User(vec![UserPart::Text("hi".into())]),
            Entry::Assistant { text: "hello".into(), calls: vec![], reasoning: thought("greet") },
            Entry::User(vec![UserPart::Text("look".into())]),
            Entry::Assistant { text: String::new(), calls: vec![call], reasoning: thought("call f") },
            Entry::ToolResult { call_id: "c1".into(), content: "x".into(), continuation: None },
            Entry::User(vec![UserPart::Image { url: "data:image/png;base64,AA".into(), detail: Some("original".into()) }]),
            Entry::Assistant { text: "done".into(), calls: vec![], reasoning: None },
        ];
        let got = |mode| handed_back(&entries, mode).into_iter().map(|r| r.map(|(f, t)| (f.name(), t.to_string()))).collect::<Vec<_>>();
        let some = |t: &str| Some(("reasoning", t.to_string()));
        assert_eq!(got(ReasoningHandback::ToolRounds), vec![None, None, None, some("call f"), None, None, some("")]);
        assert_eq!(got(ReasoningHandback::Always), vec![None, some("greet"), None, some("call f"), None, None, None]);
        assert_eq!(got(ReasoningHandback::Never), vec![None; 7]);
        // On the wire: the field on the message, `original` as `high`.
        let t = Transcript { entries, ..Transcript::default() };
        let req = RoundRequest { model: "m", transcript: &t, tools: &[], tool_choice: &ToolChoice::Auto, sampling: &Sampling::default() };
        let v = body_value(&req, ReasoningHandback::ToolRounds).expect("value");
        assert_eq!(v["messages"][3]["reasoning"], "call f");
        assert!(v["messages"][1].get("reasoning").is_none() && v["messages"][1].get("reasoning_content").is_none());
        assert_eq!(v["messages"][5]["content"][0]["image_url"]["detail"], "high");
    }
}
