//! A mesh of real nodes on loopback UDP: convergence, a foreign node, failure
//! detection and restart, clock offsets, cut links (OTT-GRP-3, OTT-GRP-5,
//! OTT-ELIG-4, OTT-OPS-1).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{alive_peers, announce, config, node, wait_until};
use mesh::{Mesh, MeshConfig, MeshEvent, SkewedClock};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_converge_with_their_announced_state_and_members() {
    let a = node(config("a", &[])).await;
    let b = node(config("b", &[a.gossip_addr()])).await;
    let c = node(config("c", &[a.gossip_addr()])).await;
    let all = [&a, &b, &c];
    wait_until(
        Duration::from_secs(10),
        "each node lists the other two",
        || async {
            all.iter().all(|h| {
                let s = h.snapshot();
                alive_peers(h).len() == 2 && s.members.len() == 3
            })
        },
    )
    .await;

    for h in all {
        let s = h.snapshot();
        assert_eq!(s.this.id, *h.node_id());
        assert_eq!(s.min_version, mesh::MIN_COMPATIBLE_VERSION);
        for n in &s.nodes {
            let name = mesh::node_name(&n.id);
            assert_eq!(n.hostname.as_deref(), Some(&*format!("{name}.example.net")));
            assert_eq!(n.addresses, announce(name).addresses);
            assert_eq!(n.version, announce(name).version);
            assert_eq!(n.load, announce(name).load);
            assert!(n.has_view_key, "{name} holds the view key (OTT-OPS-1)");
            assert!(
                n.clock_offset_ms.abs() < 2_000,
                "same clock: {}",
                n.clock_offset_ms
            );
            let m = s
                .members
                .iter()
                .find(|m| m.node == n.id)
                .expect("its member");
            assert_eq!(m.stream, format!("{name}-stream"));
            assert_eq!(m.group, "meeting-group");
            assert_eq!(m.timeline_fingerprint, Some(0xfeed));
        }
        assert!(s.own_member("meeting-group").is_some());
    }

    // Steady-state traffic: clocks change every round, nothing else.
    let before: Vec<_> = all.iter().map(|h| h.transport_counters()).collect();
    let window = Duration::from_secs(2);
    tokio::time::sleep(window).await;
    for (h, b) in all.iter().zip(&before) {
        let c = h.transport_counters();
        let per_s = (c.sent_bytes - b.sent_bytes) as f64 / window.as_secs_f64();
        let dgrams = (c.sent - b.sent) as f64 / window.as_secs_f64();
        eprintln!(
            "{}: {per_s:.0} B/s, {dgrams:.0} datagrams/s sent",
            h.node_id()
        );
        assert!(
            per_s < 20_000.0,
            "gossip of 3 nodes stays small: {per_s} B/s"
        );
        assert_eq!(c.rejected, 0);
    }

    // Changing and removing members reaches the others.
    let mut moved = common::member("b-other");
    moved.can_substitute = false;
    b.set_members(vec![moved]).await.expect("members");
    wait_until(
        Duration::from_secs(5),
        "a sees b's new member set",
        || async {
            let s = a.snapshot();
            let of_b: Vec<_> = s
                .members
                .iter()
                .filter(|m| mesh::node_name(&m.node) == "b")
                .map(|m| (m.stream.clone(), m.can_substitute))
                .collect();
            of_b == [("b-other".to_owned(), false)]
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_another_secret_can_neither_join_nor_read() {
    let a = node(config("a", &[])).await;
    let b = node(config("b", &[a.gossip_addr()])).await;
    let mut intruder_cfg = config("x", &[a.gossip_addr(), b.gossip_addr()]);
    intruder_cfg.domain_secret = b"a guessed, wrong domain secret".to_vec();
    let x = node(intruder_cfg).await;

    wait_until(Duration::from_secs(10), "a and b converge", || async {
        alive_peers(&a) == ["b"] && alive_peers(&b) == ["a"]
    })
    .await;
    wait_until(
        Duration::from_secs(5),
        "a rejects x's datagrams",
        || async { a.rejected_datagrams() > 0 },
    )
    .await;
    // For two more seconds of gossip, nobody ever lists the other side.
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        for h in [&a, &b] {
            assert!(h
                .snapshot()
                .nodes
                .iter()
                .all(|n| mesh::node_name(&n.id) != "x"));
        }
        let sx = x.snapshot();
        assert!(sx.nodes.is_empty(), "x read the domain: {:?}", sx.nodes);
        assert_eq!(sx.members.len(), 1, "x knows only its own member");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The domain never answers what it cannot open: x received nothing at all.
    assert_eq!(x.transport_counters().received, 0);
    assert_eq!(a.transport_counters().undecodable, 0);
    // It cannot learn the view key: its own differs.
    assert_ne!(x.view_key_fingerprint(), a.view_key_fingerprint());
    // Leaving is idempotent.
    x.shutdown().await;
    x.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_is_marked_dead_within_six_seconds_and_rejoins_after_restart() {
    let a = node(config("a", &[])).await;
    let b = node(config("b", &[a.gossip_addr()])).await;
    let c = node(config("c", &[a.gossip_addr()])).await;
    let mut events = a.subscribe();
    wait_until(Duration::from_secs(10), "converged", || async {
        [&a, &b, &c].iter().all(|h| alive_peers(h).len() == 2)
    })
    .await;
    let old_c = c.node_id().clone();
    // Let failure detection learn the heartbeat rhythm, as in production.
    tokio::time::sleep(Duration::from_secs(1)).await;

    drop(c); // killed: no goodbye
    let took = wait_until(Duration::from_secs(6), "a and b mark c dead", || async {
        [&a, &b]
            .iter()
            .all(|h| h.snapshot().nodes.iter().any(|n| n.id == old_c && !n.alive))
    })
    .await;
    eprintln!("dead node detected after {took:?}");
    // Still listed (the Backups screen shows it), its member too.
    assert!(a.snapshot().members.iter().any(|m| m.node == old_c));
    let mut saw_down = false;
    while let Ok(e) = events.try_recv() {
        saw_down |= e == MeshEvent::NodeDown(old_c.clone());
    }
    assert!(saw_down, "a NodeDown event for c");

    // Restart with the same name: a new generation, alive again, old one hidden.
    let c2 = node(config("c", &[a.gossip_addr()])).await;
    assert_ne!(*c2.node_id(), old_c);
    wait_until(Duration::from_secs(10), "c is back everywhere", || async {
        [&a, &b].iter().all(|h| {
            let s = h.snapshot();
            s.nodes.iter().any(|n| n.id == *c2.node_id() && n.alive)
                && s.nodes.iter().all(|n| n.id != old_c)
        }) && alive_peers(&c2) == ["a", "b"]
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_clock_shows_as_its_offset() {
    let a = node(config("a", &[])).await;
    let mut skewed = config("c", &[a.gossip_addr()]);
    skewed.clock = Arc::new(SkewedClock { skew_ms: 300_000 });
    let c = node(skewed).await;
    wait_until(
        Duration::from_secs(10),
        "both see the other's offset",
        || async {
            let near = |v: i64, want: i64| (v - want).abs() <= 2_000;
            a.snapshot()
                .nodes
                .iter()
                .any(|n| n.alive && near(n.clock_offset_ms, 300_000))
                && c.snapshot()
                    .nodes
                    .iter()
                    .any(|n| n.alive && near(n.clock_offset_ms, -300_000))
        },
    )
    .await;
    // Same domain secret: the view key is still shared despite the skew.
    assert!(a.snapshot().nodes.iter().all(|n| n.has_view_key));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_links_partition_a_node_and_healing_brings_it_back() {
    let links = mesh::Links::default();
    let with_links = |mut c: MeshConfig| {
        c.links = links.clone();
        c
    };
    let a = node(with_links(config("a", &[]))).await;
    let b = node(with_links(config("b", &[a.gossip_addr()]))).await;
    let c = node(with_links(config("c", &[a.gossip_addr()]))).await;
    wait_until(Duration::from_secs(10), "converged", || async {
        [&a, &b, &c].iter().all(|h| alive_peers(h).len() == 2)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    links.cut(c.gossip_addr(), a.gossip_addr());
    links.cut(c.gossip_addr(), b.gossip_addr());
    wait_until(Duration::from_secs(6), "c is cut off", || async {
        alive_peers(&a) == ["b"] && alive_peers(&b) == ["a"] && alive_peers(&c).is_empty()
    })
    .await;
    assert!(c.transport_counters().cut > 0);
    links.heal_all();
    wait_until(Duration::from_secs(10), "c is back", || async {
        [&a, &b, &c].iter().all(|h| alive_peers(h).len() == 2)
    })
    .await;
}

#[tokio::test]
async fn config_validation_names_the_field() {
    let short = MeshConfig::new("a", common::loopback(), common::SECRET);
    let mut short = short;
    short.view_key_rotation = Duration::from_secs(3600);
    let err = Mesh::start(short).await.err().expect("refused");
    assert!(err.to_string().contains("view_key_rotation"), "{err}");

    let weak = MeshConfig::new("a", common::loopback(), b"short".to_vec());
    let err = Mesh::start(weak).await.err().expect("refused");
    assert!(err.to_string().contains("domain_secret"), "{err}");

    let wildcard = MeshConfig::new("a", "0.0.0.0:0".parse().expect("addr"), common::SECRET);
    assert!(wildcard.validate().is_err());

    let test_rotation = MeshConfig::new("a", common::loopback(), common::SECRET)
        .with_test_rotation(Duration::from_secs(1));
    assert!(test_rotation.validate().is_ok());
}

#[tokio::test]
async fn oversized_and_duplicate_member_sets_are_refused_and_change_nothing() {
    let a = node(config("a", &[])).await;
    let twice = vec![common::member("s"), common::member("s")];
    assert!(matches!(
        a.set_members(twice).await,
        Err(mesh::MeshError::DuplicateMember(s)) if s == "s"
    ));
    let mut huge = common::member("big");
    huge.archive.ts = (0..5_000).map(|i| (i * 10, i * 10 + 5)).collect();
    assert!(matches!(
        a.set_members(vec![huge]).await,
        Err(mesh::MeshError::StateTooLarge { .. })
    ));
    let s = a.snapshot();
    let own: Vec<_> = s.members.iter().map(|m| m.stream.as_str()).collect();
    assert_eq!(own, ["a-stream"]);
}
