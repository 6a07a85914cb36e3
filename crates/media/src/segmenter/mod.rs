//! The deterministic segmenter: frames in, MPEG-TS segments out, with boundaries, media
//! sequence numbers, durations and dates that are a pure function of the source's own
//! timestamps (DESIGN.md, invariant 1; OTT-GRP-4, OTT-ELIG-2).
//!
//! # Two ways to start
//!
//! - [`StartPoint::Fresh`]: this node ingests the source directly. The first segment
//!   starts at the first video keyframe (or the first audio frame of an audio-only
//!   stream); its MSN is `max(min_msn, ext_ts / target)` so that two nodes joining the
//!   same source directly agree when GOPs are regular; the wall-clock anchor is the
//!   `now_unix_ms` passed with that first frame.
//! - [`StartPoint::Adopt`]: this node pulls the TS of an upstream brdyun. Frames are
//!   dropped until the first timeline marker; from then on each segment is cut exactly
//!   where the upstream's marker says, with the upstream's state, and the bytes are the
//!   upstream's bytes (a segment is a pure function of its marker and frames).
//!
//! # The cut rule (source mode)
//!
//! Timestamps are unwrapped to 64-bit "extended" 90 kHz values (a 33-bit wrap is not a
//! jump). The grid index of a timestamp is `ext / target_ticks`. The current segment
//! ends at the first video keyframe whose PTS grid index is greater than that of the
//! segment's first frame — or at any video frame once the segment has grown past
//! `target × max_segment_factor` of DTS (a missing keyframe must not make an unbounded
//! segment). Audio-only streams cut at the first audio frame crossing a grid line.
//!
//! Decisions are taken in arrival (DTS) order; a segment's position on the timeline is
//! the PTS of its first frame (for a keyframe, the first picture shown), and its
//! duration is the distance to the next segment's start PTS. The durations therefore
//! sum exactly to the timeline (they telescope). An audio frame belongs to the segment
//! whose start PTS is ≤ its PTS; it waits in a short queue until video has passed it,
//! so the assignment does not depend on how the source interleaves the two tracks.
//!
//! A segment's frames are written in (DTS, video-first) order, which makes its bytes
//! independent of arrival interleaving too.
//!
//! A jump (forward more than 10 × target, backward more than 1 s) or a call to
//! [`Segmenter::discontinuity`] starts a new segment at the next keyframe, flagged
//! discontinuous, with discontinuity_seq + 1 and the wall-clock anchor moved so the
//! dates continue from the end of the previous segment.

mod follow;
mod source;

use std::collections::VecDeque;

use bytes::Bytes;

use crate::timeline::{ContinuityCounters, MarkerError, TimelineMarker, TimelineState};
use crate::ts::mux::write_segment;
use crate::{Frame, TrackKind, CLOCK_HZ, PTS_MASK};

use follow::Follow;
use source::Source;

/// How long segments should be, and how long they may get without a keyframe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmenterConfig {
    /// Target segment duration (EXT-X-TARGETDURATION is derived from it), milliseconds.
    pub target_duration_ms: u32,
    /// A segment longer than `target × factor` is cut at the next frame even without a
    /// keyframe, so a source with missing keyframes still gives bounded segments.
    pub max_segment_factor: u32,
}

impl Default for SegmenterConfig {
    fn default() -> Self {
        Self {
            target_duration_ms: 2000,
            max_segment_factor: 3,
        }
    }
}

impl SegmenterConfig {
    /// The target in 90 kHz ticks (at least 1).
    pub fn target_ticks(&self) -> u64 {
        (u64::from(self.target_duration_ms) * CLOCK_HZ / 1000).max(1)
    }

    /// The forced-cut length in 90 kHz ticks.
    pub fn max_segment_ticks(&self) -> u64 {
        self.target_ticks() * u64::from(self.max_segment_factor.max(1))
    }
}

/// Where a segmenter's timeline comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartPoint {
    /// This node is the first to ingest the source: it anchors the timeline itself.
    Fresh {
        /// The first MSN is at least this (e.g. the last MSN before a restart + 1), so
        /// the sequence never goes backwards.
        min_msn: u64,
        /// The discontinuity sequence starts at least here, for the same reason.
        min_discontinuity_seq: u64,
    },
    /// Follow an upstream brdyun: wait for its first timeline marker, drop frames until
    /// then, and adopt its state.
    Adopt,
}

/// One finished segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Media sequence number.
    pub msn: u64,
    /// Discontinuity sequence number of this segment.
    pub discontinuity_seq: u64,
    /// A discontinuity precedes this segment (EXT-X-DISCONTINUITY).
    pub discontinuous: bool,
    /// Extended (unwrapped) 90 kHz PTS of the first frame.
    pub start_ts: u64,
    /// Duration in 90 kHz ticks (distance to the next segment's start).
    pub duration_ticks: u64,
    /// EXT-X-PROGRAM-DATE-TIME, Unix milliseconds.
    pub program_date_time_ms: i64,
    /// The first frame is a random access point (false only after a forced cut).
    pub keyframe_start: bool,
    /// The MPEG-TS bytes: marker packet, PAT, PMT, then the frames' PES.
    pub data: Bytes,
}

/// Counters of what the segmenter dropped or decided, for monitoring.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmenterStats {
    /// Frames dropped while waiting for the keyframe that starts a segment.
    pub dropped_before_keyframe: u64,
    /// Audio frames that arrived after their segment was written.
    pub dropped_late: u64,
    /// Frames of a track still on the old timeline after a timestamp jump.
    pub dropped_stale: u64,
    /// Frames that matched no adopted marker (adopt mode).
    pub dropped_unmatched: u64,
    /// Timestamp jumps treated as discontinuities.
    pub jumps: u64,
    /// Segments cut at a non-keyframe because they grew past the maximum length.
    pub forced_cuts: u64,
    /// Adopted segments written with fewer frames than their marker announced.
    pub incomplete: u64,
    /// Markers that could not be parsed.
    pub bad_markers: u64,
    /// Frames dropped because a segment already held [`MAX_SEGMENT_FRAMES`] (a source
    /// whose timestamps do not advance, or a marker announcing absurd counts).
    pub dropped_overflow: u64,
}

/// The most frames one segment may hold; bounds memory against hostile input.
pub const MAX_SEGMENT_FRAMES: usize = 20_000;

/// A frame with its unwrapped timestamps.
#[derive(Debug, Clone)]
pub(crate) struct Timed {
    pub(crate) ext_pts: u64,
    pub(crate) ext_dts: u64,
    pub(crate) frame: Frame,
}

/// Writes a segment from its complete marker and frames (sorted here).
pub(crate) fn emit(
    marker: &TimelineMarker,
    mut frames: Vec<Timed>,
) -> (Segment, ContinuityCounters) {
    frames.sort_by_key(|t| (t.ext_dts, t.frame.kind() == TrackKind::Audio));
    let plain: Vec<Frame> = frames.into_iter().map(|t| t.frame).collect();
    let (data, cc) = write_segment(marker, &plain);
    let segment = Segment {
        msn: marker.state.msn,
        discontinuity_seq: marker.state.discontinuity_seq,
        discontinuous: marker.discontinuous,
        start_ts: marker.start_ts,
        duration_ticks: marker.duration_ticks,
        program_date_time_ms: marker.program_date_time_ms,
        keyframe_start: marker.keyframe_start,
        data,
    };
    (segment, cc)
}

/// Unwraps a 33-bit timestamp to the extended value nearest to `reference`.
pub(crate) fn unwrap_ts(value: u64, reference: Option<u64>) -> u64 {
    let value = value & PTS_MASK;
    let Some(r) = reference else {
        return value;
    };
    const WRAP: u64 = 1 << 33;
    let candidate = (r & !PTS_MASK) | value;
    if candidate > r && candidate - r > WRAP / 2 && candidate >= WRAP {
        candidate - WRAP
    } else if candidate < r && r - candidate > WRAP / 2 {
        candidate.checked_add(WRAP).unwrap_or(candidate)
    } else {
        candidate
    }
}

#[derive(Debug)]
enum Mode {
    Source(Box<Source>),
    Follow(Box<Follow>),
}

/// Frames (and upstream markers) in, finished segments out; see the module docs.
///
/// `push`, `push_marker` and `flush` return the oldest finished segment. Rarely one
/// call finishes two (e.g. a marker arriving in source mode closes both the segment
/// waiting for late audio and the open one); drain the rest with
/// [`Segmenter::pop_ready`] after every call.
#[derive(Debug)]
pub struct Segmenter {
    config: SegmenterConfig,
    mode: Mode,
    ready: VecDeque<Segment>,
    stats: SegmenterStats,
}

impl Segmenter {
    /// A segmenter with `config`, starting as `start` says.
    pub fn new(config: SegmenterConfig, start: StartPoint) -> Self {
        let mode = match start {
            StartPoint::Fresh {
                min_msn,
                min_discontinuity_seq,
            } => Mode::Source(Box::new(Source::fresh(
                config,
                min_msn,
                min_discontinuity_seq,
            ))),
            StartPoint::Adopt => Mode::Follow(Box::new(Follow::new(config))),
        };
        Self {
            config,
            mode,
            ready: VecDeque::new(),
            stats: SegmenterStats::default(),
        }
    }

    /// Feeds one frame; `now_unix_ms` is the wall clock at its arrival (used only to
    /// anchor a fresh timeline). Returns the segment this frame completed, if any.
    pub fn push(&mut self, frame: Frame, now_unix_ms: i64) -> Option<Segment> {
        match &mut self.mode {
            Mode::Source(s) => s.push(frame, now_unix_ms, &mut self.ready, &mut self.stats),
            Mode::Follow(f) => {
                if let Some(fallback) = f.push(frame, &mut self.ready, &mut self.stats) {
                    let (frame, state, last_ext, end_unix_ms) = fallback;
                    let mut source = Source::continuing(self.config, state, last_ext, end_unix_ms);
                    source.push(frame, now_unix_ms, &mut self.ready, &mut self.stats);
                    self.mode = Mode::Source(Box::new(source));
                }
            }
        }
        self.ready.pop_front()
    }

    /// Feeds the payload of a packet on [`crate::ts::MARKER_PID`]: the segment it
    /// starts will be cut exactly there and carry the marker's state. Returns a segment
    /// this completed, if any.
    ///
    /// # Errors
    /// [`MarkerError`] when the payload is not a valid marker; the segmenter is unchanged.
    pub fn push_marker(&mut self, payload: &[u8]) -> Result<Option<Segment>, MarkerError> {
        let marker = match TimelineMarker::parse(payload) {
            Ok(m) => m,
            Err(e) => {
                self.stats.bad_markers += 1;
                return Err(e);
            }
        };
        match &mut self.mode {
            Mode::Follow(f) => f.push_marker(marker, &mut self.ready, &mut self.stats),
            Mode::Source(s) => {
                let last_ext = s.flush(&mut self.ready, &mut self.stats);
                let mut follow = Follow::new(self.config);
                follow.set_reference(last_ext);
                follow.push_marker(marker, &mut self.ready, &mut self.stats);
                self.mode = Mode::Follow(Box::new(follow));
            }
        }
        Ok(self.ready.pop_front())
    }

    /// The input changed under the stream (backup switch, reconnect, publisher
    /// restart): the next segment starts at the next keyframe, flagged discontinuous.
    /// In adopt mode the upstream's markers are authoritative (its next marker says
    /// whether a discontinuity follows), so the call changes nothing there.
    pub fn discontinuity(&mut self) {
        if let Mode::Source(s) = &mut self.mode {
            s.discontinuity(&mut self.ready, &mut self.stats);
        }
    }

    /// Ends the stream: writes every segment still open. Call until it returns `None`.
    pub fn flush(&mut self) -> Option<Segment> {
        match &mut self.mode {
            Mode::Source(s) => {
                s.flush(&mut self.ready, &mut self.stats);
            }
            Mode::Follow(f) => f.flush(&mut self.ready, &mut self.stats),
        }
        self.ready.pop_front()
    }

    /// The next finished segment not yet returned.
    pub fn pop_ready(&mut self) -> Option<Segment> {
        self.ready.pop_front()
    }

    /// The state at the start of the segment being built (or of the next one); `None`
    /// in adopt mode before the first marker.
    pub fn state(&self) -> Option<TimelineState> {
        match &self.mode {
            Mode::Source(s) => Some(s.state()),
            Mode::Follow(f) => f.state(),
        }
    }

    /// What was dropped or forced so far.
    pub fn stats(&self) -> &SegmenterStats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> SegmenterConfig {
        self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrap_takes_the_nearest_value() {
        let wrap = 1u64 << 33;
        assert_eq!(unwrap_ts(5, None), 5);
        assert_eq!(unwrap_ts(10, Some(wrap - 100)), wrap + 10);
        assert_eq!(unwrap_ts(wrap - 100, Some(wrap + 10)), wrap - 100);
        assert_eq!(unwrap_ts(wrap - 100, Some(10)), wrap - 100);
        assert_eq!(unwrap_ts(500, Some(3 * wrap + 400)), 3 * wrap + 500);
    }
}
