//! A closed meeting's recording plays from any node with the recordings store, with real
//! node processes, a real S3-compatible server (moto), ffprobe and ffmpeg: node a
//! records a public and a private meeting into the bucket; both close; node b, started
//! afterwards and never a recorder of either, serves the whole recording as a VOD
//! playlist (every segment), an MPD, a fragmented and a progressive MP4 (ffprobe reads
//! both, ffmpeg decodes both end to end) and a TS download — from the bucket alone —,
//! while the live files keep the meeting's 103003; the private meeting's recording
//! takes its viewer token as its live stream did.

mod common;

#[path = "../crates/recordings/tests/support/s3_server.rs"]
mod s3_server;

use std::time::Duration;

use common::cluster::{Cluster, ADMIN};
use common::mp4_check::{ffmpeg_decoded_seconds, probe, top_level_boxes};
use common::recording_nodes::{credentials_file, recordings_section, start_recording_node, BUCKET};
use common::{http_get_as_node, http_get_json, http_request, parse_media_playlist, wait_for};
use s3_server::S3Server;

/// The meeting code of an answer's JSON body (0 when none).
fn code_of(body: &[u8]) -> u64 {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["code"].as_u64())
        .unwrap_or(0)
}

/// Total `#EXTINF` seconds of a media playlist.
fn listed_seconds(playlist: &str) -> f64 {
    playlist
        .lines()
        .filter_map(|l| l.strip_prefix("#EXTINF:"))
        .filter_map(|l| {
            l.trim_end_matches(',')
                .split(',')
                .next()?
                .parse::<f64>()
                .ok()
        })
        .sum()
}

#[test]
fn a_closed_meeting_plays_from_the_bucket_on_a_node_that_never_recorded_it() {
    let server = S3Server::start();
    server.create_bucket(BUCKET);
    let dir = tempfile::tempdir().expect("tempdir");
    let credentials = credentials_file(dir.path());
    let section = recordings_section(&server.endpoint(), &credentials);
    let cluster = Cluster::mc()
        .no_rtmp()
        .sections(&format!(
            "[[meeting]]\nid = \"town\"\nstart = true\ninputs = [\"builtin://meeting\"]\n\
             [[meeting.language]]\ncode = \"eng\"\n[[meeting.language]]\ncode = \"spa\"\nname = \"Español\"\n\
             [[meeting]]\nid = \"board\"\nstart = true\nprivate = true\ninputs = [\"builtin://meeting\"]\n{section}"
        ))
        .defaults(Some("segment_duration = 1\nwindow = 4\n"))
        .node(|node| node.stream = Some("segment_duration = 1\nwindow = 4\n".to_owned()))
        .dvr("dvr = { enabled = true, depth = \"1h\", file_span = \"4s\" }")
        .start();
    let a = start_recording_node(&cluster, "a", &section);
    // A viewer token of the private meeting, minted while it is open.
    let (status, minted) = http_request(
        cluster.mc.http,
        "POST",
        "/api/meetings/board/viewer-tokens",
        &[ADMIN],
        r#"{"viewer": "alice", "ttl_seconds": 600}"#,
    );
    assert_eq!(status, 201, "{minted}");
    let token = minted["token"].as_str().expect("a token").to_owned();

    // Both meetings record on node a for a while, then close.
    for meeting in ["town", "board"] {
        wait_for(
            &format!("12 archived segments of {meeting} on a"),
            Duration::from_secs(60),
            || {
                let (_, doc) = http_get_json(a.http, &format!("/api/streams/{meeting}"));
                (doc["dvr"]["counters"]["recorded"].as_u64() >= Some(12)).then_some(())
            },
        );
    }
    for meeting in ["town", "board"] {
        let (status, doc) = http_request(
            cluster.mc.http,
            "POST",
            &format!("/api/meetings/{meeting}/close"),
            &[ADMIN],
            "",
        );
        assert_eq!(status, 200, "{doc}");
    }
    // Node a stops the streams and uploads their last files.
    wait_for("node a stops town", Duration::from_secs(30), || {
        let (_, _, body) = http_get_as_node(a.http, "/town/index.m3u8");
        (code_of(&body) == 103_003).then_some(())
    });
    wait_for("node a's uploads done", Duration::from_secs(30), || {
        let (_, doc) = http_get_json(a.http, "/api/node");
        let rec = &doc["recordings"];
        let idle =
            rec["archives"].as_u64() == Some(0) && rec["queued"]["files"].as_u64() == Some(0);
        (idle && rec["state"] == "ok").then_some(())
    });

    // Node b starts afterwards: the meetings never ran on it.
    let b = start_recording_node(&cluster, "b", &section);
    let master = wait_for("b serves town's recording", Duration::from_secs(40), || {
        let (status, _, body) = http_get_as_node(b.http, "/town/recording.m3u8");
        (status == 200).then(|| String::from_utf8_lossy(&body).into_owned())
    });
    // A master: the recorded rendition and the captions it carried, each served.
    let uris: Vec<String> = master
        .lines()
        .filter_map(|l| {
            let uri = l.split("URI=\"").nth(1)?.split('"').next()?;
            Some(uri.to_owned())
        })
        .chain(
            master
                .lines()
                .filter(|l| l.starts_with("mono-"))
                .map(str::to_owned),
        )
        .collect();
    assert!(uris.iter().any(|u| u.starts_with("mono-")), "{master}");
    // Its interpretation, recorded beside it, is in the master's audio group.
    let spanish = master
        .lines()
        .find(|l| l.starts_with("#EXT-X-MEDIA:TYPE=AUDIO") && l.contains("NAME=\"Español\""))
        .unwrap_or_else(|| panic!("no Spanish in\n{master}"));
    assert!(spanish.contains("URI=\"audio-spa/mono-"), "{master}");
    for uri in &uris {
        let (status, _, _) = http_get_as_node(b.http, &format!("/town/{uri}"));
        assert_eq!(status, 200, "{uri} of\n{master}");
    }
    let (status, _, body) = http_get_as_node(b.http, "/town/mono-recording.m3u8");
    assert_eq!(status, 200);
    let playlist = String::from_utf8_lossy(&body).into_owned();
    assert!(playlist.contains("#EXT-X-ENDLIST"), "{playlist}");
    let entries = parse_media_playlist(&playlist);
    assert!(entries.len() >= 12, "{playlist}");
    for entry in &entries {
        let (status, _, data) = http_get_as_node(b.http, &format!("/town/{}", entry.uri));
        assert_eq!(status, 200, "{}", entry.uri);
        assert_eq!(data.first(), Some(&0x47), "{} is MPEG-TS", entry.uri);
    }
    let listed = listed_seconds(&playlist);
    let spanish_uri = uris
        .iter()
        .find(|u| u.starts_with("audio-spa/"))
        .expect("listed");
    let (status, _, body) = http_get_as_node(b.http, &format!("/town/{spanish_uri}"));
    assert_eq!(status, 200, "{spanish_uri}");
    let spanish = parse_media_playlist(&String::from_utf8_lossy(&body));
    assert!(
        spanish.len() + 2 >= entries.len(),
        "{} Spanish segments of {}",
        spanish.len(),
        entries.len()
    );
    for entry in &spanish {
        let (status, _, data) = http_get_as_node(b.http, &format!("/town/audio-spa/{}", entry.uri));
        assert_eq!(status, 200, "{}", entry.uri);
        assert_eq!(data.first(), Some(&0x47), "{} is MPEG-TS", entry.uri);
    }
    // The live files keep the meeting's code; nothing of it is on b's disk.
    let (_, _, body) = http_get_as_node(b.http, "/town/index.m3u8");
    assert_eq!(code_of(&body), 103_003);
    assert!(!cluster.path().join("b-data/archive/town").exists());

    // The MC's listing names the period; its DASH URL is a static MPD on b.
    let (status, doc) = http_request(
        cluster.mc.http,
        "GET",
        "/api/meetings/town/recordings",
        &[ADMIN],
        "",
    );
    assert_eq!(status, 200, "{doc}");
    let dash = doc["renditions"][0]["periods"][0]["urls"]["dash"]
        .as_str()
        .unwrap_or_else(|| panic!("a DASH URL: {doc}"))
        .to_owned();
    assert_eq!(doc["recording"]["hls"], "/town/recording.m3u8", "{doc}");
    assert_eq!(
        doc["recording"]["mp4_progressive"], "/town/recording-progressive.mp4",
        "{doc}"
    );
    for dash in [dash.as_str(), "/town/recording.mpd"] {
        let (status, _, mpd) = http_get_as_node(b.http, dash);
        assert_eq!(status, 200, "{dash}");
        assert!(
            String::from_utf8_lossy(&mpd).contains("type=\"static\""),
            "{dash}"
        );
    }
    // The recording's MPD lists Spanish over its archived files, which b packages from
    // the bucket's MPEG-TS.
    let (_, _, mpd) = http_get_as_node(b.http, "/town/recording.mpd");
    let mpd = String::from_utf8_lossy(&mpd).into_owned();
    assert!(mpd.contains("lang=\"es\""), "{mpd}");
    let init = mpd
        .split("initialization=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|uri| uri.starts_with("audio-spa/dvr-init-"))
        .unwrap_or_else(|| panic!("Spanish's init in\n{mpd}"));
    let (status, _, data) = http_get_as_node(b.http, &format!("/town/{init}"));
    assert_eq!(status, 200, "{init}");
    assert_eq!(&data[4..8], b"ftyp", "{init} is an init segment");
    // The init is named after the first segment it serves.
    let first = init
        .trim_start_matches("audio-spa/dvr-init-")
        .trim_end_matches("-a.mp4");
    let segment = format!("/town/audio-spa/dvr-{first}-a.m4s");
    let (status, _, data) = http_get_as_node(b.http, &segment);
    assert_eq!(status, 200, "{segment}");
    assert!(
        top_level_boxes(&data).iter().any(|b| b == "moof"),
        "{segment}"
    );

    // The whole recording as files: fragmented and progressive MP4, TS.
    for (name, progressive) in [
        ("recording.mp4", false),
        ("recording-progressive.mp4", true),
    ] {
        let (status, headers, mp4) = http_get_as_node(b.http, &format!("/town/{name}"));
        assert_eq!(status, 200, "{name}: {headers}");
        let boxes = top_level_boxes(&mp4);
        let moov = boxes.iter().position(|b| b == "moov");
        let mdat = boxes.iter().position(|b| b == "mdat");
        if progressive {
            assert!(moov.is_some() && moov < mdat, "{name}: {boxes:?}");
            assert!(!boxes.iter().any(|b| b == "moof"), "{name}: {boxes:?}");
        } else {
            assert!(boxes.iter().any(|b| b == "moof"), "{name}: {boxes:?}");
        }
        let file = dir.path().join(name);
        std::fs::write(&file, &mp4).expect("write the export");
        let (kinds, duration) = probe(&file);
        assert!(
            kinds.iter().any(|k| k == "video") && kinds.iter().any(|k| k == "audio"),
            "{name}: {kinds:?}"
        );
        assert!(
            (duration - listed).abs() <= 2.0,
            "{name} lasts {duration} s of {listed} s"
        );
        let (ok, errors, decoded) = ffmpeg_decoded_seconds(&file.display().to_string());
        assert!(ok && errors.trim().is_empty(), "ffmpeg on {name}: {errors}");
        assert!(
            (decoded - listed).abs() <= 2.0,
            "decoded {decoded} s of {name}"
        );
    }
    let (status, headers, ts) = http_get_as_node(b.http, "/town/recording.ts");
    assert_eq!(status, 200, "{headers}");
    assert_eq!(ts.first(), Some(&0x47));
    assert_eq!(ts.len() % 188, 0);

    // The private meeting's recording: its viewer's token, as its live stream.
    let (status, _, body) = http_get_as_node(b.http, "/board/recording.m3u8");
    assert_eq!((status, code_of(&body)), (403, 113_001));
    let (status, _, body) = http_get_as_node(
        b.http,
        &format!("/board/mono-recording.m3u8?access_token={token}"),
    );
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{text}");
    let first = parse_media_playlist(&text)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("a segment in:\n{text}"));
    assert!(first.uri.contains("session="), "{text}");
    let (status, _, data) = http_get_as_node(b.http, &format!("/board/{}", first.uri));
    assert_eq!(status, 200, "{}", first.uri);
    assert_eq!(data.first(), Some(&0x47));
    // A meeting the MC does not know is never looked for in the bucket.
    let (status, _, body) = http_get_as_node(b.http, "/nobody/recording.m3u8");
    assert_ne!(status, 200);
    assert_ne!(code_of(&body), 0);
}
