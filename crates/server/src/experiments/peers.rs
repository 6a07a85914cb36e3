//! Combining the domain's KPIs (EXP-1): a node pulls each alive peer's
//! `GET /api/experiments/report` over HTTP ([`fetch_report`]; the loop is
//! [`crate::experiment_pull`]) and applies it. A run's id is the same on
//! every node, and a peer's latest report replaces its previous one, so repeated or
//! lost pulls never double-count.

use std::time::Duration;

use experiments::NodeReport;
use http_body_util::{BodyExt, Empty, Limited};

/// Largest report body accepted, bytes.
pub const MAX_REPORT_BYTES: usize = 1 << 20;

/// Why a peer's report could not be had (logged by the caller, retried next round).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    /// The peer's address is not a usable `http://` URL.
    #[error("not an http url")]
    BadUrl,
    /// No answer in time.
    #[error("timed out")]
    Timeout,
    /// The connection or the exchange failed.
    #[error("request failed: {0}")]
    Request(String),
    /// The peer answered something else than 200.
    #[error("status {0}")]
    Status(u16),
    /// The body is too large or not a report.
    #[error("not a report")]
    BadBody,
}

/// The peers to pull from in one mesh snapshot: the other nodes that are alive, each with its
/// first plain-HTTP announced address (a peer announcing only HTTPS is skipped).
pub fn peers_of(snapshot: &ott::Snapshot) -> Vec<(String, String)> {
    snapshot
        .nodes
        .iter()
        .filter(|n| n.alive)
        .filter_map(|n| {
            n.addresses
                .iter()
                .find(|a| a.scheme == ott::Scheme::Http)
                .map(|a| (n.id.0.clone(), a.url_base.clone()))
        })
        .collect()
}

/// The path a peer's report is pulled from.
pub const REPORT_PATH: &str = "/api/experiments/report";

/// Fetches one peer's report from `{url_base}/api/experiments/report`, signed with the
/// domain's peer key (`key`, at `now_unix_s`) — never the admin token.
///
/// # Errors
/// See [`PeerError`].
pub async fn fetch_report(
    url_base: &str,
    key: &super::peer_auth::PeerKey,
    now_unix_s: i64,
    timeout: Duration,
) -> Result<NodeReport, PeerError> {
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let url = format!("{}{REPORT_PATH}", url_base.trim_end_matches('/'));
    let uri: axum::http::Uri = url.parse().map_err(|_| PeerError::BadUrl)?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        return Err(PeerError::BadUrl);
    }
    let mut request = axum::http::Request::get(uri);
    request = request.header(
        super::peer_auth::PEER_HEADER,
        key.sign(REPORT_PATH, now_unix_s),
    );
    let request = request
        .body(Empty::<bytes::Bytes>::new())
        .map_err(|_| PeerError::BadUrl)?;
    let client = Client::builder(TokioExecutor::new()).build_http();
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| PeerError::Request(e.to_string()))?;
        if response.status() != axum::http::StatusCode::OK {
            return Err(PeerError::Status(response.status().as_u16()));
        }
        let body = Limited::new(response.into_body(), MAX_REPORT_BYTES)
            .collect()
            .await
            .map_err(|_| PeerError::BadBody)?
            .to_bytes();
        serde_json::from_slice(&body).map_err(|_| PeerError::BadBody)
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| PeerError::Timeout)?
}

/// How often the node pulls its peers' reports while a run is in progress.
pub const PULL_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How long one peer may take to answer.
pub const PULL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, alive: bool, addresses: &[(&str, ott::Scheme)]) -> ott::NodeView {
        ott::NodeView {
            id: ott::NodeId::new(id),
            version: ott::Version::new(0, 1, 0, 0),
            hostname: None,
            addresses: addresses
                .iter()
                .map(|(url, scheme)| ott::Announced {
                    url_base: (*url).into(),
                    scheme: *scheme,
                    public: false,
                    cdn_shared: false,
                })
                .collect(),
            clock_offset_ms: 0,
            has_view_key: true,
            load: ott::Load::default(),
            thresholds: ott::Thresholds::default(),
            alive,
            silent_ms: 0,
            draining: false,
            certificate_mismatch: false,
        }
    }

    #[test]
    fn alive_peers_with_an_http_address_are_pulled() {
        use ott::Scheme::{Http, Https};
        let snapshot = ott::Snapshot {
            this: node("a", true, &[("http://10.0.0.1:8080", Http)]),
            nodes: vec![
                node(
                    "b",
                    true,
                    &[
                        ("https://b.example.net", Https),
                        ("http://10.0.0.2:8080", Http),
                    ],
                ),
                node("c", false, &[("http://10.0.0.3:8080", Http)]),
                node("d", true, &[("https://d.example.net", Https)]),
            ],
            members: Vec::new(),
            min_version: ott::Version::new(0, 1, 0, 0),
        };
        assert_eq!(
            peers_of(&snapshot),
            vec![("b".to_string(), "http://10.0.0.2:8080".to_string())]
        );
    }
}
