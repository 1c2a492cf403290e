//! The SSE side of the emitter: each event becomes one frame
//! (`event: {type}\ndata: {json with sequence_number}\n\n`, contract §8.1), encoded into one
//! growing buffer, split off and queued for the HTTP body (`http::sse`) at once. Hot events
//! (text and reasoning deltas, the events that carry the whole Response) are written from a
//! fixed layout; tests check every layout against the generic encoder.

use bytes::{BufMut, Bytes, BytesMut};
use protocol::events::EventKind;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

/// Where SSE bytes go: one `Bytes` per event, written by the HTTP layer without delay.
/// Frames are encoded into one growing buffer and split off, so an event costs no
/// allocation of its own.
#[derive(Debug)]
pub struct Sink {
    tx: UnboundedSender<Bytes>,
    buf: BytesMut,
    first_delta_sent: bool,
}

impl Sink {
    /// Wraps the channel the SSE body reads from.
    pub fn new(tx: UnboundedSender<Bytes>) -> Self {
        Sink { tx, buf: BytesMut::with_capacity(16 * 1024), first_delta_sent: false }
    }

    /// One event in the generic encoding.
    pub(super) fn event_frame(&mut self, kind: &EventKind, seq: u64) {
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
    pub(super) fn flush_first_delta(&mut self) {
        if !self.first_delta_sent {
            self.first_delta_sent = true;
            let _ = self.tx.send(Bytes::new());
        }
    }

    /// A text or reasoning delta of content part 0, written straight from a fixed layout
    /// (the same bytes the generic encoder gives: see the tests), then queued.
    pub(super) fn delta_frame(&mut self, kind: DeltaKind, item_id: &str, output_index: usize, delta: &str, seq: u64) {
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
        self.flush_first_delta();
    }

    /// One event carrying the whole Response (`response.created`, `.in_progress`,
    /// `.completed`, `.incomplete`, `.failed`), with `response` already encoded: the bytes
    /// the generic encoder writes for `{type, response, sequence_number}`.
    pub(super) fn response_frame(&mut self, name: &str, response: &[u8], seq: u64) {
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

    /// True once the client has gone (the SSE body was dropped).
    pub fn is_closed(&self) -> bool {
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

/// The delta events with a fixed-layout fast path.
#[derive(Debug, Clone, Copy)]
pub(super) enum DeltaKind {
    OutputText,
    ReasoningText,
}
