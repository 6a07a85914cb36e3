//! The RTMP listener's limits over real loopback sockets, each client bound to its own
//! `127.0.0.N` to play a host: the per-address and total caps, the publish deadline
//! that bytes do not move, the byte windows of a publisher, and shutdown.

mod common;

use std::time::Duration;

use common::{host, keyframe_bytes, tcp_from, time_to_close, Client, Server, KEY};
use ingest::listener_limits::ListenerLimits;
use ingest::rtmp::chunk::ChunkEncoder;
use ingest::rtmp::commands::{acknowledgement, user_control, UC_PING_REQUEST};
use ingest::rtmp::handshake::HANDSHAKE_SIZE;
use ingest::rtmp::RtmpLimits;
use ingest::IngestEvent;
use tokio::io::AsyncWriteExt;
use tokio::time::{timeout, Instant};

fn limits(listener: ListenerLimits) -> RtmpLimits {
    RtmpLimits::with_listener(listener)
}

/// Waits for one frame from a publisher on the server's channel.
async fn frame_arrives(server: &mut Server) {
    let event = timeout(Duration::from_secs(5), server.frames.recv())
        .await
        .expect("a frame in time")
        .expect("channel open");
    assert!(matches!(event, IngestEvent::Frame(_)), "got {event:?}");
}

#[tokio::test]
async fn one_host_past_its_cap_is_refused_while_another_host_publishes() {
    let mut server = Server::start(limits(ListenerLimits {
        max_pending_per_address: 3,
        ..ListenerLimits::default()
    }))
    .await;
    // The hog holds three handshaken connections that never publish.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(Client::handshaken(server.addr, host(2)).await);
    }
    // Its fourth and fifth are closed at accept.
    for _ in 0..2 {
        let mut refused = tcp_from(server.addr, host(2)).await;
        time_to_close(&mut refused, Duration::from_secs(5)).await;
    }
    server
        .wait_for(Duration::from_secs(5), |s| {
            s.snapshot().refused_connections == 2
        })
        .await;
    assert_eq!(server.limit_count(111_020), 2);
    assert_eq!(server.limit_count(111_021), 0);

    // Another host publishes and its frames flow.
    let (mut publisher, code) =
        Client::published(server.addr, host(7), &format!("cam?key={KEY}")).await;
    assert_eq!(code, "NetStream.Publish.Start");
    publisher.send_keyframe(0, 100).await;
    frame_arrives(&mut server).await;

    // A publisher leaves its address's count: the hog's address may publish too once
    // one of its pending connections is gone, and then open a fresh one beside it.
    drop(held.pop());
    server
        .wait_for(Duration::from_secs(5), |s| {
            s.snapshot().active_connections == 3
        })
        .await;
    let (_second, code) = Client::published(server.addr, host(2), &format!("cam?key={KEY}")).await;
    assert_eq!(code, "NetStream.Publish.Start");
    let _fresh = Client::handshaken(server.addr, host(2)).await;
    assert_eq!(
        server.limit_count(111_020),
        2,
        "no refusal past the publish"
    );
    server.stop().await;
}

#[tokio::test]
async fn the_total_cap_holds_across_hosts() {
    let mut server = Server::start(limits(ListenerLimits {
        max_connections: 3,
        ..ListenerLimits::default()
    }))
    .await;
    let mut held = Vec::new();
    for n in 2..5 {
        held.push(Client::handshaken(server.addr, host(n)).await);
    }
    for n in 5..8 {
        let mut refused = tcp_from(server.addr, host(n)).await;
        time_to_close(&mut refused, Duration::from_secs(5)).await;
    }
    server
        .wait_for(Duration::from_secs(5), |s| {
            s.snapshot().refused_connections == 3
        })
        .await;
    assert_eq!(server.limit_count(111_021), 3);
    assert_eq!(server.stats.snapshot().active_connections, 3);

    // A place freed is a place taken.
    drop(held.pop());
    server
        .wait_for(Duration::from_secs(5), |s| {
            s.snapshot().active_connections == 2
        })
        .await;
    let (_ok, code) = Client::connected(server.addr, host(9)).await;
    assert_eq!(code, "NetConnection.Connect.Success");
    server.stop().await;
}

#[tokio::test]
async fn a_trickling_handshake_is_cut_at_the_publish_deadline() {
    let deadline = Duration::from_millis(1500);
    let mut server = Server::start(limits(ListenerLimits {
        publish_deadline: deadline,
        ..ListenerLimits::default()
    }))
    .await;
    let started = Instant::now();
    let (mut reader, mut writer) = tcp_from(server.addr, host(2)).await.into_split();
    // One byte every 100 ms: far more often than any idle timer, far less than c0c1.
    let trickler = tokio::spawn(async move {
        for _ in 0..(1 + HANDSHAKE_SIZE) {
            if writer.write_all(&[3]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    // Meanwhile another host publishes.
    let (_publisher, code) =
        Client::published(server.addr, host(3), &format!("cam?key={KEY}")).await;
    assert_eq!(code, "NetStream.Publish.Start");
    time_to_close(&mut reader, Duration::from_secs(10)).await;
    let took = started.elapsed();
    trickler.abort();
    assert!(took >= deadline, "cut after {took:?}, before the deadline");
    assert!(
        took < deadline + Duration::from_secs(2),
        "cut after {took:?}"
    );
    assert_eq!(server.limit_count(111_022), 1);
    assert_eq!(server.stats.snapshot().protocol_errors, 0);
    server.stop().await;
}

#[tokio::test]
async fn a_connected_client_sending_without_publishing_is_cut_at_the_deadline() {
    let deadline = Duration::from_millis(1000);
    let mut server = Server::start(limits(ListenerLimits {
        publish_deadline: deadline,
        ..ListenerLimits::default()
    }))
    .await;
    let started = Instant::now();
    let (client, code) = Client::connected(server.addr, host(2)).await;
    assert_eq!(code, "NetConnection.Connect.Success");
    // A valid message every 50 ms (acknowledgements need no answer).
    let (mut reader, mut writer) = client.socket.into_split();
    let chatter = tokio::spawn(async move {
        for i in 0..200 {
            let mut bytes = Vec::new();
            ChunkEncoder::default().write(&acknowledgement(i), &mut bytes);
            if writer.write_all(&bytes).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    time_to_close(&mut reader, Duration::from_secs(10)).await;
    let took = started.elapsed();
    chatter.abort();
    assert!(took >= deadline, "cut after {took:?}, before the deadline");
    assert!(
        took < deadline + Duration::from_secs(2),
        "cut after {took:?}"
    );
    server
        .wait_for(Duration::from_secs(5), |s| {
            s.snapshot().active_connections == 0
        })
        .await;
    assert_eq!(server.limit_count(111_022), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_publisher_is_held_to_the_byte_window() {
    let window = Duration::from_secs(1);
    let mut server = Server::start(limits(ListenerLimits {
        publish_deadline: Duration::from_secs(1),
        byte_window: window,
        min_bytes_per_window: 2_000,
        ..ListenerLimits::default()
    }))
    .await;
    let (mut publisher, code) =
        Client::published(server.addr, host(2), &format!("cam?key={KEY}")).await;
    assert_eq!(code, "NetStream.Publish.Start");
    // 1 KB every 100 ms is 10 KB per window, five times the floor: kept through three
    // windows, past the publish deadline.
    let feeding = Instant::now();
    let mut t = 0;
    while feeding.elapsed() < window * 3 {
        publisher.send_keyframe(t, 1_000).await;
        t += 100;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut frames = 0;
    while let Ok(Some(_)) = timeout(Duration::from_millis(1), server.frames.recv()).await {
        frames += 1;
    }
    assert!(frames >= 10, "frames flowed: {frames}");
    assert_eq!(server.limit_count(111_023), 0);

    // Then it stops sending: cut at the end of the next window.
    let took = time_to_close(&mut publisher.socket, Duration::from_secs(5)).await;
    assert!(
        took < window * 2 + Duration::from_secs(1),
        "cut after {took:?}"
    );
    server
        .wait_for(Duration::from_secs(5), |s| {
            s.snapshot().active_connections == 0
        })
        .await;
    assert_eq!(server.limit_count(111_023), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_publisher_below_the_floor_is_cut_though_it_never_goes_quiet() {
    let window = Duration::from_millis(400);
    let mut server = Server::start(limits(ListenerLimits {
        byte_window: window,
        min_bytes_per_window: 10_000,
        ..ListenerLimits::default()
    }))
    .await;
    let (publisher, code) =
        Client::published(server.addr, host(2), &format!("cam?key={KEY}")).await;
    assert_eq!(code, "NetStream.Publish.Start");
    // About 330 bytes every 50 ms: bytes keep coming, but under 3 KB per window.
    let started = Instant::now();
    let (mut reader, mut writer) = publisher.socket.into_split();
    let feeder = tokio::spawn(async move {
        for t in 1..200 {
            if writer
                .write_all(&keyframe_bytes(t * 50, 300))
                .await
                .is_err()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    time_to_close(&mut reader, Duration::from_secs(10)).await;
    let took = started.elapsed();
    feeder.abort();
    assert!(took >= window, "cut after {took:?}, before a window ended");
    assert!(took < window + Duration::from_secs(2), "cut after {took:?}");
    server
        .wait_for(Duration::from_secs(5), |s| {
            s.snapshot().active_connections == 0
        })
        .await;
    assert_eq!(server.limit_count(111_023), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_publisher_that_stops_reading_is_cut_at_the_send_timeout() {
    let mut server = Server::start(limits(ListenerLimits {
        send_timeout: Duration::from_secs(1),
        byte_window: Duration::from_secs(60),
        ..ListenerLimits::default()
    }))
    .await;
    let (publisher, code) =
        Client::published(server.addr, host(2), &format!("cam?key={KEY}")).await;
    assert_eq!(code, "NetStream.Publish.Start");
    // Pings, each answered with a pong it never reads: the server's replies back up
    // until its write waits.
    let (_unread, mut writer) = publisher.socket.into_split();
    let started = Instant::now();
    let flood = tokio::spawn(async move {
        let mut pings = Vec::new();
        for i in 0..1000 {
            ChunkEncoder::default().write(&user_control(UC_PING_REQUEST, i), &mut pings);
        }
        for _ in 0..10_000 {
            if writer.write_all(&pings).await.is_err() {
                return;
            }
        }
    });
    server
        .wait_for(Duration::from_secs(20), |s| {
            s.snapshot().active_connections == 0
        })
        .await;
    flood.abort();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "cut after {took:?}");
    assert_eq!(server.limit_count(111_024), 1);
    server.stop().await;
}

#[tokio::test]
async fn shutdown_closes_the_open_connections() {
    let mut server = Server::start(RtmpLimits::default()).await;
    let (mut client, code) = Client::connected(server.addr, host(2)).await;
    assert_eq!(code, "NetConnection.Connect.Success");
    server.stop().await;
    time_to_close(&mut client.socket, Duration::from_secs(5)).await;
    assert_eq!(server.stats.snapshot().active_connections, 0);
}

#[tokio::test]
async fn wrong_rtmp_version_is_a_protocol_error() {
    let mut server = Server::start(RtmpLimits::default()).await;
    let mut socket = tcp_from(server.addr, host(2)).await;
    let mut c0c1 = vec![6u8];
    c0c1.resize(1 + HANDSHAKE_SIZE, 0);
    socket.write_all(&c0c1).await.expect("write");
    time_to_close(&mut socket, Duration::from_secs(5)).await;
    // The counter is bumped after the socket closes.
    server
        .wait_for(Duration::from_secs(2), |s| {
            s.snapshot().protocol_errors == 1
        })
        .await;
    server.stop().await;
}
