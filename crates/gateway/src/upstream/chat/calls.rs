//! Which call a chat tool-call fragment belongs to. Servers identify a call by its
//! `index`, and some also by its `id`: Ollama streams two whole calls, each with its own
//! `id`, both at `index` 0; others send both calls' headers first, then each one's
//! arguments by `index`. [`CallSlots`] gives every call of a round its own number, in the
//! order calls first appear: the `index` of the neutral [`crate::upstream::UpstreamEvent::ToolCall`].

/// The calls of one round as the upstream identified them.
#[derive(Debug, Default)]
pub struct CallSlots {
    /// `(index, id)` of each call, in order of first appearance; the position is the call's
    /// number. `id` is the first non-empty id the call came with.
    calls: Vec<(usize, Option<String>)>,
}

impl CallSlots {
    /// The number of the call a fragment at `index` with `id` belongs to; `named`: the
    /// fragment carries a function name (a call's first fragment does).
    ///
    /// - An `index` not seen before is a new call.
    /// - A new `id` at a used `index` is a new call when the fragment is named (a whole call
    ///   under a reused index); unnamed, it continues the latest call there (a server that
    ///   sends a fresh id with every fragment).
    /// - An `id` already seen at that `index` is that call; a fragment without `id` continues
    ///   the latest call at its `index`.
    pub fn slot(&mut self, index: usize, id: Option<&str>, named: bool) -> usize {
        let id = id.filter(|i| !i.is_empty());
        let Some(latest) = self.calls.iter().rposition(|(i, _)| *i == index) else {
            self.calls.push((index, id.map(str::to_string)));
            return self.calls.len() - 1;
        };
        let Some(id) = id else { return latest };
        if let Some(known) = self.calls.iter().position(|(i, c)| *i == index && c.as_deref() == Some(id)) {
            return known;
        }
        match &mut self.calls[latest].1 {
            // The call's first fragments came without an id: this is its id.
            none @ None => {
                *none = Some(id.to_string());
                latest
            }
            Some(_) if named => {
                self.calls.push((index, Some(id.to_string())));
                self.calls.len() - 1
            }
            Some(_) => latest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_told_apart_by_index_and_id() {
        let mut s = CallSlots::default();
        // Ollama: two whole calls at index 0, each with its own id.
        assert_eq!(s.slot(0, Some("a"), true), 0);
        assert_eq!(s.slot(0, Some("b"), true), 1);
        assert_eq!(s.slot(0, None, false), 1, "no id: the latest call at the index");
        assert_eq!(s.slot(0, Some("a"), false), 0, "a known id is its call");
        // Interleaved by index: headers first, then arguments.
        let mut s = CallSlots::default();
        assert_eq!((s.slot(0, Some("x"), true), s.slot(1, Some("y"), true)), (0, 1));
        assert_eq!((s.slot(0, None, false), s.slot(1, None, false), s.slot(0, None, false)), (0, 1, 0));
        // A fresh id on every unnamed fragment continues the call; an id after none is its id.
        let mut s = CallSlots::default();
        assert_eq!((s.slot(0, Some("p"), true), s.slot(0, Some("q"), false), s.slot(0, Some(""), false)), (0, 0, 0));
        let mut s = CallSlots::default();
        assert_eq!((s.slot(3, None, true), s.slot(3, Some("z"), true), s.slot(3, Some("w"), true)), (0, 0, 1));
    }
}
