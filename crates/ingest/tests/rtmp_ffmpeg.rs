//! The RTMP server against a real publisher: ffmpeg pushing H.264 + AAC over
//! `rtmp://127.0.0.1:PORT/live/NAME?key=...`, with right and wrong keys.

use std::net::SocketAddr;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ingest::publish::{PublishAuthorizer, PublishRejection, PublishRequest};
use ingest::rtmp::{serve_with_stats, RtmpLimits, RtmpStats};
use ingest::{IngestEvent, IngestSender};
use media::codec::aac::AudioSpecificConfig;
use media::{Codec, Frame, PTS_MASK};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

/// Accepts `live/cam` with key `SECRET`, once; records every request.
struct TestAuthorizer {
    sender: Mutex<Option<IngestSender>>,
    requests: Mutex<Vec<PublishRequest>>,
}

impl PublishAuthorizer for TestAuthorizer {
    fn authorize(&self, request: &PublishRequest) -> Result<IngestSender, PublishRejection> {
        self.requests
            .lock()
            .expect("test lock")
            .push(request.clone());
        if request.app != "live" || request.stream != "cam" {
            return Err(PublishRejection::UnknownStream);
        }
        if request.key.as_deref() != Some("SECRET") {
            return Err(PublishRejection::WrongKey);
        }
        self.sender
            .lock()
            .expect("test lock")
            .take()
            .ok_or(PublishRejection::Busy)
    }
}

struct Harness {
    addr: SocketAddr,
    auth: Arc<TestAuthorizer>,
    stats: Arc<RtmpStats>,
    rx: mpsc::Receiver<IngestEvent>,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<()>,
}

async fn start() -> Harness {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let (tx, rx) = mpsc::channel(4096);
    let auth = Arc::new(TestAuthorizer {
        sender: Mutex::new(Some(tx)),
        requests: Mutex::new(Vec::new()),
    });
    let stats = Arc::new(RtmpStats::default());
    let (stop, stop_rx) = oneshot::channel::<()>();
    let server = tokio::spawn(serve_with_stats(
        listener,
        auth.clone(),
        RtmpLimits::default(),
        stats.clone(),
        async {
            let _ = stop_rx.await;
        },
    ));
    Harness {
        addr,
        auth,
        stats,
        rx,
        stop,
        server,
    }
}

/// Runs ffmpeg with `args`, bounded; fails the test with a clear message if ffmpeg is missing.
async fn ffmpeg(args: &[String]) -> ExitStatus {
    let mut child = tokio::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-nostdin"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("ffmpeg is required for this test (apt install ffmpeg): {e}"));
    timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("ffmpeg did not finish within 60 s")
        .expect("waiting for ffmpeg")
}

fn publish_args(addr: SocketAddr, path: &str) -> Vec<String> {
    [
        "-re",
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x180:rate=25",
        "-f",
        "lavfi",
        "-i",
        "sine",
        "-c:v",
        "libx264",
        "-g",
        "50",
        "-bf",
        "2",
        "-c:a",
        "aac",
        "-t",
        "4",
        "-f",
        "flv",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("rtmp://{addr}/live/{path}")])
    .collect()
}

/// NAL unit types of an Annex B access unit (4-byte start codes, as the server writes).
fn h264_nal_types(data: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    let mut i = 0;
    while i + 4 < data.len() {
        if data[i..i + 4] == [0, 0, 0, 1] {
            types.push(data[i + 4] & 0x1f);
            i += 4;
        } else {
            i += 1;
        }
    }
    types
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ffmpeg_h264_aac_publish_becomes_frames() {
    let mut h = start().await;
    let status = ffmpeg(&publish_args(h.addr, "cam?key=SECRET")).await;
    assert!(status.success(), "ffmpeg publish failed: {status}");

    // The publisher is gone: the session drops its sender and the channel ends.
    let mut events = Vec::new();
    while let Some(event) = timeout(Duration::from_secs(10), h.rx.recv())
        .await
        .expect("channel did not close after the publisher left")
    {
        events.push(event);
    }
    let frames: Vec<Frame> = events
        .into_iter()
        .map(|e| match e {
            IngestEvent::Frame(f) => f,
            other => panic!("unexpected event {other:?}"),
        })
        .collect();

    let requests = h.auth.requests.lock().expect("test lock").clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        (
            requests[0].app.as_str(),
            requests[0].stream.as_str(),
            requests[0].key.as_deref()
        ),
        ("live", "cam", Some("SECRET"))
    );

    let video: Vec<&Frame> = frames.iter().filter(|f| f.codec == Codec::H264).collect();
    let audio: Vec<&Frame> = frames.iter().filter(|f| f.codec == Codec::Aac).collect();
    assert_eq!(video.len() + audio.len(), frames.len());
    assert!(
        (95..=101).contains(&video.len()),
        "expected ~100 video frames, got {}",
        video.len()
    );

    let first = video[0];
    assert!(first.keyframe, "first video frame must be a keyframe");
    let types = h264_nal_types(&first.data);
    assert_eq!(&types[..2], &[7, 8], "keyframe must start with SPS, PPS");
    assert!(types.contains(&5), "keyframe must carry an IDR slice");
    let keyframes: Vec<&&Frame> = video.iter().filter(|f| f.keyframe).collect();
    assert_eq!(keyframes.len(), 2, "-g 50 over 100 frames gives two GOPs");
    for k in &keyframes {
        assert_eq!(&h264_nal_types(&k.data)[..2], &[7, 8]);
    }
    for f in &video {
        assert!(f.pts < 1 << 33 && f.dts < 1 << 33);
        // No wrap in this short run: PTS >= DTS as plain numbers.
        assert!(f.pts >= f.dts, "pts {} < dts {}", f.pts, f.dts);
    }
    assert!(
        video.iter().any(|f| f.pts > f.dts),
        "with -bf 2 some frames are reordered"
    );
    for pair in video.windows(2) {
        assert!(pair[1].dts > pair[0].dts, "video dts must increase");
        assert!(
            pair[1].dts - pair[0].dts <= 3600 + 90,
            "25 fps: 40 ms steps"
        );
    }
    let mut pts: Vec<u64> = video.iter().map(|f| f.pts).collect();
    pts.sort_unstable();
    pts.dedup();
    assert_eq!(pts.len(), video.len(), "presentation times are distinct");

    // sine at 44.1 kHz for 4 s: ~172 AAC frames of 1024 samples.
    assert!(
        (160..=180).contains(&audio.len()),
        "audio frames: {}",
        audio.len()
    );
    for f in &audio {
        let asc = AudioSpecificConfig::from_adts(&f.data).expect("valid adts header");
        assert_eq!(asc.object_type, 2);
        let len = (usize::from(f.data[3] & 0x03) << 11)
            | (usize::from(f.data[4]) << 3)
            | usize::from(f.data[5] >> 5);
        assert_eq!(len, f.data.len(), "adts frame length covers the frame");
        assert!(f.keyframe && f.pts == f.dts && f.pts <= PTS_MASK);
    }
    for pair in audio.windows(2) {
        assert!(pair[1].dts > pair[0].dts, "audio timestamps must increase");
    }

    let stats = h.stats.snapshot();
    assert_eq!(stats.publishes, 1);
    assert_eq!(stats.rejections, 0);
    assert_eq!(stats.protocol_errors, 0);
    assert_eq!(stats.frames, frames.len() as u64);
    assert!(stats.bytes > 10_000);

    let _ = h.stop.send(());
    timeout(Duration::from_secs(5), h.server)
        .await
        .expect("server stops on shutdown")
        .expect("server task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ffmpeg_with_wrong_key_is_refused() {
    let mut h = start().await;
    let status = ffmpeg(&publish_args(h.addr, "cam?key=WRONG")).await;
    assert!(!status.success(), "ffmpeg must fail on a refused publish");
    assert!(
        matches!(h.rx.try_recv(), Err(mpsc::error::TryRecvError::Empty)),
        "no frame may arrive from a refused publisher"
    );
    let requests = h.auth.requests.lock().expect("test lock").clone();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].key.as_deref(), Some("WRONG"));
    let stats = h.stats.snapshot();
    assert_eq!((stats.publishes, stats.rejections), (0, 1));

    // An unknown stream name is refused the same way.
    let status = ffmpeg(&publish_args(h.addr, "other?key=SECRET")).await;
    assert!(!status.success());
    assert_eq!(h.stats.snapshot().rejections, 2);
    let _ = h.stop.send(());
    timeout(Duration::from_secs(5), h.server)
        .await
        .expect("server stops on shutdown")
        .expect("server task");
}
