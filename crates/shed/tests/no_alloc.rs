//! DESIGN invariant 5: classify + admit (and rendering the back-pressure answer) never
//! allocate. A counting global allocator records allocations made by this thread
//! while the flag is on.
//!
//! `unsafe` is needed only to implement `GlobalAlloc` in this test binary; it forwards
//! to the system allocator unchanged.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use shed::{
    BackPressure, Classifier, DeviceType, FaultRuleSpec, FaultRules, MemberId, OverloadLevel,
    Priority, RequestFacts, RouteKind, ShedCurve,
};

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is forwarded to `System` with the same arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn count_allocs(f: impl FnOnce()) -> u64 {
    ALLOCS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCS.with(Cell::get)
}

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
    assert!(count_allocs(|| drop(std::hint::black_box(vec![1u8; 16]))) > 0);

    let mut admitted = 0u32;
    let mut body_len = 0usize;
    let n = count_allocs(|| {
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
