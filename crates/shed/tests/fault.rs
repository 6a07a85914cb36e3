//! FIT-1: fault-injection rules through the public API.

use std::collections::BTreeSet;
use std::time::Duration;

use shed::{
    Classifier, DeviceSet, DeviceType, FaultError, FaultRuleSpec, FaultRules, MemberId, Priority,
    RequestFacts, RouteKind,
};

fn p(v: u8) -> Priority {
    Priority::new(v).expect("in range")
}

fn secs(v: u64) -> Duration {
    Duration::from_secs(v)
}

fn spec(min: u8, max: u8) -> FaultRuleSpec {
    FaultRuleSpec {
        min_priority: p(min),
        max_priority: p(max),
        devices: None,
        members: None,
        share: 1.0,
        expires_at: secs(100),
    }
}

fn facts(route: RouteKind, device: DeviceType, member: Option<u64>) -> RequestFacts {
    RequestFacts {
        route,
        device,
        member: member.map(MemberId),
        in_playback: true,
    }
}

#[test]
fn one_member_one_device_sheds_only_their_requests_in_range() {
    let mut rules = FaultRules::new(8);
    let id = rules
        .add(
            FaultRuleSpec {
                devices: Some([DeviceType::SmartTv].into_iter().collect::<DeviceSet>()),
                members: Some(BTreeSet::from([MemberId(42)])),
                ..spec(30, 69)
            },
            secs(0),
        )
        .expect("added");
    let c = Classifier::default();
    let now = secs(10);
    let mut shed = 0;
    for route in RouteKind::ALL {
        for device in DeviceType::ALL {
            for member in [None, Some(42), Some(43)] {
                let f = facts(route, device, member);
                let prio = c.classify(&f).priority;
                let hit = rules.matches(&f, prio, now, 7);
                let expected = member == Some(42)
                    && device == DeviceType::SmartTv
                    && (30..=69).contains(&prio.get());
                assert_eq!(hit.is_some(), expected, "{f:?} priority {prio:?}");
                if expected {
                    assert_eq!(hit, Some(id));
                    shed += 1;
                }
            }
        }
    }
    assert!(
        shed > 0,
        "the degraded routes of member 42 on a TV were shed"
    );
    let listed: Vec<_> = rules.list(now).collect();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].injected(), shed);
}

#[test]
fn share_is_deterministic_per_member_and_close_to_the_target() {
    let mut rules = FaultRules::new(8);
    rules
        .add(
            FaultRuleSpec {
                share: 0.25,
                ..spec(0, 99)
            },
            secs(0),
        )
        .expect("added");
    let f = |m| facts(RouteKind::LiveSegment, DeviceType::Browser, Some(m));
    let hits = (0..10_000u64)
        .filter(|m| rules.matches(&f(*m), p(90), secs(1), 0).is_some())
        .count();
    assert!((2_200..=2_800).contains(&hits), "{hits} of 10000");
    for m in 0..200u64 {
        let first = rules.matches(&f(m), p(90), secs(1), 1).is_some();
        let again = rules.matches(&f(m), p(90), secs(2), 999).is_some();
        assert_eq!(first, again, "member {m} is consistently in or out");
    }
    // Anonymous requests are decided by the request hash instead.
    let anon = facts(RouteKind::LiveSegment, DeviceType::Browser, None);
    let anon_hits = (0..10_000u64)
        .filter(|h| rules.matches(&anon, p(90), secs(1), *h).is_some())
        .count();
    assert!((2_200..=2_800).contains(&anon_hits), "{anon_hits}");

    let mut none = FaultRules::new(1);
    none.add(
        FaultRuleSpec {
            share: 0.0,
            ..spec(0, 99)
        },
        secs(0),
    )
    .expect("added");
    assert!((0..1000u64).all(|m| none.matches(&f(m), p(90), secs(1), m).is_none()));
}

#[test]
fn rules_expire_by_the_passed_in_time() {
    let mut rules = FaultRules::new(2);
    rules.add(spec(0, 99), secs(0)).expect("added");
    let f = facts(RouteKind::Telemetry, DeviceType::Android, None);
    assert!(rules.matches(&f, p(20), secs(99), 0).is_some());
    assert!(rules.matches(&f, p(20), secs(100), 0).is_none());
    assert_eq!(rules.list(secs(100)).count(), 0);
    assert_eq!(
        rules.add(spec(0, 99), secs(100)).map(|_| ()),
        Err(FaultError::Invalid {
            key: "expires_at",
            reason: "is not in the future"
        })
    );
}

#[test]
fn cap_remove_and_validation() {
    let mut rules = FaultRules::new(2);
    let a = rules.add(spec(0, 9), secs(0)).expect("first");
    rules
        .add(
            FaultRuleSpec {
                expires_at: secs(5),
                ..spec(10, 19)
            },
            secs(0),
        )
        .expect("second");
    assert_eq!(
        rules.add(spec(20, 29), secs(1)).map(|_| ()),
        Err(FaultError::Full { cap: 2 })
    );
    // Once the second rule expires, its slot is free again.
    let c = rules
        .add(spec(20, 29), secs(5))
        .expect("slot freed by expiry");
    assert_ne!(a, c);
    let f = facts(RouteKind::Other, DeviceType::Unknown, None);
    assert_eq!(rules.matches(&f, p(5), secs(6), 0), Some(a));
    let removed = rules.remove(a).expect("removed");
    assert_eq!(removed.injected(), 1);
    assert_eq!(
        rules.remove(a).map(|_| ()),
        Err(FaultError::UnknownRule(a.0))
    );
    assert_eq!(rules.matches(&f, p(5), secs(6), 0), None);

    let bad = |s: FaultRuleSpec| match FaultRules::new(4).add(s, secs(0)) {
        Err(FaultError::Invalid { key, .. }) => key,
        other => panic!("expected invalid, got {other:?}"),
    };
    assert_eq!(bad(spec(50, 40)), "priorities");
    assert_eq!(
        bad(FaultRuleSpec {
            share: 1.5,
            ..spec(0, 1)
        }),
        "share"
    );
    assert_eq!(
        bad(FaultRuleSpec {
            share: f64::NAN,
            ..spec(0, 1)
        }),
        "share"
    );
    assert_eq!(
        bad(FaultRuleSpec {
            members: Some(BTreeSet::new()),
            ..spec(0, 1)
        }),
        "members"
    );
    assert_eq!(
        bad(FaultRuleSpec {
            devices: Some(DeviceSet::default()),
            ..spec(0, 1)
        }),
        "devices"
    );
}
