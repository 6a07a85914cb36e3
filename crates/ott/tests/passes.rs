//! OTT-GRP-3 and DESIGN invariant 3: passes signed with the view key, bound to the
//! stream (and viewer), checked with 240 s of clock tolerance, rotation overlap.

use std::net::IpAddr;

use ott::{KeyRing, Pass, PassError, ViewKey, PASS_CLOCK_TOLERANCE_MS};
use proptest::prelude::*;

const NOW: i64 = 1_767_225_600_000;

fn ring() -> KeyRing {
    KeyRing::new(ViewKey::new(7, b"domain view key, 32 bytes long!!"))
}

fn pass(stream: &str, expires_at_ms: i64) -> Pass {
    Pass {
        stream: stream.into(),
        expires_at_ms,
        viewer: None,
        key_id: 7,
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

#[test]
fn grp_3_a_signed_pass_verifies_and_round_trips() {
    let keys = ring();
    let p = pass("live", NOW + 60_000);
    let text = keys.sign(&p).expect("short stream name");
    assert!(text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    assert!(text.len() < 100, "fits in a URL: {}", text.len());
    assert_eq!(keys.verify(&text, "live", None, NOW), Ok(p.clone()));
    assert_eq!(Pass::parse_unverified(&text), Ok(p));
}

#[test]
fn grp_3_expiry_is_checked_with_240_s_tolerance() {
    let keys = ring();
    let text = keys.sign(&pass("live", NOW)).expect("sign");
    assert!(keys
        .verify(&text, "live", None, NOW + PASS_CLOCK_TOLERANCE_MS)
        .is_ok());
    assert_eq!(
        keys.verify(&text, "live", None, NOW + 240_001),
        Err(PassError::Expired)
    );
}

#[test]
fn invariant_3_forged_other_stream_and_unknown_key_are_distinct_errors() {
    let keys = ring();
    let text = keys.sign(&pass("live", NOW + 60_000)).expect("sign");
    assert_eq!(
        keys.verify(&text, "other", None, NOW),
        Err(PassError::WrongStream)
    );
    // Same key id, another secret: a node outside the domain minting passes.
    let outsider = KeyRing::new(ViewKey::new(7, b"guessed"));
    let forged = outsider.sign(&pass("live", NOW + 60_000)).expect("sign");
    assert_eq!(
        keys.verify(&forged, "live", None, NOW),
        Err(PassError::Forged)
    );
    let other_id = KeyRing::new(ViewKey::new(8, b"guessed"));
    let unknown = other_id.sign(&pass("live", NOW + 60_000)).expect("sign");
    assert_eq!(
        keys.verify(&unknown, "live", None, NOW),
        Err(PassError::UnknownKey { key_id: 8 })
    );
    assert_eq!(
        keys.verify("", "live", None, NOW),
        Err(PassError::Malformed)
    );
    assert_eq!(
        keys.verify("not a pass!", "live", None, NOW),
        Err(PassError::Malformed)
    );
    let codes: Vec<&str> = [
        PassError::Malformed,
        PassError::UnknownKey { key_id: 1 },
        PassError::Forged,
        PassError::WrongStream,
        PassError::Expired,
        PassError::WrongViewer,
    ]
    .iter()
    .map(PassError::code)
    .collect();
    let mut unique = codes.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), codes.len(), "{codes:?}");
}

#[test]
fn grp_3_rotation_keeps_passes_in_flight_valid_for_one_overlap() {
    let mut keys = ring();
    let old = keys.sign(&pass("live", NOW + 60_000)).expect("sign");
    keys.rotate(ViewKey::new(8, b"next view key"));
    let new = keys.sign(&pass("live", NOW + 60_000)).expect("sign");
    assert_eq!(Pass::parse_unverified(&new).map(|p| p.key_id), Ok(8));
    assert!(
        keys.verify(&old, "live", None, NOW).is_ok(),
        "previous key accepted"
    );
    assert!(keys.verify(&new, "live", None, NOW).is_ok());
    keys.rotate(ViewKey::new(9, b"the one after"));
    assert_eq!(
        keys.verify(&old, "live", None, NOW),
        Err(PassError::UnknownKey { key_id: 7 })
    );
    assert!(keys.verify(&new, "live", None, NOW).is_ok());
}

#[test]
fn grp_3_a_pass_from_a_node_that_rotated_first_is_accepted_with_the_next_key() {
    // A node whose clock is ahead signs with the next epoch's key before this one
    // rotates: the ring's `next` slot accepts it.
    let ahead = KeyRing::new(ViewKey::new(8, b"next view key"));
    let early = ahead.sign(&pass("live", NOW + 60_000)).expect("sign");
    let mut keys = ring();
    assert_eq!(
        keys.verify(&early, "live", None, NOW),
        Err(PassError::UnknownKey { key_id: 8 })
    );
    keys.next = Some(ViewKey::new(8, b"next view key"));
    assert!(keys.verify(&early, "live", None, NOW).is_ok());
    // Rotating makes it current and forgets the slot.
    keys.rotate(ViewKey::new(8, b"next view key"));
    assert!(keys.next.is_none());
    assert!(keys.verify(&early, "live", None, NOW).is_ok());
}

#[test]
fn invariant_3_a_viewer_bound_pass_is_refused_elsewhere() {
    let keys = ring();
    let mut p = pass("live", NOW + 60_000);
    p.viewer = Some(ip("198.51.100.20"));
    let text = keys.sign(&p).expect("sign");
    assert!(keys
        .verify(&text, "live", Some(ip("198.51.100.20")), NOW)
        .is_ok());
    assert!(keys
        .verify(&text, "live", Some(ip("::ffff:198.51.100.20")), NOW)
        .is_ok());
    assert_eq!(
        keys.verify(&text, "live", Some(ip("198.51.100.21")), NOW),
        Err(PassError::WrongViewer)
    );
    assert_eq!(
        keys.verify(&text, "live", None, NOW),
        Err(PassError::WrongViewer)
    );
    // IPv6 is bound by its /64: privacy addresses rotate inside it.
    p.viewer = Some(ip("2001:db8:1:2:aaaa::1"));
    let text = keys.sign(&p).expect("sign");
    assert!(keys
        .verify(&text, "live", Some(ip("2001:db8:1:2:bbbb::9")), NOW)
        .is_ok());
    assert_eq!(
        keys.verify(&text, "live", Some(ip("2001:db8:1:3::1")), NOW),
        Err(PassError::WrongViewer)
    );
}

#[test]
fn a_stream_name_over_255_bytes_cannot_be_signed() {
    let keys = ring();
    assert_eq!(
        keys.sign(&pass(&"x".repeat(256), NOW)),
        Err(PassError::StreamTooLong)
    );
    assert!(keys.sign(&pass(&"x".repeat(255), NOW)).is_ok());
}

#[test]
fn view_key_debug_hides_the_secret_and_fingerprints_differ() {
    let a = ViewKey::new(1, b"secret-a");
    let b = ViewKey::new(1, b"secret-b");
    assert_ne!(a.fingerprint(), b.fingerprint());
    assert_eq!(a.fingerprint(), ViewKey::new(2, b"secret-a").fingerprint());
    assert!(!format!("{a:?}").contains("secret"));
}

proptest! {
    /// Any single bit flip in the pass bytes is rejected.
    #[test]
    fn invariant_3_any_bit_flip_in_the_bytes_is_rejected(
        stream in "[a-z0-9_-]{1,40}",
        expires in NOW..NOW + 86_400_000,
        bit in 0usize..2048,
    ) {
        let keys = ring();
        let text = keys.sign(&pass(&stream, expires)).expect("sign");
        let mut bytes = decode(&text);
        let bit = bit % (bytes.len() * 8);
        bytes[bit / 8] ^= 1 << (bit % 8);
        let tampered = encode(&bytes);
        prop_assert!(keys.verify(&tampered, &stream, None, NOW).is_err());
    }

    /// Any single bit flip in the text is rejected (strict, canonical base64url).
    #[test]
    fn invariant_3_any_bit_flip_in_the_text_is_rejected(
        stream in "[a-z0-9_-]{1,40}",
        bit in 0usize..2048,
    ) {
        let keys = ring();
        let text = keys.sign(&pass(&stream, NOW + 60_000)).expect("sign");
        let mut bytes = text.into_bytes();
        let bit = bit % (bytes.len() * 8);
        bytes[bit / 8] ^= 1 << (bit % 8);
        if let Ok(tampered) = String::from_utf8(bytes) {
            prop_assert!(keys.verify(&tampered, &stream, None, NOW).is_err());
        }
    }

    /// Parsing and verifying never panic on arbitrary input.
    #[test]
    fn verify_never_panics(text in "\\PC{0,600}", stream in "\\PC{0,20}", now: i64) {
        let _ = ring().verify(&text, &stream, None, now);
        let _ = Pass::parse_unverified(&text);
    }

    /// Nor on arbitrary bytes that are valid base64url.
    #[test]
    fn verify_never_panics_on_decodable_garbage(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = ring().verify(&encode(&bytes), "live", Some(ip("10.0.0.1")), NOW);
    }
}

// A reference base64url (RFC 4648 §5, no padding) written independently of the
// crate's, to tamper with pass bytes.
const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn encode(bytes: &[u8]) -> String {
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = String::new();
    for &b in bytes {
        bits = bits << 8 | u32::from(b);
        n += 8;
        while n >= 6 {
            n -= 6;
            out.push(char::from(ALPHABET[(bits >> n) as usize & 63]));
        }
    }
    if n > 0 {
        out.push(char::from(ALPHABET[(bits << (6 - n)) as usize & 63]));
    }
    out
}

fn decode(text: &str) -> Vec<u8> {
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let v = ALPHABET
            .iter()
            .position(|&a| a == c)
            .expect("base64url text") as u32;
        bits = bits << 6 | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    out
}
