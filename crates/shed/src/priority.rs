//! The priority scale every other module speaks (SHED-1).
//!
//! One `u8` score from 0 to 99 where a **higher number is more important**. The three
//! buckets are contiguous ranges of that scale, so a single threshold ("shed every
//! priority below T") always sheds NON_CRITICAL before DEGRADED before CRITICAL:
//!
//! | bucket        | scores  |
//! |---------------|---------|
//! | NonCritical   | 0–29    |
//! | Degraded      | 30–69   |
//! | Critical      | 70–99   |

use serde::Deserialize;

/// The coarse importance class of a request (SHED-1); the unit of metrics and of the
/// ordering guarantee ("CRITICAL is never shed while a lower bucket is admitted").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    /// No visible effect when refused: telemetry beacons, prefetch, background work.
    NonCritical,
    /// Hurts the experience but not playback: archive browsing, thumbnails, metadata.
    Degraded,
    /// Breaks the ability to watch: live playlists and segments, starting playback.
    Critical,
}

impl Bucket {
    /// All buckets, least important first; for metrics label tables.
    pub const ALL: [Bucket; 3] = [Bucket::NonCritical, Bucket::Degraded, Bucket::Critical];

    /// Lowest score that belongs to this bucket.
    pub const fn min(self) -> Priority {
        match self {
            Bucket::NonCritical => Priority(0),
            Bucket::Degraded => Priority(30),
            Bucket::Critical => Priority(70),
        }
    }

    /// Highest score that belongs to this bucket.
    pub const fn max(self) -> Priority {
        match self {
            Bucket::NonCritical => Priority(29),
            Bucket::Degraded => Priority(69),
            Bucket::Critical => Priority(99),
        }
    }

    /// Stable lowercase name for metric labels and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Bucket::NonCritical => "non_critical",
            Bucket::Degraded => "degraded",
            Bucket::Critical => "critical",
        }
    }

    /// The score clamped into this bucket's range, so adjustments never move a
    /// request across buckets.
    pub fn clamp(self, score: i16) -> Priority {
        let lo = i16::from(self.min().0);
        let hi = i16::from(self.max().0);
        // In range 0..=99 after the clamp, so the cast cannot truncate.
        Priority(score.clamp(lo, hi) as u8)
    }
}

/// A request's importance on the 0..=99 scale; higher is more important. Constructed
/// only through [`Priority::new`] or [`Bucket::clamp`], so it is always ≤ 99.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

impl Priority {
    /// The most important priority; the only one still admitted at full overload.
    pub const TOP: Priority = Priority(99);
    /// The least important priority; the first one shed.
    pub const BOTTOM: Priority = Priority(0);

    /// A priority from a raw score, or `None` when the score is above 99.
    pub const fn new(score: u8) -> Option<Priority> {
        if score <= 99 {
            Some(Priority(score))
        } else {
            None
        }
    }

    /// The raw score (0..=99).
    pub const fn get(self) -> u8 {
        self.0
    }

    /// The bucket whose range contains this score.
    pub const fn bucket(self) -> Bucket {
        if self.0 >= 70 {
            Bucket::Critical
        } else if self.0 >= 30 {
            Bucket::Degraded
        } else {
            Bucket::NonCritical
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_scale_in_order() {
        let mut expected = 0u8;
        for b in Bucket::ALL {
            assert_eq!(b.min().get(), expected);
            for s in b.min().get()..=b.max().get() {
                assert_eq!(Priority::new(s).map(Priority::bucket), Some(b));
            }
            expected = b.max().get() + 1;
        }
        assert_eq!(expected, 100);
        assert_eq!(Priority::new(100), None);
    }

    #[test]
    fn clamp_stays_inside_bucket() {
        assert_eq!(Bucket::Degraded.clamp(-5), Priority(30));
        assert_eq!(Bucket::Degraded.clamp(500), Priority(69));
        assert_eq!(Bucket::Critical.clamp(80), Priority(80));
    }
}
