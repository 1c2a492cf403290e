//! The one mapping from the core's [`ErrorKind`] to an HTTP status, and the OpenAI-shaped
//! error answer (`{"error":{message,type,param,code}}`, contract §9).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use protocol::{ApiError, ErrorBody};

use crate::error::{ErrorKind, GatewayError};

/// The HTTP status of an error kind.
pub fn status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
        ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorKind::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorKind::BadGateway => StatusCode::BAD_GATEWAY,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::GatewayTimeout => StatusCode::GATEWAY_TIMEOUT,
    }
}

/// An OpenAI-shaped answer with any status (axum's own 4xx rejections keep theirs).
pub fn respond(status: StatusCode, error: ApiError) -> Response {
    (status, axum::Json(ErrorBody { error })).into_response()
}

impl IntoResponse for GatewayError {
    /// A 429 carries `Retry-After: 1` (a full queue of the gateway's).
    fn into_response(self) -> Response {
        let limited = self.kind == ErrorKind::RateLimited;
        let mut resp = respond(status(self.kind), self.error);
        if limited {
            resp.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("1"));
        }
        resp
    }
}
