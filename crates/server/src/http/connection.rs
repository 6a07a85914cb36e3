//! One accepted connection, served start to finish: the TLS handshake when the
//! listener is HTTPS, the per-connection gate of the device contract, what every
//! route may read of it ([`Connection`]: peer address, TLS, the gate), the
//! deadlines of its phases and the bound on its bodies ([`EdgeLimits`]), over HTTP/1.1
//! and HTTP/2 alike, and a graceful close. The listener loops ([`crate::http::serve`]) and the priority lane
//! ([`crate::http::lane`]) both hand their connections here.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio_rustls::TlsAcceptor;

pub use crate::http::request_context::Connection;

use crate::http::connection_service::ConnectionService;
pub use crate::http::edge_limits::{EdgeLimits, HEADER_READ_TIMEOUT, SEND_TIMEOUT};
use crate::http::head_deadline::{HeadDeadline, HeadWatchdog, WriteWatched};
use crate::http::http_app::HttpApp;
use crate::shed::{ConnectionGate, GatedStream};

/// Tells the open connections to finish (`closing` turns true), waits for them for a
/// grace period of 5 s, then aborts the rest.
pub(crate) async fn close_gracefully(
    closing: &tokio::sync::watch::Sender<bool>,
    mut connections: tokio::task::JoinSet<()>,
) {
    let _ = closing.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
}

/// Serves one accepted connection (TLS handshake first when `tls` is given) until it
/// ends or `closing` turns true, within `limits`.
pub(crate) async fn serve_accepted<A: HttpApp>(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: A,
    tls: Option<TlsAcceptor>,
    mut closing: tokio::sync::watch::Receiver<bool>,
    limits: EdgeLimits,
) {
    let secure = tls.is_some();
    // The device contract is held per connection (SHED-3): the shedding layer
    // reaches the gate through the request, the socket is read through it.
    let gate = Arc::new(ConnectionGate::new());
    // The head and send deadlines watch the socket's writes (see `crate::http::head_deadline`).
    let deadline = HeadDeadline::new(limits.head_timeout, limits.send_timeout());
    let stream = WriteWatched::new(
        GatedStream::new(stream, Arc::clone(&gate)),
        Arc::clone(&deadline),
    );
    let connection = Connection {
        peer,
        secure,
        gate: Some(gate),
    };
    let service = ConnectionService::new(app, connection, limits);
    match tls {
        Some(acceptor) => {
            match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
                    serve_connection(TokioIo::new(stream), service, deadline, &mut closing, h2)
                        .await;
                }
                Ok(Err(error)) => tracing::debug!(%peer, %error, "tls handshake failed"),
                Err(_) => tracing::debug!(%peer, "tls handshake timed out"),
            }
        }
        None => {
            serve_connection(TokioIo::new(stream), service, deadline, &mut closing, false).await;
        }
    }
}

/// How often an HTTP/2 connection is pinged: a peer that does not answer within
/// [`HEADER_READ_TIMEOUT`] is gone, and its socket is closed.
const H2_IDLE_PING: Duration = Duration::from_secs(20);

/// The most concurrent streams one HTTP/2 client may open (LL-HLS holds a blocking
/// playlist reload and a preload hint per rendition: a few each).
const H2_MAX_STREAMS: u32 = 100;

/// The largest header list (decoded, per request) an HTTP/2 client may send: hyper's
/// HTTP/1.1 head buffer is of this order, and hyper's HTTP/2 default (16 MiB) would let
/// one request's headers take that much memory.
const H2_MAX_HEADER_LIST: u32 = 64 * 1024;

/// Streams an HTTP/2 client may open and reset before the server has answered them
/// (the "rapid reset" flood) before the connection is closed.
const H2_MAX_PENDING_RESETS: usize = 20;

/// Streams the server may reset for a client's protocol errors before the connection
/// is closed.
const H2_MAX_ERROR_RESETS: usize = 100;

/// How long an HTTP/2 connection past a deadline is given to take its `GOAWAY` before
/// it is dropped.
const H2_GOAWAY_GRACE: Duration = Duration::from_secs(1);

/// Serves one connection until it ends or the server closes, then finishes in-flight
/// requests gracefully: HTTP/2 when TLS chose `h2` by ALPN (each stream a task on this
/// thread's runtime), else HTTP/1.1 (plain HTTP, or TLS that chose http/1.1; no
/// protocol sniffing on every connection). Both keep the head and send deadlines: an
/// HTTP/2 connection with no request in flight for the head timeout is idle, and is
/// sent `GOAWAY` and closed.
async fn serve_connection<I, A>(
    io: I,
    mut service: ConnectionService<A>,
    deadline: Arc<HeadDeadline>,
    closing: &mut tokio::sync::watch::Receiver<bool>,
    h2: bool,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    A: HttpApp,
{
    // The head deadline is kept beside hyper, not by hyper's own timer
    // (`crate::http::head_deadline` says why); it runs from now (after a TLS handshake).
    deadline.restart();
    service.watch_heads(Arc::clone(&deadline));
    if h2 {
        deadline.watch_answer_progress();
        let connection =
            hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                .timer(hyper_util::rt::TokioTimer::new())
                .max_concurrent_streams(H2_MAX_STREAMS)
                .max_header_list_size(H2_MAX_HEADER_LIST)
                .max_pending_accept_reset_streams(H2_MAX_PENDING_RESETS)
                .max_local_error_reset_streams(H2_MAX_ERROR_RESETS)
                .keep_alive_interval(H2_IDLE_PING)
                .keep_alive_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(io, service);
        tokio::pin!(connection);
        until_closed(
            connection,
            closing,
            |c| c.graceful_shutdown(),
            Some(deadline.watchdog()),
            Some(H2_GOAWAY_GRACE),
        )
        .await;
    } else {
        let connection = hyper::server::conn::http1::Builder::new()
            .header_read_timeout(None)
            .serve_connection(io, service);
        tokio::pin!(connection);
        until_closed(
            connection,
            closing,
            |c| c.graceful_shutdown(),
            Some(deadline.watchdog()),
            None,
        )
        .await;
    }
}

/// Drives `connection` to its end, or, once `closing` turns true, tells it to finish
/// (`finish`: its graceful shutdown) and waits for its in-flight requests. The
/// connection's head watchdog is polled beside it all along: when it ends, a head is
/// overdue (on HTTP/2: the connection is idle) or the writing blocked too long, and the
/// connection is dropped (closed), during a graceful close too — after being told to
/// finish and given `overdue_grace` when one is given (HTTP/2's `GOAWAY`).
async fn until_closed<C: std::future::Future>(
    mut connection: std::pin::Pin<&mut C>,
    closing: &mut tokio::sync::watch::Receiver<bool>,
    finish: impl FnOnce(std::pin::Pin<&mut C>),
    watchdog: Option<HeadWatchdog>,
    overdue_grace: Option<Duration>,
) {
    let closed = async {
        let _ = closing.wait_for(|c| *c).await;
    };
    let watching = async {
        match watchdog {
            Some(watchdog) => watchdog.run().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(watching);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = closed => {
            finish(connection.as_mut());
            tokio::select! {
                _ = connection => {}
                () = &mut watching => {}
            }
        }
        () = &mut watching => {
            tracing::debug!("request head overdue, idle or writing blocked: connection closed");
            if let Some(grace) = overdue_grace {
                finish(connection.as_mut());
                let _ = tokio::time::timeout(grace, connection).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// An answer that takes three head timeouts to make (a long wait) is not cut by
    /// the head deadline, and the connection is closed one timeout after it, with no
    /// further head.
    #[tokio::test(start_paused = true)]
    async fn a_slow_answer_is_not_cut_and_the_idle_connection_after_it_is() {
        let app = tower::service_fn(|_request: axum::extract::Request| async {
            tokio::time::sleep(HEADER_READ_TIMEOUT * 3).await;
            Ok::<_, Infallible>(axum::response::Response::new(axum::body::Body::from(
                "late",
            )))
        });
        let (mut client, serving) = serve_in_memory(app);
        let asked = tokio::time::Instant::now();
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        let mut answer = vec![0u8; 1024];
        let n = client.read(&mut answer).await.expect("read");
        let answered = tokio::time::Instant::now();
        let text = String::from_utf8_lossy(&answer[..n]);
        assert!(
            text.starts_with("HTTP/1.1 200") && text.ends_with("late"),
            "{text}"
        );
        assert_eq!(answered - asked, HEADER_READ_TIMEOUT * 3);
        let ended = serving.await.expect("served");
        assert_eq!(ended - answered, HEADER_READ_TIMEOUT);
        assert_eq!(client.read(&mut answer).await.expect("read"), 0, "closed");
    }

    /// Serves `app` over an in-memory connection with a small buffer (so the
    /// answer's writes block until the client reads); returns the client's end and
    /// the task, which ends (with the time) when the server closes the connection.
    fn serve_in_memory<A: HttpApp>(
        app: A,
    ) -> (
        tokio::io::DuplexStream,
        tokio::task::JoinHandle<tokio::time::Instant>,
    ) {
        let connection = Connection {
            peer: SocketAddr::from(([192, 0, 2, 1], 5000)),
            secure: false,
            gate: None,
        };
        let (client, server) = tokio::io::duplex(4096);
        let serving = tokio::spawn(async move {
            let (_closing, mut closed) = tokio::sync::watch::channel(false);
            let deadline = HeadDeadline::new(HEADER_READ_TIMEOUT, SEND_TIMEOUT);
            let server = WriteWatched::new(server, Arc::clone(&deadline));
            let service = ConnectionService::new(app, connection, EdgeLimits::default());
            serve_connection(TokioIo::new(server), service, deadline, &mut closed, false).await;
            tokio::time::Instant::now()
        });
        (client, serving)
    }

    /// An app answering every request with 1 MB at once.
    fn large_answer() -> impl HttpApp {
        tower::service_fn(|_request: axum::extract::Request| async {
            Ok::<_, Infallible>(axum::response::Response::new(axum::body::Body::from(
                vec![b'x'; 1 << 20],
            )))
        })
    }

    /// A slow client that keeps reading gets the whole answer however long it
    /// takes, and the idle connection is closed one head timeout after the last byte.
    #[tokio::test(start_paused = true)]
    async fn a_large_answer_read_slowly_is_delivered_whole() {
        let (mut client, serving) = serve_in_memory(large_answer());
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        let asked = tokio::time::Instant::now();
        let mut received = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        let head_end = |bytes: &[u8]| bytes.windows(4).position(|w| w == b"\r\n\r\n");
        loop {
            let n = client.read(&mut chunk).await.expect("read");
            assert!(n > 0, "closed after {} bytes", received.len());
            received.extend_from_slice(&chunk[..n]);
            if head_end(&received).is_some_and(|head| received.len() - head - 4 >= 1 << 20) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let read_all = tokio::time::Instant::now();
        assert!(
            read_all - asked > HEADER_READ_TIMEOUT * 2,
            "{:?}",
            read_all - asked
        );
        let head = head_end(&received).expect("a head") + 4;
        assert_eq!(received.len() - head, 1 << 20);
        let ended = serving.await.expect("served");
        assert!(
            ended - read_all <= HEADER_READ_TIMEOUT,
            "{:?}",
            ended - read_all
        );
        assert!(ended - read_all >= HEADER_READ_TIMEOUT - Duration::from_secs(1));
    }

    /// A client that asks and then reads nothing is closed a send timeout after the
    /// writing blocked.
    #[tokio::test(start_paused = true)]
    async fn a_client_that_reads_nothing_is_closed_after_the_send_timeout() {
        let (mut client, serving) = serve_in_memory(large_answer());
        let asked = tokio::time::Instant::now();
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        let ended = serving.await.expect("served");
        assert_eq!(ended - asked, SEND_TIMEOUT);
    }
}
