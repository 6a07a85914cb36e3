//! The decisions of an SRT listener's handshake, without I/O: what a streamid and
//! the caller's encryption are worth, and the SRT reject reason and code of each
//! refusal.

use std::collections::HashMap;
use std::time::Duration;

use codes::InputFault;
use srt_protocol::options::{KeySize, Passphrase};
use srt_protocol::packet::{CoreRejectReason, RejectReason, ServerRejectReason};
use srt_protocol::settings::KeySettings;

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
    /// The AES key length a caller must use, in bytes (16, 24 or 32); `None` takes
    /// the caller's.
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
    /// never takes in clear text what its meeting encrypts), else the global one.
    fn passphrase_of(&self, stream: &str) -> Option<&String> {
        let meeting = stream
            .split_once('@')
            .map_or(stream, |(meeting, _)| meeting);
        self.passphrases
            .get(stream)
            .or_else(|| self.passphrases.get(meeting))
            .or(self.passphrase.as_ref())
    }

    /// The key settings to accept a caller publishing to `stream` with: `None` for
    /// no encryption.
    ///
    /// # Errors
    /// [`Refused::Passphrase`] when the caller's encryption cannot match: it names a
    /// key length and the meeting has no passphrase (srt-tokio cannot accept that), or
    /// its key length is not the one configured.
    pub fn key_settings(
        &self,
        stream: &str,
        caller: KeySize,
    ) -> Result<Option<KeySettings>, Refused> {
        match (self.passphrase_of(stream), caller) {
            (None, KeySize::Unspecified) => Ok(None),
            (None, _) => Err(Refused::Passphrase(CoreRejectReason::Unsecure)),
            (Some(passphrase), caller) => {
                // A caller that encrypts without setting `pbkeylen` says Unspecified here
                // and sends an AES-128 key, as does one that does not encrypt at all: it
                // is accepted with an unspecified size (read as 16 bytes), and the SRT
                // layer refuses the one without key material (Unsecure). A required key
                // length cannot be checked against an unspecified one (srt-tokio would
                // panic on the mismatch): such a caller is refused.
                let wanted = self.key_length.map(key_size);
                if wanted.is_some_and(|wanted| wanted != caller) {
                    return Err(Refused::Passphrase(CoreRejectReason::BadSecret));
                }
                let passphrase = Passphrase::try_from(passphrase.clone())
                    .map_err(|_| Refused::Passphrase(CoreRejectReason::BadSecret))?;
                Ok(Some(KeySettings {
                    key_size: caller,
                    passphrase,
                }))
            }
        }
    }
}

/// An AES key length in bytes as srt's key size (validated: 16, 24 or 32).
fn key_size(bytes: u16) -> KeySize {
    match bytes {
        24 => KeySize::AES192,
        32 => KeySize::AES256,
        _ => KeySize::AES128,
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
    /// The encryption does not match, with the core reason sent.
    Passphrase(CoreRejectReason),
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
            Refused::Passphrase(_) => InputFault::BadPassphrase,
        }
    }

    /// The reject reason the caller reads (libsrt shows it, e.g. ffmpeg's
    /// "Connection setup failure: ... rejected by server").
    pub fn reason(self) -> RejectReason {
        match self {
            Refused::Limit(_) => ServerRejectReason::Overload.into(),
            Refused::StreamId => ServerRejectReason::BadRequest.into(),
            Refused::Publish(RejectionKind::UnknownStream) => ServerRejectReason::Notfound.into(),
            Refused::Publish(RejectionKind::WrongKey) => ServerRejectReason::Forbidden.into(),
            Refused::Publish(RejectionKind::Busy) => ServerRejectReason::Conflict.into(),
            Refused::Passphrase(core) => core.into(),
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
    fn encryption_must_match_the_meeting() {
        let plain = config();
        assert_eq!(plain.key_settings("open", KeySize::Unspecified), Ok(None));
        assert_eq!(
            plain.key_settings("open", KeySize::AES128),
            Err(Refused::Passphrase(CoreRejectReason::Unsecure))
        );
        let unspecified = plain.key_settings("secret", KeySize::Unspecified).unwrap();
        assert_eq!(unspecified.map(|k| k.key_size), Some(KeySize::Unspecified));
        let taken = plain.key_settings("secret", KeySize::AES256).unwrap();
        assert_eq!(taken.map(|k| k.key_size), Some(KeySize::AES256));

        let mut global = config();
        global.passphrase = Some("global passphrase".into());
        global.key_length = Some(16);
        let settings = global.key_settings("open", KeySize::AES128).unwrap();
        assert_eq!(
            settings.map(|k| k.passphrase.as_bytes().to_vec()),
            Some(b"global passphrase".to_vec())
        );
        assert_eq!(
            global.key_settings("open", KeySize::AES256),
            Err(Refused::Passphrase(CoreRejectReason::BadSecret))
        );
        assert_eq!(
            global.key_settings("open", KeySize::Unspecified),
            Err(Refused::Passphrase(CoreRejectReason::BadSecret))
        );
    }

    #[test]
    fn a_meetings_passphrase_covers_its_backup_slot() {
        let mut config = config();
        // A plain caller on the backup slot of an encrypted meeting is held to the
        // meeting's passphrase (srt refuses it for lack of key material), never taken
        // in clear text.
        let backup = config
            .key_settings("secret@backup", KeySize::Unspecified)
            .unwrap();
        assert_eq!(
            backup.map(|k| k.passphrase.as_bytes().to_vec()),
            Some(b"meeting passphrase".to_vec())
        );
        let aes = config
            .key_settings("secret@backup", KeySize::AES256)
            .unwrap();
        assert_eq!(aes.map(|k| k.key_size), Some(KeySize::AES256));
        // A slot's own passphrase is its own; another meeting's slot stays plain.
        config
            .passphrases
            .insert("secret@backup".into(), "the backup passphrase".into());
        let own = config
            .key_settings("secret@backup", KeySize::AES128)
            .unwrap();
        assert_eq!(
            own.map(|k| k.passphrase.as_bytes().to_vec()),
            Some(b"the backup passphrase".to_vec())
        );
        assert_eq!(
            config.key_settings("open@backup", KeySize::Unspecified),
            Ok(None)
        );
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
            (Refused::Limit(Refusal::AddressFull), 111_020, 2402),
            (Refused::StreamId, 111_026, 2400),
            (
                Refused::Publish(RejectionKind::UnknownStream),
                111_027,
                2404,
            ),
            (Refused::Publish(RejectionKind::WrongKey), 111_028, 2403),
            (Refused::Publish(RejectionKind::Busy), 111_029, 2409),
            (
                Refused::Passphrase(CoreRejectReason::BadSecret),
                111_030,
                1010,
            ),
        ];
        for (refused, code, reason) in cases {
            assert_eq!(refused.code().code(), code);
            assert_eq!(i32::from(refused.reason()), reason);
        }
    }
}
