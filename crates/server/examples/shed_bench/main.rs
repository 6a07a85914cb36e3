//! The shedding benchmark under 4× overload (goals: CRITICAL success ≥ 99.9 %,
//! CRITICAL p99 ≤ 2× unloaded, goodput ≥ 90 % of measured capacity). Bounded (~8 min).
//!
//! For two mixes (NON_CRITICAL = cheap telemetry beacons, or expensive `hls.min.js`
//! downloads), with CRITICAL segments of a member in playback and DEGRADED media
//! playlists (the route table is re-ranked so):
//!
//! 1. **peak**: each class alone, shedding off, 64 connections back to back (the
//!    better of pipelined and single requests): a request of class k weighs
//!    1/peak_k in "served work", and the 10/30/60 mix's peak is 1 / Σ share/peak;
//! 2. **capacity**: the highest paced rate of the 10/30/60 mix, over the overload
//!    runs' connections, that the node keeps up with (every class ≥ 97 % answered),
//!    configured as in the best run (cut, pause, lane) with the level held at 0;
//! 3. **unloaded**: the viewer probe alone — 16 CRITICAL connections at 50 req/s, on a
//!    thread of its own on the node's CPU under `SCHED_FIFO` 2 (so its own scheduling
//!    never adds to what it measures); then **the viewers' own load**: the overload's
//!    CRITICAL connections alone, at their rate, on the deployed node, the probe
//!    beside them (what CRITICAL traffic, which shares the lane with the probe, costs
//!    the probe without any overload);
//! 4. **4× overload** for 11 s over 400 paced connections: CRITICAL at the rate the mix
//!    has of it at capacity, the rest DEGRADED and NON_CRITICAL 1:2, from devices that
//!    ignore the back-pressure answer (a connection that falls behind skips what it
//!    missed); shedding off, the default settings, each level source, the connection pause, the priority
//!    lane (`"realtime"`) and their combinations, the probe running throughout; and
//!    the deployed configuration with the level held at 0 (what the flood's shape
//!    and the lane cost when nothing is shed);
//! 5. for the deployed configuration (cut, pause, lane), the node's **capacity for
//!    the traffic it served**: each class paced at a multiple of its served rate over
//!    the same connections, the highest multiple kept up with (goodput = 1 / it) — a
//!    check of the per-class weights that needs none (`SHED_BENCH_SERVED=0` skips it).
//!
//! The generator costs less per request than the node, so one core offers it 4×:
//! DEGRADED and beacon connections write [`PIPELINE`] requests at a time, and answer
//! bodies are dropped in the kernel (`MSG_TRUNC`). The generator busy-polls: on
//! loopback the node's CPU delivers each answer into the generator's socket, and
//! waking a generator asleep in `epoll_wait` is a cross-CPU interrupt the node would
//! pay, more often the less it sends. The node (one runtime worker) and
//! the probe are pinned to CPU 0, the generator (one thread) to CPU 1, with `taskset`
//! on the thread ids; on a one-core machine nothing is pinned.
//!
//! Run: `cargo run -p server --release --example shed_bench` (optional arguments:
//! segment size in KiB, default 256; `beacons` or `assets` for one mix; a run name,
//! e.g. `"cut + pause + lane"`, for the runs containing it; several joined by `|`).
//! `SHED_BENCH_CONNECTIONS` sets the overload runs' connection count (default 400).
//! With `SHED_BENCH_TRACE=1` every 100-ms sample of the level, busy share and queueing
//! delay is printed.

#[path = "../../tests/shed_load/mod.rs"]
mod shed_load;

#[macro_use]
mod settings;
mod mix;
mod node_run;
mod search;

use std::time::Duration;

use server::shed::{LanePriority, ShedSettings};
use shed_load::{Class, ClassReport, Plan};

use mix::{classes, Mix, MIX_SHARES, PIPELINE};
use node_run::{cpus, run};
use search::{highest_kept, kept_up, served_mix_capacity, SERVED_STEP, TRIAL_WINDOW_SECONDS};
use settings::{CONTROLLED, CUT, SETTINGS, TIGHT_TARGET_MS};

/// The deployed run with the cut's delay target at [`TIGHT_TARGET_MS`].
const CUT_TIGHT: &str = "cut + pause + lane, 15 ms wait";

/// The viewer probe's connections (each at 50 req/s): 8,800 samples in an 11-s run,
/// so its p99 is the 88th slowest answer.
const PROBE_CONNECTIONS: usize = 16;

/// The run with the node's default settings (the cut, the pause, the lane at nice −10
/// with one thread per core the node may use: one here), its CPU read from its core.
const DEFAULTS: &str = "defaults (cut + pause + nice lane)";

/// The defaults with the lane under `SCHED_FIFO` instead of at nice −10.
const DEFAULTS_REALTIME: &str = "defaults, real-time lane";

/// The overload run with the deployed settings but the level held at 0.
const LANE_NOTHING_SHED: &str = "pause + lane, nothing shed";

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

/// Each class's 2xx answers and their bytes completed in the window, the viewer
/// probe's counted with CRITICAL's: the node serves the probe like any viewer, and the
/// probe runs in the capacity trials as in the overload runs, so both count it.
fn answered(reports: &[ClassReport], probe: Option<&ClassReport>) -> Vec<(f64, f64)> {
    reports
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let probe = probe.filter(|_| k == 0);
            (
                (r.ok_done_in_window + probe.map_or(0, |p| p.ok_done_in_window)) as f64,
                (r.ok_bytes_done_in_window + probe.map_or(0, |p| p.ok_bytes_done_in_window)) as f64,
            )
        })
        .collect()
}

/// 2xx answers and their bytes per second, by completion time in the window.
fn ok_per_second(answered: &[(f64, f64)], seconds: f64) -> (f64, f64) {
    let ok = answered.iter().map(|a| a.0).sum::<f64>() / seconds;
    let bytes = answered.iter().map(|a| a.1).sum::<f64>() / seconds;
    (ok, bytes)
}

fn bench(mix: Mix, segment_kib: usize, runs: &str) {
    let segment_bytes = segment_kib * 1024;
    let pressure: ShedSettings = toml::from_str(SETTINGS).expect("valid settings");
    let controlled: ShedSettings = toml::from_str(CONTROLLED).expect("valid settings");
    let cut: ShedSettings = toml::from_str(CUT).expect("valid settings");
    // What a node configured with nothing but the re-ranking does, except that it
    // reads its pinned core (`host`): the default `process` source would count the
    // generator, which shares this process and spins the other core; on a node of its
    // own, `process` reads what `host` reads here.
    let defaults: ShedSettings =
        toml::from_str(concat!("cpu_source = \"host\"\n", reranked!())).expect("valid settings");
    // The cut with a tighter wait for admitted requests: it sheds to hold it.
    let mut cut_tight = cut.clone();
    cut_tight.cut.target_ms = TIGHT_TARGET_MS;
    let off = ShedSettings {
        enabled: false,
        ..pressure.clone()
    };
    println!("== mix {mix:?}: 10 % CRITICAL segments ({segment_kib} KiB), 30 % DEGRADED media playlists, 60 % NON_CRITICAL {}", match mix {
        Mix::Beacons => "telemetry beacons",
        Mix::Assets => "hls.min.js downloads",
    });

    // Each class alone, back to back: its own capacity, so a request of class k costs
    // 1/capacity_k of the node, served work adds up across classes, and the mix's
    // capacity is 1 / Σ share_k / capacity_k.
    // A pipelined class is measured both pipelined and one request at a time, and
    // its capacity is the better of the two (deep batches of large answers fill the
    // sockets and serve less).
    let alone: Vec<(f64, f64, f64)> = (0..3)
        .map(|k| {
            let class = classes(mix, MIX_SHARES).remove(k);
            let depths = if class.pipeline > 1 {
                vec![class.pipeline, 1]
            } else {
                vec![1]
            };
            depths
                .into_iter()
                .map(|depth| {
                    let plan = Plan {
                        classes: vec![class.clone().pipelined(depth)],
                        connections: 64,
                        rate_per_connection: None,
                        duration: Duration::from_secs(4),
                        timeout: Duration::from_secs(5),
                        skip_missed: false,
                    };
                    let (alone, trace, _) = run(false, &off, segment_bytes, &plan, None);
                    let r = &alone[0];
                    let bytes_each =
                        r.ok_bytes_done_in_window as f64 / r.ok_done_in_window.max(1) as f64;
                    (r.ok_done_in_window as f64 / 3.0, trace.busy, bytes_each)
                })
                .fold(
                    (0.0, 0.0, 0.0),
                    |best, m| if m.0 > best.0 { m } else { best },
                )
        })
        .collect();
    let class_capacity: Vec<f64> = alone.iter().map(|a| a.0).collect();
    let peak = 1.0
        / MIX_SHARES
            .iter()
            .zip(&class_capacity)
            .map(|(share, cap)| share / cap.max(1.0))
            .sum::<f64>();
    let peak_bytes: f64 = MIX_SHARES
        .iter()
        .zip(&alone)
        .map(|(share, a)| peak * share * a.2)
        .sum();
    let work = |answered: &[(f64, f64)], seconds: f64| -> f64 {
        answered
            .iter()
            .zip(&class_capacity)
            .map(|(a, cap)| a.0 / seconds / cap.max(1.0))
            .sum()
    };
    println!(
        "  each class alone (shedding off, 64 connections back to back, DEGRADED and NON_CRITICAL {PIPELINE} requests at a time): critical {:.0} req/s (node busy {:.0} %), degraded {:.0} req/s ({:.0} %), non_critical {:.0} req/s ({:.0} %); the 10/30/60 mix's peak: {peak:.0} req/s, {:.1} MB/s",
        class_capacity[0],
        alone[0].1 * 100.0,
        class_capacity[1],
        alone[1].1 * 100.0,
        class_capacity[2],
        alone[2].1 * 100.0,
        peak_bytes / 1e6,
    );

    // The mix's capacity: the highest paced rate of the 10/30/60 mix (in steps of 5 %
    // of the peak below it, 10 % above), over the same
    // connections as the overload runs, that the node keeps up with (at least 97 %
    // of every class answered 2xx in the window), configured as in the best run —
    // the cut, the pause, the lane — with the level held at 0.
    let deployed = ShedSettings {
        violator_pause_ms: 1000,
        priority_lane: LanePriority::Realtime,
        ..cut.clone()
    };
    let connections: usize = std::env::var("SHED_BENCH_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    // A viewer: 16 CRITICAL connections at 50 req/s each, on its own thread; measured
    // alone (unloaded), with the viewers' own load, and during every overload run.
    // On the node's CPU it may not spin: it waits on the timer's millisecond ticks.
    let probe_plan = Plan {
        classes: vec![Class {
            independent: false,
            ..classes(mix, MIX_SHARES).remove(0)
        }],
        connections: PROBE_CONNECTIONS,
        rate_per_connection: Some(50.0),
        duration: Duration::from_secs(11),
        timeout: Duration::from_secs(5),
        skip_missed: false,
    };
    // From the peak down until it keeps up, or up while it does.
    let sustained = highest_kept(0.1, 0.05, 0.3, 2.0, |fraction| {
        let rate = peak * fraction;
        let plan = Plan {
            classes: classes(mix, MIX_SHARES),
            connections,
            rate_per_connection: Some(rate / connections as f64),
            duration: Duration::from_secs(5),
            timeout: Duration::from_secs(5),
            skip_missed: false,
        };
        let (reports, trace, probe) =
            run(true, &deployed, segment_bytes, &plan, Some(&probe_plan));
        let seconds = TRIAL_WINDOW_SECONDS;
        let kept = kept_up(&reports, MIX_SHARES.iter().map(|share| rate * share));
        let answered = answered(&reports, probe.as_ref());
        let (ok, bytes) = ok_per_second(&answered, seconds);
        println!(
            "  the mix paced at {rate:.0} req/s ({:.0} % of its peak) over {connections} connections, nothing shed: {ok:.0} req/s answered, {:.1} MB/s, served work {:.2}, node CPU busy {:.0} % (worker {:.0} %, lane {:.0} % = {:.0} µs per CRITICAL request){}",
            fraction * 100.0,
            bytes / 1e6,
            work(&answered, seconds),
            trace.cpu.unwrap_or(f64::NAN) * 100.0,
            trace.worker * 100.0,
            trace.lane * 100.0,
            trace.lane / (reports[0].ok_done_in_window as f64 / seconds).max(1.0) * 1e6,
            if kept { ": kept up" } else { ": fell behind" }
        );
        kept.then(|| (ok, bytes, work(&answered, seconds)))
    })
    .map(|(_, sustained)| sustained);
    let (capacity, capacity_bytes, capacity_work) =
        sustained.expect("the node keeps up with 30 % of its peak");
    println!(
        "  capacity of the mix (the highest rate kept up with): {capacity:.0} req/s, {:.1} MB/s, served work {capacity_work:.2} of the peak",
        capacity_bytes / 1e6
    );

    let nothing = Plan {
        connections: 0,
        ..probe_plan.clone()
    };
    let (_, _, unloaded) = run(false, &pressure, segment_bytes, &nothing, Some(&probe_plan));
    let unloaded = unloaded.expect("probe ran");
    print(
        &format!("unloaded (the viewer probe alone: {PROBE_CONNECTIONS} CRITICAL connections x 50 req/s, shedding on)"),
        &probe_plan,
        std::slice::from_ref(&unloaded),
        10.0,
    );
    let base_p50 = unloaded.service_percentile(50.0).as_secs_f64();
    let base_p99 = unloaded.service_percentile(99.0).as_secs_f64();

    // 4x the mix's capacity: CRITICAL at the rate the mix has of it at capacity (real
    // viewers do not multiply in an overload), the rest DEGRADED and NON_CRITICAL 1:2.
    let offered = 4.0 * capacity;
    let critical = MIX_SHARES[0] * capacity / offered;
    let rest = 1.0 - critical;
    let shares = [critical, rest / 3.0, rest * 2.0 / 3.0];
    let seconds = 10.0;
    let pause = |settings: &ShedSettings| ShedSettings {
        violator_pause_ms: 1000,
        ..settings.clone()
    };
    let lane = |settings: &ShedSettings| ShedSettings {
        priority_lane: LanePriority::Realtime,
        ..settings.clone()
    };
    let overload_plan = |mix: Mix| Plan {
        classes: classes(mix, shares),
        connections,
        rate_per_connection: Some(offered / connections as f64),
        duration: Duration::from_secs(11),
        timeout: Duration::from_secs(5),
        skip_missed: true,
    };

    // The viewers' own load: the overload's CRITICAL connections alone, at their rate,
    // on the deployed node. What the probe's latency owes to CRITICAL traffic itself
    // (it shares the lane with the probe) rather than to the overload.
    let viewers = {
        let overload = overload_plan(mix);
        Plan {
            connections: overload.connections_per_class()[0],
            classes: vec![overload.classes[0].clone()],
            ..overload
        }
    };
    let (viewers_reports, viewers_trace, with_viewers) =
        run(true, &deployed, segment_bytes, &viewers, Some(&probe_plan));
    let with_viewers = with_viewers.expect("probe ran");
    print(
        &format!(
            "the viewers' own load (the overload's {} CRITICAL connections alone, deployed settings), the probe beside it; lane {:.0} % busy",
            viewers.connections,
            viewers_trace.lane * 100.0
        ),
        &viewers,
        &viewers_reports,
        seconds,
    );
    print(
        "  the probe",
        &probe_plan,
        std::slice::from_ref(&with_viewers),
        seconds,
    );
    let viewers_p99 = with_viewers.service_percentile(99.0).as_secs_f64();

    for (source, settings) in [
        ("no shedding", off.clone()),
        (DEFAULTS, defaults.clone()),
        (
            DEFAULTS_REALTIME,
            ShedSettings {
                priority_lane: LanePriority::Realtime,
                ..defaults.clone()
            },
        ),
        ("pressure", pressure.clone()),
        ("feedback", controlled.clone()),
        ("cut", cut.clone()),
        ("cut + pause", pause(&cut)),
        ("cut + lane", lane(&cut)),
        ("feedback + pause + lane", lane(&pause(&controlled))),
        ("cut + pause + lane", lane(&pause(&cut))),
        (CUT_TIGHT, lane(&pause(&cut_tight))),
        // The deployed configuration with the level held at 0: what the overload's
        // shape and the lane cost the node when nothing is shed.
        (LANE_NOTHING_SHED, deployed.clone()),
    ] {
        if !runs.split('|').any(|run| source.contains(run)) {
            continue;
        }
        let plan = overload_plan(mix);
        let (over, trace, probe) = run(
            source == LANE_NOTHING_SHED,
            &settings,
            segment_bytes,
            &plan,
            Some(&probe_plan),
        );
        let probe = probe.expect("probe ran");
        print(
            &format!(
                "4x overload (CRITICAL share {:.3}), {source}: due {offered:.0} req/s over {connections} paced connections",
                shares[0]
            ),
            &plan,
            &over,
            seconds,
        );
        let over_answered = answered(&over, Some(&probe));
        let (goodput, goodput_bytes) = ok_per_second(&over_answered, seconds);
        let sent: f64 = over.iter().map(|r| r.sent_in_window as f64).sum::<f64>() / seconds;
        let crit = &over[0];
        println!("  summary ({mix:?}, {source}):");
        println!(
            "    offered: {offered:.0} req/s due = 4x capacity ({capacity:.0} req/s); {sent:.0} req/s sent = {:.2}x",
            sent / capacity,
        );
        println!(
            "    overload level: mean {:.2} (min {:.2}, max {:.2}), mean threshold {:.0}; node worker busy {:.0} %, node CPU busy {:.0} %",
            trace.mean,
            trace.min,
            trace.max,
            trace.mean_threshold,
            trace.busy * 100.0,
            trace.cpu.unwrap_or(f64::NAN) * 100.0
        );
        let laned = (over[0].ok_done_in_window + probe.ok_done_in_window) as f64 / seconds;
        println!(
            "    node CPU by thread: worker {:.0} %, lane {:.0} % ({:.0} µs per CRITICAL request served, flood and probe)",
            trace.worker * 100.0,
            trace.lane * 100.0,
            trace.lane / laned.max(1.0) * 1e6
        );
        println!(
            "    CRITICAL success: {:.3} % in the flood, {:.3} % of the viewer probe (goal >= 99.9 %)",
            crit.success() * 100.0,
            probe.success() * 100.0
        );
        let probe_p50 = probe.service_percentile(50.0).as_secs_f64();
        let probe_p99 = probe.service_percentile(99.0).as_secs_f64();
        println!(
            "    viewer probe (CRITICAL): p50 {:.3} ms vs {:.3} ms unloaded; p99 {:.3} ms vs {:.3} ms = {:.2}x (goal <= 2x); vs {:.3} ms with the viewers' own load = {:.2}x",
            probe_p50 * 1e3,
            base_p50 * 1e3,
            probe_p99 * 1e3,
            base_p99 * 1e3,
            probe_p99 / base_p99.max(1e-9),
            viewers_p99 * 1e3,
            probe_p99 / viewers_p99.max(1e-9),
        );
        println!(
            "    CRITICAL in the flood: p50 {:.3} ms, p99 {:.3} ms; p99 from due {:.3} ms",
            crit.service_percentile(50.0).as_secs_f64() * 1e3,
            crit.service_percentile(99.0).as_secs_f64() * 1e3,
            crit.percentile(99.0).as_secs_f64() * 1e3
        );
        let served = work(&over_answered, seconds);
        println!(
            "    connection pauses: {}\n    goodput: {:.1} % of the mix's capacity in served work (each class weighted by its cost alone; goal >= 90 %), {:.1} % of the peak; {goodput:.0} req/s = {:.1} % of the capacity in requests; {:.1} MB/s = {:.1} % in bytes",
            trace.pauses,
            served / capacity_work.max(1e-9) * 100.0,
            served * 100.0,
            goodput / capacity * 100.0,
            goodput_bytes / 1e6,
            goodput_bytes / capacity_bytes.max(1.0) * 100.0
        );
        // For the deployed configuration only (each trial is a 5-s run); off with
        // SHED_BENCH_SERVED=0.
        let served_capacity = (source == "cut + pause + lane"
            && std::env::var("SHED_BENCH_SERVED").as_deref() != Ok("0"))
        .then(|| served_mix_capacity(&deployed, segment_bytes, &plan, &probe_plan, &over, seconds))
        .flatten();
        if let Some(multiple) = served_capacity {
            println!(
                "    goodput: {:.1} % of the node's capacity for the traffic it served (kept up with {multiple:.3}x of it; {:.1} % if it fell just short of {:.3}x)",
                100.0 / multiple,
                100.0 / (multiple + SERVED_STEP),
                multiple + SERVED_STEP
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
    // Optional third argument: only the overload runs whose name contains it (e.g.
    // "cut + pause").
    let runs = std::env::args().nth(3).unwrap_or_default();
    for mix in [Mix::Beacons, Mix::Assets]
        .into_iter()
        .filter(|m| format!("{m:?}").to_lowercase().contains(&only))
    {
        bench(mix, segment_kib, &runs);
    }
}
