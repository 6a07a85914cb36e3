//! Primary and backup publish over SRT (OTT-OPS-4): a platform sends one meeting to the
//! MC's SRT port twice, as `<meeting>` and as `<meeting>@backup`. The primary publisher
//! is killed mid-meeting (kill -9: its SRT connection goes silent, it is not closed);
//! the backup takes over with no discontinuity when both send the same MPEG-TS, and
//! with exactly one when they are two encoders.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    ffmpeg_source, free_udp_port, http_request, parse_media_playlist, parse_pdt, start_role,
    wait_for, ChildGuard, NodeProcess, PlaylistEntry,
};

const ADMIN: &str = "admin-secret-for-these-tests";

/// The meeting's media playlist on the MC (its files are for nodes: the node token).
fn playlist(mc: &NodeProcess) -> Option<String> {
    let (status, _, body) = common::http_get_as_node(mc.http, "/m/mono.m3u8");
    (status == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

/// An MC with SRT on `srt` and the started meeting `m`, its inputs' timeouts the
/// defaults (a silent publish input is taken over after `publish_timeout`, 1 s).
fn start_mc(dir: &Path, srt: SocketAddr) -> NodeProcess {
    let config = format!(
        "[mc]\nhttp = \"127.0.0.1:0\"\nsrt = \"{srt}\"\ndata_dir = \"{}\"\nadmin_token = \"{ADMIN}\"\nnode_token = \"{}\"\n[defaults]\nsegment_duration = 1\n[[meeting]]\nid = \"m\"\nstart = true\nladder = false\n",
        dir.join("mc-data").display(),
        common::NODE_TOKEN
    );
    start_role(dir, "mc", "mc", &config)
}

fn admin_get(mc: &NodeProcess, path: &str) -> (u16, serde_json::Value) {
    let auth = format!("Bearer {ADMIN}");
    http_request(
        mc.http,
        "GET",
        path,
        &[("Authorization", auth.as_str())],
        "",
    )
}

fn stream_key(mc: &NodeProcess) -> String {
    let (status, meeting) = admin_get(mc, "/api/meetings/m");
    assert_eq!(status, 200, "{meeting}");
    meeting["stream_key"]
        .as_str()
        .expect("stream_key")
        .to_owned()
}

/// The SRT URL of publish name `name` (`m` or `m@backup`), 120 ms latency.
fn srt_url(srt: SocketAddr, name: &str, key: &str) -> String {
    format!("srt://{srt}?streamid={name}?key={key}&latency=120000&pkt_size=1316")
}

/// Encodes `seconds` of the test pattern and tone (H.264 with B-frames, a keyframe
/// every 2 s as platforms send, AAC) to MPEG-TS at `path`, faster than real time.
fn encode_fixture(path: &Path, seconds: u32) {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error", "-y"])
        .args(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25"])
        .args(["-f", "lavfi", "-i", "sine=frequency=440"])
        .args([
            "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-bf", "2",
        ])
        .args(["-c:a", "aac", "-t", &seconds.to_string(), "-f", "mpegts"])
        .arg(path);
    let (status, stderr) =
        ChildGuard::spawn("ffmpeg fixture", &mut cmd).finish(Duration::from_secs(60));
    assert!(status.success(), "encoding the fixture: {stderr}");
}

/// ffmpeg sending `fixture` in real time, as is, to `url`: two of these send the same
/// frames with the same timestamps, as one encoder's two outputs do.
fn copy_publisher(what: &str, fixture: &Path, url: &str) -> ChildGuard {
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
    ChildGuard::spawn(what, &mut cmd)
}

/// The meeting's inputs on the MC: the active index, and each input's state and
/// whether it has an SRT link.
type Inputs = (Option<u64>, Vec<(String, bool)>);

fn inputs(mc: &NodeProcess) -> Option<Inputs> {
    let (status, doc) = admin_get(mc, "/api/streams/m");
    if status != 200 {
        return None;
    }
    let list = doc["inputs"]["inputs"]
        .as_array()?
        .iter()
        .map(|i| {
            let state = i["state"].as_str().unwrap_or_default().to_owned();
            (state, i["link"].is_object())
        })
        .collect();
    Some((doc["inputs"]["active"].as_u64(), list))
}

/// Waits until the primary (input 0) is active, the backup (input 1) live, both over
/// SRT, and the MC has cut 3 segments; returns the newest.
fn wait_primary_cutting(mc: &NodeProcess) -> PlaylistEntry {
    wait_for(
        "the primary active, the backup live, both over SRT",
        Duration::from_secs(30),
        || {
            let (active, list) = inputs(mc)?;
            let both_srt = list.len() >= 2 && list[0].1 && list[1].1;
            (active == Some(0) && list[1].0 == "live" && both_srt).then_some(())
        },
    );
    wait_for("segments from the primary", Duration::from_secs(20), || {
        let entries = parse_media_playlist(&playlist(mc)?);
        (entries.len() >= 3)
            .then(|| entries.last().cloned())
            .flatten()
    })
}

/// Waits until the backup is active and `more` segments newer than `before` are
/// listed; returns the playlist and how long the takeover took from `killed`.
fn after_takeover(
    mc: &NodeProcess,
    before: &PlaylistEntry,
    more: u64,
    killed: Instant,
) -> (String, Duration) {
    let took = wait_for("the backup active", Duration::from_secs(20), || {
        let (active, _) = inputs(mc)?;
        (active == Some(1)).then(|| killed.elapsed())
    });
    let text = wait_for("segments from the backup", Duration::from_secs(30), || {
        let text = playlist(mc)?;
        let last = parse_media_playlist(&text).last()?.msn;
        (last >= before.msn + more).then_some(text)
    });
    (text, took)
}

/// MSNs without a gap; the largest gap (ms) between a segment's end and the next one's
/// date within a discontinuity period.
fn check_entries(entries: &[PlaylistEntry], text: &str) -> i64 {
    let mut largest = 0;
    for pair in entries.windows(2) {
        assert_eq!(pair[1].msn, pair[0].msn + 1, "a missing segment:\n{text}");
        if pair[0].discontinuity_seq != pair[1].discontinuity_seq {
            continue;
        }
        let duration: f64 = pair[0]
            .extinf
            .trim_end_matches(',')
            .parse()
            .expect("extinf");
        let end = parse_pdt(&pair[0].program_date_time) + (duration * 1000.0).round() as i64;
        largest = largest.max((parse_pdt(&pair[1].program_date_time) - end).abs());
    }
    largest
}

#[test]
fn the_same_feed_on_the_backup_slot_takes_over_with_no_discontinuity() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("meeting.ts");
    encode_fixture(&fixture, 40);
    let srt = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    // A killed SRT publisher goes silent rather than away (SRT notices after its 5-s
    // peer idle timeout): the backup must take over while the standby's replay (from
    // the keyframe before its last, 2 to 4 s back here) still reaches back to where
    // the primary stopped: the default publish_timeout, 1 s, is well within it.
    let mc = start_mc(dir.path(), srt);
    let key = stream_key(&mc);
    let primary = copy_publisher("primary", &fixture, &srt_url(srt, "m", &key));
    let _backup = copy_publisher("backup", &fixture, &srt_url(srt, "m@backup", &key));
    let before = wait_primary_cutting(&mc);
    let killed = Instant::now();
    let _ = primary.kill();
    let (text, took) = after_takeover(&mc, &before, 4, killed);
    let entries = parse_media_playlist(&text);
    let step = check_entries(&entries, &text);
    let last = entries.last().expect("segments");
    eprintln!("same feed: the backup active {took:?} after the kill, largest PDT step {step} ms");
    assert_eq!(
        last.discontinuity_seq, before.discontinuity_seq,
        "the same feed continues the timeline:\n{text}"
    );
    assert!(step <= 1, "a PDT step of {step} ms:\n{text}");
}

#[test]
fn two_encoders_on_the_two_slots_fail_over_with_exactly_one_discontinuity() {
    let dir = tempfile::tempdir().unwrap();
    let srt = SocketAddr::from(([127, 0, 0, 1], free_udp_port()));
    let mc = start_mc(dir.path(), srt);
    let key = stream_key(&mc);
    let primary = ChildGuard::spawn(
        "primary encoder",
        &mut ffmpeg_source(90, "mpegts", &srt_url(srt, "m", &key)),
    );
    // Another encoder, started once the primary is live: its timestamps are its own.
    wait_for("the primary live", Duration::from_secs(30), || {
        let (_, list) = inputs(&mc)?;
        (list.first()?.0 == "live").then_some(())
    });
    // Another pattern and tone: an encoder of the primary's pattern would send
    // byte-identical frames at the same timestamps, which is the same feed.
    let mut backup = common::ffmpeg_encoder(90, "testsrc", 880);
    backup
        .args(["-f", "mpegts"])
        .arg(srt_url(srt, "m@backup", &key));
    let _backup = ChildGuard::spawn("backup encoder", &mut backup);
    let before = wait_primary_cutting(&mc);
    let killed = Instant::now();
    let _ = primary.kill();
    let (text, took) = after_takeover(&mc, &before, 4, killed);
    let entries = parse_media_playlist(&text);
    check_entries(&entries, &text);
    eprintln!("two encoders: the backup active {took:?} after the kill");
    let last = entries.last().expect("segments");
    assert_eq!(
        last.discontinuity_seq,
        before.discontinuity_seq + 1,
        "another encoder's timestamps start exactly one new period:\n{text}"
    );
}
