//! The statistics a verdict needs, written out so every number can be checked against
//! SciPy (see `tests/stats_reference.rs` and `tests/reference/scipy_reference.py`):
//!
//! - [`two_proportion_z`]: pooled two-proportion z-test, two-sided — rates with enough
//!   events in both groups (equivalent to `scipy.stats.chi2_contingency(correction=False)`);
//! - [`fisher_exact`]: Fisher's exact test, two-sided — rates with few events, where the
//!   normal approximation is wrong (`scipy.stats.fisher_exact`);
//! - [`mann_whitney_u`] / [`mann_whitney_u_binned`]: Mann–Whitney U, two-sided, normal
//!   approximation with tie and continuity correction, exact for tiny untied samples
//!   (`scipy.stats.mannwhitneyu`, `method="auto"`) — times such as time to first frame;
//! - [`holm`]: Holm–Bonferroni adjusted p-values, so a run that compares many
//!   (device type, KPI) pairs keeps its family-wise false-positive rate.
//!
//! All functions are pure and total: degenerate inputs (an empty group, every value
//! tied) give `None` or a p-value of 1 instead of NaN or a panic.

mod fisher;
mod mann_whitney;

pub use fisher::fisher_exact;
pub use mann_whitney::{mann_whitney_u, mann_whitney_u_binned, MannWhitney};

use serde::{Deserialize, Serialize};

/// Which test produced a p-value; shown next to every comparison so a reader knows
/// how to interpret it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Pooled two-proportion z-test.
    TwoProportionZ,
    /// Fisher's exact test on the 2×2 table.
    FisherExact,
    /// Mann–Whitney U (rank-sum) test.
    MannWhitneyU,
}

/// A test statistic and its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TestOutcome {
    /// The statistic (z for the z-test, U of the first sample for Mann–Whitney, the
    /// sample odds ratio for Fisher, `inf` when it has a zero denominator).
    pub statistic: f64,
    /// Two-sided p-value in `0..=1`.
    pub p_value: f64,
}

/// `erfc(x)` to about 1e-15 relative: positive-term series of `erf` below 2.5, the
/// Laplace continued fraction (modified Lentz) above; the tails a p-value lives in
/// keep full relative precision.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.5 {
        // erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n (2x^2)^n x / (1*3*...*(2n+1))
        let mut term = x;
        let mut sum = x;
        let two_x2 = 2.0 * x * x;
        let mut n = 0u32;
        while n < 200 {
            n += 1;
            term *= two_x2 / f64::from(2 * n + 1);
            sum += term;
            if term < sum * 1e-17 {
                break;
            }
        }
        return 1.0 - std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp() * sum;
    }
    if x > 27.0 {
        return 0.0;
    }
    // erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    let mut k = 1u32;
    while k < 500 {
        let a = f64::from(k) / 2.0;
        d = x + a * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = x + a / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
        k += 1;
    }
    (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
}

/// Upper tail of the standard normal distribution, `P(Z > z)`.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// Pooled two-proportion z-test of `x1/n1` against `x2/n2`, two-sided.
///
/// `statistic` is `(p1 - p2) / se` with the pooled standard error. When both groups
/// have the same all-or-nothing outcome (no variance) the test says nothing: z = 0,
/// p = 1. `None` when a group is empty or has more events than trials.
pub fn two_proportion_z(x1: u64, n1: u64, x2: u64, n2: u64) -> Option<TestOutcome> {
    if n1 == 0 || n2 == 0 || x1 > n1 || x2 > n2 {
        return None;
    }
    let (x1, n1, x2, n2) = (x1 as f64, n1 as f64, x2 as f64, n2 as f64);
    let pooled = (x1 + x2) / (n1 + n2);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
    if se <= 0.0 || !se.is_finite() {
        return Some(TestOutcome {
            statistic: 0.0,
            p_value: 1.0,
        });
    }
    let z = (x1 / n1 - x2 / n2) / se;
    Some(TestOutcome {
        statistic: z,
        p_value: (2.0 * normal_sf(z.abs())).min(1.0),
    })
}

/// Holm–Bonferroni step-down adjusted p-values, in the order given: the i-th smallest
/// p is multiplied by `m - i` (0-based), made monotone, and capped at 1. Rejecting
/// where the adjusted value is below `alpha` keeps the family-wise error rate at
/// `alpha` whatever the dependence between the tests.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let p = if p_values[i].is_nan() {
            1.0
        } else {
            p_values[i]
        };
        running = running.max(((m - rank) as f64 * p).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_known_values_in_both_regimes() {
        // Python math.erfc.
        let cases = [
            (0.0, 1.0),
            (0.5, 0.4795001221869535),
            (1.0, 0.15729920705028513),
            (2.4, 0.0006885138966450789),
            (2.6, 0.00023603441652934908),
            (3.0, 2.2090496998585438e-05),
            (5.0, 1.5374597944280351e-12),
            (-1.0, 1.842700792949715),
        ];
        for (x, want) in cases {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 1e-13,
                "erfc({x}) = {got}, want {want}"
            );
        }
        assert_eq!(erfc(40.0), 0.0);
        assert!(erfc(f64::NAN).is_nan());
    }

    #[test]
    fn z_test_degenerate_inputs() {
        assert_eq!(two_proportion_z(0, 0, 1, 10), None);
        assert_eq!(two_proportion_z(11, 10, 1, 10), None);
        let same = two_proportion_z(0, 10, 0, 20).expect("valid");
        assert_eq!(same.p_value, 1.0);
    }

    #[test]
    fn holm_is_monotone_and_capped() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]);
        let want = [0.04, 0.09, 0.09, 0.5];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[]), Vec::<f64>::new());
        assert_eq!(holm(&[0.6, 0.7]), vec![1.0, 1.0]);
    }
}
