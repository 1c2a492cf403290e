//! Odd chat stream shapes from real servers (issue 17): calls told apart by `id` as well as
//! `index`, interleaved fragments, arguments sent as an object. Every call comes back whole,
//! items never overlap, and the history replays valid JSON.

use scripted_upstream::Script;
use serde_json::{json, Value};

use crate::common::{items_without_ids, Checked, Harness};

fn weather() -> Value {
    json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}})
}

/// One raw tool-call fragment at `index`, with `id` and `name` when given.
fn frag(index: usize, id: Option<&str>, name: Option<&str>, arguments: Value) -> Value {
    let mut call = json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    json!({"tool_calls": [call]})
}

/// Asserts that each item is done before the next is added, and that each call's argument
/// deltas add up to its arguments; returns the calls' arguments in output order.
fn sequential_calls(s: &Checked) -> Vec<String> {
    let mut open: Option<u64> = None;
    for e in &s.events {
        match e["type"].as_str().unwrap() {
            "response.output_item.added" => {
                assert_eq!(open, None, "item {} added while {open:?} is open:\n{}", e["output_index"], s.raw);
                open = e["output_index"].as_u64();
            }
            "response.output_item.done" => {
                assert_eq!(open, e["output_index"].as_u64(), "{}", s.raw);
                open = None;
            }
            _ => {}
        }
    }
    let out = s.response["output"].as_array().unwrap();
    out.iter()
        .enumerate()
        .filter(|(_, i)| i["type"] == "function_call")
        .map(|(oi, i)| {
            let deltas: String = s
                .of_type("response.function_call_arguments.delta")
                .iter()
                .filter(|e| e["output_index"] == oi)
                .map(|e| e["delta"].as_str().unwrap())
                .collect();
            let args = i["arguments"].as_str().unwrap().to_string();
            assert_eq!(deltas, args, "deltas add up to the arguments of item {oi}");
            assert_eq!(i["status"], "completed");
            args
        })
        .collect()
}

/// Streams `script`, then runs it again without streaming: the same items both ways.
/// Returns the streamed check and the arguments of its calls.
async fn both_ways(h: &Harness, script: Script, request: &Value) -> (Checked, Vec<String>) {
    h.upstream.push(script.clone());
    let s = h.stream(request.clone()).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    let args = sequential_calls(&s);
    h.upstream.push(script);
    let (status, body) = h.post(request.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(items_without_ids(&body), items_without_ids(&s.response));
    (s, args)
}

/// Ollama streams two whole calls, each with its own `id`, both at `index` 0: two calls,
/// not one whose arguments are `{"city":"Paris"}{"city":"Rome"}`; the next turn replays two
/// calls with valid JSON arguments.
#[tokio::test]
async fn two_calls_under_one_index_are_two_calls() {
    let h = Harness::start().await;
    let script = Script::default().with_deltas([
        frag(0, Some("call_a"), Some("get_weather"), json!(r#"{"city":"Paris"}"#)),
        frag(0, Some("call_b"), Some("get_weather"), json!(r#"{"city":"Rome"}"#)),
    ]);
    let request = json!({"model":"m","input":"weather?","tools":[weather()],"store":true});
    let (s, args) = both_ways(&h, script, &request).await;
    assert_eq!(args, [r#"{"city":"Paris"}"#, r#"{"city":"Rome"}"#]);
    let outputs: Vec<Value> =
        s.response["output"].as_array().unwrap().iter().map(|c| json!({"type":"function_call_output","call_id":c["call_id"],"output":"sunny"})).collect();
    h.upstream.push(Script::text(&["Sunny in both."]));
    let (status, body) = h.post(json!({"model":"m","input":outputs,"tools":[weather()],"previous_response_id":s.response["id"]})).await;
    assert_eq!(status, 200, "{body}");
    let sent = h.upstream.requests().pop().unwrap().body;
    let calls = sent["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap()["tool_calls"].clone();
    let replayed: Vec<Value> = calls.as_array().unwrap().iter().map(|c| serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).expect("JSON")).collect();
    assert_eq!(replayed, [json!({"city":"Paris"}), json!({"city":"Rome"})]);
}

/// Both calls' headers first, then each one's arguments, in turns: every fragment reaches
/// its own call (call 0 is not `{}`), and call 1's item waits until call 0's is done.
#[tokio::test]
async fn interleaved_fragments_reach_their_own_calls() {
    let h = Harness::start().await;
    let request = json!({"model":"m","input":"weather?","tools":[weather()],"store":false});
    // Headers, then all of call 0's arguments, then call 1's.
    let headers_first = Script::text(&["Checking."]).with_deltas([
        frag(0, Some("a"), Some("get_weather"), json!("")),
        frag(1, Some("b"), Some("get_weather"), json!("")),
        frag(0, None, None, json!(r#"{"city":"#)),
        frag(0, None, None, json!(r#""Paris"}"#)),
        frag(1, None, None, json!(r#"{"city":"Rome"}"#)),
    ]);
    let (s, args) = both_ways(&h, headers_first, &request).await;
    assert_eq!(args, [r#"{"city":"Paris"}"#, r#"{"city":"Rome"}"#]);
    assert_eq!(s.response["output"][0]["phase"], "commentary");
    // Pieces alternating between the calls, and a third call whose header comes last.
    let alternating = Script::default().with_deltas([
        frag(0, Some("a"), Some("get_weather"), json!(r#"{"ci"#)),
        frag(1, Some("b"), Some("get_weather"), json!(r#"{"ci"#)),
        frag(0, None, None, json!(r#"ty":"Oslo"#)),
        frag(1, None, None, json!(r#"ty":"Kyiv"#)),
        frag(2, Some("c"), Some("get_weather"), json!(r#"{"city":"Bern"}"#)),
        frag(1, None, None, json!("\"}")),
        frag(0, None, None, json!("\"}")),
    ]);
    let (_, args) = both_ways(&h, alternating, &request).await;
    assert_eq!(args, [r#"{"city":"Oslo"}"#, r#"{"city":"Kyiv"}"#, r#"{"city":"Bern"}"#]);
}

/// A call whose `arguments` are a JSON object, not a string (LiteLLM's `ollama_chat`): its
/// arguments are that object's JSON text, not a 502 `malformed chunk`.
#[tokio::test]
async fn object_arguments_are_serialized() {
    let h = Harness::start().await;
    let script = Script::default().with_deltas([frag(0, Some("x"), Some("get_weather"), json!({"city":"Kyiv"}))]);
    let request = json!({"model":"m","input":"weather?","tools":[weather()],"store":false});
    let (_, args) = both_ways(&h, script, &request).await;
    assert_eq!(args.len(), 1);
    assert_eq!(serde_json::from_str::<Value>(&args[0]).unwrap(), json!({"city":"Kyiv"}));
}

/// Interleaved fragments of a client call and a gateway call: the client call's item, open
/// when the round ends, is done before the gateway call's items are added; the gateway call
/// runs with its whole input and the client call is returned whole.
#[tokio::test]
async fn an_interleaved_client_call_is_done_before_gateway_items() {
    let h = Harness::start().await;
    let script = Script::default().with_deltas([
        frag(0, Some("a"), Some("get_weather"), json!("")),
        frag(1, Some("b"), Some("package_version"), json!("")),
        frag(0, None, None, json!(r#"{"city":"#)),
        frag(1, None, None, json!(r#"{"input":"axum"}"#)),
        frag(0, None, None, json!(r#""Oslo"}"#)),
    ]);
    let request = json!({"model":"m","input":"go","tools":[weather(),{"type":"custom","name":"package_version"}],"store":false});
    h.upstream.push(script);
    let s = h.stream(request).await;
    assert_eq!(s.terminal_type(), "response.completed", "{}", s.raw);
    let out = s.response["output"].as_array().unwrap();
    let types: Vec<&str> = out.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["function_call", "message", "custom_tool_call", "custom_tool_call_output"], "{out:?}");
    assert_eq!(out[0]["arguments"], r#"{"city":"Oslo"}"#);
    assert_eq!(out[2]["input"], "axum");
    assert!(out[3]["output"].as_str().unwrap().starts_with("axum 0.8"), "{}", out[3]);
    // The function call's item is done before anything else is added.
    let items: Vec<(&str, u64)> = s
        .events
        .iter()
        .filter(|e| e["type"] == "response.output_item.added" || e["type"] == "response.output_item.done")
        .map(|e| (e["type"].as_str().unwrap(), e["output_index"].as_u64().unwrap()))
        .collect();
    assert_eq!(&items[..2], [("response.output_item.added", 0), ("response.output_item.done", 0)], "{items:?}");
}

mod interleavings {
    //! Any interleaving of parallel calls' fragments, through the chat adapter and a round:
    //! every call comes back whole, in the model's order, and items never overlap.

    use std::collections::VecDeque;

    use proptest::prelude::*;
    use protocol::events::EventKind;
    use protocol::output::{ItemStatus, OutputItem};
    use protocol::response::Usage;
    use protocol::Response;
    use responses_gateway::events::emitter::Emitter;
    use responses_gateway::events::file_citations::FileSources;
    use responses_gateway::events::Recorder;
    use responses_gateway::executors::Registry;
    use responses_gateway::tools::ToolSet;
    use responses_gateway::turn::round::Round;
    use responses_gateway::upstream::chat::ChatParser;
    use responses_gateway::upstream::sse::SseParser;
    use responses_gateway::upstream::UpstreamEvent;
    use serde_json::json;

    /// Cuts `s` into pieces of the given sizes (in chars, cycling; at least one piece).
    fn cut(s: &str, sizes: &[usize]) -> Vec<String> {
        let chars: Vec<char> = s.chars().collect();
        let mut out = Vec::new();
        let mut at = 0;
        for n in sizes.iter().cycle() {
            if at >= chars.len() {
                break;
            }
            let end = (at + n).min(chars.len());
            out.push(chars[at..end].iter().collect());
            at = end;
        }
        if out.is_empty() {
            out.push(String::new());
        }
        out
    }

    /// Runs the chunks' `delta`s through the chat parser and a round; returns the recorded
    /// events and the round's function calls' final arguments, in output order.
    fn run(deltas: &[serde_json::Value]) -> (Vec<EventKind>, Vec<String>) {
        let registry = Registry::default();
        let tool = json!({"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}});
        let tools = ToolSet::build(vec![tool], None, &registry, &Default::default()).unwrap();
        let recorder = Recorder::default();
        let mut emitter = Emitter::new(Response::default(), Some(Box::new(recorder.clone())));
        let (files, mut usage, mut round) = (FileSources::default(), Usage::default(), Round::new(false, false));
        let mut parser = ChatParser::default();
        let finish = json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]});
        let chunks = deltas.iter().map(|d| json!({"choices":[{"index":0,"delta":d}]})).chain([finish]);
        for chunk in chunks {
            let mut events = VecDeque::new();
            parser.parse(None, &chunk.to_string(), &mut events).unwrap();
            for ev in events {
                round.on_event(ev, &tools, &mut emitter, &mut usage, &files, &[]);
            }
        }
        round.on_event(UpstreamEvent::Usage(Usage::default()), &tools, &mut emitter, &mut usage, &files, &[]);
        round.close_streamed_calls(&tools, &mut emitter);
        round.close_all(&mut emitter, ItemStatus::Completed, &[]);
        let args = emitter
            .response()
            .output
            .iter()
            .filter_map(|i| match i {
                OutputItem::FunctionCall { arguments, .. } => Some(arguments.clone()),
                _ => None,
            })
            .collect();
        drop(emitter);
        (recorder.events().into_iter().map(|(_, k)| k).collect(), args)
    }

    fn check_sequential(events: &[EventKind]) -> Result<(), TestCaseError> {
        let mut open: Option<usize> = None;
        for e in events {
            match e {
                EventKind::OutputItemAdded { output_index, .. } => {
                    prop_assert_eq!(open, None, "item {} added while another is open", output_index);
                    open = Some(*output_index);
                }
                EventKind::OutputItemDone { output_index, .. } => {
                    prop_assert_eq!(open, Some(*output_index));
                    open = None;
                }
                _ => {}
            }
        }
        prop_assert_eq!(open, None);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, .. ProptestConfig::default() })]

        /// Calls at their own indexes, their fragments interleaved in any order.
        #[test]
        fn interleaved_calls_come_back_whole(
            cities in prop::collection::vec("[a-z}\\]{\" ]{0,6}", 1..4),
            sizes in prop::collection::vec(1usize..7, 1..5),
            order in prop::collection::vec(0usize..3, 0..60),
            header_alone in any::<bool>(),
        ) {
            let args: Vec<String> = cities.iter().map(|c| json!({"city": c}).to_string()).collect();
            let mut pieces: Vec<VecDeque<serde_json::Value>> = args
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let mut frags: VecDeque<serde_json::Value> =
                        cut(a, &sizes).into_iter().map(|p| json!({"tool_calls":[{"index":i,"function":{"arguments":p}}]})).collect();
                    let header = json!({"tool_calls":[{"index":i,"id":format!("id{i}"),"type":"function","function":{"name":"get_weather","arguments":""}}]});
                    if header_alone {
                        frags.push_front(header);
                    } else if let Some(first) = frags.front_mut() {
                        first["tool_calls"][0]["id"] = json!(format!("id{i}"));
                        first["tool_calls"][0]["function"]["name"] = json!("get_weather");
                    }
                    frags
                })
                .collect();
            // Interleave: `order` picks the next call (among those with fragments left); then the rest in turn.
            let mut deltas = Vec::new();
            let mut first_seen = Vec::new();
            for pick in order.into_iter().chain(std::iter::repeat_n(0, 1000)) {
                let left: Vec<usize> = (0..pieces.len()).filter(|&i| !pieces[i].is_empty()).collect();
                let Some(&i) = left.get(pick % left.len().max(1)) else { break };
                if !first_seen.contains(&i) {
                    first_seen.push(i);
                }
                deltas.extend(pieces[i].pop_front());
            }
            let (events, got) = run(&deltas);
            check_sequential(&events)?;
            // In the order the calls began.
            let want: Vec<String> = first_seen.iter().map(|&i| args[i].clone()).collect();
            prop_assert_eq!(got, want);
        }

        /// Whole calls one after another under one index, each with its own id (Ollama).
        #[test]
        fn calls_under_one_index_come_back_whole(
            cities in prop::collection::vec("[a-z]{0,6}", 1..4),
            sizes in prop::collection::vec(1usize..7, 1..5),
        ) {
            let args: Vec<String> = cities.iter().map(|c| json!({"city": c}).to_string()).collect();
            let mut deltas = Vec::new();
            for (i, a) in args.iter().enumerate() {
                for (k, p) in cut(a, &sizes).into_iter().enumerate() {
                    let mut call = json!({"index":0,"function":{"arguments":p}});
                    if k == 0 {
                        call["id"] = json!(format!("call_{i}"));
                        call["function"]["name"] = json!("get_weather");
                    }
                    deltas.push(json!({"tool_calls":[call]}));
                }
            }
            let (events, got) = run(&deltas);
            check_sequential(&events)?;
            prop_assert_eq!(got, args);
        }
    }
}
