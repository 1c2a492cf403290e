//! Issue 30 on both upstream APIs: a Responses upstream's reasoning summary and raw content
//! kept apart; usage summed over rounds on all three terminal statuses, streamed or not
//! (a failed response's too); failures keep the upstream's message; arguments given only in
//! `function_call_arguments.done`; `detail: "original"` for chat servers; token counters.

use std::collections::BTreeMap;

use crate::common::{error_of, Harness};
use responses_gateway::config::UpstreamApiKind;
use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};

async fn on(api: UpstreamApiKind) -> Harness {
    Harness::start_with(move |c| {
        c.upstream.api = api;
        c.metrics.enabled = true;
    })
    .await
}

fn usage_of(r: &Value) -> (u64, u64, u64, u64) {
    let u = &r["usage"];
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("no usage figure in {r}"));
    (n(&u["input_tokens"]), n(&u["output_tokens"]), n(&u["input_tokens_details"]["cached_tokens"]), n(&u["output_tokens_details"]["reasoning_tokens"]))
}

/// A gateway call's round (with usage), then `last` (with usage): the turn's usage is the sum.
fn two_rounds(h: &Harness, last: Script) {
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"serde"}"#).usage_detailed(10, 4, 2, 3));
    h.upstream.push(last);
}

const TOOLS: &str = r#"[{"type":"custom","name":"package_version"}]"#;

#[tokio::test]
async fn usage_is_the_sum_of_the_rounds_on_every_terminal_status() {
    for api in [UpstreamApiKind::Chat, UpstreamApiKind::Responses] {
        let h = on(api).await;
        let tools: Value = serde_json::from_str(TOOLS).unwrap();
        let body = |stream: bool| json!({"model": "m", "input": "versions?", "tools": tools, "stream": stream});
        for stream in [false, true] {
            // completed
            two_rounds(&h, Script::text(&["ok"]).usage_detailed(20, 6, 5, 1));
            let r = if stream { h.stream(body(true)).await.response } else { h.post(body(false)).await.1 };
            assert_eq!(r["status"], "completed", "{api:?}: {r}");
            assert_eq!(usage_of(&r), (30, 10, 7, 4), "{api:?} stream={stream}");
            assert_eq!(r["usage"]["total_tokens"], 40);
            // incomplete (the second round is cut by its length)
            two_rounds(&h, Script::text(&["cut"]).finish("length").usage_detailed(20, 6, 5, 1));
            let r = if stream { h.stream(body(true)).await.response } else { h.post(body(false)).await.1 };
            assert_eq!(r["status"], "incomplete", "{api:?}: {r}");
            assert_eq!(usage_of(&r), (30, 10, 7, 4), "{api:?} stream={stream}");
        }
        // failed: the second round fails upstream (HTTP 500: no usage of its own)
        two_rounds(&h, Script::http_error(500, r#"{"error":{"message":"engine died"}}"#));
        let st = h.stream(body(true)).await;
        assert_eq!(st.terminal_type(), "response.failed");
        assert_eq!(usage_of(&st.response), (10, 4, 2, 3), "{api:?}: the streamed failure carries the usage so far");
        two_rounds(&h, Script::http_error(500, r#"{"error":{"message":"engine died"}}"#));
        let (status, err) = h.post(body(false)).await;
        assert_eq!(status, 502, "{err}");
        // The stored failed responses (the streamed one and this one) have it.
        let rows: Vec<(String,)> = sqlx::query_as("SELECT response FROM responses WHERE status = 'failed'").fetch_all(h.store.pool()).await.unwrap();
        assert_eq!(rows.len(), 2, "{api:?}");
        for (row,) in rows {
            let stored: Value = serde_json::from_str(&row).unwrap();
            assert_eq!(usage_of(&stored), (10, 4, 2, 3), "{api:?}: {stored}");
        }
        // Token counters by model and status.
        let text = h.client.get(format!("{}/metrics", h.base)).send().await.unwrap().text().await.unwrap();
        let samples: BTreeMap<String, f64> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| l.rsplit_once(' ').map(|(k, v)| (k.to_string(), v.parse().unwrap())))
            .collect();
        let get = |k: &str| samples.get(k).copied().unwrap_or_else(|| panic!("{k} missing in\n{text}"));
        assert_eq!(get(r#"gateway_input_tokens_total{model="m",status="completed"}"#), 60.0, "{api:?}");
        assert_eq!(get(r#"gateway_output_tokens_total{model="m",status="completed"}"#), 20.0);
        assert_eq!(get(r#"gateway_cached_tokens_total{model="m",status="completed"}"#), 14.0);
        assert_eq!(get(r#"gateway_reasoning_tokens_total{model="m",status="completed"}"#), 8.0);
        assert_eq!(get(r#"gateway_input_tokens_total{model="m",status="incomplete"}"#), 60.0);
        assert_eq!(get(r#"gateway_input_tokens_total{model="m",status="failed"}"#), 20.0);
        assert!(!text.contains("gateway_input_tokens_total{key") && !text.contains("project="), "no per-key label");
    }
}

/// A Responses upstream's summary and raw reasoning stay apart (with the summary events),
/// `reasoning.summary` is forwarded, and the upstream's reasoning item goes back to it.
#[tokio::test]
async fn a_responses_upstream_keeps_summary_and_content_apart() {
    let h = on(UpstreamApiKind::Responses).await;
    let mut script = Script::text(&["42"]).reasoning(&["raw ", "thoughts"]);
    script.summary = vec!["Thought about it.".into(), "Then answered.".into()];
    h.upstream.push(script.clone());
    let st = h.stream(json!({"model": "m", "input": "q", "reasoning": {"effort": "low", "summary": "detailed"}})).await;
    assert_eq!(st.terminal_type(), "response.completed");
    let rs = &st.response["output"][0];
    assert_eq!(rs["type"], "reasoning");
    assert_eq!(rs["summary"], json!([{"type": "summary_text", "text": "Thought about it."}, {"type": "summary_text", "text": "Then answered."}]));
    assert_eq!(rs["content"], json!([{"type": "reasoning_text", "text": "raw thoughts"}]));
    let summary_events: Vec<(String, u64)> = st
        .events
        .iter()
        .filter(|e| e["type"].as_str().unwrap().starts_with("response.reasoning_summary"))
        .map(|e| (e["type"].as_str().unwrap().to_string(), e["summary_index"].as_u64().unwrap()))
        .collect();
    let part = |i| {
        [
            ("response.reasoning_summary_part.added".to_string(), i),
            ("response.reasoning_summary_text.delta".to_string(), i),
            ("response.reasoning_summary_text.done".to_string(), i),
            ("response.reasoning_summary_part.done".to_string(), i),
        ]
    };
    assert_eq!(summary_events, [part(0), part(1)].concat());
    let up = &h.upstream.requests()[0].body;
    assert_eq!(up["reasoning"], json!({"effort": "low", "summary": "detailed"}));
    // Not streamed: the same item.
    h.upstream.push(script);
    let (_, body) = h.post(json!({"model": "m", "input": "q"})).await;
    assert_eq!(body["output"][0]["summary"][1]["text"], "Then answered.");
    assert_eq!(body["output"][0]["content"][0]["text"], "raw thoughts");
}

/// The upstream's failure message survives where it put it; its failed response's usage
/// counts; arguments given only in `function_call_arguments.done` are the call's.
#[tokio::test]
async fn responses_upstream_failures_and_late_arguments_are_exact() {
    let h = on(UpstreamApiKind::Responses).await;
    for beside in [false, true] {
        let mut s = Script::text(&["par"]).usage_detailed(9, 2, 1, 1);
        s.failed = Some("the engine ran out of memory".into());
        s.failed_beside = beside;
        h.upstream.push(s.clone());
        let st = h.stream(json!({"model": "m", "input": "q"})).await;
        assert_eq!(st.terminal_type(), "response.failed");
        let msg = st.response["error"]["message"].as_str().unwrap();
        assert!(msg.contains("the engine ran out of memory"), "beside={beside}: {msg}");
        assert_eq!(usage_of(&st.response), (9, 2, 1, 1), "the failed response's usage");
        h.upstream.push(s);
        let (status, body) = h.post(json!({"model": "m", "input": "q"})).await;
        assert_eq!(status, 502);
        assert!(error_of(&body)["message"].as_str().unwrap().contains("the engine ran out of memory"), "{body}");
    }
    let mut call = ToolCallScript::new("package_version", r#"{"input":"serde"}"#);
    call.arguments_in_done_only = true;
    h.upstream.push(Script::default().with_tool(call));
    h.upstream.push(Script::text(&["done"]));
    let (status, body) = h.post(json!({"model": "m", "input": "q", "tools": serde_json::from_str::<Value>(TOOLS).unwrap()})).await;
    assert_eq!(status, 200, "{body}");
    let out = body["output"].as_array().unwrap().iter().find(|o| o["type"] == "custom_tool_call_output").unwrap();
    assert!(out["output"].as_str().unwrap().contains("serde"), "the tool ran with the arguments: {out}");
    let client = json!([{"type": "function", "name": "f", "parameters": {"type": "object"}}]);
    let mut call = ToolCallScript::new("f", r#"{"a":1}"#);
    call.arguments_in_done_only = true;
    h.upstream.push(Script::default().with_tool(call));
    let st = h.stream(json!({"model": "m", "input": "q", "tools": client})).await;
    let fc = st.response["output"].as_array().unwrap().iter().find(|o| o["type"] == "function_call").unwrap().clone();
    assert_eq!(fc["arguments"], r#"{"a":1}"#);
}

/// `detail: "original"` reaches a chat server as `high`, in a user message and in a tool
/// output's image; a Responses upstream gets it as sent.
#[tokio::test]
async fn original_detail_maps_to_high_for_chat_servers() {
    let img = "data:image/png;base64,iVBORw0KGgo=";
    let input = json!([
        {"role": "user", "content": [{"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": img, "detail": "original"}]},
        {"type": "function_call", "call_id": "c1", "name": "view_image", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_image", "image_url": img, "detail": "original"}]}
    ]);
    let tools = json!([{"type": "function", "name": "view_image", "parameters": {"type": "object"}}]);
    let h = on(UpstreamApiKind::Chat).await;
    h.upstream.push(Script::text(&["ok"]));
    let (status, body) = h.post(json!({"model": "m", "input": input, "tools": tools})).await;
    assert_eq!(status, 200, "{body}");
    let sent = h.upstream.requests()[0].body.to_string();
    assert!(!sent.contains("original"), "{sent}");
    assert_eq!(sent.matches(r#""detail":"high""#).count(), 2, "{sent}");
    let h = on(UpstreamApiKind::Responses).await;
    h.upstream.push(Script::text(&["ok"]));
    let (status, _) = h.post(json!({"model": "m", "input": input, "tools": tools})).await;
    assert_eq!(status, 200);
    assert!(h.upstream.requests()[0].body.to_string().contains(r#""detail":"original""#));
}
