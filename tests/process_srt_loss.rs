//! SRT under loss: ffmpeg publishing to an MC over SRT through a relay that drops,
//! delays and reorders datagrams (the test machines' kernels have no `netem`), and the
//! relay itself.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::lossy_relay::{Impairment, LossyRelay};
use common::{
    free_udp_port, http_get_as_node, http_request, parse_media_playlist, start_role, wait_for,
    ChildGuard, NodeProcess, PlaylistEntry, NODE_TOKEN,
};
use serde_json::Value;

/// The loopback address the relays of these tests bind.
const RELAY_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// A UDP socket on loopback that records the datagrams it receives (their first 8
/// bytes, a big-endian index) on a thread of its own, counting them as they come so the
/// sender can wait for them: nothing waits in its buffer long enough to overflow it.
struct Sink {
    addr: SocketAddr,
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    reader: std::thread::JoinHandle<Vec<u64>>,
}

impl Sink {
    /// Reads until told to stop ([`Sink::received`]), at most 30 s.
    fn start() -> Sink {
        let socket = UdpSocket::bind((RELAY_IP, 0)).expect("bind the sink");
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        let addr = socket.local_addr().expect("sink address");
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (counted, stopped) = (Arc::clone(&count), Arc::clone(&stop));
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 64];
            let started = Instant::now();
            while !stopped.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(30) {
                if let Ok(n) = socket.recv(&mut buf) {
                    assert_eq!(n, 8, "datagram size");
                    got.push(u64::from_be_bytes(buf[..8].try_into().expect("8 bytes")));
                    counted.store(got.len() as u64, Ordering::Relaxed);
                }
            }
            got
        });
        Sink {
            addr,
            count,
            stop,
            reader,
        }
    }

    /// The indexes received, in arrival order.
    fn received(self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.reader.join().expect("the sink's thread")
    }
}

/// Waits until `relay` has decided every datagram it read (sent on or dropped, none
/// held) and `sink` has every one it sent on.
fn wait_drained(relay: &LossyRelay, sink: &Sink) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let up = relay.stats().up;
        if up.forwarded + up.dropped == up.received
            && sink.count.load(Ordering::Relaxed) == up.forwarded
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the relay or the sink fell behind: {up:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Sends `count` numbered datagrams through `relay` to `sink` in batches, each batch
/// once the one before has crossed (no loss in the host's buffers).
fn send_numbered(relay: &LossyRelay, sink: &Sink, count: u64) {
    let client = UdpSocket::bind((RELAY_IP, 0)).expect("bind the client");
    for batch in (0..count).collect::<Vec<_>>().chunks(50) {
        for i in batch {
            client
                .send_to(&i.to_be_bytes(), relay.addr())
                .expect("send");
        }
        let upto = batch.last().expect("a batch") + 1;
        let deadline = Instant::now() + Duration::from_secs(5);
        while relay.stats().up.received < upto {
            assert!(Instant::now() < deadline, "the relay did not read a batch");
            std::thread::sleep(Duration::from_millis(1));
        }
        wait_drained(relay, sink);
    }
}

/// The indexes that crossed a relay with `impairment` when 2000 were sent.
fn crossing(impairment: Impairment) -> (Vec<u64>, common::lossy_relay::RelayStats) {
    let sink = Sink::start();
    let relay = LossyRelay::start(RELAY_IP, sink.addr, impairment);
    send_numbered(&relay, &sink, 2000);
    let got = sink.received();
    (got, relay.stats())
}

#[test]
fn the_relay_drops_the_fraction_asked_and_the_same_ones_for_the_same_seed() {
    let (first, stats) = crossing(Impairment::loss(0.1, 7));
    assert_eq!(stats.up.received, 2000, "{stats:?}");
    assert!(
        (150..=250).contains(&stats.up.dropped),
        "10 % of 2000 dropped, give or take: {stats:?}"
    );
    assert_eq!(first.len() as u64, 2000 - stats.up.dropped, "{stats:?}");
    assert_eq!(stats.up.forwarded, first.len() as u64);
    let (again, _) = crossing(Impairment::loss(0.1, 7));
    assert_eq!(first, again, "the same seed drops the same datagrams");
    let (other, _) = crossing(Impairment::loss(0.1, 8));
    assert_ne!(first, other, "another seed drops others");
    let (all, stats) = crossing(Impairment::none());
    assert_eq!(all, (0..2000).collect::<Vec<_>>(), "{stats:?}");
    assert_eq!(stats.up.dropped, 0);
}

#[test]
fn the_relay_reorders_only_when_asked() {
    let (in_order, stats) = crossing(Impairment::none());
    assert_eq!(stats.up.reordered, 0);
    assert!(in_order.windows(2).all(|w| w[0] < w[1]));

    let (shuffled, stats) = crossing(Impairment {
        reorder: 0.05,
        reorder_hold: Duration::from_millis(30),
        ..Impairment::none()
    });
    let overtaken = shuffled.windows(2).filter(|w| w[0] > w[1]).count();
    assert!(overtaken > 0, "no datagram overtaken: {stats:?}");
    assert!(
        (50..=150).contains(&stats.up.held_back),
        "5 % of 2000 held back: {stats:?}"
    );
    assert!(stats.up.reordered > 0, "{stats:?}");
    let set: BTreeSet<u64> = shuffled.iter().copied().collect();
    assert_eq!(set.len(), 2000, "reordered, none lost");
}

#[test]
fn the_relay_delays_both_ways_and_answers_each_client_on_its_own() {
    // An echo server: what it receives goes back to the sender.
    let server = UdpSocket::bind((RELAY_IP, 0)).expect("bind");
    server
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let server_addr = server.local_addr().expect("addr");
    let echo = std::thread::spawn(move || {
        let mut peers = BTreeSet::new();
        let mut buf = [0u8; 64];
        let deadline = Instant::now() + Duration::from_secs(5);
        while peers.len() < 2 && Instant::now() < deadline {
            if let Ok((n, peer)) = server.recv_from(&mut buf) {
                peers.insert(peer);
                let _ = server.send_to(&buf[..n], peer);
            }
        }
        peers.len()
    });
    let relay = LossyRelay::start(
        RELAY_IP,
        server_addr,
        Impairment {
            delay: Duration::from_millis(60),
            ..Impairment::none()
        },
    );
    for who in [b"client-a", b"client-b"] {
        let client = UdpSocket::bind((RELAY_IP, 0)).expect("bind");
        client
            .set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let sent = Instant::now();
        client.send_to(who, relay.addr()).expect("send");
        let mut buf = [0u8; 64];
        let (n, from) = client.recv_from(&mut buf).expect("the echo");
        let rtt = sent.elapsed();
        assert_eq!(&buf[..n], who);
        assert_eq!(from, relay.addr());
        assert!(
            rtt >= Duration::from_millis(120),
            "60 ms each way, round trip {rtt:?}"
        );
    }
    assert_eq!(echo.join().expect("echo thread"), 2, "two upstream peers");
    assert_eq!(relay.stats().clients, 2);
    // Counted just after the echo was sent on.
    wait_for("two echoes counted", Duration::from_secs(2), || {
        (relay.stats().down.forwarded == 2).then_some(())
    });
}

/// The MC's admin token in these tests.
const ADMIN: &str = "admin-secret-for-these-tests";

/// The SRT latency of every publisher here, as ffmpeg takes it (microseconds).
const LATENCY_US: u32 = 120_000;

/// Encodes `seconds` of a 640x360 test pattern at about 1 Mbit/s with a tone (H.264
/// with B-frames, a keyframe a second, AAC) to MPEG-TS at `path`: the one source every
/// publisher of a test sends, so their segments can be compared.
fn encode_fixture(path: &Path, seconds: u32) {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"])
        .args(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25"])
        .args(["-f", "lavfi", "-i", "sine=frequency=440"])
        .args([
            "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-bf", "2",
        ])
        .args(["-b:v", "1M", "-maxrate", "1M", "-bufsize", "1M"])
        .args(["-c:a", "aac", "-t", &seconds.to_string(), "-f", "mpegts"])
        .arg(path);
    let (status, stderr) =
        ChildGuard::spawn("ffmpeg fixture", &mut cmd).finish(Duration::from_secs(60));
    assert!(status.success(), "encoding the fixture: {stderr}");
}

/// ffmpeg sending `fixture` in real time, as is, over SRT to `addr` with the plain
/// streamid `<meeting>?key=<key>` at [`LATENCY_US`].
fn srt_publisher(fixture: &Path, addr: SocketAddr, meeting: &str, key: &str) -> ChildGuard {
    let url =
        format!("srt://{addr}?streamid={meeting}?key={key}&latency={LATENCY_US}&pkt_size=1316");
    let mut cmd = Command::new("ffmpeg");
    cmd.args([
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-re",
        "-i",
    ])
    .arg(fixture)
    .args(["-c", "copy", "-f", "mpegts", &url]);
    ChildGuard::spawn(&format!("ffmpeg srt publisher of {meeting}"), &mut cmd)
}

/// An MC with SRT on `srt` and a started meeting of each id (no ladder: the segments
/// are the publisher's own frames).
fn start_mc(dir: &Path, srt: SocketAddr, meetings: &[&str]) -> NodeProcess {
    let mut config = format!(
        "[mc]\nhttp = \"127.0.0.1:0\"\nsrt = \"{srt}\"\ndata_dir = \"{}\"\nadmin_token = \"{ADMIN}\"\nnode_token = \"{NODE_TOKEN}\"\n[defaults]\nsegment_duration = 1\n",
        dir.join("mc-data").display()
    );
    for id in meetings {
        config.push_str(&format!(
            "[[meeting]]\nid = \"{id}\"\nstart = true\nladder = false\n"
        ));
    }
    start_role(dir, "mc", "mc", &config)
}

fn stream_key(mc: &NodeProcess, meeting: &str) -> String {
    let auth = format!("Bearer {ADMIN}");
    let (status, doc) = http_request(
        mc.http,
        "GET",
        &format!("/api/meetings/{meeting}"),
        &[("Authorization", auth.as_str())],
        "",
    );
    assert_eq!(status, 200, "{doc}");
    doc["stream_key"].as_str().expect("stream_key").to_owned()
}

/// Every segment of `meeting` the MC has listed so far, by MSN: (entry, bytes).
type Segments = BTreeMap<u64, (PlaylistEntry, Vec<u8>)>;

fn collect(mc: &NodeProcess, meeting: &str, into: &mut Segments) {
    let path = format!("/{meeting}/mono.m3u8");
    let (status, _, body) = http_get_as_node(mc.http, &path);
    if status != 200 {
        return;
    }
    for entry in parse_media_playlist(&String::from_utf8_lossy(&body)) {
        if into.contains_key(&entry.msn) {
            continue;
        }
        let (status, _, bytes) = http_get_as_node(mc.http, &format!("/{meeting}/{}", entry.uri));
        if status == 200 {
            into.insert(entry.msn, (entry, bytes));
        }
    }
}

/// A segment's packets but the timeline marker's (PID 0x1FF0: it carries the meeting's
/// own anchor, a wall-clock date) and the caption block's (0x1FF1): what the source's
/// frames made.
fn media_packets(segment: &[u8]) -> Vec<u8> {
    segment
        .chunks(188)
        .filter(|p| {
            let pid = p
                .get(1..3)
                .map_or(0, |b| u16::from_be_bytes([b[0] & 0x1f, b[1]]));
            pid != 0x1ff0 && pid != 0x1ff1
        })
        .flatten()
        .copied()
        .collect()
}

/// The link of the meeting's publish input in `/api/streams/{meeting}`, when one is
/// connected.
fn link(mc: &NodeProcess, meeting: &str) -> Option<Value> {
    let auth = format!("Bearer {ADMIN}");
    let path = format!("/api/streams/{meeting}");
    let (status, doc) = http_request(mc.http, "GET", &path, &[("Authorization", &auth)], "");
    if status != 200 {
        return None;
    }
    doc["inputs"]["inputs"]
        .as_array()?
        .iter()
        .find_map(|i| i["link"].is_object().then(|| i["link"].clone()))
}

/// One sample of a metric line that starts with `prefix` (name and labels).
fn metric(mc: &NodeProcess, prefix: &str) -> Option<f64> {
    let (_, _, body) = common::http_get(mc.http, "/metrics");
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// Checks a meeting's segments: MSNs without a gap, one discontinuity period; returns
/// how many there are.
fn check_whole(name: &str, segments: &Segments) -> usize {
    let entries: Vec<&PlaylistEntry> = segments.values().map(|(e, _)| e).collect();
    for pair in entries.windows(2) {
        assert_eq!(pair[1].msn, pair[0].msn + 1, "{name}: a segment is missing");
        assert_eq!(
            pair[1].discontinuity_seq, pair[0].discontinuity_seq,
            "{name}: a discontinuity at msn {}",
            pair[1].msn
        );
    }
    entries.len()
}

#[test]
fn srt_through_2_and_10_percent_loss_keeps_every_segment_and_reports_the_loss() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("source.ts");
    encode_fixture(&fixture, 20);
    let srt = SocketAddr::from((RELAY_IP, free_udp_port()));
    let meetings = ["clean", "loss2", "loss10"];
    let mc = start_mc(dir.path(), srt, &meetings);
    // 2 % and 10 % of the datagrams dropped both ways (data, ACKs, NAKs, handshakes),
    // 10 ms more each way, 1 % held back 5 ms: a lossy internet path well inside the
    // 120-ms latency.
    let path = |loss: f64, seed: u64| Impairment {
        loss,
        delay: Duration::from_millis(10),
        reorder: 0.01,
        reorder_hold: Duration::from_millis(5),
        both_ways: true,
        seed,
    };
    let relay2 = LossyRelay::start(RELAY_IP, srt, path(0.02, 2));
    let relay10 = LossyRelay::start(RELAY_IP, srt, path(0.10, 10));
    let publishers = [
        srt_publisher(&fixture, srt, "clean", &stream_key(&mc, "clean")),
        srt_publisher(&fixture, relay2.addr(), "loss2", &stream_key(&mc, "loss2")),
        srt_publisher(
            &fixture,
            relay10.addr(),
            "loss10",
            &stream_key(&mc, "loss10"),
        ),
    ];

    let mut seen: [Segments; 3] = Default::default();
    let mut links: [Option<Value>; 3] = Default::default();
    let mut lost_metric = None;
    let started = Instant::now();
    let mut publishers: Vec<ChildGuard> = publishers.into();
    // The fixture lasts 20 s; everything is over well within 60.
    while publishers
        .iter_mut()
        .any(|p| p.child.try_wait().ok().flatten().is_none())
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "publishers still running"
        );
        for (i, meeting) in meetings.iter().enumerate() {
            collect(&mc, meeting, &mut seen[i]);
            if let Some(link) = link(&mc, meeting) {
                links[i] = Some(link);
            }
        }
        if let Some(v) = metric(
            &mc,
            "brdyun_srt_link_packets_lost_total{stream=\"loss10\",slot=\"primary\"} ",
        ) {
            lost_metric = Some(v);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    for publisher in publishers {
        let (status, stderr) = publisher.finish(Duration::from_secs(1));
        assert!(status.success(), "a publisher failed: {stderr}");
    }
    // The last segments are listed once the streams see their ends: collect until the
    // three agree on their newest (the assertions below say what differs otherwise).
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        for (i, meeting) in meetings.iter().enumerate() {
            collect(&mc, meeting, &mut seen[i]);
        }
        let newest: BTreeSet<Option<u64>> = seen.iter().map(|s| s.keys().last().copied()).collect();
        if newest.len() == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (stats2, stats10) = (relay2.stats(), relay10.stats());
    eprintln!("relay 2 %: {stats2:?}\nrelay 10 %: {stats10:?}");
    eprintln!("links: {links:?}");

    let counts: Vec<usize> = meetings
        .iter()
        .zip(&seen)
        .map(|(name, segments)| check_whole(name, segments))
        .collect();
    assert!(
        counts[0] >= 15,
        "20 s of 1-s segments from the clean feed: {counts:?}"
    );

    // 2 %: the relay really dropped; SRT got every packet back in time; the segments
    // are the clean feed's, frame for frame.
    assert!(
        stats2.up.dropped * 100 >= stats2.up.received,
        "at least 1 % dropped: {stats2:?}"
    );
    assert_eq!(
        counts[1], counts[0],
        "2 %: as many segments as the clean feed"
    );
    let mut compared = 0;
    for (msn, (_, clean)) in &seen[0] {
        let (_, lossy) = seen[1]
            .get(msn)
            .unwrap_or_else(|| panic!("2 %: no segment {msn}"));
        assert!(
            media_packets(clean) == media_packets(lossy),
            "2 %: segment {msn} differs from the clean feed's"
        );
        compared += 1;
    }
    let link2 = links[1]
        .as_ref()
        .expect("the 2 % link in /api/streams/loss2");
    assert!(link2["packets_lost"].as_u64().unwrap_or(0) > 0, "{link2}");
    assert!(
        link2["packets_retransmitted"].as_u64().unwrap_or(0) > 0,
        "{link2}"
    );
    // The round trip SRT measured: the relay's 10 ms each way and a little more
    // (libsrt starts from 100 ms before its first measurement).
    let rtt2 = link2["rtt_ms"].as_f64().expect("rtt_ms of the 2 % link");
    assert!(
        (15.0..80.0).contains(&rtt2),
        "rtt through the relay: {link2}"
    );

    // 10 %: the loss is counted and reported, in the status API and /metrics.
    let link10 = links[2]
        .as_ref()
        .expect("the 10 % link in /api/streams/loss10");
    let loss10 = link10["loss_percent"].as_f64().expect("loss_percent");
    assert!(
        (5.0..=20.0).contains(&loss10),
        "about 10 % of the first trips lost: {link10}"
    );
    assert!(
        link10["packets_retransmitted"].as_u64().unwrap_or(0) > 0,
        "{link10}"
    );
    assert!(
        lost_metric.is_some_and(|v| v > 0.0),
        "brdyun_srt_link_packets_lost_total of loss10: {lost_metric:?}"
    );
    eprintln!(
        "segments: {counts:?}, compared with the clean feed at 2 %: {compared}; 10 % link: {link10}"
    );
}
