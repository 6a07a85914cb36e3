//! Combining the domain's KPIs (EXP-1): a node pulls each alive peer's
//! `GET /api/experiments/report` over HTTP and applies it. A run's id is the same on
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

/// The peers to pull from: `(node id, url base)` of each alive node of the mesh view
/// with an `http://` address.
pub fn peer_urls(redundancy: &crate::redundancy::Redundancy) -> Vec<(String, String)> {
    let Some(view) = redundancy.view() else {
        return Vec::new();
    };
    view.snapshot
        .nodes
        .iter()
        .filter(|n| n.alive)
        .filter_map(|n| {
            n.addresses
                .iter()
                .find(|a| a.url_base.starts_with("http://"))
                .map(|a| (n.id.0.clone(), a.url_base.clone()))
        })
        .collect()
}

/// Fetches one peer's report from `{url_base}/api/experiments/report`.
///
/// # Errors
/// See [`PeerError`].
pub async fn fetch_report(
    url_base: &str,
    token: Option<&str>,
    timeout: Duration,
) -> Result<NodeReport, PeerError> {
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let url = format!("{}/api/experiments/report", url_base.trim_end_matches('/'));
    let uri: axum::http::Uri = url.parse().map_err(|_| PeerError::BadUrl)?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        return Err(PeerError::BadUrl);
    }
    let mut request = axum::http::Request::get(uri);
    if let Some(token) = token {
        request = request.header(axum::http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
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
