//! Times 10 million classify + admit decisions and prints the cost per decision, so the
//! figure can be quoted (goal < 200 ns, DESIGN invariant 5). Run with
//! `cargo run -p shed --release --example admit_cost`.

use std::hint::black_box;
use std::time::Instant;

use shed::{Classifier, DeviceType, MemberId, OverloadLevel, RequestFacts, RouteKind, ShedCurve};

fn main() {
    const N: u64 = 10_000_000;
    let classifier = Classifier::default();
    let curve = ShedCurve;
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
    let elapsed = start.elapsed();
    let ns = elapsed.as_nanos() as f64 / N as f64;
    println!(
        "classify+admit: {N} decisions in {:.3} s = {ns:.2} ns/op ({admitted} admitted)",
        elapsed.as_secs_f64()
    );
}
