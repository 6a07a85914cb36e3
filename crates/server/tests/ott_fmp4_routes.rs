//! The OTT door for fMP4 HLS and DASH (OTT-PROT-2, OTT-PROT-4, OTT-ARCH-1): a paused
//! stream's MPD and fMP4 playlist redirect new viewers with a pass to a node that
//! packages fMP4, and catch-up MPDs and fMP4 playlists go by the fMP4 archive ranges,
//! answered in-process against a mesh snapshot given as plain values.

mod harness;

use axum::http::{header, StatusCode};
use harness::ott_node::{member, node, node_view, now_ms, rung, segment, tracks};
use server::AppState;

struct Cluster {
    state: AppState,
    channel: std::sync::Arc<server::stream::package::Package>,
}

/// Node `a` serving `s` in group `g`; `b` packages MPEG-TS only and archives TS,
/// `c` packages both and archives fMP4 only, each 1000..9000 s.
fn cluster() -> Cluster {
    let node = node();
    // This node announces what its own member says (both containers).
    let this = server::redundancy::members::own_member(
        &ott::NodeId::new("a"),
        "s",
        &node.membership,
        &node.channel,
        now_ms(),
        60_000,
    );
    let transports: Vec<ott::Transport> = this.ladder.iter().map(|r| r.transport).collect();
    assert_eq!(transports, [ott::Transport::Ts, ott::Transport::Fmp4]);
    let range = vec![(1_000_000, 9_000_000)];
    node.see(ott::Snapshot {
        this: node_view("a", "http://198.51.100.1:8080", false),
        nodes: vec![
            node_view("b", "http://198.51.100.2:8080", false),
            node_view("c", "http://198.51.100.3:8080", false),
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
    });
    Cluster {
        state: node.state,
        channel: node.channel,
    }
}

/// GET `uri`: (status, Location or "").
async fn call(state: &AppState, uri: &str) -> (StatusCode, String) {
    let (status, headers, _) = harness::ott_node::call(state, uri, &[]).await;
    let location = headers
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
