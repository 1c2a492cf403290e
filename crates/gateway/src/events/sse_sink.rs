//! The SSE [`EventSink`]: each event becomes one frame
//! (`event: {type}\ndata: {json with sequence_number}\n\n`, contract §8.1), encoded into one
//! growing buffer, split off and queued for the HTTP body (`http::sse`) at once. Hot events
//! (text and reasoning deltas, the events that carry the whole Response) are written from a
//! fixed layout; tests check every layout against the generic encoder.

use bytes::{BufMut, Bytes, BytesMut};
use protocol::events::EventKind;
use protocol::Response;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

use crate::events::sink::{DeltaKind, EventSink};

/// Where SSE bytes go: one `Bytes` per event, written by the HTTP layer without delay.
/// Frames are encoded into one growing buffer and split off, so an event costs no
/// allocation of its own.
#[derive(Debug)]
pub struct SseSink {
    tx: UnboundedSender<Bytes>,
    buf: BytesMut,
    first_delta_sent: bool,
}

impl SseSink {
    /// Wraps the channel the SSE body reads from.
    pub fn new(tx: UnboundedSender<Bytes>) -> Self {
        SseSink { tx, buf: BytesMut::with_capacity(16 * 1024), first_delta_sent: false }
    }

    /// One event in the generic encoding.
    fn event_frame(&mut self, kind: &EventKind, seq: u64) {
        let mark = self.buf.len();
        self.buf.extend_from_slice(b"event: ");
        self.buf.extend_from_slice(kind.name().as_bytes());
        self.buf.extend_from_slice(b"\ndata: ");
        if serde_json::to_writer((&mut self.buf).writer(), &Wire { kind, sequence_number: seq }).is_ok() {
            self.buf.extend_from_slice(b"\n\n");
            self.send();
        } else {
            self.buf.truncate(mark);
        }
    }

    fn send(&mut self) {
        let frame = self.buf.split().freeze();
        // A send error means the client left; the turn decides what that means.
        let _ = self.tx.send(frame);
        if self.buf.capacity() < 1024 {
            self.buf.reserve(16 * 1024);
        }
    }

    /// After the response's first text, reasoning or argument delta: an empty frame, which tells the
    /// SSE body to write what it holds now rather than at the end of the burst
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
            DeltaKind::OutputText => (
                b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"",
                b",\"logprobs\":[],\"sequence_number\":",
            ),
            DeltaKind::ReasoningText => (
                b"event: response.reasoning_text.delta\ndata: {\"type\":\"response.reasoning_text.delta\",\"item_id\":\"",
                b",\"sequence_number\":",
            ),
        };
        let b = &mut self.buf;
        let mark = b.len();
        b.extend_from_slice(head);
        b.extend_from_slice(item_id.as_bytes());
        b.extend_from_slice(b"\",\"output_index\":");
        b.extend_from_slice(itoa::Buffer::new().format(output_index).as_bytes());
        b.extend_from_slice(b",\"content_index\":0,\"delta\":");
        if serde_json::to_writer(b.writer(), delta).is_err() {
            b.truncate(mark);
            return;
        }
        b.extend_from_slice(tail);
        b.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
        b.extend_from_slice(b"}\n\n");
        self.send();
    }

    /// One event carrying the whole Response (`response.created`, `.in_progress`,
    /// `.completed`, `.incomplete`, `.failed`), with `response` already encoded: the bytes
    /// the generic encoder writes for `{type, response, sequence_number}`.
    fn response_frame(&mut self, name: &str, response: &[u8], seq: u64) {
        let b = &mut self.buf;
        b.extend_from_slice(b"event: ");
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(b"\ndata: {\"type\":\"");
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(b"\",\"response\":");
        b.extend_from_slice(response);
        b.extend_from_slice(b",\"sequence_number\":");
        b.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
        b.extend_from_slice(b"}\n\n");
        self.send();
    }

}

impl EventSink for SseSink {
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

    /// True once the client has gone (the SSE body was dropped).
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

/// One SSE frame, `event: {type}\ndata: {event with sequence_number}\n\n` (contract §8.1),
/// as the emitter writes it; `None` if the event cannot be encoded (never for gateway events).
pub fn frame(kind: &EventKind, sequence_number: u64) -> Option<Vec<u8>> {
    let mut b = format!("event: {}\ndata: ", kind.name()).into_bytes();
    serde_json::to_writer(&mut b, &Wire { kind, sequence_number }).ok()?;
    b.extend_from_slice(b"\n\n");
    Some(b)
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
        let mut e = Emitter::new(base(), Some(Box::new(SseSink::new(tx))));
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
            let mut e = Emitter::new(base(), Some(Box::new(SseSink::new(tx))));
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
        let mut e = Emitter::new(base(), Some(Box::new(SseSink::new(tx))));
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
        let mut e = Emitter::new(base(), Some(Box::new(SseSink::new(tx))));
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
}
