//! Errors that become HTTP answers in the OpenAI shape (contract §9).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use protocol::{ApiError, ErrorBody};

/// An HTTP status plus the OpenAI error object.
#[derive(Debug, Clone)]
pub struct HttpError {
    pub status: StatusCode,
    pub error: ApiError,
}

impl HttpError {
    /// 400 `invalid_request_error` naming `param`.
    pub fn bad_request(param: impl Into<Option<String>>, message: impl Into<String>) -> Self {
        HttpError { status: StatusCode::BAD_REQUEST, error: ApiError::invalid(param, message) }
    }

    /// 404 `invalid_request_error` with `code`.
    pub fn not_found(param: Option<&str>, message: impl Into<String>, code: &str) -> Self {
        HttpError {
            status: StatusCode::NOT_FOUND,
            error: ApiError::invalid(param.map(str::to_string), message).with_code(code),
        }
    }

    /// 502 `server_error` for upstream failures (message already free of credentials).
    pub fn bad_gateway(message: impl Into<String>, code: &str) -> Self {
        HttpError {
            status: StatusCode::BAD_GATEWAY,
            error: ApiError {
                message: message.into(),
                kind: "server_error".into(),
                param: None,
                code: Some(code.into()),
            },
        }
    }

    /// Sets `code`.
    pub fn with_code(mut self, code: &str) -> Self {
        self.error.code = Some(code.to_string());
        self
    }
}

impl From<ApiError> for HttpError {
    fn from(error: ApiError) -> Self {
        HttpError { status: StatusCode::BAD_REQUEST, error }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(ErrorBody { error: self.error })).into_response()
    }
}

/// `e`'s message followed by each of its causes (`outer: cause: root cause`): libraries'
/// top-level messages often hide why (a refused connection, a timed-out body).
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        msg.push_str(": ");
        msg.push_str(&cause.to_string());
        source = cause.source();
    }
    msg
}
