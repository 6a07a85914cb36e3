//! The node's overload level: one number in 0..=1 that drives the shed curve (SHED-2).
//!
//! Each tick takes three pressures, each mapped linearly onto 0..=1 between a low mark
//! (no pressure) and a high mark (saturated):
//! - CPU utilisation (default 0.70 → 0.95),
//! - in-flight requests over the adaptive concurrency limit (default 0.8 → 1.2),
//! - runtime queueing delay (default 5 ms → 100 ms).
//!
//! The raw level is the **largest** of the three (any saturated resource is overload).
//! It is smoothed by a time-based EWMA that rises fast and falls slowly (time constants
//! 0.5 s and 3 s), then passed through hysteresis: the published level only moves when
//! the smoothed level differs by at least `hysteresis` (default 0.05); it snaps to 0
//! (resp. 1) once the smoothed level is within half of it from that end. This keeps the shed threshold from
//! flapping on every tick.

use std::time::Duration;

use serde::Deserialize;

use crate::error::ConfigError;

/// A normalized overload level in 0..=1: 0 is "not overloaded, shed nothing", 1 is
/// "saturated, shed all but the most important". Always finite and in range.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct OverloadLevel(f64);

impl OverloadLevel {
    /// No overload.
    pub const ZERO: OverloadLevel = OverloadLevel(0.0);
    /// Full overload.
    pub const FULL: OverloadLevel = OverloadLevel(1.0);

    /// A level from any number: clamped to 0..=1, NaN counts as 0 (a broken reading
    /// must not shed everything).
    pub fn new(value: f64) -> OverloadLevel {
        OverloadLevel(unit(value))
    }

    /// The level as a number in 0..=1.
    pub fn get(self) -> f64 {
        self.0
    }
}

fn unit(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(0.0, 1.0)
    }
}

fn ramp(value: f64, low: f64, high: f64) -> f64 {
    unit((value - low) / (high - low))
}

/// One tick's measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverloadInputs {
    /// CPU utilisation of the process or host, 0..=1.
    pub cpu: f64,
    /// Requests currently in flight.
    pub in_flight: u32,
    /// The adaptive concurrency limit (see [`crate::AdaptiveLimit`]).
    pub limit: u32,
    /// Current queueing delay of the runtime (time a ready task waits to run).
    pub queue_delay: Duration,
}

/// Tuning of [`OverloadEstimator`] (see the module docs for the defaults' meaning).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OverloadConfig {
    /// CPU utilisation at which CPU pressure starts.
    pub cpu_low: f64,
    /// CPU utilisation at which CPU pressure is full.
    pub cpu_high: f64,
    /// In-flight/limit ratio at which concurrency pressure starts.
    pub in_flight_low: f64,
    /// In-flight/limit ratio at which concurrency pressure is full.
    pub in_flight_high: f64,
    /// Queueing delay (ms) at which delay pressure starts.
    pub queue_delay_low_ms: f64,
    /// Queueing delay (ms) at which delay pressure is full.
    pub queue_delay_high_ms: f64,
    /// EWMA time constant (s) while the level rises.
    pub rise_seconds: f64,
    /// EWMA time constant (s) while the level falls.
    pub fall_seconds: f64,
    /// Minimum change of the smoothed level before the published level moves.
    pub hysteresis: f64,
}

impl Default for OverloadConfig {
    fn default() -> Self {
        OverloadConfig {
            cpu_low: 0.70,
            cpu_high: 0.95,
            in_flight_low: 0.8,
            in_flight_high: 1.2,
            queue_delay_low_ms: 5.0,
            queue_delay_high_ms: 100.0,
            rise_seconds: 0.5,
            fall_seconds: 3.0,
            hysteresis: 0.05,
        }
    }
}

impl OverloadConfig {
    /// Check the marks are ordered and the constants usable.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first offending key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let non_negative = |key, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(ConfigError::OutOfRange {
                    key,
                    value: v,
                    expected: "a finite number >= 0",
                })
            }
        };
        for (low_key, low, high_key, high) in [
            ("cpu_low", self.cpu_low, "cpu_high", self.cpu_high),
            (
                "in_flight_low",
                self.in_flight_low,
                "in_flight_high",
                self.in_flight_high,
            ),
            (
                "queue_delay_low_ms",
                self.queue_delay_low_ms,
                "queue_delay_high_ms",
                self.queue_delay_high_ms,
            ),
        ] {
            non_negative(low_key, low)?;
            non_negative(high_key, high)?;
            if high <= low {
                return Err(ConfigError::NotOrdered {
                    key: high_key,
                    other: low_key,
                });
            }
        }
        non_negative("rise_seconds", self.rise_seconds)?;
        non_negative("fall_seconds", self.fall_seconds)?;
        if !(0.0..0.5).contains(&self.hysteresis) {
            return Err(ConfigError::OutOfRange {
                key: "hysteresis",
                value: self.hysteresis,
                expected: "[0, 0.5)",
            });
        }
        Ok(())
    }
}

/// Turns per-tick measurements into a smoothed overload level with hysteresis.
#[derive(Debug, Clone)]
pub struct OverloadEstimator {
    cfg: OverloadConfig,
    raw: f64,
    smoothed: f64,
    published: f64,
    last_tick: Option<Duration>,
}

impl OverloadEstimator {
    /// An estimator at level 0.
    ///
    /// # Errors
    /// When the config does not validate.
    pub fn new(cfg: OverloadConfig) -> Result<OverloadEstimator, ConfigError> {
        cfg.validate()?;
        Ok(OverloadEstimator {
            cfg,
            raw: 0.0,
            smoothed: 0.0,
            published: 0.0,
            last_tick: None,
        })
    }

    /// The unsmoothed level of the last tick (for metrics and debugging).
    pub fn raw(&self) -> OverloadLevel {
        OverloadLevel(self.raw)
    }

    /// The level the shed curve should use now.
    pub fn level(&self) -> OverloadLevel {
        OverloadLevel(self.published)
    }

    /// Feed one tick of measurements taken at `now` (any monotonic origin) and get
    /// the published level. The first tick only sets the time origin of the EWMA.
    pub fn tick(&mut self, inputs: OverloadInputs, now: Duration) -> OverloadLevel {
        let c = &self.cfg;
        let ratio = f64::from(inputs.in_flight) / f64::from(inputs.limit.max(1));
        let delay_ms = inputs.queue_delay.as_secs_f64() * 1000.0;
        self.raw = ramp(inputs.cpu, c.cpu_low, c.cpu_high)
            .max(ramp(ratio, c.in_flight_low, c.in_flight_high))
            .max(ramp(delay_ms, c.queue_delay_low_ms, c.queue_delay_high_ms));

        let dt = self
            .last_tick
            .map_or(0.0, |last| now.saturating_sub(last).as_secs_f64());
        self.last_tick = Some(now);
        let tau = if self.raw > self.smoothed {
            c.rise_seconds
        } else {
            c.fall_seconds
        };
        let alpha = if tau <= 0.0 {
            1.0
        } else {
            1.0 - (-dt / tau).exp()
        };
        self.smoothed = unit(self.smoothed + alpha * (self.raw - self.smoothed));

        let band = c.hysteresis;
        if self.smoothed < band / 2.0 {
            self.published = 0.0;
        } else if self.smoothed > 1.0 - band / 2.0 {
            self.published = 1.0;
        } else if (self.smoothed - self.published).abs() >= band {
            self.published = self.smoothed;
        }
        self.level()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(cpu: f64) -> OverloadInputs {
        OverloadInputs {
            cpu,
            in_flight: 0,
            limit: 100,
            queue_delay: Duration::ZERO,
        }
    }

    fn run(e: &mut OverloadEstimator, t: &mut u64, ticks: u32, i: OverloadInputs) -> f64 {
        for _ in 0..ticks {
            *t += 100;
            e.tick(i, Duration::from_millis(*t));
        }
        e.level().get()
    }

    #[test]
    fn each_pressure_alone_saturates_the_level() {
        for i in [
            inputs(0.99),
            OverloadInputs {
                in_flight: 150,
                ..inputs(0.0)
            },
            OverloadInputs {
                queue_delay: Duration::from_millis(300),
                ..inputs(0.0)
            },
        ] {
            let mut e = OverloadEstimator::new(OverloadConfig::default()).expect("valid");
            let mut t = 0;
            let level = run(&mut e, &mut t, 100, i);
            assert!(level > 0.99, "{i:?} -> {level}");
        }
    }

    #[test]
    fn rises_fast_falls_slowly_and_returns_to_zero() {
        let mut e = OverloadEstimator::new(OverloadConfig::default()).expect("valid");
        let mut t = 0;
        assert_eq!(run(&mut e, &mut t, 20, inputs(0.5)), 0.0);
        // One second of saturation: 1 - e^-2 of the way up.
        let up = run(&mut e, &mut t, 10, inputs(1.0));
        assert!(up > 0.8, "{up}");
        // One second of calm: only 1 - e^-1/3 of the way down.
        let down = run(&mut e, &mut t, 10, inputs(0.0));
        assert!(down > 0.6 && down < up, "{down}");
        assert_eq!(run(&mut e, &mut t, 200, inputs(0.0)), 0.0);
    }

    #[test]
    fn hysteresis_ignores_small_wobble() {
        let mut e = OverloadEstimator::new(OverloadConfig::default()).expect("valid");
        let mut t = 0;
        // CPU 0.825 -> raw 0.5; settle.
        let settled = run(&mut e, &mut t, 100, inputs(0.825));
        for k in 0..50 {
            let cpu = if k % 2 == 0 { 0.83 } else { 0.82 };
            assert_eq!(run(&mut e, &mut t, 1, inputs(cpu)), settled);
        }
    }

    #[test]
    fn nan_and_hostile_inputs_stay_in_range() {
        let mut e = OverloadEstimator::new(OverloadConfig::default()).expect("valid");
        let i = OverloadInputs {
            cpu: f64::NAN,
            in_flight: u32::MAX,
            limit: 0,
            queue_delay: Duration::MAX,
        };
        let l = e.tick(i, Duration::ZERO).get();
        assert!((0.0..=1.0).contains(&l));
        let l = e.tick(i, Duration::from_secs(10)).get();
        assert_eq!(l, 1.0);
        assert!(OverloadConfig {
            cpu_high: 0.5,
            ..OverloadConfig::default()
        }
        .validate()
        .is_err_and(|e| e.to_string().starts_with("cpu_high:")));
    }
}
