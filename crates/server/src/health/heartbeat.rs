//! Heartbeats of the process's runtimes: each runtime that serves (the main one with
//! ingest and pipelines, every serving and lane thread's) runs [`beat`], which stamps
//! its slot every [`BEAT`]. A runtime whose threads hang stops stamping, and
//! [`stalled`] names it: `/healthz` answers 503 (115002) and the watchdog stops
//! pinging the service manager, which kills and restarts the process.
//!
//! The registry is one per process, as the runtimes are: a serving thread registers
//! without being handed anything, and a slot leaves the registry when its runtime drops
//! its task (it stopped, it did not hang).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How often a runtime stamps its slot.
pub const BEAT: Duration = Duration::from_millis(250);

/// A runtime whose slot is older than this is taken as hung: six beats missed, far
/// beyond the queueing delay of a flooded serving thread (tens of ms), and short of a
/// 2 s watchdog plus a probe's retry.
pub const STALL_AFTER: Duration = Duration::from_millis(1500);

/// One runtime's heartbeat.
#[derive(Debug)]
struct Slot {
    name: String,
    /// Milliseconds after the process's epoch of the last stamp.
    at_ms: AtomicU64,
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
    let slot = Arc::new(Slot {
        name: name.into(),
        at_ms: AtomicU64::new(now_ms()),
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
            _ = ticks.tick() => registered.0.at_ms.store(now_ms(), Ordering::Relaxed),
        }
    }
}

/// The runtime whose heartbeat is the oldest, when it is older than [`STALL_AFTER`]:
/// its name and how long it has been silent.
pub fn stalled() -> Option<(String, Duration)> {
    stalled_at(now_ms(), STALL_AFTER)
}

fn stalled_at(now: u64, after: Duration) -> Option<(String, Duration)> {
    let slots = registry()
        .slots
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    slots
        .iter()
        .map(|s| (s, now.saturating_sub(s.at_ms.load(Ordering::Relaxed))))
        .max_by_key(|(_, age)| *age)
        .filter(|(_, age)| Duration::from_millis(*age) > after)
        .map(|(s, age)| (s.name.clone(), Duration::from_millis(age)))
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
}
