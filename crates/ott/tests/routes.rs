//! OTT-GRP-2, OTT-PROT-2/3/4, OTT-ARCH-1/2: where viewers are sent.

mod common;

use common::*;
use ott::{
    archive_target, backups_for_viewer, eligible_backups, redirect_target, ArchiveDecision,
    ArchiveRanges, Problem, Protocol, Transport, ViewerContext,
};

const VIEWER: ViewerContext = ViewerContext {
    public: true,
    https: true,
};

#[test]
fn grp_2_a_viewer_gets_two_distinct_eligible_backups_at_their_addresses() {
    let s = snapshot("a", &["b", "c", "d"]);
    let backups = backups_for_viewer(&s, GROUP, VIEWER, b"viewer-1", NOW);
    assert_eq!(backups.len(), 2);
    assert_ne!(backups[0].node, backups[1].node);
    for t in &backups {
        assert_ne!(t.node, id("a"));
        assert_eq!(t.url_base, format!("https://{}.example.net", t.node));
        assert_eq!(t.stream, "live");
    }
}

#[test]
fn grp_2_ineligible_and_unreachable_nodes_are_never_backups() {
    let mut s = snapshot("a", &["b", "c", "d"]);
    member_mut(&mut s, "b").timeline_fingerprint = Some(1);
    node_mut(&mut s, "c").addresses[0].public = false;
    assert_eq!(eligible_backups(&s, GROUP, NOW), [id("c"), id("d")]);
    for session in 0..200u32 {
        let backups = backups_for_viewer(&s, GROUP, VIEWER, &session.to_be_bytes(), NOW);
        let nodes: Vec<_> = backups.iter().map(|t| t.node.clone()).collect();
        assert_eq!(
            nodes,
            [id("d")],
            "b: other timeline; c: private for a public viewer"
        );
    }
    let private = ViewerContext {
        public: false,
        https: true,
    };
    assert_eq!(backups_for_viewer(&s, GROUP, private, b"v", NOW).len(), 2);
    assert!(backups_for_viewer(&s, "other-group", VIEWER, b"v", NOW).is_empty());
}

#[test]
fn prot_2_a_stream_not_working_here_redirects_to_a_servable_node() {
    let mut s = snapshot("a", &["b", "c"]);
    member_mut(&mut s, "a").live_window_at_ms = Some(NOW - 3_600_000);
    member_mut(&mut s, "b").can_substitute = false;
    // c is on another timeline: a fresh viewer does not care (OTT-PROT-2).
    member_mut(&mut s, "c").timeline_fingerprint = Some(42);
    let target = redirect_target(&s, GROUP, Protocol::Hls, VIEWER, b"v", NOW).expect("c");
    assert_eq!(target.node, id("c"));
    assert_eq!(
        target.location("index.m3u8", "PASS"),
        "https://c.example.net/live/index.m3u8?pass=PASS"
    );
}

#[test]
fn prot_4_dash_and_ll_hls_redirects_need_an_fmp4_member() {
    let mut s = snapshot("a", &["b", "c"]);
    member_mut(&mut s, "b")
        .ladder
        .retain(|r| r.transport == Transport::Ts);
    for protocol in [Protocol::Dash, Protocol::LlHls] {
        for session in 0..50u32 {
            let t = redirect_target(&s, GROUP, protocol, VIEWER, &session.to_be_bytes(), NOW)
                .expect("c packages fMP4");
            assert_eq!(t.node, id("c"));
        }
    }
}

#[test]
fn prot_2_no_target_lists_every_members_problem() {
    let mut s = snapshot("a", &["b", "c"]);
    node_mut(&mut s, "b").alive = false;
    node_mut(&mut s, "c").clock_offset_ms = 300_000;
    let err = redirect_target(&s, GROUP, Protocol::Hls, VIEWER, b"v", NOW).expect_err("none");
    assert_eq!(
        err.problems,
        [
            Problem::NodeDown { node: id("b") },
            Problem::ClockSkew {
                node: id("c"),
                offset_ms: 300_000
            }
        ]
    );
}

#[test]
fn prot_2_redirects_spread_over_servable_nodes() {
    let s = snapshot("a", &["b", "c"]);
    let mut to_b = 0;
    for session in 0..2000u32 {
        let t = redirect_target(
            &s,
            GROUP,
            Protocol::Hls,
            VIEWER,
            &session.to_be_bytes(),
            NOW,
        )
        .expect("b or c");
        to_b += usize::from(t.node == id("b"));
    }
    assert!((900..1100).contains(&to_b), "{to_b}");
}

const HOUR: i64 = 3_600_000;

fn archives(s: &mut ott::Snapshot, name: &str, ts: &[(i64, i64)], fmp4: &[(i64, i64)]) {
    member_mut(s, name).archive = ArchiveRanges {
        ts: ts.to_vec(),
        fmp4: fmp4.to_vec(),
    };
}

#[test]
fn arch_2_a_period_inside_the_own_range_is_served_here_gaps_included() {
    let mut s = snapshot("a", &["b"]);
    // a recorded 0–1 h and 2–3 h (a gap between); b has 0–3 h without gap.
    archives(&mut s, "a", &[(0, HOUR), (2 * HOUR, 3 * HOUR)], &[]);
    archives(&mut s, "b", &[(0, 3 * HOUR)], &[]);
    let d = archive_target(&s, GROUP, Protocol::Hls, HOUR, 2 * HOUR, VIEWER, NOW);
    assert_eq!(d, ArchiveDecision::ServeHere);
}

#[test]
fn prot_3_arch_2_the_node_with_the_largest_part_gets_the_request() {
    let mut s = snapshot("a", &["b", "c"]);
    archives(&mut s, "a", &[(5 * HOUR, 6 * HOUR)], &[]);
    archives(&mut s, "b", &[(HOUR, 6 * HOUR)], &[]);
    archives(&mut s, "c", &[(0, 6 * HOUR)], &[]);
    // Period 0–3 h: a holds none, b 2 h, c 3 h.
    match archive_target(&s, GROUP, Protocol::Hls, 0, 3 * HOUR, VIEWER, NOW) {
        ArchiveDecision::Redirect(t) => {
            assert_eq!(t.node, id("c"));
            assert_eq!(t.url_base, "https://c.example.net");
        }
        other => panic!("expected a redirect to c, got {other:?}"),
    }
    // c cannot take a viewer with a pass (no view key): b, the next largest.
    node_mut(&mut s, "c").has_view_key = false;
    match archive_target(&s, GROUP, Protocol::Hls, 0, 3 * HOUR, VIEWER, NOW) {
        ArchiveDecision::Redirect(t) => assert_eq!(t.node, id("b")),
        other => panic!("expected a redirect to b, got {other:?}"),
    }
    // A stale live window does not matter for the archive.
    member_mut(&mut s, "b").live_window_at_ms = None;
    assert!(matches!(
        archive_target(&s, GROUP, Protocol::Hls, 0, 3 * HOUR, VIEWER, NOW),
        ArchiveDecision::Redirect(t) if t.node == id("b")
    ));
}

#[test]
fn arch_1_a_packages_catch_up_goes_to_a_member_that_recorded_the_same_ladder() {
    let mut s = snapshot("a", &["b", "c"]);
    let ladder = vec![
        rung("h264", 600_000),
        rung("h264", 400_000),
        rung("h264", 250_000),
    ];
    member_mut(&mut s, "a").ladder = ladder.clone();
    member_mut(&mut s, "c").ladder = ladder;
    // b recorded the source alone (one rung) but all of 0–3 h; c the ladder, 1–3 h.
    archives(&mut s, "b", &[(0, 3 * HOUR)], &[]);
    archives(&mut s, "c", &[(HOUR, 3 * HOUR)], &[]);
    match archive_target(&s, GROUP, Protocol::Hls, 0, 3 * HOUR, VIEWER, NOW) {
        ArchiveDecision::Redirect(t) => assert_eq!(t.node, id("c"), "the same ladder first"),
        other => panic!("expected a redirect to c, got {other:?}"),
    }
    // Nobody with the ladder holds 0–1 h: the source alone is better than nothing.
    match archive_target(&s, GROUP, Protocol::Hls, 0, HOUR, VIEWER, NOW) {
        ArchiveDecision::Redirect(t) => assert_eq!(t.node, id("b")),
        other => panic!("expected a redirect to b, got {other:?}"),
    }
}

#[test]
fn arch_2_this_node_keeps_a_request_it_holds_the_most_of() {
    let mut s = snapshot("a", &["b"]);
    archives(&mut s, "a", &[(2 * HOUR, 6 * HOUR)], &[]);
    archives(&mut s, "b", &[(0, 3 * HOUR)], &[]);
    // 1–5 h: a holds 3 h, b 2 h.
    let d = archive_target(&s, GROUP, Protocol::Hls, HOUR, 5 * HOUR, VIEWER, NOW);
    assert_eq!(d, ArchiveDecision::ServeHere);
    // Nobody has 10–11 h.
    let d = archive_target(&s, GROUP, Protocol::Hls, 10 * HOUR, 11 * HOUR, VIEWER, NOW);
    assert_eq!(d, ArchiveDecision::NotRecorded);
}

#[test]
fn arch_1_the_archive_of_the_requests_protocol_counts() {
    let mut s = snapshot("a", &["b"]);
    // a has MPEG-TS for the period, b only fMP4.
    archives(&mut s, "a", &[(0, 2 * HOUR)], &[]);
    archives(&mut s, "b", &[], &[(0, 2 * HOUR)]);
    let hls = archive_target(&s, GROUP, Protocol::Hls, 0, HOUR, VIEWER, NOW);
    assert_eq!(hls, ArchiveDecision::ServeHere);
    for protocol in [Protocol::Dash, Protocol::LlHls] {
        match archive_target(&s, GROUP, protocol, 0, HOUR, VIEWER, NOW) {
            ArchiveDecision::Redirect(t) => assert_eq!(t.node, id("b")),
            other => panic!("{protocol:?}: expected b, got {other:?}"),
        }
    }
}

proptest::proptest! {
    /// The archive choice never redirects to a node holding less than this node,
    /// and never panics on hostile ranges.
    #[test]
    fn arch_2_never_redirects_to_a_smaller_part(
        own in proptest::collection::vec((any_ms(), any_ms()), 0..3),
        other in proptest::collection::vec((any_ms(), any_ms()), 0..3),
        from in any_ms(),
        to in any_ms(),
    ) {
        let mut s = snapshot("a", &["b"]);
        archives(&mut s, "a", &own, &[]);
        archives(&mut s, "b", &other, &[]);
        let part = |ranges: &ArchiveRanges| ranges.span(Transport::Ts).map_or(0i128, |(a, b)| {
            let (lo, hi) = (i128::from(from.min(to)), i128::from(from.max(to)));
            (hi.min(i128::from(b)) - lo.max(i128::from(a))).max(0)
        });
        let decision = archive_target(&s, GROUP, Protocol::Hls, from, to, VIEWER, NOW);
        if let ArchiveDecision::Redirect(t) = decision {
            proptest::prop_assert_eq!(t.node, id("b"));
            let own_part = part(&member_mut(&mut s, "a").archive.clone());
            let b_part = part(&member_mut(&mut s, "b").archive.clone());
            proptest::prop_assert!(b_part >= own_part);
        }
    }
}

fn any_ms() -> impl proptest::strategy::Strategy<Value = i64> {
    proptest::prop_oneof![-10i64..10, proptest::num::i64::ANY, 0..10 * HOUR]
}

proptest::proptest! {
    /// Whatever is broken in the mesh, every backup handed to a viewer is an eligible
    /// node at an address that viewer may use, and a redirect target is up, has the
    /// view key and a sane clock (OTT-GRP-2, OTT-ADDR-2/3, OTT-PROT-2).
    #[test]
    fn every_backup_and_redirect_obeys_the_rules(
        breaks in proptest::collection::vec((0usize..4, 0u8..10), 0..8),
        public: bool,
        https: bool,
        session in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..16),
    ) {
        let names = ["b", "c", "d", "e"];
        let mut s = snapshot("a", &names);
        for (which, what) in breaks {
            let name = names[which];
            match what {
                0 => node_mut(&mut s, name).alive = false,
                1 => node_mut(&mut s, name).clock_offset_ms = 241_000,
                2 => node_mut(&mut s, name).has_view_key = false,
                3 => node_mut(&mut s, name).load.cpu_percent = 99,
                4 => node_mut(&mut s, name).addresses[0].public = false,
                5 => {
                    let n = node_mut(&mut s, name);
                    n.addresses[0].scheme = ott::Scheme::Http;
                    n.addresses[0].url_base = format!("http://{name}.example.net");
                }
                6 => member_mut(&mut s, name).timeline_fingerprint = None,
                7 => member_mut(&mut s, name).can_substitute = false,
                8 => member_mut(&mut s, name).live_window_at_ms = Some(NOW - 3_600_000),
                _ => node_mut(&mut s, name).version = ott::Version::new(1, 0, 0, 0),
            }
        }
        let viewer = ViewerContext { public, https };
        let eligible = eligible_backups(&s, GROUP, NOW);
        let backups = backups_for_viewer(&s, GROUP, viewer, &session, NOW);
        proptest::prop_assert!(backups.len() <= 2);
        for t in &backups {
            proptest::prop_assert!(eligible.contains(&t.node));
            let node = s.node(&t.node).expect("a known node");
            proptest::prop_assert_eq!(ott::backup_address(node, viewer), Ok(t.url_base.clone()));
            proptest::prop_assert!(!https || t.url_base.starts_with("https://"));
        }
        if let Ok(t) = redirect_target(&s, GROUP, Protocol::Hls, viewer, &session, NOW) {
            let node = s.node(&t.node).expect("a known node");
            let member = s.members.iter().find(|m| m.node == t.node).expect("its member");
            proptest::prop_assert!(
                ott::servable_problems(node, member, NOW, s.min_version).is_empty()
            );
        }
        // The report agrees: protected means no problem and two eligible members.
        let report = ott::group_report(&s, GROUP, NOW);
        let protected = report.state == ott::GroupState::Protected;
        proptest::prop_assert_eq!(
            protected,
            report.eligible_members >= 2 && report.rows.iter().all(|r| r.problems.is_empty())
        );
    }
}
