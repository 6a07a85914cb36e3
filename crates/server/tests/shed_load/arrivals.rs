//! When a paced connection sends: independent devices' instants (a Poisson process),
//! met to within the generator's loop time.

use std::time::Duration;

use tokio::time::Instant;

/// Waits until `at` to within the generator's loop time: the timer (millisecond ticks)
/// to a millisecond before, then yields until due.
pub(super) async fn sleep_until_exactly(at: Instant) {
    let early = Duration::from_millis(1);
    if let Some(coarse) = at.checked_sub(early) {
        tokio::time::sleep_until(coarse).await;
    }
    while Instant::now() < at {
        tokio::task::yield_now().await;
    }
}

/// Exponentially distributed gaps (a Poisson process), from a seeded splitmix64.
pub(super) struct ExponentialGaps(u64);

impl ExponentialGaps {
    pub(super) fn new(seed: u64) -> ExponentialGaps {
        ExponentialGaps(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    /// A gap of mean `mean` seconds.
    pub(super) fn next(&mut self, mean: f64) -> Duration {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // A uniform draw in (0, 1]: never 0, so the logarithm is finite.
        let unit = ((z >> 11) + 1) as f64 / (1u64 << 53) as f64;
        Duration::from_secs_f64(-unit.ln() * mean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gaps are exponential: their mean is the pace's, and about e⁻¹ of them are
    /// longer than it; none is zero or unbounded, and a seed gives the same draws.
    #[test]
    fn gaps_are_exponential_with_the_paces_mean() {
        let mean = 0.002;
        let mut gaps = ExponentialGaps::new(7);
        let draws: Vec<f64> = (0..100_000)
            .map(|_| gaps.next(mean).as_secs_f64())
            .collect();
        let average = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((average / mean - 1.0).abs() < 0.02, "mean {average}");
        let longer = draws.iter().filter(|&&d| d > mean).count() as f64 / draws.len() as f64;
        assert!(
            (longer - (-1.0f64).exp()).abs() < 0.01,
            "share longer {longer}"
        );
        assert!(draws.iter().all(|&d| d > 0.0 && d < 40.0 * mean));
        let mut again = ExponentialGaps::new(7);
        assert_eq!(again.next(mean).as_secs_f64(), draws[0]);
        assert_ne!(ExponentialGaps::new(8).next(mean).as_secs_f64(), draws[0]);
    }
}
