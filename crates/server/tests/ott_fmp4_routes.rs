//! The OTT door for fMP4 HLS and DASH (OTT-PROT-2, OTT-PROT-4, OTT-ARCH-1): a paused
//! stream's MPD and fMP4 playlist redirect new viewers with a pass to a node that
//! packages fMP4, and catch-up MPDs and fMP4 playlists go by the fMP4 archive ranges,
//! answered in-process against a mesh snapshot given as plain values.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use bytes::Bytes;
use server::channel::{Channel, LiveSegment, TrackSummary};
use server::metrics::Metrics;
use server::redundancy::{Membership, MeshView, Redundancy, RedundancySettings};
use server::{router, AppState, NodeIdentity};
use tower::ServiceExt;

const VIEWER: &str = "203.0.113.9:50000";
const SECRET: &[u8] = b"view key of the test domain";

fn now_ms() -> i64 {
    server::routes::admin::unix_ms()
}

fn segment(msn: u64) -> LiveSegment {
    LiveSegment {
        msn,
        discontinuity_seq: 0,
        discontinuous: false,
        duration_ticks: 180_000,
        program_date_time_ms: 1_700_000_000_000 + msn as i64 * 2000,
        data: Bytes::from(vec![0x47u8; 188 * 10]),
    }
}

fn tracks() -> TrackSummary {
    TrackSummary {
        codecs: vec!["avc1.64001e".into(), "mp4a.40.2".into()],
        resolution: Some((640, 360)),
        frame_rate_milli: Some(25_000),
    }
}

fn node_view(id: &str, url: &str) -> ott::NodeView {
    ott::NodeView {
        id: ott::NodeId::new(id),
        version: ott::Version::new(0, 1, 0, 0),
        hostname: None,
        addresses: vec![ott::Announced {
            url_base: url.into(),
            scheme: ott::Scheme::Http,
            public: true,
            cdn_shared: false,
        }],
        clock_offset_ms: 0,
        has_view_key: true,
        load: ott::Load::default(),
        thresholds: ott::Thresholds::default(),
        alive: true,
    }
}

fn rung(transport: ott::Transport) -> ott::Rung {
    ott::Rung {
        codec: "h264".into(),
        bitrate_bps: 1_000_000,
        transport,
    }
}

fn member(
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
        archive,
    }
}

struct Cluster {
    state: AppState,
    channel: Arc<Channel>,
}

/// Node `a` serving `s` in group `g`; `b` packages MPEG-TS only and archives TS,
/// `c` packages both and archives fMP4 only, each 1000..9000 s.
fn cluster() -> Cluster {
    let state = AppState::new(
        NodeIdentity {
            name: "a".into(),
            hostname: None,
        },
        Metrics::new(),
        None,
    );
    let channel = Arc::new(Channel::new("s", 5, server::render::renderer(2000)));
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
    // This node announces what its own member says (both containers).
    let this = server::redundancy::members::own_member(
        &ott::NodeId::new("a"),
        "s",
        &membership,
        &channel,
        now_ms(),
        60_000,
    );
    let transports: Vec<ott::Transport> = this.ladder.iter().map(|r| r.transport).collect();
    assert_eq!(transports, [ott::Transport::Ts, ott::Transport::Fmp4]);
    let range = vec![(1_000_000, 9_000_000)];
    let snapshot = ott::Snapshot {
        this: node_view("a", "http://198.51.100.1:8080"),
        nodes: vec![
            node_view("b", "http://198.51.100.2:8080"),
            node_view("c", "http://198.51.100.3:8080"),
        ],
        members: vec![
            this,
            member(
                "b",
                "s-b",
                vec![rung(ott::Transport::Ts)],
                ott::ArchiveRanges {
                    ts: range.clone(),
                    fmp4: Vec::new(),
                },
            ),
            member(
                "c",
                "s-c",
                vec![rung(ott::Transport::Ts), rung(ott::Transport::Fmp4)],
                ott::ArchiveRanges {
                    ts: Vec::new(),
                    fmp4: range,
                },
            ),
        ],
        min_version: ott::Version::new(0, 1, 0, 0),
    };
    redundancy.update_view(MeshView::new(
        snapshot,
        Arc::new(ott::KeyRing::new(ott::ViewKey::new(7, SECRET))),
        now_ms(),
    ));
    assert!(state.set_redundancy(Arc::clone(&redundancy)));
    Cluster { state, channel }
}

async fn call(state: &AppState, uri: &str) -> (StatusCode, String) {
    let mut request = Request::get(uri).body(Body::empty()).unwrap();
    let peer: SocketAddr = VIEWER.parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(peer));
    let response = router(state.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let location = response
        .headers()
        .get(header::LOCATION)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, location)
}

#[tokio::test]
async fn a_paused_streams_mpd_and_fmp4_playlist_redirect_to_an_fmp4_node_with_a_pass() {
    let cluster = cluster();
    cluster.channel.set_input_paused(true);
    // Only c packages fMP4: every DASH and fMP4 HLS viewer goes there, whatever its
    // session (b would be picked for some of them if the ladder were ignored).
    for viewer in 0..8 {
        let (status, location) = call(&cluster.state, &format!("/s/index.mpd?v={viewer}")).await;
        assert_eq!(status, StatusCode::FOUND);
        assert!(
            location.starts_with(&format!(
                "http://198.51.100.3:8080/s-c/index.mpd?v={viewer}&pass="
            )),
            "{location}"
        );
        let (status, location) = call(&cluster.state, &format!("/s/fmp4.m3u8?v={viewer}")).await;
        assert_eq!(status, StatusCode::FOUND);
        assert!(
            location.starts_with("http://198.51.100.3:8080/s-c/fmp4.m3u8?"),
            "{location}"
        );
    }
    // Segments are not at the door.
    let (status, _) = call(&cluster.state, "/s/seg-14-v.m4s").await;
    assert_ne!(status, StatusCode::FOUND);
    cluster.channel.set_input_paused(false);
    cluster.channel.push(segment(15), tracks());
    // Working again: served here (no fMP4 of these marker-less test segments: 503).
    let (status, _) = call(&cluster.state, "/s/index.mpd").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn catch_up_goes_by_the_archive_range_of_the_requests_container() {
    let cluster = cluster();
    for (file, node) in [
        ("index-2000-3600.mpd", "198.51.100.3:8080/s-c"),
        ("fmp4-2000-3600.m3u8", "198.51.100.3:8080/s-c"),
        ("index-2000-3600.m3u8", "198.51.100.2:8080/s-b"),
    ] {
        let (status, location) = call(&cluster.state, &format!("/s/{file}")).await;
        assert_eq!(status, StatusCode::FOUND, "{file}");
        assert!(
            location.starts_with(&format!("http://{node}/{file}?pass=")),
            "{file}: {location}"
        );
    }
    // Segments of the archive are not redirected (the playlist already was).
    let (status, _) = call(&cluster.state, "/s/dvr-3-v.m4s").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
