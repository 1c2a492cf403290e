//! Tool calls that reach the gateway as text (issue 17): when a model server's tool parser
//! fails, the model's call arrives as plain text in a known syntax ([`syntax`]). The
//! [`LeakFilter`] sits in front of a round's text: it passes text on as it comes, holding
//! back only the end of a delta that may begin a marker (at most 13 characters), and turns
//! markup that names a declared tool into [`LeakedCall`]s, removed from the text. Once a
//! whole marker came, what follows is held only while it is a JSON object or array that has
//! not closed yet (at most [`MAX_HELD_CALL`] bytes): a marker followed by anything else is
//! text at once. An answer that begins like a bare JSON call is held likewise until it is
//! known whether the call is the whole answer. Markup that names no declared tool, or is
//! not a call, is passed on as text.

pub mod syntax;

pub use syntax::LeakedCall;
use syntax::{bare_call, bare_start, calls_in, calls_of, find_marker, partial_marker_len, Bare, JsonScan, Marker, Scan, HERMES_END, LLAMA_ENDS};

/// The most text held after a whole marker (or of a bare JSON answer) while its call is
/// not closed; past it, the text is passed on as it is.
pub const MAX_HELD_CALL: usize = 64 * 1024;

/// Of a bare JSON answer, the most text held before it is known to begin like a call
/// (leading whitespace and a fence).
const MAX_BARE_PREFIX: usize = 64;

/// What the filter gives back, in text order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text to pass on.
    Text(String),
    /// A call recovered from the text.
    Call(LeakedCall),
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Text,
    /// `held` starts with this whole marker.
    Marker(Marker),
    /// `held` is the whole answer so far, which begins like a bare JSON call whose object
    /// starts at this byte offset.
    Bare(usize),
}

/// Streaming recovery of leaked calls for one round's text.
#[derive(Debug, Default)]
pub struct LeakFilter {
    state: State,
    held: String,
    /// Finds the end of the JSON after a marker, or of a bare answer's object.
    scan: JsonScan,
    /// Something visible (text or a call) has passed: an answer is no longer whole.
    visible: bool,
    /// Recognize a whole answer written as bare JSON (off when the client asked for a JSON
    /// answer).
    bare: bool,
}

impl LeakFilter {
    /// A filter; `bare`: also recognize an answer that is one bare or fenced JSON call.
    pub fn new(bare: bool) -> Self {
        LeakFilter { bare, ..LeakFilter::default() }
    }

    /// Feeds one text delta; `declared` tells a declared tool's (model-visible) name. What
    /// can be given back is appended to `out`: a delta that cannot hold markup, as it is.
    pub fn feed(&mut self, delta: String, declared: &dyn Fn(&str) -> bool, out: &mut Vec<Piece>) {
        if self.held.is_empty() && self.state == State::Text && !self.bare_possible() && !delta.contains(['<', '[']) {
            self.pass(delta, out);
            return;
        }
        self.held.push_str(&delta);
        self.step(declared, out, false);
    }

    /// Ends the text (the model went on to something else, or the round ended): held text
    /// becomes calls or text, appended to `out`.
    pub fn finish(&mut self, declared: &dyn Fn(&str) -> bool, out: &mut Vec<Piece>) {
        self.step(declared, out, true);
    }

    /// Something other than text (a call, a refusal) came: text after it is not a whole
    /// answer.
    pub fn answer_began(&mut self) {
        self.visible = true;
    }

    /// The held text as it is, without recovering calls (a round cut short).
    pub fn release(&mut self) -> String {
        self.reset_state();
        std::mem::take(&mut self.held)
    }

    fn bare_possible(&self) -> bool {
        self.bare && !self.visible
    }

    fn reset_state(&mut self) {
        self.state = State::Text;
        self.scan = JsonScan::default();
    }

    fn pass(&mut self, text: String, out: &mut Vec<Piece>) {
        if text.is_empty() {
            return;
        }
        if !text.trim().is_empty() {
            self.visible = true;
        }
        match out.last_mut() {
            Some(Piece::Text(t)) => t.push_str(&text),
            _ => out.push(Piece::Text(text)),
        }
    }

    /// Takes the first `upto` bytes of the held text: as calls when `calls` is set, else
    /// passed on as text; then looks for markup again.
    fn resolve(&mut self, calls: Option<Vec<LeakedCall>>, upto: usize, out: &mut Vec<Piece>) {
        let mut upto = upto.min(self.held.len());
        while !self.held.is_char_boundary(upto) {
            upto += 1;
        }
        let taken: String = self.held.drain(..upto).collect();
        match calls {
            Some(calls) => {
                self.visible = true;
                out.extend(calls.into_iter().map(Piece::Call));
            }
            None => self.pass(taken, out),
        }
        self.reset_state();
    }

    fn step(&mut self, declared: &dyn Fn(&str) -> bool, out: &mut Vec<Piece>, end: bool) {
        loop {
            match self.state {
                State::Text => {
                    if self.bare_possible() {
                        match bare_start(&self.held) {
                            Bare::Yes(at) => {
                                self.state = State::Bare(at);
                                continue;
                            }
                            Bare::Maybe if !end && self.held.len() <= MAX_BARE_PREFIX => return,
                            _ => {}
                        }
                    }
                    if let Some((at, marker)) = find_marker(&self.held) {
                        let before: String = self.held.drain(..at).collect();
                        self.pass(before, out);
                        self.state = State::Marker(marker);
                        continue;
                    }
                    let keep = if end { 0 } else { partial_marker_len(&self.held) };
                    let text: String = self.held.drain(..self.held.len() - keep).collect();
                    self.pass(text, out);
                    return;
                }
                State::Marker(marker) => {
                    let body_at = marker.text().len();
                    let body = self.held.get(body_at..).unwrap_or_default();
                    match marker {
                        Marker::Hermes => match self.scan.scan(body) {
                            Scan::Closed(len) => {
                                let rest = body.get(len..).unwrap_or_default();
                                let tag = rest.trim_start();
                                if tag.starts_with(HERMES_END) || (end && tag.is_empty()) {
                                    // Its closing tag, or none at the end (the model stopped).
                                    let calls = calls_in(body.get(..len).unwrap_or_default(), declared);
                                    let tag_len = if tag.is_empty() { 0 } else { HERMES_END.len() };
                                    self.resolve(calls, body_at + len + (rest.len() - tag.len()) + tag_len, out);
                                    continue;
                                }
                                if end || !HERMES_END.starts_with(tag) {
                                    // Something else follows the JSON: the marker is text.
                                    self.resolve(None, body_at, out);
                                    continue;
                                }
                            }
                            Scan::NotJson => {
                                self.resolve(None, body_at, out);
                                continue;
                            }
                            Scan::Open if end => {
                                self.resolve(None, body_at, out);
                                continue;
                            }
                            Scan::Open => {}
                        },
                        Marker::Mistral | Marker::PythonTag => match self.scan.scan(body) {
                            Scan::Closed(len) => {
                                let json = body.get(..len).unwrap_or_default();
                                let calls = serde_json::from_str(json).ok().and_then(|v| calls_of(&v, declared));
                                let mut upto = body_at + len;
                                if calls.is_some() && marker == Marker::PythonTag {
                                    // Llama's end-of-message token, when the server prints it,
                                    // goes with the call: wait until it can be told.
                                    let rest = self.held.get(upto..).unwrap_or_default();
                                    let trimmed = rest.trim_start();
                                    if let Some(tail) = LLAMA_ENDS.iter().find(|t| trimmed.starts_with(**t)) {
                                        upto += rest.len() - trimmed.len() + tail.len();
                                    } else if !end && LLAMA_ENDS.iter().any(|t| t.starts_with(trimmed)) {
                                        return;
                                    }
                                }
                                self.resolve(calls, upto, out);
                                continue;
                            }
                            // Not JSON: the marker is text, and what follows is read again.
                            Scan::NotJson => {
                                self.resolve(None, body_at, out);
                                continue;
                            }
                            Scan::Open if end => {
                                self.resolve(None, body_at, out);
                                continue;
                            }
                            Scan::Open => {}
                        },
                    }
                    if self.held.len() > MAX_HELD_CALL {
                        self.resolve(None, body_at, out);
                        continue;
                    }
                    return;
                }
                State::Bare(at) => {
                    let body = self.held.get(at..).unwrap_or_default();
                    let fenced = self.held.trim_start().starts_with("```");
                    match self.scan.scan(body) {
                        Scan::Closed(len) => {
                            let rest = body.get(len..).unwrap_or_default().trim();
                            let whole_so_far = rest.is_empty() || (fenced && rest.len() <= 3 && "```".starts_with(rest));
                            if !whole_so_far {
                                // More than the object: an answer, not a call. The object is
                                // text; what follows is read again.
                                self.resolve(None, at + len, out);
                                continue;
                            }
                            if end {
                                let call = bare_call(&self.held, declared);
                                self.resolve(call.map(|c| vec![c]), self.held.len(), out);
                                continue;
                            }
                        }
                        Scan::NotJson => {
                            self.resolve(None, self.held.len(), out);
                            continue;
                        }
                        Scan::Open if end || self.held.len() > MAX_HELD_CALL => {
                            self.resolve(None, self.held.len(), out);
                            continue;
                        }
                        Scan::Open => {}
                    }
                    return;
                }
            }
        }
    }
}

/// True when `text` holds a whole call marker (`<tool_call>`, `[TOOL_CALLS]`,
/// `<|python_tag|>`): call markup, recovered or not, that is never taken for an answer
/// (issue 28).
pub fn has_call_markup(text: &str) -> bool {
    find_marker(text).is_some()
}

#[cfg(test)]
mod tests;
