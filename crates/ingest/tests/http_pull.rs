//! HTTP(S) pull against tiny servers on 127.0.0.1: frames arrive, each failure cause
//! gets its own error, and the input reconnects after the server restarts.
//! Requirement MTG-2 (a node reports the precise cause of a failed MC connection).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ingest::http_pull::{self, redact_url, Backoff, HttpPullConfig, HttpPullError};
use ingest::status::{InputCounters, InputError, InputEvent};
use ingest::IngestEvent;
use media::TrackKind;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::timeout;

const FIXTURE: &[u8] = include_bytes!("fixtures/av_3s.ts");
const OK_HEADERS: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: video/mp2t\r\n\r\n";

async fn read_request(stream: &mut TcpStream) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
}

/// Accepts connections forever; each gets `head`, then `body`, then is held open
/// (`hold`) or closed.
async fn serve(listener: TcpListener, head: &'static [u8], body: &'static [u8], hold: bool) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            read_request(&mut stream).await;
            let _ = stream.write_all(head).await;
            for chunk in body.chunks(4096) {
                if stream.write_all(chunk).await.is_err() {
                    return;
                }
            }
            if hold {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
        });
    }
}

async fn server(head: &'static [u8], body: &'static [u8], hold: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(serve(listener, head, body, hold));
    addr
}

fn config(url: String) -> HttpPullConfig {
    HttpPullConfig {
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_millis(400),
        backoff: Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(200),
        },
        ..HttpPullConfig::new(url)
    }
}

async fn connect_error(config: &HttpPullConfig) -> HttpPullError {
    match timeout(Duration::from_secs(10), http_pull::connect(config, None)).await {
        Ok(Err(e)) => e,
        Ok(Ok(_)) => panic!("connect should fail"),
        Err(_) => panic!("connect did not finish"),
    }
}

#[tokio::test]
async fn frames_arrive_from_a_live_http_source() {
    let addr = server(OK_HEADERS, FIXTURE, true).await;
    let (tx, mut rx) = mpsc::channel(64);
    let (_stop_tx, stop) = watch::channel(false);
    let counters = Arc::new(InputCounters::default());
    let url = format!("http://user:secret@{addr}/live/stream.ts");
    tokio::spawn(http_pull::run(config(url), Arc::clone(&counters), tx, stop));

    let (mut video, mut audio, mut first_video_key) = (0, 0, None);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while video < 50 || audio < 20 {
        let event = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("frames within 10 s")
            .expect("input alive");
        if let InputEvent::Media(IngestEvent::Frame(frame)) = event {
            match frame.kind() {
                TrackKind::Video => {
                    first_video_key.get_or_insert(frame.keyframe);
                    video += 1;
                }
                TrackKind::Audio => audio += 1,
            }
        }
    }
    assert_eq!(first_video_key, Some(true));
    assert!(InputCounters::get(&counters.bytes) > 0);
    assert!(InputCounters::get(&counters.frames) >= 70);
}

#[tokio::test]
async fn refused_port_is_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let error = connect_error(&config(format!("http://{addr}/x.ts"))).await;
    assert!(matches!(error, HttpPullError::Refused), "{error:?}");
}

type Expected = fn(&HttpPullError) -> bool;

#[tokio::test]
async fn status_classes_are_distinct() {
    let cases: [(&'static [u8], Expected); 4] = [
        (
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            |e| matches!(e, HttpPullError::NotFound),
        ),
        (
            b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n",
            |e| matches!(e, HttpPullError::Unauthorized { status: 403 }),
        ),
        (
            b"HTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\n\r\n",
            |e| matches!(e, HttpPullError::ServerError { status: 503 }),
        ),
        (b"SSH-2.0-OpenSSH\r\n\r\n", |e| {
            matches!(e, HttpPullError::Protocol(_))
        }),
    ];
    for (head, expected) in cases {
        let addr = server(head, b"", false).await;
        let error = connect_error(&config(format!("http://{addr}/s.ts"))).await;
        assert!(expected(&error), "{error:?}");
    }
}

#[tokio::test]
async fn a_server_that_hangs_after_headers_is_a_read_timeout() {
    let addr = server(OK_HEADERS, b"", true).await;
    let config = config(format!("http://{addr}/s.ts"));
    let mut connection = http_pull::connect(&config, None).await.expect("connects");
    let started = std::time::Instant::now();
    let error = connection.next_chunk().await.expect_err("no data");
    assert!(matches!(error, HttpPullError::ReadTimeout(_)), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_response_timeout() {
    let addr = server(b"", b"", true).await;
    let error = connect_error(&config(format!("http://{addr}/s.ts"))).await;
    assert!(
        matches!(error, HttpPullError::ResponseTimeout(_)),
        "{error:?}"
    );
}

#[tokio::test]
async fn unresolvable_host_is_a_dns_error() {
    let error = connect_error(&config("http://no-such-host.invalid/s.ts".into())).await;
    assert!(matches!(error, HttpPullError::Dns { .. }), "{error:?}");
}

#[tokio::test]
async fn bad_urls_are_rejected() {
    for url in ["ftp://host/x", "http:///x", "not a url"] {
        let error = connect_error(&config(url.into())).await;
        assert!(
            matches!(error, HttpPullError::InvalidUrl(_)),
            "{url}: {error:?}"
        );
    }
}

#[tokio::test]
async fn reconnects_after_the_server_restarts() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    // The first server sends part of the stream and closes.
    let first = tokio::spawn(serve(listener, OK_HEADERS, &FIXTURE[..40_000], false));
    let (tx, mut rx) = mpsc::channel(64);
    let (_stop_tx, stop) = watch::channel(false);
    let counters = Arc::new(InputCounters::default());
    tokio::spawn(http_pull::run(
        config(format!("http://{addr}/s.ts")),
        Arc::clone(&counters),
        tx,
        stop,
    ));

    // Frames, then the end of the stream.
    let mut frames = 0;
    loop {
        match next(&mut rx).await {
            InputEvent::Media(IngestEvent::Frame(_)) => frames += 1,
            InputEvent::Failed(InputError::Http(HttpPullError::EndOfStream)) => break,
            _ => {}
        }
    }
    assert!(frames > 0);
    first.abort();
    let _ = first.await;
    // Down: refused until the server is back.
    loop {
        if let InputEvent::Failed(InputError::Http(HttpPullError::Refused)) = next(&mut rx).await {
            break;
        }
    }
    let listener = TcpListener::bind(addr).await.expect("rebind same port");
    tokio::spawn(serve(listener, OK_HEADERS, FIXTURE, true));
    loop {
        if let InputEvent::Connected = next(&mut rx).await {
            break;
        }
    }
    loop {
        if let InputEvent::Media(IngestEvent::Frame(_)) = next(&mut rx).await {
            break;
        }
    }
    assert!(InputCounters::get(&counters.connects) >= 2);
}

async fn next(rx: &mut mpsc::Receiver<InputEvent>) -> InputEvent {
    timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("event within 10 s")
        .expect("input alive")
}

fn openssl(args: &[&str], dir: &Path) {
    let status = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl {args:?}");
}

/// A CA `{name}-ca.crt` and a leaf `{name}.crt`/`{name}.key` for localhost and
/// 127.0.0.1 that it signed.
fn openssl_cert(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let (ca_crt, ca_key) = (format!("{name}-ca.crt"), format!("{name}-ca.key"));
    let (crt, key, csr) = (
        format!("{name}.crt"),
        format!("{name}.key"),
        format!("{name}.csr"),
    );
    let mut args = vec!["req", "-x509"];
    args.extend(ec);
    args.extend([
        "-days",
        "2",
        "-subj",
        "/CN=test ca",
        "-keyout",
        &ca_key,
        "-out",
        &ca_crt,
    ]);
    openssl(&args, dir);
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend(["-subj", "/CN=localhost", "-keyout", &key, "-out", &csr]);
    openssl(&args, dir);
    let ext = format!("{name}.ext");
    std::fs::write(
        dir.join(&ext),
        "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .expect("ext file");
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &crt,
        ],
        dir,
    );
    (dir.join(crt), dir.join(key))
}

async fn tls_server(cert: &Path, key: &Path) -> SocketAddr {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = vec![CertificateDer::from_pem_file(cert).expect("cert")];
    let key = PrivateKeyDer::from_pem_file(key).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = [0u8; 2048];
                let _ = tls.read(&mut buf).await;
                let _ = tls.write_all(OK_HEADERS).await;
                let _ = tls.write_all(FIXTURE).await;
                tokio::time::sleep(Duration::from_secs(60)).await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn https_trusts_the_given_ca_and_rejects_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = openssl_cert(dir.path(), "server");
    let (_, _) = openssl_cert(dir.path(), "other");
    let ca = dir.path().join("server-ca.crt");
    let other = dir.path().join("other-ca.crt");
    let addr = tls_server(&cert, &key).await;
    let url = format!("https://127.0.0.1:{}/s.ts", addr.port());

    let trusted = HttpPullConfig {
        ca_file: Some(ca),
        ..config(url.clone())
    };
    let mut connection = http_pull::connect(&trusted, None)
        .await
        .expect("https works");
    assert!(!connection.next_chunk().await.expect("body").is_empty());

    let untrusted = HttpPullConfig {
        ca_file: Some(other),
        ..config(url.clone())
    };
    let error = connect_error(&untrusted).await;
    assert!(
        matches!(error, HttpPullError::TlsCertificate(_)),
        "{error:?}"
    );

    let missing = HttpPullConfig {
        ca_file: Some(dir.path().join("missing.pem")),
        ..config(url)
    };
    let error = connect_error(&missing).await;
    assert!(matches!(error, HttpPullError::TlsConfig(_)), "{error:?}");

    // https to a plain HTTP server: the handshake fails, not the certificate.
    let plain = server(b"HTTP/1.1 400 Bad Request\r\n\r\n", b"", false).await;
    let error = connect_error(&config(format!("https://{plain}/s.ts"))).await;
    assert!(matches!(error, HttpPullError::TlsHandshake(_)), "{error:?}");
}

#[test]
fn credentials_are_redacted() {
    assert_eq!(
        redact_url("https://user:pw@mc.example:8443/live/a.ts?x=1"),
        "https://mc.example:8443/live/a.ts?x=1"
    );
    assert_eq!(redact_url("http://mc/a@b"), "http://mc/a@b");
}

proptest! {
    #[test]
    fn backoff_is_capped_and_jittered(attempt in 0u32..100, random in any::<u64>()) {
        let backoff = Backoff { initial: Duration::from_millis(100), max: Duration::from_secs(10) };
        let delay = backoff.delay(attempt, random);
        let base = Duration::from_millis(100)
            .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .min(Duration::from_secs(10));
        prop_assert!(delay <= base);
        prop_assert!(delay >= base / 2);
    }
}
