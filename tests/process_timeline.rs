//! Same timeline across node processes (DESIGN.md invariant 1, OTT-GRP-4) and media
//! sequence numbers that survive `kill -9` (docs/timeline.md).

mod common;

use std::time::Duration;

use common::{http_get, parse_media_playlist, wait_for, NodeProcess};

fn origin_config(data: &std::path::Path) -> String {
    format!(
        r#"
[node]
name = "origin"
http = "127.0.0.1:0"
data_dir = "{}"
[[stream]]
name = "m"
inputs = ["builtin://meeting"]
"#,
        data.display()
    )
}

fn edge_config(data: &std::path::Path, origin: std::net::SocketAddr) -> String {
    format!(
        r#"
[node]
name = "edge"
http = "127.0.0.1:0"
data_dir = "{}"
[[stream]]
name = "m"
inputs = ["http://{origin}/m/mpegts"]
"#,
        data.display()
    )
}

fn playlist(node: &NodeProcess) -> Option<String> {
    let (status, _, body) = http_get(node.http, "/m/mono.m3u8");
    (status == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn a_node_started_later_serves_the_same_segments() {
    let dir = tempfile::tempdir().unwrap();
    let origin = NodeProcess::start(
        dir.path(),
        "origin",
        &origin_config(&dir.path().join("origin")),
    );
    wait_for("origin live window", Duration::from_secs(30), || {
        playlist(&origin).filter(|p| parse_media_playlist(p).len() >= 3)
    });
    // The edge starts after the origin, mid-stream: once the origin has cut a segment
    // past the window it was first seen with.
    let first_seen = parse_media_playlist(&playlist(&origin).expect("origin playlist"))
        .last()
        .map(|s| s.msn)
        .expect("a segment");
    wait_for("the origin's next segment", Duration::from_secs(30), || {
        playlist(&origin)
            .and_then(|p| parse_media_playlist(&p).last().map(|s| s.msn))
            .filter(|msn| *msn > first_seen)
    });
    let edge = NodeProcess::start(
        dir.path(),
        "edge",
        &edge_config(&dir.path().join("edge"), origin.http),
    );
    wait_for("edge live window", Duration::from_secs(30), || {
        playlist(&edge).filter(|p| parse_media_playlist(p).len() >= 3)
    });
    // Let one more segment arrive on both: the edge lists a segment cut after it
    // joined, and the origin lists it too.
    let edge_first = parse_media_playlist(&playlist(&edge).expect("edge playlist"))
        .last()
        .map(|s| s.msn)
        .expect("a segment");
    let (a, b) = wait_for("one more segment on both", Duration::from_secs(30), || {
        let a = parse_media_playlist(&playlist(&origin)?);
        let b = parse_media_playlist(&playlist(&edge)?);
        let newest = b.last()?.msn;
        (newest > edge_first && a.iter().any(|s| s.msn == newest)).then_some((a, b))
    });
    let mut shared = 0;
    for entry in &b {
        let Some(twin) = a.iter().find(|e| e.msn == entry.msn) else {
            continue;
        };
        assert_eq!(entry, twin, "playlist entries differ for msn {}", entry.msn);
        let (_, _, seg_a) = http_get(origin.http, &format!("/m/{}", twin.uri));
        let (_, _, seg_b) = http_get(edge.http, &format!("/m/{}", entry.uri));
        assert!(!seg_a.is_empty());
        assert_eq!(seg_a, seg_b, "segment {} differs between nodes", entry.msn);
        shared += 1;
    }
    assert!(
        shared >= 3,
        "only {shared} shared segments: origin {a:?} edge {b:?}"
    );
}

#[test]
fn media_sequence_never_goes_back_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("node");
    let mut node = NodeProcess::start(dir.path(), "node", &origin_config(&data));
    let before = wait_for("live window", Duration::from_secs(30), || {
        playlist(&node)
            .map(|p| parse_media_playlist(&p))
            .filter(|e| e.len() >= 2)
    });
    let last_before = before.last().unwrap().msn;
    let disc_before = before.last().unwrap().discontinuity_seq;
    node.kill9();
    let node = NodeProcess::start(dir.path(), "node", &origin_config(&data));
    let after = wait_for("live window after restart", Duration::from_secs(30), || {
        playlist(&node)
            .map(|p| parse_media_playlist(&p))
            .filter(|e| !e.is_empty())
    });
    let first_after = after.first().unwrap();
    assert!(
        first_after.msn > last_before,
        "msn went back: {} after {}",
        first_after.msn,
        last_before
    );
    assert!(
        first_after.discontinuity_seq > disc_before,
        "a restart is a discontinuity"
    );
}
