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
//!
//! Damaged timestamps are bounded (docs/timeline.md): a frame whose PTS is more than
//! 1 s before its DTS or more than a forced-cut length after it is dropped; a gap that
//! would make a segment longer than [`SegmenterConfig::longest_segment_ticks`] breaks
//! the timeline as a jump does; and a segment whose date would run more than
//! [`MAX_DATE_AHEAD_MS`] ahead of the wall clock starts after a discontinuity,
//! anchored at the wall clock.

mod follow;
mod replay;
mod rung;
mod segment;
mod source;
mod tail;

use crate::timeline::{MarkerError, MarkerPhase, TimelineMarker, TimelineState};
use crate::Frame;

pub use rung::{RungCutter, RungSegment, RungStats};
pub use segment::unwrap_ts;
use segment::Output;
pub use segment::{
    CaptionSource, Placed, Segment, SegmenterConfig, SegmenterStats, MAX_DATE_AHEAD_MS,
    MAX_SEGMENT_FRAMES,
};

use follow::Follow;
use source::Source;

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
    ready: Output,
    stats: SegmenterStats,
    /// Placements of a mode that was left, not yet taken.
    carried: Vec<Placed>,
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
            ready: Output::default(),
            stats: SegmenterStats::default(),
            carried: Vec::new(),
        }
    }

    /// Feeds one frame; `now_unix_ms` is the wall clock at its arrival (used only to
    /// anchor a fresh timeline). Returns the segment this frame completed, if any.
    pub fn push(&mut self, frame: Frame, now_unix_ms: i64) -> Option<Segment> {
        let (state, following) = (self.state(), self.is_following());
        if let Some(captions) = self.ready.captions.as_mut() {
            captions.frame(&frame, state, following);
        }
        match &mut self.mode {
            Mode::Source(s) => s.push(frame, now_unix_ms, &mut self.ready, &mut self.stats),
            Mode::Follow(f) => {
                if let Some(fallback) = f.push(frame, &mut self.ready, &mut self.stats) {
                    let (frame, state, last_ext, end, replay) = fallback;
                    let mut source = Source::continuing(self.config, state, last_ext, end, replay);
                    self.carried.extend(f.placed.take());
                    source.placed.keep(f.placed.is_kept());
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
        let (phase, marker) = match TimelineMarker::parse_phase(payload) {
            Ok(m) => m,
            Err(e) => {
                self.stats.bad_markers += 1;
                return Err(e);
            }
        };
        match &mut self.mode {
            Mode::Follow(f) => f.push_marker(phase, marker, &mut self.ready, &mut self.stats),
            // A close marker ends a segment a follower collected: in source mode there
            // is none.
            Mode::Source(_) if phase == MarkerPhase::Close => {}
            Mode::Source(s) => {
                let last_ext = s.flush(&mut self.ready, &mut self.stats);
                let mut follow = Follow::new(self.config);
                follow.set_reference(last_ext);
                self.carried.extend(s.placed.take());
                follow.placed.keep(s.placed.is_kept());
                follow.push_marker(phase, marker, &mut self.ready, &mut self.stats);
                self.mode = Mode::Follow(Box::new(follow));
            }
        }
        Ok(self.ready.pop_front())
    }

    /// Writes every segment from now on with the caption block `source` gives for it
    /// (and shows it every frame and upstream block first).
    pub fn set_captions(&mut self, source: Box<dyn CaptionSource>) {
        self.ready.captions = Some(source);
    }

    /// An upstream brdyun's caption block (the payload of a packet group on
    /// [`crate::ts::captions::CAPTION_PID`]), for the segment it names: handed to the
    /// caption source, if there is one.
    pub fn push_captions(&mut self, block: &bytes::Bytes) {
        if let Some(captions) = self.ready.captions.as_mut() {
            captions.upstream(block);
        }
    }

    /// The input changed under the stream (backup switch, reconnect, publisher
    /// restart): the next segment starts at the next keyframe, flagged discontinuous.
    /// In adopt mode the upstream's markers are authoritative (its next marker says
    /// whether a discontinuity follows); media that comes without a marker after the
    /// change carries the followed timeline on at once (an MC whose owner died and
    /// whose own publisher takes over).
    pub fn discontinuity(&mut self) {
        match &mut self.mode {
            Mode::Source(s) => s.discontinuity(&mut self.ready, &mut self.stats),
            Mode::Follow(f) => f.input_changed(false),
        }
    }

    /// [`Segmenter::discontinuity`] for a standby of the same source taking over, whose
    /// recent GOPs come first: media already segmented (or followed) is dropped, so the
    /// stream loses nothing and repeats nothing.
    pub fn takeover(&mut self) {
        match &mut self.mode {
            Mode::Source(s) => s.takeover(&mut self.ready, &mut self.stats),
            Mode::Follow(f) => f.input_changed(true),
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

    /// Whether the segments are cut where an upstream's markers say (adopt mode), not
    /// by this segmenter: an upstream brdyun then also decides their captions.
    pub fn is_following(&self) -> bool {
        matches!(self.mode, Mode::Follow(_))
    }

    /// The next finished segment not yet returned.
    pub fn pop_ready(&mut self) -> Option<Segment> {
        self.ready.pop_front()
    }

    /// Keeps (or stops keeping) what the segmenter places, for
    /// [`Segmenter::take_placed`]: what a live relay sends as it happens.
    pub fn keep_placements(&mut self, on: bool) {
        match &mut self.mode {
            Mode::Source(s) => s.placed.keep(on),
            Mode::Follow(f) => f.placed.keep(on),
        }
        if !on {
            self.carried.clear();
        }
    }

    /// The segments opened and the frames placed in them since the last call, in order
    /// (empty unless [`Segmenter::keep_placements`]). Every frame placed is in its
    /// segment when that is written; a segment opened again (the same MSN: a replay, a
    /// takeover) replaces what was placed in it before.
    pub fn take_placed(&mut self) -> Vec<Placed> {
        let mut placed = std::mem::take(&mut self.carried);
        placed.extend(match &mut self.mode {
            Mode::Source(s) => s.placed.take(),
            Mode::Follow(f) => f.placed.take(),
        });
        placed
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
