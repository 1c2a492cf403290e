//! The OpenAI error body (contract §9).

use serde::{Deserialize, Serialize};

/// `{"error": {...}}`, the body of every 4xx/5xx answer (contract §9).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ApiError,
}

/// One error: `message`, `type` (`invalid_request_error`, `not_found_error`, `server_error`, …),
/// `param` (the offending field path, e.g. `tools[0].type`, or null) and `code` (or null).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApiError {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(required = true)]
    pub param: Option<String>,
    #[schema(required = true)]
    pub code: Option<String>,
}

impl ApiError {
    /// An `invalid_request_error` naming `param`.
    pub fn invalid(param: impl Into<Option<String>>, message: impl Into<String>) -> Self {
        ApiError {
            message: message.into(),
            kind: "invalid_request_error".into(),
            param: param.into(),
            code: None,
        }
    }

    /// Sets `code`.
    pub fn with_code(mut self, code: &str) -> Self {
        self.code = Some(code.to_string());
        self
    }
}
