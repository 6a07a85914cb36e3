//! SRT publish to an MC with real libsrt clients (ffmpeg, srt-live-transmit): plain
//! and encrypted publishers play; a wrong key, an unknown meeting, a missing or wrong
//! passphrase are refused at the handshake with their codes; a handshake that never
//! completes holds nothing; a publisher that stops sending is cut with its code; the
//! per-address cap holds; the publishers that behave are untouched throughout.

mod common;

use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{
    free_udp_port, http_get_as_node, http_request, parse_media_playlist, start_role, wait_for,
    ChildGuard, NodeProcess, NODE_TOKEN,
};

const ADMIN: &str = "admin-secret-for-these-tests";
const PASSPHRASE: &str = "a-long-passphrase";

fn encode_fixture(path: &Path, seconds: u32) {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"])
        .args(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25"])
        .args(["-f", "lavfi", "-i", "sine=frequency=440"])
        .args(["-c:v", "libx264", "-preset", "veryfast", "-g", "25"])
        .args(["-c:a", "aac", "-t", &seconds.to_string(), "-f", "mpegts"])
        .arg(path);
    let (status, stderr) =
        ChildGuard::spawn("ffmpeg fixture", &mut cmd).finish(Duration::from_secs(60));
    assert!(status.success(), "encoding the fixture: {stderr}");
}

/// ffmpeg sending `fixture` in real time to `url` (`-c copy`, MPEG-TS).
fn ffmpeg_srt(fixture: &Path, url: &str) -> ChildGuard {
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
    .args(["-c", "copy", "-f", "mpegts", url]);
    ChildGuard::spawn(&format!("ffmpeg to {url}"), &mut cmd)
}

/// `srt-live-transmit` from its stdin (which the test holds) to `url`: it connects at
/// once and sends what the test writes.
struct Transmit(Child);

impl Transmit {
    fn start(url: &str) -> Transmit {
        let child = Command::new("srt-live-transmit")
            .args(["-q", "file://con", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("srt-live-transmit is required (apt install srt-tools): {e}")
            });
        Transmit(child)
    }

    /// The stdin pipe, for a writer thread (the child stays here, killed on drop even
    /// when the test panics).
    fn stdin(&mut self) -> std::process::ChildStdin {
        self.0.stdin.take().expect("stdin")
    }
}

impl Drop for Transmit {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_mc(dir: &Path, srt: SocketAddr, meetings: &[&str]) -> NodeProcess {
    let mut config = format!(
        "[mc]\nhttp = \"127.0.0.1:0\"\nsrt = \"{srt}\"\ndata_dir = \"{}\"\nadmin_token = \"{ADMIN}\"\nnode_token = \"{NODE_TOKEN}\"\n\
         [mc.rtmp_limits]\nmax_pending_per_address = 2\npublish_deadline = 4\nbyte_window = 2\n\
         [mc.srt_options.passphrases]\nsecure = \"{PASSPHRASE}\"\nlocked = \"{PASSPHRASE}\"\n\
         [defaults]\nsegment_duration = 1\n",
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

/// The msn of the newest segment of `meeting`'s playlist on the MC.
fn newest_segment(mc: &NodeProcess, meeting: &str) -> Option<u64> {
    let (status, _, body) = http_get_as_node(mc.http, &format!("/{meeting}/mono.m3u8"));
    if status != 200 {
        return None;
    }
    parse_media_playlist(&String::from_utf8_lossy(&body))
        .last()
        .map(|e| e.msn)
}

/// Waits until `meeting` has cut `n` more segments than `from`.
fn plays_on(mc: &NodeProcess, meeting: &str, from: Option<u64>, n: u64) -> u64 {
    wait_for(
        &format!("{n} more segments of {meeting}"),
        Duration::from_secs(20),
        || {
            let newest = newest_segment(mc, meeting)?;
            (from.map_or(newest + 1 >= n, |from| newest >= from + n)).then_some(newest)
        },
    )
}

/// How many log lines of the MC carry `code` with `what`.
fn logged(mc: &NodeProcess, code: u32, what: &str) -> usize {
    let log = std::fs::read_to_string(&mc.log).unwrap_or_default();
    log.lines()
        .filter(|l| l.contains(&format!("code={code}")) && l.contains(what))
        .count()
}

fn wait_logged(mc: &NodeProcess, code: u32, what: &str, count: usize) {
    wait_for(
        &format!("{count} log lines with code {code} ({what})"),
        Duration::from_secs(15),
        || (logged(mc, code, what) >= count).then_some(()),
    );
}

/// An SRT v5 induction handshake (the caller's first packet), from the SRT spec.
fn induction() -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&0x8000_0000u32.to_be_bytes()); // control, type 0: handshake
    p.extend_from_slice(&0u32.to_be_bytes()); // type-specific
    p.extend_from_slice(&0u32.to_be_bytes()); // timestamp
    p.extend_from_slice(&0u32.to_be_bytes()); // destination socket id
    p.extend_from_slice(&4u32.to_be_bytes()); // version 4 at induction
    p.extend_from_slice(&0u16.to_be_bytes()); // encryption: none
    p.extend_from_slice(&2u16.to_be_bytes()); // socket type: datagram
    p.extend_from_slice(&12345u32.to_be_bytes()); // initial sequence number
    p.extend_from_slice(&1500u32.to_be_bytes()); // MTU
    p.extend_from_slice(&8192u32.to_be_bytes()); // flow window
    p.extend_from_slice(&1u32.to_be_bytes()); // handshake type: induction
    p.extend_from_slice(&0x1234_5678u32.to_be_bytes()); // socket id
    p.extend_from_slice(&0u32.to_be_bytes()); // SYN cookie
    p.extend_from_slice(&[127, 0, 0, 1]); // peer IP
    p.extend_from_slice(&[0; 12]);
    p
}

#[test]
fn srt_publishers_play_and_every_refusal_and_cut_has_its_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = dir.path().join("source.ts");
    encode_fixture(&fixture, 40);
    let srt = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    let meetings = [
        "open", "secure", "other", "locked", "relay", "idle1", "idle2", "idle3",
    ];
    let mc = start_mc(dir.path(), srt, &meetings);
    let key = |m: &str| stream_key(&mc, m);

    // Plain (the Access Control form) and encrypted (the plain form, AES-256) play.
    let open_url = format!(
        "srt://{srt}?streamid=#!::r=open,m=publish,s={}&latency=120000",
        key("open")
    );
    let _open = ffmpeg_srt(&fixture, &open_url);
    let secure_url = format!(
        "srt://{srt}?streamid=live/secure?key={}&passphrase={PASSPHRASE}&pbkeylen=32",
        key("secure")
    );
    let _secure = ffmpeg_srt(&fixture, &secure_url);
    let open_at = plays_on(&mc, "open", None, 3);
    let secure_at = plays_on(&mc, "secure", None, 3);

    // srt-live-transmit, a second libsrt client, from a pipe.
    let mut relay = Transmit::start(&format!("srt://{srt}?streamid=relay?key={}", key("relay")));
    let ts = std::fs::read(&fixture).expect("fixture");
    let mut pipe = relay.stdin();
    let writer = std::thread::spawn(move || {
        // About 10 s of the fixture, paced to real time in 1316-byte writes; the pipe
        // is returned open, so the publisher stays connected and silent.
        let chunks = ts.len() / 1316;
        let pause = Duration::from_secs(40) / u32::try_from(chunks.max(1)).unwrap_or(u32::MAX);
        for chunk in ts.chunks(1316).take(chunks / 4) {
            if pipe.write_all(chunk).and_then(|()| pipe.flush()).is_err() {
                break;
            }
            std::thread::sleep(pause);
        }
        pipe
    });
    plays_on(&mc, "relay", None, 3);

    // Refused at the handshake, each with its code.
    let refusals = [
        (
            format!("srt://{srt}?streamid=#!::r=other,s=WRONG"),
            111_028,
            "other",
        ),
        (
            format!("srt://{srt}?streamid=nosuch?key=x"),
            111_027,
            "nosuch",
        ),
        (
            format!("srt://{srt}?streamid=#!::r=other,m=request"),
            111_026,
            "request",
        ),
        (
            format!("srt://{srt}?streamid=locked?key={}", key("locked")),
            111_030,
            "locked",
        ),
        (
            format!(
                "srt://{srt}?streamid=locked?key={}&passphrase=not-the-passphrase",
                key("locked")
            ),
            111_030,
            "locked",
        ),
    ];
    for (i, (url, code, what)) in refusals.iter().enumerate() {
        let (status, stderr) = ffmpeg_srt(&fixture, url).finish(Duration::from_secs(20));
        assert!(!status.success(), "{url}: ffmpeg must be refused: {stderr}");
        let expected = if i == 4 { 2 } else { 1 };
        wait_logged(&mc, *code, what, expected);
    }

    // A handshake that never completes: the induction is answered, nothing is held
    // (no code: libsrt answers it with a cookie, keeps nothing and asks nothing of
    // brdyun).
    let raw = UdpSocket::bind("127.0.0.1:0").expect("bind");
    raw.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    raw.send_to(&induction(), srt).expect("send induction");
    let mut buf = [0u8; 1500];
    let (n, _) = raw.recv_from(&mut buf).expect("the induction answered");
    assert!(n >= 64, "an induction response: {n} bytes");
    assert_eq!(buf[0] & 0x80, 0x80, "a control packet");

    // The per-address cap (2 connections not yet sending media): of three silent
    // callers from 127.0.0.1, two are held and the third is refused with 111020 (it
    // retries, and is refused until the two are cut at the deadline to the first
    // media bytes, 111022).
    let silent: Vec<Transmit> = ["idle1", "idle2", "idle3"]
        .iter()
        .map(|m| Transmit::start(&format!("srt://{srt}?streamid={m}?key={}", key(m))))
        .collect();
    wait_logged(&mc, 111_020, "srt publisher refused", 1);
    wait_logged(&mc, 111_022, "srt connection cut", 2);
    drop(silent);

    // A publisher that stops sending: cut at the byte floor (111023).
    let pipe = writer.join().expect("the writer");
    wait_logged(&mc, 111_023, "relay", 1);
    drop((pipe, relay));

    // The publishers that behaved played on throughout.
    plays_on(&mc, "open", Some(open_at), 8);
    plays_on(&mc, "secure", Some(secure_at), 8);
}

/// The media packets of a segment: every TS packet but brdyun's timeline marker and
/// caption PIDs (those carry the MC's wall-clock times, which differ between meetings).
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

/// The segments of `meeting` on the MC by msn, fetched as they appear.
fn collect(mc: &NodeProcess, meeting: &str, into: &mut std::collections::BTreeMap<u64, Vec<u8>>) {
    let (status, _, body) = http_get_as_node(mc.http, &format!("/{meeting}/mono.m3u8"));
    if status != 200 {
        return;
    }
    for entry in parse_media_playlist(&String::from_utf8_lossy(&body)) {
        if into.contains_key(&entry.msn) {
            continue;
        }
        let (status, _, bytes) = http_get_as_node(mc.http, &format!("/{meeting}/{}", entry.uri));
        if status == 200 {
            into.insert(entry.msn, bytes);
        }
    }
}

#[test]
fn the_same_ts_over_srt_and_over_udp_makes_the_same_segments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = dir.path().join("source.ts");
    encode_fixture(&fixture, 12);
    let srt = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    let udp = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    let mut config = format!(
        "[mc]\nhttp = \"127.0.0.1:0\"\nsrt = \"{srt}\"\ndata_dir = \"{}\"\nadmin_token = \"{ADMIN}\"\nnode_token = \"{NODE_TOKEN}\"\n[defaults]\nsegment_duration = 1\n",
        dir.path().join("mc-data").display()
    );
    config.push_str("[[meeting]]\nid = \"viasrt\"\nstart = true\nladder = false\n");
    config.push_str(&format!(
        "[[meeting]]\nid = \"viaudp\"\nstart = true\nladder = false\ninputs = [\"udp://{udp}\"]\n"
    ));
    let mc = start_role(dir.path(), "mc", "mc", &config);
    let key = stream_key(&mc, "viasrt");
    let over_srt = ffmpeg_srt(&fixture, &format!("srt://{srt}?streamid=viasrt?key={key}"));
    let over_udp = ffmpeg_srt(&fixture, &format!("udp://{udp}?pkt_size=1316"));
    let mut seen = [
        std::collections::BTreeMap::new(),
        std::collections::BTreeMap::new(),
    ];
    let mut publishers = [Some(over_srt), Some(over_udp)];
    wait_for(
        "both feeds to end and their segments",
        Duration::from_secs(40),
        || {
            collect(&mc, "viasrt", &mut seen[0]);
            collect(&mc, "viaudp", &mut seen[1]);
            for p in &mut publishers {
                if p.as_mut()
                    .is_some_and(|g| g.wait_timeout(Duration::ZERO).is_some())
                {
                    p.take();
                }
            }
            (publishers.iter().all(Option::is_none) && seen[0].len() >= 8 && seen[1].len() >= 8)
                .then_some(())
        },
    );
    // The last segment of each is left out: an SRT publisher that leaves has its
    // demuxer's last frame flushed, a UDP feed never ends.
    let last = seen[0]
        .keys()
        .last()
        .copied()
        .min(seen[1].keys().last().copied());
    let mut compared = 0;
    for (msn, over_srt) in seen[0].range(..last.unwrap_or(0)) {
        let Some(over_udp) = seen[1].get(msn) else {
            continue;
        };
        assert!(
            media_packets(over_srt) == media_packets(over_udp),
            "segment {msn} differs between SRT and UDP"
        );
        compared += 1;
    }
    assert!(compared >= 7, "{compared} segments compared");
}

#[test]
fn a_node_pulls_from_an_encoder_in_srt_listener_mode_and_reconnects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = dir.path().join("source.ts");
    encode_fixture(&fixture, 30);
    let port = free_udp_port();
    let encoder_url =
        format!("srt://127.0.0.1:{port}?mode=listener&passphrase={PASSPHRASE}&pbkeylen=16");
    let encoder = ffmpeg_srt(&fixture, &encoder_url);
    let config = format!(
        "[node]\nname = \"puller\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
         [[stream]]\nname = \"pulled\"\nsegment_duration = 1\n\
         inputs = [\"srt://127.0.0.1:{port}?streamid=cam&passphrase={PASSPHRASE}&latency=200\"]\n",
        dir.path().join("data").display()
    );
    let node = NodeProcess::start(dir.path(), "puller", &config);
    let first = wait_for("segments pulled over SRT", Duration::from_secs(30), || {
        let playlist = common::media_playlist(node.http, "pulled")?;
        let entries = parse_media_playlist(&playlist);
        (entries.len() >= 3).then(|| entries.last().map(|e| e.msn))
    });
    let (status, doc) = common::http_get_json(node.http, "/api/streams/pulled");
    assert_eq!(status, 200, "{doc}");
    let shown = doc.to_string();
    assert!(shown.contains(&format!("srt://127.0.0.1:{port}")), "{doc}");
    assert!(
        !shown.contains(PASSPHRASE),
        "the passphrase is not shown: {doc}"
    );

    // The encoder restarts: the input reconnects on its own and the stream goes on.
    drop(encoder);
    let _encoder = ffmpeg_srt(&fixture, &encoder_url);
    wait_for(
        "segments after the encoder restarted",
        Duration::from_secs(30),
        || {
            let playlist = common::media_playlist(node.http, "pulled")?;
            let newest = parse_media_playlist(&playlist).last()?.msn;
            (newest >= first? + 4).then_some(())
        },
    );
}

#[test]
fn a_node_takes_srt_publish_for_its_publish_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = dir.path().join("source.ts");
    encode_fixture(&fixture, 20);
    let srt = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    let config = format!(
        "[node]\nname = \"taker\"\nhttp = \"127.0.0.1:0\"\nsrt = \"{srt}\"\ndata_dir = \"{}\"\n\
         [node.srt_options]\npassphrase = \"{PASSPHRASE}\"\n\
         [[stream]]\nname = \"cam\"\nsegment_duration = 1\ninputs = [\"publish://?key=s3cret\"]\n",
        dir.path().join("data").display()
    );
    let node = NodeProcess::start(dir.path(), "taker", &config);
    let _publisher = ffmpeg_srt(
        &fixture,
        &format!("srt://{srt}?streamid=#!::r=cam,m=publish,s=s3cret&passphrase={PASSPHRASE}"),
    );
    wait_for(
        "segments published over SRT to a node",
        Duration::from_secs(30),
        || {
            let playlist = common::media_playlist(node.http, "cam")?;
            (parse_media_playlist(&playlist).len() >= 3).then_some(())
        },
    );
}
