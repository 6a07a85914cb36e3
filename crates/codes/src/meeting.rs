//! The meeting codes of seed 000: each code's HTTP status, its message (English, and
//! the Chinese text of seed 000 as a second language), its log level, its metric label
//! and whether a client should retry. The other families of [`crate::Code`] share the
//! row type.
//!
//! 104101–104118 are one code per [`ConnectCause`]: why a node could not reach (or use)
//! its MC. The causes line up one to one with the ways an HTTP request can fail in
//! `ingest::http_pull::HttpPullError`, in the same order.

use std::fmt;

use crate::row::{CodeInfo, LogLevel};

/// Why a connection to the MC could not be established or used (104101–104118).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConnectCause {
    /// 104101: the MC URL is not `http(s)://host…`.
    InvalidUrl,
    /// 104102: the MC's host name did not resolve.
    Dns,
    /// 104103: the MC's port refused the TCP connection (nothing listens).
    Refused,
    /// 104104: the TCP connect did not complete in time (black-holed, overloaded).
    ConnectTimeout,
    /// 104105: the TCP connect failed otherwise (network or host unreachable).
    Connect,
    /// 104106: the node's own TLS configuration (CA file, system roots) is unusable.
    TlsConfig,
    /// 104107: the MC's certificate was rejected (unknown issuer, expired, wrong name).
    TlsCertificate,
    /// 104108: the TLS handshake failed otherwise (protocol, alert, timeout).
    TlsHandshake,
    /// 104109: the MC answered with a redirect (3xx), which is not followed.
    Redirect,
    /// 104110: the MC refused the node's token (401/403).
    Unauthorized,
    /// 104111: the MC API path does not exist there (404): not an MC, or a wrong URL.
    NotFound,
    /// 104112: the MC refused the request (another 4xx).
    ClientError,
    /// 104113: the MC failed (5xx).
    ServerError,
    /// 104114: connected, but no response headers came in time.
    ResponseTimeout,
    /// 104115: the peer does not speak HTTP/1.1 or answered something that is not the
    /// MC's JSON.
    Protocol,
    /// 104116: the response started, then stalled.
    ReadTimeout,
    /// 104117: the connection was reset or closed mid-message.
    Reset,
    /// 104118: the response ended before it carried anything (an empty answer).
    UnexpectedEnd,
}

impl ConnectCause {
    /// Every cause, in code order (104101 first).
    pub const ALL: [ConnectCause; 18] = [
        ConnectCause::InvalidUrl,
        ConnectCause::Dns,
        ConnectCause::Refused,
        ConnectCause::ConnectTimeout,
        ConnectCause::Connect,
        ConnectCause::TlsConfig,
        ConnectCause::TlsCertificate,
        ConnectCause::TlsHandshake,
        ConnectCause::Redirect,
        ConnectCause::Unauthorized,
        ConnectCause::NotFound,
        ConnectCause::ClientError,
        ConnectCause::ServerError,
        ConnectCause::ResponseTimeout,
        ConnectCause::Protocol,
        ConnectCause::ReadTimeout,
        ConnectCause::Reset,
        ConnectCause::UnexpectedEnd,
    ];

    /// Position in [`ConnectCause::ALL`] (0 for 104101).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The public code, 104101 + index.
    pub fn code(self) -> u32 {
        ErrorCode::McConnect(self).code()
    }
}

/// Every error code a client can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 102004: the meeting already exists and cannot be created.
    MeetingExists,
    /// 102005: the MC is unavailable (it was reachable and is not now, or it cannot
    /// do its work, e.g. its store cannot be written).
    McUnavailable,
    /// 102011: the client must be upgraded (on create or join).
    UpgradeRequired,
    /// 103002: the meeting has not started.
    NotStarted,
    /// 103003: the meeting has been closed.
    Closed,
    /// 103006: the meeting is full: the viewer limit is reached across all nodes.
    Full,
    /// 103011: the meeting is locked by the host.
    Locked,
    /// 104005: the meeting does not exist on the MC.
    NotOnMc,
    /// 104101–104118: a connection to the MC cannot be established, by cause.
    McConnect(ConnectCause),
    /// 16: "meeting exception, error code 16": the client must be upgraded, inside a
    /// running session.
    UpgradeInSession,
}

const fn row(
    code: u32,
    status: u16,
    message: &'static str,
    message_zh: &'static str,
    level: LogLevel,
    label: &'static str,
) -> CodeInfo {
    CodeInfo {
        code,
        status,
        message,
        message_zh,
        level,
        label,
        // The temporary conditions: not started, full, the MC away or unreachable.
        retryable: matches!(code, 102_005 | 103_002 | 103_006 | 104_101..=104_118),
    }
}

const NO_MC_ZH: &str = "無法和MC服務器建立連接";

/// The table, in [`ErrorCode::ALL`] order. The seed's 102011 and 16 texts name another
/// product's client; the product name is left out here.
#[rustfmt::skip]
static TABLE: [CodeInfo; 27] = {
    use LogLevel::{Error, Info, Warn};
    [
        row(102_004, 409, "the meeting already exists and cannot be created", "會議已經存在無法創建", Info, "meeting_exists"),
        row(102_005, 503, "the MC server is unavailable", "MC服務器不可用", Warn, "mc_unavailable"),
        row(102_011, 426, "the client must be upgraded", "請升級客戶端", Info, "upgrade_required"),
        row(103_002, 503, "the meeting has not started", "會議沒有開啟", Info, "not_started"),
        row(103_003, 410, "the meeting has been closed", "會議已經關閉", Info, "closed"),
        row(103_006, 503, "the meeting is full: the viewer limit is reached", "會議已滿，達到人數上限", Info, "full"),
        row(103_011, 403, "the meeting is locked by the host", "會議被主持人鎖定", Info, "locked"),
        row(104_005, 404, "the meeting does not exist on the MC", "會議在MC上不存在", Info, "not_on_mc"),
        row(104_101, 502, "cannot connect to the MC server: invalid MC URL", NO_MC_ZH, Error, "mc_invalid_url"),
        row(104_102, 502, "cannot connect to the MC server: DNS lookup failed", NO_MC_ZH, Warn, "mc_dns"),
        row(104_103, 502, "cannot connect to the MC server: connection refused", NO_MC_ZH, Warn, "mc_refused"),
        row(104_104, 504, "cannot connect to the MC server: connect timed out", NO_MC_ZH, Warn, "mc_connect_timeout"),
        row(104_105, 502, "cannot connect to the MC server: network unreachable", NO_MC_ZH, Warn, "mc_connect"),
        row(104_106, 502, "cannot connect to the MC server: local TLS configuration unusable", NO_MC_ZH, Error, "mc_tls_config"),
        row(104_107, 502, "cannot connect to the MC server: TLS certificate rejected", NO_MC_ZH, Warn, "mc_tls_certificate"),
        row(104_108, 502, "cannot connect to the MC server: TLS handshake failed", NO_MC_ZH, Warn, "mc_tls_handshake"),
        row(104_109, 502, "cannot connect to the MC server: unexpected redirect", NO_MC_ZH, Warn, "mc_redirect"),
        row(104_110, 502, "cannot connect to the MC server: access denied to this node", NO_MC_ZH, Warn, "mc_unauthorized"),
        row(104_111, 502, "cannot connect to the MC server: MC API not found at that URL", NO_MC_ZH, Warn, "mc_not_found"),
        row(104_112, 502, "cannot connect to the MC server: request refused", NO_MC_ZH, Warn, "mc_client_error"),
        row(104_113, 502, "cannot connect to the MC server: MC server error", NO_MC_ZH, Warn, "mc_server_error"),
        row(104_114, 504, "cannot connect to the MC server: no response in time", NO_MC_ZH, Warn, "mc_response_timeout"),
        row(104_115, 502, "cannot connect to the MC server: protocol error", NO_MC_ZH, Warn, "mc_protocol"),
        row(104_116, 504, "cannot connect to the MC server: response stalled", NO_MC_ZH, Warn, "mc_read_timeout"),
        row(104_117, 502, "cannot connect to the MC server: connection reset", NO_MC_ZH, Warn, "mc_reset"),
        row(104_118, 502, "cannot connect to the MC server: empty response", NO_MC_ZH, Warn, "mc_unexpected_end"),
        row(16, 426, "meeting exception, error code 16: the client must be upgraded", "會議異常，錯誤代碼16：需升級客戶端", Info, "upgrade_in_session"),
    ]
};

impl ErrorCode {
    /// Every code, in table order.
    pub const ALL: [ErrorCode; 27] = {
        let mut all = [ErrorCode::MeetingExists; 27];
        all[1] = ErrorCode::McUnavailable;
        all[2] = ErrorCode::UpgradeRequired;
        all[3] = ErrorCode::NotStarted;
        all[4] = ErrorCode::Closed;
        all[5] = ErrorCode::Full;
        all[6] = ErrorCode::Locked;
        all[7] = ErrorCode::NotOnMc;
        let mut i = 0;
        while i < 18 {
            all[8 + i] = ErrorCode::McConnect(ConnectCause::ALL[i]);
            i += 1;
        }
        all[26] = ErrorCode::UpgradeInSession;
        all
    };

    fn index(self) -> usize {
        match self {
            ErrorCode::MeetingExists => 0,
            ErrorCode::McUnavailable => 1,
            ErrorCode::UpgradeRequired => 2,
            ErrorCode::NotStarted => 3,
            ErrorCode::Closed => 4,
            ErrorCode::Full => 5,
            ErrorCode::Locked => 6,
            ErrorCode::NotOnMc => 7,
            ErrorCode::McConnect(cause) => 8 + cause.index(),
            ErrorCode::UpgradeInSession => 26,
        }
    }

    /// This code's row of the table.
    pub fn info(self) -> &'static CodeInfo {
        // In range by construction: `index` covers 0..27 and the table has 27 rows.
        &TABLE[self.index()]
    }

    crate::row::row_accessors!();

    /// The Chinese message.
    pub fn message_zh(self) -> &'static str {
        self.info().message_zh
    }

    /// The log level.
    pub fn level(self) -> LogLevel {
        self.info().level
    }

    /// The code with this number, if it is in the table.
    pub fn from_code(code: u32) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.code() == code)
    }

    /// True for the temporary conditions a client should retry after a while
    /// (not started, full, the MC is away).
    pub fn is_retryable(self) -> bool {
        self.info().retryable
    }

    /// The JSON body every client gets: `{"code":N,"message":"..."}`.
    pub fn json_body(self) -> String {
        crate::body::json(self.info(), None)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code(), self.message())
    }
}
