//! The edge (issue 28): the whole-body deadline, cross-site requests (`Origin`, `Host`,
//! media types, CORS preflights), the body memory budget, and upstream refusals of large
//! bodies. Raw TCP where the wire matters; every refusal in the OpenAI shape.

use std::time::Duration;

use scripted_upstream::Script;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{error_of, Harness};

async fn connect(h: &Harness) -> TcpStream {
    TcpStream::connect(h.base.trim_start_matches("http://")).await.unwrap()
}

/// Reads what the gateway sends until it closes the connection (at most 20 s).
async fn read_to_close(conn: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), conn.read_to_end(&mut answer)).await.expect("the connection is closed").ok();
    String::from_utf8_lossy(&answer).into_owned()
}

/// A body sent a byte at a time, each within the per-piece timeout, still has the whole
/// body's deadline: 408 `request_timeout`, `Connection: close`, and the connection closed.
#[tokio::test]
async fn a_trickled_body_meets_the_whole_body_deadline() {
    let h = Harness::start_with(|c| {
        c.server.request_body_timeout_ms = 600;
        c.server.request_read_timeout_ms = 5_000;
    })
    .await;
    let mut conn = connect(&h).await;
    conn.write_all(b"POST /v1/responses HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{").await.unwrap();
    let trickle = async {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if conn.write_all(b" ").await.is_err() {
                break;
            }
            let mut peek = [0u8; 1];
            if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(1), conn.peek(&mut peek)).await {
                if n > 0 {
                    break;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), trickle).await.expect("answered while the body trickles");
    let answer = read_to_close(&mut conn).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    assert!(answer.contains("request_timeout") && answer.contains("request_body_timeout_ms"), "{answer}");
    assert!(h.upstream.requests().is_empty(), "nothing ran");
    h.upstream.push(Script::text(&["ok"]));
    assert_eq!(h.post(json!({"model":"m","input":"x"})).await.0, 200, "a whole body is unaffected");
}

/// Another site's page cannot start turns: a `text/plain` or form POST is a 415, an
/// `Origin` that is not allowed a 403, and a `Host` that names another site (DNS
/// rebinding) a 403; nothing reaches the upstream or the store. The page's own origin
/// and the configured ones are served, and their CORS preflights answered.
#[tokio::test]
async fn cross_site_requests_are_refused_before_anything_runs() {
    let h = Harness::start_with(|c| c.server.cors_origins = vec!["https://app.example".into()]).await;
    let url = format!("{}/v1/responses", h.base);
    let body = json!({"model":"m","input":"x"}).to_string();
    for kind in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let resp = h.client.post(&url).header("content-type", kind).body(body.clone()).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 415, "{kind}");
        let e: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(error_of(&e)["code"], "unsupported_media_type");
    }
    let resp = h.client.post(&url).body(body.clone()).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 415, "no content type");
    for origin in ["https://evil.example", "null", "http://127.0.0.1:1"] {
        let resp = h.client.post(&url).header("content-type", "application/json").header("origin", origin).body(body.clone()).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 403, "{origin}");
        let e: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(error_of(&e)["code"], "origin_not_allowed", "{origin}");
    }
    let resp = h.client.get(format!("{}/v1/models", h.base)).header("host", "rebound.example:8080").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let e: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(error_of(&e)["code"], "host_not_allowed");
    assert!(h.upstream.requests().is_empty(), "nothing reached the upstream");

    // The page's own origin (the playground's) and a configured one are served.
    let own = h.base.clone();
    for origin in [own.as_str(), "https://app.example"] {
        h.upstream.push(Script::text(&["ok"]));
        let resp = h.client.post(&url).header("content-type", "application/json").header("origin", origin).body(body.clone()).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{origin}");
    }
    // A configured origin's preflight is answered; another's is refused.
    let preflight = |origin: &str| {
        h.client
            .request(reqwest::Method::OPTIONS, &url)
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "authorization, content-type, x-stainless-os")
            .send()
    };
    let ok = preflight("https://app.example").await.unwrap();
    assert!(ok.status().is_success(), "{}", ok.status());
    assert_eq!(ok.headers()["access-control-allow-origin"], "https://app.example");
    assert!(ok.headers()["access-control-allow-headers"].to_str().unwrap().contains("x-stainless-os"));
    let refused = preflight("https://evil.example").await.unwrap();
    assert_eq!(refused.status().as_u16(), 403);
    assert!(refused.headers().get("access-control-allow-origin").is_none());
}

/// Large bodies share `[limits] body_memory_bytes`: while one holds it all, another waits
/// `body_memory_wait_ms`, then gets 503 `server_busy` with `Retry-After` (its connection
/// closed); once the first is answered, the room is back.
#[tokio::test]
async fn large_bodies_share_the_memory_budget() {
    let h = Harness::start_with(|c| {
        c.limits.body_memory_bytes = 1 << 20;
        c.limits.body_memory_wait_ms = 200;
    })
    .await;
    // 400 KiB at 6 times its size is more than the whole budget: it takes all of it.
    let big = format!("{{\"model\":\"m\",\"input\":\"{}\"}}", "x".repeat(400 << 10));
    let mut first = connect(&h).await;
    let head = format!("POST /v1/responses HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", big.len());
    first.write_all(head.as_bytes()).await.unwrap();
    first.write_all(&big.as_bytes()[..1000]).await.unwrap();
    // The first one holds the room once its handler reads the body (its head was read).
    let mut refused = None;
    for _ in 0..50 {
        let resp = h.client.post(format!("{}/v1/responses", h.base)).header("content-type", "application/json").body(big.clone()).send().await.unwrap();
        if resp.status().as_u16() == 503 {
            refused = Some(resp);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = refused.expect("a second large body is refused while the first holds the budget");
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(refused.headers()["connection"], "close");
    let e: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(error_of(&e)["code"], "server_busy");
    assert_eq!(error_of(&e)["type"], "server_error");
    // A small request is not counted.
    h.upstream.push(Script::text(&["small"]));
    assert_eq!(h.post(json!({"model":"m","input":"x"})).await.0, 200);
    // The first body arrives: it is answered, and the room is back.
    h.upstream.push(Script::text(&["big"]));
    first.write_all(&big.as_bytes()[1000..]).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(20), first.read(&mut answer)).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer[..n]));
    h.upstream.push(Script::text(&["again"]));
    let resp = h.client.post(format!("{}/v1/responses", h.base)).header("content-type", "application/json").body(big.clone()).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}

/// An upstream that refuses a large request body (413, then it closes the connection
/// without reading the rest) is the client's 400 `upstream_rejected_request` every time,
/// whether the gateway reads the 413 or finds the connection closed while it still sends
/// (the answer lost: here two connections of three are closed without one).
#[tokio::test]
async fn an_upstream_refusal_of_a_large_body_is_classified_the_same_way_every_time() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut accepted = 0u32;
        while let Ok((mut sock, _)) = listener.accept().await {
            accepted += 1;
            let answers = accepted.is_multiple_of(3);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while let Ok(n) = sock.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                    if got.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                if !answers {
                    return;
                }
                let body = r#"{"error":{"message":"request entity too large","type":"invalid_request_error"}}"#;
                let answer = format!("HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                let _ = sock.write_all(answer.as_bytes()).await;
                // Closed with the body unread: the kernel resets the connection.
            });
        }
    });
    let h = Harness::start_with(move |c| c.upstream.url = Some(format!("http://{addr}/v1"))).await;
    let input = "y".repeat(6 << 20);
    for _ in 0..5 {
        let (status, body) = h.post(json!({"model":"m","input":input,"store":false})).await;
        assert_eq!(status, 400, "{}", body.to_string().chars().take(400).collect::<String>());
        assert_eq!(error_of(&body)["code"], "upstream_rejected_request");
    }
}
