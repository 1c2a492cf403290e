//! A thinking model's server that wants its reasoning back (DeepSeek V3.2/V4 in thinking
//! mode, and the same rule with vLLM's field): between two user messages, once the model
//! called a tool, every assistant message must carry its reasoning in the field the server
//! writes it in; a request without it is refused with HTTP 400.
//!
//! The answers are the servers' own:
//! - field `reasoning_content`: DeepSeek's body,
//!   `{"error":{"message":"The `reasoning_content` in the thinking mode must be passed back
//!   to the API.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`;
//! - field `reasoning`: vLLM's error shape (`type` `BadRequestError`, `code` 400) with the
//!   same words about `reasoning` (vLLM itself checks nothing; the model's chat template
//!   would lose the reasoning silently, so this stands in for the strict servers).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

/// The refusal of `request` (a chat-completions body) when an assistant message of a user
/// turn with tool calls lacks `field`; `None` when the request is acceptable.
pub(crate) fn refusal(request: &Value, field: &str) -> Option<Response> {
    let messages = request.get("messages")?.as_array()?;
    let mut start = 0;
    while start < messages.len() {
        let end = (start + 1..messages.len()).find(|&i| role(&messages[i]) == "user").unwrap_or(messages.len());
        let turn = &messages[start..end];
        let called = turn.iter().any(|m| role(m) == "assistant" && m.get("tool_calls").and_then(Value::as_array).is_some_and(|c| !c.is_empty()));
        if called && turn.iter().any(|m| role(m) == "assistant" && !m.get(field).is_some_and(Value::is_string)) {
            return Some(answer(field));
        }
        start = end;
    }
    None
}

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or_default()
}

/// The 400 the server answers.
fn answer(field: &str) -> Response {
    let message = format!("The `{field}` in the thinking mode must be passed back to the API.");
    let body = if field == "reasoning_content" {
        json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "invalid_request_error"}})
    } else {
        json!({"error": {"message": message, "type": "BadRequestError", "param": null, "code": 400}})
    };
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_turns_need_their_reasoning_back() {
        let call = json!({"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}});
        let plain = json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "more"}]});
        assert!(refusal(&plain, "reasoning_content").is_none(), "no tool call: nothing needed");
        let missing = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "x"}
        ]});
        assert_eq!(refusal(&missing, "reasoning_content").map(|r| r.status()), Some(StatusCode::BAD_REQUEST));
        let mut given = missing.clone();
        given["messages"][1]["reasoning_content"] = json!("thinking");
        assert!(refusal(&given, "reasoning_content").is_none());
        assert!(refusal(&given, "reasoning").is_some(), "the other field does not count");
        // The answer after the calls, in the same user turn, needs it too.
        let mut answer_without = given.clone();
        answer_without["messages"].as_array_mut().unwrap().push(json!({"role": "assistant", "content": "done"}));
        assert!(refusal(&answer_without, "reasoning_content").is_some());
    }
}
