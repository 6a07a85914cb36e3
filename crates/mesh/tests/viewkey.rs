//! The view key is derived, not exchanged, and rotates with an overlap
//! (OTT-GRP-3, OTT-OPS-1).

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{config, wait_until};
use mesh::Mesh;
use ott::{Pass, PassError};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as i64
}

fn pass(stream: &str) -> Pass {
    Pass {
        stream: stream.into(),
        expires_at_ms: now_ms() + 60_000,
        viewer: Some("198.51.100.7".parse().expect("ip")),
        key_id: 0,
    }
}

#[tokio::test]
async fn unconnected_nodes_agree_on_the_key_and_accept_each_others_passes() {
    // No seeds: a, b and c never exchange a datagram.
    let a = Mesh::start(config("a", &[])).await.expect("a");
    let b = Mesh::start(config("b", &[])).await.expect("b");
    let c = Mesh::start(config("c", &[])).await.expect("c");
    assert_eq!(a.view_key_fingerprint(), b.view_key_fingerprint());
    assert_eq!(b.view_key_fingerprint(), c.view_key_fingerprint());
    assert_eq!(a.transport_counters().received, 0);

    let text = a.key_ring().sign(&pass("meeting")).expect("sign");
    let viewer = Some("198.51.100.7".parse().expect("ip"));
    assert!(b.verify_pass(&text, "meeting", viewer).is_ok());
    assert!(c
        .key_ring()
        .verify(&text, "meeting", viewer, now_ms())
        .is_ok());
    assert_eq!(
        b.verify_pass(&text, "other", viewer),
        Err(PassError::WrongStream)
    );

    let mut foreign = config("x", &[]);
    foreign.domain_secret = b"some other domain's secret".to_vec();
    let x = Mesh::start(foreign).await.expect("x");
    assert_ne!(x.view_key_fingerprint(), a.view_key_fingerprint());
    let forged = x.key_ring().sign(&pass("meeting")).expect("sign");
    assert!(matches!(
        a.verify_pass(&forged, "meeting", viewer),
        Err(PassError::Forged)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_signed_before_a_rotation_verifies_after_it() {
    let rotation = Duration::from_millis(1_000);
    let a = Mesh::start(config("a", &[]).with_test_rotation(rotation))
        .await
        .expect("a");
    let b = common::node(config("b", &[a.gossip_addr()]).with_test_rotation(rotation)).await;
    a.set_node(common::announce("a")).await.expect("announce");
    let viewer = Some("198.51.100.7".parse().expect("ip"));

    let signed_in = a.view_keys().epoch(now_ms());
    let text = a.key_ring().sign(&pass("meeting")).expect("sign");
    wait_until(Duration::from_secs(3), "one rotation", || async {
        b.view_keys().epoch(now_ms()) == signed_in + 1
    })
    .await;
    assert!(
        b.verify_pass(&text, "meeting", viewer).is_ok(),
        "previous key still accepted"
    );
    wait_until(Duration::from_secs(3), "two rotations", || async {
        b.view_keys().epoch(now_ms()) >= signed_in + 2
    })
    .await;
    assert!(matches!(
        b.verify_pass(&text, "meeting", viewer),
        Err(PassError::UnknownKey { .. })
    ));

    // Across rotations the peers keep recognising each other's key.
    wait_until(Duration::from_secs(5), "a and b see each other", || async {
        common::alive_peers(&a) == ["b"] && common::alive_peers(&b) == ["a"]
    })
    .await;
    for _ in 0..15 {
        for h in [&a, &b] {
            assert!(h.snapshot().nodes.iter().all(|n| n.has_view_key));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
