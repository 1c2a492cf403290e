//! `[websocket]`: WebSocket mode on `/v1/responses` (issue 27; 2026 supplement W1): the
//! bounds of a connection. Every refusal closes the connection with a close frame whose
//! reason says which bound it met, or answers an `error` event.

use serde::{Deserialize, Serialize};

/// `[websocket]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSocketConfig {
    /// Serve WebSocket mode (a `GET /v1/responses` upgrade). Default true; false: the
    /// upgrade is a 405, as before.
    pub enabled: bool,
    /// Open connections per API key (the anonymous key counts as one key); one more is
    /// refused at the upgrade with 429. Default 16.
    pub max_connections_per_key: usize,
    /// Responses running at once on one connection (all lanes together); a create beyond
    /// it waits in its lane's queue. Default 16 (as OpenAI's).
    pub max_in_flight: usize,
    /// Distinct named lanes (`stream_id`) per connection; one more is an `error` event
    /// `websocket_stream_limit_reached`. Default 32 (as OpenAI's).
    pub max_streams: usize,
    /// Creates waiting in a connection's lanes; one more is an `error` event. Default 64.
    pub max_queued: usize,
    /// A connection with no message from its client and no response running for this
    /// long is closed (close code 1000, reason "idle"), milliseconds. Default 300000.
    pub idle_timeout_ms: u64,
    /// A connection's longest life, milliseconds: then a create is answered with the
    /// `error` event `websocket_connection_limit_reached` and the connection is closed once
    /// its running responses have ended. Default 3600000 (60 minutes, as OpenAI's).
    pub max_age_ms: u64,
}

impl Default for WebSocketConfig {
    fn default() -> Self {
        WebSocketConfig {
            enabled: true,
            max_connections_per_key: 16,
            max_in_flight: 16,
            max_streams: 32,
            max_queued: 64,
            idle_timeout_ms: 300_000,
            max_age_ms: 3_600_000,
        }
    }
}
