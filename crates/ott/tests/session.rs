//! Viewer sessions of private meetings: issued by the node that verified the viewer's
//! token, verified by any node that holds the MC's session keys, bound to meeting,
//! viewer, address and times, checked without allocating.

use std::net::IpAddr;

use ott::{viewer_hash, SessionClaims, SessionError, SessionKey, SessionKeys, SESSION_TEXT_LEN};

#[global_allocator]
static GLOBAL: alloc_count::Counting = alloc_count::Counting;

const NOW: i64 = 1_800_000_000;

fn ring(id: u32, secret: &[u8]) -> SessionKeys {
    SessionKeys::new(SessionKey::new(id, secret), None)
}

fn claims(expires: i64, renew_until: i64) -> SessionClaims {
    SessionClaims {
        viewer: viewer_hash("alice@example.com"),
        nonce: [1, 2, 3, 4],
        expires_unix_s: expires as u32,
        renew_until_unix_s: renew_until as u32,
    }
}

fn ip(text: &str) -> Option<IpAddr> {
    Some(text.parse().unwrap())
}

#[test]
fn a_session_verifies_on_every_node_holding_the_key_for_its_meeting_and_address_only() {
    let a = ring(3, b"the MC's session secret");
    let b = ring(3, b"the MC's session secret");
    let text = a
        .issue("board", claims(NOW + 600, NOW + 600), ip("198.51.100.7"))
        .expect("a key is held");
    assert_eq!(text.len(), SESSION_TEXT_LEN);
    let session = b
        .verify(&text, "board", ip("198.51.100.7"), NOW)
        .expect("another node of the MC accepts it");
    assert_eq!(session.claims, claims(NOW + 600, NOW + 600));
    assert_eq!(session.key_id, 3);
    assert_eq!(
        b.verify(&text, "all-hands", ip("198.51.100.7"), NOW),
        Err(SessionError::Forged),
        "another meeting"
    );
    assert_eq!(
        ring(3, b"another MC's secret").verify(&text, "board", ip("198.51.100.7"), NOW),
        Err(SessionError::Forged)
    );
    assert_eq!(
        b.verify(&text, "board", ip("198.51.100.8"), NOW),
        Err(SessionError::OtherAddress),
        "a copied session from another address"
    );
    assert_eq!(
        b.verify(&text, "board", ip("198.51.100.7"), NOW + 601),
        Err(SessionError::Expired)
    );
    assert!(
        b.verify(&text, "board", ip("198.51.100.7"), NOW + 600)
            .is_ok(),
        "valid to its last second"
    );
}

#[test]
fn an_ipv6_viewer_keeps_its_session_inside_its_64() {
    let keys = ring(1, b"k");
    let text = keys
        .issue("m", claims(NOW + 60, NOW + 60), ip("2001:db8:1:2::10"))
        .unwrap();
    assert!(keys
        .verify(&text, "m", ip("2001:db8:1:2:abcd::99"), NOW)
        .is_ok());
    assert_eq!(
        keys.verify(&text, "m", ip("2001:db8:1:3::10"), NOW),
        Err(SessionError::OtherAddress)
    );
}

#[test]
fn past_expiry_a_session_still_renews_until_its_token_ends() {
    let keys = ring(1, b"k");
    let text = keys
        .issue("m", claims(NOW + 60, NOW + 3_600), ip("192.0.2.1"))
        .unwrap();
    let later = keys
        .verify(&text, "m", ip("192.0.2.1"), NOW + 120)
        .expect("renewable");
    assert!(!later.is_current(NOW + 120), "media refuses it");
    assert!(later.is_current(NOW + 60));
    assert_eq!(
        keys.verify(&text, "m", ip("192.0.2.1"), NOW + 3_601),
        Err(SessionError::Expired)
    );
}

#[test]
fn a_rotated_key_still_verifies_its_sessions_until_it_leaves_the_ring() {
    let old = ring(1, b"first");
    let text = old
        .issue("m", claims(NOW + 60, NOW + 60), ip("192.0.2.1"))
        .unwrap();
    let rotated = SessionKeys::new(
        SessionKey::new(2, b"second"),
        [SessionKey::new(1, b"first")],
    );
    assert_eq!(rotated.ids().collect::<Vec<_>>(), [2, 1]);
    assert!(rotated.verify(&text, "m", ip("192.0.2.1"), NOW).is_ok());
    let new = rotated
        .issue("m", claims(NOW + 60, NOW + 60), ip("192.0.2.1"))
        .unwrap();
    assert_eq!(
        rotated
            .verify(&new, "m", ip("192.0.2.1"), NOW)
            .unwrap()
            .key_id,
        2
    );
    let retired = SessionKeys::new(
        SessionKey::new(3, b"third"),
        [SessionKey::new(2, b"second")],
    );
    assert_eq!(
        retired.verify(&text, "m", ip("192.0.2.1"), NOW),
        Err(SessionError::Forged)
    );
    assert_eq!(
        SessionKeys::default().issue("m", claims(NOW, NOW), None),
        None,
        "no key yet: no session"
    );
}

#[test]
fn altered_and_malformed_sessions_are_refused() {
    let key = ring(1, b"k");
    let text = key
        .issue("m", claims(NOW + 60, NOW + 60), ip("192.0.2.1"))
        .unwrap();
    // Every single-character change is caught.
    for i in 0..text.len() {
        for c in ["A", "z", "-"] {
            let mut altered = text.clone();
            altered.replace_range(i..=i, c);
            if altered != text {
                assert!(
                    key.verify(&altered, "m", ip("192.0.2.1"), NOW).is_err(),
                    "{altered}"
                );
            }
        }
    }
    for bad in [
        "",
        "short",
        &"A".repeat(SESSION_TEXT_LEN),
        &format!("{text}A"),
        &text.replace('A', "+"),
    ] {
        let got = key.verify(bad, "m", ip("192.0.2.1"), NOW);
        assert!(
            matches!(
                got,
                Err(SessionError::Malformed) | Err(SessionError::Forged)
            ),
            "{bad}: {got:?}"
        );
    }
}

#[test]
fn verification_does_not_allocate() {
    let key = ring(1, b"k");
    let text = key
        .issue("m", claims(NOW + 60, NOW + 60), ip("192.0.2.1"))
        .unwrap();
    let address = ip("192.0.2.1");
    let (ok, allocations) = alloc_count::count_allocs(|| {
        (0..100).all(|_| key.verify(&text, "m", address, NOW).is_ok())
    });
    assert!(ok);
    assert_eq!(allocations, 0);
}
