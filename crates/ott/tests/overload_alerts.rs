//! OTT-OVL-1..3 (invariant 4) and alerts 70/78/79 (OTT-OPS-3) with hysteresis.

mod common;

use common::*;
use ott::{
    admit_backup_viewer, group_report, Admit, AlertChange, AlertCode, AlertKind, AlertState,
    Observations, Overload,
};

#[test]
fn ovl_1_and_2_pass_viewers_are_refused_above_thresholds_own_viewers_never() {
    let mut n = node("a");
    assert_eq!(admit_backup_viewer(&n, true), Admit::Accept);
    n.load.cpu_percent = 85;
    assert_eq!(
        admit_backup_viewer(&n, true),
        Admit::Accept,
        "at the threshold is fine"
    );
    n.load.cpu_percent = 86;
    assert_eq!(admit_backup_viewer(&n, true), Admit::Refuse(Overload::Cpu));
    assert_eq!(admit_backup_viewer(&n, false), Admit::Accept, "OTT-OVL-2");
    let mut n = node("a");
    n.load.net_percent = 99;
    assert_eq!(
        admit_backup_viewer(&n, true),
        Admit::Refuse(Overload::Network)
    );
    assert_eq!(admit_backup_viewer(&n, false), Admit::Accept);
    let mut n = node("a");
    n.load.backup_sessions = 999;
    assert_eq!(admit_backup_viewer(&n, true), Admit::Accept);
    n.load.backup_sessions = 1000;
    assert_eq!(
        admit_backup_viewer(&n, true),
        Admit::Refuse(Overload::SessionLimit)
    );
    assert_eq!(admit_backup_viewer(&n, false), Admit::Accept);
    n.thresholds.backup_session_limit = None;
    assert_eq!(admit_backup_viewer(&n, true), Admit::Accept, "no limit set");
}

proptest::proptest! {
    /// Invariant 4: whatever the load, own viewers are admitted.
    #[test]
    fn ovl_2_own_viewers_are_never_refused(cpu: u8, net: u8, sessions: u32, limit: Option<u32>) {
        let mut n = node("a");
        n.load.cpu_percent = cpu;
        n.load.net_percent = net;
        n.load.backup_sessions = sessions;
        n.thresholds.backup_session_limit = limit;
        proptest::prop_assert_eq!(admit_backup_viewer(&n, false), Admit::Accept);
    }
}

fn tick(state: &mut AlertState, at: i64, refusals: u64) -> Vec<AlertChange> {
    state.update(
        at,
        Observations {
            refusals_total: refusals,
            groups: &[],
        },
    )
}

#[test]
fn ovl_3_alert_79_after_refusals_lasting_more_than_30_s() {
    let mut state = AlertState::new();
    let mut refusals = 0;
    assert!(tick(&mut state, NOW, refusals).is_empty());
    // One refusal a second from NOW + 1 s.
    let mut raised_at = None;
    for s in 1..=40 {
        refusals += 1;
        let changes = tick(&mut state, NOW + s * 1000, refusals);
        if let Some(c) = changes.first() {
            assert_eq!(c.key.code, AlertCode::Overload);
            assert_eq!(c.key.code.number(), 79);
            assert_eq!(c.key.code.name(), "reserve-ott-overload");
            assert_eq!(c.kind, AlertKind::Raised);
            raised_at.get_or_insert(s);
        }
    }
    assert_eq!(
        raised_at,
        Some(32),
        "first refusal at 1 s, more than 30 s at 32 s"
    );
    assert_eq!(state.active().len(), 1);
    // Refusals stop at 40 s: still "refusing" until 50 s, cleared 60 s after that.
    let mut cleared_at = None;
    for s in 41..=200 {
        if let Some(c) = tick(&mut state, NOW + s * 1000, refusals).first() {
            assert_eq!(c.kind, AlertKind::Cleared);
            cleared_at.get_or_insert(s);
        }
    }
    assert_eq!(cleared_at, Some(111));
    assert!(state.active().is_empty());
}

#[test]
fn ovl_3_short_refusal_bursts_do_not_raise_79() {
    let mut state = AlertState::new();
    let mut refusals = 0;
    for s in 0..300 {
        // 20 s of refusals, then 40 s of quiet, repeated.
        if s % 60 < 20 {
            refusals += 1;
        }
        assert!(
            tick(&mut state, NOW + s * 1000, refusals).is_empty(),
            "at {s}"
        );
    }
}

#[test]
fn ops_3_alert_70_when_a_group_loses_its_protection_with_hysteresis() {
    let mut s = snapshot("a", &["b"]);
    let mut state = AlertState::new();
    let run = |state: &mut AlertState, s: &ott::Snapshot, at: i64| {
        let reports = [group_report(s, GROUP, at)];
        state.update(
            at,
            Observations {
                refusals_total: 0,
                groups: &reports,
            },
        )
    };
    assert!(run(&mut state, &s, NOW).is_empty());
    node_mut(&mut s, "b").alive = false;
    let mut raised = Vec::new();
    for t in 1..=40 {
        for c in run(&mut state, &s, NOW + t * 1000) {
            raised.push((t, c.key.code.number(), c.kind));
        }
    }
    // 70 after 10 s unprotected; 78 (node b down) after 30 s.
    assert_eq!(
        raised,
        [(11, 70, AlertKind::Raised), (31, 78, AlertKind::Raised)]
    );
    // b comes back for 5 s and flaps away again: nothing clears.
    node_mut(&mut s, "b").alive = true;
    for t in 41..=45 {
        assert!(run(&mut state, &s, NOW + t * 1000).is_empty());
    }
    node_mut(&mut s, "b").alive = false;
    assert!(run(&mut state, &s, NOW + 46_000).is_empty());
    // Back for good: 70 clears after 30 s, 78 after 60 s.
    node_mut(&mut s, "b").alive = true;
    let mut cleared = Vec::new();
    for t in 47..=120 {
        for c in run(&mut state, &s, NOW + t * 1000) {
            cleared.push((t, c.key.code.number(), c.kind));
        }
    }
    assert_eq!(
        cleared,
        [(77, 70, AlertKind::Cleared), (107, 78, AlertKind::Cleared)]
    );
}

#[test]
fn ops_3_alert_78_names_the_member_and_its_problem() {
    let mut s = snapshot("a", &["b", "c"]);
    node_mut(&mut s, "c").version = ott::Version::new(2, 0, 2, 0);
    let reports = [group_report(&s, GROUP, NOW)];
    let mut state = AlertState::new();
    let obs = Observations {
        refusals_total: 0,
        groups: &reports,
    };
    assert!(state.update(NOW, obs).is_empty());
    let changes = state.update(NOW + 30_000, obs);
    assert_eq!(changes.len(), 1, "{changes:?}");
    let c = &changes[0];
    assert_eq!(c.key.code.number(), 78);
    assert_eq!(c.key.code.name(), "reserve-ott-problem");
    assert_eq!(c.key.group.as_deref(), Some(GROUP));
    assert_eq!(c.key.node, Some(id("c")));
    assert!(
        c.summary
            .contains("older than the minimum compatible 2.1.0.456"),
        "{}",
        c.summary
    );
    // An overloaded member is alert 79's business, not 78's.
    let mut s = snapshot("a", &["b", "c"]);
    node_mut(&mut s, "c").load.cpu_percent = 100;
    let reports = [group_report(&s, GROUP, NOW)];
    let mut state = AlertState::new();
    for t in 0..100 {
        let obs = Observations {
            refusals_total: 0,
            groups: &reports,
        };
        assert!(state.update(NOW + t * 1000, obs).is_empty());
    }
}
