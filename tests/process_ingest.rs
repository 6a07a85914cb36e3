//! Live inputs at process level: a real publisher (ffmpeg over RTMP or MPEG-TS/UDP)
//! feeds `brdyun node`, and a real HLS client (ffmpeg) decodes what the node serves.
//! Backup inputs take over when the primary dies (OTT-OPS-4), and hostile input on one
//! stream hurts neither the process nor the other streams.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

use common::{
    assert_not_started, ffmpeg_decode, ffmpeg_source, http_get, http_get_json, media_playlist,
    parse_media_playlist, wait_for, ChildGuard, NodeProcess,
};

/// A node config with the given extra `[node]` lines and `[[stream]]` tables.
fn config(data: &Path, node_extra: &str, streams: &str) -> String {
    format!(
        "[node]\nname = \"ingest\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n{node_extra}\n{streams}",
        data.display()
    )
}

/// Waits until `stream` has at least `n` segments in its live window.
fn wait_segments(addr: SocketAddr, stream: &str, n: usize, limit: Duration) -> String {
    wait_for(&format!("{n} segments of {stream}"), limit, || {
        media_playlist(addr, stream).filter(|p| parse_media_playlist(p).len() >= n)
    })
}

fn last_msn(addr: SocketAddr, stream: &str) -> Option<u64> {
    media_playlist(addr, stream).and_then(|p| parse_media_playlist(&p).last().map(|e| e.msn))
}

/// Decodes `seconds` of the node's HLS output with ffmpeg and fails on any error line.
fn assert_decodes(addr: SocketAddr, stream: &str, seconds: u32) {
    let url = format!("http://{addr}/{stream}/index.m3u8");
    let (status, errors) = ffmpeg_decode(&url, seconds, Duration::from_secs(60));
    assert!(
        status.success() && errors.is_empty(),
        "ffmpeg decoding {url}: {status}, {} error lines:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// A node whose stream `live` accepts RTMP publish with the key `s3cret`, and its RTMP address.
fn rtmp_node(dir: &std::path::Path, name: &str) -> (NodeProcess, std::net::SocketAddr) {
    let node = NodeProcess::start(
        dir,
        name,
        &config(
            &dir.join("data"),
            "rtmp = \"127.0.0.1:0\"",
            "[[stream]]\nname = \"live\"\ninputs = [\"publish://?key=s3cret\"]\n",
        ),
    );
    let rtmp = node
        .rtmp
        .expect("the listening line names the rtmp address");
    (node, rtmp)
}

#[test]
fn rtmp_publish_is_served_as_hls_that_ffmpeg_decodes() {
    let dir = tempfile::tempdir().unwrap();
    let (node, rtmp) = rtmp_node(dir.path(), "rtmp");
    let url = format!("rtmp://{rtmp}/live/live?key=s3cret");
    let mut publisher =
        ChildGuard::spawn("ffmpeg rtmp publisher", &mut ffmpeg_source(30, "flv", &url));
    wait_segments(node.http, "live", 2, Duration::from_secs(20));
    assert_decodes(node.http, "live", 20);
    let still_running = publisher.child.try_wait().ok().flatten().is_none();
    let stderr = publisher.kill();
    assert!(
        still_running || stderr.trim().is_empty(),
        "publisher failed: {stderr}"
    );
}

#[test]
fn rtmp_publish_with_a_wrong_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (node, rtmp) = rtmp_node(dir.path(), "rtmp-key");
    let url = format!("rtmp://{rtmp}/live/live?key=wrong");
    let publisher = ChildGuard::spawn("ffmpeg rtmp publisher", &mut ffmpeg_source(10, "flv", &url));
    let (status, stderr) = publisher.finish(Duration::from_secs(15));
    assert!(
        !status.success(),
        "a publish with a wrong key succeeded: {status}, {stderr}"
    );
    assert_not_started(node.http, "live");
    let (_, _, metrics) = http_get(node.http, "/metrics");
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("brdyun_rtmp_rejections_total ") && !l.ends_with(" 0")),
        "the refusal is not counted:\n{metrics}"
    );
    assert!(
        metrics.lines().any(
            |l| l == "brdyun_rtmp_refused_total{code=\"111028\",reason=\"ingest_wrong_key\"} 1"
        ),
        "the refusal is not counted by its code:\n{metrics}"
    );
    // The listener's status names it too, with the listener's address.
    let (status, doc) = http_get_json(node.http, "/api/node");
    assert_eq!(status, 200, "{doc}");
    let listener = &doc["ingest"][0];
    assert_eq!(listener["protocol"], "rtmp", "{doc}");
    assert_eq!(listener["addr"], rtmp.to_string(), "{doc}");
    let wrong_key = listener["refused"]
        .as_array()
        .and_then(|list| list.iter().find(|r| r["code"] == 111_028))
        .map(|r| r["count"].clone());
    assert_eq!(wrong_key, Some(serde_json::json!(1)), "{doc}");
}

/// The value of the metric line that starts with `prefix` (0 when absent).
fn metric(addr: SocketAddr, prefix: &str) -> u64 {
    let (_, _, body) = http_get(addr, "/metrics");
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix(prefix)?.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn rtmp_slot_hogs_are_capped_and_cut_while_a_real_publisher_is_served() {
    use std::io::{Read, Write};

    let dir = tempfile::tempdir().unwrap();
    let node = NodeProcess::start(
        dir.path(),
        "rtmp-hogs",
        &config(
            &dir.path().join("data"),
            "rtmp = \"127.0.0.1:0\"\n[node.rtmp_limits]\nmax_pending_per_address = 2\npublish_deadline = 3",
            "[[stream]]\nname = \"live\"\ninputs = [\"publish://?key=s3cret\"]\n",
        ),
    );
    let rtmp = node.rtmp.expect("rtmp address");
    let hog = common::viewer_ip("rtmp hog");
    // Two trickling connections from the hog's address hold its share…
    let mut held: Vec<std::net::TcpStream> = (0..2)
        .map(|_| {
            let mut c = common::connect_from(rtmp, hog);
            c.write_all(&[3]).expect("one byte of c0");
            c
        })
        .collect();
    // …and its third is closed at accept.
    let mut third = common::connect_from(rtmp, hog);
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    assert!(
        matches!(third.read(&mut [0u8; 16]), Ok(0) | Err(_)),
        "the third connection was served"
    );
    let address_full = "brdyun_rtmp_limit_total{code=\"111020\",reason=\"ingest_address_full\"} ";
    wait_for("the refusal counted", Duration::from_secs(5), || {
        (metric(node.http, address_full) == 1).then_some(())
    });

    // A real publisher from another address is served meanwhile.
    let url = format!("rtmp://{rtmp}/live/live?key=s3cret");
    let publisher = ChildGuard::spawn("ffmpeg rtmp publisher", &mut ffmpeg_source(30, "flv", &url));
    wait_segments(node.http, "live", 2, Duration::from_secs(20));

    // The hog's connections were cut at the publish deadline, bytes or not.
    for c in &mut held {
        c.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        assert!(
            matches!(c.read(&mut [0u8; 16]), Ok(0) | Err(_)),
            "a hog outlived the publish deadline"
        );
    }
    let deadline = "brdyun_rtmp_limit_total{code=\"111022\",reason=\"ingest_publish_deadline\"} ";
    assert_eq!(metric(node.http, deadline), 2);
    assert_eq!(metric(node.http, "brdyun_rtmp_publishes_total "), 1);
    drop(publisher);
}

#[test]
fn udp_push_is_served_as_hls_with_status_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_udp_port();
    let node = NodeProcess::start(
        dir.path(),
        "udp",
        &config(
            &dir.path().join("data"),
            "",
            &format!("[[stream]]\nname = \"u\"\ninputs = [\"udp://127.0.0.1:{port}\"]\n"),
        ),
    );
    let url = format!("udp://127.0.0.1:{port}?pkt_size=1316");
    let _publisher = ChildGuard::spawn(
        "ffmpeg udp publisher",
        &mut ffmpeg_source(25, "mpegts", &url),
    );
    wait_segments(node.http, "u", 2, Duration::from_secs(20));
    assert_decodes(node.http, "u", 12);

    let (status, doc) = http_get_json(node.http, "/api/streams/u");
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["live"], true, "{doc}");
    assert_eq!(doc["resolution"], "320x180", "{doc}");
    let codecs: Vec<&str> = doc["codecs"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c.as_str()).collect())
        .unwrap_or_default();
    assert!(
        codecs.len() == 2 && codecs[0].starts_with("avc1.") && codecs[1] == "mp4a.40.2",
        "codecs: {doc}"
    );

    let (status, _, metrics) = http_get(node.http, "/metrics");
    assert_eq!(status, 200);
    let metrics = String::from_utf8_lossy(&metrics);
    let bytes: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("brdyun_input_bytes_total{stream=\"u\",input=\"0\"} "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no input byte counter for u:\n{metrics}"));
    assert!(bytes > 0, "input bytes {bytes}");
}

#[test]
fn a_backup_input_takes_over_when_the_primary_dies() {
    let dir = tempfile::tempdir().unwrap();
    let (p1, p2) = (common::free_udp_port(), common::free_udp_port());
    let node = NodeProcess::start(
        dir.path(),
        "backup",
        &config(
            &dir.path().join("data"),
            "",
            &format!(
                "[[stream]]\nname = \"b\"\nsource_timeout = 1\n\
                 inputs = [\"udp://127.0.0.1:{p1}\", \"udp://127.0.0.1:{p2}\"]\n"
            ),
        ),
    );
    // Two encoders of different pictures and tones: the backup's frames are not the
    // primary's, so its takeover starts a new discontinuity period (one encoder's two
    // outputs would continue the timeline: tests/process_publish_backup.rs).
    let push = |port: u16, pattern: &str, tone: u32| {
        let mut cmd = common::ffmpeg_encoder(40, pattern, tone);
        cmd.args(["-f", "mpegts"])
            .arg(format!("udp://127.0.0.1:{port}?pkt_size=1316"));
        ChildGuard::spawn("ffmpeg udp publisher", &mut cmd)
    };
    let primary = push(p1, "testsrc2", 440);
    let _backup = push(p2, "testsrc", 880);
    let before = parse_media_playlist(&wait_segments(node.http, "b", 2, Duration::from_secs(20)));
    wait_for("the primary input active", Duration::from_secs(10), || {
        let (_, doc) = http_get_json(node.http, "/api/streams/b");
        (doc["inputs"]["active"] == 0).then_some(())
    });
    let disc_before = before.last().expect("two segments").discontinuity_seq;

    primary.kill();
    let after = wait_for(
        "segments from the backup input",
        Duration::from_secs(8),
        || {
            let text = media_playlist(node.http, "b")?;
            let entries = parse_media_playlist(&text);
            let from_backup = entries.iter().any(|e| e.discontinuity_seq > disc_before);
            (from_backup && text.lines().any(|l| l == "#EXT-X-DISCONTINUITY")).then_some(entries)
        },
    );
    let switched_at = after.last().expect("segments").msn;
    wait_for(
        "the stream to keep advancing",
        Duration::from_secs(6),
        || last_msn(node.http, "b").filter(|&msn| msn > switched_at),
    );
    let (_, doc) = http_get_json(node.http, "/api/streams/b");
    assert_eq!(doc["inputs"]["active"], 1, "{doc}");
}

/// xorshift64: reproducible garbage without a new crate.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[test]
fn garbage_on_one_input_hurts_neither_the_process_nor_other_streams() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_udp_port();
    let mut node = NodeProcess::start(
        dir.path(),
        "junk",
        &config(
            &dir.path().join("data"),
            "",
            &format!(
                "[[stream]]\nname = \"good\"\ninputs = [\"builtin://meeting\"]\n\
                 [[stream]]\nname = \"junk\"\nsource_timeout = 1\n\
                 inputs = [\"udp://127.0.0.1:{port}\"]\n"
            ),
        ),
    );
    wait_segments(node.http, "good", 1, Duration::from_secs(20));
    let good_before = last_msn(node.http, "good").expect("good is live");

    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(("127.0.0.1", port)).unwrap();
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut buf = vec![0u8; 1500];
    for i in 0..2_000u32 {
        let len = 1 + (rng.next() % 1500) as usize;
        rng.fill(&mut buf[..len]);
        // Some datagrams look like TS: 7 packets with sync bytes, some on PID 0 (PAT)
        // and with payload_unit_start so the PSI and PES parsers see random sections.
        if i % 4 == 0 {
            let len = 7 * 188;
            rng.fill(&mut buf[..len]);
            for packet in buf[..len].chunks_mut(188) {
                packet[0] = 0x47;
                if i % 8 == 0 {
                    packet[1] = 0x40;
                    packet[2] = 0x00;
                }
            }
            send(&socket, &buf[..len]);
        } else {
            send(&socket, &buf[..len]);
        }
        if i % 10 == 0 {
            // Paced over 3 s: beyond the source timeout (bytes that keep coming with no
            // frame are what rejects an input), and not only dropped by the kernel.
            std::thread::sleep(Duration::from_millis(15));
        }
    }
    // Truncated packets: a sync byte and then less than 188 bytes.
    for len in 1..188usize {
        rng.fill(&mut buf[..len]);
        buf[0] = 0x47;
        send(&socket, &buf[..len]);
    }

    wait_for("good to keep advancing", Duration::from_secs(10), || {
        last_msn(node.http, "good").filter(|&msn| msn >= good_before + 2)
    });
    assert!(
        node.child.try_wait().expect("try_wait").is_none(),
        "the node exited"
    );
    // Bytes without a frame: the input is rejected with its reason, and viewers hear
    // the stream is down (111010), not that it has not started.
    let doc = wait_for(
        "the junk input to be rejected",
        Duration::from_secs(10),
        || {
            let (_, doc) = http_get_json(node.http, "/api/streams/junk");
            (doc["inputs"]["inputs"][0]["state"] == "rejected").then_some(doc)
        },
    );
    assert_eq!(doc["live"], false, "{doc}");
    let input = &doc["inputs"]["inputs"][0];
    assert_eq!(input["state"], "rejected", "{doc}");
    assert_eq!(input["fault"]["code"], 111002, "{doc}");
    assert!(
        input["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{doc}"
    );
    let (status, answer) = http_get_json(node.http, "/junk/mono.m3u8");
    assert_eq!(
        (status, &answer["code"]),
        (503, &serde_json::json!(111010)),
        "{answer}"
    );
    let counted = doc["inputs"]["inputs"][0]["bytes"].as_u64().unwrap_or(0);
    assert!(counted > 0, "the garbage never reached the input: {doc}");
    // The damage is reported by kind where operators look; the clean stream has none.
    let damage = &doc["inputs"]["inputs"][0]["damage"];
    let total: u64 = damage
        .as_object()
        .expect("damage by kind")
        .values()
        .filter_map(serde_json::Value::as_u64)
        .sum();
    assert!(total > 0, "the garbage shows as damage: {doc}");
    let (_, good) = http_get_json(node.http, "/api/streams/good");
    let clean = &good["inputs"]["inputs"][0]["damage"];
    assert!(
        clean
            .as_object()
            .expect("damage by kind")
            .values()
            .all(|v| v == 0),
        "{good}"
    );
    assert_eq!(good["counters"]["untimed"], 0, "{good}");
    assert_eq!(good["counters"]["bad_pts_frames"], 0, "{good}");
    let (_, _, metrics) = http_get(node.http, "/metrics");
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains(
            "brdyun_input_damage_total{stream=\"junk\",input=\"0\",kind=\"sync_losses\"}"
        ),
        "the damage is a metric"
    );
}

fn send(socket: &UdpSocket, datagram: &[u8]) {
    // Loopback may refuse with ECONNREFUSED if the port is not bound yet; a lost
    // datagram is fine, the node is what is under test.
    let _ = socket.send(datagram);
}
