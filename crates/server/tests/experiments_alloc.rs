//! The request path of running experiments (EXP-1) stays allocation-free: deciding
//! (the shed-set check after the fault rules) and asking whether a request is observed,
//! for experiment-group members (shed), control (admitted, observed) and everyone else.
//! Same counting allocator as `shed_alloc.rs`.

use axum::http::{HeaderMap, HeaderValue};
use experiments::{Assigner, ExperimentDefinition, Group};
use server::http::shed_layer::request_facts;
use server::shed::{member_id, Decision, ShedSettings, Shedder};

#[global_allocator]
static GLOBAL: alloc_count::Counting = alloc_count::Counting;

use alloc_count::count_allocs;

const DEFINITION: &str = r#"{"id":"alloc","priorities":{"min":0,"max":99},
  "control_share_bp":1000,"experiment_share_bp":1000,"devices":["browser"],
  "schedule":{"every_hours":6,"anchor":"2026-01-01T00:30Z"}}"#;

fn member_in(group: Group) -> String {
    let assigner = Assigner::new("alloc", 1000, 1000);
    (0..10_000)
        .map(|i| format!("m-{i}"))
        .find(|n| assigner.group(member_id(n.as_bytes()).expect("named")) == group)
        .expect("10 % of 10 000 names")
}

fn headers(member: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("x-brdyun-device", HeaderValue::from_static("browser"));
    h.insert(
        "x-brdyun-member",
        HeaderValue::from_str(member).expect("ascii"),
    );
    h
}

#[test]
fn deciding_with_running_experiments_does_not_allocate() {
    let shedder = Shedder::new(&ShedSettings::default()).expect("defaults");
    let experiments = shedder.experiments();
    let def = ExperimentDefinition::from_json(DEFINITION).expect("valid");
    experiments.upsert(def, 1_000).expect("valid");
    experiments.start_now("alloc", 1_000).expect("starts");
    let exp = headers(&member_in(Group::Experiment));
    let control = headers(&member_in(Group::Control));
    let neither = headers(&member_in(Group::Neither));
    let anonymous = headers("");
    // Warm this thread's snapshot cache (and its thread-local slot).
    let _ = shedder.decide(&request_facts("/s/seg-1.ts", &exp));
    for path in ["/s/seg-1.ts", "/s/index.m3u8", "/telemetry"] {
        let (decision, allocs) = count_allocs(|| shedder.decide(&request_facts(path, &exp)));
        assert!(
            matches!(
                decision,
                Decision::Shed {
                    experiment: true,
                    ..
                }
            ),
            "{path}: {decision:?}"
        );
        assert_eq!(allocs, 0, "experiment group {path}");
        for (who, h) in [
            ("control", &control),
            ("neither", &neither),
            ("anonymous", &anonymous),
        ] {
            let (decision, allocs) = count_allocs(|| shedder.decide(&request_facts(path, h)));
            assert!(matches!(decision, Decision::Admit(_)), "{who} {path}");
            assert_eq!(allocs, 0, "{who} {path}");
            let facts = request_facts(path, h);
            let (observed, allocs) = count_allocs(|| experiments.observe(&facts, h));
            assert_eq!(observed.is_some(), who == "control", "{who}");
            assert_eq!(allocs, 0, "observe {who} {path}");
        }
    }
}
