//! Private meetings at process level: a real MC and node on loopback, a
//! preset private meeting with the built-in source, viewer tokens minted by the MC and
//! by a "platform" key the MC is configured with. Every refusal has its 113xxx code;
//! the session travels in every URI the node writes; a removed viewer is refused within
//! a poll; a copied segment URL dies with its session; the MC's relay of a private
//! meeting is for its nodes only.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, ADMIN, NODE};
use common::{http_get_with, http_request, wait_for};
use ring::signature::Ed25519KeyPair;

fn platform() -> Ed25519KeyPair {
    Ed25519KeyPair::from_seed_unchecked(&[7; 32]).expect("a key pair")
}

/// The MC with the private preset meetings and the platform's viewer key, and a node.
fn start() -> Cluster {
    let public = ott::ViewerKey::of_pair("platform-1", &platform()).public_base64url();
    Cluster::mc()
        .no_rtmp()
        .mc_lines(&format!(
            "[[mc.viewer_keys]]\nkid = \"platform-1\"\npublic = \"{public}\"\n"
        ))
        .sections(
            "[[meeting]]\nid = \"board\"\nstart = true\nprivate = true\ninputs = [\"builtin://meeting\"]\n\
             [[meeting]]\nid = \"other\"\nstart = true\nprivate = true\n",
        )
        .nodes(&["n"])
        .start()
}

/// A token signed by the platform's key.
fn platform_token(meeting: &str, viewer: &str, exp: i64) -> String {
    let claims = ott::ViewerClaims {
        meeting: meeting.into(),
        viewer: viewer.into(),
        expires_unix_s: exp,
        max_sessions: None,
    };
    ott::mint_viewer_token(&claims, "platform-1", &platform())
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

/// GET `path` on the node: (status, body text, the code of a refusal or 0).
fn get(node: SocketAddr, path: &str) -> (u16, String, u64) {
    let (status, _, body) = http_get_with(node, path, &[]);
    let text = String::from_utf8_lossy(&body).into_owned();
    let code = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["code"].as_u64())
        .unwrap_or(0);
    (status, text, code)
}

/// The first URI line of a playlist.
fn first_uri(playlist: &str) -> String {
    playlist
        .lines()
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_else(|| panic!("a URI in:\n{playlist}"))
        .to_owned()
}

#[test]
fn a_private_meeting_needs_a_token_and_its_session_carries_the_viewer() {
    let cluster = start();
    let (mc, node) = (&cluster.mc, cluster.node());
    let (status, minted) = http_request(
        mc.http,
        "POST",
        "/api/meetings/board/viewer-tokens",
        &[ADMIN],
        r#"{"viewer": "alice", "ttl_seconds": 600}"#,
    );
    assert_eq!(status, 201, "{minted}");
    let alice = minted["token"].as_str().expect("a token").to_owned();
    // Without a token: the meeting is private.
    let master = format!("/board/index.m3u8?access_token={alice}");
    let (status, text) = wait_for("the node delivers board", Duration::from_secs(40), || {
        let (status, text, code) = get(node.http, &master);
        (status == 200 || (code != 102_005 && code != 103_002 && code != 104_005))
            .then_some((status, text))
    });
    assert_eq!(status, 200, "{text}");
    let (status, _, code) = get(node.http, "/board/index.m3u8");
    assert_eq!((status, code), (403, 113_001));
    // Every URI of the master carries the session; the media playlist's too.
    let variant = first_uri(&text);
    assert!(variant.contains("session="), "{text}");
    let (status, media, _) = get(node.http, &format!("/board/{variant}"));
    assert_eq!(status, 200, "{media}");
    let segment = first_uri(&media);
    assert!(segment.contains("?session="), "{media}");
    let (status, head, _) = http_get_with(node.http, &format!("/board/{segment}"), &[]);
    assert_eq!(status, 200, "a segment with the session");
    // The viewer's alone: no shared cache keeps it, and its own no longer than the
    // session opens media.
    let cache = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("cache-control: ")
                .map(str::to_owned)
        })
        .expect("a Cache-Control");
    let max_age: i64 = cache
        .strip_prefix("private, max-age=")
        .and_then(|age| age.parse().ok())
        .unwrap_or_else(|| panic!("private with a max-age: {cache}"));
    assert!(max_age <= ott::SESSION_MEDIA_LIFETIME_S, "{cache}");
    // A session copied to another address is refused there (113015), on the segment
    // as on the playlist.
    for path in [format!("/board/{segment}"), format!("/board/{variant}")] {
        let (status, body) = common::http_request_as("mallory", node.http, "GET", &path, &[]);
        assert_eq!(
            (status, body["code"].as_u64()),
            (403, Some(113_015)),
            "{path}"
        );
    }
    let bare = segment.split('?').next().unwrap();
    assert_eq!(
        get(node.http, &format!("/board/{bare}")).2,
        113_001,
        "no session"
    );
    let session = segment.split("session=").nth(1).unwrap().to_owned();
    let mut forged = session.clone();
    forged.replace_range(10..11, if &session[10..11] == "A" { "B" } else { "A" });
    assert_eq!(
        get(node.http, &format!("/board/{bare}?session={forged}")).2,
        113_011,
        "an altered session"
    );
    assert_eq!(
        get(node.http, &format!("/other/index.m3u8?session={session}")).2,
        113_011,
        "another meeting's session"
    );
    // The DASH MPD and the LL-HLS playlists carry it too.
    let (status, mpd, _) = get(node.http, &format!("/board/index.mpd?session={session}"));
    assert_eq!(status, 200, "{mpd}");
    assert!(mpd.contains(".m4s?session="), "{mpd}");
    let (status, ll, _) = get(node.http, &format!("/board/ll.m3u8?session={session}"));
    assert_eq!(status, 200, "{ll}");
    assert!(ll.contains("m4s?session="), "{ll}");
    // Every manifest the node answers carries it after every URI a player requests
    // (the writers mark their URIs; a route that forgot would show here).
    for file in [
        "index.m3u8",
        "mono.m3u8",
        "ll-index.m3u8",
        "ll.m3u8",
        "fmp4-index.m3u8",
        "fmp4.m3u8",
        "index.mpd",
    ] {
        let (status, text, _) = get(node.http, &format!("/board/{file}?session={session}"));
        assert_eq!(status, 200, "{file}: {text}");
        let uris = requested_uris(&text);
        assert!(!uris.is_empty(), "{file}: {text}");
        for uri in uris {
            assert_eq!(
                uri.matches("session=").count(),
                1,
                "{file}: {uri} in {text}"
            );
        }
    }

    // Tokens refused, each with its code.
    // One character inside the signature (not its last, whose low bits must stay zero).
    let mut bad_signature = platform_token("board", "bob", now_s() + 600);
    let at = bad_signature.len() - 10;
    let was = bad_signature.as_bytes()[at];
    bad_signature.replace_range(at..=at, if was == b'A' { "B" } else { "A" });
    for (token, code) in [
        ("x.y.z".to_owned(), 113_002),
        (bad_signature, 113_004),
        (platform_token("board", "bob", now_s() - 3600), 113_005),
        (platform_token("other", "bob", now_s() + 600), 113_008),
    ] {
        let (status, _, got) = get(
            node.http,
            &format!("/board/index.m3u8?access_token={token}"),
        );
        assert_eq!((status, got), (403, code), "{token}");
    }
    // A token of a key the MC does not know.
    let stranger = Ed25519KeyPair::from_seed_unchecked(&[9; 32]).unwrap();
    let claims = ott::ViewerClaims {
        meeting: "board".into(),
        viewer: "eve".into(),
        expires_unix_s: now_s() + 600,
        max_sessions: None,
    };
    let unknown = ott::mint_viewer_token(&claims, "stolen", &stranger);
    assert_eq!(
        get(
            node.http,
            &format!("/board/index.m3u8?access_token={unknown}")
        )
        .2,
        113_003
    );
    // The platform's own token plays.
    let bob = platform_token("board", "bob", now_s() + 600);
    assert_eq!(
        get(node.http, &format!("/board/index.m3u8?access_token={bob}")).0,
        200
    );

    // A second node of the MC takes alice's session as it is (the MC's session keys),
    // from her address.
    let second = cluster.start_node("n2");
    wait_for(
        "the second node plays alice's session",
        Duration::from_secs(40),
        || (get(second.http, &format!("/board/{variant}")).0 == 200).then_some(()),
    );
    // The host removes alice: her session is refused within a poll on every node, bob
    // plays on.
    let (_, bob_master, _) = get(node.http, &format!("/board/index.m3u8?access_token={bob}"));
    let bob_variant = first_uri(&bob_master);
    let removed_at = Instant::now();
    let (status, body) = http_request(
        mc.http,
        "DELETE",
        "/api/meetings/board/viewers/alice",
        &[ADMIN],
        "",
    );
    assert_eq!(status, 200, "{body}");
    wait_for(
        "alice refused on every node",
        Duration::from_secs(5),
        || {
            [node.http, second.http]
                .iter()
                .all(|n| get(*n, &format!("/board/{variant}")).2 == 113_013)
                .then_some(())
        },
    );
    println!(
        "a removed viewer is refused {:?} after the host's call",
        removed_at.elapsed()
    );
    assert_eq!(
        get(node.http, &format!("/board/{bob_variant}")).0,
        200,
        "bob is not removed"
    );
    assert_eq!(get(node.http, &master).2, 113_013, "nor can she open again");
}

#[test]
fn a_copied_segment_url_dies_with_its_session_and_the_relay_is_for_nodes() {
    let cluster = start();
    let (mc, node) = (&cluster.mc, cluster.node());
    // A token that ends in 4 s: its session ends with it.
    let token_end = now_s() + 4;
    let short = platform_token("board", "carol", token_end);
    let (_, master, _) = wait_for("board plays", Duration::from_secs(40), || {
        let got = get(
            node.http,
            &format!("/board/index.m3u8?access_token={short}"),
        );
        (got.0 == 200).then_some(got)
    });
    let (_, media, _) = get(node.http, &format!("/board/{}", first_uri(&master)));
    let segment = first_uri(&media);
    assert_eq!(get(node.http, &format!("/board/{segment}")).0, 200);
    // The session ends with the token, 4 s after it was made: the copied URL is
    // refused from then on, never before.
    wait_for("the session to end", Duration::from_secs(20), || {
        let code = get(node.http, &format!("/board/{segment}")).2;
        if code != 113_012 {
            return None;
        }
        assert!(now_s() >= token_end, "refused before the token ended");
        Some(())
    });
    // The MC's relay of a private meeting: only with the node (or admin) token.
    let (status, _, _) = http_get_with(mc.http, "/board/index.m3u8", &[]);
    assert_eq!(status, 403);
    let (status, _, _) = http_get_with(mc.http, "/board/index.m3u8", &[NODE]);
    assert_eq!(status, 200);
    // A token for one session at a time: a second device is refused while the first
    // plays here.
    let (status, minted) = http_request(
        mc.http,
        "POST",
        "/api/meetings/board/viewer-tokens",
        &[ADMIN],
        r#"{"viewer": "dave", "ttl_seconds": 600, "max_sessions": 1}"#,
    );
    assert_eq!(status, 201, "{minted}");
    let once = minted["token"].as_str().unwrap().to_owned();
    let (status, first, _) = get(node.http, &format!("/board/index.m3u8?access_token={once}"));
    assert_eq!(status, 200, "{first}");
    assert_eq!(
        get(node.http, &format!("/board/{}", first_uri(&first))).0,
        200
    );
    let (status, _, code) = get(node.http, &format!("/board/index.m3u8?access_token={once}"));
    assert_eq!(
        (status, code),
        (429, 113_014),
        "a second session of a one-session token"
    );
    assert_eq!(
        get(node.http, &format!("/board/{}", first_uri(&first))).0,
        200,
        "the first plays on"
    );
    // The MC mints only for a host or an admin.
    let (status, _) = http_request(
        mc.http,
        "POST",
        "/api/meetings/board/viewer-tokens",
        &[],
        r#"{"viewer": "x"}"#,
    );
    assert_eq!(status, 401);
    let (status, body) = http_request(
        mc.http,
        "POST",
        "/api/meetings/board/viewer-tokens",
        &[ADMIN],
        r#"{"viewer": "", "ttl_seconds": 10}"#,
    );
    assert_eq!((status, body["code"].as_u64()), (400, Some(113_020)));
}

/// The URIs a player requests from a playlist (URI lines, `URI="…"` but `SERVER-URI`)
/// or an MPD (`media`, `initialization`, `Location`), read independently of the writers.
fn requested_uris(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let quoted_after = |line: &str, key: &str| -> Vec<String> {
        line.match_indices(key)
            .filter(|(i, _)| *i == 0 || !line[..*i].ends_with('-'))
            .filter_map(|(i, _)| line[i + key.len()..].split('"').next().map(str::to_owned))
            .collect()
    };
    if text.starts_with("<?xml") {
        for key in ["media=\"", "initialization=\""] {
            out.extend(quoted_after(text, key));
        }
        for part in text.split("<Location").skip(1) {
            let inner = part.split_once('>').map_or("", |(_, r)| r);
            out.extend(inner.split("</Location>").next().map(str::to_owned));
        }
        return out;
    }
    for line in text.lines() {
        if line.starts_with('#') {
            out.extend(quoted_after(line, "URI=\""));
        } else if !line.trim().is_empty() {
            out.push(line.to_owned());
        }
    }
    out
}
