//! The RTMP server's limits over real loopback sockets: a client stuck mid-handshake
//! or silent after it is dropped, the server keeps serving others, connections beyond
//! the limit are refused, and shutdown closes everything.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ingest::publish::{PublishAuthorizer, PublishRejection, PublishRequest};
use ingest::rtmp::amf0::{self, Amf0Value};
use ingest::rtmp::chunk::{msg_type, ChunkDecoder, ChunkEncoder};
use ingest::rtmp::commands::command;
use ingest::rtmp::handshake::HANDSHAKE_SIZE;
use ingest::rtmp::{serve_with_stats, RtmpLimits, RtmpStats};
use ingest::IngestSender;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::time::{timeout, Instant};

struct RefuseAll;

impl PublishAuthorizer for RefuseAll {
    fn authorize(&self, _: &PublishRequest) -> Result<IngestSender, PublishRejection> {
        Err(PublishRejection::UnknownStream)
    }
}

struct Server {
    addr: SocketAddr,
    stats: Arc<RtmpStats>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

async fn start(limits: RtmpLimits) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stats = Arc::new(RtmpStats::default());
    let (stop, stop_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(serve_with_stats(
        listener,
        Arc::new(RefuseAll),
        limits,
        stats.clone(),
        async {
            let _ = stop_rx.await;
        },
    ));
    Server {
        addr,
        stats,
        stop,
        task,
    }
}

/// Reads until EOF or error; returns how long that took.
async fn time_to_close(socket: &mut TcpStream, bound: Duration) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 8192];
    timeout(bound, async {
        while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await
    .expect("server did not close the connection in time");
    started.elapsed()
}

/// A full client handshake, then `connect`; returns the socket and the status code.
async fn connect_client(addr: SocketAddr) -> (TcpStream, String) {
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    let mut c0c1 = vec![3u8];
    c0c1.resize(1 + HANDSHAKE_SIZE, 7);
    socket.write_all(&c0c1).await.expect("write c0c1");
    let mut s0s1s2 = vec![0u8; 1 + 2 * HANDSHAKE_SIZE];
    socket.read_exact(&mut s0s1s2).await.expect("read s0s1s2");
    assert_eq!(s0s1s2[0], 3);
    assert_eq!(&s0s1s2[1 + HANDSHAKE_SIZE..], &c0c1[1..], "s2 echoes c1");
    socket
        .write_all(&s0s1s2[1..=HANDSHAKE_SIZE])
        .await
        .expect("write c2");
    let mut bytes = Vec::new();
    ChunkEncoder::default().write(
        &command(
            3,
            0,
            &[
                Amf0Value::string("connect"),
                Amf0Value::Number(1.0),
                Amf0Value::object([("app", Amf0Value::string("live"))]),
            ],
        ),
        &mut bytes,
    );
    socket.write_all(&bytes).await.expect("write connect");
    let mut decoder = ChunkDecoder::new(1 << 20);
    let mut buf = [0u8; 4096];
    loop {
        let n = timeout(Duration::from_secs(5), socket.read(&mut buf))
            .await
            .expect("connect reply in time")
            .expect("read");
        assert!(n > 0, "server closed before answering connect");
        decoder.feed(&buf[..n]);
        while let Some(m) = decoder.poll().expect("valid server chunks") {
            if m.type_id == msg_type::COMMAND_AMF0 {
                let values = amf0::decode_all(&m.payload).expect("amf0");
                let code = values
                    .get(3)
                    .and_then(|info| info.get("code"))
                    .and_then(Amf0Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                return (socket, code);
            }
        }
    }
}

#[tokio::test]
async fn half_handshake_is_dropped_and_others_are_served() {
    let server = start(RtmpLimits {
        handshake_timeout: Duration::from_millis(300),
        ..RtmpLimits::default()
    })
    .await;
    let mut stuck = TcpStream::connect(server.addr).await.expect("connect");
    stuck.write_all(&[3; 700]).await.expect("half of c0c1");

    // While the stuck client holds its connection, another one is served fully.
    let (_ok, code) = connect_client(server.addr).await;
    assert_eq!(code, "NetConnection.Connect.Success");

    let took = time_to_close(&mut stuck, Duration::from_secs(5)).await;
    assert!(took < Duration::from_secs(2), "dropped after {took:?}");
    // And after the drop, a new client is still served.
    let (_ok2, code) = connect_client(server.addr).await;
    assert_eq!(code, "NetConnection.Connect.Success");
    let stats = server.stats.snapshot();
    assert_eq!(stats.connections, 3);
    assert_eq!(stats.protocol_errors, 1, "the handshake timeout is counted");

    let _ = server.stop.send(());
    timeout(Duration::from_secs(5), server.task)
        .await
        .expect("shutdown in time")
        .expect("server task");
}

#[tokio::test]
async fn silent_client_is_dropped_after_idle_timeout() {
    let server = start(RtmpLimits {
        idle_timeout: Duration::from_millis(300),
        ..RtmpLimits::default()
    })
    .await;
    let (mut socket, code) = connect_client(server.addr).await;
    assert_eq!(code, "NetConnection.Connect.Success");
    let took = time_to_close(&mut socket, Duration::from_secs(5)).await;
    assert!(took < Duration::from_secs(2), "dropped after {took:?}");
    let _ = server.stop.send(());
    let _ = timeout(Duration::from_secs(5), server.task).await;
}

#[tokio::test]
async fn connections_beyond_the_limit_are_refused_and_shutdown_closes_the_rest() {
    let server = start(RtmpLimits {
        max_connections: 1,
        ..RtmpLimits::default()
    })
    .await;
    let (mut first, code) = connect_client(server.addr).await;
    assert_eq!(code, "NetConnection.Connect.Success");
    let mut second = TcpStream::connect(server.addr).await.expect("tcp connect");
    time_to_close(&mut second, Duration::from_secs(5)).await;
    assert_eq!(server.stats.snapshot().refused_connections, 1);

    // Shutdown closes the open connection and the server returns.
    let _ = server.stop.send(());
    time_to_close(&mut first, Duration::from_secs(5)).await;
    timeout(Duration::from_secs(5), server.task)
        .await
        .expect("shutdown in time")
        .expect("server task");
    assert_eq!(server.stats.snapshot().active_connections, 0);
}

#[tokio::test]
async fn wrong_rtmp_version_is_a_protocol_error() {
    let server = start(RtmpLimits::default()).await;
    let mut socket = TcpStream::connect(server.addr).await.expect("connect");
    let mut c0c1 = vec![6u8];
    c0c1.resize(1 + HANDSHAKE_SIZE, 0);
    socket.write_all(&c0c1).await.expect("write");
    time_to_close(&mut socket, Duration::from_secs(5)).await;
    // The counter is bumped after the socket closes; poll briefly.
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.stats.snapshot().protocol_errors == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.stats.snapshot().protocol_errors, 1);
    let _ = server.stop.send(());
    let _ = timeout(Duration::from_secs(5), server.task).await;
}
