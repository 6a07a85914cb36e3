//! The adaptive concurrency limit (Gradient2) fed by admitted requests' latencies:
//! one input of the overload level. A process suspension (SIGSTOP, a paused VM) is not
//! overload: the limit starts afresh and requests in flight across it are ignored.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use shed::{AdaptiveLimit, AdaptiveLimitConfig, ConfigError};

/// The limit, its last value for lock-free readers, and the last resume.
#[derive(Debug)]
pub struct LimitTracker {
    limit: Mutex<AdaptiveLimit>,
    value: AtomicU32,
    config: AdaptiveLimitConfig,
    /// When the process last came back from a suspension (ns on the caller's axis;
    /// 0 none): requests that started before it carry the suspension in their latency.
    resumed_at_nanos: AtomicU64,
}

impl LimitTracker {
    /// A limit at its initial value.
    ///
    /// # Errors
    /// [`ConfigError`] naming the `[shedding.limit]` key that cannot work.
    pub fn new(config: AdaptiveLimitConfig) -> Result<LimitTracker, ConfigError> {
        let limit = AdaptiveLimit::new(config.clone())?;
        Ok(LimitTracker {
            value: AtomicU32::new(limit.limit()),
            limit: Mutex::new(limit),
            config,
            resumed_at_nanos: AtomicU64::new(0),
        })
    }

    /// The limit's current value.
    pub fn value(&self) -> u32 {
        self.value.load(Ordering::Relaxed)
    }

    /// Feeds a request that took `rtt` and completed at `now`, with
    /// `in_flight_at_start` requests in flight when it started. Never waits: when
    /// another worker holds the limit, this sample is skipped (Gradient2 aggregates
    /// windows of samples, one fewer is harmless).
    pub fn sample(&self, rtt: Duration, in_flight_at_start: u32, now: Duration) {
        let resumed = self.resumed_at_nanos.load(Ordering::Relaxed);
        let started = now.saturating_sub(rtt);
        if resumed != 0 && started.as_nanos() < u128::from(resumed) {
            return;
        }
        let mut limit = match self.limit.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::WouldBlock) => return,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        };
        let value = limit.on_sample(rtt, in_flight_at_start, now);
        self.value.store(value, Ordering::Relaxed);
    }

    /// The process ran again at `now` after a suspension: the limit starts afresh,
    /// and requests that started before `now` no longer feed it.
    pub fn resumed(&self, now: Duration) {
        let nanos = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        self.resumed_at_nanos.store(nanos.max(1), Ordering::Relaxed);
        if let Ok(fresh) = AdaptiveLimit::new(self.config.clone()) {
            let value = fresh.limit();
            *self.limit.lock().unwrap_or_else(|p| p.into_inner()) = fresh;
            self.value.store(value, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suspension_resets_the_limit_and_its_stale_latencies_are_ignored() {
        let config = AdaptiveLimitConfig {
            window_ms: 1,
            window_min_samples: 1,
            ..AdaptiveLimitConfig::default()
        };
        let tracker = LimitTracker::new(config).expect("config");
        let initial = tracker.value();
        // One-sample windows (the axis advances 2 ms per sample): fast requests set
        // the long RTT, then slow ones (at full concurrency) drag the limit down.
        let mut now = Duration::from_secs(100);
        let mut window = |rtt: Duration| {
            now += Duration::from_millis(2);
            tracker.sample(rtt, initial, now);
            now
        };
        (0..20).for_each(|_| {
            window(Duration::from_millis(1));
        });
        (0..20).for_each(|_| {
            window(Duration::from_millis(200));
        });
        let dragged = tracker.value();
        assert!(
            dragged < initial,
            "slow requests lower the limit ({dragged} vs {initial})"
        );
        let resumed_at = window(Duration::ZERO);
        tracker.resumed(resumed_at);
        assert_eq!(tracker.value(), initial);
        // Requests that started before the resume (their latency spans the hang) do
        // not feed the limit.
        (0..20).for_each(|_| {
            window(Duration::from_secs(30));
        });
        assert_eq!(tracker.value(), initial);
    }
}
