//! Health and readiness of a node or an MC (`docs/operations.md`, "Health and
//! readiness").
//!
//! - **Health** (`/healthz`, the watchdog): the process serves. The request itself
//!   proves the serving thread that answers it works; [`heartbeat`] proves every other
//!   runtime (the main one with ingest and pipelines, each serving and lane thread)
//!   still turns. The watchdog (`crate::notify`) asks `/healthz` over loopback and pings
//!   the service manager only on a 200, so a process that hangs anywhere is killed.
//! - **Readiness** (`/readyz`): the process is ready for viewers ([`ready::assess`]):
//!   not shutting down or drained, in its mesh, its streams live or knowingly idle; on
//!   an MC its store reachable and its meetings on their group's timeline. Computed at
//!   most every [`READY_CACHE`] however often it is asked.

pub mod budget;
pub mod heartbeat;
pub mod ready;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;

pub use ready::{Facts, Readiness, StreamFacts};

/// A readiness verdict with its answers' bodies, serialized once per computation: a
/// probe costs a clone of the bytes, however many meetings the body counts.
#[derive(Debug)]
pub struct Verdict {
    /// The verdict.
    pub readiness: Readiness,
    /// The body for anyone: codes and counts, no meeting named.
    pub open: Bytes,
    /// The body for a caller with a token: meetings named.
    pub named: Bytes,
}

impl Verdict {
    /// `readiness` and its two bodies.
    pub fn new(readiness: Readiness) -> Self {
        Self {
            open: Bytes::from(readiness.json(false).to_string()),
            named: Bytes::from(readiness.json(true).to_string()),
            readiness,
        }
    }
}

/// How long a readiness verdict is served before it is computed again: probes from
/// many load balancers cost one computation per period.
pub const READY_CACHE: Duration = Duration::from_millis(250);

/// The process's own health state: its shutdown flag and its last readiness verdict.
/// Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct Health {
    inner: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    shutting_down: AtomicBool,
    verdict: RwLock<Option<(Instant, Arc<Verdict>)>>,
}

impl Health {
    /// Marks the process as shutting down: from now on it is not ready (115010), so
    /// load balancers take it out while its listeners still answer.
    pub fn begin_shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        self.forget();
    }

    /// Whether [`Health::begin_shutdown`] was called.
    pub fn shutting_down(&self) -> bool {
        self.inner.shutting_down.load(Ordering::SeqCst)
    }

    /// The readiness verdict: the one computed less than [`READY_CACHE`] ago (a shared
    /// read, no wait while nobody computes), else `compute`'s, kept for the next callers.
    pub fn readiness(&self, compute: impl FnOnce() -> Readiness) -> Arc<Verdict> {
        let fresh = |cached: &Option<(Instant, Arc<Verdict>)>| {
            cached
                .as_ref()
                .filter(|(at, _)| at.elapsed() < READY_CACHE)
                .map(|(_, verdict)| Arc::clone(verdict))
        };
        if let Some(verdict) = fresh(
            &self
                .inner
                .verdict
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        ) {
            return verdict;
        }
        let mut cached = self
            .inner
            .verdict
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        // Another prober may have computed it while this one waited.
        if let Some(verdict) = fresh(&cached) {
            return verdict;
        }
        let verdict = Arc::new(Verdict::new(compute()));
        *cached = Some((Instant::now(), Arc::clone(&verdict)));
        verdict
    }

    /// Drops the cached verdict: a change the process made itself (shutdown, drain)
    /// shows at the next probe.
    pub fn forget(&self) {
        *self
            .inner
            .verdict
            .write()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_reused_within_the_period_and_shutdown_shows_at_once() {
        let health = Health::default();
        let mut computed = 0;
        for _ in 0..3 {
            health.readiness(|| {
                computed += 1;
                Readiness::default()
            });
        }
        assert_eq!(computed, 1);
        health.begin_shutdown();
        assert!(health.shutting_down());
        let fresh = health.readiness(|| {
            computed += 1;
            Readiness::default()
        });
        assert_eq!(computed, 2);
        assert!(fresh.readiness.ready());
        assert_eq!(&fresh.open[..], br#"{"idle":0,"ready":true}"#);
    }
}
