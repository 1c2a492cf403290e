//! `file_citation` markers (issue 5 "Output"): the model cites file-search chunk N by
//! writing `【N】` or `【N:M】` (at most [`MAX_MARKER`] characters), or `【N†name】` as the
//! excerpts are headed (at most [`MAX_LABELED_MARKER`]; small models copy the header). The
//! [`MarkerFilter`] removes markers from the streamed text as it passes, holding back at
//! most one marker's length, and reports each marker's insertion point as a code-point
//! offset in the cleaned text (contract §6 `file_citation.index`).

/// The longest marker without a label, in characters; longer bracketed text is text.
pub const MAX_MARKER: usize = 8;

/// The longest `【N†name】` marker, in characters (a file name of up to ~70 characters).
pub const MAX_LABELED_MARKER: usize = 80;

/// A retrieved chunk a marker can name: marker `【N】` names `FileSources::list[N-1]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileSource {
    pub file_id: String,
    pub filename: String,
}

/// The chunks of this turn's file searches, numbered from 1 in the order they were shown.
#[derive(Debug, Clone, Default)]
pub struct FileSources {
    /// True when the request declared `file_search`: only then is text filtered.
    pub enabled: bool,
    pub list: Vec<FileSource>,
}

impl FileSources {
    /// The chunk marker `n` names (1-based), if any.
    pub fn get(&self, n: usize) -> Option<&FileSource> {
        n.checked_sub(1).and_then(|i| self.list.get(i))
    }
}

/// A marker found in the text: `index` is the code-point offset in the cleaned text,
/// `n` the chunk number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    pub index: usize,
    pub n: usize,
}

/// Streaming marker remover for one message.
#[derive(Debug, Default)]
pub struct MarkerFilter {
    held: String,
    held_chars: usize,
    /// Code points of cleaned text passed on so far.
    emitted: usize,
}

/// Parses a complete candidate `【…】`: the chunk number when it is a marker.
fn marker_number(s: &str) -> Option<usize> {
    let inner = s.strip_prefix('【')?.strip_suffix('】')?;
    let (head, _label) = inner.split_once('†').unwrap_or((inner, ""));
    let n = head.split_once(':').map_or(head, |(n, _)| n);
    let sub_ok = head.split_once(':').is_none_or(|(_, m)| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()));
    if n.is_empty() || n.len() > 3 || !n.bytes().all(|b| b.is_ascii_digit()) || !sub_ok {
        return None;
    }
    n.parse().ok()
}

/// Whether `s` (starting with `【`, not closed) can still become a marker.
fn could_be_marker(s: &str, chars: usize) -> bool {
    let inner = &s['【'.len_utf8()..];
    let (head, label) = match inner.split_once('†') {
        Some((h, l)) => (h, Some(l)),
        None => (inner, None),
    };
    if chars >= if label.is_some() { MAX_LABELED_MARKER } else { MAX_MARKER } {
        return false;
    }
    if label.is_some_and(|l| l.contains('\n')) {
        return false;
    }
    let (n, sub) = match head.split_once(':') {
        Some((n, m)) => (n, Some(m)),
        None => (head, None),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let n_ok = digits(n) && n.len() <= 3 && (!n.is_empty() || (sub.is_none() && label.is_none()));
    n_ok && sub.is_none_or(|m| digits(m) && (label.is_none() || !m.is_empty()))
}

impl MarkerFilter {
    /// Feeds one delta; returns the text to pass on and the markers completed in it.
    pub fn feed(&mut self, delta: &str) -> (String, Vec<Marker>) {
        let mut out = String::with_capacity(delta.len());
        let mut markers = Vec::new();
        for c in delta.chars() {
            self.push(c, &mut out, &mut markers);
        }
        (out, markers)
    }

    fn push(&mut self, c: char, out: &mut String, markers: &mut Vec<Marker>) {
        if self.held.is_empty() {
            if c == '【' {
                self.held.push(c);
                self.held_chars = 1;
            } else {
                out.push(c);
                self.emitted += 1;
            }
            return;
        }
        self.held.push(c);
        self.held_chars += 1;
        if c == '】' {
            let held = std::mem::take(&mut self.held);
            self.held_chars = 0;
            match marker_number(&held) {
                Some(n) => markers.push(Marker { index: self.emitted, n }),
                None => self.release(&held, out, markers),
            }
        } else if !could_be_marker(&self.held, self.held_chars) {
            let held = std::mem::take(&mut self.held);
            self.held_chars = 0;
            self.release(&held, out, markers);
        }
    }

    /// Passes on held text that is not a marker. Its first `【` is text; the rest is fed
    /// again, since a marker may start inside it.
    fn release(&mut self, held: &str, out: &mut String, markers: &mut Vec<Marker>) {
        let mut chars = held.chars();
        if let Some(first) = chars.next() {
            out.push(first);
            self.emitted += 1;
        }
        for c in chars {
            self.push(c, out, markers);
        }
    }

    /// Ends the message: held text that never became a marker is passed on.
    pub fn flush(&mut self) -> String {
        self.held_chars = 0;
        let held = std::mem::take(&mut self.held);
        self.emitted += held.chars().count();
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pieces: &[&str]) -> (String, Vec<Marker>) {
        let mut f = MarkerFilter::default();
        let (mut text, mut all) = (String::new(), Vec::new());
        for p in pieces {
            let (t, m) = f.feed(p);
            text.push_str(&t);
            all.extend(m);
        }
        text.push_str(&f.flush());
        (text, all)
    }

    #[test]
    fn markers_are_removed_across_delta_boundaries() {
        let (text, m) = run(&["Caf\u{e9} opens at 9【", "1", "】. Closes at 5【2:0", "】【3†a.md】."]);
        assert_eq!(text, "Café opens at 9. Closes at 5.");
        assert_eq!(m, vec![Marker { index: 15, n: 1 }, Marker { index: 28, n: 2 }, Marker { index: 28, n: 3 }]);
    }

    #[test]
    fn non_markers_pass_unchanged_and_nothing_is_held_long() {
        let (text, m) = run(&["【note】 and 【12345】 and 【", "【4】x and 【7"]);
        assert_eq!(text, "【note】 and 【12345】 and 【x and 【7");
        assert_eq!(m, vec![Marker { index: 24, n: 4 }]);
        let mut f = MarkerFilter::default();
        let long = format!("【1†{}.pdf】", "n".repeat(MAX_LABELED_MARKER));
        let (t, _) = f.feed(&long);
        assert_eq!(t, long, "longer than a labeled marker: text");
        // A label across lines is text as soon as the line breaks.
        let (t, m) = f.feed("【2†notes\nmore】");
        assert_eq!((t.as_str(), m.len()), ("【2†notes\nmore】", 0));
    }

    /// The excerpt header the model is shown, copied whole, is a citation.
    #[test]
    fn copied_excerpt_headers_are_markers() {
        let (text, m) = run(&["Vacation is 30 days【1†employee-handbook-2026", ".md】 and", " more【2†a.md】."]);
        assert_eq!(text, "Vacation is 30 days and more.");
        assert_eq!(m, vec![Marker { index: 19, n: 1 }, Marker { index: 28, n: 2 }]);
    }
}
