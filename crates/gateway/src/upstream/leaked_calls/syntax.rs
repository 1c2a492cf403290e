//! The call syntaxes that weak models and chat templates leave in the text when a server's
//! tool parser fails: Hermes/Qwen `<tool_call>{…}</tool_call>`, Mistral `[TOOL_CALLS][…]`,
//! Llama 3 `<|python_tag|>{…}`, and a whole answer that is one bare or ```` ```json ````-fenced
//! JSON object `{"name": …, "arguments"|"parameters": …}`. Pure functions over text.

use serde_json::Value;

/// A call recovered from text: the tool's model-visible name and its arguments' JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakedCall {
    /// The model-visible tool name.
    pub name: String,
    /// The arguments' JSON text (`{}` when the markup gave none).
    pub arguments: String,
}

/// A marker that opens a call written as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// Hermes/Qwen: `<tool_call>{"name":…,"arguments":…}</tool_call>`.
    Hermes,
    /// Mistral: `[TOOL_CALLS]` then a JSON array (or object) of calls.
    Mistral,
    /// Llama 3: `<|python_tag|>` then a JSON object `{"name":…,"parameters":…}`.
    PythonTag,
}

impl Marker {
    /// Every marker, in the order they are tried.
    pub const ALL: [Marker; 3] = [Marker::Hermes, Marker::Mistral, Marker::PythonTag];

    /// The marker as it appears in the text.
    pub fn text(self) -> &'static str {
        match self {
            Marker::Hermes => "<tool_call>",
            Marker::Mistral => "[TOOL_CALLS]",
            Marker::PythonTag => "<|python_tag|>",
        }
    }
}

/// The end of a Hermes call.
pub const HERMES_END: &str = "</tool_call>";

/// End-of-message tokens that servers sometimes print after a Llama 3 call.
pub const LLAMA_ENDS: [&str; 2] = ["<|eom_id|>", "<|eot_id|>"];

/// The keys a bare JSON call may start with (Llama 3's JSON form starts with `type`).
const BARE_KEYS: [&str; 5] = ["name", "arguments", "parameters", "type", "id"];

/// The earliest whole marker in `s`: its byte offset and which one.
pub fn find_marker(s: &str) -> Option<(usize, Marker)> {
    Marker::ALL.iter().filter_map(|m| s.find(m.text()).map(|p| (p, *m))).min_by_key(|(p, _)| *p)
}

/// The length in bytes of the longest end of `s` that is the beginning of a marker (text
/// that may still become one); 0 when none. Markers are ASCII, so the cut is a character
/// boundary.
pub fn partial_marker_len(s: &str) -> usize {
    Marker::ALL
        .iter()
        .filter_map(|m| {
            let t = m.text();
            (1..t.len()).rev().find(|&len| t.get(..len).is_some_and(|p| s.ends_with(p)))
        })
        .max()
        .unwrap_or(0)
}

/// Where a JSON object or array at the start of a growing text ends, found by scanning each
/// byte once (strings and escapes respected).
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    started: bool,
    /// Bytes of the text scanned so far.
    pos: usize,
    /// Where the value closed, once it has.
    closed: Option<usize>,
}

/// What [`JsonScan::scan`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// Not closed yet.
    Open,
    /// Closed: the byte offset just past its last `}` or `]`.
    Closed(usize),
    /// The text does not start (after whitespace) with `{` or `[`.
    NotJson,
}

impl JsonScan {
    /// Scans what `s` (the same text as before, grown) added since the last call.
    pub fn scan(&mut self, s: &str) -> Scan {
        if let Some(end) = self.closed {
            return Scan::Closed(end);
        }
        let bytes = s.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            self.pos += 1;
            if !self.started {
                match b {
                    b' ' | b'\t' | b'\n' | b'\r' => continue,
                    b'{' | b'[' => {
                        self.started = true;
                        self.depth = 1;
                        continue;
                    }
                    _ => return Scan::NotJson,
                }
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.closed = Some(self.pos);
                        return Scan::Closed(self.pos);
                    }
                }
                _ => {}
            }
        }
        Scan::Open
    }
}

/// The call a JSON object describes: `{"name": …, "arguments"|"parameters": …}`, with no
/// other keys than `type` and `id`. Arguments given as an object are its JSON text, as a
/// string that text as it is; absent or `null`, `{}` unless `need_arguments`.
pub fn call_of(v: &Value, need_arguments: bool) -> Option<LeakedCall> {
    let o = v.as_object()?;
    if o.keys().any(|k| !matches!(k.as_str(), "name" | "arguments" | "parameters" | "type" | "id")) {
        return None;
    }
    let name = o.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match o.get("arguments").or_else(|| o.get("parameters")) {
        None | Some(Value::Null) if need_arguments => return None,
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(args @ Value::Object(_)) => args.to_string(),
        Some(_) => return None,
    };
    Some(LeakedCall { name: name.to_string(), arguments })
}

/// The calls a JSON value describes (an object, or a non-empty array of them), when every
/// one names a tool `declared` says is one.
pub fn calls_of(v: &Value, declared: &dyn Fn(&str) -> bool) -> Option<Vec<LeakedCall>> {
    let calls: Vec<LeakedCall> = match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(|i| call_of(i, false)).collect::<Option<_>>()?,
        Value::Object(_) => vec![call_of(v, false)?],
        _ => return None,
    };
    calls.iter().all(|c| declared(&c.name)).then_some(calls)
}

/// The calls of a JSON text (trimmed), as [`calls_of`].
pub fn calls_in(text: &str, declared: &dyn Fn(&str) -> bool) -> Option<Vec<LeakedCall>> {
    let v: Value = serde_json::from_str(text.trim()).ok()?;
    calls_of(&v, declared)
}

/// Whether the start of an answer is, or may still become, a call written as a bare or
/// fenced JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bare {
    /// It is not one.
    No,
    /// Too short to tell.
    Maybe,
    /// It begins like one: `{"name"`, `{"arguments"`, `{"parameters"`, `{"type"` or `{"id"`, maybe after
    /// ```` ```json ````; the object starts at this byte offset.
    Yes(usize),
}

/// See [`Bare`]; `s` is the answer so far, leading whitespace included.
pub fn bare_start(s: &str) -> Bare {
    let t = s.trim_start();
    let mut at = s.len() - t.len();
    let body = if let Some(rest) = t.strip_prefix("```") {
        let Some(nl) = rest.find('\n') else {
            let info = rest.trim_end();
            return if info.len() <= 4 && "json".get(..info.len()).is_some_and(|p| p.eq_ignore_ascii_case(info)) { Bare::Maybe } else { Bare::No };
        };
        let info = rest.get(..nl).unwrap_or_default().trim();
        if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
            return Bare::No;
        }
        let after = rest.get(nl + 1..).unwrap_or_default();
        let body = after.trim_start();
        at += 3 + nl + 1 + (after.len() - body.len());
        body
    } else if t.len() < 3 && "```".starts_with(t) && !t.is_empty() {
        return Bare::Maybe;
    } else {
        t
    };
    if body.is_empty() {
        return Bare::Maybe;
    }
    let Some(r) = body.strip_prefix('{') else { return Bare::No };
    let r = r.trim_start();
    let Some(key) = r.strip_prefix('"') else {
        return if r.is_empty() { Bare::Maybe } else { Bare::No };
    };
    match key.find('"') {
        Some(end) if BARE_KEYS.contains(&key.get(..end).unwrap_or_default()) => Bare::Yes(at),
        Some(_) => Bare::No,
        None if BARE_KEYS.iter().any(|k| k.starts_with(key)) => Bare::Maybe,
        None => Bare::No,
    }
}

/// The call of a whole answer that is one bare or ```` ```json ````-fenced JSON object
/// `{"name": …, "arguments"|"parameters": …}` naming a declared tool.
pub fn bare_call(answer: &str, declared: &dyn Fn(&str) -> bool) -> Option<LeakedCall> {
    let t = answer.trim();
    let body = match t.strip_prefix("```") {
        Some(rest) => {
            let nl = rest.find('\n')?;
            let info = rest.get(..nl)?.trim();
            if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
                return None;
            }
            rest.get(nl + 1..)?.trim_end().strip_suffix("```")?
        }
        None => t,
    };
    let v: Value = serde_json::from_str(body.trim()).ok()?;
    call_of(&v, true).filter(|c| declared(&c.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markers_and_their_beginnings() {
        assert_eq!(find_marker("a [TOOL_CALLS] b <tool_call>"), Some((2, Marker::Mistral)));
        assert_eq!(find_marker("x<|python_tag|>{"), Some((1, Marker::PythonTag)));
        assert_eq!(find_marker("<tool_cal"), None);
        assert_eq!(partial_marker_len("see <tool_c"), 7);
        assert_eq!(partial_marker_len("a [TOOL"), 5);
        assert_eq!(partial_marker_len("x <|"), 2);
        assert_eq!(partial_marker_len("a < b"), 0);
        assert_eq!(partial_marker_len("ends with <"), 1);
        assert_eq!(partial_marker_len("é["), 1);
    }

    #[test]
    fn json_ends_are_found_byte_by_byte() {
        let mut s = JsonScan::default();
        let text = r#"  {"a": "}\"]", "b": [1, {"c": 2}]} tail"#;
        assert_eq!(s.scan(&text[..10]), Scan::Open);
        assert_eq!(s.scan(text), Scan::Closed(text.find(" tail").unwrap()));
        assert_eq!(s.scan(&format!("{text} {{")), Scan::Closed(text.find(" tail").unwrap()), "closed stays closed");
        assert_eq!(JsonScan::default().scan("  nope"), Scan::NotJson);
        assert_eq!(JsonScan::default().scan("[{\"é\": 1}]x"), Scan::Closed(11));
    }

    #[test]
    fn call_objects_and_arrays() {
        let yes = |_: &str| true;
        assert_eq!(
            call_of(&json!({"name": "w", "arguments": {"city": "Oslo"}}), true),
            Some(LeakedCall { name: "w".into(), arguments: r#"{"city":"Oslo"}"#.into() })
        );
        assert_eq!(call_of(&json!({"name": "w", "parameters": "{\"a\":1}"}), true).unwrap().arguments, "{\"a\":1}");
        assert_eq!(call_of(&json!({"name": "w"}), false).unwrap().arguments, "{}");
        assert_eq!(call_of(&json!({"name": "w"}), true), None);
        assert_eq!(call_of(&json!({"name": "w", "arguments": {}, "city": "x"}), false), None, "other keys");
        assert_eq!(call_of(&json!({"name": "", "arguments": {}}), false), None);
        assert_eq!(calls_of(&json!([{"name": "a"}, {"name": "b", "arguments": {}}]), &yes).map(|c| c.len()), Some(2));
        assert_eq!(calls_of(&json!([{"name": "a"}, 3]), &yes), None);
        assert_eq!(calls_of(&json!([]), &yes), None);
        assert_eq!(calls_in(r#" {"name": "a"} "#, &|n| n == "b"), None, "not declared");
    }

    #[test]
    fn bare_answers_are_told_early() {
        assert_eq!(bare_start("  "), Bare::Maybe);
        assert_eq!(bare_start("{"), Bare::Maybe);
        assert_eq!(bare_start("{\"na"), Bare::Maybe);
        assert_eq!(bare_start("{\"type\": \"function\", \"name\""), Bare::Yes(0), "Llama 3's JSON form");
        assert_eq!(bare_start("\n{ \"name\""), Bare::Yes(1));
        assert_eq!(bare_start("{\"parameters\": {"), Bare::Yes(0));
        assert_eq!(bare_start("{\"city\": 1}"), Bare::No);
        assert_eq!(bare_start("Hello"), Bare::No);
        assert_eq!(bare_start("`"), Bare::Maybe);
        assert_eq!(bare_start("```js"), Bare::Maybe);
        assert_eq!(bare_start("```py"), Bare::No);
        assert_eq!(bare_start("```JSO"), Bare::Maybe);
        assert_eq!(bare_start("```json\n  {\"name\": 1"), Bare::Yes(10));
        assert_eq!(bare_start("```python\n{"), Bare::No);
        let yes = |_: &str| true;
        let call = Some(LeakedCall { name: "w".into(), arguments: "{\"c\":1}".into() });
        assert_eq!(bare_call("{\"name\":\"w\",\"arguments\":{\"c\":1}}", &yes), call);
        assert_eq!(bare_call("```json\n{\"name\":\"w\",\"parameters\":{\"c\":1}}\n```\n", &yes), call);
        assert_eq!(bare_call("{\"name\":\"w\",\"arguments\":{\"c\":1}} and more", &yes), None);
        assert_eq!(bare_call("{\"name\":\"w\"}", &yes), None, "a bare object needs arguments");
    }
}
