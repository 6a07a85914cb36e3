//! DESIGN invariant 5: classify + admit (and rendering the back-pressure answer) never
//! allocate. A counting global allocator records allocations made by this thread
//! while the flag is on.

use std::time::Duration;

use shed::{
    BackPressure, Classifier, DeviceType, FaultRuleSpec, FaultRules, MemberId, OverloadLevel,
    Priority, RequestFacts, RouteKind, ShedCurve,
};

#[global_allocator]
static GLOBAL: alloc_count::Counting = alloc_count::Counting;

use alloc_count::count_allocs;

#[test]
fn the_request_path_does_not_allocate() {
    let classifier = Classifier::default();
    let curve = ShedCurve;
    let bp = BackPressure::default();
    let mut rules = FaultRules::new(8);
    rules
        .add(
            FaultRuleSpec {
                min_priority: Priority::BOTTOM,
                max_priority: Priority::TOP,
                devices: None,
                members: Some([MemberId(3)].into()),
                share: 0.5,
                expires_at: Duration::from_secs(60),
            },
            Duration::ZERO,
        )
        .expect("added");
    let uas = [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
        "Lavf/60.16.100",
        "",
    ];
    // Sanity: the counter does see allocations.
    assert!(count_allocs(|| drop(std::hint::black_box(vec![1u8; 16]))).1 > 0);

    let mut admitted = 0u32;
    let mut body_len = 0usize;
    let (_, n) = count_allocs(|| {
        for i in 0..10_000u64 {
            let facts = RequestFacts {
                route: RouteKind::ALL[(i % 12) as usize],
                device: DeviceType::from_user_agent(uas[(i % 3) as usize]),
                member: (i % 2 == 0).then_some(MemberId(i % 5)),
                in_playback: i % 3 == 0,
            };
            let c = classifier.classify(&facts);
            let level = OverloadLevel::new((i % 101) as f64 / 100.0);
            let injected = rules.matches(&facts, c.priority, Duration::from_secs(1), i);
            if injected.is_none() && curve.admit(c.priority, level) {
                admitted += 1;
            } else {
                body_len += bp.answer(c.priority, level, i).json().as_bytes().len();
            }
        }
    });
    assert_eq!(n, 0, "allocations on the request path");
    assert!(admitted > 0 && body_len > 0, "both paths were exercised");
}
