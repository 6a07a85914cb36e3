//! The shed curve: overload level → priority threshold (SHED-2).
//!
//! ```text
//! threshold(x) = floor(99 · x³)          x = overload level, clamped to 0..=1
//! admit(p, x)  = p ≥ threshold(x)
//! ```
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

    /// Whether a request of this priority is admitted at this overload level.
    pub fn admit(self, priority: Priority, level: OverloadLevel) -> bool {
        priority >= self.threshold(level)
    }
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
    }
}
