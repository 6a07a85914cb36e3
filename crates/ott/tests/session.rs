//! Viewer sessions of private meetings (issue 22): issued by the node that verified the
//! viewer's token, verified by any node of the domain, bound to meeting, viewer and
//! expiry, checked without allocating.

use ott::{viewer_hash, SessionError, SessionKey, SESSION_TEXT_LEN};

#[global_allocator]
static GLOBAL: alloc_count::Counting = alloc_count::Counting;

const NOW: i64 = 1_800_000_000;

#[test]
fn a_session_verifies_on_every_node_of_the_domain_for_its_meeting_only() {
    let a = SessionKey::derive(b"the domain secret, shared by every node");
    let b = SessionKey::derive(b"the domain secret, shared by every node");
    let viewer = viewer_hash("alice@example.com");
    let text = a.issue("board", viewer, (NOW + 600) as u32, [1, 2, 3, 4]);
    assert_eq!(text.len(), SESSION_TEXT_LEN);
    let session = b
        .verify(&text, "board", NOW)
        .expect("another node of the domain accepts it");
    assert_eq!(session.viewer, viewer);
    assert_eq!(session.expires_unix_s, (NOW + 600) as u32);
    assert_eq!(
        b.verify(&text, "all-hands", NOW),
        Err(SessionError::Forged),
        "another meeting"
    );
    let other_domain = SessionKey::derive(b"another domain's secret");
    assert_eq!(
        other_domain.verify(&text, "board", NOW),
        Err(SessionError::Forged)
    );
    assert_eq!(
        b.verify(&text, "board", NOW + 601),
        Err(SessionError::Expired)
    );
    assert!(
        b.verify(&text, "board", NOW + 600).is_ok(),
        "valid to its last second"
    );
}

#[test]
fn altered_and_malformed_sessions_are_refused() {
    let key = SessionKey::derive(b"k");
    let text = key.issue("m", viewer_hash("v"), (NOW + 60) as u32, [1, 2, 3, 4]);
    // Every single-character change is caught.
    for i in 0..text.len() {
        for c in ["A", "z", "-"] {
            let mut altered = text.clone();
            altered.replace_range(i..=i, c);
            if altered != text {
                assert!(key.verify(&altered, "m", NOW).is_err(), "{altered}");
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
        let got = key.verify(bad, "m", NOW);
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
    let key = SessionKey::derive(b"k");
    let text = key.issue("m", viewer_hash("v"), (NOW + 60) as u32, [1, 2, 3, 4]);
    let (ok, allocations) =
        alloc_count::count_allocs(|| (0..100).all(|_| key.verify(&text, "m", NOW).is_ok()));
    assert!(ok);
    assert_eq!(allocations, 0);
}
