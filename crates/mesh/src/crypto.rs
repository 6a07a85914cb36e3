//! Keys derived from the domain secret, and the datagram seal.
//!
//! Every key of the domain comes from one operator-held secret through
//! HKDF-SHA256 with a fixed salt; the `info` label separates their uses, so the
//! gossip key and the view keys are independent even though they share a root.
//! Nothing here touches the network.

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey, NONCE_LEN};
use ring::hkdf;
use ring::rand::{SecureRandom, SystemRandom};

/// The fixed HKDF salt of every key of the domain (RFC 5869 allows a constant salt;
/// the domain secret carries the entropy).
const SALT: &[u8] = b"brdyun mesh domain v1";
/// HKDF info of the gossip transport key.
const INFO_GOSSIP: &[u8] = b"gossip";
/// HKDF info prefix of the view key of one epoch (followed by the epoch, u64 BE).
const INFO_VIEW_KEY: &[u8] = b"view-key";
/// Associated data of every sealed datagram: binds the ciphertext to this use.
const AAD: &[u8] = b"brdyun gossip datagram v1";

/// Bytes a seal adds to a plaintext: the random nonce in front, the Poly1305 tag
/// behind.
pub const SEAL_OVERHEAD: usize = NONCE_LEN + 16;

/// The shortest domain secret accepted: 16 bytes (128 bits).
pub const MIN_SECRET_LEN: usize = 16;

/// The root of every key of the domain: HKDF-SHA256 extracted from the domain
/// secret, kept so that view keys of any epoch can be derived on demand.
pub(crate) struct DomainKeys {
    prk: hkdf::Prk,
}

impl DomainKeys {
    /// Extracts the root key from the domain secret.
    pub(crate) fn new(domain_secret: &[u8]) -> Self {
        Self {
            prk: hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(domain_secret),
        }
    }

    /// 32 bytes of key material for `info`.
    fn expand(&self, info: &[&[u8]]) -> [u8; 32] {
        let mut out = [0u8; 32];
        self.prk
            .expand(info, hkdf::HKDF_SHA256)
            .and_then(|okm| okm.fill(&mut out))
            .expect("32 bytes is the HKDF-SHA256 output length, always allowed");
        out
    }

    /// The secret of the view key of `epoch`.
    pub(crate) fn view_key_secret(&self, epoch: i64) -> [u8; 32] {
        self.expand(&[INFO_VIEW_KEY, &epoch.to_be_bytes()])
    }

    /// The seal of gossip datagrams.
    pub(crate) fn gossip_cipher(&self) -> GossipCipher {
        GossipCipher::from_key(self.expand(&[INFO_GOSSIP]))
    }
}

/// Seals and opens gossip datagrams with ChaCha20-Poly1305 under the domain's gossip
/// key: `nonce (12 random bytes) ‖ ciphertext ‖ tag (16 bytes)`.
///
/// Random 96-bit nonces are safe for far more datagrams than a node sends in its
/// lifetime (the birthday bound is ~2^48 messages per key). Public so tests and tools
/// can craft datagrams a domain node accepts.
pub struct GossipCipher {
    key: LessSafeKey,
    rng: SystemRandom,
}

impl GossipCipher {
    /// The cipher of the domain that `domain_secret` names.
    pub fn new(domain_secret: &[u8]) -> Self {
        DomainKeys::new(domain_secret).gossip_cipher()
    }

    fn from_key(key: [u8; 32]) -> Self {
        let unbound = UnboundKey::new(&aead::CHACHA20_POLY1305, &key)
            .expect("a 32-byte key is the ChaCha20-Poly1305 key length");
        Self {
            key: LessSafeKey::new(unbound),
            rng: SystemRandom::new(),
        }
    }

    /// Seals `plaintext` into a datagram.
    ///
    /// # Errors
    /// [`SealError`] when the system RNG fails (no nonce, nothing may be sent).
    pub fn seal(&self, plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| SealError)?;
        let mut out = Vec::with_capacity(plaintext.len() + SEAL_OVERHEAD);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plaintext);
        let mut body = out.split_off(NONCE_LEN);
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(AAD),
                &mut body,
            )
            .map_err(|_| SealError)?;
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Opens a datagram in place and returns its plaintext, or `None` when it was not
    /// sealed under this domain's key (wrong secret, tampered, truncated, garbage).
    pub fn open<'a>(&self, datagram: &'a mut [u8]) -> Option<&'a [u8]> {
        if datagram.len() < SEAL_OVERHEAD {
            return None;
        }
        let (nonce, body) = datagram.split_at_mut(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = self.key.open_in_place(nonce, Aad::from(AAD), body).ok()?;
        Some(&*plain)
    }
}

/// The system random generator failed: no nonce, so nothing was sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the system random generator failed")]
pub struct SealError;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_then_open_roundtrips_and_other_secret_fails() {
        let a = GossipCipher::new(b"0123456789abcdef-domain");
        let b = GossipCipher::new(b"0123456789abcdef-other!");
        let mut sealed = a.seal(b"hello mesh").expect("rng");
        assert_eq!(sealed.len(), 10 + SEAL_OVERHEAD);
        let mut copy = sealed.clone();
        assert_eq!(a.open(&mut sealed), Some(&b"hello mesh"[..]));
        assert_eq!(b.open(&mut copy), None);
    }

    #[test]
    fn every_flipped_bit_and_every_truncation_is_rejected() {
        let c = GossipCipher::new(b"0123456789abcdef-domain");
        let sealed = c.seal(b"scuttlebutt").expect("rng");
        for i in 0..sealed.len() * 8 {
            let mut d = sealed.clone();
            d[i / 8] ^= 1 << (i % 8);
            assert_eq!(c.open(&mut d), None, "bit {i}");
        }
        for len in 0..sealed.len() {
            let mut d = sealed[..len].to_vec();
            assert_eq!(c.open(&mut d), None, "len {len}");
        }
    }

    proptest::proptest! {
        #[test]
        fn opening_arbitrary_bytes_never_panics(mut bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048)) {
            let c = GossipCipher::new(b"0123456789abcdef-domain");
            proptest::prop_assert_eq!(c.open(&mut bytes), None);
        }
    }

    #[test]
    fn view_key_secrets_differ_by_epoch_and_from_the_gossip_key() {
        let k = DomainKeys::new(b"0123456789abcdef-domain");
        assert_ne!(k.view_key_secret(1), k.view_key_secret(2));
        assert_ne!(k.view_key_secret(0), k.expand(&[INFO_GOSSIP]));
        assert_eq!(
            k.view_key_secret(7),
            DomainKeys::new(b"0123456789abcdef-domain").view_key_secret(7)
        );
    }
}
