//! An interpreter's own feed at process level: a meeting's floor is published to the MC
//! over RTMP by ffmpeg (a test pattern and a 440 Hz tone), and its Spanish interpreter
//! publishes audio alone (an 880 Hz tone) to `live/m@audio-spa` with the meeting's key —
//! starting late, dropping out and coming back. The MC places the feed on the meeting's
//! timeline by its arrival; a node following the MC plays Spanish from its master as the
//! interpreter's tone, on the video's segments; while the interpreter is away the floor
//! plays on and the language's segments are silence, written with the video's (no gap
//! mark, no wait), in every format.

mod common;

use std::process::Command;
use std::time::Duration;

use common::cluster::{stream_key, Cluster, ADMIN};
use common::tones::{assert_tone, decoded, tone_of};
use common::{
    ffmpeg_source, http_get, http_request, parse_media_playlist, wait_for, ChildGuard, NodeProcess,
};

/// The meeting: English floor, Spanish from an interpreter placed as it arrives.
const MEETING: &str = r#"[[meeting]]
id = "m"
start = true
ladder = false
[[meeting.language]]
code = "eng"
[[meeting.language]]
code = "spa"
name = "Español"
interpreter = true
"#;

/// ffmpeg publishing `seconds` of an 880 Hz tone, audio only, as the interpreter does.
fn interpreter(url: &str, seconds: u32) -> Command {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error"])
        .args([
            "-re",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=880:sample_rate=48000",
        ])
        .args(["-c:a", "aac", "-b:a", "64k", "-t", &seconds.to_string()])
        .args(["-f", "flv", url]);
    cmd
}

fn get_text(node: &NodeProcess, path: &str) -> Option<String> {
    let (status, _, body) = http_get(node.http, path);
    (status == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

/// The MC's status of the meeting's Spanish: its `interpreter` object.
fn interpreter_status(mc: &NodeProcess) -> serde_json::Value {
    let (status, doc) = http_request(mc.http, "GET", "/api/streams/m", &[ADMIN], "");
    assert_eq!(status, 200, "{doc}");
    doc["languages"][1]["interpreter"].clone()
}

/// The MSNs of Spanish's media playlist on the node; none is marked `#EXT-X-GAP`.
fn spanish(node: &NodeProcess) -> Vec<u64> {
    let Some(text) = get_text(node, "/m/audio-spa/mono.m3u8") else {
        return Vec::new();
    };
    assert_eq!(gap_msns(&text), Vec::<u64>::new(), "{text}");
    parse_media_playlist(&text)
        .into_iter()
        .map(|e| e.msn)
        .collect()
}

/// The newest MSN of the node's video playlist.
fn newest_video_msn(node: &NodeProcess) -> u64 {
    let text = get_text(node, "/m/mono.m3u8").expect("video playlist");
    parse_media_playlist(&text)
        .last()
        .map(|e| e.msn)
        .expect("a video segment")
}

/// The MSNs of a media playlist's segments marked `#EXT-X-GAP`.
fn gap_msns(text: &str) -> Vec<u64> {
    let mut msn = text
        .lines()
        .find_map(|l| l.strip_prefix("#EXT-X-MEDIA-SEQUENCE:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mut gap = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line == "#EXT-X-GAP" {
            gap = true;
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            if gap {
                out.push(msn);
            }
            gap = false;
            msn += 1;
        }
    }
    out
}

/// Spanish's DASH file of the span `msn` the interpreter was away for is silence over
/// the segment's span (the same bytes on the node as on the MC), and the live MPD lists
/// Spanish through the span.
fn absence_is_silence_in_dash(node: &NodeProcess, mc: &NodeProcess, msn: u64) {
    let playlist = get_text(node, "/m/audio-spa/fmp4-a.m3u8").expect("Spanish's audio playlist");
    let init = common::last_map(&playlist);
    let media = format!("seg-{msn}-a.m4s");
    let mut bytes = Vec::new();
    for file in [init, media.as_str()] {
        let path = format!("/m/audio-spa/{file}");
        let (status, _, body) = http_get(node.http, &path);
        assert_eq!(status, 200, "{path}");
        let (_, _, on_mc) = common::http_get_as_node(mc.http, &path);
        assert_eq!(body, on_mc, "{path}: the node's bytes are the MC's");
        bytes.extend(body);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("away.mp4");
    std::fs::write(&file, bytes).unwrap();
    let samples = decoded(&file.display().to_string(), &[], 10);
    let extinf: f64 = parse_media_playlist(&get_text(node, "/m/audio-spa/mono.m3u8").expect("spa"))
        .iter()
        .find(|e| e.msn == msn)
        .map(|e| e.extinf.trim_end_matches(',').parse().expect("EXTINF"))
        .expect("the span in Spanish's playlist");
    let seconds = samples.len() as f64 / 48_000.0;
    assert!(
        (seconds - extinf).abs() <= 1024.0 / 48_000.0,
        "the absence's audio lasts {seconds} s, its segment {extinf} s"
    );
    assert!(
        samples.iter().all(|s| *s == 0),
        "the absence is silence: peak {:?}",
        samples.iter().map(|s| s.unsigned_abs()).max()
    );
    // The span is written with the video's segment: the live MPD lists Spanish through
    // the absence (a DASH player that picked it hears silence, and the interpreter again
    // when they return).
    let mpd = get_text(node, "/m/index.mpd").expect("the MPD");
    let numbered = mpd
        .split("<AdaptationSet id=\"200\"")
        .skip(1)
        .filter_map(|set| {
            let set = &set[..set.find("</AdaptationSet>")?];
            let start = set.split("startNumber=\"").nth(1)?.split('"').next()?;
            let start: u64 = start.parse().ok()?;
            let count: u64 = set
                .split("<S ")
                .skip(1)
                .map(|s| {
                    1 + s
                        .split("r=\"")
                        .nth(1)
                        .and_then(|r| r.split('"').next()?.parse::<u64>().ok())
                        .filter(|_| s.find("r=\"") < s.find("/>"))
                        .unwrap_or(0)
                })
                .sum();
            Some(start..start + count)
        })
        .collect::<Vec<_>>();
    assert!(
        numbered.iter().any(|range| range.contains(&msn)),
        "Spanish's sets number {numbered:?}, the absence is {msn}:\n{mpd}"
    );
}

#[test]
fn an_interpreter_who_starts_late_drops_out_and_returns_is_placed_on_the_meeting() {
    let cluster = Cluster::mc()
        .sections(MEETING)
        .defaults(Some("segment_duration = 1\nwindow = 30\n"))
        .nodes(&["node-a"])
        .start();
    let (mc, node) = (&cluster.mc, cluster.node());
    let rtmp = cluster.mc.rtmp.expect("the MC takes RTMP");
    let key = stream_key(mc.http, "m");
    let (_, meeting) = http_request(mc.http, "GET", "/api/meetings/m", &[ADMIN], "");
    let spanish_key = meeting["interpreter_keys"]["spa"]
        .as_str()
        .unwrap_or_else(|| panic!("Spanish's interpreter key: {meeting}"))
        .to_owned();
    assert_ne!(spanish_key, key);
    let _floor = ChildGuard::spawn(
        "ffmpeg floor",
        &mut ffmpeg_source(120, "flv", &format!("rtmp://{rtmp}/live/m?key={key}")),
    );
    wait_for("the floor on the node", Duration::from_secs(40), || {
        get_text(node, "/m/mono.m3u8").filter(|p| parse_media_playlist(p).len() >= 3)
    });
    // Before the interpreter comes: the floor alone, the feed waiting.
    let master = get_text(node, "/m/index.m3u8").expect("master");
    assert!(!master.contains("TYPE=AUDIO"), "{master}");
    assert_eq!(interpreter_status(mc)["state"], "connecting");

    // The feed takes Spanish's key alone: not a wrong one, nor the meeting's stream key;
    // and Spanish's key does not publish the floor.
    for (name, wrong) in [
        ("m@audio-spa", "wrong"),
        ("m@audio-spa", key.as_str()),
        ("m", spanish_key.as_str()),
    ] {
        let (status, stderr) = ChildGuard::spawn(
            "ffmpeg with a key not for the name",
            &mut interpreter(&format!("rtmp://{rtmp}/live/{name}?key={wrong}"), 2),
        )
        .finish(Duration::from_secs(20));
        assert!(
            !status.success(),
            "{name} published with a key not its own: {stderr}"
        );
    }

    // The interpreter starts, late.
    let url = format!("rtmp://{rtmp}/live/m@audio-spa?key={spanish_key}");
    let first = ChildGuard::spawn("ffmpeg interpreter", &mut interpreter(&url, 14));
    let master = wait_for(
        "Spanish in the node's master",
        Duration::from_secs(30),
        || get_text(node, "/m/index.m3u8").filter(|m| m.contains("URI=\"audio-spa/mono.m3u8\"")),
    );
    assert!(
        master.contains("NAME=\"Español\",LANGUAGE=\"es\""),
        "{master}"
    );
    wait_for("6 Spanish segments", Duration::from_secs(30), || {
        (spanish(node).len() >= 6).then_some(())
    });
    let base = format!("http://{}/m", node.http);
    assert_tone(
        "Spanish",
        tone_of(&format!("{base}/audio-spa/mono.m3u8"), &[], 3),
        880.0,
    );
    assert_tone(
        "the floor",
        tone_of(&format!("{base}/mono.m3u8"), &[], 3),
        440.0,
    );
    assert_tone(
        "Spanish from the master",
        tone_of(
            &format!("{base}/index.m3u8"),
            &["-map", "0:a:m:language:es"],
            3,
        ),
        880.0,
    );
    let placed = interpreter_status(mc);
    assert_eq!(placed["state"], "publishing", "{placed}");
    assert_eq!(placed["publish"], "m@audio-spa", "{placed}");

    // The interpreter drops out: the floor plays on, Spanish is silence, written with
    // the video's segments (a second after the feed's last frame), never marked.
    let (status, stderr) = first.finish(Duration::from_secs(40));
    assert!(status.success(), "the interpreter's ffmpeg: {stderr}");
    let left = newest_video_msn(node);
    let away = left + 3;
    wait_for(
        "Spanish through the absence",
        Duration::from_secs(30),
        || spanish(node).contains(&(away + 2)).then_some(()),
    );
    for _ in 0..8 {
        let (spa, video) = (spanish(node), newest_video_msn(node));
        let newest = spa.last().copied().unwrap_or(0);
        assert!(
            newest + 1 >= video,
            "Spanish keeps up with the video while the interpreter is away: {newest} vs {video}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let video = get_text(node, "/m/mono.m3u8").expect("video playlist");
    assert!(
        !video.contains("#EXT-X-DISCONTINUITY\n"),
        "the floor plays on:\n{video}"
    );
    // The span is silence, as long as its segment; the MC's bytes on the node.
    let path = format!("/m/audio-spa/seg-{away}.ts");
    let (status, _, on_node) = http_get(node.http, &path);
    let (_, _, on_mc) = common::http_get_as_node(mc.http, &path);
    assert_eq!(status, 200, "{path}");
    assert_eq!(on_node, on_mc, "{path}");
    let samples = decoded(&format!("http://{}{path}", node.http), &[], 10);
    assert!(
        samples.len() > 48_000 / 2 && samples.iter().all(|s| *s == 0),
        "{path}: {} samples, peak {:?}",
        samples.len(),
        samples.iter().map(|s| s.unsigned_abs()).max()
    );
    absence_is_silence_in_dash(node, mc, away);

    // The interpreter returns, on a clock of its own that starts again at 0.
    let _second = ChildGuard::spawn("ffmpeg interpreter again", &mut interpreter(&url, 30));
    let returned = newest_video_msn(node);
    wait_for(
        "Spanish back after its absence",
        Duration::from_secs(30),
        || spanish(node).contains(&(returned + 4)).then_some(()),
    );
    assert_tone(
        "Spanish again",
        tone_of(&format!("{base}/audio-spa/mono.m3u8"), &[], 3),
        880.0,
    );

    // Every Spanish segment is on the video's MSN, duration and date.
    let video = parse_media_playlist(&get_text(node, "/m/mono.m3u8").expect("video"));
    let language = parse_media_playlist(&get_text(node, "/m/audio-spa/mono.m3u8").expect("spa"));
    let mut compared = 0;
    for entry in &language {
        if let Some(same) = video.iter().find(|v| v.msn == entry.msn) {
            assert_eq!(entry.extinf, same.extinf, "msn {}", entry.msn);
            assert_eq!(
                entry.program_date_time, same.program_date_time,
                "msn {}",
                entry.msn
            );
            compared += 1;
        }
    }
    assert!(compared >= 10, "{compared} segments compared");

    // The placement: anchored at each publish, within a few arrival jitters.
    let placed = interpreter_status(mc);
    eprintln!("interpreter placement: {placed}");
    assert!(
        placed["anchors"].as_u64().is_some_and(|a| a >= 2),
        "{placed}"
    );
    assert!(
        placed["max_error_ms"].as_u64().is_some_and(|e| e <= 250),
        "{placed}"
    );
    let (_, _, metrics) = http_get(mc.http, "/metrics");
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics
            .lines()
            .any(|l| l
                .starts_with("brdyun_stream_interpreter_error_ms{stream=\"m\",language=\"spa\"} ")),
        "no interpreter metric"
    );
}
