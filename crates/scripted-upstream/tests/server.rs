//! Non-streaming answers, errors, the queue, recording, control endpoints and the binary.
// A test crate: a failed assumption is the test failing (clippy.toml allows this only
// inside #[test] functions and #[cfg(test)] modules, not in a test crate's helpers).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::*;
use scripted_upstream::{Fault, Script, ScriptedUpstream, ToolCallScript};
use serde_json::{json, Value};

async fn post(url: String, body: &Value) -> reqwest::Response {
    client().post(url).json(body).send().await.unwrap()
}

#[tokio::test]
async fn non_streaming_shape() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::text(&["Hel", "lo"]).reasoning(&["hm", "m"]));
    up.push(Script::tool_call("get_weather", r#"{"city":"Paris"}"#).with_tool(
        ToolCallScript::new("other", r#"{"a":1}"#).pretty(true).id("id2"),
    ));
    let url = format!("{}/chat/completions", up.base_url());

    let resp = post(url.clone(), &chat(false, false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "test-model");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(
        v["choices"],
        json!([{"index":0,"message":{"role":"assistant","content":"Hello","reasoning_content":"hmm"},
                "logprobs":null,"finish_reason":"stop"}])
    );
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens":10,"completion_tokens":4,"total_tokens":14,
               "prompt_tokens_details":{"cached_tokens":0}})
    );
    assert_eq!(v["timings"]["predicted_n"], 4);

    let v: Value = post(url, &chat(false, false)).await.json().await.unwrap();
    let message = &v["choices"][0]["message"];
    assert_eq!(message["content"], "");
    assert!(message.get("reasoning_content").is_none());
    let calls = message["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    let id = calls[0]["id"].as_str().unwrap();
    assert!(is_llama_id(id), "{id}");
    assert_eq!(
        calls[0],
        json!({"id":id,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}})
    );
    assert_eq!(calls[1]["id"], "id2");
    assert_eq!(calls[1]["function"]["arguments"], "{\n  \"a\": 1\n}");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn http_errors() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::http_error(429, r#"{"error":{"message":"slow down"}}"#));
    up.push(Script::status(503));
    up.push(Script::http_error(502, "bad gateway"));
    let url = format!("{}/chat/completions", up.base_url());

    let resp = post(url.clone(), &chat(true, false)).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert_eq!(resp.text().await.unwrap(), r#"{"error":{"message":"slow down"}}"#);

    let resp = post(url.clone(), &chat(false, false)).await;
    assert_eq!(resp.status(), 503);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "server_error");
    assert!(v["error"]["message"].as_str().unwrap().contains("503"));
    assert_eq!(v["error"]["code"], Value::Null);

    let resp = post(url.clone(), &chat(false, false)).await;
    assert_eq!(resp.status(), 502);
    assert_eq!(resp.text().await.unwrap(), "bad gateway");
    // Error answers consumed their scripts and were recorded.
    assert_eq!(up.requests().len(), 3);
    let v: Value = post(url, &chat(false, false)).await.json().await.unwrap();
    assert!(v["choices"][0]["message"]["content"].as_str().unwrap().starts_with("The quick brown fox"));
}

#[tokio::test]
async fn non_streaming_faults() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::text(&["abc"]).fault(Fault::Malformed { after_chunks: 0 }));
    up.push(Script::text(&["abc"]).fault(Fault::Disconnect { after_chunks: 0 }));
    let url = format!("{}/chat/completions", up.base_url());
    let text = post(url.clone(), &chat(false, false)).await.text().await.unwrap();
    assert!(text.starts_with("{\"id\":\"chatcmpl-"));
    assert!(serde_json::from_str::<Value>(&text).is_err());
    // The connection closes without a complete answer.
    match client().post(url).json(&chat(false, false)).send().await {
        Err(_) => {}
        Ok(resp) => assert!(resp.bytes().await.is_err()),
    }
}

#[tokio::test]
async fn fifo_order_default_and_recording() {
    let up = ScriptedUpstream::start_on("127.0.0.1:0".parse().unwrap(), Script::text(&["default"]))
        .await
        .unwrap();
    assert!(up.base_url().starts_with("http://127.0.0.1:") && up.base_url().ends_with("/v1"));
    assert_eq!(up.base_url(), format!("http://{}/v1", up.addr()));
    up.push(Script::text(&["one"]));
    up.push(Script::text(&["two"]));
    let url = format!("{}/chat/completions", up.base_url());
    let mut answers = Vec::new();
    let mut sent = Vec::new();
    for (i, auth) in [Some("Bearer k1"), None, Some("Bearer k3")].into_iter().enumerate() {
        let body = json!({"model": format!("m{i}"), "messages": [{"role":"user","content": i}]});
        let mut req = client().post(&url).json(&body);
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        assert_eq!(v["model"], format!("m{i}"));
        answers.push(v["choices"][0]["message"]["content"].as_str().unwrap().to_owned());
        sent.push((body, auth.map(str::to_owned)));
    }
    assert_eq!(answers, ["one", "two", "default"]);
    let recorded: Vec<(Value, Option<String>)> =
        up.requests().into_iter().map(|r| (r.body, r.authorization)).collect();
    assert_eq!(recorded, sent);

    up.push(Script::text(&["queued"]));
    up.reset();
    assert!(up.requests().is_empty());
    let v: Value = post(url, &chat(false, false)).await.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "default");
}

#[tokio::test]
async fn bad_chat_body_is_400_and_consumes_nothing() {
    let up = ScriptedUpstream::start().await.unwrap();
    up.push(Script::text(&["kept"]));
    let url = format!("{}/chat/completions", up.base_url());
    let resp = client().post(&url).body("{not json").send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(up.requests().is_empty());
    let v: Value = post(url, &chat(false, false)).await.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "kept");
}

#[tokio::test]
async fn control_endpoints_models_and_health() {
    let up = ScriptedUpstream::start().await.unwrap();
    let origin = up.origin();
    let c = client();
    let ok: Value = c.get(format!("{origin}/health")).send().await.unwrap().json().await.unwrap();
    assert_eq!(ok, json!({"status":"ok"}));
    let models: Value = c.get(format!("{}/models", up.base_url())).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        models,
        json!({"object":"list","data":[{"id":"scripted-model","object":"model","created":0,"owned_by":"scripted"}]})
    );

    let scripts = format!("{origin}/_control/scripts");
    let resp = c.post(&scripts).json(&json!({"text":["x"],"bogus":1})).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("unknown field `bogus`"), "{v}");
    let resp = c.post(&scripts).body("nope").send().await.unwrap();
    assert_eq!(resp.status(), 400);

    let resp = c.post(&scripts).json(&json!({"text":["single"]})).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let resp = c
        .post(&scripts)
        .json(&json!([{"tool_calls":[{"name":"f","arguments":"{}","id":"c1"}]}, {"http_status": 500}]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.json::<Value>().await.unwrap(), json!({"added":2,"queued":3}));

    let url = format!("{}/chat/completions", up.base_url());
    let v: Value = post(url.clone(), &chat(false, false)).await.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "single");
    let v: Value = post(url.clone(), &chat(false, false)).await.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["tool_calls"][0]["id"], "c1");
    assert_eq!(post(url.clone(), &chat(false, false)).await.status(), 500);

    let recorded: Value =
        c.get(format!("{origin}/_control/requests")).send().await.unwrap().json().await.unwrap();
    assert_eq!(recorded.as_array().unwrap().len(), 3);
    assert_eq!(recorded[0], json!({"body": chat(false, false), "authorization": null}));

    c.post(&scripts).json(&json!({"text":["dropped"]})).send().await.unwrap();
    let resp = c.post(format!("{origin}/_control/reset")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let recorded: Value =
        c.get(format!("{origin}/_control/requests")).send().await.unwrap().json().await.unwrap();
    assert_eq!(recorded, json!([]));
    let v: Value = post(url, &chat(false, false)).await.json().await.unwrap();
    assert_ne!(v["choices"][0]["message"]["content"], "dropped");
}

/// Kills the child when the test ends, even on panic.
struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn binary_prints_listening_and_serves() {
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_scripted-upstream"))
            .args(["--default-tokens", "5", "--token-delay-ms", "1"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let origin = line.trim_end().strip_prefix("LISTENING ").unwrap_or_else(|| panic!("{line:?}"));
    assert!(origin.starts_with("http://127.0.0.1:"), "{origin}");
    assert!(!origin.ends_with(":0"));

    let resp = post(format!("{origin}/v1/chat/completions"), &chat(true, true)).await;
    let chunks = json_chunks(&sse_data(&resp.text().await.unwrap()));
    // role, 5 text chunks, finish, usage
    assert_eq!(chunks.len(), 8);
    let text: String = chunks[1..6]
        .iter()
        .map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The quick brown fox jumps");
    assert_eq!(chunks[7]["usage"]["completion_tokens"], 5);
}
