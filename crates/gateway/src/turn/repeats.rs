//! Gateway calls the model makes again with the same arguments in one turn (issue 28): a
//! small model may call one tool over and over. A repeat is not run again; the model is
//! told that it already has the result (the first call's id). After [`MAX_REPEATS`]
//! repeats, the next round goes upstream without tools, so the turn ends in an answer.

use std::collections::HashMap;

use serde_json::Value;

/// Repeats after which the tools are withdrawn for the turn's last round.
pub const MAX_REPEATS: usize = 2;

/// The gateway calls run in this turn, by tool name and arguments.
#[derive(Debug, Default)]
pub struct Repeats {
    /// `(name, canonical arguments)` → the first call's id.
    seen: HashMap<(String, String), String>,
    /// Calls not run because they repeated one.
    pub count: usize,
}

impl Repeats {
    /// The answer for a call of `name` with `arguments` if it repeats a call run earlier
    /// in the turn (and counts it); `None` (and the call is noted) for a new one.
    pub fn check(&mut self, name: &str, arguments: &Value, call_id: &str) -> Option<String> {
        let key = (name.to_string(), canonical(arguments));
        if let Some(first) = self.seen.get(&key) {
            self.count += 1;
            return Some(format!(
                "error: '{name}' was already called with these same arguments in this response (call {first}), and its result is above. \
                 It was not run again: use that result, call something else, or answer now."
            ));
        }
        self.seen.insert(key, call_id.to_string());
        None
    }

    /// True once the turn's tools should be withdrawn.
    pub fn exhausted(&self) -> bool {
        self.count >= MAX_REPEATS
    }
}

/// `v` as JSON text with every object's keys in order, so that `{"a":1,"b":2}` and
/// `{"b":2,"a":1}` are the same call.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(k) {
                    write(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repeats_are_told_apart_from_new_calls() {
        let mut r = Repeats::default();
        assert!(r.check("pv", &json!({"a": 1, "b": [1, {"y": 2, "x": 1}]}), "c1").is_none());
        assert!(r.check("pv", &json!({"a": 2}), "c2").is_none(), "other arguments");
        assert!(r.check("other", &json!({"a": 1, "b": [1, {"x": 1, "y": 2}]}), "c3").is_none(), "another tool");
        let again = r.check("pv", &json!({"b": [1, {"x": 1, "y": 2}], "a": 1}), "c4").expect("a repeat");
        assert!(again.contains("call c1"), "{again}");
        assert!(!r.exhausted());
        assert!(r.check("pv", &json!({"a": 2}), "c5").is_some());
        assert!(r.exhausted());
        assert_eq!(canonical(&json!({"b": "x\"", "a": null})), r#"{"a":null,"b":"x\""}"#);
    }
}
