//! The SRT listener against libsrt callers (ffmpeg): a publish with the key, plain
//! and encrypted, becomes frames; a wrong key, an unreadable streamid and a wrong
//! passphrase are refused at the handshake with their codes.

mod common;

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{KeyAuthorizer, KEY};
use ingest::srt::{SrtListenerConfig, SrtServer, SrtStats};
use ingest::IngestEvent;
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

struct Harness {
    addr: std::net::SocketAddr,
    stats: Arc<SrtStats>,
    frames: mpsc::Receiver<IngestEvent>,
    _stop: oneshot::Sender<()>,
}

fn start(config: SrtListenerConfig) -> Harness {
    let server = SrtServer::bind(config).expect("bind");
    let addr = server.local_addr();
    let stats = Arc::new(SrtStats::default());
    let (tx, frames) = mpsc::channel(4096);
    let (stop, stop_rx) = oneshot::channel::<()>();
    tokio::spawn(server.serve(
        Arc::new(KeyAuthorizer::new(tx)),
        Arc::clone(&stats),
        async {
            let _ = stop_rx.await;
        },
    ));
    Harness {
        addr,
        stats,
        frames,
        _stop: stop,
    }
}

/// ffmpeg publishing 3 s of H.264 + AAC in MPEG-TS to `url`, bounded. The encoder
/// has no lookahead (`zerolatency`): libsrt delivers each packet at its send time plus
/// the latency and drops what is still held when the caller closes, so an encoder
/// that flushes a second and a half of frames at its end would lose them.
async fn publish(url: &str) -> ExitStatus {
    let mut child = tokio::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-re"])
        .args(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25"])
        .args(["-f", "lavfi", "-i", "sine", "-c:v", "libx264", "-g", "50"])
        .args(["-tune", "zerolatency"])
        .args(["-c:a", "aac", "-t", "3", "-f", "mpegts", url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("ffmpeg is required for this test (apt install ffmpeg): {e}"));
    timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("ffmpeg did not finish within 30 s")
        .expect("waiting for ffmpeg")
}

/// The frames received until none came for a second (bounded: the publisher has ended).
async fn frames_in(rx: &mut mpsc::Receiver<IngestEvent>) -> (usize, usize) {
    let (mut video, mut audio) = (0, 0);
    while let Ok(Some(event)) = timeout(Duration::from_secs(1), rx.recv()).await {
        if let IngestEvent::Frame(frame) = event {
            match frame.kind() {
                media::TrackKind::Video => video += 1,
                _ => audio += 1,
            }
        }
    }
    (video, audio)
}

fn refusals(stats: &SrtStats, code: u32) -> u64 {
    stats
        .refusals()
        .iter()
        .find(|(c, _)| c.code() == code)
        .map_or(0, |(_, n)| *n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ffmpeg_publishes_over_srt_plain_and_encrypted() {
    let mut config = SrtListenerConfig::new("127.0.0.1:0".parse().unwrap());
    config
        .passphrases
        .insert("secret".into(), "a-long-passphrase".into());
    let mut h = start(config);
    let url = format!(
        "srt://{}?streamid=#!::r=cam,m=publish,s={KEY}&latency=120000",
        h.addr
    );
    let status = publish(&url).await;
    assert!(status.success(), "ffmpeg publish failed: {status}");
    let (video, audio) = frames_in(&mut h.frames).await;
    assert!(
        video >= 60 && audio >= 100,
        "{video} video, {audio} audio frames"
    );

    let url = format!(
        "srt://{}?streamid=live/secret?key={KEY}&passphrase=a-long-passphrase&pbkeylen=32",
        h.addr
    );
    let status = publish(&url).await;
    assert!(
        status.success(),
        "ffmpeg encrypted publish failed: {status}"
    );
    let (video, audio) = frames_in(&mut h.frames).await;
    assert!(
        video >= 60 && audio >= 100,
        "{video} video, {audio} audio frames"
    );
    assert_eq!(
        h.stats
            .connections
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_key_bad_streamid_and_wrong_passphrase_are_refused_with_their_codes() {
    // 111030 both ways: none where the meeting has one, one where it has none, a
    // wrong one.
    let mut config = SrtListenerConfig::new("127.0.0.1:0".parse().unwrap());
    config
        .passphrases
        .insert("secret".into(), "a-long-passphrase".into());
    let mut h = start(config);
    let cases = [
        ("#!::r=cam,s=WRONG", 111_028),
        ("#!::r=cam,m=request", 111_026),
        ("secret?key=SECRET", 111_030),
    ];
    for (streamid, code) in cases {
        let url = format!("srt://{}?streamid={streamid}", h.addr);
        let status = publish(&url).await;
        assert!(!status.success(), "{streamid}: ffmpeg must fail");
        assert_eq!(
            refusals(&h.stats, code),
            1,
            "{streamid}: {:?}",
            h.stats.refusals()
        );
    }
    let url = format!(
        "srt://{}?streamid=secret?key=SECRET&passphrase=the-wrong-one",
        h.addr
    );
    let status = publish(&url).await;
    assert!(!status.success(), "a wrong passphrase must fail");
    assert_eq!(refusals(&h.stats, 111_030), 2);
    let url = format!(
        "srt://{}?streamid=cam?key={KEY}&passphrase=a-long-passphrase",
        h.addr
    );
    let status = publish(&url).await;
    assert!(
        !status.success(),
        "a passphrase where none is set must fail"
    );
    assert_eq!(refusals(&h.stats, 111_030), 3, "{:?}", h.stats.refusals());
    assert_eq!(frames_in(&mut h.frames).await, (0, 0));
}

/// An SRT v5 conclusion handshake carrying a congestion-control extension with a
/// name no SRT implementation knows, and a cookie never given out.
fn conclusion_with_congestion_extension() -> Vec<u8> {
    let mut p = Vec::new();
    for word in [0x8000_0000u32, 0, 0, 0, 5] {
        p.extend_from_slice(&word.to_be_bytes());
    }
    p.extend_from_slice(&0u16.to_be_bytes()); // no encryption
    p.extend_from_slice(&4u16.to_be_bytes()); // extension flags: CONFIG
    for word in [1u32, 1500, 8192, 0xffff_ffff, 0x1234, 0] {
        p.extend_from_slice(&word.to_be_bytes()); // seq, MTU, window, conclusion, id, cookie
    }
    p.extend_from_slice(&[127, 0, 0, 1]);
    p.extend_from_slice(&[0; 12]);
    p.extend_from_slice(&6u16.to_be_bytes()); // SRT_CMD_CONGESTION
    p.extend_from_slice(&1u16.to_be_bytes()); // one 32-bit word
    p.extend_from_slice(b"evil");
    p
}

/// An SRT user-defined control packet carrying a stream id (subtype 5) to a
/// connection, from a stranger.
fn control_with_stream_id(socket_id: u32) -> Vec<u8> {
    let mut p = Vec::new();
    for word in [0xffff_0005u32, 0, 0, socket_id] {
        p.extend_from_slice(&word.to_be_bytes());
    }
    p.extend_from_slice(b"evil");
    p
}

/// Malformed handshakes and control packets from a stranger do not disturb the
/// listener: a publisher already connected publishes on and the listening socket is
/// never reopened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_handshakes_and_control_packets_do_not_disturb_a_publisher() {
    let mut h = start(SrtListenerConfig::new("127.0.0.1:0".parse().unwrap()));
    let url = format!("srt://{}?streamid=cam?key={KEY}", h.addr);
    let publisher = tokio::spawn(async move { publish(&url).await });
    // Mid-publish, from a stranger: a conclusion with an unknown extension, stray
    // control packets to no connection and to a made-up one.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let raw = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("bind");
    for datagram in [
        conclusion_with_congestion_extension(),
        control_with_stream_id(0),
        control_with_stream_id(0x1234),
    ] {
        raw.send_to(&datagram, h.addr).await.expect("send");
    }
    let status = publisher.await.expect("publisher task");
    assert!(status.success(), "the publisher was cut: {status}");
    let (video, _) = frames_in(&mut h.frames).await;
    assert!(video >= 60, "{video} video frames");
    assert_eq!(
        h.stats.restarts.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "the listener task ended"
    );
}

/// A v5 conclusion for `streamid` with the cookie `cookie` and no HSREQ extension:
/// srt-protocol asks for access first and finds the HSREQ missing only once accepted.
fn conclusion_without_hsreq(cookie: u32, streamid: &str) -> Vec<u8> {
    let mut p = Vec::new();
    for word in [0x8000_0000u32, 0, 0, 0, 5] {
        p.extend_from_slice(&word.to_be_bytes());
    }
    p.extend_from_slice(&0u16.to_be_bytes()); // no encryption
    p.extend_from_slice(&4u16.to_be_bytes()); // extension flags: CONFIG (the streamid)
    for word in [1u32, 1500, 8192, 0xffff_ffff, 0x1234, cookie] {
        p.extend_from_slice(&word.to_be_bytes());
    }
    p.extend_from_slice(&[127, 0, 0, 1]);
    p.extend_from_slice(&[0; 12]);
    let mut id = streamid.as_bytes().to_vec();
    id.resize(id.len().div_ceil(4) * 4, 0);
    p.extend_from_slice(&5u16.to_be_bytes()); // SRT_CMD_SID
    p.extend_from_slice(&((id.len() / 4) as u16).to_be_bytes());
    for word in id.chunks(4) {
        p.extend(word.iter().rev()); // SRT sends the streamid's words byte-swapped
    }
    p
}

/// An SRT v5 induction handshake (the caller's first packet).
fn induction() -> Vec<u8> {
    let mut p = Vec::new();
    for word in [0x8000_0000u32, 0, 0, 0, 4] {
        p.extend_from_slice(&word.to_be_bytes());
    }
    p.extend_from_slice(&0u16.to_be_bytes());
    p.extend_from_slice(&2u16.to_be_bytes());
    for word in [1u32, 1500, 8192, 1, 0x1234, 0] {
        p.extend_from_slice(&word.to_be_bytes());
    }
    p.extend_from_slice(&[127, 0, 0, 1]);
    p.extend_from_slice(&[0; 12]);
    p
}

/// srt-tokio 0.4.4 leaves a conclusion without its HSREQ unanswered after the access
/// control took it, and brdyun's handshake waited for ever, holding the address's place
/// (and the meeting's publish slot): the publish deadline now cuts it, so four of them
/// no longer shut the address out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_handshake_that_never_finishes_is_cut_at_the_publish_deadline() {
    let mut config = SrtListenerConfig::new("127.0.0.1:0".parse().unwrap());
    config.limits.max_pending_per_address = 4;
    config.limits.publish_deadline = Duration::from_secs(4);
    let mut h = start(config);
    for _ in 0..4 {
        let raw = tokio::net::UdpSocket::bind("127.0.0.1:0")
            .await
            .expect("bind");
        raw.send_to(&induction(), h.addr).await.expect("send");
        let mut answer = [0u8; 1500];
        let (n, _) = timeout(Duration::from_secs(5), raw.recv_from(&mut answer))
            .await
            .expect("the induction is answered")
            .expect("recv");
        assert!(n >= 48, "{n} bytes");
        let cookie = u32::from_be_bytes(answer[44..48].try_into().unwrap());
        let streamid = format!("cam?key={KEY}");
        raw.send_to(&conclusion_without_hsreq(cookie, &streamid), h.addr)
            .await
            .expect("send");
    }
    // Every held handshake is cut at its deadline and counted.
    timeout(Duration::from_secs(10), async {
        let cut = |h: &Harness| {
            h.stats
                .limits
                .by_code()
                .iter()
                .find(|(code, _)| code.code() == 111_022)
                .map_or(0, |(_, n)| *n)
        };
        while cut(&h) < 4 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the four handshakes cut at the publish deadline");
    let url = format!("srt://{}?streamid=cam?key={KEY}", h.addr);
    let status = publish(&url).await;
    assert!(status.success(), "ffmpeg publish failed: {status}");
    let (video, _) = frames_in(&mut h.frames).await;
    assert!(video >= 60, "{video} video frames");
}

/// The process's resident memory in kB (Linux), read from /proc.
fn resident_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// Sends `count` inductions, each from a socket of its own (a new source port), in
/// batches of 100 with the answers left unread.
async fn flood(to: std::net::SocketAddr, count: usize) {
    for _ in 0..count / 100 {
        let mut batch = Vec::with_capacity(100);
        for _ in 0..100 {
            let raw = tokio::net::UdpSocket::bind("127.0.0.1:0")
                .await
                .expect("bind");
            raw.send_to(&induction(), to).await.expect("send");
            batch.push(raw);
        }
        // Sockets dropped here: their ports are free for the next batch.
        tokio::task::yield_now().await;
    }
}

/// A flood of first handshakes (20 000 inductions from as many source ports) leaves
/// the listener's memory flat — libsrt answers each with a cookie and keeps nothing —
/// and a real publisher connects and publishes right after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_first_handshakes_keeps_nothing_and_a_publisher_connects() {
    let mut h = start(SrtListenerConfig::new("127.0.0.1:0".parse().unwrap()));
    // A first round so the allocator and libsrt's buffers are warm.
    flood(h.addr, 2_000).await;
    let before = resident_kb();
    flood(h.addr, 20_000).await;
    let grown = resident_kb().saturating_sub(before);
    // A kilobyte and more kept for each of them would be 20 MB and more.
    assert!(grown < 4_096, "resident memory grew by {grown} kB");
    let url = format!("srt://{}?streamid=cam?key={KEY}", h.addr);
    let status = publish(&url).await;
    assert!(status.success(), "ffmpeg publish failed: {status}");
    let (video, _) = frames_in(&mut h.frames).await;
    assert!(video >= 60, "{video} video frames");
}

/// A v5 conclusion for `streamid` with the cookie `cookie`, an HSREQ extension and the
/// caller's socket id `socket` (libsrt makes one socket for each caller id it sees).
fn conclusion(cookie: u32, socket: u32, streamid: &str) -> Vec<u8> {
    let mut p = Vec::new();
    for word in [0x8000_0000u32, 0, 0, 0, 5] {
        p.extend_from_slice(&word.to_be_bytes());
    }
    p.extend_from_slice(&0u16.to_be_bytes()); // no encryption
    p.extend_from_slice(&5u16.to_be_bytes()); // extension flags: HSREQ, CONFIG
    for word in [socket, 1500, 8192, 0xffff_ffff, socket, cookie] {
        p.extend_from_slice(&word.to_be_bytes()); // seq, MTU, window, conclusion, id, cookie
    }
    p.extend_from_slice(&[127, 0, 0, 1]);
    p.extend_from_slice(&[0; 12]);
    p.extend_from_slice(&1u16.to_be_bytes()); // SRT_CMD_HSREQ
    p.extend_from_slice(&3u16.to_be_bytes());
    for word in [0x0001_0501u32, 0xbf, (120 << 16) | 120] {
        p.extend_from_slice(&word.to_be_bytes()); // version 1.5.1, flags, latencies
    }
    let mut id = streamid.as_bytes().to_vec();
    id.resize(id.len().div_ceil(4) * 4, 0);
    p.extend_from_slice(&5u16.to_be_bytes()); // SRT_CMD_SID
    p.extend_from_slice(&((id.len() / 4) as u16).to_be_bytes());
    for word in id.chunks(4) {
        p.extend(word.iter().rev());
    }
    p
}

/// The cookie libsrt gives `raw`'s address, from an induction.
async fn cookie(raw: &tokio::net::UdpSocket, to: std::net::SocketAddr) -> u32 {
    raw.send_to(&induction(), to).await.expect("send");
    let mut answer = [0u8; 1500];
    let (n, _) = timeout(Duration::from_secs(5), raw.recv_from(&mut answer))
        .await
        .expect("the induction is answered")
        .expect("recv");
    assert!(n >= 48, "{n} bytes");
    u32::from_be_bytes(answer[44..48].try_into().unwrap())
}

/// Sends 5 000 wrong-key conclusions from `raw`, each with a caller socket id of its
/// own, with a fresh cookie.
async fn conclusion_flood(raw: &tokio::net::UdpSocket, to: std::net::SocketAddr, first: u32) {
    wrong_key_flood(raw, to, first, "cam").await;
}

/// Sends 5 000 conclusions for `stream` with a wrong key from `raw`, each with a
/// caller socket id of its own, with a fresh cookie.
async fn wrong_key_flood(
    raw: &tokio::net::UdpSocket,
    to: std::net::SocketAddr,
    first: u32,
    stream: &str,
) {
    let cookie = cookie(raw, to).await;
    let streamid = format!("{stream}?key=WRONG");
    for socket in first..first + 5_000 {
        let datagram = conclusion(cookie, socket, &streamid);
        raw.send_to(&datagram, to).await.expect("send");
    }
}

/// The largest resident memory over `span`, sampled every 100 ms.
async fn peak_kb(span: Duration) -> u64 {
    let mut peak = resident_kb();
    for _ in 0..span.as_millis() / 100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(resident_kb());
    }
    peak
}

/// libsrt makes a socket (about 22 kB) for every conclusion with a valid cookie before
/// brdyun's callback refuses it, and keeps it 1–2 s: 5 000 wrong-key conclusions, with
/// one cookie and no key, mid-publish. The publisher on the port publishes on, every
/// refusal is counted (111028), and the memory is bounded: the first flood grew the
/// process by 109 MB (the allocator keeps what libsrt freed), a second one after
/// libsrt closed the first's sockets reuses it instead of growing as much again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_wrong_key_conclusions_keeps_a_publisher_and_its_memory_bounded() {
    let mut h = start(SrtListenerConfig::new("127.0.0.1:0".parse().unwrap()));
    let url = format!("srt://{}?streamid=cam?key={KEY}", h.addr);
    let raw = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let before = resident_kb();
    let publisher = tokio::spawn(async move { publish(&url).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    conclusion_flood(&raw, h.addr, 0x10_0000).await;
    let status = publisher.await.expect("publisher task");
    assert!(status.success(), "the publisher was cut: {status}");
    let (video, audio) = frames_in(&mut h.frames).await;
    assert!(
        video >= 60 && audio >= 100,
        "{video} video, {audio} audio frames"
    );
    let first = resident_kb().saturating_sub(before);
    conclusion_flood(&raw, h.addr, 0x20_0000).await;
    let second = peak_kb(Duration::from_secs(3))
        .await
        .saturating_sub(before)
        .saturating_sub(first);
    eprintln!("first flood +{first} kB, the second +{second} kB more");
    assert!(
        first < 163_840,
        "the first flood grew the process by {first} kB"
    );
    assert!(
        second < 16_384,
        "the second flood grew it by {second} kB more"
    );
    // Every one the kernel delivered reaches the callback and is counted.
    let refused = refusals(&h.stats, 111_028);
    assert!(
        (9_000..=10_000).contains(&refused),
        "{:?}",
        h.stats.refusals()
    );
}

/// Counts the refusal lines logged for one stream, and those logged on a thread that
/// is not the listener's accepting thread (libsrt's receiving thread must not write).
#[derive(Default)]
struct RefusalLines {
    stream: &'static str,
    lines: std::sync::atomic::AtomicU64,
    off_thread: std::sync::atomic::AtomicU64,
}

/// The `stream` field of an event.
#[derive(Default)]
struct StreamField(String);

impl tracing::field::Visit for StreamField {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "stream" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for RefusalLines {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut stream = StreamField::default();
        event.record(&mut stream);
        if stream.0 != self.stream {
            return;
        }
        self.lines
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if std::thread::current().name() != Some("srt-accept") {
            self.off_thread
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// A burst of refused handshakes (5 000 wrong keys) is counted in full but logged
/// only the first time and at each power of two, never on libsrt's receiving thread:
/// a flood is not a flood of log lines, and a slow log never stalls libsrt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_refusals_is_counted_and_logged_at_powers_of_two_off_libsrts_thread() {
    let recorder = Arc::new(RefusalLines {
        stream: "flooded",
        ..RefusalLines::default()
    });
    tracing::subscriber::set_global_default(Arc::clone(&recorder))
        .expect("the only subscriber of this test process");
    let h = start(SrtListenerConfig::new("127.0.0.1:0".parse().unwrap()));
    let raw = tokio::net::UdpSocket::bind("127.0.0.1:0")
        .await
        .expect("bind");
    wrong_key_flood(&raw, h.addr, 0x30_0000, "flooded").await;
    let lines = || recorder.lines.load(std::sync::atomic::Ordering::Relaxed);
    // The first, then 2, 4, … 4096: 13 lines for 5 000 (fewer if datagrams were lost).
    let expected = |refused: u64| u64::from(refused.max(1).ilog2()) + 1;
    // Settled: no refusal counted for 100 ms and every line of those written.
    let settled = timeout(Duration::from_secs(10), async {
        let mut last = 0;
        loop {
            let refused = refusals(&h.stats, 111_028);
            if refused >= 4_500 && refused == last && lines() == expected(refused) {
                return refused;
            }
            last = refused;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(
        settled.is_ok(),
        "{} refused, {} lines",
        refusals(&h.stats, 111_028),
        lines()
    );
    assert_eq!(
        recorder
            .off_thread
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "lines logged off the accepting thread"
    );
}
