//! The cut controller (`level_source = "cut"`, SHED-2): the feedback controller's
//! question — does the admitted work fit? — answered by moving the cut through the
//! priorities that are actually being requested.
//!
//! The level controller steps the overload level by fixed amounts; on the cubic curve
//! one step near the DEGRADED band crosses several priorities, so when a flood sits on
//! a few priorities the level can only admit all of a class or none of it, and the
//! node swings between full and idle. This controller integrates the cut `t` (0..=99,
//! the curve's `99·x³`) instead, in units of **occupied** priorities: a step of 1 moves
//! through one priority that was requested in the last few seconds, and priorities
//! nobody asks for are jumped over. Inside a priority's band the curve sheds a share
//! of it on a logarithmic scale (see [`crate::ShedCurve::share`]), so a constant step
//! changes the shed share by a constant factor: the controller finds a refusal share
//! of 1 in 10,000 as easily as one of 1 in 2.
//!
//! ```text
//! per interval, from the fit of the admitted work (smallest delay and busy share):
//! step  = rise · dt · min(over, 2)                        does not fit
//!       = −fall · dt · clamp((cpu_low − cpu)/(1 − cpu_target), ¼, 4)   fits with room
//!       = 0                                               inside the band
//! up    : t moves through occupied priorities above it; none above → stays
//! down  : t moves through occupied priorities below it; none below → 0
//! level = cbrt(t / 99)            (so threshold(level) = floor(t))
//! ```
//!
//! Pure: time and the set of requested priorities are passed in.

use std::time::Duration;

use crate::control::{Fit, FitJudge, LevelControlConfig};
use crate::error::ConfigError;
use crate::overload::OverloadLevel;
use crate::priority::Priority;

/// A set of priorities (0..=99), as one bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrioritySet(u128);

impl PrioritySet {
    /// No priority.
    pub const EMPTY: PrioritySet = PrioritySet(0);

    /// The set whose members are the set bits of `bits` (bit `v` for priority `v`);
    /// bits above [`Priority::TOP`] are dropped. Lets a lock-free word of bits, filled
    /// by request paths, become a set in one step.
    #[must_use]
    pub fn from_bits(bits: u128) -> PrioritySet {
        PrioritySet(bits & ((1u128 << (Priority::TOP.get() + 1)) - 1))
    }

    /// The set with `p` added.
    #[must_use]
    pub fn with(self, p: Priority) -> PrioritySet {
        PrioritySet(self.0 | 1u128 << p.get())
    }

    /// Whether priority `v` (0..=99) is in the set.
    pub fn contains(self, v: u8) -> bool {
        v <= Priority::TOP.get() && self.0 >> v & 1 == 1
    }

    /// The lowest member above `v`.
    fn next_above(self, v: u8) -> Option<u8> {
        (v.saturating_add(1)..=Priority::TOP.get()).find(|&q| self.contains(q))
    }

    /// The highest member below `v`.
    fn next_below(self, v: u8) -> Option<u8> {
        (0..v).rev().find(|&q| self.contains(q))
    }
}

/// Which priorities were requested lately: a priority stays occupied for `memory`
/// after its last request, so a class whose connections are paused for a second is
/// not jumped over as if nobody wanted it.
#[derive(Debug, Clone)]
pub struct Occupancy {
    last_seen: [Option<Duration>; 100],
    memory: Duration,
}

impl Occupancy {
    /// Remembers each priority for `memory` after it was last requested.
    pub fn new(memory: Duration) -> Occupancy {
        Occupancy {
            last_seen: [None; 100],
            memory,
        }
    }

    /// Records the priorities requested since the last call, at `now`.
    pub fn record(&mut self, requested: PrioritySet, now: Duration) {
        for (v, seen) in (0u8..).zip(self.last_seen.iter_mut()) {
            if requested.contains(v) {
                *seen = Some(now);
            }
        }
    }

    /// The priorities requested within `memory` of `now`.
    pub fn occupied(&self, now: Duration) -> PrioritySet {
        let mut set = PrioritySet::EMPTY;
        for (v, seen) in (0u8..).zip(self.last_seen.iter()) {
            if let (Some(at), Some(p)) = (seen, Priority::new(v)) {
                if now.saturating_sub(*at) <= self.memory {
                    set = set.with(p);
                }
            }
        }
        set
    }
}

/// Moves the cut `t` by `step` occupied priorities (see the module docs).
pub fn advance(t: f64, step: f64, occupied: PrioritySet) -> f64 {
    let top = f64::from(Priority::TOP.get());
    let mut t = if t.is_nan() { 0.0 } else { t.clamp(0.0, top) };
    let mut left = if step.is_finite() { step.abs() } else { 0.0 };
    if step > 0.0 {
        while left > 0.0 && t < top {
            let m = t.floor() as u8;
            if !occupied.contains(m) {
                match occupied.next_above(m) {
                    Some(q) => t = f64::from(q),
                    None => break,
                }
                continue;
            }
            let room = f64::from(m) + 1.0 - t;
            if left < room {
                t += left;
                break;
            }
            t = f64::from(m) + 1.0;
            left -= room;
        }
    } else {
        while left > 0.0 && t > 0.0 {
            // The band just below t: [m, m + 1).
            let m = (t.ceil() as u8).saturating_sub(1);
            if !occupied.contains(m) {
                t = occupied.next_below(m).map_or(0.0, |q| f64::from(q) + 1.0);
                continue;
            }
            let room = t - f64::from(m);
            if left < room {
                t -= left;
                break;
            }
            t = f64::from(m);
            left -= room;
        }
    }
    t.clamp(0.0, top)
}

/// Integrates the fit of the admitted work into the cut (see the module docs).
#[derive(Debug, Clone)]
pub struct CutController {
    judge: FitJudge,
    cut: f64,
}

impl CutController {
    /// A controller with nothing cut. `rise_per_second` and `fall_per_second` of the
    /// config count occupied priorities here (see
    /// [`LevelControlConfig::cut_default`]).
    ///
    /// # Errors
    /// When the config does not validate.
    pub fn new(cfg: LevelControlConfig) -> Result<CutController, ConfigError> {
        Ok(CutController {
            judge: FitJudge::new(cfg)?,
            cut: 0.0,
        })
    }

    /// The cut, 0..=99: priorities below its floor are shed, the one at its floor in
    /// part.
    pub fn cut(&self) -> f64 {
        self.cut
    }

    /// The overload level whose curve threshold is this cut.
    pub fn level(&self) -> OverloadLevel {
        OverloadLevel::new((self.cut / f64::from(Priority::TOP.get())).cbrt())
    }

    /// Feed a queueing delay, a busy share and the priorities requested lately,
    /// measured at `now`; get the level. Moves once per `interval_ms`, like
    /// [`crate::LevelController::tick`].
    pub fn tick(
        &mut self,
        queue_delay: Duration,
        cpu: f64,
        now: Duration,
        occupied: PrioritySet,
    ) -> OverloadLevel {
        let (rise, fall) = {
            let c = self.judge.config();
            (c.rise_per_second, c.fall_per_second)
        };
        let step = match self.judge.judge(queue_delay, cpu, now) {
            // At most twice the rate: a step changes the shed share by a bounded factor,
            // whose effect (refusals, paused connections) shows by the next interval.
            Some(Fit::Over { over, dt }) => rise * dt * over.min(2.0),
            // In proportion to the room, on the scale of `over`, so that a busy share
            // wavering around the band moves the cut as much down as up.
            Some(Fit::Room { under, dt }) => -fall * dt * under.clamp(0.25, 4.0),
            Some(Fit::Fits) | None => 0.0,
        };
        self.cut = advance(self.cut, step, occupied);
        self.level()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::ShedCurve;
    use proptest::prelude::*;

    fn set(values: &[u8]) -> PrioritySet {
        values.iter().fold(PrioritySet::EMPTY, |s, v| {
            s.with(Priority::new(*v).expect("in range"))
        })
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn a_set_from_bits_keeps_the_priorities_and_drops_the_rest() {
        let bits = 1u128 | 1 << 45 | 1 << 64 | 1 << 99 | 1 << 100 | 1 << 127;
        assert_eq!(PrioritySet::from_bits(bits), set(&[0, 45, 64, 99]));
        assert_eq!(PrioritySet::from_bits(0), PrioritySet::EMPTY);
    }

    #[test]
    fn steps_jump_over_priorities_nobody_requests() {
        let occupied = set(&[10, 45, 75]);
        // From nothing cut, half a step: into NON_CRITICAL's band.
        assert_eq!(advance(0.0, 0.5, occupied), 10.5);
        // A step and a half from there: through 10's band, half way into 45's.
        assert_eq!(advance(10.5, 1.0, occupied), 45.5);
        // Down: out of 45's band, then half way back into 10's.
        assert_eq!(advance(45.5, -1.0, occupied), 10.5);
        // Nothing requested above: an upward step stays put; below: down to 0.
        assert_eq!(advance(76.0, 1.0, occupied), 76.0);
        assert_eq!(advance(10.2, -5.0, occupied), 0.0);
        assert_eq!(advance(30.0, 1.0, PrioritySet::EMPTY), 30.0);
    }

    /// 4× offered on one DEGRADED priority plus CRITICAL, each refused request
    /// costing a tenth of a served one: the busy share settles in the band — the
    /// level controller could only admit all of 45 or none of it.
    #[test]
    fn holds_a_node_full_when_the_flood_sits_on_one_priority() {
        // The busy share as the signal (the default judges by the delay alone).
        let cfg = LevelControlConfig {
            cpu_target: 0.9,
            cpu_low: 0.8,
            interval_ms: 100,
            ..LevelControlConfig::cut_default()
        };
        let mut c = CutController::new(cfg).expect("valid");
        let occupied = set(&[45, 80]);
        let curve = ShedCurve;
        let p45 = Priority::new(45).expect("in range");
        let mut busy = Vec::new();
        let mut t = 0;
        for _ in 0..3000 {
            t += 20;
            let admitted = 0.1 + 3.9 * curve.share(p45, c.level());
            let refused = 4.0 - admitted;
            let cpu = (admitted + 0.1 * refused).min(1.0);
            c.tick(Duration::ZERO, cpu, ms(t), occupied);
            busy.push(cpu);
        }
        let tail = &busy[2000..];
        let (lo, hi) = tail
            .iter()
            .fold((1.0f64, 0.0f64), |(lo, hi), b| (lo.min(*b), hi.max(*b)));
        assert!(lo > 0.75 && hi < 0.97, "busy between {lo} and {hi}");
    }

    #[test]
    fn occupancy_remembers_for_its_memory() {
        let mut o = Occupancy::new(Duration::from_secs(5));
        o.record(set(&[45]), ms(1000));
        o.record(set(&[10]), ms(4000));
        assert_eq!(o.occupied(ms(5000)), set(&[10, 45]));
        assert_eq!(o.occupied(ms(7000)), set(&[10]));
        assert_eq!(o.occupied(ms(9500)), PrioritySet::EMPTY);
    }

    proptest! {
        /// The cut stays in 0..=99, moves in the step's direction, and never rests
        /// inside the band of a priority nobody requests.
        #[test]
        fn cut_stays_in_range_and_moves_with_the_step(
            t in -10.0f64..120.0,
            step in -10.0f64..10.0,
            bits in proptest::num::u128::ANY,
        ) {
            let occupied = PrioritySet(bits & ((1u128 << 100) - 1));
            let after = advance(t, step, occupied);
            prop_assert!((0.0..=99.0).contains(&after));
            let start = t.clamp(0.0, 99.0);
            if step > 0.0 {
                prop_assert!(after >= start);
            } else {
                prop_assert!(after <= start);
            }
            if after.fract() > 0.0 && after != start {
                prop_assert!(occupied.contains(after.floor() as u8));
            }
        }
    }
}
