//! Writes a private meeting's session into every URI of a playlist or MPD answered to
//! its viewer, so that each request the player makes from it (media playlists, parts,
//! preload hints, rendition reports, inits, segments, subtitles, the next MPD) carries
//! the session, and a URI copied out of it stops working when the session ends.
//!
//! Nothing here reads the manifest: its writers marked where each URI a player requests
//! ends as they rendered it ([`media::manifest`]) — HLS URI lines and `URI="…"`
//! attributes (not `SERVER-URI`: the steering server needs no session), DASH `media`,
//! `initialization` and `Location` (not `BaseURL`: template URIs are resolved against
//! it) — and the answer is the shared text with `session=` after each of them, one copy.

use media::manifest::Manifest;
use ott::SESSION_QUERY_PARAM;

/// `manifest` with `session` in the query of every URI a player requests from it. A
/// character of `session` that is not URL-unreserved is percent-encoded (a session the
/// node minted has none), so the value is safe in a URI and in XML.
pub fn answer(manifest: &Manifest, session: &str) -> Vec<u8> {
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    if session.bytes().all(unreserved) {
        return manifest.with_query(SESSION_QUERY_PARAM, session);
    }
    let mut encoded = String::with_capacity(session.len() * 3);
    for byte in session.bytes() {
        if unreserved(byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    manifest.with_query(SESSION_QUERY_PARAM, &encoded)
}

#[cfg(test)]
mod tests {
    use media::manifest::{ManifestWrite, MarkedText};
    use std::fmt::Write as _;

    #[test]
    fn a_session_that_is_not_unreserved_is_encoded() {
        let mut text = MarkedText::xml(64);
        text.write_str("<S media=\"").unwrap();
        text.uri("a.m4s").unwrap();
        text.write_str("\"/>").unwrap();
        let out = super::answer(&text.finish(), "a\"b&c");
        assert_eq!(out, b"<S media=\"a.m4s?session=a%22b%26c\"/>");
        let mut text = MarkedText::with_capacity(8);
        text.uri("a.ts").unwrap();
        assert_eq!(
            super::answer(&text.finish(), "Ab-9_.~"),
            b"a.ts?session=Ab-9_.~"
        );
    }
}
