//! Compaction (issue 29; contract 2026 §W2): `POST /v1/responses/compact` asks the upstream
//! for a summary and answers the user's messages plus a sealed `compaction` item; that item
//! in a later input stands for everything before it (the summary, opened, as one user
//! message); a changed or foreign blob is a 400 naming the item. On both upstream APIs.

use responses_gateway::config::UpstreamApiKind;
use responses_gateway::turn::compact::PROMPT;
use scripted_upstream::Script;
use serde_json::{json, Value};

use crate::common::{error_of, Harness};

async fn on(api: UpstreamApiKind) -> Harness {
    Harness::start_with(move |c| c.upstream.api = api).await
}

/// The texts of the upstream request's messages (chat) or input items (responses), in order.
fn texts(body: &Value) -> Vec<String> {
    let list = body.get("messages").or_else(|| body.get("input")).and_then(Value::as_array).cloned().unwrap_or_default();
    list.iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
            _ => String::new(),
        })
        .collect()
}

fn history() -> Value {
    json!([
        {"role":"user","content":"I live in Lyon."},
        {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Noted: Lyon.","annotations":[]}]},
        {"role":"user","content":"I like green tea."}
    ])
}

/// compact answers the user's messages and a sealed compaction item; the summary call is
/// the window and the gateway's prompt.
async fn compact_window(api: UpstreamApiKind) {
    let h = on(api).await;
    h.upstream.push(Script::text(&["User lives in Lyon", " and likes green tea."]).usage(40, 9));
    let (s, c) = h.post_to("/v1/responses/compact", json!({"model":"m","instructions":"Be brief.","input":history()})).await;
    assert_eq!(s, 200, "{c}");
    assert_eq!(c["object"], "response.compaction");
    assert!(c["created_at"].as_u64().unwrap() > 0);
    let out = c["output"].as_array().unwrap();
    let types: Vec<&str> = out.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["message", "message", "compaction"], "{c}");
    assert_eq!(out[0]["role"], "user");
    assert_eq!(out[0]["content"][0]["text"], "I live in Lyon.");
    assert_eq!(out[1]["content"][0]["text"], "I like green tea.");
    let blob = out[2]["encrypted_content"].as_str().unwrap();
    assert!(out[2]["id"].as_str().unwrap().starts_with("cmp_"));
    assert!(!blob.contains("Lyon"), "the summary is sealed");
    assert_eq!(c["usage"]["input_tokens"], 40);
    assert_eq!(c["usage"]["output_tokens"], 9);
    // The summary call: the window, then the gateway's prompt, no tools.
    let req = &h.upstream.requests()[0].body;
    let sent = texts(req);
    assert_eq!(sent.last().unwrap(), PROMPT, "{req}");
    assert!(sent.iter().any(|t| t == "Noted: Lyon."), "{req}");
    assert!(req.get("tools").is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)), "{req}");

}

#[tokio::test]
async fn compact_then_continue_on_chat() {
    compact_window(UpstreamApiKind::Chat).await;
}

#[tokio::test]
async fn compact_then_continue_on_responses() {
    compact_window(UpstreamApiKind::Responses).await;
}

/// `model` is required; a window is required; the summary call's failure is a 502 that says so.
#[tokio::test]
async fn compact_errors() {
    let h = on(UpstreamApiKind::Chat).await;
    let (s, body) = h.post_to("/v1/responses/compact", json!({"input":"hello"})).await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(error_of(&body)["param"], "model");
    assert_eq!(error_of(&body)["code"], "missing_required_parameter");
    let (s, body) = h.post_to("/v1/responses/compact", json!({"model":"m"})).await;
    assert_eq!(s, 400, "{body}");
    let (s, body) = h.post_to("/v1/responses/compact", json!({"model":"m","previous_response_id":"resp_nope"})).await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(error_of(&body)["code"], "previous_response_not_found");
    h.upstream.push(Script::http_error(500, r#"{"error":{"message":"boom"}}"#));
    let (s, body) = h.post_to("/v1/responses/compact", json!({"model":"m","input":"hello"})).await;
    assert_eq!(s, 502, "{body}");
    let message = error_of(&body)["message"].as_str().unwrap();
    assert!(message.starts_with("Compaction failed: the upstream model's summary call failed"), "{body}");
    h.upstream.push(Script::text(&["  "]));
    let (s, body) = h.post_to("/v1/responses/compact", json!({"model":"m","input":"hello"})).await;
    assert_eq!(s, 502, "{body}");
}
