//! What the OTT route tests add to the harness: node `a` serving stream `s` in group
//! `g`, a mesh snapshot given as plain values, and calls from a public viewer.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use server::http::connection::Connection;
use server::redundancy::{Membership, MeshView, Redundancy, RedundancySettings};
use server::stream::package::Package;
use server::AppState;

pub use super::{segment, tracks};

/// The viewer's connection: a public address.
pub const VIEWER: &str = "203.0.113.9:50000";
/// The view key of the test domain.
pub const SECRET: &[u8] = b"view key of the test domain";

/// Now, Unix ms.
pub fn now_ms() -> i64 {
    server::clock::unix_ms()
}

/// A node of the domain with one public address.
pub fn node_view(id: &str, url: &str, https: bool) -> ott::NodeView {
    ott::NodeView {
        id: ott::NodeId::new(id),
        version: ott::Version::new(0, 1, 0, 0),
        hostname: None,
        addresses: vec![ott::Announced {
            url_base: url.into(),
            scheme: if https {
                ott::Scheme::Https
            } else {
                ott::Scheme::Http
            },
            public: true,
            cdn_shared: false,
        }],
        clock_offset_ms: 0,
        has_view_key: true,
        load: ott::Load::default(),
        thresholds: ott::Thresholds::default(),
        alive: true,
        silent_ms: 0,
        draining: false,
        certificate_mismatch: false,
    }
}

/// One rung of 1 Mbit/s H.264.
pub fn rung(transport: ott::Transport) -> ott::Rung {
    ott::Rung {
        codec: "h264".into(),
        audio_codec: Some("aac".into()),
        bitrate_bps: 1_000_000,
        transport,
    }
}

/// A member of group `g` on the same timeline, delivering its live window now.
pub fn member(
    node: &str,
    stream: &str,
    ladder: Vec<ott::Rung>,
    archive: ott::ArchiveRanges,
) -> ott::MemberView {
    ott::MemberView {
        node: ott::NodeId::new(node),
        group: "g".into(),
        stream: stream.into(),
        can_substitute: true,
        live_window_at_ms: Some(now_ms()),
        timeline_fingerprint: Some(42),
        ladder,
        languages: Vec::new(),
        archive,
    }
}

/// Node `a` with stream `s` (segments 10..15) in group `g`, before its mesh view.
pub struct Node {
    /// The routes' state.
    pub state: AppState,
    /// Stream `s`.
    pub channel: Arc<Package>,
    /// The node's OTT state (attached to `state`).
    pub redundancy: Arc<Redundancy>,
    /// Its membership of `g`.
    pub membership: Membership,
}

/// A fresh node `a`.
pub fn node() -> Node {
    let state = AppState::new(super::identity("a"), server::metrics::Metrics::new(), None);
    let channel = Arc::new(Package::new("s", 5, packaging::render::renderer(2000)));
    for msn in 10..15 {
        channel.push(segment(msn), tracks());
    }
    state.add_stream(Arc::clone(&channel), None);
    let redundancy = Arc::new(Redundancy::new(RedundancySettings::default()));
    let membership = Membership {
        group: "g".into(),
        can_substitute: true,
    };
    redundancy.set_membership("s", Some(membership.clone()));
    assert!(state.set_redundancy(Arc::clone(&redundancy)));
    Node {
        state,
        channel,
        redundancy,
        membership,
    }
}

impl Node {
    /// Hands the node a mesh snapshot, with the test domain's view key.
    pub fn see(&self, snapshot: ott::Snapshot) {
        self.redundancy.update_view(MeshView::new(
            snapshot,
            Arc::new(ott::KeyRing::new(ott::ViewKey::new(7, SECRET))),
            now_ms(),
        ));
    }
}

/// GET `uri` from [`VIEWER`] with headers: (status, headers, body text).
pub async fn call(
    state: &AppState,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, String) {
    call_from(state, uri, VIEWER, headers).await
}

/// [`call`] from the viewer at `peer` (`address:port`): the node counts viewers, and
/// binds passes, by the address it sees.
pub async fn call_from(
    state: &AppState,
    uri: &str,
    peer: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, String) {
    let mut request = Request::builder().method(Method::GET).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let mut request = request.body(Body::empty()).expect("a valid request");
    let peer: SocketAddr = peer.parse().expect("an address");
    server::http::request_context::RequestContext::of_mut(&mut request).connection =
        Some(Connection {
            peer,
            secure: false,
            gate: None,
        });
    let a = super::answer(state, request).await;
    let text = String::from_utf8_lossy(&a.body).into_owned();
    (a.status, a.headers, text)
}
