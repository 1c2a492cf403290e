//! The Responses stream parser's tests.

use super::*;

fn parse_all(events: &[&str]) -> Result<Vec<UpstreamEvent>, UpstreamError> {
    let mut p = ResponsesParser::default();
    let mut out = VecDeque::new();
    for e in events {
        p.parse(None, e, &mut out)?;
    }
    Ok(out.into_iter().collect())
}

/// Text, reasoning, a function call and a native custom call become the neutral events
/// a chat upstream gives; the terminal event gives the usage and the finish.
#[test]
fn events_become_neutral_events() {
    let got = parse_all(&[
        r#"{"type":"response.created","response":{}}"#,
        r#"{"type":"response.reasoning_text.delta","output_index":0,"delta":"hm"}"#,
        r#"{"type":"response.output_text.delta","output_index":1,"delta":"Hi"}"#,
        r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","call_id":"c1","name":"f"}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":2,"delta":"{}"}"#,
        r#"{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","arguments":"{}"}}"#,
        r#"{"type":"response.output_item.added","output_index":3,"item":{"type":"custom_tool_call","call_id":"c2","name":"sql"}}"#,
        r#"{"type":"response.custom_tool_call_input.delta","output_index":3,"delta":"a \"b\""}"#,
        r#"{"type":"response.output_item.done","output_index":3,"item":{"type":"custom_tool_call"}}"#,
        r#"{"type":"response.something_new","output_index":3}"#,
        r#"{"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":4}}}"#,
    ])
    .unwrap();
    let call = |index, id: Option<&str>, name: Option<&str>, args: Option<&str>| UpstreamEvent::ToolCall {
        index,
        id: id.map(str::to_string),
        name: name.map(str::to_string),
        arguments: args.map(str::to_string),
    };
    assert_eq!(
        got,
        vec![
            UpstreamEvent::Reasoning("hm".into()),
            UpstreamEvent::Text("Hi".into()),
            call(2, Some("c1"), Some("f"), None),
            call(2, None, None, Some("{}")),
            call(3, Some("c2"), Some("sql"), Some("{\"input\":\"")),
            call(3, None, None, Some("a \\\"b\\\"")),
            call(3, None, None, Some("\"}")),
            UpstreamEvent::Usage(Usage { input_tokens: 3, output_tokens: 4, total_tokens: 7, ..Usage::default() }),
            UpstreamEvent::Finish(FinishReason::ToolCalls),
        ]
    );
}

/// llama.cpp's shape: no `output_index`, fragments keyed by `item_id`; two calls in turn.
#[test]
fn calls_are_keyed_by_item_id_without_output_index() {
    let got = parse_all(&[
        r#"{"type":"response.output_item.added","item":{"id":"fc_a","call_id":"call_a","name":"f","type":"function_call","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","delta":"{\"x\":","item_id":"fc_a"}"#,
        r#"{"type":"response.output_item.added","item":{"id":"fc_b","call_id":"call_b","name":"g","type":"function_call","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","delta":"{}","item_id":"fc_b"}"#,
        r#"{"type":"response.function_call_arguments.delta","delta":"1}","item_id":"fc_a"}"#,
        r#"{"type":"response.completed","response":{"usage":{"input_tokens":1,"output_tokens":2}}}"#,
    ])
    .unwrap();
    let args: Vec<(usize, Option<String>)> = got
        .iter()
        .filter_map(|e| match e {
            UpstreamEvent::ToolCall { index, arguments, .. } => Some((*index, arguments.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        args,
        vec![(0, None), (0, Some("{\"x\":".into())), (1, None), (1, Some("{}".into())), (0, Some("1}".into()))]
    );
}

/// A typed call of a hosted tool declared natively is a call of that tool, named by its
/// model-visible name, its arguments the function form's from the finished item; the
/// typed call's progress events are not read; a typed call of a type that is not a
/// hosted tool is ignored; one without its query gives arguments without it.
#[test]
fn typed_calls_of_native_hosted_tools_become_calls() {
    let mut p = ResponsesParser { hosted: vec![("file_search_call", "file_search".into()), ("web_search_call", "web_search".into())], ..ResponsesParser::default() };
    let mut out = VecDeque::new();
    for (event, data) in [
        (None, r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"fs_1","type":"file_search_call","queries":[],"status":"in_progress"}}"#),
        (Some("response.file_search_call.searching"), "{not even json"),
        (None, r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"fs_1","type":"file_search_call","queries":["a \"b\"","c"],"status":"completed"}}"#),
        (None, r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress"}}"#),
        (None, r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","queries":["rust"]}}}"#),
        (None, r#"{"type":"response.output_item.added","output_index":2,"item":{"id":"ci_1","type":"code_interpreter_call"}}"#),
        (None, r#"{"type":"response.output_item.added","output_index":3,"item":{"id":"ws_2","type":"web_search_call","status":"in_progress"}}"#),
        (None, r#"{"type":"response.output_item.done","output_index":3,"item":{"id":"ws_2","type":"web_search_call","action":{"query":null}}}"#),
        (None, r#"{"type":"response.completed","response":{}}"#),
    ] {
        p.parse(event, data, &mut out).unwrap_or_else(|e| panic!("{data}: {e}"));
    }
    let call = |index, id: Option<&str>, name: Option<&str>, args: Option<&str>| UpstreamEvent::ToolCall {
        index,
        id: id.map(str::to_string),
        name: name.map(str::to_string),
        arguments: args.map(str::to_string),
    };
    assert_eq!(
        out.into_iter().collect::<Vec<_>>(),
        vec![
            call(0, Some("fs_1"), Some("file_search"), None),
            call(0, None, None, Some(r#"{"queries":["a \"b\"","c"]}"#)),
            call(1, Some("ws_1"), Some("web_search"), None),
            call(1, None, None, Some(r#"{"query":"rust"}"#)),
            call(3, Some("ws_2"), Some("web_search"), None),
            call(3, None, None, Some("{}")),
            UpstreamEvent::Finish(FinishReason::ToolCalls),
        ]
    );
}

/// An incomplete answer is a length finish; a failed one and an `error` event are the
/// upstream's errors with their messages.
#[test]
fn terminal_and_error_events() {
    let inc = parse_all(&[r#"{"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"}}}"#]).unwrap();
    assert_eq!(inc, vec![UpstreamEvent::Finish(FinishReason::Length)]);
    let failed = parse_all(&[r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}"#]).unwrap_err();
    assert_eq!(failed, UpstreamError::Failed("boom".into()));
    let err = parse_all(&[r#"{"type":"error","code":429,"message":"slow down"}"#]).unwrap_err();
    assert_eq!(err, UpstreamError::Status { status: 429, message: "slow down".into() });
    assert!(matches!(parse_all(&["{not json"]), Err(UpstreamError::Protocol(_))));
}
