//! One timeline for an MC pair: two `brdyun mc` processes on etcd,
//! each following the meeting's timeline owner; the owner is killed and the nodes,
//! which switch to the standby, keep byte-identical segments with no PDT step.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::cluster::{self, McConfig, NodeConfig};
use common::etcd::EtcdCluster;
use common::{
    free_tcp_port, free_udp_port, http_get_as_node, parse_media_playlist, parse_pdt, wait_for,
    ChildGuard, NodeProcess, PlaylistEntry,
};

const MEETING: &str = "dual";

/// Starts MC `name` on `port`, following `peer`, fed by `inputs` (preset inputs).
fn start_mc(
    dir: &Path,
    name: &str,
    port: u16,
    peer: u16,
    etcd: &EtcdCluster,
    inputs: &str,
) -> NodeProcess {
    let config = McConfig {
        name: Some(name.to_owned()),
        http: format!("127.0.0.1:{port}"),
        lines: format!(
            "etcd = {}\npeers = [\"http://127.0.0.1:{peer}\"]\n",
            etcd.toml_urls()
        ),
        sections: format!("[[meeting]]\nid = \"{MEETING}\"\nstart = true\ninputs = [{inputs}]\n"),
        ..McConfig::default()
    };
    cluster::start_mc(dir, name, &config)
}

fn start_node(dir: &Path, name: &str, mcs: [u16; 2]) -> NodeProcess {
    NodeConfig {
        mc_urls: mcs
            .iter()
            .map(|p| format!("http://127.0.0.1:{p}"))
            .collect(),
        timeout: Some("0.5".to_owned()),
        ..NodeConfig::new(name)
    }
    .start(dir)
}

fn playlist(addr: SocketAddr) -> Option<Vec<PlaylistEntry>> {
    let (status, _, body) = http_get_as_node(addr, &format!("/{MEETING}/mono.m3u8"));
    (status == 200).then(|| parse_media_playlist(&String::from_utf8_lossy(&body)))
}

fn segment(addr: SocketAddr, entry: &PlaylistEntry) -> Vec<u8> {
    let (status, _, body) = http_get_as_node(addr, &format!("/{MEETING}/{}", entry.uri));
    assert_eq!(status, 200, "segment {} on {addr}", entry.msn);
    body
}

/// Every segment a process has served so far, by MSN: (entry, bytes). Fetched while it
/// is in the window.
fn collect(addr: SocketAddr, into: &mut BTreeMap<u64, (PlaylistEntry, Vec<u8>)>) {
    for entry in playlist(addr).unwrap_or_default() {
        if let std::collections::btree_map::Entry::Vacant(slot) = into.entry(entry.msn) {
            let bytes = segment(addr, &entry);
            slot.insert((entry, bytes));
        }
    }
}

/// Dates follow the durations exactly (to the rounding of the EXTINF's millisecond)
/// within each discontinuity period, MSNs never skip; returns the MSNs that start a
/// new period.
fn check_periods(name: &str, segments: &BTreeMap<u64, (PlaylistEntry, Vec<u8>)>) -> Vec<u64> {
    let entries: Vec<&PlaylistEntry> = segments.values().map(|(e, _)| e).collect();
    let mut breaks = Vec::new();
    for pair in entries.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert_eq!(b.msn, a.msn + 1, "{name}: msn gap {} -> {}", a.msn, b.msn);
        if a.discontinuity_seq != b.discontinuity_seq {
            assert_eq!(b.discontinuity_seq, a.discontinuity_seq + 1, "{name}");
            breaks.push(b.msn);
            continue;
        }
        let duration_ms = extinf_ms(a);
        let step = parse_pdt(&b.program_date_time) - parse_pdt(&a.program_date_time);
        assert!(
            (step as f64 - duration_ms).abs() <= 1.0,
            "{name}: PDT step at msn {}: {step} ms after a {duration_ms} ms segment",
            b.msn
        );
    }
    breaks
}

fn extinf_ms(entry: &PlaylistEntry) -> f64 {
    entry
        .extinf
        .split(',')
        .next()
        .and_then(|d| d.parse::<f64>().ok())
        .expect("an EXTINF duration")
        * 1000.0
}

/// Every segment two collections both hold is the same entry and the same bytes;
/// returns how many were compared.
fn compare(
    a: &BTreeMap<u64, (PlaylistEntry, Vec<u8>)>,
    b: &BTreeMap<u64, (PlaylistEntry, Vec<u8>)>,
) -> usize {
    let mut compared = 0;
    for (msn, (entry, bytes)) in a {
        if let Some((twin, twin_bytes)) = b.get(msn) {
            assert_eq!(entry, twin, "playlist entries differ at msn {msn}");
            assert!(bytes == twin_bytes, "segment {msn} differs");
            compared += 1;
        }
    }
    compared
}

/// The status an MC answers another MC's pull of its relay with (`?origin=peer`, the
/// node token): 200 only while the store records it as the meeting's timeline owner.
/// Reads the status line alone and hangs up (the relay itself would run on).
fn peer_relay_status(mc: SocketAddr) -> Option<u16> {
    use std::io::{BufRead, BufReader, Write};
    let mut stream = std::net::TcpStream::connect_timeout(&mc, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        stream,
        "GET /{MEETING}/mpegts?origin=peer HTTP/1.1\r\nHost: {mc}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        common::NODE_TOKEN
    )
    .ok()?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Waits until `mc2`'s newest segment is `mc1`'s, byte for byte: it follows.
fn wait_following(mc1: SocketAddr, mc2: SocketAddr) {
    wait_for(
        "the standby to follow the owner",
        Duration::from_secs(40),
        || {
            let a = playlist(mc1)?;
            let b = playlist(mc2)?;
            let newest = b.last()?;
            let twin = a.iter().find(|e| e.msn == newest.msn)?;
            (twin == newest && segment(mc1, twin) == segment(mc2, newest)).then_some(())
        },
    );
}

/// Waits until both MCs' relays are live inputs on `node` (the standby's a hot standby).
fn wait_both_relays(node: &NodeProcess) {
    wait_for(
        "both relays live on the node",
        Duration::from_secs(20),
        || {
            let (_, streams) = common::http_get_json(node.http, "/api/streams");
            let inputs = streams["streams"][0]["inputs"]["inputs"]
                .as_array()?
                .clone();
            inputs.iter().all(|i| i["state"] == "live").then_some(())
        },
    );
}

#[test]
fn dual_publish_to_an_mc_pair_fails_over_with_no_pdt_step_and_identical_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = EtcdCluster::start(&dir.path().join("etcd"), 1);
    let (p1, p2) = (free_tcp_port(), free_tcp_port());
    let (u1, u2) = (free_udp_port(), free_udp_port());
    // The MC fed first owns the timeline (the first to cut a segment claims it); the
    // standby starts once it does, and follows it. Two MCs that start together cut the
    // same feed's first segment at the same moment, and either may win the claim.
    let mut mc1 = start_mc(
        dir.path(),
        "mc1",
        p1,
        p2,
        &etcd,
        &format!("\"udp://127.0.0.1:{u1}\""),
    );
    // One encoder, the same MPEG-TS to both MCs (a platform's dual publish).
    let mut ffmpeg_cmd = std::process::Command::new("ffmpeg");
    ffmpeg_cmd
        .args(["-nostdin", "-hide_banner", "-loglevel", "error"])
        .args(["-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25"])
        .args(["-re", "-f", "lavfi", "-i", "sine=frequency=440"])
        .args(["-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-bf", "2"])
        .args(["-c:a", "aac", "-t", "90", "-map", "0:v", "-map", "1:a", "-f", "tee"])
        .arg(format!(
            "[f=mpegts:onfail=ignore]udp://127.0.0.1:{u1}?pkt_size=1316|[f=mpegts:onfail=ignore]udp://127.0.0.1:{u2}?pkt_size=1316"
        ));
    let _ffmpeg = ChildGuard::spawn("ffmpeg dual publish", &mut ffmpeg_cmd);
    wait_for("mc1 to own the timeline", Duration::from_secs(30), || {
        (peer_relay_status(mc1.http)? == 200).then_some(())
    });
    let mc2 = start_mc(
        dir.path(),
        "mc2",
        p2,
        p1,
        &etcd,
        &format!("\"udp://127.0.0.1:{u2}\""),
    );
    let node_a = start_node(dir.path(), "node-a", [p1, p2]);
    let node_b = start_node(dir.path(), "node-b", [p1, p2]);

    // The standby follows the owner: its newest segments are the owner's, byte for byte.
    wait_following(mc1.http, mc2.http);
    let mut seen: [BTreeMap<u64, (PlaylistEntry, Vec<u8>)>; 3] = Default::default();
    wait_for("nodes to play 3 segments", Duration::from_secs(30), || {
        collect(node_a.http, &mut seen[0]);
        collect(node_b.http, &mut seen[1]);
        collect(mc2.http, &mut seen[2]);
        (seen[0].len() >= 3 && seen[1].len() >= 3).then_some(())
    });
    wait_both_relays(&node_a);
    wait_both_relays(&node_b);
    collect(node_a.http, &mut seen[0]);
    let before = seen[0].keys().last().copied().unwrap();

    mc1.kill9();
    // Nodes switch to the standby; keep collecting until 6 segments cut after the kill.
    wait_for(
        "6 segments after the primary MC died",
        Duration::from_secs(40),
        || {
            collect(node_a.http, &mut seen[0]);
            collect(node_b.http, &mut seen[1]);
            collect(mc2.http, &mut seen[2]);
            let newest = |m: &BTreeMap<u64, _>| m.keys().last().copied().unwrap_or(0);
            (newest(&seen[0]) >= before + 6 && newest(&seen[1]) >= before + 6).then_some(())
        },
    );
    for (name, segments) in [("node-a", &seen[0]), ("node-b", &seen[1])] {
        assert_eq!(
            check_periods(name, segments),
            Vec::<u64>::new(),
            "{name}: no discontinuity"
        );
    }
    // Every segment both nodes (and the standby) have is the same, across the switch.
    let compared = compare(&seen[0], &seen[1]) + compare(&seen[0], &seen[2]);
    assert!(compared >= 12, "only {compared} segments compared");
}

#[test]
fn a_publisher_that_reconnects_to_the_standby_gives_one_discontinuity_and_true_dates() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = EtcdCluster::start(&dir.path().join("etcd"), 1);
    let (p1, p2) = (free_tcp_port(), free_tcp_port());
    let mut mc1 = start_mc(dir.path(), "mc1", p1, p2, &etcd, "");
    let mc2 = start_mc(dir.path(), "mc2", p2, p1, &etcd, "");
    let key = cluster::stream_key(mc1.http, MEETING);
    let publish = |mc: &NodeProcess| {
        let url = format!("rtmp://{}/live/{MEETING}?key={key}", mc.rtmp.expect("rtmp"));
        ChildGuard::spawn(
            "ffmpeg publisher",
            &mut common::ffmpeg_source(120, "flv", &url),
        )
    };
    let first_publisher = publish(&mc1);
    let node_a = start_node(dir.path(), "node-a", [p1, p2]);
    let node_b = start_node(dir.path(), "node-b", [p1, p2]);
    wait_following(mc1.http, mc2.http);
    wait_both_relays(&node_a);
    wait_both_relays(&node_b);
    let mut seen: [BTreeMap<u64, (PlaylistEntry, Vec<u8>)>; 3] = Default::default();
    let gather = |seen: &mut [BTreeMap<u64, (PlaylistEntry, Vec<u8>)>; 3]| {
        collect(node_a.http, &mut seen[0]);
        collect(node_b.http, &mut seen[1]);
        collect(mc2.http, &mut seen[2]);
    };
    gather(&mut seen);

    // The primary MC dies with its publisher's connection; the publisher comes back to
    // the standby 3 s later, its timestamps starting over.
    mc1.kill9();
    drop(first_publisher.kill());
    let away = Duration::from_secs(3);
    let died_at = std::time::SystemTime::now();
    while died_at.elapsed().unwrap() < away {
        gather(&mut seen);
        std::thread::sleep(Duration::from_millis(200));
    }
    let back_ms = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let _second_publisher = publish(&mc2);
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        gather(&mut seen);
        let new_period = |m: &BTreeMap<u64, (PlaylistEntry, Vec<u8>)>| {
            m.values().filter(|(e, _)| e.discontinuity_seq > 0).count()
        };
        if new_period(&seen[0]) >= 3 && new_period(&seen[1]) >= 3 {
            break;
        }
        if std::time::Instant::now() > deadline {
            for m in [&seen[0], &seen[2]] {
                let summary: Vec<String> = m
                    .values()
                    .map(|(e, b)| {
                        format!(
                            "{} d{} {} {}",
                            e.msn,
                            e.discontinuity_seq,
                            e.program_date_time,
                            b.len()
                        )
                    })
                    .collect();
                eprintln!("segments (msn, period, date, bytes): {summary:?}");
            }
            panic!("no new period (publisher back at {back_ms})");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for (name, segments) in [("node-a", &seen[0]), ("node-b", &seen[1])] {
        let breaks = check_periods(name, segments);
        assert_eq!(
            breaks.len(),
            1,
            "{name}: exactly one discontinuity: {breaks:?}"
        );
        let (first, _) = &segments[&breaks[0]];
        let dated = parse_pdt(&first.program_date_time);
        // Dated by the wall clock of its arrival: after the publisher came back, within
        // the time it takes to connect and reach a keyframe.
        assert!(
            dated >= back_ms - 500 && dated <= back_ms + 4_000,
            "{name}: the new period is dated {dated}, the publisher came back at {back_ms}"
        );
    }
    let compared = compare(&seen[0], &seen[1]) + compare(&seen[0], &seen[2]);
    assert!(compared >= 8, "only {compared} segments compared");
}
