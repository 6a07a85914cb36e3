//! Private meetings on a node: every request for a private meeting's files is
//! authorized here, after the OTT door and before the meeting gate.
//!
//! - A player opens the meeting with the token its platform gave it
//!   (`?access_token=<JWT>`, see [`ott::ViewerKeySet::verify`]): the node checks it
//!   against the keys it learned from its MC, the meeting and the host's removals, and
//!   starts a session ([`ott::SessionKeys::issue`], signed with the MC's session key)
//!   bound to the viewer's address.
//! - Every URI of the playlists and MPDs it answers carries the session
//!   (`session=`, [`crate::access::session_uris`]); every later request — playlists,
//!   parts, segments, inits, archive — is checked by it alone, without allocating,
//!   and only from the address it was issued to.
//! - Media asked with a session is served for [`ott::SESSION_MEDIA_LIFETIME_S`] from
//!   its issue; a playlist asked with it past half of that is answered with a renewed
//!   session, while the token it was opened with holds (at most
//!   [`ott::SESSION_RENEW_MAX_S`]).
//! - A removed viewer's session is refused from the node's next sync with its MC on.
//! - A token with `max_sessions` opens no more sessions on this node than it allows
//!   while they are in use (a request within the last 20 s).

use std::net::IpAddr;

use codes::AccessRefusal;
use ott::{SessionClaims, SessionError, TokenError, SESSION_QUERY_PARAM};

use super::gate::MeetingGate;

/// The query parameter a player opens a private meeting with.
pub const TOKEN_QUERY_PARAM: &str = "access_token";

/// What an authorized request of a private meeting carries on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The viewer, as [`ott::viewer_hash`] of its id.
    pub viewer: [u8; 8],
    /// A session started or renewed by this request, to write into every URI of the
    /// answer; `None` when it came with its session and that one serves on.
    pub issued: Option<String>,
    /// Until when (Unix s) the session the answer carries opens media: how long the
    /// answer may be kept by the viewer's own cache.
    pub media_until_unix_s: i64,
}

/// What a request of a private meeting asks for, as the session rules see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// A playlist or MPD: a session past its media lifetime is renewed here.
    Playlist,
    /// A segment, part, init or download: the session must still open media.
    Media,
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
        SessionError::OtherAddress => AccessRefusal::SessionOtherAddress,
    }
}

/// The claims of a session that opens media from `now` on and renews until
/// `renew_until` (never past it).
fn claims_from(viewer: [u8; 8], nonce: [u8; 4], renew_until: i64, now: i64) -> SessionClaims {
    let renew_until = renew_until.clamp(0, i64::from(u32::MAX));
    let expires = (now + ott::SESSION_MEDIA_LIFETIME_S).min(renew_until);
    SessionClaims {
        viewer,
        nonce,
        expires_unix_s: u32::try_from(expires.max(0)).unwrap_or(u32::MAX),
        renew_until_unix_s: u32::try_from(renew_until).unwrap_or(u32::MAX),
    }
}

impl MeetingGate {
    /// Authorizes a request for a file of the private `meeting` at `now_unix_s`, from
    /// the viewer at `address`: its session, or else its viewer token (which starts
    /// one).
    ///
    /// # Errors
    /// [`AccessRefusal`]: the viewer is answered with it (403), or `None` when this
    /// node has no session key from its MC yet (the MC is not reachable: 102005).
    pub fn authorize(
        &self,
        meeting: &str,
        query: Option<&str>,
        address: Option<IpAddr>,
        asked: Asked,
        now_unix_s: i64,
    ) -> Result<Grant, Option<AccessRefusal>> {
        let keys = self.session_keys();
        if let Some(text) = query_param(query, SESSION_QUERY_PARAM) {
            let session = keys
                .verify(text, meeting, address, now_unix_s)
                .map_err(|e| Some(session_refusal(e)))?;
            let claims = session.claims;
            if self.is_removed(meeting, &claims.viewer) {
                return Err(Some(AccessRefusal::ViewerRemoved));
            }
            let expires = i64::from(claims.expires_unix_s);
            let renew_until = i64::from(claims.renew_until_unix_s);
            let renew = asked == Asked::Playlist
                && renew_until > expires
                && expires - now_unix_s < ott::SESSION_MEDIA_LIFETIME_S / 2;
            if asked == Asked::Media && !session.is_current(now_unix_s) {
                return Err(Some(AccessRefusal::SessionExpired));
            }
            self.saw_session(meeting, claims.viewer, claims.nonce);
            if !renew {
                return Ok(Grant {
                    viewer: claims.viewer,
                    issued: None,
                    media_until_unix_s: expires,
                });
            }
            let renewed = claims_from(claims.viewer, claims.nonce, renew_until, now_unix_s);
            let issued = keys.issue(meeting, renewed, address).ok_or(None)?;
            return Ok(Grant {
                viewer: claims.viewer,
                issued: Some(issued),
                media_until_unix_s: i64::from(renewed.expires_unix_s),
            });
        }
        let Some(token) = query_param(query, TOKEN_QUERY_PARAM) else {
            return Err(Some(AccessRefusal::TokenMissing));
        };
        let claims = self
            .viewer_keys()
            .verify(token, now_unix_s)
            .map_err(|e| Some(token_refusal(e)))?;
        if claims.meeting != meeting {
            return Err(Some(AccessRefusal::TokenOtherMeeting));
        }
        let viewer = ott::viewer_hash(&claims.viewer);
        if self.is_removed(meeting, &viewer) {
            return Err(Some(AccessRefusal::ViewerRemoved));
        }
        if let Some(max) = claims.max_sessions {
            if self.live_sessions(meeting, viewer) >= max as usize {
                return Err(Some(AccessRefusal::TooManySessions));
            }
        }
        let renew_until = claims
            .expires_unix_s
            .min(now_unix_s + ott::SESSION_RENEW_MAX_S);
        let nonce = new_nonce();
        let session = claims_from(viewer, nonce, renew_until, now_unix_s);
        let issued = keys.issue(meeting, session, address).ok_or(None)?;
        self.saw_session(meeting, viewer, nonce);
        Ok(Grant {
            viewer,
            issued: Some(issued),
            media_until_unix_s: i64::from(session.expires_unix_s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::Ed25519KeyPair;

    const NOW: i64 = 1_800_000_000;

    /// A gate that knows private meeting `m`, a platform key and a session ring.
    fn gate() -> (MeetingGate, Ed25519KeyPair) {
        let pair = Ed25519KeyPair::from_seed_unchecked(&[3; 32]).unwrap();
        let public = ott::ViewerKey::of_pair("p1", &pair).public_base64url();
        let gate = MeetingGate::new();
        let view = meeting::MeetingView {
            id: "m".into(),
            state: meeting::MeetingState::Live,
            locked: false,
            viewer_limit: None,
            viewers: 0,
            ladder: Vec::new(),
            private: true,
            removed: Vec::new(),
            waiting: false,
            recording_depth_days: None,
            languages: Vec::new(),
        };
        gate.connected(
            vec![view],
            None,
            std::collections::HashMap::new(),
            &[("p1".into(), public)],
        );
        gate.set_session_keys(ott::SessionKeys::new(
            ott::SessionKey::new(1, &[5; 32]),
            None,
        ));
        (gate, pair)
    }

    fn token(pair: &Ed25519KeyPair, expires: i64) -> String {
        let claims = ott::ViewerClaims {
            meeting: "m".into(),
            viewer: "alice".into(),
            expires_unix_s: expires,
            max_sessions: None,
        };
        ott::mint_viewer_token(&claims, "p1", pair)
    }

    fn with_session(grant: &Grant) -> String {
        format!("session={}", grant.issued.as_deref().expect("a session"))
    }

    const HOME: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1)));

    #[test]
    fn a_session_opens_media_for_its_lifetime_and_renews_through_playlists_while_the_token_holds() {
        let (gate, pair) = gate();
        let query = format!("access_token={}", token(&pair, NOW + 3_600));
        let opened = gate
            .authorize("m", Some(&query), HOME, Asked::Playlist, NOW)
            .unwrap();
        assert_eq!(
            opened.media_until_unix_s,
            NOW + ott::SESSION_MEDIA_LIFETIME_S
        );
        let session = with_session(&opened);
        let media = |now| gate.authorize("m", Some(&session), HOME, Asked::Media, now);
        let playlist = |now| gate.authorize("m", Some(&session), HOME, Asked::Playlist, now);
        // Early on, media and playlists go through on the session as it is.
        assert_eq!(media(NOW + 60).unwrap().issued, None);
        assert_eq!(playlist(NOW + 60).unwrap().issued, None);
        // Past half its media lifetime a playlist renews it.
        let late = NOW + ott::SESSION_MEDIA_LIFETIME_S * 3 / 4;
        let renewed = playlist(late).unwrap();
        assert_eq!(
            renewed.media_until_unix_s,
            late + ott::SESSION_MEDIA_LIFETIME_S
        );
        let renewed_session = with_session(&renewed);
        // The old session opens no media past its lifetime; the renewed one does.
        let after = NOW + ott::SESSION_MEDIA_LIFETIME_S + 1;
        assert_eq!(media(after), Err(Some(AccessRefusal::SessionExpired)));
        assert!(gate
            .authorize("m", Some(&renewed_session), HOME, Asked::Media, after)
            .is_ok());
        // A renewal never outlives the token: near its end the session stops there.
        let near_end = NOW + 3_600 - 60;
        let last = playlist(near_end).unwrap();
        assert_eq!(last.media_until_unix_s, NOW + 3_600);
        assert_eq!(
            playlist(NOW + 3_601),
            Err(Some(AccessRefusal::SessionExpired))
        );
        // Another address: refused, whatever it asks.
        let elsewhere = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2)));
        assert_eq!(
            gate.authorize("m", Some(&session), elsewhere, Asked::Playlist, NOW + 1),
            Err(Some(AccessRefusal::SessionOtherAddress))
        );
    }

    #[test]
    fn without_session_keys_from_the_mc_no_session_is_issued() {
        let (_, pair) = gate();
        let fresh = MeetingGate::new();
        let query = format!("access_token={}", token(&pair, NOW + 60));
        assert_eq!(
            fresh.authorize("m", Some(&query), HOME, Asked::Playlist, NOW),
            Err(Some(AccessRefusal::TokenUnknownKey)),
            "no viewer keys either before the first sync"
        );
        let (keyed, _) = gate();
        keyed.set_session_keys(ott::SessionKeys::default());
        assert_eq!(
            keyed.authorize("m", Some(&query), HOME, Asked::Playlist, NOW),
            Err(None)
        );
    }

    #[test]
    fn query_params_are_found_by_exact_name() {
        let q = Some("a=1&access_token=x.y.z&session=abc&sessionx=no");
        assert_eq!(query_param(q, "access_token"), Some("x.y.z"));
        assert_eq!(query_param(q, "session"), Some("abc"));
        assert_eq!(query_param(q, "token"), None);
        assert_eq!(query_param(None, "session"), None);
    }
}
