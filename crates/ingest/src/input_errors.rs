//! Why an input could not reach or use its source: the error of each kind of input,
//! in a module of their own so the status the supervisor publishes can name them
//! without depending on the inputs that raise them.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use thiserror::Error;

use crate::tls::TlsConfigError;

/// Why one pull attempt failed. Each variant is one distinct cause, so that the MC
/// client can map it to its own public error code (104101..104118) and operators can
/// tell a dead DNS from a refusing server from a stalled stream.
#[derive(Debug, Error)]
pub enum HttpPullError {
    /// The URL is not `http://` or `https://` with a host.
    #[error("invalid url: {0}")]
    InvalidUrl(String),
    /// The host name did not resolve (or resolving timed out).
    #[error("dns lookup failed for {host}: {reason}")]
    Dns {
        /// The host that did not resolve.
        host: String,
        /// The resolver's answer.
        reason: String,
    },
    /// Every address of the host refused the TCP connection.
    #[error("connection refused")]
    Refused,
    /// The TCP connection did not complete within the connect timeout.
    #[error("connect timed out")]
    ConnectTimeout,
    /// The TCP connection failed otherwise (network or host unreachable, ...).
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The local TLS configuration (CA file, system roots) is unusable.
    #[error(transparent)]
    TlsConfig(#[from] TlsConfigError),
    /// The server's certificate was rejected (unknown issuer, expired, wrong name).
    #[error("tls certificate rejected: {0}")]
    TlsCertificate(String),
    /// The TLS handshake failed for another reason (protocol, alert, timeout).
    #[error("tls handshake failed: {0}")]
    TlsHandshake(String),
    /// The server answered 3xx; redirects are not followed.
    #[error("redirect not followed: http {status}")]
    Redirect {
        /// The status code.
        status: u16,
    },
    /// The server answered 401 or 403.
    #[error("access denied: http {status}")]
    Unauthorized {
        /// The status code.
        status: u16,
    },
    /// The server answered 404: no such stream (yet).
    #[error("stream not found: http 404")]
    NotFound,
    /// The server answered another 4xx.
    #[error("request refused: http {status}")]
    ClientError {
        /// The status code.
        status: u16,
    },
    /// The server answered 5xx.
    #[error("server error: http {status}")]
    ServerError {
        /// The status code.
        status: u16,
    },
    /// The connection opened but no response headers came within the read timeout.
    #[error("no response within {0:?}")]
    ResponseTimeout(Duration),
    /// The server spoke something that is not HTTP/1.1 (or an unexpected status class).
    #[error("http protocol error: {0}")]
    Protocol(String),
    /// The response started, then no body bytes came within the read timeout.
    #[error("no data for {0:?}")]
    ReadTimeout(Duration),
    /// The connection was reset or closed in the middle of a message.
    #[error("connection reset: {0}")]
    Reset(String),
    /// The server ended the response cleanly: a live stream should never end.
    #[error("server ended the stream")]
    EndOfStream,
}

impl HttpPullError {
    /// A stable, short label for the cause, for metrics and logs.
    pub fn cause(&self) -> &'static str {
        match self {
            HttpPullError::InvalidUrl(_) => "invalid_url",
            HttpPullError::Dns { .. } => "dns",
            HttpPullError::Refused => "refused",
            HttpPullError::ConnectTimeout => "connect_timeout",
            HttpPullError::Connect(_) => "connect",
            HttpPullError::TlsConfig(_) => "tls_config",
            HttpPullError::TlsCertificate(_) => "tls_certificate",
            HttpPullError::TlsHandshake(_) => "tls_handshake",
            HttpPullError::Redirect { .. } => "http_redirect",
            HttpPullError::Unauthorized { .. } => "http_unauthorized",
            HttpPullError::NotFound => "http_not_found",
            HttpPullError::ClientError { .. } => "http_client_error",
            HttpPullError::ServerError { .. } => "http_server_error",
            HttpPullError::ResponseTimeout(_) => "response_timeout",
            HttpPullError::Protocol(_) => "protocol",
            HttpPullError::ReadTimeout(_) => "read_timeout",
            HttpPullError::Reset(_) => "reset",
            HttpPullError::EndOfStream => "end_of_stream",
        }
    }
}

/// Why a UDP input could not be set up.
#[derive(Debug, Error)]
pub enum UdpError {
    /// The socket could not be created or configured.
    #[error("udp socket: {0}")]
    Socket(std::io::Error),
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot bind udp {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's answer.
        source: std::io::Error,
    },
    /// Multicast needs an IPv4 bind address.
    #[error("multicast group {0} needs an ipv4 bind address")]
    NotIpv4(Ipv4Addr),
    /// Joining the multicast group failed (no such interface, not a group address).
    #[error("cannot join multicast group {group} on {interface}: {source}")]
    Join {
        /// The group.
        group: Ipv4Addr,
        /// The local interface address used.
        interface: Ipv4Addr,
        /// The system's answer.
        source: std::io::Error,
    },
}

/// Why one pull attempt ended; each variant is one cause an operator can act on.
#[derive(Debug, Error)]
pub enum RtmpPullError {
    /// The URL is not `rtmp[s]://host[:port]/app/stream`.
    #[error("invalid url: {0}")]
    InvalidUrl(String),
    /// The host name did not resolve (or resolving timed out).
    #[error("dns lookup failed for {host}: {reason}")]
    Dns {
        /// The host that did not resolve.
        host: String,
        /// The resolver's answer.
        reason: String,
    },
    /// Every address of the host refused the TCP connection.
    #[error("connection refused")]
    Refused,
    /// The TCP connection did not complete within the connect timeout.
    #[error("connect timed out")]
    ConnectTimeout,
    /// The TCP connection failed otherwise.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The local TLS configuration (CA file, system roots) is unusable.
    #[error(transparent)]
    TlsConfig(#[from] TlsConfigError),
    /// The TLS handshake failed (certificate rejected, protocol, timeout).
    #[error("tls handshake failed: {0}")]
    TlsHandshake(String),
    /// The server's RTMP handshake was wrong or did not come in time.
    #[error("rtmp handshake failed: {0}")]
    Handshake(String),
    /// The server refused `connect`, `createStream` or `play` (the stream does not
    /// exist, the key is wrong).
    #[error("play refused: {code} {description}")]
    PlayRefused {
        /// The server's status code.
        code: String,
        /// The server's words.
        description: String,
    },
    /// The server broke the RTMP protocol.
    #[error("rtmp protocol error: {0}")]
    Protocol(String),
    /// No frame came within the first-media timeout of the connection.
    #[error("no media within {0:?} of connecting")]
    NoMedia(Duration),
    /// Media flowed, then nothing came within the read timeout.
    #[error("no data for {0:?}")]
    ReadTimeout(Duration),
    /// The server ended the stream (its status code, or the connection closed).
    #[error("stream ended: {0}")]
    Ended(String),
    /// The connection broke.
    #[error("connection lost: {0}")]
    Reset(String),
}

/// Why a pull failed, for the input's status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SrtPullError {
    /// The URL cannot be read.
    #[error("bad srt url: {0}")]
    BadUrl(String),
    /// The handshake failed (refused, no answer, wrong passphrase).
    #[error("srt connect to {addr} failed: {error}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// What the SRT layer said.
        error: String,
    },
    /// No handshake answer within the connect timeout.
    #[error("srt connect to {0} timed out")]
    ConnectTimeout(String),
    /// Nothing came within the read timeout.
    #[error("no data for {0:?}")]
    ReadTimeout(Duration),
    /// The encoder closed the connection, or it broke.
    #[error("connection ended: {0}")]
    Ended(String),
}
