//! Input URLs as an operator writes them in the config, turned into the supervisor's
//! input specs ([`InputUrl::parse`], [`InputUrl::into_spec`]).
//!
//! | URL | input |
//! |---|---|
//! | `http://host/path`, `https://host/path` | MPEG-TS pulled over a long-lived GET |
//! | `udp://239.1.1.1:5000?interface=10.0.0.2` | MPEG-TS over UDP multicast, joined on an interface |
//! | `udp://0.0.0.0:5000` (or `udp://@:5000`) | MPEG-TS over UDP unicast, bound to that address |
//! | `publish://` or `publish://?key=SECRET` | RTMP publish to `rtmp://node/live/<stream>?key=SECRET` |
//! | `publish://?key=SECRET&slot=backup` | a second publish of the stream, to `<stream>@backup` |
//! | `rtmp://host[:port]/app/stream[?query]` | a stream played from a remote RTMP server |
//! | `rtmps://host[:port]/app/stream[?query][#ca_file=/path/ca.pem]` | the same over TLS, the server's certificate checked against the system roots or the fragment's CA file |
//! | `srt://host:port[?streamid=…][&passphrase=…][&pbkeylen=…][&latency=MS]` | MPEG-TS pulled over SRT from an encoder in listener mode |
//! | `builtin://meeting` | the built-in demo meeting (a looped clip) |

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::supervisor::InputSpec;

/// Why an input URL was refused: the message quotes the URL (an `srt://` URL without
/// its query, which may hold a passphrase), with the parser's complaint as its source.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct InputUrlError {
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

fn refused<T>(message: String) -> Result<T, InputUrlError> {
    Err(InputUrlError {
        message,
        source: None,
    })
}

fn because(
    message: String,
) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> InputUrlError {
    move |source| InputUrlError {
        message,
        source: Some(source),
    }
}

/// An input as written in the config, before it is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputUrl {
    /// Pull MPEG-TS over HTTP(S).
    Http(String),
    /// Receive MPEG-TS over UDP.
    Udp {
        /// Local bind address.
        bind: SocketAddr,
        /// Multicast group to join.
        multicast: Option<Ipv4Addr>,
        /// Interface address to join on.
        interface: Option<Ipv4Addr>,
    },
    /// Accept a publisher, with this key if set.
    Publish {
        /// The stream key a publisher must give.
        key: Option<String>,
        /// Publishers of a slot publish to `<stream>@<slot>` (a backup feed).
        slot: Option<String>,
    },
    /// Play a stream from a remote RTMP(S) server.
    RtmpPull {
        /// The URL, without its fragment.
        url: String,
        /// `#ca_file=`: the CA certificates an `rtmps://` server is checked against.
        ca_file: Option<std::path::PathBuf>,
    },
    /// Pull MPEG-TS over SRT (this end calls).
    SrtPull(crate::srt::caller::SrtCallerConfig),
    /// The built-in looped demo clip.
    Builtin,
}

impl InputUrl {
    /// Parses one input URL.
    ///
    /// # Errors
    /// An unknown scheme, or an address that does not parse; the message quotes the URL.
    pub fn parse(url: &str) -> Result<Self, InputUrlError> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return refused(format!("input {url:?} has no scheme"));
        };
        match scheme {
            "http" | "https" => {
                if rest.is_empty() {
                    return refused(format!("input {url:?} has no host"));
                }
                Ok(Self::Http(url.to_owned()))
            }
            "udp" => parse_udp(url, rest),
            "rtmp" | "rtmps" if !rest.is_empty() && !rest.starts_with(['?', '/']) => {
                parse_rtmp_pull(url)
            }
            "publish" | "rtmp" => {
                let query = |name: &str| {
                    rest.split_once('?')
                        .map(|(_, query)| query)
                        .into_iter()
                        .flat_map(|q| q.split('&'))
                        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
                        .filter(|v| !v.is_empty())
                        .map(str::to_owned)
                };
                let slot = query("slot");
                if let Some(slot) = &slot {
                    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
                    if slot.len() > 32 || !slot.chars().all(plain) {
                        return refused(format!(
                            "input {url:?}: slot is 1-32 letters, digits, '-' or '_'"
                        ));
                    }
                    if slot.starts_with("audio-") {
                        return refused(format!(
                            "input {url:?}: slots starting with audio- are the interpreters' (a language with interpreter = true)"
                        ));
                    }
                }
                Ok(Self::Publish {
                    key: query("key"),
                    slot,
                })
            }
            "srt" => crate::srt::caller::SrtCallerConfig::parse(url)
                .map(Self::SrtPull)
                .map_err(|e| because(format!("input {:?}", redact_srt(url)))(e.into())),
            "builtin" => Ok(Self::Builtin),
            other => refused(format!("input {url:?}: unknown scheme {other:?} (use http, https, udp, rtmp, rtmps, srt, publish or builtin)")),
        }
    }

    /// The supervisor's spec; `Builtin` needs the caller's event channel.
    pub fn into_spec(self, builtin: impl FnOnce() -> InputSpec) -> InputSpec {
        match self {
            Self::Http(url) => InputSpec::HttpTs { url, ca_file: None },
            Self::Udp {
                bind,
                multicast,
                interface,
            } => InputSpec::Udp {
                bind,
                multicast,
                interface,
            },
            Self::Publish { key, slot } => InputSpec::Rtmp { key, slot },
            Self::RtmpPull { url, ca_file } => InputSpec::RtmpPull { url, ca_file },
            Self::SrtPull(config) => InputSpec::SrtPull { config },
            Self::Builtin => builtin(),
        }
    }
}

/// An `srt://` URL for messages: its query (streamid key, passphrase) left out.
fn redact_srt(url: &str) -> &str {
    url.split_once('?').map_or(url, |(address, _)| address)
}

fn parse_rtmp_pull(url: &str) -> Result<InputUrl, InputUrlError> {
    let (address, fragment) = url.split_once('#').unwrap_or((url, ""));
    crate::rtmp::pull_url::PullUrl::parse(address).map_err(|e| {
        because(format!(
            "input {url:?}: expected rtmp[s]://host[:port]/app/stream"
        ))(e.into())
    })?;
    let mut ca_file = None;
    for pair in fragment.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("ca_file", path)) if !path.is_empty() && address.starts_with("rtmps") => {
                ca_file = Some(path.into());
            }
            _ => {
                return refused(format!(
                    "input {url:?}: unknown option {pair:?} (only #ca_file= on rtmps://)"
                ))
            }
        }
    }
    Ok(InputUrl::RtmpPull {
        url: address.to_owned(),
        ca_file,
    })
}

fn parse_udp(url: &str, rest: &str) -> Result<InputUrl, InputUrlError> {
    let (address, query) = rest.split_once('?').unwrap_or((rest, ""));
    let address = address.trim_start_matches('@').trim_end_matches('/');
    let address = if address.starts_with(':') {
        format!("0.0.0.0{address}")
    } else {
        address.to_owned()
    };
    let socket: SocketAddr = address.parse().map_err(|e: std::net::AddrParseError| {
        because(format!("input {url:?}: expected udp://HOST:PORT"))(e.into())
    })?;
    let mut interface = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("interface", value)) => {
                interface = Some(value.parse().map_err(|e: std::net::AddrParseError| {
                    because(format!("input {url:?}: interface is not an IPv4 address"))(e.into())
                })?)
            }
            _ => {
                return refused(format!(
                    "input {url:?}: unknown option {pair:?} (only interface=)"
                ))
            }
        }
    }
    match socket.ip() {
        IpAddr::V4(ip) if ip.is_multicast() => Ok(InputUrl::Udp {
            bind: SocketAddr::from((Ipv4Addr::UNSPECIFIED, socket.port())),
            multicast: Some(ip),
            interface,
        }),
        _ if interface.is_some() => refused(format!(
            "input {url:?}: interface= applies to multicast groups only"
        )),
        _ => Ok(InputUrl::Udp {
            bind: socket,
            multicast: None,
            interface: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srt_urls_are_callers_and_errors_hide_the_passphrase() {
        let Ok(InputUrl::SrtPull(config)) =
            InputUrl::parse("srt://encoder:9000?streamid=#!::r=room&passphrase=0123456789")
        else {
            panic!("an srt caller");
        };
        assert_eq!(config.addr, "encoder:9000");
        assert_eq!(config.streamid.as_deref(), Some("#!::r=room"));
        let spec = InputUrl::SrtPull(config).into_spec(|| unreachable!());
        assert_eq!(spec.description(), "srt://encoder:9000");
        let e = InputUrl::parse("srt://encoder:9000?passphrase=short-one").unwrap_err();
        let mut chain = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            chain.push_str(&format!(": {s}"));
            source = s.source();
        }
        assert!(chain.contains("srt://encoder:9000"), "{chain}");
        assert!(!chain.contains("short-one"), "{chain}");
    }

    #[test]
    fn input_urls() {
        assert_eq!(
            InputUrl::parse("http://mc:8081/m/mpegts").unwrap(),
            InputUrl::Http("http://mc:8081/m/mpegts".into())
        );
        assert_eq!(
            InputUrl::parse("udp://239.1.1.1:5000?interface=127.0.0.1").unwrap(),
            InputUrl::Udp {
                bind: "0.0.0.0:5000".parse().unwrap(),
                multicast: Some(Ipv4Addr::new(239, 1, 1, 1)),
                interface: Some(Ipv4Addr::LOCALHOST)
            }
        );
        assert_eq!(
            InputUrl::parse("udp://@:1234").unwrap(),
            InputUrl::Udp {
                bind: "0.0.0.0:1234".parse().unwrap(),
                multicast: None,
                interface: None
            }
        );
        assert_eq!(
            InputUrl::parse("publish://?key=s3").unwrap(),
            InputUrl::Publish {
                key: Some("s3".into()),
                slot: None
            }
        );
        assert_eq!(
            InputUrl::parse("publish://").unwrap(),
            InputUrl::Publish {
                key: None,
                slot: None
            }
        );
        assert_eq!(
            InputUrl::parse("publish://?key=s3&slot=backup").unwrap(),
            InputUrl::Publish {
                key: Some("s3".into()),
                slot: Some("backup".into())
            }
        );
        // The interpreters' publish names are not a slot an input may take.
        assert!(InputUrl::parse("publish://?key=s3&slot=audio-spa").is_err());
        assert_eq!(
            InputUrl::parse("builtin://meeting").unwrap(),
            InputUrl::Builtin
        );
        assert_eq!(
            InputUrl::parse("rtmp://encoder:1935/live/room?key=k").unwrap(),
            InputUrl::RtmpPull {
                url: "rtmp://encoder:1935/live/room?key=k".into(),
                ca_file: None
            }
        );
        assert_eq!(
            InputUrl::parse("rtmps://ingest.example.net/live/room#ca_file=/etc/ca.pem").unwrap(),
            InputUrl::RtmpPull {
                url: "rtmps://ingest.example.net/live/room".into(),
                ca_file: Some("/etc/ca.pem".into())
            }
        );
        // Without a host, rtmp:// is a publish, as it always was.
        assert_eq!(
            InputUrl::parse("rtmp://?key=s3").unwrap(),
            InputUrl::Publish {
                key: Some("s3".into()),
                slot: None
            }
        );
        for bad in [
            "rtmp://encoder/room",
            "rtmps://encoder:0/live/room",
            "rtmp://encoder/live/room#ca_file=/x.pem",
            "rtmps://encoder/live/room#verify=0",
            "ftp://x",
            "nothing",
            "udp://host",
            "udp://1.2.3.4:5?interface=1.1.1.1",
            "udp://239.0.0.1:5?ttl=3",
            "http://",
            "publish://?slot=a/b",
            "publish://?slot=a@b",
        ] {
            assert!(InputUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
