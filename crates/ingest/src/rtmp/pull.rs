//! An RTMP(S) pull input: plays a stream from a remote RTMP server (an encoder or a
//! platform that serves `play`) and feeds its frames to the stream like a publish.
//!
//! One connection: DNS and TCP connect, TLS for `rtmps://` (the pull's CA file or the
//! system roots), the RTMP handshake, then [`Player`] (`connect`, `createStream`,
//! `play`). Every step has a deadline, so a server that accepts and says nothing is
//! given up on; [`run`] reconnects with the supervisor's backoff, as the HTTP pull does.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::{timeout, timeout_at, Instant};

use super::handshake::{HANDSHAKE_SIZE, RTMP_VERSION};
use super::player::{Player, PlayerError, PlayerEvent};
use super::pull_url::{PullUrl, PullUrlError};
use super::DEFAULT_MAX_MESSAGE_SIZE;
use crate::http_pull::{redact_url, Backoff};
use crate::status::{stopped, InputCounters, InputError, InputEvent};
use crate::tls;
use crate::IngestEvent;

/// Configuration of one RTMP(S) pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtmpPullConfig {
    /// `rtmp://` or `rtmps://` URL of the stream.
    pub url: String,
    /// A PEM file of CA certificates to trust instead of the system roots (`rtmps://`).
    pub ca_file: Option<PathBuf>,
    /// Limit for DNS, TCP connect, the TLS handshake and the RTMP handshake, each.
    pub connect_timeout: Duration,
    /// Limit from the TCP connection to the first frame (`connect`, `play` and the
    /// server's first keyframe must fit).
    pub first_media_timeout: Duration,
    /// The longest gap between bytes once media flows.
    pub read_timeout: Duration,
    /// Delays between reconnect attempts.
    pub backoff: Backoff,
}

impl RtmpPullConfig {
    /// 5 s to connect, 10 s to the first frame, 5 s between bytes, the default backoff.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ca_file: None,
            connect_timeout: Duration::from_secs(5),
            first_media_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(5),
            backoff: Backoff::default(),
        }
    }
}

pub use crate::input_errors::RtmpPullError;

impl From<PullUrlError> for RtmpPullError {
    fn from(e: PullUrlError) -> Self {
        RtmpPullError::InvalidUrl(e.to_string())
    }
}

impl From<PlayerError> for RtmpPullError {
    fn from(e: PlayerError) -> Self {
        match e {
            PlayerError::Refused { code, description } => {
                RtmpPullError::PlayRefused { code, description }
            }
            other => RtmpPullError::Protocol(other.to_string()),
        }
    }
}

/// Pulls `config.url` until `shutdown`, reconnecting after every failure, and sends
/// what happens (and the frames) to `events`. Returns when `shutdown` fires or
/// `events` is closed.
pub async fn run(
    config: RtmpPullConfig,
    counters: Arc<InputCounters>,
    events: mpsc::Sender<InputEvent>,
    mut shutdown: watch::Receiver<bool>,
) {
    let url = redact_url(&config.url);
    let mut attempt: u32 = 0;
    loop {
        if *shutdown.borrow() || events.send(InputEvent::Connecting).await.is_err() {
            return;
        }
        let outcome = tokio::select! {
            _ = stopped(&mut shutdown) => return,
            outcome = pull_once(&config, &counters, &events) => outcome,
        };
        let Some((error, delivered)) = outcome else {
            return; // events closed
        };
        if delivered {
            attempt = 0;
        }
        InputCounters::add(&counters.errors, 1);
        // The supervisor logs an input's failures once per change, with reminders.
        tracing::debug!(url = %url, error = %error, "rtmp pull failed");
        if events
            .send(InputEvent::Failed(InputError::RtmpPull(error)))
            .await
            .is_err()
        {
            return;
        }
        let delay = config
            .backoff
            .delay(attempt, RandomState::new().hash_one(attempt));
        attempt = attempt.saturating_add(1);
        tokio::select! {
            _ = stopped(&mut shutdown) => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// One connection's life. `None` when `events` is closed; else the error that ended
/// it and whether any frame was delivered.
async fn pull_once(
    config: &RtmpPullConfig,
    counters: &InputCounters,
    events: &mpsc::Sender<InputEvent>,
) -> Option<(RtmpPullError, bool)> {
    let url = match PullUrl::parse(&config.url) {
        Ok(url) => url,
        Err(e) => return Some((e.into(), false)),
    };
    let tcp = match connect_tcp(&url, config.connect_timeout).await {
        Ok(tcp) => tcp,
        Err(e) => return Some((e, false)),
    };
    let first_media_by = Instant::now() + config.first_media_timeout;
    if !url.tls {
        return play(tcp, &url, config, first_media_by, counters, events).await;
    }
    let tls = match tls::client_config(config.ca_file.as_deref()) {
        Ok(tls) => tls,
        Err(e) => return Some((e.into(), false)),
    };
    let Ok(name) = ServerName::try_from(url.host.clone()) else {
        return Some((PullUrlError::Authority.into(), false));
    };
    let connector = tokio_rustls::TlsConnector::from(tls);
    match timeout(config.connect_timeout, connector.connect(name, tcp)).await {
        Ok(Ok(stream)) => play(stream, &url, config, first_media_by, counters, events).await,
        Ok(Err(e)) => Some((RtmpPullError::TlsHandshake(e.to_string()), false)),
        Err(_) => Some((RtmpPullError::TlsHandshake("timed out".into()), false)),
    }
}

async fn connect_tcp(url: &PullUrl, limit: Duration) -> Result<TcpStream, RtmpPullError> {
    let dns_error = |reason: String| RtmpPullError::Dns {
        host: url.host.clone(),
        reason,
    };
    let addrs: Vec<SocketAddr> = timeout(
        limit,
        tokio::net::lookup_host((url.host.as_str(), url.port)),
    )
    .await
    .map_err(|_| dns_error("timed out".into()))?
    .map_err(|e| dns_error(e.to_string()))?
    .collect();
    let mut last = dns_error("no address".into());
    for addr in addrs {
        match timeout(limit, TcpStream::connect(addr)).await {
            Err(_) => last = RtmpPullError::ConnectTimeout,
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = RtmpPullError::Refused;
            }
            Ok(Err(e)) => last = RtmpPullError::Connect(e.to_string()),
        }
    }
    Err(last)
}

/// The client handshake: C0+C1 out, S0+S1+S2 in, C2 (S1 echoed) out.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    socket: &mut S,
    limit: Duration,
) -> Result<(), RtmpPullError> {
    let io = |e: std::io::Error| RtmpPullError::Handshake(e.to_string());
    let mut c0c1 = Vec::with_capacity(1 + HANDSHAKE_SIZE);
    c0c1.push(RTMP_VERSION);
    c0c1.extend_from_slice(&[0; 8]); // time and a zero version: the simple handshake
    let hasher = RandomState::new();
    let mut counter = 0u64;
    while c0c1.len() < 1 + HANDSHAKE_SIZE {
        counter += 1;
        c0c1.extend_from_slice(&hasher.hash_one(counter).to_le_bytes());
    }
    c0c1.truncate(1 + HANDSHAKE_SIZE);
    let exchange = async {
        socket.write_all(&c0c1).await.map_err(io)?;
        socket.flush().await.map_err(io)?;
        let mut s0s1s2 = vec![0u8; 1 + 2 * HANDSHAKE_SIZE];
        socket.read_exact(&mut s0s1s2).await.map_err(io)?;
        if s0s1s2[0] != RTMP_VERSION {
            return Err(RtmpPullError::Handshake(format!(
                "server version {}",
                s0s1s2[0]
            )));
        }
        socket
            .write_all(&s0s1s2[1..=HANDSHAKE_SIZE])
            .await
            .map_err(io)?;
        socket.flush().await.map_err(io)
    };
    timeout(limit, exchange)
        .await
        .map_err(|_| RtmpPullError::Handshake("timed out".into()))?
}

/// Plays over a connected socket until it fails; `None` when `events` is closed.
async fn play<S: AsyncRead + AsyncWrite + Unpin>(
    mut socket: S,
    url: &PullUrl,
    config: &RtmpPullConfig,
    first_media_by: Instant,
    counters: &InputCounters,
    events: &mpsc::Sender<InputEvent>,
) -> Option<(RtmpPullError, bool)> {
    if let Err(e) = handshake(&mut socket, config.connect_timeout).await {
        return Some((e, false));
    }
    let mut player = Player::new(url, DEFAULT_MAX_MESSAGE_SIZE);
    let mut delivered = false;
    let mut connected = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let out = player.take_output();
        if !out.is_empty() {
            let write = async {
                socket.write_all(&out).await?;
                socket.flush().await
            };
            match timeout(config.read_timeout, write).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Some((RtmpPullError::Reset(e.to_string()), delivered)),
                Err(_) => {
                    return Some((
                        RtmpPullError::Reset("the server does not read".into()),
                        delivered,
                    ))
                }
            }
        }
        let read_by = if delivered {
            Instant::now() + config.read_timeout
        } else {
            first_media_by
        };
        let n = match timeout_at(read_by, socket.read(&mut buf)).await {
            Ok(Ok(0)) => {
                return Some((RtmpPullError::Ended("connection closed".into()), delivered))
            }
            Ok(Ok(n)) => n,
            Ok(Err(e)) => return Some((RtmpPullError::Reset(e.to_string()), delivered)),
            Err(_) if delivered => {
                return Some((RtmpPullError::ReadTimeout(config.read_timeout), delivered))
            }
            Err(_) => {
                return Some((
                    RtmpPullError::NoMedia(config.first_media_timeout),
                    delivered,
                ))
            }
        };
        player.feed(&buf[..n]);
        loop {
            let event = match player.poll_event() {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(e) => return Some((e.into(), delivered)),
            };
            // Connected at the server's Play.Start, or its first frame if it sends none.
            if !connected && matches!(event, PlayerEvent::Playing | PlayerEvent::Frame(_)) {
                connected = true;
                InputCounters::add(&counters.connects, 1);
                events.send(InputEvent::Connected).await.ok()?;
            }
            match event {
                PlayerEvent::Playing => {}
                PlayerEvent::Frame(frame) => {
                    counters.count_frame(frame.kind());
                    InputCounters::add(&counters.bytes, frame.data.len() as u64);
                    delivered = true;
                    events
                        .send(InputEvent::Media(IngestEvent::Frame(frame)))
                        .await
                        .ok()?;
                }
                PlayerEvent::Ended(code) => {
                    return Some((RtmpPullError::Ended(code), delivered));
                }
                PlayerEvent::Unsupported(codec) => {
                    tracing::warn!(url = %redact_url(&config.url), codec = ?codec, "rtmp pull: codec unsupported, its tags are dropped");
                }
                PlayerEvent::MediaError(e) => {
                    InputCounters::add(&counters.demux_errors, 1);
                    tracing::debug!(error = %e, "rtmp pull: media tag dropped");
                }
            }
        }
    }
}
