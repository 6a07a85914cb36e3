//! Stalls inferred from the segment request pattern, for players that send no
//! beacons (EXP-1): a pure detector fed the session's segment requests in order.
//!
//! Model: each requested segment adds its duration to the player's buffer; the buffer
//! runs dry at `dry_at` (wall time). A segment requested at `t` is playable at about
//! `t + fetch_ms`; if that is later than `dry_at` by more than `min_stall_ms`, the
//! player had nothing to show — a stall — and playback resumes once the segment
//! arrives. Retries and duplicates (a sequence number not above the last) add
//! nothing. A silence longer than `restart_gap_ms` is the viewer leaving (or pausing)
//! and starts a new playback, not a stall. The detector errs towards missing stalls
//! (the buffer it assumes is the most a player could have), never inventing one from
//! a well-paced session.

use serde::{Deserialize, Serialize};

/// Tuning of the detector; every field has a default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StallDetectorConfig {
    /// Assumed time from a segment request to the segment being playable, ms.
    pub fetch_ms: u64,
    /// Shortest shortfall counted as a stall, ms (smaller ones are estimate noise).
    pub min_stall_ms: u64,
    /// A silence at least this long starts a new playback instead of a stall, ms.
    pub restart_gap_ms: u64,
}

impl Default for StallDetectorConfig {
    fn default() -> Self {
        StallDetectorConfig {
            fetch_ms: 500,
            min_stall_ms: 500,
            restart_gap_ms: 60_000,
        }
    }
}

/// One segment request of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentRequest {
    /// When the request arrived, ms on the caller's clock.
    pub at_ms: u64,
    /// The segment's media sequence number.
    pub sequence: u64,
    /// The segment's duration, ms.
    pub duration_ms: u64,
}

/// What the detector concluded over a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StallReport {
    /// Stalls inferred.
    pub stalls: u32,
    /// Estimated total time spent stalled, ms.
    pub stalled_ms: u64,
    /// Playbacks seen (1 + restarts after long silences); 0 before any request.
    pub playbacks: u32,
}

/// The per-session state of the detector: four integers, updated in O(1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallDetector {
    config: StallDetectorConfig,
    last: Option<(u64, u64)>,
    dry_at: u64,
    report: StallReport,
}

impl StallDetector {
    /// A detector for a new session.
    pub fn new(config: StallDetectorConfig) -> StallDetector {
        StallDetector {
            config,
            last: None,
            dry_at: 0,
            report: StallReport::default(),
        }
    }

    /// Feed the next segment request (in arrival order); `true` when it reveals a stall.
    pub fn on_segment(&mut self, req: SegmentRequest) -> bool {
        let playable_at = req.at_ms.saturating_add(self.config.fetch_ms);
        let Some((last_at, last_seq)) = self.last else {
            self.start(req, playable_at);
            return false;
        };
        if req.at_ms.saturating_sub(last_at) >= self.config.restart_gap_ms {
            self.start(req, playable_at);
            return false;
        }
        if req.sequence <= last_seq {
            // A retry or duplicate: no new content, and not a sign of pace either.
            self.last = Some((req.at_ms.max(last_at), last_seq));
            return false;
        }
        self.last = Some((req.at_ms.max(last_at), req.sequence));
        let shortfall = playable_at.saturating_sub(self.dry_at);
        let stalled = shortfall > self.config.min_stall_ms;
        if stalled {
            self.report.stalls = self.report.stalls.saturating_add(1);
            self.report.stalled_ms = self.report.stalled_ms.saturating_add(shortfall);
        }
        self.dry_at = self.dry_at.max(playable_at).saturating_add(req.duration_ms);
        stalled
    }

    fn start(&mut self, req: SegmentRequest, playable_at: u64) {
        self.last = Some((req.at_ms, req.sequence));
        self.dry_at = playable_at.saturating_add(req.duration_ms);
        self.report.playbacks = self.report.playbacks.saturating_add(1);
    }

    /// What was inferred so far.
    pub fn report(&self) -> StallReport {
        self.report
    }
}

/// Stalls of a whole session from its segment requests in arrival order.
pub fn count_stalls(requests: &[SegmentRequest], config: StallDetectorConfig) -> StallReport {
    let mut d = StallDetector::new(config);
    for &r in requests {
        d.on_segment(r);
    }
    d.report()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reqs(times: &[u64]) -> Vec<SegmentRequest> {
        times
            .iter()
            .enumerate()
            .map(|(i, &t)| SegmentRequest {
                at_ms: t,
                sequence: 100 + i as u64,
                duration_ms: 2_000,
            })
            .collect()
    }

    #[test]
    fn steady_pace_has_no_stall() {
        // Three segments at start (6 s of buffer), then one every 2 s with jitter.
        let mut times = vec![0, 50, 100];
        times.extend((1..100).map(|i| 100 + i * 2_000 + (i % 3) * 300));
        let r = count_stalls(&reqs(&times), StallDetectorConfig::default());
        assert_eq!((r.stalls, r.playbacks), (0, 1));
    }

    #[test]
    fn falling_behind_by_more_than_the_buffer_is_one_stall() {
        // One segment of buffer, then the next one comes 5 s late.
        let r = count_stalls(
            &reqs(&[0, 2_000, 9_000, 11_000, 13_000]),
            StallDetectorConfig::default(),
        );
        assert_eq!(r.stalls, 1);
        // Dry at 500 + 2 000 + 2 000 = 4 500; next playable at 9 500.
        assert_eq!(r.stalled_ms, 5_000);
    }

    #[test]
    fn retries_and_long_gaps_are_not_stalls() {
        let mut r = reqs(&[0, 2_000, 4_000]);
        r.push(SegmentRequest {
            at_ms: 4_100,
            ..r[2]
        });
        // The viewer leaves for 2 minutes and comes back at a new live position.
        r.push(SegmentRequest {
            at_ms: 124_100,
            sequence: 160,
            duration_ms: 2_000,
        });
        r.push(SegmentRequest {
            at_ms: 126_100,
            sequence: 161,
            duration_ms: 2_000,
        });
        let report = count_stalls(&r, StallDetectorConfig::default());
        assert_eq!((report.stalls, report.playbacks), (0, 2));
    }
}
