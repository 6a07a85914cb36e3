//! Backup inputs: failover on stall, return after the hold-down, keyframe starts,
//! discontinuities, and RTMP publish authorization through the registry.
//! Requirement OTT-OPS-4 (backup inputs on each node protect against source failure).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use ingest::publish::{PublishAuthorizer, PublishRejection, PublishRequest};
use ingest::status::InputState;
use ingest::supervisor::{self, InputSpec, PublishRegistry, SupervisorConfig, SupervisorError};
use ingest::IngestEvent;
use media::{Codec, Frame};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

fn video(tag: &'static [u8], n: u64, keyframe: bool) -> IngestEvent {
    IngestEvent::Frame(Frame {
        codec: Codec::H264,
        pts: n * 3600,
        dts: n * 3600,
        keyframe,
        data: Bytes::from_static(tag),
    })
}

fn audio(n: u64) -> IngestEvent {
    IngestEvent::Frame(Frame {
        codec: Codec::Aac,
        pts: n * 1920,
        dts: n * 1920,
        keyframe: true,
        data: Bytes::from_static(b"a"),
    })
}

/// The events the stream received, with when they arrived (since the start).
async fn collect(
    mut output: mpsc::Receiver<IngestEvent>,
    start: Instant,
) -> Vec<(Duration, IngestEvent)> {
    let mut seen = Vec::new();
    while let Some(event) = output.recv().await {
        seen.push((start.elapsed(), event));
    }
    seen
}

fn tag_of(event: &IngestEvent) -> Option<(&[u8], bool)> {
    match event {
        IngestEvent::Frame(frame) => Some((&frame.data[..], frame.keyframe)),
        _ => None,
    }
}

/// The stream's events up to and including the first one `last` accepts; each must
/// come within `gap` of the one before (`what` names the wait in a failure).
async fn events_until(
    output: &mut mpsc::Receiver<IngestEvent>,
    gap: Duration,
    what: &str,
    last: impl Fn(&IngestEvent) -> bool,
) -> Vec<IngestEvent> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(gap, output.recv())
            .await
            .unwrap_or_else(|_| panic!("{what}; seen {seen:?}"))
            .expect("open");
        let done = last(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn fails_over_on_stall_and_returns_after_hold_down() {
    let (primary_tx, primary_rx) = mpsc::channel(1024);
    let (backup_tx, backup_rx) = mpsc::channel(1024);
    let config = SupervisorConfig {
        source_timeout: Duration::from_secs(1),
        hold_down: Some(Duration::from_secs(2)),
        ..SupervisorConfig::new(
            "meeting",
            vec![
                InputSpec::Channel {
                    name: "primary".into(),
                    events: primary_rx,
                },
                InputSpec::Channel {
                    name: "backup".into(),
                    events: backup_rx,
                },
            ],
        )
    };
    let (output_tx, output_rx) = mpsc::channel(10_000);
    let (stop_tx, stop) = watch::channel(false);
    let handle = supervisor::spawn(config, None, output_tx, stop).expect("starts");
    let status = handle.status();
    let start = Instant::now();
    let collector = tokio::spawn(collect(output_rx, start));

    // 25 fps on both; the primary is silent from 2 s to 5 s. Keyframes every second,
    // the backup's half a second off the primary's.
    for n in 0..225u64 {
        let t = Duration::from_millis(n * 40);
        if t < Duration::from_secs(2) || t >= Duration::from_secs(5) {
            primary_tx
                .send(video(b"p", n, n % 25 == 0))
                .await
                .expect("send");
        }
        backup_tx
            .send(video(b"b", n, n % 25 == 12))
            .await
            .expect("send");
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    let last = status.borrow().clone();
    stop_tx.send(true).expect("stop");
    handle.join().await;
    let seen = collector.await.expect("collector");

    let cuts: Vec<usize> = seen
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| matches!(e, IngestEvent::Discontinuity | IngestEvent::Takeover))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(cuts.len(), 2, "one discontinuity per switch");
    // Both standbys were delivering when they took over.
    assert!(cuts.iter().all(|&i| seen[i].1 == IngestEvent::Takeover));
    let (first_cut, second_cut) = (cuts[0], cuts[1]);

    // Before the failover: only the primary, starting at a keyframe.
    let before: Vec<_> = seen[..first_cut]
        .iter()
        .filter_map(|(_, e)| tag_of(e))
        .collect();
    assert_eq!(before.first(), Some(&(&b"p"[..], true)));
    assert!(before.iter().all(|(tag, _)| *tag == b"p"));

    // The primary's last frame was at 1.96 s: failover within source_timeout + one tick.
    let failover_at = seen[first_cut].0;
    assert!(
        failover_at >= Duration::from_millis(2900),
        "{failover_at:?}"
    );
    assert!(
        failover_at <= Duration::from_millis(3300),
        "{failover_at:?}"
    );
    let during: Vec<_> = seen[first_cut + 1..second_cut]
        .iter()
        .filter_map(|(_, e)| tag_of(e))
        .collect();
    assert_eq!(
        during.first(),
        Some(&(&b"b"[..], true)),
        "backup starts at a keyframe"
    );
    assert!(during.iter().all(|(tag, _)| *tag == b"b"));

    // The primary is back at 5 s; it takes over after the 2 s hold-down.
    let back_at = seen[second_cut].0;
    assert!(back_at >= Duration::from_secs(7), "{back_at:?}");
    assert!(back_at <= Duration::from_millis(7300), "{back_at:?}");
    let after: Vec<_> = seen[second_cut + 1..]
        .iter()
        .filter_map(|(_, e)| tag_of(e))
        .collect();
    assert_eq!(after.first(), Some(&(&b"p"[..], true)));
    assert!(after.iter().all(|(tag, _)| *tag == b"p"));

    assert_eq!(last.active, Some(0));
    assert_eq!(last.switches, 2);
    assert_eq!(last.inputs[0].description, "primary");
    assert_eq!(last.inputs[0].state, InputState::Live);
}

#[tokio::test(start_paused = true)]
async fn audio_only_backup_starts_at_once_and_a_dead_primary_fails_over_immediately() {
    let (primary_tx, primary_rx) = mpsc::channel(64);
    let (backup_tx, backup_rx) = mpsc::channel(64);
    let config = SupervisorConfig::new(
        "radio",
        vec![
            InputSpec::Channel {
                name: "primary".into(),
                events: primary_rx,
            },
            InputSpec::Channel {
                name: "backup".into(),
                events: backup_rx,
            },
        ],
    );
    let (output_tx, mut output) = mpsc::channel(64);
    let (_stop_tx, stop) = watch::channel(false);
    let _handle = supervisor::spawn(config, None, output_tx, stop).expect("starts");

    primary_tx.send(video(b"p", 0, true)).await.expect("send");
    assert_eq!(
        output.recv().await.as_ref().and_then(tag_of),
        Some((&b"p"[..], true))
    );
    backup_tx.send(audio(0)).await.expect("send");
    tokio::time::sleep(Duration::from_millis(10)).await;
    let started = Instant::now();
    drop(primary_tx); // the primary is gone, not just quiet
                      // The backup was delivering while the primary was: a takeover.
    assert_eq!(output.recv().await, Some(IngestEvent::Takeover));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "no need to wait for the timeout"
    );
    backup_tx.send(audio(1)).await.expect("send");
    assert_eq!(output.recv().await, Some(audio(1)));
}

#[tokio::test(start_paused = true)]
async fn a_standby_source_takes_over_with_its_last_gops_not_the_next_keyframe() {
    let (primary_tx, primary_rx) = mpsc::channel(1024);
    let (backup_tx, backup_rx) = mpsc::channel(1024);
    let config = SupervisorConfig::new(
        "dual",
        vec![
            InputSpec::Channel {
                name: "primary".into(),
                events: primary_rx,
            },
            InputSpec::Channel {
                name: "backup".into(),
                events: backup_rx,
            },
        ],
    );
    let (output_tx, mut output) = mpsc::channel(10_000);
    let (_stop_tx, stop) = watch::channel(false);
    let _handle = supervisor::spawn(config, None, output_tx, stop).expect("starts");
    // The same source on both (a dual publish), a keyframe every 25 frames; the
    // primary dies at frame 40, 15 frames into a GOP.
    for n in 0..40u64 {
        primary_tx
            .send(video(b"p", n, n % 25 == 0))
            .await
            .expect("send");
        backup_tx
            .send(video(b"b", n, n % 25 == 0))
            .await
            .expect("send");
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    drop(primary_tx);
    let seen = events_until(
        &mut output,
        Duration::from_secs(1),
        "the backup takes over at once",
        |e| matches!(e, IngestEvent::Frame(f) if f.data[..] == b"b"[..] && f.pts == 39 * 3600),
    )
    .await;
    let cut = seen
        .iter()
        .position(|e| *e == IngestEvent::Takeover)
        .expect("a takeover at the switch");
    let after: Vec<u64> = seen[cut + 1..]
        .iter()
        .filter_map(|e| match e {
            IngestEvent::Frame(f) => Some(f.pts / 3600),
            _ => None,
        })
        .collect();
    assert_eq!(
        after,
        (0..40).collect::<Vec<_>>(),
        "the last two GOPs, from frame 0"
    );
}

fn request(stream: &str, key: Option<&str>) -> PublishRequest {
    PublishRequest {
        app: "live".into(),
        stream: stream.into(),
        key: key.map(str::to_string),
        peer: SocketAddr::from(([127, 0, 0, 1], 40000)),
    }
}

async fn wait_for_state(
    status: &mut watch::Receiver<ingest::status::StreamInputStatus>,
    input: usize,
    want: impl Fn(&InputState) -> bool,
) {
    tokio::time::timeout(
        Duration::from_secs(5),
        status.wait_for(|s| s.inputs.get(input).is_some_and(|i| want(&i.state))),
    )
    .await
    .expect("state in time")
    .expect("supervisor alive");
}

#[tokio::test]
async fn publish_registry_checks_keys_and_refuses_a_second_publisher() {
    let registry = PublishRegistry::new();
    let config = SupervisorConfig::new(
        "meeting",
        vec![InputSpec::Rtmp {
            key: Some("s3cret".into()),
            slot: None,
        }],
    );
    let (output_tx, mut output) = mpsc::channel(64);
    let (stop_tx, stop) = watch::channel(false);
    let handle = supervisor::spawn(config, Some(&registry), output_tx, stop).expect("starts");
    let mut status = handle.status();

    let again = SupervisorConfig::new(
        "meeting",
        vec![InputSpec::Rtmp {
            key: None,
            slot: None,
        }],
    );
    let (other_tx, _other_rx) = mpsc::channel(1);
    let (_s, other_stop) = watch::channel(false);
    assert_eq!(
        supervisor::spawn(again, Some(&registry), other_tx, other_stop).err(),
        Some(SupervisorError::AlreadyRegistered("meeting".into()))
    );

    let reject = |r: Result<_, PublishRejection>| r.err();
    assert_eq!(
        reject(registry.authorize(&request("other", Some("s3cret")))),
        Some(PublishRejection::UnknownStream)
    );
    assert_eq!(
        reject(registry.authorize(&request("meeting", Some("s3cres")))),
        Some(PublishRejection::WrongKey)
    );
    assert_eq!(
        reject(registry.authorize(&request("meeting", None))),
        Some(PublishRejection::WrongKey)
    );

    let publisher = registry
        .authorize(&request("meeting", Some("s3cret")))
        .expect("accepted");
    assert_eq!(
        reject(registry.authorize(&request("meeting", Some("s3cret")))),
        Some(PublishRejection::Busy)
    );
    publisher.send(video(b"r", 0, true)).await.expect("send");
    assert_eq!(
        output.recv().await.as_ref().and_then(tag_of),
        Some((&b"r"[..], true))
    );
    wait_for_state(&mut status, 0, |s| *s == InputState::Live).await;

    // The publisher leaves: the input is down, and a new publisher may come.
    drop(publisher);
    wait_for_state(&mut status, 0, |s| matches!(s, InputState::Down { .. })).await;
    let second = registry
        .authorize(&request("meeting", Some("s3cret")))
        .expect("accepted again");
    second.send(video(b"r", 1, false)).await.expect("send");
    second.send(video(b"r", 2, true)).await.expect("send");
    // A new session of the active input: a discontinuity, then its next keyframe.
    assert_eq!(output.recv().await, Some(IngestEvent::Discontinuity));
    assert_eq!(output.recv().await, Some(video(b"r", 2, true)));

    stop_tx.send(true).expect("stop");
    handle.join().await;
    assert!(!registry.contains("meeting"), "unregistered on shutdown");
    assert_eq!(
        reject(registry.authorize(&request("meeting", Some("s3cret")))),
        Some(PublishRejection::UnknownStream)
    );
}

/// The backup was active until the primary took back over a moment ago: when the
/// primary dies right then, the backup still replays its recent GOPs (it kept them while
/// it was active), so the stream is not left with a hole.
#[tokio::test(start_paused = true)]
async fn a_standby_that_was_active_a_moment_ago_still_replays_its_gops() {
    let (primary_tx, primary_rx) = mpsc::channel(1024);
    let (backup_tx, backup_rx) = mpsc::channel(1024);
    let config = SupervisorConfig {
        source_timeout: Duration::from_millis(400),
        hold_down: Some(Duration::from_millis(800)),
        ..SupervisorConfig::new(
            "dual",
            vec![
                InputSpec::Channel {
                    name: "primary".into(),
                    events: primary_rx,
                },
                InputSpec::Channel {
                    name: "backup".into(),
                    events: backup_rx,
                },
            ],
        )
    };
    let (output_tx, mut output) = mpsc::channel(10_000);
    let (_stop_tx, stop) = watch::channel(false);
    let handle = supervisor::spawn(config, None, output_tx, stop).expect("starts");
    let mut status = handle.status();
    // The backup first (the primary's path is slower), the primary from frame 10 on; a
    // keyframe every 25 frames at 25 fps.
    for n in 0..60u64 {
        backup_tx
            .send(video(b"b", n, n % 25 == 0))
            .await
            .expect("send");
        if n >= 10 {
            primary_tx
                .send(video(b"p", n, n % 25 == 0))
                .await
                .expect("send");
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    // The primary took back over after its hold-down.
    tokio::time::timeout(Duration::from_secs(5), async {
        while status.borrow_and_update().active != Some(0) {
            status.changed().await.expect("supervisor alive");
        }
    })
    .await
    .expect("the primary active again");
    drop(primary_tx);
    let seen = events_until(
        &mut output,
        Duration::from_secs(1),
        "the backup takes over at once",
        |e| matches!(e, IngestEvent::Frame(f) if f.data[..] == b"b"[..] && f.pts == 59 * 3600),
    )
    .await;
    let cut = seen
        .iter()
        .rposition(|e| *e == IngestEvent::Takeover)
        .expect("a takeover at the switch");
    let first = seen[cut + 1..]
        .iter()
        .find_map(|e| match e {
            IngestEvent::Frame(f) => Some(f.pts / 3600),
            _ => None,
        })
        .expect("replayed frames");
    assert_eq!(
        first, 25,
        "the replay starts a GOP back, not at the next keyframe"
    );
}

/// A meeting `meeting` with a primary and a backup publish slot (key `k`), its
/// silent publish input taken over after `publish_timeout` when given.
struct TwoSlots {
    registry: PublishRegistry,
    output: mpsc::Receiver<IngestEvent>,
    status: watch::Receiver<ingest::status::StreamInputStatus>,
    _handle: ingest::supervisor::SupervisorHandle,
    _stop: watch::Sender<bool>,
}

fn two_slots(publish_timeout: Option<Duration>) -> TwoSlots {
    let registry = PublishRegistry::new();
    let slot = |slot: Option<&str>| InputSpec::Rtmp {
        key: Some("k".into()),
        slot: slot.map(str::to_owned),
    };
    let mut config = SupervisorConfig::new("meeting", vec![slot(None), slot(Some("backup"))]);
    config.publish_timeout = publish_timeout;
    let (output_tx, output) = mpsc::channel(10_000);
    let (stop_tx, stop) = watch::channel(false);
    let handle = supervisor::spawn(config, Some(&registry), output_tx, stop).expect("starts");
    TwoSlots {
        registry,
        output,
        status: handle.status(),
        _handle: handle,
        _stop: stop_tx,
    }
}

impl TwoSlots {
    /// A publisher of `name` (`meeting` or `meeting@backup`) with the right key.
    fn publish(&self, name: &str) -> ingest::IngestSender {
        self.registry
            .authorize(&request(name, Some("k")))
            .unwrap_or_else(|e| panic!("{name} refused: {e:?}"))
    }
}

/// Sends frames `from..to` (a keyframe every 25) tagged `tag` as `sender`.
async fn send_frames(
    sender: &ingest::IngestSender,
    tag: &'static [u8],
    frames: std::ops::Range<u64>,
) {
    for n in frames {
        sender.send(video(tag, n, n % 25 == 0)).await.expect("send");
    }
}

/// A platform's primary and backup feeds publish to `<meeting>` and `<meeting>@backup`:
/// both are accepted at once, the backup waits as a hot standby and, when the primary
/// publisher leaves, takes over with its last GOPs (a takeover, not a fresh start).
#[tokio::test(start_paused = true)]
async fn a_backup_slot_publishes_beside_the_primary_and_takes_over_when_it_leaves() {
    let mut slots = two_slots(None);
    assert_eq!(
        slots
            .registry
            .authorize(&request("meeting@backup", Some("wrong")))
            .err(),
        Some(PublishRejection::WrongKey)
    );
    let primary = slots.publish("meeting");
    let backup = slots.publish("meeting@backup");
    assert_eq!(
        slots
            .registry
            .authorize(&request("meeting@backup", Some("k")))
            .err(),
        Some(PublishRejection::Busy)
    );
    send_frames(&primary, b"p", 0..30).await;
    send_frames(&backup, b"b", 0..30).await;
    wait_for_state(&mut slots.status, 1, |s| *s == InputState::Live).await;
    drop(primary);
    let seen = events_until(
        &mut slots.output,
        Duration::from_secs(5),
        "the backup takes over",
        |e| matches!(e, IngestEvent::Frame(f) if f.data[..] == b"b"[..]),
    )
    .await;
    assert!(seen.contains(&IngestEvent::Takeover), "{seen:?}");
    assert!(!seen.contains(&IngestEvent::Discontinuity), "{seen:?}");
}

/// A primary publisher that goes silent without leaving (a killed SRT caller: UDP has
/// no close) is taken over by the live backup slot after the publish timeout, long
/// before the stream's source timeout (OTT-OPS-4).
#[tokio::test(start_paused = true)]
async fn a_silent_primary_publisher_is_taken_over_after_the_publish_timeout() {
    let mut slots = two_slots(Some(Duration::from_millis(500)));
    let primary = slots.publish("meeting");
    let backup = slots.publish("meeting@backup");
    send_frames(&primary, b"p", 0..30).await;
    send_frames(&backup, b"b", 0..30).await;
    // The primary stays connected and sends nothing more; the backup goes on at 25 fps
    // (the stream's source timeout is the default 5 s).
    let silent_at = tokio::time::Instant::now();
    wait_for_state(&mut slots.status, 1, |s| *s == InputState::Live).await;
    let feeder = tokio::spawn(async move {
        for n in 30..130u64 {
            tokio::time::sleep(Duration::from_millis(40)).await;
            if backup.send(video(b"b", n, n % 25 == 0)).await.is_err() {
                break;
            }
        }
    });
    events_until(
        &mut slots.output,
        Duration::from_secs(5),
        "the backup takes over",
        |e| matches!(e, IngestEvent::Frame(f) if f.data[..] == b"b"[..]),
    )
    .await;
    let after = silent_at.elapsed();
    assert!(
        after >= Duration::from_millis(500) && after < Duration::from_secs(2),
        "the backup took over {after:?} after the primary went silent"
    );
    feeder.abort();
    drop(primary);
}

/// A lone publisher's hiccup (no backup live) is not a switch: it waits the stream's
/// source timeout, so a primary that pauses for longer than `publish_timeout` and goes
/// on loses nothing and starts no new period.
#[tokio::test(start_paused = true)]
async fn a_lone_publishers_short_silence_is_no_discontinuity() {
    let mut slots = two_slots(Some(Duration::from_millis(500)));
    let primary = slots.publish("meeting");
    send_frames(&primary, b"p", 0..30).await;
    wait_for_state(&mut slots.status, 0, |s| *s == InputState::Live).await;
    // Three times the publish timeout of silence, then the same publisher goes on.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(slots.status.borrow().inputs[0].state, InputState::Live);
    send_frames(&primary, b"p", 30..40).await;
    let seen = events_until(
        &mut slots.output,
        Duration::from_secs(5),
        "the frames after the silence",
        |e| matches!(e, IngestEvent::Frame(f) if f.pts == 39 * 3600),
    )
    .await;
    assert!(!seen.contains(&IngestEvent::Discontinuity), "{seen:?}");
}

#[test]
fn configuration_errors() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (tx, _rx) = mpsc::channel(1);
        let (_s, stop) = watch::channel(false);
        let none = SupervisorConfig::new("x", vec![]);
        assert_eq!(
            supervisor::spawn(none, None, tx.clone(), stop.clone()).err(),
            Some(SupervisorError::NoInputs("x".into()))
        );
        let rtmp = SupervisorConfig::new(
            "x",
            vec![InputSpec::Rtmp {
                key: None,
                slot: None,
            }],
        );
        assert_eq!(
            supervisor::spawn(rtmp, None, tx.clone(), stop.clone()).err(),
            Some(SupervisorError::NoRegistry("x".into()))
        );
        let same_slot = || InputSpec::Rtmp {
            key: None,
            slot: Some("backup".into()),
        };
        let twice = SupervisorConfig::new("x", vec![same_slot(), same_slot()]);
        assert_eq!(
            supervisor::spawn(twice, Some(&PublishRegistry::new()), tx, stop).err(),
            Some(SupervisorError::SeveralRtmp("x".into()))
        );
    });
}

/// A free UDP port on loopback (bound and released).
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("bind")
        .port()
}

#[tokio::test]
async fn bytes_without_frames_reject_the_input_with_a_reason_and_the_backup_takes_over() {
    let port = free_udp_port();
    let (backup_tx, backup_rx) = mpsc::channel(1024);
    let config = SupervisorConfig {
        source_timeout: Duration::from_millis(500),
        ..SupervisorConfig::new(
            "meeting",
            vec![
                InputSpec::Udp {
                    bind: SocketAddr::from(([127, 0, 0, 1], port)),
                    multicast: None,
                    interface: None,
                },
                InputSpec::Channel {
                    name: "backup".into(),
                    events: backup_rx,
                },
            ],
        )
    };
    let (output_tx, mut output) = mpsc::channel(10_000);
    let (stop_tx, stop) = watch::channel(false);
    let handle = supervisor::spawn(config, None, output_tx, stop).expect("starts");
    let mut status = handle.status();
    // The primary receives 3 s of bytes that are not MPEG-TS; the backup is a clean
    // 25-fps source.
    let garbage = std::thread::spawn(move || {
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("sender");
        let mut x = 0x1234_5678u32;
        for _ in 0..150 {
            let datagram: Vec<u8> = (0..1316)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                // No sync byte, so no packet can ever be read.
                .map(|b| if b == 0x47 { 0x49 } else { b })
                .collect();
            sender
                .send_to(&datagram, ("127.0.0.1", port))
                .expect("send");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let feeder = tokio::spawn(async move {
        for n in 0..75u64 {
            if backup_tx.send(video(b"b", n, n % 25 == 0)).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    });
    wait_for_state(&mut status, 0, |s| matches!(s, InputState::Rejected { .. })).await;
    let now = status.borrow().clone();
    let InputState::Rejected { reason } = &now.inputs[0].state else {
        unreachable!()
    };
    assert!(reason.contains("no MPEG-TS packet"), "{reason}");
    assert_eq!(now.active, Some(1), "the backup delivers");
    let fault = now.inputs[0].fault().cloned().expect("a fault is reported");
    assert_eq!(fault.code, codes::InputFault::NoFrames);
    assert!(fault.ended.is_none());
    assert!(
        fault.detail.contains("no MPEG-TS packet"),
        "{}",
        fault.detail
    );
    // Only the backup's frames reach the stream.
    let first = output.recv().await;
    assert_eq!(first.as_ref().and_then(tag_of), Some((&b"b"[..], true)));
    garbage.join().expect("sender");
    feeder.abort();
    stop_tx.send(true).expect("stop");
    handle.join().await;
}
