//! Chat Completions wire types for a function-only upstream (contract §11).

use std::borrow::Cow;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A chat message sent upstream. `content` is a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ChatToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// An assistant tool call: `{id, type:"function", function:{name, arguments}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: ChatFunctionCall,
}

/// `function` of a tool call; `arguments` is a JSON string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatFunctionCall {
    pub name: String,
    pub arguments: String,
}

/// A streamed `chat.completion.chunk` (contract §11), decoded without copying: strings
/// borrow from the chunk text unless they contain escapes. Unknown fields (`timings`,
/// `logprobs`, …) are skipped.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChatChunk<'a> {
    /// The choice with `index` 0 (the gateway asks for one); other choices are read past
    /// without being kept, and no list is built per chunk.
    #[serde(default, borrow, rename = "choices", deserialize_with = "first_choice")]
    pub choice: Option<ChunkChoice<'a>>,
    #[serde(default)]
    pub usage: Option<ChatUsage>,
    #[serde(default)]
    pub error: Option<Value>,
    /// The message of the top-level error chunk vLLM sends mid-stream
    /// (`{"object":"error","message":…,"code":400}`; `object` is not read, so that ordinary
    /// chunks cost nothing more).
    #[serde(default, deserialize_with = "lenient_str")]
    pub message: Option<Cow<'a, str>>,
    /// That error chunk's code (an HTTP status as a number).
    #[serde(default)]
    pub code: Option<Value>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChunkChoice<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(default, borrow)]
    pub delta: ChunkDelta<'a>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

/// `delta` of a chunk.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ChunkDelta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub refusal: Option<Cow<'a, str>>,
    /// Raw reasoning as llama.cpp, DeepSeek and older vLLM send it; a value that is not
    /// a string reads as absent.
    #[serde(default, deserialize_with = "lenient_str")]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// The same under the name newer vLLM and OpenRouter use (some send both).
    #[serde(default, deserialize_with = "lenient_str")]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCallChunk<'a>>>,
}

/// A tool-call fragment: `index` correlates fragments (contract §11 `ToolCallChunk`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ToolCallChunk<'a> {
    #[serde(default)]
    pub index: usize,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionChunk<'a>>,
    /// A native custom tool call's fragment (OpenAI: `type: "custom"`).
    #[serde(default, borrow)]
    pub custom: Option<CustomChunk<'a>>,
}

/// `custom` of a tool-call fragment: `input` is raw text, not JSON.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CustomChunk<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub input: Option<Cow<'a, str>>,
}

/// `function` of a tool-call fragment.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FunctionChunk<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    /// The arguments' JSON text (a piece of it). Arguments sent as a JSON value instead of
    /// a string (LiteLLM's `ollama_chat` sends an object) are that value serialized;
    /// `null` reads as absent.
    #[serde(default, deserialize_with = "arguments_text")]
    pub arguments: Option<Cow<'a, str>>,
}

/// Chat usage (contract §11 "Usage fields").
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct ChatUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

/// `prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct PromptTokensDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// `completion_tokens_details`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct CompletionTokensDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

/// The first element of `choices` whose `index` is 0; `null` reads as none.
fn first_choice<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ChunkChoice<'de>>, D::Error> {
    struct First;
    impl<'de> Visitor<'de> for First {
        type Value = Option<ChunkChoice<'de>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of choices")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut first = None;
            while let Some(c) = seq.next_element::<ChunkChoice<'de>>()? {
                if c.index == 0 && first.is_none() {
                    first = Some(c);
                }
            }
            Ok(first)
        }
    }
    d.deserialize_any(First)
}

/// A string, borrowed when it has no escapes; `null`, numbers, booleans, objects and arrays
/// read as `None` (servers differ on what optional text fields hold).
fn lenient_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Lenient;
    impl<'de> Visitor<'de> for Lenient {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    d.deserialize_any(Lenient)
}

/// A string as it is (borrowed when it has no escapes); any other JSON value but `null`
/// serialized to its JSON text.
fn arguments_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Text;
    impl<'de> Visitor<'de> for Text {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON string or value")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(Value::from(v).to_string())))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let v = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            let v = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
            Ok(Some(Cow::Owned(v.to_string())))
        }
    }
    d.deserialize_any(Text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_fields_are_lenient_and_borrowed() {
        let c: ChatChunk<'_> = serde_json::from_str(
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think","reasoning":{"effort":"x"}}}]}"#,
        )
        .expect("chunk");
        let d = &c.choice.as_ref().expect("choice").delta;
        assert!(matches!(d.reasoning_content, Some(Cow::Borrowed("think"))));
        assert_eq!(d.reasoning, None);
        let c: ChatChunk<'_> = serde_json::from_str(r#"{"choices":[{"delta":{"reasoning":"a\nb","reasoning_content":null}}]}"#).expect("chunk");
        let d = &c.choice.as_ref().expect("choice").delta;
        assert_eq!(d.reasoning.as_deref(), Some("a\nb"));
        assert_eq!(d.reasoning_content, None);
    }

    /// Arguments sent as an object (LiteLLM's `ollama_chat`) are its JSON text; a string
    /// stays borrowed; `null` is absent.
    #[test]
    fn object_arguments_are_serialized() {
        let c: ChatChunk<'_> = serde_json::from_str(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"w","arguments":{"city":"Kyiv","n":[1,2.5]}}}]}}]}"#,
        )
        .expect("chunk");
        let calls = c.choice.expect("choice").delta.tool_calls.expect("calls");
        let args = calls[0].function.as_ref().and_then(|f| f.arguments.as_deref()).expect("arguments");
        assert_eq!(serde_json::from_str::<Value>(args).expect("JSON"), serde_json::json!({"city":"Kyiv","n":[1,2.5]}));
        let c: ChatChunk<'_> =
            serde_json::from_str(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a"}},{"index":1,"function":{"arguments":null}}]}}]}"#)
                .expect("chunk");
        let calls = c.choice.expect("choice").delta.tool_calls.expect("calls");
        assert_eq!(calls[0].function.as_ref().and_then(|f| f.arguments.as_deref()), Some("{\"a"));
        assert_eq!(calls[1].function.as_ref().and_then(|f| f.arguments.as_deref()), None);
    }

    #[test]
    fn only_choice_zero_is_kept() {
        let c: ChatChunk<'_> = serde_json::from_str(
            r#"{"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a"}}]}"#,
        )
        .expect("chunk");
        assert_eq!(c.choice.expect("choice 0").delta.content.as_deref(), Some("a"));
        for empty in [r#"{"choices":[]}"#, r#"{"choices":null}"#, r#"{}"#, r#"{"choices":[{"index":2,"delta":{}}]}"#] {
            let c: ChatChunk<'_> = serde_json::from_str(empty).expect("chunk");
            assert!(c.choice.is_none(), "{empty}");
        }
        assert!(serde_json::from_str::<ChatChunk<'_>>(r#"{"choices":{"index":0}}"#).is_err(), "not a list");
    }
}
