//! The responses one connection keeps in memory (WebSocket mode, 2026 supplement W1.4): the
//! latest response of each lane, so that `previous_response_id` continues from it without
//! the store, also with `store: false`. A lane's new response replaces its previous one; a
//! continuation on the same lane that fails evicts the parent it named; a failed response is
//! not kept. Bounded by the connection's lanes (`websocket.max_streams` + the default lane).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::transcript::Transcript;
use crate::turn::continuation::KeptResponses;

/// A lane's latest response: its id and transcript.
type Latest = (String, Arc<Transcript>);

/// A connection's kept responses, by lane (`None`: the default lane).
#[derive(Debug, Default)]
pub struct ConnectionResponses {
    lanes: Mutex<HashMap<Option<String>, Latest>>,
}

impl ConnectionResponses {
    /// Keeps response `id` (its transcript: what the model saw, with its output) as the
    /// latest of `lane`, in place of the lane's previous one.
    pub fn keep(&self, lane: Option<&str>, id: &str, transcript: Transcript) {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        lanes.insert(lane.map(str::to_string), (id.to_string(), Arc::new(transcript)));
    }

    /// Forgets response `id` where `lane` keeps it (a same-lane continuation of it failed).
    pub fn evict(&self, lane: Option<&str>, id: &str) {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        let key = lane.map(str::to_string);
        if lanes.get(&key).is_some_and(|(kept, _)| kept == id) {
            lanes.remove(&key);
        }
    }

    /// True when response `id` is kept on some lane.
    pub fn contains(&self, id: &str) -> bool {
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner).values().any(|(kept, _)| kept == id)
    }
}

impl KeptResponses for ConnectionResponses {
    fn transcript(&self, id: &str) -> Option<Transcript> {
        let lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        lanes.values().find(|(kept, _)| kept == id).map(|(_, t)| Transcript::clone(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_keeps_its_latest_response_and_a_failed_continuation_evicts_its_parent() {
        let kept = ConnectionResponses::default();
        kept.keep(None, "resp_1", Transcript::default());
        kept.keep(Some("b"), "resp_b", Transcript::default());
        assert!(kept.transcript("resp_1").is_some());
        kept.keep(None, "resp_2", Transcript::default());
        assert!(kept.transcript("resp_1").is_none(), "replaced by the lane's next response");
        assert!(kept.transcript("resp_2").is_some() && kept.contains("resp_b"), "forks read other lanes");
        kept.evict(Some("b"), "resp_2");
        assert!(kept.contains("resp_2"), "another lane's failure leaves the parent");
        kept.evict(None, "resp_2");
        assert!(!kept.contains("resp_2"));
    }
}
