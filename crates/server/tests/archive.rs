//! Catch-up routes and the recorder, through the router (no socket) with a real archive
//! in a temporary directory (OTT-ARCH-2; DESIGN.md invariant 6).

mod harness;

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use dvr::files::{FileLayer, RealFiles};
use dvr::Retention;
use server::stream::package::{LiveSegment, Package, TrackSummary};
use server::stream::recorder::{Recorder, RecorderSettings};
use server::AppState;

use harness::{get, json, media_playlist, ts_segment, Answer};

/// The recordings start an hour ago (on a whole minute): segment `msn` starts `2 × msn`
/// seconds later. Recent, because an EVENT playlist may start at most a day back.
fn t0_ms() -> i64 {
    static T0: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *T0.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        (now - 3_600_000) / 60_000 * 60_000
    })
}

fn t0_s() -> i64 {
    t0_ms() / 1000
}

/// A segment of four TS packets of the recordings (see [`t0_ms`]).
fn segment(msn: u64) -> LiveSegment {
    ts_segment(msn, t0_ms(), 4)
}

struct Node {
    state: AppState,
    channel: Arc<Package>,
    recorder: Arc<Recorder>,
}

fn node(dir: &Path, files: Arc<dyn FileLayer>, queue: usize) -> Node {
    let state = harness::node(None);
    let channel = Arc::new(Package::new("s", 5, packaging::render::renderer(2000)));
    let mut settings = RecorderSettings::new(dir.to_owned(), Retention::default());
    settings.files = files;
    settings.queue = queue;
    let recorder = Recorder::start("s", settings).unwrap();
    assert!(channel.set_archive(Arc::clone(&recorder)));
    recorder.register_metrics(state.metrics());
    state.add_stream(Arc::clone(&channel), None);
    Node {
        state,
        channel,
        recorder,
    }
}

impl Node {
    /// What the pipeline does with a published segment.
    fn publish(&self, msn: u64) {
        let s = segment(msn);
        self.recorder.record(&s);
        self.channel.push(s, TrackSummary::default());
    }

    fn wait_recorded(&self, count: u64) {
        harness::wait_recorded(&self.recorder, count);
    }
}

/// Records 10..40 except 20..23 (a hole), as a node whose disk hiccupped would.
fn recorded_node(dir: &Path) -> Node {
    let node = node(dir, Arc::new(RealFiles::default()), 64);
    let msns: Vec<u64> = (10..20).chain(23..40).collect();
    for &msn in &msns {
        node.publish(msn);
    }
    node.wait_recorded(msns.len() as u64);
    node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_period_is_a_vod_playlist_of_the_archived_segments() {
    let dir = tempfile::tempdir().unwrap();
    let node = recorded_node(dir.path());
    // 40 s from segment 12 on: 12..19, the hole, 23..31.
    let from = t0_s() + 24;
    let Answer {
        status,
        headers,
        body,
    } = get(&node.state, &format!("/s/index-{from}-40.m3u8")).await;
    assert_eq!(status, StatusCode::OK, "{body:?}");
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/vnd.apple.mpegurl"
    );
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(text.contains("#EXT-X-PLAYLIST-TYPE:VOD\n"), "{text}");
    assert!(text.ends_with("#EXT-X-ENDLIST\n"), "{text}");
    let playlist = media_playlist(&body);
    assert!(playlist.end_list);
    let uris: Vec<&str> = playlist.segments.iter().map(|s| s.uri.as_str()).collect();
    let expected: Vec<String> = (12..20)
        .chain(23..32)
        .map(|m| format!("dvr-{m}.ts"))
        .collect();
    assert_eq!(uris, expected);
    for (i, s) in playlist.segments.iter().enumerate() {
        assert!(s.program_date_time.is_some(), "segment {i} without PDT");
        assert_eq!(s.duration, 2.0);
        // Exactly one discontinuity: over the hole, before segment 23.
        assert_eq!(s.discontinuity, s.uri == "dvr-23.ts", "{}", s.uri);
    }
    // Every listed segment is served, byte for byte.
    for msn in (12..20).chain(23..32) {
        let Answer {
            status,
            headers,
            body,
        } = get(&node.state, &format!("/s/dvr-{msn}.ts")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "video/mp2t");
        assert_eq!(body, segment(msn).data);
    }
    // A hole is a 404, like anything outside the archive.
    for uri in [
        "/s/dvr-21.ts".to_owned(),
        format!("/s/index-{}-30.m3u8", t0_s() - 3600),
        format!("/s/index-{}-30.m3u8", t0_s() + 3600),
        format!("/s/archive-{}-4.ts", t0_s() + 41),
        format!("/s/index-{}-now.m3u8", t0_s() + 3600),
    ] {
        let Answer { status, body, .. } = get(&node.state, &uri).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(json(&body)["code"], 108_001, "{uri}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_a_moment_to_now_is_an_event_playlist_and_a_period_downloads_as_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let node = recorded_node(dir.path());
    let Answer { status, body, .. } =
        get(&node.state, &format!("/s/index-{}-now.m3u8", t0_s() + 60)).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(text.contains("#EXT-X-PLAYLIST-TYPE:EVENT\n"));
    assert!(!text.contains("#EXT-X-ENDLIST"));
    let first = media_playlist(&body);
    let uris: Vec<String> = first.segments.iter().map(|s| s.uri.clone()).collect();
    assert_eq!(uris.first().map(String::as_str), Some("dvr-30.ts"));
    assert_eq!(uris.last().map(String::as_str), Some("dvr-39.ts"));
    // It grows as recording goes on, from the same first segment.
    node.publish(40);
    node.wait_recorded(28);
    let Answer { body, .. } = get(&node.state, &format!("/s/index-{}-now.m3u8", t0_s() + 60)).await;
    let again = media_playlist(&body);
    assert_eq!(again.media_sequence, first.media_sequence);
    assert_eq!(again.segments[..first.segments.len()], first.segments[..]);
    assert_eq!(again.segments.len(), uris.len() + 1);

    // 10 s from segment 15: the concatenation of 15..19, with its length up front.
    let Answer {
        status,
        headers,
        body,
    } = get(&node.state, &format!("/s/archive-{}-10.ts", t0_s() + 30)).await;
    assert_eq!(status, StatusCode::OK);
    let expected: Vec<u8> = (15..20).flat_map(|m| segment(m).data.to_vec()).collect();
    assert_eq!(headers[header::CONTENT_LENGTH], expected.len().to_string());
    assert_eq!(body.as_ref(), &expected[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_shift_is_a_sliding_window_behind_now() {
    let dir = tempfile::tempdir().unwrap();
    let node = recorded_node(dir.path());
    // The live edge inside segment 35: the window is the 5 segments up to it.
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let behind = now_s - (t0_s() + 71);
    let Answer { status, body, .. } =
        get(&node.state, &format!("/s/timeshift_rel-{behind}.m3u8")).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(!text.contains("PLAYLIST-TYPE"), "{text}");
    assert!(!text.contains("ENDLIST"), "{text}");
    let playlist = media_playlist(&body);
    let uris: Vec<&str> = playlist.segments.iter().map(|s| s.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "dvr-31.ts",
            "dvr-32.ts",
            "dvr-33.ts",
            "dvr-34.ts",
            "dvr-35.ts"
        ]
    );
    // Ordinals continue across the hole (10..20 are ordinals 0..10, 23 is 10).
    assert_eq!(playlist.media_sequence, 18);
    assert_eq!(playlist.discontinuity_sequence, 1);
    // Before anything was recorded: 404.
    let Answer { status, .. } = get(
        &node.state,
        &format!("/s/timeshift_rel-{}.m3u8", now_s - t0_s() + 60),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_hostile_names_are_400_never_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let node = recorded_node(dir.path());
    for name in [
        "index--5-30.m3u8",
        "index-5--30.m3u8",
        "index-1700000000-0.m3u8",
        "index-1700000000-86401.m3u8",
        "index-99999999999999999999999-30.m3u8",
        "index-1700000000-99999999999999999999.m3u8",
        "timeshift_rel--60.m3u8",
        "timeshift_rel-1e3.m3u8",
        "archive-1700000000-x.ts",
        "archive--1-10.ts",
        "dvr-..%2F..%2Findex.log.ts",
        "dvr-%2E%2E.ts",
        "dvr-18446744073709551616.ts",
    ] {
        let Answer { status, body, .. } = get(&node.state, &format!("/s/{name}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(json(&body)["code"], 108_003, "{name}");
    }
    // An EVENT playlist from more than a day back would list too much.
    let Answer { status, body, .. } = get(
        &node.state,
        &format!("/s/index-{}-now.m3u8", t0_s() - 2 * 86_400),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json(&body)["code"], 108_003);
    for uri in [
        "/s/../archive/s/ts/index.log",
        "/s/index.log",
        "/s/0000000000.ts",
    ] {
        let Answer { status, .. } = get(&node.state, uri).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
    }
    // A stream that is not recorded has no archive.
    let plain = Arc::new(Package::new("p", 5, packaging::render::renderer(2000)));
    plain.push(segment(1), TrackSummary::default());
    node.state.add_stream(plain, None);
    let Answer { status, body, .. } =
        get(&node.state, &format!("/p/index-{}-30.m3u8", t0_s())).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json(&body)["code"], 108_001);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_api_reports_ranges_gaps_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let node = recorded_node(dir.path());
    let Answer { status, body, .. } = get(&node.state, "/api/streams/s").await;
    assert_eq!(status, StatusCode::OK);
    let dvr = &json(&body)["dvr"];
    assert_eq!(
        dvr["ranges"]["ts"],
        serde_json::json!([{ "from_ms": t0_ms() + 20_000, "to_ms": t0_ms() + 80_000 }])
    );
    assert_eq!(
        dvr["gaps"]["ts"],
        serde_json::json!([{ "from_ms": t0_ms() + 40_000, "to_ms": t0_ms() + 46_000 }])
    );
    assert_eq!(dvr["segments"], 27);
    assert_eq!(dvr["bytes"], 27 * 188 * 4);
    assert_eq!(dvr["errors"], 0);
    assert_eq!(dvr["recording"], true);
    let Answer { body: metrics, .. } = get(&node.state, "/metrics").await;
    let metrics = String::from_utf8(metrics.to_vec()).unwrap();
    assert!(
        metrics.contains("brdyun_dvr_segments_recorded_total{stream=\"s\"} 27"),
        "{metrics}"
    );
}

/// A disk that can be made to fail (no space) and to be slow.
#[derive(Debug, Default)]
struct FlakyDisk {
    full: AtomicBool,
    delay_ms: AtomicU64,
}

impl FileLayer for FlakyDisk {
    fn write_at(&self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        std::thread::sleep(Duration::from_millis(self.delay_ms.load(Ordering::SeqCst)));
        if self.full.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device",
            ));
        }
        RealFiles::default().write_at(path, offset, data)
    }
    fn set_len(&self, path: &Path, len: u64) -> io::Result<()> {
        RealFiles::default().set_len(path, len)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        RealFiles::default().remove(path)
    }
    fn replace(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        RealFiles::default().replace(path, data)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_reported_live_goes_on_and_recording_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FlakyDisk::default());
    let node = node(dir.path(), Arc::clone(&disk) as Arc<dyn FileLayer>, 64);
    for msn in 0..5 {
        node.publish(msn);
    }
    node.wait_recorded(5);
    disk.full.store(true, Ordering::SeqCst);
    for msn in 5..10 {
        node.publish(msn);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while node.recorder.status()["errors"].as_u64() < Some(5) {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    let Answer { body, .. } = get(&node.state, "/api/streams/s").await;
    let doc = json(&body);
    assert_eq!(doc["dvr"]["recording"], false);
    assert_eq!(doc["dvr"]["last_error"]["kind"], "disk_full");
    // Live delivery did not notice.
    assert_eq!(doc["last_msn"], 9);
    let Answer { status, .. } = get(&node.state, "/s/seg-9.ts").await;
    assert_eq!(status, StatusCode::OK);
    // Space returns: the next segments are archived, the lost ones are a gap.
    disk.full.store(false, Ordering::SeqCst);
    for msn in 10..13 {
        node.publish(msn);
    }
    node.wait_recorded(8);
    let dvr = node.recorder.status();
    assert_eq!(dvr["recording"], true);
    assert_eq!(
        dvr["gaps"]["ts"],
        serde_json::json!([{ "from_ms": t0_ms() + 10_000, "to_ms": t0_ms() + 20_000 }])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_disk_never_blocks_live_and_drops_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FlakyDisk::default());
    disk.delay_ms.store(100, Ordering::SeqCst);
    let node = node(dir.path(), Arc::clone(&disk) as Arc<dyn FileLayer>, 2);
    let started = Instant::now();
    for msn in 0..30 {
        node.publish(msn);
    }
    // Handing 30 segments over took no disk time at all.
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    let dvr = node.recorder.status();
    let dropped = dvr["counters"]["dropped"].as_u64().unwrap();
    assert!(dropped >= 20, "{dvr}");
    disk.delay_ms.store(0, Ordering::SeqCst);
    node.wait_recorded(30 - dropped);
    // The next segment lands after the dropped ones.
    node.publish(30);
    node.wait_recorded(31 - dropped);
    let dvr = node.recorder.status();
    // Whatever was dropped shows as gaps: the archive never claims a segment it lacks.
    let segments = dvr["segments"].as_u64().unwrap();
    assert_eq!(segments, 31 - dropped);
    assert!(!dvr["gaps"]["ts"].as_array().unwrap().is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Any file name under a recorded stream is answered without a panic or a 5xx.
    #[test]
    fn any_file_name_is_answered_safely(
        name in "(index-|timeshift_rel-|archive-|dvr-)?[-0-9a-z.%/]{0,24}(\\.m3u8|\\.ts)?"
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let node = node(dir.path(), Arc::new(RealFiles::default()), 4);
        node.publish(1);
        node.wait_recorded(1);
        let uri = format!("/s/{}", name.replace('/', "%2F"));
        let Ok(request) = Request::get(&uri).body(Body::empty()) else {
            return Ok(());
        };
        let status = runtime.block_on(async {
            harness::answer(&node.state, request).await.status
        });
        proptest::prop_assert!(status.as_u16() < 500, "{} -> {}", uri, status);
    }
}

/// After a restart whose timeline counters were lost (or are older than the archive),
/// the live numbering continues after the archive's newest segment: a number the archive
/// holds is never handed out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_numbering_continues_after_the_archive() {
    use media::ts::demux::{DemuxEvent, Demuxer};
    use server::stream::pipeline::{self, PersistedTimeline, PipelineSettings};

    let dir = tempfile::tempdir().unwrap();
    // An archive left by an earlier run, newest segment 500.
    {
        let (mut store, _) = dvr::Store::open(
            &dir.path().join("ts"),
            dvr::Protocol::Ts,
            Arc::new(RealFiles::default()),
            dvr::store::DEFAULT_SPAN_MS,
        )
        .unwrap();
        let old = segment(500);
        store
            .append(
                dvr::store::SegmentMeta {
                    msn: 500,
                    discontinuity_seq: 4,
                    discontinuous: false,
                    start_ms: old.program_date_time_ms,
                    duration_ticks: old.duration_ticks,
                },
                &old.data,
            )
            .unwrap();
    }
    // Counters that lag behind it.
    let state_file = dir.path().join("s.timeline.json");
    std::fs::write(
        &state_file,
        serde_json::to_vec(&PersistedTimeline {
            msn: 10,
            discontinuity_seq: 0,
        })
        .unwrap(),
    )
    .unwrap();
    let node = node(dir.path(), Arc::new(RealFiles::default()), 64);
    assert_eq!(node.recorder.newest(), Some((500, 4)));

    let (tx, rx) = tokio::sync::mpsc::channel(4096);
    let run = tokio::spawn(pipeline::run_recording(
        Arc::clone(&node.channel),
        rx,
        PipelineSettings {
            languages: Vec::new(),
            target_duration_ms: 1000,
            state_file: Some(state_file),
            publish_latency: Arc::default(),
        },
        Some(Arc::clone(&node.recorder)),
    ));
    // A real 3 s H.264/AAC clip made by ffmpeg.
    let clip = include_bytes!("../../media/tests/fixtures/h264_aac.ts");
    let mut demuxer = Demuxer::new();
    let mut events = Vec::new();
    demuxer.push(clip, &mut events);
    demuxer.flush(&mut events);
    for event in events {
        if let DemuxEvent::Frame(frame) = event {
            tx.send(ingest::IngestEvent::Frame(frame)).await.unwrap();
        }
    }
    drop(tx);
    run.await.unwrap();

    let live: Vec<u64> = node
        .channel
        .snapshot()
        .segments
        .iter()
        .map(|s| s.msn)
        .collect();
    assert!(live.len() >= 2, "{live:?}");
    assert_eq!(live[0], 501, "{live:?}");
    assert_eq!(node.channel.snapshot().segments[0].discontinuity_seq, 5);
    // And the new segments are archived after the old one.
    node.wait_recorded(live.len() as u64);
    let archived: Vec<u64> = node
        .recorder
        .reader()
        .with_index(|i| i.entries().iter().map(|e| e.msn).collect());
    assert_eq!(archived[0], 500);
    assert_eq!(&archived[1..], &live[..]);
}
