//! A neutral round as a `POST {base}/responses` body (OpenAI Responses API): `stream: true`,
//! `store: false` (the gateway keeps the state), the transcript as input items, the system
//! text as `instructions`, tools as `function` declarations (or their native Responses
//! form where the upstream takes the type), and sampling in its own Responses terms.
//! Serialized straight from the transcript, as the chat encoder does: no intermediate JSON
//! tree.

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

use crate::transcript::custom::input_from_arguments;
use crate::transcript::{Entry, Transcript, UserPart};
use crate::upstream::{NativeTool, RoundRequest, ToolChoice, UpstreamTool};

/// The smallest `max_output_tokens` the Responses API accepts; a round with fewer left asks
/// for this many (the gateway still ends the turn at the client's cap).
const MIN_OUTPUT_TOKENS: u64 = 16;

/// The encoded body of one round (UTF-8 JSON). Errors only if a value cannot be encoded as
/// JSON (a map with non-string keys), which the gateway never builds.
pub fn encode(req: &RoundRequest<'_>) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&Body(req))
}

/// The body as a JSON value (tests and diagnostics).
pub fn body(req: &RoundRequest<'_>) -> Value {
    serde_json::to_value(Body(req)).unwrap_or(Value::Null)
}

/// The tools declared natively this round, by model-visible name (a handful: a linear search).
type Natives<'a> = Vec<(&'a str, &'a NativeTool)>;

fn natives<'a>(req: &RoundRequest<'a>) -> Natives<'a> {
    req.tools.iter().filter_map(|t| Some((t.name.as_str(), t.native.as_ref()?))).collect()
}

fn native<'a>(natives: &Natives<'a>, name: &str) -> Option<&'a NativeTool> {
    natives.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

struct Body<'a, 'r>(&'r RoundRequest<'a>);

impl Serialize for Body<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let req = self.0;
        let natives = natives(req);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("model", req.model)?;
        if let Some(system) = req.transcript.system() {
            m.serialize_entry("instructions", &system)?;
        }
        m.serialize_entry("input", &Input { t: req.transcript, natives: &natives })?;
        m.serialize_entry("stream", &true)?;
        m.serialize_entry("store", &false)?;
        let sp = req.sampling;
        if let Some(t) = sp.temperature {
            m.serialize_entry("temperature", &t)?;
        }
        if let Some(p) = sp.top_p {
            m.serialize_entry("top_p", &p)?;
        }
        if let Some(n) = sp.max_tokens {
            m.serialize_entry("max_output_tokens", &n.max(MIN_OUTPUT_TOKENS))?;
        }
        if let Some(u) = &sp.user {
            m.serialize_entry("user", u)?;
        }
        if sp.reasoning_effort.is_some() || sp.reasoning_summary.is_some() {
            m.serialize_entry("reasoning", &ReasoningParam { effort: sp.reasoning_effort.as_deref(), summary: sp.reasoning_summary.as_deref() })?;
        }
        if let Some(f) = &sp.text_format {
            m.serialize_entry("text", &Format { format: f })?;
        }
        if sp.encrypted_reasoning {
            m.serialize_entry("include", &["reasoning.encrypted_content"])?;
        }
        if !req.tools.is_empty() && *req.tool_choice != ToolChoice::None {
            m.serialize_entry("tools", &Tools(req.tools))?;
            m.serialize_entry("tool_choice", &tool_choice(req.tool_choice, &natives))?;
            if let Some(p) = sp.parallel_tool_calls {
                m.serialize_entry("parallel_tool_calls", &p)?;
            }
        }
        m.end()
    }
}

/// `reasoning: {effort?, summary?}` (contract 2026 §W5.1).
#[derive(Serialize)]
struct ReasoningParam<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
}

#[derive(Serialize)]
struct Format<'a> {
    format: &'a protocol::request::TextFormat,
}

struct Tools<'a, 'r>(&'r [&'a UpstreamTool]);

impl Serialize for Tools<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for t in self.0 {
            match &t.native {
                Some(native) => seq.serialize_element(&native.declaration)?,
                None => seq.serialize_element(&Function {
                    kind: "function",
                    name: &t.name,
                    parameters: &t.parameters,
                    description: t.description.as_deref(),
                    strict: t.strict,
                })?,
            }
        }
        seq.end()
    }
}

/// A tool as a `function` declaration.
#[derive(Serialize)]
struct Function<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    parameters: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

/// `tool_choice` (contract §3) naming each tool in its declared form: a function or custom
/// tool by name, a hosted tool by its type.
fn tool_choice(choice: &ToolChoice, natives: &Natives<'_>) -> Value {
    let named = |n: &str| match native(natives, n) {
        None => json!({"type": "function", "name": n}),
        Some(t) if t.call_item_type().is_some() => json!({"type": t.declaration.get("type").unwrap_or(&Value::Null)}),
        Some(_) => json!({"type": "custom", "name": n}),
    };
    match choice {
        ToolChoice::None => json!("none"),
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named(n) => named(n),
        ToolChoice::Allowed { required, names } => json!({
            "type": "allowed_tools",
            "mode": if *required { "required" } else { "auto" },
            "tools": names.iter().map(|n| named(n)).collect::<Vec<_>>(),
        }),
    }
}

/// The transcript's entries as Responses input items: messages, calls (`function_call`, or
/// `custom_tool_call` for a tool declared natively) and their outputs; a call of a natively
/// declared hosted tool and its result are one typed item (`file_search_call` with
/// `results`), in the call's place.
struct Input<'a, 'r> {
    t: &'r Transcript,
    natives: &'r Natives<'a>,
}

impl Serialize for Input<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.t;
        // Calls answered by a typed item: the item stands for the call and its result, in
        // the call's place (the model's order).
        let typed: Vec<(&str, &Value)> = t
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::ToolResult { call_id, continuation: Some(item), .. } => Some((call_id.as_str(), item)),
                _ => None,
            })
            .collect();
        let mut custom_calls: Vec<&str> = Vec::new();
        let mut seq = s.serialize_seq(None)?;
        for e in &t.entries {
            match e {
                // The upstream's own items (its reasoning), back as they came.
                Entry::Upstream(item) => seq.serialize_element(item)?,
                Entry::User(parts) => seq.serialize_element(&Message { kind: "message", role: "user", content: UserContent(parts) })?,
                Entry::Assistant { text, calls, .. } => {
                    if !text.is_empty() {
                        let content = [OutputText { kind: "output_text", text }];
                        seq.serialize_element(&Message { kind: "message", role: "assistant", content })?;
                    }
                    for c in calls {
                        if let Some((_, item)) = typed.iter().find(|(id, _)| *id == c.call_id) {
                            seq.serialize_element(item)?;
                            continue;
                        }
                        if native(self.natives, &c.name).is_some_and(|t| t.tool_type == "custom") {
                            custom_calls.push(&c.call_id);
                            let input = input_from_arguments(&c.arguments);
                            seq.serialize_element(&CustomCall { kind: "custom_tool_call", call_id: &c.call_id, name: &c.name, input: &input })?;
                        } else {
                            seq.serialize_element(&FunctionCall { kind: "function_call", call_id: &c.call_id, name: &c.name, arguments: &c.arguments })?;
                        }
                    }
                }
                Entry::ToolResult { continuation: Some(_), .. } => {}
                Entry::ToolResult { call_id, content, .. } => {
                    let kind = if custom_calls.contains(&call_id.as_str()) { "custom_tool_call_output" } else { "function_call_output" };
                    seq.serialize_element(&Output { kind, call_id, output: content })?;
                }
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Message<C> {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: C,
}

#[derive(Serialize)]
struct OutputText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

struct UserContent<'a>(&'a [UserPart]);

impl Serialize for UserContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for p in self.0 {
            match p {
                UserPart::Text(text) => seq.serialize_element(&InputText { kind: "input_text", text })?,
                UserPart::Image { url, detail } => seq.serialize_element(&InputImage {
                    kind: "input_image",
                    image_url: url,
                    detail: detail.as_deref().unwrap_or("auto"),
                })?,
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct InputText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct InputImage<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    image_url: &'a str,
    detail: &'a str,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct CustomCall<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    name: &'a str,
    input: &'a str,
}

#[derive(Serialize)]
struct Output<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    output: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Call;
    use crate::upstream::Sampling;

    /// The transcript, tools, choice and sampling in the Responses shape.
    #[test]
    fn body_has_the_responses_shape() {
        let t = Transcript {
            instructions: Some("Be brief.".into()),
            entries: vec![
                Entry::User(vec![UserPart::Text("hi".into()), UserPart::Image { url: "data:image/png;base64,AA".into(), detail: None }]),
                Entry::Assistant {
                    reasoning: None,
                    text: "Let me look.".into(),
                    calls: vec![
                        Call { call_id: "c1".into(), name: "get_weather".into(), arguments: "{\"city\":\"Paris\"}".into() },
                        Call { call_id: "c2".into(), name: "sql".into(), arguments: "{\"input\":\"SELECT 1\"}".into() },
                    ],
                },
                Entry::ToolResult { call_id: "c1".into(), content: "sunny".into(), continuation: None },
                Entry::ToolResult { call_id: "c2".into(), content: "1".into(), continuation: None },
            ],
            ..Transcript::default()
        };
        let weather = UpstreamTool { name: "get_weather".into(), description: Some("Weather".into()), parameters: json!({"type": "object"}), strict: None, native: None };
        let sql = UpstreamTool {
            name: "sql".into(),
            description: None,
            parameters: json!({}),
            strict: None,
            native: Some(NativeTool { tool_type: "custom".into(), declaration: json!({"type": "custom", "name": "sql"}) }),
        };
        let tools = [&weather, &sql];
        let sampling = Sampling { max_tokens: Some(5), reasoning_effort: Some("low".into()), ..Sampling::default() };
        let choice = ToolChoice::Named("sql".into());
        let req = RoundRequest { model: "m", transcript: &t, tools: &tools, tool_choice: &choice, sampling: &sampling };
        let want = json!({
            "model": "m",
            "instructions": "Be brief.",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}, {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "auto"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
                {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "custom_tool_call", "call_id": "c2", "name": "sql", "input": "SELECT 1"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
                {"type": "custom_tool_call_output", "call_id": "c2", "output": "1"}
            ],
            "stream": true,
            "store": false,
            "max_output_tokens": 16,
            "reasoning": {"effort": "low"},
            "tools": [
                {"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "description": "Weather"},
                {"type": "custom", "name": "sql"}
            ],
            "tool_choice": {"type": "custom", "name": "sql"}
        });
        assert_eq!(body(&req), want);
        let none = RoundRequest { tool_choice: &ToolChoice::None, ..req };
        assert!(body(&none).get("tools").is_none());
    }

    /// A call of a natively declared hosted tool and its result go as the one typed item of
    /// the result; the declaration goes as it is; a named choice of it names its type.
    #[test]
    fn a_hosted_native_call_goes_as_its_typed_item() {
        let typed = json!({"type": "file_search_call", "id": "c1", "queries": ["q"], "status": "completed", "results": []});
        let t = Transcript {
            entries: vec![
                Entry::User(vec![UserPart::Text("find".into())]),
                Entry::Assistant { text: String::new(), calls: vec![Call { call_id: "c1".into(), name: "file_search".into(), arguments: r#"{"queries":["q"]}"#.into() }], reasoning: None },
                Entry::ToolResult { call_id: "c1".into(), content: "results".into(), continuation: Some(typed.clone()) },
            ],
            ..Transcript::default()
        };
        let declaration = json!({"type": "file_search", "vector_store_ids": ["vs_1"], "max_num_results": 20});
        let fs = UpstreamTool {
            name: "file_search".into(),
            description: None,
            parameters: json!({}),
            strict: None,
            native: Some(NativeTool::hosted("file_search", declaration.clone())),
        };
        let tools = [&fs];
        let sampling = Sampling::default();
        let choice = ToolChoice::Named("file_search".into());
        let req = RoundRequest { model: "m", transcript: &t, tools: &tools, tool_choice: &choice, sampling: &sampling };
        let b = body(&req);
        assert_eq!(b["input"], json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "find"}]}, typed]));
        assert_eq!(b["tools"], json!([declaration]));
        assert_eq!(b["tool_choice"], json!({"type": "file_search"}));
        assert_eq!(serde_json::from_slice::<Value>(&encode(&req).unwrap()).unwrap(), b, "the bytes sent are the body");
    }
}
