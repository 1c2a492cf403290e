//! Test helpers: an HTTP client, a raw HTTP/1.1 client that keeps the body's chunk
//! frames, and SSE splitting.
#![allow(dead_code)]

use std::net::SocketAddr;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

/// A raw HTTP/1.1 answer: status, lower-cased headers, and the chunked body's frames.
#[derive(Debug)]
pub struct RawAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Each chunk of the chunked transfer encoding, in order.
    pub frames: Vec<String>,
    /// Whether the terminating zero-size chunk arrived (a clean end of the body).
    pub clean_end: bool,
}

impl RawAnswer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// POSTs `body` to `path` and reads the answer to the end of the connection.
pub async fn raw_post(addr: SocketAddr, path: &str, body: &Value) -> RawAnswer {
    let body = serde_json::to_vec(body).unwrap();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Authorization: Bearer raw\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&body).await.unwrap();
    let mut bytes = Vec::new();
    // An aborted connection may end in a reset: keep what arrived.
    let mut buf = [0u8; 8192];
    loop {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
        }
    }
    parse_chunked(&bytes)
}

fn parse_chunked(bytes: &[u8]) -> RawAnswer {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let (head, mut rest) = text.split_once("\r\n\r\n").expect("no header end");
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    assert!(
        headers.iter().any(|(k, v)| k == "transfer-encoding" && v == "chunked"),
        "not chunked: {headers:?}"
    );
    let mut frames = Vec::new();
    let mut clean_end = false;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            clean_end = true;
            break;
        }
        if after.len() < size + 2 {
            break; // a frame cut off by the abort
        }
        frames.push(after[..size].to_owned());
        assert_eq!(&after[size..size + 2], "\r\n");
        rest = &after[size + 2..];
    }
    RawAnswer { status, headers, frames, clean_end }
}

/// Splits an SSE body into its `data:` payloads (`[DONE]` included as a string).
pub fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").unwrap_or_else(|| panic!("not a data event: {e:?}")).to_owned())
        .collect()
}

/// Parses JSON chunks, dropping the final `[DONE]` (asserting it is there).
pub fn json_chunks(data: &[String]) -> Vec<Value> {
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect()
}

/// The `choices[0]` of a chunk.
pub fn choice(chunk: &Value) -> &Value {
    &chunk["choices"][0]
}

pub fn is_llama_id(id: &str) -> bool {
    id.len() == 32 && id.chars().all(|c| c.is_ascii_alphanumeric())
}

pub fn chat(stream: bool, include_usage: bool) -> Value {
    let mut body = serde_json::json!({
        "model": "test-model",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    });
    if include_usage {
        body["stream_options"] = serde_json::json!({"include_usage": true});
    }
    body
}
