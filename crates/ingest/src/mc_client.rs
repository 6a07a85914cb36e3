//! The node's client of its MC: one sync exchange (`GET /api/nodes/sync`) that
//! reports this node's viewers per meeting and brings back every meeting's view.
//!
//! It rides on [`http_pull::connect`], so every way the exchange can fail is one
//! [`HttpPullError`] variant, and each variant maps to exactly one of the 18
//! [`ConnectCause`]s behind the public codes 104101–104118 ([`cause_of`]).

use std::sync::Arc;
use std::time::Duration;

use meeting::{ClientVersion, ConnectCause, MeetingView};
use rustls::ClientConfig;
use serde::Deserialize;
use thiserror::Error;

use crate::http_pull::{self, HttpPullConfig, HttpPullError};

/// Largest sync answer accepted.
pub const MAX_ANSWER: usize = 8 * 1024 * 1024;

/// Where the MC is and how this node talks to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McClientConfig {
    /// The MC's base URL, `http(s)://host:port` (a path prefix is allowed).
    pub url: String,
    /// The node token the MC expects, if any.
    pub token: Option<String>,
    /// This node's name in its reports.
    pub node: String,
    /// PEM CA certificates to trust for an `https` MC instead of the system roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// Limit for connect (DNS, TCP, TLS), and for the answer.
    pub timeout: Duration,
}

/// What the MC answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncAnswer {
    /// Every meeting, viewers summed across nodes.
    pub meetings: Vec<MeetingView>,
    /// The minimum client version, when the MC has one.
    pub min_client_version: Option<ClientVersion>,
    /// The keys private meetings' viewer tokens verify with: (key id, Ed25519 public
    /// key in base64url).
    pub viewer_keys: Vec<(String, String)>,
    /// The keys private meetings' sessions are signed with (none: an MC that issues
    /// none, and this node refuses private meetings until it does).
    pub session_keys: Option<meeting::SessionKeysWire>,
}

/// Why a sync failed.
#[derive(Debug, Error)]
pub enum McClientError {
    /// The request failed on the way (connect, TLS, HTTP status, …).
    #[error(transparent)]
    Http(#[from] HttpPullError),
    /// The MC answered something that is not its sync JSON.
    #[error("mc answer is not valid: {0}")]
    BadAnswer(String),
}

impl McClientError {
    /// The public cause (and so the code, 104101 + index) of this failure.
    pub fn cause(&self) -> ConnectCause {
        match self {
            McClientError::Http(e) => cause_of(e),
            McClientError::BadAnswer(_) => ConnectCause::Protocol,
        }
    }
}

/// The cause of an HTTP failure: one cause per [`HttpPullError`] variant.
pub fn cause_of(error: &HttpPullError) -> ConnectCause {
    match error {
        HttpPullError::InvalidUrl(_) => ConnectCause::InvalidUrl,
        HttpPullError::Dns { .. } => ConnectCause::Dns,
        HttpPullError::Refused => ConnectCause::Refused,
        HttpPullError::ConnectTimeout => ConnectCause::ConnectTimeout,
        HttpPullError::Connect(_) => ConnectCause::Connect,
        HttpPullError::TlsConfig(_) => ConnectCause::TlsConfig,
        HttpPullError::TlsCertificate(_) => ConnectCause::TlsCertificate,
        HttpPullError::TlsHandshake(_) => ConnectCause::TlsHandshake,
        HttpPullError::Redirect { .. } => ConnectCause::Redirect,
        HttpPullError::Unauthorized { .. } => ConnectCause::Unauthorized,
        HttpPullError::NotFound => ConnectCause::NotFound,
        HttpPullError::ClientError { .. } => ConnectCause::ClientError,
        HttpPullError::ServerError { .. } => ConnectCause::ServerError,
        HttpPullError::ResponseTimeout(_) => ConnectCause::ResponseTimeout,
        HttpPullError::Protocol(_) => ConnectCause::Protocol,
        HttpPullError::ReadTimeout(_) => ConnectCause::ReadTimeout,
        HttpPullError::Reset(_) => ConnectCause::Reset,
        HttpPullError::EndOfStream => ConnectCause::UnexpectedEnd,
    }
}

#[derive(Debug, Deserialize)]
struct Answer {
    meetings: Vec<MeetingView>,
    #[serde(default)]
    min_client_version: Option<String>,
    #[serde(default)]
    viewer_keys: Vec<WireKey>,
    #[serde(default)]
    session_keys: Option<meeting::SessionKeysWire>,
}

#[derive(Debug, Deserialize)]
struct WireKey {
    kid: String,
    public: String,
}

/// Whether a link to the MC at `url` keeps what it carries (the node token, private
/// meetings, viewer keys) from a man in the middle: `https`, or plain `http` to a
/// loopback address literal (`127.0.0.0/8`, `[::1]`), which never leaves the machine.
/// A host name, even `localhost`, is not taken on trust: resolving it is a claim.
pub fn link_protected(url: &str) -> bool {
    if url
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    {
        return true;
    }
    let Some(rest) = url
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .and_then(|_| url.get(7..))
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return false;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Percent-encodes a query value (everything but unreserved characters).
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The sync URL for this node and these viewer counts (the node token travels in a
/// header, not here).
pub fn sync_url(config: &McClientConfig, viewers: &[(String, u64)]) -> String {
    let base = config.url.trim_end_matches('/');
    let mut url = format!("{base}/api/nodes/sync?node={}", encode(&config.node));
    let counts: Vec<String> = viewers
        .iter()
        .map(|(id, n)| format!("{}:{n}", encode(id)))
        .collect();
    if !counts.is_empty() {
        url.push_str("&viewers=");
        url.push_str(&counts.join(","));
    }
    url
}

/// One sync exchange.
///
/// # Errors
/// [`McClientError`], whose [`McClientError::cause`] is the public cause.
pub async fn sync(
    config: &McClientConfig,
    tls: Option<Arc<ClientConfig>>,
    viewers: &[(String, u64)],
) -> Result<SyncAnswer, McClientError> {
    let mut pull = HttpPullConfig::new(sync_url(config, viewers));
    pull.ca_file = config.ca_file.clone();
    pull.connect_timeout = config.timeout;
    pull.read_timeout = config.timeout;
    pull.bearer.clone_from(&config.token);
    let mut connection = http_pull::connect(&pull, tls).await?;
    let mut body = Vec::new();
    loop {
        match connection.next_chunk().await {
            Ok(chunk) => {
                if body.len() + chunk.len() > MAX_ANSWER {
                    return Err(McClientError::BadAnswer("answer too large".into()));
                }
                body.extend_from_slice(&chunk);
            }
            Err(HttpPullError::EndOfStream) if !body.is_empty() => break,
            Err(e) => return Err(e.into()),
        }
    }
    let answer: Answer =
        serde_json::from_slice(&body).map_err(|e| McClientError::BadAnswer(e.to_string()))?;
    let min_client_version = match answer.min_client_version {
        Some(text) => Some(
            text.parse()
                .map_err(|_| McClientError::BadAnswer(format!("min_client_version {text:?}")))?,
        ),
        None => None,
    };
    Ok(SyncAnswer {
        meetings: answer.meetings,
        min_client_version,
        viewer_keys: answer
            .viewer_keys
            .into_iter()
            .map(|k| (k.kid, k.public))
            .collect(),
        session_keys: answer.session_keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pull_error_has_its_own_cause() {
        let errors = [
            HttpPullError::InvalidUrl(String::new()),
            HttpPullError::Dns {
                host: String::new(),
                reason: String::new(),
            },
            HttpPullError::Refused,
            HttpPullError::ConnectTimeout,
            HttpPullError::Connect(String::new()),
            HttpPullError::TlsConfig(crate::tls::TlsConfigError::NoRoots),
            HttpPullError::TlsCertificate(String::new()),
            HttpPullError::TlsHandshake(String::new()),
            HttpPullError::Redirect { status: 302 },
            HttpPullError::Unauthorized { status: 401 },
            HttpPullError::NotFound,
            HttpPullError::ClientError { status: 400 },
            HttpPullError::ServerError { status: 500 },
            HttpPullError::ResponseTimeout(Duration::ZERO),
            HttpPullError::Protocol(String::new()),
            HttpPullError::ReadTimeout(Duration::ZERO),
            HttpPullError::Reset(String::new()),
            HttpPullError::EndOfStream,
        ];
        let causes: Vec<ConnectCause> = errors.iter().map(cause_of).collect();
        assert_eq!(causes, ConnectCause::ALL.to_vec());
    }

    #[test]
    fn only_https_and_loopback_literals_are_protected_links() {
        for url in [
            "https://mc.example:9443",
            "HTTPS://mc.example",
            "http://127.0.0.1:9000",
            "http://127.3.4.5/prefix",
            "http://[::1]:9000/",
        ] {
            assert!(link_protected(url), "{url}");
        }
        for url in [
            "http://mc.example:9000",
            "http://localhost:9000",
            "http://10.0.0.1:9000",
            "http://[::2]:9000",
            "http://127.0.0.1@evil.example/",
            "http://127.0.0.1.evil.example/",
            "ftp://127.0.0.1/",
            "",
        ] {
            assert!(!link_protected(url), "{url}");
        }
    }

    #[test]
    fn the_sync_url_encodes_names_and_carries_no_token() {
        let config = McClientConfig {
            url: "http://mc:9000/".into(),
            token: Some("a b&c".into()),
            node: "node a&b".into(),
            ca_file: None,
            timeout: Duration::from_secs(1),
        };
        assert_eq!(
            sync_url(&config, &[("m1".into(), 3), ("m2".into(), 0)]),
            "http://mc:9000/api/nodes/sync?node=node%20a%26b&viewers=m1:3,m2:0"
        );
    }
}
