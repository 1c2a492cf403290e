//! Serializes a [`Script`] into the chat-completions wire format (llama.cpp / vLLM shape).
//!
//! A streamed answer is rendered up front into one buffer, split into one `Bytes`
//! per SSE event (they share the allocation), so sending it costs no serialization.

use std::ops::Range;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};
use rand::distr::{Alphanumeric, SampleString};
use serde::Serialize;

use crate::script::{Script, ToolCallScript};

/// The model id reported when the request names none.
pub const DEFAULT_MODEL: &str = "scripted-model";
const FINGERPRINT: &str = "scripted";
/// The cut-off event sent by [`crate::Fault::Malformed`].
pub(crate) const MALFORMED_EVENT: &[u8] = b"data: {\"choices\":[{\"delta\":\n\n";
const DONE_EVENT: &[u8] = b"data: [DONE]\n\n";

/// What of the request shapes the answer.
pub(crate) struct RequestInfo {
    pub model: String,
    pub include_usage: bool,
}

/// `n` random ASCII letters and digits.
pub(crate) fn random_alnum(n: usize) -> String {
    Alphanumeric.sample_string(&mut rand::rng(), n)
}

/// A tool call with its final id, arguments and fragment boundaries.
struct PreparedCall<'a> {
    id: String,
    name: &'a str,
    arguments: String,
    pieces: Vec<Range<usize>>,
    /// A native custom tool call (`arguments` is the raw input).
    custom: bool,
}

/// Per-answer values shared by every chunk.
struct Prepared<'a> {
    id: String,
    created: u64,
    model: &'a str,
    calls: Vec<PreparedCall<'a>>,
    usage: UsageOut,
    timings: Timings,
}

fn prepare<'a>(script: &'a Script, req: &'a RequestInfo) -> Prepared<'a> {
    let calls: Vec<PreparedCall<'a>> = script.tool_calls.iter().map(prepare_call).collect();
    let chunks = script.reasoning_content.len()
        + script.text.len()
        + script.refusal.len()
        + calls.iter().map(|c| c.pieces.len()).sum::<usize>();
    let prompt = script.usage.and_then(|u| u.prompt_tokens).unwrap_or(10);
    let completion = script.usage.and_then(|u| u.completion_tokens).unwrap_or(chunks as u64);
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let per_token_ms = script.token_delay_ms as f64;
    Prepared {
        id: format!("chatcmpl-{}", random_alnum(32)),
        created,
        model: &req.model,
        calls,
        usage: UsageOut {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            prompt_tokens_details: PromptDetails { cached_tokens: script.usage.and_then(|u| u.cached_tokens).unwrap_or(0) },
            // Only when scripted: llama.cpp sends none.
            completion_tokens_details: script.usage.and_then(|u| u.reasoning_tokens).map(|reasoning_tokens| CompletionDetails { reasoning_tokens }),
        },
        timings: Timings {
            cache_n: 0,
            prompt_n: prompt,
            prompt_ms: prompt as f64 * 0.1,
            prompt_per_token_ms: 0.1,
            prompt_per_second: 10_000.0,
            predicted_n: completion,
            predicted_ms: per_token_ms * completion as f64,
            predicted_per_token_ms: per_token_ms,
            predicted_per_second: if per_token_ms > 0.0 { 1000.0 / per_token_ms } else { 0.0 },
        },
    }
}

fn prepare_call(call: &ToolCallScript) -> PreparedCall<'_> {
    let arguments = if call.pretty {
        pretty_json(&call.arguments).unwrap_or_else(|| call.arguments.clone())
    } else {
        call.arguments.clone()
    };
    let pieces = split_chars(&arguments, call.fragment_chars);
    PreparedCall {
        id: call.id.clone().unwrap_or_else(|| random_alnum(32)),
        name: &call.name,
        arguments,
        pieces,
        custom: call.custom,
    }
}

/// Byte ranges of consecutive pieces of `n` characters each; at least one piece.
pub(crate) fn split_chars(s: &str, n: usize) -> Vec<Range<usize>> {
    if n == 0 || s.is_empty() {
        #[allow(clippy::single_range_in_vec_init)] // one piece, not the range's elements
        return vec![0..s.len()];
    }
    let mut out = Vec::with_capacity(s.len() / n + 1);
    let mut start = 0;
    for (count, (at, _)) in s.char_indices().enumerate() {
        if count > 0 && count % n == 0 {
            out.push(start..at);
            start = at;
        }
    }
    out.push(start..s.len());
    out
}

/// Re-indents valid JSON text with newlines and two-space indentation, keeping key
/// order and string contents exactly. `None` when `src` is not valid JSON.
pub(crate) fn pretty_json(src: &str) -> Option<String> {
    serde_json::from_str::<serde::de::IgnoredAny>(src).ok()?;
    let mut out = String::with_capacity(src.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = src.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', depth * 2));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                while chars.next_if(|n| matches!(n, ' ' | '\t' | '\n' | '\r')).is_some() {}
                out.push(c);
                if chars.next_if_eq(&close).is_some() {
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            ' ' | '\t' | '\n' | '\r' => {}
            _ => out.push(c),
        }
    }
    Some(out)
}

// ---- wire types (field order is the order on the wire) ----

#[derive(Serialize)]
struct ChunkOut<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    system_fingerprint: &'static str,
    choices: &'a [ChoiceDeltaOut<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a UsageOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timings: Option<&'a Timings>,
}

/// A chunk whose delta is a script's raw JSON.
#[derive(Serialize)]
struct RawChunkOut<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: &'a [RawChoiceOut<'a>],
}

#[derive(Serialize)]
struct RawChoiceOut<'a> {
    index: u32,
    delta: &'a serde_json::Value,
    finish_reason: Option<&'a str>,
}

#[derive(Serialize)]
struct ChoiceDeltaOut<'a> {
    index: u32,
    delta: DeltaOut<'a>,
    logprobs: (),
    finish_reason: Option<&'a str>,
}

#[derive(Serialize, Default)]
struct DeltaOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    /// Absent, `null` (`Some(None)`) or a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[ToolCallDeltaOut<'a>; 1]>,
}

#[derive(Serialize)]
struct ToolCallDeltaOut<'a> {
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function: Option<FunctionDeltaOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom: Option<CustomDeltaOut<'a>>,
}

#[derive(Serialize)]
struct CustomDeltaOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    input: &'a str,
}

#[derive(Serialize)]
struct FunctionDeltaOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    arguments: &'a str,
}

#[derive(Serialize)]
struct UsageOut {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: PromptDetails,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Serialize)]
struct PromptDetails {
    cached_tokens: u64,
}

#[derive(Serialize)]
struct CompletionDetails {
    reasoning_tokens: u64,
}

/// llama.cpp's extra top-level performance object.
#[derive(Serialize)]
struct Timings {
    cache_n: u64,
    prompt_n: u64,
    prompt_ms: f64,
    prompt_per_token_ms: f64,
    prompt_per_second: f64,
    predicted_n: u64,
    predicted_ms: f64,
    predicted_per_token_ms: f64,
    predicted_per_second: f64,
}

#[derive(Serialize)]
struct CompletionOut<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    system_fingerprint: &'static str,
    choices: [ChoiceMessageOut<'a>; 1],
    usage: &'a UsageOut,
    timings: &'a Timings,
}

#[derive(Serialize)]
struct ChoiceMessageOut<'a> {
    index: u32,
    message: MessageOut<'a>,
    logprobs: (),
    finish_reason: &'a str,
}

#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'static str,
    content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCallOut<'a>>,
}

#[derive(Serialize)]
struct ToolCallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    function: Option<FunctionOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom: Option<CustomOut<'a>>,
}

#[derive(Serialize)]
struct CustomOut<'a> {
    name: &'a str,
    input: &'a str,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// Appends one `data: {json}\n\n` event to `buf` and splits it off as its own `Bytes`.
fn push_event<T: Serialize>(
    buf: &mut BytesMut,
    out: &mut Vec<Bytes>,
    value: &T,
) -> Result<(), serde_json::Error> {
    buf.put_slice(b"data: ");
    serde_json::to_writer(buf.writer(), value)?;
    buf.put_slice(b"\n\n");
    out.push(buf.split().freeze());
    Ok(())
}

/// Every SSE event of a streamed answer, `data: [DONE]` last.
pub(crate) fn stream_events(
    script: &Script,
    req: &RequestInfo,
) -> Result<Vec<Bytes>, serde_json::Error> {
    let p = prepare(script, req);
    let n_events = 3
        + script.reasoning_content.len()
        + script.text.len()
        + script.refusal.len()
        + p.calls.iter().map(|c| c.pieces.len()).sum::<usize>()
        + usize::from(req.include_usage);
    let payload: usize = script.reasoning_content.iter().chain(&script.text).chain(&script.refusal).map(String::len).sum::<usize>()
        + p.calls.iter().map(|c| c.arguments.len() + c.name.len() + 64).sum::<usize>();
    let mut buf = BytesMut::with_capacity(n_events * (200 + p.model.len()) + payload * 2 + 512);
    let mut out = Vec::with_capacity(n_events);

    let event = |buf: &mut BytesMut, out: &mut Vec<Bytes>, delta: DeltaOut<'_>, finish| {
        let choices = [ChoiceDeltaOut { index: 0, delta, logprobs: (), finish_reason: finish }];
        let chunk = ChunkOut {
            id: &p.id,
            object: "chat.completion.chunk",
            created: p.created,
            model: p.model,
            system_fingerprint: FINGERPRINT,
            choices: &choices,
            usage: None,
            timings: None,
        };
        push_event(buf, out, &chunk)
    };

    let role = DeltaOut { role: Some("assistant"), content: Some(None), ..DeltaOut::default() };
    event(&mut buf, &mut out, role, None)?;
    for piece in &script.reasoning_content {
        let delta = if script.reasoning_in_reasoning() {
            DeltaOut { reasoning: Some(piece), ..DeltaOut::default() }
        } else {
            DeltaOut { reasoning_content: Some(piece), ..DeltaOut::default() }
        };
        event(&mut buf, &mut out, delta, None)?;
    }
    for piece in &script.text {
        let delta = DeltaOut { content: Some(Some(piece)), ..DeltaOut::default() };
        event(&mut buf, &mut out, delta, None)?;
    }
    for piece in &script.refusal {
        let delta = DeltaOut { refusal: Some(piece), ..DeltaOut::default() };
        event(&mut buf, &mut out, delta, None)?;
    }
    for (index, call) in p.calls.iter().enumerate() {
        for (k, range) in call.pieces.iter().enumerate() {
            let first = k == 0;
            let piece = &call.arguments[range.clone()];
            let name = first.then_some(call.name);
            let tool = ToolCallDeltaOut {
                index,
                id: first.then_some(call.id.as_str()),
                kind: first.then_some(if call.custom { "custom" } else { "function" }),
                function: (!call.custom).then_some(FunctionDeltaOut { name, arguments: piece }),
                custom: call.custom.then_some(CustomDeltaOut { name, input: piece }),
            };
            let delta = DeltaOut {
                content: first.then_some(Some("")),
                tool_calls: Some([tool]),
                ..DeltaOut::default()
            };
            event(&mut buf, &mut out, delta, None)?;
        }
    }
    for raw in &script.deltas {
        let choices = [RawChoiceOut { index: 0, delta: raw, finish_reason: None }];
        let chunk = RawChunkOut { id: &p.id, object: "chat.completion.chunk", created: p.created, model: p.model, choices: &choices };
        push_event(&mut buf, &mut out, &chunk)?;
    }
    event(&mut buf, &mut out, DeltaOut::default(), Some(script.effective_finish_reason()))?;
    if req.include_usage {
        let chunk = ChunkOut {
            id: &p.id,
            object: "chat.completion.chunk",
            created: p.created,
            model: p.model,
            system_fingerprint: FINGERPRINT,
            choices: &[],
            usage: Some(&p.usage),
            timings: Some(&p.timings),
        };
        push_event(&mut buf, &mut out, &chunk)?;
    }
    buf.put_slice(DONE_EVENT);
    out.push(buf.split().freeze());
    Ok(out)
}

/// How many chunks a streamed answer would carry before `[DONE]` (usage chunk excluded).
pub(crate) fn stream_chunk_count(script: &Script) -> usize {
    let fragments: usize = script
        .tool_calls
        .iter()
        .map(|c| {
            let args = if c.pretty { pretty_json(&c.arguments) } else { None };
            split_chars(args.as_deref().unwrap_or(&c.arguments), c.fragment_chars).len()
        })
        .sum();
    2 + script.reasoning_content.len() + script.text.len() + script.refusal.len() + fragments + script.deltas.len()
}

/// The JSON body of a non-streaming `chat.completion` answer.
pub(crate) fn completion_body(script: &Script, req: &RequestInfo) -> Result<Vec<u8>, serde_json::Error> {
    let p = prepare(script, req);
    let reasoning = (!script.reasoning_content.is_empty()).then(|| script.reasoning_content.concat());
    let tool_calls = p
        .calls
        .iter()
        .map(|c| ToolCallOut {
            id: &c.id,
            kind: if c.custom { "custom" } else { "function" },
            function: (!c.custom).then_some(FunctionOut { name: c.name, arguments: &c.arguments }),
            custom: c.custom.then_some(CustomOut { name: c.name, input: &c.arguments }),
        })
        .collect();
    let body = CompletionOut {
        id: &p.id,
        object: "chat.completion",
        created: p.created,
        model: p.model,
        system_fingerprint: FINGERPRINT,
        choices: [ChoiceMessageOut {
            index: 0,
            message: MessageOut {
                role: "assistant",
                content: script.text.concat(),
                reasoning_content: reasoning.clone().filter(|_| !script.reasoning_in_reasoning()),
                reasoning: reasoning.filter(|_| script.reasoning_in_reasoning()),
                refusal: (!script.refusal.is_empty()).then(|| script.refusal.concat()),
                tool_calls,
            },
            logprobs: (),
            finish_reason: script.effective_finish_reason(),
        }],
        usage: &p.usage,
        timings: &p.timings,
    };
    serde_json::to_vec(&body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn split_on_char_boundaries() {
        let s = "{\"q\":\"héllo wörld ✓\"}";
        let pieces = split_chars(s, 4);
        let joined: String = pieces.iter().map(|r| &s[r.clone()]).collect();
        assert_eq!(joined, s);
        assert!(pieces.iter().all(|r| s[r.clone()].chars().count() <= 4));
        assert_eq!(pieces[0], 0..4);
        assert_eq!(split_chars("", 8), vec![0..0]);
        assert_eq!(split_chars("abc", 0), vec![0..3]);
    }

    #[test]
    fn pretty_keeps_order_and_strings() {
        let src = r#"{"z":1, "a":{"s":"x, {y}: \"q\"","e":[],"o":{ }},"l":[1,2]}"#;
        let pretty = pretty_json(src).unwrap();
        assert_eq!(
            pretty,
            "{\n  \"z\": 1,\n  \"a\": {\n    \"s\": \"x, {y}: \\\"q\\\"\",\n    \"e\": [],\n    \"o\": {}\n  },\n  \"l\": [\n    1,\n    2\n  ]\n}"
        );
        let a: Value = serde_json::from_str(src).unwrap();
        let b: Value = serde_json::from_str(&pretty).unwrap();
        assert_eq!(a, b);
        assert_eq!(pretty_json("{\"a\":"), None);
    }

    #[test]
    fn chunk_count_matches_events() {
        let req = RequestInfo { model: "m".into(), include_usage: false };
        let s = Script::text(&["a", "b"])
            .reasoning(&["r"])
            .with_tool(ToolCallScript::new("f", "{\"k\":\"vvvvvvvv\"}").pretty(true).fragment_chars(5))
            .with_deltas([serde_json::json!({"tool_calls":[{"index":0,"function":{"arguments":{"a":1}}}]})]);
        let events = stream_events(&s, &req).unwrap();
        assert_eq!(events.len(), stream_chunk_count(&s) + 1);
        let raw = std::str::from_utf8(&events[events.len() - 3]).unwrap();
        let chunk: Value = serde_json::from_str(raw.trim().strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"], serde_json::json!({"a":1}), "the raw delta as it is");
    }
}
