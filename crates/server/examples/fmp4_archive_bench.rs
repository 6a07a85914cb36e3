//! Cost of serving fMP4 catch-up derived from the TS archive on request (OTT-ARCH-1),
//! against the TS archive's own answers in the same run:
//!
//! ```sh
//! cargo run -p server --release --example fmp4_archive_bench
//! ```
//!
//! One hour of the demo meeting (1800 segments of 2 s, the demo clip's full segments
//! repeated) is recorded into a temporary archive; then the router answers, in-process,
//! the hour as a TS VOD playlist, as a VOD fMP4 playlist and as a static MPD, and one
//! archived segment as TS, as muxed fMP4 and as the DASH video and audio files. Times
//! are per request, medians of repeated runs (the archive is in the page cache, as a
//! busy node's recent archive is).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use bytes::Bytes;
use dvr::Retention;
use http_body_util::BodyExt;
use media::{Segmenter, SegmenterConfig, StartPoint};
use server::metrics::Metrics;
use server::stream::package::{LiveSegment, Package};
use server::stream::recorder::{Recorder, RecorderSettings};
use server::{router, AppState, NodeIdentity};
use tower::ServiceExt;

const SEGMENTS: u64 = 1800;
const T0_MS: i64 = 1_714_564_800_000;

/// The demo clip cut into 2-s segments; only the full ones.
fn clip_segments() -> Vec<Bytes> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/demo-meeting.ts");
    let ts = std::fs::read(path).expect("the demo clip");
    let frames = media::ts::demux_frames(&ts);
    let mut segmenter = Segmenter::new(
        SegmenterConfig::default(),
        StartPoint::Fresh {
            min_msn: 0,
            min_discontinuity_seq: 0,
        },
    );
    let mut out = Vec::new();
    for f in frames {
        let now = T0_MS + (f.dts / 90) as i64;
        out.extend(segmenter.push(f, now));
        while let Some(s) = segmenter.pop_ready() {
            out.push(s);
        }
    }
    out.into_iter()
        .filter(|s| s.duration_ticks == 180_000)
        .map(|s| s.data)
        .collect()
}

async fn time(state: &AppState, uri: &str, rounds: usize) -> (Duration, usize) {
    let mut times = Vec::with_capacity(rounds);
    let mut size = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let response = router(state.clone())
            .oneshot(Request::get(uri).body(Body::empty()).expect("request"))
            .await
            .expect("answer");
        assert_eq!(response.status(), StatusCode::OK, "{uri}");
        size = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .len();
        times.push(started.elapsed());
    }
    times.sort();
    (times[times.len() / 2], size)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let clip = clip_segments();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = RecorderSettings::new(dir.path().to_owned(), Retention::default());
    settings.queue = SEGMENTS as usize;
    let recorder = Recorder::start("s", settings).expect("recorder");
    let channel = Arc::new(Package::new("s", 30, packaging::render::renderer(2000)));
    assert!(channel.set_archive(Arc::clone(&recorder)));
    for msn in 0..SEGMENTS {
        recorder.record(&LiveSegment {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            duration_ticks: 180_000,
            program_date_time_ms: T0_MS + msn as i64 * 2000,
            data: clip[(msn as usize) % clip.len()].clone(),
            ..LiveSegment::default()
        });
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while recorder.status()["counters"]["recorded"].as_u64() < Some(SEGMENTS) {
        assert!(Instant::now() < deadline, "{}", recorder.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let state = AppState::new(
        NodeIdentity {
            name: "bench".into(),
            hostname: None,
        },
        Metrics::new(),
        None,
    );
    state.add_stream(channel, None);
    let from = T0_MS / 1000;
    let msn = SEGMENTS / 2;
    println!(
        "archive: {SEGMENTS} segments of 2 s (1 h), {} KiB per segment",
        clip[0].len() / 1024
    );
    println!("{:<38} {:>12} {:>10}", "request", "median", "bytes");
    for (label, uri, rounds) in [
        (
            "1 h TS VOD playlist",
            format!("/s/index-{from}-3600.m3u8"),
            50,
        ),
        (
            "1 h fMP4 VOD playlist",
            format!("/s/fmp4-{from}-3600.m3u8"),
            50,
        ),
        ("1 h static MPD", format!("/s/index-{from}-3600.mpd"), 50),
        ("segment as TS (disk read)", format!("/s/dvr-{msn}.ts"), 200),
        ("segment as fMP4, muxed", format!("/s/dvr-{msn}.m4s"), 200),
        (
            "segment as fMP4, video (DASH)",
            format!("/s/dvr-{msn}-v.m4s"),
            200,
        ),
        (
            "segment as fMP4, audio (DASH)",
            format!("/s/dvr-{msn}-a.m4s"),
            200,
        ),
        (
            "init of the run, muxed",
            format!("/s/dvr-init-{msn}.mp4"),
            200,
        ),
    ] {
        let (median, size) = time(&state, &uri, rounds).await;
        println!(
            "{label:<38} {:>9.3} ms {size:>10}",
            median.as_secs_f64() * 1000.0
        );
    }
}
