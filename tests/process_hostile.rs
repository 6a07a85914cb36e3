//! A hostile client against a real MC and node on loopback (docs/security.md): each
//! attack fails with its code while a real viewer and a real RTMP publisher beside it
//! are served throughout.
//!
//! The attacks: invented member ids to fill a meeting, a forged viewer report, a body
//! that never comes (node and MC), RTMP connections held open to take the publisher's
//! place, a locked meeting's other doors, the relay without the node token, a
//! cross-origin call and a non-JSON body on the MC's API. (The MC's forged answer with
//! `../` rungs: `process_mc_answer`; idle HTTP/2 connections: `process_edge`.)

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::{
    connect_from, ffmpeg_source, http_get_with, http_request, http_request_as, viewer_ip, wait_for,
    ChildGuard,
};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "admin-secret-for-the-hostile-test";
const NODE_TOKEN: &str = "node-secret-for-the-hostile-test";
const ADMIN: (&str, &str) = ("Authorization", "Bearer admin-secret-for-the-hostile-test");

/// The code of a JSON error answer (0: none).
fn code(body: &Value) -> u64 {
    body["code"].as_u64().unwrap_or(0)
}

/// A viewer that watches `m` on the node from its own address until told to stop:
/// the live playlist every 500 ms and its newest segment. Every answer that is not
/// 200 is kept, with what it was for.
struct RealViewer {
    stop: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<String>>>,
    newest: Arc<Mutex<u64>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The media sequence number of a media playlist, and its last segment URI.
fn newest_segment(playlist: &str) -> Option<(u64, String)> {
    let first: u64 = playlist
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))?
        .trim()
        .parse()
        .ok()?;
    let uris: Vec<&str> = playlist
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let last = uris.last()?.to_string();
    Some((first + uris.len() as u64 - 1, last))
}

fn get_as(who: &str, addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let (status, _, body) = common::http_get_as(who, addr, path, &[]);
    (status, body)
}

impl RealViewer {
    fn start(node: SocketAddr) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let newest = Arc::new(Mutex::new(0));
        let (s, f, n) = (stop.clone(), failures.clone(), newest.clone());
        let thread = std::thread::spawn(move || {
            let (status, _) = get_as("real-viewer", node, "/m/index.m3u8");
            if status != 200 {
                f.lock().unwrap().push(format!("master: {status}"));
            }
            while !s.load(Ordering::Relaxed) {
                let (status, body) = get_as("real-viewer", node, "/m/mono.m3u8");
                match (status, newest_segment(&String::from_utf8_lossy(&body))) {
                    (200, Some((msn, uri))) => {
                        *n.lock().unwrap() = msn;
                        let (status, _) = get_as("real-viewer", node, &format!("/m/{uri}"));
                        if status != 200 {
                            f.lock().unwrap().push(format!("segment {uri}: {status}"));
                        }
                    }
                    (status, _) => f.lock().unwrap().push(format!("playlist: {status}")),
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        Self {
            stop,
            failures,
            newest,
            thread: Some(thread),
        }
    }

    fn newest(&self) -> u64 {
        *self.newest.lock().unwrap()
    }

    /// Stops the viewer: the failures it saw.
    fn finish(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the viewer thread");
        }
        self.failures.lock().unwrap().clone()
    }
}

/// A POST whose body never comes: `Content-Length: 4096` and one byte. Returns the
/// answer's status, its code and how long it took.
fn slow_body(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, u64, Duration) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n"
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n{");
    let started = Instant::now();
    stream.write_all(head.as_bytes()).expect("write");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = body.lines().find(|l| l.starts_with('{')).unwrap_or("");
    let json: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    (status, code(&json), took)
}

#[test]
fn a_hostile_client_is_refused_with_codes_while_a_viewer_and_a_publisher_are_served() {
    let cluster = Cluster::mc()
        .tokens(Some(ADMIN_TOKEN), Some(NODE_TOKEN))
        .nodes(&["n"])
        .start();
    let (mc, node) = (&cluster.mc, cluster.node());
    // A meeting for three viewers, published over RTMP by ffmpeg.
    let (status, created) = http_request(
        mc.http,
        "POST",
        "/api/meetings",
        &[ADMIN],
        &json!({"id": "m", "viewer_limit": 3}).to_string(),
    );
    assert_eq!(status, 201, "{created}");
    let key = created["stream_key"].as_str().unwrap().to_owned();
    let host = format!("Bearer {}", created["host_token"].as_str().unwrap());
    let host = ("Authorization", host.as_str());
    assert_eq!(
        http_request(mc.http, "POST", "/api/meetings/m/start", &[host], "").0,
        200
    );
    let rtmp = mc.rtmp.expect("the MC's RTMP address");
    let _publisher = ChildGuard::spawn(
        "publisher",
        &mut ffmpeg_source(120, "flv", &format!("rtmp://{rtmp}/live/m?key={key}")),
    );
    wait_for("the node to deliver m", Duration::from_secs(40), || {
        (get_as("real-viewer", node.http, "/m/mono.m3u8").0 == 200).then_some(())
    });
    let viewer = RealViewer::start(node.http);
    wait_for("the viewer to play", Duration::from_secs(10), || {
        (viewer.newest() > 0).then_some(())
    });
    let started_at = viewer.newest();

    // 1. Invented member ids from one client: one viewer, not thirty.
    for n in 0..30 {
        let member = format!("made-up-{n}");
        let (status, _) = http_request_as(
            "attacker",
            node.http,
            "GET",
            "/m/index.m3u8",
            &[("X-Brdyun-Member", &member)],
        );
        assert!(status == 200, "fake member {n}: {status}");
    }
    // 2. A forged viewer report: the MC takes none without the node token.
    let (status, body) = http_request(
        mc.http,
        "GET",
        "/api/nodes/sync?node=evil&viewers=m:4000000000",
        &[],
        "",
    );
    assert_eq!(status, 401, "{body}");
    // The real viewer and the attacker leave one place: a late real viewer is
    // admitted; the next address is refused as the meeting is full.
    wait_for("a late viewer admitted", Duration::from_secs(10), || {
        (http_request_as("late-viewer", node.http, "GET", "/m/index.m3u8", &[]).0 == 200)
            .then_some(())
    });
    let (status, body) = http_request_as("one-too-many", node.http, "GET", "/m/index.m3u8", &[]);
    assert_eq!((status, code(&body)), (503, 103_006), "{body}");

    // 3. Bodies that never come, on the node and on the MC: cut at the body deadline.
    let (status, got, took) = slow_body(node.http, "/telemetry", &[]);
    assert_eq!((status, got), (408, 108_011), "node, after {took:?}");
    assert!(took < Duration::from_secs(15), "{took:?}");
    let (status, got, took) = slow_body(mc.http, "/api/meetings", &[ADMIN]);
    assert_eq!((status, got), (408, 108_011), "MC, after {took:?}");
    assert!(took < Duration::from_secs(15), "{took:?}");

    // 4. RTMP connections held open from one address: past its cap each is closed at
    // once, and the rest at the publish deadline; the publisher publishes on.
    let hogs: Vec<TcpStream> = (0..10)
        .map(|_| {
            let mut s = connect_from(rtmp, viewer_ip("rtmp-hog"));
            let _ = s.write_all(&[3]);
            s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
            s
        })
        .collect();
    let hog_started = Instant::now();
    // Closed: an end of stream or a reset; open: a timeout, or handshake bytes.
    let closed_at_once = hogs
        .iter()
        .filter(|s| {
            let mut s = *s;
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let mut byte = [0u8; 1];
            let closed = match s.read(&mut byte) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            };
            closed && hog_started.elapsed() < Duration::from_secs(8)
        })
        .count();
    assert!(closed_at_once >= 6, "{closed_at_once} of 10 closed at once");
    for mut s in hogs {
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    }
    assert!(
        hog_started.elapsed() < Duration::from_secs(14),
        "every held connection closed by the publish deadline: {:?}",
        hog_started.elapsed()
    );

    // 5. The locked meeting: every door closed to a new viewer, the real one plays on.
    assert_eq!(
        http_request(mc.http, "POST", "/api/meetings/m/lock", &[host], "").0,
        200
    );
    let (_, playlist) = get_as("real-viewer", node.http, "/m/mono.m3u8");
    let (_, segment) = newest_segment(&String::from_utf8_lossy(&playlist)).expect("a segment");
    // A fresh address each try: one admitted before the lock reached the node would
    // stay admitted (a known viewer plays on).
    let mut attempt = 0;
    wait_for("the lock on the node", Duration::from_secs(10), || {
        attempt += 1;
        let who = format!("before-the-lock-{attempt}");
        let (_, body) = http_request_as(&who, node.http, "GET", "/m/index.m3u8", &[]);
        (code(&body) == 103_011).then_some(())
    });
    for path in [
        format!("/m/{segment}"),
        "/m/timeshift_rel-0.m3u8".to_owned(),
        "/m/index-0-now.m3u8".to_owned(),
        "/m/index.mpd".to_owned(),
    ] {
        let (status, body) = http_request_as("locked-out", node.http, "GET", &path, &[]);
        assert_eq!((status, code(&body)), (403, 103_011), "{path}");
    }
    assert_eq!(
        http_request(mc.http, "POST", "/api/meetings/m/unlock", &[host], "").0,
        200
    );

    // 6. The relay is for nodes: without the node token, refused on the node and the MC.
    for addr in [node.http, mc.http] {
        let (status, _, body) = http_get_with(addr, "/m/mpegts", &[]);
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!((status, code(&body)), (403, 113_001), "{addr}");
    }

    // 7. A page on another origin cannot drive the MC's API; a non-JSON body is refused.
    let (status, body) = http_request(
        mc.http,
        "POST",
        "/api/meetings/m/close",
        &[host, ("Origin", "http://evil.example")],
        "",
    );
    assert_eq!((status, code(&body)), (403, 108_013), "{body}");
    let (status, body) = http_request(
        mc.http,
        "POST",
        "/api/meetings",
        &[ADMIN, ("Content-Type", "text/plain")],
        r#"{"id":"sneaky"}"#,
    );
    assert_eq!((status, code(&body)), (415, 108_012), "{body}");

    // Throughout: the real viewer played every playlist and segment, on a live stream.
    wait_for(
        "the stream to go on 10 segments past where the viewer began",
        Duration::from_secs(30),
        || (viewer.newest() >= started_at + 10).then_some(()),
    );
    let failures = viewer.finish();
    assert!(
        failures.is_empty(),
        "the real viewer was refused: {failures:?}"
    );
}
