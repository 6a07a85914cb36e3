//! The Mann–Whitney U (Wilcoxon rank-sum) test, on raw samples or on histograms.

use serde::{Deserialize, Serialize};

use super::normal_sf;

/// Largest sample the exact distribution is computed for (with the other sample at
/// most 8): its table has `n1·n2 + 1` entries.
const EXACT_MAX_OTHER: usize = 10_000;

/// The result of a Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the first sample: the number of (x, y) pairs with x > y, ties counting ½.
    /// Above `n1·n2/2` the first sample tends to be larger.
    pub u1: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Whether the p-value is exact (tiny untied samples) or the normal approximation.
    pub exact: bool,
}

/// Mann–Whitney U of samples `x` and `y`, two-sided, as `scipy.stats.mannwhitneyu`
/// with its defaults: exact when there are no ties and one sample has at most 8 values
/// (and the other at most 10 000), otherwise the normal approximation with tie and
/// continuity correction. `None` when a sample is empty or holds a NaN.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 || x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    let mut all: Vec<(f64, bool)> = x
        .iter()
        .map(|&v| (v, true))
        .chain(y.iter().map(|&v| (v, false)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Walk runs of equal values: each gets the average of the ranks it spans.
    let mut rank_sum_x = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let avg_rank = (i + j + 1) as f64 / 2.0;
        let in_x = all[i..j].iter().filter(|e| e.1).count() as f64;
        rank_sum_x += in_x * avg_rank;
        tie_term += t * t * t - t;
        i = j;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u1 = rank_sum_x - f1 * (f1 + 1.0) / 2.0;
    let small = n1.min(n2);
    if tie_term == 0.0 && small <= 8 && n1.max(n2) <= EXACT_MAX_OTHER {
        let u = u1.max(f1 * f2 - u1);
        return Some(MannWhitney {
            u1,
            p_value: (2.0 * exact_sf(small, n1.max(n2), u)).min(1.0),
            exact: true,
        });
    }
    Some(asymptotic(u1, f1, f2, tie_term))
}

/// Mann–Whitney U of two histograms over the same ordered bins (`x[i]` and `y[i]`
/// values in bin `i`; the shorter one is padded with zeros): every value of a bin
/// ties with the others of that bin, so the test is exact for the binned data and
/// costs O(bins) however many values were counted. Always the normal approximation
/// with tie and continuity correction, as SciPy gives for the expanded samples when
/// both have more than 8 values or any tie. `None` when a histogram is empty.
pub fn mann_whitney_u_binned(x: &[u64], y: &[u64]) -> Option<MannWhitney> {
    let n1: f64 = x.iter().map(|&c| c as f64).sum();
    let n2: f64 = y.iter().map(|&c| c as f64).sum();
    if n1 == 0.0 || n2 == 0.0 {
        return None;
    }
    let bins = x.len().max(y.len());
    let mut below = 0.0;
    let mut rank_sum_x = 0.0;
    let mut tie_term = 0.0;
    for i in 0..bins {
        let a = x.get(i).copied().unwrap_or(0) as f64;
        let b = y.get(i).copied().unwrap_or(0) as f64;
        let t = a + b;
        if t == 0.0 {
            continue;
        }
        rank_sum_x += a * (below + (t + 1.0) / 2.0);
        tie_term += t * t * t - t;
        below += t;
    }
    let u1 = rank_sum_x - n1 * (n1 + 1.0) / 2.0;
    Some(asymptotic(u1, n1, n2, tie_term))
}

fn asymptotic(u1: f64, n1: f64, n2: f64, tie_term: f64) -> MannWhitney {
    let u = u1.max(n1 * n2 - u1);
    let n = n1 + n2;
    let mu = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p_value = if var > 0.0 && var.is_finite() {
        let z = (u - mu - 0.5) / var.sqrt();
        (2.0 * normal_sf(z)).min(1.0)
    } else {
        // Every value tied (or a single value in all): no evidence either way.
        1.0
    };
    MannWhitney {
        u1,
        p_value,
        exact: false,
    }
}

/// `P(U >= u)` under the null for samples of sizes `m <= n`: the coefficients of the
/// Gaussian binomial `[m+n choose m]_q` count the arrangements with each U, built as
/// `prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)` in O(m²·n).
fn exact_sf(m: usize, n: usize, u: f64) -> f64 {
    let degree = m * n;
    let mut poly = vec![0.0f64; degree + 1];
    poly[0] = 1.0;
    for i in 1..=m {
        // Multiply by (1 - q^(n+i)), from the top so each step reads old coefficients.
        let shift = n + i;
        for k in (shift..=degree).rev() {
            poly[k] -= poly[k - shift];
        }
        // Divide by (1 - q^i): a running sum with stride i.
        for k in i..=degree {
            poly[k] += poly[k - i];
        }
    }
    let total: f64 = poly.iter().sum();
    // U takes integer values when there are no ties.
    let start = (u.ceil().max(0.0) as usize).min(degree + 1);
    let tail: f64 = poly[start..].iter().sum();
    (tail / total).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_distribution_of_tiny_samples() {
        // m = 1, n = 2: U in {0, 1, 2}, one arrangement each.
        assert!((exact_sf(1, 2, 2.0) - 1.0 / 3.0).abs() < 1e-15);
        // m = n = 2: counts 1, 1, 2, 1, 1 over U = 0..=4 (6 arrangements).
        assert!((exact_sf(2, 2, 3.0) - 2.0 / 6.0).abs() < 1e-15);
        assert!((exact_sf(2, 2, 0.0) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn binned_equals_raw_with_ties() {
        let x = [1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 5.0, 5.0, 6.0, 7.0];
        let y = [2.0, 2.0, 3.0, 4.0, 5.0, 6.0, 6.0, 6.0, 7.0, 8.0, 8.0];
        let raw = mann_whitney_u(&x, &y).expect("non-empty");
        let hist = |v: &[f64]| {
            let mut h = vec![0u64; 9];
            for &s in v {
                h[s as usize] += 1;
            }
            h
        };
        let binned = mann_whitney_u_binned(&hist(&x), &hist(&y)).expect("non-empty");
        assert!((raw.u1 - binned.u1).abs() < 1e-9);
        assert!((raw.p_value - binned.p_value).abs() < 1e-12);
        assert!(!raw.exact);
    }

    #[test]
    fn all_tied_and_empty() {
        assert_eq!(mann_whitney_u(&[], &[1.0]), None);
        assert_eq!(mann_whitney_u(&[f64::NAN], &[1.0]), None);
        let tied = mann_whitney_u_binned(&[5], &[7]).expect("non-empty");
        assert_eq!(tied.p_value, 1.0);
    }
}
