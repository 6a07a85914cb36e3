//! Gradient2 adaptive concurrency limit, after Netflix `concurrency-limits`
//! (`Gradient2Limit` wrapped in a `WindowedLimit`).
//!
//! The limit tracks how many requests the node can have in flight before latency
//! climbs. Samples are aggregated over a short window (average RTT, peak in-flight);
//! at the end of each window:
//!
//! ```text
//! long_rtt  = EWMA of window RTTs over `long_window` windows (plain mean while warming up)
//! if long_rtt / short_rtt > 2 { long_rtt *= 0.95 }          // recover after a latency spike
//! if in_flight < limit / 2 { keep limit }                    // app-limited: no evidence
//! gradient  = clamp(rtt_tolerance * long_rtt / short_rtt, 0.5, 1.0)
//! new       = limit * gradient + queue_size(limit)           // queue_size = max(4, sqrt(limit))
//! limit     = clamp(limit * (1 - smoothing) + new * smoothing, min_limit, max_limit)
//! ```
//!
//! Pure: time is passed in as a `Duration` since any fixed origin chosen by the caller.

use std::time::Duration;

use serde::Deserialize;

use crate::error::ConfigError;

/// Tuning of [`AdaptiveLimit`]; defaults follow Netflix's, with a larger range because
/// a segment server holds many cheap concurrent requests.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdaptiveLimitConfig {
    /// Limit before any sample arrives.
    pub initial_limit: f64,
    /// The limit never falls below this.
    pub min_limit: f64,
    /// The limit never rises above this.
    pub max_limit: f64,
    /// Weight of a new estimate (0 < s ≤ 1).
    pub smoothing: f64,
    /// How much slower than the long-term RTT a window may be before the limit shrinks.
    pub rtt_tolerance: f64,
    /// Number of windows the long-term RTT averages over.
    pub long_window: u32,
    /// Minimum length of a sample window, in milliseconds.
    pub window_ms: u64,
    /// Minimum samples before a window closes (unless it is 10× older than `window_ms`).
    pub window_min_samples: u32,
}

impl Default for AdaptiveLimitConfig {
    fn default() -> Self {
        AdaptiveLimitConfig {
            initial_limit: 200.0,
            min_limit: 20.0,
            max_limit: 10_000.0,
            smoothing: 0.2,
            rtt_tolerance: 1.5,
            long_window: 600,
            window_ms: 1000,
            window_min_samples: 10,
        }
    }
}

impl AdaptiveLimitConfig {
    /// Check the values can work.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first offending key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |key, v: f64| {
            if v.is_finite() && v >= 1.0 {
                Ok(())
            } else {
                Err(ConfigError::OutOfRange {
                    key,
                    value: v,
                    expected: "a finite number >= 1",
                })
            }
        };
        positive("min_limit", self.min_limit)?;
        positive("max_limit", self.max_limit)?;
        positive("initial_limit", self.initial_limit)?;
        positive("rtt_tolerance", self.rtt_tolerance)?;
        if self.max_limit < self.min_limit {
            return Err(ConfigError::NotOrdered {
                key: "max_limit",
                other: "min_limit",
            });
        }
        if !(self.smoothing > 0.0 && self.smoothing <= 1.0) {
            return Err(ConfigError::OutOfRange {
                key: "smoothing",
                value: self.smoothing,
                expected: "(0, 1]",
            });
        }
        if self.long_window == 0 {
            return Err(ConfigError::OutOfRange {
                key: "long_window",
                value: 0.0,
                expected: ">= 1",
            });
        }
        Ok(())
    }
}

/// Netflix's `ExpAvgMeasurement`: a plain mean over the first samples, then an EWMA.
#[derive(Debug, Clone)]
struct ExpAvg {
    value: f64,
    count: u32,
    warmup: u32,
    factor: f64,
}

impl ExpAvg {
    fn new(window: u32) -> ExpAvg {
        ExpAvg {
            value: 0.0,
            count: 0,
            warmup: window.min(10),
            factor: 2.0 / (f64::from(window) + 1.0),
        }
    }

    fn add(&mut self, sample: f64) -> f64 {
        if self.count < self.warmup {
            self.count += 1;
            self.value += (sample - self.value) / f64::from(self.count);
        } else {
            self.value = self.value * (1.0 - self.factor) + sample * self.factor;
        }
        self.value
    }
}

/// An adaptive concurrency limit (Gradient2). Feed it one sample per completed request;
/// read [`AdaptiveLimit::limit`] to compare against the number in flight.
#[derive(Debug, Clone)]
pub struct AdaptiveLimit {
    cfg: AdaptiveLimitConfig,
    limit: f64,
    long_rtt: ExpAvg,
    window_start: Option<Duration>,
    window_rtt_sum: f64,
    window_count: u32,
    window_max_in_flight: u32,
}

impl AdaptiveLimit {
    /// A limit with the given tuning.
    ///
    /// # Errors
    /// When the config does not validate.
    pub fn new(cfg: AdaptiveLimitConfig) -> Result<AdaptiveLimit, ConfigError> {
        cfg.validate()?;
        let limit = cfg.initial_limit.clamp(cfg.min_limit, cfg.max_limit);
        let long_rtt = ExpAvg::new(cfg.long_window);
        Ok(AdaptiveLimit {
            cfg,
            limit,
            long_rtt,
            window_start: None,
            window_rtt_sum: 0.0,
            window_count: 0,
            window_max_in_flight: 0,
        })
    }

    /// The current limit, rounded down (at least 1).
    pub fn limit(&self) -> u32 {
        // Clamped to [min_limit, max_limit] with min_limit >= 1, so the cast is exact
        // up to the u32 saturation Rust applies to float casts.
        self.limit.floor().max(1.0) as u32
    }

    /// Record a completed request: its round-trip time, the number of requests in
    /// flight when it started, and the current time. Returns the (possibly updated) limit.
    pub fn on_sample(&mut self, rtt: Duration, in_flight: u32, now: Duration) -> u32 {
        let start = *self.window_start.get_or_insert(now);
        let rtt_s = rtt.as_secs_f64();
        if rtt_s > 0.0 {
            self.window_rtt_sum += rtt_s;
            self.window_count = self.window_count.saturating_add(1);
        }
        self.window_max_in_flight = self.window_max_in_flight.max(in_flight);
        let elapsed = now.saturating_sub(start);
        let window = Duration::from_millis(self.cfg.window_ms);
        let full = elapsed >= window && self.window_count >= self.cfg.window_min_samples;
        let stale = elapsed >= window.saturating_mul(10) && self.window_count > 0;
        if full || stale {
            let short_rtt = self.window_rtt_sum / f64::from(self.window_count);
            self.update(short_rtt, self.window_max_in_flight);
            self.window_start = Some(now);
            self.window_rtt_sum = 0.0;
            self.window_count = 0;
            self.window_max_in_flight = 0;
        }
        self.limit()
    }

    fn update(&mut self, short_rtt: f64, in_flight: u32) {
        let mut long_rtt = self.long_rtt.add(short_rtt);
        if long_rtt / short_rtt > 2.0 {
            self.long_rtt.value *= 0.95;
            long_rtt = self.long_rtt.value;
        }
        if f64::from(in_flight) < self.limit / 2.0 {
            return;
        }
        let gradient = (self.cfg.rtt_tolerance * long_rtt / short_rtt).clamp(0.5, 1.0);
        let queue_size = self.limit.sqrt().max(4.0);
        let estimate = self.limit * gradient + queue_size;
        let next = self.limit * (1.0 - self.cfg.smoothing) + estimate * self.cfg.smoothing;
        self.limit = next.clamp(self.cfg.min_limit, self.cfg.max_limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Drive `windows` one-second windows of 20 samples at the given RTT and load.
    fn drive(l: &mut AdaptiveLimit, t: &mut u64, windows: u32, rtt: u64, in_flight: u32) {
        for _ in 0..windows {
            for _ in 0..20 {
                *t += 50;
                l.on_sample(ms(rtt), in_flight, ms(*t));
            }
        }
    }

    #[test]
    fn grows_under_steady_latency_and_shrinks_when_latency_climbs() {
        let mut l = AdaptiveLimit::new(AdaptiveLimitConfig::default()).expect("valid");
        let mut t = 0;
        let start = l.limit();
        drive(&mut l, &mut t, 30, 10, 10_000);
        let grown = l.limit();
        assert!(
            grown > start,
            "steady rtt with full load grows: {start} -> {grown}"
        );
        drive(&mut l, &mut t, 30, 80, 10_000);
        let shrunk = l.limit();
        assert!(
            shrunk < grown,
            "rtt x8 shrinks the limit: {grown} -> {shrunk}"
        );
        assert!(shrunk >= 20);
    }

    #[test]
    fn app_limited_traffic_does_not_grow_the_limit() {
        let mut l = AdaptiveLimit::new(AdaptiveLimitConfig::default()).expect("valid");
        let mut t = 0;
        drive(&mut l, &mut t, 30, 10, 5);
        assert_eq!(l.limit(), 200);
    }

    #[test]
    fn validation_names_the_key() {
        let cfg = AdaptiveLimitConfig {
            smoothing: 0.0,
            ..AdaptiveLimitConfig::default()
        };
        let err = AdaptiveLimit::new(cfg).expect_err("invalid");
        assert!(err.to_string().starts_with("smoothing:"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn limit_stays_within_bounds(samples in proptest::collection::vec((0u64..5_000, 0u32..50_000, 0u64..400), 1..400)) {
            let mut l = AdaptiveLimit::new(AdaptiveLimitConfig::default()).expect("valid");
            let mut t = 0;
            for (rtt, inflight, dt) in samples {
                t += dt;
                let v = l.on_sample(ms(rtt), inflight, ms(t));
                proptest::prop_assert!((20..=10_000).contains(&v));
            }
        }
    }
}
