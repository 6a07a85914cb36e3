//! Shared by the overload test and the overload benchmark: a node on its own tokio
//! runtime (so its capacity is its own workers, whatever the load generator does) and
//! a bounded HTTP/1.1 load generator over raw keep-alive TCP connections on loopback.
//!
//! Each connection belongs to one traffic class and sends that class's request at a
//! paced rate (or back to back); latency is measured from the moment the request was
//! *due*, so a node that falls behind is charged for the wait (no coordinated
//! omission).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use server::http::lane::PriorityLane;
use server::metrics::Metrics;
use server::shed::overload::run_monitor;
use server::shed::{ShedSettings, Shedder};
use server::stream::package::{LiveSegment, Package, TrackSummary};
use server::{router, AppState, NodeIdentity};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

mod answers;
mod arrivals;
mod report;

use arrivals::{sleep_until_exactly, ExponentialGaps};

// Each test binary and benchmark that includes this module uses a part of it.
#[allow(unused_imports)]
pub use answers::{exchange, AnswerReader};
#[allow(unused_imports)]
pub use report::{report, ClassReport};

/// The stream every node here serves, with segments 10..13 in its window.
pub const STREAM: &str = "s";
/// A segment of the window.
pub const SEGMENT_PATH: &str = "/s/seg-12.ts";

/// The name of the node's runtime threads (their CPU time is the node's cost).
pub const NODE_THREAD: &str = "brdyun-node";

/// CPU time (user + system) spent so far by this process's threads named
/// [`NODE_THREAD`]; zero where that is unreadable.
pub fn node_cpu_time() -> Duration {
    thread_cpu_time(NODE_THREAD)
}

/// CPU time spent so far by this process's threads named `name` (`http-lane` for the
/// priority lane), from `/proc/self/task/*/schedstat` (nanoseconds); zero where that
/// is unreadable.
pub fn thread_cpu_time(name: &str) -> Duration {
    let mut nanos = 0u64;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        // `name`, or one of its numbered threads (`http-lane-0`, `http-lane-1` …).
        let comm = comm.trim_end();
        if !comm
            .strip_prefix(name)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        {
            continue;
        }
        // "time on CPU (ns)  time waiting (ns)  timeslices".
        let Ok(schedstat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        nanos += schedstat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Duration::from_nanos(nanos)
}

/// A node running on its own runtime thread until dropped.
pub struct Node {
    /// Where it serves HTTP.
    pub addr: SocketAddr,
    /// Its shedder (level, counters).
    pub shedder: Arc<Shedder>,
    /// Its priority lane, when `[shedding] priority_lane` asked for one.
    pub lane: Option<Arc<PriorityLane>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts a node with `workers` runtime threads, shedding settings, its overload
/// monitor, and one stream whose segments are `segment_bytes` long.
pub fn start_node(settings: &ShedSettings, workers: usize, segment_bytes: usize) -> Node {
    start_node_on(settings, workers, segment_bytes, None)
}

/// Restricts the calling thread (and the threads it starts afterwards) to one CPU, so
/// a node and its load generator do not take each other's core. Uses `taskset` on
/// the thread id; returns false (and changes nothing) where that is unavailable.
pub fn pin_current_thread(cpu: usize) -> bool {
    let Ok(link) = std::fs::read_link("/proc/thread-self") else {
        return false;
    };
    // "<pid>/task/<tid>"
    let Some(tid) = link.file_name().and_then(|t| t.to_str()).map(str::to_owned) else {
        return false;
    };
    std::process::Command::new("taskset")
        .args(["-p", "-c", &cpu.to_string(), &tid])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// [`start_node`], with the node's runtime threads pinned to `cpu` when given.
pub fn start_node_on(
    settings: &ShedSettings,
    workers: usize,
    segment_bytes: usize,
    cpu: Option<usize>,
) -> Node {
    let shedder = Arc::new(Shedder::new(settings).expect("valid shedding settings"));
    let identity = NodeIdentity {
        name: "load".into(),
        hostname: None,
    };
    let state = AppState::builder(identity, Metrics::new())
        .shedder(Arc::clone(&shedder))
        .build();
    let channel = Arc::new(Package::new(STREAM, 5, packaging::render::renderer(2000)));
    let tracks = TrackSummary {
        codecs: vec!["avc1.64001e".into(), "mp4a.40.2".into()],
        resolution: Some((640, 360)),
        frame_rate_milli: Some(25_000),
    };
    let payload = Bytes::from(vec![0x47u8; segment_bytes]);
    for msn in 10..13u64 {
        let segment = LiveSegment {
            msn,
            discontinuity_seq: 0,
            discontinuous: false,
            duration_ticks: 180_000,
            program_date_time_ms: 1_700_000_000_000 + msn as i64 * 2000,
            data: payload.clone(),
            ..LiveSegment::default()
        };
        channel.push(segment, tracks.clone());
    }
    state.add_stream(channel, None);

    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let monitor_shedder = Arc::clone(&shedder);
    let lane_shedder = Arc::clone(&shedder);
    let lane = Arc::new(std::sync::Mutex::new(None));
    let lane_slot = Arc::clone(&lane);
    let thread = std::thread::spawn(move || {
        if let Some(cpu) = cpu {
            pin_current_thread(cpu);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name(NODE_THREAD)
            .enable_all()
            .build()
            .expect("node runtime");
        runtime.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let (monitor_stop_tx, monitor_stop_rx) = tokio::sync::oneshot::channel::<()>();
            let monitor = tokio::spawn(run_monitor(monitor_shedder, async move {
                let _ = monitor_stop_rx.await;
            }));
            // The priority lane, when the settings ask for one, starts from this thread
            // and so shares its CPU pin.
            let (lane_stop_tx, lane_stop_rx) = tokio::sync::watch::channel(false);
            let app = router(state);
            let lane = PriorityLane::start(app.clone(), Arc::clone(&lane_shedder), lane_stop_rx)
                .expect("priority lane");
            *lane_slot.lock().expect("lane slot") = lane.clone();
            addr_tx
                .send(listener.local_addr().expect("local addr"))
                .expect("test waits for the address");
            server::http::serve::run_with_lane(
                listener,
                app,
                None,
                async move {
                    let _ = stop_rx.await;
                },
                lane,
                None,
            )
            .await;
            let _ = lane_stop_tx.send(true);
            let _ = monitor_stop_tx.send(());
            let _ = monitor.await;
        });
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("node started");
    let lane = lane.lock().expect("lane slot").clone();
    Node {
        addr,
        shedder,
        lane,
        stop: Some(stop_tx),
        thread: Some(thread),
    }
}

/// One class of traffic: its name, the exact request it sends, and its share of the
/// connections.
#[derive(Debug, Clone)]
pub struct Class {
    /// For reports.
    pub name: &'static str,
    /// The raw HTTP/1.1 request (keep-alive).
    pub request: Vec<u8>,
    /// Share of the connections (the shares are normalised).
    pub share: f64,
    /// Requests written together on one of its connections (HTTP/1.1 pipelining),
    /// answers read in order; 1 (the default) sends one request and waits for its
    /// answer, as a player does. Deeper batches cost the generator fewer system calls
    /// per request, so one core can offer a node several times what it can serve.
    pub pipeline: usize,
    /// Its connections' pace as a multiple of the plan's `rate_per_connection` (1 by
    /// default), so a plan can pace each class at a rate of its own over the same
    /// connections.
    pub rate_scale: f64,
    /// Whether its paced requests come as independent devices' do (a Poisson process
    /// per connection, each request sent at its instant) rather than on the runtime
    /// timer's millisecond ticks, where every connection due in the same millisecond
    /// fires at once. See [`Class::independent`].
    pub independent: bool,
}

impl Class {
    /// A GET with the given extra headers.
    pub fn get(name: &'static str, path: &str, headers: &[(&str, &str)], share: f64) -> Class {
        Class {
            name,
            request: request("GET", path, headers, b""),
            share,
            pipeline: 1,
            rate_scale: 1.0,
            independent: false,
        }
    }

    /// A POST with a body.
    pub fn post(
        name: &'static str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        share: f64,
    ) -> Class {
        Class {
            name,
            request: request("POST", path, headers, body),
            share,
            pipeline: 1,
            rate_scale: 1.0,
            independent: false,
        }
    }

    /// The same class, its connections paced at `scale` times the plan's rate.
    pub fn paced_at(self, scale: f64) -> Class {
        Class {
            rate_scale: scale,
            ..self
        }
    }

    /// The same class, its paced requests sent as independent devices send them: the
    /// gaps between a connection's requests are drawn from an exponential distribution
    /// of the pace's mean, and each is sent at its instant (the timer takes the
    /// connection to within a millisecond, then it yields until due). A few
    /// connections at a high rate then stand for many viewers, not for bursts of
    /// segment requests every millisecond. The waiting spins the generator's thread,
    /// so it suits a generator that never sleeps, for a handful of connections.
    pub fn independent(self) -> Class {
        Class {
            independent: true,
            ..self
        }
    }

    /// The same class, its connections writing `depth` requests at a time.
    pub fn pipelined(self, depth: usize) -> Class {
        Class {
            pipeline: depth.max(1),
            ..self
        }
    }
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    if method == "POST" {
        r.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    r.push_str("\r\n");
    let mut bytes = r.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// What one request got.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Index of its class.
    pub class: usize,
    /// When it was due, since the start of the run.
    pub due: Duration,
    /// When it was actually sent (later than `due` when the generator fell behind).
    pub sent: Duration,
    /// From due to the last byte of the answer (or to the failure).
    pub latency: Duration,
    /// From sending to the last byte of the answer: the node's part of `latency`.
    pub service: Duration,
    /// HTTP status; 0 when the connection failed or the answer did not come in time.
    pub status: u16,
    /// Body bytes of the answer.
    pub bytes: usize,
    /// A 503 carrying the back-pressure body (`{"code":109001,"maxRetries":...}`).
    pub back_pressure: bool,
}

/// How to drive the node.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The traffic classes.
    pub classes: Vec<Class>,
    /// Number of connections, split among classes by share.
    pub connections: usize,
    /// Requests per second per connection; `None`: back to back.
    pub rate_per_connection: Option<f64>,
    /// How long to send.
    pub duration: Duration,
    /// Longest wait for one answer (for a batch, its last answer).
    pub timeout: Duration,
    /// A paced connection that fell behind its schedule skips the requests it missed,
    /// as a device waiting for an answer never sends them, instead of sending them
    /// back to back (which measures latency from when each was due, but turns every
    /// stall into a burst).
    pub skip_missed: bool,
}

impl Plan {
    /// How many of the plan's connections each class has.
    pub fn connections_per_class(&self) -> Vec<usize> {
        let mut counts = vec![0; self.classes.len()];
        for i in 0..self.connections {
            counts[class_of(i, self.connections, &self.classes)] += 1;
        }
        counts
    }
}

/// The class of connection `i` of `n`: contiguous blocks by cumulative share.
fn class_of(i: usize, n: usize, classes: &[Class]) -> usize {
    let total: f64 = classes.iter().map(|c| c.share).sum();
    let x = (i as f64 + 0.5) / n as f64 * total;
    let mut acc = 0.0;
    for (k, c) in classes.iter().enumerate() {
        acc += c.share;
        if x < acc {
            return k;
        }
    }
    classes.len() - 1
}

/// Runs the plan against `addr` and returns every request's sample. Bounded by
/// `duration + timeout`: no request is sent after `duration`, even one due earlier.
pub async fn drive(addr: SocketAddr, plan: &Plan) -> Vec<Sample> {
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..plan.connections {
        let class = class_of(i, plan.connections, &plan.classes);
        let batch = plan.classes[class]
            .request
            .repeat(plan.classes[class].pipeline.max(1));
        let plan = plan.clone();
        // Spread the first requests over one period so connections do not move in step.
        let offset = rate_of(&plan, class).map_or(Duration::ZERO, |r| {
            Duration::from_secs_f64(i as f64 / plan.connections as f64 / r)
        });
        let seed = i as u64;
        tasks.spawn(
            async move { connection(addr, class, &batch, &plan, start, offset, seed).await },
        );
    }
    let mut samples = Vec::new();
    while let Some(done) = tasks.join_next().await {
        samples.extend(done.expect("connection task"));
    }
    samples
}

/// Requests per second of one connection of class `class`; `None`: back to back.
fn rate_of(plan: &Plan, class: usize) -> Option<f64> {
    plan.rate_per_connection
        .map(|r| r * plan.classes[class].rate_scale)
}

async fn connection(
    addr: SocketAddr,
    class: usize,
    batch: &[u8],
    plan: &Plan,
    start: Instant,
    offset: Duration,
    seed: u64,
) -> Vec<Sample> {
    let depth = plan.classes[class].pipeline.max(1);
    let rate_per_connection = rate_of(plan, class);
    let independent = plan.classes[class].independent;
    let mut gaps = ExponentialGaps::new(seed);
    // The next instant of an independent connection, since `start`.
    let mut next = offset;
    let mut out = Vec::new();
    let mut stream: Option<TcpStream> = None;
    let mut answers = AnswerReader::default();
    let mut k = 0u32;
    loop {
        let period = |rate: f64| depth as f64 / rate;
        if let (Some(rate), true) = (rate_per_connection, plan.skip_missed) {
            let now = start.elapsed().saturating_sub(offset).as_secs_f64();
            k = k.max((now / period(rate)).floor() as u32);
        }
        let due = match rate_per_connection {
            Some(rate) if independent => {
                if plan.skip_missed && next < start.elapsed() {
                    // Memoryless: the next instant after now is a fresh draw.
                    next = start.elapsed() + gaps.next(period(rate));
                }
                let due = next;
                next += gaps.next(period(rate));
                due
            }
            Some(rate) => offset + Duration::from_secs_f64(f64::from(k) * period(rate)),
            None => start.elapsed(),
        };
        // Nothing is sent after the end, however far behind the connection is (a
        // connection the node keeps paused would otherwise send its backlog for ever).
        if due >= plan.duration || start.elapsed() >= plan.duration {
            break;
        }
        k += 1;
        if rate_per_connection.is_some() {
            if independent {
                sleep_until_exactly(start + due).await;
            } else {
                tokio::time::sleep_until(start + due).await;
            }
        }
        let sent = start.elapsed();
        if stream.is_none() {
            stream = TcpStream::connect(addr).await.ok();
            answers = AnswerReader::default();
            if let Some(s) = &stream {
                let _ = s.set_nodelay(true);
            }
        }
        let first = out.len();
        // One answer's sample, finished at `done`; status 0 for a failure.
        let sample = |(status, bytes, back_pressure): (u16, usize, bool), done: Duration| Sample {
            class,
            due,
            sent,
            latency: done.saturating_sub(due),
            service: done.saturating_sub(sent),
            status,
            bytes,
            back_pressure,
        };
        let complete = match stream.as_mut() {
            Some(s) => tokio::time::timeout(plan.timeout, async {
                s.write_all(batch).await.ok()?;
                for _ in 0..depth {
                    let answer = answers.next(s).await?;
                    out.push(sample(answer, start.elapsed()));
                }
                Some(())
            })
            .await
            .ok()
            .flatten()
            .is_some(),
            None => false,
        };
        if !complete {
            // The connection failed or an answer did not come in time: the rest of the
            // batch failed, and the next batch opens a new connection.
            stream = None;
            let done = start.elapsed();
            for _ in out.len() - first..depth {
                out.push(sample((0, 0, false), done));
            }
        }
    }
    out
}
