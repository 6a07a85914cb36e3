//! Viewer sessions of private meetings: what a node hands a viewer whose token it
//! verified, carried as `session=` on every URI of the viewer's playlists and MPDs.
//!
//! A session binds a meeting, the viewer (by an 8-byte hash of its id, enough to match
//! a revocation), the address it was issued to (an IPv6 one by its /64) and two
//! times, under a key the MC issues and rotates ([`SessionKeys`]; one job: signing
//! sessions, never the mesh's gossip secret). Every node of the MC verifies it — a
//! backup variant or a redirect takes the viewer's session along — and nobody else
//! can use it: from another address it is refused ([`SessionError::OtherAddress`]).
//!
//! - `expires`: a segment, part or init asked with the session after this is refused,
//!   so a media URL copied out of a playlist dies within the session lifetime.
//! - `renew_until` (the token's own expiry, capped): until then the session still opens
//!   playlists and MPDs, and the node answers them with a renewed session in every URI
//!   — a viewer keeps watching while its token holds, through plain playlist reloads.
//!
//! Each session has a nonce of its own, so the sessions of one viewer (two devices,
//! one token) are told apart and a token's `max_sessions` can be counted.
//!
//! Verification is allocation-free (a stack buffer, one HMAC): it runs on every
//! request of a private meeting. Wire layout before base64url (61 bytes, 82
//! characters): `2` (format) ‖ key id (u32 BE) ‖ expires (u32 BE, Unix s) ‖ renew
//! until (u32 BE) ‖ viewer hash (8) ‖ nonce (4) ‖ address tag (4) ‖ HMAC-SHA256 (32)
//! over a label, the meeting, the whole address prefix and everything before the tag.

use std::net::{IpAddr, Ipv6Addr};

use ring::{digest, hmac};

/// The query parameter that carries a session.
pub const SESSION_QUERY_PARAM: &str = "session";
/// How long a session opens media (segments, parts, inits) from its issue or last
/// renewal: a media URL copied out of a playlist dies within this.
pub const SESSION_MEDIA_LIFETIME_S: i64 = 10 * 60;
/// The longest a session renews, from the token it was opened with: the token's own
/// expiry when sooner. Past it the player opens the meeting again with a token.
pub const SESSION_RENEW_MAX_S: i64 = 12 * 3600;

const FORMAT: u8 = 2;
const BODY_LEN: usize = 1 + 4 + 4 + 4 + 8 + 4 + 4;
const TAG_LEN: usize = 32;
const WIRE_LEN: usize = BODY_LEN + TAG_LEN;
/// Characters of a session in base64url without padding.
pub const SESSION_TEXT_LEN: usize = (WIRE_LEN * 8).div_ceil(6);
const LABEL: &[u8] = b"brdyun viewer session v2\0";

/// The 8-byte hash that stands for a viewer id in sessions and revocation lists.
pub fn viewer_hash(viewer: &str) -> [u8; 8] {
    let d = digest::digest(&digest::SHA256, viewer.as_bytes());
    let mut out = [0u8; 8];
    out.copy_from_slice(&d.as_ref()[..8]);
    out
}

/// The 16 bytes an address is known by: an IPv4 (or IPv4-mapped) address whole, mapped
/// into IPv6; any other IPv6 address by its /64 (a host's privacy addresses change
/// inside it). Sessions, passes and viewer counts all bind or count this.
pub fn address_prefix(ip: IpAddr) -> [u8; 16] {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => {
            let mut octets = v6.octets();
            octets[8..].fill(0);
            Ipv6Addr::from(octets).octets()
        }
    }
}

/// The address a session is bound to, as its 16-byte prefix (no address: an
/// in-process call), and the 4 bytes of the session that name it. The prefix itself is
/// under the HMAC: the 4-byte tag only tells "another address" from "forged" in a
/// refusal, and matching it from another address opens nothing.
fn bound_address(address: Option<IpAddr>) -> ([u8; 16], [u8; 4]) {
    let prefix = address.map_or([0; 16], address_prefix);
    let hash = crate::stable_hash(&prefix).to_be_bytes();
    (prefix, [hash[0], hash[1], hash[2], hash[3]])
}

/// One key sessions are signed with: the MC issues it with an id, and rotates it.
pub struct SessionKey {
    id: u32,
    key: hmac::Key,
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionKey({})", self.id)
    }
}

impl SessionKey {
    /// The key `id` made from `secret` (the MC's random bytes).
    pub fn new(id: u32, secret: &[u8]) -> Self {
        let root = hmac::Key::new(hmac::HMAC_SHA256, secret);
        let derived = hmac::sign(&root, LABEL);
        Self {
            id,
            key: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
        }
    }

    /// The key's id, written in every session it signs.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The tag over the meeting, the whole address the session is bound to (its
    /// 16-byte prefix: the 4-byte address tag of the body only names it, for the
    /// refusal's code) and the body.
    fn tag(&self, meeting: &str, address: &[u8; 16], body: &[u8; BODY_LEN]) -> hmac::Tag {
        let mut context = hmac::Context::with_key(&self.key);
        context.update(LABEL);
        context.update(&(meeting.len() as u32).to_be_bytes());
        context.update(meeting.as_bytes());
        context.update(address);
        context.update(body);
        context.sign()
    }
}

/// What a new session says: whose it is and until when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionClaims {
    /// The viewer, as [`viewer_hash`] of its id.
    pub viewer: [u8; 8],
    /// What tells this session apart from the viewer's others.
    pub nonce: [u8; 4],
    /// Media asked with it after this (Unix s) is refused.
    pub expires_unix_s: u32,
    /// Until this (Unix s) it still opens playlists and is renewed there.
    pub renew_until_unix_s: u32,
}

/// A verified session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    /// What it was issued with.
    pub claims: SessionClaims,
    /// The key that signed it.
    pub key_id: u32,
}

impl Session {
    /// Whether media (segments, parts, inits) may still be served with it at `now`.
    pub fn is_current(&self, now_unix_s: i64) -> bool {
        now_unix_s <= i64::from(self.claims.expires_unix_s)
    }
}

/// Why a session was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Not a session (length, alphabet, format).
    #[error("the session is malformed")]
    Malformed,
    /// The tag does not match: forged, altered, for another meeting or MC, or signed
    /// with a key this node no longer holds.
    #[error("the session is not valid for this meeting")]
    Forged,
    /// Past its renewal time (the token's end): the player must open the meeting again
    /// with a token.
    #[error("the session has ended")]
    Expired,
    /// Valid, but issued to another address: a session is its viewer's alone.
    #[error("the session was issued to another address")]
    OtherAddress,
}

/// The session keys a node holds, as its MC hands them out: the current one (which
/// signs), the next one (published a rotation ahead, so every node verifies it before
/// any signs with it) and the older ones still in use (sessions signed with them renew
/// until their renewal time).
#[derive(Debug, Default)]
pub struct SessionKeys {
    /// The signing key first.
    keys: Vec<SessionKey>,
}

impl SessionKeys {
    /// The ring with `current` signing and `others` verifying.
    pub fn new(current: SessionKey, others: impl IntoIterator<Item = SessionKey>) -> Self {
        Self {
            keys: std::iter::once(current).chain(others).collect(),
        }
    }

    /// The ids of the keys held, the signing one first.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.keys.iter().map(SessionKey::id)
    }

    /// A session of `claims` for `meeting`, for the viewer at `address`, signed with
    /// the current key; `None` when no key is held yet.
    pub fn issue(
        &self,
        meeting: &str,
        claims: SessionClaims,
        address: Option<IpAddr>,
    ) -> Option<String> {
        let key = self.keys.first()?;
        let (prefix, address_tag) = bound_address(address);
        let mut wire = [0u8; WIRE_LEN];
        wire[0] = FORMAT;
        wire[1..5].copy_from_slice(&key.id.to_be_bytes());
        wire[5..9].copy_from_slice(&claims.expires_unix_s.to_be_bytes());
        wire[9..13].copy_from_slice(&claims.renew_until_unix_s.to_be_bytes());
        wire[13..21].copy_from_slice(&claims.viewer);
        wire[21..25].copy_from_slice(&claims.nonce);
        wire[25..BODY_LEN].copy_from_slice(&address_tag);
        let body: [u8; BODY_LEN] = wire[..BODY_LEN].try_into().expect("body length");
        wire[BODY_LEN..].copy_from_slice(key.tag(meeting, &prefix, &body).as_ref());
        Some(crate::base64url::encode(&wire))
    }

    /// Verifies a session's text for `meeting`, presented from `address`, at
    /// `now_unix_s`, without allocating. A session past `expires` but before its
    /// renewal time verifies: media routes check [`Session::is_current`].
    ///
    /// # Errors
    /// [`SessionError`]: malformed, not this meeting's (or forged, or its key is no
    /// longer held), past its renewal time, or from another address.
    pub fn verify(
        &self,
        text: &str,
        meeting: &str,
        address: Option<IpAddr>,
        now_unix_s: i64,
    ) -> Result<Session, SessionError> {
        let mut wire = [0u8; WIRE_LEN];
        if text.len() != SESSION_TEXT_LEN
            || crate::base64url::decode_into(text, &mut wire) != Some(WIRE_LEN)
            || wire[0] != FORMAT
        {
            return Err(SessionError::Malformed);
        }
        let body: [u8; BODY_LEN] = wire[..BODY_LEN].try_into().expect("body length");
        let word = |at: usize| u32::from_be_bytes(body[at..at + 4].try_into().expect("4 bytes"));
        let key_id = word(1);
        let key = self
            .keys
            .iter()
            .find(|k| k.id == key_id)
            .ok_or(SessionError::Forged)?;
        let (prefix, address_tag) = bound_address(address);
        let expected = key.tag(meeting, &prefix, &body);
        // Constant time over the whole tag.
        let differs = expected
            .as_ref()
            .iter()
            .zip(&wire[BODY_LEN..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differs != 0 {
            // Its own address named in the body, yet the tag fails there: from another
            // address (which the tag covers), else forged.
            return Err(if body[25..BODY_LEN] != address_tag {
                SessionError::OtherAddress
            } else {
                SessionError::Forged
            });
        }
        let claims = SessionClaims {
            expires_unix_s: word(5),
            renew_until_unix_s: word(9),
            viewer: body[13..21].try_into().expect("8 bytes"),
            nonce: body[21..25].try_into().expect("4 bytes"),
        };
        if now_unix_s > i64::from(claims.renew_until_unix_s.max(claims.expires_unix_s)) {
            return Err(SessionError::Expired);
        }
        Ok(Session { claims, key_id })
    }
}
