//! The HTTP/1.1 keep-alive loop shared by the benchmark's backend fixtures
//! (`search-fixture`, `vector-fixture`): canned replies chosen from the request head, no
//! allocation per request beyond the read buffer, so what a benchmark measures is the
//! gateway. Prints `LISTENING http://ADDR{suffix}` once bound; on SIGTERM or Ctrl-C prints
//! `SERVED <n> searches` (requests the router counted) and returns.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A whole `200 OK` HTTP/1.1 response with `body`.
pub fn response(ctype: &str, body: &str) -> Arc<[u8]> {
    format!("HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes().into()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `content-length` of a header block (0 when absent).
pub fn content_length(head: &[u8]) -> usize {
    let text = String::from_utf8_lossy(head);
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case("content-length").then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Picks the reply for a request head and says whether it counts as a search.
pub type Router = dyn Fn(&[u8]) -> (Arc<[u8]>, bool) + Send + Sync;

/// Serves until SIGTERM / Ctrl-C.
pub async fn serve(listen: &str, suffix: &str, route: Arc<Router>) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen).await.with_context(|| format!("binding {listen}"))?;
    println!("LISTENING http://{}{suffix}", listener.local_addr()?);
    let served = Arc::new(AtomicU64::new(0));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        let (mut sock, _) = tokio::select! {
            r = listener.accept() => r?,
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        };
        let _ = sock.set_nodelay(true);
        let (route, served) = (route.clone(), served.clone());
        tokio::spawn(async move {
            let mut buf = Vec::with_capacity(8192);
            let mut chunk = [0u8; 8192];
            loop {
                while let Some(end) = find(&buf, b"\r\n\r\n") {
                    let total = end + 4 + content_length(&buf[..end]);
                    if buf.len() < total {
                        break;
                    }
                    let (reply, counted) = route(&buf[..end]);
                    if counted {
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                    if sock.write_all(&reply).await.is_err() {
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
    fn content_length_is_read_case_insensitively() {
        assert_eq!(super::content_length(b"POST /x HTTP/1.1\r\nContent-Length: 42\r\nHost: a"), 42);
        assert_eq!(super::content_length(b"GET / HTTP/1.1\r\nHost: a"), 0);
    }
}
