//! The time-to-first-frame histogram.
//!
//! Why a histogram and not a reservoir of samples: it merges exactly across nodes (add
//! the counts), costs O(1) per update with no random source, has a fixed worst-case
//! size, and the Mann–Whitney test runs on it directly ([`crate::stats::mann_whitney_u_binned`]):
//! values in one bin are ties, so the test is exact for the binned data and only loses
//! the order inside a bin. Bins are log-linear (8 per octave, at most 12.5% wide above
//! 8 ms, 1 ms wide below), which keeps the relative resolution the same from 50 ms
//! to 2 minutes — a reservoir would have needed thousands of samples per group and
//! device for the same power, and would not merge without a shared random stream.

use serde::{Deserialize, Serialize};

/// Number of bins: 8 one-millisecond bins, then 8 per octave from 8 ms up to the
/// last bin, which also takes everything at or above 2^17 ms (≈ 131 s).
pub const TTFF_BINS: usize = 120;

/// Counts of time-to-first-frame values per log-linear bin; trailing empty bins are
/// not stored, so a fresh histogram is an empty vector.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "Vec<u64>")]
pub struct TtffHistogram {
    counts: Vec<u64>,
}

impl TryFrom<Vec<u64>> for TtffHistogram {
    type Error = String;

    fn try_from(counts: Vec<u64>) -> Result<Self, Self::Error> {
        if counts.len() > TTFF_BINS {
            return Err(format!(
                "histogram has {} bins, at most {TTFF_BINS}",
                counts.len()
            ));
        }
        Ok(TtffHistogram { counts })
    }
}

impl From<TtffHistogram> for Vec<u64> {
    fn from(h: TtffHistogram) -> Self {
        h.counts
    }
}

impl TtffHistogram {
    /// The bin of a value in milliseconds.
    pub fn bin_of(ms: u64) -> usize {
        if ms < 8 {
            return ms as usize;
        }
        let ms = ms.min((1 << 17) - 1);
        let e = 63 - ms.leading_zeros() as usize; // 3..=16
        let sub = ((ms >> (e - 3)) & 7) as usize;
        (e - 2) * 8 + sub
    }

    /// The smallest value of a bin and its width, in milliseconds.
    pub fn bin_range(bin: usize) -> (u64, u64) {
        if bin < 8 {
            return (bin as u64, 1);
        }
        let e = bin / 8 + 2;
        let sub = (bin % 8) as u64;
        ((8 + sub) << (e - 3), 1 << (e - 3))
    }

    /// Count one value.
    pub fn record(&mut self, ms: u64) {
        let bin = Self::bin_of(ms);
        if self.counts.len() <= bin {
            self.counts.resize(bin + 1, 0);
        }
        self.counts[bin] = self.counts[bin].saturating_add(1);
    }

    /// Add another histogram's counts (another node's, another period's).
    pub fn merge(&mut self, other: &TtffHistogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a = a.saturating_add(*b);
        }
    }

    /// The counts per bin (bin 0 first; missing trailing bins are empty).
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Number of values counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }

    /// The `q`-quantile (0..=1) as the middle of the bin that holds it, or `None`
    /// when empty.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (bin, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, width) = Self::bin_range(bin);
                return Some(lo as f64 + (width as f64 - 1.0) / 2.0);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_tile_the_axis_without_gaps() {
        let mut next = 0u64;
        for bin in 0..TTFF_BINS {
            let (lo, width) = TtffHistogram::bin_range(bin);
            assert_eq!(lo, next, "bin {bin}");
            assert_eq!(TtffHistogram::bin_of(lo), bin);
            assert_eq!(TtffHistogram::bin_of(lo + width - 1), bin);
            if bin >= 8 {
                assert!(width as f64 / lo as f64 <= 0.125 + 1e-12);
            }
            next = lo + width;
        }
        assert_eq!(next, 1 << 17);
        assert_eq!(TtffHistogram::bin_of(u64::MAX), TTFF_BINS - 1);
    }

    #[test]
    fn merge_and_quantiles() {
        let mut a = TtffHistogram::default();
        let mut b = TtffHistogram::default();
        for ms in [100, 200, 300] {
            a.record(ms);
        }
        b.record(5_000);
        a.merge(&b);
        assert_eq!(a.total(), 4);
        let median = a.quantile_ms(0.5).expect("non-empty");
        assert!((192.0..=224.0).contains(&median), "{median}");
        let top = a.quantile_ms(1.0).expect("non-empty");
        assert!((4_608.0..=5_120.0).contains(&top), "{top}");
        assert_eq!(TtffHistogram::default().quantile_ms(0.5), None);
    }

    #[test]
    fn oversized_input_is_refused() {
        let too_long = vec![0u64; TTFF_BINS + 1];
        assert!(serde_json::from_str::<TtffHistogram>(
            &serde_json::to_string(&too_long).expect("serializes")
        )
        .is_err());
    }
}
