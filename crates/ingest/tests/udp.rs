//! MPEG-TS over UDP on loopback: ffmpeg pushing unicast, multicast on 127.0.0.1,
//! RTP-wrapped datagrams, garbage, and a flood that must stay bounded.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket as StdUdpSocket};
use std::sync::Arc;
use std::time::Duration;

use ingest::status::{InputCounters, InputEvent};
use ingest::udp::{strip_rtp, UdpConfig, UdpInput};
use ingest::IngestEvent;
use media::TrackKind;
use proptest::prelude::*;
use tokio::sync::{mpsc, watch};

const FIXTURE: &[u8] = include_bytes!("fixtures/av_3s.ts");
const FIXTURE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/av_3s.ts");

struct Running {
    addr: SocketAddr,
    counters: Arc<InputCounters>,
    events: mpsc::Receiver<InputEvent>,
    task: tokio::task::JoinHandle<()>,
    _stop: watch::Sender<bool>,
}

fn start(config: &UdpConfig, capacity: usize) -> Running {
    let input = UdpInput::bind(config).expect("bind udp input");
    let addr = input.local_addr().expect("local addr");
    let counters = Arc::new(InputCounters::default());
    let (tx, events) = mpsc::channel(capacity);
    let (stop_tx, stop) = watch::channel(false);
    let task = tokio::spawn(input.run(Arc::clone(&counters), tx, stop));
    Running {
        addr,
        counters,
        events,
        task,
        _stop: stop_tx,
    }
}

/// Waits for `video` video frames (the first a keyframe) and at least one audio frame.
async fn expect_frames(events: &mut mpsc::Receiver<InputEvent>, video: usize) {
    let (mut seen_video, mut seen_audio) = (0, 0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while seen_video < video || seen_audio == 0 {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("frames in time")
            .expect("input alive");
        if let InputEvent::Media(IngestEvent::Frame(frame)) = event {
            match frame.kind() {
                TrackKind::Video => {
                    if seen_video == 0 {
                        assert!(frame.keyframe, "first video frame is a keyframe");
                    }
                    seen_video += 1;
                }
                TrackKind::Audio => seen_audio += 1,
            }
        }
    }
}

fn send_fixture(socket: &StdUdpSocket, to: SocketAddr, wrap_rtp: bool) {
    for (seq, chunk) in FIXTURE.chunks(7 * 188).enumerate() {
        let mut datagram = Vec::with_capacity(12 + chunk.len());
        if wrap_rtp {
            datagram.extend_from_slice(&[0x80, 33]);
            datagram.extend_from_slice(&(seq as u16).to_be_bytes());
            datagram.extend_from_slice(&[0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef]);
        }
        datagram.extend_from_slice(chunk);
        socket.send_to(&datagram, to).expect("send");
        if seq % 16 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unicast_from_ffmpeg() {
    let mut input = start(&UdpConfig::new("127.0.0.1:0".parse().expect("addr")), 64);
    let url = format!("udp://127.0.0.1:{}?pkt_size=1316", input.addr.port());
    let ffmpeg = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-re", "-i", FIXTURE_PATH])
        .args(["-c", "copy", "-f", "mpegts", &url])
        .spawn()
        .expect("ffmpeg runs");
    let _guard = KillOnDrop(ffmpeg);
    expect_frames(&mut input.events, 25).await;
    assert!(InputCounters::get(&input.counters.bytes) > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multicast_on_loopback() {
    let group = Ipv4Addr::new(239, 255, 42, 7);
    let config = UdpConfig {
        multicast: Some(group),
        interface: Some(Ipv4Addr::LOCALHOST),
        ..UdpConfig::new(SocketAddr::from((group, 0)))
    };
    let mut input = start(&config, 64);
    let sender =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).expect("socket");
    sender
        .set_multicast_if_v4(&Ipv4Addr::LOCALHOST)
        .expect("multicast interface");
    sender.set_multicast_loop_v4(true).expect("loop");
    sender
        .bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
        .expect("bind sender");
    let sender: StdUdpSocket = sender.into();
    let to = SocketAddr::from((group, input.addr.port()));
    tokio::task::spawn_blocking(move || send_fixture(&sender, to, false));
    expect_frames(&mut input.events, 25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rtp_wrapped_ts_is_unwrapped() {
    let mut input = start(&UdpConfig::new("127.0.0.1:0".parse().expect("addr")), 64);
    let sender = StdUdpSocket::bind("127.0.0.1:0").expect("sender");
    let to = input.addr;
    tokio::task::spawn_blocking(move || send_fixture(&sender, to, true));
    expect_frames(&mut input.events, 25).await;
    // Bytes count the TS payload only, never the RTP headers.
    assert!(InputCounters::get(&input.counters.bytes) <= FIXTURE.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_then_ts_still_demuxes() {
    let mut input = start(&UdpConfig::new("127.0.0.1:0".parse().expect("addr")), 64);
    let sender = StdUdpSocket::bind("127.0.0.1:0").expect("sender");
    let to = input.addr;
    tokio::task::spawn_blocking(move || {
        let mut x: u32 = 0x1234_5678;
        for len in [1usize, 11, 12, 188, 1316, 1500, 9000, 60_000] {
            let garbage: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            sender.send_to(&garbage, to).expect("send garbage");
        }
        send_fixture(&sender, to, false);
    });
    expect_frames(&mut input.events, 25).await;
    assert!(!input.task.is_finished());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_dropped_and_counted_not_buffered() {
    let queue = 8;
    let config = UdpConfig {
        queue_datagrams: queue,
        ..UdpConfig::new("127.0.0.1:0".parse().expect("addr"))
    };
    // The events channel is never read: once it is full the demuxer stops, and every
    // datagram beyond the queue must be dropped.
    let input = start(&config, 1);
    let sender = StdUdpSocket::bind("127.0.0.1:0").expect("sender");
    let to = input.addr;
    let flood = 3000usize;
    tokio::task::spawn_blocking(move || {
        send_fixture(&sender, to, false);
        for i in 0..flood {
            let datagram = vec![(i % 251) as u8; 1316];
            sender.send_to(&datagram, to).expect("send");
            if i % 64 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    })
    .await
    .expect("sender");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let sent = FIXTURE.len().div_ceil(1316) + flood;
    loop {
        let dropped = InputCounters::get(&input.counters.dropped) as usize;
        let bytes = InputCounters::get(&input.counters.bytes) as usize;
        let received = bytes.div_ceil(1316);
        // Everything received beyond the queue (and what the stalled demuxer took)
        // was dropped.
        if dropped >= flood / 2 && received >= sent * 3 / 4 {
            assert!(received - dropped <= queue + FIXTURE.len().div_ceil(1316) + 1);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "dropped {dropped} of {received} received"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!input.task.is_finished());
}

fn rtp_header(csrc: u8, extension_words: Option<u16>, seq: u16) -> Vec<u8> {
    let mut header = vec![0x80 | (csrc & 0x0f), 33];
    if extension_words.is_some() {
        header[0] |= 0x10;
    }
    header.extend_from_slice(&seq.to_be_bytes());
    header.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    header.extend(std::iter::repeat_n(0xcc, usize::from(csrc & 0x0f) * 4));
    if let Some(words) = extension_words {
        header.extend_from_slice(&[0xbe, 0xde]);
        header.extend_from_slice(&words.to_be_bytes());
        header.extend(std::iter::repeat_n(0xee, usize::from(words) * 4));
    }
    header
}

proptest! {
    #[test]
    fn rtp_headers_are_stripped(
        csrc in 0u8..16,
        extension in proptest::option::of(0u16..8),
        seq in any::<u16>(),
        packets in 1usize..8,
    ) {
        let ts: Vec<u8> = FIXTURE[..packets * 188].to_vec();
        let mut datagram = rtp_header(csrc, extension, seq);
        datagram.extend_from_slice(&ts);
        prop_assert_eq!(strip_rtp(&datagram), &ts[..]);
        prop_assert_eq!(strip_rtp(&ts), &ts[..]);
    }

    // The payload is the datagram itself, or the part of it between the RTP header and
    // the RTP padding (so neither a prefix nor, with padding, a suffix), starting with
    // a TS sync byte: never a copy, never out of bounds.
    #[test]
    fn strip_rtp_never_panics_and_returns_a_part_of_the_datagram(datagram in proptest::collection::vec(any::<u8>(), 0..400)) {
        let payload = strip_rtp(&datagram);
        let range = datagram.as_ptr_range();
        let inside = range.start <= payload.as_ptr() && payload.as_ptr_range().end <= range.end;
        prop_assert!(inside || payload.is_empty());
        prop_assert!(payload.len() == datagram.len() || payload.first() == Some(&0x47));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_datagrams_are_counted_as_demux_errors_without_a_discontinuity() {
    let mut input = start(&UdpConfig::new("127.0.0.1:0".parse().expect("addr")), 4096);
    let sender = StdUdpSocket::bind("127.0.0.1:0").expect("sender");
    let to = input.addr;
    tokio::task::spawn_blocking(move || {
        // Every 10th datagram is lost on the way, as on a lossy multicast network.
        for (seq, chunk) in FIXTURE.chunks(7 * 188).enumerate() {
            if seq % 10 != 5 {
                sender.send_to(chunk, to).expect("send");
            }
            if seq % 16 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    // Read everything the input delivers until it has been quiet for half a second.
    let mut video = 0;
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(500), input.events.recv()).await
    {
        match event {
            InputEvent::Media(IngestEvent::Discontinuity) => {
                panic!("packet loss made a discontinuity")
            }
            InputEvent::Media(IngestEvent::Frame(frame)) if frame.kind() == TrackKind::Video => {
                video += 1
            }
            _ => {}
        }
    }
    // What the losses reached is dropped (a picture up to the next keyframe), the rest
    // gets through.
    let damaged = InputCounters::get(&input.counters.damage[ingest::status::DAMAGED_FRAMES]);
    assert!(video >= 3, "only {video} video frames got through");
    assert!(damaged > 0, "no frame was dropped for the losses");
    assert!(
        InputCounters::get(&input.counters.demux_errors) > 0,
        "losses were not counted"
    );
}
