//! responses-gateway: an OpenAI-compatible Responses API gateway that owns tool execution.
//! See `DESIGN.md` (shared) for the ownership model and pipeline.

pub mod admission;
pub mod auth;
pub mod background;
pub mod config;
pub mod crypto;
pub mod error;
pub mod events;
pub mod executors;
pub mod http;
pub mod memory;
pub mod seal;
pub mod service;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod transcript;
pub mod turn;
pub mod upstream;

use std::sync::Arc;

use tokio::net::TcpListener;

pub use config::Config;

/// Installs the rustls crypto provider (ring) once; reqwest is built without a default.
pub use crypto::install as install_crypto;

/// Serves on an already-bound listener until `shutdown` resolves. Logs "listening on
/// http://ADDR" once the state (store included) is ready; a store that cannot be opened is
/// an error before that.
pub async fn serve_on(
    listener: TcpListener,
    config: &Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    crypto::install();
    memory::tune();
    let state = Arc::new(http::AppState::from_config(config).await?);
    let addr = listener.local_addr()?;
    if state.keys.is_empty() && !addr.ip().is_loopback() {
        tracing::warn!(%addr, "no API key is configured ([auth]) and the gateway listens beyond loopback: anyone who reaches {addr} can use it and read its stored data");
    } else if !state.keys.is_empty() {
        tracing::info!(keys = state.keys.len(), "API keys required on /v1/*");
    }
    tracing::info!(%addr, data_dir = %config.data_dir().display(), store = ?config.store.backend, "listening on http://{addr}");
    if let Some(m) = &state.metrics {
        m.start_upkeep();
    }
    let (turns, cancel, stop_claiming) = (state.turns.clone(), state.shutdown.clone(), state.stop_claiming.clone());
    // `/metrics` on its own address (`metrics.listen`), until the process ends.
    if let (Some(m), Some(at)) = (&state.metrics, config.metrics.listen) {
        let listener = TcpListener::bind(at).await.map_err(|e| anyhow::anyhow!("cannot listen on {at} (metrics.listen): {e}"))?;
        tracing::info!(addr = %at, "metrics on http://{at}/metrics");
        let app = http::metrics::router(m.clone(), state.guard());
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    let app = http::router(state, &config.server);
    // On shutdown: no new connections; running turns get `shutdown_grace_ms` to finish,
    // then are cancelled (they end `incomplete` and stored turns are stored so).
    let grace = std::time::Duration::from_millis(config.server.shutdown_grace_ms);
    let deadline = cancel.clone();
    let running = turns.clone();
    let signal = async move {
        shutdown.await;
        tracing::info!(grace_ms = grace.as_millis() as u64, "shutting down: running turns may finish");
        // Background workers take no new run; the ones running finish like other turns.
        stop_claiming.cancel();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            // Counted when they are cut (streamed and stored turns run as tracked tasks;
            // the others end with their connection).
            tracing::warn!(running = running.len(), "grace period over: ending running turns as incomplete");
            deadline.cancel();
        });
    };
    let read_timeout = std::time::Duration::from_millis(config.server.request_read_timeout_ms);
    // Connections get the grace period and a little more to send what the cut turns end with.
    let drain = grace + std::time::Duration::from_secs(2);
    http::serve::serve(listener, app, read_timeout, drain, signal).await;
    turns.close();
    tokio::select! {
        () = turns.wait() => {}
        () = cancel.cancelled() => {
            if tokio::time::timeout(std::time::Duration::from_secs(10), turns.wait()).await.is_err() {
                tracing::error!(running = turns.len(), "turns still running at exit");
            }
        }
    }
    Ok(())
}
