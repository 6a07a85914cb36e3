//! What a refusal costs the node next to serving the same request (SHED-3: "shed
//! cheaply"): for each request kind, 64 keep-alive connections send it back to back
//! for 3 s, once served (shedding off) and once refused (overload level forced to 1,
//! so every priority below 99 gets the back-pressure answer). The node's CPU time is
//! read from its runtime threads (`/proc/self/task/*/stat`), so the figure is the
//! node's own cost per answer, whatever the load generator in the same process costs.
//!
//! Run: `cargo run -p server --release --example refusal_cost`. The node runs on one
//! runtime worker pinned to CPU 0, the generator on two pinned to CPU 1 (where there
//! are two CPUs).
//! An optional argument keeps only the kinds whose name contains it.

#[path = "../tests/shed_load/mod.rs"]
mod shed_load;

use std::time::Duration;

use server::shed::ShedSettings;
use shed::OverloadLevel;
use shed_load::{
    drive, node_cpu_time, pin_current_thread, report, start_node_on, Class, Plan, SEGMENT_PATH,
};

/// Every refusal answered (no connection paused for repeating refused requests).
const SETTINGS: &str = r#"
cpu_source = "off"
violator_pause_ms = 0
"#;

/// Node CPU per answer and answers per second of one run.
struct Cost {
    per_answer: Duration,
    answers_per_second: f64,
    node_busy: f64,
    refused_share: f64,
}

fn measure(settings: &ShedSettings, class: &Class, force: bool) -> Cost {
    let two_cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) >= 2;
    let node = start_node_on(settings, 1, 256 * 1024, two_cpus.then_some(0));
    if force {
        node.shedder
            .levels()
            .force_level(Some(OverloadLevel::new(1.0)));
    }
    let generator = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(|| {
            if std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) >= 2 {
                pin_current_thread(1);
            }
        })
        .enable_all()
        .build()
        .expect("generator runtime");
    let plan = Plan {
        classes: vec![class.clone()],
        connections: 64,
        rate_per_connection: None,
        duration: Duration::from_secs(3),
        timeout: Duration::from_secs(5),
        skip_missed: false,
    };
    let cpu_before = node_cpu_time();
    let started = std::time::Instant::now();
    let samples = generator.block_on(drive(node.addr, &plan));
    let wall = started.elapsed();
    let cpu = node_cpu_time().saturating_sub(cpu_before);
    drop(node);
    let r = &report(&samples, 1, Duration::ZERO, plan.duration)[0];
    let answers = (r.ok + r.shed).max(1);
    Cost {
        per_answer: cpu / answers as u32,
        answers_per_second: answers as f64 / wall.as_secs_f64(),
        node_busy: cpu.as_secs_f64() / wall.as_secs_f64(),
        refused_share: r.shed as f64 / answers as f64,
    }
}

fn main() {
    let settings: ShedSettings = toml::from_str(SETTINGS).expect("valid settings");
    let off = ShedSettings {
        enabled: false,
        ..settings.clone()
    };
    let browser = [("X-Brdyun-Device", "browser")];
    let kinds = [
        Class::post(
            "telemetry beacon",
            "/telemetry",
            &browser,
            br#"{"event":"heartbeat","bufferSeconds":8.1}"#,
            1.0,
        ),
        Class::get("master playlist", "/s/index.m3u8", &browser, 1.0),
        Class::get("media playlist", "/s/mono.m3u8", &browser, 1.0),
        Class::get("segment, 256 KiB", SEGMENT_PATH, &browser, 1.0),
        Class::get("hls.min.js", "/player/hls.min.js", &browser, 1.0),
    ];
    println!("command: cargo run -p server --release --example refusal_cost");
    println!(
        "{:>18} | {:>26} | {:>26} | refusal / serve",
        "request", "served: node µs (req/s)", "refused: node µs (req/s)"
    );
    // Optional argument: only the kinds whose name contains it (e.g. to profile one).
    let only = std::env::args().nth(1).unwrap_or_default();
    for class in kinds.iter().filter(|k| k.name.contains(only.as_str())) {
        let served = measure(&off, class, false);
        let refused = measure(&settings, class, true);
        println!(
            "{:>18} | {:>8.2} µs ({:>6.0}/s, {:>3.0} %) | {:>8.2} µs ({:>6.0}/s, {:>3.0} %) | {:.2} ({:.0} % refused)",
            class.name,
            served.per_answer.as_secs_f64() * 1e6,
            served.answers_per_second,
            served.node_busy * 100.0,
            refused.per_answer.as_secs_f64() * 1e6,
            refused.answers_per_second,
            refused.node_busy * 100.0,
            refused.per_answer.as_secs_f64() / served.per_answer.as_secs_f64().max(1e-12),
            refused.refused_share * 100.0,
        );
    }
}
