//! The DVR archive of a real node process (DESIGN.md invariant 6): two streams
//! record at once; ffmpeg decodes a catch-up period; after `kill -9` and a restart every
//! segment a live playlist listed before the kill is served from the archive, byte for
//! byte, or lies inside a gap the archive reports, and live numbering continues.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::mp4_check::{ffmpeg_decoded_seconds, probe};
use common::{http_get, http_get_json, parse_media_playlist, wait_for, NodeProcess};

const STREAMS: [&str; 2] = ["a", "b"];

fn config(data: &std::path::Path) -> String {
    format!(
        r#"
[node]
name = "dvr"
http = "127.0.0.1:0"
data_dir = "{}"
[defaults.dvr]
enabled = true
depth = "1h"
[[stream]]
name = "a"
inputs = ["builtin://meeting"]
[[stream]]
name = "b"
inputs = ["builtin://meeting"]
"#,
        data.display()
    )
}

/// A segment as the live playlist listed it, with the bytes served then.
struct Seen {
    start_ms: i64,
    end_ms: i64,
    data: Vec<u8>,
}

fn dvr_status(node: &NodeProcess, stream: &str) -> serde_json::Value {
    let (status, doc) = http_get_json(node.http, &format!("/api/streams/{stream}"));
    assert_eq!(status, 200, "{doc}");
    doc["dvr"].clone()
}

#[test]
fn nothing_listed_before_a_kill_is_lost_and_catch_up_decodes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut node = NodeProcess::start(dir.path(), "dvr", &config(&data));

    // Watch both live playlists until 34 s are archived, keeping every listed segment.
    let mut seen: BTreeMap<(&str, u64), Seen> = BTreeMap::new();
    wait_for(
        "34 s of archive on both streams",
        Duration::from_secs(90),
        || {
            for stream in STREAMS {
                let (status, _, body) = http_get(node.http, &format!("/{stream}/mono.m3u8"));
                if status != 200 {
                    continue;
                }
                for entry in parse_media_playlist(&String::from_utf8_lossy(&body)) {
                    if seen.contains_key(&(stream, entry.msn)) {
                        continue;
                    }
                    let (status, _, data) =
                        http_get(node.http, &format!("/{stream}/{}", entry.uri));
                    if status != 200 {
                        continue;
                    }
                    let start_ms = common::parse_pdt(&entry.program_date_time);
                    let seconds: f64 = entry.extinf.trim_end_matches(',').parse().expect("extinf");
                    let end_ms = start_ms + (seconds * 1000.0).round() as i64;
                    seen.insert(
                        (stream, entry.msn),
                        Seen {
                            start_ms,
                            end_ms,
                            data,
                        },
                    );
                }
            }
            STREAMS
                .iter()
                .all(|s| {
                    let range = &dvr_status(&node, s)["ranges"]["ts"][0];
                    range["to_ms"].as_i64().unwrap_or(0) - range["from_ms"].as_i64().unwrap_or(0)
                        >= 34_000
                })
                .then_some(())
        },
    );

    // ffmpeg plays a 30 s catch-up period with no error and the period's duration.
    let range = &dvr_status(&node, "a")["ranges"]["ts"][0];
    let from = range["from_ms"].as_i64().unwrap() / 1000 + 1;
    // The media playlist (`mono-`): the built-in source has captions, so `index-` is a
    // master listing them with this playlist.
    let url = node.url(&format!("/a/mono-{from}-30.m3u8"));
    let (_, _, master) = http_get(node.http, &format!("/a/index-{from}-30.m3u8"));
    let master = String::from_utf8_lossy(&master).into_owned();
    assert!(
        master.contains("TYPE=SUBTITLES") && master.contains(&format!("mono-{from}-30.m3u8")),
        "{master}"
    );
    let (_, _, playlist) = http_get(node.http, &format!("/a/mono-{from}-30.m3u8"));
    let playlist = String::from_utf8_lossy(&playlist).into_owned();
    assert!(playlist.contains("#EXT-X-PLAYLIST-TYPE:VOD"), "{playlist}");
    let listed: f64 = parse_media_playlist(&playlist)
        .iter()
        .map(|e| e.extinf.trim_end_matches(',').parse::<f64>().unwrap())
        .sum();
    assert!(
        (listed - 30.0).abs() <= 4.0,
        "listed {listed} s:\n{playlist}"
    );
    let (ok, errors, decoded) = ffmpeg_decoded_seconds(&url);
    assert!(ok, "ffmpeg failed: {errors}");
    assert!(errors.trim().is_empty(), "ffmpeg errors: {errors}");
    assert!(
        (decoded - listed).abs() <= 2.0,
        "decoded {decoded} s of a {listed} s playlist"
    );
    // The same period as one MP4 file: ffprobe reads it, its duration is the period's,
    // and ffmpeg decodes it end to end without an error.
    let (status, headers, mp4) = http_get(node.http, &format!("/a/archive-{from}-30.mp4"));
    assert_eq!(status, 200, "{headers}");
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("content-type: video/mp4"),
        "{headers}"
    );
    assert_eq!(&mp4[4..8], b"ftyp");
    let file = dir.path().join("export.mp4");
    std::fs::write(&file, &mp4).expect("write the export");
    let (kinds, duration) = probe(&file);
    assert!(
        kinds.iter().any(|k| k == "video") && kinds.iter().any(|k| k == "audio"),
        "{kinds:?}"
    );
    assert!(
        (duration - listed).abs() <= 2.0,
        "the MP4 lasts {duration} s of {listed} s"
    );
    let (ok, errors, decoded) = ffmpeg_decoded_seconds(&file.display().to_string());
    assert!(
        ok && errors.trim().is_empty(),
        "ffmpeg on the MP4: {errors}"
    );
    assert!(
        (decoded - listed).abs() <= 2.0,
        "decoded {decoded} s of the MP4"
    );

    // The crash, while both streams record.
    node.kill9();
    let node = NodeProcess::start(dir.path(), "dvr-restarted", &config(&data));
    // Recording resumes on both streams (a segment after the restart bounds any hole).
    let newest_before: BTreeMap<&str, u64> = STREAMS
        .iter()
        .map(|s| {
            (
                *s,
                seen.keys()
                    .filter(|(x, _)| x == s)
                    .map(|(_, m)| *m)
                    .max()
                    .unwrap(),
            )
        })
        .collect();
    wait_for(
        "recording after the restart",
        Duration::from_secs(60),
        || {
            STREAMS
                .iter()
                .all(|s| dvr_status(&node, s)["counters"]["recorded"].as_u64() >= Some(2))
                .then_some(())
        },
    );

    for stream in STREAMS {
        let dvr = dvr_status(&node, stream);
        let gaps: Vec<(i64, i64)> = dvr["gaps"]["ts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (g["from_ms"].as_i64().unwrap(), g["to_ms"].as_i64().unwrap()))
            .collect();
        let mut served = 0;
        let mut in_gaps = 0;
        for ((_, msn), seg) in seen.iter().filter(|((s, _), _)| *s == stream) {
            let (status, _, data) = http_get(node.http, &format!("/{stream}/dvr-{msn}.ts"));
            if status == 200 {
                assert_eq!(data, seg.data, "{stream} segment {msn} differs from live");
                served += 1;
            } else {
                assert!(
                    gaps.iter()
                        .any(|&(from, to)| from <= seg.start_ms + 2 && seg.end_ms <= to + 2),
                    "{stream} segment {msn} ({}..{}) neither served nor in a gap {gaps:?}",
                    seg.start_ms,
                    seg.end_ms
                );
                in_gaps += 1;
            }
        }
        eprintln!("{stream}: {served} listed segments served from the archive, {in_gaps} inside reported gaps");
        // kill -9 loses at most what was queued for the disk: a segment or two.
        assert!(
            in_gaps <= 2,
            "{stream}: {in_gaps} segments lost, {served} served"
        );
        assert!(served >= 15, "{stream}: only {served} served");
        // Live numbering continues after the archive.
        let (_, doc) = http_get_json(node.http, &format!("/api/streams/{stream}"));
        let first_live = doc["first_msn"].as_u64().unwrap();
        assert!(first_live > newest_before[stream], "{doc}");
    }
}
