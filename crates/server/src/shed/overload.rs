//! The overload monitor: the I/O half of overload detection. It samples CPU
//! utilisation (by default **this process's** CPU time from `/proc/self/stat`, divided
//! by the wall time and the cores available to the process, so a compiler or another
//! service on the same host does not make a node shed; `cpu_source = "host"` reads the
//! host-wide `/proc/stat` instead, `"runtime"` the busy share of the tokio runtime's
//! workers the monitor runs on, `"off"` ignores CPU), probes the runtime's queueing
//! delay (how late its timer runs, and how long a datagram it sends itself waits to
//! be read: `ReadinessProbe`) — on its own runtime and, through
//! [`run_serving_probe`], on every serving thread's, where requests wait —
//! and, every tick,
//! feeds them with the in-flight count and the adaptive limit to
//! [`shed::OverloadEstimator`], then publishes the level the request path reads.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use shed::{CutController, LevelController, Occupancy, OverloadEstimator, OverloadInputs};
use tokio::time::{Instant, MissedTickBehavior};

use super::settings::{CpuSource, LevelSource};
use super::shedder::Shedder;
pub use shed::procfs::{
    parse_cpus_allowed, parse_proc_stat, parse_proc_stat_cpus, parse_self_stat,
    process_utilisation, utilisation, CpuTimes, USER_HZ,
};

/// One reading of the configured CPU counters.
#[derive(Debug, Clone, Copy)]
enum CpuReading {
    Host(CpuTimes),
    Process {
        ticks: u64,
        at: Instant,
    },
    Runtime {
        busy: Duration,
        workers: usize,
        at: Instant,
    },
}

/// Total time the current tokio runtime's workers spent polling tasks, and how many
/// workers it has; `None` outside a runtime.
fn runtime_busy() -> Option<(Duration, usize)> {
    let metrics = tokio::runtime::Handle::try_current().ok()?.metrics();
    let workers = metrics.num_workers();
    let busy = (0..workers)
        .map(|w| metrics.worker_total_busy_duration(w))
        .fold(Duration::ZERO, Duration::saturating_add);
    Some((busy, workers))
}

/// Samples CPU utilisation from the configured source.
#[derive(Debug)]
struct CpuSampler {
    source: CpuSource,
    cores: usize,
    /// For the host source: the CPUs this thread may run on, when they are not all of
    /// the host's (a node pinned to cores measures those cores).
    pinned: Option<Vec<usize>>,
    last: Option<CpuReading>,
}

impl CpuSampler {
    fn new(source: CpuSource) -> CpuSampler {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let pinned = (source == CpuSource::Host)
            .then(|| std::fs::read_to_string("/proc/thread-self/status").ok())
            .flatten()
            .and_then(|status| parse_cpus_allowed(&status))
            .filter(|cpus| {
                let host = std::fs::read_to_string("/proc/stat").map_or(0, |text| {
                    text.lines()
                        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
                        .count()
                });
                cpus.len() < host
            });
        let mut sampler = CpuSampler {
            source,
            cores,
            pinned,
            last: None,
        };
        sampler.last = sampler.read();
        sampler
    }

    fn read(&self) -> Option<CpuReading> {
        let path = match self.source {
            CpuSource::Off => return None,
            CpuSource::Runtime => {
                return runtime_busy().map(|(busy, workers)| CpuReading::Runtime {
                    busy,
                    workers,
                    at: Instant::now(),
                })
            }
            CpuSource::Host => "/proc/stat",
            CpuSource::Process => "/proc/self/stat",
        };
        // A small in-memory file: reading it inline costs microseconds.
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                tracing::debug!(%error, path, "cpu sampling unavailable");
                return None;
            }
        };
        match self.source {
            CpuSource::Host => match &self.pinned {
                Some(cpus) => parse_proc_stat_cpus(&text, cpus),
                None => parse_proc_stat(&text),
            }
            .map(CpuReading::Host),
            _ => parse_self_stat(&text).map(|ticks| CpuReading::Process {
                ticks,
                at: Instant::now(),
            }),
        }
    }

    /// The utilisation since the previous sample, when both samples are usable.
    fn sample(&mut self) -> Option<f64> {
        let now = self.read();
        let u = match (self.last, now) {
            (Some(CpuReading::Host(a)), Some(CpuReading::Host(b))) => utilisation(a, b),
            (
                Some(CpuReading::Process { ticks: a, at: t0 }),
                Some(CpuReading::Process { ticks: b, at: t1 }),
            ) => process_utilisation(a, b, t1.saturating_duration_since(t0), self.cores),
            (
                Some(CpuReading::Runtime {
                    busy: a, at: t0, ..
                }),
                Some(CpuReading::Runtime {
                    busy: b,
                    workers,
                    at: t1,
                }),
            ) => {
                let wall = t1.saturating_duration_since(t0).as_secs_f64() * workers.max(1) as f64;
                let busy = b.checked_sub(a)?.as_secs_f64();
                (wall > 0.0).then(|| (busy / wall).clamp(0.0, 1.0))
            }
            _ => None,
        };
        self.last = now;
        u
    }
}

/// A tick later than this may be a suspension of the whole process rather than
/// queueing (see [`is_suspension`]).
pub const SUSPENSION_MIN_LATE: Duration = Duration::from_secs(1);

/// Whether a tick `late` after its time, in an interval of `elapsed` during which the
/// process used `cpu_ticks` of CPU, means the process was suspended (SIGSTOP, a paused
/// VM, a host that slept) rather than overloaded: overload keeps the CPU busy, a
/// suspension leaves it idle. Less than 10 % of one core over the interval is idle.
pub fn is_suspension(late: Duration, elapsed: Duration, cpu_ticks: u64) -> bool {
    if late < SUSPENSION_MIN_LATE || elapsed < late {
        return false;
    }
    let cpu_secs = cpu_ticks as f64 / USER_HZ;
    cpu_secs < 0.1 * elapsed.as_secs_f64()
}

/// Detects suspensions from this process's CPU time between monitor ticks.
#[derive(Debug, Default)]
struct SuspensionDetector {
    last: Option<(Instant, u64)>,
}

impl SuspensionDetector {
    /// Whether the tick that ran `late` follows a suspension; `false` where
    /// `/proc/self/stat` cannot be read (then lateness counts as queueing, as before).
    fn check(&mut self, late: Duration) -> bool {
        let ticks = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|text| parse_self_stat(&text));
        let now = Instant::now();
        let previous = std::mem::replace(&mut self.last, ticks.map(|t| (now, t)));
        match (previous, ticks) {
            (Some((then, before)), Some(after)) => {
                is_suspension(late, now.duration_since(then), after.saturating_sub(before))
            }
            _ => false,
        }
    }
}

/// Measures the wait of a socket that turns readable: the probe sends itself one
/// datagram and times how long the runtime takes to poll the task waiting for it.
/// Readiness reaches a task the way a request reaches its connection (through the
/// I/O driver, queued behind the tasks already ready), so under a flood held back by
/// TCP this reads the wait every request sees, where a timer's lateness does not: the
/// runtime runs the task a timer wakes next, ahead of the queue.
struct ReadinessProbe {
    send: tokio::net::UnixDatagram,
    recv: tokio::net::UnixDatagram,
}

impl ReadinessProbe {
    /// `None` where a socket pair cannot be made (then only timers are probed).
    fn new() -> Option<ReadinessProbe> {
        tokio::net::UnixDatagram::pair()
            .map(|(send, recv)| ReadinessProbe { send, recv })
            .map_err(|error| tracing::warn!(%error, "no readiness probe for the queueing delay"))
            .ok()
    }

    /// The wait of one datagram, given up after `limit`. Timed on the wall clock, so
    /// a runtime with paused time (tests) that skips ahead to the limit reads ~0.
    async fn wait(&self, limit: Duration) -> Duration {
        let mut buf = [0u8; 8];
        // Drain what an earlier timed-out probe left, so readiness starts cleared.
        while self.recv.try_recv(&mut buf).is_ok() {}
        let sent = std::time::Instant::now();
        if self.send.try_send(&[1]).is_err() {
            return Duration::ZERO;
        }
        // Received or given up, the wait is the time it took.
        let _ = tokio::time::timeout(limit, self.recv.recv(&mut buf)).await;
        sent.elapsed()
    }
}

/// Runs the overload monitor of `shedder` until `shutdown` completes: every `tick_ms`
/// it recomputes and publishes the overload level and drops expired fault rules; every
/// `cpu_sample_ms` it re-samples CPU (from `cpu_source`). Only one monitor runs per
/// shedder; a second call returns at once. A node spawns this once at start
/// (`src/node`).
pub async fn run_monitor(shedder: Arc<Shedder>, shutdown: impl Future<Output = ()>) {
    let levels = shedder.levels();
    if !levels.claim_monitor() {
        tracing::warn!("shedding monitor already running");
        return;
    }
    let settings = levels.settings().clone();
    let mut estimator = match OverloadEstimator::new(settings.overload.clone()) {
        Ok(e) => e,
        Err(error) => {
            // Shedder::new validated the same config, so this is unreachable in
            // practice; shedding then runs on forced levels and fault rules only.
            tracing::error!(%error, "overload estimator refused its config");
            levels.release_monitor();
            return;
        }
    };
    let mut controller = match LevelController::new(settings.control.clone()) {
        Ok(c) => c,
        Err(error) => {
            // Validated by Shedder::new as well: unreachable in practice.
            tracing::error!(%error, "level controller refused its config");
            levels.release_monitor();
            return;
        }
    };
    let mut cut = match CutController::new(settings.cut.clone()) {
        Ok(c) => c,
        Err(error) => {
            // Validated by Shedder::new as well: unreachable in practice.
            tracing::error!(%error, "cut controller refused its config");
            levels.release_monitor();
            return;
        }
    };
    // A priority counts as requested for 5 s after its last request, so a class
    // whose connections are paused for a second is not jumped over.
    let mut occupancy = Occupancy::new(Duration::from_secs(5));
    let mut ticker = tokio::time::interval(settings.tick_period);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut sampler = CpuSampler::new(settings.cpu_source);
    let mut suspensions = SuspensionDetector::default();
    let readiness = ReadinessProbe::new();
    let probe_limit = levels.probe_limit();
    let mut last_cpu_at = Instant::now();
    let mut cpu = 0.0;
    tokio::pin!(shutdown);
    loop {
        let scheduled = tokio::select! {
            () = &mut shutdown => break,
            at = ticker.tick() => at,
        };
        // How late this tick runs: a floor of the queueing delay (the runtime runs
        // the task a timer wakes ahead of the queue; the readiness probe below
        // reads the wait behind it), and the sign of a suspension.
        let mut late = scheduled.elapsed();
        // The longest wait on a serving thread now (at most a probe's limit, so a
        // suspension cannot inflate it beyond that).
        let mut serving = levels.serving_delay(shedder.now()).min(probe_limit);
        if suspensions.check(late) {
            tracing::warn!(
                stood_still_ms = late.as_millis() as u64,
                "the process was suspended; not counted as overload"
            );
            late = Duration::ZERO;
            serving = Duration::ZERO;
            shedder.resumed_after_suspension();
        }
        if last_cpu_at.elapsed() >= settings.cpu_period {
            if let Some(u) = sampler.sample() {
                cpu = u;
            }
            last_cpu_at = Instant::now();
        }
        let waited = match &readiness {
            Some(probe) => probe.wait(probe_limit).await,
            None => Duration::ZERO,
        };
        let queue_delay = late.max(waited).max(serving);
        let inputs = OverloadInputs {
            cpu,
            in_flight: shedder.metrics().in_flight(),
            limit: shedder.limit().value(),
            queue_delay,
        };
        let before = levels.level();
        let pressure = estimator.tick(inputs, shedder.now());
        let level = match settings.level_source {
            LevelSource::Pressure => pressure,
            LevelSource::Feedback => controller.tick(queue_delay, cpu, shedder.now()),
            LevelSource::Cut => {
                let now = shedder.now();
                occupancy.record(levels.take_requested(), now);
                cut.tick(queue_delay, cpu, now, occupancy.occupied(now))
            }
        };
        levels.publish_inputs(cpu, queue_delay);
        levels.publish_level(level);
        if (level.get() - before.get()).abs() >= 0.1 && !levels.is_forced() {
            tracing::info!(
                level = level.get(),
                threshold = levels.threshold().get(),
                cpu,
                in_flight = inputs.in_flight,
                limit = inputs.limit,
                "overload level changed"
            );
        }
        shedder.faults().purge(shedder.now());
    }
    levels.release_monitor();
}

/// Probes the queueing delay of the runtime it runs on every `tick_ms` until
/// `shutdown` completes, where `shedder`'s monitor reads it. Spawn it on each runtime
/// that serves requests apart from the monitor's (the node's per-core HTTP threads,
/// [`crate::http::serve`]): a flood queues there, where the monitor's
/// own probe cannot see it. A reading is at most the probe's limit (100 ms, or a tick
/// if longer).
pub async fn run_serving_probe(shedder: Arc<Shedder>, shutdown: impl Future<Output = ()>) {
    let Some(probe) = ReadinessProbe::new() else {
        return;
    };
    let levels = shedder.levels();
    let slot = levels.add_serving_probe();
    let limit = levels.probe_limit();
    let mut ticker = tokio::time::interval(levels.settings().tick_period);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            _ = ticker.tick() => {}
        }
        slot.sent(shedder.now());
        slot.received(probe.wait(limit).await.min(limit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_tick_with_an_idle_cpu_is_a_suspension_and_a_busy_one_is_not() {
        let s = Duration::from_secs;
        // 5 s late, 5.25 s between ticks, 2 ticks (20 ms) of CPU: stopped.
        assert!(is_suspension(s(5), Duration::from_millis(5250), 2));
        // Same lateness with the CPU busy half the time: overload, not a suspension.
        assert!(!is_suspension(s(5), Duration::from_millis(5250), 260));
        // Small lateness is never a suspension.
        assert!(!is_suspension(Duration::from_millis(900), s(1), 0));
    }

    /// Ready tasks that each hold the worker for 2 ms per poll, as a flood's
    /// connections do: a socket turning readable waits behind all of them, and the
    /// readiness probe reads that wait where the timer's lateness reads little of it.
    #[test]
    fn the_readiness_probe_reads_the_wait_behind_ready_tasks() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        // The probe runs in a task on the worker, as the monitor does.
        let waited = runtime.block_on(async {
            tokio::spawn(async {
                let probe = ReadinessProbe::new().expect("a socket pair");
                let idle = probe.wait(Duration::from_secs(1)).await;
                let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
                for _ in 0..20 {
                    let stop = Arc::clone(&stop);
                    tokio::spawn(async move {
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            let until = std::time::Instant::now() + Duration::from_millis(2);
                            while std::time::Instant::now() < until {
                                std::hint::spin_loop();
                            }
                            tokio::task::yield_now().await;
                        }
                    });
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                let mut busy = Duration::ZERO;
                for _ in 0..5 {
                    busy = busy.max(probe.wait(Duration::from_secs(1)).await);
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                (idle, busy)
            })
            .await
            .expect("probe task")
        });
        let (idle, busy) = waited;
        // 20 tasks × 2 ms: a full round is 40 ms; the probe waits behind most of it.
        assert!(busy >= Duration::from_millis(20), "busy wait {busy:?}");
        assert!(idle < busy, "idle {idle:?} vs busy {busy:?}");
    }

    /// A busy neighbour must not count: this process idles while another process
    /// burns a core, and the process sampler stays near 0.
    #[test]
    fn process_source_ignores_a_busy_neighbour() {
        let Ok(mut burner) = std::process::Command::new("sh")
            .arg("-c")
            .arg("while :; do :; done")
            .spawn()
        else {
            return;
        };
        let mut sampler = CpuSampler::new(CpuSource::Process);
        std::thread::sleep(Duration::from_millis(400));
        let own = sampler.sample();
        let _ = burner.kill();
        let _ = burner.wait();
        let own = own.expect("/proc/self/stat readable on linux");
        assert!(own < 0.2, "idle process measured at {own}");
    }

    /// The runtime source sees this runtime's own work: near 0 while idle, near 1
    /// while a task spins on its single worker.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn runtime_source_measures_the_runtime_workers() {
        let mut sampler = CpuSampler::new(CpuSource::Runtime);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let idle = sampler.sample().expect("inside a runtime");
        assert!(idle < 0.2, "idle runtime measured at {idle}");
        let spin = tokio::spawn(async {
            let until = std::time::Instant::now() + Duration::from_millis(300);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        });
        spin.await.expect("spinner");
        // Workers publish their busy time when they park.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let busy = sampler.sample().expect("inside a runtime");
        assert!(busy > 0.5, "spinning runtime measured at {busy}");
    }
}
