//! responses-gateway: an OpenAI-compatible Responses API gateway that owns tool execution.
//! See `DESIGN.md` (shared) for the ownership model and pipeline.

pub mod config;
pub mod error;
pub mod events;
pub mod executors;
pub mod http;
pub mod store;
pub mod tools;
pub mod turn;
pub mod upstream;

use std::sync::Arc;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;

pub use config::Config;

/// Installs the rustls crypto provider (ring) once; reqwest is built without a default.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Serves on an already-bound listener until `shutdown` resolves. Logs "listening on
/// http://ADDR" once the state (store included) is ready; a store that cannot be opened is
/// an error before that.
pub async fn serve_on(
    listener: TcpListener,
    config: &Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    install_crypto();
    let state = Arc::new(http::AppState::from_config(config).await?);
    let addr = listener.local_addr()?;
    tracing::info!(%addr, data_dir = %config.data_dir().display(), store = ?config.store.backend, "listening on http://{addr}");
    let app = http::router(state, config.server.max_body_bytes);
    // Small SSE writes must leave at once: without TCP_NODELAY, Nagle and delayed ACKs
    // hold the last chunks of a stream for ~40 ms.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("set_nodelay: {e}");
        }
    });
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    Ok(())
}
