//! The device contract held per connection (SHED-3), over real TCP on loopback: a
//! connection that repeats a refused NON_CRITICAL request before its `Retry-After` is
//! paused (its refusal answered, and the connection read again, only after a moment);
//! a compliant connection, another connection (CRITICAL
//! segments of a viewer) and refusals injected by a fault rule are never held.

mod shed_load;

use std::time::{Duration, Instant};

use server::shed::ShedSettings;
use shed::{FaultRuleSpec, OverloadLevel, Priority};
use shed_load::{exchange, start_node, Class, SEGMENT_PATH};
use tokio::net::TcpStream;

/// Waits of at most 2 s, pauses of at most 1.5 s, CPU not read (the level is forced).
const SETTINGS: &str = r#"
cpu_source = "off"
violator_pause_ms = 1500
[back_pressure]
cap_seconds = 2
"#;

fn beacon() -> Vec<u8> {
    Class::post(
        "beacon",
        "/telemetry",
        &[("X-Brdyun-Device", "browser")],
        br#"{"event":"heartbeat"}"#,
        1.0,
    )
    .request
}

/// Sends one request on `stream`; its status, whether it was the back-pressure
/// answer, and how long the answer took.
async fn timed(stream: &mut TcpStream, request: &[u8]) -> (u16, bool, Duration) {
    let mut buf = Vec::new();
    let started = Instant::now();
    let (status, _, back_pressure) =
        tokio::time::timeout(Duration::from_secs(10), exchange(stream, request, &mut buf))
            .await
            .expect("answered within 10 s")
            .expect("an HTTP answer");
    (status, back_pressure, started.elapsed())
}

async fn connect(addr: std::net::SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

#[test]
fn a_connection_ignoring_back_pressure_is_paused_and_no_one_else_is() {
    let settings: ShedSettings = toml::from_str(SETTINGS).expect("valid [shedding]");
    let node = start_node(&settings, 1, 16 * 1024);
    node.shedder
        .levels()
        .force_level(Some(OverloadLevel::new(1.0)));
    let addr = node.addr;
    let segment = Class::get(
        "segment",
        SEGMENT_PATH,
        &[
            ("X-Brdyun-Device", "browser"),
            ("X-Brdyun-Member", "viewer-1"),
            ("X-Brdyun-Playback", "1"),
        ],
        1.0,
    )
    .request;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("client runtime");
    runtime.block_on(async {
        // A device retrying at once: refused; then the breach, whose refusal is only
        // answered when the connection's pause ends; and the next one, a breach again.
        let mut eager = connect(addr).await;
        let (status, back_pressure, _) = timed(&mut eager, &beacon()).await;
        assert_eq!((status, back_pressure), (503, true));
        let held = tokio::spawn(async move {
            let breach = timed(&mut eager, &beacon()).await;
            let again = timed(&mut eager, &beacon()).await;
            (breach, again)
        });
        // Meanwhile (the breach is held: its connection is paused) a viewer's segments
        // on another connection are served at once.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while node.shedder.pauses().connection_pauses() < 1 {
            assert!(std::time::Instant::now() < deadline, "the breach was held");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mut viewer = connect(addr).await;
        for _ in 0..3 {
            let (status, _, took) = timed(&mut viewer, &segment).await;
            assert_eq!(status, 200);
            assert!(took < Duration::from_millis(500), "viewer held: {took:?}");
        }
        let (breach, again) = held.await.expect("held requests");
        for (status, back_pressure, waited) in [breach, again] {
            assert_eq!((status, back_pressure), (503, true));
            assert!(
                waited >= Duration::from_millis(700) && waited < Duration::from_secs(3),
                "each breach waits for the pause (0.75-1.5 s): {waited:?}"
            );
        }
        assert_eq!(node.shedder.pauses().connection_pauses(), 2);

        // A device that waits Retry-After (2 s here) is answered at once every time.
        let mut patient = connect(addr).await;
        for _ in 0..2 {
            let (status, back_pressure, took) = timed(&mut patient, &beacon()).await;
            assert_eq!((status, back_pressure), (503, true));
            assert!(
                took < Duration::from_millis(500),
                "compliant held: {took:?}"
            );
            // The device's own behaviour under test: it waits Retry-After.
            tokio::time::sleep(Duration::from_millis(2100)).await;
        }
        assert_eq!(node.shedder.pauses().connection_pauses(), 2);
    });
}

#[test]
fn refusals_injected_by_a_fault_rule_never_pause() {
    let settings: ShedSettings = toml::from_str(SETTINGS).expect("valid [shedding]");
    let node = start_node(&settings, 1, 16 * 1024);
    node.shedder
        .levels()
        .force_level(Some(OverloadLevel::new(0.0)));
    let spec = FaultRuleSpec {
        min_priority: Priority::new(0).expect("priority"),
        max_priority: Priority::new(29).expect("priority"),
        devices: None,
        members: None,
        share: 1.0,
        expires_at: Duration::ZERO,
    };
    node.shedder
        .faults()
        .add(spec, Duration::from_secs(60), node.shedder.now())
        .expect("rule");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    runtime.block_on(async {
        let mut eager = connect(node.addr).await;
        for _ in 0..5 {
            let (status, back_pressure, took) = timed(&mut eager, &beacon()).await;
            assert_eq!((status, back_pressure), (503, true));
            assert!(
                took < Duration::from_millis(500),
                "injected refusal held: {took:?}"
            );
        }
    });
    assert_eq!(node.shedder.pauses().connection_pauses(), 0);
}

/// The priority lane (`priority_lane = "nice"`): a connection opening with a CRITICAL
/// request is served on the lane, one opening with a beacon where it was accepted; both
/// are answered, and a laned connection keeps working for its later requests.
#[test]
fn connections_opening_with_a_critical_request_take_the_lane() {
    let settings: ShedSettings =
        toml::from_str("cpu_source = \"off\"\npriority_lane = \"nice\"").expect("valid");
    let node = start_node(&settings, 1, 16 * 1024);
    let lane = node.lane.clone().expect("a lane was asked for");
    let segment = Class::get(
        "segment",
        SEGMENT_PATH,
        &[
            ("X-Brdyun-Device", "browser"),
            ("X-Brdyun-Member", "viewer-1"),
        ],
        1.0,
    )
    .request;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    runtime.block_on(async {
        let mut beacons = connect(node.addr).await;
        let (status, _, _) = timed(&mut beacons, &beacon()).await;
        assert_eq!(status, 204);
        assert_eq!(
            lane.handed(),
            0,
            "a beacon connection stays where it was accepted"
        );
        let mut viewer = connect(node.addr).await;
        for _ in 0..3 {
            let (status, _, _) = timed(&mut viewer, &segment).await;
            assert_eq!(status, 200);
        }
        // The viewer's connection also carries its beacons.
        let (status, _, _) = timed(&mut viewer, &beacon()).await;
        assert_eq!(status, 204);
        assert_eq!(lane.handed(), 1, "the viewer's connection took the lane");
    });
}
