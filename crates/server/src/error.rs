//! Errors as clients see them: an HTTP status and a JSON body `{"code": N, "message": "..."}`.
//!
//! The message is fixed per kind; internal error text never reaches a client.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Everything the delivery routes can answer instead of content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiError {
    /// No stream of that name on this node: the meeting is not here (104005).
    StreamNotFound,
    /// The stream exists but has no segment yet: the meeting has not started (103002).
    NotStarted,
    /// The segment number is not (or no longer) in the live window.
    SegmentGone,
    /// No such resource on this node.
    NotFound,
    /// A malformed path or query parameter.
    BadRequest,
    /// An admin call without the right token.
    Unauthorized,
    /// A condition of the meeting code table (`meeting::ErrorCode`): its code, status
    /// and message come from that one table.
    Meeting(meeting::ErrorCode),
}

impl ApiError {
    /// The public error code sent in the body. Meeting-level conditions use the codes of
    /// the meeting table; plain protocol errors carry their HTTP status as the code.
    pub fn code(self) -> u32 {
        match self {
            ApiError::StreamNotFound => 104_005,
            ApiError::NotStarted => 103_002,
            ApiError::SegmentGone | ApiError::NotFound => 404,
            ApiError::BadRequest => 400,
            ApiError::Unauthorized => 401,
            ApiError::Meeting(code) => code.code(),
        }
    }

    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            ApiError::StreamNotFound | ApiError::SegmentGone | ApiError::NotFound => {
                StatusCode::NOT_FOUND
            }
            // Not started yet is temporary: players retry a 503 but give up on a 404.
            ApiError::NotStarted => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::BadRequest => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Meeting(code) => {
                StatusCode::from_u16(code.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
            }
        }
    }

    /// The fixed, user-facing message.
    pub fn message(self) -> &'static str {
        match self {
            ApiError::StreamNotFound => "the meeting does not exist on this node",
            ApiError::NotStarted => "the meeting has not started",
            ApiError::SegmentGone => "segment not in the live window",
            ApiError::NotFound => "no such resource",
            ApiError::BadRequest => "malformed request",
            ApiError::Unauthorized => "missing or wrong admin token",
            ApiError::Meeting(code) => code.message(),
        }
    }
}

impl From<meeting::ErrorCode> for ApiError {
    fn from(code: meeting::ErrorCode) -> Self {
        ApiError::Meeting(code)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = format!(
            r#"{{"code":{},"message":"{}"}}"#,
            self.code(),
            self.message()
        );
        let mut response = (self.status(), body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let retry = match self {
            ApiError::NotStarted => true,
            ApiError::Meeting(code) => code.is_retryable(),
            _ => false,
        };
        if retry {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
        }
        response
    }
}
