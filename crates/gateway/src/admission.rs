//! Admission control of `[limits]` (issue 20 "Limits"): requests per minute and concurrent
//! streams per API key, and the upstream's bounded in-flight slots with their wait queue.
//! Every check happens before a request's turn starts, so a refused request leaves nothing
//! behind (no stored row, no upstream request). The HTTP layer answers a [`Refused`] with
//! 429 `rate_limit_exceeded` and `Retry-After`.
//!
//! Costs: one keyed GCRA check (`governor`, lock-free) per request when a rate is set; one
//! short mutex per streamed request when a stream cap is set; one semaphore permit per turn
//! when the upstream is bounded. Nothing per event or per token.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::limits::LimitsConfig;

/// Which key a request came with: the index of its configured key, or [`KeyId::ANONYMOUS`]
/// when no key is configured (then every caller shares one budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(pub u32);

impl KeyId {
    /// The one caller of a gateway without keys.
    pub const ANONYMOUS: KeyId = KeyId(u32::MAX);
}

/// Why a request was refused, and when to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The key's `requests_per_minute` is spent.
    Rate { retry_after: Duration },
    /// The key has `concurrent_streams` streams open.
    Streams { limit: u32 },
    /// The key has `websocket.max_connections_per_key` WebSocket connections open.
    Connections { limit: u32 },
    /// The upstream's `upstream_max_in_flight` slots are taken and its queue is full, or
    /// the wait passed `upstream_queue_timeout_ms`.
    UpstreamBusy { waited: Duration },
}

impl Refused {
    /// The `Retry-After` value, whole seconds (at least 1).
    pub fn retry_after_secs(&self) -> u64 {
        match self {
            Refused::Rate { retry_after } => retry_after.as_millis().div_ceil(1000).max(1) as u64,
            Refused::Streams { .. } | Refused::Connections { .. } | Refused::UpstreamBusy { .. } => 1,
        }
    }

    /// The error message (names the setting, never a key).
    pub fn message(&self) -> String {
        match self {
            Refused::Rate { retry_after } => format!(
                "Rate limit reached for requests per minute on this API key (limits.requests_per_minute). Please try again in {} s.",
                retry_after.as_millis().div_ceil(1000).max(1)
            ),
            Refused::Streams { limit } => format!(
                "Too many concurrent streams on this API key: at most {limit} (limits.concurrent_streams). Please retry when one has finished."
            ),
            Refused::Connections { limit } => format!(
                "Too many WebSocket connections on this API key: at most {limit} (websocket.max_connections_per_key). Please close one first."
            ),
            Refused::UpstreamBusy { waited } if waited.is_zero() => {
                "The model server is busy: every slot (limits.upstream_max_in_flight) is taken and its wait queue (limits.upstream_queue) is full. Please retry shortly.".to_string()
            }
            Refused::UpstreamBusy { waited } => format!(
                "The model server is busy: no slot (limits.upstream_max_in_flight) came free within {} ms (limits.upstream_queue_timeout_ms). Please retry shortly.",
                waited.as_millis()
            ),
        }
    }
}

/// A permit for one stream of a key: the slot is free again when it is dropped.
#[derive(Debug)]
pub struct StreamPermit(#[allow(dead_code)] OwnedSemaphorePermit);

/// A permit for one open WebSocket connection of a key: free again when it is dropped.
#[derive(Debug)]
pub struct ConnectionPermit(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// A permit for one turn's use of the upstream (its rounds run one at a time, so a turn has
/// at most one upstream request in flight): the slot is free again when it is dropped.
#[derive(Debug)]
pub struct UpstreamPermit(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl UpstreamPermit {
    /// No slot (a request that does not use the upstream now).
    pub fn none() -> UpstreamPermit {
        UpstreamPermit(None)
    }
}

/// The limits of `[limits]`, shared by every request.
pub struct Admission {
    rate: Option<DefaultKeyedRateLimiter<KeyId>>,
    streams: Option<StreamCap>,
    upstream: Option<UpstreamGate>,
    /// `websocket.max_connections_per_key` (not a `[limits]` setting; always set, 0: none).
    connections: Option<StreamCap>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("rate", &self.rate.is_some())
            .field("streams", &self.streams.as_ref().map(|s| s.limit))
            .field("upstream", &self.upstream.as_ref().map(|u| u.slots))
            .finish()
    }
}

/// `concurrent_streams`: the cap, and each key's slots (made at its first stream).
struct StreamCap {
    limit: u32,
    per_key: Mutex<HashMap<KeyId, Arc<Semaphore>>>,
}

/// `upstream_max_in_flight` slots, and how many may wait for one, for how long.
struct UpstreamGate {
    slots: usize,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
    timeout: Duration,
}

impl Admission {
    /// From `[limits]` (0 turns a limit off).
    pub fn new(c: &LimitsConfig) -> Admission {
        let rate = NonZeroU32::new(c.requests_per_minute).map(|rpm| {
            let burst = NonZeroU32::new(c.burst).unwrap_or(rpm);
            RateLimiter::keyed(Quota::per_minute(rpm).allow_burst(burst))
        });
        let streams =
            (c.concurrent_streams > 0).then(|| StreamCap { limit: c.concurrent_streams, per_key: Mutex::new(HashMap::new()) });
        let upstream = (c.upstream_max_in_flight > 0).then(|| UpstreamGate {
            slots: c.upstream_max_in_flight,
            permits: Arc::new(Semaphore::new(c.upstream_max_in_flight)),
            waiting: AtomicUsize::new(0),
            queue: c.upstream_queue,
            timeout: Duration::from_millis(c.upstream_queue_timeout_ms),
        });
        Admission { rate, streams, upstream, connections: None }
    }

    /// With at most `limit` open WebSocket connections per key (0: no cap).
    pub fn with_connections(mut self, limit: usize) -> Admission {
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        self.connections = (limit > 0).then(|| StreamCap { limit, per_key: Mutex::new(HashMap::new()) });
        self
    }

    /// True when no limit is set (nothing to check).
    pub fn is_off(&self) -> bool {
        self.rate.is_none() && self.streams.is_none() && self.upstream.is_none()
    }

    /// Counts one request of `key` against its rate; `Err` when it is spent.
    pub fn request(&self, key: KeyId) -> Result<(), Refused> {
        let Some(rate) = &self.rate else { return Ok(()) };
        rate.check_key(&key).map_err(|not_until| Refused::Rate { retry_after: not_until.wait_time_from(DefaultClock::default().now()) })
    }

    /// Takes one of `key`'s stream slots (`None` when streams are not capped).
    pub fn stream(&self, key: KeyId) -> Result<Option<StreamPermit>, Refused> {
        let Some(StreamCap { limit, per_key }) = &self.streams else { return Ok(None) };
        let sem = {
            let mut map = per_key.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            map.entry(key).or_insert_with(|| Arc::new(Semaphore::new(*limit as usize))).clone()
        };
        sem.try_acquire_owned().map(|p| Some(StreamPermit(p))).map_err(|_| Refused::Streams { limit: *limit })
    }

    /// Takes one of `key`'s WebSocket connection slots; `Err` when all are taken.
    pub fn connection(&self, key: KeyId) -> Result<ConnectionPermit, Refused> {
        let Some(StreamCap { limit, per_key }) = &self.connections else { return Ok(ConnectionPermit(None)) };
        let sem = {
            let mut map = per_key.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            map.entry(key).or_insert_with(|| Arc::new(Semaphore::new(*limit as usize))).clone()
        };
        sem.try_acquire_owned().map(|p| ConnectionPermit(Some(p))).map_err(|_| Refused::Connections { limit: *limit })
    }

    /// Takes an upstream slot for a background run's turn, waiting as long as it takes (the
    /// run already waited in the store's queue; the bounded wait queue is for requests).
    pub async fn upstream_unbounded(&self) -> UpstreamPermit {
        let Some(gate) = &self.upstream else { return UpstreamPermit(None) };
        UpstreamPermit(gate.permits.clone().acquire_owned().await.ok())
    }

    /// Takes an upstream slot for one turn, waiting in the bounded queue when all are taken.
    pub async fn upstream(&self) -> Result<UpstreamPermit, Refused> {
        let Some(gate) = &self.upstream else { return Ok(UpstreamPermit(None)) };
        if let Ok(p) = gate.permits.clone().try_acquire_owned() {
            return Ok(UpstreamPermit(Some(p)));
        }
        // Join the queue unless it is full.
        let joined = gate.waiting.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < gate.queue).then_some(n + 1));
        if joined.is_err() {
            return Err(Refused::UpstreamBusy { waited: Duration::ZERO });
        }
        let waited = tokio::time::timeout(gate.timeout, gate.permits.clone().acquire_owned()).await;
        gate.waiting.fetch_sub(1, Ordering::AcqRel);
        match waited {
            Ok(Ok(p)) => Ok(UpstreamPermit(Some(p))),
            _ => Err(Refused::UpstreamBusy { waited: gate.timeout }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(f: impl FnOnce(&mut LimitsConfig)) -> Admission {
        let mut c = LimitsConfig::default();
        f(&mut c);
        Admission::new(&c)
    }

    #[test]
    fn rate_is_per_key_with_a_retry_time() {
        let a = limits(|c| c.requests_per_minute = 2);
        assert!(a.request(KeyId(0)).is_ok());
        assert!(a.request(KeyId(0)).is_ok());
        let refused = a.request(KeyId(0)).unwrap_err();
        // 2 per minute: the next one is about 30 s away.
        assert!((20..=30).contains(&refused.retry_after_secs()), "{refused:?}");
        assert!(refused.message().contains("limits.requests_per_minute"));
        assert!(a.request(KeyId(1)).is_ok(), "another key has its own budget");
        assert!(limits(|_| {}).request(KeyId(0)).is_ok());
    }

    #[test]
    fn streams_are_capped_per_key_and_freed_on_drop() {
        let a = limits(|c| c.concurrent_streams = 1);
        let first = a.stream(KeyId(0)).unwrap();
        assert!(first.is_some());
        assert_eq!(a.stream(KeyId(0)).unwrap_err(), Refused::Streams { limit: 1 });
        assert!(a.stream(KeyId(1)).unwrap().is_some());
        drop(first);
        assert!(a.stream(KeyId(0)).unwrap().is_some());
    }

    #[tokio::test]
    async fn upstream_slots_queue_then_refuse() {
        let a = Arc::new(limits(|c| {
            c.upstream_max_in_flight = 1;
            c.upstream_queue = 1;
            c.upstream_queue_timeout_ms = 60_000;
        }));
        let held = a.upstream().await.unwrap();
        // One may wait; it gets the slot when the holder is done.
        let waiter = tokio::spawn({
            let a = a.clone();
            async move { a.upstream().await.map(|_| ()) }
        });
        while a.upstream.as_ref().unwrap().waiting.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        // The queue is full: refused at once.
        assert_eq!(a.upstream().await.unwrap_err(), Refused::UpstreamBusy { waited: Duration::ZERO });
        drop(held);
        assert_eq!(waiter.await.unwrap(), Ok(()));
        // A wait past the timeout is refused too.
        let b = limits(|c| {
            c.upstream_max_in_flight = 1;
            c.upstream_queue = 4;
            c.upstream_queue_timeout_ms = 20;
        });
        let _held = b.upstream().await.unwrap();
        assert!(matches!(b.upstream().await, Err(Refused::UpstreamBusy { .. })));
    }
}
