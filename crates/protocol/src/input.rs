//! Input items accepted in `input` (contract §4).
//!
//! Each item is parsed by its `type`; a message may omit `type` (EasyInputMessage).
//! Unknown item types are kept as [`InputItem::Other`] so that an upstream adapter can
//! drop them (they never leak into assistant text).

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::Phase;

/// `input`: a string (one user message) or a list of items (contract §1.1).
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Text(String),
    Items(Vec<InputItem>),
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Input;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of input items")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Input, E> {
                Ok(Input::Text(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Input, E> {
                Ok(Input::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Input, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(item) = seq.next_element::<InputItem>()? {
                    items.push(item);
                }
                Ok(Input::Items(items))
            }
        }
        d.deserialize_any(V)
    }
}

/// Message roles on input (contract §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    System,
    Developer,
}

/// One input item (contract §4). `Other` keeps the `type` of an item the gateway does not
/// interpret (reasoning, computer calls, …).
#[derive(Debug, Clone, PartialEq)]
pub enum InputItem {
    Message(InputMessage),
    FunctionCall(FunctionCall),
    FunctionCallOutput(ToolOutput),
    CustomToolCall(CustomToolCall),
    CustomToolCallOutput(ToolOutput),
    WebSearchCall(WebSearchCallItem),
    FileSearchCall(FileSearchCallItem),
    Reasoning(Value),
    ItemReference { id: String },
    Other { kind: String, raw: Value },
}

impl InputItem {
    /// Parses one item from JSON, dispatching on `type` (absent ⇒ message).
    pub fn from_value(v: Value) -> Result<InputItem, serde_json::Error> {
        let kind = match v.get("type") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => "message".to_string(),
            Some(_) => return Err(de::Error::custom("`type` must be a string")),
        };
        Ok(match kind.as_str() {
            "message" => InputItem::Message(serde_json::from_value(v)?),
            "function_call" => InputItem::FunctionCall(serde_json::from_value(v)?),
            "function_call_output" => InputItem::FunctionCallOutput(serde_json::from_value(v)?),
            "custom_tool_call" => InputItem::CustomToolCall(serde_json::from_value(v)?),
            "custom_tool_call_output" => {
                InputItem::CustomToolCallOutput(serde_json::from_value(v)?)
            }
            "web_search_call" => InputItem::WebSearchCall(serde_json::from_value(v)?),
            "file_search_call" => InputItem::FileSearchCall(serde_json::from_value(v)?),
            "reasoning" => InputItem::Reasoning(v),
            "item_reference" => {
                #[derive(Deserialize)]
                struct R {
                    id: String,
                }
                let r: R = serde_json::from_value(v)?;
                InputItem::ItemReference { id: r.id }
            }
            _ => InputItem::Other { kind, raw: v },
        })
    }
}

impl<'de> Deserialize<'de> for InputItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if !v.is_object() {
            return Err(de::Error::custom("an input item must be an object"));
        }
        InputItem::from_value(v).map_err(de::Error::custom)
    }
}

/// A message on input: Easy, Input or Output (assistant replay) shape (contract §4.1).
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
pub struct InputMessage {
    pub role: Role,
    pub content: MessageContent,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub phase: Option<Phase>,
}

/// Message content: a string or a list of parts.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageContent;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MessageContent, E> {
                Ok(MessageContent::Text(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MessageContent, A::Error> {
                let mut parts = Vec::new();
                while let Some(p) = seq.next_element::<ContentPart>()? {
                    parts.push(p);
                }
                Ok(MessageContent::Parts(parts))
            }
        }
        d.deserialize_any(V)
    }
}

/// A content part (contract §4.1). `text` is accepted as a lenient alias of `input_text`.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    #[serde(alias = "text")]
    InputText { text: String },
    InputImage {
        #[serde(default)]
        image_url: Option<String>,
        #[serde(default)]
        file_id: Option<String>,
        #[serde(default)]
        detail: Option<String>,
    },
    InputFile {
        #[serde(default)]
        file_id: Option<String>,
        #[serde(default)]
        file_url: Option<String>,
        #[serde(default)]
        file_data: Option<String>,
        #[serde(default)]
        filename: Option<String>,
    },
    OutputText {
        text: String,
        #[serde(default)]
        annotations: Option<Vec<Value>>,
    },
    Refusal { refusal: String },
}

/// `function_call` on input (contract §4.2).
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
pub struct FunctionCall {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

/// `custom_tool_call` on input (contract §4.2).
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
pub struct CustomToolCall {
    pub call_id: String,
    pub name: String,
    pub input: String,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

/// `function_call_output` / `custom_tool_call_output` on input (contract §4.2).
/// `call_id` is optional on the wire (SDK 3.57) but the gateway requires it.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
pub struct ToolOutput {
    #[serde(default)]
    pub call_id: Option<String>,
    pub output: ToolOutputContent,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

/// A tool output: a string or a list of `input_text` / `input_image` / `input_file` parts.
/// Anything else fails with a message that says so (not serde's "did not match any variant").
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutputContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl<'de> Deserialize<'de> for ToolOutputContent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Output;
        impl<'de> serde::de::Visitor<'de> for Output {
            type Value = ToolOutputContent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("'output' as a string or a list of content parts")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ToolOutputContent::Text(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(ToolOutputContent::Text(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(p) = seq.next_element::<ContentPart>()? {
                    parts.push(p);
                }
                Ok(ToolOutputContent::Parts(parts))
            }
        }
        d.deserialize_any(Output)
    }
}

/// A replayed `web_search_call` (contract §4.2): `id`, `status`, and `action` with `query`
/// / `queries` and optional `sources` (the results themselves are not on the wire).
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
pub struct WebSearchCallItem {
    pub id: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub action: Option<Value>,
}

/// A replayed `file_search_call` (contract §4.2): `id`, `queries`, `status`, and `results`
/// when the earlier response `include`d `file_search_call.results` (else null or absent).
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
pub struct FileSearchCallItem {
    pub id: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub queries: Vec<String>,
    #[serde(default)]
    pub results: Option<Vec<Value>>,
}

/// The OpenAPI schemas of the types read by hand above (issue 28, `/openapi.json`): what
/// their `Deserialize` accepts.
mod schemas {
    use std::borrow::Cow;

    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
    use utoipa::openapi::RefOr;
    use utoipa::{PartialSchema, ToSchema};

    use super::*;

    fn string() -> ObjectBuilder {
        ObjectBuilder::new().schema_type(SchemaType::new(Type::String))
    }

    /// A string, or a list of `part`s.
    fn text_or_list(part: RefOr<Schema>) -> RefOr<Schema> {
        OneOfBuilder::new().item(string()).item(ArrayBuilder::new().items(part)).into()
    }

    /// `schema` (an object) with a `type` property of the one value `kind`.
    fn typed(kind: &str, schema: RefOr<Schema>, required: bool) -> RefOr<Schema> {
        let RefOr::T(Schema::Object(mut object)) = schema else { return schema };
        let tag = string().enum_values(Some([kind])).build();
        object.properties.insert("type".to_string(), tag.into());
        if required {
            object.required.push("type".to_string());
        }
        RefOr::T(Schema::Object(object))
    }

    impl PartialSchema for Input {
        fn schema() -> RefOr<Schema> {
            text_or_list(InputItem::schema())
        }
    }
    impl ToSchema for Input {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("Input")
        }
        fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
            InputItem::schemas(out);
        }
    }

    /// Registers `T` and what it refers to.
    fn register<T: ToSchema>(out: &mut Vec<(String, RefOr<Schema>)>) {
        if out.iter().any(|(name, _)| *name == T::name()) {
            return;
        }
        out.push((T::name().into_owned(), T::schema()));
        T::schemas(out);
    }

    impl PartialSchema for MessageContent {
        fn schema() -> RefOr<Schema> {
            text_or_list(ContentPart::schema())
        }
    }
    impl ToSchema for MessageContent {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("MessageContent")
        }
        fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
            ContentPart::schemas(out);
        }
    }

    impl PartialSchema for ToolOutputContent {
        fn schema() -> RefOr<Schema> {
            text_or_list(ContentPart::schema())
        }
    }
    impl ToSchema for ToolOutputContent {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("ToolOutputContent")
        }
        fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
            ContentPart::schemas(out);
        }
    }

    impl PartialSchema for InputItem {
        /// One of the item types read by `type` (a message may leave it out); other types
        /// are kept for the tools that read them (`reasoning`, `mcp_*`, …).
        fn schema() -> RefOr<Schema> {
            let id = ObjectBuilder::new().property("id", string()).required("id");
            let reasoning = ObjectBuilder::new()
                .property("id", string())
                .property("summary", ArrayBuilder::new().items(ObjectBuilder::new()))
                .required("summary");
            let other = ObjectBuilder::new()
                .property("type", string().enum_values(Some(["mcp_list_tools", "mcp_call", "mcp_approval_request", "mcp_approval_response", "tool_search_call", "tool_search_output"])))
                .required("type");
            OneOfBuilder::new()
                .item(typed("message", InputMessage::schema(), false))
                .item(typed("function_call", FunctionCall::schema(), true))
                .item(typed("function_call_output", ToolOutput::schema(), true))
                .item(typed("custom_tool_call", CustomToolCall::schema(), true))
                .item(typed("custom_tool_call_output", ToolOutput::schema(), true))
                .item(typed("web_search_call", WebSearchCallItem::schema(), true))
                .item(typed("file_search_call", FileSearchCallItem::schema(), true))
                .item(typed("reasoning", reasoning.build().into(), true))
                .item(typed("item_reference", id.build().into(), true))
                .item(other)
                .into()
        }
    }
    impl ToSchema for InputItem {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("InputItem")
        }
        /// The types the variants (inlined) refer to.
        fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
            register::<Role>(out);
            register::<MessageContent>(out);
            register::<ToolOutputContent>(out);
            register::<ContentPart>(out);
            register::<Phase>(out);
            InputMessage::schemas(out);
            FunctionCall::schemas(out);
            CustomToolCall::schemas(out);
            ToolOutput::schemas(out);
            WebSearchCallItem::schemas(out);
            FileSearchCallItem::schemas(out);
        }
    }
}
