//! The `Experiments` state machine driven by an injected clock: schedules, guardrail
//! abort, alerts on a turn to "deviation", gossip merging, the shed set.

use experiments::schedule::parse_utc;
use experiments::{
    AbortReason, DeviceStatus, ExperimentDefinition, ExperimentEvent, Experiments,
    ExperimentsConfig, Group, GuardrailKind, KpiEvent, NodeReport, RunOutcome,
};
use shed::{Classifier, DeviceType, MemberId, RequestFacts, RouteKind};

fn utc(s: &str) -> u64 {
    parse_utc(s).expect("valid time")
}

const MIN: u64 = 60_000;

fn definition(schedule: &str, duration_minutes: u32) -> ExperimentDefinition {
    ExperimentDefinition::from_json(&format!(
        r#"{{"id":"nc","priorities":"non_critical","control_share_bp":1000,
            "experiment_share_bp":1000,"duration_minutes":{duration_minutes},
            "devices":["browser","smart_tv"],"schedule":{schedule},
            "verdict":{{"min_samples":100}},
            "guardrails":{{"max_start_failure_rate":0.3,"min_samples":40}}}}"#
    ))
    .expect("valid definition")
}

fn machine(def: ExperimentDefinition) -> Experiments {
    Experiments::new(vec![def], ExperimentsConfig::default()).expect("valid")
}

/// The first `n` members of `group` under the experiment's assignment.
fn members(def: &ExperimentDefinition, group: Group, n: usize) -> Vec<MemberId> {
    let a = def.assigner();
    (0u64..)
        .map(MemberId)
        .filter(|m| a.group(*m) == group)
        .take(n)
        .collect()
}

fn started(events: &[ExperimentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ExperimentEvent::Started { run, .. } => Some(run.clone()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[ExperimentEvent]) -> Vec<(String, RunOutcome, Vec<DeviceType>)> {
    events
        .iter()
        .filter_map(|e| match e {
            ExperimentEvent::Finished { run, outcome, hurt } => {
                Some((run.clone(), outcome.clone(), hurt.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn daily_runs_start_and_stop_on_the_injected_clock() {
    let def = definition(r#"{"daily_at":"23:30"}"#, 45);
    let mut x = machine(def);
    let day = utc("2026-11-30T00:00Z");
    // Ten past midnight, yesterday's 23:30 run is still in its window: join it.
    let yesterday = utc("2026-11-29T23:30Z");
    assert_eq!(
        started(&x.tick(day + 10 * MIN)),
        vec![format!("nc@{yesterday}")]
    );
    assert_eq!(finished(&x.tick(day + 15 * MIN)).len(), 1);
    // Then nothing runs until 23:30.
    assert!(x.tick(day + 10 * 60 * MIN).is_empty());
    assert!(x.shed_set().is_empty());
    let at = utc("2026-11-30T23:30Z");
    let run = format!("nc@{at}");
    assert_eq!(started(&x.tick(at)), vec![run.clone()]);
    assert!(!x.shed_set().is_empty());
    // Still running after midnight, until 00:15 the next day.
    assert!(x.tick(utc("2026-12-01T00:14Z")).is_empty());
    let done = finished(&x.tick(utc("2026-12-01T00:15Z")));
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, run);
    assert_eq!(done[0].1, RunOutcome::Completed);
    assert!(x.shed_set().is_empty());
    // No second run the same night; the next one the next evening, even when the
    // tick comes 20 minutes late (the run keeps its scheduled start and end).
    assert!(x.tick(utc("2026-12-01T12:00Z")).is_empty());
    let late = x.tick(utc("2026-12-01T23:50Z"));
    assert_eq!(
        started(&late),
        vec![format!("nc@{}", utc("2026-12-01T23:30Z"))]
    );
    let status = x.status(utc("2026-12-01T23:51Z"), 10);
    assert_eq!(status.running[0].ends_at_ms, utc("2026-12-02T00:15Z"));
    assert_eq!(
        status.experiments[0].next_run_ms,
        Some(utc("2026-12-02T23:30Z"))
    );
    // A missed window (the node was down all of it) is skipped, not run late.
    finished(&x.tick(utc("2026-12-02T00:15Z")));
    assert!(x.tick(utc("2026-12-03T00:20Z")).is_empty());
    assert_eq!(x.history().count(), 3);
}

#[test]
fn every_n_hours_across_midnight_and_rejoin_after_restart() {
    let def = definition(r#"{"every_hours":5,"anchor":"2026-11-30T20:00Z"}"#, 45);
    let mut x = machine(def.clone());
    let mut starts = Vec::new();
    let mut t = utc("2026-11-30T19:00Z");
    while t <= utc("2026-12-01T12:00Z") {
        starts.extend(x.tick(t).iter().filter_map(|e| match e {
            ExperimentEvent::Started { run, .. } => Some(run.clone()),
            _ => None,
        }));
        t += MIN;
    }
    let want: Vec<String> = [
        "2026-11-30T20:00Z",
        "2026-12-01T01:00Z",
        "2026-12-01T06:00Z",
        "2026-12-01T11:00Z",
    ]
    .iter()
    .map(|s| format!("nc@{}", utc(s)))
    .collect();
    assert_eq!(starts, want);
    // A node that starts 10 minutes into a run joins that same run (same id), so its
    // counters merge with the other nodes'.
    let mut fresh = machine(def);
    let joined = started(&fresh.tick(utc("2026-12-01T06:10Z")));
    assert_eq!(joined, vec![format!("nc@{}", utc("2026-12-01T06:00Z"))]);
}

#[test]
fn guardrail_breach_aborts_at_once() {
    let def = definition(r#"{"daily_at":"03:00"}"#, 45);
    let mut x = machine(def.clone());
    let start = utc("2026-12-01T03:00Z");
    x.tick(start);
    let generation = x.generation();
    let tv = members(&def, Group::Experiment, 50);
    // One session whose 100 CRITICAL requests all fail is not enough to abort: the
    // guardrails wait for min_samples sessions.
    let mut flags = experiments::SessionFlags::default();
    x.record(
        tv[0],
        DeviceType::Browser,
        KpiEvent::PlaybackStarted { ttff_ms: 900 },
    );
    for _ in 0..100 {
        x.record(tv[0], DeviceType::Browser, flags.critical_request(true));
    }
    assert!(finished(&x.tick(start + MIN / 2)).is_empty());
    // 39 failures of 50 attempts, but the first 39 alone are below min_samples 40.
    for m in &tv[..39] {
        x.record(*m, DeviceType::SmartTv, KpiEvent::StartFailed);
    }
    assert!(
        finished(&x.tick(start + MIN)).is_empty(),
        "below min_samples"
    );
    for m in &tv[39..] {
        x.record(
            *m,
            DeviceType::SmartTv,
            KpiEvent::PlaybackStarted { ttff_ms: 900 },
        );
    }
    let done = finished(&x.tick(start + 2 * MIN));
    assert_eq!(done.len(), 1);
    match &done[0].1 {
        RunOutcome::Aborted(AbortReason::Guardrail {
            device,
            guardrail,
            value,
            limit,
        }) => {
            assert_eq!(*device, DeviceType::SmartTv);
            assert_eq!(*guardrail, GuardrailKind::StartFailureRate);
            assert!((value - 39.0 / 50.0).abs() < 1e-12 && *limit == 0.3);
        }
        other => panic!("{other:?}"),
    }
    assert!(x.shed_set().is_empty());
    assert!(x.generation() > generation);
    let rec = x.history().last().expect("recorded");
    assert_eq!(rec.ended_at_ms, start + 2 * MIN);
    // The same window does not start again after an abort.
    assert!(x.tick(start + 3 * MIN).is_empty());
}

/// Feed `n` sessions per group and device; the experiment group's smart TVs fail to
/// start at `tv_failure_rate` (control and browsers at 2%).
fn feed(x: &mut Experiments, def: &ExperimentDefinition, n: usize, tv_failure_rate: f64) {
    for (group, device) in [
        (Group::Control, DeviceType::Browser),
        (Group::Experiment, DeviceType::Browser),
        (Group::Control, DeviceType::SmartTv),
        (Group::Experiment, DeviceType::SmartTv),
    ] {
        let rate = if group == Group::Experiment && device == DeviceType::SmartTv {
            tv_failure_rate
        } else {
            0.02
        };
        let failures = (rate * n as f64).round() as usize;
        for (i, m) in members(def, group, n).into_iter().enumerate() {
            let event = if i < failures {
                KpiEvent::StartFailed
            } else {
                KpiEvent::PlaybackStarted {
                    ttff_ms: 800 + (i as u64 * 37) % 400,
                }
            };
            assert!(x.record(m, device, event));
        }
    }
}

#[test]
fn alert_when_a_device_turns_from_no_deviation_to_deviation() {
    let mut def = definition(r#"{"daily_at":"03:00"}"#, 45);
    def.guardrails.max_start_failure_rate = 1.0;
    let mut x = machine(def.clone());
    let mut day = utc("2026-12-01T03:00Z");
    let mut run_day = |x: &mut Experiments, tv_rate: f64| {
        x.tick(day);
        feed(x, &def, 400, tv_rate);
        let events = x.tick(day + 45 * MIN);
        day += 24 * 60 * MIN;
        events
    };
    // Day 1: healthy. Day 2: smart TVs break. Day 3: still broken (no new alert).
    // Day 4: fixed. Day 5: broken again (alert again).
    let healthy = run_day(&mut x, 0.02);
    assert!(!healthy
        .iter()
        .any(|e| matches!(e, ExperimentEvent::Alert(_))));
    assert_eq!(finished(&healthy)[0].2, Vec::<DeviceType>::new());

    let broken = run_day(&mut x, 0.15);
    let alerts: Vec<_> = broken
        .iter()
        .filter_map(|e| match e {
            ExperimentEvent::Alert(a) => Some(a.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(alerts.len(), 1, "{broken:?}");
    assert_eq!(alerts[0].device, DeviceType::SmartTv);
    assert_eq!(alerts[0].previous, Some(DeviceStatus::NoDeviation));
    assert_eq!(finished(&broken)[0].2, vec![DeviceType::SmartTv]);

    let still = run_day(&mut x, 0.15);
    assert!(!still.iter().any(|e| matches!(e, ExperimentEvent::Alert(_))));
    let fixed = run_day(&mut x, 0.02);
    assert!(!fixed.iter().any(|e| matches!(e, ExperimentEvent::Alert(_))));
    let again = run_day(&mut x, 0.15);
    assert_eq!(
        again
            .iter()
            .filter(|e| matches!(e, ExperimentEvent::Alert(_)))
            .count(),
        1
    );
    assert_eq!(x.history().count(), 5);
    let status = x.status(day, 3);
    assert_eq!(status.history.len(), 3, "newest three");
    assert_eq!(status.history[0].started_at_ms, day - 24 * 60 * MIN);
    assert_eq!(
        *status.experiments[0].last_status.get(DeviceType::SmartTv),
        Some(DeviceStatus::Deviation)
    );
    // The page's JSON carries device names and tagged outcomes.
    let json = serde_json::to_string(&status).expect("serializes");
    assert!(json.contains(r#""smart_tv":"deviation""#), "{json}");
    assert!(json.contains(r#""outcome":"deviation""#));
}

#[test]
fn node_reports_replace_and_merge() {
    let def = definition(r#"{"daily_at":"03:00"}"#, 45);
    let mut a = machine(def.clone());
    let mut b = machine(def.clone());
    let start = utc("2026-12-01T03:00Z");
    a.tick(start);
    b.tick(start);
    let m = members(&def, Group::Control, 3);
    a.record(m[0], DeviceType::Browser, KpiEvent::StartFailed);
    b.record(m[1], DeviceType::Browser, KpiEvent::StartFailed);
    b.record(m[2], DeviceType::Browser, KpiEvent::StartFailed);
    // Gossip delivers b's report twice and a stale run's report once.
    let report = b.local_report();
    a.apply_report("b", report.clone());
    a.apply_report("b", report);
    a.apply_report(
        "b",
        NodeReport {
            runs: vec![("nc@1".to_string(), Default::default())],
        },
    );
    let json = serde_json::to_string(&a.local_report()).expect("serializes");
    let back: NodeReport = serde_json::from_str(&json).expect("parses");
    assert_eq!(back, a.local_report());
    a.tick(start + 45 * MIN);
    let rec = a.history().last().expect("finished");
    assert_eq!(rec.nodes, vec!["b".to_string()]);
    assert_eq!(rec.kpis.control.get(DeviceType::Browser).start_failures, 3);
}

#[test]
fn shed_set_matches_only_the_experiment_groups_slice() {
    let def = definition(r#"{"daily_at":"03:00"}"#, 45);
    let mut x = machine(def.clone());
    x.tick(utc("2026-12-01T03:00Z"));
    let classifier = Classifier::default();
    let exp = members(&def, Group::Experiment, 1)[0];
    let ctl = members(&def, Group::Control, 1)[0];
    let neither = members(&def, Group::Neither, 1)[0];
    let check = |member: Option<MemberId>, route, device| {
        let facts = RequestFacts {
            route,
            device,
            member,
            in_playback: true,
        };
        let p = classifier.classify(&facts).priority;
        x.sheds(&facts, p).is_some()
    };
    assert!(check(Some(exp), RouteKind::Telemetry, DeviceType::SmartTv));
    assert!(check(Some(exp), RouteKind::Prefetch, DeviceType::Browser));
    assert!(
        !check(Some(exp), RouteKind::LiveSegment, DeviceType::SmartTv),
        "CRITICAL is out of range"
    );
    assert!(
        !check(Some(exp), RouteKind::Thumbnail, DeviceType::SmartTv),
        "DEGRADED is out of range"
    );
    assert!(
        !check(Some(exp), RouteKind::Telemetry, DeviceType::Apple),
        "device not in scope"
    );
    assert!(
        !check(Some(ctl), RouteKind::Telemetry, DeviceType::SmartTv),
        "control is untouched"
    );
    assert!(!check(
        Some(neither),
        RouteKind::Telemetry,
        DeviceType::SmartTv
    ));
    assert!(
        !check(None, RouteKind::Telemetry, DeviceType::SmartTv),
        "anonymous"
    );
    assert!(x.shed_set().is_observed(ctl, DeviceType::Browser));
    assert!(!x.shed_set().is_observed(neither, DeviceType::Browser));
    assert!(!x.shed_set().is_observed(exp, DeviceType::Apple));
    // Events of members outside the groups or devices are not counted.
    assert!(!x.record(neither, DeviceType::Browser, KpiEvent::StartFailed));
    assert!(!x.record(exp, DeviceType::Apple, KpiEvent::StartFailed));
}

#[test]
fn removing_a_definition_aborts_its_run_and_commands_check_state() {
    let def = definition(r#"{"daily_at":"03:00"}"#, 45);
    let mut x = machine(def.clone());
    let now = utc("2026-12-01T12:00Z");
    assert!(x.abort("nc@1", now).is_err());
    let ev = x.start_now("nc", now).expect("starts");
    assert!(matches!(ev, ExperimentEvent::Started { .. }));
    assert!(x.start_now("nc", now).is_err(), "already running");
    assert!(x.start_now("other", now).is_err(), "unknown");
    let events = x.set_definitions(Vec::new(), now + MIN).expect("valid");
    assert_eq!(
        finished(&events)[0].1,
        RunOutcome::Aborted(AbortReason::DefinitionRemoved)
    );
    let mut bad = def;
    bad.control_share_bp = 0;
    let err = x.set_definitions(vec![bad], now).expect_err("invalid");
    assert!(
        err.to_string()
            .starts_with("experiment[0].control_share_bp:"),
        "{err}"
    );
}
