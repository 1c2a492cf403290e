//! A WebSocket connection's lanes (2026 supplement W1.5): which lane has a response
//! running, which creates wait, and the connection's bounds (`websocket.max_in_flight`,
//! `max_streams`, `max_queued`). A lane runs its creates FIFO; lanes run at once.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use protocol::CreateResponse;
use tokio::sync::mpsc::UnboundedSender;

use super::messages::Rejected;
use crate::error::{ErrorKind, GatewayError};

/// A `response.create` waiting for its lane or a free slot.
pub struct Create {
    pub stream_id: Option<String>,
    pub generate: bool,
    pub body: Bytes,
    pub parsed: Box<CreateResponse>,
    /// Set once its terminal event has gone out (given when it starts).
    pub ended: Arc<AtomicBool>,
    /// Its room in the body budget (`limits.body_memory_bytes`), held while it waits and
    /// until its turn has started.
    pub room: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// The connection's lanes: which is running, what waits, and the bounds.
pub struct Lanes {
    /// Lanes with a response running, and whether its terminal event has gone out (the
    /// client may then send the next create before the response's end is seen here).
    busy: HashMap<Option<String>, Arc<AtomicBool>>,
    /// Creates waiting, in arrival order (a lane's creates stay in their order).
    waiting: VecDeque<Create>,
    /// Named lanes used so far (never freed: W1.5).
    named: HashSet<String>,
    pub in_flight: usize,
    max_in_flight: usize,
    max_streams: usize,
    max_queued: usize,
}

impl Lanes {
    pub fn new(c: &crate::config::websocket::WebSocketConfig) -> Lanes {
        Lanes {
            busy: HashMap::new(),
            waiting: VecDeque::new(),
            named: HashSet::new(),
            in_flight: 0,
            max_in_flight: c.max_in_flight.max(1),
            max_streams: c.max_streams,
            max_queued: c.max_queued,
        }
    }

    /// A new create: `Some` to start now, `None` when it waits; errors (with its lane):
    /// a new named lane beyond `max_streams`, the default lane already taken, the waiting
    /// creates at `max_queued`.
    pub fn admit(&mut self, create: Create) -> Result<Option<Create>, Box<Rejected>> {
        let lane = create.stream_id.clone();
        match &lane {
            Some(name) if !self.named.contains(name) => {
                if self.named.len() >= self.max_streams {
                    let e = GatewayError::bad_request(
                        Some("stream_id".to_string()),
                        format!("This connection has used {} stream ids (websocket.max_streams); open a new connection for more.", self.max_streams),
                    )
                    .with_code("websocket_stream_limit_reached");
                    return Err(Box::new(Rejected { error: e, stream_id: lane }));
                }
                self.named.insert(name.clone());
            }
            Some(_) => {}
            None => {
                let running = self.busy.get(&None).is_some_and(|ended| !ended.load(Ordering::Acquire));
                if running || self.waiting.iter().any(|c| c.stream_id.is_none()) {
                    let e = GatewayError::new(
                        ErrorKind::Conflict,
                        protocol::ApiError::invalid(
                            None,
                            "A response is already in progress on this connection's default stream: wait for its terminal event, or give each concurrent response.create a stream_id.",
                        )
                        .with_code("response_in_progress"),
                    );
                    return Err(Box::new(Rejected { error: e, stream_id: None }));
                }
            }
        }
        // A response whose terminal event has gone out but whose end is not seen here yet
        // may be this create's `previous_response_id`: the create waits for that end (then
        // the response is kept), which comes at once.
        let ending = self.busy.values().any(|ended| ended.load(Ordering::Acquire));
        if !ending && !self.busy.contains_key(&lane) && self.in_flight < self.max_in_flight {
            self.start(&create);
            return Ok(Some(create));
        }
        if self.waiting.len() >= self.max_queued {
            let e = GatewayError::rate_limited(format!(
                "{} responses already wait on this connection (websocket.max_queued); send more once some have ended.",
                self.max_queued
            ))
            .with_code("rate_limit_exceeded");
            return Err(Box::new(Rejected { error: e, stream_id: lane }));
        }
        self.waiting.push_back(create);
        Ok(None)
    }

    fn start(&mut self, create: &Create) {
        self.busy.insert(create.stream_id.clone(), create.ended.clone());
        self.in_flight += 1;
    }

    /// A response of `lane` ended: the creates that can start now.
    pub fn finished(&mut self, lane: Option<String>) -> Vec<Create> {
        self.busy.remove(&lane);
        self.in_flight = self.in_flight.saturating_sub(1);
        let mut ready = Vec::new();
        let mut i = 0;
        let ending = self.busy.values().any(|ended| ended.load(Ordering::Acquire));
        while !ending && i < self.waiting.len() && self.in_flight < self.max_in_flight {
            let free = !self.busy.contains_key(&self.waiting[i].stream_id);
            match free.then(|| self.waiting.remove(i)).flatten() {
                Some(create) => {
                    self.start(&create);
                    ready.push(create);
                }
                None => i += 1,
            }
        }
        ready
    }

    /// Answers every waiting create with `e` (the connection takes no more).
    pub fn drop_waiting(&mut self, out: &UnboundedSender<Bytes>, e: &GatewayError) {
        for create in self.waiting.drain(..) {
            let _ = out.send(super::messages::error_event(e, create.stream_id.as_deref()));
        }
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    fn create(lane: Option<&str>) -> Create {
        let parsed = crate::turn::parse_request(br#"{"model":"m"}"#).expect("body");
        Create { stream_id: lane.map(str::to_string), generate: true, body: Bytes::new(), parsed: Box::new(parsed), ended: Arc::default(), room: None }
    }

    fn config(max_in_flight: usize) -> crate::config::websocket::WebSocketConfig {
        crate::config::websocket::WebSocketConfig { max_in_flight, max_streams: 2, max_queued: 3, ..Default::default() }
    }

    #[test]
    fn lanes_run_fifo_at_once_up_to_the_bound() {
        let mut lanes = Lanes::new(&config(2));
        let a1 = lanes.admit(create(Some("a"))).expect("a1").expect("starts");
        assert!(lanes.admit(create(Some("a"))).expect("a2").is_none(), "a2 waits behind a1");
        assert!(lanes.admit(create(Some("b"))).expect("b1").is_some(), "another lane runs at once");
        assert!(lanes.admit(create(None)).expect("default").is_none(), "in_flight full: it waits");
        let code = |r: Result<Option<Create>, Box<Rejected>>| r.err().and_then(|e| e.error.error.code).unwrap_or_default();
        assert_eq!(code(lanes.admit(create(Some("c")))), "websocket_stream_limit_reached");
        assert_eq!(code(lanes.admit(create(None))), "response_in_progress", "a default create already waits");
        // a1 ends: a2 is next on its lane (FIFO), before the default one.
        let ready = lanes.finished(a1.stream_id.clone());
        assert_eq!(ready.iter().map(|c| c.stream_id.clone()).collect::<Vec<_>>(), vec![Some("a".to_string())]);
    }

    #[test]
    fn a_create_after_a_terminal_event_waits_for_that_response_to_end() {
        let mut lanes = Lanes::new(&config(4));
        let first = lanes.admit(create(None)).expect("first").expect("starts");
        first.ended.store(true, Ordering::Release);
        // Not refused (its terminal event has gone out), but not started before its end.
        assert!(lanes.admit(create(None)).expect("next").is_none());
        let ready = lanes.finished(None);
        assert_eq!(ready.len(), 1);
        assert_eq!(lanes.in_flight, 1);
    }
}
