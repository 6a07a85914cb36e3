//! The MC role and meetings at process level: real `brdyun mc` and `brdyun node`
//! processes on loopback, ffmpeg publishing by RTMP, and every code a viewer of a
//! meeting can get (MTG-1..3).

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::cluster::{
    start_mc, Cluster, ClusterBuilder, McConfig, NodeConfig, ADMIN, ADMIN_TOKEN,
};
use common::{
    ffmpeg_source, http_request, http_request_as, open_meeting, start_role, wait_for, ChildGuard,
};
use serde_json::{json, Value};

/// The MCs of these tests take clients from version 2.0 on.
const MIN_CLIENT: &str = "min_client_version = \"2.0\"\n";

/// An MC of these tests with `sections` after `[defaults]`.
fn mc(sections: &str) -> ClusterBuilder {
    Cluster::mc().mc_lines(MIN_CLIENT).sections(sections)
}

/// The node's count of answered exchanges with its MC (`brdyun_mc_syncs_total`).
fn syncs(node: SocketAddr) -> u64 {
    let (_, _, body) = common::http_get(node, "/metrics");
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix("brdyun_mc_syncs_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Waits until opening `meeting` as `viewer` answers `code` (0 = plays).
fn wait_code(node: SocketAddr, meeting: &str, viewer: &str, code: u64) {
    let mut last = (0, 0);
    let mut attempt = 0;
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for(
            &format!("{meeting} to answer {code}"),
            Duration::from_secs(30),
            || {
                // A refusal is checked with a fresh viewer each time: a viewer admitted
                // before the change reached the node would stay admitted.
                attempt += 1;
                let name = if code == 0 {
                    viewer.to_owned()
                } else {
                    format!("{viewer}-{attempt}")
                };
                last = open_meeting(node, meeting, &name);
                (last.1 == code && (code != 0 || last.0 == 200)).then_some(())
            },
        )
    }));
    assert!(
        waited.is_ok(),
        "{meeting}: wanted {code}, last answer {last:?}"
    );
}

fn api(mc: SocketAddr, method: &str, path: &str, token: Option<&str>, body: Value) -> (u16, Value) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = Vec::new();
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth.as_str()));
    }
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    http_request(mc, method, path, &headers, &body)
}

#[test]
fn a_meeting_published_by_rtmp_plays_on_a_node_through_its_lifecycle() {
    let cluster = mc("").nodes(&["node-a"]).start();
    let (mc, node) = (&cluster.mc, cluster.node());
    let (status, created) = api(
        mc.http,
        "POST",
        "/api/meetings",
        Some(ADMIN_TOKEN),
        json!({"id": "m1", "viewer_limit": 10}),
    );
    assert_eq!(status, 201, "{created}");
    let key = created["stream_key"].as_str().unwrap().to_owned();
    let host = created["host_token"].as_str().unwrap().to_owned();
    // Created, not started: 103002 on the node, and the MC refuses the publisher.
    wait_code(node.http, "m1", "v1", 103_002);
    let rtmp = mc.rtmp.expect("mc rtmp address");
    let early = ChildGuard::spawn(
        "early publisher",
        &mut ffmpeg_source(5, "flv", &format!("rtmp://{rtmp}/live/m1?key={key}")),
    );
    let (status, _) = early.finish(Duration::from_secs(15));
    assert!(
        !status.success(),
        "a meeting that has not started accepted a publisher"
    );
    // A viewer cannot start it; the host can.
    assert_eq!(
        api(mc.http, "POST", "/api/meetings/m1/start", None, Value::Null).0,
        401
    );
    assert_eq!(
        api(
            mc.http,
            "POST",
            "/api/meetings/m1/start",
            Some(&host),
            Value::Null
        )
        .0,
        200
    );
    // Live without a publisher: the node pulls nothing and answers 103002; its
    // Backups screen shows the meeting waiting (requirement OTT-OPS-1).
    common::wait_for("m1 waiting on the node", Duration::from_secs(10), || {
        let (_, ott) = common::http_get_json(node.http, "/api/ott");
        ott["waiting_meetings"]
            .as_array()?
            .iter()
            .any(|m| m == "m1")
            .then_some(())
    });
    wait_code(node.http, "m1", "v1", 103_002);
    // A wrong key is refused; the right one plays on the node.
    let wrong = ChildGuard::spawn(
        "wrong-key publisher",
        &mut ffmpeg_source(5, "flv", &format!("rtmp://{rtmp}/live/m1?key=nope")),
    );
    assert!(!wrong.finish(Duration::from_secs(15)).0.success());
    let (_, streams) = common::http_get_json(node.http, "/api/streams");
    assert!(
        !streams.to_string().contains("\"m1\""),
        "a meeting waiting for its publisher is not pulled: {streams}"
    );
    let log = std::fs::read_to_string(&node.log).expect("the node's log");
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("m1") && (l.contains("WARN") || l.contains("ERROR")))
        .collect();
    assert!(
        warnings.is_empty(),
        "a meeting waiting for its publisher is no warning: {warnings:#?}"
    );
    let publisher = ChildGuard::spawn(
        "publisher",
        &mut ffmpeg_source(60, "flv", &format!("rtmp://{rtmp}/live/m1?key={key}")),
    );
    wait_code(node.http, "m1", "v1", 0);
    // The node's segments come from the MC's: same numbers and dates.
    let (_, _, node_playlist) = common::http_get(node.http, "/m1/mono.m3u8");
    // The MC's streams are for its nodes (and its admin): not for an anonymous caller.
    assert_eq!(common::http_get(mc.http, "/m1/mono.m3u8").0, 403);
    let (_, _, mc_playlist) = common::http_get_with(mc.http, "/m1/mono.m3u8", &[ADMIN]);
    let (node_entries, mc_entries) = (
        common::parse_media_playlist(&String::from_utf8_lossy(&node_playlist)),
        common::parse_media_playlist(&String::from_utf8_lossy(&mc_playlist)),
    );
    let shared: Vec<_> = node_entries
        .iter()
        .filter(|e| mc_entries.iter().any(|m| m.msn == e.msn))
        .collect();
    assert!(
        !shared.is_empty(),
        "no common segment:\n{node_entries:?}\n{mc_entries:?}"
    );
    for entry in shared {
        let on_mc = mc_entries.iter().find(|m| m.msn == entry.msn).unwrap();
        assert_eq!(entry.program_date_time, on_mc.program_date_time);
    }
    // Locked: new viewers get 103011, the viewer already in keeps playing.
    assert_eq!(
        api(
            mc.http,
            "POST",
            "/api/meetings/m1/lock",
            Some(&host),
            Value::Null
        )
        .0,
        200
    );
    wait_code(node.http, "m1", "v2", 103_011);
    assert_eq!(open_meeting(node.http, "m1", "v1").0, 200);
    // An old client: 102011 to join, 16 in its session.
    let (status, body) = http_request_as(
        "v1",
        node.http,
        "GET",
        "/m1/mono.m3u8",
        &[("X-Brdyun-Client-Version", "1.9")],
    );
    assert_eq!((status, body["code"].as_u64()), (426, Some(16)));
    let (status, body) = http_request_as(
        "v3",
        node.http,
        "GET",
        "/m1/index.m3u8",
        &[("X-Brdyun-Client-Version", "1.9")],
    );
    assert_eq!((status, body["code"].as_u64()), (426, Some(102_011)));
    assert_eq!(
        api(
            mc.http,
            "POST",
            "/api/meetings/m1/unlock",
            Some(&host),
            Value::Null
        )
        .0,
        200
    );
    wait_code(node.http, "m1", "v4", 0);
    // Closed: 103003, and the id stays taken (102004).
    assert_eq!(
        api(
            mc.http,
            "POST",
            "/api/meetings/m1/close",
            Some(&host),
            Value::Null
        )
        .0,
        200
    );
    wait_code(node.http, "m1", "v1", 103_003);
    let (status, body) = api(
        mc.http,
        "POST",
        "/api/meetings",
        Some(ADMIN_TOKEN),
        json!({"id": "m1"}),
    );
    assert_eq!((status, body["code"].as_u64()), (409, Some(102_004)));
    // Unknown on the MC: 104005.
    wait_code(node.http, "nope", "v1", 104_005);
    drop(publisher);
}

#[test]
fn concurrent_creates_against_the_process_have_one_winner() {
    let cluster = mc("").start();
    let addr = cluster.mc.http;
    let results: Vec<(u16, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(move || {
                    http_request(addr, "POST", "/api/meetings", &[ADMIN], r#"{"id":"race"}"#)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let created = results.iter().filter(|(s, _)| *s == 201).count();
    let refused = results
        .iter()
        .filter(|(s, b)| *s == 409 && b["code"] == 102_004)
        .count();
    assert_eq!((created, refused), (1, 7), "{results:?}");
    // Oversized and malformed bodies: their codes (413 108005, 400 108007 naming the
    // body), never the parser's text; the MC lives on.
    let big = format!(r#"{{"id":"big","title":"{}"}}"#, "x".repeat(70_000));
    let (status, body) = http_request(addr, "POST", "/api/meetings", &[ADMIN], &big);
    assert_eq!((status, body["code"].as_u64()), (413, Some(108_005)));
    let (status, body) = http_request(addr, "POST", "/api/meetings", &[ADMIN], "{\"id\": [}");
    assert_eq!((status, body["code"].as_u64()), (400, Some(108_007)));
    assert_eq!(body["field"], "body");
    assert_eq!(
        api(addr, "GET", "/api/meetings/race", None, Value::Null).1["state"],
        "created"
    );
}

#[test]
fn the_viewer_limit_counts_viewers_across_two_nodes() {
    let preset = "[[meeting]]\nid = \"lim\"\nviewer_limit = 2\nstart = true\ninputs = [\"builtin://meeting\"]\n";
    let cluster = mc(preset).nodes(&["node-a", "node-b"]).start();
    let (mc, a, b) = (&cluster.mc, &cluster.nodes[0], &cluster.nodes[1]);
    wait_code(a.http, "lim", "alice", 0);
    wait_code(b.http, "lim", "bob", 0);
    // Both nodes have reported one viewer each: the MC sums them to the limit.
    wait_for(
        "the mc to count both viewers",
        Duration::from_secs(10),
        || {
            let (_, view) = api(mc.http, "GET", "/api/meetings/lim", None, Value::Null);
            (view["viewers"] == 2).then_some(())
        },
    );
    // Once both nodes have synced twice more (the first answer may predate the count),
    // each sees the other's viewer: a third viewer is refused on either node.
    let (a_then, b_then) = (syncs(a.http), syncs(b.http));
    wait_for("both nodes to sync twice", Duration::from_secs(10), || {
        (syncs(a.http) >= a_then + 2 && syncs(b.http) >= b_then + 2).then_some(())
    });
    assert_eq!(open_meeting(a.http, "lim", "carol"), (503, 103_006));
    assert_eq!(open_meeting(b.http, "lim", "dave"), (503, 103_006));
    // Viewers already in keep playing.
    assert_eq!(open_meeting(a.http, "lim", "alice").0, 200);
    assert_eq!(open_meeting(b.http, "lim", "bob").0, 200);
}

#[test]
fn when_the_mc_goes_down_viewers_keep_watching_and_new_meetings_get_102005_until_it_returns() {
    let preset = "[[meeting]]\nid = \"up\"\nstart = true\ninputs = [\"builtin://meeting\"]\n";
    let mut cluster = mc(preset).nodes(&["node-a"]).start();
    let mc_addr = cluster.mc.http;
    let node = cluster.nodes.remove(0);
    wait_code(node.http, "up", "v1", 0);
    let (status, _) = api(
        mc_addr,
        "POST",
        "/api/meetings",
        Some(ADMIN_TOKEN),
        json!({"id": "later"}),
    );
    assert_eq!(status, 201);
    wait_code(node.http, "later", "v1", 103_002);
    cluster.mc.kill9();
    // The node noticed: a meeting it does not deliver gets 102005 ...
    wait_code(node.http, "later", "v1", 102_005);
    wait_code(node.http, "other", "v1", 102_005);
    // ... while the one it delivers keeps its viewers and takes new ones.
    assert_eq!(open_meeting(node.http, "up", "v1").0, 200);
    assert_eq!(open_meeting(node.http, "up", "v2").0, 200);
    // The MC returns on the same address with its meetings (persisted), and the node
    // recovers by itself.
    cluster.restart_mc();
    let mc = &cluster.mc;
    wait_code(node.http, "later", "v1", 103_002);
    wait_code(node.http, "other", "v1", 104_005);
    let (_, view) = api(mc.http, "GET", "/api/meetings/up", None, Value::Null);
    assert_eq!(view["state"], "live");
    wait_for(
        "fresh segments after the mc returns",
        Duration::from_secs(30),
        || {
            let (_, _, text) = common::http_get(node.http, "/up/mono.m3u8");
            let text = String::from_utf8_lossy(&text).to_string();
            text.contains("#EXT-X-DISCONTINUITY").then_some(())
        },
    );
}

/// A node whose MC URL leads nowhere useful answers with the cause's code.
fn cause_code(dir: &Path, name: &str, url: &str, token: &str, extra: &str) -> u64 {
    let node = NodeConfig {
        mc_urls: vec![url.to_owned()],
        token: Some(token.to_owned()),
        mc_lines: extra.to_owned(),
        ..NodeConfig::new(name)
    }
    .start(dir);
    let mut code = 0;
    wait_for(
        &format!("{name} to learn its mc is unreachable"),
        Duration::from_secs(20),
        || {
            code = open_meeting(node.http, "m", "v").1;
            (code != 102_005).then_some(())
        },
    );
    code
}

#[test]
fn each_way_of_not_reaching_the_mc_has_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 104103: nothing listens.
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    assert_eq!(
        cause_code(d, "refused", &format!("http://{refused}"), "t", ""),
        104_103
    );
    // 104104: a black-holed connect — a listener whose accept queue is full and never
    // accepted, so new SYNs are dropped.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    socket.listen(0).unwrap();
    let hole = socket.local_addr().unwrap().as_socket().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..8 {
        let filler =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        filler.set_nonblocking(true).unwrap();
        let _ = filler.connect(&hole.into());
        fillers.push(filler);
    }
    // The accept queue is full once a filler's handshake has completed.
    wait_for(
        "the black hole's accept queue to fill",
        Duration::from_secs(5),
        || fillers.iter().any(|f| f.peer_addr().is_ok()).then_some(()),
    );
    assert_eq!(
        cause_code(d, "blackhole", &format!("http://{hole}"), "t", ""),
        104_104
    );
    // 104114: accepts, never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let held = std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().take(4).flatten() {
            held.push(stream);
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    assert_eq!(
        cause_code(d, "silent", &format!("http://{silent_addr}"), "t", ""),
        104_114
    );
    drop(held);
    // 104115: speaks something that is not HTTP.
    let garbage = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let garbage_addr = garbage.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in garbage.incoming().flatten() {
            // Read the request, answer garbage, and keep the connection open: the
            // client must fail on what it read, not on a reset.
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.6\r\nnot http at all\r\n\r\n");
                std::thread::sleep(Duration::from_secs(5));
            });
        }
    });
    assert_eq!(
        cause_code(d, "garbage", &format!("http://{garbage_addr}"), "t", ""),
        104_115
    );
    // An MC with a wrong node token (104110), and a server that is not an MC (104111).
    let mc = start_mc(
        d,
        "mc",
        &McConfig {
            lines: MIN_CLIENT.to_owned(),
            ..McConfig::default()
        },
    );
    assert_eq!(
        cause_code(d, "badtoken", &format!("http://{}", mc.http), "wrong", ""),
        104_110
    );
    let plain = start_role(
        d,
        "plain",
        "node",
        &format!(
            "[node]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n",
            d.join("plain").display()
        ),
    );
    assert_eq!(
        cause_code(d, "notmc", &format!("http://{}", plain.http), "t", ""),
        104_111
    );
    // 104107: an https MC whose certificate this node does not trust.
    let (cert, key) = self_signed(d);
    let tls = start_role(d, "tls", "node", &format!(
        "[node]\nhttp = \"127.0.0.1:0\"\nhttps = \"127.0.0.1:0\"\ntls_cert = \"{}\"\ntls_key = \"{}\"\ndata_dir = \"{}\"\n",
        cert.display(), key.display(), d.join("tls").display()
    ));
    let https = tls.https.expect("https address");
    // The node trusts another CA only.
    let (other_ca, _) = self_signed(&d.join("other"));
    let trust = format!("ca_file = \"{}\"\n", other_ca.display());
    let code = cause_code(d, "badcert", &format!("https://{https}"), "t", &trust);
    assert_eq!(code, 104_107);
    // 104106: the node's CA file is unusable.
    let trust = format!("ca_file = \"{}\"\n", d.join("missing-ca.pem").display());
    assert_eq!(
        cause_code(d, "tlsconfig", &format!("https://{https}"), "t", &trust),
        104_106
    );
    // 104108: the https MC URL leads to a plain-HTTP server.
    assert_eq!(
        cause_code(d, "handshake", &format!("https://{}", mc.http), "t", ""),
        104_108
    );
    // 104101: a URL without a host (the token may go in clear: said explicitly).
    let insecure = "allow_insecure = true\n";
    assert_eq!(cause_code(d, "badurl", "http://", "t", insecure), 104_101);
    // Canned answers: a redirect, other 4xx, 5xx, a stall after the headers, a reset
    // mid-message, an empty answer.
    let canned: [(&str, &'static [u8], u64); 6] = [
        (
            "redirect",
            b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere/\r\nContent-Length: 0\r\n\r\n",
            104_109,
        ),
        (
            "client",
            b"HTTP/1.1 418 I'm a teapot\r\nContent-Length: 0\r\n\r\n",
            104_112,
        ),
        (
            "server",
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
            104_113,
        ),
        (
            "stall",
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{",
            104_116,
        ),
        (
            "reset",
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"meet",
            104_117,
        ),
        (
            "empty",
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            104_118,
        ),
    ];
    for (name, answer, code) in canned {
        // The reset case closes right after its partial body; the others hold the
        // connection open so the client judges what it read.
        let hold = if name == "reset" {
            Duration::ZERO
        } else {
            Duration::from_secs(5)
        };
        let addr = canned_server(answer, hold);
        assert_eq!(
            cause_code(d, name, &format!("http://{addr}"), "t", ""),
            code,
            "{name}"
        );
    }
    // 104102: a name that does not resolve.
    assert_eq!(
        cause_code(d, "dns", "http://no-such-mc.invalid:9", "t", insecure),
        104_102
    );
}

/// A server that reads each request and writes `answer`, then holds the connection
/// for `hold` before closing it.
fn canned_server(answer: &'static [u8], hold: Duration) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(answer);
                std::thread::sleep(hold);
            });
        }
    });
    addr
}

/// A self-signed certificate for localhost and 127.0.0.1 in `dir`.
fn self_signed(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let mut cmd = std::process::Command::new("openssl");
    cmd.args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]);
    let (status, stderr) = ChildGuard::spawn("openssl", &mut cmd).finish(Duration::from_secs(30));
    assert!(status.success(), "openssl failed: {stderr}");
    (cert, key)
}
