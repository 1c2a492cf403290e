//! Near-JSON call arguments, repaired (issue 17): what weak models and local servers write
//! instead of a JSON object. Repaired: trailing commas, single-quoted strings, unquoted keys,
//! Python's `True`/`False`/`None`, a JSON object inside a JSON string (`"{\"city\":\"Oslo\"}"`
//! as the whole arguments) and a code fence around the object. Anything else (a missing
//! bracket, a comment, a bare word as a value) is not guessed at: it stays as written.
//!
//! The repair is a minimal edit: the model's valid text is kept byte for byte, only the
//! broken tokens are rewritten. That is what lets a client call's arguments stream as they
//! come ([`streamable_len`]): what was streamed stays a prefix of the repaired text, so the
//! deltas add up to it. The crates that parse such text (`json5`, `llm_json`, `jsonrepair`)
//! re-serialize the value, which loses that prefix, and `json5` takes no Python literals nor
//! fences; hence this small repairer.

use std::borrow::Cow;

/// Arguments past this size are not checked as they stream (the prefix check re-parses the
/// text at every fragment, so its cost grows with the square of the size): their deltas
/// wait for the end of the call.
const LIVE_LIMIT: usize = 16 * 1024;

/// The repaired arguments: `Some` JSON object text when `arguments` are not a JSON object
/// but a repair gives one, `None` when they are one already or cannot be repaired.
pub fn repair(arguments: &str) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(_)) => None,
        // A JSON object inside a JSON string.
        Ok(serde_json::Value::String(inner)) => repaired_object(&inner).map(Cow::into_owned),
        Ok(_) => None,
        Err(_) => repaired_object(arguments).map(Cow::into_owned),
    }
}

/// `text` as a JSON object: itself, without its code fence (one), or with its tokens
/// rewritten.
fn repaired_object(text: &str) -> Option<Cow<'_, str>> {
    if is_object(text) {
        return Some(Cow::Borrowed(text));
    }
    let inner = unfenced(text).unwrap_or(text);
    if is_object(inner) {
        return Some(Cow::Borrowed(inner));
    }
    rewrite(inner).filter(|t| is_object(t)).map(Cow::Owned)
}

fn is_object(text: &str) -> bool {
    matches!(serde_json::from_str::<serde_json::Value>(text), Ok(serde_json::Value::Object(_)))
}

/// The text inside a ```` ``` ```` fence (with or without a language tag) that is all of
/// `text`.
fn unfenced(text: &str) -> Option<&str> {
    let t = text.trim();
    let body = t.strip_prefix("```")?.strip_suffix("```")?;
    // The language tag runs to the end of the first line.
    let body = match body.find('\n') {
        Some(nl) if body[..nl].chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ' ') => &body[nl + 1..],
        _ => body,
    };
    Some(body.trim())
}

/// Rewrites the near-JSON tokens of `s`, keeping everything else as it is: `'…'` strings
/// become `"…"`, a bare key is quoted, `True`/`False`/`None` become `true`/`false`/`null`,
/// a comma before `}` or `]` goes. `None` on a bare word that is no such literal, or on an
/// unterminated string.
fn rewrite(s: &str) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    let mut i = 0;
    let next_significant = |from: usize| chars[from..].iter().copied().find(|c| !c.is_whitespace());
    while let Some(&c) = chars.get(i) {
        match c {
            '"' => {
                out.push('"');
                i += 1;
                loop {
                    let ch = *chars.get(i)?;
                    out.push(ch);
                    i += 1;
                    match ch {
                        '\\' => {
                            out.push(*chars.get(i)?);
                            i += 1;
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                out.push('"');
                i += 1;
                loop {
                    let ch = *chars.get(i)?;
                    i += 1;
                    match ch {
                        '\\' => {
                            let escaped = *chars.get(i)?;
                            i += 1;
                            if escaped == '\'' {
                                out.push('\'');
                            } else {
                                out.push('\\');
                                out.push(escaped);
                            }
                        }
                        '"' => out.push_str("\\\""),
                        '\'' => break,
                        other => out.push(other),
                    }
                }
                out.push('"');
            }
            ',' => {
                if !matches!(next_significant(i + 1), Some('}' | ']')) {
                    out.push(',');
                }
                i += 1;
            }
            c if c.is_ascii_digit() || c == '-' => {
                while let Some(&d) = chars.get(i).filter(|d| d.is_ascii_digit() || matches!(d, '-' | '+' | '.' | 'e' | 'E')) {
                    out.push(d);
                    i += 1;
                }
            }
            c if c.is_alphabetic() || c == '_' || c == '$' => {
                let start = i;
                while chars.get(i).is_some_and(|d| d.is_alphanumeric() || *d == '_' || *d == '$') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                if next_significant(i) == Some(':') {
                    out.push('"');
                    out.push_str(&word);
                    out.push('"');
                } else {
                    out.push_str(match word.as_str() {
                        "true" | "True" => "true",
                        "false" | "False" => "false",
                        "null" | "None" => "null",
                        _ => return None,
                    });
                }
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    Some(out)
}

/// How much of a call's arguments so far may stream: `Some(n)` while they are the beginning
/// of a JSON object (`n` bytes, less a trailing comma, which a repair may drop), `None` once
/// they cannot be (their rest waits for the end of the call and its repair). Whitespace
/// alone streams nothing yet.
pub fn streamable_len(arguments: &str) -> Option<usize> {
    let t = arguments.trim_start();
    if t.is_empty() {
        return Some(0);
    }
    if !t.starts_with('{') || arguments.len() > LIVE_LIMIT {
        return None;
    }
    match serde_json::from_str::<serde::de::IgnoredAny>(arguments) {
        Ok(_) => Some(arguments.len()),
        Err(e) if e.is_eof() => {
            let kept = arguments.trim_end();
            Some(kept.strip_suffix(',').map_or(arguments.len(), str::len))
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn repaired(s: &str) -> Value {
        serde_json::from_str(&repair(s).unwrap_or_else(|| panic!("no repair of {s}"))).unwrap()
    }

    #[test]
    fn valid_objects_are_left_alone() {
        assert_eq!(repair(r#"{"city": "Oslo"}"#), None);
        assert_eq!(repair(r#" {} "#), None);
    }

    #[test]
    fn trailing_commas_go() {
        assert_eq!(repair(r#"{"city": "Oslo", "days": [1, 2,],}"#).unwrap(), r#"{"city": "Oslo", "days": [1, 2]}"#);
        assert_eq!(repaired("{\"a\": 1 ,\n}"), json!({"a": 1}));
    }

    #[test]
    fn single_quotes_become_double_quotes() {
        assert_eq!(repaired(r#"{'city': 'Oslo'}"#), json!({"city": "Oslo"}));
        assert_eq!(repaired(r#"{'q': 'it\'s "fine"'}"#), json!({"q": "it's \"fine\""}));
        assert_eq!(repaired(r#"{'path': 'a\\b\n'}"#), json!({"path": "a\\b\n"}));
    }

    #[test]
    fn unquoted_keys_are_quoted() {
        assert_eq!(repair(r#"{city: "Oslo", max_days: 3}"#).unwrap(), r#"{"city": "Oslo", "max_days": 3}"#);
        assert_eq!(repaired(r#"{nested: {deep_key : [ {x: 1e3} ]}}"#), json!({"nested": {"deep_key": [{"x": 1000.0}]}}));
    }

    #[test]
    fn python_literals_become_json_ones() {
        assert_eq!(repaired(r#"{"a": True, "b": False, "c": None, "d": [True]}"#), json!({"a": true, "b": false, "c": null, "d": [true]}));
        // A key spelled like one stays as it is.
        assert_eq!(repaired(r#"{True: None}"#), json!({"True": null}));
    }

    #[test]
    fn an_object_inside_a_string_is_the_object() {
        assert_eq!(repaired(r#""{\"city\":\"Oslo\"}""#), json!({"city": "Oslo"}));
        assert_eq!(repaired(r#""{'city': 'Oslo',}""#), json!({"city": "Oslo"}));
        assert_eq!(repair(r#""Oslo""#), None, "a string that holds no object");
    }

    #[test]
    fn code_fences_are_removed() {
        assert_eq!(repaired("```json\n{\"city\": \"Oslo\"}\n```"), json!({"city": "Oslo"}));
        assert_eq!(repaired("```\n{city: 'Oslo'}\n```"), json!({"city": "Oslo"}));
        assert_eq!(repaired("  ```{\"a\":1}```  "), json!({"a": 1}));
    }

    #[test]
    fn strings_keep_their_contents() {
        // Words, commas before brackets and quotes inside strings are not tokens.
        assert_eq!(repaired(r#"{'q': "None, True ]", x: 'a,}'}"#), json!({"q": "None, True ]", "x": "a,}"}));
        assert_eq!(repaired(r#"{"emoji": 'Zürich ☀', }"#), json!({"emoji": "Zürich ☀"}));
    }

    #[test]
    fn what_cannot_be_repaired_is_not_guessed() {
        for s in ["{\"city\": Oslo}", "{\"a\": 1", "{'a': 'unterminated}", "Oslo", "", "[1, 2]", "{\"a\": 1} trailing", "```json\n{\"a\":\n```"] {
            assert_eq!(repair(s), None, "{s:?}");
        }
    }

    #[test]
    fn the_repair_keeps_a_streamable_prefix() {
        // Whatever streamed while the text was the beginning of an object is a prefix of the
        // repaired text, at every cut.
        for s in [r#"{"city": "Oslo", 'days': 3, "hot": True,}"#, "{\"a\": [1, 2,],\n \"b\": None }", r#"{"x": {"y": 1,}, z: 'w'}"#] {
            let fixed = repair(s).unwrap();
            for cut in (0..=s.len()).filter(|c| s.is_char_boundary(*c)) {
                let mut streamed = 0;
                for end in (0..=cut).filter(|c| s.is_char_boundary(*c)) {
                    match streamable_len(&s[..end]) {
                        Some(n) => streamed = streamed.max(n),
                        None => break,
                    }
                }
                assert!(fixed.starts_with(&s[..streamed]), "{s:?} cut at {cut}: streamed {:?}, repaired {fixed:?}", &s[..streamed]);
            }
        }
    }

    proptest::proptest! {
        /// Whatever the text, neither function panics, a repair is a JSON object, and
        /// nested fences are not unwrapped one by one (no deep recursion).
        #[test]
        fn any_text_is_safe(s in "(```|[{}\\[\\]'\",:a-zA-Z0-9 \n\\\\])*") {
            if let Some(fixed) = repair(&s) {
                proptest::prop_assert!(is_object(&fixed), "{fixed:?}");
            }
            let _ = streamable_len(&s);
        }

        /// Near-JSON made of objects with quoted or bare keys, single or double quotes,
        /// Python literals and trailing commas: repaired to the same value as its JSON form,
        /// and what streamed at any cut is a prefix of the repair.
        #[test]
        fn near_json_is_repaired_to_its_value(
            fields in proptest::collection::vec(("[a-z][a-z0-9_]{0,6}", 0..4u8, 0..3u8, proptest::arbitrary::any::<bool>()), 1..6),
            trailing in proptest::arbitrary::any::<bool>(),
        ) {
            let (mut near, mut want) = (String::from("{"), serde_json::Map::new());
            for (i, (key, value, key_style, space)) in fields.iter().enumerate() {
                if i > 0 {
                    near.push(',');
                }
                if *space {
                    near.push(' ');
                }
                match key_style {
                    0 => near.push_str(&format!("\"{key}\"")),
                    1 => near.push_str(&format!("'{key}'")),
                    _ => near.push_str(key),
                }
                let (text, v) = match value {
                    0 => ("True".to_string(), json!(true)),
                    1 => ("None".to_string(), Value::Null),
                    2 => (format!("'it\\'s {key}'"), json!(format!("it's {key}"))),
                    _ => (format!("[1, \"{key}\",]"), json!([1, key])),
                };
                near.push_str(": ");
                near.push_str(&text);
                want.insert(key.to_string(), v);
            }
            if trailing {
                near.push_str(", ");
            }
            near.push('}');
            let fixed = repair(&near).unwrap_or_else(|| near.clone());
            proptest::prop_assert_eq!(serde_json::from_str::<Value>(&fixed).ok(), Some(Value::Object(want)), "{}", near);
            let mut streamed = 0;
            for end in 0..=near.len() {
                match streamable_len(&near[..end]) {
                    Some(n) => streamed = streamed.max(n),
                    None => break,
                }
            }
            proptest::prop_assert!(fixed.starts_with(&near[..streamed]), "{} streamed {:?}", near, &near[..streamed]);
        }
    }

    #[test]
    fn deep_fences_are_not_unwrapped_one_by_one() {
        let deep = format!("{}{{\"a\":1}}{}", "```".repeat(20_000), "```".repeat(20_000));
        assert_eq!(repair(&deep), None);
        assert_eq!(repaired("```\n{\"a\":1}\n```"), json!({"a": 1}));
    }

    #[test]
    fn streamable_len_stops_where_json_breaks() {
        assert_eq!(streamable_len("  "), Some(0));
        assert_eq!(streamable_len(r#"{"a": 1, "#), Some(7));
        assert_eq!(streamable_len(r#"{"a": tr"#), Some(8));
        assert_eq!(streamable_len(r#"{"a": 1}"#), Some(8));
        assert_eq!(streamable_len(r#"{"a": T"#), None);
        assert_eq!(streamable_len(r#"{'a'"#), None);
        assert_eq!(streamable_len(r#""{\"a"#), None, "an object inside a string waits");
        assert_eq!(streamable_len("```json"), None, "a fence waits");
    }
}
