//! The streamed wire format, over real HTTP.
// A test crate: a failed assumption is the test failing (clippy.toml allows this only
// inside #[test] functions and #[cfg(test)] modules, not in a test crate's helpers).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures_util::StreamExt;
use scripted_upstream::{Fault, Script, ScriptedUpstream, ToolCallScript};
use serde_json::{json, Value};

async fn stream_data(up: &ScriptedUpstream, body: &Value) -> Vec<String> {
    let resp = client()
        .post(format!("{}/chat/completions", up.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    sse_data(&resp.text().await.unwrap())
}

#[tokio::test]
async fn text_stream_is_exact_and_one_frame_per_chunk() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::text(&["Hel", "lo \"w\"\n"]));
    let answer = raw_post(up.addr(), "/v1/chat/completions", &chat(true, false)).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("text/event-stream"));
    assert!(answer.clean_end);
    // Every HTTP body frame is exactly one SSE event.
    assert_eq!(answer.frames.len(), 5, "{:?}", answer.frames);
    for frame in &answer.frames {
        assert!(frame.starts_with("data: ") && frame.ends_with("\n\n"), "{frame:?}");
        assert_eq!(frame.matches("\n\n").count(), 1, "{frame:?}");
    }
    // Field order as on llama.cpp's wire.
    assert!(answer.frames[0].starts_with(r#"data: {"id":"chatcmpl-"#), "{}", answer.frames[0]);
    assert!(answer.frames[0].contains(r#","object":"chat.completion.chunk","created":"#));
    assert_eq!(answer.frames[4], "data: [DONE]\n\n");

    let data: Vec<String> = answer.frames.concat().split("\n\n").filter(|s| !s.is_empty())
        .map(|s| s.strip_prefix("data: ").unwrap().to_owned()).collect();
    let chunks = json_chunks(&data);
    let id = chunks[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-") && is_llama_id(&id["chatcmpl-".len()..]), "{id}");
    for c in &chunks {
        assert_eq!(c["id"], id);
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "test-model");
        assert_eq!(c["system_fingerprint"], "scripted");
        assert!(c["created"].as_u64().unwrap() > 1_600_000_000);
        assert!(c.get("usage").is_none());
    }
    let choices: Vec<&Value> = chunks.iter().map(|c| &c["choices"]).collect();
    assert_eq!(
        choices,
        [
            &json!([{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}]),
            &json!([{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}]),
            &json!([{"index":0,"delta":{"content":"lo \"w\"\n"},"logprobs":null,"finish_reason":null}]),
            &json!([{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]),
        ]
    );
}

#[tokio::test]
async fn tool_call_arguments_are_fragmented() {
    let up = ScriptedUpstream::start().await.unwrap();
    let args = r#"{"city":"Paris","unit":"celsius"}"#;
    up.push(Script::tool_call("get_weather", args));
    let chunks = json_chunks(&stream_data(&up, &chat(true, false)).await);
    // role, ceil(33 / 8) = 5 fragments, finish
    assert_eq!(chunks.len(), 7);
    let first = &choice(&chunks[1])["delta"];
    let id = first["tool_calls"][0]["id"].as_str().unwrap();
    assert!(is_llama_id(id) && !id.starts_with("call_"), "{id}");
    assert_eq!(
        first,
        &json!({"content":"","tool_calls":[{"index":0,"id":id,"type":"function",
                 "function":{"name":"get_weather","arguments":"{\"city\":"}}]})
    );
    let mut joined = String::new();
    for c in &chunks[1..6] {
        let piece = c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str().unwrap();
        assert!(piece.chars().count() <= 8);
        joined.push_str(piece);
    }
    for c in &chunks[2..6] {
        let piece = &choice(c)["delta"]["tool_calls"][0]["function"]["arguments"];
        assert_eq!(choice(c)["delta"], json!({"tool_calls":[{"index":0,"function":{"arguments":piece}}]}));
    }
    assert_eq!(joined, args);
    assert_eq!(choice(&chunks[6])["finish_reason"], "tool_calls");
    assert_eq!(choice(&chunks[6])["delta"], json!({}));
}

#[tokio::test]
async fn two_calls_pretty_unicode_and_truncation() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(
        Script::text(&["Let me check."])
            .with_tool(ToolCallScript::new("a", r#"{"q":"héllo ✓ wörld"}"#).fragment_chars(3))
            .with_tool(ToolCallScript::new("b", r#"{"x":[1,2]}"#).pretty(true).id("fixed-id").fragment_chars(0)),
    );
    up.push(Script::tool_call("search", r#"{"query":"the lo"#).finish("length"));
    let chunks = json_chunks(&stream_data(&up, &chat(true, false)).await);
    assert_eq!(choice(&chunks[1])["delta"], json!({"content":"Let me check."}));
    let mut args = [String::new(), String::new()];
    let mut ids = Vec::new();
    for c in &chunks[2..chunks.len() - 1] {
        let call = &choice(c)["delta"]["tool_calls"][0];
        let i = call["index"].as_u64().unwrap() as usize;
        if let Some(id) = call.get("id") {
            ids.push((i, id.as_str().unwrap().to_owned(), call["function"]["name"].clone()));
        }
        args[i].push_str(call["function"]["arguments"].as_str().unwrap());
    }
    assert_eq!(ids.len(), 2);
    assert_eq!((ids[0].0, &ids[0].2), (0, &json!("a")));
    assert!(is_llama_id(&ids[0].1));
    assert_eq!((ids[1].0, ids[1].1.as_str(), &ids[1].2), (1, "fixed-id", &json!("b")));
    assert_eq!(args[0], r#"{"q":"héllo ✓ wörld"}"#);
    assert_eq!(args[1], "{\n  \"x\": [\n    1,\n    2\n  ]\n}");

    let chunks = json_chunks(&stream_data(&up, &chat(true, false)).await);
    let last = chunks.last().unwrap();
    assert_eq!(choice(last)["finish_reason"], "length");
}

#[tokio::test]
async fn include_usage_adds_a_usage_chunk() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::text(&["a", "b"]).with_tool_call("f", "0123456789"));
    up.push(Script::text(&["x"]).usage(7, 3).reasoning(&["think"]));
    let data = stream_data(&up, &chat(true, true)).await;
    let chunks = json_chunks(&data);
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    // 2 text chunks + 2 argument fragments
    assert_eq!(
        usage_chunk["usage"],
        json!({"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,
               "prompt_tokens_details":{"cached_tokens":0}})
    );
    assert!(usage_chunk["timings"].is_object());
    assert_eq!(choice(&chunks[chunks.len() - 2])["finish_reason"], "tool_calls");

    let chunks = json_chunks(&stream_data(&up, &chat(true, true)).await);
    assert_eq!(choice(&chunks[1])["delta"], json!({"reasoning_content":"think"}));
    assert_eq!(choice(&chunks[2])["delta"], json!({"content":"x"}));
    assert_eq!(chunks.last().unwrap()["usage"]["total_tokens"], 10);
    assert_eq!(chunks.last().unwrap()["usage"]["prompt_tokens"], 7);
}

#[tokio::test]
async fn disconnect_fault_aborts_without_done() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::text(&["a", "b", "c"]).fault(Fault::Disconnect { after_chunks: 2 }));
    let answer = raw_post(up.addr(), "/v1/chat/completions", &chat(true, false)).await;
    assert_eq!(answer.frames.len(), 2, "{:?}", answer.frames);
    assert!(!answer.clean_end, "body must not end cleanly");
    assert!(answer.frames[1].contains(r#"{"content":"a"}"#));
    assert!(!answer.frames.concat().contains("[DONE]"));

    // A client sees a body error after the two chunks.
    up.push(Script::text(&["a", "b", "c"]).fault(Fault::Disconnect { after_chunks: 2 }));
    let resp = client()
        .post(format!("{}/chat/completions", up.base_url()))
        .json(&chat(true, false))
        .send()
        .await
        .unwrap();
    let mut body = resp.bytes_stream();
    let mut got = Vec::new();
    let mut error = false;
    while let Some(item) = body.next().await {
        match item {
            Ok(b) => got.extend_from_slice(&b),
            Err(_) => error = true,
        }
    }
    assert!(error);
    assert_eq!(sse_data(std::str::from_utf8(&got).unwrap()).len(), 2);
}

#[tokio::test]
async fn malformed_fault_sends_cut_json_then_ends() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::text(&["a", "b"]).fault(Fault::Malformed { after_chunks: 2 }));
    let answer = raw_post(up.addr(), "/v1/chat/completions", &chat(true, false)).await;
    assert!(answer.clean_end);
    assert_eq!(answer.frames.len(), 3);
    assert_eq!(answer.frames[2], "data: {\"choices\":[{\"delta\":\n\n");
    let payload = answer.frames[2].strip_prefix("data: ").unwrap();
    assert!(serde_json::from_str::<Value>(payload).is_err());
}

#[tokio::test]
async fn stall_and_token_delay_pace_the_stream() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::text(&["a", "b", "c"]).delay_ms(30).fault(Fault::Stall { after_chunks: 2, stall_ms: 500 }));
    let resp = client()
        .post(format!("{}/chat/completions", up.base_url()))
        .json(&chat(true, false))
        .send()
        .await
        .unwrap();
    let start = Instant::now();
    let mut body = resp.bytes_stream();
    let mut text = String::new();
    let mut arrivals = Vec::new(); // (events seen so far, time)
    while let Some(b) = body.next().await {
        text.push_str(std::str::from_utf8(&b.unwrap()).unwrap());
        arrivals.push((text.matches("\n\n").count(), start.elapsed()));
    }
    let data = sse_data(&text);
    assert_eq!(data.len(), 6); // role, a, b, c, finish, [DONE]
    let at = |n: usize| arrivals.iter().find(|(k, _)| *k >= n).unwrap().1;
    // "b" (event 3) waits for the 500 ms stall plus one token delay.
    assert!(at(3) - at(2) >= Duration::from_millis(520), "{arrivals:?}");
    assert!(at(4) - at(3) >= Duration::from_millis(25), "{arrivals:?}");
    assert!(at(4) - at(3) < Duration::from_millis(450), "{arrivals:?}");
}
