//! `loadgen vector-fixture`: a remote vector store (OpenAI's API shape) that answers at
//! once, for the file_search benchmark scenario. `GET /v1/vector_stores/{id}` answers the
//! store object, every `POST` (e.g. `/v1/vector_stores/{id}/search`) the same search page
//! (`PAGE`, three chunks), `GET /healthz` `ok`. HTTP/1.1 keep-alive. Prints `LISTENING
//! http://ADDR/v1` once bound; on SIGTERM or Ctrl-C prints `SERVED <n> searches` and exits.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A search page in OpenAI's shape: three chunks of two files.
pub const PAGE: &str = r#"{"object":"vector_store.search_results.page","search_query":["tour de france 2025 winner"],"data":[
{"file_id":"file-tdf2025","filename":"tour-2025.md","score":0.91,"attributes":{"year":2025},"content":[{"type":"text","text":"The 2025 Tour de France was the 112th edition. It started in Lille on 5 July and finished in Paris on 27 July. Tadej Pogačar won the general classification, his fourth Tour title, ahead of Jonas Vingegaard and Florian Lipowitz."}]},
{"file_id":"file-tdf2025","filename":"tour-2025.md","score":0.77,"attributes":{"year":2025},"content":[{"type":"text","text":"Stage 21 ended on the Champs-Élysées after three climbs of Montmartre; Wout van Aert won the stage."}]},
{"file_id":"file-history","filename":"tour-history.txt","score":0.52,"attributes":{"year":2024},"content":[{"type":"text","text":"Four riders share the record of five overall wins: Anquetil, Merckx, Hinault and Induráin."}]}
],"has_more":false,"next_page":null}"#;

const STORE: &str = r#"{"id":"vs_bench","object":"vector_store","status":"completed"}"#;

fn response(ctype: &str, body: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `content-length` of a header block (0 when absent).
fn content_length(head: &[u8]) -> usize {
    let text = String::from_utf8_lossy(head);
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case("content-length").then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Serves until SIGTERM / Ctrl-C.
pub async fn serve(listen: &str) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen).await.with_context(|| format!("binding {listen}"))?;
    println!("LISTENING http://{}/v1", listener.local_addr()?);
    let page: Arc<[u8]> = response("application/json", PAGE).into();
    let store: Arc<[u8]> = response("application/json", STORE).into();
    let health: Arc<[u8]> = response("text/plain", "ok").into();
    let served = Arc::new(AtomicU64::new(0));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        let (mut sock, _) = tokio::select! {
            r = listener.accept() => r?,
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        };
        let _ = sock.set_nodelay(true);
        let (page, store, health, served) = (page.clone(), store.clone(), health.clone(), served.clone());
        tokio::spawn(async move {
            let mut buf = Vec::with_capacity(8192);
            let mut chunk = [0u8; 8192];
            loop {
                while let Some(end) = find(&buf, b"\r\n\r\n") {
                    let total = end + 4 + content_length(&buf[..end]);
                    if buf.len() < total {
                        break;
                    }
                    let reply = if buf.starts_with(b"POST ") {
                        served.fetch_add(1, Ordering::Relaxed);
                        &page
                    } else if buf.starts_with(b"GET /healthz") {
                        &health
                    } else {
                        &store
                    };
                    if sock.write_all(reply).await.is_err() {
                        return;
                    }
                    buf.drain(..total);
                }
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        });
    }
    println!("SERVED {} searches", served.load(Ordering::Relaxed));
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn page_is_a_search_page() {
        let v: serde_json::Value = serde_json::from_str(super::PAGE).unwrap();
        assert_eq!(v["data"].as_array().unwrap().len(), 3);
        assert_eq!(super::content_length(b"POST /x HTTP/1.1\r\nContent-Length: 42\r\nHost: a"), 42);
    }
}
