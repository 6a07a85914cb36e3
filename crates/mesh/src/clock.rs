//! Clocks and clock-offset estimation (OTT-GRP-3, OTT-ELIG-4).
//!
//! Every node republishes its wall clock (`clock` key) each gossip round. When this
//! node sees a new value from a peer it records one sample, `their_clock - our_now`.
//! A value is seen some delay `d ≥ 0` after it was written (the wait for the next
//! gossip exchange, possibly one relay hop, plus the network), so each sample is
//! `offset - d`: it never overestimates. The estimate is the largest sample of a
//! recent window, the one that travelled fastest. Its error is the smallest delay in
//! the window, below one gossip interval plus the network delay on a healthy mesh
//! (≈ 0.3 s with the default 250 ms interval), three orders of magnitude under the
//! 240 s eligibility limit.

use std::collections::VecDeque;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of Unix time in milliseconds. Injected so tests can skew one node.
pub trait Clock: Send + Sync + 'static {
    /// Now, Unix milliseconds.
    fn now_ms(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// The system clock shifted by a fixed amount: a node whose clock is wrong.
#[derive(Debug, Clone, Copy)]
pub struct SkewedClock {
    /// Added to the system clock, milliseconds.
    pub skew_ms: i64,
}

impl Clock for SkewedClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms().saturating_add(self.skew_ms)
    }
}

/// Samples kept per peer: at 4 rounds a second, the last ~4 s.
const WINDOW: usize = 16;

/// The offset estimate of one peer's clock from its recent samples.
#[derive(Debug, Clone, Default)]
pub struct OffsetEstimator {
    samples: VecDeque<i64>,
    /// Our clock at the last observation: how long the peer has been silent.
    last_observed_ms: Option<i64>,
}

impl OffsetEstimator {
    /// Records one observation: the peer's published clock, seen at `our_now_ms`.
    pub fn observe(&mut self, their_clock_ms: i64, our_now_ms: i64) {
        self.last_observed_ms = Some(our_now_ms);
        if self.samples.len() == WINDOW {
            self.samples.pop_front();
        }
        self.samples
            .push_back(their_clock_ms.saturating_sub(our_now_ms));
    }

    /// How long since the last observation at `our_now_ms`; 0 before the first.
    pub fn silent_ms(&self, our_now_ms: i64) -> i64 {
        self.last_observed_ms
            .map_or(0, |at| our_now_ms.saturating_sub(at).max(0))
    }

    /// Their clock minus ours, milliseconds; `None` before the first sample.
    pub fn offset_ms(&self) -> Option<i64> {
        self.samples.iter().copied().max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_the_least_delayed_sample_and_follows_a_step() {
        let mut e = OffsetEstimator::default();
        assert_eq!(e.offset_ms(), None);
        // True offset +300 s, delays 250, 40, 120 ms.
        for (now, delay) in [(1_000, 250), (1_250, 40), (1_500, 120)] {
            e.observe(now - delay + 300_000, now);
        }
        assert_eq!(e.offset_ms(), Some(300_000 - 40));
        // The peer's clock is stepped back to ours: the old samples age out.
        for i in 0..WINDOW as i64 {
            e.observe(2_000 + i * 250 - 10, 2_000 + i * 250);
        }
        assert_eq!(e.offset_ms(), Some(-10));
    }
}
