//! A simulated population (EXP-1, EXP-2): members of several device types, assigned
//! by the real assignment, play one session each during a run; every request of a
//! session is classified by shed's real classifier and shed when the running
//! experiment's [`ShedSet`] says so. Smart TVs are made fragile: when one of their
//! NON_CRITICAL requests (the start beacon, a prefetch) is shed, the start fails with
//! some probability and stalls get likelier. Other devices ignore shed NON_CRITICAL
//! requests.
//!
//! Checked: with the fragile TVs the verdict names exactly `smart_tv`; with no
//! breakage, over 200 seeded runs, the share of runs that flag anything stays within
//! the chosen false-positive rate (alpha = 0.05, plus a margin of 2 binomial standard
//! deviations of the estimate).
//!
//! Bounded: 16 000 members of which 20% are in a group, one session each, ~24
//! requests per session.

use experiments::schedule::parse_utc;
use experiments::{
    ExperimentDefinition, ExperimentEvent, Experiments, ExperimentsConfig, Group, KpiEvent,
    SessionFlags, Verdict,
};
use shed::{Classifier, DeviceType, MemberId, RequestFacts, RouteKind};

/// SplitMix64: small, seedable, good enough for simulation.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(1e-300);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

const MEMBERS: u64 = 16_000;
const SEGMENTS_PER_SESSION: usize = 20;

/// Device mix and per-device behaviour.
fn device_of(r: &mut Rng) -> DeviceType {
    match r.unit() {
        u if u < 0.35 => DeviceType::Browser,
        u if u < 0.55 => DeviceType::Apple,
        u if u < 0.75 => DeviceType::Android,
        _ => DeviceType::SmartTv,
    }
}

fn median_ttff_ms(d: DeviceType) -> f64 {
    match d {
        DeviceType::Browser => 900.0,
        DeviceType::Apple => 700.0,
        DeviceType::Android => 1_000.0,
        _ => 1_800.0,
    }
}

fn definition() -> ExperimentDefinition {
    ExperimentDefinition::from_json(
        r#"{"id":"non-critical","priorities":"non_critical","control_share_bp":1000,
            "experiment_share_bp":1000,"devices":["browser","apple","android","smart_tv"],
            "schedule":{"daily_at":"03:00"},
            "guardrails":{"max_start_failure_rate":0.9,"max_critical_failure_share":0.5},
            "verdict":{"alpha":0.05,"min_samples":200,"min_relative_change":0.1}}"#,
    )
    .expect("valid definition")
}

/// One session of `member`: its requests go through the classifier and the running
/// experiments' shed set; its observations become KPI events.
fn session(
    x: &mut Experiments,
    classifier: &Classifier,
    rng: &mut Rng,
    member: MemberId,
    device: DeviceType,
    fragile_tv: bool,
) {
    let mut flags = SessionFlags::default();
    let shed_non_critical = std::cell::Cell::new(0u32);
    let request = |x: &mut Experiments, route: RouteKind, in_playback: bool| -> bool {
        let facts = RequestFacts {
            route,
            device,
            member: Some(member),
            in_playback,
        };
        let c = classifier.classify(&facts);
        let shed = x.sheds(&facts, c.priority).is_some();
        if shed {
            assert_ne!(
                c.bucket,
                shed::Bucket::Critical,
                "the experiment sheds NON_CRITICAL only"
            );
            shed_non_critical.set(shed_non_critical.get() + 1);
        }
        !shed
    };
    let start_ok = request(x, RouteKind::PlaybackStart, false);
    request(x, RouteKind::Telemetry, false);
    request(x, RouteKind::Prefetch, true);
    request(x, RouteKind::Prefetch, true);
    // The first CRITICAL request (start) fails rarely on its own.
    let start_failed_network = rng.chance(0.001);
    let e = flags.critical_request(!start_ok || start_failed_network);
    x.record(member, device, e);
    let fragile = fragile_tv && device == DeviceType::SmartTv && shed_non_critical.get() > 0;
    let start_failure_p = if fragile { 0.03 + 0.12 } else { 0.03 };
    if start_failed_network || rng.chance(start_failure_p) {
        x.record(member, device, KpiEvent::StartFailed);
        return;
    }
    let ttff = median_ttff_ms(device) * (0.35 * rng.normal()).exp();
    x.record(
        member,
        device,
        KpiEvent::PlaybackStarted {
            ttff_ms: ttff as u64,
        },
    );
    let stall_p = if fragile { 0.06 + 0.10 } else { 0.06 };
    for i in 0..SEGMENTS_PER_SESSION {
        let ok = request(x, RouteKind::LiveSegment, true) && !rng.chance(0.0005);
        x.record(member, device, flags.critical_request(!ok));
        if i % 5 == 4 {
            request(x, RouteKind::Telemetry, true);
        }
    }
    if rng.chance(stall_p) {
        let e = flags.stall();
        x.record(member, device, e);
    }
    if rng.chance(0.02) {
        let e = flags.playback_error();
        x.record(member, device, e);
    }
}

/// The members of either group, found once with the real assignment.
fn grouped_members(def: &ExperimentDefinition) -> Vec<MemberId> {
    let a = def.assigner();
    (0..MEMBERS)
        .map(MemberId)
        .filter(|m| a.group(*m) != Group::Neither)
        .collect()
}

/// One run with a fresh behaviour seed; the verdict.
fn run(seed: u64, fragile_tv: bool, members: &[MemberId], classifier: &Classifier) -> Verdict {
    let def = definition();
    let mut x = Experiments::new(vec![def], ExperimentsConfig::default()).expect("valid");
    let start = parse_utc("2026-12-01T03:00Z").expect("valid time");
    assert!(matches!(
        x.tick(start)[..],
        [ExperimentEvent::Started { .. }]
    ));
    let mut rng = Rng(seed);
    for &m in members {
        let device = device_of(&mut rng);
        session(&mut x, classifier, &mut rng, m, device, fragile_tv);
    }
    let events = x.tick(start + 45 * 60_000);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ExperimentEvent::Finished { .. })),
        "{events:?}"
    );
    x.history().last().expect("finished").verdict.clone()
}

#[test]
fn fragile_smart_tvs_are_flagged_and_nothing_else() {
    let classifier = Classifier::default();
    let members = grouped_members(&definition());
    for seed in 1..=5u64 {
        let v = run(seed, true, &members, &classifier);
        let hurt: Vec<DeviceType> = v.hurt.iter().map(|h| h.device).collect();
        assert_eq!(hurt, vec![DeviceType::SmartTv], "seed {seed}: {v:#?}");
        let tv = &v.hurt[0];
        assert!(
            tv.kpis
                .iter()
                .any(|(k, _)| *k == experiments::Kpi::StartFailureRate),
            "seed {seed}: {tv:?}"
        );
    }
}

#[test]
fn without_breakage_false_positives_stay_within_alpha() {
    let classifier = Classifier::default();
    let members = grouped_members(&definition());
    let runs = 200u64;
    let mut flagged = 0u64;
    for seed in 0..runs {
        let v = run(1_000 + seed, false, &members, &classifier);
        assert!(v.comparisons > 0, "the population is large enough to judge");
        if !v.hurt.is_empty() {
            flagged += 1;
        }
    }
    let alpha = 0.05;
    let share = flagged as f64 / runs as f64;
    let margin = 2.0 * (alpha * (1.0 - alpha) / runs as f64).sqrt();
    println!("false-positive runs: {flagged}/{runs} = {share:.3} (alpha {alpha})");
    assert!(
        share <= alpha + margin,
        "{flagged} of {runs} runs flagged a deviation"
    );
}
