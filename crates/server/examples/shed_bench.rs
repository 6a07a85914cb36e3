//! The shedding benchmark under 4× overload (issue 5 goals: CRITICAL success ≥ 99.9 %,
//! CRITICAL p99 ≤ 2× unloaded, goodput ≥ 90 % of measured capacity). Bounded (~45 s).
//!
//! For two mixes (NON_CRITICAL = cheap telemetry beacons, or expensive `hls.min.js`
//! downloads), each about 21 s:
//!
//! 1. **capacity**: a node on one runtime worker, shedding off, driven back to back by
//!    64 connections with the 10/30/60 mix (CRITICAL segments of a member in playback,
//!    DEGRADED master playlists, NON_CRITICAL per mix); capacity = 2xx/s and bytes/s;
//! 2. **unloaded**: 8 CRITICAL connections at 25 req/s each, shedding on: latency p50/p99;
//! 3. **4× overload**: shedding on (its own monitor, `cpu_source = "runtime"`), the same
//!    mix paced at 4 × capacity over 400 connections; latency counts from when a request
//!    was due, so queueing in the node (or the generator) is charged.
//!
//! Run: `cargo run -p server --release --example shed_bench` (optional argument:
//! segment size in KiB, default 256). The generator runs in the same process on two
//! runtime workers; the node has one, so the figures hold on a 2-core machine.

#[path = "../tests/shed_load/mod.rs"]
mod shed_load;

use std::time::Duration;

use server::shed::ShedSettings;
use shed_load::{drive, report, start_node, Class, ClassReport, Plan, SEGMENT_PATH};

const SETTINGS: &str = r#"
cpu_source = "runtime"
cpu_sample_ms = 100
[classifier.routes.playback_start]
bucket = "degraded"
score = 45
"#;

/// The NON_CRITICAL traffic of a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mix {
    /// Telemetry beacons (`POST /telemetry`, 204): cheap to serve, about as cheap as
    /// a shed answer.
    Beacons,
    /// Downloads of the player's `hls.min.js` (route class `other`, ~610 KB): low
    /// priority and expensive, like prefetch or archive downloads.
    Assets,
}

fn classes(mix: Mix) -> Vec<Class> {
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
            0.6,
        ),
        Mix::Assets => Class::get("non_critical", "/player/hls.min.js", &browser, 0.6),
    };
    vec![
        Class::get("critical", SEGMENT_PATH, &member, 0.1),
        Class::get("degraded", "/s/index.m3u8", &browser, 0.3),
        non_critical,
    ]
}

fn run(settings: &ShedSettings, segment_bytes: usize, plan: &Plan) -> Vec<ClassReport> {
    let node = start_node(settings, 1, segment_bytes);
    let generator = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("generator runtime");
    let samples = generator.block_on(drive(node.addr, plan));
    drop(node);
    // Skip the first second (connections opening, overload level rising).
    report(
        &samples,
        plan.classes.len(),
        Duration::from_secs(1),
        plan.duration,
    )
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

fn ok_per_second(reports: &[ClassReport], seconds: f64) -> (f64, f64) {
    let ok = reports.iter().map(|r| r.ok as f64).sum::<f64>() / seconds;
    let bytes = reports.iter().map(|r| r.ok_bytes as f64).sum::<f64>() / seconds;
    (ok, bytes)
}

fn bench(mix: Mix, segment_kib: usize) {
    let segment_bytes = segment_kib * 1024;
    let shedding: ShedSettings = toml::from_str(SETTINGS).expect("valid settings");
    let off = ShedSettings {
        enabled: false,
        ..shedding.clone()
    };
    println!("== mix {mix:?}: 10 % CRITICAL segments ({segment_kib} KiB), 30 % DEGRADED master playlists, 60 % NON_CRITICAL {}", match mix {
        Mix::Beacons => "telemetry beacons",
        Mix::Assets => "hls.min.js downloads",
    });

    let capacity_plan = Plan {
        classes: classes(mix),
        connections: 64,
        rate_per_connection: None,
        duration: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
    };
    let seconds = 4.0;
    let cap = run(&off, segment_bytes, &capacity_plan);
    let (capacity, capacity_bytes) = ok_per_second(&cap, seconds);
    print(
        &format!(
            "capacity (shedding off, 64 connections back to back): {capacity:.0} req/s, {:.1} MB/s",
            capacity_bytes / 1e6
        ),
        &capacity_plan,
        &cap,
        seconds,
    );

    let unloaded_plan = Plan {
        classes: vec![classes(mix).remove(0)],
        connections: 8,
        rate_per_connection: Some(25.0),
        duration: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
    };
    let unloaded = run(&shedding, segment_bytes, &unloaded_plan);
    print(
        "unloaded (8 CRITICAL connections x 25 req/s, shedding on)",
        &unloaded_plan,
        &unloaded,
        seconds,
    );

    let connections = 400;
    let overload_plan = Plan {
        classes: classes(mix),
        connections,
        rate_per_connection: Some(4.0 * capacity / connections as f64),
        duration: Duration::from_secs(11),
        timeout: Duration::from_secs(5),
    };
    let seconds = 10.0;
    let over = run(&shedding, segment_bytes, &overload_plan);
    print(
        &format!(
            "4x overload (due {:.0} req/s over {connections} paced connections, shedding on)",
            4.0 * capacity
        ),
        &overload_plan,
        &over,
        seconds,
    );

    let (goodput, goodput_bytes) = ok_per_second(&over, seconds);
    let sent: f64 = over.iter().map(|r| r.sent_in_window as f64).sum::<f64>() / seconds;
    let crit = &over[0];
    let base_p99 = unloaded[0].service_percentile(99.0).as_secs_f64();
    let p99 = crit.service_percentile(99.0).as_secs_f64();
    println!("summary ({mix:?}):");
    println!(
        "  load the generator achieved: {sent:.0} req/s = {:.2}x capacity",
        sent / capacity
    );
    println!(
        "  CRITICAL success: {:.3} % (goal >= 99.9 %)",
        crit.success() * 100.0
    );
    println!(
        "  CRITICAL p99 (from send): {:.3} ms vs {:.3} ms unloaded = {:.2}x (goal <= 2x); from due: {:.3} ms",
        p99 * 1e3,
        base_p99 * 1e3,
        p99 / base_p99.max(1e-9),
        crit.percentile(99.0).as_secs_f64() * 1e3
    );
    println!(
        "  goodput: {goodput:.0} req/s = {:.1} % of capacity; {:.1} MB/s = {:.1} % of capacity bytes (goal >= 90 %)",
        goodput / capacity * 100.0,
        goodput_bytes / 1e6,
        goodput_bytes / capacity_bytes.max(1.0) * 100.0
    );
}

fn main() {
    let segment_kib: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(256);
    for mix in [Mix::Beacons, Mix::Assets] {
        bench(mix, segment_kib);
    }
}
