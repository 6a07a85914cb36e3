//! Errors as clients see them: every refusal is a [`codes::Code`] of the one code table,
//! answered by [`respond`] with the code's HTTP status and the JSON body of
//! [`codes::Code::json`] (`{"code": N, "message": "..."}`, plus `"field"` naming the
//! part of the caller's input at fault). The message is fixed per code; internal error
//! text never reaches a client: it is logged where the error is handled.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use codes::{Code, RequestError};

pub use codes::OttRefusal;

/// Everything the delivery routes can answer instead of content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiError {
    /// No stream of that name on this node: the meeting is not here (104005).
    StreamNotFound,
    /// The stream exists but has no segment yet: the meeting has not started (103002).
    NotStarted,
    /// The stream has no segment and its inputs receive bytes that give nothing usable
    /// (111010): the stream is down, not waiting to start.
    StreamDown,
    /// The segment number is not (or no longer) in the live window.
    SegmentGone,
    /// No such resource on this node.
    NotFound,
    /// A malformed path or query parameter.
    BadRequest,
    /// An admin call without the right token.
    Unauthorized,
    /// A method the path does not take.
    MethodNotAllowed,
    /// A request body longer than the route accepts.
    BodyTooLarge,
    /// A condition of the meeting code table.
    Meeting(meeting::ErrorCode),
    /// An OTT redundancy answer: a refused pass, a refused backup viewer, or a stream
    /// that does not work here with no node to send the viewer to.
    Ott(OttRefusal),
    /// A private meeting's refusal: no or a bad viewer token or session, a removed
    /// viewer.
    Access(codes::AccessRefusal),
}

/// The refusal for a pass error.
pub fn refusal_for_pass(error: &ott::PassError) -> OttRefusal {
    match error {
        ott::PassError::Malformed | ott::PassError::StreamTooLong => OttRefusal::PassMalformed,
        ott::PassError::UnknownKey { .. } => OttRefusal::PassUnknownKey,
        ott::PassError::Forged => OttRefusal::PassForged,
        ott::PassError::WrongStream => OttRefusal::PassWrongStream,
        ott::PassError::Expired => OttRefusal::PassExpired,
        ott::PassError::WrongViewer => OttRefusal::PassWrongViewer,
    }
}

/// The refusal for an overload cause.
pub fn refusal_for_overload(cause: ott::Overload) -> OttRefusal {
    match cause {
        ott::Overload::Cpu => OttRefusal::OverloadCpu,
        ott::Overload::Network => OttRefusal::OverloadNetwork,
        ott::Overload::SessionLimit => OttRefusal::OverloadSessions,
    }
}

impl ApiError {
    /// This answer's row of the code table.
    pub fn as_code(self) -> Code {
        match self {
            ApiError::StreamNotFound => Code::Meeting(meeting::ErrorCode::NotOnMc),
            ApiError::NotStarted => Code::Meeting(meeting::ErrorCode::NotStarted),
            ApiError::StreamDown => Code::Input(codes::InputFault::StreamDown),
            ApiError::SegmentGone => Code::Request(RequestError::SegmentGone),
            ApiError::NotFound => Code::Request(RequestError::NotFound),
            ApiError::BadRequest => Code::Request(RequestError::BadRequest),
            ApiError::MethodNotAllowed => Code::Request(RequestError::MethodNotAllowed),
            ApiError::BodyTooLarge => Code::Request(RequestError::TooLarge),
            ApiError::Unauthorized => Code::Request(RequestError::Unauthorized),
            ApiError::Meeting(code) => Code::Meeting(code),
            ApiError::Ott(refusal) => Code::Ott(refusal),
            ApiError::Access(refusal) => Code::Access(refusal),
        }
    }

    /// The public error code sent in the body.
    pub fn code(self) -> u32 {
        self.as_code().code()
    }

    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        status_of(self.as_code())
    }

    /// The fixed, user-facing message.
    pub fn message(self) -> &'static str {
        self.as_code().message()
    }
}

fn status_of(code: Code) -> StatusCode {
    StatusCode::from_u16(code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// The one error answer: `code`'s status, its JSON body (with `field` when given),
/// never cached, and `Retry-After` on the temporary conditions.
pub fn respond(code: Code, field: Option<&str>) -> Response {
    let mut response = (status_of(code), code.json(field)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if code.retryable() {
        // A blocked LL-HLS request may come back at once, at the next part.
        let after = if code == Code::Request(RequestError::PartTimedOut) {
            "1"
        } else {
            "2"
        };
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static(after));
    }
    response
}

impl From<meeting::ErrorCode> for ApiError {
    fn from(code: meeting::ErrorCode) -> Self {
        ApiError::Meeting(code)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        respond(self.as_code(), None)
    }
}
