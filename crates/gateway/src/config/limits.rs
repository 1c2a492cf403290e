//! `[limits]` (issue 20 "Limits"): per-key request rate and concurrent streams, the
//! upstream's in-flight slots and wait queue, and size ceilings of a request. A value of 0
//! turns a rate, stream or upstream limit off.

use serde::{Deserialize, Serialize};

/// `[limits]`. Refusals are 429 `rate_limit_exceeded` with `Retry-After` (rates, streams,
/// upstream) or 400 naming the field (sizes); nothing is stored for a refused request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Requests per minute per API key, on every `/v1/*` route (GCRA: spread over the
    /// minute, `burst` at once). Without keys, all callers share one budget. 0: no limit.
    pub requests_per_minute: u32,
    /// How many requests a key may send at once before the rate applies; 0: as many as
    /// `requests_per_minute`.
    pub burst: u32,
    /// Streamed `POST /v1/responses` running at once per API key. 0: no limit.
    pub concurrent_streams: u32,
    /// Turns using the upstream at once (a turn sends its rounds one at a time, so this
    /// bounds the upstream's requests in flight). 0: no limit.
    pub upstream_max_in_flight: usize,
    /// Turns that may wait for an upstream slot; one more is refused at once. Default 64.
    pub upstream_queue: usize,
    /// Longest wait for an upstream slot, milliseconds; then 429. Default 30000.
    pub upstream_queue_timeout_ms: u64,
    /// Most `input` items in one request (400 naming `input`). Default 10000.
    pub max_input_items: usize,
    /// Most tool declarations in one request (400 naming `tools`). Default 512.
    pub max_tools: usize,
    /// Highest `max_output_tokens` a request may ask for (400 naming it). 0: no ceiling.
    pub max_output_tokens: u64,
    /// The `max_output_tokens` of a request that names none (tokens, summed over the turn's
    /// rounds, as the request's own would be; echoed in the Response). 0 (the default): no
    /// cap, the upstream's own limit applies. When set: at least 16, and at most
    /// `max_output_tokens` when that is set. A small model server with one slot wants it: an
    /// uncapped run-on answer holds the slot until the context is full.
    pub default_max_output_tokens: u64,
    /// Memory shared by the request bodies being read and parsed at once, in bytes: a body
    /// of 64 KiB or more costs [`BODY_COST_FACTOR`] times its size (at most all of it)
    /// until its answer starts. Default 768 MiB (four bodies of 32 MiB; fits a 2 GiB
    /// machine). 0: no budget.
    pub body_memory_bytes: u64,
    /// Longest wait for room in that budget, milliseconds; then 503 with `Retry-After`.
    /// Default 2000.
    pub body_memory_wait_ms: u64,
}

/// What a request body costs the body budget, as a multiple of its size: the most memory a
/// large body took at once, measured (`bench/memory.py`): about 4 times its size without
/// storing, 6 when SQLite stores it (the input and the transcript both hold it, and SQLite
/// copies each value it writes, twice).
pub const BODY_COST_FACTOR: u64 = 6;

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            requests_per_minute: 0,
            burst: 0,
            concurrent_streams: 0,
            upstream_max_in_flight: 0,
            upstream_queue: 64,
            upstream_queue_timeout_ms: 30_000,
            max_input_items: 10_000,
            max_tools: 512,
            max_output_tokens: 0,
            default_max_output_tokens: 0,
            body_memory_bytes: 768 << 20,
            body_memory_wait_ms: 2_000,
        }
    }
}

impl LimitsConfig {
    /// Checks value ranges: `body_memory_bytes` (0 or at least 1 MiB), and
    /// `default_max_output_tokens` against the API's minimum (16) and the ceiling.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.body_memory_bytes != 0 && self.body_memory_bytes < 1 << 20 {
            anyhow::bail!("limits.body_memory_bytes must be 0 (no budget) or at least 1 MiB (1048576)");
        }
        let d = self.default_max_output_tokens;
        if d != 0 && d < 16 {
            anyhow::bail!("limits.default_max_output_tokens must be 0 (no cap) or at least 16 (the API's minimum), not {d}");
        }
        if d != 0 && self.max_output_tokens != 0 && d > self.max_output_tokens {
            anyhow::bail!(
                "limits.default_max_output_tokens ({d}) must not exceed limits.max_output_tokens ({})",
                self.max_output_tokens
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_is_checked_against_the_minimum_and_the_ceiling() {
        let with = |default_max_output_tokens, max_output_tokens| {
            LimitsConfig { default_max_output_tokens, max_output_tokens, ..LimitsConfig::default() }.validate()
        };
        assert!(with(0, 0).is_ok());
        assert!(with(16, 0).is_ok());
        assert!(with(512, 512).is_ok());
        let low = with(15, 0).unwrap_err().to_string();
        assert!(low.contains("limits.default_max_output_tokens") && low.contains("15"), "{low}");
        let over = with(1024, 512).unwrap_err().to_string();
        assert!(over.contains("limits.max_output_tokens (512)"), "{over}");
    }
}
