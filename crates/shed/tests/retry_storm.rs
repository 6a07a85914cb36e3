//! Retry storm (SHED-3): a bounded discrete-time simulation of many devices watching
//! through one node whose capacity drops to a quarter for 30 s, run twice with the
//! same seed — once with naive immediate retries, once honouring the back-pressure
//! answer — measuring how long the node takes to return to normal after the spike.
//!
//! The policy is the real one: [`Classifier`], [`ShedCurve`], [`BackPressure`],
//! [`OverloadEstimator`] and [`AdaptiveLimit`] decide every request, fed with the
//! simulated node's utilisation, queue and latencies. What is modelled (and printed):
//! the node is a FIFO of admitted requests served at `capacity` work units per second
//! (a served request costs 1, a shed answer `SHED_COST`, paid first because the node
//! must read a request before refusing it); a client gives up on a request after
//! `CLIENT_TIMEOUT` (the node still serves it later: wasted work). Time advances in
//! 10 ms steps; 3000 devices, so one run is a few hundred thousand requests.
//!
//! Run with figures: `cargo test -p shed --release --test retry_storm -- --nocapture`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use shed::{
    AdaptiveLimit, AdaptiveLimitConfig, BackPressure, Classifier, DeviceType, MemberId,
    OverloadConfig, OverloadEstimator, OverloadInputs, RequestFacts, RouteKind, ShedCurve,
};

const TICK_MS: u64 = 10;
const DEVICES: u64 = 3000;
/// Work units per second the node serves normally (a served request costs 1).
const CAPACITY: f64 = 5000.0;
/// The capacity left during the spike.
const SPIKE_CAPACITY: f64 = CAPACITY / 4.0;
/// Cost of answering a shed request, relative to serving one.
const SHED_COST: f64 = 0.1;
const WARMUP_S: u64 = 20;
const SPIKE_S: u64 = 30;
const HORIZON_S: u64 = 400;
const CLIENT_TIMEOUT_MS: u64 = 4000;
/// Naive clients retry a failed request after 50–150 ms, up to this many times.
const NAIVE_RETRIES: u32 = 20;

/// What a device does when a request fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clients {
    /// Retry almost at once (after 50–150 ms), up to `NAIVE_RETRIES` times.
    Naive,
    /// Honour `retryAfterSeconds` (plus up to 10 % own jitter) and `maxRetries`; a
    /// timeout is retried once after 1 s.
    BackPressure,
}

/// A request a device will send at `due` (in ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Send {
    due: u64,
    device: u64,
    route: u8,
    attempt: u32,
    /// Retries still allowed by the last back-pressure answer (`u32::MAX`: none yet).
    budget: u32,
    /// Whether this is a device's periodic request (it reschedules the next one).
    periodic: bool,
}

#[derive(Debug, Clone, Copy)]
struct Queued {
    send: Send,
    arrived: u64,
}

/// The periodic requests of a watching device: (route, period in ms).
const SCHEDULE: [(RouteKind, u64); 4] = [
    (RouteKind::LiveSegment, 2000),
    (RouteKind::LivePlaylist, 2000),
    (RouteKind::Telemetry, 10_000),
    (RouteKind::MeetingMetadata, 30_000),
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Debug, Default)]
struct Outcome {
    recovery_s: Option<f64>,
    sent: u64,
    shed: u64,
    timed_out: u64,
    retries: u64,
    peak_queue: usize,
    critical_ok_after: u64,
    critical_failed_after: u64,
}

fn ticks(ms: u64) -> u64 {
    ms / TICK_MS
}

fn simulate(clients: Clients) -> Outcome {
    let classifier = Classifier::default();
    let curve = ShedCurve;
    let back_pressure = BackPressure::default();
    let mut estimator = OverloadEstimator::new(OverloadConfig::default()).expect("defaults");
    let mut limit = AdaptiveLimit::new(AdaptiveLimitConfig::default()).expect("defaults");
    let mut rng = Rng(7);
    let mut sends: BinaryHeap<Reverse<Send>> = BinaryHeap::new();
    for device in 0..DEVICES {
        for (route, (_, period)) in SCHEDULE.iter().enumerate() {
            sends.push(Reverse(Send {
                due: rng.below(ticks(*period)),
                device,
                route: route as u8,
                attempt: 0,
                budget: u32::MAX,
                periodic: true,
            }));
        }
    }
    let mut queue: VecDeque<Queued> = VecDeque::new();
    let mut out = Outcome::default();
    let spike_start = ticks(WARMUP_S * 1000);
    let spike_end = spike_start + ticks(SPIKE_S * 1000);
    let mut credit = 0.0f64;
    let mut normal_since: Option<u64> = None;
    let mut shed_this_second = 0u64;
    let mut max_wait_this_second = 0u64;
    let per_second = ticks(1000);

    for now in 0..ticks(HORIZON_S * 1000) {
        let capacity = if (spike_start..spike_end).contains(&now) {
            SPIKE_CAPACITY
        } else {
            CAPACITY
        };
        let budget = capacity * TICK_MS as f64 / 1000.0;
        credit = (credit + budget).min(budget * 2.0);
        let mut used = 0.0;
        let level = estimator.level();
        while let Some(Reverse(send)) = sends.peek().copied() {
            if send.due > now {
                break;
            }
            sends.pop();
            let (route, period) = SCHEDULE[usize::from(send.route)];
            if send.periodic {
                sends.push(Reverse(Send {
                    due: now + ticks(period),
                    attempt: 0,
                    budget: u32::MAX,
                    ..send
                }));
            }
            out.sent += 1;
            if send.attempt > 0 {
                out.retries += 1;
            }
            let facts = RequestFacts {
                route,
                device: DeviceType::Browser,
                member: Some(MemberId(send.device)),
                in_playback: true,
            };
            let class = classifier.classify(&facts);
            if curve.admit(class.priority, level) {
                queue.push_back(Queued { send, arrived: now });
                continue;
            }
            out.shed += 1;
            shed_this_second += 1;
            credit -= SHED_COST;
            used += SHED_COST;
            if now >= spike_end && route == RouteKind::LiveSegment {
                out.critical_failed_after += 1;
            }
            let retry = match clients {
                Clients::Naive => (send.attempt < NAIVE_RETRIES)
                    .then(|| (now + ticks(50 + rng.below(100)), u32::MAX)),
                Clients::BackPressure => {
                    let advice = back_pressure.answer(class.priority, level, send.device);
                    let left = send.budget.min(u32::from(advice.max_retries));
                    let wait_ms = u64::from(advice.retry_after_seconds) * 1000;
                    (left > 0)
                        .then(|| (now + ticks(wait_ms + rng.below(wait_ms / 10 + 1)), left - 1))
                }
            };
            if let Some((due, budget)) = retry {
                sends.push(Reverse(Send {
                    due,
                    attempt: send.attempt + 1,
                    budget,
                    periodic: false,
                    ..send
                }));
            }
        }
        // Serve the FIFO with what is left of this tick's capacity.
        while credit >= 1.0 {
            let Some(q) = queue.pop_front() else { break };
            credit -= 1.0;
            used += 1.0;
            let waited = now - q.arrived;
            max_wait_this_second = max_wait_this_second.max(waited);
            let rtt = Duration::from_millis((waited + 1) * TICK_MS);
            limit.on_sample(
                rtt,
                queue.len() as u32 + 1,
                Duration::from_millis(now * TICK_MS),
            );
            let (route, _) = SCHEDULE[usize::from(q.send.route)];
            if waited <= ticks(CLIENT_TIMEOUT_MS) {
                if now >= spike_end && route == RouteKind::LiveSegment {
                    out.critical_ok_after += 1;
                }
                continue;
            }
            // The client gave up long ago; it retried (or not) when it timed out.
            out.timed_out += 1;
            if now >= spike_end && route == RouteKind::LiveSegment {
                out.critical_failed_after += 1;
            }
            let retry = match clients {
                Clients::Naive => q.send.attempt < NAIVE_RETRIES,
                Clients::BackPressure => q.send.attempt == 0,
            };
            if retry {
                let delay = match clients {
                    Clients::Naive => 50 + rng.below(100),
                    Clients::BackPressure => 1000,
                };
                let due = q.arrived + ticks(CLIENT_TIMEOUT_MS + delay);
                sends.push(Reverse(Send {
                    due: due.max(now + 1),
                    attempt: q.send.attempt + 1,
                    periodic: false,
                    ..q.send
                }));
            }
        }
        if queue.is_empty() {
            credit = credit.min(budget);
        }
        out.peak_queue = out.peak_queue.max(queue.len());
        let queue_delay = Duration::from_secs_f64(queue.len() as f64 / capacity);
        estimator.tick(
            OverloadInputs {
                cpu: (used / budget).min(1.0),
                in_flight: u32::try_from(queue.len()).unwrap_or(u32::MAX),
                limit: limit.limit(),
                queue_delay,
            },
            Duration::from_millis(now * TICK_MS),
        );
        if (now + 1) % per_second == 0 {
            // Normal: a whole second with nothing shed and nobody waiting > 100 ms.
            let normal = shed_this_second == 0 && max_wait_this_second <= ticks(100);
            if now >= spike_end && out.recovery_s.is_none() {
                match (normal, normal_since) {
                    (true, None) => normal_since = Some(now + 1 - per_second),
                    (true, Some(since)) if now + 1 - since >= 5 * per_second => {
                        let from = since.max(spike_end) - spike_end;
                        out.recovery_s = Some((from * TICK_MS) as f64 / 1000.0);
                    }
                    (false, _) => normal_since = None,
                    _ => {}
                }
            }
            shed_this_second = 0;
            max_wait_this_second = 0;
        }
    }
    out
}

#[test]
fn back_pressure_recovers_at_least_five_times_faster_than_naive_retries() {
    let naive = simulate(Clients::Naive);
    let honoured = simulate(Clients::BackPressure);
    let show = |name: &str, o: &Outcome| {
        println!(
            "{name:>13}: recovery {} | sent {} (retries {}), shed {}, timed out {}, peak queue {}, segments after the spike ok {} failed {}",
            o.recovery_s.map_or_else(|| format!("> {} s", HORIZON_S - WARMUP_S - SPIKE_S), |s| format!("{s:.1} s")),
            o.sent, o.retries, o.shed, o.timed_out, o.peak_queue, o.critical_ok_after, o.critical_failed_after,
        );
    };
    println!(
        "retry storm: {DEVICES} devices, capacity {CAPACITY}/s -> {SPIKE_CAPACITY}/s for {SPIKE_S} s, shed answer cost {SHED_COST}, client timeout {CLIENT_TIMEOUT_MS} ms"
    );
    show("naive", &naive);
    show("back-pressure", &honoured);
    let bp = honoured
        .recovery_s
        .expect("back-pressure recovers within the horizon");
    let naive_s = naive
        .recovery_s
        .unwrap_or((HORIZON_S - WARMUP_S - SPIKE_S) as f64);
    println!(
        "ratio: {:.1}x faster with back-pressure",
        naive_s / bp.max(0.1)
    );
    assert!(
        naive_s >= 5.0 * bp,
        "naive {naive_s} s vs back-pressure {bp} s"
    );
}
