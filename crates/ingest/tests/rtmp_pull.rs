//! The RTMP pull input's deadlines against servers that misbehave on loopback: one
//! that refuses, one that accepts and never answers the handshake, and one that
//! answers the handshake and then never starts the stream. Each attempt ends with its
//! own cause within its deadline, and the input tries again.

use std::sync::Arc;
use std::time::Duration;

use ingest::rtmp::handshake::{server_response, HANDSHAKE_SIZE};
use ingest::rtmp::pull::{run, RtmpPullConfig, RtmpPullError};
use ingest::status::{InputCounters, InputError, InputEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

fn config(url: String) -> RtmpPullConfig {
    RtmpPullConfig {
        connect_timeout: Duration::from_millis(300),
        first_media_timeout: Duration::from_millis(700),
        ..RtmpPullConfig::new(url)
    }
}

/// Runs the pull until its first failure; returns it with the time it took and the
/// input's counters.
async fn first_failure(config: RtmpPullConfig) -> (RtmpPullError, Duration, Arc<InputCounters>) {
    let counters = Arc::new(InputCounters::default());
    let (events_tx, mut events) = mpsc::channel(16);
    let (stop_tx, stop) = watch::channel(false);
    let started = Instant::now();
    let task = tokio::spawn(run(config, Arc::clone(&counters), events_tx, stop));
    let failure = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match events.recv().await.expect("the input runs") {
                InputEvent::Failed(InputError::RtmpPull(e)) => return e,
                InputEvent::Failed(other) => panic!("not a pull failure: {other}"),
                _ => {}
            }
        }
    })
    .await
    .expect("a failure within 5 s");
    let took = started.elapsed();
    let _ = stop_tx.send(true);
    task.await.unwrap();
    (failure, took, counters)
}

#[tokio::test]
async fn a_refusing_server_is_connection_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let (error, _, counters) =
        first_failure(config(format!("rtmp://127.0.0.1:{port}/live/x"))).await;
    assert!(matches!(error, RtmpPullError::Refused), "{error}");
    assert_eq!(InputCounters::get(&counters.errors), 1);
}

#[tokio::test]
async fn a_server_that_never_answers_the_handshake_is_left_at_the_connect_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(socket);
    });
    let (error, took, _) = first_failure(config(format!("rtmp://127.0.0.1:{port}/live/x"))).await;
    assert!(
        matches!(&error, RtmpPullError::Handshake(why) if why == "timed out"),
        "{error}"
    );
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    server.abort();
}

#[tokio::test]
async fn a_server_that_never_starts_the_stream_is_left_at_the_first_media_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut c0c1 = vec![0u8; 1 + HANDSHAKE_SIZE];
        socket.read_exact(&mut c0c1).await.unwrap();
        let reply = server_response(&c0c1, 0, || 7).unwrap();
        socket.write_all(&reply).await.unwrap();
        // Reads C2 and `connect`, and answers nothing.
        let mut sink = [0u8; 4096];
        while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
    });
    let (error, took, counters) =
        first_failure(config(format!("rtmp://127.0.0.1:{port}/live/x"))).await;
    assert!(matches!(error, RtmpPullError::NoMedia(_)), "{error}");
    assert!(
        took >= Duration::from_millis(700) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(InputCounters::get(&counters.connects), 0, "never connected");
    server.abort();
}
