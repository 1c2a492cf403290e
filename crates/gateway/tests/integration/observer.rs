//! The turn observer (the seam for metrics and traces) is told of each round, the first
//! token, each gateway tool call and the end of the turn, in order, with what happened.

use std::sync::{Arc, Mutex};

use responses_gateway::turn::observer::{RoundReport, ToolReport, TurnInfo, TurnObserver, TurnReport};
use scripted_upstream::Script;
use serde_json::json;

use crate::common::{Harness, TestDb};

/// Records what it is told, one line per call.
#[derive(Debug, Default)]
struct Log(Mutex<Vec<String>>);

impl Log {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl TurnObserver for Log {
    fn turn_started(&self, t: &TurnInfo) {
        self.push(format!("turn_started streamed={}", t.streamed));
    }
    fn round_started(&self, t: &TurnInfo, round: usize) {
        self.push(format!("round_started {} {round}", t.model));
    }
    fn first_token(&self, _t: &TurnInfo, _after: std::time::Duration) {
        self.push("first_token".into());
    }
    fn round_done(&self, _t: &TurnInfo, r: &RoundReport) {
        self.push(format!("round_done {} out={} error={:?}", r.round, r.usage.output_tokens, r.error));
    }
    fn tool_done(&self, _t: &TurnInfo, r: &ToolReport) {
        self.push(format!("tool_done {} {} {:?}", r.tool_type, r.executor, r.outcome));
    }
    fn turn_done(&self, t: &TurnInfo, r: &TurnReport) {
        assert!(t.response_id.starts_with("resp_"));
        assert!(r.upstream_time + r.tool_time <= r.duration, "{r:?}");
        assert_eq!(r.overhead(), r.duration - r.upstream_time - r.tool_time);
        self.push(format!("turn_done {:?} rounds={} out={}", r.status, r.rounds, r.usage.output_tokens));
    }
}

async fn observed() -> (Harness, Arc<Log>) {
    let log = Arc::new(Log::default());
    let observer = log.clone();
    let h = Harness::start_state(Arc::new(TestDb::sqlite()), |_| {}, move |state| state.runner.observer = observer).await;
    (h, log)
}

#[tokio::test]
async fn observer_is_told_each_round_tool_call_and_the_end() {
    let (h, log) = observed().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"axum"}"#).usage(10, 3));
    h.upstream.push(Script::text(&["axum ", "is installed."]).usage(12, 4));
    let (status, body) = h.post(json!({"model":"m","input":"axum version?","tools":[{"type":"custom","name":"package_version"}]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        log.lines(),
        [
            "turn_started streamed=false",
            "round_started m 0",
            "first_token",
            "round_done 0 out=3 error=None",
            "tool_done custom package_version Ok",
            "round_started m 1",
            "round_done 1 out=4 error=None",
            "turn_done Completed rounds=2 out=7",
        ]
    );
}

#[tokio::test]
async fn observer_is_told_of_a_failed_round_and_a_failed_tool() {
    let (h, log) = observed().await;
    h.upstream.push(Script::tool_call("package_version", r#"{"input":"no-such-crate"}"#));
    h.upstream.push(Script::http_error(500, r#"{"error":{"message":"boom"}}"#));
    let s = h.stream(json!({"model":"m","input":"x","stream":true,"tools":[{"type":"custom","name":"package_version"}]})).await;
    assert_eq!(s.response["status"], "failed", "{}", s.response);
    let lines = log.lines();
    assert_eq!(lines[0], "turn_started streamed=true", "{lines:?}");
    assert_eq!(lines[4], "tool_done custom package_version Error", "{lines:?}");
    assert_eq!(lines[6], "round_done 1 out=0 error=Some(\"upstream_error\")", "{lines:?}");
    // The failed turn's usage is what its rounds spent (issue 30): the first round's 4.
    assert_eq!(lines.last().map(String::as_str), Some("turn_done Failed rounds=2 out=4"), "{lines:?}");
}
