//! MPEG-TS pulled over one long-lived HTTP(S) GET, as a node pulls its MC's stream.
//!
//! One connection is a plain hyper HTTP/1.1 client connection over a `TcpStream`
//! (wrapped in rustls for `https`), so every step — DNS, TCP connect, TLS, response
//! headers, body — fails with its own [`HttpPullError`] variant. [`run`] keeps pulling:
//! the body is streamed into a fresh demuxer per connection, and a lost connection is
//! retried with capped exponential backoff and jitter.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use crate::input_errors::HttpPullError;
use crate::status::{demux_into, stopped, InputCounters, InputError, InputEvent};
use crate::tls;

/// Capped exponential backoff with jitter between reconnect attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The delay before the first retry (before jitter).
    pub initial: Duration,
    /// The largest delay (before jitter).
    pub max: Duration,
}

impl Default for Backoff {
    /// 0.25 s doubling to 2 s: a backup input (an MC's relay) that was refused or down
    /// is connected again within about 2 s of coming back, so it is a hot standby
    /// again before the active input can fail; one attempt per 1-2 s per input is no
    /// load on the upstream.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(250),
            max: Duration::from_secs(2),
        }
    }
}

impl Backoff {
    /// The delay before retry number `attempt` (0-based): `initial * 2^attempt` capped at
    /// `max`, then "equal jitter" — between half and all of it, chosen by `random`.
    pub fn delay(&self, attempt: u32, random: u64) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        let base = self.initial.saturating_mul(factor).min(self.max);
        let half = base / 2;
        let spread = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let extra = if spread == 0 { 0 } else { random % spread };
        half + Duration::from_nanos(extra)
    }
}

/// Configuration of one HTTP(S) pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpPullConfig {
    /// `http://` or `https://` URL of an MPEG-TS stream.
    pub url: String,
    /// A PEM file of CA certificates to trust instead of the system roots.
    pub ca_file: Option<PathBuf>,
    /// Limit for DNS, TCP connect and TLS handshake, each.
    pub connect_timeout: Duration,
    /// Limit for the response headers, and for each gap between body bytes.
    pub read_timeout: Duration,
    /// Delays between reconnect attempts.
    pub backoff: Backoff,
    /// A credential sent as `Authorization: Bearer …`: in a header, never in the URL,
    /// so it stays out of access logs.
    pub bearer: Option<String>,
}

impl HttpPullConfig {
    /// A configuration with 5 s timeouts and the default backoff.
    pub fn new(url: impl Into<String>) -> Self {
        HttpPullConfig {
            url: url.into(),
            ca_file: None,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(5),
            backoff: Backoff::default(),
            bearer: None,
        }
    }
}

/// A parsed pull URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    https: bool,
    host: String,
    port: u16,
    /// `host[:port]` without user info, for the `Host` header.
    authority: String,
    path_and_query: String,
}

fn parse_url(url: &str) -> Result<Target, HttpPullError> {
    let invalid = || HttpPullError::InvalidUrl(redact_url(url));
    let uri: Uri = url.parse().map_err(|_| invalid())?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err(invalid()),
    };
    let authority = uri.authority().ok_or_else(invalid)?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err(invalid());
    }
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
    let host_header = match authority.port_u16() {
        Some(p) => format!("{}:{p}", authority.host()),
        None => authority.host().to_string(),
    };
    Ok(Target {
        https,
        host: host.to_string(),
        port,
        authority: host_header,
        path_and_query: uri
            .path_and_query()
            .map_or_else(|| "/".to_string(), |p| p.as_str().to_string()),
    })
}

/// The URL with any `user:password@` removed, safe to show and log.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rfind('@') {
        Some(at) => format!("{scheme}://{}{tail}", &authority[at + 1..]),
        None => url.to_string(),
    }
}

/// One open pull: the response body of a successful GET.
#[derive(Debug)]
pub struct HttpTsConnection {
    body: Incoming,
    read_timeout: Duration,
    _driver: AbortOnDrop,
}

#[derive(Debug)]
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl HttpTsConnection {
    /// The next chunk of the body; `Ok(None)` never happens for a live stream, the
    /// end of the body is [`HttpPullError::EndOfStream`].
    ///
    /// # Errors
    /// [`HttpPullError::ReadTimeout`] when no byte came within the read timeout,
    /// [`HttpPullError::Reset`] or [`HttpPullError::Protocol`] when the connection broke,
    /// [`HttpPullError::EndOfStream`] when the server ended the response.
    pub async fn next_chunk(&mut self) -> Result<Bytes, HttpPullError> {
        loop {
            let frame = tokio::time::timeout(self.read_timeout, self.body.frame())
                .await
                .map_err(|_| HttpPullError::ReadTimeout(self.read_timeout))?;
            match frame {
                None => return Err(HttpPullError::EndOfStream),
                Some(Err(e)) => return Err(classify_hyper(&e)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if !data.is_empty() {
                            return Ok(data);
                        }
                    }
                }
            }
        }
    }
}

/// Opens one pull: resolves, connects, handshakes TLS for `https`, sends the GET and
/// checks the status.
///
/// # Errors
/// The [`HttpPullError`] of the step that failed.
pub async fn connect(
    config: &HttpPullConfig,
    tls: Option<Arc<ClientConfig>>,
) -> Result<HttpTsConnection, HttpPullError> {
    let target = parse_url(&config.url)?;
    let tcp = connect_tcp(&target, config.connect_timeout).await?;
    if target.https {
        let tls = match tls {
            Some(tls) => tls,
            None => tls::client_config(config.ca_file.as_deref())?,
        };
        let name = ServerName::try_from(target.host.clone())
            .map_err(|_| HttpPullError::InvalidUrl(redact_url(&config.url)))?;
        let connector = tokio_rustls::TlsConnector::from(tls);
        let stream = tokio::time::timeout(config.connect_timeout, connector.connect(name, tcp))
            .await
            .map_err(|_| HttpPullError::TlsHandshake("handshake timed out".into()))?
            .map_err(classify_tls)?;
        get(stream, &target, config).await
    } else {
        get(tcp, &target, config).await
    }
}

async fn connect_tcp(target: &Target, limit: Duration) -> Result<TcpStream, HttpPullError> {
    let dns_error = |reason: String| HttpPullError::Dns {
        host: target.host.clone(),
        reason,
    };
    let addrs: Vec<SocketAddr> = tokio::time::timeout(
        limit,
        tokio::net::lookup_host((target.host.as_str(), target.port)),
    )
    .await
    .map_err(|_| dns_error("timed out".into()))?
    .map_err(|e| dns_error(e.to_string()))?
    .collect();
    if addrs.is_empty() {
        return Err(dns_error("no address".into()));
    }
    let mut last = HttpPullError::Refused;
    for addr in addrs {
        match tokio::time::timeout(limit, TcpStream::connect(addr)).await {
            Err(_) => last = HttpPullError::ConnectTimeout,
            Ok(Ok(stream)) => {
                // Low latency matters more than packet count for a request line.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => {
                last = match e.kind() {
                    std::io::ErrorKind::ConnectionRefused => HttpPullError::Refused,
                    std::io::ErrorKind::TimedOut => HttpPullError::ConnectTimeout,
                    _ => HttpPullError::Connect(e.to_string()),
                }
            }
        }
    }
    Err(last)
}

async fn get<S>(
    stream: S,
    target: &Target,
    config: &HttpPullConfig,
) -> Result<HttpTsConnection, HttpPullError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| classify_hyper(&e))?;
    let driver = AbortOnDrop(tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "pull connection ended");
        }
    }));
    let read_timeout = config.read_timeout;
    let mut request = Request::get(target.path_and_query.as_str())
        .header(hyper::header::HOST, target.authority.as_str())
        .header(
            hyper::header::USER_AGENT,
            concat!("brdyun/", env!("CARGO_PKG_VERSION")),
        )
        .header(hyper::header::ACCEPT, "*/*");
    if let Some(token) = &config.bearer {
        request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request
        .body(Empty::<Bytes>::new())
        .map_err(|e| HttpPullError::InvalidUrl(e.to_string()))?;
    let response = tokio::time::timeout(read_timeout, sender.send_request(request))
        .await
        .map_err(|_| HttpPullError::ResponseTimeout(read_timeout))?
        .map_err(|e| classify_hyper(&e))?;
    let status = response.status().as_u16();
    match status {
        200..=299 => Ok(HttpTsConnection {
            body: response.into_body(),
            read_timeout,
            _driver: driver,
        }),
        300..=399 => Err(HttpPullError::Redirect { status }),
        401 | 403 => Err(HttpPullError::Unauthorized { status }),
        404 => Err(HttpPullError::NotFound),
        400..=499 => Err(HttpPullError::ClientError { status }),
        500..=599 => Err(HttpPullError::ServerError { status }),
        _ => Err(HttpPullError::Protocol(format!(
            "unexpected status {status}"
        ))),
    }
}

fn classify_tls(e: std::io::Error) -> HttpPullError {
    let certificate = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|inner| {
            matches!(
                inner,
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
            )
        });
    if certificate {
        HttpPullError::TlsCertificate(e.to_string())
    } else if is_reset(&e) {
        HttpPullError::Reset(e.to_string())
    } else {
        HttpPullError::TlsHandshake(e.to_string())
    }
}

fn is_reset(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
    )
}

fn classify_hyper(e: &hyper::Error) -> HttpPullError {
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            if is_reset(io) {
                return HttpPullError::Reset(io.to_string());
            }
        }
        source = inner.source();
    }
    if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
        HttpPullError::Reset(e.to_string())
    } else {
        HttpPullError::Protocol(e.to_string())
    }
}

fn random() -> u64 {
    // A fresh std RandomState is seeded differently on every call: jitter without a
    // random-number dependency.
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0);
    hasher.finish()
}

/// Pulls `config.url` until `shutdown`, reconnecting after every failure, and sends
/// what happens (and the demuxed media) to `events`. Returns when `shutdown` fires or
/// `events` is closed.
pub async fn run(
    config: HttpPullConfig,
    counters: Arc<InputCounters>,
    events: mpsc::Sender<InputEvent>,
    mut shutdown: watch::Receiver<bool>,
) {
    let url = redact_url(&config.url);
    let mut attempt: u32 = 0;
    let mut tls_config: Option<Arc<ClientConfig>> = None;
    loop {
        if *shutdown.borrow() || events.send(InputEvent::Connecting).await.is_err() {
            return;
        }
        let outcome = tokio::select! {
            _ = stopped(&mut shutdown) => return,
            outcome = pull_once(&config, &mut tls_config, &counters, &events) => outcome,
        };
        let Some((error, delivered)) = outcome else {
            return; // events closed
        };
        if delivered {
            attempt = 0;
        }
        InputCounters::add(&counters.errors, 1);
        // Every attempt at debug: the supervisor logs the input's failures once per
        // change of state, with reminders while it stays down.
        tracing::debug!(url = %url, cause = error.cause(), error = %error, "pull failed");
        if events
            .send(InputEvent::Failed(InputError::Http(error)))
            .await
            .is_err()
        {
            return;
        }
        let delay = config.backoff.delay(attempt, random());
        attempt = attempt.saturating_add(1);
        tokio::select! {
            _ = stopped(&mut shutdown) => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// One connection's life. `None` when `events` is closed; else the error that ended
/// it and whether any media was delivered.
async fn pull_once(
    config: &HttpPullConfig,
    tls_config: &mut Option<Arc<ClientConfig>>,
    counters: &InputCounters,
    events: &mpsc::Sender<InputEvent>,
) -> Option<(HttpPullError, bool)> {
    let is_https = config.url.starts_with("https");
    if is_https && tls_config.is_none() {
        match tls::client_config(config.ca_file.as_deref()) {
            Ok(tls) => *tls_config = Some(tls),
            Err(e) => return Some((e.into(), false)),
        }
    }
    let mut connection = match connect(config, tls_config.clone()).await {
        Ok(connection) => connection,
        Err(e) => return Some((e, false)),
    };
    InputCounters::add(&counters.connects, 1);
    events.send(InputEvent::Connected).await.ok()?;
    let mut demuxer = media::ts::demux::Demuxer::new();
    let mut delivered = false;
    let error = loop {
        match connection.next_chunk().await {
            Ok(chunk) => {
                InputCounters::add(&counters.bytes, chunk.len() as u64);
                let sent = demux_into(&mut demuxer, Some(&chunk), counters, events).await?;
                delivered |= sent > 0;
            }
            Err(e) => break e,
        }
    };
    demux_into(&mut demuxer, None, counters, events).await?;
    Some((error, delivered))
}
