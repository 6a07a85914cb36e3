//! Fisher's exact test on a 2×2 table.

use super::TestOutcome;

/// Relative tolerance under which two table probabilities count as equal; SciPy's
/// value, so tables that tie with the observed one in exact arithmetic are included.
const RELATIVE_EQUALITY: f64 = 1.0 + 1e-7;

/// Fisher's exact test of the table `[[a, b], [c, d]]`, two-sided: the probability,
/// under fixed margins, of every table no more likely than the observed one.
///
/// The hypergeometric weights are built by their ratio recurrence in log space, so no
/// factorial is ever formed and large counts neither overflow nor lose the tail; the
/// cost is linear in the number of tables with these margins (at most
/// `min(a + b, a + c) + 1`). `statistic` is the sample odds ratio `a·d / (b·c)`
/// (`inf` when `b·c = 0 < a·d`, NaN when both are 0). `None` for an empty table.
pub fn fisher_exact(a: u64, b: u64, c: u64, d: u64) -> Option<TestOutcome> {
    let n = a.checked_add(b)?.checked_add(c)?.checked_add(d)?;
    if n == 0 {
        return None;
    }
    let row1 = a + b;
    let row2 = c + d;
    let col1 = a + c;
    // x = the top-left cell; it ranges over lo..=hi with the margins fixed.
    let lo = col1.saturating_sub(row2);
    let hi = col1.min(row1);
    let len = usize::try_from(hi - lo + 1).ok()?;
    let mut log_w = Vec::with_capacity(len);
    let mut current = 0.0f64;
    log_w.push(current);
    let mut x = lo;
    while x < hi {
        // P(x+1)/P(x) = (col1 - x)(row1 - x) / ((x + 1)(row2 - col1 + x + 1))
        let num = ((col1 - x) as f64).ln() + ((row1 - x) as f64).ln();
        let den = ((x + 1) as f64).ln() + ((row2 + x + 1 - col1) as f64).ln();
        current += num - den;
        log_w.push(current);
        x += 1;
    }
    let max = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let observed = log_w[(a - lo) as usize];
    let threshold = (observed - max).exp() * RELATIVE_EQUALITY;
    let mut total = 0.0;
    let mut tail = 0.0;
    for lw in &log_w {
        let w = (lw - max).exp();
        total += w;
        if w <= threshold {
            tail += w;
        }
    }
    let ad = a as f64 * d as f64;
    let bc = b as f64 * c as f64;
    let odds = if bc == 0.0 {
        if ad == 0.0 {
            f64::NAN
        } else {
            f64::INFINITY
        }
    } else {
        ad / bc
    };
    Some(TestOutcome {
        statistic: odds,
        p_value: (tail / total).min(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_and_degenerate_tables() {
        assert_eq!(fisher_exact(0, 0, 0, 0), None);
        let p = fisher_exact(3, 1, 1, 3).expect("valid").p_value;
        let q = fisher_exact(1, 3, 3, 1).expect("valid").p_value;
        assert!((p - q).abs() < 1e-15);
        // One row only: every table has the same margins, p = 1.
        assert_eq!(fisher_exact(5, 5, 0, 0).expect("valid").p_value, 1.0);
    }
}
