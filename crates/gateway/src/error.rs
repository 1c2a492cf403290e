//! The core's error: an OpenAI error object (contract §9) and what kind of failure it is.
//! Only `http/` maps a kind to an HTTP status (`http::error`); the core names no status.

use protocol::ApiError;

/// What kind of failure an error is; `http::error::status` maps each to one HTTP status
/// (the number in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is invalid (400).
    BadRequest,
    /// No valid API key came with a request that needs one (401).
    Unauthorized,
    /// The named resource does not exist (404).
    NotFound,
    /// The method is not served on this path (405).
    MethodNotAllowed,
    /// The request body stopped arriving (408).
    RequestTimeout,
    /// Another turn holds the resource (409).
    Conflict,
    /// The request body is over a limit (413).
    PayloadTooLarge,
    /// The upstream's rate limit (429).
    RateLimited,
    /// The gateway failed (500).
    Internal,
    /// The upstream failed or answered something unusable (502).
    BadGateway,
    /// A dependency (the store) is unavailable (503).
    Unavailable,
    /// The upstream sent nothing in time (504).
    GatewayTimeout,
}

/// A failure of the core, answered in the OpenAI error shape.
#[derive(Debug, Clone)]
pub struct GatewayError {
    pub kind: ErrorKind,
    pub error: ApiError,
}

impl GatewayError {
    /// Any kind with its error object.
    pub fn new(kind: ErrorKind, error: ApiError) -> Self {
        GatewayError { kind, error }
    }

    /// `invalid_request_error` naming `param` (400).
    pub fn bad_request(param: impl Into<Option<String>>, message: impl Into<String>) -> Self {
        GatewayError { kind: ErrorKind::BadRequest, error: ApiError::invalid(param, message) }
    }

    /// `invalid_request_error` with `code` (404).
    pub fn not_found(param: Option<&str>, message: impl Into<String>, code: &str) -> Self {
        GatewayError {
            kind: ErrorKind::NotFound,
            error: ApiError::invalid(param.map(str::to_string), message).with_code(code),
        }
    }

    /// `server_error` of `kind` with `code`; `message` must already be free of credentials.
    pub fn server(kind: ErrorKind, message: impl Into<String>, code: Option<&str>) -> Self {
        GatewayError {
            kind,
            error: ApiError { message: message.into(), kind: "server_error".into(), param: None, code: code.map(str::to_string) },
        }
    }

    /// 429 `rate_limit_exceeded` (type `requests`): a bounded queue of the gateway is full.
    pub fn rate_limited(message: impl Into<String>) -> Self {
        GatewayError {
            kind: ErrorKind::RateLimited,
            error: ApiError { kind: "requests".into(), ..ApiError::invalid(None, message).with_code("rate_limit_exceeded") },
        }
    }

    /// 502 `server_error` for upstream failures (message already free of credentials).
    pub fn bad_gateway(message: impl Into<String>, code: &str) -> Self {
        GatewayError::server(ErrorKind::BadGateway, message, Some(code))
    }

    /// Sets `code`.
    pub fn with_code(mut self, code: &str) -> Self {
        self.error.code = Some(code.to_string());
        self
    }
}

impl From<ApiError> for GatewayError {
    /// A validation error (400).
    fn from(error: ApiError) -> Self {
        GatewayError { kind: ErrorKind::BadRequest, error }
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
