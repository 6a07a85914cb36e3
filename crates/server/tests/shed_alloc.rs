//! DESIGN invariant 5 at the HTTP edge: gathering a request's facts from its path and
//! headers and deciding (classify, shed curve, fault rules) never allocate, whether the
//! request is admitted, shed by overload or shed by a rule. A counting global allocator
//! records allocations made by this thread while the flag is on.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue};
use server::http::shed_layer::request_facts;
use server::shed::{member_id, Decision, ShedSettings, Shedder};
use shed::{FaultRuleSpec, OverloadLevel, Priority};

#[global_allocator]
static GLOBAL: alloc_count::Counting = alloc_count::Counting;

use alloc_count::count_allocs;

#[test]
fn facts_and_decision_do_not_allocate() {
    let (_, allocs) = count_allocs(|| std::hint::black_box(vec![1u8]));
    assert_eq!(allocs, 1, "the counter sees allocations");
    let shedder = Shedder::new(&ShedSettings::default()).expect("defaults");
    let mut headers = HeaderMap::new();
    headers.insert(
        "user-agent",
        HeaderValue::from_static("Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36"),
    );
    headers.insert("x-brdyun-member", HeaderValue::from_static("member-4711"));
    headers.insert("x-brdyun-playback", HeaderValue::from_static("1"));
    let mut tv = HeaderMap::new();
    tv.insert("x-brdyun-device", HeaderValue::from_static("smart_tv"));

    let paths = [
        "/s/seg-12.ts",
        "/s/mono.m3u8",
        "/s/index.m3u8",
        "/telemetry",
        "/api/node",
    ];
    // Admitted at level 0.
    for path in paths {
        for h in [&headers, &tv] {
            let (decision, allocs) = count_allocs(|| shedder.decide(&request_facts(path, h)));
            assert!(matches!(decision, Decision::Admit(_)), "{path}");
            assert_eq!(allocs, 0, "admit {path}");
        }
    }
    // Shed by overload.
    shedder.levels().force_level(Some(OverloadLevel::new(0.9)));
    let (decision, allocs) =
        count_allocs(|| shedder.decide(&request_facts("/telemetry", &headers)));
    assert!(matches!(
        decision,
        Decision::Shed {
            injected_by: None,
            ..
        }
    ));
    assert_eq!(allocs, 0, "overload shed");
    shedder.levels().force_level(None);

    // With fault rules present: walking them and injecting stays allocation-free.
    let spec = |members: Option<BTreeSet<_>>| FaultRuleSpec {
        min_priority: Priority::BOTTOM,
        max_priority: Priority::new(69).expect("in range"),
        devices: None,
        members,
        share: 1.0,
        expires_at: Duration::ZERO,
    };
    let other: BTreeSet<_> = member_id(b"someone-else").into_iter().collect();
    let rules = shedder.faults();
    rules
        .add(spec(Some(other)), Duration::from_secs(60), shedder.now())
        .expect("added");
    rules
        .add(spec(None), Duration::from_secs(60), shedder.now())
        .expect("added");
    for path in paths {
        let (decision, allocs) = count_allocs(|| shedder.decide(&request_facts(path, &headers)));
        // Telemetry (NON_CRITICAL) and the node's status (DEGRADED) are in the rule's
        // range; CRITICAL is above it.
        let expect_shed = matches!(path, "/telemetry" | "/api/node");
        assert_eq!(
            matches!(
                decision,
                Decision::Shed {
                    injected_by: Some(_),
                    ..
                }
            ),
            expect_shed,
            "{path}"
        );
        assert_eq!(allocs, 0, "with rules {path}");
    }
}
