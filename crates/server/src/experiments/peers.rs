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
    redundancy
        .view()
        .map_or_else(Vec::new, |view| peers_of(&view.snapshot))
}

/// [`peer_urls`] of one mesh snapshot: the other nodes that are alive, each with its
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

/// The node's experiments loop: [`super::NodeExperiments::tick`] every second with the
/// wall clock, and while a run is in progress in an OTT domain, every [`PULL_EVERY`] a
/// pull of each alive peer's report (in the background, one round at a time, signed
/// with the domain's peer key). Ends when `shutdown` does.
pub async fn run(state: crate::state::AppState, shutdown: impl std::future::Future<Output = ()>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_pull = tokio::time::Instant::now();
    let mut pulling: Option<tokio::task::JoinHandle<()>> = None;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = &mut shutdown => break,
        }
        let experiments = state.shedder().experiments();
        experiments.tick(state.clock().unix_ms_u64());
        let Some(redundancy) = state.redundancy() else {
            continue;
        };
        if !experiments.is_running()
            || last_pull.elapsed() < PULL_EVERY
            || pulling.as_ref().is_some_and(|h| !h.is_finished())
        {
            continue;
        }
        last_pull = tokio::time::Instant::now();
        if redundancy.peer_key.get().is_none() {
            continue;
        }
        let peers = peer_urls(redundancy);
        let state = state.clone();
        let redundancy = std::sync::Arc::clone(redundancy);
        pulling = Some(tokio::spawn(async move {
            let Some(key) = redundancy.peer_key.get() else {
                return;
            };
            for (node, url) in peers {
                let now_s = state.clock().unix_ms() / 1000;
                match fetch_report(&url, key, now_s, PULL_TIMEOUT).await {
                    Ok(report) => state.shedder().experiments().apply_report(&node, report),
                    Err(error) => {
                        tracing::debug!(node = %node, %error, "cannot pull a peer's experiment report");
                    }
                }
            }
        }));
    }
    if let Some(handle) = pulling {
        handle.abort();
    }
}

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
