//! The OTT door and the master playlist with backups, answered in-process against a
//! mesh snapshot given as plain values (OTT-PROT-1..3, OTT-PLAY-1, OTT-ADDR-3/4,
//! OTT-GRP-3, OTT-OVL-1..2, OTT-OPS-1/2).

mod harness;

use std::sync::Arc;

use axum::http::{header, StatusCode};
use harness::ott_node::{
    call, call_from, member, node, node_view, now_ms, rung, segment, tracks, SECRET,
};
use server::redundancy::MeshView;
use server::AppState;

const HLS_JS_UA: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120 Safari/537.36";

struct Cluster {
    state: AppState,
    channel: Arc<server::stream::package::Package>,
    redundancy: Arc<server::redundancy::Redundancy>,
}

/// Node `a` serving stream `s` in group `g`, with `b` and `c` (public, HTTP, and `d`
/// HTTPS only) as the rest of the domain.
fn cluster(this: ott::NodeView, archive_here: Vec<(i64, i64)>) -> Cluster {
    let node = node();
    let ts = |archive: Vec<(i64, i64)>| ott::ArchiveRanges {
        ts: archive,
        fmp4: Vec::new(),
    };
    let ladder = || vec![rung(ott::Transport::Ts)];
    node.see(ott::Snapshot {
        this,
        nodes: vec![
            node_view("b", "http://198.51.100.2:8080", false),
            node_view("c", "http://198.51.100.3:8080", false),
            node_view("d", "https://d.example.net", true),
        ],
        members: vec![
            member("a", "s", ladder(), ts(archive_here)),
            member("b", "s-b", ladder(), ts(vec![(1_000_000, 9_000_000)])),
            member("c", "s-c", ladder(), ts(vec![(5_000_000, 6_000_000)])),
            member("d", "s-d", ladder(), ts(Vec::new())),
        ],
        min_version: ott::Version::new(0, 1, 0, 0),
    });
    Cluster {
        state: node.state,
        channel: node.channel,
        redundancy: node.redundancy,
    }
}

fn this_node() -> ott::NodeView {
    node_view("a", "http://198.51.100.1:8080", false)
}

fn sign(stream: &str, expires_at_ms: i64, secret: &[u8]) -> String {
    ott::Pass {
        stream: stream.into(),
        expires_at_ms,
        viewer: None,
        key_id: 0,
    }
    .sign(&ott::ViewKey::new(7, secret))
    .unwrap()
}

fn code_of(body: &str) -> u64 {
    let value: serde_json::Value = serde_json::from_str(body).unwrap();
    value["code"].as_u64().unwrap()
}

#[tokio::test]
async fn a_switching_player_gets_two_backups_with_identical_attributes() {
    // OTT-PROT-1, OTT-GRP-2: own variant first, then two backups with a pass each.
    let cluster = cluster(this_node(), Vec::new());
    let (status, headers, body) = call(
        &cluster.state,
        "/s/index.m3u8",
        &[("user-agent", HLS_JS_UA)],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CACHE_CONTROL], "private, no-store");
    let master = match m3u8_rs::parse_playlist_res(body.as_bytes()) {
        Ok(m3u8_rs::Playlist::MasterPlaylist(m)) => m,
        other => panic!("not a master playlist: {other:?}"),
    };
    assert_eq!(master.variants.len(), 3, "{body}");
    assert_eq!(master.variants[0].uri, "mono.m3u8");
    let backups: Vec<&str> = master.variants[1..]
        .iter()
        .map(|v| v.uri.as_str())
        .collect();
    for uri in &backups {
        assert!(
            uri.starts_with("http://198.51.100.2:8080/s-b/mono.m3u8?pass=")
                || uri.starts_with("http://198.51.100.3:8080/s-c/mono.m3u8?pass=")
                || uri.starts_with("https://d.example.net/s-d/mono.m3u8?pass="),
            "{uri}"
        );
    }
    assert_ne!(
        backups[0].split("?pass=").next(),
        backups[1].split("?pass=").next(),
        "two different backups"
    );
    // Identical attributes but for the pathway: only the URI differs, and each node's
    // variants are its own pathway, the own node's first (RFC 8216bis §7).
    let (attributes, pathways): (Vec<&str>, Vec<&str>) = body
        .lines()
        .filter(|l| l.starts_with("#EXT-X-STREAM-INF"))
        .map(|l| l.split_once(",PATHWAY-ID=").expect("a pathway"))
        .unzip();
    assert_eq!(attributes.len(), 3);
    assert!(attributes.iter().all(|a| *a == attributes[0]), "{body}");
    assert_eq!(pathways[0], "\"a\"");
    assert!(pathways[1] != pathways[2] && !pathways[1..].contains(&"\"a\""));
    // The steering server is the first backup, asked with the viewer's pathways.
    let steering = body
        .lines()
        .find(|l| l.starts_with("#EXT-X-CONTENT-STEERING:"))
        .expect("a steering tag");
    let first = backups[0].split("/s-").next().unwrap();
    let list: Vec<&str> = pathways.iter().map(|p| p.trim_matches('"')).collect();
    assert_eq!(
        steering,
        format!(
            "#EXT-X-CONTENT-STEERING:SERVER-URI=\"{first}/steering/g?p={}\",PATHWAY-ID=\"a\"",
            list.join(",")
        )
    );
    // The pass in a backup URI is valid on the backup for its stream, for this viewer
    // only (bound to its address): copied to another viewer it admits nobody.
    let pass = backups[0].split("pass=").nth(1).unwrap();
    let stream = ["s-b", "s-c", "s-d"]
        .into_iter()
        .find(|s| backups[0].contains(&format!("/{s}/")))
        .unwrap();
    let ring = ott::KeyRing::new(ott::ViewKey::new(7, SECRET));
    let viewer: std::net::SocketAddr = harness::ott_node::VIEWER.parse().unwrap();
    ring.verify(pass, stream, Some(viewer.ip()), now_ms())
        .unwrap();
    assert_eq!(
        ring.verify(pass, stream, Some([203, 0, 113, 10].into()), now_ms()),
        Err(ott::PassError::WrongViewer)
    );
}

#[tokio::test]
async fn non_switching_players_get_the_plain_master_playlist() {
    // OTT-PLAY-1: VLC, ffmpeg and a missing User-Agent get no backup variants.
    let cluster = cluster(this_node(), Vec::new());
    for ua in ["VLC/3.0.20 LibVLC/3.0.20", "Lavf/60.3.100", ""] {
        let headers: &[(&str, &str)] = if ua.is_empty() {
            &[]
        } else {
            &[("user-agent", ua)]
        };
        let (status, _, body) = call(&cluster.state, "/s/index.m3u8", headers).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body.matches("#EXT-X-STREAM-INF").count(), 1, "{ua}: {body}");
    }
}

#[tokio::test]
async fn an_https_viewer_gets_only_https_backups_and_x_forwarded_for_is_ignored() {
    // OTT-ADDR-3 (X-Forwarded-Proto counts), OTT-ADDR-4 (X-Forwarded-For does not:
    // a private forwarded address would hide public backups if it were read).
    let cluster = cluster(this_node(), Vec::new());
    let (_, _, body) = call(
        &cluster.state,
        "/s/index.m3u8",
        &[
            ("user-agent", HLS_JS_UA),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-for", "10.0.0.1"),
        ],
    )
    .await;
    let uris: Vec<&str> = body.lines().filter(|l| l.starts_with("http")).collect();
    assert_eq!(uris.len(), 1, "{body}");
    assert!(uris[0].starts_with("https://d.example.net/s-d/mono.m3u8?pass="));
}

#[tokio::test]
async fn bad_passes_are_refused_with_their_codes() {
    // OTT-GRP-3: forged, expired, another stream's, and malformed passes → 403.
    let cluster = cluster(this_node(), Vec::new());
    let now = now_ms();
    let cases = [
        (sign("s", now + 60_000, b"another domain"), 105_003),
        (sign("s", now - 241_000, SECRET), 105_005),
        (sign("other", now + 60_000, SECRET), 105_004),
        ("not-a-pass".to_owned(), 105_001),
    ];
    for (pass, code) in cases {
        let (status, _, body) =
            call(&cluster.state, &format!("/s/mono.m3u8?pass={pass}"), &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(code_of(&body), code);
    }
    // Within the 240 s clock tolerance an expired pass still admits.
    let pass = sign("s", now - 200_000, SECRET);
    let (status, _, _) = call(&cluster.state, &format!("/s/mono.m3u8?pass={pass}"), &[]).await;
    assert_eq!(status, StatusCode::OK);
    let metrics = call(&cluster.state, "/metrics", &[]).await.2;
    assert!(metrics.contains("brdyun_ott_refusals_total{code=\"105003\",reason=\"pass_forged\"} 1"));
}

#[tokio::test]
async fn an_overloaded_node_refuses_backup_viewers_at_once_but_never_its_own() {
    // OTT-OVL-1/2: CPU above the error threshold refuses viewers with a pass, fast.
    let mut this = this_node();
    this.load.cpu_percent = 97;
    let cluster = cluster(this, Vec::new());
    let pass = sign("s", now_ms() + 60_000, SECRET);
    let started = std::time::Instant::now();
    let (status, _, body) = call(&cluster.state, &format!("/s/mono.m3u8?pass={pass}"), &[]).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(code_of(&body), 105_011);
    assert!(started.elapsed() < std::time::Duration::from_millis(500));
    let (status, _, _) = call(&cluster.state, "/s/mono.m3u8", &[]).await;
    assert_eq!(status, StatusCode::OK, "own viewers are never refused");
    assert_eq!(cluster.redundancy.counters.overload_refusals(), 1);
}

#[tokio::test]
async fn a_backup_session_limit_counts_distinct_viewers_with_passes() {
    let mut this = this_node();
    this.thresholds.backup_session_limit = Some(1);
    let cluster = cluster(this, Vec::new());
    let pass = sign("s", now_ms() + 60_000, SECRET);
    let uri = format!("/s/mono.m3u8?pass={pass}");
    let first = call_from(&cluster.state, &uri, "203.0.113.1:4000", &[]).await;
    assert_eq!(first.0, StatusCode::OK);
    // The same viewer again is a known session, not a new one, whatever member name
    // it gives (a name is a claim; the address is what the node saw).
    let again = call_from(
        &cluster.state,
        &uri,
        "203.0.113.1:4001",
        &[("x-brdyun-member", "made-up")],
    )
    .await;
    assert_eq!(again.0, StatusCode::OK);
    let second = call_from(&cluster.state, &uri, "203.0.113.2:4000", &[]).await;
    assert_eq!(second.0, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(code_of(&second.2), 105_013);
    assert_eq!(cluster.redundancy.sessions.count(), 1);
}

#[tokio::test]
async fn a_paused_stream_redirects_new_viewers_with_a_pass() {
    // OTT-OPS-2, OTT-PROT-2: a 302 to another node, keeping the query, adding a pass.
    let cluster = cluster(this_node(), Vec::new());
    cluster.channel.set_input_paused(true);
    let (status, headers, _) = call(&cluster.state, "/s/index.m3u8?x=1", &[]).await;
    assert_eq!(status, StatusCode::FOUND);
    let location = headers[header::LOCATION].to_str().unwrap();
    assert!(
        location.starts_with("http://198.51.100.2:8080/s-b/index.m3u8?x=1&pass=")
            || location.starts_with("http://198.51.100.3:8080/s-c/index.m3u8?x=1&pass=")
            || location.starts_with("https://d.example.net/s-d/index.m3u8?x=1&pass="),
        "{location}"
    );
    // A viewer that already came with a pass is not sent on: it gets a fast refusal
    // so its player tries the next backup.
    let pass = sign("s", now_ms() + 60_000, SECRET);
    let (status, _, body) = call(&cluster.state, &format!("/s/mono.m3u8?pass={pass}"), &[]).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(code_of(&body), 105_020);
    // Segments are still served from the window.
    let (status, _, _) = call(&cluster.state, "/s/seg-14.ts", &[]).await;
    assert_eq!(status, StatusCode::OK);
    cluster.channel.set_input_paused(false);
    cluster.channel.push(segment(15), tracks());
    let (status, _, _) = call(&cluster.state, "/s/index.m3u8", &[]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn archive_requests_go_to_the_node_holding_most_of_the_period() {
    // OTT-PROT-3, OTT-ARCH-1/2: b holds 1000..9000 s, this node 8000..10000 s.
    let cluster = cluster(this_node(), vec![(8_000_000, 10_000_000)]);
    let (status, headers, _) = call(&cluster.state, "/s/index-2000-3600.m3u8", &[]).await;
    assert_eq!(status, StatusCode::FOUND);
    let location = headers[header::LOCATION].to_str().unwrap();
    assert!(
        location.starts_with("http://198.51.100.2:8080/s-b/index-2000-3600.m3u8?pass="),
        "{location}"
    );
    // Inside this node's own range: served here (no archive attached → its own answer).
    let (status, _, _) = call(&cluster.state, "/s/index-8500-60.m3u8", &[]).await;
    assert_ne!(status, StatusCode::FOUND);
}

#[tokio::test]
async fn a_logins_limit_applies_here_and_travels_to_the_backups() {
    // OTT-GRP-6: the limit counts this node's sessions; the login goes on to every
    // variant so the backups count it too.
    let cluster = cluster(this_node(), Vec::new());
    cluster
        .state
        .set_logins(Arc::new(server::access::logins::Logins::new([
            server::access::logins::Login {
                name: "alice".into(),
                token: "alice-token".into(),
                max_connections: 1,
            },
        ])));
    let uri = "/s/index.m3u8?login=alice&token=alice-token";
    let first = [("user-agent", HLS_JS_UA)];
    let (status, _, body) = call(&cluster.state, uri, &first).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let uris: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(uris[0], "mono.m3u8?login=alice&token=alice-token");
    assert_eq!(uris.len(), 3, "{body}");
    for backup in &uris[1..] {
        assert!(
            backup.contains("/mono.m3u8?login=alice&token=alice-token&pass="),
            "{backup}"
        );
    }
    // The same viewer's media playlist is the same session.
    let media = "/s/mono.m3u8?login=alice&token=alice-token";
    assert_eq!(call(&cluster.state, media, &first).await.0, StatusCode::OK);
    // A second viewer of the login is over the limit on this node.
    // Another address is another viewer (an invented member name is not).
    let second = [("user-agent", HLS_JS_UA), ("x-brdyun-member", "m2")];
    let other = "203.0.113.10:4000";
    let (status, _, body) = call_from(&cluster.state, uri, other, &second).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(code_of(&body), 105_030);
    let (status, _, body) = call(
        &cluster.state,
        "/s/index.m3u8?login=alice&token=wrong",
        &second,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(code_of(&body), 105_031);
    // Without a login the viewer is not limited.
    assert_eq!(
        call(&cluster.state, "/s/index.m3u8", &second).await.0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_paused_streams_ll_hls_playlists_redirect_to_an_fmp4_node() {
    // OTT-PROT-2/4: LL-HLS is protected by redirect on open, to a member packaging fMP4.
    let cluster = cluster(this_node(), Vec::new());
    let mut snapshot = cluster.redundancy.view().unwrap().snapshot.clone();
    for member in snapshot
        .members
        .iter_mut()
        .filter(|m| m.node.as_str() == "c")
    {
        member.ladder.push(ott::Rung {
            codec: "h264".into(),
            audio_codec: Some("aac".into()),
            bitrate_bps: 1_000_000,
            transport: ott::Transport::Fmp4,
        });
    }
    cluster.redundancy.update_view(MeshView::new(
        snapshot,
        Arc::new(ott::KeyRing::new(ott::ViewKey::new(7, SECRET))),
        now_ms(),
    ));
    cluster.channel.set_input_paused(true);
    for file in ["ll-index.m3u8", "ll.m3u8"] {
        let (status, headers, _) = call(&cluster.state, &format!("/s/{file}"), &[]).await;
        assert_eq!(status, StatusCode::FOUND, "{file}");
        let location = headers[header::LOCATION].to_str().unwrap();
        // Only c packages fMP4: b (TS only) is never the target.
        assert!(
            location.starts_with(&format!("http://198.51.100.3:8080/s-c/{file}?pass=")),
            "{location}"
        );
    }
}

fn json_of(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test]
async fn any_node_steers_a_viewer_off_a_draining_or_hung_node() {
    // RFC 8216bis §7 from the mesh: the viewer's order while all is well, the drained
    // or silent node last, and the next request to a healthy node it does not play on.
    let cluster = cluster(this_node(), Vec::new());
    let (status, headers, body) = call(
        &cluster.state,
        "/steering/g?p=b,a,c&_HLS_pathway=b&_HLS_throughput=5000000",
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    let manifest = json_of(&body);
    assert_eq!(manifest["VERSION"], 1);
    assert_eq!(manifest["TTL"], ott::STEERING_TTL_S);
    assert_eq!(
        manifest["PATHWAY-PRIORITY"],
        serde_json::json!(["b", "a", "c"])
    );
    assert_eq!(
        manifest["RELOAD-URI"],
        "http://198.51.100.1:8080/steering/g?p=b,a,c"
    );

    let mut snapshot = cluster.redundancy.view().unwrap().snapshot.clone();
    snapshot.nodes[0].draining = true; // b
    snapshot.nodes[1].silent_ms = ott::SILENT_AFTER_MS + 500; // c
    cluster.redundancy.update_view(MeshView::new(
        snapshot,
        Arc::new(ott::KeyRing::new(ott::ViewKey::new(7, SECRET))),
        now_ms(),
    ));
    let (_, _, body) = call(&cluster.state, "/steering/g?p=b,c,d", &[]).await;
    let manifest = json_of(&body);
    assert_eq!(
        manifest["PATHWAY-PRIORITY"],
        serde_json::json!(["d", "b", "c"])
    );
    // d plays; nothing else is healthy: d is asked next.
    assert_eq!(
        manifest["RELOAD-URI"],
        "https://d.example.net/steering/g?p=b,c,d"
    );
}

#[tokio::test]
async fn bad_steering_requests_get_their_codes() {
    let cluster = cluster(this_node(), Vec::new());
    for uri in [
        "/steering/g",
        "/steering/g?p=",
        "/steering/g?p=a,a",
        "/steering/g?p=a%22b",
    ] {
        let (status, _, body) = call(&cluster.state, uri, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(code_of(&body), 105_040, "{uri}");
    }
    let (status, _, body) = call(&cluster.state, "/steering/nobody?p=a", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code_of(&body), 105_041);
}

#[tokio::test]
async fn a_draining_node_sends_new_viewers_and_reloads_away_with_a_pass() {
    // Drain: the stream works here, but the node is being emptied.
    let cluster = cluster(this_node(), Vec::new());
    let (status, _, _) = call(&cluster.state, "/s/mono.m3u8", &[]).await;
    assert_eq!(status, StatusCode::OK);
    cluster.redundancy.drain.start(now_ms());
    for uri in ["/s/index.m3u8", "/s/mono.m3u8"] {
        let (status, headers, _) = call(&cluster.state, uri, &[]).await;
        assert_eq!(status, StatusCode::FOUND, "{uri}");
        let location = headers[header::LOCATION].to_str().unwrap();
        assert!(location.contains("?pass="), "{location}");
        assert!(!location.contains("198.51.100.1"), "{location}");
    }
    // A backup viewer already here is sent on too: the node is not broken.
    let pass = sign("s", now_ms() + 60_000, SECRET);
    let (status, _, _) = call(&cluster.state, &format!("/s/mono.m3u8?pass={pass}"), &[]).await;
    assert_eq!(status, StatusCode::FOUND);
    cluster.redundancy.drain.stop();
    let (status, _, _) = call(&cluster.state, "/s/mono.m3u8", &[]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn the_way_in_sends_each_viewer_to_a_node_that_serves_it_balanced() {
    // The way in: /watch/{group} on any node, this one included while it works.
    let cluster = cluster(this_node(), Vec::new());
    let mut here = 0;
    let mut there = 0;
    for viewer in 0..40 {
        let member = format!("viewer-{viewer}");
        let (status, headers, body) = call(
            &cluster.state,
            "/watch/g.m3u8?login=x",
            &[("x-brdyun-member", &member)],
        )
        .await;
        assert_eq!(status, StatusCode::FOUND, "{body}");
        let location = headers[header::LOCATION].to_str().unwrap();
        if location == "/s/index.m3u8?login=x" {
            here += 1;
        } else {
            assert!(location.contains("/index.m3u8?login=x&pass="), "{location}");
            there += 1;
        }
        // The same viewer lands on the same node again.
        let (_, again, _) = call(
            &cluster.state,
            "/watch/g.m3u8?login=x",
            &[("x-brdyun-member", &member)],
        )
        .await;
        let same = again[header::LOCATION].to_str().unwrap();
        assert_eq!(same.split("pass=").next(), location.split("pass=").next());
    }
    assert!(here > 0 && there > 0, "here {here}, there {there}");
    // DASH: the other members package no fMP4 here, so every viewer stays.
    let (_, headers, _) = call(&cluster.state, "/watch/g.mpd", &[]).await;
    assert_eq!(headers[header::LOCATION], "/s/index.mpd");
    // Draining: nobody is sent here.
    cluster.redundancy.drain.start(now_ms());
    for viewer in 0..20 {
        let member = format!("viewer-{viewer}");
        let (_, headers, _) =
            call(&cluster.state, "/watch/g", &[("x-brdyun-member", &member)]).await;
        assert!(headers[header::LOCATION]
            .to_str()
            .unwrap()
            .contains("/index.m3u8?pass="));
    }
    cluster.redundancy.drain.stop();
    let (status, _, body) = call(&cluster.state, "/watch/nobody.m3u8", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

#[test]
fn the_snapshots_node_keys_give_every_viewer_the_rendezvous_choice() {
    // OTT-CAP-1: the keys kept per snapshot are each candidate's own, in its list's
    // order, so the pick made with them is the pick made from the node ids.
    let cluster = cluster(this_node(), Vec::new());
    let view = cluster.redundancy.view().expect("a view");
    let group = view.candidates("g").expect("group g");
    let this = &view.snapshot.this.id;
    assert_eq!(view.this_key, ott::NodeKey::of(this));
    let mut lists = 0;
    for public in [false, true] {
        for https in [false, true] {
            let viewer = ott::ViewerContext { public, https };
            for transport in [ott::Transport::Ts, ott::Transport::Fmp4] {
                let candidates = group.for_viewer(viewer, transport);
                let keys: Vec<ott::NodeKey> = candidates
                    .targets
                    .iter()
                    .map(|t| ott::NodeKey::of(&t.node))
                    .collect();
                assert_eq!(candidates.keys, keys.as_slice());
                lists += usize::from(!keys.is_empty());
                for session in 0..200u32 {
                    let digest = ott::SessionDigest::of(&session.to_be_bytes());
                    let from_ids = ott::choose_backup_indices_by(
                        digest,
                        candidates.targets.iter().map(|t| &t.node),
                        this,
                    );
                    let from_keys = ott::choose_backup_indices_keyed(
                        digest,
                        candidates
                            .targets
                            .iter()
                            .map(|t| &t.node)
                            .zip(candidates.keys.iter().copied()),
                        (this, view.this_key),
                    );
                    assert_eq!(from_keys, from_ids, "session {session}");
                }
            }
        }
    }
    assert!(lists >= 4, "the test saw candidates ({lists} lists)");
}
