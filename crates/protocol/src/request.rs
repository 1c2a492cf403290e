//! `POST /v1/responses` request body (contract §1).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::Input;

/// The create-response body (contract §1.1). Fields the gateway interprets are typed;
/// `tools` and `tool_choice` stay raw JSON because each tool handler validates its own
/// declaration (DESIGN.md "A tool type is one handler module"). Unknown top-level fields
/// land in `unknown` (ignored, or a 400 `unknown_parameter` when configured).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct CreateResponse {
    /// Required (absent: 400): the gateway has no default model.
    #[schema(value_type = String, min_length = 1, required = true)]
    #[serde(default)]
    pub model: Option<String>,
    /// May be left out when `instructions` or the continued turn give the model something.
    #[schema(value_type = Input, required = true)]
    #[serde(default)]
    pub input: Option<Input>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[schema(value_type = Option<Vec<schemas::ToolParam>>)]
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    #[schema(value_type = Option<schemas::ToolChoiceMode>)]
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub max_tool_calls: Option<u64>,
    #[schema(minimum = 16)]
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    #[schema(minimum = 0.0, maximum = 2.0)]
    #[serde(default)]
    pub temperature: Option<f64>,
    #[schema(minimum = 0.0, maximum = 1.0)]
    #[serde(default)]
    pub top_p: Option<f64>,
    #[schema(maximum = 20)]
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub store: Option<bool>,
    #[serde(default)]
    pub previous_response_id: Option<String>,
    #[schema(schema_with = schemas::conversation)]
    #[serde(default)]
    pub conversation: Option<Value>,
    #[schema(value_type = Option<Vec<schemas::Include>>)]
    #[serde(default)]
    pub include: Option<Vec<String>>,
    #[schema(schema_with = schemas::metadata)]
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default)]
    pub truncation: Option<Truncation>,
    #[serde(default)]
    pub text: Option<TextConfig>,
    #[schema(value_type = Option<schemas::ReasoningParam>)]
    #[serde(default)]
    pub reasoning: Option<Value>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub safety_identifier: Option<String>,
    #[serde(default)]
    pub prompt_cache_key: Option<String>,
    #[schema(value_type = Option<schemas::CacheRetention>)]
    #[serde(default)]
    pub prompt_cache_retention: Option<String>,
    #[schema(value_type = Option<schemas::ServiceTier>)]
    #[serde(default)]
    pub service_tier: Option<String>,
    #[schema(schema_with = schemas::null)]
    #[serde(default)]
    pub prompt: Option<Value>,
    #[schema(minimum = -2.0, maximum = 2.0)]
    #[serde(default)]
    pub frequency_penalty: Option<f64>,
    #[schema(minimum = -2.0, maximum = 2.0)]
    #[serde(default)]
    pub presence_penalty: Option<f64>,
    /// `[{type: "compaction", compact_threshold?: int ≥ 1000}]` (contract 2026 §W2.4):
    /// automatic compaction inside the turn; checked by the gateway (`turn::auto_compact`).
    #[serde(default)]
    pub context_management: Option<Value>,
    /// Newer fields accepted and ignored (contract §1.3).
    #[serde(default)]
    pub moderation: Option<Value>,
    #[serde(default)]
    pub prompt_cache_options: Option<Value>,
    #[serde(default)]
    pub background_options: Option<Value>,
    #[serde(default)]
    pub access_programs: Option<Value>,
    #[serde(default)]
    pub image: Option<Value>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub unknown: BTreeMap<String, Value>,
}

/// `stream_options` (contract §1.1).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StreamOptions {
    pub include_obfuscation: Option<bool>,
}

/// `truncation` (contract §1.1): `auto` | `disabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Truncation {
    Auto,
    Disabled,
}

/// `text` (contract §1.2): `{format?, verbosity?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TextConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<Verbosity>,
}

/// `text.verbosity`: `low` | `medium` | `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    Low,
    Medium,
    High,
}

/// `text.format` (contract §1.2); `json_schema` is flat, not nested as in Chat Completions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat {
    Text,
    JsonObject,
    JsonSchema {
        name: String,
        schema: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(default)]
        strict: Option<bool>,
    },
}

/// The `include` values of the API (contract §1.1 `IncludeEnum`); others are a 400.
pub const INCLUDE_VALUES: [&str; 8] = [
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
];

/// What `CreateResponse`'s raw fields accept, for the OpenAPI document (issue 28): the
/// checks `turn::validate` and the tool types make, as schemas.
pub mod schemas {
    use serde::Serialize;
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
    use utoipa::openapi::RefOr;
    use utoipa::ToSchema;

    /// A client tool declaration: a `function` (with a JSON Schema) or a `custom` tool, named
    /// `^[a-zA-Z0-9_-]{1,64}$`; hosted types (`web_search`, `file_search`, `mcp`, …) take their
    /// own fields (contract §2).
    #[derive(Serialize, ToSchema)]
    #[serde(tag = "type", rename_all = "snake_case")]
    pub enum ToolParam {
        Function {
            #[schema(pattern = "^[a-zA-Z0-9_-]{1,64}$")]
            name: String,
            description: Option<String>,
            parameters: Option<FunctionParameters>,
            strict: Option<bool>,
        },
        Custom {
            #[schema(pattern = "^[a-zA-Z0-9_-]{1,64}$")]
            name: String,
            description: Option<String>,
        },
    }

    /// A function's parameters: a JSON Schema object.
    #[derive(Serialize, ToSchema)]
    pub struct FunctionParameters {
        #[serde(rename = "type")]
        #[schema(pattern = "^object$")]
        kind: String,
    }

    /// `tool_choice` as a mode (`{type, name}` naming a declared tool is accepted too).
    #[derive(Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum ToolChoiceMode {
        None,
        Auto,
        Required,
    }

    /// An `include` value (contract §1.1).
    #[derive(Serialize, ToSchema)]
    pub enum Include {
        #[serde(rename = "file_search_call.results")]
        FileSearchResults,
        #[serde(rename = "web_search_call.results")]
        WebSearchResults,
        #[serde(rename = "web_search_call.action.sources")]
        WebSearchSources,
        #[serde(rename = "message.input_image.image_url")]
        InputImageUrl,
        #[serde(rename = "computer_call_output.output.image_url")]
        ComputerImageUrl,
        #[serde(rename = "code_interpreter_call.outputs")]
        CodeInterpreterOutputs,
        #[serde(rename = "reasoning.encrypted_content")]
        EncryptedReasoning,
        #[serde(rename = "message.output_text.logprobs")]
        Logprobs,
    }

    /// `reasoning`: `{effort?, summary?}` (each may be null).
    #[derive(Serialize, ToSchema)]
    pub struct ReasoningParam {
        effort: Option<Effort>,
        summary: Option<Summary>,
    }

    /// `reasoning.effort`.
    #[derive(Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum Effort {
        None,
        Minimal,
        Low,
        Medium,
        High,
        Xhigh,
        Max,
    }

    /// `reasoning.summary`.
    #[derive(Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum Summary {
        Auto,
        Concise,
        Detailed,
    }

    /// `prompt_cache_retention`.
    #[derive(Serialize, ToSchema)]
    pub enum CacheRetention {
        #[serde(rename = "in_memory")]
        InMemory,
        #[serde(rename = "24h")]
        Day,
    }

    /// `service_tier`.
    #[derive(Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum ServiceTier {
        Auto,
        Default,
        Flex,
        Scale,
        Priority,
        Fast,
        Ultrafast,
    }

    /// `metadata`: at most 16 pairs, keys up to 64 characters, values up to 512, or null.
    pub fn metadata() -> impl Into<RefOr<Schema>> {
        let object = ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::Object))
            .max_properties(Some(16))
            .property_names(Some(string().max_length(Some(64))))
            .additional_properties(Some(string().max_length(Some(512))));
        OneOfBuilder::new().item(null()).item(object)
    }

    /// Only `null` (`prompt`: stored prompt templates are not supported).
    pub fn null() -> ObjectBuilder {
        ObjectBuilder::new().schema_type(SchemaType::new(Type::Null))
    }

    /// `conversation`: a conversation id (`conv_…`), or `{id}`, or null.
    pub fn conversation() -> impl Into<RefOr<Schema>> {
        let id = || string().pattern(Some("^conv_"));
        OneOfBuilder::new().item(null()).item(id()).item(ObjectBuilder::new().property("id", id()).required("id"))
    }

    fn string() -> ObjectBuilder {
        ObjectBuilder::new().schema_type(SchemaType::new(Type::String))
    }
}
