//! The wire [`EventSink`]: each event becomes one encoded message, written into one growing
//! buffer, split off and queued for its transport at once. The same encoder serves every
//! transport ([`Framing`]): an SSE frame (`event: {type}\ndata: {json}\n\n`, contract §8.1)
//! for `http::sse`, the bare JSON event (the SSE `data:` payload) for the durable run log,
//! and the JSON event with the connection's `stream_id` for a WebSocket (2026 supplement
//! W1.3). Hot events (text and reasoning deltas, the events that carry the whole Response)
//! are written from a fixed layout; tests check every layout against the generic encoder.

use bytes::{BufMut, Bytes, BytesMut};
use protocol::events::EventKind;
use protocol::Response;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

use crate::events::sink::{DeltaKind, EventSink};

/// How each event is wrapped on its transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framing {
    /// `event: {type}\ndata: {json}\n\n` (contract §8.1).
    Sse,
    /// The JSON event alone: what the durable run log stores, one value per event.
    Json,
    /// The JSON event with `"stream_id"` added when the WebSocket `response.create` named a
    /// lane (2026 supplement W1.3); without one, the same as [`Framing::Json`].
    WebSocket { stream_id: Option<String> },
}

/// Where encoded events go: one `Bytes` per event, written by the transport without delay.
/// Events are encoded into one growing buffer and split off, so an event costs no
/// allocation of its own. An empty `Bytes` after the first delta asks the transport to write
/// what it holds at once.
#[derive(Debug)]
pub struct WireSink {
    tx: UnboundedSender<Bytes>,
    buf: BytesMut,
    framing: Framing,
    /// `,"stream_id":"…"}` (WebSocket lanes): replaces each event's closing brace.
    lane_tail: Option<Vec<u8>>,
    first_delta_sent: bool,
}

impl WireSink {
    /// SSE frames into the channel the SSE body reads from.
    pub fn sse(tx: UnboundedSender<Bytes>) -> Self {
        WireSink::new(tx, Framing::Sse)
    }

    /// JSON events (the run log's form).
    pub fn json(tx: UnboundedSender<Bytes>) -> Self {
        WireSink::new(tx, Framing::Json)
    }

    /// A sink with `framing`.
    pub fn new(tx: UnboundedSender<Bytes>, framing: Framing) -> Self {
        let lane_tail = match &framing {
            Framing::WebSocket { stream_id: Some(id) } => {
                let mut tail = b",\"stream_id\":".to_vec();
                if serde_json::to_writer(&mut tail, id).is_err() {
                    tail.clear();
                }
                tail.push(b'}');
                Some(tail)
            }
            _ => None,
        };
        WireSink { tx, buf: BytesMut::with_capacity(16 * 1024), framing, lane_tail, first_delta_sent: false }
    }

    /// `event: {name}\ndata: ` for SSE; nothing otherwise.
    fn open(&mut self, name: &str) {
        if self.framing == Framing::Sse {
            self.buf.extend_from_slice(b"event: ");
            self.buf.extend_from_slice(name.as_bytes());
            self.buf.extend_from_slice(b"\ndata: ");
        }
    }

    /// Ends the event whose JSON object was just written (its last byte is `}`), and queues it.
    fn close(&mut self) {
        if let Some(tail) = &self.lane_tail {
            self.buf.truncate(self.buf.len() - 1);
            self.buf.extend_from_slice(tail);
        }
        if self.framing == Framing::Sse {
            self.buf.extend_from_slice(b"\n\n");
        }
        let frame = self.buf.split().freeze();
        // A send error means the client left; the turn decides what that means.
        let _ = self.tx.send(frame);
        if self.buf.capacity() < 1024 {
            self.buf.reserve(16 * 1024);
        }
    }

    /// One event in the generic encoding.
    fn event_frame(&mut self, kind: &EventKind, seq: u64) {
        let mark = self.buf.len();
        self.open(kind.name());
        if serde_json::to_writer((&mut self.buf).writer(), &Wire { kind, sequence_number: seq }).is_ok() {
            self.close();
        } else {
            self.buf.truncate(mark);
        }
    }

    /// After the response's first text, reasoning or argument delta: an empty frame, which tells the
    /// transport to write what it holds now rather than at the end of the burst
    /// (`http::sse`), so the first token is never held.
    fn flush_first_delta(&mut self) {
        if !self.first_delta_sent {
            self.first_delta_sent = true;
            let _ = self.tx.send(Bytes::new());
        }
    }

    /// A text or reasoning delta of content part 0, written straight from a fixed layout
    /// (the same bytes the generic encoder gives: see the tests), then queued.
    fn delta_frame(&mut self, kind: DeltaKind, item_id: &str, output_index: usize, delta: &str, seq: u64) {
        let (head, tail): (&[u8], &[u8]) = match kind {
            DeltaKind::OutputText => (b"{\"type\":\"response.output_text.delta\",\"item_id\":\"", b",\"logprobs\":[],\"sequence_number\":"),
            DeltaKind::ReasoningText => (b"{\"type\":\"response.reasoning_text.delta\",\"item_id\":\"", b",\"sequence_number\":"),
        };
        let mark = self.buf.len();
        self.open(match kind {
            DeltaKind::OutputText => "response.output_text.delta",
            DeltaKind::ReasoningText => "response.reasoning_text.delta",
        });
        let b = &mut self.buf;
        b.extend_from_slice(head);
        b.extend_from_slice(item_id.as_bytes());
        b.extend_from_slice(b"\",\"output_index\":");
        b.extend_from_slice(itoa::Buffer::new().format(output_index).as_bytes());
        b.extend_from_slice(b",\"content_index\":0,\"delta\":");
        if serde_json::to_writer(b.writer(), delta).is_err() {
            self.buf.truncate(mark);
            return;
        }
        let b = &mut self.buf;
        b.extend_from_slice(tail);
        b.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
        b.extend_from_slice(b"}");
        self.close();
    }

    /// One event carrying the whole Response (`response.created`, `.in_progress`,
    /// `.completed`, `.incomplete`, `.failed`), with `response` already encoded: the bytes
    /// the generic encoder writes for `{type, response, sequence_number}`.
    fn response_frame(&mut self, name: &str, response: &[u8], seq: u64) {
        self.open(name);
        let b = &mut self.buf;
        b.extend_from_slice(b"{\"type\":\"");
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(b"\",\"response\":");
        b.extend_from_slice(response);
        b.extend_from_slice(b",\"sequence_number\":");
        b.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
        b.extend_from_slice(b"}");
        self.close();
    }
}

impl EventSink for WireSink {
    fn event(&mut self, kind: &EventKind, seq: u64) {
        self.event_frame(kind, seq);
    }

    fn content_delta(&mut self, kind: DeltaKind, item_id: &str, output_index: usize, delta: &str, seq: u64) {
        self.delta_frame(kind, item_id, output_index, delta, seq);
    }

    /// Both events carry the same Response: it is encoded once.
    fn started(&mut self, response: &Response, seq: u64) {
        if let Ok(encoded) = serde_json::to_vec(response) {
            self.response_frame("response.created", &encoded, seq);
            self.response_frame("response.in_progress", &encoded, seq + 1);
        }
    }

    fn terminal(&mut self, name: &'static str, response: &Response, seq: u64) {
        if let Ok(encoded) = serde_json::to_vec(response) {
            self.response_frame(name, &encoded, seq);
        }
    }

    fn first_delta(&mut self) {
        self.flush_first_delta();
    }

    /// True once the client has gone (the transport dropped its receiver).
    fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(flatten)]
    kind: &'a EventKind,
    sequence_number: u64,
}

/// One event as JSON, `{type, …, sequence_number}` (the SSE `data:` payload, contract
/// §8.1): the generic encoding; `None` if the event cannot be encoded (never for gateway events).
pub fn payload(kind: &EventKind, sequence_number: u64) -> Option<Vec<u8>> {
    serde_json::to_vec(&Wire { kind, sequence_number }).ok()
}

/// One SSE frame, `event: {type}\ndata: {event with sequence_number}\n\n` (contract §8.1),
/// as the emitter writes it; `None` if the event cannot be encoded (never for gateway events).
pub fn frame(kind: &EventKind, sequence_number: u64) -> Option<Vec<u8>> {
    let mut b = format!("event: {}\ndata: ", kind.name()).into_bytes();
    serde_json::to_writer(&mut b, &Wire { kind, sequence_number }).ok()?;
    b.extend_from_slice(b"\n\n");
    Some(b)
}

/// The `type` of a JSON event as this encoder writes it (`{"type":"…",…}`); `None` for
/// anything else.
pub fn event_type(payload: &[u8]) -> Option<&str> {
    let rest = payload.strip_prefix(b"{\"type\":\"")?;
    let end = rest.iter().position(|&c| c == b'"')?;
    std::str::from_utf8(&rest[..end]).ok()
}

/// The SSE frame of a JSON event (`payload`, as [`Framing::Json`] writes it): the same
/// bytes [`Framing::Sse`] writes for that event. Empty for an empty payload (the
/// "write now" mark).
pub fn sse_frame_of(payload: &[u8]) -> Bytes {
    if payload.is_empty() {
        return Bytes::new();
    }
    let name = event_type(payload).unwrap_or("message");
    let mut b = BytesMut::with_capacity(payload.len() + name.len() + 16);
    b.extend_from_slice(b"event: ");
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(b"\ndata: ");
    b.extend_from_slice(payload);
    b.extend_from_slice(b"\n\n");
    b.freeze()
}

#[cfg(test)]
mod tests {
    /// The generic encoding of an event (`sink::frame`), which every fast path must equal.
    fn generic(kind: &EventKind, seq: u64) -> String {
        String::from_utf8(super::frame(kind, seq).expect("frame")).expect("utf8")
    }

    use super::*;
    use crate::events::emitter::{Emitter, Terminal};
    use protocol::output::{ItemStatus, OutputContent, OutputItem};
    use protocol::request::TextConfig;
    use protocol::response::{ResponseStatus, Usage};

    fn base() -> Response {
        serde_json::from_value(serde_json::json!({
            "id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "background": false,
            "completed_at": null, "error": null, "incomplete_details": null, "instructions": null,
            "max_output_tokens": null, "max_tool_calls": null, "model": "m", "output": [], "parallel_tool_calls": true,
            "previous_response_id": null, "prompt_cache_key": null, "prompt_cache_retention": null, "reasoning": null,
            "safety_identifier": null, "service_tier": "default", "store": false, "temperature": 1.0,
            "text": TextConfig::default(), "tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0,
            "truncation": "disabled", "usage": null, "user": null, "metadata": {}, "frequency_penalty": 0.0, "presence_penalty": 0.0
        }))
        .expect("base response")
    }

    /// The hand-written `response.created` / `response.in_progress` frames are byte-for-byte
    /// the generic encoding.
    #[test]
    fn start_frames_match_the_generic_encoder() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut e = Emitter::new(base(), Some(Box::new(WireSink::sse(tx))));
        e.start();
        e.start();
        let frames: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(frames.len(), 2, "start sends its two events once");
        let response = Box::new(base());
        for (i, kind) in [EventKind::Created { response: response.clone() }, EventKind::InProgress { response }].into_iter().enumerate() {
            let want = generic(&kind, i as u64);
            assert_eq!(String::from_utf8_lossy(&frames[i]), want);
        }
        assert_eq!(e.response(), &base());
    }

    /// The terminal frame (sent at once, or held until released) is byte-for-byte the
    /// generic encoding of the event carrying the returned Response.
    #[test]
    fn terminal_frames_match_the_generic_encoder() {
        for hold in [false, true] {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let mut e = Emitter::new(base(), Some(Box::new(WireSink::sse(tx))));
            e.start();
            if hold {
                e.hold_terminal();
            }
            let usage = Usage { input_tokens: 3, output_tokens: 4, total_tokens: 7, ..Usage::default() };
            let r = e.finish(Terminal::Incomplete("max_output_tokens".into()), usage);
            assert_eq!(r.status, ResponseStatus::Incomplete);
            let mut frames: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
            assert_eq!(frames.len(), if hold { 2 } else { 3 }, "held until released");
            if hold {
                e.release_terminal();
                frames.extend(std::iter::from_fn(|| rx.try_recv().ok()));
            }
            let kind = EventKind::Incomplete { response: Box::new(r.clone()) };
            assert_eq!(String::from_utf8_lossy(&frames[2]), generic(&kind, 2));
            if hold {
                assert_eq!(e.response(), &r, "a held terminal keeps the Response for a failed commit");
            }
        }
    }

    /// The hand-written text-delta frame is byte-for-byte the generic encoding.
    #[test]
    fn reasoning_delta_fast_path_matches_the_generic_encoder() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut e = Emitter::new(base(), Some(Box::new(WireSink::sse(tx))));
        e.start();
        let idx = e.reasoning_start();
        let delta = "thínk \"q\" \\ \n\u{7}🙂".to_string();
        e.reasoning_delta(idx, delta.clone());
        let frames: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).filter(|f| !f.is_empty()).collect();
        let item_id = e.item_id(idx);
        let kind = EventKind::ReasoningTextDelta { item_id, output_index: idx, content_index: 0, delta: delta.clone() };
        assert_eq!(String::from_utf8_lossy(frames.last().expect("frame")), generic(&kind, 4));
        e.reasoning_done(idx, ItemStatus::Completed);
        let Some(OutputItem::Reasoning { content, .. }) = e.response().output.get(idx) else { panic!("reasoning item") };
        assert_eq!(content, &vec![OutputContent::ReasoningText { text: delta }], "folded like the event");
    }

    #[test]
    fn text_delta_fast_path_matches_the_generic_encoder() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut e = Emitter::new(base(), Some(Box::new(WireSink::sse(tx))));
        e.start();
        let idx = e.message_start();
        let delta = "héllo \"quoted\" \\ \n\u{1}😀".to_string();
        e.text_delta(idx, delta.clone());
        let mut frames = Vec::new();
        while let Ok(f) = rx.try_recv() {
            frames.push(f);
        }
        // The first delta is followed by the empty "write now" mark for the SSE body.
        assert_eq!(frames.last().map(|f| f.is_empty()), Some(true), "flush mark after the first delta");
        frames.pop();
        let got = frames.last().expect("frame").clone();
        let item_id = e.item_id(idx);
        let kind = EventKind::OutputTextDelta { item_id, output_index: idx, content_index: 0, delta: delta.clone(), logprobs: Vec::new() };
        let want = generic(&kind, 4);
        assert_eq!(String::from_utf8_lossy(&got), want);
        assert_eq!(e.message_text(idx), delta, "folded like the event");
        // Only the first delta asks for a write at once.
        e.text_delta(idx, "more".into());
        let rest: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(rest.len(), 1);
        assert!(!rest[0].is_empty());
    }

    /// Every event a turn sends, in each framing: the JSON form is the generic payload, the
    /// SSE frame rendered from it is the SSE sink's frame, and a WebSocket lane adds only
    /// its `stream_id`.
    #[test]
    fn every_framing_carries_the_same_event() {
        let run = |framing: Framing| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let mut e = Emitter::new(base(), Some(Box::new(WireSink::new(tx, framing))));
            e.start();
            let idx = e.message_start();
            e.text_delta(idx, "héllo \"q\"".into());
            let r = e.reasoning_start();
            e.reasoning_delta(r, "think".into());
            e.error_event("server_error", "boom");
            e.finish(Terminal::Completed, Usage::default());
            std::iter::from_fn(|| rx.try_recv().ok()).filter(|f: &Bytes| !f.is_empty()).collect::<Vec<_>>()
        };
        let sse = run(Framing::Sse);
        let json = run(Framing::Json);
        let lane = run(Framing::WebSocket { stream_id: Some("lane-1".into()) });
        let plain = run(Framing::WebSocket { stream_id: None });
        assert_eq!(sse.len(), json.len());
        assert!(sse.len() > 8, "{}", sse.len());
        for i in 0..sse.len() {
            // Item ids differ between runs: compare shapes after replacing them.
            let norm = |b: &[u8]| {
                let v: serde_json::Value = serde_json::from_slice(b).expect("json");
                let mut v = v;
                if let Some(o) = v.as_object_mut() {
                    o.remove("item_id");
                    o.remove("item");
                    o.remove("response");
                }
                v
            };
            let frame = sse_frame_of(&json[i]);
            let text = String::from_utf8_lossy(&frame).into_owned();
            let data = text.split_once("\ndata: ").expect("data").1.trim_end();
            assert_eq!(norm(data.as_bytes()), norm(&json[i]));
            let sse_text = String::from_utf8_lossy(&sse[i]).into_owned();
            assert_eq!(sse_text.lines().next(), text.lines().next(), "event line of {i}");
            assert_eq!(norm(&plain[i]), norm(&json[i]), "no lane: plain JSON");
            let mut lv: serde_json::Value = serde_json::from_slice(&lane[i]).expect("lane json");
            assert_eq!(lv["stream_id"], "lane-1", "{i}");
            lv.as_object_mut().expect("object").remove("stream_id");
            assert_eq!(norm(lv.to_string().as_bytes()), norm(&json[i]));
            assert_eq!(event_type(&json[i]), serde_json::from_slice::<serde_json::Value>(&json[i]).expect("json")["type"].as_str());
        }
    }
}

