//! One upstream round as it streams: reasoning, text and client-owned call deltas go
//! straight to the emitter; gateway-owned and unknown calls are collected for the end of
//! the round. Reasoning is its own `reasoning` item, closed when text or a call begins;
//! reasoning that resumes after text, or a call, closes that message first (as
//! `commentary`: the model went on working after it), so items follow one another as the
//! model wrote them.

use protocol::output::{ItemStatus, Phase};
use protocol::response::Usage;

use crate::events::citations::Source;
use crate::events::emitter::Emitter;
use crate::events::file_citations::{FileSources, MarkerFilter};
use crate::tools::{Owner, ToolSet};
pub use crate::turn::pending::PendingCall;
use crate::upstream::leaked_calls::{LeakFilter, Piece};
use crate::seal::{Purpose, Sealer};
use crate::transcript::{ReasoningField, Thought};
use crate::upstream::{FinishReason, UpstreamEvent};
use std::sync::Arc;

/// State of one round.
#[derive(Debug, Default)]
pub struct Round {
    /// The open reasoning item of this round, while reasoning streams.
    pub reasoning: Option<usize>,
    /// The assistant message of this round, once visible text arrived.
    pub message: Option<usize>,
    /// The text of this round's messages closed early (reasoning resumed after them).
    earlier_text: String,
    /// Whitespace that came before any visible text (servers send `"\n\n"` after the
    /// reasoning): it starts no message; it opens the answer if visible text follows.
    leading_space: String,
    pub calls: Vec<PendingCall>,
    pub finish: Option<FinishReason>,
    /// Show the upstream's `encrypted_content` on the reasoning items.
    show_encrypted: bool,
    /// The upstream's own items of this round (a Responses upstream's reasoning): they go
    /// into the history before the round's assistant entry, for that upstream only.
    pub upstream_items: Vec<serde_json::Value>,
    /// Removes `【N】` markers from the message when the turn has file search.
    markers: Option<MarkerFilter>,
    /// The turn's last round, sent without tools: calls the model writes anyway are dropped.
    last: bool,
    /// `parallel_tool_calls: false`: calls after the round's first are dropped (servers that
    /// ignore the flag still send several).
    single_call: bool,
    /// Recovers calls written as text, when tools are offered.
    leaks: Option<LeakFilter>,
    /// Calls recovered from text so far (their `index` follows [`RECOVERED_INDEX`]).
    recovered: usize,
    /// The leak filter's output, reused from delta to delta.
    pieces: Vec<Piece>,
    /// The round's message is `commentary` even without calls: the turn goes on after it.
    pub goes_on: bool,
    /// Recover calls written as text whatever tool they name (no tool is offered).
    recover_any: bool,
    /// Calls dropped because the round is the last (sent without tools).
    pub dropped_calls: usize,
    /// The chat field this round's reasoning came in: set, the reasoning is kept for the
    /// history ([`Round::take_thought`]) and, when shown encrypted, sealed.
    field: Option<ReasoningField>,
    /// The reasoning of the round's closed reasoning items (with `field`).
    thought: String,
    /// The open summary part of the open reasoning item: `(upstream part, summary_index)`.
    summary_open: Option<(usize, usize)>,
    /// Seals a chat upstream's reasoning into the items' `encrypted_content`.
    sealer: Option<Arc<Sealer>>,
    /// Client calls wait for the end of the round (a `strict` function is offered: its
    /// arguments are checked before any client call is shown).
    hold_calls: bool,
}

/// The `index` of the first call recovered from text: far above the upstream's calls.
const RECOVERED_INDEX: usize = usize::MAX / 2;

impl Round {
    /// A round; `last`: sent without tools; `single_call`: `parallel_tool_calls: false`.
    pub fn new(last: bool, single_call: bool) -> Self {
        Round { last, single_call, ..Round::default() }
    }

    /// The same round, showing the upstream's encrypted reasoning on the client's
    /// reasoning items (the request's `include` has `reasoning.encrypted_content`).
    pub fn with_encrypted_reasoning(mut self, show: bool) -> Self {
        self.show_encrypted = show;
        self
    }

    /// The same round sealing a chat upstream's reasoning into its reasoning items'
    /// `encrypted_content` when they show it ([`Round::with_encrypted_reasoning`]).
    pub fn with_sealer(mut self, sealer: Option<Arc<Sealer>>) -> Self {
        self.sealer = sealer;
        self
    }

    /// The round's reasoning from a chat upstream, in the field it came in, for the
    /// history (`None` from a Responses upstream, whose items go back instead).
    pub fn take_thought(&mut self) -> Option<Thought> {
        let field = self.field?;
        Some(Thought { field, text: std::mem::take(&mut self.thought) })
    }

    /// The same round holding its client calls until [`Round::close_streamed_calls`] at the
    /// end of the round (`hold`), so they can be checked before any is shown.
    pub fn with_held_calls(mut self, hold: bool) -> Self {
        self.hold_calls = hold;
        self
    }

    /// The same round recovering the calls the model writes as text ([`LeakFilter`]);
    /// `bare_json`: also an answer that is one bare or fenced JSON call (off when the client
    /// asked for a JSON answer).
    pub fn with_leak_recovery(mut self, bare_json: bool) -> Self {
        self.leaks = Some(LeakFilter::new(bare_json));
        self
    }

    /// The same round recovering calls written as text whatever tool they name (`any`: no
    /// tool is offered, so any such call is dropped, not taken for the answer).
    pub fn recovering_any_name(mut self, any: bool) -> Self {
        self.recover_any = any;
        self
    }

    /// Applies one upstream event. `files` are the turn's file-search chunks: with file
    /// search declared, citation markers leave the text and become `file_citation`s.
    /// `sources` are this turn's search sources (for a message closed early).
    pub fn on_event(&mut self, ev: UpstreamEvent, tools: &ToolSet, emitter: &mut Emitter, usage: &mut Usage, files: &FileSources, sources: &[Source]) {
        match ev {
            UpstreamEvent::Usage(u) => usage.add(&u),
            UpstreamEvent::Text(delta) => match &mut self.leaks {
                Some(filter) => {
                    let mut pieces = std::mem::take(&mut self.pieces);
                    let any = self.recover_any;
                    filter.feed(delta, &|n| any || tools.lookup(n).is_some(), &mut pieces);
                    self.apply_pieces(&mut pieces, tools, emitter, files, sources);
                    self.pieces = pieces;
                }
                None => self.apply(UpstreamEvent::Text(delta), tools, emitter, files, sources),
            },
            // Text held as possible call markup is resolved before anything else is shown.
            UpstreamEvent::Reasoning(_) | UpstreamEvent::ReasoningSummary { .. } | UpstreamEvent::Refusal(_) | UpstreamEvent::ToolCall { .. } => {
                self.end_text(tools, emitter, files, sources);
                let reasoning = matches!(ev, UpstreamEvent::Reasoning(_) | UpstreamEvent::ReasoningSummary { .. });
                if let (Some(filter), false) = (&mut self.leaks, reasoning) {
                    filter.answer_began();
                }
                self.apply(ev, tools, emitter, files, sources);
            }
            other => self.apply(other, tools, emitter, files, sources),
        }
    }

    /// Ends the round's text: markup still held becomes calls, or text. Called when the
    /// stream ended well, and before any output other than text.
    pub fn end_text(&mut self, tools: &ToolSet, emitter: &mut Emitter, files: &FileSources, sources: &[Source]) {
        let Some(filter) = &mut self.leaks else { return };
        let mut pieces = Vec::new();
        let any = self.recover_any;
        filter.finish(&|n| any || tools.lookup(n).is_some(), &mut pieces);
        self.apply_pieces(&mut pieces, tools, emitter, files, sources);
    }

    /// Applies what the leak filter gave: text as text, a recovered call as the upstream's
    /// call (one fragment, its whole arguments), so it goes on as any call does.
    fn apply_pieces(&mut self, pieces: &mut Vec<Piece>, tools: &ToolSet, emitter: &mut Emitter, files: &FileSources, sources: &[Source]) {
        for piece in pieces.drain(..) {
            let ev = match piece {
                Piece::Text(text) => UpstreamEvent::Text(text),
                Piece::Call(call) => {
                    tracing::debug!(name = %call.name, "a call the model wrote as text is recovered");
                    let index = RECOVERED_INDEX + self.recovered;
                    self.recovered += 1;
                    UpstreamEvent::ToolCall { index, id: None, name: Some(call.name), arguments: Some(call.arguments) }
                }
            };
            self.apply(ev, tools, emitter, files, sources);
        }
    }

    fn apply(&mut self, ev: UpstreamEvent, tools: &ToolSet, emitter: &mut Emitter, files: &FileSources, sources: &[Source]) {
        match ev {
            UpstreamEvent::Reasoning(delta) => {
                self.advance_calls(tools, emitter, true);
                self.end_message_early(emitter, sources);
                let idx = *self.reasoning.get_or_insert_with(|| emitter.reasoning_start());
                emitter.reasoning_delta(idx, delta);
            }
            UpstreamEvent::ReasoningSummary { part, delta } => {
                self.advance_calls(tools, emitter, true);
                self.end_message_early(emitter, sources);
                let idx = *self.reasoning.get_or_insert_with(|| emitter.reasoning_start());
                let summary_index = match self.summary_open {
                    Some((open, si)) if open == part => si,
                    _ => {
                        if let Some((_, si)) = self.summary_open.take() {
                            emitter.reasoning_summary_done(idx, si);
                        }
                        let si = emitter.reasoning_summary_start(idx);
                        self.summary_open = Some((part, si));
                        si
                    }
                };
                emitter.reasoning_summary_delta(idx, summary_index, delta);
            }
            UpstreamEvent::ReasoningField(field) => self.field = Some(field),
            UpstreamEvent::Text(mut delta) => {
                if self.message.is_none() {
                    if delta.trim().is_empty() {
                        self.leading_space.push_str(&delta);
                        return;
                    }
                    if !self.leading_space.is_empty() {
                        delta.insert_str(0, &std::mem::take(&mut self.leading_space));
                    }
                }
                self.advance_calls(tools, emitter, true);
                self.close_reasoning(emitter, ItemStatus::Completed);
                let idx = match self.message {
                    Some(i) => i,
                    None => {
                        let i = emitter.message_start();
                        self.message = Some(i);
                        if files.enabled {
                            self.markers = Some(MarkerFilter::default());
                        }
                        i
                    }
                };
                match &mut self.markers {
                    None => emitter.text_delta(idx, delta),
                    Some(filter) => {
                        let (text, found) = filter.feed(&delta);
                        if !text.is_empty() {
                            emitter.text_delta(idx, text);
                        }
                        // A marker naming no retrieved chunk is dropped without annotation.
                        for m in found {
                            if let Some(source) = files.get(m.n) {
                                emitter.file_citation(idx, m.index, source);
                            }
                        }
                    }
                }
            }
            UpstreamEvent::Refusal(delta) => {
                // Whitespace held before any text stays out of the refusal.
                self.leading_space.clear();
                self.advance_calls(tools, emitter, true);
                self.close_reasoning(emitter, ItemStatus::Completed);
                // A refusal after text is a message of its own: the text's is done first
                // (`commentary`), so parts, like items, never overlap.
                if self.message.is_some_and(|i| !emitter.message_refuses(i)) {
                    self.end_message_early(emitter, sources);
                }
                let idx = *self.message.get_or_insert_with(|| emitter.refusal_message_start());
                emitter.refusal_delta(idx, delta);
            }
            UpstreamEvent::ToolCall { index, id, name, arguments } => {
                let known = self.calls.iter().position(|c| c.index == index);
                if self.last {
                    // A call's first fragment names it.
                    self.dropped_calls += usize::from(name.is_some());
                    return;
                }
                if self.single_call && known.is_none() && !self.calls.is_empty() {
                    return;
                }
                // A fragment of a call whose item is done changes nothing: the call was whole
                // JSON when it closed (at most whitespace follows), or the model went on to
                // text before it (the closing of a native custom call's re-encoded input,
                // which comes at the finish).
                if known.is_some_and(|p| self.calls[p].closed) {
                    tracing::debug!(index, "a fragment of a call whose item is done; ignored");
                    return;
                }
                self.close_reasoning(emitter, ItemStatus::Completed);
                // A round that makes calls is work in progress: its text is done
                // (`commentary`) before the first call's item is added.
                self.end_message_early(emitter, sources);
                let pos = known.unwrap_or_else(|| {
                    self.calls.push(PendingCall::new(index));
                    self.calls.len() - 1
                });
                let call = &mut self.calls[pos];
                // The upstream's ids are not trusted to be unique (servers reuse `call_0`
                // across turns, or send none): every call gets the gateway's own id, which
                // is also what the upstream sees in later rounds. (The adapter has used them
                // to tell calls apart: `index` is the call's number in the round.)
                let _ = id;
                if let Some(n) = name {
                    if call.output_index.is_none() {
                        call.name.push_str(&n);
                    }
                }
                let piece = arguments.unwrap_or_default();
                call.arguments.push_str(&piece);
                if let Some(idx) = call.output_index {
                    call.stream_piece(idx, piece, emitter);
                }
                self.advance_calls(tools, emitter, false);
            }
            UpstreamEvent::Finish(r) => self.finish = Some(r),
            UpstreamEvent::OpaqueItem(item) => {
                if let Some(enc) = item.get("encrypted_content").and_then(serde_json::Value::as_str).filter(|_| self.show_encrypted) {
                    // On the reasoning item that streams, or (reasoning that came encrypted
                    // only) on one of its own.
                    let idx = match self.reasoning {
                        Some(idx) => idx,
                        None => {
                            self.advance_calls(tools, emitter, true);
                            self.end_message_early(emitter, sources);
                            let idx = emitter.reasoning_start();
                            self.reasoning = Some(idx);
                            idx
                        }
                    };
                    emitter.reasoning_encrypted(idx, enc.to_string());
                }
                self.upstream_items.push(item)
            }
            UpstreamEvent::Usage(_) => {}
        }
    }

    /// Closes the reasoning item, if one is open (no-op otherwise): its open summary part
    /// first; a chat upstream's reasoning is kept for the history and, when the client asked
    /// for `reasoning.encrypted_content`, sealed into the item.
    fn close_reasoning(&mut self, emitter: &mut Emitter, status: ItemStatus) {
        let Some(idx) = self.reasoning.take() else { return };
        if let Some((_, si)) = self.summary_open.take() {
            emitter.reasoning_summary_done(idx, si);
        }
        if let Some(field) = self.field {
            let text = emitter.reasoning_text(idx);
            if let (true, Some(sealer)) = (self.show_encrypted, &self.sealer) {
                let plain = serde_json::to_vec(&Thought { field, text: text.clone() }).unwrap_or_default();
                emitter.reasoning_encrypted(idx, sealer.seal(Purpose::Reasoning, &plain));
            }
            if !self.thought.is_empty() && !text.is_empty() {
                self.thought.push_str("\n\n");
            }
            self.thought.push_str(&text);
        }
        emitter.reasoning_done(idx, status);
    }

    /// Closes the round's reasoning item (if still open) and its message, with the phase
    /// its calls imply; returns the message text. `sources` are this turn's search sources:
    /// their URLs in the text get `url_citation`s.
    pub fn close_message(&mut self, emitter: &mut Emitter, status: ItemStatus, sources: &[Source]) -> String {
        self.close_reasoning(emitter, status);
        let phase = if self.calls.is_empty() && !self.goes_on { Phase::FinalAnswer } else { Phase::Commentary };
        let text = self.close_open_message(emitter, phase, status, sources);
        if self.earlier_text.is_empty() {
            text
        } else {
            std::mem::take(&mut self.earlier_text) + &text
        }
    }

    /// Closes the open message (if any) as `commentary` because the model went on to
    /// something else in this round; its text joins the round's earlier text.
    fn end_message_early(&mut self, emitter: &mut Emitter, sources: &[Source]) {
        let text = self.close_open_message(emitter, Phase::Commentary, ItemStatus::Completed, sources);
        self.earlier_text.push_str(&text);
    }

    /// Closes the open message (if any) with `phase` and `status`; returns its text.
    fn close_open_message(&mut self, emitter: &mut Emitter, phase: Phase, status: ItemStatus, sources: &[Source]) -> String {
        match self.message.take() {
            Some(idx) => {
                if let Some(mut filter) = self.markers.take() {
                    let rest = filter.flush();
                    if !rest.is_empty() {
                        emitter.text_delta(idx, rest);
                    }
                }
                let text = emitter.message_text(idx);
                emitter.annotate_message(idx, sources);
                emitter.message_done(idx, phase, status);
                text
            }
            None => String::new(),
        }
    }

    /// For a round cut short, before [`Round::close_all`]: text held as possible call markup
    /// goes on as the text it is (no call is recovered from a cut round).
    pub fn release_text(&mut self, tools: &ToolSet, emitter: &mut Emitter, files: &FileSources, sources: &[Source]) {
        let Some(held) = self.leaks.as_mut().map(LeakFilter::release).filter(|h| !h.is_empty()) else { return };
        self.apply(UpstreamEvent::Text(held), tools, emitter, files, sources);
    }

    /// Closes every open item (message and streamed calls) with `status`; returns the
    /// message text.
    pub fn close_all(&mut self, emitter: &mut Emitter, status: ItemStatus, sources: &[Source]) -> String {
        let text = self.close_message(emitter, status, sources);
        for call in self.calls.iter_mut().filter(|c| !c.closed) {
            if let Some(idx) = call.output_index {
                let final_text = emitter.call_text(idx);
                emitter.call_done(idx, final_text, status);
                call.closed = true;
            }
        }
        text
    }

    /// The calls whose items are done (completed) while the round went on: a round cut
    /// short keeps them in the history, since the client may answer them.
    pub fn completed_calls(&self) -> Vec<crate::transcript::Call> {
        self.calls
            .iter()
            .filter(|c| c.closed)
            .map(|c| crate::transcript::Call { call_id: c.call_id.clone(), name: c.name.clone(), arguments: c.arguments.clone() })
            .collect()
    }

    /// Completes the client calls that can be surfaced now, in the model's order (the model
    /// went on to text or reasoning, or the round ended): see [`Round::advance_calls`].
    /// Releases calls held by [`Round::with_held_calls`] first.
    pub fn close_streamed_calls(&mut self, tools: &ToolSet, emitter: &mut Emitter) {
        self.hold_calls = false;
        self.advance_calls(tools, emitter, true);
    }

    /// Streams the round's client calls one item at a time, in the model's order, whatever
    /// order their fragments come in: the first call whose item is not done is added (with
    /// its arguments so far as one delta) and streams. It is done once its arguments are
    /// whole JSON and a later call has begun (or, with `flush`, at once), and the next call
    /// is added. A later call's fragments meanwhile only accumulate, so none is lost when
    /// servers interleave calls. A gateway call, or a name not offered, holds every later
    /// call back until the end of the round (gateway items come first).
    fn advance_calls(&mut self, tools: &ToolSet, emitter: &mut Emitter, flush: bool) {
        if self.hold_calls {
            return;
        }
        let count = self.calls.len();
        for (i, call) in self.calls.iter_mut().enumerate() {
            if call.closed {
                continue;
            }
            let Some(entry) = tools.lookup(&call.name).filter(|e| e.owner == Owner::Client) else { return };
            if call.output_index.is_none() {
                let idx = call.start_client_item(entry, emitter);
                let so_far = call.arguments.clone();
                call.stream_piece(idx, so_far, emitter);
            }
            if !(flush || (i + 1 < count && whole_json(&call.arguments))) {
                return;
            }
            call.finish_item(entry.is_custom(), emitter);
        }
    }
}

/// True when `args` is a whole JSON value ending in `}` or `]` (a call's arguments are
/// closed); parsed only when its last character can close one.
fn whole_json(args: &str) -> bool {
    let t = args.trim_end();
    (t.ends_with('}') || t.ends_with(']')) && serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::output::OutputItem;
    use protocol::Response;

    /// Reasoning that resumes after text closes that message (commentary) first: the items
    /// follow one another as the model wrote them, and the round's text is all of it.
    #[test]
    fn resumed_reasoning_closes_the_message_before_it() {
        let mut emitter = Emitter::new(Response::default(), None);
        let (tools, files, mut usage, mut round) = (ToolSet::default(), FileSources::default(), Usage::default(), Round::default());
        for ev in [
            UpstreamEvent::Reasoning("r1".into()),
            UpstreamEvent::Text("t1".into()),
            UpstreamEvent::Reasoning("r2".into()),
            UpstreamEvent::Text("\n".into()),
            UpstreamEvent::Text("t2".into()),
            UpstreamEvent::Finish(FinishReason::Stop),
        ] {
            round.on_event(ev, &tools, &mut emitter, &mut usage, &files, &[]);
        }
        assert_eq!(round.close_message(&mut emitter, ItemStatus::Completed, &[]), "t1\nt2");
        let kinds: Vec<(String, Option<Phase>)> = emitter
            .response()
            .output
            .iter()
            .map(|i| match i {
                OutputItem::Reasoning { .. } => (format!("reasoning {}", emitter_text(i)), None),
                OutputItem::Message { phase, .. } => (format!("message {}", emitter_text(i)), *phase),
                other => (format!("{other:?}"), None),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("reasoning r1".to_string(), None),
                ("message t1".to_string(), Some(Phase::Commentary)),
                ("reasoning r2".to_string(), None),
                ("message \nt2".to_string(), Some(Phase::FinalAnswer)),
            ]
        );
    }

    /// Text, reasoning or a refusal that comes after a client call closes the call's item
    /// first: every item is done before the next is added, whatever the upstream's order.
    #[test]
    fn items_never_overlap_whatever_follows_a_call() {
        let recorder = crate::events::Recorder::default();
        let mut emitter = Emitter::new(Response::default(), Some(Box::new(recorder.clone())));
        let registry = crate::executors::Registry::default();
        let tools = ToolSet::build(vec![serde_json::json!({"type":"function","name":"f"})], None, &registry, &Default::default()).unwrap();
        let (files, mut usage, mut round) = (FileSources::default(), Usage::default(), Round::default());
        let call = |index: usize| UpstreamEvent::ToolCall { index, id: None, name: Some("f".into()), arguments: Some("{}".into()) };
        for ev in [
            UpstreamEvent::Text("A".into()),
            call(0),
            UpstreamEvent::Text("B".into()),
            call(1),
            UpstreamEvent::Reasoning("r".into()),
            call(2),
            UpstreamEvent::Refusal("no".into()),
            UpstreamEvent::Finish(FinishReason::ToolCalls),
        ] {
            round.on_event(ev, &tools, &mut emitter, &mut usage, &files, &[]);
        }
        round.close_all(&mut emitter, ItemStatus::Completed, &[]);
        drop(emitter);
        let events: Vec<serde_json::Value> = recorder.events().iter().map(|(_, k)| serde_json::to_value(k).unwrap()).collect();
        let frames = format!("{events:#?}");
        let mut open: Option<u64> = None;
        let mut added = 0;
        for e in &events {
            match e["type"].as_str().unwrap() {
                "response.output_item.added" => {
                    assert_eq!(open, None, "item {} added while {open:?} is open:\n{frames}", e["output_index"]);
                    open = e["output_index"].as_u64();
                    added += 1;
                }
                "response.output_item.done" => {
                    assert_eq!(open, e["output_index"].as_u64(), "{frames}");
                    open = None;
                }
                _ => {}
            }
        }
        assert_eq!((added, open), (7, None), "message, call, message, call, reasoning, call, refusal message:\n{frames}");
    }

    fn emitter_text(item: &OutputItem) -> String {
        use protocol::output::OutputContent;
        let parts = match item {
            OutputItem::Reasoning { content, .. } | OutputItem::Message { content, .. } => content,
            _ => return String::new(),
        };
        parts
            .iter()
            .map(|p| match p {
                OutputContent::OutputText { text, .. } | OutputContent::ReasoningText { text } => text.as_str(),
                OutputContent::Refusal { refusal } => refusal.as_str(),
            })
            .collect()
    }
}
