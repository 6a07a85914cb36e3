//! The decisions of an SRT listener's handshake, without I/O: the passphrase a
//! publish name takes, and the SRT reject reason and code of each refusal.

use std::collections::HashMap;
use std::time::Duration;

use codes::InputFault;

use crate::listener_limits::{ListenerLimits, Refusal};
use crate::publish::PublishRejection;

/// The default SRT latency: what libsrt defaults to for live streams.
pub const DEFAULT_LATENCY: Duration = Duration::from_millis(120);

/// The passphrase lengths SRT accepts, in bytes.
pub const PASSPHRASE_LENGTHS: std::ops::RangeInclusive<usize> = 10..=79;

/// An SRT listener's settings.
#[derive(Debug, Clone)]
pub struct SrtListenerConfig {
    /// The UDP address every meeting is published to.
    pub bind: std::net::SocketAddr,
    /// The receive latency: how long SRT may wait for a lost packet's retransmission
    /// before giving up on it (the publisher's own latency is taken if larger).
    pub latency: Duration,
    /// The passphrase of every meeting without one of its own; `None`: no encryption.
    pub passphrase: Option<String>,
    /// Passphrases by publish name (`<meeting>` or `<meeting>@<slot>`), over
    /// [`SrtListenerConfig::passphrase`].
    pub passphrases: HashMap<String, String>,
    /// The AES key length an encrypting caller must use, in bytes (16, 24 or 32);
    /// `None` takes the caller's.
    pub key_length: Option<u16>,
    /// Caps, the deadline to the first media bytes, the byte floor.
    pub limits: ListenerLimits,
}

impl SrtListenerConfig {
    /// A listener on `bind` with the default latency, no encryption, default limits.
    pub fn new(bind: std::net::SocketAddr) -> Self {
        Self {
            bind,
            latency: DEFAULT_LATENCY,
            passphrase: None,
            passphrases: HashMap::new(),
            key_length: None,
            limits: ListenerLimits::default(),
        }
    }

    /// Checks the passphrases' lengths and the key length.
    ///
    /// # Errors
    /// What is wrong, in words for the configuration's reader.
    pub fn validate(&self) -> Result<(), String> {
        let all = self.passphrase.iter().chain(self.passphrases.values());
        for passphrase in all {
            if !PASSPHRASE_LENGTHS.contains(&passphrase.len()) {
                return Err(format!(
                    "an SRT passphrase must be 10 to 79 bytes long, one is {}",
                    passphrase.len()
                ));
            }
        }
        match self.key_length {
            None | Some(16 | 24 | 32) => Ok(()),
            Some(other) => Err(format!(
                "the SRT key length is 16, 24 or 32 bytes, not {other}"
            )),
        }
    }

    /// The passphrase of the publish name `stream`: its own, else its meeting's (a
    /// meeting's passphrase covers its slots, `<meeting>@backup` included, so a slot
    /// never takes in clear text what its meeting encrypts), else the global one;
    /// `None`: the caller must not encrypt. libsrt refuses a caller whose encryption
    /// does not match (a wrong passphrase, or none where one is set, or one where none
    /// is).
    pub fn passphrase_for(&self, stream: &str) -> Option<&str> {
        let meeting = stream
            .split_once('@')
            .map_or(stream, |(meeting, _)| meeting);
        self.passphrases
            .get(stream)
            .or_else(|| self.passphrases.get(meeting))
            .or(self.passphrase.as_ref())
            .map(String::as_str)
    }
}

/// Why a handshake was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A cap of the listener.
    Limit(Refusal),
    /// The streamid is missing, unreadable, or not a publish.
    StreamId,
    /// The authorizer's answer.
    Publish(RejectionKind),
    /// The encryption does not match: libsrt refused it, or the key length is not
    /// the one required.
    Passphrase,
}

/// [`PublishRejection`] without its data, to be `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectionKind {
    /// See [`PublishRejection::UnknownStream`].
    UnknownStream,
    /// See [`PublishRejection::WrongKey`].
    WrongKey,
    /// See [`PublishRejection::Busy`].
    Busy,
}

impl From<&PublishRejection> for Refused {
    fn from(rejection: &PublishRejection) -> Self {
        Refused::Publish(match rejection {
            PublishRejection::UnknownStream => RejectionKind::UnknownStream,
            PublishRejection::WrongKey => RejectionKind::WrongKey,
            PublishRejection::Busy => RejectionKind::Busy,
        })
    }
}

impl Refused {
    /// The code the refusal is logged and counted with.
    pub fn code(self) -> InputFault {
        match self {
            Refused::Limit(refusal) => refusal.code(),
            Refused::StreamId => InputFault::BadStreamId,
            Refused::Publish(RejectionKind::UnknownStream) => InputFault::UnknownStream,
            Refused::Publish(RejectionKind::WrongKey) => InputFault::WrongKey,
            Refused::Publish(RejectionKind::Busy) => InputFault::StreamBusy,
            Refused::Passphrase => InputFault::BadPassphrase,
        }
    }

    /// The reject reason the caller reads (`SRT_REJX_*`, an HTTP status plus 1000;
    /// libsrt shows it, e.g. ffmpeg's "Connection setup failure: ... rejected").
    pub fn reason(self) -> i32 {
        match self {
            Refused::Limit(_) => 1402,
            Refused::StreamId => 1400,
            Refused::Publish(RejectionKind::UnknownStream) => 1404,
            Refused::Publish(RejectionKind::WrongKey) => 1403,
            Refused::Publish(RejectionKind::Busy) => 1409,
            Refused::Passphrase => 1401,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SrtListenerConfig {
        let mut config = SrtListenerConfig::new("127.0.0.1:0".parse().unwrap());
        config
            .passphrases
            .insert("secret".into(), "meeting passphrase".into());
        config
    }

    #[test]
    fn a_meeting_takes_its_own_passphrase_else_the_global_one() {
        let mut config = config();
        assert_eq!(config.passphrase_for("open"), None);
        assert_eq!(config.passphrase_for("secret"), Some("meeting passphrase"));
        config.passphrase = Some("global passphrase".into());
        assert_eq!(config.passphrase_for("open"), Some("global passphrase"));
        assert_eq!(config.passphrase_for("secret"), Some("meeting passphrase"));
    }

    #[test]
    fn a_meetings_passphrase_covers_its_backup_slot() {
        let mut config = config();
        // The backup slot of an encrypted meeting is held to the meeting's passphrase,
        // never taken in clear text.
        assert_eq!(
            config.passphrase_for("secret@backup"),
            Some("meeting passphrase")
        );
        // A slot's own passphrase is its own; another meeting's slot stays plain.
        config
            .passphrases
            .insert("secret@backup".into(), "the backup passphrase".into());
        assert_eq!(
            config.passphrase_for("secret@backup"),
            Some("the backup passphrase")
        );
        assert_eq!(config.passphrase_for("open@backup"), None);
    }

    #[test]
    fn passphrases_and_key_lengths_are_validated() {
        let mut config = config();
        assert!(config.validate().is_ok());
        config.passphrase = Some("short".into());
        assert!(config.validate().is_err());
        config.passphrase = None;
        config.key_length = Some(20);
        assert!(config.validate().is_err());
    }

    #[test]
    fn each_refusal_has_its_code_and_reason() {
        let cases = [
            (Refused::Limit(Refusal::AddressFull), 111_020, 1402),
            (Refused::StreamId, 111_026, 1400),
            (
                Refused::Publish(RejectionKind::UnknownStream),
                111_027,
                1404,
            ),
            (Refused::Publish(RejectionKind::WrongKey), 111_028, 1403),
            (Refused::Publish(RejectionKind::Busy), 111_029, 1409),
            (Refused::Passphrase, 111_030, 1401),
        ];
        for (refused, code, reason) in cases {
            assert_eq!(refused.code().code(), code);
            assert_eq!(refused.reason(), reason);
        }
    }
}
