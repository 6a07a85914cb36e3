//! The live relay between processes (OTT-GRP-4): a node pulling its
//! upstream's `mpegts?live=1` gets each frame as the upstream places it, so it lists
//! every LL-HLS part when the upstream does (measured here: the gap between the two
//! listing the same part), with the same bytes, and its TS segments stay the upstream's.
//! Upstreams: a node pulling the live relay by URL, and an MC whose node follows it
//! with `[mc] live_relay = true`.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::{http_get, parse_media_playlist, start_role, wait_for, NodeProcess};

/// 0.5-s parts of 2-s segments, the low-latency setting docs/llhls.md measures.
const STREAM: &str = "segment_duration = 2.0\npart_duration = 0.5\n";

fn origin_config(data: &std::path::Path) -> String {
    format!(
        "[node]\nname = \"origin\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
         [[stream]]\nname = \"m\"\ninputs = [\"builtin://meeting\"]\n{STREAM}",
        data.display()
    )
}

fn edge_config(data: &std::path::Path, origin: SocketAddr) -> String {
    format!(
        "[node]\nname = \"edge\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
         [[stream]]\nname = \"m\"\ninputs = [\"http://{origin}/m/mpegts?live=1\"]\n{STREAM}",
        data.display()
    )
}

/// An MC with the preset meeting `m` on the built-in source, and the config of a node
/// that learns its meetings from it and pulls its live relay.
fn mc_cluster() -> Cluster {
    Cluster::mc()
        .name("mc")
        .no_rtmp()
        .tokens(None, None)
        .defaults(Some(STREAM))
        .sections("[[meeting]]\nid = \"m\"\nstart = true\ninputs = [\"builtin://meeting\"]\n")
        .node(|node| {
            node.poll_interval = "0.5".to_owned();
            node.timeout = None;
            node.mc_lines = "live_relay = true\n".to_owned();
            node.stream = Some(STREAM.to_owned());
        })
        .start()
}

/// The parts an LL-HLS playlist lists, as (MSN, index, URI), in order.
fn parts(playlist: &str) -> Vec<(u64, usize, String)> {
    let mut msn = playlist
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mut index = 0;
    let mut out = Vec::new();
    for line in playlist.lines() {
        if let Some(rest) = line.strip_prefix("#EXT-X-PART:") {
            if let Some(uri) = rest
                .split("URI=\"")
                .nth(1)
                .and_then(|u| u.split('"').next())
            {
                out.push((msn, index, uri.to_owned()));
            }
            index += 1;
        } else if line.starts_with("#EXTINF") {
            // The segment line follows; its parts were listed before it.
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            msn += 1;
            index = 0;
        }
    }
    out
}

/// Follows a node's LL-HLS playlist with blocking reloads for `span`: when each part
/// was first listed.
fn follow_parts(node: SocketAddr, span: Duration) -> HashMap<(u64, usize), Instant> {
    let mut seen = HashMap::new();
    let end = Instant::now() + span;
    let mut next: Option<(u64, usize)> = None;
    while Instant::now() < end {
        let path = match next {
            Some((msn, part)) => format!("/m/ll.m3u8?_HLS_msn={msn}&_HLS_part={part}"),
            None => "/m/ll.m3u8".to_owned(),
        };
        let (status, _, body) = http_get(node, &path);
        let at = Instant::now();
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        let listed = parts(&String::from_utf8_lossy(&body));
        for (msn, i, _) in &listed {
            seen.entry((*msn, *i)).or_insert(at);
        }
        if let Some((msn, i, _)) = listed.last() {
            next = Some((*msn, i + 1));
        }
    }
    seen
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Starts `brdyun ROLE` named `name` in `dir/name` and waits until it lists at least
/// four LL-HLS parts of `m`. `config` gets that data directory.
fn start_listing_parts(
    dir: &std::path::Path,
    name: &str,
    role: &str,
    config: impl FnOnce(&std::path::Path) -> String,
) -> NodeProcess {
    let process = start_role(dir, name, role, &config(&dir.join(name)));
    wait_listing_parts(&process, name);
    process
}

/// Waits until `process` (named `name`) lists at least four LL-HLS parts of `m`.
fn wait_listing_parts(process: &NodeProcess, name: &str) {
    wait_for(&format!("{name} LL-HLS"), Duration::from_secs(30), || {
        let (status, _, body) = http_get(process.http, "/m/ll.m3u8");
        (status == 200 && parts(&String::from_utf8_lossy(&body)).len() >= 4).then_some(())
    });
}

#[test]
fn a_node_on_the_live_relay_lists_the_origins_parts_as_they_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    let origin = start_listing_parts(dir.path(), "origin", "node", origin_config);
    let edge = start_listing_parts(dir.path(), "edge", "node", |data| {
        edge_config(data, origin.http)
    });
    in_step("origin", origin.http, edge.http);
}

#[test]
fn a_node_of_an_mc_lists_the_mcs_parts_as_they_are_cut() {
    let cluster = mc_cluster();
    wait_listing_parts(&cluster.mc, "mc");
    let node = cluster.start_node("node");
    wait_listing_parts(&node, "node");
    in_step("MC", cluster.mc.http, node.http);
}

/// Checks that `node` lists every part of `m` within 200 ms of `upstream` (p50 and
/// p99; printed), with the same bytes, and serves the upstream's TS segments.
fn in_step(label: &str, upstream: SocketAddr, node: SocketAddr) {
    // Let the node cut two segments live (past any replay of the upstream's window)
    // before measuring.
    let newest = || {
        let (status, _, body) = http_get(node, "/m/ll.m3u8");
        let listed = parts(&String::from_utf8_lossy(&body));
        (status == 200).then(|| listed.last().map(|(msn, _, _)| *msn))?
    };
    let first = wait_for("the node to list parts", Duration::from_secs(30), newest);
    wait_for(
        "the node to cut two segments live",
        Duration::from_secs(30),
        || newest().filter(|msn| *msn >= first + 2),
    );
    let span = Duration::from_secs(12);
    let upstream_thread = std::thread::spawn(move || follow_parts(upstream, span));
    let node_seen = follow_parts(node, span);
    let upstream_seen = upstream_thread.join().expect("upstream follower");
    // Parts both saw appear after they started following (not the first answer's list).
    let first_msn = upstream_seen.keys().map(|k| k.0).min().unwrap_or(0) + 1;
    let mut gaps: Vec<i64> = upstream_seen
        .iter()
        .filter(|(k, _)| k.0 > first_msn)
        .filter_map(|(k, at_upstream)| {
            let at_node = node_seen.get(k)?;
            Some(if at_node >= at_upstream {
                i64::try_from(at_node.duration_since(*at_upstream).as_millis()).unwrap_or(i64::MAX)
            } else {
                -i64::try_from(at_upstream.duration_since(*at_node).as_millis()).unwrap_or(i64::MAX)
            })
        })
        .collect();
    gaps.sort_unstable();
    assert!(gaps.len() >= 12, "parts seen on both: {}", gaps.len());
    let (p50, p99) = (percentile(&gaps, 0.5), percentile(&gaps, 0.99));
    println!(
        "live relay from the {label}: {} parts, the node lists a part {p50} ms (p50) / {p99} ms (p99) / {} ms (max) after it",
        gaps.len(),
        gaps[gaps.len() - 1]
    );
    // Whole-segment relays list a segment's parts up to a segment (2 s) late; the live
    // relay is in step with the upstream (the goal is 50 ms; a loaded 2-core CI machine
    // gets 150 ms of slack).
    assert!(
        p50 <= 200 && p99 <= 200,
        "part listing gaps p50 {p50} ms, p99 {p99} ms: {gaps:?}"
    );

    // The parts are the upstream's, byte for byte, and so are the TS segments.
    let (_, _, body) = http_get(node, "/m/ll.m3u8");
    let listed = parts(&String::from_utf8_lossy(&body));
    let mut compared = 0;
    for (msn, i, uri) in listed.iter().rev().take(8) {
        let (s1, _, a) = http_get(upstream, &format!("/m/{uri}"));
        let (s2, _, b) = http_get(node, &format!("/m/{uri}"));
        if s1 == 200 && s2 == 200 {
            assert!(
                a == b,
                "part {msn}.{i} differs between the {label} and the node"
            );
            compared += 1;
        }
    }
    assert!(compared >= 4, "parts compared: {compared}");
    let (_, _, node_media) = http_get(node, "/m/mono.m3u8");
    let segments = parse_media_playlist(&String::from_utf8_lossy(&node_media));
    let mut same = 0;
    for s in segments.iter().rev().take(4) {
        let path = format!("/m/seg-{}.ts", s.msn);
        let (s1, _, a) = http_get(upstream, &path);
        let (s2, _, b) = http_get(node, &path);
        if s1 == 200 && s2 == 200 {
            assert!(
                a == b,
                "segment {} differs between the {label} and the node",
                s.msn
            );
            same += 1;
        }
    }
    assert!(same >= 3, "segments compared: {same}");
}
