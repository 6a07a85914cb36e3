//! A feedback controller for the overload level (SHED-2): the alternative to
//! [`crate::OverloadEstimator`] when refusals themselves cost CPU.
//!
//! The estimator maps *pressures* (CPU, in-flight, queueing delay) to a level in
//! proportion, so a lasting overload needs a lasting pressure to stay shed: the level
//! ends wherever the pressures balance, not where the node is used well. The
//! controller instead asks one question — *does the admitted work fit?* — and
//! integrates the answer. Two signals say "no": the runtime's queueing delay (how late
//! a task that became ready is run) above `target_ms`, or the node's busy share above
//! `cpu_target` (unless that is 1: then only the delay). Like CoDel, it judges the
//! **smallest** value seen over an interval (default 100 ms), so a burst, or a
//! neighbour taking the core for a time slice, does not count; a standing queue or a
//! saturated worker does.
//!
//! ```text
//! over  = max(d / target_ms − 1, (cpu − cpu_target) / (1 − cpu_target))   (smallest d, cpu of the interval)
//! over > 0                                  →  level += rise_per_second · dt · min(over, 4)
//! d < target_ms · low_fraction, cpu < cpu_low →  level −= fall_per_second · dt
//! otherwise                                 →  level unchanged        (hysteresis band)
//! ```
//!
//! so the level settles where the admitted work (refusals included: they cost CPU
//! too) just fits the node, instead of at an end of the scale. Rising is proportional
//! to the excess (a spike is cut within a few intervals); falling is slow and constant
//! (readmitting a bucket is probed gently, so the level does not oscillate). When
//! refusals alone saturate the node, the level rises to 1: nothing else would help.
//! Pure: time is passed in.

use std::time::Duration;

use serde::Deserialize;

use crate::error::ConfigError;
use crate::overload::OverloadLevel;

/// Tuning of [`LevelController`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LevelControlConfig {
    /// Queueing delay (ms) above which the level rises.
    pub target_ms: f64,
    /// The level falls only while the delay is below `target_ms · low_fraction`
    /// (0 < f < 1); between the two it holds.
    pub low_fraction: f64,
    /// Level units per second gained at twice the target delay (more above it, up to
    /// 4× this rate).
    pub rise_per_second: f64,
    /// Level units per second lost while the delay is below the low mark.
    pub fall_per_second: f64,
    /// The window (ms) whose smallest delay is judged; one step per window.
    pub interval_ms: u64,
    /// Busy share (0..=1) of the node above which the level rises. `1` turns the CPU
    /// signal off for rising: a saturated core whose admitted work waits less than
    /// `target_ms` is used fully, not overloaded (the excess waits in the devices'
    /// sockets, held back by TCP), and only the delay raises the level.
    pub cpu_target: f64,
    /// The level falls only while the busy share is below this (and the delay low).
    pub cpu_low: f64,
}

impl Default for LevelControlConfig {
    fn default() -> Self {
        LevelControlConfig {
            target_ms: 5.0,
            low_fraction: 0.5,
            rise_per_second: 1.0,
            fall_per_second: 0.25,
            interval_ms: 100,
            cpu_target: 0.9,
            cpu_low: 0.8,
        }
    }
}

impl LevelControlConfig {
    /// The defaults of the cut controller ([`crate::CutController`]), whose rates count
    /// requested priorities per second: 0.4 up at twice the target (capped there), 0.15
    /// down per unit of room below the band (up to four), so that one interval's step
    /// changes the shed share of the priority at the cut by a bounded factor; judged
    /// every 200 ms by the queueing delay alone (`cpu_target = 1`: a saturated core
    /// whose admitted requests wait less than 30 ms is used fully), and falling only
    /// below 96 % busy. These held a viewer's p99 within 2× of an idle node's at 4×
    /// overload in `shed_bench` (docs/measured.md); the rest as [`Default`].
    pub fn cut_default() -> LevelControlConfig {
        LevelControlConfig {
            target_ms: 30.0,
            rise_per_second: 0.4,
            fall_per_second: 0.15,
            interval_ms: 200,
            cpu_target: 1.0,
            cpu_low: 0.96,
            ..LevelControlConfig::default()
        }
    }

    /// The busy share that counts as one unit of `over`: `1 − cpu_target`, or
    /// `1 − cpu_low` when `cpu_target` is 1 (a saturated core is not over by itself).
    fn cpu_span(&self) -> f64 {
        if self.cpu_target < 1.0 {
            1.0 - self.cpu_target
        } else {
            1.0 - self.cpu_low
        }
    }

    /// Check the values can work.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first offending key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |key, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(ConfigError::OutOfRange {
                    key,
                    value: v,
                    expected: "a finite number > 0",
                })
            }
        };
        positive("target_ms", self.target_ms)?;
        positive("rise_per_second", self.rise_per_second)?;
        positive("fall_per_second", self.fall_per_second)?;
        if !(self.cpu_low > 0.0 && self.cpu_low < self.cpu_target && self.cpu_target <= 1.0) {
            return Err(ConfigError::OutOfRange {
                key: "cpu_target",
                value: self.cpu_target,
                expected: "0 < cpu_low < cpu_target <= 1",
            });
        }
        if self.interval_ms == 0 {
            return Err(ConfigError::OutOfRange {
                key: "interval_ms",
                value: 0.0,
                expected: ">= 1",
            });
        }
        if !(self.low_fraction > 0.0 && self.low_fraction < 1.0) {
            return Err(ConfigError::OutOfRange {
                key: "low_fraction",
                value: self.low_fraction,
                expected: "(0, 1)",
            });
        }
        Ok(())
    }
}

/// The question both controllers ask once per interval — does the admitted work fit?
/// — answered from the smallest delay and busy share of the interval.
#[derive(Debug, Clone)]
pub(crate) struct FitJudge {
    cfg: LevelControlConfig,
    /// When the last step was taken (the start of the current window).
    last_step: Option<Duration>,
    /// Smallest delay and busy share seen since then.
    window_min: Option<(Duration, f64)>,
}

impl FitJudge {
    pub(crate) fn new(cfg: LevelControlConfig) -> Result<FitJudge, ConfigError> {
        cfg.validate()?;
        Ok(FitJudge {
            cfg,
            last_step: None,
            window_min: None,
        })
    }

    pub(crate) fn config(&self) -> &LevelControlConfig {
        &self.cfg
    }

    /// Feeds one reading; once an interval has passed since the last verdict, the new
    /// one (judged on the smallest values of the interval), `None` before.
    pub(crate) fn judge(&mut self, queue_delay: Duration, cpu: f64, now: Duration) -> Option<Fit> {
        let cpu = if cpu.is_nan() {
            0.0
        } else {
            cpu.clamp(0.0, 1.0)
        };
        let Some(last) = self.last_step else {
            self.last_step = Some(now);
            return None;
        };
        let (delay, cpu) = self.window_min.map_or((queue_delay, cpu), |(d, c)| {
            (d.min(queue_delay), c.min(cpu))
        });
        let elapsed = now.saturating_sub(last);
        if elapsed < Duration::from_millis(self.cfg.interval_ms) {
            self.window_min = Some((delay, cpu));
            return None;
        }
        self.last_step = Some(now);
        self.window_min = None;
        let c = &self.cfg;
        let dt = elapsed.as_secs_f64();
        let delay_ms = delay.as_secs_f64() * 1000.0;
        let over_delay = delay_ms / c.target_ms - 1.0;
        let over = if c.cpu_target < 1.0 {
            over_delay.max((cpu - c.cpu_target) / c.cpu_span())
        } else {
            over_delay
        };
        Some(if over > 0.0 {
            Fit::Over { over, dt }
        } else if delay_ms < c.target_ms * c.low_fraction && cpu < c.cpu_low {
            Fit::Room {
                under: (c.cpu_low - cpu) / c.cpu_span(),
                dt,
            }
        } else {
            Fit::Fits
        })
    }
}

/// A [`FitJudge`] verdict over an interval of `dt` seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Fit {
    /// The admitted work does not fit: by `over` (> 0) of the target.
    Over { over: f64, dt: f64 },
    /// It fits with room: the busy share was below `cpu_low` by `under`, in the
    /// units of `over` (shares of `1 − cpu_target`).
    Room { under: f64, dt: f64 },
    /// It fits, inside the band: hold.
    Fits,
}

/// Integrates the queueing-delay error into an overload level (see the module docs).
#[derive(Debug, Clone)]
pub struct LevelController {
    judge: FitJudge,
    level: f64,
}

impl LevelController {
    /// A controller at level 0.
    ///
    /// # Errors
    /// When the config does not validate.
    pub fn new(cfg: LevelControlConfig) -> Result<LevelController, ConfigError> {
        Ok(LevelController {
            judge: FitJudge::new(cfg)?,
            level: 0.0,
        })
    }

    /// The level the shed curve should use now.
    pub fn level(&self) -> OverloadLevel {
        OverloadLevel::new(self.level)
    }

    /// Feed a queueing delay and a busy share (0..=1; NaN counts as 0) measured at
    /// `now` (any monotonic origin) and get the level. The first call only sets the
    /// time origin; the level moves once per `interval_ms`, on the smallest values fed
    /// during it.
    pub fn tick(&mut self, queue_delay: Duration, cpu: f64, now: Duration) -> OverloadLevel {
        let (rise, fall) = {
            let c = self.judge.config();
            (c.rise_per_second, c.fall_per_second)
        };
        let step = match self.judge.judge(queue_delay, cpu, now) {
            Some(Fit::Over { over, dt }) => rise * dt * over.min(4.0),
            Some(Fit::Room { dt, .. }) => -fall * dt,
            Some(Fit::Fits) | None => 0.0,
        };
        self.level = OverloadLevel::new(self.level + step).get();
        self.level()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// A node whose queueing delay grows with the share of the offered work it admits:
    /// offered work `offered` (1 = capacity), admitted share `1 - level`; above
    /// capacity the delay is large, below it shrinks with the headroom.
    fn plant(level: f64, offered: f64) -> Duration {
        let load = offered * (1.0 - level);
        if load >= 1.0 {
            ms(50)
        } else {
            Duration::from_secs_f64(0.002 * load / (1.0 - load))
        }
    }

    #[test]
    fn with_cpu_target_one_a_saturated_core_rises_only_on_delay() {
        let cfg = LevelControlConfig {
            cpu_target: 1.0,
            cpu_low: 0.96,
            target_ms: 20.0,
            ..LevelControlConfig::default()
        };
        let mut judge = FitJudge::new(cfg.clone()).expect("valid");
        judge.judge(ms(1), 1.0, ms(0));
        // Saturated, short queue: used fully, hold.
        assert_eq!(judge.judge(ms(5), 1.0, ms(100)), Some(Fit::Fits));
        // Saturated, the queue past the target: over, by the delay alone.
        assert_eq!(
            judge.judge(ms(30), 1.0, ms(200)),
            Some(Fit::Over { over: 0.5, dt: 0.1 })
        );
        // Idle enough, short queue: room, counted in shares of 1 − cpu_low.
        match judge.judge(ms(1), 0.92, ms(300)) {
            Some(Fit::Room { under, .. }) => assert!((under - 1.0).abs() < 1e-9, "{under}"),
            other => panic!("{other:?}"),
        }
        assert!(LevelControlConfig {
            cpu_target: 1.01,
            ..cfg
        }
        .validate()
        .is_err());
    }

    #[test]
    fn settles_inside_the_band_under_a_steady_overload_instead_of_pinning() {
        let mut c = LevelController::new(LevelControlConfig::default()).expect("valid");
        let mut t = 0;
        let mut levels = Vec::new();
        for _ in 0..600 {
            t += 20;
            let delay = plant(c.level().get(), 4.0);
            levels.push(c.tick(delay, 0.5, ms(t)).get());
        }
        let tail = &levels[400..];
        let (lo, hi) = tail
            .iter()
            .fold((1.0f64, 0.0f64), |(lo, hi), l| (lo.min(*l), hi.max(*l)));
        // 4x offered: the admitted work must fit (below 1) without wasting the node
        // (above half of it); the level neither pins at 1 nor wanders.
        let admitted = |level: f64| 4.0 * (1.0 - level);
        assert!(
            admitted(hi) > 0.5 && admitted(lo) < 1.0,
            "settled between {lo} and {hi}"
        );
        assert!(hi - lo < 0.08, "oscillates between {lo} and {hi}");
    }

    /// A node whose worker is as busy as the share of the offered work it admits
    /// (4x offered), and refusing costs a tenth of serving: the busy share settles
    /// in the band, the level neither pins nor oscillates.
    #[test]
    fn settles_on_the_busy_share_when_refusals_cost_cpu() {
        let mut c = LevelController::new(LevelControlConfig::default()).expect("valid");
        let mut t = 0;
        let mut busy = Vec::new();
        for _ in 0..1500 {
            t += 20;
            let admitted = 4.0 * (1.0 - c.level().get());
            let refused = 4.0 - admitted;
            let cpu = (admitted + 0.1 * refused).min(1.0);
            c.tick(Duration::ZERO, cpu, ms(t));
            busy.push(cpu);
        }
        let tail = &busy[1000..];
        let (lo, hi) = tail
            .iter()
            .fold((1.0f64, 0.0f64), |(lo, hi), b| (lo.min(*b), hi.max(*b)));
        assert!(lo > 0.75 && hi < 0.95, "busy between {lo} and {hi}");
    }

    #[test]
    fn rises_fast_on_a_spike_and_returns_to_zero_slowly_after() {
        let mut c = LevelController::new(LevelControlConfig::default()).expect("valid");
        c.tick(ms(0), 0.0, ms(0));
        let mut t = 0;
        for _ in 0..5 {
            t += 100;
            c.tick(ms(50), 0.0, ms(t));
        }
        assert_eq!(c.level().get(), 1.0, "half a second of 10x the target");
        t += 100;
        let held = c.tick(ms(3), 0.85, ms(t)).get();
        assert_eq!(held, 1.0, "inside the band the level holds");
        for _ in 0..10 {
            t += 100;
            c.tick(Duration::ZERO, 0.1, ms(t));
        }
        let down = c.level().get();
        assert!((0.7..0.8).contains(&down), "one calm second: {down}");
        for _ in 0..40 {
            t += 100;
            c.tick(Duration::ZERO, 0.1, ms(t));
        }
        assert_eq!(c.level().get(), 0.0);
    }

    #[test]
    fn validation_names_the_key() {
        let cfg = LevelControlConfig {
            low_fraction: 1.0,
            ..LevelControlConfig::default()
        };
        let err = LevelController::new(cfg).expect_err("invalid");
        assert!(err.to_string().starts_with("low_fraction:"), "{err}");
    }

    proptest! {
        /// Whatever the delays and clock jumps, the level stays in 0..=1.
        #[test]
        fn level_stays_in_range(
            steps in proptest::collection::vec((0u64..1_000_000, proptest::num::f64::ANY, 0u64..5_000), 1..200)
        ) {
            let mut c = LevelController::new(LevelControlConfig::default()).expect("valid");
            let mut t = 0u64;
            for (delay_us, cpu, dt) in steps {
                t += dt;
                let after = c.tick(Duration::from_micros(delay_us), cpu, ms(t)).get();
                prop_assert!((0.0..=1.0).contains(&after));
            }
        }

        /// The level never moves against the error: it never falls while every delay
        /// is above the target, never rises while every delay is below the low mark.
        #[test]
        fn level_moves_with_the_error(
            high in proptest::collection::vec((5_001u64..1_000_000, 0u64..500), 1..100),
            low in proptest::collection::vec((0u64..2_500, 0u64..500), 1..100),
        ) {
            let mut c = LevelController::new(LevelControlConfig::default()).expect("valid");
            let mut t = 0u64;
            let mut before = c.level().get();
            for (delay_us, dt) in high {
                t += dt;
                let after = c.tick(Duration::from_micros(delay_us), 0.5, ms(t)).get();
                prop_assert!(after >= before);
                before = after;
            }
            // A new window starts with the low delays.
            t += 100;
            c.tick(Duration::ZERO, 0.1, ms(t));
            before = c.level().get();
            for (delay_us, dt) in low {
                t += dt;
                let after = c.tick(Duration::from_micros(delay_us), 0.5, ms(t)).get();
                prop_assert!(after <= before);
                before = after;
            }
        }
    }
}
