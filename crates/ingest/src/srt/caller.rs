//! The SRT caller input: `srt://host:port?streamid=…&passphrase=…&latency=…` pulls
//! MPEG-TS from an encoder in SRT listener mode, through the demuxer path every TS
//! input shares, reconnecting after every failure with the HTTP pull's backoff.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use media::ts::demux::Demuxer;
use tokio::sync::{mpsc, watch};
use tokio::time::timeout;

use super::ffi::{Opt, Socket, SrtError};
use super::reader::{Incoming, Reader};

use crate::http_pull::Backoff;
use crate::status::{demux_into, stopped, InputCounters, InputError, InputEvent};

pub use crate::input_errors::SrtPullError;

/// One SRT caller input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrtCallerConfig {
    /// `host:port` of the encoder.
    pub addr: String,
    /// The streamid to send, if any.
    pub streamid: Option<String>,
    /// The passphrase, if the encoder encrypts.
    pub passphrase: Option<String>,
    /// The AES key length in bytes (16, 24 or 32; default 16 with a passphrase).
    pub key_length: u16,
    /// The receive latency.
    pub latency: Duration,
    /// How long the handshake may take.
    pub connect_timeout: Duration,
    /// The longest gap between payloads.
    pub read_timeout: Duration,
    /// Reconnect delays.
    pub backoff: Backoff,
}

impl SrtCallerConfig {
    /// Reads `srt://host:port[?streamid=…][&passphrase=…][&pbkeylen=…][&latency=…]`
    /// (latency in milliseconds, as srt-live-transmit and OBS write it), with default
    /// timeouts and backoff.
    ///
    /// # Errors
    /// What is wrong with the URL.
    pub fn parse(url: &str) -> Result<Self, SrtPullError> {
        let bad = |what: &str| SrtPullError::BadUrl(what.to_owned());
        let rest = url
            .strip_prefix("srt://")
            .ok_or_else(|| bad("not srt://"))?;
        let (addr, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (host, port) = addr.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(bad("host:port expected"));
        }
        let mut config = SrtCallerConfig {
            addr: addr.to_owned(),
            streamid: None,
            passphrase: None,
            key_length: 16,
            latency: super::DEFAULT_LATENCY,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(5),
            backoff: Backoff::default(),
        };
        // The streamid may itself hold `?` and `=` (`room?key=…`): split on `&` only,
        // and each pair at its first `=`.
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match name {
                "streamid" => config.streamid = Some(value.to_owned()),
                "passphrase" => config.passphrase = Some(value.to_owned()),
                "pbkeylen" => {
                    config.key_length = match value {
                        "16" | "24" | "32" => value.parse().unwrap_or(16),
                        _ => return Err(bad("pbkeylen is 16, 24 or 32")),
                    }
                }
                "latency" => {
                    let ms: u64 = value.parse().map_err(|_| bad("latency in ms"))?;
                    if !(20..=10_000).contains(&ms) {
                        return Err(bad("latency 20-10000 ms"));
                    }
                    config.latency = Duration::from_millis(ms);
                }
                "mode" if value == "caller" => {}
                _ => return Err(bad(&format!("unknown parameter {name:?}"))),
            }
        }
        if let Some(id) = &config.streamid {
            if id.len() > super::streamid::MAX_STREAM_ID {
                return Err(bad("streamid longer than 512 bytes"));
            }
        }
        if let Some(p) = &config.passphrase {
            if !super::access::PASSPHRASE_LENGTHS.contains(&p.len()) {
                return Err(bad("passphrase of 10 to 79 bytes"));
            }
        }
        Ok(config)
    }
}

/// Pulls until `shutdown`, reconnecting after every failure, sending what happens (and
/// the media) to `events`. Returns when `shutdown` fires or `events` is closed.
pub async fn run(
    config: SrtCallerConfig,
    counters: Arc<InputCounters>,
    events: mpsc::Sender<InputEvent>,
    mut shutdown: watch::Receiver<bool>,
) {
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
        tracing::debug!(addr = %config.addr, error = %error, "srt pull failed");
        if events
            .send(InputEvent::Failed(InputError::SrtPull(error)))
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

/// `SRT_ENOSERVER`: no answer to the handshake within the connect timeout.
const ERR_NO_SERVER: i32 = 1001;

/// One connection's life: `None` when `events` is closed, else the error that ended it
/// and whether any media was delivered.
async fn pull_once(
    config: &SrtCallerConfig,
    counters: &InputCounters,
    events: &mpsc::Sender<InputEvent>,
) -> Option<(SrtPullError, bool)> {
    let connect_error = |error: String| SrtPullError::Connect {
        addr: config.addr.clone(),
        error,
    };
    let socket = match connect(config).await {
        Ok(socket) => socket,
        Err(Connect::TimedOut) => {
            return Some((SrtPullError::ConnectTimeout(config.addr.clone()), false))
        }
        Err(Connect::Failed(error)) => return Some((connect_error(error), false)),
    };
    let mut reader = match Reader::spawn(socket, "srt-caller") {
        Ok(reader) => reader,
        Err(e) => return Some((connect_error(e.to_string()), false)),
    };
    InputCounters::add(&counters.connects, 1);
    events.send(InputEvent::Connected).await.ok()?;
    let mut demuxer = Demuxer::new();
    let mut delivered = false;
    let error = loop {
        match timeout(config.read_timeout, reader.incoming.recv()).await {
            Err(_) => break SrtPullError::ReadTimeout(config.read_timeout),
            Ok(None | Some(Incoming::Ended(None))) => {
                break SrtPullError::Ended("closed by the encoder".into())
            }
            Ok(Some(Incoming::Ended(Some(e)))) => break SrtPullError::Ended(e.to_string()),
            // Statistics arrive every second: they do not reset the read timeout.
            Ok(Some(Incoming::Stats(_))) => {}
            Ok(Some(Incoming::Payload(payload))) => {
                InputCounters::add(&counters.bytes, payload.len() as u64);
                let sent = demux_into(&mut demuxer, Some(&payload), counters, events).await;
                let Some(sent) = sent else {
                    reader.finish().await;
                    return None;
                };
                delivered |= sent > 0;
            }
        }
    };
    reader.finish().await;
    demux_into(&mut demuxer, None, counters, events).await?;
    Some((error, delivered))
}

/// Why a connection was not made.
enum Connect {
    TimedOut,
    Failed(String),
}

/// Resolves the address and calls it with the configured options (libsrt's connect
/// blocks, on a blocking thread, for at most the connect timeout).
async fn connect(config: &SrtCallerConfig) -> Result<Socket, Connect> {
    let failed = |e: SrtError| Connect::Failed(e.to_string());
    let addr = tokio::net::lookup_host(config.addr.as_str())
        .await
        .map_err(|e| Connect::Failed(e.to_string()))?
        .next()
        .ok_or_else(|| Connect::Failed("the host has no address".into()))?;
    let socket = Socket::new().map_err(failed)?;
    let ms = |d: Duration| i32::try_from(d.as_millis()).unwrap_or(i32::MAX);
    socket
        .set_int(Opt::Latency, ms(config.latency))
        .map_err(failed)?;
    socket
        .set_int(Opt::ConnectTimeout, ms(config.connect_timeout))
        .map_err(failed)?;
    socket
        .set_int(Opt::PeerIdleTimeout, ms(super::listener::PEER_IDLE_TIMEOUT))
        .map_err(failed)?;
    if let Some(id) = &config.streamid {
        socket
            .set_bytes(Opt::StreamId, id.as_bytes())
            .map_err(failed)?;
    }
    if let Some(passphrase) = &config.passphrase {
        socket
            .set_bytes(Opt::Passphrase, passphrase.as_bytes())
            .map_err(failed)?;
        socket
            .set_int(Opt::KeyLength, i32::from(config.key_length))
            .map_err(failed)?;
    }
    let bound = config.connect_timeout + Duration::from_secs(1);
    let call = tokio::task::spawn_blocking(move || socket.connect(addr).map(|()| socket));
    match timeout(bound, call).await {
        Ok(Ok(Ok(socket))) => Ok(socket),
        Ok(Ok(Err(e))) if e.code == ERR_NO_SERVER => Err(Connect::TimedOut),
        Ok(Ok(Err(e))) => Err(failed(e)),
        Ok(Err(e)) => Err(Connect::Failed(e.to_string())),
        Err(_) => Err(Connect::TimedOut),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_gives_the_address_streamid_passphrase_and_latency() {
        let config = SrtCallerConfig::parse(
            "srt://encoder.lan:9000?streamid=room?key=k&passphrase=0123456789&pbkeylen=32&latency=300",
        )
        .unwrap();
        assert_eq!(config.addr, "encoder.lan:9000");
        assert_eq!(config.streamid.as_deref(), Some("room?key=k"));
        assert_eq!(config.passphrase.as_deref(), Some("0123456789"));
        assert_eq!(config.key_length, 32);
        assert_eq!(config.latency, Duration::from_millis(300));
        let plain = SrtCallerConfig::parse("srt://127.0.0.1:9000").unwrap();
        assert_eq!(plain.latency, Duration::from_millis(120));
        assert!(plain.streamid.is_none());
        for bad in [
            "srt://host",
            "srt://:9000",
            "srt://host:0",
            "http://host:9000",
            "srt://host:9000?latency=5",
            "srt://host:9000?passphrase=short",
            "srt://host:9000?pbkeylen=20",
            "srt://host:9000?mode=listener",
        ] {
            assert!(SrtCallerConfig::parse(bad).is_err(), "{bad}");
        }
    }
}
