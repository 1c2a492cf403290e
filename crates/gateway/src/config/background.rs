//! `[background]`: the workers that run background responses (`background: true`, issue 19)
//! and the queue they take them from, kept in the store (`runs`).

use serde::{Deserialize, Serialize};

/// `[background]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackgroundConfig {
    /// Background runs this process executes at once (its workers). Default 4; 0: this
    /// process queues runs but runs none (another replica does).
    pub workers: usize,
    /// Runs that may wait in the queue (all replicas together); one more is a 429. Default 1000.
    pub max_queued: usize,
    /// A worker's lease on its run, renewed every third of it (its heartbeat, which also
    /// sees a cancel sent to another replica), milliseconds. Default 30000.
    pub lease_ms: u64,
    /// How often an idle worker looks for runs queued by another replica, milliseconds
    /// (runs queued by this process wake it at once). Default 500.
    pub poll_ms: u64,
}

impl Default for BackgroundConfig {
    fn default() -> Self {
        BackgroundConfig { workers: 4, max_queued: 1000, lease_ms: 30_000, poll_ms: 500 }
    }
}
