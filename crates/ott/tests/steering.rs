//! Content Steering from the mesh (RFC 8216bis §7, OTT-PROT-1, OTT-CAP-1): which
//! pathway a viewer is told to use, and where it asks next.

mod common;

use std::collections::BTreeMap;

use common::*;
use ott::{choose_backups, steer, NodeId, SteeringManifest, ViewerContext, SILENT_AFTER_MS};
use proptest::prelude::*;

const VIEWER: ViewerContext = ViewerContext {
    public: true,
    https: true,
};

fn pathways(list: &[&str]) -> Vec<String> {
    list.iter().map(|p| (*p).to_owned()).collect()
}

fn order(snapshot: &ott::Snapshot, list: &[&str]) -> Vec<String> {
    steer(snapshot, GROUP, &pathways(list), VIEWER, NOW)
        .priority()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_healthy_mesh_keeps_the_viewers_order_and_asks_a_backup_next() {
    let s = snapshot("a", &["b", "c"]);
    let steering = steer(&s, GROUP, &pathways(&["a", "b", "c"]), VIEWER, NOW);
    assert_eq!(steering.priority(), ["a", "b", "c"]);
    assert!(steering.verdicts.iter().all(|v| v.problems.is_empty()));
    // The next request goes to a healthy node the viewer does not play from.
    assert_eq!(steering.reload.as_deref(), Some("https://b.example.net"));
    let json = SteeringManifest {
        ttl_s: ott::STEERING_TTL_S,
        reload_uri: Some("https://b.example.net/steering/meeting-1?p=a,b,c"),
        priority: steering.priority(),
    }
    .to_json();
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed["VERSION"], 1);
    assert_eq!(parsed["TTL"], 1);
    assert_eq!(
        parsed["RELOAD-URI"],
        "https://b.example.net/steering/meeting-1?p=a,b,c"
    );
    assert_eq!(
        parsed["PATHWAY-PRIORITY"],
        serde_json::json!(["a", "b", "c"])
    );
}

#[test]
fn a_silent_node_drops_to_the_end_and_is_not_asked_next() {
    let mut s = snapshot("b", &["a", "c"]);
    node_mut(&mut s, "a").silent_ms = SILENT_AFTER_MS + 1;
    let steering = steer(&s, GROUP, &pathways(&["a", "b", "c"]), VIEWER, NOW);
    assert_eq!(steering.priority(), ["b", "c", "a"]);
    assert_eq!(steering.verdicts[2].problems[0].code(), "unresponsive");
    // Plays from b: asks c next.
    assert_eq!(steering.reload.as_deref(), Some("https://c.example.net"));
    // Silent for less than the limit: still trusted.
    node_mut(&mut s, "a").silent_ms = SILENT_AFTER_MS;
    assert_eq!(order(&s, &["a", "b", "c"]), ["a", "b", "c"]);
}

/// Breaks one thing of a snapshot.
type Breakage = fn(&mut ott::Snapshot);

#[test]
fn dead_draining_paused_and_off_timeline_nodes_drop_to_the_end() {
    let base = snapshot("c", &["a", "b", "d"]);
    let cases: [(&str, Breakage); 4] = [
        ("node-down", |s| node_mut(s, "a").alive = false),
        ("draining", |s| node_mut(s, "a").draining = true),
        ("live-window-stale", |s| {
            member_mut(s, "a").live_window_at_ms = None;
        }),
        ("not-same-timeline", |s| {
            member_mut(s, "a").timeline_fingerprint = Some(FINGERPRINT + 1);
        }),
    ];
    for (code, break_it) in cases {
        let mut s = base.clone();
        break_it(&mut s);
        let steering = steer(&s, GROUP, &pathways(&["a", "b", "d"]), VIEWER, NOW);
        assert_eq!(steering.priority(), ["b", "d", "a"], "{code}");
        assert_eq!(steering.verdicts[2].problems[0].code(), code);
    }
    // A pathway no node of the mesh has is last too.
    assert_eq!(order(&base, &["x", "a", "b"]), ["a", "b", "x"]);
    // Without a majority, no node is off the timeline.
    let mut split = snapshot("a", &["b"]);
    member_mut(&mut split, "b").timeline_fingerprint = Some(FINGERPRINT + 1);
    assert_eq!(order(&split, &["a", "b"]), ["a", "b"]);
}

#[test]
fn overload_moves_a_backup_but_not_the_viewers_own_node() {
    let mut s = snapshot("c", &["a", "b"]);
    for name in ["a", "b"] {
        node_mut(&mut s, name).load.cpu_percent = 99;
    }
    assert_eq!(order(&s, &["a", "b", "c"]), ["a", "c", "b"]);
    // "Can substitute" off: the node serves its own viewers, nobody else's.
    let mut s = snapshot("c", &["a", "b"]);
    member_mut(&mut s, "b").can_substitute = false;
    member_mut(&mut s, "a").can_substitute = false;
    assert_eq!(order(&s, &["a", "b", "c"]), ["a", "c", "b"]);
}

#[test]
fn with_nothing_healthy_the_order_stays_and_the_viewer_asks_here_again() {
    let mut s = snapshot("c", &["a", "b"]);
    node_mut(&mut s, "a").alive = false;
    node_mut(&mut s, "b").alive = false;
    let steering = steer(&s, GROUP, &pathways(&["a", "b"]), VIEWER, NOW);
    assert_eq!(steering.priority(), ["a", "b"]);
    assert_eq!(steering.reload, None);
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("node-{i}")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A hung or draining node is never first for any viewer, whatever the mesh size,
    /// the viewer and the node the steering server runs on.
    #[test]
    fn a_hung_or_draining_node_is_never_first(
        n in 3usize..8,
        bad in 0usize..8,
        server in 0usize..8,
        hung in any::<bool>(),
        session in any::<u64>(),
    ) {
        let all = names(n);
        let (bad, server) = (bad % n, server % n);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let others: Vec<&str> = refs.iter().copied().filter(|&x| x != refs[server]).collect();
        let mut s = snapshot(refs[server], &others);
        let broken = if bad == server { &mut s.this } else { node_mut(&mut s, refs[bad]) };
        if hung { broken.silent_ms = SILENT_AFTER_MS * 2 } else { broken.draining = true }
        let ids: Vec<NodeId> = refs.iter().map(|x| id(x)).collect();
        // The viewer's own node is the bad one; its backups as the master chose them.
        let [b1, b2] = choose_backups(format!("v{session}").as_bytes(), &ids, &ids[bad]);
        let list: Vec<String> = std::iter::once(Some(ids[bad].clone()))
            .chain([b1, b2])
            .flatten()
            .map(|i| i.as_str().to_owned())
            .collect();
        let steering = steer(&s, GROUP, &list, VIEWER, NOW);
        prop_assert_ne!(steering.priority()[0], refs[bad]);
        prop_assert_eq!(*steering.priority().last().unwrap(), refs[bad]);
    }
}

/// OTT-CAP-1: the viewers of a hung node spread over the N−1 others, 1/(N−1) each.
#[test]
fn the_viewers_of_a_hung_node_spread_evenly_over_the_others() {
    const VIEWERS: usize = 20_000;
    for n in [3usize, 5] {
        let all = names(n);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let mut s = snapshot(refs[1], &[&[refs[0]], &refs[2..]].concat());
        node_mut(&mut s, refs[0]).silent_ms = SILENT_AFTER_MS * 4;
        let ids: Vec<NodeId> = refs.iter().map(|x| id(x)).collect();
        let mut firsts: BTreeMap<String, usize> = BTreeMap::new();
        for v in 0..VIEWERS {
            let [b1, b2] = choose_backups(format!("viewer-{v}").as_bytes(), &ids, &ids[0]);
            let list: Vec<String> = std::iter::once(Some(ids[0].clone()))
                .chain([b1, b2])
                .flatten()
                .map(|i| i.as_str().to_owned())
                .collect();
            let steering = steer(&s, GROUP, &list, VIEWER, NOW);
            *firsts.entry(steering.priority()[0].to_owned()).or_default() += 1;
        }
        assert_eq!(firsts.len(), n - 1, "{firsts:?}");
        let expected = 1.0 / (n - 1) as f64;
        for (node, count) in firsts {
            let share = count as f64 / VIEWERS as f64;
            assert!(
                (share - expected).abs() < 0.02,
                "{node}: {share:.3} of the viewers, expected {expected:.3}"
            );
        }
    }
}
