//! Private meetings on a node: every request for a private meeting's files is
//! authorized here, after the OTT door and before the meeting gate.
//!
//! - A player opens the meeting with the token its platform gave it
//!   (`?access_token=<JWT>`, see [`ott::ViewerKeySet::verify`]): the node checks it
//!   against the keys it learned from its MC, the meeting and the host's removals, and
//!   starts a session ([`ott::SessionKey::issue`]) that ends when the token does.
//! - Every URI of the playlists and MPDs it answers carries the session
//!   (`session=`, [`crate::mc::session_uris`]); every later request — playlists,
//!   parts, segments, inits, archive — is checked by it alone, without allocating.
//! - A removed viewer's session is refused from the node's next sync with its MC on.
//! - A token with `max_sessions` opens no more sessions on this node than it allows
//!   while they are in use (a request within the last 20 s).

use codes::AccessRefusal;
use ott::{SessionError, TokenError, SESSION_QUERY_PARAM};

use super::gate::MeetingGate;

/// The query parameter a player opens a private meeting with.
pub const TOKEN_QUERY_PARAM: &str = "access_token";

/// What an authorized request of a private meeting carries on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The viewer, as [`ott::viewer_hash`] of its id.
    pub viewer: [u8; 8],
    /// A session started by this request (it came with a token), to write into every
    /// URI of the answer; `None` when it came with its session.
    pub issued: Option<String>,
}

/// The value of `name=` in a query, if any (no decoding: tokens and sessions are
/// base64url and dots).
pub fn query_param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then_some(value)
    })
}

/// A new session's nonce: random bytes from the system's generator (a counter's if it
/// fails, which only makes two sessions of one viewer look alike).
fn new_nonce() -> [u8; 4] {
    use ring::rand::SecureRandom as _;
    static FALLBACK: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut nonce = [0u8; 4];
    if ring::rand::SystemRandom::new().fill(&mut nonce).is_err() {
        nonce = FALLBACK
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_be_bytes();
    }
    nonce
}

fn token_refusal(error: TokenError) -> AccessRefusal {
    match error {
        TokenError::Malformed => AccessRefusal::TokenMalformed,
        TokenError::UnsupportedAlgorithm | TokenError::BadSignature => AccessRefusal::TokenForged,
        TokenError::UnknownKey => AccessRefusal::TokenUnknownKey,
        TokenError::Expired => AccessRefusal::TokenExpired,
        TokenError::NotYetValid => AccessRefusal::TokenNotYetValid,
        TokenError::WrongAudience | TokenError::MissingClaim => AccessRefusal::TokenIncomplete,
    }
}

fn session_refusal(error: SessionError) -> AccessRefusal {
    match error {
        SessionError::Malformed => AccessRefusal::SessionMalformed,
        SessionError::Forged => AccessRefusal::SessionForged,
        SessionError::Expired => AccessRefusal::SessionExpired,
    }
}

impl MeetingGate {
    /// Authorizes a request for a file of the private `meeting` at `now_unix_s`: its
    /// session, or else its viewer token (which starts one).
    ///
    /// # Errors
    /// The [`AccessRefusal`] the viewer is answered with (403).
    pub fn authorize(
        &self,
        meeting: &str,
        query: Option<&str>,
        now_unix_s: i64,
    ) -> Result<Grant, AccessRefusal> {
        let key = self.session_key();
        if let Some(session) = query_param(query, SESSION_QUERY_PARAM) {
            let session = key
                .verify(session, meeting, now_unix_s)
                .map_err(session_refusal)?;
            if self.is_removed(meeting, &session.viewer) {
                return Err(AccessRefusal::ViewerRemoved);
            }
            self.saw_session(meeting, session.viewer, session.nonce);
            return Ok(Grant {
                viewer: session.viewer,
                issued: None,
            });
        }
        let Some(token) = query_param(query, TOKEN_QUERY_PARAM) else {
            return Err(AccessRefusal::TokenMissing);
        };
        let claims = self
            .viewer_keys()
            .verify(token, now_unix_s)
            .map_err(token_refusal)?;
        if claims.meeting != meeting {
            return Err(AccessRefusal::TokenOtherMeeting);
        }
        let viewer = ott::viewer_hash(&claims.viewer);
        if self.is_removed(meeting, &viewer) {
            return Err(AccessRefusal::ViewerRemoved);
        }
        if let Some(max) = claims.max_sessions {
            if self.live_sessions(meeting, viewer) >= max as usize {
                return Err(AccessRefusal::TooManySessions);
            }
        }
        let expires = u32::try_from(claims.expires_unix_s.max(0)).unwrap_or(u32::MAX);
        let nonce = new_nonce();
        self.saw_session(meeting, viewer, nonce);
        Ok(Grant {
            viewer,
            issued: Some(key.issue(meeting, viewer, expires, nonce)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::query_param;

    #[test]
    fn query_params_are_found_by_exact_name() {
        let q = Some("a=1&access_token=x.y.z&session=abc&sessionx=no");
        assert_eq!(query_param(q, "access_token"), Some("x.y.z"));
        assert_eq!(query_param(q, "session"), Some("abc"));
        assert_eq!(query_param(q, "token"), None);
        assert_eq!(query_param(None, "session"), None);
    }
}
