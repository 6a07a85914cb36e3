//! Per-request cost of the experiments check on the request path, against the peer it
//! sits next to: `shed::FaultRules::matches` with one member-less share rule.
//!
//! `cargo run --release -p experiments --example shed_set_cost`
//!
//! Worst case for the shed set: every request is in the priority range and device
//! scope of both running experiments, so each one hashes the member twice.

use std::hint::black_box;
use std::time::{Duration, Instant};

use experiments::{ExperimentDefinition, Experiments, ExperimentsConfig};
use shed::{DeviceType, FaultRuleSpec, FaultRules, MemberId, Priority, RequestFacts, RouteKind};

const N: u64 = 2_000_000;

fn def(id: &str) -> ExperimentDefinition {
    ExperimentDefinition::from_json(&format!(
        r#"{{"id":"{id}","priorities":"non_critical","control_share_bp":50,
            "experiment_share_bp":50,"schedule":{{"daily_at":"00:00"}}}}"#
    ))
    .expect("valid definition")
}

fn facts(m: u64) -> RequestFacts {
    RequestFacts {
        route: RouteKind::Telemetry,
        device: DeviceType::SmartTv,
        member: Some(MemberId(m.wrapping_mul(0x9e37_79b9_7f4a_7c15))),
        in_playback: true,
    }
}

fn main() {
    let mut x = Experiments::new(vec![def("a"), def("b")], ExperimentsConfig::default())
        .expect("valid definitions");
    x.tick(60_000);
    let set = x.shed_set().clone();
    assert_eq!(set.entries().len(), 2);
    let p = Priority::new(20).expect("valid");

    let mut rules = FaultRules::new(8);
    rules
        .add(
            FaultRuleSpec {
                min_priority: Priority::BOTTOM,
                max_priority: Priority::new(29).expect("valid"),
                devices: None,
                members: None,
                share: 0.005,
                expires_at: Duration::from_secs(3_600),
            },
            Duration::ZERO,
        )
        .expect("valid rule");
    let now = Duration::from_secs(1);

    for round in 0..3 {
        let t = Instant::now();
        let mut hits = 0u64;
        for m in 0..N {
            hits += u64::from(set.matches(black_box(&facts(m)), p).is_some());
        }
        let exp_ns = t.elapsed().as_nanos() as f64 / N as f64;
        let t = Instant::now();
        let mut fit_hits = 0u64;
        for m in 0..N {
            fit_hits += u64::from(rules.matches(black_box(&facts(m)), p, now, m).is_some());
        }
        let fit_ns = t.elapsed().as_nanos() as f64 / N as f64;
        println!(
            "round {round}: shed set {exp_ns:.1} ns/request ({:.2}% shed), fault rule {fit_ns:.1} ns/request ({:.2}% shed), ratio {:.2}",
            100.0 * hits as f64 / N as f64,
            100.0 * fit_hits as f64 / N as f64,
            exp_ns / fit_ns
        );
    }
}
