//! Heartbeats of the process's runtimes: each runtime that serves (the main one with
//! ingest and pipelines, every serving and lane thread's) runs [`beat`], which stamps
//! its slot every [`BEAT`]. A runtime whose threads hang stops stamping, and
//! [`stalled`] names it: `/healthz` answers 503 (115002) and the watchdog stops
//! pinging the service manager, which kills and restarts the process.
//!
//! The registry is one per process, as the runtimes are: a serving thread registers
//! without being handed anything, and a slot leaves the registry when its runtime drops
//! its task (it stopped, it did not hang).
//!
//! A late beat alone is not a hang: the beat task waits in its runtime's queue behind
//! everything else (a burst of TLS handshakes, a flood of requests), and a busy runtime
//! must not get the process killed. A runtime is hung only when its beat is older than
//! [`STALL_AFTER`] *and* it made no progress since: the runtime's own counters (the
//! time it spent running tasks, which it adds up after every batch of tasks, and its
//! parks) have not moved. A runtime stuck in one task, or not scheduled at all, moves
//! neither.
//!
//! [`stalled`] is cheap and takes no lock on the way of a healthy answer: its verdict
//! is computed at most every [`RECHECK`] and read from atomics in between.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How often a runtime stamps its slot.
pub const BEAT: Duration = Duration::from_millis(250);

/// A runtime whose slot is older than this, and that made no progress for as long,
/// is taken as hung: six beats missed, short of a 2 s watchdog plus a probe's retry.
pub const STALL_AFTER: Duration = Duration::from_millis(1500);

/// How long a verdict of [`stalled`] is reused: probes in between read it from atomics.
pub const RECHECK: Duration = Duration::from_millis(100);

/// One runtime's heartbeat.
#[derive(Debug)]
struct Slot {
    name: String,
    /// Milliseconds after the process's epoch of the last stamp.
    at_ms: AtomicU64,
    /// The runtime, whose counters say whether it progresses.
    runtime: tokio::runtime::Handle,
    /// Its progress counter as last seen ([`progress`]).
    progress: AtomicU64,
    /// When that counter was last seen to move (or stamped by a beat).
    progress_at_ms: AtomicU64,
}

/// A counter that moves while `runtime` runs anything: the time its workers spent
/// running tasks (added up after each batch of tasks) plus how often they parked.
fn progress(runtime: &tokio::runtime::Handle) -> u64 {
    let metrics = runtime.metrics();
    (0..metrics.num_workers()).fold(0u64, |sum, worker| {
        let busy = u64::try_from(metrics.worker_total_busy_duration(worker).as_nanos())
            .unwrap_or(u64::MAX);
        sum.wrapping_add(busy)
            .wrapping_add(metrics.worker_park_unpark_count(worker))
    })
}

/// The slots of the runtimes beating now.
#[derive(Debug, Default)]
struct Registry {
    slots: Mutex<Vec<Arc<Slot>>>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

/// Milliseconds since the process's first use of this module (monotonic).
fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Takes a slot out of the registry when its beat ends (shutdown, or its runtime
/// dropped the task).
struct Registered(Arc<Slot>);

impl Drop for Registered {
    fn drop(&mut self) {
        let mut slots = registry()
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slots.retain(|s| !Arc::ptr_eq(s, &self.0));
    }
}

/// Stamps a slot named `name` every [`BEAT`] on the runtime it is spawned on, until
/// `shutdown` resolves.
pub async fn beat(name: impl Into<String>, shutdown: impl Future<Output = ()>) {
    let runtime = tokio::runtime::Handle::current();
    let now = now_ms();
    let slot = Arc::new(Slot {
        name: name.into(),
        at_ms: AtomicU64::new(now),
        progress: AtomicU64::new(progress(&runtime)),
        progress_at_ms: AtomicU64::new(now),
        runtime,
    });
    registry()
        .slots
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::clone(&slot));
    let registered = Registered(slot);
    let mut ticks = tokio::time::interval(BEAT);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            _ = ticks.tick() => {
                let slot = &registered.0;
                let now = now_ms();
                slot.progress.store(progress(&slot.runtime), Ordering::Relaxed);
                slot.progress_at_ms.store(now, Ordering::Relaxed);
                slot.at_ms.store(now, Ordering::Relaxed);
            }
        }
    }
}

/// The last verdict of [`stalled`]: when (ms after the epoch, plus one; 0 for never),
/// whether a runtime hung, and which one for how long.
static CHECKED_AT_MS: AtomicU64 = AtomicU64::new(0);
static HUNG: AtomicBool = AtomicBool::new(false);
static HUNG_WHO: Mutex<Option<(String, Duration)>> = Mutex::new(None);

/// The hung runtime (see the module's doc) whose silence is the longest: its name and
/// how long it has been silent. Computed at most every [`RECHECK`]; a healthy answer
/// in between is two atomic loads. A change is logged once (not per probe).
pub fn stalled() -> Option<(String, Duration)> {
    let now = now_ms();
    let checked = CHECKED_AT_MS.load(Ordering::Acquire);
    let due = checked == 0 || now.saturating_sub(checked - 1) >= RECHECK.as_millis() as u64;
    if due {
        // One prober computes; the others read the previous verdict meanwhile.
        if let Ok(slots) = registry().slots.try_lock() {
            let verdict = hung_among(&slots, now, STALL_AFTER);
            drop(slots);
            let was = HUNG.swap(verdict.is_some(), Ordering::AcqRel);
            match (&verdict, was) {
                (Some((runtime, silent)), false) => tracing::warn!(
                    %runtime,
                    silent_ms = silent.as_millis() as u64,
                    "a runtime stopped beating and progressing: unhealthy"
                ),
                (None, true) => tracing::info!("every runtime beats again: healthy"),
                _ => {}
            }
            *HUNG_WHO.lock().unwrap_or_else(PoisonError::into_inner) = verdict;
            CHECKED_AT_MS.store(now + 1, Ordering::Release);
        }
    }
    if !HUNG.load(Ordering::Acquire) {
        return None;
    }
    HUNG_WHO
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// [`stalled`] computed now, with `after` for [`STALL_AFTER`].
#[cfg(test)]
fn stalled_at(now: u64, after: Duration) -> Option<(String, Duration)> {
    let slots = registry()
        .slots
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    hung_among(&slots, now, after)
}

/// Among `slots`, the runtime silent and without progress for longer than `after`
/// (the longest such), noting the progress of the others.
fn hung_among(slots: &[Arc<Slot>], now: u64, after: Duration) -> Option<(String, Duration)> {
    let after = after.as_millis() as u64;
    slots
        .iter()
        .filter_map(|slot| {
            let silent = now.saturating_sub(slot.at_ms.load(Ordering::Relaxed));
            if silent <= after {
                return None;
            }
            let moved = progress(&slot.runtime);
            if slot.progress.swap(moved, Ordering::Relaxed) != moved {
                slot.progress_at_ms.store(now, Ordering::Relaxed);
                return None;
            }
            let still = now.saturating_sub(slot.progress_at_ms.load(Ordering::Relaxed));
            (still > after).then_some((slot, silent.min(still)))
        })
        .max_by_key(|(_, age)| *age)
        .map(|(slot, age)| (slot.name.clone(), Duration::from_millis(age)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runtime whose only thread is blocked stops stamping and is named; once it
    /// runs again it beats again; a runtime that ends leaves the registry.
    #[test]
    fn a_blocked_runtime_is_named_and_a_stopped_one_forgotten() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let name = "test-blocked-runtime";
        let thread = std::thread::spawn(move || {
            runtime.block_on(async {
                let beating = tokio::spawn(beat(name, async {
                    let _ = stopped.await;
                }));
                // Let the beat register and stamp, then hold the only thread.
                tokio::time::sleep(BEAT).await;
                std::thread::sleep(Duration::from_millis(700));
                // Running again: the next tick stamps.
                tokio::time::sleep(BEAT * 2).await;
                let _ = beating.await;
            });
        });
        let named = |after: Duration| stalled_at(now_ms(), after).is_some_and(|(n, _)| n == name);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !named(Duration::from_millis(400)) {
            assert!(
                Instant::now() < deadline,
                "the blocked runtime was never named"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        while named(Duration::from_millis(400)) {
            assert!(Instant::now() < deadline, "the runtime never beat again");
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = stop.send(());
        thread.join().expect("runtime thread");
        let slots = registry().slots.lock().expect("registry");
        assert!(slots.iter().all(|s| s.name != name), "the slot stayed");
    }

    /// A runtime busy with a queue of work that delays its beat far past the threshold
    /// (about 2 s of 2 ms tasks queued at once, the beat behind them, as a burst of TLS
    /// handshakes queues on a serving thread) is not named: it progresses. Its beat
    /// is seen late, which alone would have named it.
    #[test]
    fn a_runtime_busy_with_queued_work_is_not_named() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let name = "test-busy-runtime";
        let (flooded_tx, flooded) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async {
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                let beating = tokio::spawn(beat(name, async {
                    let _ = stopped.await;
                }));
                tokio::time::sleep(BEAT).await;
                let work: Vec<_> = (0..1000)
                    .map(|_| {
                        tokio::spawn(async {
                            let until = Instant::now() + Duration::from_millis(2);
                            while Instant::now() < until {
                                std::hint::spin_loop();
                            }
                        })
                    })
                    .collect();
                let _ = flooded_tx.send(());
                for task in work {
                    let _ = task.await;
                }
                let _ = stop.send(());
                let _ = beating.await;
            });
        });
        flooded.recv().expect("flooded");
        let after = Duration::from_millis(400);
        let slot_age = || {
            let slots = registry().slots.lock().expect("registry");
            slots
                .iter()
                .find(|s| s.name == name)
                .map(|s| now_ms().saturating_sub(s.at_ms.load(Ordering::Relaxed)))
        };
        let mut latest_beat_seen = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        while let Some(age) = slot_age() {
            assert!(Instant::now() < deadline, "the work never ended");
            latest_beat_seen = latest_beat_seen.max(age);
            let named = stalled_at(now_ms(), after).is_some_and(|(n, _)| n == name);
            assert!(!named, "a busy runtime named hung (its beat {age} ms old)");
            std::thread::sleep(Duration::from_millis(20));
        }
        thread.join().expect("runtime thread");
        assert!(
            latest_beat_seen > 2 * after.as_millis() as u64,
            "the work delayed the beat only {latest_beat_seen} ms: the test proves nothing"
        );
    }
}
