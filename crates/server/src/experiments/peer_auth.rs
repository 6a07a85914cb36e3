//! How a node of an OTT domain proves itself to a peer whose experiment report it pulls
//! (EXP-1): a signature with a key derived from the domain secret for this one job,
//! sent as `X-Brdyun-Peer: <unix s>.<tag>` — never the admin token, which would cross
//! the network in clear to every address the gossip announces, and would open every
//! operator route of the peer to whoever read it on the way.
//!
//! The tag covers the path and the time: a signature read on the way opens only the
//! same read-only report, for [`WINDOW_S`] seconds.

use axum::http::{HeaderMap, HeaderName};
use ring::hmac;

/// The header a peer's signature travels in.
pub const PEER_HEADER: HeaderName = HeaderName::from_static("x-brdyun-peer");
/// How far a signature's time may be from the verifier's clock (the mesh keeps its
/// members' clocks within 240 s of each other, OTT-ELIG-4; a pull is signed as sent).
pub const WINDOW_S: i64 = 240;
const LABEL: &[u8] = b"brdyun experiment report pull v1\0";

/// The key nodes of one domain sign and verify report pulls with.
pub struct PeerKey {
    key: hmac::Key,
}

impl std::fmt::Debug for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerKey(..)")
    }
}

impl PeerKey {
    /// The key of the domain whose secret is `domain_secret` (its own derivation: it
    /// signs nothing else).
    pub fn derive(domain_secret: &[u8]) -> Self {
        let root = hmac::Key::new(hmac::HMAC_SHA256, domain_secret);
        let derived = hmac::sign(&root, LABEL);
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
        }
    }

    /// The header value for a GET of `path` at `now_unix_s`.
    pub fn sign(&self, path: &str, now_unix_s: i64) -> String {
        format!(
            "{now_unix_s}.{}",
            ott::base64url::encode(hmac::sign(&self.key, &signed_bytes(path, now_unix_s)).as_ref())
        )
    }

    /// Whether `headers` carry a signature of `path` by a node of this domain, made
    /// within [`WINDOW_S`] of `now_unix_s`.
    pub fn verify(&self, headers: &HeaderMap, path: &str, now_unix_s: i64) -> bool {
        let Some((at, tag)) = headers
            .get(&PEER_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once('.'))
        else {
            return false;
        };
        let Ok(at) = at.parse::<i64>() else {
            return false;
        };
        if now_unix_s.abs_diff(at) > WINDOW_S.unsigned_abs() {
            return false;
        }
        let mut given = [0u8; 32];
        if ott::base64url::decode_into(tag, &mut given) != Some(given.len()) {
            return false;
        }
        hmac::verify(&self.key, &signed_bytes(path, at), &given).is_ok()
    }
}

/// What a tag is computed over (verified with [`hmac::verify`], in constant time).
fn signed_bytes(path: &str, at_unix_s: i64) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(LABEL.len() + 8 + path.len());
    bytes.extend_from_slice(LABEL);
    bytes.extend_from_slice(&at_unix_s.to_be_bytes());
    bytes.extend_from_slice(path.as_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/api/experiments/report";
    const NOW: i64 = 1_800_000_000;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(PEER_HEADER, value.parse().unwrap());
        headers
    }

    #[test]
    fn a_peer_of_the_domain_is_recognised_for_the_signed_path_and_window_only() {
        let key = PeerKey::derive(b"the domain secret of these tests");
        let signed = key.sign(PATH, NOW);
        assert!(key.verify(&headers(&signed), PATH, NOW + 10));
        assert!(key.verify(&headers(&signed), PATH, NOW - WINDOW_S));
        assert!(
            !key.verify(&headers(&signed), PATH, NOW + WINDOW_S + 1),
            "too old"
        );
        assert!(
            !key.verify(&headers(&signed), "/api/experiments", NOW),
            "another path"
        );
        let stranger = PeerKey::derive(b"another domain's secret, same length");
        assert!(
            !stranger.verify(&headers(&signed), PATH, NOW),
            "another domain"
        );
        for bad in ["", "x", "1800000000.", "1800000000.AAAA", "nope.abc"] {
            assert!(!key.verify(&headers(bad), PATH, NOW), "{bad:?}");
        }
        assert!(!key.verify(&HeaderMap::new(), PATH, NOW));
    }

    #[test]
    fn a_time_at_the_ends_of_the_integer_range_is_refused_without_overflow() {
        let key = PeerKey::derive(b"the domain secret of these tests");
        for at in [i64::MIN, i64::MAX] {
            let value = format!("{at}.{}", "A".repeat(43));
            assert!(!key.verify(&headers(&value), PATH, NOW), "{value}");
            assert!(!key.verify(&headers(&value), PATH, -NOW), "{value}");
        }
    }
}
