//! The queue of background runs on both backends: concurrent claimers (separate pools, as
//! replicas are) each take a different run and no run is claimed twice; a claimed run's
//! heartbeat sees a cancel sent through another pool; a queued run is cancelled at once.

use std::collections::HashSet;
use std::sync::Arc;

use crate::common::TestDb;
use crate::on_both_backends;
use responses_gateway::store::{RunCancel, Store, StoreConfig};

async fn concurrent_claims_take_each_run_once(db: Arc<TestDb>) {
    let a = db.open(&StoreConfig::default()).await.expect("store a");
    let b = db.open(&StoreConfig::default()).await.expect("store b");
    for i in 0..20 {
        let id = format!("resp_q{i:02}");
        assert!(a.enqueue_run("p", &id, "{}".into(), format!(r#"{{"id":"{id}","status":"queued"}}"#), 100, vec![]).await.unwrap());
    }
    let claim_all = |s: responses_gateway::store::sql::SqlStore, owner: &'static str| async move {
        let mut got = Vec::new();
        while let Some(run) = s.claim_run(owner, 30_000).await.expect("claim") {
            got.push(run.response_id);
        }
        got
    };
    let (x, y) = tokio::join!(claim_all(a.clone(), "a"), claim_all(b.clone(), "b"));
    let all: Vec<String> = x.iter().chain(&y).cloned().collect();
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), 20, "every run claimed once: {x:?} {y:?}");
    assert_eq!(unique.len(), 20, "no run claimed twice");
    // A cancel through the other pool reaches the owner's heartbeat.
    let id = &x.first().or(y.first()).cloned().unwrap();
    let owner = if x.contains(id) { "a" } else { "b" };
    assert_eq!(b.cancel_run("p", id).await.unwrap(), RunCancel::Requested);
    assert_eq!(a.beat_run(id, owner, 30_000, None).await.unwrap(), Some(true));
    assert_eq!(a.beat_run(id, "someone-else", 30_000, None).await.unwrap(), None, "only the owner beats");
    assert_eq!(b.cancel_run("other-project", id).await.unwrap(), RunCancel::NotFound);
    // A queued run is cancelled at once, and is then never claimed.
    assert!(a.enqueue_run("p", "resp_late", "{}".into(), r#"{"id":"resp_late","status":"queued"}"#.into(), 100, vec![]).await.unwrap());
    match b.cancel_run("p", "resp_late").await.unwrap() {
        RunCancel::Cancelled(r) => assert_eq!(r["status"], "cancelled"),
        other => panic!("{other:?}"),
    }
    assert!(a.claim_run("a", 30_000).await.unwrap().is_none());
    assert_eq!(a.run_response("p", "resp_late").await.unwrap().unwrap()["status"], "cancelled");
    // The queue's bound.
    for i in 0..2 {
        assert!(a.enqueue_run("p", &format!("resp_b{i}"), "{}".into(), "{}".into(), 2, vec![]).await.unwrap());
    }
    assert!(
        !a.enqueue_run("p", "resp_b2", "{}".into(), "{}".into(), 2, vec!["frame".into()]).await.unwrap(),
        "a full queue refuses"
    );
    assert!(a.events_after("resp_b2", None, 10).await.unwrap().is_empty(), "a refused run writes no event");
}


/// The event log keeps each frame's bytes exactly (quotes, escapes, line breaks, non-ASCII),
/// numbered from the enqueue's first frames on; a claimed run shows `in_progress` and keeps
/// its queued `created_at`.
async fn event_log_frames_round_trip_exactly(db: Arc<TestDb>) {
    let s = db.open(&StoreConfig::default()).await.expect("store");
    let first = vec![
        "event: response.created\ndata: {\"a\":\"q\\\"uote\\\\n\"}\n\n".to_string(),
        "event: response.queued\ndata: {\"t\":\"Zürich — 東京 😀\"}\n\n".to_string(),
    ];
    let snapshot = r#"{"id":"resp_log","status":"queued","created_at":1700000000}"#;
    assert!(s.enqueue_run("p", "resp_log", "{}".into(), snapshot.into(), 100, first.clone()).await.unwrap());
    let more: Vec<String> = (0..300).map(|i| format!("event: response.output_text.delta\ndata: {{\"delta\":\"t{i} '\\t'\"}}\n\n")).collect();
    s.append_events("resp_log", 2, more.clone()).await.unwrap();
    // A batch written again (a retried write) changes nothing.
    s.append_events("resp_log", 2, more[..10].to_vec()).await.unwrap();
    let got = s.events_after("resp_log", None, usize::MAX).await.unwrap();
    let want: Vec<(u64, String)> = (0u64..).zip(first.iter().chain(&more).cloned()).collect();
    assert_eq!(got, want);
    assert_eq!(s.events_after("resp_log", Some(299), 5).await.unwrap(), want[300..].to_vec());
    let run = s.claim_run("w", 30_000).await.unwrap().expect("claimed");
    assert_eq!((run.response_id.as_str(), run.created_at), ("resp_log", Some(1_700_000_000)));
    assert_eq!(s.run_response("p", "resp_log").await.unwrap().unwrap()["status"], "in_progress");
}

on_both_backends!(concurrent_claims_take_each_run_once, event_log_frames_round_trip_exactly);
