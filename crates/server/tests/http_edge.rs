//! The HTTP edge holds no socket for a client that does not send (issue "Damaged and
//! hostile input", item 4): a request head trickled a byte at a time (slowloris) and a
//! keep-alive connection left idle are both closed after
//! [`server::connection::HEADER_READ_TIMEOUT`], while a client beside them is served
//! at once.

mod harness;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use server::connection::HEADER_READ_TIMEOUT;
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
