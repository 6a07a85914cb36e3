//! The shedding benchmark under 4× overload (issue 5 goals: CRITICAL success ≥ 99.9 %,
//! CRITICAL p99 ≤ 2× unloaded, goodput ≥ 90 % of measured capacity). Bounded (~9 min).
//!
//! For two mixes (NON_CRITICAL = cheap telemetry beacons, or expensive `hls.min.js`
//! downloads):
//!
//! 1. **capacity**: a node on one runtime worker, shedding off, driven back to back by
//!    64 connections with the 10/30/60 mix (CRITICAL segments of a member in playback,
//!    DEGRADED media playlists, NON_CRITICAL per mix; the route table is re-ranked
//!    so); capacity = 2xx/s and bytes/s;
//!    then each class alone, for its own capacity: goodput is served work, each
//!    request weighted by 1/(its class's capacity), so 100 % is the node fully busy;
//! 2. **unloaded**: the viewer probe alone — 8 CRITICAL connections at 50 req/s each,
//!    on a thread of its own beside the node, shedding on: latency p50/p99;
//! 3. **4× overload**, paced at 4 × capacity over 400 connections, in two shapes —
//!    `same mix` (every class × 4, so CRITICAL alone asks 4× what the node served of
//!    it) and `flood` (CRITICAL at the rate the node served it at capacity, the other
//!    3.9 × capacity DEGRADED and NON_CRITICAL, 1:2) — each with both level sources:
//!    `pressure` (the estimator) and `feedback` (the controller), each without and
//!    with the pause of connections that ignore the back-pressure answer
//!    (`violator_pause_ms`; the generator's connections ignore it), and with the
//!    priority lane (`priority_lane = "realtime"`). The viewer probe
//!    runs through every overload run: its latency is the goal's CRITICAL latency,
//!    read by a client that is not itself behind the flood's backlog (the flood's own
//!    CRITICAL requests are reported too, from send and from when they were due, so
//!    queueing in the node or the generator is charged). The level the node used is
//!    sampled every 100 ms.
//!
//! Run: `cargo run -p server --release --example shed_bench` (optional arguments:
//! segment size in KiB, default 256; then `beacons` or `assets` for one mix only). The node runs on one runtime worker pinned to
//! CPU 0 with the probe, the generator on two workers pinned to CPU 1 (`taskset` on
//! the thread ids), so the generator never takes the node's core; on a one-core
//! machine nothing is pinned.

#[path = "../tests/shed_load/mod.rs"]
mod shed_load;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use server::shed::{LanePriority, ShedSettings};
use shed_load::{
    drive, pin_current_thread, report, start_node_on, Class, ClassReport, Plan, SEGMENT_PATH,
};

/// No connection is paused (`violator_pause_ms = 0`): each generator connection stands
/// for a stream of distinct devices sending once each; the `+ pause` runs turn the
/// pause on, for the same flood from persistent connections that ignore the answer.
/// The route table is re-ranked so each class is what it is named: media playlists
/// DEGRADED (45, +5 in playback), the player's script (a playback start by default)
/// NON_CRITICAL (10).
const SETTINGS: &str = r#"
cpu_source = "runtime"
cpu_sample_ms = 100
violator_pause_ms = 0
[classifier.routes.live_playlist]
bucket = "degraded"
score = 45
[classifier.routes.playback_start]
bucket = "non_critical"
score = 10
"#;

/// The same, with the level from the feedback controller (ticks every 20 ms).
const CONTROLLED: &str = r#"
cpu_source = "runtime"
cpu_sample_ms = 100
violator_pause_ms = 0
level_source = "feedback"
tick_ms = 20
[classifier.routes.live_playlist]
bucket = "degraded"
score = 45
[classifier.routes.playback_start]
bucket = "non_critical"
score = 10
"#;

/// CPUs for the node and the generator, when there are two to separate.
/// Read once, before any thread is pinned (a pinned thread sees one CPU).
fn cpus() -> Option<(usize, usize)> {
    static CPUS: std::sync::OnceLock<Option<(usize, usize)>> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        (n >= 2).then_some((0, 1))
    })
}

/// The overload level the node used during a run, sampled every 100 ms.
#[derive(Debug, Default)]
struct LevelTrace {
    /// Mean busy share of the node's runtime worker (is the node the bottleneck?).
    busy: f64,
    min: f64,
    max: f64,
    mean: f64,
    mean_threshold: f64,
    /// Connections paused for ignoring the back-pressure answer during the run.
    pauses: u64,
}

/// The NON_CRITICAL traffic of a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mix {
    /// Telemetry beacons (`POST /telemetry`, 204): cheap to serve, about as cheap as
    /// a shed answer.
    Beacons,
    /// Downloads of the player's `hls.min.js` (~610 KB; re-ranked NON_CRITICAL here):
    /// low priority and expensive, like prefetch or archive downloads.
    Assets,
}

fn classes(mix: Mix, shares: [f64; 3]) -> Vec<Class> {
    let member = [
        ("X-Brdyun-Device", "browser"),
        ("X-Brdyun-Member", "viewer-1"),
        ("X-Brdyun-Playback", "1"),
    ];
    let browser = [("X-Brdyun-Device", "browser")];
    let non_critical = match mix {
        Mix::Beacons => Class::post(
            "non_critical",
            "/telemetry",
            &browser,
            br#"{"event":"heartbeat","bufferSeconds":8.1}"#,
            shares[2],
        ),
        Mix::Assets => Class::get("non_critical", "/player/hls.min.js", &browser, shares[2]),
    };
    vec![
        Class::get("critical", SEGMENT_PATH, &member, shares[0]),
        Class::get("degraded", "/s/mono.m3u8", &browser, shares[1]),
        non_critical,
    ]
}

const MIX_SHARES: [f64; 3] = [0.1, 0.3, 0.6];

fn run(
    settings: &ShedSettings,
    segment_bytes: usize,
    plan: &Plan,
    probe: Option<&Plan>,
) -> (Vec<ClassReport>, LevelTrace, Option<ClassReport>) {
    let pins = cpus();
    let node = start_node_on(settings, 1, segment_bytes, pins.map(|(node, _)| node));
    let generator_cpu = pins.map(|(_, generator)| generator);
    // Two workers even when pinned to one CPU: one worker alone reached less load.
    let generator = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(move || {
            if let Some(cpu) = generator_cpu {
                pin_current_thread(cpu);
            }
        })
        .enable_all()
        .build()
        .expect("generator runtime");
    // The viewer probe: its own thread beside the node, so the flood generator's
    // backlog never delays its requests or its reading of the answers.
    let probe = probe.cloned().map(|probe| {
        let addr = node.addr;
        let node_cpu = pins.map(|(node, _)| node);
        std::thread::spawn(move || {
            if let Some(cpu) = node_cpu {
                pin_current_thread(cpu);
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("probe runtime");
            let samples = runtime.block_on(drive(addr, &probe));
            report(&samples, 1, Duration::from_secs(1), probe.duration)
                .pop()
                .expect("one class")
        })
    });
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let shedder = Arc::clone(&node.shedder);
        let done = Arc::clone(&done);
        let skip = 10;
        std::thread::spawn(move || {
            let mut levels = Vec::new();
            let mut k = 0;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                k += 1;
                if k > skip {
                    let mut text = String::new();
                    shedder.render_metrics(&mut text);
                    let busy = text
                        .lines()
                        .find_map(|l| l.strip_prefix("brdyun_shed_cpu_utilisation "))
                        .and_then(|v| v.parse::<f64>().ok())
                        .unwrap_or(0.0);
                    levels.push((
                        shedder.level().get(),
                        f64::from(shedder.threshold().get()),
                        busy,
                    ));
                }
            }
            levels
        })
    };
    let samples = generator.block_on(drive(node.addr, plan));
    let probe = probe.map(|p| p.join().expect("probe"));
    done.store(true, Ordering::Relaxed);
    let levels = sampler.join().expect("level sampler");
    let pauses = node.shedder.connection_pauses();
    drop(node);
    let n = levels.len().max(1) as f64;
    let trace = LevelTrace {
        busy: levels.iter().map(|l| l.2).sum::<f64>() / n,
        min: levels.iter().map(|l| l.0).fold(f64::INFINITY, f64::min),
        max: levels.iter().map(|l| l.0).fold(0.0, f64::max),
        mean: levels.iter().map(|l| l.0).sum::<f64>() / n,
        mean_threshold: levels.iter().map(|l| l.1).sum::<f64>() / n,
        pauses,
    };
    // Skip the first second (connections opening, overload level rising).
    let reports = report(
        &samples,
        plan.classes.len(),
        Duration::from_secs(1),
        plan.duration,
    );
    (reports, trace, probe)
}

fn print(title: &str, plan: &Plan, reports: &[ClassReport], seconds: f64) {
    println!("{title}");
    for (class, r) in plan.classes.iter().zip(reports) {
        println!(
            "  {:>12}: due {:>7.0}/s sent {:>7.0}/s ok {:>7.0}/s ({:>7.1} MB/s), shed {:>5.1} %, failed {:>5}, success {:>7.3} %, p99 from due {:>9.3} ms, from send p50 {:>7.3} ms p99 {:>8.3} ms",
            class.name,
            r.sent as f64 / seconds,
            r.sent_in_window as f64 / seconds,
            r.ok as f64 / seconds,
            r.ok_bytes as f64 / seconds / 1e6,
            r.shed_share() * 100.0,
            r.failed,
            r.success() * 100.0,
            r.percentile(99.0).as_secs_f64() * 1e3,
            r.service_percentile(50.0).as_secs_f64() * 1e3,
            r.service_percentile(99.0).as_secs_f64() * 1e3,
        );
    }
}

/// 2xx answers and their bytes per second, by completion time in the window.
fn ok_per_second(reports: &[ClassReport], seconds: f64) -> (f64, f64) {
    let ok = reports
        .iter()
        .map(|r| r.ok_done_in_window as f64)
        .sum::<f64>()
        / seconds;
    let bytes = reports
        .iter()
        .map(|r| r.ok_bytes_done_in_window as f64)
        .sum::<f64>()
        / seconds;
    (ok, bytes)
}

fn bench(mix: Mix, segment_kib: usize) {
    let segment_bytes = segment_kib * 1024;
    let pressure: ShedSettings = toml::from_str(SETTINGS).expect("valid settings");
    let controlled: ShedSettings = toml::from_str(CONTROLLED).expect("valid settings");
    let off = ShedSettings {
        enabled: false,
        ..pressure.clone()
    };
    println!("== mix {mix:?}: 10 % CRITICAL segments ({segment_kib} KiB), 30 % DEGRADED media playlists, 60 % NON_CRITICAL {}", match mix {
        Mix::Beacons => "telemetry beacons",
        Mix::Assets => "hls.min.js downloads",
    });

    let capacity_plan = Plan {
        classes: classes(mix, MIX_SHARES),
        connections: 64,
        rate_per_connection: None,
        duration: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
    };
    let seconds = 4.0;
    let (cap, cap_trace, _) = run(&off, segment_bytes, &capacity_plan, None);
    let (capacity, capacity_bytes) = ok_per_second(&cap, seconds);
    let critical_capacity = cap[0].ok_done_in_window as f64 / seconds;
    print(
        &format!(
            "capacity (shedding off, 64 connections back to back): {capacity:.0} req/s, {:.1} MB/s; node worker busy {:.0} %",
            capacity_bytes / 1e6,
            cap_trace.busy * 100.0
        ),
        &capacity_plan,
        &cap,
        seconds,
    );

    // Each class alone, back to back: its own capacity, so a request of class k costs
    // 1/capacity_k of the node and served work can be added up across classes.
    let class_capacity: Vec<(f64, f64)> = (0..3)
        .map(|k| {
            let plan = Plan {
                classes: vec![classes(mix, MIX_SHARES).remove(k)],
                connections: 64,
                rate_per_connection: None,
                duration: Duration::from_secs(4),
                timeout: Duration::from_secs(5),
            };
            let (alone, trace, _) = run(&off, segment_bytes, &plan, None);
            (alone[0].ok_done_in_window as f64 / 3.0, trace.busy)
        })
        .collect();
    let (class_capacity, class_busy): (Vec<f64>, Vec<f64>) = class_capacity.into_iter().unzip();
    let work = |reports: &[ClassReport], seconds: f64| -> f64 {
        reports
            .iter()
            .zip(&class_capacity)
            .map(|(r, cap)| r.ok_done_in_window as f64 / seconds / cap.max(1.0))
            .sum()
    };
    println!(
        "  each class alone (shedding off, 64 connections back to back): critical {:.0} req/s (node busy {:.0} %), degraded {:.0} req/s ({:.0} %), non_critical {:.0} req/s ({:.0} %); the mix's capacity run used {:.2} of the node by these costs",
        class_capacity[0],
        class_busy[0] * 100.0,
        class_capacity[1],
        class_busy[1] * 100.0,
        class_capacity[2],
        class_busy[2] * 100.0,
        work(&cap, seconds)
    );

    // A viewer: 8 CRITICAL connections at 50 req/s each, on its own thread; measured
    // alone (unloaded) and then during every overload run.
    let probe_plan = Plan {
        classes: vec![classes(mix, MIX_SHARES).remove(0)],
        connections: 8,
        rate_per_connection: Some(50.0),
        duration: Duration::from_secs(11),
        timeout: Duration::from_secs(5),
    };
    let nothing = Plan {
        connections: 0,
        ..probe_plan.clone()
    };
    let (_, _, unloaded) = run(&pressure, segment_bytes, &nothing, Some(&probe_plan));
    let unloaded = unloaded.expect("probe ran");
    print(
        "unloaded (the viewer probe alone: 8 CRITICAL connections x 50 req/s, shedding on)",
        &probe_plan,
        std::slice::from_ref(&unloaded),
        10.0,
    );
    let base_p50 = unloaded.service_percentile(50.0).as_secs_f64();
    let base_p99 = unloaded.service_percentile(99.0).as_secs_f64();

    let connections = 400;
    let offered = 4.0 * capacity;
    let flood_critical = (critical_capacity / offered).min(0.1);
    let flood_rest = 1.0 - flood_critical;
    let shapes = [
        ("same mix", MIX_SHARES),
        (
            "flood",
            [flood_critical, flood_rest / 3.0, flood_rest * 2.0 / 3.0],
        ),
    ];
    let seconds = 10.0;
    for (shape, shares) in shapes {
        let held = |settings: &ShedSettings| ShedSettings {
            violator_pause_ms: 1000,
            ..settings.clone()
        };
        let (pressure_held, controlled_held) = (held(&pressure), held(&controlled));
        let laned = |settings: &ShedSettings| ShedSettings {
            priority_lane: LanePriority::Realtime,
            ..settings.clone()
        };
        let (controlled_laned, pressure_held_laned, controlled_held_laned) = (
            laned(&controlled),
            laned(&pressure_held),
            laned(&controlled_held),
        );
        for (source, settings) in [
            ("pressure", &pressure),
            ("feedback", &controlled),
            ("pressure + pause", &pressure_held),
            ("feedback + pause", &controlled_held),
            ("feedback + lane", &controlled_laned),
            ("pressure + pause + lane", &pressure_held_laned),
            ("feedback + pause + lane", &controlled_held_laned),
        ] {
            let plan = Plan {
                classes: classes(mix, shares),
                connections,
                rate_per_connection: Some(offered / connections as f64),
                duration: Duration::from_secs(11),
                timeout: Duration::from_secs(5),
            };
            let (over, trace, probe) = run(settings, segment_bytes, &plan, Some(&probe_plan));
            let probe = probe.expect("probe ran");
            print(
                &format!(
                    "4x overload, {shape} (CRITICAL share {:.3}), level_source = {source}: due {offered:.0} req/s over {connections} paced connections",
                    shares[0]
                ),
                &plan,
                &over,
                seconds,
            );
            let (goodput, goodput_bytes) = ok_per_second(&over, seconds);
            let sent: f64 = over.iter().map(|r| r.sent_in_window as f64).sum::<f64>() / seconds;
            let crit = &over[0];
            let p50 = crit.service_percentile(50.0).as_secs_f64();
            let p99 = crit.service_percentile(99.0).as_secs_f64();
            println!("  summary ({mix:?}, {shape}, {source}):");
            println!(
                "    offered: {sent:.0} req/s sent = {:.2}x capacity ({:.0} req/s)",
                sent / capacity,
                capacity
            );
            println!(
                "    overload level: mean {:.2} (min {:.2}, max {:.2}), mean threshold {:.0}; node worker busy {:.0} %",
                trace.mean,
                trace.min,
                trace.max,
                trace.mean_threshold,
                trace.busy * 100.0
            );
            println!(
                "    CRITICAL success: {:.3} % in the flood, {:.3} % of the viewer probe (goal >= 99.9 %)",
                crit.success() * 100.0,
                probe.success() * 100.0
            );
            let probe_p50 = probe.service_percentile(50.0).as_secs_f64();
            let probe_p99 = probe.service_percentile(99.0).as_secs_f64();
            println!(
                "    viewer probe (CRITICAL): p50 {:.3} ms vs {:.3} ms unloaded; p99 {:.3} ms vs {:.3} ms = {:.2}x (goal <= 2x)",
                probe_p50 * 1e3,
                base_p50 * 1e3,
                probe_p99 * 1e3,
                base_p99 * 1e3,
                probe_p99 / base_p99.max(1e-9),
            );
            println!(
                "    CRITICAL in the flood (read by the loaded generator): p50 {:.3} ms, p99 {:.3} ms; p99 from due {:.3} ms",
                p50 * 1e3,
                p99 * 1e3,
                crit.percentile(99.0).as_secs_f64() * 1e3
            );
            println!(
                "    connection pauses: {}\n    goodput: {:.1} % of the node's capacity in served work (each class weighted by its own cost; goal >= 90 %); {goodput:.0} req/s = {:.1} % of the mix capacity in requests; {:.1} MB/s = {:.1} % in bytes",
                trace.pauses,
                work(&over, seconds) * 100.0,
                goodput / capacity * 100.0,
                goodput_bytes / 1e6,
                goodput_bytes / capacity_bytes.max(1.0) * 100.0
            );
        }
    }
}

fn main() {
    let segment_kib: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(256);
    println!(
        "command: cargo run -p server --release --example shed_bench -- {segment_kib}; node and probe pinned to cpu {:?}, generator to cpu {:?}",
        cpus().map(|c| c.0),
        cpus().map(|c| c.1)
    );
    // Optional second argument: only this mix (`beacons` or `assets`).
    let only = std::env::args().nth(2).unwrap_or_default().to_lowercase();
    for mix in [Mix::Beacons, Mix::Assets]
        .into_iter()
        .filter(|m| format!("{m:?}").to_lowercase().contains(&only))
    {
        bench(mix, segment_kib);
    }
}
