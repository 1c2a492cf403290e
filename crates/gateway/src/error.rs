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

/// The most digits a number keeps in an error message; longer ones are written in
/// scientific notation (`1e300`, not three hundred digits).
const MAX_DIGITS: usize = 16;

/// A number for an error message: as written when short, else in scientific notation.
pub fn short_number(n: f64) -> String {
    let plain = n.to_string();
    if plain.chars().filter(char::is_ascii_digit).count() <= MAX_DIGITS {
        plain
    } else {
        format!("{n:e}")
    }
}

/// `message` with every run of more than [`MAX_DIGITS`] digits (a number as serde prints
/// it, e.g. `1e300` as 301 digits) shortened to scientific notation.
pub fn short_numbers(message: &str) -> String {
    let bytes = message.as_bytes();
    let mut out = String::with_capacity(message.len().min(512));
    let mut i = 0;
    while i < bytes.len() {
        // A number: digits, then optionally `.` and digits.
        let start = i;
        let mut end = i;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        if end > start && end + 1 < bytes.len() && bytes[end] == b'.' && bytes[end + 1].is_ascii_digit() {
            end += 1;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
        }
        // An exponent belongs to the number (`1.8446744073709552e19`, `1e+300`): kept
        // with it, so a shortened mantissa never ends up before a second exponent.
        if end > start && end < bytes.len() && matches!(bytes[end], b'e' | b'E') {
            let mut exp = end + 1;
            if exp < bytes.len() && matches!(bytes[exp], b'+' | b'-') {
                exp += 1;
            }
            if exp < bytes.len() && bytes[exp].is_ascii_digit() {
                while exp < bytes.len() && bytes[exp].is_ascii_digit() {
                    exp += 1;
                }
                end = exp;
            }
        }
        if end == start {
            let ch = message[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        let number = &message[start..end];
        let mantissa = number.split(['e', 'E']).next().unwrap_or(number);
        let digits = mantissa.bytes().filter(u8::is_ascii_digit).count();
        match number.parse::<f64>() {
            Ok(n) if digits > MAX_DIGITS => out.push_str(&format!("{n:e}")),
            _ => out.push_str(number),
        }
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_numbers_are_shortened() {
        let long = format!("floating point `{}.0`, expected u64", "1".to_string() + &"0".repeat(300));
        assert_eq!(short_numbers(&long), "floating point `1e300`, expected u64");
        assert_eq!(short_numbers("at 12 and 3.25 in 'é'"), "at 12 and 3.25 in 'é'");
        assert_eq!(short_number(1e300), "1e300");
        assert_eq!(short_number(2.5), "2.5");
        assert_eq!(short_number(-0.000000000000000001234), "-1.234e-18");
    }

    #[test]
    fn numbers_with_an_exponent_keep_one_exponent() {
        // serde's message for `18446744073709551617` (past u64) and a 30-digit integer.
        assert_eq!(
            short_numbers("invalid type: floating point `1.8446744073709552e19`, expected u64"),
            "invalid type: floating point `1.8446744073709552e19`, expected u64"
        );
        assert_eq!(short_numbers("floating point `1.2345678901234568e29`"), "floating point `1.2345678901234568e29`");
        assert_eq!(short_numbers("x `1.23456789012345678901e+29` y"), "x `1.2345678901234568e29` y");
        assert_eq!(short_numbers("`123456789012345678901234567890`"), "`1.2345678901234568e29`");
        assert_eq!(short_numbers("`18446744073709551617`"), "`1.8446744073709552e19`");
        assert_eq!(short_numbers("2e5 and 3E-2 stay"), "2e5 and 3E-2 stay");
        assert_eq!(short_numbers("12em, 7e, 9e+"), "12em, 7e, 9e+");
    }
}
