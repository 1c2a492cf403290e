//! The order of a replayed history for a chat server: each assistant turn with calls is
//! followed at once by its results, in the order of the calls (chat templates without call
//! ids pair them by position). Linear in the number of entries.

use std::collections::{HashMap, HashSet};

use super::{Entry, Transcript};

impl Transcript {
    /// Puts each run of tool results into the order of the calls they answer: chat templates
    /// without call ids pair results with calls by position.
    pub(super) fn order_tool_results(&mut self) {
        // call_id → its position among the last assistant turn's calls.
        let mut order: HashMap<String, usize> = HashMap::new();
        let mut i = 0;
        while i < self.entries.len() {
            match &self.entries[i] {
                Entry::Assistant { calls, .. } => {
                    order = calls.iter().enumerate().map(|(n, c)| (c.call_id.clone(), n)).collect();
                    i += 1;
                }
                Entry::ToolResult { .. } => {
                    let start = i;
                    while i < self.entries.len() && matches!(self.entries[i], Entry::ToolResult { .. }) {
                        i += 1;
                    }
                    let pos = |e: &Entry| match e {
                        Entry::ToolResult { call_id, .. } => order.get(call_id).copied().unwrap_or(usize::MAX),
                        _ => usize::MAX,
                    };
                    self.entries[start..i].sort_by_key(pos);
                }
                Entry::User(_) | Entry::Upstream(_) => i += 1,
            }
        }
    }

    /// Makes each assistant turn with calls be followed at once by the results of its calls,
    /// as chat servers require ("an assistant message with 'tool_calls' must be followed by
    /// tool messages"). Replayed history may put items between a call and its output: an
    /// assistant message there (a gateway round that went on talking after a call) joins the
    /// turn, as do further calls; anything else (a user message, another turn) moves after the
    /// results. Valid orders are left as they are.
    /// Linear in the number of entries: results are found by call id, and what is moved
    /// aside stays in place (its slot is simply not consumed yet).
    pub(super) fn pair_tool_results(&mut self) {
        let mut slots: Vec<Option<Entry>> = std::mem::take(&mut self.entries).into_iter().map(Some).collect();
        // call_id → slot of the result answering it.
        let results: HashMap<String, usize> = slots
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e {
                Some(Entry::ToolResult { call_id, .. }) => Some((call_id.clone(), i)),
                _ => None,
            })
            .collect();
        let mut out: Vec<Entry> = Vec::with_capacity(slots.len());
        let mut cursor = 0;
        while cursor < slots.len() {
            let Some(e) = slots[cursor].take() else {
                cursor += 1;
                continue;
            };
            cursor += 1;
            let Entry::Assistant { mut text, mut calls, mut reasoning } = e else {
                out.push(e);
                continue;
            };
            // The turn's calls still waiting for their results.
            let mut waiting: HashSet<String> = calls.iter().map(|c| c.call_id.clone()).collect();
            let mut turn_results: Vec<usize> = Vec::new();
            // Entries right after the turn, before anything else: its results, and assistant
            // messages or calls that join the turn.
            let mut next = cursor;
            while !waiting.is_empty() && next < slots.len() {
                match &slots[next] {
                    None => {}
                    Some(Entry::ToolResult { call_id, .. }) if waiting.contains(call_id) => {
                        waiting.remove(call_id);
                        turn_results.push(next);
                    }
                    Some(Entry::Assistant { .. }) => {
                        let Some(Entry::Assistant { text: more, calls: more_calls, reasoning: more_reasoning }) = slots[next].take() else { break };
                        super::join_thought(&mut reasoning, more_reasoning);
                        if !more.is_empty() {
                            if !text.is_empty() {
                                text.push_str("\n\n");
                            }
                            text.push_str(&more);
                        }
                        waiting.extend(more_calls.iter().map(|c| c.call_id.clone()));
                        calls.extend(more_calls);
                    }
                    Some(_) => break,
                }
                next += 1;
            }
            // Past the first entry that is moved aside, the rest of the turn's results are
            // pulled forward, in their order; what lies between stays for later.
            let mut rest: Vec<usize> = waiting.iter().filter_map(|id| results.get(id).copied()).filter(|&i| i >= next).collect();
            rest.sort_unstable();
            turn_results.extend(rest);
            out.push(Entry::Assistant { text, calls, reasoning });
            out.extend(turn_results.into_iter().filter_map(|i| slots[i].take()));
        }
        self.entries = out;
    }
}
