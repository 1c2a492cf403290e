//! Compaction (issue 29; contract 2026 §W2): `POST /v1/responses/compact` asks the upstream
//! for a summary and answers the user's messages plus a sealed `compaction` item; that item
//! in a later input stands for everything before it (the summary, opened, as one user
//! message); a changed or foreign blob is a 400 naming the item. On both upstream APIs.

use responses_gateway::config::UpstreamApiKind;
use responses_gateway::transcript::compaction::SUMMARY_INTRO;
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

/// compact, then a create with its output and a new message: the upstream sees the summary
/// and the new message only.
async fn compact_then_continue(api: UpstreamApiKind) {
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

    let mut input = c["output"].as_array().unwrap().clone();
    input.push(json!({"role":"user","content":"Where do I live?"}));
    h.upstream.push(Script::text(&["In Lyon."]));
    let (s, r) = h.post(json!({"model":"m","input":input})).await;
    assert_eq!(s, 200, "{r}");
    let req = &h.upstream.requests()[1].body;
    let sent = texts(req);
    assert_eq!(sent.len(), 2, "{req}");
    assert_eq!(sent[0], format!("{SUMMARY_INTRO}\n\nUser lives in Lyon and likes green tea."));
    assert_eq!(sent[1], "Where do I live?");
    // The stored response keeps the compaction item among its input items.
    let (s, items) = h.get(&format!("/v1/responses/{}/input_items?order=asc", r["id"].as_str().unwrap())).await;
    assert_eq!(s, 200, "{items}");
    assert!(items["data"].as_array().unwrap().iter().any(|i| i["type"] == "compaction" && i["encrypted_content"] == blob), "{items}");
}

#[tokio::test]
async fn compact_then_continue_on_chat() {
    compact_then_continue(UpstreamApiKind::Chat).await;
}

#[tokio::test]
async fn compact_then_continue_on_responses() {
    compact_then_continue(UpstreamApiKind::Responses).await;
}

/// A three-turn `previous_response_id` chain compacted in the middle: turn 2 continues turn
/// 1 with a compaction item of turn 1's window, turn 3 continues turn 2: the model sees the
/// summary, turn 2 and turn 3, never turn 1's messages.
#[tokio::test]
async fn chain_compacted_in_the_middle() {
    let h = on(UpstreamApiKind::Chat).await;
    h.upstream.push(Script::text(&["Noted: Lyon."]));
    let (s, r1) = h.post(json!({"model":"m","input":"I live in Lyon."})).await;
    assert_eq!(s, 200, "{r1}");
    h.upstream.push(Script::text(&["Lives in Lyon."]));
    let (s, c) = h.post_to("/v1/responses/compact", json!({"model":"m","previous_response_id":r1["id"]})).await;
    assert_eq!(s, 200, "{c}");
    let sent = texts(&h.upstream.requests()[1].body);
    assert_eq!(sent, ["I live in Lyon.", "Noted: Lyon.", PROMPT], "the chain is the window");
    let compaction = c["output"].as_array().unwrap().last().unwrap().clone();
    h.upstream.push(Script::text(&["Tea it is."]));
    let (s, r2) = h.post(json!({"model":"m","previous_response_id":r1["id"],"input":[compaction,{"role":"user","content":"I like tea."}]})).await;
    assert_eq!(s, 200, "{r2}");
    h.upstream.push(Script::text(&["Lyon."]));
    let (s, r3) = h.post(json!({"model":"m","previous_response_id":r2["id"],"input":"Where do I live?"})).await;
    assert_eq!(s, 200, "{r3}");
    let reqs = h.upstream.requests();
    let summary = format!("{SUMMARY_INTRO}\n\nLives in Lyon.");
    assert_eq!(texts(&reqs[2].body), [summary.as_str(), "I like tea."]);
    assert_eq!(texts(&reqs[3].body), [summary.as_str(), "I like tea.", "Tea it is.", "Where do I live?"]);
}

/// A changed blob, another server's, or one with no `encrypted_content` is a 400 naming the
/// item; nothing goes upstream.
#[tokio::test]
async fn tampered_or_foreign_blob_is_400() {
    let h = on(UpstreamApiKind::Chat).await;
    h.upstream.push(Script::text(&["Summary."]));
    let (s, c) = h.post_to("/v1/responses/compact", json!({"model":"m","input":"hello"})).await;
    assert_eq!(s, 200, "{c}");
    let blob = c["output"][1]["encrypted_content"].as_str().unwrap().to_string();
    let mut changed: Vec<char> = blob.chars().collect();
    let mid = changed.len() / 2;
    changed[mid] = if changed[mid] == 'A' { 'B' } else { 'A' };
    let changed: String = changed.into_iter().collect();
    for bad in [json!({"type":"compaction","encrypted_content":changed}), json!({"type":"compaction","encrypted_content":"gAAAAABforeign"}), json!({"type":"compaction"})] {
        let (s, body) = h.post(json!({"model":"m","input":[{"role":"user","content":"hi"},bad,{"role":"user","content":"next"}]})).await;
        assert_eq!(s, 400, "{body}");
        assert_eq!(error_of(&body)["param"], "input[1]", "{body}");
    }
    assert_eq!(h.upstream.requests().len(), 1);
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

/// A conversation compacted: its items are the window, the compaction item is added with a
/// turn's input; that turn and the next see the summary, never the items before it, and
/// the conversation's items list back with the compaction item in place.
#[tokio::test]
async fn conversation_compacted() {
    let h = on(UpstreamApiKind::Chat).await;
    let (s, conv) = h.post_to("/v1/conversations", json!({"items":history()})).await;
    assert_eq!(s, 200, "{conv}");
    let conv_id = conv["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::text(&["Lyon; green tea."]));
    let (s, c) = h.post_to("/v1/responses/compact", json!({"model":"m","input":history()})).await;
    assert_eq!(s, 200, "{c}");
    let compaction = c["output"].as_array().unwrap().last().unwrap().clone();
    h.upstream.push(Script::text(&["Sure."]));
    let (s, r) = h.post(json!({"model":"m","conversation":conv_id,"input":[compaction,{"role":"user","content":"Tea?"}]})).await;
    assert_eq!(s, 200, "{r}");
    h.upstream.push(Script::text(&["Lyon."]));
    let (s, r) = h.post(json!({"model":"m","conversation":conv_id,"input":"Where?"})).await;
    assert_eq!(s, 200, "{r}");
    let reqs = h.upstream.requests();
    let summary = format!("{SUMMARY_INTRO}\n\nLyon; green tea.");
    assert_eq!(texts(&reqs[1].body), [summary.as_str(), "Tea?"]);
    assert_eq!(texts(&reqs[2].body), [summary.as_str(), "Tea?", "Sure.", "Where?"]);
    let (s, items) = h.get(&format!("/v1/conversations/{conv_id}/items?order=asc")).await;
    assert_eq!(s, 200, "{items}");
    let types: Vec<&str> = items["data"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["message", "message", "message", "compaction", "message", "message", "message", "message"], "{items}");
}

fn lookup_tool() -> Value {
    json!({"type":"custom","name":"lookup"})
}

async fn with_lookup(api: UpstreamApiKind) -> Harness {
    let tool = crate::common::TestTool::new("lookup", 0, false);
    Harness::start_full(move |c| c.upstream.api = api, move |r| r.register(tool)).await
}

/// Three rounds whose usage passes the threshold: the gateway compacts once, before the
/// second round, emits the compaction item, goes on with the summary and the user's
/// message, does not compact again before the third, and completes; the turn's usage
/// counts the summary call. A continuation starts from the compacted transcript.
async fn context_management_compacts_once(api: UpstreamApiKind) {
    let h = with_lookup(api).await;
    h.upstream.push(Script::default().with_tool(scripted_upstream::ToolCallScript::new("lookup", r#"{"input":"a"}"#)).usage(1200, 10));
    h.upstream.push(Script::text(&["Looked up a."]).usage(1300, 20));
    h.upstream.push(Script::default().with_tool(scripted_upstream::ToolCallScript::new("lookup", r#"{"input":"b"}"#)).usage(1500, 10));
    h.upstream.push(Script::text(&["Both done."]).usage(1600, 5));
    let body = json!({"model":"m","input":"look up a then b","tools":[lookup_tool()],"context_management":[{"type":"compaction","compact_threshold":1000}]});
    let s = h.stream(body).await;
    assert_eq!(s.terminal_type(), "response.completed");
    let done = &s.of_type("response.completed")[0]["response"];
    // (The progress commentary messages exist only in streams.)
    let types: Vec<&str> = done["output"].as_array().unwrap().iter().filter(|i| i["phase"] != "commentary").map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["custom_tool_call", "custom_tool_call_output", "compaction", "custom_tool_call", "custom_tool_call_output", "message"], "{done}");
    assert_eq!(s.of_type("response.output_item.added").iter().filter(|e| e["item"]["type"] == "compaction").count(), 1);
    assert_eq!(done["usage"]["input_tokens"], 1200 + 1300 + 1500 + 1600);
    let reqs = h.upstream.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(texts(&reqs[1].body).last().unwrap(), PROMPT);
    assert_eq!(texts(&reqs[2].body), [format!("{SUMMARY_INTRO}\n\nLooked up a."), "look up a then b".to_string()]);
    assert!(!texts(&reqs[3].body).iter().any(|t| t == PROMPT), "compacted once");

    h.upstream.push(Script::text(&["ok"]));
    let (st, r2) = h.post(json!({"model":"m","previous_response_id":done["id"],"input":"thanks","tools":[lookup_tool()]})).await;
    assert_eq!(st, 200, "{r2}");
    let sent = texts(&h.upstream.requests()[4].body);
    assert_eq!(sent[0], format!("{SUMMARY_INTRO}\n\nLooked up a."), "{sent:?}");
    assert_eq!(sent.last().unwrap(), "thanks");
}

#[tokio::test]
async fn context_management_compacts_once_on_chat() {
    context_management_compacts_once(UpstreamApiKind::Chat).await;
}

#[tokio::test]
async fn context_management_compacts_once_on_responses() {
    context_management_compacts_once(UpstreamApiKind::Responses).await;
}

/// Below the threshold nothing is compacted; a threshold under 1000 or another type is a 400.
#[tokio::test]
async fn context_management_checks() {
    let h = on(UpstreamApiKind::Chat).await;
    h.upstream.push(Script::text(&["hi"]).usage(50, 2));
    let (s, r) = h.post(json!({"model":"m","input":"hello","context_management":[{"type":"compaction","compact_threshold":1000}]})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["output"].as_array().unwrap().len(), 1);
    assert_eq!(h.upstream.requests().len(), 1);
    let (s, body) = h.post(json!({"model":"m","input":"hello","context_management":[{"type":"compaction","compact_threshold":999}]})).await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(error_of(&body)["param"], "context_management[0].compact_threshold");
    let (s, body) = h.post(json!({"model":"m","input":"hello","context_management":[{"type":"other"}]})).await;
    assert_eq!(s, 400, "{body}");
    assert_eq!(error_of(&body)["param"], "context_management[0].type");
}

/// On a WebSocket connection, a compaction item continues a response the connection kept
/// (`store: false`): that turn and the next see the summary, not the kept turn.
#[tokio::test]
async fn compaction_item_over_the_websocket_cache() {
    use crate::websocket::{connect, receive, send};
    let h = on(UpstreamApiKind::Chat).await;
    let mut ws = connect(&h).await;
    h.upstream.push(Script::text(&["Noted: Lyon."]));
    send(&mut ws, json!({"type":"response.create","model":"m","store":false,"input":"I live in Lyon."})).await;
    let r1 = receive(&mut ws).await;
    assert_eq!(r1.checked().terminal_type(), "response.completed");
    let r1_id = r1.events.last().unwrap()["response"]["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::text(&["Lives in Lyon."]));
    let (s, c) = h.post_to("/v1/responses/compact", json!({"model":"m","input":[{"role":"user","content":"I live in Lyon."},{"role":"assistant","content":"Noted: Lyon."}]})).await;
    assert_eq!(s, 200, "{c}");
    let compaction = c["output"].as_array().unwrap().last().unwrap().clone();
    h.upstream.push(Script::text(&["Sure."]));
    send(&mut ws, json!({"type":"response.create","model":"m","store":false,"previous_response_id":r1_id,"input":[compaction,{"role":"user","content":"Tea?"}]})).await;
    let r2 = receive(&mut ws).await;
    assert_eq!(r2.checked().terminal_type(), "response.completed", "{:?}", r2.events.last());
    let r2_id = r2.events.last().unwrap()["response"]["id"].as_str().unwrap().to_string();
    h.upstream.push(Script::text(&["Lyon."]));
    send(&mut ws, json!({"type":"response.create","model":"m","store":false,"previous_response_id":r2_id,"input":"Where?"})).await;
    assert_eq!(receive(&mut ws).await.checked().terminal_type(), "response.completed");
    let reqs = h.upstream.requests();
    let summary = format!("{SUMMARY_INTRO}\n\nLives in Lyon.");
    assert_eq!(texts(&reqs[2].body), [summary.as_str(), "Tea?"]);
    assert_eq!(texts(&reqs[3].body), [summary.as_str(), "Tea?", "Sure.", "Where?"]);
}
