//! Item resources: the stored shape of input items (contract §4 → §10 `ItemResource`), as
//! `GET /v1/responses/{id}/input_items` and the conversation items API return them.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::events::ids::new_id;

/// The id prefix of an item type (contract §5), `item` for types without one.
fn prefix(kind: &str) -> &'static str {
    match kind {
        "message" => "msg",
        "function_call" => "fc",
        "function_call_output" => "fco",
        "custom_tool_call" => "ctc",
        "custom_tool_call_output" => "ctco",
        "reasoning" => "rs",
        "web_search_call" => "ws",
        "file_search_call" => "fs",
        "mcp_call" => "mcp",
        "tool_search_call" => "tsc",
        "tool_search_output" => "tso",
        _ => "item",
    }
}

/// A new id for `item`, with its type's prefix (`msg_…`, `fc_…`, …).
pub fn fresh_id(item: &Value) -> String {
    new_id(prefix(item.get("type").and_then(Value::as_str).unwrap_or("message")))
}

/// Gives one input item its item-resource shape: `type` (absent ⇒ `message`), an `id` when
/// it has none (`msg_…`, `fc_…`, …), a message's string `content` as one `input_text`
/// (`output_text` for the assistant) part, and `status: "completed"` on messages and tool
/// outputs that have none. Anything else is kept as given.
pub fn to_resource(item: Value) -> Value {
    let Value::Object(mut m) = item else { return item };
    let kind = match m.get("type").and_then(Value::as_str) {
        Some(k) => k.to_string(),
        None => {
            m.insert("type".into(), json!("message"));
            "message".to_string()
        }
    };
    if !m.get("id").is_some_and(Value::is_string) {
        m.insert("id".into(), json!(new_id(prefix(&kind))));
    }
    if kind == "message" {
        let assistant = m.get("role").and_then(Value::as_str) == Some("assistant");
        if let Some(Value::String(text)) = m.get("content") {
            let part = if assistant {
                json!({"type": "output_text", "text": text, "annotations": []})
            } else {
                json!({"type": "input_text", "text": text})
            };
            m.insert("content".into(), json!([part]));
        }
        set_default(&mut m, "status", "completed");
    } else if matches!(kind.as_str(), "function_call_output" | "custom_tool_call_output" | "function_call" | "custom_tool_call") {
        set_default(&mut m, "status", "completed");
    }
    Value::Object(m)
}

fn set_default(m: &mut Map<String, Value>, key: &str, value: &str) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), json!(value));
    }
}

/// The request body's `input` as item resources: a string is one user message; a list
/// gives one resource per item. Not JSON or no `input` → empty.
pub fn input_resources(body: &[u8]) -> Vec<Value> {
    #[derive(Deserialize)]
    struct Body {
        #[serde(default)]
        input: Value,
    }
    let input = serde_json::from_slice::<Body>(body).map(|b| b.input).unwrap_or(Value::Null);
    match input {
        Value::String(text) => vec![to_resource(json!({"type": "message", "role": "user", "content": text}))],
        Value::Array(items) => items.into_iter().map(to_resource).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_get_type_id_parts_and_status() {
        let r = to_resource(json!({"role": "user", "content": "hi"}));
        assert_eq!(r["type"], "message");
        assert!(r["id"].as_str().unwrap().starts_with("msg_"));
        assert_eq!(r["content"], json!([{"type": "input_text", "text": "hi"}]));
        assert_eq!(r["status"], "completed");
        let a = to_resource(json!({"role": "assistant", "content": "yo", "id": "msg_given"}));
        assert_eq!(a["id"], "msg_given");
        assert_eq!(a["content"][0]["type"], "output_text");
        let o = to_resource(json!({"type": "function_call_output", "call_id": "c", "output": "1"}));
        assert!(o["id"].as_str().unwrap().starts_with("fco_"));
        assert_eq!(o["status"], "completed");
    }

    #[test]
    fn string_input_is_one_user_message() {
        let items = input_resources(br#"{"model":"m","input":"hello"}"#);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["role"], "user");
        assert_eq!(items[0]["content"][0]["text"], "hello");
        assert!(input_resources(b"not json").is_empty());
    }
}
