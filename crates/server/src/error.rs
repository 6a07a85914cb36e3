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
    /// An OTT redundancy answer: a refused pass, a refused backup viewer, or a stream
    /// that does not work here with no node to send the viewer to.
    Ott(OttRefusal),
}

/// The OTT answers that are not content (codes 105xxx, documented in docs/ott-redundancy.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OttRefusal {
    /// The pass is not a pass (bad encoding, truncated).
    PassMalformed,
    /// The pass names a view key this node does not hold (too old, another domain).
    PassUnknownKey,
    /// The pass signature does not match.
    PassForged,
    /// The pass is for another stream.
    PassWrongStream,
    /// The pass expired (beyond 240 s of clock tolerance).
    PassExpired,
    /// The pass is bound to another viewer address.
    PassWrongViewer,
    /// A viewer from another node refused: CPU above the error threshold (OTT-OVL-1).
    OverloadCpu,
    /// A viewer from another node refused: network above the error threshold.
    OverloadNetwork,
    /// A viewer from another node refused: the backup-session limit is reached.
    OverloadSessions,
    /// The stream does not work here and no node of its group can take the viewer.
    NoBackup,
    /// A login's connection limit on this node is reached (OTT-GRP-6).
    LoginLimit,
    /// An unknown login or a wrong token.
    LoginRefused,
}

impl OttRefusal {
    /// The refusal for a pass error.
    pub fn from_pass(error: &ott::PassError) -> Self {
        match error {
            ott::PassError::Malformed | ott::PassError::StreamTooLong => Self::PassMalformed,
            ott::PassError::UnknownKey { .. } => Self::PassUnknownKey,
            ott::PassError::Forged => Self::PassForged,
            ott::PassError::WrongStream => Self::PassWrongStream,
            ott::PassError::Expired => Self::PassExpired,
            ott::PassError::WrongViewer => Self::PassWrongViewer,
        }
    }

    /// The refusal for an overload cause.
    pub fn from_overload(cause: ott::Overload) -> Self {
        match cause {
            ott::Overload::Cpu => Self::OverloadCpu,
            ott::Overload::Network => Self::OverloadNetwork,
            ott::Overload::SessionLimit => Self::OverloadSessions,
        }
    }

    /// Every refusal, for documentation and metrics.
    pub const ALL: [OttRefusal; 12] = [
        Self::PassMalformed,
        Self::PassUnknownKey,
        Self::PassForged,
        Self::PassWrongStream,
        Self::PassExpired,
        Self::PassWrongViewer,
        Self::OverloadCpu,
        Self::OverloadNetwork,
        Self::OverloadSessions,
        Self::NoBackup,
        Self::LoginLimit,
        Self::LoginRefused,
    ];

    /// The public code.
    pub fn code(self) -> u32 {
        match self {
            Self::PassMalformed => 105_001,
            Self::PassUnknownKey => 105_002,
            Self::PassForged => 105_003,
            Self::PassWrongStream => 105_004,
            Self::PassExpired => 105_005,
            Self::PassWrongViewer => 105_006,
            Self::OverloadCpu => 105_011,
            Self::OverloadNetwork => 105_012,
            Self::OverloadSessions => 105_013,
            Self::NoBackup => 105_020,
            Self::LoginLimit => 105_030,
            Self::LoginRefused => 105_031,
        }
    }

    /// The HTTP status: 403 for passes, 503 for the rest (a player moves on at once).
    pub fn status(self) -> StatusCode {
        match self {
            Self::PassMalformed
            | Self::PassUnknownKey
            | Self::PassForged
            | Self::PassWrongStream
            | Self::PassExpired
            | Self::PassWrongViewer
            | Self::LoginRefused => StatusCode::FORBIDDEN,
            Self::LoginLimit => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The fixed message.
    pub fn message(self) -> &'static str {
        match self {
            Self::PassMalformed => "the pass is malformed",
            Self::PassUnknownKey => "the pass is signed with a view key this node does not hold",
            Self::PassForged => "the pass signature is not valid",
            Self::PassWrongStream => "the pass is for another stream",
            Self::PassExpired => "the pass has expired",
            Self::PassWrongViewer => "the pass is bound to another viewer",
            Self::OverloadCpu => "this node takes no more backup viewers: CPU overloaded",
            Self::OverloadNetwork => "this node takes no more backup viewers: network overloaded",
            Self::OverloadSessions => {
                "this node takes no more backup viewers: session limit reached"
            }
            Self::NoBackup => {
                "the stream does not work on this node and no other node can serve it"
            }
            Self::LoginLimit => "the login's connection limit on this node is reached",
            Self::LoginRefused => "unknown login or wrong token",
        }
    }

    /// A short label for metrics.
    pub fn label(self) -> &'static str {
        match self {
            Self::PassMalformed => "pass_malformed",
            Self::PassUnknownKey => "pass_unknown_key",
            Self::PassForged => "pass_forged",
            Self::PassWrongStream => "pass_wrong_stream",
            Self::PassExpired => "pass_expired",
            Self::PassWrongViewer => "pass_wrong_viewer",
            Self::OverloadCpu => "overload_cpu",
            Self::OverloadNetwork => "overload_network",
            Self::OverloadSessions => "overload_sessions",
            Self::NoBackup => "no_backup",
            Self::LoginLimit => "login_limit",
            Self::LoginRefused => "login_refused",
        }
    }
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
            ApiError::Ott(refusal) => refusal.code(),
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
            ApiError::Ott(refusal) => refusal.status(),
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
            ApiError::Ott(refusal) => refusal.message(),
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
