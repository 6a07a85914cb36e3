//! When a written TS carries its program clock references.
//!
//! ISO/IEC 13818-1 §2.7.2 allows at most 100 ms between PCRs. The muxer stamps a PCR on
//! the first packet of every PES on the PCR PID, `dts − PCR_OFFSET`; that meets the
//! bound while pictures come at least ten times a second. A picture gap (a frozen
//! screen share, a slide held still) leaves the PCR PID silent while audio goes on, so
//! before each frame [`PcrClock::next_fill`] names the PCRs due in the gap, which the
//! muxer writes as adaptation-field-only packets. Everything is a function of the
//! frames' DTS, so every node writes the same packets.

use crate::PTS_MASK;

/// The longest distance between two PCRs the muxer writes: 100 ms at 90 kHz.
pub const PCR_INTERVAL: u64 = 9_000;

/// A gap past which the clock restarts instead of being filled: a timestamp jump (the
/// timeline breaks there with a discontinuity), not a pause. 10 s bounds the fill at
/// 100 packets.
const MAX_FILL_GAP: u64 = 900_000;

/// The last PCR written on the PCR PID (33-bit base, 90 kHz).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcrClock {
    last: Option<u64>,
}

impl PcrClock {
    /// The next PCR due before a frame whose PCR would be `target`, or `None` once
    /// `target` is within [`PCR_INTERVAL`] of the last one (or the distance is a jump).
    /// Each call advances the clock by one interval, so a loop over it ends.
    pub fn next_fill(&mut self, target: u64) -> Option<u64> {
        let last = self.last?;
        let gap = target.wrapping_sub(last) & PTS_MASK;
        if gap <= PCR_INTERVAL || gap > MAX_FILL_GAP {
            return None;
        }
        let next = (last + PCR_INTERVAL) & PTS_MASK;
        self.last = Some(next);
        Some(next)
    }

    /// The PCR to write for `target` and remembers it: `target`, unless the clock is
    /// already a little past it (a frame placed after a later one), when the PCR holds
    /// still rather than run backwards.
    pub fn stamp(&mut self, target: u64) -> u64 {
        let target = target & PTS_MASK;
        let value = match self.last {
            Some(last) => {
                let behind = last.wrapping_sub(target) & PTS_MASK;
                if behind > 0 && behind <= MAX_FILL_GAP {
                    last
                } else {
                    target
                }
            }
            None => target,
        };
        self.last = Some(value);
        value
    }

    /// True before the first PCR.
    pub fn is_unset(&self) -> bool {
        self.last.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fills(clock: &mut PcrClock, target: u64) -> Vec<u64> {
        std::iter::from_fn(|| clock.next_fill(target)).collect()
    }

    #[test]
    fn a_gap_is_filled_at_the_interval() {
        let mut c = PcrClock::default();
        assert!(
            fills(&mut c, 50_000).is_empty(),
            "no PCR yet: nothing to fill"
        );
        assert_eq!(c.stamp(1_000), 1_000);
        assert!(fills(&mut c, 10_000).is_empty());
        assert_eq!(fills(&mut c, 30_001), vec![10_000, 19_000, 28_000]);
        assert_eq!(c.stamp(30_001), 30_001);
    }

    #[test]
    fn the_fill_follows_the_33_bit_wrap() {
        let mut c = PcrClock::default();
        c.stamp(PTS_MASK - 1_000);
        assert_eq!(fills(&mut c, 10_000), vec![8_000 - 1]);
    }

    #[test]
    fn a_jump_is_not_filled_and_a_late_frame_does_not_turn_the_clock_back() {
        let mut c = PcrClock::default();
        c.stamp(100_000);
        assert!(fills(&mut c, 100_000 + MAX_FILL_GAP + 1).is_empty());
        assert_eq!(c.stamp(96_000), 100_000);
        assert_eq!(c.stamp(5_000_000), 5_000_000);
        assert_eq!(c.stamp(10), 10, "a jump back is a new clock");
    }
}
