//! Per-request cost of a shedding decision with continuous experiments (EXP-1), measured
//! against the same decision with none running, in the same run:
//!
//! `cargo run --release -p server --example experiments_decide_cost`
//!
//! The mix is 10 000 named browser members fetching segments: with two experiments
//! running over every priority, about 10 % of them are shed per experiment and the rest
//! admitted; `observe` (the layer's "is this member watched" check) is timed too.

use std::hint::black_box;
use std::time::Instant;

use axum::http::{HeaderMap, HeaderValue};
use experiments::ExperimentDefinition;
use server::http::shed_layer::request_facts;
use server::shed::{ShedSettings, Shedder};

const ROUNDS: usize = 200;

fn definition(id: &str) -> ExperimentDefinition {
    ExperimentDefinition::from_json(&format!(
        r#"{{"id":"{id}","priorities":{{"min":0,"max":99}},"control_share_bp":1000,
        "experiment_share_bp":1000,"devices":["browser"],"schedule":{{"daily_at":"03:00"}}}}"#
    ))
    .expect("a valid definition")
}

fn requests() -> Vec<HeaderMap> {
    (0..10_000)
        .map(|i| {
            let mut h = HeaderMap::new();
            h.insert("x-brdyun-device", HeaderValue::from_static("browser"));
            h.insert(
                "x-brdyun-member",
                HeaderValue::from_str(&format!("member-{i}")).expect("ascii"),
            );
            h
        })
        .collect()
}

/// Nanoseconds per (facts + decide) and per observe over the mix.
fn measure(shedder: &Shedder, mix: &[HeaderMap]) -> (f64, f64, usize) {
    let mut shed = 0;
    let start = Instant::now();
    for _ in 0..ROUNDS {
        for h in mix {
            let d = shedder.decide(&request_facts("/s/seg-1.ts", h));
            if matches!(d, server::shed::Decision::Shed { .. }) {
                shed += 1;
            }
        }
    }
    let decide = start.elapsed().as_nanos() as f64 / (ROUNDS * mix.len()) as f64;
    let facts: Vec<_> = mix
        .iter()
        .map(|h| request_facts("/s/seg-1.ts", h))
        .collect();
    let start = Instant::now();
    for _ in 0..ROUNDS {
        for (f, h) in facts.iter().zip(mix) {
            black_box(shedder.experiments().observe(f, h));
        }
    }
    let observe = start.elapsed().as_nanos() as f64 / (ROUNDS * mix.len()) as f64;
    (decide, observe, shed / ROUNDS)
}

fn main() {
    let mix = requests();
    let shedder = Shedder::new(&ShedSettings::default()).expect("defaults");
    let (base_decide, base_observe, base_shed) = measure(&shedder, &mix);
    let experiments = shedder.experiments();
    for id in ["exp-a", "exp-b"] {
        experiments.upsert(definition(id), 1_000).expect("valid");
        experiments.start_now(id, 1_000).expect("starts");
    }
    let (decide, observe, shed) = measure(&shedder, &mix);
    println!(
        "no experiment:   decide {base_decide:.1} ns, observe {base_observe:.1} ns, shed {base_shed} of {}",
        mix.len()
    );
    println!(
        "two experiments: decide {decide:.1} ns, observe {observe:.1} ns, shed {shed} of {}",
        mix.len()
    );
    println!(
        "ratio (two experiments / none): decide {:.2}x",
        decide / base_decide
    );
}
