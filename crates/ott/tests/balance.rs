//! OTT-GRP-2, OTT-CAP-1: balanced backup choice by rendezvous hashing.

use std::collections::BTreeMap;

use ott::{choose_backups, NodeId};
use proptest::prelude::*;

const SESSIONS: u64 = 100_000;

fn nodes(n: usize) -> Vec<NodeId> {
    (0..n)
        .map(|i| NodeId::new(format!("node-{i}@1764500000")))
        .collect()
}

/// Shares of the failed node's viewers that each survivor receives, when each viewer
/// moves to its first backup.
fn spread(n: usize, failed: usize) -> BTreeMap<NodeId, f64> {
    let all = nodes(n);
    let mut counts: BTreeMap<NodeId, u64> = BTreeMap::new();
    for s in 0..SESSIONS {
        let session = format!("viewer-{s}-of-{failed}");
        let [first, _] = choose_backups(session.as_bytes(), &all, &all[failed]);
        *counts
            .entry(first.expect("N >= 2 gives a first backup"))
            .or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(id, c)| (id, c as f64 / SESSIONS as f64))
        .collect()
}

#[test]
fn cap_1_each_survivor_gets_1_over_n_minus_1_of_a_failed_nodes_viewers() {
    for n in [2usize, 3, 5] {
        let expected = 1.0 / (n as f64 - 1.0);
        for failed in 0..n {
            let shares = spread(n, failed);
            assert_eq!(
                shares.len(),
                n - 1,
                "every survivor receives viewers (N={n})"
            );
            assert!(!shares.contains_key(&nodes(n)[failed]));
            for (node, share) in &shares {
                // ±2 % of 1/(N−1), relative: the stricter reading of the requirement.
                assert!(
                    (share - expected).abs() <= 0.02 * expected,
                    "N={n}, failed node {failed}: {node} got {share:.4}, expected {expected:.4}"
                );
                eprintln!("N={n} failed={failed} {node}: {share:.4} (1/(N-1) = {expected:.4})");
            }
        }
    }
}

#[test]
fn ovl_3_when_the_first_backup_refuses_the_second_backups_spread_evenly_too() {
    // N = 5, node 0 fails and node 1 refuses: viewers of 0 whose first backup is 1 go
    // to their second, spread over nodes 2, 3 and 4.
    let all = nodes(5);
    let mut counts: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut moved = 0u64;
    for s in 0..SESSIONS {
        let session = format!("viewer-{s}");
        let [first, second] = choose_backups(session.as_bytes(), &all, &all[0]);
        if first.as_ref() == Some(&all[1]) {
            moved += 1;
            *counts
                .entry(second.expect("N = 5 gives two backups"))
                .or_default() += 1;
        }
    }
    assert_eq!(counts.len(), 3);
    for (node, c) in counts {
        let share = c as f64 / moved as f64;
        assert!((share - 1.0 / 3.0).abs() < 0.02, "{node}: {share:.4}");
    }
}

#[test]
fn grp_2_two_nodes_each_is_the_others_only_backup() {
    let all = nodes(2);
    let backups = choose_backups(b"viewer", &all, &all[0]);
    assert_eq!(backups, [Some(all[1].clone()), None]);
    assert_eq!(choose_backups(b"viewer", &[], &all[0]), [None, None]);
    assert_eq!(choose_backups(b"viewer", &all[..1], &all[0]), [None, None]);
}

proptest! {
    /// The two backups are distinct and never the viewer's own node; there are two
    /// whenever two other nodes are eligible.
    #[test]
    fn grp_2_backups_are_distinct_and_never_self(
        session in proptest::collection::vec(any::<u8>(), 0..32),
        n in 1usize..8,
        self_index in 0usize..8,
        duplicates in proptest::collection::vec(0usize..8, 0..4),
    ) {
        let mut eligible = nodes(n);
        for d in duplicates {
            if let Some(id) = eligible.get(d % n).cloned() {
                eligible.push(id);
            }
        }
        let me = NodeId::new(format!("node-{self_index}@1764500000"));
        let [a, b] = choose_backups(&session, &eligible, &me);
        prop_assert!(a.as_ref() != Some(&me));
        prop_assert!(b.as_ref() != Some(&me));
        if a.is_some() && b.is_some() {
            prop_assert!(a != b);
        }
        let others = nodes(n).into_iter().filter(|id| *id != me).count();
        prop_assert_eq!(a.is_some(), others >= 1);
        prop_assert_eq!(b.is_some(), others >= 2);
        prop_assert!(b.is_none() || a.is_some());
    }

    /// Removing a node that was not chosen changes nothing; order does not matter.
    #[test]
    fn grp_2_the_choice_is_stable(
        session in proptest::collection::vec(any::<u8>(), 0..32),
        n in 3usize..8,
        removed in 0usize..8,
    ) {
        let all = nodes(n);
        let me = &all[0];
        let before = choose_backups(&session, &all, me);
        let mut reversed = all.clone();
        reversed.reverse();
        prop_assert_eq!(&choose_backups(&session, &reversed, me), &before);
        let gone = &all[removed % n];
        if before.iter().flatten().all(|b| b != gone) {
            let rest: Vec<NodeId> = all.iter().filter(|id| *id != gone).cloned().collect();
            prop_assert_eq!(choose_backups(&session, &rest, me), before);
        }
    }
}
