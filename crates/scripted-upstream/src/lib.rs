//! A scripted OpenAI-compatible chat-completions model server for tests and benchmarks.
//!
//! It stands in for vLLM / llama.cpp: every `POST /v1/chat/completions` takes the next
//! [`Script`] from a FIFO queue (or the default script when the queue is empty) and
//! answers it in llama.cpp's wire format, streamed (`"stream": true`, data-only SSE, one
//! body frame per chunk) or as one `chat.completion` object.
//!
//! It also answers `POST /v1/responses` (streamed only) from the same scripts, in the
//! Responses API's event format (`responses.rs`), for a gateway on a Responses upstream.
//!
//! Routes: `POST /v1/chat/completions`, `POST /v1/responses`, `GET /v1/models`, `GET /health`, and for
//! out-of-process use `POST /_control/scripts` (one script or an array, appended to the
//! queue), `GET /_control/requests` (recorded requests), `POST /_control/reset` and
//! `POST /_control/require_reasoning` (act as a thinking model's server that refuses tool
//! rounds without their reasoning: [`ScriptedUpstream::require_reasoning_back`]).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use scripted_upstream::{Script, ScriptedUpstream};
//! let upstream = ScriptedUpstream::start().await?;
//! upstream.push(Script::text(&["Hel", "lo"]));
//! upstream.push(Script::tool_call("get_weather", r#"{"city":"Paris"}"#));
//! // point the gateway at upstream.base_url() …
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod pacing;
mod render;
mod responses;
mod script;
mod server;
mod thinking;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::serve::ListenerExt;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use render::DEFAULT_MODEL;
pub use script::{Fault, Script, ToolCallScript, UsageScript};

/// Number of text chunks of the default script used by [`ScriptedUpstream::start`].
pub const DEFAULT_TOKENS: usize = 64;

/// One chat-completions request as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// The JSON request body.
    pub body: serde_json::Value,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
}

/// A running scripted server; it stops accepting connections when dropped.
pub struct ScriptedUpstream {
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    task: JoinHandle<()>,
}

impl ScriptedUpstream {
    /// Binds 127.0.0.1:0 and serves in a tokio task; the default script is
    /// [`Script::sentence`]`(`[`DEFAULT_TOKENS`]`)`.
    pub async fn start() -> std::io::Result<ScriptedUpstream> {
        let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        Self::start_on(addr, Script::sentence(DEFAULT_TOKENS)).await
    }

    /// Binds `addr` and serves in a tokio task, answering with `default` when the
    /// queue is empty.
    pub async fn start_on(addr: SocketAddr, default: Script) -> std::io::Result<ScriptedUpstream> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(server::Shared::new(default));
        let app = server::router(shared.clone());
        // Chunks are small and flushed one by one: Nagle would hold them back.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            // serve only returns on a listener error; there is no one to report it to.
            let _ = axum::serve(listener, app).await;
        });
        Ok(ScriptedUpstream { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL an OpenAI client is given.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// `http://127.0.0.1:PORT` (an unspecified bind address is shown as loopback).
    pub fn origin(&self) -> String {
        let ip = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        format!("http://{}", SocketAddr::new(ip, self.addr.port()))
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues `script` to answer one future chat request (FIFO).
    pub fn push(&self, script: Script) {
        self.shared.push([script]);
    }

    /// Every chat request received, in order of arrival.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests()
    }

    /// Empties the script queue and the recorded requests.
    pub fn reset(&self) {
        self.shared.reset();
    }

    /// Replaces the script used when the queue is empty.
    pub fn set_default(&self, script: Script) {
        self.shared.set_default(script);
    }

    /// Streamed answers whose client left before their end (`GET /_control/stats`).
    pub fn cut_streams(&self) -> usize {
        self.shared.cut.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Turns recording of requests on (the default) or off (long benchmark runs).
    pub fn set_recording(&self, on: bool) {
        self.shared.set_recording(on);
    }

    /// Acts as a thinking model's server that refuses (HTTP 400, that server's body) a
    /// chat request in which an assistant message of a user turn with tool calls lacks its
    /// reasoning in `field`: `reasoning_content` (DeepSeek's answer) or `reasoning` (vLLM's
    /// error shape). `None` turns the check off (the default).
    pub fn require_reasoning_back(&self, field: Option<&str>) {
        self.shared.require_reasoning(field.map(str::to_string));
    }

    /// Serves until the server task ends (it does not end on its own).
    pub async fn wait(mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for ScriptedUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}
