//! Expensive reads are bounded: a transcript covers at most 4 hours; transcripts,
//! unprobed catch-up masters and static catch-up MPDs are archive scans under the
//! node's cap (over it: the back-pressure 503, 109002, while live playlists are
//! served); a catch-up master probes each rendition's run once, whatever the `from`.

mod harness;

use std::sync::Arc;

use harness::{as_text, demo_frames, get, json, tracks};
use media::segmenter::{Segmenter, SegmenterConfig, StartPoint};
use packaging::archive::master::probe_counts;
use server::stream::archive_scans::{ScanPermit, DEFAULT_ARCHIVE_SCANS};
use server::stream::package::{LiveSegment, Package};
use server::stream::recorder::{Recorder, RecorderSettings};
use server::AppState;

/// The demo clip is dated from this moment (Unix ms) by the segmenter below.
const T0_MS: i64 = 1_700_000_000_000;

/// The demo clip cut into segments, as a publisher's pipeline would.
fn clip_segments() -> Vec<LiveSegment> {
    let mut segmenter = Segmenter::new(
        SegmenterConfig::default(),
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut out = Vec::new();
    for frame in demo_frames() {
        out.extend(segmenter.push(frame, T0_MS));
        while let Some(s) = segmenter.pop_ready() {
            out.push(s);
        }
    }
    out.into_iter().map(LiveSegment::from).collect()
}

/// `segments` with a caption block each: track `en`, one cue `said in {msn}` from
/// 0.1 s to 0.5 s into the segment.
fn captioned(segments: Vec<LiveSegment>) -> Vec<LiveSegment> {
    use media::captions::{CaptionBlock, CaptionTrack, Cue};
    segments
        .into_iter()
        .map(|mut segment| {
            let start = media::fmp4::marker_of(&segment.data)
                .expect("a marker")
                .start_ts;
            let block = CaptionBlock {
                msn: segment.msn,
                tracks: vec![CaptionTrack {
                    id: "en".into(),
                    language: "en".into(),
                    name: "English".into(),
                }],
                cues: vec![Cue {
                    track: 0,
                    start_ts: start + 9_000,
                    end_ts: start + 45_000,
                    text: format!("said in {}", segment.msn),
                }],
            };
            segment.data = media::ts::captions::splice_block(&segment.data, &block);
            segment
        })
        .collect()
}

/// A node with stream `s`, a package of the source and the rung `240p` (the source's
/// own segments), both recorded in `dir`.
fn recorded_package(dir: &std::path::Path) -> (AppState, Arc<Package>, Vec<Arc<Recorder>>) {
    recorded_package_of(dir, clip_segments())
}

/// [`recorded_package`] of `segments`.
fn recorded_package_of(
    dir: &std::path::Path,
    segments: Vec<LiveSegment>,
) -> (AppState, Arc<Package>, Vec<Arc<Recorder>>) {
    let state = harness::node(None);
    let channel = Arc::new(Package::with_rungs(
        "s",
        5,
        packaging::render::renderer(2000),
        &["source".to_owned(), "240p".to_owned()],
    ));
    state.add_stream(Arc::clone(&channel), None);
    let mut recorders = Vec::new();
    let renditions = [
        (Arc::clone(channel.main()), "main"),
        (
            Arc::clone(channel.rendition("240p").expect("the rung")),
            "240p",
        ),
    ];
    for (rendition, name) in renditions {
        let settings = RecorderSettings::new(dir.join(name), dvr::Retention::default());
        let recorder = Recorder::start(name, settings).expect("the archive opens");
        assert!(rendition.set_archive(Arc::clone(&recorder)));
        for segment in &segments {
            recorder.record(segment);
            channel.push_to(&rendition, segment.clone(), tracks(), None);
        }
        harness::wait_recorded(&recorder, segments.len() as u64);
        recorders.push(recorder);
    }
    (state, channel, recorders)
}

/// Every scan permit of the node, held as running scans would hold them.
fn hold_every_scan(state: &AppState) -> Vec<ScanPermit> {
    let held: Vec<ScanPermit> = std::iter::from_fn(|| state.archive_scans().try_start())
        .take(DEFAULT_ARCHIVE_SCANS + 1)
        .collect();
    assert_eq!(held.len(), DEFAULT_ARCHIVE_SCANS, "the cap is the default");
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_longer_than_four_hours_is_refused_with_its_code() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (state, _channel, _recorders) = recorded_package(dir.path());
    let from = T0_MS / 1000 - 10;
    for file in [
        format!("captions-{from}-14401.vtt"),
        format!("captions-en-{from}-86400.vtt"),
    ] {
        let answer = get(&state, &format!("/s/{file}")).await;
        assert_eq!(answer.status, 400, "{file}");
        let body = json(&answer.body);
        assert_eq!(body["code"], 112_010, "{file}: {body}");
        assert_eq!(body["field"], "duration", "{file}: {body}");
    }
    // Four hours is a transcript (this clip has no captions: no transcript, 404).
    let answer = get(&state, &format!("/s/captions-{from}-14400.vtt")).await;
    assert_eq!(answer.status, 404, "{}", as_text(&answer.body));
    assert_eq!(state.archive_scans().running(), 0, "the scan ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_over_the_cap_get_the_back_pressure_answer_while_live_is_served() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (state, _channel, _recorders) = recorded_package(dir.path());
    let from = T0_MS / 1000 - 10;
    let held = hold_every_scan(&state);

    // A transcript and a master whose renditions were never probed are scans.
    for file in [
        format!("captions-{from}-600.vtt"),
        format!("index-{from}-600.m3u8"),
        format!("index-{from}-600.mpd"),
    ] {
        let answer = get(&state, &format!("/s/{file}")).await;
        assert_eq!(answer.status, 503, "{file}: {}", as_text(&answer.body));
        assert_eq!(answer.headers["retry-after"], "2", "{file}");
        assert_eq!(answer.headers["cache-control"], "no-store", "{file}");
        let body = json(&answer.body);
        assert_eq!(body["code"], 109_002, "{file}: {body}");
        assert_eq!(body["maxRetries"], 3, "{file}: {body}");
        assert_eq!(body["retryAfterSeconds"], 2, "{file}: {body}");
    }
    // What never scans is served meanwhile: the live master and media playlists, a
    // live segment, a catch-up media playlist (the index only), an archived segment.
    for path in [
        "/s/index.m3u8".to_owned(),
        "/s/mono.m3u8".to_owned(),
        "/s/240p/mono.m3u8".to_owned(),
        format!("/s/mono-{from}-600.m3u8"),
        "/s/dvr-1.ts".to_owned(),
    ] {
        let answer = get(&state, &path).await;
        assert_eq!(answer.status, 200, "{path}: {}", as_text(&answer.body));
    }
    // Refused: the test's own look past the cap, then the three requests.
    let metrics = as_text(&get(&state, "/metrics").await.body).to_owned();
    assert_eq!(
        harness::metric(&metrics, "brdyun_archive_scans_refused_total"),
        Some(4),
        "{metrics}"
    );

    // Once the scans end, the same requests are answered.
    drop(held);
    for file in [
        format!("index-{from}-600.m3u8"),
        format!("index-{from}-600.mpd"),
    ] {
        let answer = get(&state, &format!("/s/{file}")).await;
        assert_eq!(answer.status, 200, "{file}: {}", as_text(&answer.body));
    }
    assert_eq!(state.archive_scans().running(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_masters_for_many_periods_probe_each_rendition_once() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (state, _channel, _recorders) = recorded_package(dir.path());
    let before = probe_counts();
    let first_second = T0_MS / 1000;
    let mut masters = Vec::new();
    // Forty distinct periods, starting before the recording (10 s long) or in it.
    for k in 0..40 {
        let from = first_second - 32 + k;
        let answer = get(&state, &format!("/s/index-{from}-{}.m3u8", 300 + k)).await;
        assert_eq!(answer.status, 200, "from {from}: {}", as_text(&answer.body));
        masters.push(as_text(&answer.body).to_owned());
    }
    let after = probe_counts();
    assert_eq!(
        after.misses - before.misses,
        2,
        "one demux per rendition (one run each), not one per request"
    );
    assert_eq!(after.hits - before.hits, 2 * 40 - 2);
    for master in &masters {
        assert_eq!(
            master
                .lines()
                .filter(|l| l.starts_with("#EXT-X-STREAM-INF:") && l.contains("CODECS=\"avc1."))
                .count(),
            2,
            "both renditions with their probed codecs:\n{master}"
        );
    }
    // A probed master is no scan: served with every permit taken.
    let _held = hold_every_scan(&state);
    let answer = get(&state, &format!("/s/index-{}-60.m3u8", first_second)).await;
    assert_eq!(answer.status, 200, "{}", as_text(&answer.body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_periods_transcript_is_read_once_and_served_again_without_a_scan() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (state, _channel, _recorders) = recorded_package_of(dir.path(), captioned(clip_segments()));
    // Recorded past its end (the clip lasts about 10 s): the period is closed.
    let from = T0_MS / 1000;
    let path = format!("/s/captions-en-{from}-5.vtt");
    let first = get(&state, &path).await;
    assert_eq!(first.status, 200, "{}", as_text(&first.body));
    assert!(
        as_text(&first.body).contains("said in 0"),
        "{}",
        as_text(&first.body)
    );

    let _held = hold_every_scan(&state);
    let again = get(&state, &path).await;
    assert_eq!(again.status, 200, "kept: no scan needed");
    assert_eq!(again.body, first.body);
    assert_eq!(
        again.headers["content-disposition"],
        format!("attachment; filename=\"captions-{from}-5.vtt\"")
    );
    // Another period is another transcript: a scan, refused while the cap is full.
    let other = get(&state, &format!("/s/captions-en-{from}-4.vtt")).await;
    assert_eq!(other.status, 503);
    assert_eq!(json(&other.body)["code"], 109_002);
}
