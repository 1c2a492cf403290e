//! How a custom tool call is written as a function call in the transcript and upstream:
//! its raw input as the one string argument [`INPUT_PARAM`] (contract §2 `custom`).

use serde_json::{json, Value};

/// The single string parameter a custom tool has upstream.
pub const INPUT_PARAM: &str = "input";

/// The `input` of a custom tool call from its upstream `arguments`: the string value of
/// [`INPUT_PARAM`], else the only string value, else the raw arguments text.
pub fn input_from_arguments(arguments: &str) -> String {
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) {
        if let Some(Value::String(s)) = map.get(INPUT_PARAM) {
            return s.clone();
        }
        if let (1, Some(Value::String(s))) = (map.len(), map.values().next()) {
            return s.clone();
        }
    }
    arguments.to_string()
}

/// The upstream `arguments` for a replayed custom call's `input`.
pub fn arguments_from_input(input: &str) -> String {
    json!({INPUT_PARAM: input}).to_string()
}

