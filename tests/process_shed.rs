//! A stock node — no `[shedding]` section, the route table as shipped — flooded with
//! catch-up downloads sheds them, and a live viewer beside the flood gets every
//! segment in time (SHED-1, SHED-2, SHED-3).
//!
//! The flood is more than the node can serve: 192 connections that fetch archive
//! downloads (`archive-F-D.ts`), catch-up masters (`index-F-D.m3u8`) and catch-up media
//! playlists (`mono-F-D.m3u8`) back to back, pipelined, ignoring every back-pressure
//! answer, for a bounded time, from the load generator of the shedding tests
//! (`crates/server/tests/shed_load`). The connections open in steps over the first
//! seconds, so what raises the level is the flood going on, not the burst of 192
//! connections opening at once (which alone queued 50-100 ms). The node's own queueing
//! delay shows it is more: its level rises and it sheds a share of the flood. The
//! viewer is what a player does: it reloads the live media playlist and fetches each
//! new segment.

mod common;
#[path = "../crates/server/tests/shed_load/mod.rs"]
mod shed_load;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shed_load::{drive, pin_current_thread, Class, Plan, Sample};

use common::{
    http_get, http_get_json, parse_media_playlist, start_node_on_cpu, wait_for, NodeProcess,
};

/// Connections of the flood, each one request after another. Enough that the
/// node's serving threads queue: a catch-up playlist is cheap (its renditions'
/// probes are cached), so 64 connections only keep one core busy at the queueing
/// target, which is a node used fully, not an overloaded one.
const FLOOD_CONNECTIONS: usize = 192;
/// How long the flood and the viewer run.
const FLOOD_TIME: Duration = Duration::from_secs(25);
/// The flood's connections open in this many steps, one every [`RAMP_STEP`].
const RAMP_STEPS: u32 = 8;
/// The time between two steps of the flood's opening.
const RAMP_STEP: Duration = Duration::from_millis(500);
/// Seconds of archive the flood's downloads cover.
const DOWNLOAD_SECONDS: i64 = 20;

fn config(data: &std::path::Path) -> String {
    format!(
        r#"
[node]
name = "stock"
http = "127.0.0.1:0"
data_dir = "{}"
[defaults.dvr]
enabled = true
depth = "1h"
[[stream]]
name = "a"
inputs = ["builtin://meeting"]
"#,
        data.display()
    )
}

/// One HTTP/1.0 GET whose body is read and dropped: (status, body).
fn get(addr: SocketAddr, path: &str) -> Option<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let status = std::str::from_utf8(&raw[..split])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((status, raw.split_off(split + 4)))
}

/// One step of the flood: `connections` that each send downloads and catch-up
/// playlists back to back, four (media playlists eight) pipelined at a time, ignoring
/// the back-pressure answer, for `duration`, from a load generator that drops the
/// bodies in the kernel (so one core offers a node more than one core serves).
fn flood_plan(from: i64, connections: usize, duration: Duration) -> Plan {
    let pipelined = |class: Class| Class {
        pipeline: 4,
        ..class
    };
    Plan {
        classes: vec![
            pipelined(Class::get(
                "download",
                &format!("/a/archive-{from}-{DOWNLOAD_SECONDS}.ts"),
                &[],
                2.0,
            )),
            pipelined(Class::get(
                "catch-up playlist",
                &format!("/a/index-{from}-{DOWNLOAD_SECONDS}.m3u8"),
                &[],
                1.0,
            )),
            Class {
                pipeline: 8,
                ..Class::get(
                    "catch-up media playlist",
                    &format!("/a/mono-{from}-{DOWNLOAD_SECONDS}.m3u8"),
                    &[],
                    4.0,
                )
            },
        ],
        connections,
        rate_per_connection: None,
        duration,
        timeout: Duration::from_secs(5),
        skip_missed: false,
    }
}

/// Runs the flood on a thread of its own (on `cpu` when given): its steps open one
/// every [`RAMP_STEP`] and all end at [`FLOOD_TIME`]; returns every answer.
fn start_flood(
    addr: SocketAddr,
    from: i64,
    cpu: Option<usize>,
) -> std::thread::JoinHandle<Vec<Sample>> {
    std::thread::spawn(move || {
        if let Some(cpu) = cpu {
            pin_current_thread(cpu);
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("generator runtime")
            .block_on(async move {
                let mut steps = tokio::task::JoinSet::new();
                let per_step = FLOOD_CONNECTIONS / RAMP_STEPS as usize;
                for step in 0..RAMP_STEPS {
                    let opens = RAMP_STEP * step;
                    let plan = flood_plan(from, per_step, FLOOD_TIME - opens);
                    steps.spawn(async move {
                        // The load's shape, not a wait for an event: the step opens then.
                        tokio::time::sleep(opens).await;
                        drive(addr, &plan).await
                    });
                }
                let mut answers = Vec::new();
                while let Some(step) = steps.join_next().await {
                    answers.extend(step.expect("flood step"));
                }
                answers
            })
    })
}

/// A segment the viewer fetched: its MSN, its status and how long the fetch took.
struct Fetched {
    msn: u64,
    status: u16,
    took: Duration,
}

/// The viewer: reloads `mono.m3u8` every half second and fetches each new segment
/// once, until `until`. Returns the fetches and the longest segment duration listed.
fn watch(addr: SocketAddr, until: Instant) -> (Vec<Fetched>, f64) {
    let mut fetched: Vec<Fetched> = Vec::new();
    let mut longest = 0f64;
    while Instant::now() < until {
        let reload = Instant::now();
        if let Some((200, body)) = get(addr, "/a/mono.m3u8") {
            for entry in parse_media_playlist(&String::from_utf8_lossy(&body)) {
                if fetched.last().is_some_and(|f| f.msn >= entry.msn) {
                    continue;
                }
                let seconds: f64 = entry.extinf.trim_end_matches(',').parse().expect("extinf");
                longest = longest.max(seconds);
                let started = Instant::now();
                let status = get(addr, &format!("/a/{}", entry.uri)).map_or(0, |(s, _)| s);
                fetched.push(Fetched {
                    msn: entry.msn,
                    status,
                    took: started.elapsed(),
                });
            }
        }
        std::thread::sleep(Duration::from_millis(500).saturating_sub(reload.elapsed()));
    }
    (fetched, longest)
}

/// A counter of the node's `/metrics`, 0 when absent.
fn metric(addr: SocketAddr, series: &str) -> f64 {
    let (_, _, body) = http_get(addr, "/metrics");
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn a_stock_node_sheds_catch_up_downloads_and_serves_every_live_segment() {
    let dir = tempfile::tempdir().unwrap();
    // The node on a core of its own where there are two, so the flood (on the others)
    // can offer it more than one core serves, as remote devices would.
    let config = config(&dir.path().join("data"));
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let node = if cores >= 2 {
        start_node_on_cpu(dir.path(), "stock", &config, 0)
    } else {
        NodeProcess::start(dir.path(), "stock", &config)
    };
    let addr = node.http;

    // Enough archive for the downloads, and a viewer that has started.
    let from = wait_for("archive to download", Duration::from_secs(90), || {
        let (status, doc) = http_get_json(addr, "/api/streams/a");
        let range = &doc["dvr"]["ranges"]["ts"][0];
        let (from, to) = (range["from_ms"].as_i64()?, range["to_ms"].as_i64()?);
        (status == 200 && to - from >= (DOWNLOAD_SECONDS + 2) * 1000).then_some(from / 1000 + 1)
    });
    let (status, _, _) = http_get(addr, &format!("/a/archive-{from}-{DOWNLOAD_SECONDS}.ts"));
    assert_eq!(status, 200, "the download is served while the node is idle");
    let shed_before = metric(
        addr,
        "brdyun_shed_requests_total{bucket=\"degraded\",outcome=\"shed\"}",
    );

    let stop = Arc::new(AtomicBool::new(false));
    let flood = start_flood(addr, from, (cores >= 2).then_some(1));
    // What the node reads of itself during the flood, for the failure message.
    let sampler = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                samples.push((
                    metric(addr, "brdyun_shed_overload_level"),
                    metric(addr, "brdyun_shed_queue_delay_seconds") * 1e3,
                    metric(addr, "brdyun_shed_cpu_utilisation"),
                ));
            }
            samples
        })
    };
    let (fetched, longest) = watch(addr, Instant::now() + FLOOD_TIME);
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.join().expect("sampler thread");
    let answers = flood.join().expect("flood thread");
    let ok = answers.iter().filter(|a| a.status == 200).count();
    let shed = answers.iter().filter(|a| a.back_pressure).count();
    let other = answers.len() - ok - shed;
    let shed_counted = metric(
        addr,
        "brdyun_shed_requests_total{bucket=\"degraded\",outcome=\"shed\"}",
    ) - shed_before;
    let critical_shed = metric(
        addr,
        "brdyun_shed_requests_total{bucket=\"critical\",outcome=\"shed\"}",
    );
    eprintln!(
        "flood: {ok} served, {shed} shed, {other} other; DEGRADED shed counted {shed_counted}; viewer: {} segments; (level, queue delay ms, cpu) each second: {samples:.2?}",
        fetched.len()
    );
    let top_level = samples.iter().map(|s| s.0).fold(0.0, f64::max);
    assert!(
        top_level > 0.0,
        "the node judged itself overloaded (its level rose): {samples:.2?}"
    );
    // A share of the flood, not a stray refusal at the edge of the queueing target.
    assert!(
        shed * 100 >= answers.len(),
        "at least 1 % of the flood was shed: {ok} served, {shed} shed, {other} other"
    );
    assert!(
        ok > 0,
        "part of the flood was served: the node was used, not closed"
    );
    assert!(
        shed_counted >= shed as f64,
        "the node counts the downloads it shed as DEGRADED"
    );
    assert_eq!(critical_shed, 0.0, "no CRITICAL request was shed");

    // Every live segment, in order, none missed, each in less than its duration.
    assert!(
        fetched.len() as f64 >= FLOOD_TIME.as_secs_f64() / longest - 2.0,
        "the viewer kept up with live: {} segments of at most {longest} s in {FLOOD_TIME:?}",
        fetched.len()
    );
    for pair in fetched.windows(2) {
        assert_eq!(pair[1].msn, pair[0].msn + 1, "no live segment was skipped");
    }
    for f in &fetched {
        assert_eq!(f.status, 200, "live segment {} was served", f.msn);
        assert!(
            f.took.as_secs_f64() < longest,
            "live segment {} took {:?}, longer than playing it",
            f.msn,
            f.took
        );
    }
}
