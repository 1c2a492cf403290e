//! The accept loop. `axum::serve` cannot bound the wait for a request's head, so a client
//! that opens a connection and sends half a head held it forever; this loop serves the same
//! router over HTTP/1.1 with hyper's header read timeout, TCP_NODELAY and a graceful shutdown
//! that a client which stops reading cannot hold up.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// Serves `app` over HTTP/1.1 on `listener` until `shutdown` resolves; then accepts no more
/// connections and waits, at most `drain`, until the open ones have answered their current
/// request (the rest are dropped: a client that stopped reading must not keep the process).
/// A client has `read_timeout` to send a request's head (on a kept-alive connection, counted
/// from the previous answer; on a new one, from the accept), else its connection is closed.
/// Accept errors are logged and retried (after 1 s unless only that connection failed).
/// Not HTTP/2: no OpenAI client speaks cleartext HTTP/2, and hyper's HTTP/2 server bounds
/// neither the wait for the connection preface nor an idle connection.
pub async fn serve(listener: TcpListener, app: Router, read_timeout: Duration, drain: Duration, shutdown: impl Future<Output = ()>) {
    let mut builder = Builder::new(TokioExecutor::new()).http1_only();
    builder.http1().timer(TokioTimer::new()).header_read_timeout(read_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    if !is_connection_error(&e) {
                        tracing::warn!(error = %e, "accepting a connection failed; retrying in 1 s");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small SSE writes must leave at once: without TCP_NODELAY, Nagle and delayed ACKs
        // hold the last chunks of a stream for ~40 ms.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("set_nodelay: {e}");
        }
        let (builder, app, watcher) = (builder.clone(), app.clone(), graceful.watcher());
        tokio::spawn(async move {
            // hyper's timer starts with the first byte (the protocol is read from it): a
            // connection that sends nothing is closed after `read_timeout` here.
            // (`peek`, not `readable`: readiness may be reported before a byte is there.)
            match tokio::time::timeout(read_timeout, tcp.peek(&mut [0u8; 1])).await {
                Ok(Ok(n)) if n > 0 => {}
                Ok(_) => return,
                Err(_) => {
                    tracing::debug!("closing a connection that sent nothing");
                    return;
                }
            }
            // With upgrades: `GET /v1/responses` may become a WebSocket (`http::websocket`).
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tcp), TowerToHyperService::new(app)).into_owned();
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "connection closed with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(drain, graceful.shutdown()).await.is_err() {
        tracing::warn!("connections still open after the grace period (clients not reading) are dropped");
    }
}

/// Errors of one connection (it failed before it was accepted), not of the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}
