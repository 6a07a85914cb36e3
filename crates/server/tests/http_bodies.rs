//! Request bodies and HTTP/2 connections are bounded at the edge, over real sockets:
//! a body that stops arriving is answered 408 (108011) within the body deadline and its
//! connection closed while a client beside it is served; a body declared larger than a
//! route (or any route) takes is answered 413 with its code before it is read; over
//! TLS with ALPN `h2`, an idle connection is closed after the head deadline and a slow
//! body on one stream gets its 408.

mod harness;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::BodyExt as _;
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use server::http::conn_limits::ConnectionLimits;
use server::http::edge_limits::{EdgeLimits, MAX_BODY_BYTES};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The deadlines of these tests' servers (short, so the tests are).
const DEADLINE: Duration = Duration::from_secs(2);

/// The send deadline of these tests' servers.
const SEND_DEADLINE: Duration = Duration::from_secs(3);

/// How long after a deadline a cut may still be on its way (scheduling).
const SLACK: Duration = Duration::from_secs(3);

fn limits() -> Arc<ConnectionLimits> {
    Arc::new(ConnectionLimits::new(100, 50).with_edge(EdgeLimits {
        head_timeout: DEADLINE,
        body_timeout: DEADLINE,
        send_timeout: SEND_DEADLINE,
        ..EdgeLimits::default()
    }))
}

/// A node's router served on loopback within [`limits`] (HTTPS when `tls` is given);
/// dropping the sender stops it.
async fn serve(
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server::http::serve::run_with_lane(
        listener,
        server::router(harness::node(None)),
        tls,
        async {
            let _ = stopped.await;
        },
        None,
        Some(limits()),
    ));
    (addr, stop)
}

/// Sends `head` (with the part of a body it has, if any), then reads until the server
/// closes: the answer and how long it took, or `None` when the server neither answered
/// nor closed in `limit`.
async fn ask_and_wait(addr: SocketAddr, head: &str, limit: Duration) -> Option<(String, Duration)> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write");
    let start = Instant::now();
    let mut answer = Vec::new();
    match tokio::time::timeout(limit, stream.read_to_end(&mut answer)).await {
        Ok(Ok(_)) => Some((
            String::from_utf8_lossy(&answer).into_owned(),
            start.elapsed(),
        )),
        Ok(Err(error)) => panic!("read failed: {error}"),
        Err(_) => None,
    }
}

/// The `code` of an answer's JSON body.
fn code_of(answer: &str) -> u64 {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let json: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    json["code"].as_u64().unwrap_or(0)
}

async fn node_status(addr: SocketAddr) -> String {
    let head = "GET /api/node HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let (answer, _) = ask_and_wait(addr, head, Duration::from_secs(5))
        .await
        .expect("answered");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_arriving_is_cut_with_its_code_while_others_are_served() {
    let (addr, _stop) = serve(None).await;
    // Content-Length 4096, one byte sent: the beacon's route waits for the rest.
    let slow = tokio::spawn(ask_and_wait(
        addr,
        "POST /telemetry HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Content-Length: 4096\r\n\r\n{",
        DEADLINE + SLACK,
    ));
    // A client beside it is served at once, meanwhile.
    let asked = Instant::now();
    let answer = node_status(addr).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    assert!(
        !slow.is_finished(),
        "the slow body was cut before its deadline"
    );

    let (answer, after) = slow
        .await
        .expect("client task")
        .unwrap_or_else(|| panic!("still open {SLACK:?} after the {DEADLINE:?} body deadline"));
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(code_of(&answer), 108_011, "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(
        after >= DEADLINE - Duration::from_millis(200),
        "cut too early: {after:?}"
    );
    let mut metrics = String::new();
    server::http::bounded_body::render_metrics(&mut metrics);
    let cut = metrics
        .lines()
        .find(|l| l.contains("code=\"108011\",reason=\"body_timed_out\""))
        .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok());
    assert!(cut.is_some_and(|n| n >= 1), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_too_large_is_refused_with_its_code_before_it_is_read() {
    let (addr, _stop) = serve(None).await;
    // Larger than any route takes: refused at the edge, whatever the route.
    let head = format!(
        "POST /telemetry HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        MAX_BODY_BYTES + 1
    );
    let (answer, after) = ask_and_wait(addr, &head, Duration::from_secs(1))
        .await
        .expect("refused and closed at once, no byte of the body sent");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(code_of(&answer), 108_005, "{answer}");
    assert!(after < Duration::from_secs(1));

    // Within the edge's cap but over the beacon route's own (4 KiB): the route's code,
    // and the connection closed with the body unread.
    let request = format!(
        "POST /telemetry HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Content-Length: 8192\r\n\r\n{}",
        " ".repeat(8192)
    );
    let (answer, _) = ask_and_wait(addr, &request, Duration::from_secs(1))
        .await
        .expect("refused and closed at once");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(code_of(&answer), 106_002, "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );

    // A beacon that fits is taken, on a connection that stays usable.
    let beacon = r#"{"kind":"log"}"#;
    let head = format!(
        "POST /telemetry HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{beacon}GET /api/node HTTP/1.1\r\nHost: t\r\n\
         Connection: close\r\n\r\n",
        beacon.len()
    );
    let (answer, _) = ask_and_wait(addr, &head, Duration::from_secs(5))
        .await
        .expect("both answered");
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 2, "{answer}");
}

/// Writes a self-signed certificate for `localhost` into `dir` with the `openssl` CLI.
fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost"])
        // An end-entity certificate: rustls refuses a CA as a server's.
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl failed");
    (cert, key)
}

/// The client end of an h2 connection over TLS to `addr`, trusting `cert`.
type H2 = hyper::client::conn::http2::SendRequest<
    http_body_util::combinators::BoxBody<Bytes, Infallible>,
>;

/// Connects over TLS with ALPN `h2` only, granting each stream `window` bytes of
/// flow-control window (h2's default without); returns the request sender and the
/// connection's task, which ends when the server closes the connection.
async fn h2_connect(
    addr: SocketAddr,
    cert: &Path,
    window: Option<u32>,
) -> (H2, tokio::task::JoinHandle<()>) {
    use rustls_pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for der in rustls_pki_types::CertificateDer::pem_file_iter(cert).expect("cert file") {
        roots.add(der.expect("a certificate")).expect("trusted");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("tls handshake");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(b"h2".as_slice()));
    let (send, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(window)
        .handshake(TokioIo::new(tls))
        .await
        .expect("h2 handshake");
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    (send, task)
}

/// How long `connection` stays open from now, or `None` past `limit`.
async fn open_for(connection: tokio::task::JoinHandle<()>, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    tokio::time::timeout(limit, connection)
        .await
        .ok()
        .map(|_| start.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_h2_connections_are_closed_and_a_slow_h2_body_gets_its_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = self_signed(dir.path());
    let acceptor = server::http::serve::tls_acceptor(&cert, &key).expect("acceptor");
    let (addr, _stop) = serve(Some(acceptor)).await;

    // Connected, then nothing: closed a head deadline later.
    let (_idle, idle_connection) = h2_connect(addr, &cert, None).await;
    let idle = tokio::spawn(open_for(idle_connection, DEADLINE + SLACK));

    // One request answered, then nothing: closed a head deadline after the answer.
    let (mut asking, asking_connection) = h2_connect(addr, &cert, None).await;
    let request = hyper::Request::get(format!("https://localhost:{}/api/node", addr.port()))
        .body(http_body_util::Empty::new().boxed())
        .expect("request");
    let response = asking.send_request(request).await.expect("answered");
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.expect("body");
    assert!(!body.to_bytes().is_empty());
    let after_answer = tokio::spawn(open_for(asking_connection, DEADLINE + SLACK));

    // A body of 4096 declared bytes, one sent: its stream gets 408 (108011).
    let (mut slow, _slow_connection) = h2_connect(addr, &cert, None).await;
    let frames =
        futures_util::stream::iter([Ok::<_, Infallible>(Frame::data(Bytes::from_static(b"{")))])
            .chain(futures_util::stream::pending());
    let request = hyper::Request::post(format!("https://localhost:{}/telemetry", addr.port()))
        .header("content-type", "application/json")
        .header("content-length", "4096")
        .body(http_body_util::BodyExt::boxed(
            http_body_util::StreamBody::new(frames),
        ))
        .expect("request");
    let asked = Instant::now();
    let response = tokio::time::timeout(DEADLINE + SLACK, slow.send_request(request))
        .await
        .expect("answered within the body deadline")
        .expect("an answer");
    assert_eq!(response.status(), 408);
    assert!(asked.elapsed() >= DEADLINE - Duration::from_millis(200));
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let json: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(json["code"], 108_011);

    for (what, closed) in [
        ("idle from the start", idle.await.expect("task")),
        ("idle after an answer", after_answer.await.expect("task")),
    ] {
        let closed =
            closed.unwrap_or_else(|| panic!("{what}: still open {SLACK:?} after the {DEADLINE:?}"));
        assert!(
            closed >= DEADLINE - Duration::from_secs(1),
            "{what}: closed too early, after {closed:?}"
        );
    }
}

/// The send deadline on HTTP/2: a client that takes an answer's headers but grants no
/// flow-control window for its body (it reads nothing, without blocking the socket) is
/// closed a send deadline later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_client_that_grants_no_window_is_closed_after_the_send_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = self_signed(dir.path());
    let acceptor = server::http::serve::tls_acceptor(&cert, &key).expect("acceptor");
    let (addr, _stop) = serve(Some(acceptor)).await;

    let (mut stalled, connection) = h2_connect(addr, &cert, Some(0)).await;
    let request = hyper::Request::get(format!("https://localhost:{}/api/node", addr.port()))
        .body(http_body_util::Empty::new().boxed())
        .expect("request");
    let response = stalled.send_request(request).await.expect("headers");
    assert_eq!(response.status(), 200);
    let closed = open_for(connection, SEND_DEADLINE + SLACK)
        .await
        .unwrap_or_else(|| panic!("still open {SLACK:?} after the {SEND_DEADLINE:?}"));
    assert!(
        closed >= SEND_DEADLINE - Duration::from_secs(1),
        "closed too early, after {closed:?}"
    );
    drop(response);
}
