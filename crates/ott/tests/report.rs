//! OTT-OPS-1: the group state of the Backups screen.

mod common;

use common::*;
use ott::{group_report, GroupState, Problem, Scheme};

#[test]
fn ops_1_three_healthy_nodes_are_protected() {
    let s = snapshot("a", &["b", "c"]);
    let r = group_report(&s, GROUP, NOW);
    assert_eq!(r.state, GroupState::Protected);
    assert_eq!(r.eligible_members, 3);
    let nodes: Vec<&str> = r.rows.iter().map(|row| row.node.as_str()).collect();
    assert_eq!(nodes, ["a", "b", "c"]);
    assert!(r.rows[0].this_node && !r.rows[1].this_node);
    assert!(r
        .rows
        .iter()
        .all(|row| row.same_timeline && row.can_substitute));
    assert_eq!(r.rows[1].live_window_age_ms, Some(2_000));
}

#[test]
fn ops_1_addr_2_a_node_with_only_private_addresses_is_a_problem() {
    let mut s = snapshot("a", &["b", "c"]);
    node_mut(&mut s, "c").addresses[0].public = false;
    let r = group_report(&s, GROUP, NOW);
    let GroupState::Problems(problems) = &r.state else {
        panic!("expected problems, got {:?}", r.state);
    };
    assert_eq!(problems, &[Problem::OnlyPrivateAddresses { node: id("c") }]);
    assert_eq!(
        problems[0].to_string(),
        "a node has only private addresses for backup (c)"
    );
    assert_eq!(r.eligible_members, 2, "still protected by b, but shown");
}

#[test]
fn ops_1_addr_3_an_https_node_needs_https_backups() {
    let mut s = snapshot("a", &["b"]);
    let b = node_mut(&mut s, "b");
    b.addresses[0].scheme = Scheme::Http;
    b.addresses[0].url_base = "http://b.example.net".into();
    let r = group_report(&s, GROUP, NOW);
    let GroupState::Problems(problems) = &r.state else {
        panic!("expected problems");
    };
    assert!(problems.contains(&Problem::NoHttpsAddress { node: id("b") }));
    assert!(problems.contains(&Problem::NotEnoughMembers {
        group: GROUP.into(),
        eligible: 1
    }));
    // The same node is fine for a node that serves only HTTP viewers.
    let a = &mut s.this;
    a.addresses[0].scheme = Scheme::Http;
    a.addresses[0].url_base = "http://a.example.net".into();
    assert_eq!(group_report(&s, GROUP, NOW).state, GroupState::Protected);
}

#[test]
fn ops_1_grp_5_and_clock_skew_show_as_problems_in_plain_words() {
    let mut s = snapshot("a", &["b", "c"]);
    node_mut(&mut s, "b").version = ott::Version::new(2, 1, 0, 100);
    node_mut(&mut s, "c").clock_offset_ms = -300_000;
    let r = group_report(&s, GROUP, NOW);
    let GroupState::Problems(problems) = &r.state else {
        panic!("expected problems");
    };
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "group meeting-1 has 1 eligible member(s), fewer than two: it is not protected",
            "node b runs version 2.1.0.100, older than the minimum compatible 2.1.0.456: its members accept no viewers",
            "the clock of node c differs from ours by -300000 ms, more than 240 s",
        ]
    );
    assert_eq!(r.rows[2].clock_offset_ms, -300_000);
}

#[test]
fn ops_2_a_paused_input_on_this_node_shows_and_costs_protection() {
    let mut s = snapshot("a", &["b"]);
    member_mut(&mut s, "a").live_window_at_ms = Some(NOW - 700_000);
    let r = group_report(&s, GROUP, NOW);
    assert!(!r.rows[0].eligible);
    assert_eq!(r.eligible_members, 1);
    assert!(
        matches!(&r.state, GroupState::Problems(p) if p.contains(&Problem::LiveWindowStale { node: id("a") }))
    );
}

#[test]
fn a_group_without_this_node_says_so() {
    let s = snapshot("a", &["b"]);
    let r = group_report(&s, "elsewhere", NOW);
    assert_eq!(
        r.state,
        GroupState::Problems(vec![
            Problem::NotInGroup {
                group: "elsewhere".into()
            },
            Problem::NotEnoughMembers {
                group: "elsewhere".into(),
                eligible: 0
            }
        ])
    );
    assert_eq!(s.own_groups(), [GROUP]);
}

#[test]
fn ops_1_addr_3_a_certificate_not_for_the_host_name_is_named_on_every_screen() {
    let mut s = snapshot("a", &["b", "c"]);
    s.this.certificate_mismatch = true;
    let mine = group_report(&s, GROUP, NOW);
    assert!(
        mine.rows[0]
            .problems
            .contains(&Problem::CertificateNotForHostname { node: id("a") }),
        "{:?}",
        mine.rows[0].problems
    );
    // Seen from b (which announces HTTPS: its viewers may use it), a is no backup, for
    // that reason.
    let mut from_b = snapshot("b", &["a", "c"]);
    assert!(from_b
        .this
        .addresses
        .iter()
        .any(|a| a.scheme == Scheme::Https));
    node_mut(&mut from_b, "a").certificate_mismatch = true;
    let theirs = group_report(&from_b, GROUP, NOW);
    let row = theirs
        .rows
        .iter()
        .find(|r| r.node.as_str() == "a")
        .expect("a's row");
    assert!(
        row.problems
            .contains(&Problem::CertificateNotForHostname { node: id("a") }),
        "{:?}",
        row.problems
    );
}

#[test]
fn ops_1_elig_3_each_members_languages_show_and_a_missing_one_is_named() {
    let mut s = snapshot("a", &["b", "c"]);
    let spoken = |list: &[&str]| list.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>();
    for member in &mut s.members {
        member.languages = match member.node.as_str() {
            "c" => spoken(&["eng"]),
            _ => spoken(&["eng", "spa"]),
        };
    }
    let r = group_report(&s, GROUP, NOW);
    let languages: Vec<&[String]> = r.rows.iter().map(|row| row.languages.as_slice()).collect();
    assert_eq!(
        languages,
        [
            &spoken(&["eng", "spa"])[..],
            &spoken(&["eng", "spa"]),
            &spoken(&["eng"])
        ]
    );
    let GroupState::Problems(problems) = &r.state else {
        panic!("expected problems, got {:?}", r.state);
    };
    let missing = Problem::LanguageMissing {
        node: id("c"),
        language: "spa".into(),
    };
    assert_eq!(problems, std::slice::from_ref(&missing));
    assert_eq!(missing.code(), "language-missing");
    assert!(!r.rows[2].eligible && r.rows[1].eligible);
    assert_eq!(r.eligible_members, 2, "a and b keep the group protected");
}
