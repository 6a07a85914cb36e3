//! Viewer sessions of private meetings: what a node hands a viewer whose token it
//! verified, carried as `session=` on every URI of the viewer's playlists and MPDs.
//!
//! A session binds a meeting, the viewer (by an 8-byte hash of its id, enough to match
//! a revocation) and an expiry, under an HMAC-SHA256 key every node of the domain
//! derives from the domain secret: any node of the domain verifies it — a backup
//! variant or a redirect takes the viewer's session along, and it is the pass's
//! authorization (useless to anyone but that viewer, for that meeting, until then). A
//! segment URL copied out of a playlist stops working when the session ends.
//!
//! Each session has a nonce of its own, so the sessions of one viewer (two devices,
//! one token) are told apart and a token's `max_sessions` can be counted.
//!
//! Verification is allocation-free (a stack buffer, one HMAC): it runs on every
//! request of a private meeting. Wire layout before base64url (49 bytes, 66
//! characters): `1` (format) ‖ expiry (u32 BE, Unix seconds) ‖ viewer hash (8 bytes)
//! ‖ nonce (4 bytes) ‖ HMAC-SHA256 (32 bytes) over a label, the meeting and everything
//! before the tag.

use ring::{digest, hmac};

/// The query parameter that carries a session.
pub const SESSION_QUERY_PARAM: &str = "session";

const FORMAT: u8 = 1;
const BODY_LEN: usize = 1 + 4 + 8 + 4;
const TAG_LEN: usize = 32;
const WIRE_LEN: usize = BODY_LEN + TAG_LEN;
/// Characters of a session in base64url without padding.
pub const SESSION_TEXT_LEN: usize = (WIRE_LEN * 8).div_ceil(6);
const LABEL: &[u8] = b"brdyun viewer session v1\0";

/// The 8-byte hash that stands for a viewer id in sessions and revocation lists.
pub fn viewer_hash(viewer: &str) -> [u8; 8] {
    let d = digest::digest(&digest::SHA256, viewer.as_bytes());
    let mut out = [0u8; 8];
    out.copy_from_slice(&d.as_ref()[..8]);
    out
}

/// The key sessions are signed and checked with.
pub struct SessionKey {
    key: hmac::Key,
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

/// A verified session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    /// When it ends, Unix seconds.
    pub expires_unix_s: u32,
    /// The viewer, as [`viewer_hash`] of its id.
    pub viewer: [u8; 8],
    /// What tells this session apart from the viewer's others.
    pub nonce: [u8; 4],
}

/// Why a session was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Not a session (length, alphabet, format).
    #[error("the session is malformed")]
    Malformed,
    /// The tag does not match: forged, altered, for another meeting or domain.
    #[error("the session is not valid for this meeting")]
    Forged,
    /// Past its expiry.
    #[error("the session has ended")]
    Expired,
}

impl SessionKey {
    /// The key every node of a domain derives from the domain secret (or a standalone
    /// node from a secret of its own).
    pub fn derive(secret: &[u8]) -> Self {
        let root = hmac::Key::new(hmac::HMAC_SHA256, secret);
        let derived = hmac::sign(&root, LABEL);
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
        }
    }

    fn tag(&self, meeting: &str, body: &[u8; BODY_LEN]) -> hmac::Tag {
        let mut context = hmac::Context::with_key(&self.key);
        context.update(LABEL);
        context.update(&(meeting.len() as u32).to_be_bytes());
        context.update(meeting.as_bytes());
        context.update(body);
        context.sign()
    }

    /// A session of `viewer` for `meeting` until `expires_unix_s`, told apart from its
    /// others by `nonce`, as its text.
    pub fn issue(
        &self,
        meeting: &str,
        viewer: [u8; 8],
        expires_unix_s: u32,
        nonce: [u8; 4],
    ) -> String {
        let mut wire = [0u8; WIRE_LEN];
        wire[0] = FORMAT;
        wire[1..5].copy_from_slice(&expires_unix_s.to_be_bytes());
        wire[5..13].copy_from_slice(&viewer);
        wire[13..BODY_LEN].copy_from_slice(&nonce);
        let body: [u8; BODY_LEN] = wire[..BODY_LEN].try_into().expect("body length");
        wire[BODY_LEN..].copy_from_slice(self.tag(meeting, &body).as_ref());
        crate::base64url::encode(&wire)
    }

    /// Verifies a session's text for `meeting` at `now_unix_s`, without allocating.
    ///
    /// # Errors
    /// [`SessionError`]: malformed, not this meeting's (or forged), or ended.
    pub fn verify(
        &self,
        text: &str,
        meeting: &str,
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
        let expected = self.tag(meeting, &body);
        // Constant time over the whole tag.
        let differs = expected
            .as_ref()
            .iter()
            .zip(&wire[BODY_LEN..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differs != 0 {
            return Err(SessionError::Forged);
        }
        let expires = u32::from_be_bytes(body[1..5].try_into().expect("4 bytes"));
        if now_unix_s > i64::from(expires) {
            return Err(SessionError::Expired);
        }
        Ok(Session {
            expires_unix_s: expires,
            viewer: body[5..13].try_into().expect("8 bytes"),
            nonce: body[13..].try_into().expect("4 bytes"),
        })
    }
}
