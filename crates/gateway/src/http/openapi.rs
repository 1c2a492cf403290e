//! `GET /openapi.json` (issue 28): the OpenAPI 3.1 document of the Responses,
//! Conversations and Models endpoints, generated (`utoipa`) from the protocol crate's wire
//! types, so that it follows them. The objects the handlers build as JSON (a conversation,
//! a list, a deletion) are described here, next to the routes; the fault and fuzz suite
//! (`tests/fuzz`, schemathesis) checks every answer against the document.
//!
//! Every operation answers its errors in the OpenAI shape (`ErrorBody`, any 4xx/5xx).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use protocol::{ErrorBody, Response as ResponseObject};
use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, OpenApi, ToSchema};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(title = "responses-gateway", description = "An OpenAI-compatible Responses API gateway that runs the agent loop and its tools."),
    paths(
        create_response, get_response, delete_response, cancel_response, list_input_items,
        create_conversation, get_conversation, update_conversation, delete_conversation,
        add_items, list_items, get_item, delete_item,
        list_models, get_model, healthz, readyz,
    ),
    components(schemas(ErrorBody, ResponseObject, protocol::StreamEvent, protocol::CreateResponse, protocol::InputItem, protocol::input::Input,
        protocol::MessageContent, protocol::input::ToolOutputContent,
        Conversation, ConversationDeleted, ResponseDeleted, ItemList, Item, ModelList, Model, Health))
)]
pub struct ApiDoc;

/// The document as JSON, made once ([`finish`]).
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    let doc = serde_json::to_value(ApiDoc::openapi()).map(finish).unwrap_or_default();
    serde_json::to_string(&doc).unwrap_or_else(|_| "{}".to_string())
});

/// What the derive cannot say: a `text/event-stream` answer is described event by event
/// (`event`, and `data`: JSON of a `StreamEvent`, which schemathesis checks), and the
/// links' field names are camel case as OpenAPI spells them (`operationId`).
fn finish(mut doc: Value) -> Value {
    let event = serde_json::json!({
        "type": "object",
        "required": ["data"],
        "properties": {
            "event": {"type": "string"},
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": {"$ref": "#/components/schemas/StreamEvent"}},
        },
    });
    // Requests the gateway refuses whatever their fields: a continuation of both a response
    // and a conversation, a background response not stored.
    if let Some(create) = doc.pointer_mut("/components/schemas/CreateResponse").and_then(Value::as_object_mut) {
        create.insert(
            "not".into(),
            serde_json::json!({"anyOf": [
                {"required": ["previous_response_id", "conversation"]},
                {"required": ["background", "store"], "properties": {"background": {"const": true}, "store": {"const": false}}},
            ]}),
        );
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for op in paths.values_mut().filter_map(Value::as_object_mut).flat_map(|p| p.values_mut()) {
            for resp in op.get_mut("responses").and_then(Value::as_object_mut).into_iter().flat_map(|r| r.values_mut()) {
                if let Some(sse) = resp.pointer_mut("/content/text~1event-stream") {
                    sse["schema"] = event.clone();
                }
                for link in resp.get_mut("links").and_then(Value::as_object_mut).into_iter().flat_map(|l| l.values_mut()) {
                    if let Some(link) = link.as_object_mut() {
                        for (from, to) in [("operation_id", "operationId"), ("operation_ref", "operationRef"), ("request_body", "requestBody")] {
                            if let Some(v) = link.remove(from) {
                                link.insert(to.to_string(), v);
                            }
                        }
                    }
                }
            }
        }
    }
    doc
}

/// `GET /openapi.json`.
pub async fn document() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT.as_str()).into_response()
}

/// A conversation: `{id: "conv_…", object: "conversation", created_at, metadata}`.
#[derive(Serialize, ToSchema)]
pub struct Conversation {
    pub id: String,
    #[schema(pattern = "^conversation$")]
    pub object: String,
    /// Unix seconds.
    pub created_at: i64,
    pub metadata: BTreeMap<String, String>,
}

/// `{id, object: "conversation.deleted", deleted: true}`.
#[derive(Serialize, ToSchema)]
pub struct ConversationDeleted {
    pub id: String,
    #[schema(pattern = "^conversation\\.deleted$")]
    pub object: String,
    pub deleted: bool,
}

/// `{id, object: "response", deleted: true}`.
#[derive(Serialize, ToSchema)]
pub struct ResponseDeleted {
    pub id: String,
    #[schema(pattern = "^response$")]
    pub object: String,
    pub deleted: bool,
}

/// An item resource: an input or output item with its `id` and `type` (contract §10).
#[derive(Serialize, ToSchema)]
pub struct Item {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// A page of items: `{object: "list", data, first_id, last_id, has_more}`.
#[derive(Serialize, ToSchema)]
pub struct ItemList {
    #[schema(pattern = "^list$")]
    pub object: String,
    pub data: Vec<Item>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    pub has_more: bool,
}

/// A model of the upstream's list (passed through): at least its `id`.
#[derive(Serialize, ToSchema)]
pub struct Model {
    pub id: String,
}

/// `{object: "list", data: [model]}`.
#[derive(Serialize, ToSchema)]
pub struct ModelList {
    pub data: Vec<Model>,
}

/// `/healthz` and `/readyz`: `{status}`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    pub status: String,
}

/// The body of `POST /v1/conversations` (and of an update: `metadata`; of an items add:
/// `items`, at most 20 each).
#[derive(Serialize, ToSchema)]
pub struct ConversationBody {
    pub metadata: Option<BTreeMap<String, String>>,
    #[schema(value_type = Option<Vec<protocol::InputItem>>)]
    pub items: Option<Vec<Value>>,
}

/// The query of a list: `limit` (1–100, default 20), `order` (`asc` | `desc`, default
/// `desc`), `after` (an item id).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ListQuery {
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    #[param(pattern = "^(asc|desc)$")]
    order: Option<String>,
    after: Option<String>,
}

/// The query of `GET /v1/responses/{id}`: `stream` (a background response's events),
/// `starting_after` (a sequence number).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct RetrieveQuery {
    stream: Option<bool>,
    starting_after: Option<u64>,
}

// The operations: their handlers are in `responses`, `stored`, `conversations`, `models`
// and `health`; these stubs only carry the documentation.

#[utoipa::path(post, path = "/v1/responses", request_body = protocol::CreateResponse,
    responses((status = 200, description = "The Response, or its events (`stream: true`)", content(
        (ResponseObject = "application/json"), (String = "text/event-stream")),
        links(
            ("GetResponse" = (operation_id = "get_response", parameters(("id" = "$response.body#/id")))),
            ("ListInputItems" = (operation_id = "list_input_items", parameters(("id" = "$response.body#/id")))),
            ("CancelResponse" = (operation_id = "cancel_response", parameters(("id" = "$response.body#/id")))),
            ("DeleteResponse" = (operation_id = "delete_response", parameters(("id" = "$response.body#/id")))),
        )),
    (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn create_response() {}

#[utoipa::path(get, path = "/v1/responses/{id}", params(("id" = String, Path), RetrieveQuery),
    responses((status = 200, description = "The stored Response, or its events (`stream=true`)", content(
        (ResponseObject = "application/json"), (String = "text/event-stream"))),
    (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn get_response() {}

#[utoipa::path(delete, path = "/v1/responses/{id}", params(("id" = String, Path)),
    responses((status = 200, body = ResponseDeleted), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn delete_response() {}

#[utoipa::path(post, path = "/v1/responses/{id}/cancel", params(("id" = String, Path)),
    responses((status = 200, body = ResponseObject), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn cancel_response() {}

#[utoipa::path(get, path = "/v1/responses/{id}/input_items", params(("id" = String, Path), ListQuery),
    responses((status = 200, body = ItemList), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn list_input_items() {}

#[utoipa::path(post, path = "/v1/conversations", request_body = ConversationBody,
    responses((status = 200, body = Conversation, links(
            ("GetConversation" = (operation_id = "get_conversation", parameters(("id" = "$response.body#/id")))),
            ("UpdateConversation" = (operation_id = "update_conversation", parameters(("id" = "$response.body#/id")))),
            ("AddItems" = (operation_id = "add_items", parameters(("id" = "$response.body#/id")))),
            ("ListItems" = (operation_id = "list_items", parameters(("id" = "$response.body#/id")))),
            ("DeleteConversation" = (operation_id = "delete_conversation", parameters(("id" = "$response.body#/id")))),
        )),
        (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn create_conversation() {}

#[utoipa::path(get, path = "/v1/conversations/{id}", params(("id" = String, Path)),
    responses((status = 200, body = Conversation), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn get_conversation() {}

#[utoipa::path(post, path = "/v1/conversations/{id}", params(("id" = String, Path)), request_body = ConversationBody,
    responses((status = 200, body = Conversation), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn update_conversation() {}

#[utoipa::path(delete, path = "/v1/conversations/{id}", params(("id" = String, Path)),
    responses((status = 200, body = ConversationDeleted), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn delete_conversation() {}

#[utoipa::path(post, path = "/v1/conversations/{id}/items", params(("id" = String, Path)), request_body = ConversationBody,
    responses((status = 200, body = ItemList, links(
            ("GetItem" = (operation_id = "get_item", parameters(("id" = "$request.path.id"), ("item_id" = "$response.body#/data/0/id")))),
            ("DeleteItem" = (operation_id = "delete_item", parameters(("id" = "$request.path.id"), ("item_id" = "$response.body#/data/0/id")))),
        )),
        (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn add_items() {}

#[utoipa::path(get, path = "/v1/conversations/{id}/items", params(("id" = String, Path), ListQuery),
    responses((status = 200, body = ItemList), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn list_items() {}

#[utoipa::path(get, path = "/v1/conversations/{id}/items/{item_id}", params(("id" = String, Path), ("item_id" = String, Path)),
    responses((status = 200, body = Item), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn get_item() {}

#[utoipa::path(delete, path = "/v1/conversations/{id}/items/{item_id}", params(("id" = String, Path), ("item_id" = String, Path)),
    responses((status = 200, body = Conversation), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn delete_item() {}

#[utoipa::path(get, path = "/v1/models",
    responses((status = 200, body = ModelList), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn list_models() {}

#[utoipa::path(get, path = "/v1/models/{model}", params(("model" = String, Path)),
    responses((status = 200, body = Model), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn get_model() {}

#[utoipa::path(get, path = "/healthz", responses((status = 200, body = Health), (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn healthz() {}

#[utoipa::path(get, path = "/readyz", responses((status = 200, body = Health), (status = 503, description = "The upstream does not answer", body = Health),
    (status = "default", description = "An error", body = ErrorBody)))]
#[allow(dead_code)]
fn readyz() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_names_every_operation_and_the_protocol_types() {
        let doc: Value = serde_json::from_str(&DOCUMENT).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        for path in ["/v1/responses", "/v1/responses/{id}", "/v1/conversations/{id}/items/{item_id}", "/v1/models"] {
            assert!(doc["paths"][path].is_object(), "{path}");
        }
        let schemas = &doc["components"]["schemas"];
        for name in ["Response", "CreateResponse", "OutputItem", "ErrorBody", "ApiError", "InputItem"] {
            assert!(schemas[name].is_object(), "{name}: {}", serde_json::to_string_pretty(schemas).unwrap());
        }
        let sse = &doc["paths"]["/v1/responses"]["post"]["responses"]["200"]["content"]["text/event-stream"]["schema"];
        assert_eq!(sse["properties"]["data"]["contentSchema"]["$ref"], "#/components/schemas/StreamEvent");
        assert!(schemas["StreamEvent"].is_object());
        let link = &doc["paths"]["/v1/responses"]["post"]["responses"]["200"]["links"]["GetResponse"];
        assert_eq!(link["operationId"], "get_response", "{link}");
        let required = schemas["ApiError"]["required"].as_array().unwrap();
        for field in ["message", "type", "param", "code"] {
            assert!(required.iter().any(|r| r == field), "{field}");
        }
    }
}
