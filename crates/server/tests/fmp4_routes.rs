//! fMP4 HLS and DASH routes on real segments: the demo clip through the real pipeline
//! (segmenter → fMP4 rendition → channel), answered in-process, then read by
//! independent parsers (m3u8-rs, dash-mpd-core, a box walker written here) and by
//! ffprobe/ffmpeg over a loopback socket. The archive's fMP4 is checked byte for byte
//! against the live packaging of the same segments.

mod harness;

use std::sync::Arc;

use axum::http::{header, StatusCode};
use dvr::Retention;
use ingest::IngestEvent;
use media::fmp4::frames_from_ts;
use media::TrackKind;
use server::stream::package::Package;
use server::stream::pipeline::PipelineSettings;
use server::stream::recorder::{Recorder, RecorderSettings};
use server::{router, AppState};

use harness::{demo_frames, get, get_ok, media_playlist, Answer};

struct Node {
    state: AppState,
    channel: Arc<Package>,
}

/// A node whose stream `s` got the whole demo clip through the real pipeline,
/// recorded when `archive` names a directory.
async fn node(window: usize, archive: Option<&std::path::Path>) -> Node {
    let events = demo_frames().into_iter().map(IngestEvent::Frame).collect();
    node_with(window, archive, events).await
}

/// A node whose stream `s` got `events` through the real pipeline.
async fn node_with(
    window: usize,
    archive: Option<&std::path::Path>,
    events: Vec<IngestEvent>,
) -> Node {
    let state = harness::node(None);
    let channel = Arc::new(Package::new("s", window, packaging::render::renderer(2000)));
    let recorder = archive.map(|dir| {
        let recorder = Recorder::start(
            "s",
            RecorderSettings::new(dir.to_owned(), Retention::default()),
        )
        .expect("recorder");
        assert!(channel.set_archive(Arc::clone(&recorder)));
        recorder
    });
    // LL-HLS on, as on every node: the muxed fMP4 files are its segments.
    channel.set_llhls(Arc::new(server::stream::llhls::LlChannel::new(
        server::stream::llhls::LlSettings {
            part_ms: 1000,
            hold_back_ms: None,
            target_ms: 2000,
        },
    )));
    state.add_stream(Arc::clone(&channel), None);
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let settings = PipelineSettings {
        languages: Vec::new(),
        target_duration_ms: 2000,
        state_file: None,
        publish_latency: Arc::default(),
    };
    let pipeline = tokio::spawn(server::stream::pipeline::run_recording(
        Arc::clone(&channel),
        rx,
        settings,
        recorder.clone(),
    ));
    for event in events {
        tx.send(event).await.expect("pipeline alive");
    }
    drop(tx);
    pipeline.await.expect("pipeline ends");
    if let Some(recorder) = recorder {
        let count = channel
            .counters
            .segments
            .load(std::sync::atomic::Ordering::Relaxed);
        harness::wait_recorded(&recorder, count);
    }
    Node { state, channel }
}

/// ISO BMFF boxes of `data`: (type, body).
fn boxes(data: &[u8]) -> Vec<([u8; 4], &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= data.len() {
        let size = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        assert!(
            size >= 8 && at + size <= data.len(),
            "box size {size} at {at}"
        );
        let kind: [u8; 4] = data[at + 4..at + 8].try_into().unwrap();
        out.push((kind, &data[at + 8..at + size]));
        at += size;
    }
    assert_eq!(at, data.len(), "trailing bytes");
    out
}

/// `(track_id, tfdt)` of every `traf` of every `moof`.
fn decode_times(segment: &[u8]) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for (kind, moof) in boxes(segment) {
        if &kind != b"moof" {
            continue;
        }
        for (kind, traf) in boxes(moof) {
            if &kind != b"traf" {
                continue;
            }
            let inner = boxes(traf);
            let tfhd = inner.iter().find(|(k, _)| k == b"tfhd").expect("tfhd").1;
            let tfdt = inner.iter().find(|(k, _)| k == b"tfdt").expect("tfdt").1;
            let track = u32::from_be_bytes(tfhd[4..8].try_into().unwrap());
            let time = if tfdt[0] == 1 {
                u64::from_be_bytes(tfdt[4..12].try_into().unwrap())
            } else {
                u64::from(u32::from_be_bytes(tfdt[4..8].try_into().unwrap()))
            };
            out.push((track, time));
        }
    }
    out
}

/// The first DTS of each track in a TS segment (video = track 1, audio = track 2).
fn ts_first_dts(ts: &[u8]) -> Vec<(u32, u64)> {
    let marker = packaging::fmp4::marker_of(ts).expect("marker");
    let frames = frames_from_ts(ts, marker.start_ts);
    let mut out = Vec::new();
    for (track, kind) in [(1, TrackKind::Video), (2, TrackKind::Audio)] {
        if let Some(f) = frames.iter().find(|t| t.frame.kind() == kind) {
            out.push((track, f.ext_dts));
        }
    }
    out
}

#[tokio::test]
async fn fmp4_hls_lists_the_ts_timeline_and_segments_keep_the_ts_decode_times() {
    let node = node(5, None).await;
    let ts =
        media_playlist(&get_ok(&node.state, "/s/mono.m3u8", "application/vnd.apple.mpegurl").await);
    let body = get_ok(&node.state, "/s/fmp4.m3u8", "application/vnd.apple.mpegurl").await;
    let text = std::str::from_utf8(&body).unwrap();
    let fmp4 = media_playlist(&body);
    assert_eq!(fmp4.version, Some(7), "{text}");
    assert_eq!(fmp4.media_sequence, ts.media_sequence);
    assert_eq!(fmp4.target_duration, ts.target_duration);
    assert_eq!(fmp4.segments.len(), ts.segments.len());
    assert!(fmp4.segments.len() >= 4, "{text}");
    for (f, t) in fmp4.segments.iter().zip(&ts.segments) {
        assert_eq!(f.duration, t.duration);
        assert_eq!(f.program_date_time, t.program_date_time);
        assert_eq!(f.uri.replace(".m4s", ".ts"), t.uri);
    }
    let map = fmp4.segments[0].map.as_ref().expect("EXT-X-MAP first");
    assert_eq!(map.uri, "init-0.mp4");
    assert_eq!(
        text.matches("#EXT-X-MAP").count(),
        1,
        "one sequence, one map"
    );

    let Answer {
        status,
        headers,
        body: init,
    } = get(&node.state, "/s/init-0.mp4").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "video/mp4");
    let kinds: Vec<[u8; 4]> = boxes(&init).iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, [*b"ftyp", *b"moov"]);
    for s in &fmp4.segments {
        let Answer {
            status,
            headers,
            body,
        } = get(&node.state, &format!("/s/{}", s.uri)).await;
        assert_eq!(status, StatusCode::OK, "{}", s.uri);
        assert_eq!(
            headers[header::CACHE_CONTROL],
            "public, max-age=86400, immutable"
        );
        let ts_body = get_ok(
            &node.state,
            &format!("/s/{}", s.uri.replace(".m4s", ".ts")),
            "video/mp2t",
        )
        .await;
        let expected = ts_first_dts(&ts_body);
        assert_eq!(expected.len(), 2, "video and audio in {}", s.uri);
        // The muxed file is fragmented on the LL-HLS part grid: its first fragment
        // starts each track at the TS decode time, later ones go forward.
        let times = decode_times(&body);
        assert_eq!(times[..2], expected, "{}", s.uri);
        for track in [1, 2] {
            let of: Vec<u64> = times.iter().filter(|t| t.0 == track).map(|t| t.1).collect();
            assert!(of.is_sorted(), "{} track {track}: {of:?}", s.uri);
        }
        if s.duration > 1.1 {
            assert!(times.len() > 2, "{}: fragments of 1-s parts", s.uri);
        }
        // The DASH files of the same segment: one track each, the same decode times.
        let v = get_ok(
            &node.state,
            &format!("/s/{}", s.uri.replace(".m4s", "-v.m4s")),
            "video/mp4",
        )
        .await;
        let a = get_ok(
            &node.state,
            &format!("/s/{}", s.uri.replace(".m4s", "-a.m4s")),
            "video/mp4",
        )
        .await;
        assert_eq!(decode_times(&v), expected[..1]);
        assert_eq!(decode_times(&a), expected[1..]);
    }
    // Out of the window, out of range, not a name: 404.
    for uri in [
        "/s/seg-0.m4s",
        "/s/seg-99.m4s",
        "/s/init-7.mp4",
        "/s/seg-x.m4s",
    ] {
        assert_eq!(
            get(&node.state, uri).await.status,
            StatusCode::NOT_FOUND,
            "{uri}"
        );
    }
}

#[tokio::test]
async fn the_live_mpd_parses_back_on_the_ts_timeline() {
    let node = node(5, None).await;
    let window = node.channel.snapshot();
    let body = get_ok(&node.state, "/s/index.mpd", "application/dash+xml").await;
    let text = std::str::from_utf8(&body).unwrap();
    let mpd = dash_mpd_core::parse(text).expect("dash-mpd-core parses the MPD");
    assert_eq!(mpd.mpdtype.as_deref(), Some("dynamic"), "{text}");
    let first = window.segments.front().unwrap();
    let marker = packaging::fmp4::marker_of(&first.data).unwrap();
    assert_eq!(
        mpd.availabilityStartTime.map(|t| t.timestamp_millis()),
        Some(0),
        "availabilityStartTime is the epoch: the MPD depends on the timeline only"
    );
    assert_eq!(
        mpd.periods[0].start.map(|d| d.as_millis()),
        Some(u128::try_from(marker.state.anchor_unix_ms).unwrap()),
        "the period starts at its anchor's wall-clock time"
    );
    assert_eq!(mpd.UTCTiming[0].value.as_deref(), Some("/api/time"));
    assert_eq!(mpd.periods.len(), 1);
    let period = &mpd.periods[0];
    assert_eq!(period.id.as_deref(), Some("d0"));
    assert_eq!(period.adaptations.len(), 2, "video and audio");
    for (adaptation, suffix) in period.adaptations.iter().zip(["v", "a"]) {
        let template = adaptation.SegmentTemplate.as_ref().expect("template");
        assert_eq!(template.timescale, Some(90_000));
        assert_eq!(template.startNumber, Some(first.msn));
        assert_eq!(
            template.presentationTimeOffset,
            Some(marker.state.anchor_ts)
        );
        assert_eq!(
            template.media.as_deref(),
            Some(format!("seg-$Number$-{suffix}.m4s").as_str())
        );
        let timeline = &template
            .SegmentTimeline
            .as_ref()
            .expect("timeline")
            .segments;
        assert_eq!(timeline[0].t, Some(marker.start_ts));
        let count: i64 = timeline.iter().map(|s| 1 + s.r.unwrap_or(0)).sum();
        assert_eq!(count as usize, window.segments.len());
        let durations: Vec<u64> = timeline
            .iter()
            .flat_map(|s| std::iter::repeat_n(s.d, 1 + s.r.unwrap_or(0) as usize))
            .collect();
        let expected: Vec<u64> = window.segments.iter().map(|s| s.duration_ticks).collect();
        assert_eq!(durations, expected);
        let init = template.initialization.as_deref().expect("initialization");
        assert_eq!(init, format!("init-0-{suffix}.mp4"));
        get_ok(&node.state, &format!("/s/{init}"), "video/mp4").await;
    }
    let video = &period.adaptations[0].representations[0];
    assert_eq!(
        (video.width, video.height),
        (Some(640), Some(360)),
        "{text}"
    );
    assert!(video.codecs.as_deref().unwrap().starts_with("avc1."));

    let time = get_ok(&node.state, "/api/time", "text/plain; charset=utf-8").await;
    let time = chrono_free_parse(std::str::from_utf8(&time).unwrap());
    let now = server::clock::unix_ms();
    assert!((now - time).abs() < 5_000, "{time} vs {now}");
}

/// Unix ms of `YYYY-MM-DDTHH:MM:SS.mmmZ` (days from the civil calendar).
fn chrono_free_parse(text: &str) -> i64 {
    assert_eq!(text.len(), 24, "{text}");
    let n = |a: usize, b: usize| text[a..b].parse::<i64>().unwrap();
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 24 + n(11, 13)) * 60 + n(14, 16)) * 60_000 + n(17, 19) * 1000 + n(20, 23)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archived_fmp4_equals_the_live_packaging_and_has_its_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(10, Some(dir.path())).await;
    let window = node.channel.snapshot();
    let first = window.segments.front().unwrap();
    let last = window.segments.back().unwrap();
    let from = first.program_date_time_ms / 1000;
    let duration = (last.program_date_time_ms - first.program_date_time_ms) / 1000 + 3;

    let body = get_ok(
        &node.state,
        &format!("/s/fmp4-{from}-{duration}.m3u8"),
        "application/vnd.apple.mpegurl",
    )
    .await;
    let vod = media_playlist(&body);
    assert_eq!(vod.playlist_type, Some(m3u8_rs::MediaPlaylistType::Vod));
    assert!(vod.end_list);
    assert_eq!(vod.segments.len(), window.segments.len());
    let map = vod.segments[0].map.as_ref().expect("EXT-X-MAP");
    assert_eq!(map.uri, format!("dvr-init-{}.mp4", first.msn));
    let live_init = get_ok(&node.state, "/s/init-0.mp4", "video/mp4").await;
    let dvr_init = get_ok(&node.state, &format!("/s/{}", map.uri), "video/mp4").await;
    assert_eq!(dvr_init, live_init, "the archive's init is the live one");
    for (s, live) in vod.segments.iter().zip(&window.segments) {
        assert_eq!(s.uri, format!("dvr-{}.m4s", live.msn));
        for suffix in ["", "-v", "-a"] {
            let dvr = get_ok(
                &node.state,
                &format!("/s/dvr-{}{suffix}.m4s", live.msn),
                "video/mp4",
            )
            .await;
            let seg = get_ok(
                &node.state,
                &format!("/s/seg-{}{suffix}.m4s", live.msn),
                "video/mp4",
            )
            .await;
            assert!(
                dvr == seg,
                "dvr-{}{suffix}.m4s differs from the live packaging",
                live.msn
            );
        }
    }

    let body = get_ok(
        &node.state,
        &format!("/s/index-{from}-{duration}.mpd"),
        "application/dash+xml",
    )
    .await;
    let text = std::str::from_utf8(&body).unwrap();
    let mpd = dash_mpd_core::parse(text).expect("dash-mpd-core parses the static MPD");
    assert_eq!(mpd.mpdtype.as_deref(), Some("static"), "{text}");
    let total: u64 = window.segments.iter().map(|s| s.duration_ticks).sum();
    assert_eq!(
        mpd.mediaPresentationDuration.map(|d| d.as_millis()),
        Some(u128::from((total + 45) / 90))
    );
    let period = &mpd.periods[0];
    let template = period.adaptations[0].SegmentTemplate.as_ref().unwrap();
    assert_eq!(template.startNumber, Some(first.msn));
    let marker = packaging::fmp4::marker_of(&first.data).unwrap();
    assert_eq!(template.presentationTimeOffset, Some(marker.start_ts));
    assert_eq!(template.media.as_deref(), Some("dvr-$Number$-v.m4s"));
    assert_eq!(
        template.initialization.as_deref(),
        Some(format!("dvr-init-{}-v.mp4", first.msn).as_str())
    );

    // The OTT announce: the fMP4 archive is the TS archive (derived on request).
    let announced = server::redundancy::members::own_member(
        &ott::NodeId::new("t"),
        "s",
        &server::redundancy::Membership {
            group: "g".into(),
            can_substitute: true,
        },
        &node.channel,
        server::clock::unix_ms(),
        60_000,
    );
    assert!(!announced.archive.ts.is_empty());
    assert_eq!(announced.archive.fmp4, announced.archive.ts);

    // Nothing archived then: 404; malformed: 400; not archived: 404.
    let Answer { status, .. } = get(&node.state, "/s/index-1000000000-60.mpd").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let Answer { status, .. } = get(&node.state, "/s/fmp4-5-0.m3u8").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let Answer { status, .. } = get(&node.state, "/s/dvr-999999.m4s").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// Runs a tool (killed after 30 s); fails the test with a clear message when it is
/// not installed.
fn run(tool: &str, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new("timeout")
        .arg("30")
        .arg(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("{tool} is required by this test (apt-get install ffmpeg): {e}")
        });
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ffmpeg_reads_the_live_mpd_and_fmp4_hls_without_errors() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(10, Some(dir.path())).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server::run(
        listener,
        router(node.state.clone()),
        None,
        async {
            let _ = stopped.await;
        },
    ));
    let window = node.channel.snapshot();
    let first = window.segments.front().unwrap();
    let from = first.program_date_time_ms / 1000;
    // A live playlist that does not grow: start at its first segment (ffmpeg would
    // otherwise wait at the live edge for more than it has to analyse).
    let live: &[&str] = &["-live_start_index", "0"];
    let urls: [(String, &[&str]); 4] = [
        (format!("http://{addr}/s/fmp4.m3u8"), live),
        (format!("http://{addr}/s/index.mpd"), &[]),
        (format!("http://{addr}/s/index-{from}-30.mpd"), &[]),
        (format!("http://{addr}/s/fmp4-{from}-30.m3u8"), &[]),
    ];
    let results = tokio::task::spawn_blocking(move || {
        urls.iter()
            .map(|(url, options)| {
                let with = |args: &[&str]| {
                    let mut all = options.to_vec();
                    all.extend_from_slice(args);
                    all.iter().map(|s| s.to_string()).collect::<Vec<String>>()
                };
                let probe_args = with(&[
                    "-v",
                    "error",
                    "-show_entries",
                    "stream=codec_name",
                    "-of",
                    "csv=p=0",
                    url,
                ]);
                let probe = run(
                    "ffprobe",
                    &probe_args.iter().map(String::as_str).collect::<Vec<_>>(),
                );
                let decode_args = with(&[
                    "-nostdin", "-v", "error", "-i", url, "-t", "6", "-f", "null", "-",
                ]);
                let decode = run(
                    "ffmpeg",
                    &decode_args.iter().map(String::as_str).collect::<Vec<_>>(),
                );
                (url.clone(), probe, decode)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let _ = stop.send(());
    served.await.unwrap();
    for (url, (probe_ok, probe), (decode_ok, decode)) in results {
        assert!(probe_ok, "{url}: {probe}");
        let codecs: Vec<&str> = probe.lines().map(str::trim).collect();
        assert!(
            codecs.contains(&"h264") && codecs.contains(&"aac"),
            "{url}: {probe}"
        );
        assert!(decode_ok && decode.trim().is_empty(), "{url}: {decode}");
    }
}

#[tokio::test]
async fn a_discontinuity_starts_a_period_and_an_init() {
    // The clip, a source switch, the clip again (its timestamps start over).
    let mut events: Vec<IngestEvent> = demo_frames().into_iter().map(IngestEvent::Frame).collect();
    events.push(IngestEvent::Discontinuity);
    events.extend(demo_frames().into_iter().map(IngestEvent::Frame));
    let node = node_with(20, None, events).await;
    let window = node.channel.snapshot();
    let seqs: std::collections::BTreeSet<u64> = window
        .segments
        .iter()
        .map(|s| s.discontinuity_seq)
        .collect();
    assert_eq!(seqs.len(), 2, "two discontinuity sequences");

    let body = get_ok(&node.state, "/s/fmp4.m3u8", "application/vnd.apple.mpegurl").await;
    let playlist = media_playlist(&body);
    let maps: Vec<String> = playlist
        .segments
        .iter()
        .filter_map(|s| s.map.as_ref().map(|m| m.uri.clone()))
        .collect();
    let expected: Vec<String> = seqs.iter().map(|d| format!("init-{d}.mp4")).collect();
    assert_eq!(maps, expected);
    let after = playlist
        .segments
        .iter()
        .position(|s| s.discontinuity)
        .expect("EXT-X-DISCONTINUITY");
    assert!(
        playlist.segments[after].map.is_some(),
        "the map follows the discontinuity"
    );

    let body = get_ok(&node.state, "/s/index.mpd", "application/dash+xml").await;
    let text = std::str::from_utf8(&body).unwrap();
    let mpd = dash_mpd_core::parse(text).expect("parses");
    assert_eq!(mpd.periods.len(), 2, "{text}");
    let ast = mpd.availabilityStartTime.unwrap().timestamp_millis();
    for (period, seq) in mpd.periods.iter().zip(&seqs) {
        assert_eq!(period.id.as_deref(), Some(format!("d{seq}").as_str()));
        let first = window
            .segments
            .iter()
            .find(|s| s.discontinuity_seq == *seq)
            .unwrap();
        let template = period.adaptations[0].SegmentTemplate.as_ref().unwrap();
        assert_eq!(template.startNumber, Some(first.msn));
        // Period@start + (S@t − presentationTimeOffset) is the segment's date.
        let t = template.SegmentTimeline.as_ref().unwrap().segments[0]
            .t
            .unwrap();
        let pto = template.presentationTimeOffset.unwrap();
        let start = i64::try_from(period.start.unwrap().as_millis()).unwrap();
        let date = ast + start + i64::try_from((t - pto) / 90).unwrap();
        assert!(
            (date - first.program_date_time_ms).abs() <= 1,
            "{date} vs {}",
            first.program_date_time_ms
        );
        for suffix in ["v", "a"] {
            get_ok(
                &node.state,
                &format!("/s/init-{seq}-{suffix}.mp4"),
                "video/mp4",
            )
            .await;
        }
    }
}
