//! Audio languages at process level: ffmpeg sends `brdyun node` an MPEG-TS over UDP
//! with three audio streams — a 440 Hz floor tagged `eng`, an 880 Hz one tagged `spa`
//! and a 1320 Hz one with no language tag (the stream's config names its PID) — and
//! the node offers them as one HLS audio group: the floor muxed in the variant, each
//! other language an audio-only rendition cut on the video's segments. ffprobe checks
//! every language segment starts within one audio frame of the video segment with the
//! same MSN; ffmpeg plays each language (from its playlist and from the master with
//! `-map`) and hears its own tone. The live MPD lists each language as an audio
//! adaptation set of its own, whose fMP4 files start where the video's of the same
//! number start and sound as that language. The node records each language, and its
//! catch-up master and MPD list them as the live ones do.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::cluster::Cluster;
use common::tones::{assert_tone, tone_of};
use common::{http_get, parse_media_playlist, wait_for, ChildGuard, NodeProcess, PlaylistEntry};

/// 1024 samples at 48 kHz in 90 kHz ticks: one AAC frame.
const AAC_FRAME_TICKS: f64 = 1920.0;

/// The node's config: one UDP stream with three languages.
fn config(data: &Path, port: u16) -> String {
    format!(
        "[node]\nname = \"languages\"\nhttp = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n\
         [[stream]]\nname = \"m\"\ninputs = [\"udp://127.0.0.1:{port}\"]\nsegment_duration = 2\n\
         dvr = {{ enabled = true, depth = \"1h\" }}\n\
         [[stream.language]]\ncode = \"eng\"\n\
         [[stream.language]]\ncode = \"spa\"\nname = \"Español\"\n\
         [[stream.language]]\ncode = \"fra\"\nname = \"Français\"\npid = 259\n",
        data.display()
    )
}

/// ffmpeg sending `seconds` of a test pattern and three tones as MPEG-TS over UDP, in
/// real time: PIDs 0x101 (440 Hz, `eng`), 0x102 (880 Hz, `spa`), 0x103 (1320 Hz, untagged).
fn three_language_source(seconds: u32, port: u16) -> Command {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-hide_banner", "-loglevel", "error"])
        .args(["-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25"]);
    for tone in [440, 880, 1320] {
        cmd.args(["-re", "-f", "lavfi", "-i"])
            .arg(format!("sine=frequency={tone}:sample_rate=48000"));
    }
    cmd.args(["-map", "0:v", "-map", "1:a", "-map", "2:a", "-map", "3:a"])
        .args([
            "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-bf", "2",
        ])
        .args(["-c:a", "aac", "-ac", "1", "-b:a", "48k"])
        .args([
            "-metadata:s:a:0",
            "language=eng",
            "-metadata:s:a:1",
            "language=spa",
        ])
        .args(["-t", &seconds.to_string(), "-f", "mpegts"])
        .arg(format!("udp://127.0.0.1:{port}?pkt_size=1316"));
    cmd
}

fn get_text(node: &NodeProcess, path: &str) -> Option<String> {
    let (status, _, body) = http_get(node.http, path);
    (status == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

/// The `EXT-X-MEDIA:TYPE=AUDIO` lines of a master playlist.
fn audio_lines(master: &str) -> Vec<String> {
    master
        .lines()
        .filter(|l| l.starts_with("#EXT-X-MEDIA:TYPE=AUDIO"))
        .map(str::to_owned)
        .collect()
}

/// The first packet PTS (seconds) of each stream kind in a TS file, by ffprobe.
fn first_pts(file: &Path, selector: &str) -> Option<f64> {
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", selector])
        .args(["-show_entries", "packet=pts_time", "-of", "csv=p=0"])
        .arg(file)
        .output()
        .expect("ffprobe runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').parse::<f64>().ok())
        .reduce(f64::min)
}

#[test]
fn three_languages_of_a_ts_source_are_one_audio_group_on_the_video_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_udp_port();
    let node = NodeProcess::start(
        dir.path(),
        "languages",
        &config(&dir.path().join("data"), port),
    );
    let _source = ChildGuard::spawn(
        "ffmpeg three-language source",
        &mut three_language_source(60, port),
    );
    // The master lists the floor (no URI) and both other languages once they have
    // segments; the variant names the group.
    let master = wait_for(
        "three languages in the master",
        Duration::from_secs(30),
        || get_text(&node, "/m/index.m3u8").filter(|m| audio_lines(m).len() == 3),
    );
    let audio = audio_lines(&master);
    assert!(
        audio[0].contains("NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES")
            && !audio[0].contains("URI="),
        "{master}"
    );
    assert!(
        audio[1].contains("NAME=\"Español\",LANGUAGE=\"es\",DEFAULT=NO")
            && audio[1].contains("URI=\"audio-spa/mono.m3u8\""),
        "{master}"
    );
    assert!(
        audio[2].contains("NAME=\"Français\",LANGUAGE=\"fr\"")
            && audio[2].contains("URI=\"audio-fra/mono.m3u8\""),
        "{master}"
    );
    let variants: Vec<&str> = master
        .lines()
        .filter(|l| l.starts_with("#EXT-X-STREAM-INF"))
        .collect();
    assert_eq!(variants.len(), 1, "languages are never variants:\n{master}");
    assert!(variants[0].contains("AUDIO=\"aud\""), "{master}");

    // Every language segment is on a video segment's MSN and date, and starts within
    // one audio frame of that segment's first picture.
    wait_for(
        "four segments of each language",
        Duration::from_secs(30),
        || get_text(&node, "/m/audio-fra/mono.m3u8").filter(|p| parse_media_playlist(p).len() >= 4),
    );
    let video = parse_media_playlist(&get_text(&node, "/m/mono.m3u8").expect("video playlist"));
    let files = dir.path().join("segments");
    std::fs::create_dir_all(&files).unwrap();
    for code in ["spa", "fra"] {
        let playlist = get_text(&node, &format!("/m/audio-{code}/mono.m3u8")).expect("playlist");
        let language = parse_media_playlist(&playlist);
        let mut compared = 0;
        for entry in &language {
            let Some(same) = video.iter().find(|v| v.msn == entry.msn) else {
                continue;
            };
            assert_eq!(
                entry.program_date_time, same.program_date_time,
                "{code} msn {}",
                entry.msn
            );
            assert_eq!(entry.extinf, same.extinf, "{code} msn {}", entry.msn);
            let starts = fetch_pair(&node, code, entry, same, &files);
            let (audio_start, video_start) = starts;
            let offset_ticks = (audio_start - video_start) * 90_000.0;
            assert!(
                (0.0..AAC_FRAME_TICKS).contains(&offset_ticks.round()),
                "{code} msn {}: audio starts {offset_ticks:.0} ticks after the video",
                entry.msn
            );
            compared += 1;
        }
        assert!(compared >= 3, "{code}: only {compared} segments compared");
    }

    // The status API and the metrics show each language's place against the video.
    let (status, doc) = common::http_get_json(node.http, "/api/streams/m");
    assert_eq!(status, 200, "{doc}");
    let languages = doc["languages"].as_array().cloned().unwrap_or_default();
    let codes: Vec<&str> = languages
        .iter()
        .filter_map(|l| l["code"].as_str())
        .collect();
    assert_eq!(codes, ["eng", "spa", "fra"], "{doc}");
    assert_eq!(languages[0]["floor"], true, "{doc}");
    for language in &languages[1..] {
        assert!(
            language["behind_segments"].as_u64().is_some_and(|b| b <= 1),
            "a language in step with the video: {language}"
        );
    }
    let (_, _, metrics) = http_get(node.http, "/metrics");
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.lines().any(|l| l
            .starts_with("brdyun_stream_language_behind_segments{stream=\"m\",language=\"fra\"} ")),
        "no language metric:\n{metrics}"
    );

    // Each language is its own tone, from its playlist and from the master.
    let base = format!("http://{}/m", node.http);
    assert_tone(
        "floor",
        tone_of(&format!("{base}/mono.m3u8"), &[], 4),
        440.0,
    );
    assert_tone(
        "spa",
        tone_of(&format!("{base}/audio-spa/mono.m3u8"), &[], 4),
        880.0,
    );
    assert_tone(
        "fra",
        tone_of(&format!("{base}/audio-fra/mono.m3u8"), &[], 4),
        1320.0,
    );
    master_plays_every_language(&format!("{base}/index.m3u8"));
    fmp4_master_lists_the_floor_beside_video_alone(&node, &files);
    the_mpd_lists_each_language_on_the_video_timeline(&node, &files);
    catch_up_lists_the_recorded_languages(&node, &video, &files);
}

/// ffprobe finds the three languages in the master at `url`, and ffmpeg hears each
/// language's tone when it maps the language (ffmpeg tags each rendition with its
/// LANGUAGE, the floor's too).
fn master_plays_every_language(url: &str) {
    let streams = Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", "stream=index,codec_type"])
        .args(["-of", "csv=p=0"])
        .arg(url)
        .output()
        .expect("ffprobe runs");
    let kinds = String::from_utf8_lossy(&streams.stdout);
    // (ffprobe lists each stream under its program and again on its own.)
    let audio_streams: std::collections::BTreeSet<&str> = kinds
        .lines()
        .filter(|l| l.trim().ends_with(",audio"))
        .collect();
    assert_eq!(audio_streams.len(), 3, "ffprobe of {url}:\n{kinds}");
    for (language, tone) in [("en", 440.0), ("es", 880.0), ("fr", 1320.0)] {
        let map = format!("0:a:m:language:{language}");
        assert_tone(
            &format!("{url} -map {map}"),
            tone_of(url, &["-map", &map], 4),
            tone,
        );
    }
}

/// The fMP4 HLS master lists every language as an audio rendition, the floor's at the
/// audio's own playlist (`fmp4-a.m3u8`), and its variant is the video alone
/// (`fmp4-v.m3u8`): a muxed fMP4 variant cannot be played beside another rendition.
fn fmp4_master_lists_the_floor_beside_video_alone(node: &NodeProcess, dir: &Path) {
    let master = get_text(node, "/m/fmp4-index.m3u8").expect("an fMP4 master");
    let audio = audio_lines(&master);
    assert_eq!(audio.len(), 3, "{master}");
    assert!(
        audio[0].contains("LANGUAGE=\"en\",DEFAULT=YES")
            && audio[0].contains("URI=\"fmp4-a.m3u8\""),
        "{master}"
    );
    assert!(
        audio[1].contains("URI=\"audio-spa/fmp4-a.m3u8\""),
        "{master}"
    );
    assert!(
        master.lines().any(|l| l == "fmp4-v.m3u8") && !master.contains("\nfmp4.m3u8"),
        "{master}"
    );
    // The variant's newest segment with its init: video, and no audio.
    let playlist = get_text(node, "/m/fmp4-v.m3u8").expect("the video's playlist");
    let init = common::last_map(&playlist);
    let newest = playlist.lines().last().expect("a segment");
    assert!(
        init.ends_with("-v.mp4") && newest.ends_with("-v.m4s"),
        "{playlist}"
    );
    let mut bytes = Vec::new();
    for path in [init, newest] {
        let (status, _, body) = http_get(node.http, &format!("/m/{path}"));
        assert_eq!(status, 200, "{path}");
        bytes.extend(body);
    }
    std::fs::write(dir.join("fmp4-video.mp4"), bytes).unwrap();
    assert!(
        first_pts(&dir.join("fmp4-video.mp4"), "v").is_some(),
        "video"
    );
    assert_eq!(
        first_pts(&dir.join("fmp4-video.mp4"), "a"),
        None,
        "no audio"
    );
    master_plays_every_language(&format!("http://{}/m/fmp4-index.m3u8", node.http));
}

/// The live MPD names the floor's language and has an audio adaptation set per other
/// language (`lang`, `Label`, files under `audio-{code}/`); each language's fMP4 file of
/// a number starts within one audio frame of the video's file of that number, and its
/// audio is the language's tone.
fn the_mpd_lists_each_language_on_the_video_timeline(node: &NodeProcess, dir: &Path) {
    let mpd = wait_for("the languages in the MPD", Duration::from_secs(20), || {
        get_text(node, "/m/index.mpd").filter(|m| m.contains("lang=\"fr\""))
    });
    // The newest number but one, in the last period.
    let live = parse_media_playlist(&get_text(node, "/m/mono.m3u8").expect("video playlist"));
    let msn = live[live.len() - 2].msn;
    dash_languages_play(node, "live", &mpd, msn, dir);
}

/// In the last period of `mpd` (`what`: live or catch-up), the floor's set names its
/// language and each other language has its own set (`lang`, `Role` `dub`, `Label`); its
/// file of number `msn` starts within one audio frame of the video's and sounds as the
/// language's tone.
fn dash_languages_play(node: &NodeProcess, what: &str, mpd: &str, msn: u64, dir: &Path) {
    let period = mpd.rsplit("<Period ").next().expect("a period in the MPD");
    assert!(
        period.contains("lang=\"en\">\n      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"main\"/>\n      <Label>English</Label>"),
        "{what}: the floor's set names its language:\n{mpd}"
    );
    // The init and number `msn`'s media file of the set that starts at `set`, joined.
    let files_of = |set: &str, file: &Path| {
        let rest = &period[period
            .find(set)
            .unwrap_or_else(|| panic!("{what}: {set} in\n{mpd}"))..];
        let attribute = |name: &str| {
            let key = format!("{name}=\"");
            let start = rest.find(&key).expect("a template") + key.len();
            rest[start..start + rest[start..].find('"').expect("quoted")].to_owned()
        };
        let init = attribute("initialization");
        let media = attribute("media").replace("$Number$", &msn.to_string());
        let mut bytes = Vec::new();
        for path in [format!("/m/{init}"), format!("/m/{media}")] {
            let (status, _, body) = http_get(node.http, &path);
            assert_eq!(status, 200, "{what}: {path}");
            bytes.extend(body);
        }
        std::fs::write(file, bytes).unwrap();
        init
    };
    let video_file = dir.join(format!("dash-{what}-video.mp4"));
    files_of("contentType=\"video\"", &video_file);
    let video_start = first_pts(&video_file, "v").expect("the video's start");
    for (id, code, lang, name, tone) in [
        (200, "spa", "es", "Español", 880.0),
        (201, "fra", "fr", "Français", 1320.0),
    ] {
        let set = format!(
            "<AdaptationSet id=\"{id}\" contentType=\"audio\" mimeType=\"audio/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\" lang=\"{lang}\">"
        );
        assert!(
            period.contains(&format!("{set}\n      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"dub\"/>\n      <Label>{name}</Label>")),
            "{what}: {code}'s adaptation set:\n{mpd}"
        );
        let file = dir.join(format!("dash-{what}-{code}.mp4"));
        let init = files_of(&set, &file);
        assert!(init.starts_with(&format!("audio-{code}/")), "{init}");
        let start = first_pts(&file, "a").expect("the language's start");
        let offset_ticks = ((start - video_start) * 90_000.0).round();
        assert!(
            (0.0..AAC_FRAME_TICKS).contains(&offset_ticks),
            "{code} DASH {what} msn {msn}: audio starts {offset_ticks} ticks after the video"
        );
        assert_tone(
            &format!("{code} DASH {what}"),
            tone_of(&file.display().to_string(), &[], 2),
            tone,
        );
    }
}

/// A catch-up period's master lists the recorded languages as the live master does,
/// each at its period playlist on the video's MSNs; ffmpeg hears each from the master.
/// The period's MPD lists them as the live MPD does, over the archived files.
fn catch_up_lists_the_recorded_languages(node: &NodeProcess, live: &[PlaylistEntry], dir: &Path) {
    // From the second live segment on: every language was cut by then.
    let second = live.get(1).expect("a live window");
    let from = (common::parse_pdt(&second.program_date_time) + 999) / 1000;
    let period = format!("{from}-12");
    let master = get_text(node, &format!("/m/index-{period}.m3u8")).expect("a catch-up master");
    let audio = audio_lines(&master);
    assert_eq!(audio.len(), 3, "{master}");
    assert!(!audio[0].contains("URI="), "the floor is muxed:\n{master}");
    assert!(
        audio[1].contains(&format!("URI=\"audio-spa/mono-{period}.m3u8\"")),
        "{master}"
    );
    let video = parse_media_playlist(&get_text(node, &format!("/m/mono-{period}.m3u8")).unwrap());
    let spanish = parse_media_playlist(
        &get_text(node, &format!("/m/audio-spa/mono-{period}.m3u8")).expect("spa period"),
    );
    let msns = |p: &[PlaylistEntry]| p.iter().map(|e| e.msn).collect::<Vec<_>>();
    assert_eq!(msns(&spanish), msns(&video), "spa and video periods");
    assert!(spanish.len() >= 3, "{} segments", spanish.len());
    let url = format!("http://{}/m/index-{period}.m3u8", node.http);
    for (language, tone) in [("en", 440.0), ("es", 880.0), ("fr", 1320.0)] {
        let map = format!("0:a:m:language:{language}");
        assert_tone(
            &format!("catch-up -map {map}"),
            tone_of(&url, &["-map", &map], 4),
            tone,
        );
    }
    let mpd = get_text(node, &format!("/m/index-{period}.mpd")).expect("a catch-up MPD");
    assert!(mpd.contains("audio-spa/dvr-init-"), "{mpd}");
    let msn = video[video.len() - 2].msn;
    dash_languages_play(node, "catch-up", &mpd, msn, dir);
}

/// Downloads the language's and the video's segment of one MSN; returns the first
/// audio PTS of the language's and the first video PTS of the video's, in seconds.
fn fetch_pair(
    node: &NodeProcess,
    code: &str,
    language: &PlaylistEntry,
    video: &PlaylistEntry,
    dir: &Path,
) -> (f64, f64) {
    let get = |path: String, file: &Path| {
        let (status, _, body) = http_get(node.http, &path);
        assert_eq!(status, 200, "{path}");
        std::fs::write(file, body).unwrap();
    };
    let audio_file = dir.join(format!("{code}-{}.ts", language.msn));
    let video_file = dir.join(format!("video-{}.ts", video.msn));
    get(format!("/m/audio-{code}/{}", language.uri), &audio_file);
    get(format!("/m/{}", video.uri), &video_file);
    assert_eq!(first_pts(&audio_file, "v"), None, "{code}: audio alone");
    (
        first_pts(&audio_file, "a").expect("language audio"),
        first_pts(&video_file, "v").expect("video"),
    )
}

/// The MC's ladder for the ladder test: ffmpeg transcodes the source into 144p and 96p.
const LADDER: &str = r#"[mc.ladder]
preset = "ultrafast"
rungs = [
  { name = "source" },
  { name = "144p", height = 144, video_kbps = 200 },
  { name = "96p", height = 96, video_kbps = 100, profile = "baseline" },
]
"#;

/// The built-in meeting (a 440 Hz floor and a 750 Hz interpretation) as an MC preset
/// with its two languages.
const MEETING: &str = r#"[[meeting]]
id = "m"
start = true
inputs = ["builtin://meeting"]
[[meeting.language]]
code = "eng"
[[meeting.language]]
code = "spa"
name = "Español"
"#;

/// An interpreted meeting on the MC's ABR ladder, followed by a node: every rung of the
/// node's master, with each language, plays in ffmpeg and sounds as that language (the
/// ladder's audio is the source's floor, encoded once; the interpretation is shared by
/// every rung).
#[test]
fn every_rung_with_every_language_plays_from_a_node() {
    let cluster = Cluster::mc()
        .mc_lines(LADDER)
        .sections(MEETING)
        .nodes(&["node-a"])
        .start();
    let node = cluster.node();
    let master = wait_for(
        "the ladder and both languages in the node's master",
        Duration::from_secs(60),
        || {
            get_text(node, "/m/index.m3u8").filter(|m| {
                m.matches("#EXT-X-STREAM-INF").count() == 3 && audio_lines(m).len() == 2
            })
        },
    );
    assert!(
        master
            .lines()
            .filter(|l| l.starts_with("#EXT-X-STREAM-INF"))
            .all(|l| l.contains("AUDIO=\"aud\"")),
        "every rung names the audio group:\n{master}"
    );
    let url = format!("http://{}/m/index.m3u8", node.http);
    // ffmpeg makes a program of each variant, with its video, its muxed floor and the
    // interpretation.
    for program in 0..3 {
        for (language, tone) in [("en", 440.0), ("es", 750.0)] {
            let audio = format!("0:p:{program}:a:m:language:{language}");
            assert_tone(
                &format!("rung {program}, {language}"),
                tone_of(&url, &["-map", &audio], 3),
                tone,
            );
        }
        let video = format!("0:p:{program}:v");
        let out = Command::new("ffmpeg")
            .args(["-nostdin", "-hide_banner", "-v", "error", "-i", &url])
            .args(["-map", &video, "-t", "3", "-f", "null", "-"])
            .output()
            .expect("ffmpeg runs");
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "rung {program} video: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The node's MPD: the rungs are Representations of the one video set, the
    // interpretation an audio set of its own beside the floor's.
    // (The rungs join the MPD once their windows are switchable.)
    let last_period = |mpd: &str| mpd.rsplit("<Period ").next().unwrap_or("").to_owned();
    let period = wait_for(
        "the rungs and Spanish in the node's MPD",
        Duration::from_secs(30),
        || {
            get_text(node, "/m/index.mpd")
                .map(|m| last_period(&m))
                .filter(|p| {
                    p.contains("lang=\"es\"")
                        && p.contains("<Representation id=\"144p\"")
                        && p.contains("<Representation id=\"96p\"")
                })
        },
    );
    assert_eq!(
        period.matches("contentType=\"video\"").count(),
        1,
        "{period}"
    );
    assert!(period.contains("<Label>Español</Label>"), "{period}");
}
