//! The ABR ladder at process level (OTT-GRP-1, OTT-GRP-4, OTT-ELIG-3): a real `brdyun mc`
//! with `[mc.ladder]` encodes an RTMP-published meeting with ffmpeg, and a real
//! `brdyun node` pulls every rung. ffprobe sees every rung's segment of an MSN start at
//! the same PTS on a keyframe, at its own height; the node's rung segments are the MC's
//! bytes; ffmpeg plays the node's master playlist. The node records every rung: the
//! catch-up master lists the recorded ladder, every archived rung segment of an MSN
//! starts at the source's PTS on a keyframe, and ffmpeg plays the catch-up master.
//! Every segment checked is a conformant TS (`common::ts_check`): one access unit
//! delimiter per picture, PAT and PMT before any PES, PCRs at most 100 ms apart.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::cluster::{Cluster, ClusterBuilder, ADMIN};
use common::{
    ffmpeg_decode, ffmpeg_source, http_get, http_get_with, http_request, start_role, wait_for,
    ChildGuard,
};
use serde_json::json;

const RUNGS: [&str; 3] = ["source", "144p", "96p"];

/// Creates and starts meeting `m` on the MC and publishes 60 s of it by RTMP with
/// ffmpeg; the publisher stops when the guard drops.
fn publish_meeting(mc: &common::NodeProcess) -> ChildGuard {
    let key = start_meeting(mc);
    let rtmp = mc.rtmp.expect("mc rtmp address");
    ChildGuard::spawn(
        "publisher",
        &mut ffmpeg_source(60, "flv", &format!("rtmp://{rtmp}/live/m?key={key}")),
    )
}

/// Creates and starts meeting `m` on the MC; returns its stream key.
fn start_meeting(mc: &common::NodeProcess) -> String {
    let admin = [ADMIN];
    let (status, created) = http_request(
        mc.http,
        "POST",
        "/api/meetings",
        &admin,
        &json!({"id": "m"}).to_string(),
    );
    assert_eq!(status, 201, "{created}");
    let key = created["stream_key"]
        .as_str()
        .expect("a stream key")
        .to_owned();
    let (status, _) = http_request(mc.http, "POST", "/api/meetings/m/start", &admin, "");
    assert_eq!(status, 200);
    key
}

/// The MC's ladder: ffmpeg transcodes the source into 144p and 96p.
const ENCODED_LADDER: &str = r#"[mc.ladder]
preset = "ultrafast"
rungs = [
  { name = "source" },
  { name = "144p", height = 144, video_kbps = 200 },
  { name = "96p", height = 96, video_kbps = 100, profile = "baseline" },
]
"#;

/// An MC with `ladder` and a node that follows it, recording.
fn start_mc_and_node(ladder: &str) -> Cluster {
    cluster_with(ladder)
        .nodes(&["node-a"])
        .dvr("dvr = { enabled = true }")
        .start()
}

/// An MC with `ladder` in `[mc]`.
fn cluster_with(ladder: &str) -> ClusterBuilder {
    Cluster::mc().mc_lines(ladder)
}

/// The media playlist path of a rung of meeting `m`.
fn playlist(rung: &str) -> String {
    if rung == "source" {
        "/m/mono.m3u8".to_owned()
    } else {
        format!("/m/{rung}/mono.m3u8")
    }
}

fn segment_path(rung: &str, uri: &str) -> String {
    if rung == "source" {
        format!("/m/{uri}")
    } else {
        format!("/m/{rung}/{uri}")
    }
}

/// The segment URIs a rung's playlist lists, by MSN.
fn listed(addr: SocketAddr, rung: &str) -> Vec<(u64, String)> {
    let (status, _, body) = common::http_get_as_node(addr, &playlist(rung));
    if status != 200 {
        return Vec::new();
    }
    common::parse_media_playlist(&String::from_utf8_lossy(&body))
        .into_iter()
        .map(|e| (e.msn, e.uri))
        .collect()
}

/// ffprobe's first video packet of a segment file: (pts, keyframe), and the height.
fn first_video(path: &Path) -> ((u64, bool), u32) {
    let probe = |args: &[&str]| {
        let out = Command::new("ffprobe")
            .args(["-v", "error", "-select_streams", "v:0"])
            .args(args)
            .args(["-of", "csv=p=0"])
            .arg(path)
            .output()
            .expect("ffprobe runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let packets = probe(&["-show_entries", "packet=pts,flags"]);
    let first = packets
        .lines()
        .find(|l| !l.trim().is_empty())
        .expect("a video packet");
    let mut fields = first.split(',');
    let pts: u64 = fields.next().and_then(|p| p.parse().ok()).expect("a pts");
    let key = fields.next().is_some_and(|f| f.starts_with('K'));
    let height: u32 = probe(&["-show_entries", "stream=height"])
        .lines()
        .find_map(|l| l.trim().parse().ok())
        .expect("a height");
    ((pts, key), height)
}

#[test]
fn every_rung_of_the_mcs_ladder_is_cut_at_the_sources_pts_and_plays_from_a_node() {
    let cluster = start_mc_and_node(ENCODED_LADDER);
    let (mc, node) = (&cluster.mc, cluster.node());
    let _publisher = publish_meeting(mc);
    let admin = [ADMIN];

    // The node's master playlist offers the whole ladder once every rung is cut.
    let master = wait_for(
        "the node's master playlist to list the ladder",
        Duration::from_secs(40),
        || {
            let (status, _, body) = http_get(node.http, "/m/index.m3u8");
            let text = String::from_utf8_lossy(&body).into_owned();
            (status == 200 && text.matches("#EXT-X-STREAM-INF").count() == 3).then_some(text)
        },
    );
    let uris: Vec<&str> = master.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        uris,
        ["mono.m3u8", "144p/mono.m3u8", "96p/mono.m3u8"],
        "{master}"
    );
    assert!(
        master.contains("RESOLUTION=320x180") && master.contains("x144") && master.contains("x96"),
        "{master}"
    );

    let msns = check_aligned_msns(node, mc, cluster.path(), &RUNGS, &[180, 144, 96]);

    let (_, status) = http_request(mc.http, "GET", "/api/streams/m", &admin, "");
    assert_eq!(status["ladder"]["encoder"], "running", "{status}");
    assert_eq!(status["ladder"]["rungs"][0]["misaligned"], 0, "{status}");

    // ffmpeg, as an HLS client, plays the node's master playlist.
    let url = format!("http://{}/m/index.m3u8", node.http);
    let (exit, errors) = ffmpeg_decode(&url, 4, Duration::from_secs(30));
    assert!(
        exit.success() && errors.is_empty(),
        "ffmpeg plays the ladder: {errors:?}"
    );

    check_llhls_ladder(node);
    check_recorded_ladder(node, cluster.path(), &msns);
}

/// `uri` relative to the playlist at `base` (a path), as a player resolves it.
fn resolve(base: &str, uri: &str) -> String {
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for piece in uri.split('/') {
        match piece {
            ".." => {
                parts.pop();
            }
            _ => parts.push(piece),
        }
    }
    parts.join("/")
}

/// The rendition reports of an LL-HLS playlist: (URI, LAST-MSN, LAST-PART).
fn rendition_reports(playlist: &str) -> Vec<(String, u64, Option<u64>)> {
    playlist
        .lines()
        .filter_map(|l| l.strip_prefix("#EXT-X-RENDITION-REPORT:"))
        .map(|attributes| {
            let value = |key: &str| {
                attributes
                    .split(',')
                    .find_map(|a| a.strip_prefix(key)?.strip_prefix('='))
                    .map(|v| v.trim_matches('"').to_owned())
            };
            (
                value("URI").expect("a URI"),
                value("LAST-MSN")
                    .and_then(|v| v.parse().ok())
                    .expect("LAST-MSN"),
                value("LAST-PART").and_then(|v| v.parse().ok()),
            )
        })
        .collect()
}

/// LL-HLS of the ladder on the node: the LL-HLS master lists every rung, each rung's
/// playlist has parts and reports its siblings where they end, and a report leads to a
/// part the sibling serves.
fn check_llhls_ladder(node: &common::NodeProcess) {
    let master = wait_for(
        "the LL-HLS master to list the ladder",
        Duration::from_secs(20),
        || {
            let (status, _, body) = http_get(node.http, "/m/ll-index.m3u8");
            let text = String::from_utf8_lossy(&body).into_owned();
            (status == 200 && text.matches("#EXT-X-STREAM-INF").count() == 3).then_some(text)
        },
    );
    let uris: Vec<&str> = master.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(uris, ["ll.m3u8", "144p/ll.m3u8", "96p/ll.m3u8"], "{master}");
    for (path, wanted) in [
        ("/m/ll.m3u8", ["144p/ll.m3u8", "96p/ll.m3u8"]),
        ("/m/144p/ll.m3u8", ["../ll.m3u8", "../96p/ll.m3u8"]),
        ("/m/96p/ll.m3u8", ["../ll.m3u8", "../144p/ll.m3u8"]),
    ] {
        let (status, _, body) = http_get(node.http, path);
        assert_eq!(status, 200, "{path}");
        let text = String::from_utf8_lossy(&body).into_owned();
        assert!(text.contains("#EXT-X-PART:"), "{path} lists parts: {text}");
        let reports = rendition_reports(&text);
        let named: Vec<&str> = reports.iter().map(|(uri, _, _)| uri.as_str()).collect();
        assert_eq!(named, wanted, "{path}: {text}");
        let own_last = common::parse_media_playlist(&text)
            .last()
            .map(|e| e.msn)
            .expect("a segment");
        for (uri, last_msn, last_part) in &reports {
            assert!(
                last_msn + 2 >= own_last && *last_msn <= own_last + 2,
                "{path}: {uri} ends at {last_msn}, this playlist at {own_last}"
            );
            // The part a report names is there (or being cut: a blocking request).
            let part = last_part.expect("LAST-PART");
            let part_path =
                resolve(path, uri).replace("ll.m3u8", &format!("part-{last_msn}-{part}.m4s"));
            let (status, _, bytes) = http_get(node.http, &part_path);
            assert_eq!(status, 200, "{part_path}");
            assert!(!bytes.is_empty(), "{part_path}");
        }
    }
}

/// Four MSNs every rung of `rungs` lists on the node: ffprobe sees each rung's segment
/// start at the source's PTS on a keyframe, at the rung's height (`heights`, in the
/// same order); the node's bytes are the MC's. Returns the MSNs the node listed.
fn check_aligned_msns(
    node: &common::NodeProcess,
    mc: &common::NodeProcess,
    dir: &Path,
    rungs: &[&str],
    heights: &[u32],
) -> Vec<u64> {
    let (msns, lists) = wait_for("four MSNs in every rung", Duration::from_secs(30), || {
        let lists: Vec<Vec<(u64, String)>> = rungs.iter().map(|r| listed(node.http, r)).collect();
        let msns: Vec<u64> = lists[0]
            .iter()
            .map(|(msn, _)| *msn)
            .filter(|msn| lists.iter().all(|l| l.iter().any(|(m, _)| m == msn)))
            .collect();
        (msns.len() >= 4).then_some((msns, lists))
    });
    for msn in msns.iter().rev().take(4) {
        let mut starts = Vec::new();
        for ((rung, list), wanted) in rungs.iter().zip(&lists).zip(heights) {
            let uri = &list.iter().find(|(m, _)| m == msn).expect("listed").1;
            let path = segment_path(rung, uri);
            let (status, _, on_node) = http_get(node.http, &path);
            assert_eq!(status, 200, "{path}");
            // The MC's files are for its nodes and its admin.
            let (status, _, on_mc) = http_get_with(mc.http, &path, &[ADMIN]);
            assert_eq!(status, 200, "{path} on the MC");
            assert!(on_node == on_mc, "{path}: the node's bytes are the MC's");
            let file = dir.join(format!("{rung}-{msn}.ts"));
            std::fs::write(&file, &on_node).unwrap();
            // The RTMP-published source, the ffmpeg-encoded rungs, relayed to the node:
            // every picture opens with one delimiter, PCRs and PSI as players need.
            let ts = common::ts_check::check(&on_node).unwrap_or_else(|e| panic!("{path}: {e}"));
            println!(
                "{path}: {} pictures, {} bytes of delimiters, {} TS packets more, of {} bytes",
                ts.pictures, ts.delimiter_bytes, ts.extra_packets, ts.bytes
            );
            let ((pts, key), height) = first_video(&file);
            assert!(key, "{path} starts on a keyframe");
            starts.push(pts);
            assert_eq!(height, *wanted, "{path}");
        }
        assert!(
            starts.windows(2).all(|w| w[0] == w[1]),
            "msn {msn}: every rung starts at the same PTS: {starts:?}"
        );
    }
    msns
}

/// The catch-up of the last minute on `node`: a master of the recorded ladder, each
/// rung's archived segment of the MSNs checked live starting at the source's PTS on a
/// keyframe, and ffmpeg playing the master.
fn check_recorded_ladder(node: &common::NodeProcess, dir: &Path, live_msns: &[u64]) {
    let from = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 60;
    let period = format!("{from}-120");
    let master = wait_for(
        "the catch-up master to list the recorded ladder",
        Duration::from_secs(10),
        || {
            let (status, _, body) = http_get(node.http, &format!("/m/index-{period}.m3u8"));
            let text = String::from_utf8_lossy(&body).into_owned();
            (status == 200 && text.matches("#EXT-X-STREAM-INF").count() == 3).then_some(text)
        },
    );
    let uris: Vec<&str> = master.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        uris,
        [
            format!("mono-{period}.m3u8"),
            format!("144p/mono-{period}.m3u8"),
            format!("96p/mono-{period}.m3u8")
        ],
        "{master}"
    );
    assert!(
        master.contains("RESOLUTION=320x180") && master.contains("x144") && master.contains("x96"),
        "{master}"
    );
    // An archive playlist names each segment by its MSN (`dvr-{msn}.ts`).
    let archived: Vec<String> = RUNGS
        .iter()
        .map(|rung| {
            let path = if *rung == "source" {
                format!("/m/mono-{period}.m3u8")
            } else {
                format!("/m/{rung}/mono-{period}.m3u8")
            };
            let (status, _, body) = http_get(node.http, &path);
            assert_eq!(status, 200, "{path}");
            let text = String::from_utf8_lossy(&body).into_owned();
            assert!(text.contains("#EXT-X-ENDLIST"), "{path}: {text}");
            text
        })
        .collect();
    for msn in live_msns.iter().rev().take(4) {
        let mut starts = Vec::new();
        for (rung, list) in RUNGS.iter().zip(&archived) {
            let uri = format!("dvr-{msn}.ts");
            assert!(
                list.lines().any(|l| l == uri),
                "{rung} archived msn {msn}: {list}"
            );
            let path = segment_path(rung, &uri);
            let (status, _, bytes) = http_get(node.http, &path);
            assert_eq!(status, 200, "{path}");
            let file = dir.join(format!("dvr-{rung}-{msn}.ts"));
            std::fs::write(&file, &bytes).unwrap();
            let ((pts, key), _) = first_video(&file);
            assert!(key, "{path} starts on a keyframe");
            starts.push(pts);
        }
        assert!(
            starts.windows(2).all(|w| w[0] == w[1]),
            "archived msn {msn}: every rung starts at the same PTS: {starts:?}"
        );
    }
    let url = format!("http://{}/m/index-{period}.m3u8", node.http);
    let (exit, errors) = ffmpeg_decode(&url, 4, Duration::from_secs(30));
    assert!(
        exit.success() && errors.is_empty(),
        "ffmpeg plays the recorded ladder: {errors:?}"
    );
}

fn ott_section(gossip: u16, seeds: &[u16]) -> String {
    let seeds: Vec<String> = seeds
        .iter()
        .filter(|p| **p != gossip)
        .map(|p| format!("\"127.0.0.1:{p}\""))
        .collect();
    format!(
        "[ott]\ndomain_secret = \"ladder-domain-secret-0123456789\"\ngossip = \"127.0.0.1:{gossip}\"\nseeds = [{}]\n",
        seeds.join(", ")
    )
}

/// The backup nodes (their addresses) in a node's master playlist for a browser, and
/// how many variants each has.
fn backups(node: SocketAddr) -> Vec<(String, usize)> {
    let (status, body) = {
        let (status, _, body) = common::http_get_with(
            node,
            "/m/index.m3u8",
            &[(
                "User-Agent",
                "Mozilla/5.0 (X11; Linux x86_64) Chrome/120 Safari/537.36",
            )],
        );
        (status, String::from_utf8_lossy(&body).into_owned())
    };
    if status != 200 {
        return Vec::new();
    }
    let mut out: Vec<(String, usize)> = Vec::new();
    for line in body.lines().filter(|l| l.starts_with("http://")) {
        let host = line.split('/').nth(2).unwrap_or_default().to_owned();
        match out.iter_mut().find(|(h, _)| *h == host) {
            Some((_, n)) => *n += 1,
            None => out.push((host, 1)),
        }
    }
    out
}

/// OTT-ELIG-3 with real ladders: two nodes of the MC's meeting carry the same ladder and
/// back each other up with the whole ladder; a node that pulls the same timeline but
/// only its source rendition (another ladder) is offered by neither, and the group
/// names the problem.
#[test]
fn a_member_with_another_ladder_is_not_offered_as_a_backup() {
    let cluster = cluster_with(ENCODED_LADDER).start();
    let mc = &cluster.mc;
    let ports: Vec<u16> = (0..3).map(|_| common::free_udp_port()).collect();
    // A node of the MC's meeting with `[ott]`: its meeting streams are members of the
    // meeting's OTT group.
    let start = |i: usize, name: &str| {
        let mut config = cluster.node_config(name);
        config.stream = Some("segment_duration = 1\nott_backup = true\n".to_owned());
        config.sections = ott_section(ports[i], &ports);
        config.start(cluster.path())
    };
    let a = start(0, "node-a");
    let b = start(1, "node-b");
    // node-c pulls the same meeting's source relay as a plain stream: the same timeline,
    // one rendition.
    let c_config = format!(
        "[node]\nname = \"node-c\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n[defaults]\nsegment_duration = 1\n\
         [[stream]]\nname = \"m\"\ninputs = [\"http://{}/m/mpegts\"]\ninput_token = \"{}\"\nott_backup = true\n{}",
        cluster.path().join("node-c").display(),
        mc.http,
        common::NODE_TOKEN,
        ott_section(ports[2], &ports)
    );
    let c = start_role(cluster.path(), "node-c", "node", &c_config);
    let _publisher = publish_meeting(mc);
    let b_host = b.http.to_string();
    let c_host = c.http.to_string();
    // node-a offers node-b, with all three variants, once both carry the ladder, and
    // not node-c. While node-a's rungs start, its ladder is the source alone, like
    // node-c's: until the mesh view after its ladder grows (one refresh, about 250 ms)
    // node-c may be offered, so the steady state is what is checked.
    wait_for(
        "node-a to offer node-b's ladder and not node-c",
        Duration::from_secs(60),
        || {
            let offered = backups(a.http);
            let b_offered = offered.iter().any(|(h, n)| *h == b_host && *n == 3);
            let c_offered = offered.iter().any(|(h, _)| *h == c_host);
            (b_offered && !c_offered).then_some(())
        },
    );
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(250));
        let offered = backups(a.http);
        assert!(
            !offered.iter().any(|(h, _)| *h == c_host),
            "node-c has another ladder: {offered:?}"
        );
    }
    let (_, report) = common::http_get_json(a.http, "/api/ott");
    let text = report.to_string();
    assert!(
        text.contains("different ladder"),
        "the group names the problem: {report}"
    );
    // And node-c, whose one rendition is node-a's and node-b's source, offers neither.
    assert!(backups(c.http).is_empty(), "{:?}", backups(c.http));
}

/// The ladder a publisher sends itself: its source and two rungs on the same keyframes,
/// and `odd`, whose keyframes are not where the source's are.
const PUBLISHED_LADDER: &str = r#"[mc.ladder]
from = "publisher"
rungs = [
  { name = "source" },
  { name = "144p" },
  { name = "96p" },
  { name = "odd" },
]
"#;

/// One ffmpeg that publishes meeting `m`'s ladder for 60 s, as a platform's encoder
/// would: one RTMP publish per rung, all from the same input (the same timestamps), the
/// source and two rungs with a keyframe every second, `odd` every 37 frames.
fn publish_ladder(rtmp: SocketAddr, key: &str) -> ChildGuard {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error"])
        .args([
            "-re",
            "-t",
            "60",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=320x180:rate=25",
        ])
        .args(["-re", "-t", "60", "-f", "lavfi", "-i", "sine=frequency=440"]);
    for (rung, height, gop) in [
        ("", 180, 25),
        ("@144p", 144, 25),
        ("@96p", 96, 25),
        ("@odd", 96, 37),
    ] {
        cmd.args([
            "-map",
            "0:v",
            "-map",
            "1:a",
            "-vf",
            &format!("scale=-2:{height}"),
        ])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-bf",
            "0",
            "-sc_threshold",
            "0",
        ])
        .args(["-g", &gop.to_string(), "-keyint_min", &gop.to_string()])
        .args([
            "-c:a",
            "aac",
            "-f",
            "flv",
            &format!("rtmp://{rtmp}/live/m{rung}?key={key}"),
        ]);
    }
    ChildGuard::spawn("ladder publisher", &mut cmd)
}

#[test]
fn a_publishers_own_ladder_is_cut_on_the_source_and_a_misaligned_rung_is_reported_not_offered() {
    let cluster = start_mc_and_node(PUBLISHED_LADDER);
    let (mc, node) = (&cluster.mc, cluster.node());
    let key = start_meeting(mc);
    let _publisher = publish_ladder(mc.rtmp.expect("mc rtmp address"), &key);

    // The node offers the aligned rungs; `odd` is offered at most while its window
    // holds only its first segments (the first keyframes of all rungs coincide), never
    // once it has a misaligned one.
    let expected = ["mono.m3u8", "144p/mono.m3u8", "96p/mono.m3u8"];
    wait_for(
        "the node's master playlist to list the aligned rungs",
        Duration::from_secs(40),
        || {
            let (status, _, body) = http_get(node.http, "/m/index.m3u8");
            let text = String::from_utf8_lossy(&body).into_owned();
            let uris: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
            (status == 200 && uris == expected).then_some(())
        },
    );
    check_aligned_msns(node, mc, cluster.path(), &RUNGS, &[180, 144, 96]);

    // The misaligned rung is reported on the MC (counted, 110004 in the log), cut and
    // relayed like the others but not offered to players, on the MC or the node.
    let admin = [ADMIN];
    let (_, status) = wait_for(
        "odd to be counted misaligned",
        Duration::from_secs(20),
        || {
            let (code, status) = http_request(mc.http, "GET", "/api/streams/m", &admin, "");
            let odd = status["ladder"]["rungs"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r["name"] == "odd"))
                .cloned()?;
            (odd["misaligned"].as_u64() > Some(0)).then_some((code, status))
        },
    );
    assert_eq!(status["ladder"]["from"], "publisher", "{status}");
    for rung in status["ladder"]["rungs"].as_array().expect("rungs") {
        assert!(rung["frames"].as_u64() > Some(0), "{status}");
        assert!(rung["segments"].as_u64() > Some(0), "{status}");
        if rung["name"] != "odd" {
            assert_eq!(rung["misaligned"], 0, "{status}");
        }
    }
    let odd = status["renditions"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "odd"))
        .expect("odd's rendition");
    assert_eq!(
        (odd["listed"].as_bool(), odd["switchable"].as_bool()),
        (Some(false), Some(false)),
        "{status}"
    );
    for on in [mc.http, node.http] {
        let (_, _, body) = http_get_with(on, "/m/index.m3u8", &[ADMIN]);
        let text = String::from_utf8_lossy(&body);
        assert!(!text.contains("odd/"), "{text}");
    }
    let (_, _, metrics) = http_get(mc.http, "/metrics");
    let metrics = String::from_utf8_lossy(&metrics);
    let odd_misaligned = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("brdyun_ladder_rung_misaligned_total{stream=\"m\",rung=\"odd\"} ")
        })
        .and_then(|v| v.parse::<u64>().ok());
    assert!(odd_misaligned > Some(0), "{metrics}");
}

/// The newest segment of a rung's media playlist on `addr`: (MSN, discontinuity
/// sequence), when it lists one.
fn newest(addr: SocketAddr, rung: &str) -> Option<(u64, u64)> {
    let (status, _, body) = common::http_get_as_node(addr, &playlist(rung));
    if status != 200 {
        return None;
    }
    common::parse_media_playlist(&String::from_utf8_lossy(&body))
        .last()
        .map(|e| (e.msn, e.discontinuity_seq))
}

#[test]
fn a_killed_encoder_costs_the_rungs_one_discontinuity_and_the_source_nothing() {
    let cluster = start_mc_and_node(ENCODED_LADDER);
    let (mc, node) = (&cluster.mc, cluster.node());
    let _publisher = publish_meeting(mc);
    let admin = [ADMIN];
    wait_for("every rung on the node", Duration::from_secs(40), || {
        RUNGS
            .iter()
            .all(|r| newest(node.http, r).is_some())
            .then_some(())
    });
    let (_, status) = http_request(mc.http, "GET", "/api/streams/m", &admin, "");
    let pid = status["ladder"]["pid"].as_u64().expect("the encoder's pid");
    let before: Vec<(u64, u64)> = RUNGS
        .iter()
        .map(|r| newest(node.http, r).expect("listed"))
        .collect();
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());

    // The MC logs the exit (110002) and starts another encoder.
    let status = wait_for(
        "the MC to restart the encoder",
        Duration::from_secs(20),
        || {
            let (_, status) = http_request(mc.http, "GET", "/api/streams/m", &admin, "");
            (status["ladder"]["starts"].as_u64() >= Some(2)
                && status["ladder"]["encoder"] == "running")
                .then_some(status)
        },
    );
    assert_eq!(status["ladder"]["last_fault"]["code"], 110_002, "{status}");
    assert_ne!(status["ladder"]["pid"].as_u64(), Some(pid), "{status}");

    // On the node every rung goes on after one discontinuity; the source never stops.
    let after = wait_for(
        "the rungs to go on after the restart",
        Duration::from_secs(30),
        || {
            let now: Vec<(u64, u64)> = RUNGS
                .iter()
                .map(|r| newest(node.http, r))
                .collect::<Option<_>>()?;
            let moved_on = now
                .iter()
                .zip(&before)
                .all(|((msn, _), (was, _))| *msn >= was + 4);
            moved_on.then_some(now)
        },
    );
    assert_eq!(
        after[0].1, before[0].1,
        "the source has no discontinuity: {before:?} -> {after:?}"
    );
    for (i, rung) in RUNGS.iter().enumerate().skip(1) {
        assert_eq!(
            after[i].1,
            before[i].1 + 1,
            "{rung}: one discontinuity: {before:?} -> {after:?}"
        );
    }
    // And the ladder is offered again.
    wait_for(
        "the master to list the ladder again",
        Duration::from_secs(30),
        || {
            let (_, _, body) = http_get(node.http, "/m/index.m3u8");
            (String::from_utf8_lossy(&body)
                .matches("#EXT-X-STREAM-INF")
                .count()
                == 3)
                .then_some(())
        },
    );
}
