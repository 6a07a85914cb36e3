//! SRT under loss: ffmpeg publishing to an MC over SRT through a relay that drops,
//! delays and reorders datagrams (the test machines' kernels have no `netem`), and the
//! relay itself.

mod common;

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use common::lossy_relay::{Impairment, LossyRelay};
use common::wait_for;

/// The loopback address the relays of these tests bind.
const RELAY_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// A UDP socket on loopback that records the datagrams it receives (their first 8
/// bytes, a big-endian index) on a thread of its own, so none waits in its buffer.
struct Sink {
    addr: SocketAddr,
    reader: std::thread::JoinHandle<Vec<u64>>,
}

impl Sink {
    /// Reads until `expected` datagrams came, or nothing came for `quiet` after the
    /// first (at most 30 s in all).
    fn start(expected: usize, quiet: Duration) -> Sink {
        let socket = UdpSocket::bind((RELAY_IP, 0)).expect("bind the sink");
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        let addr = socket.local_addr().expect("sink address");
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 64];
            let started = Instant::now();
            let mut last = Instant::now();
            while got.len() < expected
                && (got.is_empty() || last.elapsed() < quiet)
                && started.elapsed() < Duration::from_secs(30)
            {
                if let Ok(n) = socket.recv(&mut buf) {
                    assert_eq!(n, 8, "datagram size");
                    got.push(u64::from_be_bytes(buf[..8].try_into().expect("8 bytes")));
                    last = Instant::now();
                }
            }
            got
        });
        Sink { addr, reader }
    }

    /// The indexes received, in arrival order.
    fn received(self) -> Vec<u64> {
        self.reader.join().expect("the sink's thread")
    }
}

/// Sends `count` numbered datagrams through `relay` in batches, each batch once the
/// relay has read the one before (no loss in the host's buffers).
fn send_numbered(relay: &LossyRelay, count: u64) {
    let client = UdpSocket::bind((RELAY_IP, 0)).expect("bind the client");
    for batch in (0..count).collect::<Vec<_>>().chunks(50) {
        for i in batch {
            client
                .send_to(&i.to_be_bytes(), relay.addr())
                .expect("send");
        }
        let upto = batch.last().expect("a batch") + 1;
        let deadline = Instant::now() + Duration::from_secs(5);
        while relay.stats().up.received < upto {
            assert!(Instant::now() < deadline, "the relay did not read a batch");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The indexes that crossed a relay with `impairment` when 2000 were sent.
fn crossing(impairment: Impairment) -> (Vec<u64>, common::lossy_relay::RelayStats) {
    let sink = Sink::start(2000, Duration::from_millis(500));
    let relay = LossyRelay::start(RELAY_IP, sink.addr, impairment);
    send_numbered(&relay, 2000);
    let got = sink.received();
    (got, relay.stats())
}

#[test]
fn the_relay_drops_the_fraction_asked_and_the_same_ones_for_the_same_seed() {
    let (first, stats) = crossing(Impairment::loss(0.1, 7));
    assert_eq!(stats.up.received, 2000, "{stats:?}");
    assert!(
        (150..=250).contains(&stats.up.dropped),
        "10 % of 2000 dropped, give or take: {stats:?}"
    );
    assert_eq!(first.len() as u64, 2000 - stats.up.dropped, "{stats:?}");
    assert_eq!(stats.up.forwarded, first.len() as u64);
    let (again, _) = crossing(Impairment::loss(0.1, 7));
    assert_eq!(first, again, "the same seed drops the same datagrams");
    let (other, _) = crossing(Impairment::loss(0.1, 8));
    assert_ne!(first, other, "another seed drops others");
    let (all, stats) = crossing(Impairment::none());
    assert_eq!(all, (0..2000).collect::<Vec<_>>(), "{stats:?}");
    assert_eq!(stats.up.dropped, 0);
}

#[test]
fn the_relay_reorders_only_when_asked() {
    let (in_order, stats) = crossing(Impairment::none());
    assert_eq!(stats.up.reordered, 0);
    assert!(in_order.windows(2).all(|w| w[0] < w[1]));

    let (shuffled, stats) = crossing(Impairment {
        reorder: 0.05,
        reorder_hold: Duration::from_millis(30),
        ..Impairment::none()
    });
    let overtaken = shuffled.windows(2).filter(|w| w[0] > w[1]).count();
    assert!(overtaken > 0, "no datagram overtaken: {stats:?}");
    assert!(
        (50..=150).contains(&stats.up.held_back),
        "5 % of 2000 held back: {stats:?}"
    );
    assert!(stats.up.reordered > 0, "{stats:?}");
    let set: BTreeSet<u64> = shuffled.iter().copied().collect();
    assert_eq!(set.len(), 2000, "reordered, none lost");
}

#[test]
fn the_relay_delays_both_ways_and_answers_each_client_on_its_own() {
    // An echo server: what it receives goes back to the sender.
    let server = UdpSocket::bind((RELAY_IP, 0)).expect("bind");
    server
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let server_addr = server.local_addr().expect("addr");
    let echo = std::thread::spawn(move || {
        let mut peers = BTreeSet::new();
        let mut buf = [0u8; 64];
        let deadline = Instant::now() + Duration::from_secs(5);
        while peers.len() < 2 && Instant::now() < deadline {
            if let Ok((n, peer)) = server.recv_from(&mut buf) {
                peers.insert(peer);
                let _ = server.send_to(&buf[..n], peer);
            }
        }
        peers.len()
    });
    let relay = LossyRelay::start(
        RELAY_IP,
        server_addr,
        Impairment {
            delay: Duration::from_millis(60),
            ..Impairment::none()
        },
    );
    for who in [b"client-a", b"client-b"] {
        let client = UdpSocket::bind((RELAY_IP, 0)).expect("bind");
        client
            .set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let sent = Instant::now();
        client.send_to(who, relay.addr()).expect("send");
        let mut buf = [0u8; 64];
        let (n, from) = client.recv_from(&mut buf).expect("the echo");
        let rtt = sent.elapsed();
        assert_eq!(&buf[..n], who);
        assert_eq!(from, relay.addr());
        assert!(
            rtt >= Duration::from_millis(120),
            "60 ms each way, round trip {rtt:?}"
        );
    }
    assert_eq!(echo.join().expect("echo thread"), 2, "two upstream peers");
    assert_eq!(relay.stats().clients, 2);
    // Counted just after the echo was sent on.
    wait_for("two echoes counted", Duration::from_secs(2), || {
        (relay.stats().down.forwarded == 2).then_some(())
    });
}
