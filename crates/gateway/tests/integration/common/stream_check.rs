//! The reusable stream checker: parses an SSE body and asserts every DESIGN.md stream
//! invariant. Every streamed test goes through it.

use std::collections::HashMap;

use serde_json::Value;

pub struct Checked {
    /// `data` of every event, in order.
    pub events: Vec<Value>,
    /// The terminal event's `response`.
    pub response: Value,
    /// Number of `: keep-alive` comments seen.
    pub keepalives: usize,
    pub raw: String,
}

impl Checked {
    pub fn types(&self) -> Vec<String> {
        self.events.iter().map(|e| e["type"].as_str().unwrap_or("").to_string()).collect()
    }

    pub fn of_type(&self, t: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == t).collect()
    }

    pub fn terminal_type(&self) -> String {
        self.events.last().map(|e| e["type"].as_str().unwrap_or("").to_string()).unwrap_or_default()
    }
}

const TERMINAL: [&str; 3] = ["response.completed", "response.incomplete", "response.failed"];

/// Parses `raw` and checks the invariants; panics with a precise message on a violation.
pub fn check_stream(raw: &str) -> Checked {
    let mut events = Vec::new();
    let mut keepalives = 0;
    for frame in raw.split("\n\n").filter(|f| !f.trim().is_empty()) {
        let mut name = None;
        let mut data = String::new();
        for line in frame.lines() {
            if line.starts_with(':') {
                keepalives += 1;
            } else if let Some(n) = line.strip_prefix("event: ") {
                name = Some(n.to_string());
            } else if let Some(d) = line.strip_prefix("data: ") {
                data.push_str(d);
            } else {
                panic!("unexpected SSE line {line:?}");
            }
        }
        if data.is_empty() {
            assert!(name.is_none(), "event without data in {frame:?}");
            continue;
        }
        let v: Value = serde_json::from_str(&data).unwrap_or_else(|e| panic!("bad JSON {e}: {data}"));
        let name = name.unwrap_or_else(|| panic!("data without event name: {data}"));
        assert_eq!(v["type"], name.as_str(), "data.type must equal the event name");
        events.push(v);
    }
    assert!(events.len() >= 3, "too few events: {raw}");
    assert_eq!(events[0]["type"], "response.created", "first event");
    assert_eq!(events[1]["type"], "response.in_progress", "second event");
    let resp_id = events[0]["response"]["id"].clone();
    assert!(resp_id.as_str().is_some_and(|s| s.starts_with("resp_")), "response id {resp_id}");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"].as_u64(), Some(i as u64), "sequence_number contiguous from 0 at {i}: {e}");
    }
    let terminals: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| TERMINAL.contains(&e["type"].as_str().unwrap_or("")))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(terminals, vec![events.len() - 1], "exactly one terminal event, and it is last");
    // item bookkeeping
    let mut added: Vec<(String, String)> = Vec::new(); // (id, type) by output_index
    let mut done: HashMap<usize, Value> = HashMap::new();
    let mut parts: HashMap<(usize, u64), String> = HashMap::new(); // text so far by (output_index, content_index)
    let mut args: HashMap<usize, String> = HashMap::new();
    for e in &events {
        let t = e["type"].as_str().unwrap_or("");
        if t.starts_with("response.") && e.get("response").is_some() {
            assert_eq!(e["response"]["id"], resp_id, "response.id stable in {t}");
        }
        let oi = e["output_index"].as_u64().map(|x| x as usize);
        match t {
            "response.output_item.added" => {
                let oi = oi.expect("output_index");
                assert_eq!(oi, added.len(), "output_index unique and increasing");
                let id = e["item"]["id"].as_str().expect("item id").to_string();
                assert!(!id.is_empty());
                added.push((id, e["item"]["type"].as_str().unwrap_or("").to_string()));
            }
            "response.output_item.done" => {
                let oi = oi.expect("output_index");
                let (id, ty) = added.get(oi).unwrap_or_else(|| panic!("done before added: {e}"));
                assert_eq!(e["item"]["id"].as_str(), Some(id.as_str()), "item id stable");
                assert_eq!(e["item"]["type"].as_str(), Some(ty.as_str()), "item type stable");
                assert!(done.insert(oi, e["item"].clone()).is_none(), "item done twice");
            }
            "response.content_part.added" => {
                let oi = oi.expect("output_index");
                assert!(oi < added.len() && !done.contains_key(&oi), "part on an open item");
                assert_eq!(e["item_id"].as_str(), Some(added[oi].0.as_str()));
                parts.insert((oi, e["content_index"].as_u64().unwrap_or(0)), String::new());
            }
            "response.output_text.delta" | "response.refusal.delta" | "response.reasoning_text.delta" => {
                let oi = oi.expect("output_index");
                let want = if t.contains("reasoning") { "reasoning" } else { "message" };
                assert_eq!(added.get(oi).map(|a| a.1.as_str()), Some(want), "{t} on a {want}");
                assert!(!done.contains_key(&oi), "delta after done");
                assert_eq!(e["item_id"].as_str(), Some(added[oi].0.as_str()));
                let key = (oi, e["content_index"].as_u64().unwrap_or(0));
                let text = parts.get_mut(&key).unwrap_or_else(|| panic!("content_part.added must precede deltas: {e}"));
                text.push_str(e["delta"].as_str().expect("delta"));
            }
            "response.output_text.done" | "response.reasoning_text.done" | "response.refusal.done" => {
                let oi = oi.expect("output_index");
                let key = (oi, e["content_index"].as_u64().unwrap_or(0));
                let full = if t.contains("refusal") { &e["refusal"] } else { &e["text"] };
                assert_eq!(parts.get(&key).map(String::as_str), full.as_str(), "deltas concatenate to the {t} text");
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let oi = oi.expect("output_index");
                let want = if t.contains("function") { "function_call" } else { "custom_tool_call" };
                assert_eq!(added.get(oi).map(|a| a.1.as_str()), Some(want), "{t} on a {want}");
                assert!(!done.contains_key(&oi), "delta after done");
                args.entry(oi).or_default().push_str(e["delta"].as_str().expect("delta"));
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let oi = oi.expect("output_index");
                let key = if t.contains("function") { "arguments" } else { "input" };
                let full = e[key].as_str().expect("full text");
                let streamed = args.get(&oi).cloned().unwrap_or_default();
                assert_eq!(streamed, full, "the streamed deltas add up to the {key}");
            }
            _ => {}
        }
    }
    for (oi, (id, _)) in added.iter().enumerate() {
        assert!(done.contains_key(&oi), "item {id} at {oi} added but never done before the terminal event");
    }
    let last = events.last().cloned().unwrap_or_default();
    let response = last["response"].clone();
    let output = response["output"].as_array().cloned().unwrap_or_default();
    assert_eq!(output.len(), added.len(), "terminal output has every added item");
    for (oi, item) in output.iter().enumerate() {
        assert_eq!(Some(item), done.get(&oi), "terminal output item {oi} equals its output_item.done");
    }
    assert!(response["usage"].is_object() || last["type"] == "response.failed", "usage on the terminal response");
    let status = response["status"].as_str().unwrap_or("");
    let expect = match last["type"].as_str().unwrap_or("") {
        "response.completed" => "completed",
        "response.incomplete" => "incomplete",
        _ => "failed",
    };
    assert_eq!(status, expect, "terminal status");
    Checked { events, response, keepalives, raw: raw.to_string() }
}
