//! Times the request-path decisions and prints the cost per operation, so the figures
//! can be quoted (goal < 200 ns, DESIGN invariant 5; allocation-free is checked by
//! `tests/no_alloc.rs`). Run with `cargo run -p shed --release --example admit_cost`.
//!
//! Four measurements over the same rotating set of 64 requests and 101 levels:
//! 1. classify + shed curve (the admit decision, no fault rule);
//! 2. User-Agent parsing + 1 (device from a real UA, as the layer does without a
//!    device header);
//! 3. 1 + fault-rule matching against 8 active rules (member and device scoped, the
//!    worst case the admin API allows is the cap, 32 by default);
//! 4. 3 + the back-pressure answer (dials and the JSON body rendered on the stack) for
//!    every request that is refused.

use std::hint::black_box;
use std::time::{Duration, Instant};

use shed::{
    BackPressure, Classifier, DeviceSet, DeviceType, FaultRuleSpec, FaultRules, MemberId,
    OverloadLevel, Priority, RequestFacts, RouteKind, ShedCurve,
};

const N: u64 = 10_000_000;

const UAS: [&str; 4] = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) 85.0.4183.93/6.0 TV Safari/537.36",
    "Lavf/60.16.100",
];

fn report(name: &str, elapsed: Duration, extra: &str) {
    let ns = elapsed.as_nanos() as f64 / N as f64;
    println!(
        "{name:<44} {ns:>7.2} ns/op  ({N} ops in {:.3} s{extra})",
        elapsed.as_secs_f64()
    );
}

fn main() {
    let classifier = Classifier::default();
    let curve = ShedCurve;
    let back_pressure = BackPressure::default();
    let facts: Vec<RequestFacts> = (0..64u64)
        .map(|i| RequestFacts {
            route: RouteKind::ALL[(i % 12) as usize],
            device: DeviceType::ALL[(i % 6) as usize],
            member: (i % 2 == 0).then_some(MemberId(i)),
            in_playback: i % 3 == 0,
        })
        .collect();
    let levels: Vec<OverloadLevel> = (0..=100)
        .map(|i| OverloadLevel::new(f64::from(i) / 100.0))
        .collect();
    let mut rules = FaultRules::new(32);
    for r in 0..8u64 {
        let spec = FaultRuleSpec {
            min_priority: Priority::new((r * 10) as u8).expect("in range"),
            max_priority: Priority::new((r * 10 + 15).min(99) as u8).expect("in range"),
            devices: Some(DeviceSet::default().with(DeviceType::ALL[(r % 4) as usize])),
            // Half the rules name members (16 each), half apply to anyone.
            members: (r % 2 == 0).then(|| (0..16).map(|m| MemberId(m * 4 + r)).collect()),
            share: 0.5,
            expires_at: Duration::from_secs(3600),
        };
        rules.add(spec, Duration::ZERO).expect("rule added");
    }
    let now = Duration::from_secs(1);

    let start = Instant::now();
    let mut admitted = 0u64;
    for i in 0..N {
        let f = black_box(&facts[(i % 64) as usize]);
        let level = black_box(levels[(i % 101) as usize]);
        let c = classifier.classify(f);
        if curve.admit(c.priority, level) {
            admitted += 1;
        }
    }
    report(
        "classify + admit",
        start.elapsed(),
        &format!(", {admitted} admitted"),
    );

    let start = Instant::now();
    let mut admitted = 0u64;
    for i in 0..N {
        let mut f = *black_box(&facts[(i % 64) as usize]);
        f.device = DeviceType::from_user_agent(black_box(UAS[(i % 4) as usize]));
        let level = black_box(levels[(i % 101) as usize]);
        let c = classifier.classify(&f);
        if curve.admit(c.priority, level) {
            admitted += 1;
        }
    }
    report(
        "user-agent + classify + admit",
        start.elapsed(),
        &format!(", {admitted} admitted"),
    );

    let start = Instant::now();
    let (mut admitted, mut injected) = (0u64, 0u64);
    for i in 0..N {
        let mut f = *black_box(&facts[(i % 64) as usize]);
        f.device = DeviceType::from_user_agent(black_box(UAS[(i % 4) as usize]));
        let level = black_box(levels[(i % 101) as usize]);
        let c = classifier.classify(&f);
        if !curve.admit(c.priority, level) {
            continue;
        }
        if rules.matches(&f, c.priority, now, i).is_some() {
            injected += 1;
        } else {
            admitted += 1;
        }
    }
    report(
        "user-agent + classify + admit + 8 fault rules",
        start.elapsed(),
        &format!(", {admitted} admitted, {injected} injected"),
    );

    let start = Instant::now();
    let (mut admitted, mut body_bytes) = (0u64, 0usize);
    for i in 0..N {
        let mut f = *black_box(&facts[(i % 64) as usize]);
        f.device = DeviceType::from_user_agent(black_box(UAS[(i % 4) as usize]));
        let level = black_box(levels[(i % 101) as usize]);
        let c = classifier.classify(&f);
        if curve.admit(c.priority, level) && rules.matches(&f, c.priority, now, i).is_none() {
            admitted += 1;
            continue;
        }
        let advice = back_pressure.answer(c.priority, level, i);
        let json = advice.json();
        let retry_after = advice.retry_after();
        body_bytes += black_box(json.as_bytes()).len() + black_box(retry_after.as_bytes()).len();
    }
    report(
        "... + back-pressure answer for refused ones",
        start.elapsed(),
        &format!(", {admitted} admitted, {} answers rendered", N - admitted),
    );
    black_box(body_bytes);
}
