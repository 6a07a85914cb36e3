//! Health, readiness and the service manager's watchdog of real `brdyun` processes
//! (`docs/operations.md`, "Health and readiness"; DESIGN "a hung node is a dead node
//! within 2 s"):
//!
//! - `/readyz` through a node's life: 503 before its stream is live, 200 once it is,
//!   503 with the reason while drained, after its input is lost, and after SIGTERM
//!   (with `STOPPING=1`) while it drains out; `/healthz` 200 all along;
//! - both probes answer while a fault rule sheds every viewer;
//! - an MC with a meeting waiting for its publisher is ready, the meeting idle; an MC
//!   whose etcd is away is not;
//! - the watchdog: a node under a supervisor that does what systemd does says
//!   `READY=1`, pings every half period, and once `SIGSTOP`ped is killed when the period
//!   runs out and restarted; the restarted node serves its viewers the origin's
//!   segments, byte for byte.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, ADMIN_TOKEN};
use common::supervisor::{EventKind, Supervisor};
use common::{
    ffmpeg_source, free_tcp_port, free_udp_port, http_get, http_request, parse_media_playlist,
    wait_for, ChildGuard, NodeProcess, NODE_TOKEN,
};
use rustix::process::Signal;

/// `/readyz`: its status and its reasons as (code, field).
fn readiness(addr: SocketAddr) -> (u16, Vec<(u64, Option<String>)>, serde_json::Value) {
    let (status, _, body) = http_get(addr, "/readyz");
    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let reasons = doc["reasons"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|r| {
                    (
                        r["code"].as_u64().unwrap_or_default(),
                        r["field"].as_str().map(str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (status, reasons, doc)
}

/// Waits until `/readyz` answers `status` with (or, for 200, without) reason `code`.
fn wait_readiness(addr: SocketAddr, what: &str, status: u16, code: Option<u64>, limit: Duration) {
    wait_for(what, limit, || {
        let (got, reasons, _) = readiness(addr);
        let has = code.is_none_or(|c| reasons.iter().any(|(r, _)| *r == c));
        (got == status && has).then_some(())
    });
}

fn assert_healthy(addr: SocketAddr) {
    let (status, _, body) = http_get(addr, "/healthz");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

/// REQ: DESIGN "a hung node is a dead node within 2 s"; readiness for load balancers.
#[test]
fn readiness_follows_start_drain_input_loss_and_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let (input, gossip) = (free_udp_port(), free_udp_port());
    let config = format!(
        "[node]\nname = \"h\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\nshutdown_delay = 3\n\
         [defaults]\nsegment_duration = 1\n\
         [[stream]]\nname = \"u\"\ninputs = [\"udp://127.0.0.1:{input}\"]\n\
         [ott]\ndomain_secret = \"health test domain secret\"\ngossip = \"127.0.0.1:{gossip}\"\nseeds = []\n",
        dir.path().join("data").display()
    );
    // A generous watchdog: this test is about readiness, not about being killed.
    let node = Supervisor::start(dir.path(), "h", "node", &config, Duration::from_secs(20));
    let http = node.current().http;

    // Started, no input yet: alive, not ready, the stream starting.
    assert_healthy(http);
    let (status, reasons, doc) = readiness(http);
    assert_eq!(status, 503, "{doc}");
    assert_eq!(doc["code"], 115_001, "{doc}");
    assert!(reasons.contains(&(115_013, Some("u".to_owned()))), "{doc}");

    let url = format!("udp://127.0.0.1:{input}?pkt_size=1316");
    let publisher = ChildGuard::spawn(
        "ffmpeg udp publisher",
        &mut ffmpeg_source(120, "mpegts", &url),
    );
    wait_readiness(
        http,
        "ready once the stream is live",
        200,
        None,
        Duration::from_secs(30),
    );
    let (_, _, doc) = readiness(http);
    assert_eq!(doc["ready"], true, "{doc}");

    // Drained by its operator: not ready, with the reason; undrained: ready again.
    let (status, doc) = http_request(http, "POST", "/api/drain", &[], "");
    assert_eq!(status, 200, "{doc}");
    wait_readiness(
        http,
        "the drain's reason",
        503,
        Some(115_011),
        Duration::from_secs(5),
    );
    let (status, doc) = http_request(http, "DELETE", "/api/drain", &[], "");
    assert_eq!(status, 200, "{doc}");
    wait_readiness(
        http,
        "ready after the drain",
        200,
        None,
        Duration::from_secs(5),
    );

    // The input is lost: the stream stalls, the process still serves.
    drop(publisher);
    wait_for(
        "the stalled stream's reason",
        Duration::from_secs(20),
        || {
            let (status, reasons, _) = readiness(http);
            (status == 503 && reasons.contains(&(115_014, Some("u".to_owned())))).then_some(())
        },
    );
    assert_healthy(http);

    // SIGTERM: STOPPING=1, then not ready (115010) while the listener still answers for
    // the shutdown delay, then the process ends (and is not restarted).
    node.signal(Signal::TERM);
    let stopping = node.wait_for(EventKind::Stopping, 1, Duration::from_secs(5));
    let (status, reasons, doc) = readiness(http);
    assert!(
        stopping.at.elapsed() < Duration::from_secs(3),
        "asked too late to see the drain-out"
    );
    assert_eq!(status, 503, "{doc}");
    assert_eq!(reasons.first().map(|r| r.0), Some(115_010), "{doc}");
    assert_healthy(http);
    let exited = node.wait_for(EventKind::Exited, 1, Duration::from_secs(15));
    assert!(
        exited.at.duration_since(stopping.at) >= Duration::from_millis(2900),
        "the listener closed before the shutdown delay: {:?}",
        exited.at.duration_since(stopping.at)
    );
    assert_eq!(node.count(EventKind::KilledByWatchdog), 0);
    assert_eq!(node.count(EventKind::Started), 1);
}

fn builtin_node_config(data: &Path, name: &str, http: &str) -> String {
    format!(
        "[node]\nname = \"{name}\"\nhttp = \"{http}\"\ndata_dir = \"{}\"\n\
         [defaults]\nsegment_duration = 1\n\
         [[stream]]\nname = \"m\"\ninputs = [\"builtin://meeting\"]\n",
        data.display()
    )
}

/// REQ: SHED-1 — the probes are never shed: a fault rule sheds every viewer's request
/// and `/healthz` and `/readyz` still answer 200.
#[test]
fn probes_answer_while_a_fault_rule_sheds_every_viewer() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProcess::start(
        dir.path(),
        "shedding",
        &builtin_node_config(&dir.path().join("data"), "shedding", "127.0.0.1:0"),
    );
    wait_readiness(node.http, "ready", 200, None, Duration::from_secs(30));
    let (status, doc) = http_request(
        node.http,
        "POST",
        "/api/fault-rules",
        &[],
        r#"{"duration_seconds":60}"#,
    );
    assert_eq!(status, 201, "{doc}");
    let (status, _, body) = http_get(node.http, "/m/index.m3u8");
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));
    let doc: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(doc["code"], 109_001, "{doc}");
    for _ in 0..20 {
        assert_healthy(node.http);
        let (status, _, doc) = readiness(node.http);
        assert_eq!(status, 200, "{doc}");
    }
}

/// An MC whose meeting is live and waits for its publisher is ready: the meeting is
/// idle, not a fault. Without a token `/readyz` counts idle meetings and names none
/// (their ids are the platform's, private ones included); with the admin or the node
/// token it names them.
#[test]
fn an_mc_with_a_meeting_waiting_for_its_publisher_is_ready() {
    let cluster = Cluster::mc()
        .no_rtmp()
        .defaults(None)
        .sections("[[meeting]]\nid = \"board-q3-reorg\"\nstart = true\n")
        .start();
    let mc = &cluster.mc;
    assert_healthy(mc.http);
    wait_for("the idle meeting", Duration::from_secs(10), || {
        let (status, _, doc) = readiness(mc.http);
        (status == 200 && doc["idle"] == 1).then_some(())
    });
    let (_, _, open) = http_get(mc.http, "/readyz");
    let open = String::from_utf8_lossy(&open).into_owned();
    assert!(
        !open.contains("board-q3-reorg"),
        "a meeting named to anyone: {open}"
    );
    for token in [ADMIN_TOKEN, NODE_TOKEN, "wrong"] {
        let auth = format!("Bearer {token}");
        let (status, _, body) =
            common::http_get_with(mc.http, "/readyz", &[("Authorization", auth.as_str())]);
        assert_eq!(status, 200);
        let doc: serde_json::Value = serde_json::from_slice(&body).expect("json");
        let named = doc["idle_meetings"] == serde_json::json!(["board-q3-reorg"]);
        assert_eq!(named, token != "wrong", "{token}: {doc}");
    }
}

/// A node delivering an MC's meeting that waits for its publisher is ready: the
/// meeting has no media, which is the meeting's state, not the node's.
#[test]
fn a_node_whose_meeting_waits_for_its_publisher_is_ready() {
    let cluster = Cluster::mc()
        .no_rtmp()
        .tokens(None, Some(NODE_TOKEN))
        .defaults(None)
        .sections("[[meeting]]\nid = \"m\"\nstart = true\n")
        .node(|node| node.stream = None)
        .nodes(&["n"])
        .start();
    let node = cluster.node();
    // Once the node knows the meeting, its viewers hear "not started" (103002)...
    wait_for(
        "the node to know the meeting",
        Duration::from_secs(15),
        || {
            let (status, _, body) = http_get(node.http, "/m/index.m3u8");
            let doc: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            (status == 503 && doc["code"] == 103_002).then_some(())
        },
    );
    // ...and the node is ready all the same.
    let (status, reasons, doc) = readiness(node.http);
    assert_eq!(status, 200, "{doc}");
    assert!(reasons.is_empty(), "{doc}");
    assert_eq!(doc["ready"], true, "{doc}");
    assert_healthy(node.http);
}

/// An MC on etcd is not ready while etcd is away (115015) and ready again once it is
/// back; it serves all along.
#[test]
fn an_mc_is_not_ready_while_its_etcd_is_away() {
    let mut cluster = Cluster::mc()
        .no_rtmp()
        .tokens(None, Some(NODE_TOKEN))
        .defaults(None)
        .etcd(1)
        .start();
    let mc = cluster.mc.http;
    let etcd = cluster.etcd.as_mut().expect("etcd");
    wait_readiness(mc, "ready on etcd", 200, None, Duration::from_secs(15));
    etcd.kill(0);
    wait_readiness(
        mc,
        "the store's reason",
        503,
        Some(115_015),
        Duration::from_secs(20),
    );
    assert_healthy(mc);
    etcd.restart(0);
    wait_readiness(
        mc,
        "ready once etcd is back",
        200,
        None,
        Duration::from_secs(30),
    );
}

/// The media playlist of stream `m`, if served.
fn playlist(addr: SocketAddr) -> Option<String> {
    let (status, _, body) = http_get(addr, "/m/mono.m3u8");
    (status == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

/// REQ: DESIGN "a hung node is a dead node within 2 s" — `WatchdogSec=2`.
#[test]
fn a_hung_node_is_killed_by_the_watchdog_and_its_restart_serves_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let origin = NodeProcess::start(
        dir.path(),
        "origin",
        &builtin_node_config(&dir.path().join("origin"), "origin", "127.0.0.1:0"),
    );
    let port = free_tcp_port();
    let edge_config = format!(
        "[node]\nname = \"edge\"\nhttp = \"127.0.0.1:{port}\"\ndata_dir = \"{}\"\n\
         [defaults]\nsegment_duration = 1\n\
         [[stream]]\nname = \"m\"\ninputs = [\"http://{}/m/mpegts\"]\n",
        dir.path().join("edge").display(),
        origin.http
    );
    let watchdog = Duration::from_secs(2);
    let edge = Supervisor::start(dir.path(), "edge", "node", &edge_config, watchdog);
    let first = edge.current();

    // Pings every half period (1 s), each after a probe through the real HTTP path.
    edge.wait_for(EventKind::Watchdog, 4, Duration::from_secs(10));
    let pings: Vec<Instant> = edge
        .events()
        .iter()
        .filter(|e| e.kind == EventKind::Watchdog)
        .map(|e| e.at)
        .collect();
    // Every gap under the period (a longer one would have been a kill), their mean
    // about half of it; loose enough for a loaded machine.
    let gaps: Vec<Duration> = pings
        .windows(2)
        .map(|p| p[1].duration_since(p[0]))
        .collect();
    for gap in &gaps {
        assert!(
            (Duration::from_millis(500)..watchdog).contains(gap),
            "pings {gaps:?} apart"
        );
    }
    let mean = gaps.iter().sum::<Duration>() / u32::try_from(gaps.len()).expect("few");
    assert!(
        (Duration::from_millis(800)..=Duration::from_millis(1400)).contains(&mean),
        "pings {gaps:?} apart"
    );
    let viewer: SocketAddr = ([127, 0, 0, 1], port).into();
    wait_for("the edge's live window", Duration::from_secs(30), || {
        playlist(viewer).filter(|p| parse_media_playlist(p).len() >= 2)
    });

    // Hung: the whole process stopped. No ping comes; the supervisor kills it once the
    // period has run out since the last one, and starts it again.
    edge.signal(Signal::STOP);
    let stopped = Instant::now();
    let killed = edge.wait_for(EventKind::KilledByWatchdog, 1, Duration::from_secs(10));
    let last_ping = edge
        .events()
        .iter()
        .filter(|e| e.kind == EventKind::Watchdog && e.pid == first.pid)
        .map(|e| e.at)
        .max()
        .expect("pings before the stop");
    let after_ping = killed.at.duration_since(last_ping);
    let after_stop = killed.at.duration_since(stopped);
    println!(
        "watchdog: killed {} ms after SIGSTOP, {} ms after the last ping",
        after_stop.as_millis(),
        after_ping.as_millis()
    );
    assert!(
        after_ping <= watchdog + Duration::from_millis(500),
        "killed {after_ping:?} after the last ping"
    );
    assert!(
        after_stop <= watchdog + Duration::from_millis(1000),
        "killed {after_stop:?} after the stop"
    );
    let ready = edge.wait_for(EventKind::Ready, 2, Duration::from_secs(30));
    println!(
        "watchdog: READY again {} ms after the kill",
        ready.at.duration_since(killed.at).as_millis()
    );
    let second = edge.current();
    assert_ne!(second.pid, first.pid);
    assert_eq!(second.http, viewer);

    // The viewer's node serves again, on the origin's timeline: a segment it lists is
    // the origin's, byte for byte.
    let (entry, origin_entries) = wait_for(
        "a segment of the restarted edge the origin lists",
        Duration::from_secs(30),
        || {
            let ours = parse_media_playlist(&playlist(viewer)?);
            let theirs = parse_media_playlist(&playlist(origin.http)?);
            let newest = ours.last()?.clone();
            theirs
                .iter()
                .any(|e| e.msn == newest.msn)
                .then_some((newest, theirs))
        },
    );
    let twin = origin_entries
        .iter()
        .find(|e| e.msn == entry.msn)
        .expect("the origin lists it");
    let (status, _, ours) = http_get(viewer, &format!("/m/{}", entry.uri));
    assert_eq!(status, 200);
    let (_, _, theirs) = http_get(origin.http, &format!("/m/{}", twin.uri));
    assert!(!ours.is_empty());
    assert_eq!(
        ours, theirs,
        "segment {} differs from the origin's",
        entry.msn
    );
    // The new process pings too.
    let pings_before = edge.count(EventKind::Watchdog);
    edge.wait_for(
        EventKind::Watchdog,
        pings_before + 2,
        Duration::from_secs(5),
    );
    assert_eq!(edge.count(EventKind::KilledByWatchdog), 1);
}

/// One request on a kept-alive connection: its status (0 when no whole answer came).
fn keep_alive_get(stream: &mut std::net::TcpStream, path: &str) -> u16 {
    use std::io::Write;
    let request = format!("GET {path} HTTP/1.1\r\nHost: brdyun\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return 0;
    }
    read_answer(stream).map_or(0, |(status, _, _)| status)
}

/// The code a new connection from `from` is answered with (0 when it is served).
fn refusal_code(addr: SocketAddr, from: std::net::IpAddr) -> u64 {
    let mut stream = common::connect_from(addr, from);
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let (status, _, body) = {
        use std::io::{Read, Write};
        let _ = stream.write_all(b"GET /healthz HTTP/1.0\r\nHost: brdyun\r\n\r\n");
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, head.to_owned(), body.to_owned())
    };
    if status == 200 {
        return 0;
    }
    serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|doc| doc["code"].as_u64())
        .unwrap_or_else(|| panic!("status {status}: {body}"))
}

/// Fills both connection caps of the supervised process (`per_client` from 127.0.0.1,
/// the rest of `total` from other loopback addresses) beside one viewer already
/// connected, and checks that the watchdog keeps pinging, nothing is killed, and the
/// viewer is still served `path` on its connection.
fn caps_full_do_not_kill(process: &Supervisor, path: &str, total: usize, per_client: usize) {
    let addr = process.current().http;
    let ip = |last: u8| std::net::IpAddr::from([127, 0, 0, last]);
    let mut viewer = common::connect_from(addr, ip(2));
    viewer
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    assert_eq!(keep_alive_get(&mut viewer, path), 200, "the viewer before");

    // The loopback address's cap: full, as behind a reverse proxy on the same host.
    let mut held: Vec<std::net::TcpStream> = (0..per_client)
        .map(|_| common::connect_from(addr, ip(1)))
        .collect();
    wait_for("127.0.0.1's cap full", Duration::from_secs(10), || {
        (refusal_code(addr, ip(1)) == 108_009).then_some(())
    });
    // The total: full, from a few more addresses.
    let mut from = 3;
    while held.len() + 1 < total {
        let room = per_client.min(total - 1 - held.len());
        held.extend((0..room).map(|_| common::connect_from(addr, ip(from))));
        from += 1;
    }
    wait_for("the total cap full", Duration::from_secs(10), || {
        (refusal_code(addr, ip(200)) == 108_010).then_some(())
    });

    // Four pings after both caps filled (the period is 2 s: a refused probe would have
    // been a kill by now), within the held connections' header deadline (10 s).
    let pings = process.count(EventKind::Watchdog);
    process.wait_for(EventKind::Watchdog, pings + 4, Duration::from_secs(8));
    assert_eq!(
        refusal_code(addr, ip(201)),
        108_010,
        "the caps stayed full all along"
    );
    assert_eq!(process.count(EventKind::KilledByWatchdog), 0);
    assert_eq!(process.count(EventKind::Started), 1);
    assert_eq!(
        keep_alive_get(&mut viewer, path),
        200,
        "the viewer after, on its connection"
    );
    drop(held);
}

/// The connection caps never decide liveness: a node whose total and loopback
/// per-address caps are full is not killed by the watchdog (its probe is admitted
/// outside the caps) and serves the viewers it has.
#[test]
fn a_node_with_its_connection_caps_full_is_not_killed() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[node]\nname = \"capped\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
         max_connections = 30\nmax_connections_per_client = 8\n\
         [defaults]\nsegment_duration = 1\n\
         [[stream]]\nname = \"m\"\ninputs = [\"builtin://meeting\"]\n",
        dir.path().join("data").display()
    );
    let node = Supervisor::start(
        dir.path(),
        "capped",
        "node",
        &config,
        Duration::from_secs(2),
    );
    wait_for("the stream's playlist", Duration::from_secs(30), || {
        playlist(node.current().http)
    });
    caps_full_do_not_kill(&node, "/m/mono.m3u8", 30, 8);
}

/// The same for an MC: its caps full, it is not killed and its viewers are served.
#[test]
fn an_mc_with_its_connection_caps_full_is_not_killed() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[mc]\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
         max_connections = 30\nmax_connections_per_client = 8\n\
         [[meeting]]\nid = \"m\"\nstart = true\n",
        dir.path().join("mc").display()
    );
    let mc = Supervisor::start(dir.path(), "mc", "mc", &config, Duration::from_secs(2));
    caps_full_do_not_kill(&mc, "/api/meetings/m", 30, 8);
}

/// REQ: SHED-1 — the probes' exemption from shedding is bounded: beyond 500 probes a
/// second a probe is classified as a status read (DEGRADED), so a fault rule that
/// sheds every viewer sheds the flood's excess, while the probes within the bound
/// still answer.
#[test]
fn probes_beyond_the_bound_are_shed_like_status_reads() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeProcess::start(
        dir.path(),
        "probe-flood",
        &builtin_node_config(&dir.path().join("data"), "probe-flood", "127.0.0.1:0"),
    );
    wait_readiness(node.http, "ready", 200, None, Duration::from_secs(30));
    let (status, doc) = http_request(
        node.http,
        "POST",
        "/api/fault-rules",
        &[],
        r#"{"duration_seconds":60}"#,
    );
    assert_eq!(status, 201, "{doc}");
    let addr = node.http;
    let flood: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let (mut ok, mut shed) = (0u32, 0u32);
                let deadline = Instant::now() + Duration::from_secs(10);
                let mut stream = None;
                while Instant::now() < deadline && (shed == 0 || ok == 0) {
                    let conn = stream.get_or_insert_with(|| {
                        let s = std::net::TcpStream::connect(addr).expect("connect");
                        s.set_read_timeout(Some(Duration::from_secs(5)))
                            .expect("timeout");
                        s
                    });
                    match keep_alive_get(conn, "/healthz") {
                        200 => ok += 1,
                        503 => shed += 1,
                        _ => stream = None,
                    }
                }
                (ok, shed)
            })
        })
        .collect();
    let (ok, shed) = flood
        .into_iter()
        .map(|t| t.join().expect("flooder"))
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
    println!("probe flood under a fault rule: {ok} answered, {shed} shed");
    assert!(ok > 0, "the probes within the bound answer");
    assert!(
        shed > 0,
        "the probes beyond the bound were never shed ({ok} answered)"
    );
    // The shed answer is the shedder's, not the probe's own 503.
    let shed_code = wait_for("a shed probe's code", Duration::from_secs(10), || {
        let mut conn = std::net::TcpStream::connect(addr).ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        (0..2000).find_map(|_| {
            let (status, _, body) = {
                let request = b"GET /healthz HTTP/1.1\r\nHost: brdyun\r\n\r\n";
                use std::io::Write;
                conn.write_all(request).ok()?;
                read_answer(&mut conn)?
            };
            (status == 503).then(|| {
                serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default()["code"]
                    .as_u64()
            })?
        })
    });
    assert_eq!(shed_code, 109_001);
    wait_for("a probe answered again", Duration::from_secs(5), || {
        (http_get(addr, "/healthz").0 == 200).then_some(())
    });
}

/// One HTTP/1.1 answer read off a kept-alive connection: (status, head, body).
fn read_answer(stream: &mut std::net::TcpStream) -> Option<(u16, String, Vec<u8>)> {
    use std::io::Read;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while raw.len() < head_end + length {
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        raw.extend_from_slice(&buf[..n]);
    }
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, head, raw[head_end..head_end + length].to_vec()))
}

/// A node under a heavy load it serves (or sheds) is busy, not hung: under the
/// watchdog, a flood of viewers' playlist and probe requests on 24 connections for
/// 6 s gets it neither a 115002 from `/healthz` nor a kill, and the watchdog keeps
/// pinging through it.
#[test]
fn a_node_under_a_heavy_served_load_is_not_declared_unhealthy() {
    let dir = tempfile::tempdir().unwrap();
    let config = builtin_node_config(&dir.path().join("data"), "loaded", "127.0.0.1:0");
    let node = Supervisor::start(
        dir.path(),
        "loaded",
        "node",
        &config,
        Duration::from_secs(2),
    );
    let addr = node.current().http;
    wait_for("the stream's playlist", Duration::from_secs(30), || {
        playlist(addr)
    });
    let pings = node.count(EventKind::Watchdog);
    let until = Instant::now() + Duration::from_secs(6);
    let flood: Vec<_> = (0..24)
        .map(|i| {
            std::thread::spawn(move || {
                let path = if i % 4 == 0 {
                    "/healthz"
                } else {
                    "/m/mono.m3u8"
                };
                let (mut answered, mut hung) = (0u32, 0u32);
                let mut stream: Option<std::net::TcpStream> = None;
                while Instant::now() < until {
                    let conn = match stream.as_mut() {
                        Some(conn) => conn,
                        None => {
                            let Ok(s) = std::net::TcpStream::connect(addr) else {
                                continue;
                            };
                            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                            stream.insert(s)
                        }
                    };
                    use std::io::Write;
                    let request = format!("GET {path} HTTP/1.1\r\nHost: brdyun\r\n\r\n");
                    let answer = conn
                        .write_all(request.as_bytes())
                        .ok()
                        .and_then(|()| read_answer(conn));
                    match answer {
                        Some((_, _, body)) => {
                            answered += 1;
                            hung += u32::from(String::from_utf8_lossy(&body).contains("115002"));
                        }
                        None => stream = None,
                    }
                }
                (answered, hung)
            })
        })
        .collect();
    let (answered, hung) = flood
        .into_iter()
        .map(|t| t.join().expect("flooder"))
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
    println!("heavy load: {answered} answers in 6 s");
    assert!(answered > 1000, "not a heavy load: {answered} answers");
    assert_eq!(hung, 0, "/healthz called the busy node hung");
    assert!(
        node.count(EventKind::Watchdog) >= pings + 4,
        "the watchdog stopped pinging under load"
    );
    assert_eq!(node.count(EventKind::KilledByWatchdog), 0);
    assert_eq!(node.count(EventKind::Started), 1);
}
