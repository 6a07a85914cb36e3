//! The ladder encoder with the real `ffmpeg` (OTT-ELIG-3, OTT-GRP-1): a source cut into
//! segments is transcoded into two rungs whose every segment has the source segment's
//! MSN, start, duration and date and starts on its keyframe; ffprobe decodes the rungs
//! at their heights; an encoder killed mid-stream is started again and the rungs go on
//! after one discontinuity while the source never stops.

mod harness;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ingest::IngestEvent;
use media::TimelineMarker;
use server::stream::ladder::{encoder, LadderSettings};
use server::stream::package::Package;
use server::stream::pipeline::PipelineSettings;
use server::stream::rendition::Rendition;
use tokio::sync::{mpsc, watch};

/// 30 s of 320x180 H.264 (25 fps, a keyframe every second, B-frames) and AAC, made by
/// ffmpeg: its frames in decode order.
fn source_frames(dir: &std::path::Path) -> Vec<media::Frame> {
    let path = dir.join("source.ts");
    let status = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25"])
        .args(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"])
        .args([
            "-t", "30", "-c:v", "libx264", "-preset", "veryfast", "-g", "25",
        ])
        .args([
            "-keyint_min",
            "25",
            "-sc_threshold",
            "0",
            "-bf",
            "2",
            "-pix_fmt",
            "yuv420p",
        ])
        .args(["-c:a", "aac", "-b:a", "64k", "-f", "mpegts"])
        .arg(&path)
        .status()
        .expect("ffmpeg runs (scripts/test installs it)");
    assert!(status.success());
    media::ts::demux_frames(&std::fs::read(&path).expect("the source"))
}

/// Sends `frames` into the pipeline at about four times real time.
async fn play(frames: &[media::Frame], into: &mpsc::Sender<IngestEvent>) {
    for frame in frames {
        into.send(IngestEvent::Frame(frame.clone()))
            .await
            .expect("the pipeline runs");
        if frame.kind() == media::TrackKind::Video {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn marker(data: &[u8]) -> TimelineMarker {
    TimelineMarker::parse(&data[4..188]).expect("a timeline marker")
}

async fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn newest(rendition: &Rendition) -> Option<u64> {
    rendition.snapshot().newest().map(|s| s.msn)
}

/// Every segment of `rung`'s window is the source's segment of that MSN re-encoded:
/// same start, duration, date, a keyframe first.
fn assert_aligned(source: &Rendition, rung: &Rendition) -> usize {
    let window = rung.snapshot();
    let source = source.snapshot();
    for segment in &window.segments {
        let theirs = marker(&segment.data);
        let ours = source
            .segment(segment.msn)
            .expect("a source segment of that msn");
        let src = marker(&ours.data);
        assert_eq!(
            (
                theirs.start_ts,
                theirs.duration_ticks,
                theirs.program_date_time_ms
            ),
            (src.start_ts, src.duration_ticks, src.program_date_time_ms),
            "msn {} of {}",
            segment.msn,
            rung.name()
        );
        assert!(
            theirs.keyframe_start,
            "msn {} starts on the keyframe",
            segment.msn
        );
        assert_eq!(theirs.video_frames, src.video_frames, "one frame per frame");
        assert_eq!(theirs.audio_frames, src.audio_frames, "the source's audio");
    }
    window.segments.len()
}

/// ffprobe's width, height and decoded frame count of a rung's window.
fn probe(dir: &std::path::Path, rung: &Rendition) -> (u32, u32, u64) {
    let path = dir.join(format!("{}.ts", rung.name()));
    let bytes: Vec<u8> = rung
        .snapshot()
        .segments
        .iter()
        .flat_map(|s| s.data.to_vec())
        .collect();
    std::fs::write(&path, bytes).expect("write");
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-count_frames"])
        .args([
            "-show_entries",
            "stream=width,height,nb_read_frames",
            "-of",
            "csv=p=0",
        ])
        .arg(&path)
        .output()
        .expect("ffprobe runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "ffprobe decodes cleanly: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // The stream is listed under its program and on its own: the first line is enough.
    let fields: Vec<u64> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split(',')
        .map(|f| f.parse().unwrap_or_else(|_| panic!("numbers: {text:?}")))
        .collect();
    (fields[0] as u32, fields[1] as u32, fields[2])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_encoder_cuts_every_rung_on_the_source_and_comes_back_after_a_kill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let frames = source_frames(dir.path());
    let settings: LadderSettings = toml::from_str(
        r#"preset = "ultrafast"
rungs = [{ name = "source" }, { name = "144p", height = 144, video_kbps = 200 }, { name = "96p", height = 96, video_kbps = 100, profile = "baseline" }]"#,
    )
    .expect("settings");
    let rungs = settings.validate().expect("valid");
    let channel = Arc::new(Package::with_rungs(
        "m",
        20,
        packaging::render::renderer(2000),
        &settings.names(),
    ));
    let (events, events_rx) = mpsc::channel(64);
    let pipeline = tokio::spawn(server::stream::pipeline::run(
        Arc::clone(&channel),
        events_rx,
        PipelineSettings {
            languages: Vec::new(),
            target_duration_ms: 2000,
            state_file: None,
            publish_latency: Arc::default(),
        },
    ));
    let (stop_tx, stop) = watch::channel(false);
    let (status, task) =
        encoder::start(Arc::clone(&channel), settings, rungs, stop).expect("start");
    let task = tokio::spawn(task);
    let main = Arc::clone(channel.main());
    let (high, low) = (
        Arc::clone(channel.rendition("144p").expect("rung")),
        Arc::clone(channel.rendition("96p").expect("rung")),
    );
    let half = frames.len() / 2;
    play(&frames[..half], &events).await;
    let last = newest(&main).expect("the source is cut");
    wait_for(
        "both rungs to reach the source",
        Duration::from_secs(20),
        || newest(&high) == Some(last) && newest(&low) == Some(last),
    )
    .await;
    assert!(assert_aligned(&main, &high) >= 4);
    assert!(assert_aligned(&main, &low) >= 4);
    let (w, h, decoded) = probe(dir.path(), &high);
    assert_eq!(
        (w, h),
        (256, 144),
        "144p keeps the aspect ratio at an even width"
    );
    let window_frames: u32 = high
        .snapshot()
        .segments
        .iter()
        .map(|s| marker(&s.data).video_frames)
        .sum();
    assert_eq!(decoded, u64::from(window_frames), "every frame decodes");
    assert_eq!(probe(dir.path(), &low).1, 96);
    let master = String::from_utf8(channel.master_playlist().plain.bytes.to_vec()).expect("utf-8");
    let uris: Vec<&str> = master.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        uris,
        ["mono.m3u8", "144p/mono.m3u8", "96p/mono.m3u8"],
        "{master}"
    );
    assert!(master.contains("RESOLUTION=256x144"), "{master}");
    assert_eq!(
        status.json()["rungs"][0]["misaligned"],
        0,
        "{}",
        status.json()
    );

    // Kill the encoder mid-stream: the supervisor starts another one.
    let pid = status.pid().expect("a running encoder");
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    wait_for(
        "the encoder to be started again",
        Duration::from_secs(15),
        || status.starts.load(std::sync::atomic::Ordering::Relaxed) >= 2 && status.running(),
    )
    .await;
    assert_eq!(
        status.json()["last_fault"]["code"],
        110_002,
        "{}",
        status.json()
    );
    play(&frames[half..], &events).await;
    let last = newest(&main).expect("the source is cut");
    wait_for(
        "both rungs to go on after the restart",
        Duration::from_secs(20),
        || newest(&high) == Some(last) && newest(&low) == Some(last),
    )
    .await;
    for rung in [&high, &low] {
        assert_aligned(&main, rung);
        let window = rung.snapshot();
        let breaks = window.segments.iter().filter(|s| s.discontinuous).count();
        assert!(breaks <= 1, "{} breaks in {}", breaks, rung.name());
        let newest = window.newest().expect("segments");
        let source_seq = main.snapshot().newest().expect("source").discontinuity_seq;
        assert_eq!(
            newest.discontinuity_seq,
            source_seq + 1,
            "{}: one discontinuity more than the source",
            rung.name()
        );
    }
    let source_window = main.snapshot();
    let msns: Vec<u64> = source_window.segments.iter().map(|s| s.msn).collect();
    assert!(
        msns.windows(2).all(|w| w[1] == w[0] + 1)
            && source_window.segments.iter().all(|s| !s.discontinuous),
        "the source never waited for the encoder: {msns:?}"
    );
    stop_tx.send_replace(true);
    drop(events);
    pipeline.await.expect("the pipeline ends");
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the ladder stops")
        .expect("no panic");
}
