//! What both segmenting modes share: the configuration, the finished segment (the one
//! record every container is a view of), the counters, where a segment's captions come
//! from ([`CaptionSource`]), and the helpers that make a segment's bytes a pure function
//! of its marker, frames and caption block ([`emit`]) and unwrap 33-bit timestamps
//! ([`unwrap_ts`]).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

use crate::captions::CaptionBlock;
use crate::timeline::{ContinuityCounters, TimelineMarker, TimelineState};
use crate::ts::mux::write_segment;
use crate::{Frame, TrackKind, CLOCK_HZ, PTS_MASK};

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

    /// The longest segment a source is cut into, in 90 kHz ticks: the forced-cut length
    /// plus one target for the frame that triggers the cut. Timestamps that would make
    /// a segment longer cannot be timed: the timeline breaks there instead (a
    /// discontinuity), so damaged timestamps never give a wild duration or target.
    pub fn longest_segment_ticks(&self) -> u64 {
        self.max_segment_ticks() + self.target_ticks()
    }
}

/// One finished segment, as the segmenter wrote it: its place on the timeline, its
/// TS bytes, and what the bytes were written from (the marker, the frames, the caption
/// block), so the fMP4, LL-HLS, WebVTT and relay views never parse the bytes back.
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
    /// The MPEG-TS bytes: marker packet, caption block (if any), PAT, PMT, then the
    /// frames' PES.
    pub data: Bytes,
    /// The marker written in the first packet.
    pub marker: TimelineMarker,
    /// The frames in the order they were written; empty for a segment made from bytes
    /// alone ([`Segment::from_marker`]: read from an archive, or a test's).
    pub frames: Arc<[Frame]>,
    /// The caption block written after the marker.
    pub captions: Option<Arc<CaptionBlock>>,
}

impl Segment {
    /// The segment whose place on the timeline `marker` states, with these TS bytes
    /// (a brdyun segment's bytes start with that marker).
    pub fn from_marker(marker: &TimelineMarker, data: Bytes) -> Self {
        Segment {
            msn: marker.state.msn,
            discontinuity_seq: marker.state.discontinuity_seq,
            discontinuous: marker.discontinuous,
            start_ts: marker.start_ts,
            duration_ticks: marker.duration_ticks,
            program_date_time_ms: marker.program_date_time_ms,
            keyframe_start: marker.keyframe_start,
            data,
            marker: *marker,
            frames: Arc::from(Vec::new()),
            captions: None,
        }
    }

    /// The TS packets of the caption block (right after the marker; empty without
    /// one): what a live relay sends before the close marker.
    pub fn caption_packets(&self) -> &[u8] {
        if self.captions.is_none() {
            return &[];
        }
        crate::ts::captions::block_packets_of(&self.data)
    }
}

/// Where a stream's caption blocks come from: the segmenter shows it every frame and
/// every upstream block as they arrive, and asks it for a segment's block just before
/// writing the segment, so the block is written in place (no second copy of the bytes).
pub trait CaptionSource: Send + std::fmt::Debug {
    /// A frame is about to be placed; `state` is the open segment's (or the next one's),
    /// `following` whether an upstream's markers cut the segments.
    fn frame(&mut self, frame: &Frame, state: Option<TimelineState>, following: bool);
    /// An upstream brdyun's caption block for one of its segments (encoded).
    fn upstream(&mut self, block: &Bytes);
    /// The block of the segment `marker` describes, if it has one.
    fn block_for(&mut self, marker: &TimelineMarker, following: bool) -> Option<CaptionBlock>;
}

/// Where the segmenting modes put what they finish: each segment written with its
/// caption block (asked of the [`CaptionSource`], if any), queued in order.
#[derive(Debug, Default)]
pub(crate) struct Output {
    queue: VecDeque<Segment>,
    pub(crate) captions: Option<Box<dyn CaptionSource>>,
}

impl Output {
    /// Writes the segment of `marker` from `frames` and queues it; returns the
    /// continuity counters the next segment starts from.
    pub(crate) fn write(
        &mut self,
        marker: &TimelineMarker,
        frames: Vec<Timed>,
        following: bool,
    ) -> ContinuityCounters {
        let block = self
            .captions
            .as_mut()
            .and_then(|c| c.block_for(marker, following));
        let (segment, cc) = emit(marker, frames, block);
        self.queue.push_back(segment);
        cc
    }

    /// The oldest segment not yet taken.
    pub(crate) fn pop_front(&mut self) -> Option<Segment> {
        self.queue.pop_front()
    }
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
    /// Frames dropped because their PTS cannot be right: more than a second before
    /// their DTS, or further after it than a segment may last (damaged timestamps).
    pub dropped_bad_pts: u64,
    /// Places where the timeline was broken with a discontinuity because the source
    /// could not be timed there: a gap between frames longer than the longest segment
    /// ([`SegmenterConfig::longest_segment_ticks`]), or dates running more than
    /// [`MAX_DATE_AHEAD_MS`] ahead of the wall clock.
    pub untimed: u64,
    /// Silent audio frames written where the audio ended before the video when the
    /// input ended or broke, so the last segments carry both tracks to their end.
    pub silence_filled: u64,
}

/// What a segmenter placed, in the order it placed it: what the live relay sends
/// downstream as it happens ([`crate::ts::mux::RelayMuxer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placed {
    /// A segment starts (its open marker, [`TimelineMarker::opening`]).
    Opened(TimelineMarker),
    /// A frame joins the segment of this MSN.
    Frame(u64, Frame),
}

/// The placements a segmenter keeps for [`crate::Segmenter::take_placed`], when asked to.
#[derive(Debug, Default)]
pub(crate) struct Placements(Option<Vec<Placed>>);

impl Placements {
    /// Starts (or stops) keeping placements.
    pub(crate) fn keep(&mut self, on: bool) {
        self.0 = on.then(|| self.0.take().unwrap_or_default());
    }

    pub(crate) fn is_kept(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn opened(&mut self, marker: TimelineMarker) {
        if let Some(v) = &mut self.0 {
            v.push(Placed::Opened(marker.opening()));
        }
    }

    pub(crate) fn frame(&mut self, msn: u64, frame: &Frame) {
        if let Some(v) = &mut self.0 {
            v.push(Placed::Frame(msn, frame.clone()));
        }
    }

    pub(crate) fn take(&mut self) -> Vec<Placed> {
        self.0.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// How far a segment's EXT-X-PROGRAM-DATE-TIME may run ahead of the wall clock of the
/// node that cuts it (a source faster than real time, or forward jumps below the jump
/// threshold, one after another) before the timeline is anchored again: 30 s, more than
/// what a server sends at once when a pull connects (a GOP cache, a relay's buffer).
pub const MAX_DATE_AHEAD_MS: i64 = 30_000;

/// The most frames one segment may hold; bounds memory against hostile input.
pub const MAX_SEGMENT_FRAMES: usize = 20_000;

/// A frame with its unwrapped timestamps.
#[derive(Debug, Clone)]
pub(crate) struct Timed {
    pub(crate) ext_pts: u64,
    pub(crate) ext_dts: u64,
    pub(crate) frame: Frame,
}

/// Writes a segment from its complete marker, frames (sorted here) and caption block.
pub(crate) fn emit(
    marker: &TimelineMarker,
    mut frames: Vec<Timed>,
    captions: Option<CaptionBlock>,
) -> (Segment, ContinuityCounters) {
    frames.sort_by_key(|t| (t.ext_dts, t.frame.kind() == TrackKind::Audio));
    let plain: Vec<Frame> = frames.into_iter().map(|t| as_written(t.frame)).collect();
    let (data, cc) = write_segment(marker, &plain, captions.as_ref());
    // A frame a demuxer would split (an audio PES of several ADTS frames) is not kept
    // as it would come back: the views then read the bytes.
    let split = plain.iter().any(|f| {
        f.kind() == TrackKind::Audio && crate::codec::aac::adts_frame_ranges(&f.data).len() > 1
    });
    let frames = if split { Vec::new() } else { plain };
    let segment = Segment {
        frames: Arc::from(frames),
        captions: captions.map(Arc::new),
        ..Segment::from_marker(marker, data)
    };
    (segment, cc)
}

/// `frame` as the segment's bytes carry it: a video access unit with the delimiter
/// the writer puts before it when it lacks one (so the kept frame is what a demuxer
/// reads back, and the writer adds nothing).
fn as_written(frame: Frame) -> Frame {
    match crate::codec::aud::missing_delimiter(frame.codec, &frame.data) {
        Some(delimiter) => {
            let mut data = Vec::with_capacity(delimiter.as_bytes().len() + frame.data.len());
            data.extend_from_slice(delimiter.as_bytes());
            data.extend_from_slice(&frame.data);
            Frame {
                data: Bytes::from(data),
                ..frame
            }
        }
        None => frame,
    }
}

/// Unwraps a 33-bit timestamp to the extended value nearest to `reference`.
pub fn unwrap_ts(value: u64, reference: Option<u64>) -> u64 {
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
