//! Real overload on loopback (SHED-1, SHED-2): a node on one runtime worker is driven
//! past its capacity by a bounded load generator over real TCP connections — 10 %
//! CRITICAL (segments of a member in playback), 30 % DEGRADED (master playlists, made
//! DEGRADED through `[shedding.classifier]`), 60 % NON_CRITICAL (`POST /telemetry`
//! beacons). The node's own overload monitor measures the overload (the busy share of
//! its runtime worker: `cpu_source = "runtime"`, because the generator shares the
//! process); nothing is forced. CRITICAL keeps succeeding while the others are shed,
//! lower priorities first.

mod shed_load;

use std::time::Duration;

use server::shed::ShedSettings;
use shed::Bucket;
use shed_load::{drive, report, start_node, Class, Plan, SEGMENT_PATH};

/// No connection is paused for repeating refused requests (`violator_pause_ms = 0`):
/// each connection stands for a stream of distinct devices, each sending once, so the
/// flood reaches the layer (`shed_contract.rs` tests the pause).
const SETTINGS: &str = r#"
level_source = "pressure"
priority_lane = "off"
tick_ms = 100
cpu_source = "runtime"
cpu_sample_ms = 100
violator_pause_ms = 0
[classifier.routes.playback_start]
bucket = "degraded"
score = 45
"#;

/// The same with the cut controller, which moves the cut through the requested
/// priorities and sheds the one at the cut in part, judging by the busy share as well
/// as the delay (the node's default judges by the delay alone; `process_shed.rs`
/// tests the defaults).
const CUT: &str = r#"
priority_lane = "off"
cpu_source = "runtime"
cpu_sample_ms = 100
violator_pause_ms = 0
level_source = "cut"
tick_ms = 20
[cut]
target_ms = 10.0
cpu_target = 0.9
cpu_low = 0.8
interval_ms = 100
[classifier.routes.playback_start]
bucket = "degraded"
score = 45
"#;

#[test]
fn critical_keeps_succeeding_while_lower_priorities_are_shed_first() {
    past_capacity(SETTINGS, true, 0.5);
}

#[test]
fn the_cut_controller_keeps_the_same_order() {
    // Shedding NON_CRITICAL, in part or whole, may be all this flood needs: the cut
    // then never reaches DEGRADED. It sheds only the share the flood needs, which
    // depends on the machine (36-100 % of NON_CRITICAL seen).
    past_capacity(CUT, false, 0.2);
}

/// Drives the node past capacity; `degraded_shed`: DEGRADED must be shed too;
/// `nc_shed`: the least share of NON_CRITICAL shed that shows the node was overloaded.
fn past_capacity(toml_settings: &str, degraded_shed: bool, nc_shed: f64) {
    let settings: ShedSettings = toml::from_str(toml_settings).expect("valid [shedding]");
    let node = start_node(&settings, 1, 32 * 1024);
    let member = [
        ("X-Brdyun-Device", "browser"),
        ("X-Brdyun-Member", "viewer-1"),
        ("X-Brdyun-Playback", "1"),
    ];
    let browser = [("X-Brdyun-Device", "browser")];
    let plan = Plan {
        classes: vec![
            Class::get("critical", SEGMENT_PATH, &member, 0.1),
            Class::get("degraded", "/s/index.m3u8", &browser, 0.3),
            Class::post(
                "non_critical",
                "/telemetry",
                &browser,
                br#"{"event":"heartbeat","bufferSeconds":8.1}"#,
                0.6,
            ),
        ],
        connections: 100,
        rate_per_connection: None,
        duration: Duration::from_secs(8),
        timeout: Duration::from_secs(5),
        skip_missed: false,
    };
    let generator = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("generator runtime");
    let samples = generator.block_on(drive(node.addr, &plan));
    let peak_counts = [
        node.shedder.metrics().counts(Bucket::Critical),
        node.shedder.metrics().counts(Bucket::Degraded),
        node.shedder.metrics().counts(Bucket::NonCritical),
    ];
    drop(node);

    // The first 2 s are the rise of the overload level; judge the rest.
    let r = report(&samples, 3, Duration::from_secs(2), plan.duration);
    for (class, rep) in plan.classes.iter().zip(&r) {
        println!(
            "{:>12}: sent {:>6} ok {:>6} shed {:>6} failed {:>4} | success {:.4} shed {:.3} p50 {:?} p99 {:?} first shed at {:?}",
            class.name,
            rep.sent,
            rep.ok,
            rep.shed,
            rep.failed,
            rep.success(),
            rep.shed_share(),
            rep.percentile(50.0),
            rep.percentile(99.0),
            rep.first_shed
        );
    }
    println!("node counters (critical, degraded, non_critical): {peak_counts:?}");
    let (crit, deg, nc) = (&r[0], &r[1], &r[2]);
    assert!(
        crit.sent > 1000 && deg.sent > 1000 && nc.sent > 1000,
        "the generator ran"
    );
    assert!(
        nc.shed_share() > nc_shed,
        "the node was driven past capacity: NON_CRITICAL shed {:.3} > {nc_shed}",
        nc.shed_share()
    );
    assert!(
        crit.success() >= 0.99,
        "CRITICAL success {:.4} (shed {}, failed {})",
        crit.success(),
        crit.shed,
        crit.failed
    );
    if degraded_shed {
        assert!(deg.shed > 0, "DEGRADED is shed too");
    }
    assert!(
        nc.shed_share() >= deg.shed_share() && deg.shed_share() >= crit.shed_share(),
        "lower priorities are shed more: nc {:.3} deg {:.3} crit {:.3}",
        nc.shed_share(),
        deg.shed_share(),
        crit.shed_share()
    );
    let (first_nc, first_deg) = (nc.first_shed, deg.first_shed);
    assert!(
        first_nc.is_some() && (first_deg.is_none() || first_nc <= first_deg),
        "NON_CRITICAL is shed first: {first_nc:?} vs {first_deg:?}"
    );
    assert_eq!(peak_counts[0].shed, 0, "no CRITICAL request shed");
}
