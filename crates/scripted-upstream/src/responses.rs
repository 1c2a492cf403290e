//! Serializes a [`Script`] as a streamed `POST /v1/responses` answer (the OpenAI Responses
//! streaming events: `event: {type}` and `data: {json with sequence_number}`), for testing
//! the gateway's Responses upstream. Reasoning, text, a refusal and tool calls become output
//! items in that order; the terminal event is `response.completed`, `response.incomplete`
//! (`finish_reason` `length` or `content_filter`) or `response.failed` (`abort`, `error`).

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Value};

use crate::render::{random_alnum, split_chars};
use crate::script::Script;

/// Appends one event and splits it off as its own `Bytes`; numbers it.
struct Events {
    buf: BytesMut,
    out: Vec<Bytes>,
    seq: u64,
}

impl Events {
    fn push(&mut self, mut event: Value) {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("unknown").to_owned();
        event["sequence_number"] = json!(self.seq);
        self.seq += 1;
        self.buf.put_slice(b"event: ");
        self.buf.put_slice(kind.as_bytes());
        self.buf.put_slice(b"\ndata: ");
        self.buf.put_slice(event.to_string().as_bytes());
        self.buf.put_slice(b"\n\n");
        self.out.push(self.buf.split().freeze());
    }

    /// An item added, its deltas, its done events, and the item done.
    fn item(&mut self, index: usize, added: Value, deltas: Vec<Value>, done: Vec<Value>, item_done: Value) {
        self.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
        for d in deltas.into_iter().chain(done) {
            self.push(d);
        }
        self.push(json!({"type": "response.output_item.done", "output_index": index, "item": item_done}));
    }
}

/// Every event of the streamed answer for `model`.
pub(crate) fn stream_events(script: &Script, model: &str) -> Vec<Bytes> {
    let id = format!("resp_{}", random_alnum(24));
    let base = json!({"id": id, "object": "response", "created_at": 0, "status": "in_progress", "model": model, "output": []});
    let mut ev = Events { buf: BytesMut::with_capacity(4096), out: Vec::new(), seq: 0 };
    ev.push(json!({"type": "response.created", "response": base}));
    ev.push(json!({"type": "response.in_progress", "response": base}));
    let mut index = 0;
    let mut output = Vec::new();
    if !script.reasoning_content.is_empty() || !script.summary.is_empty() {
        let item_id = format!("rs_{}", random_alnum(16));
        let text: String = script.reasoning_content.concat();
        // The summary parts first (as OpenAI streams them), then the raw text.
        let mut deltas: Vec<Value> = Vec::new();
        for (si, part) in script.summary.iter().enumerate() {
            let at = json!({"item_id": item_id, "output_index": index, "summary_index": si});
            let with = |kind: &str, extra: Value| {
                let mut e = at.clone();
                e["type"] = json!(kind);
                if let (Some(e), Some(x)) = (e.as_object_mut(), extra.as_object()) {
                    e.extend(x.clone());
                }
                e
            };
            deltas.push(with("response.reasoning_summary_part.added", json!({"part": {"type": "summary_text", "text": ""}})));
            deltas.push(with("response.reasoning_summary_text.delta", json!({"delta": part})));
            deltas.push(with("response.reasoning_summary_text.done", json!({"text": part})));
            deltas.push(with("response.reasoning_summary_part.done", json!({"part": {"type": "summary_text", "text": part}})));
        }
        deltas.extend(
            script
                .reasoning_content
                .iter()
                .map(|d| json!({"type": "response.reasoning_text.delta", "item_id": item_id, "output_index": index, "content_index": 0, "delta": d})),
        );
        let done = if text.is_empty() {
            Vec::new()
        } else {
            vec![json!({"type": "response.reasoning_text.done", "item_id": item_id, "output_index": index, "content_index": 0, "text": text})]
        };
        let summary: Vec<Value> = script.summary.iter().map(|t| json!({"type": "summary_text", "text": t})).collect();
        let content: Vec<Value> = if text.is_empty() { Vec::new() } else { vec![json!({"type": "reasoning_text", "text": text})] };
        let item = json!({"id": item_id, "type": "reasoning", "summary": summary, "encrypted_content": format!("enc_{item_id}"), "content": content});
        ev.item(index, json!({"id": item_id, "type": "reasoning", "summary": []}), deltas, done, item.clone());
        output.push(item);
        index += 1;
    }
    for (pieces, part, delta_type) in [(&script.text, "output_text", "response.output_text"), (&script.refusal, "refusal", "response.refusal")] {
        if pieces.is_empty() {
            continue;
        }
        let item_id = format!("msg_{}", random_alnum(16));
        let text: String = pieces.concat();
        let (empty, full) = if part == "refusal" {
            (json!({"type": "refusal", "refusal": ""}), json!({"type": "refusal", "refusal": text}))
        } else {
            (json!({"type": "output_text", "text": "", "annotations": []}), json!({"type": "output_text", "text": text, "annotations": []}))
        };
        let mut deltas: Vec<Value> =
            vec![json!({"type": "response.content_part.added", "item_id": item_id, "output_index": index, "content_index": 0, "part": empty})];
        deltas.extend(pieces.iter().map(|d| {
            json!({"type": format!("{delta_type}.delta"), "item_id": item_id, "output_index": index, "content_index": 0, "delta": d, "logprobs": []})
        }));
        let key = if part == "refusal" { "refusal" } else { "text" };
        let done = vec![
            json!({"type": format!("{delta_type}.done"), "item_id": item_id, "output_index": index, "content_index": 0, key: text}),
            json!({"type": "response.content_part.done", "item_id": item_id, "output_index": index, "content_index": 0, "part": full}),
        ];
        let item = json!({"id": item_id, "type": "message", "role": "assistant", "status": "completed", "content": [full]});
        ev.item(index, json!({"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}), deltas, done, item.clone());
        output.push(item);
        index += 1;
    }
    for call in &script.tool_calls {
        if let Some(kind) = call.hosted.as_deref() {
            let item = hosted_call(&mut ev, index, kind, &call.arguments);
            output.push(item);
            index += 1;
            continue;
        }
        let item_id = format!("fc_{}", random_alnum(16));
        let call_id = call.id.clone().unwrap_or_else(|| format!("call_{}", random_alnum(16)));
        let pieces: Vec<&str> = split_chars(&call.arguments, call.fragment_chars).into_iter().map(|r| &call.arguments[r]).collect();
        let (kind, field, delta_type) = if call.custom {
            ("custom_tool_call", "input", "response.custom_tool_call_input")
        } else {
            ("function_call", "arguments", "response.function_call_arguments")
        };
        let deltas = if call.arguments_in_done_only {
            Vec::new()
        } else {
            pieces.iter().map(|d| json!({"type": format!("{delta_type}.delta"), "item_id": item_id, "output_index": index, "delta": d})).collect()
        };
        let mut done = json!({"type": format!("{delta_type}.done"), "item_id": item_id, "output_index": index});
        done[field] = json!(call.arguments);
        if !call.custom {
            done["name"] = json!(call.name);
        }
        let added = json!({"id": item_id, "type": kind, "call_id": call_id, "name": call.name, field: "", "status": "in_progress"});
        let item = json!({"id": item_id, "type": kind, "call_id": call_id, "name": call.name, field: call.arguments, "status": "completed"});
        if call.arguments_in_done_only {
            // The finished item as some servers send it: without the arguments.
            let mut bare = item.clone();
            if let Some(o) = bare.as_object_mut() {
                o.remove(field);
            }
            ev.item(index, added, deltas, vec![done], bare);
        } else {
            ev.item(index, added, deltas, vec![done], item.clone());
        }
        output.push(item);
        index += 1;
    }
    let chunks = script.reasoning_content.len() + script.text.len() + script.refusal.len() + script.tool_calls.len();
    let input_tokens = script.usage.and_then(|u| u.prompt_tokens).unwrap_or(10);
    let output_tokens = script.usage.and_then(|u| u.completion_tokens).unwrap_or(chunks as u64);
    let cached = script.usage.and_then(|u| u.cached_tokens).unwrap_or(0);
    let reasoning = script.usage.and_then(|u| u.reasoning_tokens).unwrap_or(0);
    let usage = json!({"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": reasoning}, "total_tokens": input_tokens + output_tokens});
    let mut response = base;
    response["output"] = Value::Array(output);
    response["usage"] = usage;
    if let Some(message) = &script.failed {
        // A failed response with the usage so far; its message in the Response's `error`,
        // or (`failed_beside`) beside a Response whose `error` is null.
        response["status"] = json!("failed");
        let error = json!({"code": "server_error", "message": message});
        let mut event = json!({"type": "response.failed", "response": response});
        if script.failed_beside {
            event["response"]["error"] = Value::Null;
            event["error"] = error;
        } else {
            event["response"]["error"] = error;
        }
        ev.push(event);
        return ev.out;
    }
    let terminal = match script.effective_finish_reason() {
        "length" | "content_filter" => {
            let reason = if script.effective_finish_reason() == "length" { "max_output_tokens" } else { "content_filter" };
            response["status"] = json!("incomplete");
            response["incomplete_details"] = json!({"reason": reason});
            "response.incomplete"
        }
        "abort" | "error" => {
            response["status"] = json!("failed");
            response["error"] = json!({"code": "server_error", "message": "the scripted model failed"});
            "response.failed"
        }
        _ => {
            response["status"] = json!("completed");
            "response.completed"
        }
    };
    ev.push(json!({"type": terminal, "response": response}));
    ev.out
}

/// A typed call of a hosted tool (`file_search` or `web_search`), left for the caller to run:
/// added, its progress events, and done with its queries (from `arguments`) and no results.
fn hosted_call(ev: &mut Events, index: usize, kind: &str, arguments: &str) -> Value {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let (prefix, item_type) = if kind == "web_search" { ("ws", "web_search_call") } else { ("fs", "file_search_call") };
    let item_id = format!("{prefix}_{}", random_alnum(16));
    let (added, item) = if kind == "web_search" {
        let query = args.get("query").cloned().unwrap_or(Value::Null);
        (
            json!({"id": item_id, "type": item_type, "status": "in_progress"}),
            json!({"id": item_id, "type": item_type, "status": "completed", "action": {"type": "search", "query": query, "queries": [query]}}),
        )
    } else {
        let queries = args.get("queries").cloned().unwrap_or(json!([]));
        (
            json!({"id": item_id, "type": item_type, "status": "in_progress", "queries": [], "results": null}),
            json!({"id": item_id, "type": item_type, "status": "completed", "queries": queries, "results": null}),
        )
    };
    let progress = ["in_progress", "searching", "completed"]
        .iter()
        .map(|p| json!({"type": format!("response.{item_type}.{p}"), "item_id": item_id, "output_index": index}))
        .collect();
    ev.item(index, added, progress, Vec::new(), item.clone());
    item
}
