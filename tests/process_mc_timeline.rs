//! One timeline for an MC pair (issue 21 items 3-4): two `brdyun mc` processes on etcd,
//! each following the meeting's timeline owner; the owner is killed and the nodes,
//! which switch to the standby, keep byte-identical segments with no PDT step.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use common::etcd::EtcdCluster;
use common::{
    free_tcp_port, free_udp_port, http_get, parse_media_playlist, parse_pdt, start_role, wait_for,
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
    let config = format!(
        "[mc]\nname = \"{name}\"\nhttp = \"127.0.0.1:{port}\"\nrtmp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\nadmin_token = \"admin-secret\"\nnode_token = \"node-secret\"\netcd = {}\npeers = [\"http://127.0.0.1:{peer}\"]\n[defaults]\nsegment_duration = 1\n[[meeting]]\nid = \"{MEETING}\"\nstart = true\ninputs = [{inputs}]\n",
        dir.join(name).display(),
        etcd.toml_urls(),
    );
    start_role(dir, name, "mc", &config)
}

fn start_node(dir: &Path, name: &str, mcs: [u16; 2]) -> NodeProcess {
    let config = format!(
        "[node]\nname = \"{name}\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n[mc]\nurls = [\"http://127.0.0.1:{}\", \"http://127.0.0.1:{}\"]\ntoken = \"node-secret\"\npoll_interval = 0.2\ntimeout = 0.5\n[mc.stream]\nsegment_duration = 1\n",
        dir.join(name).display(),
        mcs[0],
        mcs[1],
    );
    start_role(dir, name, "node", &config)
}

fn playlist(addr: SocketAddr) -> Option<Vec<PlaylistEntry>> {
    let (status, _, body) = http_get(addr, &format!("/{MEETING}/mono.m3u8"));
    (status == 200).then(|| parse_media_playlist(&String::from_utf8_lossy(&body)))
}

fn segment(addr: SocketAddr, entry: &PlaylistEntry) -> Vec<u8> {
    let (status, _, body) = http_get(addr, &format!("/{MEETING}/{}", entry.uri));
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
/// across every segment of one discontinuity period.
fn assert_no_pdt_step(name: &str, segments: &BTreeMap<u64, (PlaylistEntry, Vec<u8>)>) {
    let entries: Vec<&PlaylistEntry> = segments.values().map(|(e, _)| e).collect();
    for pair in entries.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert_eq!(
            b.msn,
            a.msn + 1,
            "{name}: msn gap {} -> {}: {entries:#?}",
            a.msn,
            b.msn
        );
        assert_eq!(
            a.discontinuity_seq, b.discontinuity_seq,
            "{name}: a discontinuity at msn {}",
            b.msn
        );
        let duration_ms: f64 = a
            .extinf
            .trim_end_matches(',')
            .split(',')
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            * 1000.0;
        let step = parse_pdt(&b.program_date_time) - parse_pdt(&a.program_date_time);
        assert!(
            (step as f64 - duration_ms).abs() <= 1.0,
            "{name}: PDT step at msn {}: {step} ms after a {duration_ms} ms segment: {entries:#?}",
            b.msn
        );
    }
}

#[test]
fn dual_publish_to_an_mc_pair_fails_over_with_no_pdt_step_and_identical_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = EtcdCluster::start(&dir.path().join("etcd"), 1);
    let (p1, p2) = (free_tcp_port(), free_tcp_port());
    let (u1, u2) = (free_udp_port(), free_udp_port());
    // Both MCs start together: the first to cut a segment owns the timeline, the
    // other follows it.
    let mut mc1 = start_mc(
        dir.path(),
        "mc1",
        p1,
        p2,
        &etcd,
        &format!("\"udp://127.0.0.1:{u1}\""),
    );
    let mc2 = start_mc(
        dir.path(),
        "mc2",
        p2,
        p1,
        &etcd,
        &format!("\"udp://127.0.0.1:{u2}\""),
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
    let node_a = start_node(dir.path(), "node-a", [p1, p2]);
    let node_b = start_node(dir.path(), "node-b", [p1, p2]);

    // The standby follows the owner: its newest segments are the owner's, byte for byte.
    wait_for(
        "the standby to follow the owner",
        Duration::from_secs(40),
        || {
            let a = playlist(mc1.http)?;
            let b = playlist(mc2.http)?;
            let newest = b.last()?;
            let twin = a.iter().find(|e| e.msn == newest.msn)?;
            (twin == newest && segment(mc1.http, twin) == segment(mc2.http, newest)).then_some(())
        },
    );
    let mut seen: [BTreeMap<u64, (PlaylistEntry, Vec<u8>)>; 3] = Default::default();
    wait_for("nodes to play 3 segments", Duration::from_secs(30), || {
        collect(node_a.http, &mut seen[0]);
        collect(node_b.http, &mut seen[1]);
        collect(mc2.http, &mut seen[2]);
        (seen[0].len() >= 3 && seen[1].len() >= 3).then_some(())
    });
    // Both MCs' relays are live on both nodes (the standby's is a hot standby).
    for node in [&node_a, &node_b] {
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
        assert_no_pdt_step(name, segments);
    }
    // Every segment both nodes (and the standby) have is the same, across the switch.
    let mut compared = 0;
    for (msn, (entry, bytes)) in &seen[0] {
        for other in &seen[1..] {
            if let Some((twin, twin_bytes)) = other.get(msn) {
                assert_eq!(entry, twin, "playlist entries differ at msn {msn}");
                assert!(bytes == twin_bytes, "segment {msn} differs");
                compared += 1;
            }
        }
    }
    assert!(compared >= 12, "only {compared} segments compared");
    // The standby owns the meeting's timeline now.
    drop(mc2);
}
