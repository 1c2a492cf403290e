//! Duplicate keys anywhere in a JSON body (issue 28). A typed struct refuses a repeated
//! field, but values read as maps or as `serde_json::Value` (input items, tools,
//! `metadata`, …) keep the last one silently; this check finds the first repeated key at
//! any depth, so that nested duplicates are refused as top-level ones are.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A repeated key: the path of the object that holds it (`input[0].content[1]`, empty at
/// the top level) and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    pub path: String,
    pub key: String,
}

impl DuplicateKey {
    /// The path of the repeated field itself (`input[0].role`).
    pub fn field(&self) -> String {
        if self.path.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{}", self.path, self.key)
        }
    }
}

/// The first repeated key in the JSON text `body`, if any; `None` too when `body` is not
/// JSON (its parser says why).
pub fn find(body: &[u8]) -> Option<DuplicateKey> {
    let mut de = serde_json::Deserializer::from_slice(body);
    match Walk.deserialize(&mut de) {
        Ok(()) => None,
        Err(e) => Found::take(&e),
    }
}

/// One step of a path.
enum Step<'a> {
    Key(Cow<'a, str>),
    Index(usize),
}

/// The error that carries a found duplicate out of serde: its path and key between tags
/// (serde_json appends a position to every message).
struct Found;

impl Found {
    const TAG: char = '\u{1}';

    fn error<E: de::Error>(path: &str, key: &str) -> E {
        E::custom(format!("{0}{path}{0}{key}{0}", Self::TAG))
    }

    /// The path and key an error carries, if it is a found duplicate's.
    fn parse(text: &str) -> Option<(&str, &str)> {
        let mut parts = text.strip_prefix(Self::TAG)?.split(Self::TAG);
        Some((parts.next()?, parts.next()?))
    }

    fn take(e: &serde_json::Error) -> Option<DuplicateKey> {
        let text = e.to_string();
        let (path, key) = Self::parse(&text)?;
        Some(DuplicateKey { path: path.to_string(), key: key.to_string() })
    }
}

/// Walks one value.
struct Walk;

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Walk)
    }
}

/// Walks one value found at a step of its parent, adding the step to a found duplicate's path.
struct At<'a>(Step<'a>);

impl<'de> DeserializeSeed<'de> for At<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Walk).map_err(|e| {
            let text = e.to_string();
            let Some((path, key)) = Found::parse(&text) else { return e };
            let path = match &self.0 {
                Step::Key(k) if path.is_empty() || path.starts_with('[') => format!("{k}{path}"),
                Step::Key(k) => format!("{k}.{path}"),
                Step::Index(i) if path.is_empty() || path.starts_with('[') => format!("[{i}]{path}"),
                Step::Index(i) => format!("[{i}].{path}"),
            };
            Found::error(&path, key)
        })
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(At(Step::Index(i)))?.is_some() {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Most objects have a few keys: a list is faster than a set until it grows.
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut set: Option<std::collections::HashSet<Cow<'de, str>>> = None;
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let key = key.0;
            let repeated = match &mut set {
                Some(s) => !s.insert(key.clone()),
                None => {
                    let r = keys.contains(&key);
                    if !r {
                        keys.push(key.clone());
                        if keys.len() > 16 {
                            set = Some(keys.drain(..).collect());
                        }
                    }
                    r
                }
            };
            if repeated {
                return Err(Found::error("", &key));
            }
            map.next_value_seed(At(Step::Key(key)))?;
        }
        Ok(())
    }
}

/// A key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(body: &str) -> Option<(String, String)> {
        find(body.as_bytes()).map(|d| (d.path, d.key))
    }

    #[test]
    fn finds_the_first_repeated_key_at_any_depth() {
        assert_eq!(dup(r#"{"a":1,"b":{"c":[1,{"d":1}]}}"#), None);
        assert_eq!(dup(r#"{"model":"a","model":"b"}"#), Some((String::new(), "model".into())));
        assert_eq!(dup(r#"{"input":[{"role":"user"},{"role":"user","role":"x"}]}"#), Some(("input[1]".into(), "role".into())));
        assert_eq!(dup(r#"{"a":{"b":{"c":1,"c":2}}}"#), Some(("a.b".into(), "c".into())));
        assert_eq!(dup(r#"[[{"k":1,"k\u0000":2,"k":3}]]"#), Some(("[0][0]".into(), "k".into())));
        assert_eq!(dup(r#"{"e\"q":1,"e\"q":2}"#), Some((String::new(), "e\"q".into())));
        let many: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        assert_eq!(dup(&format!("{{{},\"k39\":0}}", many.join(","))), Some((String::new(), "k39".into())));
        assert_eq!(dup("{not json"), None);
        assert_eq!(dup(r#"{"t":[{"p":{"a":1,"a":2}}]}"#), Some(("t[0].p".into(), "a".into())));
        let d = find(br#"{"x":[{"y":1,"y":1}]}"#).unwrap();
        assert_eq!(d.field(), "x[0].y");
    }
}
