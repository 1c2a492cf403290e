//! A neutral round as a `POST {base}/responses` body (OpenAI Responses API): `stream: true`,
//! `store: false` (the gateway keeps the state), the transcript as input items, the system
//! text as `instructions`, tools as `function` declarations (or their native Responses
//! form where the upstream takes the type), and sampling in its own Responses terms.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use crate::transcript::custom::input_from_arguments;
use crate::transcript::{Entry, Transcript, UserPart};
use crate::upstream::{RoundRequest, ToolChoice, UpstreamTool};

/// The smallest `max_output_tokens` the Responses API accepts; a round with fewer left asks
/// for this many (the gateway still ends the turn at the client's cap).
const MIN_OUTPUT_TOKENS: u64 = 16;

/// The JSON body of one round.
pub fn body(req: &RoundRequest<'_>) -> Value {
    let native: HashSet<&str> = req.tools.iter().filter(|t| t.is_native()).map(|t| t.name.as_str()).collect();
    let mut b = Map::new();
    b.insert("model".into(), json!(req.model));
    if let Some(system) = req.transcript.system() {
        b.insert("instructions".into(), json!(system));
    }
    b.insert("input".into(), Value::Array(input_items(req.transcript, &native)));
    b.insert("stream".into(), json!(true));
    b.insert("store".into(), json!(false));
    let sp = req.sampling;
    if let Some(t) = sp.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if let Some(p) = sp.top_p {
        b.insert("top_p".into(), json!(p));
    }
    if let Some(n) = sp.max_tokens {
        b.insert("max_output_tokens".into(), json!(n.max(MIN_OUTPUT_TOKENS)));
    }
    if let Some(u) = &sp.user {
        b.insert("user".into(), json!(u));
    }
    if let Some(e) = &sp.reasoning_effort {
        b.insert("reasoning".into(), json!({"effort": e}));
    }
    if let Some(f) = &sp.text_format {
        b.insert("text".into(), json!({"format": f}));
    }
    if sp.encrypted_reasoning {
        b.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if !req.tools.is_empty() && *req.tool_choice != ToolChoice::None {
        b.insert("tools".into(), Value::Array(req.tools.iter().map(|t| tool(t)).collect()));
        b.insert("tool_choice".into(), tool_choice(req.tool_choice, &native));
        if let Some(p) = sp.parallel_tool_calls {
            b.insert("parallel_tool_calls".into(), json!(p));
        }
    }
    Value::Object(b)
}

/// A tool as a `function` declaration, or its native (Responses) declaration as it is.
fn tool(t: &UpstreamTool) -> Value {
    if let Some(native) = &t.native {
        return native.declaration.clone();
    }
    let mut f = json!({"type": "function", "name": t.name, "parameters": t.parameters});
    if let Some(d) = &t.description {
        f["description"] = json!(d);
    }
    if let Some(s) = t.strict {
        f["strict"] = json!(s);
    }
    f
}

/// `tool_choice` (contract §3) naming each tool in its declared form.
fn tool_choice(choice: &ToolChoice, native: &HashSet<&str>) -> Value {
    let named = |n: &str| {
        let kind = if native.contains(n) { "custom" } else { "function" };
        json!({"type": kind, "name": n})
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
/// `custom_tool_call` for a tool declared natively) and their outputs.
fn input_items(t: &Transcript, native: &HashSet<&str>) -> Vec<Value> {
    let mut items = Vec::with_capacity(t.entries.len());
    let mut custom_calls: HashSet<&str> = HashSet::new();
    for e in &t.entries {
        match e {
            // The upstream's own items (its reasoning), back as they came.
            Entry::Upstream(item) => items.push(item.clone()),
            Entry::User(parts) => {
                let content: Vec<Value> = parts
                    .iter()
                    .map(|p| match p {
                        UserPart::Text(text) => json!({"type": "input_text", "text": text}),
                        UserPart::Image { url, detail } => {
                            json!({"type": "input_image", "image_url": url, "detail": detail.as_deref().unwrap_or("auto")})
                        }
                    })
                    .collect();
                items.push(json!({"type": "message", "role": "user", "content": content}));
            }
            Entry::Assistant { text, calls } => {
                if !text.is_empty() {
                    items.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
                }
                for c in calls {
                    if native.contains(c.name.as_str()) {
                        custom_calls.insert(&c.call_id);
                        let input = input_from_arguments(&c.arguments);
                        items.push(json!({"type": "custom_tool_call", "call_id": c.call_id, "name": c.name, "input": input}));
                    } else {
                        items.push(json!({"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}));
                    }
                }
            }
            Entry::ToolResult { call_id, content } => {
                let kind = if custom_calls.contains(call_id.as_str()) { "custom_tool_call_output" } else { "function_call_output" };
                items.push(json!({"type": kind, "call_id": call_id, "output": content}));
            }
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Call;
    use crate::upstream::{NativeTool, Sampling};

    /// The transcript, tools, choice and sampling in the Responses shape.
    #[test]
    fn body_has_the_responses_shape() {
        let t = Transcript {
            instructions: Some("Be brief.".into()),
            entries: vec![
                Entry::User(vec![UserPart::Text("hi".into()), UserPart::Image { url: "data:image/png;base64,AA".into(), detail: None }]),
                Entry::Assistant {
                    text: "Let me look.".into(),
                    calls: vec![
                        Call { call_id: "c1".into(), name: "get_weather".into(), arguments: "{\"city\":\"Paris\"}".into() },
                        Call { call_id: "c2".into(), name: "sql".into(), arguments: "{\"input\":\"SELECT 1\"}".into() },
                    ],
                },
                Entry::ToolResult { call_id: "c1".into(), content: "sunny".into() },
                Entry::ToolResult { call_id: "c2".into(), content: "1".into() },
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
}
