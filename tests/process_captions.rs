//! Live captions at process level: a real `brdyun mc` fed by
//! `builtin://meeting` (whose video carries CEA-608) and real `brdyun node` processes
//! on loopback. Cues posted to the MC's caption API reach every node in the segments,
//! as byte-identical subtitle files (OTT-GRP-4) at the times the API answered, in
//! every subtitle rendition (OTT-PROT-4); catch-up and transcripts hold a period's
//! cues; every bad request gets its code and loses nothing.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::cluster::{Cluster, ADMIN};
use common::{
    http_get_as_node, http_request, http_request_bytes, parse_media_playlist, parse_pdt, wait_for,
    ChildGuard,
};
use media::captions::sei::{cc_pairs, CcCodec};
use serde_json::{json, Value};

const MEETING: &str = "m";
const TRACKS: [&str; 3] = ["en", "pt-br", "cc1"];
const PTS_WRAP: u64 = 1 << 33;
/// How long each cue of the flood lasts, ms.
const FLOOD_MS: u64 = 8_000;

/// An MC with `presets` and `nodes` nodes following it (with DVR when `dvr`), once
/// the meeting plays on each.
fn start(presets: &str, nodes: usize, dvr: bool) -> Cluster {
    let names: Vec<String> = (0..nodes).map(|i| format!("node-{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut builder = Cluster::mc().sections(presets).nodes(&names);
    if dvr {
        builder = builder.dvr("dvr = { enabled = true, depth = \"1h\" }");
    }
    let cluster = builder.start();
    for server in servers(&cluster) {
        wait_for("the meeting to play", Duration::from_secs(30), || {
            last_msn(server, "mono.m3u8")
        });
    }
    cluster
}

/// The MC first, then the nodes.
fn servers(cluster: &Cluster) -> Vec<SocketAddr> {
    std::iter::once(cluster.mc.http)
        .chain(cluster.nodes.iter().map(|n| n.http))
        .collect()
}

fn preset(id: &str, live: bool) -> String {
    let live = if live {
        "start = true\ninputs = [\"builtin://meeting\"]\n"
    } else {
        ""
    };
    format!("[[meeting]]\nid = \"{id}\"\n{live}")
}

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    i64::try_from(since.as_millis()).expect("ms")
}

/// A file of the meeting: its bytes when the server answers 200.
fn file(server: SocketAddr, name: &str) -> Option<Vec<u8>> {
    let (status, _, body) = http_get_as_node(server, &format!("/{MEETING}/{name}"));
    (status == 200).then_some(body)
}

fn text(server: SocketAddr, name: &str) -> String {
    let body = file(server, name).unwrap_or_else(|| panic!("{server} has no {name}"));
    String::from_utf8(body).expect("utf-8")
}

/// The segments of a playlist of the meeting, each with its date (Unix ms).
fn segments(server: SocketAddr, playlist: &str) -> Vec<(u64, i64, String)> {
    let body = file(server, playlist).unwrap_or_default();
    parse_media_playlist(&String::from_utf8_lossy(&body))
        .into_iter()
        .map(|e| (e.msn, parse_pdt(&e.program_date_time), e.uri))
        .collect()
}

fn last_msn(server: SocketAddr, playlist: &str) -> Option<u64> {
    segments(server, playlist).last().map(|s| s.0)
}

/// Whether a live WebVTT file of `track` on `server` holds `needle`.
fn live_has(server: SocketAddr, track: &str, needle: &str) -> bool {
    segments(server, &format!("sub-{track}.m3u8"))
        .iter()
        .any(|s| String::from_utf8_lossy(&file(server, &s.2).unwrap_or_default()).contains(needle))
}

/// Posts a caption request to the MC as the admin.
fn post(mc: SocketAddr, meeting: &str, body: &Value) -> (u16, Value) {
    let path = format!("/api/meetings/{meeting}/captions");
    http_request(mc, "POST", &path, &[ADMIN], &body.to_string())
}

fn one_cue(language: &str, text: &str, duration_ms: u64) -> Value {
    json!({"language": language, "cues": [{"text": text, "duration_ms": duration_ms}]})
}

/// Where the API placed a cue.
#[derive(Debug, Clone)]
struct Placed {
    text: String,
    track: String,
    start_pts: u64,
    start_ms: i64,
    end_ms: i64,
}

/// Posts one cue of 1.5 s at the live edge and returns where it landed (asserting 201).
fn place(mc: SocketAddr, language: &str, name: &str, text: &str) -> Placed {
    let request = json!({"language": language, "name": name,
        "cues": [{"text": text, "duration_ms": 1500}]});
    let (status, body) = post(mc, MEETING, &request);
    assert_eq!(status, 201, "{text}: {body}");
    placed_of(language, text, &body)
}

/// Where a 201 answer says its (one) cue landed.
fn placed_of(language: &str, text: &str, body: &Value) -> Placed {
    assert_eq!(body["track"]["id"], language.to_ascii_lowercase());
    let cue = &body["cues"][0];
    Placed {
        text: text.to_owned(),
        track: language.to_ascii_lowercase(),
        start_pts: cue["start_pts"].as_u64().expect("start_pts"),
        start_ms: cue["start_ms"].as_i64().expect("start_ms"),
        end_ms: cue["end_ms"].as_i64().expect("end_ms"),
    }
}

/// A WebVTT file: its `X-TIMESTAMP-MAP` MPEGTS (if any) and its cues as
/// (start ms, text) with times as written.
fn vtt_cues(vtt: &str) -> (Option<u64>, Vec<(i64, String)>) {
    let map = vtt
        .lines()
        .find_map(|l| l.strip_prefix("X-TIMESTAMP-MAP=MPEGTS:"))
        .and_then(|v| v.split(',').next()?.parse().ok());
    let mut cues = Vec::new();
    let mut lines = vtt.lines();
    while let Some(line) = lines.next() {
        let Some((start, _)) = line.split_once(" --> ") else {
            continue;
        };
        let n: Vec<i64> = start
            .split([':', '.'])
            .map(|p| p.parse().expect("cue time"))
            .collect();
        let ms = ((n[0] * 60 + n[1]) * 60 + n[2]) * 1000 + n[3];
        let body: Vec<&str> = lines.by_ref().take_while(|l| !l.is_empty()).collect();
        cues.push((ms, body.join("\n")));
    }
    (map, cues)
}

/// Waits until `playlist` on every server lists a segment dated at or after `ms`.
fn wait_cut_past(servers: &[SocketAddr], playlist: &str, ms: i64) {
    for &server in servers {
        let past = || segments(server, playlist).iter().any(|s| s.1 >= ms);
        let what = format!("{playlist} on {server} past {ms}");
        wait_for(&what, Duration::from_secs(30), || past().then_some(()));
    }
}

/// The live WebVTT files of `track` on `server`: (msn → segment date, text).
fn track_files(server: SocketAddr, track: &str) -> BTreeMap<u64, (i64, String)> {
    segments(server, &format!("sub-{track}.m3u8"))
        .into_iter()
        .filter_map(|(msn, date, uri)| {
            let vtt = String::from_utf8(file(server, &uri)?).expect("utf-8");
            assert!(vtt.starts_with("WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:"), "{vtt}");
            Some((msn, (date, vtt)))
        })
        .collect()
}

/// Every MSN `playlist` lists on every server.
fn common_msns(servers: &[SocketAddr], playlist: &str) -> BTreeSet<u64> {
    let msns = |s| segments(s, playlist).into_iter().map(|e| e.0).collect();
    let mut sets = servers.iter().map(|&s| msns(s));
    let first = sets.next().expect("a server");
    sets.fold(first, |a, b| a.intersection(&b).copied().collect())
}

/// `a - b` on the 33-bit PTS clock, as a distance.
fn pts_distance(a: u64, b: u64) -> u64 {
    let d = a.wrapping_sub(b) % PTS_WRAP;
    d.min(PTS_WRAP - d)
}

/// Checks that `cue` first appears where the API said: its segment's MPEGTS map plus
/// its local time is `start_pts` (within 1 ms), its segment's date plus its local time
/// is `start_ms` (within 2 ms). `files` are (msn → date, WebVTT) of its track.
fn assert_placed(cue: &Placed, files: &BTreeMap<u64, (i64, String)>) -> u64 {
    let (msn, (date, local)) = files
        .iter()
        .find_map(|(msn, (date, vtt))| {
            let (map, cues) = vtt_cues(vtt);
            let local = cues.iter().find(|c| c.1 == cue.text)?.0;
            Some((*msn, (*date, (map.expect("X-TIMESTAMP-MAP"), local))))
        })
        .unwrap_or_else(|| panic!("{cue:?} is in no {} file", cue.track));
    let (map, local) = local;
    let pts = (map + local as u64 * 90) % PTS_WRAP;
    assert!(
        pts_distance(pts, cue.start_pts) <= 90,
        "{cue:?}: at PTS {pts} in segment {msn}"
    );
    assert!(
        (date + local - cue.start_ms).abs() <= 2,
        "{cue:?}: at {} in segment {msn} ({date})",
        date + local
    );
    msn
}

/// OTT-GRP-4, OTT-PROT-4: the subtitle files of every track are the same
/// bytes on the MC and both nodes, each posted cue is where the API said, the master
/// playlist and MPD list the renditions, ffprobe reads the WebVTT, and the nodes' video
/// still carries the 608 SEI.
#[test]
fn captions_are_identical_on_every_node_and_placed_where_the_api_said() {
    let cluster = start(&preset(MEETING, true), 2, true);
    let servers = servers(&cluster);
    let mc = cluster.mc.http;
    let mut placed = Vec::new();
    for i in 0..4 {
        placed.push(place(mc, "en", "English", &format!("English cue {i}")));
        if i % 2 == 1 {
            placed.push(place(mc, "pt-BR", "Português", &format!("Legenda {i}")));
        }
        std::thread::sleep(Duration::from_millis(1200));
    }
    let last_end = placed.iter().map(|p| p.end_ms).max().expect("cues");
    wait_cut_past(&servers, "sub-en.m3u8", last_end + 1000);
    // Every track's files, byte for byte, on every server.
    let mut compared = BTreeMap::new();
    for track in TRACKS {
        let msns = common_msns(&servers, &format!("sub-{track}.m3u8"));
        assert!(msns.len() >= 5, "{track}: common segments {msns:?}");
        for msn in &msns {
            for name in [
                format!("sub-{track}-{msn}.vtt"),
                format!("sub-{track}-{msn}.m4s"),
            ] {
                let on_mc = file(mc, &name).unwrap_or_else(|| panic!("mc lacks {name}"));
                for &node in &servers[1..] {
                    assert!(file(node, &name) == Some(on_mc.clone()), "{name} on {node}");
                }
            }
        }
        compared.insert(track, msns);
    }
    // Each cue where the API said, in a segment compared above.
    let files: BTreeMap<&str, _> = TRACKS.iter().map(|&t| (t, track_files(mc, t))).collect();
    let cue_msns: Vec<u64> = placed
        .iter()
        .map(|cue| {
            let msn = assert_placed(cue, &files[cue.track.as_str()]);
            assert!(compared[cue.track.as_str()].contains(&msn), "{cue:?}");
            msn
        })
        .collect();
    assert!(
        files["cc1"]
            .values()
            .any(|(_, v)| !vtt_cues(v).1.is_empty()),
        "no decoded 608 cue"
    );
    // The renditions are listed in the master playlist and the MPD.
    let master = text(cluster.nodes[0].http, "index.m3u8");
    for (language, name, uri) in [
        ("en", "English", "sub-en"),
        ("pt-BR", "Português", "sub-pt-br"),
        ("en", "CC1", "sub-cc1"),
    ] {
        let fields = [
            format!("LANGUAGE=\"{language}\""),
            format!("NAME=\"{name}\""),
            format!("URI=\"{uri}.m3u8\""),
        ];
        assert!(
            master
                .lines()
                .any(|l| l.starts_with("#EXT-X-MEDIA:TYPE=SUBTITLES")
                    && fields.iter().all(|f| l.contains(f.as_str()))),
            "{uri} not listed:\n{master}"
        );
    }
    assert!(
        master.contains("TYPE=CLOSED-CAPTIONS") && master.contains("INSTREAM-ID=\"CC1\""),
        "{master}"
    );
    let mpd = text(cluster.nodes[1].http, "index.mpd");
    assert_eq!(mpd.matches("codecs=\"wvtt\"").count(), 3, "{mpd}");
    // ffprobe reads a cue's segment as WebVTT: a packet at the cue's local time.
    let (_, vtt) = &files["en"][&cue_msns[0]];
    let path = cluster.dir.path().join("cue.vtt");
    std::fs::write(&path, vtt).expect("write vtt");
    let local_ms = vtt_cues(vtt).1[0].0;
    assert_eq!(
        ffprobe_packet_ms(cluster.dir.path(), &path),
        local_ms,
        "{vtt}"
    );
    // The video on the node still carries the 608 SEI.
    let node = cluster.nodes[0].http;
    let with_608 = segments(node, "mono.m3u8")
        .iter()
        .filter(|(_, _, uri)| {
            let ts = file(node, uri).unwrap_or_default();
            media::ts::demux_frames(&ts).iter().any(|f| {
                f.codec == media::Codec::H264 && !cc_pairs(CcCodec::H264, &f.data).is_empty()
            })
        })
        .count();
    assert!(with_608 > 0, "no segment of the node carries 608 SEI");
}

/// The first packet's time ffprobe reads in a WebVTT file, ms.
fn ffprobe_packet_ms(dir: &Path, path: &Path) -> i64 {
    let output = dir.join("ffprobe.csv");
    let mut cmd = std::process::Command::new("ffprobe");
    cmd.args("-v error -show_entries packet=pts_time -of csv=p=0".split(' '))
        .arg(path)
        .arg("-o")
        .arg(&output);
    let (status, stderr) = ChildGuard::spawn("ffprobe", &mut cmd).finish(Duration::from_secs(20));
    assert!(status.success() && stderr.is_empty(), "ffprobe: {stderr}");
    let out = std::fs::read_to_string(&output).expect("ffprobe output");
    let first = out
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no packet: {out}"));
    (first.trim().parse::<f64>().expect("pts_time") * 1000.0).round() as i64
}

/// OTT-PROT-4: a period's transcript and catch-up subtitles hold the cues of
/// that period and nothing after it.
#[test]
fn a_period_transcript_and_catch_up_hold_that_periods_cues_only() {
    let cluster = start(&preset(MEETING, true), 1, true);
    let (mc, node) = (cluster.mc.http, cluster.nodes[0].http);
    let a = place(mc, "en", "English", "Cue A, inside the period");
    // The period ends a few whole seconds after A; B is placed once the live edge is
    // a few seconds past that end (more than a segment), so no segment of the period
    // can hold it.
    let end_secs = a.end_ms / 1000 + 3;
    wait_cut_past(&[node], "sub-en.m3u8", (end_secs + 3) * 1000);
    let b = place(mc, "en", "English", "Cue B, after the period");
    assert!(
        a.end_ms < end_secs * 1000 && b.start_ms > end_secs * 1000,
        "{a:?} {b:?}"
    );
    wait_for("cue B on the node", Duration::from_secs(20), || {
        live_has(node, "en", &b.text).then_some(())
    });
    let (from, duration) = (end_secs - 20, 20);
    let period = format!("{from}-{duration}");
    let transcript = wait_for("the transcript", Duration::from_secs(10), || {
        file(node, &format!("captions-en-{period}.vtt"))
            .map(|b| String::from_utf8(b).expect("utf-8"))
            .filter(|t| t.contains(&a.text))
    });
    assert!(!transcript.contains(&b.text), "{transcript}");
    let (map, cues) = vtt_cues(&transcript);
    assert_eq!(map, None, "a transcript has no timestamp map");
    let at = cues.iter().find(|c| c.1 == a.text).expect("cue A").0;
    assert!(
        (at - (a.start_ms - from * 1000)).abs() <= 10,
        "A at {at} ms:\n{transcript}"
    );
    // The catch-up master lists the period's subtitle playlist, whose files hold A.
    let master = text(node, &format!("index-{period}.m3u8"));
    let playlist = format!("sub-en-{period}.m3u8");
    assert!(master.contains(&format!("URI=\"{playlist}\"")), "{master}");
    let archived: String = segments(node, &playlist)
        .iter()
        .map(|(_, _, uri)| {
            // Archive playlists count segments by ordinal; the names keep the live MSN.
            let msn = uri
                .strip_prefix("dvr-sub-en-")
                .and_then(|u| u.strip_suffix(".vtt"));
            assert!(msn.is_some_and(|n| n.parse::<u64>().is_ok()), "{uri}");
            text(node, uri)
        })
        .collect();
    assert!(archived.contains(&a.text), "{archived}");
    assert!(!archived.contains(&b.text), "{archived}");
}

/// Asserts a refusal: HTTP status, code and field.
fn assert_refused(answer: (u16, Value), status: u16, code: u64, field: &str) {
    let (got, body) = answer;
    let got = (got, body["code"].as_u64(), body["field"].as_str());
    assert_eq!(got, (status, Some(code), Some(field)), "{body}");
}

/// Posts each (meeting, request) and asserts its refusal (status, code, field).
fn assert_refusals(mc: SocketAddr, cases: &[(&str, Value, u16, u64, &str)]) {
    for (meeting, request, status, code, field) in cases {
        assert_refused(post(mc, meeting, request), *status, *code, field);
    }
}

/// Every bad caption request gets its code (112001–112009, 401), a flood is
/// refused with 429, and afterwards a cue still reaches the nodes while the meeting
/// plays on.
#[test]
fn bad_captions_get_their_codes_and_lose_nothing() {
    let presets = format!("{}{}", preset(MEETING, true), preset("idle", false));
    let cluster = start(&presets, 2, false);
    let servers = servers(&cluster);
    let mc = cluster.mc.http;
    let path = format!("/api/meetings/{MEETING}/captions");
    let good = one_cue("en", "fine", 1500).to_string();
    assert_eq!(http_request(mc, "POST", &path, &[], &good).0, 401);
    let wrong = ("Authorization", "Bearer wrong");
    assert_eq!(http_request(mc, "POST", &path, &[wrong], &good).0, 401);
    let raw = http_request_bytes(
        mc,
        "POST",
        &path,
        &[ADMIN, ("Content-Type", "application/json")],
        &[0xff, 0xfe],
    );
    assert_refused(raw, 400, 112_001, "body");
    let many: Vec<Value> = (0..21).map(|i| json!({"text": format!("c{i}")})).collect();
    #[rustfmt::skip]
    let cases = [
        (MEETING, one_cue("en", &"x".repeat(301), 1500), 400, 112_001, "cues[0].text"),
        (MEETING, one_cue("english", "hi", 1500), 400, 112_002, "language"),
        (MEETING, one_cue("en", "hi", 0), 400, 112_003, "cues[0].duration_ms"),
        (MEETING, json!({"language": "en", "cues": many}), 400, 112_009, "cues"),
        ("idle", one_cue("en", "hi", 1500), 409, 112_008, "id"),
    ];
    assert_refusals(mc, &cases);
    // Tracks: 8 at most, the decoded 608 track included.
    let cc1 = || text(mc, "index.m3u8").contains("URI=\"sub-cc1.m3u8\"");
    wait_for("the 608 track", Duration::from_secs(20), || {
        cc1().then_some(())
    });
    let existing = text(mc, "index.m3u8").matches("TYPE=SUBTITLES").count();
    let languages = ["en", "de", "fr", "es", "it", "ja", "ko", "nl", "sv"];
    let room = 8 - existing;
    for (i, language) in languages.iter().enumerate() {
        let request = one_cue(language, &format!("in {language}"), 1500);
        let answer = post(mc, MEETING, &request);
        if i < room {
            assert_eq!(answer.0, 201, "{language}: {}", answer.1);
        } else {
            assert_refused(answer, 409, 112_006, "cues[0]");
        }
    }
    // Dates out of reach: behind what is cut, or too far ahead.
    let at = |ms: i64| json!({"language": "en", "cues": [{"text": "t", "at_ms": now_ms() + ms}]});
    let cases = [(MEETING, at(-60_000), 409, 112_004, "cues[0]")];
    assert_refusals(mc, &cases);
    let cases = [(MEETING, at(120_000), 409, 112_005, "cues[0]")];
    assert_refusals(mc, &cases);
    // A flood: 40 requests of 20 long cues at once; some are refused with 429.
    let flood: Vec<(u16, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..40)
            .map(|r| {
                s.spawn(move || {
                    let cues: Vec<Value> = (0..20)
                        .map(|c| json!({"text": format!("flood {r}.{c}"), "duration_ms": FLOOD_MS}))
                        .collect();
                    post(mc, MEETING, &json!({"language": "en", "cues": cues}))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("flood"))
            .collect()
    });
    assert!(
        flood.iter().any(|(s, b)| *s == 429 && b["code"] == 112_007),
        "no flood refusal: {flood:?}"
    );
    // A request refused at cues[k] placed the k cues before it.
    let flooded: usize = flood
        .iter()
        .map(|(status, body)| match status {
            201 => 20,
            _ => body["field"]
                .as_str()
                .and_then(|f| f.strip_prefix("cues[")?.strip_suffix(']')?.parse().ok())
                .expect("field"),
        })
        .sum();
    let flood_end = now_ms() + FLOOD_MS as i64;
    // Afterwards a cue is placed (at the latest once the flood's cues are cut), and
    // every server keeps cutting segments.
    let before: Vec<u64> = servers
        .iter()
        .map(|&s| last_msn(s, "mono.m3u8").expect("playing"))
        .collect();
    let limit = Duration::from_secs(FLOOD_MS / 1000 + 20);
    let after = wait_for("a cue after the flood", limit, || {
        let (status, body) = post(mc, MEETING, &one_cue("en", "after the flood", 1500));
        (status != 429).then_some((status, body))
    });
    assert_eq!(after.0, 201, "{}", after.1);
    let after = placed_of("en", "after the flood", &after.1);
    wait_cut_past(&servers, "sub-en.m3u8", flood_end.max(after.end_ms) + 1000);
    // Nothing placed is lost: every server carries every flood cue placed, and the cue
    // after the flood from where the API said.
    for (&server, before) in servers.iter().zip(before) {
        assert!(
            last_msn(server, "mono.m3u8").expect("playing") > before,
            "{server} stalled"
        );
        let files = track_files(server, "en");
        let carried: BTreeSet<&str> = files
            .values()
            .flat_map(|(_, vtt)| vtt.lines().filter(|l| l.starts_with("flood ")))
            .collect();
        assert_eq!(
            carried.len(),
            flooded,
            "flood cues placed and carried on {server}"
        );
        assert_placed(&after, &files);
    }
}
