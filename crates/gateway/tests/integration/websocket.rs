//! WebSocket mode on `/v1/responses` (issue 27) with a plain WebSocket client
//! (tokio-tungstenite): the bounds and what a connection's end does. The SDK-level cases are
//! in `tests/python/test_websocket_sdk.py`.
//!
//! Each response's events are checked with the SSE stream checker (rendered as the frames an
//! SSE stream would carry); pings keep coming while a gateway tool runs; closing the
//! connection stops its turns as an SSE disconnect does (a stored one is stored
//! `incomplete`); the connection limits close with a reason or answer an `error` event.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use scripted_upstream::{Script, ToolCallScript};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{check_stream, Checked, Harness, TestTool};

pub(crate) type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub(crate) async fn connect(h: &Harness) -> Ws {
    let url = format!("{}/v1/responses", h.base.replace("http://", "ws://"));
    let (ws, resp) = tokio_tungstenite::connect_async(url).await.expect("upgrade");
    assert_eq!(resp.status(), 101);
    ws
}

pub(crate) async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.expect("send");
}

/// What one response (or one refused create) sent, and the pings seen meanwhile.
pub(crate) struct Received {
    pub(crate) events: Vec<Value>,
    pings: usize,
}

impl Received {
    /// The stream checker on the events, rendered as SSE frames.
    pub(crate) fn checked(&self) -> Checked {
        let sse: String = self.events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or(""))).collect();
        check_stream(&sse)
    }
}

/// Reads until a terminal or `error` event.
pub(crate) async fn receive(ws: &mut Ws) -> Received {
    let mut got = Received { events: Vec::new(), pings: 0 };
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next()).await.expect("a message in time").expect("open").expect("read");
        match msg {
            Message::Text(t) => {
                let v: Value = serde_json::from_str(&t).expect("json");
                let ty = v["type"].as_str().unwrap_or("").to_string();
                let refused = ty == "error" && v.get("sequence_number").is_none();
                got.events.push(v);
                if refused || ty == "response.completed" || ty == "response.incomplete" || ty == "response.failed" {
                    return got;
                }
            }
            Message::Ping(_) => got.pings += 1,
            Message::Close(f) => panic!("closed: {f:?}"),
            _ => {}
        }
    }
}

/// Reads until the server closes: its close frame.
async fn closed(ws: &mut Ws) -> (Vec<Value>, Option<(u16, String)>) {
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next()).await.expect("closed in time") {
            Some(Ok(Message::Text(t))) => events.push(serde_json::from_str(&t).expect("json")),
            Some(Ok(Message::Close(f))) => return (events, f.map(|f| (u16::from(f.code), f.reason.to_string()))),
            Some(Ok(_)) => {}
            None | Some(Err(_)) => return (events, None),
        }
    }
}

#[tokio::test]
async fn events_are_the_sse_events_and_pings_go_on_while_a_tool_runs() {
    let slow = TestTool::new("slow", 600, false);
    let h = Harness::start_full(|c| c.server.keepalive_interval_ms = 100, move |r| r.register(slow)).await;
    h.upstream.push(Script::default().with_tool(ToolCallScript::custom("slow", "z")));
    h.upstream.push(Script::text(&["done", "!"]));
    let mut ws = connect(&h).await;
    send(&mut ws, json!({"type":"response.create","model":"m","input":"x","tools":[{"type":"custom","name":"slow"}]})).await;
    let got = receive(&mut ws).await;
    let checked = got.checked();
    assert_eq!(checked.response["status"], "completed");
    assert!(got.pings >= 3, "pings while the 600 ms tool ran: {}", got.pings);
    // The same request over SSE carries the same event types in the same order.
    h.upstream.push(Script::default().with_tool(ToolCallScript::custom("slow", "z")));
    h.upstream.push(Script::text(&["done", "!"]));
    let sse = h.stream(json!({"model":"m","input":"x","tools":[{"type":"custom","name":"slow"}]})).await;
    let types = |events: &[Value]| events.iter().map(|e| e["type"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>();
    assert_eq!(types(&checked.events), types(&sse.events));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stops_the_connections_turns_and_stores_a_stored_one_incomplete() {
    let slow = TestTool::new("slow", 400, false);
    let probe = slow.clone();
    let h = Harness::start_full(|_| {}, move |r| r.register(slow)).await;
    let create = |store: bool| json!({"type":"response.create","model":"m","input":"x","store":store,"tools":[{"type":"custom","name":"slow"}]});
    // Reads until the gateway's call item shows; the response's id.
    let until_call = |mut ws: Ws| async move {
        let mut id = String::new();
        loop {
            if let Some(Ok(Message::Text(t))) = ws.next().await {
                let v: Value = serde_json::from_str(&t).expect("json");
                if v["type"] == "response.created" {
                    id = v["response"]["id"].as_str().unwrap_or_default().to_string();
                }
                if t.contains("custom_tool_call") {
                    return (ws, id);
                }
            }
        }
    };
    for store in [false, true] {
        h.upstream.push(Script::default().with_tool(ToolCallScript::custom("slow", "z")));
        h.upstream.push(Script::text(&["never"]));
        let (before, done) = (h.upstream.requests().len(), probe.completed.load(SeqCst));
        let mut ws = connect(&h).await;
        send(&mut ws, create(store)).await;
        let (ws, id) = until_call(ws).await;
        drop(ws);
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!(probe.completed.load(SeqCst), done, "store:{store}: the running tool was stopped");
        assert_eq!(h.upstream.requests().len(), before + 1, "store:{store}: no further round started");
        let (status, stored) = h.call(reqwest::Method::GET, &format!("/v1/responses/{id}"), None).await;
        if store {
            assert_eq!((status, stored["status"].as_str()), (200, Some("incomplete")), "stored as it was: {stored}");
            assert_eq!(stored["incomplete_details"]["reason"], "client_disconnected", "{stored}");
            // The usage of the round that finished (the call's) is kept.
            assert_eq!(stored["usage"]["input_tokens"], 10, "{stored}");
        } else {
            assert_eq!(status, 404);
        }
        h.upstream.reset();
    }
}

#[tokio::test]
async fn bounds_close_with_a_reason_or_answer_an_error_event() {
    let h = Harness::start_with(|c| {
        c.server.max_body_bytes = 4096;
        c.websocket.idle_timeout_ms = 300;
        c.websocket.max_streams = 1;
        c.websocket.max_connections_per_key = 2;
        c.metrics.enabled = true;
    })
    .await;
    // A message over the body limit: closed with 1009 and why.
    let mut ws = connect(&h).await;
    send(&mut ws, json!({"type":"response.create","model":"m","input":"x".repeat(5000)})).await;
    let (_, close) = closed(&mut ws).await;
    let (code, reason) = close.expect("a close frame");
    assert_eq!(code, u16::from(CloseCode::Size));
    assert!(reason.contains("max_body_bytes"), "{reason}");

    // A second named lane beyond websocket.max_streams is an error event; the first works.
    let mut ws = connect(&h).await;
    h.upstream.push(Script::text(&["a"]));
    send(&mut ws, json!({"type":"response.create","model":"m","input":"x","stream_id":"one"})).await;
    let got = receive(&mut ws).await;
    assert!(got.events.iter().all(|e| e["stream_id"] == "one"));
    assert_eq!(got.checked().response["status"], "completed");
    send(&mut ws, json!({"type":"response.create","model":"m","input":"x","stream_id":"two"})).await;
    let got = receive(&mut ws).await;
    assert_eq!(got.events[0]["error"]["code"], "websocket_stream_limit_reached", "{:?}", got.events);
    assert_eq!(got.events[0]["stream_id"], "two");

    // Connections per key: a third one is refused at the upgrade.
    let other = connect(&h).await;
    let url = format!("{}/v1/responses", h.base.replace("http://", "ws://"));
    match tokio_tungstenite::connect_async(url.into_client_request().expect("request")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 429),
        other => panic!("not refused: {:?}", other.map(|(_, r)| r.status())),
    }
    drop(other);

    // Idle: no message for websocket.idle_timeout_ms closes with 1000 and why.
    let (_, close) = closed(&mut ws).await;
    let (code, reason) = close.expect("a close frame");
    assert_eq!(code, 1000);
    assert!(reason.starts_with("idle"), "{reason}");

    // Metrics: connections and messages.
    let (_, text) = h.call(reqwest::Method::GET, "/metrics", None).await;
    let text = text.as_str().unwrap_or_default().to_string();
    assert!(text.contains("gateway_websocket_messages_total{type=\"response.create\"} 2"), "{text}");
    assert!(text.contains("gateway_websocket_connections"), "{text}");
}

#[tokio::test]
async fn an_old_connection_takes_no_new_response() {
    let h = Harness::start_with(|c| c.websocket.max_age_ms = 300).await;
    let mut ws = connect(&h).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    send(&mut ws, json!({"type":"response.create","model":"m","input":"x"})).await;
    let (events, close) = closed(&mut ws).await;
    let (code, reason) = close.expect("a close frame");
    assert_eq!(code, 1000);
    assert!(reason.contains("websocket_connection_limit_reached"), "{reason}");
    assert!(events.iter().all(|e| e["type"] == "error"), "{events:?}");
}

#[tokio::test]
async fn keys_are_checked_at_the_upgrade_and_a_plain_get_is_still_405() {
    let file = std::env::temp_dir().join(format!("rg-it-ws-keys-{}-{:x}", std::process::id(), rand::random::<u64>()));
    std::fs::write(&file, "team-ws ws-test-key\n").expect("key file");
    let h = Harness::start_with(move |c| c.auth.keys_file = Some(file)).await;
    let url = format!("{}/v1/responses", h.base.replace("http://", "ws://"));
    match tokio_tungstenite::connect_async(url.clone()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 401),
        other => panic!("not refused: {:?}", other.map(|(_, r)| r.status())),
    }
    let mut req = url.into_client_request().expect("request");
    req.headers_mut().insert("authorization", "Bearer ws-test-key".parse().expect("header"));
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.expect("a key opens it");
    h.upstream.push(Script::text(&["ok"]));
    send(&mut ws, json!({"type":"response.create","model":"m","input":"x"})).await;
    assert_eq!(receive(&mut ws).await.checked().response["status"], "completed");
    let resp = h.client.get(format!("{}/v1/responses", h.base)).bearer_auth("ws-test-key").send().await.expect("get");
    assert_eq!(resp.status(), 405);
}

/// A large message takes room in `[limits] body_memory_bytes` as a request body does: while
/// an HTTP body holds the whole budget, it is answered an `error` event (503 `server_busy`)
/// and the connection stays usable; once its turn has started, its room goes back.
#[tokio::test]
async fn large_messages_take_from_the_body_budget() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let h = Harness::start_with(|c| {
        c.limits.body_memory_bytes = 1 << 20;
        c.limits.body_memory_wait_ms = 200;
    })
    .await;
    // 400 KiB at 6 times its size is more than the whole budget: it takes all of it once
    // its head is read, and holds it until its answer starts.
    let big = format!("{{\"model\":\"m\",\"input\":\"{}\"}}", "x".repeat(400 << 10));
    let mut http = tokio::net::TcpStream::connect(h.base.trim_start_matches("http://")).await.unwrap();
    let head = format!("POST /v1/responses HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", big.len());
    http.write_all(head.as_bytes()).await.unwrap();
    http.write_all(&big.as_bytes()[..1000]).await.unwrap();
    let mut ws = connect(&h).await;
    let large = json!({"type":"response.create","stream_id":"big","model":"m","input":"y".repeat(100 << 10),"store":true});
    let mut refused = None;
    for _ in 0..50 {
        send(&mut ws, large.clone()).await;
        let got = receive(&mut ws).await;
        let last = got.events.last().cloned().unwrap_or_default();
        if last["type"] == "error" {
            refused = Some(last);
            break;
        }
        // Not held yet: the HTTP head had not been read; that response ran to its end.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = refused.expect("a large message is refused while an HTTP body holds the budget");
    assert_eq!(refused["status"], 503, "{refused}");
    assert_eq!(refused["error"]["code"], "server_busy", "{refused}");
    assert_eq!(refused["error"]["type"], "server_error", "{refused}");
    assert_eq!(refused["stream_id"], "big", "{refused}");
    // The connection is still usable: a small create runs.
    h.upstream.push(Script::text(&["small"]));
    send(&mut ws, json!({"type":"response.create","model":"m","input":"x","store":false})).await;
    assert_eq!(receive(&mut ws).await.checked().terminal_type(), "response.completed");
    // The HTTP body arrives and is answered: the room is back for the large message.
    h.upstream.push(Script::text(&["big"]));
    http.write_all(&big.as_bytes()[1000..]).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(20), http.read(&mut answer)).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer[..n]));
    h.upstream.push(Script::text(&["large"]));
    send(&mut ws, large.clone()).await;
    assert_eq!(receive(&mut ws).await.checked().terminal_type(), "response.completed");
    // ... and the message gave it back: a large HTTP body is taken at once.
    h.upstream.push(Script::text(&["again"]));
    let resp = h.client.post(format!("{}/v1/responses", h.base)).header("content-type", "application/json").body(big.clone()).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}
