//! Attribute filters of `file_search` and vector-store search (contract §2 "Filters", the SDK's
//! `ComparisonFilter` / `CompoundFilter`):
//! - comparison `{type: eq|ne|gt|gte|lt|lte|in|nin, key: string, value}` where `value` is a
//!   string, number or boolean (`in`/`nin`: an array of strings and numbers);
//! - compound `{type: and|or, filters: [comparison | compound, …]}`.
//!
//! [`validate`] checks the shape (the HTTP layer answers 400 with its message);
//! [`matches`] evaluates a validated filter on a chunk's `attributes`.

use std::cmp::Ordering;

use serde_json::{Map, Value};

const COMPARISONS: [&str; 8] = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"];
/// Deepest compound nesting accepted (the SDK types allow any depth; this bounds recursion).
const MAX_DEPTH: usize = 16;

/// Checks that `filter` is a comparison or compound filter. `Err` is a message naming the
/// offending part, e.g. an unknown operator `unknown filter type 'like' (expected one of eq,
/// ne, gt, gte, lt, lte, in, nin, and, or)`.
pub fn validate(filter: &Value) -> Result<(), String> {
    check(filter, "filters", 0)
}

fn check(filter: &Value, at: &str, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{at}: filters are nested more than {MAX_DEPTH} levels deep"));
    }
    let Some(obj) = filter.as_object() else {
        return Err(format!("{at}: a filter must be an object with a 'type'"));
    };
    let Some(kind) = obj.get("type").and_then(Value::as_str) else {
        return Err(format!("{at}.type: missing or not a string"));
    };
    match kind {
        "and" | "or" => {
            if let Some(extra) = obj.keys().find(|k| !matches!(k.as_str(), "type" | "filters")) {
                return Err(format!("{at}: unknown field '{extra}' in a compound filter"));
            }
            let Some(list) = obj.get("filters").and_then(Value::as_array) else {
                return Err(format!("{at}.filters: a compound filter needs an array of filters"));
            };
            for (i, f) in list.iter().enumerate() {
                check(f, &format!("{at}.filters[{i}]"), depth + 1)?;
            }
            Ok(())
        }
        k if COMPARISONS.contains(&k) => {
            if let Some(extra) = obj.keys().find(|k| !matches!(k.as_str(), "type" | "key" | "value")) {
                return Err(format!("{at}: unknown field '{extra}' in a comparison filter"));
            }
            if !obj.get("key").is_some_and(Value::is_string) {
                return Err(format!("{at}.key: missing or not a string"));
            }
            let value = obj.get("value").ok_or_else(|| format!("{at}.value: missing"))?;
            let scalar = |v: &Value| v.is_string() || v.is_number() || v.is_boolean();
            match (k, value) {
                ("in" | "nin", Value::Array(items)) if items.iter().all(|v| v.is_string() || v.is_number()) => Ok(()),
                ("in" | "nin", _) => Err(format!("{at}.value: '{k}' needs an array of strings or numbers")),
                (_, v) if scalar(v) => Ok(()),
                _ => Err(format!("{at}.value: '{k}' needs a string, number or boolean")),
            }
        }
        other => Err(format!(
            "{at}.type: unknown filter type '{other}' (expected one of eq, ne, gt, gte, lt, lte, in, nin, and, or)"
        )),
    }
}

/// Whether `attributes` satisfy `filter` (assumed to pass [`validate`]; an invalid filter
/// matches nothing). A missing attribute fails every comparison except `ne` and `nin`.
/// Numbers compare numerically, strings by code points (ISO dates order correctly), booleans
/// only for (in)equality; values of different types are never equal or ordered.
pub fn matches(filter: &Value, attributes: &Map<String, Value>) -> bool {
    let Some(obj) = filter.as_object() else { return false };
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "and" => obj.get("filters").and_then(Value::as_array).is_some_and(|fs| fs.iter().all(|f| matches(f, attributes))),
        "or" => obj.get("filters").and_then(Value::as_array).is_some_and(|fs| fs.iter().any(|f| matches(f, attributes))),
        _ => {
            let (Some(key), Some(want)) = (obj.get("key").and_then(Value::as_str), obj.get("value")) else {
                return false;
            };
            let got = attributes.get(key);
            let eq = |w: &Value| got.is_some_and(|g| equal(g, w));
            let ord = || got.and_then(|g| compare(g, want));
            match kind {
                "eq" => eq(want),
                "ne" => !eq(want),
                "gt" => ord() == Some(Ordering::Greater),
                "gte" => matches!(ord(), Some(Ordering::Greater | Ordering::Equal)),
                "lt" => ord() == Some(Ordering::Less),
                "lte" => matches!(ord(), Some(Ordering::Less | Ordering::Equal)),
                "in" => want.as_array().is_some_and(|ws| ws.iter().any(eq)),
                "nin" => want.as_array().is_some_and(|ws| !ws.iter().any(eq)),
                _ => false,
            }
        }
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs() -> Map<String, Value> {
        json!({"lang":"fr","year":2021,"draft":false,"date":"2024-03-01"}).as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn comparisons() {
        let a = attrs();
        let m = |f: Value| {
            assert!(validate(&f).is_ok(), "{f}");
            matches(&f, &a)
        };
        assert!(m(json!({"type":"eq","key":"lang","value":"fr"})));
        assert!(!m(json!({"type":"eq","key":"lang","value":"en"})));
        assert!(m(json!({"type":"eq","key":"year","value":2021.0})));
        assert!(m(json!({"type":"ne","key":"missing","value":"x"})));
        assert!(!m(json!({"type":"eq","key":"missing","value":"x"})));
        assert!(m(json!({"type":"gt","key":"year","value":2020})));
        assert!(!m(json!({"type":"gt","key":"year","value":2021})));
        assert!(m(json!({"type":"gte","key":"year","value":2021})));
        assert!(m(json!({"type":"lt","key":"date","value":"2024-12-31"})));
        assert!(!m(json!({"type":"lte","key":"lang","value":5})), "string vs number is not ordered");
        assert!(m(json!({"type":"eq","key":"draft","value":false})));
        assert!(m(json!({"type":"in","key":"lang","value":["de","fr"]})));
        assert!(m(json!({"type":"nin","key":"year","value":[1999, 2000]})));
        assert!(!m(json!({"type":"nin","key":"year","value":[2021]})));
    }

    #[test]
    fn compounds() {
        let a = attrs();
        let f = json!({"type":"and","filters":[{"type":"eq","key":"lang","value":"fr"},
            {"type":"or","filters":[{"type":"lt","key":"year","value":2000},{"type":"eq","key":"draft","value":false}]}]});
        assert!(validate(&f).is_ok());
        assert!(matches(&f, &a));
        let g = json!({"type":"and","filters":[{"type":"eq","key":"lang","value":"fr"},{"type":"gt","key":"year","value":2030}]});
        assert!(!matches(&g, &a));
        assert!(!matches(&json!({"type":"or","filters":[]}), &a));
        assert!(matches(&json!({"type":"and","filters":[]}), &a));
    }

    #[test]
    fn invalid_filters_are_named() {
        let e = validate(&json!({"type":"like","key":"a","value":"b"})).unwrap_err();
        assert!(e.contains("'like'"), "{e}");
        let e = validate(&json!({"type":"and","filters":[{"type":"regex","key":"a","value":"b"}]})).unwrap_err();
        assert!(e.contains("filters.filters[0].type") && e.contains("'regex'"), "{e}");
        assert!(validate(&json!({"type":"eq","key":"a"})).is_err());
        assert!(validate(&json!({"type":"eq","key":"a","value":{"x":1}})).is_err());
        assert!(validate(&json!({"type":"in","key":"a","value":"x"})).is_err());
        assert!(validate(&json!({"type":"eq","key":1,"value":"x"})).is_err());
        assert!(validate(&json!("eq")).is_err());
        let mut deep = json!({"type":"eq","key":"a","value":1});
        for _ in 0..20 {
            deep = json!({"type":"and","filters":[deep]});
        }
        assert!(validate(&deep).unwrap_err().contains("nested"));
    }
}
