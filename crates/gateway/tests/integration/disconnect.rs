//! Client disconnects: a foreground turn is cancelled (its tool executions and the upstream
//! request with it), `store: true` or not (issue 28). After 200 disconnects the process's
//! open file descriptors and tokio tasks are back to their baseline.


use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use crate::common::{Harness, TestTool};
use futures_util::StreamExt;
use scripted_upstream::{Script, ToolCallScript};
use serde_json::json;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

/// Starts a streamed request and drops it once `marker` has been received.
async fn disconnect_after(client: &reqwest::Client, base: &str, store: bool, marker: &str) {
    let body = json!({"model":"m","input":"x","stream":true,"store":store,"tools":[{"type":"custom","name":"slow"}]});
    let resp = client.post(format!("{base}/v1/responses")).json(&body).send().await.expect("send");
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.contains(marker) {
            break;
        }
    }
    drop(stream);
}

async fn settle(what: &str, baseline: usize, now: impl Fn() -> usize) {
    for _ in 0..200 {
        if now() <= baseline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not return to baseline {baseline}: {}", now());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnects_cancel_or_finish_and_leak_nothing() {
    let slow = TestTool::new("slow", 40, false);
    let probe = slow.clone();
    // One store connection: a pool that grows under load would look like leaked descriptors.
    let h = Harness::start_full(
        |c| {
            c.upstream.pool_idle_timeout_ms = 300;
            c.store.max_connections = 1;
        },
        move |r| r.register(slow),
    )
    .await;
    h.upstream.set_default(Script::default().with_tool(ToolCallScript::new("slow", r#"{"input":"z"}"#)));
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("client");

    // store:false, disconnect mid-tool: the execution is cancelled, no second round.
    let before = h.upstream.requests().len();
    disconnect_after(&client, &h.base, false, "custom_tool_call").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(probe.completed.load(SeqCst), 0, "store:false cancels the running tool");
    assert_eq!(h.upstream.requests().len(), before + 1, "and no further upstream round starts");

    // store:true, disconnect mid-tool: the turn stops as well (issue 28), and is stored
    // `incomplete` (store_responses.rs checks what is stored).
    h.upstream.push(Script::default().with_tool(ToolCallScript::new("slow", r#"{"input":"z"}"#)));
    h.upstream.push(Script::text(&["done"]));
    let before = h.upstream.requests().len();
    let completed = probe.completed.load(SeqCst);
    disconnect_after(&client, &h.base, true, "custom_tool_call").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(probe.completed.load(SeqCst), completed, "store:true cancels the running tool too");
    assert_eq!(h.upstream.requests().len(), before + 1, "and no further upstream round starts");
    h.upstream.reset();

    // 200 disconnects, half of each kind, then everything is back to the baseline.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (fd_base, task_base) = (open_fds(), alive_tasks());
    h.upstream.set_recording(false);
    for i in 0..200 {
        h.upstream.set_default(if i % 4 == 0 {
            Script::sentence(64).delay_ms(5)
        } else {
            Script::default().with_tool(ToolCallScript::new("slow", r#"{"input":"z"}"#))
        });
        let marker = if i % 4 == 0 { "output_text.delta" } else { "custom_tool_call" };
        disconnect_after(&client, &h.base, i % 2 == 0, marker).await;
    }
    h.upstream.set_default(Script::text(&["idle"]));
    settle("tasks", task_base, alive_tasks).await;
    settle("file descriptors", fd_base + 2, open_fds).await;
}

/// Waits until `done` holds (at most 10 s); false if it never did.
async fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..500 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// A client that leaves a streamed `store: true` turn while the model writes: the upstream
/// stream is dropped (a model server stops generating) and the response is stored
/// `incomplete` with the text it had (issue 28).
#[tokio::test]
async fn a_streamed_stored_turn_stops_generating_when_its_client_leaves() {
    let h = Harness::start().await;
    h.upstream.push(Script::sentence(3000).delay_ms(10));
    let body = json!({"model":"m","input":"x","stream":true,"store":true});
    let resp = h.client.post(format!("{}/v1/responses", h.base)).json(&body).send().await.expect("send");
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.matches("output_text.delta").count() >= 3 {
            break;
        }
    }
    drop(stream);
    let id = seen.split("\"id\":\"").nth(1).and_then(|s| s.split('"').next()).expect("id").to_string();
    assert!(eventually(|| h.upstream.cut_streams() == 1).await, "the upstream stream was not dropped");
    let mut stored = serde_json::Value::Null;
    for _ in 0..200 {
        let (s, b) = h.get(&format!("/v1/responses/{id}")).await;
        if s == 200 {
            stored = b;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stored["status"], "incomplete", "{stored}");
    // Why it is incomplete, in the gateway's own reason (docs/behaviour.md).
    assert_eq!(stored["incomplete_details"], json!({"reason": "client_disconnected"}), "{stored}");
    let text = stored["output"][0]["content"][0]["text"].as_str().expect("partial text");
    assert!(!text.is_empty() && text.split_whitespace().count() < 3000, "{text}");
    assert_eq!(stored["output"][0]["status"], "incomplete");
}

/// The same without streaming: a client that leaves a non-streamed stored turn (in a
/// conversation) stops it; the conversation gets its output so far, `incomplete`.
#[tokio::test]
async fn a_non_streamed_stored_turn_stops_when_its_client_leaves() {
    let h = Harness::start().await;
    let (_, conv) = h.post_to("/v1/conversations", json!({})).await;
    let conv = conv["id"].as_str().expect("conversation").to_string();
    h.upstream.push(Script::sentence(3000).delay_ms(10));
    let (client, base, c) = (h.client.clone(), h.base.clone(), conv.clone());
    let request = tokio::spawn(async move {
        let body = json!({"model":"m","input":"x","conversation":c});
        let _ = client.post(format!("{base}/v1/responses")).json(&body).send().await;
    });
    assert!(eventually(|| h.upstream.requests().len() == 1).await, "the turn started");
    tokio::time::sleep(Duration::from_millis(200)).await;
    request.abort();
    assert!(eventually(|| h.upstream.cut_streams() == 1).await, "the upstream stream was not dropped");
    let mut items = serde_json::Value::Null;
    for _ in 0..200 {
        let (_, b) = h.get(&format!("/v1/conversations/{conv}/items?order=asc")).await;
        if b["data"].as_array().is_some_and(|d| d.len() >= 2) {
            items = b;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answer = &items["data"][1];
    assert_eq!(answer["role"], "assistant", "{items}");
    assert_eq!(answer["status"], "incomplete", "{items}");
}
