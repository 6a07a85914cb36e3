//! The HTTP edge holds no socket for a client that does not send (the head deadline and
//! the connection caps of docs/security.md#listeners): a request head trickled a byte
//! at a time (slowloris) and a keep-alive connection left idle are both closed after
//! [`server::http::connection::HEADER_READ_TIMEOUT`], while a client beside them is served
//! at once; connections over the per-address or the node's cap are answered with the
//! cap's code and closed.

mod harness;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use server::http::connection::HEADER_READ_TIMEOUT;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long after the timeout a closed connection may still look open (scheduling).
const SLACK: Duration = Duration::from_secs(3);

/// Reads until the server closes the connection (or writing fails), or `limit`
/// passes; returns when that was, from `start`.
async fn closed_after(stream: &mut TcpStream, start: Instant, limit: Duration) -> Option<Duration> {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return Some(start.elapsed()),
            Ok(Ok(_)) => {}
            Err(_) => return None,
        }
    }
}

async fn get(addr: SocketAddr) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = "GET /api/node HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_closed_and_others_are_served() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server::run(
        listener,
        server::router(harness::node(None)),
        None,
        async {
            let _ = stopped.await;
        },
    ));

    // Slowloris: one byte of a request head every 500 ms, never finished.
    let slow = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let start = Instant::now();
        let head = format!(
            "GET /api/node HTTP/1.1\r\nHost: t\r\nX-Slow: {}",
            "a".repeat(200)
        );
        for byte in head.bytes() {
            if stream.write_all(&[byte]).await.is_err() {
                return Some(start.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            if start.elapsed() > HEADER_READ_TIMEOUT + SLACK {
                break;
            }
        }
        closed_after(&mut stream, start, SLACK).await
    });
    // Idle keep-alive: one request answered, then nothing.
    let idle = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream
            .write_all(b"GET /api/node HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .expect("write");
        let mut first = [0u8; 15];
        stream.read_exact(&mut first).await.expect("an answer");
        assert_eq!(&first, b"HTTP/1.1 200 OK");
        let start = Instant::now();
        closed_after(&mut stream, start, HEADER_READ_TIMEOUT + SLACK).await
    });
    // Meanwhile another client is served at once.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let asked = Instant::now();
    let answer = get(addr).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );

    for (what, task) in [("slowloris", slow), ("idle keep-alive", idle)] {
        let closed = task.await.expect("client task").unwrap_or_else(|| {
            panic!("{what}: still open {SLACK:?} after the {HEADER_READ_TIMEOUT:?} timeout")
        });
        assert!(
            closed >= HEADER_READ_TIMEOUT - Duration::from_millis(600),
            "{what}: closed too early, after {closed:?}"
        );
    }
    let _ = stop.send(());
    served.await.expect("server task");
}

/// A connection from `client` (an address of 127.0.0.0/8) to `addr`.
async fn connect_from(client: [u8; 4], addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::from((client, 0)))
        .expect("bind a loopback address");
    socket.connect(addr).await.expect("connect")
}

/// What the server says at once on a new connection, without a request: the refusal of
/// a cap, or nothing within half a second (admitted).
async fn refusal(stream: &mut TcpStream) -> Option<String> {
    let mut answer = String::new();
    match tokio::time::timeout(
        Duration::from_millis(500),
        stream.read_to_string(&mut answer),
    )
    .await
    {
        Ok(_) => Some(answer),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_a_cap_get_the_caps_code_and_a_closed_one_frees_its_place() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let limits = std::sync::Arc::new(server::http::conn_limits::ConnectionLimits::new(3, 2));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server::http::serve::run_with_lane(
        listener,
        server::router(harness::node(None)),
        None,
        async {
            let _ = stopped.await;
        },
        None,
        Some(std::sync::Arc::clone(&limits)),
    ));

    let mut first = connect_from([127, 0, 0, 1], addr).await;
    let mut second = connect_from([127, 0, 0, 1], addr).await;
    assert_eq!(refusal(&mut first).await, None);
    assert_eq!(refusal(&mut second).await, None);
    // A third from the same address: the address's cap.
    let mut third = connect_from([127, 0, 0, 1], addr).await;
    let answer = refusal(&mut third).await.expect("refused at once");
    assert!(answer.starts_with("HTTP/1.1 429 "), "{answer}");
    assert!(answer.contains("\"code\":108009"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    // Another address is admitted, up to the node's cap; then every address is refused.
    let mut other = connect_from([127, 0, 0, 2], addr).await;
    assert_eq!(refusal(&mut other).await, None);
    let mut fourth = connect_from([127, 0, 0, 3], addr).await;
    let answer = refusal(&mut fourth).await.expect("refused at once");
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(answer.contains("\"code\":108010"), "{answer}");
    // The admitted connections are served; one that ends frees its place.
    second
        .write_all(b"GET /api/node HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut answer = String::new();
    second.read_to_string(&mut answer).await.expect("read");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(second);
    let deadline = Instant::now() + Duration::from_secs(2);
    while limits.open() > 2 {
        assert!(
            Instant::now() < deadline,
            "the ended connection still counts"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut again = connect_from([127, 0, 0, 1], addr).await;
    assert_eq!(refusal(&mut again).await, None, "a freed place");
    drop((first, other, again));
    let _ = stop.send(());
    served.await.expect("server task");
}
