//! The view key (OTT-GRP-3, OTT-OPS-1): derived by every node from the domain
//! secret, so no operator ever copies a key.
//!
//! Time is cut into epochs of `rotation_ms`; the key of epoch
//! `e = floor(unix_ms / rotation_ms)` is `HKDF(domain secret, info "view-key" ‖ e)`.
//! A node signs with the key of its current epoch and accepts the previous, current
//! and next epochs' keys: a pass signed just before a rotation stays valid after it,
//! and a node whose clock is a little ahead (already in the next epoch) is still
//! understood. For that overlap to cover every pass, an epoch must outlast the
//! longest pass plus the clock tolerance (see [`MIN_ROTATION_MS`]).

use std::net::IpAddr;
use std::time::Duration;

use ott::{KeyRing, Pass, PassError, ViewKey, MASTER_PASS_LIFETIME_MS, PASS_CLOCK_TOLERANCE_MS};

use crate::crypto::DomainKeys;

/// The default rotation period: 24 hours.
pub const DEFAULT_ROTATION: Duration = Duration::from_secs(24 * 60 * 60);

/// The shortest rotation a configuration may ask for: the longest pass lifetime plus
/// the clock tolerance. A pass signed in epoch `e` is then checked no later than in
/// epoch `e + 1`, where key `e` is still "previous".
pub const MIN_ROTATION_MS: i64 = MASTER_PASS_LIFETIME_MS + PASS_CLOCK_TOLERANCE_MS;

/// Why a view-key schedule cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewKeyError {
    /// The rotation is shorter than a pass may live: passes would die early.
    #[error("view key rotation {rotation_ms} ms is shorter than the minimum {min_ms} ms (longest pass lifetime plus clock tolerance)")]
    RotationTooShort {
        /// The rotation asked for.
        rotation_ms: i64,
        /// The minimum, [`MIN_ROTATION_MS`].
        min_ms: i64,
    },
}

/// Derives the view key of any epoch; cheap to query (one HKDF expand and one
/// SHA-256 per key).
pub struct ViewKeySchedule {
    keys: DomainKeys,
    rotation_ms: i64,
}

impl std::fmt::Debug for ViewKeySchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewKeySchedule")
            .field("rotation_ms", &self.rotation_ms)
            .finish_non_exhaustive()
    }
}

impl ViewKeySchedule {
    /// The schedule of the domain `domain_secret` names, rotating every `rotation`.
    ///
    /// # Errors
    /// [`ViewKeyError::RotationTooShort`] below [`MIN_ROTATION_MS`].
    pub fn new(domain_secret: &[u8], rotation: Duration) -> Result<Self, ViewKeyError> {
        let rotation_ms = duration_ms(rotation);
        if rotation_ms < MIN_ROTATION_MS {
            return Err(ViewKeyError::RotationTooShort {
                rotation_ms,
                min_ms: MIN_ROTATION_MS,
            });
        }
        Ok(Self::with_any_rotation(domain_secret, rotation))
    }

    /// A schedule with any rotation of at least 1 ms, for tests that watch a rotation
    /// happen: passes may then expire early, so production code uses [`Self::new`].
    pub fn with_any_rotation(domain_secret: &[u8], rotation: Duration) -> Self {
        Self {
            keys: DomainKeys::new(domain_secret),
            rotation_ms: duration_ms(rotation).max(1),
        }
    }

    /// The rotation period, milliseconds.
    pub fn rotation_ms(&self) -> i64 {
        self.rotation_ms
    }

    /// The epoch that `now_ms` (Unix ms) falls in.
    pub fn epoch(&self, now_ms: i64) -> i64 {
        now_ms.div_euclid(self.rotation_ms)
    }

    /// The view key of `epoch`; its id in passes is the epoch modulo 2^32.
    pub fn key(&self, epoch: i64) -> ViewKey {
        // Truncation is the intended id: ids only need to differ between neighbouring
        // epochs, and the signature still binds the full key.
        ViewKey::new(epoch as u32, &self.keys.view_key_secret(epoch))
    }

    /// The ring to sign with at `now_ms`: the current epoch's key, with the previous
    /// and the next one accepted (rotation overlap and clock skew between nodes).
    pub fn ring(&self, now_ms: i64) -> KeyRing {
        let e = self.epoch(now_ms);
        KeyRing {
            current: self.key(e),
            previous: Some(self.key(e - 1)),
            next: Some(self.key(e + 1)),
        }
    }

    /// The fingerprint this node publishes at `now_ms` (its current key's).
    pub fn fingerprint(&self, now_ms: i64) -> u64 {
        self.key(self.epoch(now_ms)).fingerprint()
    }

    /// The fingerprints this node accepts at `now_ms`: previous, current, next epoch.
    /// A peer that publishes one of them holds the domain's view key.
    pub fn accepted_fingerprints(&self, now_ms: i64) -> [u64; 3] {
        let e = self.epoch(now_ms);
        [e - 1, e, e + 1].map(|e| self.key(e).fingerprint())
    }

    /// Verifies a pass with the previous, current or next epoch's key (see
    /// [`KeyRing::verify`] for the other checks).
    ///
    /// # Errors
    /// As [`KeyRing::verify`]; [`PassError::UnknownKey`] when none of the three keys
    /// has the pass's key id.
    pub fn verify(
        &self,
        text: &str,
        stream: &str,
        viewer_ip: Option<IpAddr>,
        now_ms: i64,
    ) -> Result<Pass, PassError> {
        let e = self.epoch(now_ms);
        let key_id = Pass::parse_unverified(text)?.key_id;
        let epoch = [e, e - 1, e + 1]
            .into_iter()
            .find(|&c| c as u32 == key_id)
            .ok_or(PassError::UnknownKey { key_id })?;
        KeyRing::new(self.key(epoch)).verify(text, stream, viewer_ip, now_ms)
    }
}

fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef-domain";

    fn pass(stream: &str, expires_at_ms: i64) -> Pass {
        Pass {
            stream: stream.into(),
            expires_at_ms,
            viewer: None,
            key_id: 0,
        }
    }

    #[test]
    fn short_rotation_is_refused_and_default_accepted() {
        assert!(matches!(
            ViewKeySchedule::new(SECRET, Duration::from_secs(3600)),
            Err(ViewKeyError::RotationTooShort { .. })
        ));
        assert!(ViewKeySchedule::new(SECRET, DEFAULT_ROTATION).is_ok());
    }

    #[test]
    fn pass_survives_one_rotation_then_dies_with_its_key() {
        let s = ViewKeySchedule::with_any_rotation(SECRET, Duration::from_secs(10));
        let t = 1_000_000_009_000; // 1 s before a rotation
        let text = s.ring(t).sign(&pass("live", t + 60_000)).expect("sign");
        assert!(s.verify(&text, "live", None, t).is_ok());
        assert!(
            s.verify(&text, "live", None, t + 5_000).is_ok(),
            "after rotation"
        );
        // A verifier whose clock is behind (previous epoch) accepts it as "next".
        assert!(s.verify(&text, "live", None, t - 10_000).is_ok());
        assert_eq!(
            s.verify(&text, "live", None, t + 25_000),
            Err(PassError::UnknownKey {
                key_id: s.epoch(t) as u32
            })
        );
        assert_eq!(
            s.verify(&text, "other", None, t),
            Err(PassError::WrongStream)
        );
    }

    #[test]
    fn fingerprints_agree_per_secret_and_differ_across_secrets() {
        let a = ViewKeySchedule::new(SECRET, DEFAULT_ROTATION).expect("ok");
        let b = ViewKeySchedule::new(SECRET, DEFAULT_ROTATION).expect("ok");
        let c = ViewKeySchedule::new(b"another-domain-secret", DEFAULT_ROTATION).expect("ok");
        let t = 1_780_000_000_000;
        assert_eq!(a.fingerprint(t), b.fingerprint(t));
        assert_ne!(a.fingerprint(t), c.fingerprint(t));
        assert!(a.accepted_fingerprints(t).contains(&b.fingerprint(t)));
        assert!(!a.accepted_fingerprints(t).contains(&c.fingerprint(t)));
        let next_day = t + DEFAULT_ROTATION.as_millis() as i64;
        assert_ne!(a.fingerprint(t), a.fingerprint(next_day));
    }
}
