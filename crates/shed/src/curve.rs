//! The shed curve: overload level → priority threshold (SHED-2).
//!
//! ```text
//! t(x)         = 99 · x³                  x = overload level, clamped to 0..=1
//! threshold(x) = floor(t(x))
//! admit(p, x)  = p ≥ threshold(x)          (not entirely shed)
//! share(p, x)  = 1                          p > threshold(x)
//!              = 1 − g(t(x) − threshold(x))  p = threshold(x)
//!              = 0                          p < threshold(x)
//! g(f)         = (σ(k(f − ½)) − σ(−k/2)) / (σ(k/2) − σ(−k/2)),  k = 2·ln 10⁴, σ logistic
//! ```
//!
//! `share` is the part of a priority's requests admitted: the threshold priority
//! itself is shed in part, by a share `g` that grows from 0 to 1 as the level moves
//! through that priority's band, on a logistic scale (1 in 10,000 shed near the start
//! of the band, half at its middle, all but 1 in 10,000 near its end). So the curve is
//! continuous: a level between two priorities admits a share of one class rather than
//! all or none of it, and a controller stepping through the band changes the smaller
//! of the admitted and shed shares by about the same factor per step, so it can hold
//! a node exactly full even when all of its traffic sits on a few priorities.
//!
//! Cubic like Netflix's: flat near 0, so mild overload sheds only the least important
//! scores, and steep near 1, so CRITICAL (70–99) is only reached at x ≥ 0.89. With the
//! default buckets: the first score is shed at x ≈ 0.22, all NON_CRITICAL by x ≈ 0.67,
//! all DEGRADED by x ≈ 0.89, and at x = 1 only priority 99 is still admitted.
//!
//! Because one threshold cuts the single ordered scale, a CRITICAL request is never
//! shed while any lower bucket is admitted (DESIGN invariant 5). `admit` is a few
//! float operations and a compare: O(1), no allocation.

use crate::overload::OverloadLevel;
use crate::priority::Priority;

/// The cubic level→threshold curve; a type so a later, tunable curve can replace it
/// without touching callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShedCurve;

impl ShedCurve {
    /// The lowest priority still admitted at this level (every priority below it is
    /// shed). 0 at level 0 (nothing shed), 99 at level 1.
    pub fn threshold(self, level: OverloadLevel) -> Priority {
        let x = level.get();
        let t = (f64::from(Priority::TOP.get()) * x * x * x).floor();
        // x is in 0..=1, so t is in 0..=99.
        Priority::new(t as u8).unwrap_or(Priority::TOP)
    }

    /// Whether requests of this priority are admitted at all at this overload level
    /// (the threshold priority is admitted in part: see [`ShedCurve::share`]).
    pub fn admit(self, priority: Priority, level: OverloadLevel) -> bool {
        priority >= self.threshold(level)
    }

    /// The share (0..=1) of requests of this priority admitted at this level.
    pub fn share(self, priority: Priority, level: OverloadLevel) -> f64 {
        let t = f64::from(Priority::TOP.get()) * level.get().powi(3);
        let threshold = self.threshold(level);
        if priority > threshold || priority == Priority::TOP {
            1.0
        } else if priority < threshold {
            0.0
        } else {
            1.0 - shed_share_in_band((t - t.floor()).clamp(0.0, 1.0))
        }
    }
}

/// The share of the threshold priority shed at position `f` (0..=1) of its band: `g`
/// of the module docs, 0 at 0 and 1 at 1.
fn shed_share_in_band(f: f64) -> f64 {
    // k = 2 ln 10⁴: σ(−k/2) = 1/10,001, so the shares span four orders of magnitude.
    let k = 2.0 * 10_000f64.ln();
    let sigma = |z: f64| 1.0 / (1.0 + (-z).exp());
    let (low, high) = (sigma(-k / 2.0), sigma(k / 2.0));
    ((sigma(k * (f - 0.5)) - low) / (high - low)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Bucket;
    use proptest::prelude::*;

    fn p(v: u8) -> Priority {
        Priority::new(v).expect("in range")
    }

    #[test]
    fn endpoints() {
        let c = ShedCurve;
        for v in 0..=99 {
            assert!(c.admit(p(v), OverloadLevel::ZERO), "nothing shed at 0");
        }
        for v in 0..99 {
            assert!(!c.admit(p(v), OverloadLevel::FULL), "{v} shed at 1");
        }
        assert!(c.admit(Priority::TOP, OverloadLevel::FULL));
        assert!(c.admit(p(0), OverloadLevel::new(0.2)));
        assert!(!c.admit(p(0), OverloadLevel::new(0.3)));
        assert!(c.admit(Bucket::Critical.min(), OverloadLevel::new(0.88)));
        assert!(!c.admit(Bucket::Degraded.max(), OverloadLevel::new(0.891)));
    }

    proptest! {
        /// SHED-2: more overload never admits more.
        #[test]
        fn threshold_is_monotone(a in 0.0f64..=1.0, b in 0.0f64..=1.0) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let c = ShedCurve;
            prop_assert!(c.threshold(OverloadLevel::new(lo)) <= c.threshold(OverloadLevel::new(hi)));
            for v in 0..=99 {
                if c.admit(p(v), OverloadLevel::new(hi)) {
                    prop_assert!(c.admit(p(v), OverloadLevel::new(lo)));
                }
            }
        }

        /// SHED-2 / invariant 5: whenever any lower-bucket priority is admitted,
        /// every CRITICAL priority is admitted; and admission is upward-closed.
        #[test]
        fn critical_never_shed_while_lower_admitted(x in proptest::num::f64::ANY, low in 0u8..70, crit in 70u8..=99) {
            let c = ShedCurve;
            let level = OverloadLevel::new(x);
            if c.admit(p(low), level) {
                prop_assert!(c.admit(p(crit), level));
            }
            prop_assert!(c.admit(Priority::TOP, level));
        }

        /// The shares keep the ordering: a priority admitted in any part means every
        /// higher one admitted entirely; more overload never admits a larger share;
        /// the share moves continuously from a priority to the next.
        #[test]
        fn shares_keep_the_order(a in 0.0f64..=1.0, b in 0.0f64..=1.0, low in 0u8..99) {
            let c = ShedCurve;
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let level = OverloadLevel::new(hi);
            let share = c.share(p(low), level);
            prop_assert!((0.0..=1.0).contains(&share));
            if share > 0.0 {
                for v in low + 1..=99 {
                    prop_assert_eq!(c.share(p(v), level), 1.0);
                }
            }
            prop_assert!(c.share(p(low), OverloadLevel::new(lo)) >= share);
            prop_assert_eq!(c.admit(p(low), level), share > 0.0 || c.threshold(level) == p(low));
        }
    }

    #[test]
    fn the_threshold_priority_is_shed_in_part_on_a_logistic_scale() {
        let c = ShedCurve;
        // t = 45.5: priority 45 half way through its band.
        let level = OverloadLevel::new((45.5f64 / 99.0).cbrt());
        let share = c.share(p(45), level);
        assert!((share - 0.5).abs() < 0.001, "{share}");
        // A quarter of the way: about 1 in 100 shed.
        let early = OverloadLevel::new((45.25f64 / 99.0).cbrt());
        assert!((0.985..0.995).contains(&c.share(p(45), early)));
        assert_eq!(c.share(p(46), level), 1.0);
        assert_eq!(c.share(p(44), level), 0.0);
        // Just below the next priority: almost all of 45 shed.
        let late = OverloadLevel::new((45.999f64 / 99.0).cbrt());
        assert!(c.share(p(45), late) < 0.01);
        assert_eq!(c.share(Priority::TOP, OverloadLevel::FULL), 1.0);
    }
}
